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
