//! What a busy script leaves other clients able to do, held to a redis-server of the test's own:
//! a transaction opened meanwhile (`MULTI` answered at once, the commands after it refused,
//! `EXEC` refused and the transaction dropped), `FUNCTION STATS` during a busy `FCALL`, and a
//! library whose loading never ends (`FUNCTION LOAD`'s timeout); and clients a `CLIENT PAUSE`
//! holds, counted in `blocked_clients`. Each scenario runs on both servers, and the replies, byte
//! for byte, must be the same.
//!
//! Every read waits at most 30 s ([`Real`]'s bound), and every wait for a state at most
//! [`PATIENCE`], so a reply the fake never sends fails the test instead of
//! hanging it; nothing asserts a duration.

use crate::support;

use std::time::{Duration, Instant};
use support::binary::PATIENCE;
use support::raw::Real;

const SPIN: &str = "while true do end";
const SPIN_LIBRARY: &str =
    "#!lua name=spinlib\nredis.register_function('spin', function()\n  while true do end\nend)";

/// A client on raw RESP ([`Real`] speaks to either server): replies are kept as their bytes.
struct Client(Real);

impl Client {
    fn connect(port: u16) -> Client {
        Client(Real::connect(port))
    }

    fn send(&mut self, argv: &[&str]) {
        let argv: Vec<&[u8]> = argv.iter().map(|arg| arg.as_bytes()).collect();
        self.0.send(&argv);
    }

    /// One whole reply, as the bytes it came in.
    fn read(&mut self) -> String {
        String::from_utf8_lossy(&self.0.reply()).into_owned()
    }

    fn call(&mut self, argv: &[&str]) -> String {
        self.send(argv);
        self.read()
    }
}

