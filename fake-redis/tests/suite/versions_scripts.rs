//! What a script may call, per release: Redis 7.0 flags the blocking commands and `WAIT`
//! `noscript`, Redis 7.4 and Valkey let a script call them and each answers at once. The replies
//! were read off redis-server 7.0.15, 7.4.1 and valkey-server 9.1.2; with `REDIS_7_4_SERVER`,
//! `REDIS_7_0_SERVER` or `VALKEY_SERVER` naming a binary, the test asks that server too.

use crate::versions::{Oracle, engine};
use bytes::Bytes;
use fake_redis::Version;

/// Runs each command (given word by word) on a fresh engine of `version`, and on the real server
/// `variable` names when it is set: every reply must be the recorded RESP2 bytes.
fn assert_calls(version: Version, variable: &str, cases: &[(&[&str], &str)]) {
    let mut e = engine(version);
    let c = e.connect();
    let mut oracle = Oracle::start(variable);
    for (words, want) in cases {
        let argv: Vec<Bytes> = words.iter().map(|w| Bytes::from(w.to_string())).collect();
        let mut got = bytes::BytesMut::new();
        fake_redis::resp::encode(&e.execute(c, &argv), 2, &mut got);
        assert_eq!(String::from_utf8_lossy(&got), *want, "{version}: {words:?}");
        if let Some(oracle) = &mut oracle {
            let argv: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
            let real = oracle.conn.call(&argv);
            assert_eq!(
                String::from_utf8_lossy(&real),
                *want,
                "{variable}: {words:?}"
            );
        }
    }
}

const BLPOP: &[&str] = &["EVAL", "return redis.pcall('blpop','l',0)", "1", "l"];
const WAIT: &[&str] = &["EVAL", "return redis.call('wait',0,0)", "0"];
const BLMOVE: &[&str] = &[
    "EVAL",
    "redis.call('rpush','l','a'); return redis.call('blmove','l','m','left','right',0)",
    "2",
    "l",
    "m",
];
const BZPOPMIN: &[&str] = &["EVAL", "return redis.call('bzpopmin','z',0)", "1", "z"];

#[test]
fn blocking_commands_and_wait_answer_at_once_in_a_script_after_redis_7_0() {
    let cases: &[(&[&str], &str)] = &[
        (BLPOP, "$-1\r\n"),
        (WAIT, ":0\r\n"),
        (BLMOVE, "$1\r\na\r\n"),
        (BZPOPMIN, "$-1\r\n"),
    ];
    assert_calls(Version::V7_4, "REDIS_7_4_SERVER", cases);
    assert_calls(Version::Valkey9_1, "VALKEY_SERVER", cases);
}

#[test]
fn redis_7_0_refuses_blocking_commands_and_wait_in_a_script() {
    assert_calls(
        Version::V7_0,
        "REDIS_7_0_SERVER",
        &[
            (
                BLPOP,
                "-ERR This Redis command is not allowed from script\r\n",
            ),
            (
                WAIT,
                "-ERR This Redis command is not allowed from script script: \
                 bf73943552e0faee9594d9a1c5ba3d14c7dccd99, on @user_script:1.\r\n",
            ),
        ],
    );
}
