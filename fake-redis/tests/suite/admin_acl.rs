//! ACL users against a real redis-server 7.0, byte for byte in RESP2 and RESP3: every rule of
//! `ACL SETUSER` and its errors, what `ACL GETUSER` and `ACL LIST` describe, `ACL DRYRUN`, `AUTH`
//! and `HELLO AUTH`, `requirepass` as the `default` user's password, and the `NOPERM` refusals
//! of commands, keys and channels from a client, a transaction and a script. Then what takes
//! several connections (a transaction whose rules changed before `EXEC`, `ACL DELUSER` and a
//! revoked channel closing connections, `CLIENT KILL USER`, `ACL LOG`), and the doors other than
//! the engine's own (`FakeConnection`, the TCP server).
//!
//! Redis describes the single commands of a user's rules in the order of a hash table whose
//! seed changes with every process, so the cases here keep at most one single command per
//! selector, or a container and its subcommands (which Redis always names in that order).

use crate::support;

use bytes::{Bytes, BytesMut};
use fake_redis::resp::encode;
use fake_redis::{Engine, Frame, ManualClock};
use support::argv;
use support::raw::{self, Real, eval};

/// The users the cases create, removed before each case with what the cases leave behind.
const RESET: &[&[&[u8]]] = &[
    &[b"RESET"],
    &[b"ACL", b"LOG", b"RESET"],
    &[
        b"ACL", b"DELUSER", b"alice", b"bob", b"carol", b"dave", b"e1", b"sel",
    ],
    &[b"FLUSHALL"],
    &[b"CONFIG", b"SET", b"acl-pubsub-default", b"resetchannels"],
];

