//! `INFO` in the fake's Valkey 9.1 mode names every section and field valkey-server 9.1.2 prints,
//! in its order: for `INFO`, `INFO all` and `INFO everything`, and for each section asked alone.
//!
//! The shape of each reply (its section headers, and each field's name without its value) is
//! held to the one recorded from valkey-server 9.1.2 in `fake-redis/data/valkey-9.1/info-fields.txt`.
//! With `VALKEY_SERVER` naming a `valkey-server` binary, the test also starts that server, runs
//! the same commands on it, and requires its shapes to be the recorded ones (so a new release's
//! fields show up here) and the fake's to be its own. Both run the same commands first on one
//! connection, from reset statistics, so the per-command sections name the same commands. The
//! recording is what `INFO` printed on a fresh valkey-server 9.1.2 after those commands;
//! `VALKEY_INFO_RECORD` prints the live server's shapes in the file's form.

use crate::support;

use fake_redis::{ClientId, DebugCommand, Engine, EngineConfig, Frame, ManualClock, Version};
use support::OwnServer;
use support::argv;
use support::raw::Real;

/// The recorded shapes: a `== INFO <args>` line before each reply's shape.
const RECORDED: &str = include_str!("../../data/valkey-9.1/info-fields.txt");

/// What both servers run before the `INFO`s: statistics reset, a key of each kind the keyspace
/// line describes, one error.
const SETUP: &[&str] = &[
    "CONFIG RESETSTAT",
    "SET k v",
    "HSET h a 1",
    "HEXPIRE h 100 FIELDS 1 a",
    "GET nokey",
    "INCR h",
];

/// The `INFO` calls compared, by their arguments.
const CALLS: &[&str] = &[
    "",
    "all",
    "everything",
    "default",
    "server",
    "tls",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "modules",
    "errorstats",
    "cluster",
    "cluster_info",
    "scriptingengines",
    "keyspace",
    "server clients",
    "nosuchsection",
];

/// A reply's shape: its section headers as they are, each field as its name alone. The
/// per-command sections list their commands in the order of the server's hash table, which
/// the fake does not imitate: their names are compared sorted.
fn shape(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut names: Vec<String> = Vec::new();
    let mut sorted = false;
    let flush = |out: &mut Vec<String>, names: &mut Vec<String>, sorted: bool| {
        if sorted {
            names.sort();
        }
        out.append(names);
    };
    for line in text.lines().map(|l| l.trim_end_matches('\r')) {
        if line.is_empty() {
            continue;
        }
        if line.starts_with('#') {
            flush(&mut out, &mut names, sorted);
            sorted = line == "# Commandstats" || line == "# Latencystats";
            out.push(line.to_owned());
        } else {
            names.push(line.split(':').next().unwrap_or_default().to_owned());
        }
    }
    flush(&mut out, &mut names, sorted);
    out
}

/// The text of a bulk or verbatim reply in RESP2 bytes.
fn bulk_text(raw: &[u8]) -> String {
    let text = String::from_utf8_lossy(raw);
    match text.split_once("\r\n") {
        Some((head, body)) if head.starts_with('$') => body.to_owned(),
        _ => text.into_owned(),
    }
}

/// Each call's shape, as `== INFO <args>` and the shape's lines.
fn shapes(mut info: impl FnMut(&str) -> String) -> String {
    let mut out = String::new();
    for call in CALLS {
        out.push_str(&format!("== INFO {call}\n"));
        for line in shape(&info(call)) {
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

fn fake_shapes() -> String {
    let clock = ManualClock::new(1_765_000_000_000);
    let config = EngineConfig {
        version: Version::Valkey9_1,
        enable_debug_command: DebugCommand::Yes,
        ..EngineConfig::default()
    };
    let mut engine = Engine::with_config(clock, config);
    let client: ClientId = engine.connect();
    for line in SETUP {
        engine.execute(client, &argv(line));
    }
    shapes(|args| {
        let line = format!("INFO {args}");
        match engine.execute(client, &argv(line.trim())) {
            Frame::Bulk(b) | Frame::Verbatim { text: b, .. } => {
                String::from_utf8_lossy(&b).into_owned()
            }
            other => format!("{other:?}"),
        }
    })
}

fn real_shapes(port: u16) -> String {
    let mut real = Real::connect(port);
    for line in SETUP {
        let words: Vec<&[u8]> = line.split_whitespace().map(str::as_bytes).collect();
        real.call(&words);
    }
    shapes(|args| {
        let mut words: Vec<&[u8]> = vec![b"INFO"];
        words.extend(args.split_whitespace().map(str::as_bytes));
        bulk_text(&real.call(&words))
    })
}

/// The first line where two shapes part, for a readable failure.
fn first_difference(want: &str, got: &str) -> String {
    let mut section = "";
    for (i, (w, g)) in want.lines().zip(got.lines()).enumerate() {
        if w.starts_with("==") || w.starts_with('#') {
            section = w;
        }
        if w != g {
            return format!("line {}: after {section:?}, want {w:?}, got {g:?}", i + 1);
        }
    }
    format!(
        "one is a prefix of the other ({} and {} lines)",
        want.lines().count(),
        got.lines().count()
    )
}

#[test]
fn info_names_every_section_and_field_of_valkey_9_1_in_its_order() {
    let fake = fake_shapes();
    if let Some(server) = OwnServer::from_env("VALKEY_SERVER") {
        let real = real_shapes(server.port);
        if std::env::var_os("VALKEY_INFO_RECORD").is_some() {
            print!("{real}");
        }
        assert!(
            real == RECORDED,
            "the recording drifted from the server: {}",
            first_difference(&real, RECORDED)
        );
        assert!(
            fake == real,
            "the fake's INFO parts from the server's: {}",
            first_difference(&real, &fake)
        );
    }
    assert!(
        fake == RECORDED,
        "the fake's INFO parts from the recording: {}",
        first_difference(RECORDED, &fake)
    );
}

#[test]
fn info_prints_valkey_s_version_fields_and_true_counters() {
    let clock = ManualClock::new(1_765_000_000_000);
    let config = EngineConfig {
        version: Version::Valkey9_1,
        ..EngineConfig::default()
    };
    let mut engine = Engine::with_config(clock, config);
    let client = engine.connect();
    let watcher = engine.connect();
    engine.execute(watcher, &argv("WATCH a b"));
    engine.execute(client, &argv("CLIENT PAUSE 5000 WRITE"));
    let (Frame::Bulk(text) | Frame::Verbatim { text, .. }) =
        engine.execute(client, &argv("INFO everything"))
    else {
        panic!("INFO answers a bulk string");
    };
    let text = String::from_utf8_lossy(&text);
    for line in [
        "redis_version:7.2.4",
        "server_name:valkey",
        "valkey_version:9.1.2",
        "valkey_release_stage:ga",
        "server_mode:standalone",
        "watching_clients:1",
        "total_watched_keys:2",
        "paused_reason:client_pause",
        "paused_actions:write",
        "paused_timeout_milliseconds:5000",
        "total_forks:0",
        "repl_backlog_size:10485760",
        "replicas_waiting_psync:0",
        "tls_server_cert_serial:none",
        "engines_count:1",
    ] {
        assert!(
            text.lines().any(|l| l.trim_end() == line),
            "no {line} in {text}"
        );
    }
}
