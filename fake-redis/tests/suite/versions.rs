//! The release the fake imitates (`Version`): each knows its own server's commands and describes
//! them as that server does. The numbers asserted here were read off the real servers
//! (`COMMAND COUNT` of redis-server 7.0.15: 240, of 7.4.1: 250, of valkey-server 9.1.2: 257) and
//! off the fake, which counts the commands it implements that the release knows.

use crate::support::argv;
use fake_redis::{Engine, EngineConfig, Frame, ManualClock, Version};

fn engine(version: Version) -> Engine {
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

const COUNT_7_0: i64 = 235;
const COUNT_7_4: i64 = 235;
const COUNT_VALKEY: i64 = 235;

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