const RULE_CASES: &[raw::Case] = &[
    &[
        &["ACL SETUSER alice"],
        &["ACL GETUSER alice"],
        &["ACL LIST"],
        &["ACL USERS"],
        &[
            "ACL SETUSER alice on >p1 >p2 >p1 #5e884898da28047151d0e56f8dc6292773603d0dd6aabbdd62a11ef721d1542d ~a* %R~b* %W~c* %RW~d* ~a* %R~e %W~e &ch* &ch* +@hash +config|get",
        ],
        &["ACL GETUSER alice"],
        &["ACL LIST"],
        &[
            "ACL SETUSER alice <p1 !5e884898da28047151d0e56f8dc6292773603d0dd6aabbdd62a11ef721d1542d resetkeys ~x resetchannels allchannels",
        ],
        &["ACL GETUSER alice"],
        &["ACL SETUSER alice nopass skip-sanitize-payload"],
        &["ACL GETUSER alice"],
        &["ACL SETUSER alice resetpass sanitize-payload off"],
        &["ACL GETUSER alice"],
        &["ACL SETUSER alice allkeys allcommands ON"],
        &["ACL LIST"],
        &["ACL SETUSER alice reset"],
        &["ACL GETUSER alice"],
        &["ACL LIST"],
        &["ACL SETUSER bob on nopass ~* &* +@all"],
        &["ACL USERS"],
        &["ACL DELUSER alice nobody bob"],
        &["ACL DELUSER alice default"],
        &["ACL USERS"],
        &["ACL GETUSER alice"],
    ],
    &[
        &["ACL SETUSER bob +@all -@string"],
        &["ACL GETUSER bob"],
        &["ACL SETUSER bob -@all +@string -get"],
        &["ACL GETUSER bob"],
        &["ACL SETUSER bob +@all -get +get"],
        &["ACL GETUSER bob"],
        &["ACL SETUSER bob +@all -config +config|get"],
        &["ACL GETUSER bob"],
        &["ACL SETUSER bob nocommands +client -client|kill"],
        &["ACL GETUSER bob"],
        &["ACL SETUSER bob -@all +SELECT|Db0 +select|db0"],
        &["ACL GETUSER bob"],
        &["ACL SETUSER bob +select"],
        &["ACL GETUSER bob"],
        &["ACL SETUSER bob -@all +@READ"],
        &["ACL LIST"],
        &["ACL SETUSER bob +@all -@pubsub -@keyspace"],
        &["ACL LIST"],
        &["ACL SETUSER bob allcommands -@all"],
        &["ACL GETUSER bob"],
        &["ACL SETUSER bob nocommands +@all"],
        &["ACL GETUSER bob"],
    ],
    &[
        &["ACL SETUSER e1 bogus"],
        &["ACL SETUSER e1 +bogus"],
        &["ACL SETUSER e1 +@bogus"],
        &["ACL SETUSER e1 -@"],
        &["ACL SETUSER e1 +"],
        &["ACL SETUSER e1 ~* ~a"],
        &["ACL SETUSER e1 allkeys %R~a"],
        &["ACL SETUSER e1 &* &a"],
        &["ACL SETUSER e1 <nope"],
        &["ACL SETUSER e1 !nope"],
        &["ACL SETUSER e1 #abc"],
        &["ACL SETUSER e1 #5E884898DA28047151D0E56F8DC6292773603D0DD6AABBDD62A11EF721D1542D"],
        &["ACL SETUSER e1 !5e884898da28047151d0e56f8dc6292773603d0dd6aabbdd62a11ef721d1542d"],
        &["ACL SETUSER e1 +config|get|x"],
        &["ACL SETUSER e1 -config|get|x"],
        &["ACL SETUSER e1 +select|"],
        &["ACL SETUSER e1 -select|0"],
        &["ACL SETUSER e1 +bogus|x"],
        &["ACL SETUSER e1 +config|bogus"],
        &["ACL SETUSER e1 %X~a"],
        &["ACL SETUSER e1 %RR~a"],
        &["ACL SETUSER e1 %~a"],
        &["ACL", "SETUSER", "e1", "~a b"],
        &["ACL", "SETUSER", "e1", "&a\tb"],
        &["ACL", "SETUSER", "a b"],
        &["ACL", "SETUSER", "a\0b"],
        // Nothing of a refused SETUSER applies, even the rules before the bad one.
        &["ACL SETUSER e1 on ~k bogus"],
        &["ACL USERS"],
        &["ACL", "SETUSER", "e1", "%R", "%W~", "~", "&", "", ">", "<"],
        &["ACL GETUSER e1"],
        &["ACL LIST"],
        &["ACL SETUSER"],
        &["ACL GETUSER"],
        &["ACL DELUSER"],
        &["ACL DRYRUN e1"],
    ],
    &[
        &[
            "ACL",
            "SETUSER",
            "sel",
            "on",
            "~a*",
            "(~x* +set)",
            "(&y",
            "-get)",
        ],
        &["ACL GETUSER sel"],
        &["ACL LIST"],
        &["ACL", "SETUSER", "sel", "( ~z %R~w )", "()"],
        &["ACL GETUSER sel"],
        &["ACL SETUSER sel (~q +get"],
        &["ACL SETUSER sel on (~q (~r +get)"],
        &["ACL GETUSER sel"],
        &["ACL SETUSER sel (bogus)"],
        &["ACL SETUSER sel (~x bogus)"],
        &["ACL SETUSER sel clearselectors"],
        &["ACL GETUSER sel"],
    ],
    // `acl-pubsub-default allchannels`: new users, `reset` and new selectors get every channel.
    &[
        &["CONFIG SET acl-pubsub-default allchannels"],
        &["ACL SETUSER alice"],
        &["ACL", "SETUSER", "bob", "on", "(~x +get)", "&foo"],
        &["ACL SETUSER carol on &a reset"],
        &["ACL", "SETUSER", "dave", "on", "(~x +get)"],
        &["ACL LIST"],
        &["CONFIG SET acl-pubsub-default resetchannels"],
        &["ACL SETUSER e1 (+get)"],
        &["ACL SETUSER alice reset"],
        &["ACL LIST"],
    ],
];

raw::same_as_redis!(
    RULE_CASES,
    RESET,
    acl_rules_and_descriptions_reply_as_redis_in_resp2,
    acl_rules_and_descriptions_reply_as_redis_in_resp3
);