/// Pings until the script sent just before is busy; gives the `BUSY` error.
fn until_busy(client: &mut Client) -> String {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let reply = client.call(&["PING"]);
        if reply != "+PONG\r\n" {
            return reply;
        }
        assert!(Instant::now() < deadline, "the script never got busy");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Runs `scenario` on a redis-server of the test's own and on the fake, both with a busy
/// threshold of 200 ms, and requires the same replies.
fn same_on_both(scenario: fn(u16) -> Vec<String>) {
    let redis = support::OwnServer::start_with(&["--busy-reply-threshold".into(), "200".into()]);
    let expected = scenario(redis.port);
    let (mut child, port) = support::binary::start(&["--busy-reply-threshold", "200"]);
    let got = scenario(port);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(got, expected);
}

fn transaction_opened_while_busy(port: u16) -> Vec<String> {
    let (mut runner, mut other, mut killer) = (
        Client::connect(port),
        Client::connect(port),
        Client::connect(port),
    );
    let mut seen = vec![];
    runner.send(&["EVAL", SPIN, "0"]);
    seen.push(until_busy(&mut other));
    for argv in [
        &["DISCARD"][..],
        &["MULTI"],
        &["SET", "x", "1"],
        &["MULTI"],
        &["WATCH", "x"],
        &["EXEC"],
        &["MULTI"],
        &["INCR", "y"],
        &["DISCARD"],
        &["EXEC"],
        &["MULTI"],
        &["INCR", "y"],
    ] {
        seen.push(other.call(argv));
    }
    seen.push(killer.call(&["SCRIPT", "KILL"]));
    seen.push(runner.read());
    // The refused INCR doomed the transaction the script's end leaves open.
    seen.push(other.call(&["EXEC"]));
    seen.push(other.call(&["GET", "y"]));
    for argv in [&["MULTI"][..], &["INCR", "y"], &["EXEC"]] {
        seen.push(other.call(argv));
    }
    seen
}

#[test]
fn a_transaction_opened_while_a_script_is_busy_is_answered_at_once_as_redis_answers_it() {
    same_on_both(transaction_opened_while_busy);
}

/// `duration_ms` is the only wall-clock figure; it is blanked.
fn without_duration(reply: String) -> String {
    match reply.split_once("$11\r\nduration_ms\r\n:") {
        Some((head, tail)) => {
            let rest = tail.split_once("\r\n").map_or("", |(_, rest)| rest);
            format!("{head}$11\r\nduration_ms\r\n:_\r\n{rest}")
        }
        None => reply,
    }
}

fn function_stats_while_busy(port: u16) -> Vec<String> {
    let (mut runner, mut other) = (Client::connect(port), Client::connect(port));
    let mut seen = vec![runner.call(&["FUNCTION", "LOAD", "REPLACE", SPIN_LIBRARY])];
    runner.send(&["FCALL", "spin", "0"]);
    seen.push(until_busy(&mut other));
    seen.push(without_duration(other.call(&["FUNCTION", "STATS"])));
    seen.push(other.call(&["FUNCTION", "KILL"]));
    seen.push(runner.read());
    seen.push(other.call(&["FUNCTION", "STATS"]));
    // While an EVAL is busy, FUNCTION STATS gets its BUSY.
    runner.send(&["EVAL", SPIN, "0"]);
    seen.push(until_busy(&mut other));
    seen.push(other.call(&["FUNCTION", "STATS"]));
    seen.push(other.call(&["SCRIPT", "KILL"]));
    seen.push(runner.read());
    seen
}

#[test]
fn function_stats_is_answered_while_a_function_is_busy() {
    same_on_both(function_stats_while_busy);
}

fn endless_library(port: u16) -> Vec<String> {
    let (mut loader, mut other) = (Client::connect(port), Client::connect(port));
    let mut seen =
        vec![loader.call(&["FUNCTION", "LOAD", "#!lua name=endless\nwhile true do end"])];
    // The server is not left busy: both clients are served, and a library loads.
    seen.push(other.call(&["PING"]));
    seen.push(loader.call(&["SET", "k", "v"]));
    seen.push(loader.call(&["FUNCTION", "LOAD", "REPLACE", SPIN_LIBRARY]));
    seen.push(other.call(&["FUNCTION", "DELETE", "spinlib"]));
    seen
}

#[test]
fn a_library_whose_loading_never_ends_times_out_as_in_redis() {
    same_on_both(endless_library);
}

/// `INFO clients`' `blocked_clients` line.
fn blocked_clients(client: &mut Client) -> String {
    let info = client.call(&["INFO", "clients"]);
    let line = info.lines().find(|l| l.starts_with("blocked_clients:"));
    line.expect("INFO clients has blocked_clients").to_owned()
}

/// Waits until `CLIENT LIST` names every command of `commands` (sent by other clients).
fn until_listed(client: &mut Client, commands: &[&str]) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let list = client.call(&["CLIENT", "LIST"]);
        if commands.iter().all(|c| list.contains(&format!("cmd={c} "))) {
            return;
        }
        assert!(Instant::now() < deadline, "never listed: {list}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn clients_held_by_a_pause(port: u16) -> Vec<String> {
    let (mut admin, mut writer, mut popper) = (
        Client::connect(port),
        Client::connect(port),
        Client::connect(port),
    );
    let mut seen = vec![admin.call(&["CLIENT", "PAUSE", "60000", "WRITE"])];
    writer.send(&["SET", "p", "1"]);
    popper.send(&["BLPOP", "held", "0"]);
    until_listed(&mut admin, &["set", "blpop"]);
    // Both are held by the pause (BLPOP is a write): both count as blocked.
    seen.push(blocked_clients(&mut admin));
    seen.push(admin.call(&["CLIENT", "UNPAUSE"]));
    seen.push(writer.read());
    // Now only the BLPOP is blocked, on its empty list.
    seen.push(blocked_clients(&mut admin));
    seen.push(admin.call(&["RPUSH", "held", "x"]));
    seen.push(popper.read());
    seen.push(blocked_clients(&mut admin));
    seen
}

#[test]
fn clients_a_pause_holds_count_as_blocked() {
    same_on_both(clients_held_by_a_pause);
}
