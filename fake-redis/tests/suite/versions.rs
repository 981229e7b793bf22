//! The release the fake imitates (`Version`): each knows its own server's commands and describes
//! them as that server does. The numbers asserted here were read off the real servers
//! (`COMMAND COUNT` of redis-server 7.0.15: 240, of 7.4.1: 250, of valkey-server 9.1.2: 257); the
//! fake counts the commands it implements that the release knows, which is every one of them.

use crate::support::argv;
use fake_redis::{Engine, EngineConfig, Frame, ManualClock, Version};

pub(crate) fn engine(version: Version) -> Engine {
    Engine::with_config(
        ManualClock::new(1_000_000),
        EngineConfig {
            version,
            ..EngineConfig::default()
        },
    )
}

fn run(e: &mut Engine, cmd: &str) -> Frame {
    let c = e.connect();
    e.execute(c, &argv(cmd))
}

/// `EVAL body 0`.
fn eval(e: &mut Engine, body: &str) -> Frame {
    let c = e.connect();
    e.execute(c, &["EVAL", body, "0"].map(|a| a.to_owned().into()))
}

/// `COMMAND INFO name`'s arity, as the version's server describes it.
fn arity(e: &mut Engine, name: &str) -> Option<i64> {
    match run(e, &format!("COMMAND INFO {name}")) {
        Frame::Array(entries) => match entries.first() {
            Some(Frame::Array(fields)) => match fields.get(1) {
                Some(Frame::Integer(n)) => Some(*n),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    }
}

#[test]
fn the_engine_says_which_release_it_imitates() {
    assert_eq!(EngineConfig::default().version, Version::V7_0);
    for v in Version::ALL {
        assert_eq!(engine(v).version(), v);
        assert_eq!(v.name().parse::<Version>(), Ok(v));
    }
    assert_eq!(
        Version::ALL.map(Version::name),
        ["redis-7.0", "redis-7.4", "valkey-9.1"]
    );
}

const COUNT_7_0: i64 = 240;
// 7.4 and Valkey: with the nine commands of hash-field expiration (`HEXPIRE` … `HPERSIST`).
const COUNT_7_4: i64 = 250;
const COUNT_VALKEY: i64 = 257;

#[test]
fn command_count_counts_what_the_fake_implements_of_each_release() {
    let counts = Version::ALL.map(|v| run(&mut engine(v), "COMMAND COUNT"));
    assert_eq!(
        counts,
        [COUNT_7_0, COUNT_7_4, COUNT_VALKEY].map(Frame::Integer)
    );
}

#[test]
fn command_info_describes_a_command_as_the_release_does() {
    // ZRANK took WITHSCORE in Redis 7.2: arity 3 on 7.0, at least 3 on 7.4 and Valkey.
    let arities = Version::ALL.map(|v| arity(&mut engine(v), "zrank"));
    assert_eq!(arities, [Some(3), Some(-3), Some(-3)]);
    // COMMAND GETKEYS takes a command without arguments since Redis 7.2.
    let arities = Version::ALL.map(|v| arity(&mut engine(v), "command|getkeys"));
    assert_eq!(arities, [Some(-4), Some(-3), Some(-3)]);
}

#[test]
fn command_docs_and_list_answer_per_release() {
    for v in Version::ALL {
        let mut e = engine(v);
        let Frame::Array(names) = run(&mut e, "COMMAND LIST") else {
            panic!("COMMAND LIST is an array");
        };
        assert!(names.contains(&Frame::Bulk("get".into())), "{v}");
        let Frame::Map(docs) = run(&mut e, "COMMAND DOCS get") else {
            panic!("COMMAND DOCS is a map");
        };
        assert_eq!(docs.len(), 1, "{v}");
    }
}

fn text(frame: &Frame) -> String {
    match frame {
        Frame::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
        Frame::Simple(s) => s.to_string(),
        Frame::Verbatim { text, .. } => String::from_utf8_lossy(text).into_owned(),
        Frame::Error(e) => e.to_string(),
        other => format!("{other:?}"),
    }
}

/// The `field:value` lines of `INFO server` that name the release, in order.
fn version_lines(e: &mut Engine) -> Vec<String> {
    text(&run(e, "INFO server"))
        .lines()
        .filter(|l| {
            [
                "redis_version",
                "server_name",
                "valkey_",
                "redis_mode",
                "server_mode",
            ]
            .iter()
            .any(|p| l.starts_with(p))
        })
        .map(str::to_owned)
        .collect()
}

#[test]
fn info_names_the_release_as_its_server_does() {
    // As redis-server 7.0.15, 7.4.1 and valkey-server 9.1.2 answer `INFO server`.
    assert_eq!(
        version_lines(&mut engine(Version::V7_0)),
        ["redis_version:7.0.15", "redis_mode:standalone"]
    );
    assert_eq!(
        version_lines(&mut engine(Version::V7_4)),
        ["redis_version:7.4.1", "redis_mode:standalone"]
    );
    assert_eq!(
        version_lines(&mut engine(Version::Valkey9_1)),
        [
            "redis_version:7.2.4",
            "server_name:valkey",
            "valkey_version:9.1.2",
            "valkey_release_stage:ga",
            "server_mode:standalone"
        ]
    );
}

/// `HELLO 3`'s `server`, `version` and `modules`.
fn hello(e: &mut Engine) -> (String, String, Frame) {
    let Frame::Map(fields) = run(e, "HELLO 3") else {
        panic!("HELLO 3 answers a map");
    };
    let get = |k: &str| {
        fields
            .iter()
            .find(|(f, _)| text(f) == k)
            .map(|(_, v)| v.clone())
            .unwrap_or(Frame::Null)
    };
    (text(&get("server")), text(&get("version")), get("modules"))
}

#[test]
fn hello_names_the_server_and_its_release() {
    let none = Frame::Array(Vec::new());
    assert_eq!(
        hello(&mut engine(Version::V7_0)),
        ("redis".into(), "7.0.15".into(), none.clone())
    );
    assert_eq!(
        hello(&mut engine(Version::V7_4)),
        ("redis".into(), "7.4.1".into(), none)
    );
    // Valkey lists its Lua engine as a module.
    let lua = Frame::Array(vec![Frame::Map(vec![
        (Frame::Bulk("name".into()), Frame::Bulk("lua".into())),
        (Frame::Bulk("ver".into()), Frame::Integer(1)),
        (Frame::Bulk("path".into()), Frame::Bulk("lua".into())),
        (Frame::Bulk("args".into()), Frame::Array(Vec::new())),
    ])]);
    assert_eq!(
        hello(&mut engine(Version::Valkey9_1)),
        ("valkey".into(), "9.1.2".into(), lua)
    );
}

#[test]
fn scripts_see_the_release_and_valkey_s_names() {
    let script = "return {redis.REDIS_VERSION, redis.REDIS_VERSION_NUM}";
    let seen = Version::ALL.map(|v| eval(&mut engine(v), script));
    let pair =
        |s: &str, n: i64| Frame::Array(vec![Frame::Bulk(s.to_owned().into()), Frame::Integer(n)]);
    assert_eq!(
        seen,
        [
            pair("7.0.15", 0x07000f),
            pair("7.4.1", 0x070401),
            pair("7.2.4", 459_268)
        ]
    );
    let valkey = "return {server.SERVER_NAME, server.VALKEY_VERSION, \
                  server.VALKEY_VERSION_NUM, tostring(rawequal(server, redis))}";
    assert_eq!(
        eval(&mut engine(Version::Valkey9_1), valkey),
        Frame::Array(vec![
            Frame::Bulk("valkey".into()),
            Frame::Bulk("9.1.2".into()),
            Frame::Integer(590_082),
            Frame::Bulk("true".into()),
        ])
    );
}

#[test]
fn a_script_s_refused_call_reads_as_its_server_words_it() {
    let script = "return redis.call('nope')";
    let errors = Version::ALL.map(|v| text(&eval(&mut engine(v), script)));
    let sha = "f01f0776df71cc5b400c2268135aa7f30dce2e53";
    assert_eq!(
        errors,
        [
            format!(
                "ERR Unknown Redis command called from script script: {sha}, on @user_script:1."
            ),
            format!(
                "ERR Unknown Redis command called from script script: {sha}, on @user_script:1."
            ),
            "ERR Unknown command called from script script: on @user_script:1.".to_owned(),
        ]
    );
}

/// A real server of another release, started when its variable names its binary, and a
/// connection to it.
pub(crate) struct Oracle {
    _server: crate::support::OwnServer,
    pub(crate) conn: crate::support::raw::Real,
}

impl Oracle {
    pub(crate) fn start(variable: &str) -> Option<Oracle> {
        crate::support::OwnServer::from_env(variable).map(Oracle::of)
    }

    /// The oracle `server` is, through a connection of its own.
    pub(crate) fn of(server: crate::support::OwnServer) -> Oracle {
        let conn = crate::support::raw::Real::connect(server.port);
        Oracle {
            _server: server,
            conn,
        }
    }

    /// Waits (up to 30 s) for the rewrite that `CONFIG SET appendonly yes` starts in the
    /// background on a real server: until it ends there is no file for `DEBUG LOADAOF` to load.
    /// The fake's file is there at once.
    pub(crate) fn await_aof_rewrite(&mut self) {
        for _ in 0..300 {
            let info =
                String::from_utf8_lossy(&self.conn.call(&[b"INFO", b"persistence"])).into_owned();
            if info.contains("aof_rewrite_in_progress:0")
                && info.contains("aof_rewrite_scheduled:0")
                && info.contains("aof_enabled:1")
            {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        panic!("the real server's append-only rewrite did not end within 30 s");
    }
}

/// Runs `cases` (a command, and the RESP2 bytes its release's server answered when it was
/// recorded) on a fresh engine of `version`, and, when `variable` names that server's binary, on
/// a fresh real server too: every reply must be the recorded one.
pub(super) fn assert_cases(version: Version, variable: &str, cases: &[(&str, &str)]) {
    assert_cases_on(engine(version), variable, cases);
}

/// [`assert_cases`] on the engine `e` (one configured otherwise than [`engine`]'s).
pub(super) fn assert_cases_on(e: Engine, variable: &str, cases: &[(&str, &str)]) {
    assert_cases_against(e, Oracle::start(variable), cases);
}

/// [`assert_cases_on`] with the real server given (none: the recorded bytes alone).
pub(super) fn assert_cases_against(mut e: Engine, oracle: Option<Oracle>, cases: &[(&str, &str)]) {
    let version = e.version();
    let c = e.connect();
    let mut oracle = oracle;
    for (command, want) in cases {
        let reply = e.execute(c, &argv(command));
        let mut got = bytes::BytesMut::new();
        fake_redis::resp::encode(&reply, 2, &mut got);
        assert_eq!(
            String::from_utf8_lossy(&got),
            *want,
            "{version}: the fake's reply to {command}"
        );
        if let Some(oracle) = &mut oracle {
            let words: Vec<&[u8]> = command.split(' ').map(str::as_bytes).collect();
            let real = oracle.conn.call(&words);
            if command.eq_ignore_ascii_case("CONFIG SET appendonly yes") {
                oracle.await_aof_rewrite();
            }
            assert_eq!(
                String::from_utf8_lossy(&real),
                *want,
                "{version}: the real server's reply to {command}"
            );
        }
    }
}

/// `WAITAOF`'s answers without replicas, with `appendonly` off and on, as 7.4.1 and Valkey
/// 9.1.2 give them (a wait for a replica that never comes is the blocking tests' subject).
const WAITAOF: &[(&str, &str)] = &[
    ("WAITAOF 0 0 0", "*2\r\n:0\r\n:0\r\n"),
    (
        "WAITAOF 1 0 0",
        "-ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.\r\n",
    ),
    (
        "WAITAOF 2 0 0",
        "-ERR value is out of range, value must between 0 and 1\r\n",
    ),
    (
        "WAITAOF x 0 0",
        "-ERR value is not an integer or out of range\r\n",
    ),
    (
        "WAITAOF 0 -1 0",
        "-ERR value is out of range, must be positive\r\n",
    ),
    (
        "WAITAOF 0 x 0",
        "-ERR value is out of range, must be positive\r\n",
    ),
    (
        "WAITAOF 0 0 x",
        "-ERR timeout is not an integer or out of range\r\n",
    ),
    ("WAITAOF 0 0 -1", "-ERR timeout is negative\r\n"),
    (
        "WAITAOF 0 0",
        "-ERR wrong number of arguments for 'waitaof' command\r\n",
    ),
    ("CONFIG SET appendonly yes", "+OK\r\n"),
    ("WAITAOF 0 0 0", "*2\r\n:1\r\n:0\r\n"),
    ("SET k v", "+OK\r\n"),
    ("WAITAOF 1 0 0", "*2\r\n:1\r\n:0\r\n"),
    ("MULTI", "+OK\r\n"),
    ("WAITAOF 1 0 0", "+QUEUED\r\n"),
    ("EXEC", "*1\r\n*2\r\n:1\r\n:0\r\n"),
    ("CONFIG SET appendonly no", "+OK\r\n"),
];

#[test]
fn waitaof_answers_as_redis_7_4_and_valkey_do() {
    assert_cases(Version::V7_4, "REDIS_7_4_SERVER", WAITAOF);
    assert_cases(Version::Valkey9_1, "VALKEY_SERVER", WAITAOF);
}

#[test]
fn set_ifeq_and_delifeq_answer_as_valkey_does() {
    let wrongtype = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
    let syntax = "-ERR syntax error\r\n";
    assert_cases(
        Version::Valkey9_1,
        "VALKEY_SERVER",
        &[
            ("SET k v IFEQ x", "$-1\r\n"),
            ("GET k", "$-1\r\n"),
            ("SET k a", "+OK\r\n"),
            ("SET k b IFEQ x", "$-1\r\n"),
            ("SET k b IFEQ a", "+OK\r\n"),
            ("SET k c IFEQ b GET", "$1\r\nb\r\n"),
            ("SET k d IFEQ zz GET", "$1\r\nc\r\n"),
            ("SET k e IFEQ c NX", syntax),
            ("SET k e XX IFEQ c", syntax),
            ("SET k e IFEQ", syntax),
            ("SET k e IFEQ c IFEQ c", syntax),
            ("HSET h f v", ":1\r\n"),
            ("SET h e IFEQ c", wrongtype),
            ("SET h e IFEQ c GET", wrongtype),
            ("DELIFEQ k zz", ":0\r\n"),
            ("DELIFEQ k c", ":1\r\n"),
            ("EXISTS k", ":0\r\n"),
            ("DELIFEQ nokey x", ":0\r\n"),
            ("DELIFEQ h x", wrongtype),
            (
                "DELIFEQ k",
                "-ERR wrong number of arguments for 'delifeq' command\r\n",
            ),
            ("SET n 5", "+OK\r\n"),
            ("SET n 6 IFEQ 5", "+OK\r\n"),
            ("GET n", "$1\r\n6\r\n"),
        ],
    );
}

#[test]
fn a_newer_command_is_unknown_to_an_older_release() {
    let unknown = |name: &str, args: &str| {
        format!("-ERR unknown command '{name}', with args beginning with: {args}\r\n")
    };
    let waitaof = unknown("WAITAOF", "'0' '0' '0' ");
    let delifeq = unknown("DELIFEQ", "'k' 'v' ");
    let syntax = "-ERR syntax error\r\n";
    assert_cases(
        Version::V7_0,
        "REDIS_7_0_SERVER",
        &[
            ("WAITAOF 0 0 0", &waitaof),
            ("DELIFEQ k v", &delifeq),
            ("SET k v IFEQ v", syntax),
            ("COMMAND INFO waitaof delifeq", "*2\r\n$-1\r\n$-1\r\n"),
        ],
    );
    assert_cases(
        Version::V7_4,
        "REDIS_7_4_SERVER",
        &[("DELIFEQ k v", &delifeq), ("SET k v IFEQ v", syntax)],
    );
}

/// `CLIENT SETINFO` and `CLIENT NO-TOUCH`, as 7.4.1 and valkey-server 9.1.2 answer them.
const CLIENT_7_2: &[(&str, &str)] = &[
    (
        "CLIENT NO-TOUCH",
        "-ERR wrong number of arguments for 'client|no-touch' command\r\n",
    ),
    ("CLIENT NO-TOUCH x", "-ERR syntax error\r\n"),
    ("CLIENT NO-TOUCH ON", "+OK\r\n"),
    ("CLIENT NO-TOUCH off", "+OK\r\n"),
    ("CLIENT SETINFO lib-name foo", "+OK\r\n"),
    ("CLIENT SETINFO lib-ver 1.0", "+OK\r\n"),
    ("CLIENT SETINFO x y", "-ERR Unrecognized option 'x'\r\n"),
    (
        "CLIENT SETINFO lib-name",
        "-ERR wrong number of arguments for 'client|setinfo' command\r\n",
    ),
    (
        "CLIENT SETINFO LIB-NAME é",
        "-ERR LIB-NAME cannot contain spaces, newlines or special characters.\r\n",
    ),
];

#[test]
fn client_setinfo_and_no_touch_answer_where_their_server_has_them() {
    assert_cases(Version::V7_4, "REDIS_7_4_SERVER", CLIENT_7_2);
    assert_cases(Version::Valkey9_1, "VALKEY_SERVER", CLIENT_7_2);
    assert_cases(
        Version::V7_0,
        "REDIS_7_0_SERVER",
        &[
            (
                "CLIENT SETINFO lib-name foo",
                "-ERR unknown subcommand 'SETINFO'. Try CLIENT HELP.\r\n",
            ),
            (
                "CLIENT NO-TOUCH on",
                "-ERR unknown subcommand 'NO-TOUCH'. Try CLIENT HELP.\r\n",
            ),
        ],
    );
}

#[test]
fn client_info_has_the_fields_of_the_release() {
    let line = |v: Version| {
        let mut e = engine(v);
        let c = e.connect();
        for cmd in [
            "CLIENT SETINFO lib-name foo",
            "CLIENT SETINFO lib-ver 1.0",
            "WATCH a b",
        ] {
            e.execute(c, &argv(cmd));
        }
        text(&e.execute(c, &argv("CLIENT INFO")))
    };
    let old = line(Version::V7_0);
    assert!(
        !old.contains(" watch=") && !old.contains("lib-name"),
        "{old}"
    );
    let new = line(Version::V7_4);
    assert!(new.contains(" multi=-1 watch=2 qbuf="), "{new}");
    assert!(new.ends_with(" resp=2 lib-name=foo lib-ver=1.0\n"), "{new}");
    let valkey = line(Version::Valkey9_1);
    assert!(valkey.contains(" flags=N capa= db=0 "), "{valkey}");
    assert!(
        valkey.ends_with(" lib-name=foo lib-ver=1.0 tot-net-in=0 tot-net-out=0 tot-cmds=0\n"),
        "{valkey}"
    );
}