const CHECK_CASES: &[raw::Case] = &[
    // Commands, keys and channels, from a client's own call.
    &[
        &["ACL SETUSER alice on >pw ~a* &ch* +@all -flushall"],
        &["AUTH alice wrong"],
        &["AUTH nobody pw"],
        &["AUTH alice pw"],
        &["ACL WHOAMI"],
        &["GET b1"],
        &["GET a1"],
        &["SET a1 x"],
        &["FLUSHALL"],
        &["MSET a1 1 b1 2"],
        &["MSET a1 1 a2 2"],
        &["PUBLISH ch1 x"],
        &["PUBLISH zz x"],
        &["SPUBLISH zz x"],
        &["SUBSCRIBE ch1 zz"],
        &["SSUBSCRIBE zz"],
        &["PSUBSCRIBE ch* c*"],
        &["SORT a1 STORE b1"],
        &["SORT a1 STORE a2"],
        &["ZUNIONSTORE a3 2 a1 b1"],
        &["XREAD STREAMS a1 b1 0 0"],
        &["CONFIG GET maxmemory"],
        &["CLIENT KILL USER nobody"],
        &["CLIENT KILL USER alice"],
        &["ACL WHOAMI"],
    ],
    // Read and write patterns, and a command's subcommand and first argument.
    &[
        &["ACL SETUSER bob on nopass %R~r* %W~w* ~rw* +@all -config +config|get -select +select|0"],
        &["AUTH bob x"],
        &["GET r1"],
        &["SET r1 v"],
        &["SET w1 v"],
        &["GET w1"],
        &["SET w1 v GET"],
        &["SET rw1 v GET"],
        &["COPY r1 w2"],
        &["COPY w1 r2"],
        &["LMOVE r1 w1 LEFT RIGHT"],
        &["DEL r1"],
        &["EXISTS w1"],
        &["CONFIG GET maxmemory"],
        &["CONFIG SET maxmemory 0"],
        &["SELECT 0"],
        &["SELECT 1"],
        &["ACL DRYRUN bob select 1"],
        &["ACL DRYRUN bob set r1 v"],
        &["ACL DRYRUN bob config set maxmemory 0"],
        &["ACL DRYRUN bob get w1"],
        &["ACL DRYRUN bob get r1"],
        &["ACL DRYRUN nobody get r1"],
        &["ACL DRYRUN bob bogus"],
        &["ACL DRYRUN bob get"],
    ],
    // Selectors: any may allow a call; a refusal names the last key or channel refused.
    &[
        &[
            "ACL",
            "SETUSER",
            "sel",
            "on",
            "nopass",
            "-@all",
            "+get",
            "~a*",
            "(+set ~b*)",
            "(+get %R~c* &ch)",
        ],
        &["AUTH sel x"],
        &["GET a1"],
        &["GET b1"],
        &["SET b1 x"],
        &["SET a1 x"],
        &["GET c1"],
        &["SET c1 x"],
        &["INCR zz"],
        &["PUBLISH ch m"],
        &["ACL DRYRUN sel get b1"],
        &["ACL DRYRUN sel set c1 x"],
        &["ACL DRYRUN sel incr a1"],
        &["ACL DRYRUN sel publish ch m"],
    ],
    // Inside a transaction and a script.
    &[
        &["ACL SETUSER carol on nopass ~a* &ch* +@all -flushall"],
        &["AUTH carol x"],
        &["MULTI"],
        &["GET a1"],
        &["GET zz"],
        &["FLUSHALL"],
        &["PUBLISH zz m"],
        &["EXEC"],
        &["MULTI"],
        &["SET a1 v"],
        &["GET a1"],
        &["EXEC"],
        eval!("return redis.call('get','zz')"),
        &["EVAL", "return redis.call('get',KEYS[1])", "1", "zz"],
        &["EVAL", "return redis.call('get',KEYS[1])", "1", "a1"],
        eval!("return redis.call('flushall')"),
        eval!("return redis.pcall('flushall')"),
        eval!("return redis.call('publish','zz','m')"),
        eval!("return redis.pcall('get','zz')"),
        eval!("return redis.call('publish','ch1','m')"),
    ],
    // Authentication: AUTH, HELLO AUTH, requirepass as the default user's password.
    &[
        &["AUTH x"],
        &["AUTH default anything"],
        &["ACL SETUSER dave off >pw +@all ~*"],
        &["AUTH dave pw"],
        &["HELLO 3 AUTH dave pw"],
        &["HELLO 2 AUTH nobody x SETNAME n"],
        &["AUTH a b c"],
        &["ACL SETUSER dave on"],
        &["AUTH dave pw"],
        &["ACL WHOAMI"],
        &["CONFIG SET requirepass s3cret"],
        &["ACL LIST"],
        &["ACL GETUSER default"],
        &["CONFIG GET requirepass"],
        &["AUTH wrong"],
        &["AUTH s3cret"],
        &["ACL WHOAMI"],
        &["ACL SETUSER default >other"],
        &["CONFIG GET requirepass"],
        &["AUTH other"],
        &["CONFIG", "SET", "requirepass", ""],
        &["ACL GETUSER default"],
        &["AUTH s3cret"],
        &["ACL SETUSER default reset on nopass ~* &* +@all"],
        &["ACL LIST"],
    ],
];

