//! Client-side caching as Redis 7.4 does it, and `DEBUG PROTOCOL attrib`'s attribute, on
//! `fake-redis-server --server-version redis-7.4`: the keys a script's read leaves to invalidate,
//! the invalidations of keys evicted before a command (ahead of its reply), the tracking table's
//! limit (`tracking-table-max-keys`, also when `DEBUG PAUSE-CRON` holds the cron), and `INFO`'s
//! tracking totals.
//!
//! Each scenario checks the fake's bytes; with `REDIS_7_4_SERVER` naming a 7.4.1 binary, it runs
//! on that server too and the two must agree.

use crate::support;

use std::process::Child;
use support::OwnServer;
use support::binary::start;
use support::raw::Real;

/// `fake-redis-server` speaking as 7.4, killed on drop.
struct Fake {
    child: Child,
    port: u16,
}

impl Fake {
    fn start() -> Fake {
        let (child, port) = start(&[
            "--server-version",
            "redis-7.4",
            "--enable-debug-command",
            "yes",
        ]);
        Fake { child, port }
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `scenario` on the fake, and on the live 7.4.1 server when the environment names one;
/// returns the fake's result after checking that the real server's is the same.
fn on_both<T: PartialEq + std::fmt::Debug>(scenario: impl Fn(u16) -> T) -> T {
    let fake = Fake::start();
    let got = scenario(fake.port);
    if let Some(real) = OwnServer::from_env("REDIS_7_4_SERVER") {
        let want = scenario(real.port);
        assert_eq!(got, want, "the fake (left) and Redis 7.4.1 (right) differ");
    }
    got
}

fn text(bytes: Vec<u8>) -> String {
    String::from_utf8_lossy(&bytes).into_owned()
}

#[test]
fn debug_protocol_attrib_sends_the_attribute_in_resp3_only() {
    let replies = on_both(|port| {
        let mut c = Real::connect(port);
        let resp2 = text(c.call(&[b"DEBUG", b"PROTOCOL", b"attrib"]));
        c.call(&[b"HELLO", b"3"]);
        let resp3 = text(c.call(&[b"DEBUG", b"PROTOCOL", b"attrib"]));
        (resp2, resp3)
    });
    assert_eq!(
        replies,
        (
            "$39\r\nSome real reply following the attribute\r\n".to_owned(),
            "|1\r\n$14\r\nkey-popularity\r\n*2\r\n$7\r\nkey:123\r\n:90\r\n\
             $39\r\nSome real reply following the attribute\r\n"
                .to_owned()
        )
    );
}

#[test]
fn a_script_leaves_the_keys_its_commands_read_to_invalidate() {
    let seen = on_both(|port| {
        let (mut reader, mut writer) = (Real::connect(port), Real::connect(port));
        reader.call(&[b"HELLO", b"3"]);
        reader.call(&[b"CLIENT", b"TRACKING", b"ON"]);
        let script = b"redis.call('get', 'b{t}')";
        reader.call(&[b"EVAL", script, b"2", b"a{t}", b"b{t}"]);
        writer.call(&[b"MSET", b"a{t}", b"1", b"b{t}", b"1"]);
        // Everything up to the marker: the invalidation of b{t} alone, not of a{t}.
        reader.send(&[b"PING", b"marker"]);
        text(reader.read_until(b"$6\r\nmarker\r\n"))
    });
    assert_eq!(seen, ">2\r\n$10\r\ninvalidate\r\n*1\r\n$4\r\nb{t}\r\n");
}

/// `INFO`'s field `name`, as a number.
fn info_field(c: &mut Real, name: &str) -> u64 {
    let info = text(c.call(&[b"INFO", b"everything"]));
    let prefix = format!("\r\n{name}:");
    let at = info.find(&prefix).expect("the field") + prefix.len();
    info[at..].split("\r\n").next().unwrap().parse().unwrap()
}

#[test]
fn a_key_evicted_before_a_command_is_invalidated_ahead_of_its_reply() {
    let seen = on_both(|port| {
        let mut c = Real::connect(port);
        c.call(&[b"HELLO", b"3"]);
        c.call(&[b"CLIENT", b"TRACKING", b"ON"]);
        let used =
            info_field(&mut c, "used_memory") - info_field(&mut c, "mem_not_counted_for_evict");
        let limit = (used + 100 * 1024).to_string();
        c.call(&[b"CONFIG", b"SET", b"maxmemory-policy", b"volatile-random"]);
        c.call(&[b"CONFIG", b"SET", b"maxmemory", limit.as_bytes()]);
        c.call(&[b"SETEX", b"volatile-key", b"10000", b"x"]);
        c.call(&[b"GET", b"volatile-key"]);
        // About 200 KB: over the limit, so the next command evicts the volatile key first.
        c.call(&[b"SETBIT", b"big-key", b"1600000", b"0"]);
        c.send(&[b"GETBIT", b"big-key", b"0"]);
        let first = text(c.reply());
        let second = text(c.reply());
        c.call(&[b"CONFIG", b"SET", b"maxmemory", b"0"]);
        (first, second)
    });
    assert_eq!(
        seen,
        (
            ">2\r\n$10\r\ninvalidate\r\n*1\r\n$12\r\nvolatile-key\r\n".to_owned(),
            ":0\r\n".to_owned()
        )
    );
}

#[test]
fn the_tracking_table_limit_invalidates_keys_until_it_holds() {
    let (messages, totals) = on_both(|port| {
        let (mut redirect, mut reader, mut admin) = (
            Real::connect(port),
            Real::connect(port),
            Real::connect(port),
        );
        let id = text(redirect.call(&[b"CLIENT", b"ID"]));
        let id = id.trim_start_matches(':').trim_end().to_owned();
        redirect.call(&[b"SUBSCRIBE", b"__redis__:invalidate"]);
        reader.call(&[b"CLIENT", b"TRACKING", b"ON", b"REDIRECT", id.as_bytes()]);
        reader.call(&[b"MGET", b"k1", b"k2", b"k3", b"k4", b"k5"]);
        let mut prefixed = Real::connect(port);
        prefixed.call(&[b"CLIENT", b"TRACKING", b"ON", b"BCAST", b"PREFIX", b"p:"]);
        let before = (
            info_field(&mut admin, "tracking_total_keys"),
            info_field(&mut admin, "tracking_total_items"),
            info_field(&mut admin, "tracking_total_prefixes"),
            info_field(&mut admin, "tracking_clients"),
        );
        admin.call(&[b"CONFIG", b"SET", b"tracking-table-max-keys", b"2"]);
        // Three keys leave the table, each with its own message; which three is random.
        let messages: Vec<bool> = (0..3)
            .map(|_| text(redirect.reply()).starts_with("*3\r\n$7\r\nmessage\r\n"))
            .collect();
        let after = info_field(&mut admin, "tracking_total_keys");
        redirect.send(&[b"PING"]);
        let quiet = text(redirect.reply());
        (messages, (before, after, quiet))
    });
    assert_eq!(messages, [true; 3]);
    assert_eq!(
        totals,
        ((5, 5, 1, 2), 2, "*2\r\n$4\r\npong\r\n$0\r\n\r\n".to_owned())
    );
}

#[test]
fn with_the_cron_paused_the_next_command_applies_the_limit_ahead_of_its_reply() {
    let seen = on_both(|port| {
        let (mut c, mut admin) = (Real::connect(port), Real::connect(port));
        admin.call(&[b"CONFIG", b"SET", b"tracking-table-max-keys", b"2"]);
        admin.call(&[b"DEBUG", b"PAUSE-CRON", b"1"]);
        c.call(&[b"HELLO", b"3"]);
        c.call(&[b"CLIENT", b"TRACKING", b"ON"]);
        c.call(&[b"MGET", b"1{tag}", b"2{tag}"]);
        c.call(&[b"MULTI"]);
        admin.call(&[b"CONFIG", b"SET", b"tracking-table-max-keys", b"1"]);
        c.send(&[b"PING"]);
        c.send(&[b"EXEC"]);
        // Which of the two keys goes is the server's random pick (Redis starts from a random
        // slot of its table, the fake from a seeded one): the key is compared as `?{tag}`.
        let replies: Vec<String> = (0..3)
            .map(|_| text(c.reply()).replace("\r\n1{tag}", "\r\n?{tag}"))
            .map(|r| r.replace("\r\n2{tag}", "\r\n?{tag}"))
            .collect();
        admin.call(&[b"DEBUG", b"PAUSE-CRON", b"0"]);
        replies
    });
    assert_eq!(
        seen[0], ">2\r\n$10\r\ninvalidate\r\n*1\r\n$6\r\n?{tag}\r\n",
        "{seen:?}"
    );
    assert_eq!(seen[1..], ["+QUEUED\r\n", "*1\r\n+PONG\r\n"]);
}
