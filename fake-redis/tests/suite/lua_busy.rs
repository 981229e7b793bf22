//! A runaway script through `fake-redis-server`, as Redis 7.0 answers it: on the wall clock, past
//! the busy threshold, other connections get `BUSY`, `SCRIPT KILL` ends a script that has not
//! written and the server serves on; a script that has written is `UNKILLABLE`, and `SHUTDOWN
//! NOSAVE` stops the server. On the virtual clock the instruction budget ends the script, with
//! the same reply on every run.
//!
//! The binary runs on its default runtime (one worker thread), where the script's thread must hand
//! the worker over for anyone else to be served. The threshold is short so the tests are quick;
//! every wait is generous, and nothing asserts a duration.

use crate::support;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::process::Child;
use std::time::{Duration, Instant};
use support::binary::{PATIENCE, wait_for_exit};

const BUSY: &str =
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
const UNKILLABLE: &str = "UNKILLABLE Sorry the script already executed write commands against the \
     dataset. You can either wait the script termination or kill the server in a hard way using \
     the SHUTDOWN NOSAVE command.";
const FUNCTION_BUSY: &str =
    "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";
const NOTBUSY: &str = "NOTBUSY No scripts in execution right now.";
const SPIN: &str = "while true do end";

/// A server process, killed if a test fails before it stops.
struct Fake {
    child: Child,
    port: u16,
}

impl Drop for Fake {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(args: &[&str]) -> Fake {
    let (child, port) = support::binary::start(args);
    Fake { child, port }
}

/// A fake server started with `args`, a client that runs the script and one that watches it.
fn start_with_two_clients(args: &[&str]) -> (Fake, Client, Client) {
    let fake = start(args);
    let runner = Client::connect(fake.port);
    let other = Client::connect(fake.port);
    (fake, runner, other)
}

/// A reply, as far as these tests need to tell them apart.
#[derive(Debug, PartialEq, Eq)]
enum Reply {
    Status(String),
    Error(String),
    Integer(i64),
    Bulk(Option<String>),
    /// The server closed the connection.
    Closed,
}

struct Client {
    writer: TcpStream,
    reader: BufReader<TcpStream>,
}

impl Client {
    fn connect(port: u16) -> Client {
        let stream = TcpStream::connect(("127.0.0.1", port)).expect("it listens");
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        Client {
            reader: BufReader::new(stream.try_clone().unwrap()),
            writer: stream,
        }
    }

    fn send(&mut self, argv: &[&str]) {
        let mut out = format!("*{}\r\n", argv.len());
        for arg in argv {
            out.push_str(&format!("${}\r\n{arg}\r\n", arg.len()));
        }
        self.writer.write_all(out.as_bytes()).unwrap();
    }

    fn read(&mut self) -> Reply {
        let mut line = String::new();
        if self.reader.read_line(&mut line).expect("a reply in time") == 0 {
            return Reply::Closed;
        }
        let line = line.trim_end_matches("\r\n");
        let (kind, rest) = line.split_at(1);
        match kind {
            "+" => Reply::Status(rest.to_owned()),
            "-" => Reply::Error(rest.to_owned()),
            ":" => Reply::Integer(rest.parse().unwrap()),
            "$" if rest == "-1" => Reply::Bulk(None),
            "$" => {
                let mut body = String::new();
                self.reader.read_line(&mut body).unwrap();
                Reply::Bulk(Some(body.trim_end_matches("\r\n").to_owned()))
            }
            _ => panic!("unexpected reply {line:?}"),
        }
    }