raw::same_as_redis!(
    CHECK_CASES,
    RESET,
    permission_checks_reply_as_redis_in_resp2,
    permission_checks_reply_as_redis_in_resp3
);

/// Runs `steps` (a connection's index and a command) on a redis-server of its own and on a
/// fresh engine, in `protocol`; one line per reply that differs once `mask` has hidden what
/// only the machine decides. A closed connection answers `(closed)` on both.
fn compare_sessions(
    steps: &[(usize, &[&str])],
    protocol: u8,
    mask: fn(&[u8]) -> Vec<u8>,
) -> Vec<String> {
    let server = support::OwnServer::start();
    let clock = ManualClock::new(1_700_000_000_000);
    let mut engine = lock_core::fake::engine(clock);
    let mut real: Vec<Real> = Vec::new();
    let mut fake = Vec::new();
    let mut mismatches = Vec::new();
    for &(conn, command) in steps {
        while real.len() <= conn {
            let mut r = Real::connect(server.port);
            let f = engine.connect();
            if protocol == 3 {
                r.call(&[b"HELLO", b"3"]);
                engine.execute(f, &argv("HELLO 3"));
            }
            real.push(r);
            fake.push(f);
        }
        let raw: Vec<&[u8]> = raw::words(command).iter().map(|a| a.as_bytes()).collect();
        let argv: Vec<Bytes> = raw.iter().map(|a| Bytes::copy_from_slice(a)).collect();
        let want = real[conn]
            .call_or_closed(&raw)
            .map_or_else(|| b"(closed)".to_vec(), |r| mask(&r));
        let got = if engine.is_connected(fake[conn]) {
            let mut out = BytesMut::new();
            encode(&engine.execute(fake[conn], &argv), protocol, &mut out);
            mask(&out)
        } else {
            b"(closed)".to_vec()
        };
        if got != want {
            mismatches.push(raw::mismatch(
                &format!("RESP{protocol} #{conn} {command:?}"),
                &want,
                &got,
            ));
        }
    }
    mismatches
}

fn unmasked(reply: &[u8]) -> Vec<u8> {
    reply.to_vec()
}

/// Two tests, in RESP2 and in RESP3, each running `steps` as [`compare_sessions`] does with
/// `mask`, and failing with every reply that differs.
macro_rules! sessions_as_redis {
    ($steps:expr, $mask:expr, $resp2:ident, $resp3:ident) => {
        #[test]
        fn $resp2() {
            let mismatches = compare_sessions($steps, 2, $mask);
            assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
        }

        #[test]
        fn $resp3() {
            let mismatches = compare_sessions($steps, 3, $mask);
            assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
        }
    };
}

/// Several connections: a transaction whose user lost rights before `EXEC`, `ACL DELUSER` and
/// `CLIENT KILL USER` closing connections, a revoked channel closing its subscribers.
const SESSION: &[(usize, &[&str])] = &[
    (0, &["ACL SETUSER carol on nopass ~* &ch* +@all"]),
    (1, &["AUTH carol x"]),
    (1, &["MULTI"]),
    (1, &["GET k"]),
    (1, &["PUBLISH ch1 m"]),
    (1, &["SET k v"]),
    (1, &["SET other v"]),
    (
        0,
        &["ACL SETUSER carol -get resetkeys ~k resetchannels &other"],
    ),
    (1, &["EXEC"]),
    (1, &["GET k"]),
    // Subscribers of a channel the user may no longer reach are closed; the others stay.
    (2, &["AUTH carol x"]),
    (2, &["SUBSCRIBE other"]),
    (3, &["AUTH carol x"]),
    (3, &["SSUBSCRIBE other"]),
    (4, &["AUTH carol x"]),
    (4, &["PSUBSCRIBE oth*"]),
    (0, &["ACL SETUSER carol &oth* &new"]),
    (4, &["PSUBSCRIBE oth*"]),
    (2, &["PING"]),
    (0, &["ACL SETUSER carol resetchannels &other"]),
    (2, &["PING"]),
    (3, &["PING"]),
    (4, &["PING"]),
    (0, &["ACL SETUSER carol resetchannels &new"]),
    (2, &["PING"]),
    (3, &["PING"]),
    // CLIENT KILL USER closes the user's connections; an `off` user's stay open.
    (5, &["AUTH carol x"]),
    (6, &["AUTH carol x"]),
    (0, &["CLIENT KILL USER carol"]),
    (5, &["PING"]),
    (7, &["AUTH carol x"]),
    (0, &["ACL SETUSER carol off"]),
    (7, &["PING"]),
    (7, &["ACL WHOAMI"]),
    // ACL DELUSER closes the user's connections, the caller's own once its reply is out.
    (0, &["ACL DELUSER carol nobody"]),
    (7, &["PING"]),
    (8, &["ACL SETUSER self on nopass +@all"]),
    (8, &["AUTH self x"]),
    (8, &["ACL DELUSER self"]),
    (8, &["PING"]),
    (0, &["ACL USERS"]),
];

/// `ACL LOG`'s entries with their client's `CLIENT LIST` line and their age hidden: those
/// depend on the machine and the moment (the fake's are checked on its own clock below).
fn mask_log(reply: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(reply).into_owned();
    let mut out = String::new();
    let mut lines = text.split("\r\n").peekable();
    while let Some(line) = lines.next() {
        out.push_str(line);
        out.push_str("\r\n");
        if line == "age-seconds" || line == "client-info" {
            let value = lines.next().unwrap_or_default();
            if value.starts_with('$') {
                lines.next();
            }
            out.push_str("<hidden>\r\n");
        }
    }
    out.into_bytes()
}

const LOGGED: &[(usize, &[&str])] = &[
    (0, &["ACL SETUSER alice on >pw ~a* &ch* +@all -flushall"]),
    (1, &["AUTH alice wrong"]),
    (1, &["AUTH nobody pw"]),
    (1, &["HELLO 2 AUTH alice wrong"]),
    (1, &["AUTH alice pw"]),
    (1, &["GET b1"]),
    (1, &["GET b1"]),
    (1, &["GET b2"]),
    (1, &["FLUSHALL"]),
    (1, &["PUBLISH zz x"]),
    (1, eval!("return redis.call('get','zz')")),
    (1, eval!("return redis.pcall('flushall')")),
    (1, eval!("return redis.call('flushall')")),
    (1, &["MULTI"]),
    (1, &["GET zz"]),
    (1, &["FLUSHALL"]),
    (1, &["DISCARD"]),
    (1, &["MULTI"]),
    (1, &["GET a1"]),
    (0, &["ACL SETUSER alice -get"]),
    (1, &["EXEC"]),
    (0, &["ACL LOG"]),
    (0, &["ACL LOG 2"]),
    (0, &["ACL LOG -1"]),
    (0, &["ACL LOG x"]),
    (0, &["ACL LOG RESET"]),
    (0, &["ACL LOG"]),
];

sessions_as_redis!(
    SESSION,
    unmasked,
    several_connections_see_what_redis_s_see_in_resp2,
    several_connections_see_what_redis_s_see_in_resp3
);

sessions_as_redis!(
    LOGGED,
    mask_log,
    acl_log_entries_are_redis_s_in_resp2,
    acl_log_entries_are_redis_s_in_resp3
);

/// The fields of the newest `ACL LOG` entry of `engine`, seen by `client`.
fn newest_entry(engine: &mut Engine, client: fake_redis::ClientId) -> Vec<(String, Frame)> {
    let Frame::Array(entries) = engine.execute(client, &argv("ACL LOG 1")) else {
        panic!("ACL LOG replies an array");
    };
    let Some(Frame::Map(fields)) = entries.into_iter().next() else {
        panic!("an entry is a map");
    };
    fields
        .into_iter()
        .map(|(k, v)| match k {
            Frame::Bulk(k) => (String::from_utf8_lossy(&k).into_owned(), v),
            other => panic!("a field name is a bulk string, not {other:?}"),
        })
        .collect()
}