    fn call(&mut self, argv: &[&str]) -> Reply {
        self.send(argv);
        self.read()
    }
}

fn error(text: &str) -> Reply {
    Reply::Error(text.to_owned())
}

fn killed(reply: &Reply, body: &str) {
    let sha = sha1_smol::Sha1::from(body).digest().to_string();
    assert_eq!(
        reply,
        &error(&format!(
            "ERR Script killed by user with SCRIPT KILL... script: {sha}, on @user_script:1."
        ))
    );
}

/// Pings until the script sent just before is busy, expecting the EVAL's `BUSY`.
fn until_busy(client: &mut Client) {
    until_busy_with(client, BUSY);
}

/// Pings until the script sent just before is busy (the ping may arrive before the script
/// starts; once it runs, the reply waits for the threshold).
fn until_busy_with(client: &mut Client, busy: &str) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        match client.call(&["PING"]) {
            Reply::Status(pong) if pong == "PONG" => {}
            reply => return assert_eq!(reply, error(busy)),
        }
        assert!(Instant::now() < deadline, "the script never got busy");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_busy_script_answers_busy_and_script_kill_ends_it() {
    let (fake, mut runner, mut other) = start_with_two_clients(&["--busy-reply-threshold", "200"]);
    assert_eq!(other.call(&["SCRIPT", "KILL"]), error(NOTBUSY));
    runner.send(&["EVAL", SPIN, "0"]);
    // Before the threshold nothing is answered; past it, everything but a few commands is BUSY.
    until_busy(&mut other);
    assert_eq!(other.call(&["GET", "k"]), error(BUSY));
    assert_eq!(other.call(&["EVAL", "return 1", "0"]), error(BUSY));
    assert_eq!(other.call(&["SCRIPT", "FLUSH"]), error(BUSY));
    assert_eq!(other.call(&["SHUTDOWN"]), error(BUSY));
    // FUNCTION KILL cannot end an EVAL: it gets the EVAL's BUSY.
    assert_eq!(other.call(&["FUNCTION", "KILL"]), error(BUSY));
    // A client that connects while the script is busy is answered too.
    let mut late = Client::connect(fake.port);
    assert_eq!(late.call(&["SET", "k", "v"]), error(BUSY));
    assert_eq!(late.call(&["SCRIPT", "KILL"]), Reply::Status("OK".into()));
    killed(&runner.read(), SPIN);
    // The server serves on, the killed script's client too.
    assert_eq!(other.call(&["PING"]), Reply::Status("PONG".into()));
    assert_eq!(late.call(&["GET", "k"]), Reply::Bulk(None));
    assert_eq!(
        runner.call(&["EVAL", "return 'after'", "0"]),
        Reply::Bulk(Some("after".into()))
    );
    assert_eq!(other.call(&["SCRIPT", "KILL"]), error(NOTBUSY));
}

#[test]
fn a_command_allowed_while_busy_that_needs_the_engine_runs_after_the_script() {
    let (fake, mut runner, mut other) = start_with_two_clients(&["--busy-reply-threshold", "200"]);
    runner.send(&["EVAL", SPIN, "0"]);
    until_busy(&mut other);
    // WATCH is allowed while busy but needs the engine: it is answered once the script ends,
    // and the requests behind it after it, in order.
    other.send(&["WATCH", "k"]);
    other.send(&["GET", "k"]);
    let mut killer = Client::connect(fake.port);
    assert_eq!(killer.call(&["SCRIPT", "KILL"]), Reply::Status("OK".into()));
    killed(&runner.read(), SPIN);
    assert_eq!(other.read(), Reply::Status("OK".into()));
    assert_eq!(other.read(), Reply::Bulk(None));
}

#[test]
fn a_script_that_wrote_is_unkillable_and_shutdown_nosave_stops_the_server() {
    let (mut fake, mut runner, mut other) =
        start_with_two_clients(&["--busy-reply-threshold", "200"]);
    runner.send(&["EVAL", "redis.call('SET', 'k', 'v') while true do end", "0"]);
    until_busy(&mut other);
    assert_eq!(other.call(&["SCRIPT", "KILL"]), error(UNKILLABLE));
    assert_eq!(other.call(&["FUNCTION", "KILL"]), error(UNKILLABLE));
    assert_eq!(other.call(&["SHUTDOWN", "NOSAVE"]), Reply::Closed);
    assert!(wait_for_exit(&mut fake.child).success());
}

#[test]
fn on_the_virtual_clock_the_budget_ends_the_script_the_same_way_every_time() {
    let (_fake, mut runner, mut other) =
        start_with_two_clients(&["--clock", "virtual", "--busy-reply-threshold", "1"]);
    runner.send(&["EVAL", SPIN, "0"]);
    // Never BUSY on the virtual clock: the other client waits for the script to end.
    other.send(&["PING"]);
    let first = runner.read();
    killed(&first, SPIN);
    assert_eq!(other.read(), Reply::Status("PONG".into()));
    assert_eq!(runner.call(&["EVAL", SPIN, "0"]), first);
    assert_eq!(other.call(&["SCRIPT", "KILL"]), error(NOTBUSY));
}

#[test]
fn a_busy_function_answers_its_own_busy_and_function_kill_ends_it() {
    let (_fake, mut runner, mut other) = start_with_two_clients(&["--busy-reply-threshold", "200"]);
    let library =
        "#!lua name=spinlib\nredis.register_function('spin', function()\n  while true do end\nend)";
    assert_eq!(
        runner.call(&["FUNCTION", "LOAD", library]),
        Reply::Bulk(Some("spinlib".into()))
    );
    assert_eq!(other.call(&["FUNCTION", "KILL"]), error(NOTBUSY));
    runner.send(&["FCALL", "spin", "0"]);
    until_busy_with(&mut other, FUNCTION_BUSY);
    assert_eq!(other.call(&["GET", "k"]), error(FUNCTION_BUSY));
    // SCRIPT KILL cannot end a function: it gets the function's BUSY.
    assert_eq!(other.call(&["SCRIPT", "KILL"]), error(FUNCTION_BUSY));
    assert_eq!(
        other.call(&["FUNCTION", "KILL"]),
        Reply::Status("OK".into())
    );
    assert_eq!(
        runner.read(),
        error("ERR Script killed by user with SCRIPT KILL... script: spin, on @user_function:3.")
    );
    assert_eq!(other.call(&["PING"]), Reply::Status("PONG".into()));
    assert_eq!(other.call(&["FUNCTION", "KILL"]), error(NOTBUSY));
}

#[test]
fn config_set_busy_reply_threshold_moves_the_threshold_of_the_next_script() {
    let (_fake, mut runner, mut other) =
        start_with_two_clients(&["--busy-reply-threshold", "600000"]);
    // CONFIG GET answers an array; the test reads its two bulk strings in turn.
    other.send(&["CONFIG", "GET", "busy-reply-threshold"]);
    let mut header = String::new();
    other.reader.read_line(&mut header).unwrap();
    assert_eq!(header, "*2\r\n");
    assert_eq!(
        other.read(),
        Reply::Bulk(Some("busy-reply-threshold".into()))
    );
    assert_eq!(other.read(), Reply::Bulk(Some("600000".into())));
    assert_eq!(
        other.call(&["CONFIG", "SET", "lua-time-limit", "200"]),
        Reply::Status("OK".into())
    );
    // With the old threshold of ten minutes the script would never be busy within the test.
    runner.send(&["EVAL", SPIN, "0"]);
    until_busy(&mut other);
    assert_eq!(other.call(&["SCRIPT", "KILL"]), Reply::Status("OK".into()));
    killed(&runner.read(), SPIN);
}

#[test]
fn after_a_restart_fault_a_runaway_script_still_answers_busy() {
    let fake = start(&["--busy-reply-threshold", "200"]);
    let mut admin = Client::connect(fake.port);
    assert_eq!(
        admin.call(&["FAKE.FAULT", "RESTART"]),
        Reply::Status("OK".into())
    );
    // The restart closed every connection, the admin's too; the server's script watch is the
    // restarted engine's.
    let mut runner = Client::connect(fake.port);
    let mut other = Client::connect(fake.port);
    runner.send(&["EVAL", SPIN, "0"]);
    until_busy(&mut other);
    assert_eq!(other.call(&["SCRIPT", "KILL"]), Reply::Status("OK".into()));
    killed(&runner.read(), SPIN);
}

/// Thousands of library loads leave the server serving. The hook counts the state's
/// instructions across calls, so it fires inside some load sooner or later (about every
/// 12,000th of these); a load starts far into its budget, and the hook once took it for a long
/// script and handed its worker over, marking the watch busy with no script's end to clear it:
/// every connection then waited for ever. Loads are pipelined so that 20,000 take a second.
#[test]
fn twenty_thousand_library_loads_leave_the_server_serving() {
    let (_fake, mut loader, mut other) = start_with_two_clients(&[]);
    const BATCH: usize = 1_000;
    for round in 0..20 {
        for i in 0..BATCH {
            let n = round * BATCH + i;
            let code =
                format!("#!lua name=lib\nredis.register_function('f', function() return {n} end)");
            loader.send(&["FUNCTION", "LOAD", "REPLACE", &code]);
        }
        for _ in 0..BATCH {
            assert_eq!(loader.read(), Reply::Bulk(Some("lib".into())));
        }
    }
    assert_eq!(other.call(&["PING"]), Reply::Status("PONG".into()));
    assert_eq!(loader.call(&["FCALL", "f", "0"]), Reply::Integer(19_999));
}

/// A `DEBUG SLEEP` long over does not hold the workers while a script runs: the connections
/// read the engine's time without waiting for its lock, so the one that sends `SCRIPT KILL` is
/// still served. (Each connection looked at the sleep's end under the engine's lock, waiting on
/// it while the script held it, until no worker was left to read the kill.)
#[test]
fn after_a_debug_sleep_a_busy_script_can_still_be_killed() {
    let (fake, mut runner, mut other) = start_with_two_clients(&[
        "--busy-reply-threshold",
        "200",
        "--enable-debug-command",
        "yes",
    ]);
    assert_eq!(
        other.call(&["DEBUG", "SLEEP", "0.01"]),
        Reply::Status("OK".into())
    );
    runner.send(&["EVAL", SPIN, "0"]);
    until_busy(&mut other);
    let mut killer = Client::connect(fake.port);
    assert_eq!(killer.call(&["SCRIPT", "KILL"]), Reply::Status("OK".into()));
    killed(&runner.read(), SPIN);
    assert_eq!(other.call(&["PING"]), Reply::Status("PONG".into()));
}