#[test]
fn acl_log_ages_on_the_engine_s_clock_and_groups_a_minute_of_repeats() {
    let clock = ManualClock::new(1_700_000_000_000);
    let mut engine = Engine::new(clock.clone());
    let admin = engine.connect();
    let alice = engine.connect();
    engine.execute(admin, &argv("ACL SETUSER alice on nopass ~a* +@all"));
    engine.execute(alice, &argv("AUTH alice x"));
    engine.execute(alice, &argv("GET b"));
    clock.advance(1_500);
    let entry = newest_entry(&mut engine, admin);
    assert_eq!(entry[0], ("count".into(), Frame::Integer(1)));
    assert_eq!(entry[5], ("age-seconds".into(), Frame::Double(1.5)));
    let Frame::Bulk(info) = &entry[6].1 else {
        panic!("client-info is a bulk string");
    };
    assert!(
        info.starts_with(format!("id={} ", alice.0).as_bytes())
            && info.ends_with(b" cmd=get user=alice redir=-1 resp=2"),
        "client-info is the client's CLIENT LIST line: {:?}",
        String::from_utf8_lossy(info)
    );
    // The same refusal within a minute counts in the entry, which takes the new time.
    clock.advance(58_500);
    engine.execute(alice, &argv("GET b"));
    let entry = newest_entry(&mut engine, admin);
    assert_eq!(entry[0], ("count".into(), Frame::Integer(2)));
    assert_eq!(entry[5], ("age-seconds".into(), Frame::Double(0.0)));
    // More than a minute later it is a new entry.
    clock.advance(60_001);
    engine.execute(alice, &argv("GET b"));
    assert_eq!(
        newest_entry(&mut engine, admin)[0],
        ("count".into(), Frame::Integer(1))
    );
    let Frame::Array(all) = engine.execute(admin, &argv("ACL LOG")) else {
        panic!("ACL LOG replies an array");
    };
    assert_eq!(all.len(), 2);
}

#[test]
fn acl_log_keeps_acllog_max_len_entries() {
    let mut engine = Engine::new(ManualClock::new(1_700_000_000_000));
    let admin = engine.connect();
    let alice = engine.connect();
    engine.execute(admin, &argv("CONFIG SET acllog-max-len 3"));
    engine.execute(admin, &argv("ACL SETUSER alice on nopass ~a* +@all"));
    engine.execute(alice, &argv("AUTH alice x"));
    for key in ["b1", "b2", "b3", "b4", "b5"] {
        engine.execute(alice, &argv(&format!("GET {key}")));
    }
    let Frame::Array(all) = engine.execute(admin, &argv("ACL LOG")) else {
        panic!("ACL LOG replies an array");
    };
    let objects: Vec<Frame> = all
        .into_iter()
        .map(|e| match e {
            Frame::Map(fields) => fields[3].1.clone(),
            other => panic!("an entry is a map, not {other:?}"),
        })
        .collect();
    assert_eq!(
        objects,
        ["b5", "b4", "b3"].map(|k| Frame::Bulk(Bytes::from_static(k.as_bytes())))
    );
}

#[test]
fn a_restricted_user_s_lock_script_fails_as_redis_s_script_does() {
    // The lock's scripts run natively for a user who may run everything; a user whose rights
    // are limited gets the refusal Redis's script raises, at the same call, and the writes
    // before it stay.
    let acquire = lock_core::script::all()[0];
    assert_eq!(acquire.name, "acquire");
    let eval = [
        "EVAL",
        acquire.body,
        "2",
        "lock",
        "latch",
        "30000",
        "owner:1",
        "10000",
        "1",
    ];
    let steps: Vec<(usize, &[&str])> = vec![
        (
            0,
            &[
                "ACL", "SETUSER", "locker", "on", "nopass", "~*", "&*", "+@all", "-hincrby",
            ],
        ),
        (0, &eval),
        (0, &["HGETALL", "lock"]),
        (0, &["DEL", "lock", "latch"]),
        (1, &["AUTH", "locker", "x"]),
        (1, &eval),
        (1, &["EXISTS", "lock", "latch"]),
        (0, &["ACL", "SETUSER", "locker", "+hincrby"]),
        (1, &eval),
        (1, &["HGETALL", "lock"]),
    ];
    for protocol in [2, 3] {
        let mismatches = compare_sessions(&steps, protocol, unmasked);
        assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
    }
}

#[tokio::test]
async fn noperm_comes_through_the_tcp_server_and_fake_connection() {
    use fake_redis::server::{Server, ServerConfig};
    use support::pipe::{ask, connect};
    let server = Server::new(&ServerConfig::default());
    let mut admin = connect(&server);
    let mut user = connect(&server);
    assert_eq!(
        ask(&mut admin, "ACL SETUSER reader on >pw ~r* +@read +auth").await,
        "+OK"
    );
    assert_eq!(ask(&mut user, "AUTH reader pw").await, "+OK");
    assert_eq!(
        ask(&mut user, "SET r1 v").await,
        "-NOPERM this user has no permissions to run the 'set' command"
    );
    assert_eq!(
        ask(&mut user, "GET x1").await,
        "-NOPERM this user has no permissions to access one of the keys used as arguments"
    );
    assert_eq!(ask(&mut user, "GET r1").await, "$-1");

    let mut conn = support::fake_connection();
    let set = support::run(&mut conn, "ACL SETUSER reader on nopass ~r* +@read +auth").await;
    assert_eq!(support::describe(&set), "ok");
    support::run(&mut conn, "AUTH reader x").await.unwrap();
    let refused = support::run(&mut conn, "SET r1 v").await;
    assert!(
        support::describe(&refused)
            .contains("this user has no permissions to run the 'set' command"),
        "{}",
        support::describe(&refused)
    );
}

/// An engine whose client, returned, has set `requirepass` to `password`.
fn engine_with_requirepass(password: &str) -> (Engine, fake_redis::ClientId) {
    let mut engine = Engine::new(ManualClock::default());
    let admin = engine.connect();
    assert_eq!(
        engine.execute(admin, &argv(&format!("CONFIG SET requirepass {password}"))),
        Frame::OK
    );
    (engine, admin)
}

/// A client connected now is refused with `NOAUTH` until it sends `AUTH password`, and then
/// served.
#[track_caller]
fn assert_new_clients_need(engine: &mut Engine, password: &str) {
    let late = engine.connect();
    assert_eq!(
        engine.execute(late, &argv("GET k")),
        Frame::error("NOAUTH Authentication required.")
    );
    assert_eq!(
        engine.execute(late, &argv(&format!("AUTH {password}"))),
        Frame::OK
    );
    assert_eq!(engine.execute(late, &argv("GET k")), Frame::Null);
}

#[test]
fn config_set_requirepass_guards_new_connections_and_spares_open_ones() {
    let (mut engine, admin) = engine_with_requirepass("s3cret");
    assert_new_clients_need(&mut engine, "s3cret");
    assert_eq!(engine.execute(admin, &argv("GET k")), Frame::Null);
    assert_eq!(
        engine.execute(admin, &argv("CONFIG GET requirepass")),
        Frame::Map(vec![(
            Frame::Bulk(Bytes::from_static(b"requirepass")),
            Frame::Bulk(Bytes::from_static(b"s3cret"))
        )])
    );
}

#[test]
fn requirepass_set_by_config_is_the_default_user_s_password_for_new_connections() {
    let (mut engine, admin) = engine_with_requirepass("pw");
    // A connection made before stays authenticated, as in Redis.
    assert_eq!(engine.execute(admin, &argv("PING")), Frame::simple("PONG"));
    assert_new_clients_need(&mut engine, "pw");
    // Removing the password through the user lets new connections in again.
    engine.execute(admin, &argv("ACL SETUSER default nopass"));
    let open = engine.connect();
    assert_eq!(engine.execute(open, &argv("GET k")), Frame::Null);
    // An `off` default user needs AUTH as another user.
    engine.execute(admin, &argv("ACL SETUSER default off"));
    let shut = engine.connect();
    assert_eq!(
        engine.execute(shut, &argv("GET k")),
        Frame::error("NOAUTH Authentication required.")
    );
}

#[test]
fn a_default_user_with_a_password_or_off_lets_no_command_run_unauthenticated() {
    // Not `requirepass` (admin_server.rs sends the same with it) but the user's own rules.
    for rules in [&["resetpass", ">pw"][..], &["off"]] {
        let server = support::OwnServer::start();
        let mut admin = Real::connect(server.port);
        let mut engine = Engine::new(ManualClock::new(1_700_000_000_000));
        let fake_admin = engine.connect();
        let mut setuser = argv("ACL SETUSER default");
        setuser.extend(rules.iter().map(|r| Bytes::copy_from_slice(r.as_bytes())));
        let raw_setuser: Vec<&[u8]> = setuser.iter().map(|a| &a[..]).collect();
        assert_eq!(
            admin.call_or_closed(&raw_setuser),
            Some(b"+OK\r\n".to_vec())
        );
        assert_eq!(engine.execute(fake_admin, &setuser), Frame::OK);
        raw::sweep_unauthenticated(&mut engine, fake_admin, server.port)
            .assert_as_redis(&format!("{rules:?}"));
    }
}
