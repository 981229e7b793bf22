//! Where Redis 7.4 answers otherwise than 7.0, in what Redis 7.4's own test suite leans on: what
//! a script may call (Redis 7.0 flags the blocking commands and `WAIT` `noscript`; Redis 7.4 and
//! Valkey let a script call them and each answers at once, `XREAD BLOCK` too), and the debugging
//! commands the suite calls. The replies were read off redis-server 7.0.15, 7.4.1 and
//! valkey-server 9.1.2; with `REDIS_7_4_SERVER`, `REDIS_7_0_SERVER` or `VALKEY_SERVER` naming a
//! binary, a test asks that server too.

use crate::versions::{Oracle, engine};
use bytes::Bytes;
use fake_redis::Version;

/// Runs each command (given word by word) on a fresh engine of `version`, and on the real server
/// `variable` names when it is set: every reply must be the recorded RESP2 bytes.
pub(crate) fn assert_calls(version: Version, variable: &str, cases: &[(&[&str], &str)]) {
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
const XREAD: &[&str] = &[
    "EVAL",
    "return redis.pcall('xread','BLOCK',0,'STREAMS','s','$')",
    "1",
    "s",
];
const XREADGROUP: &[&str] = &[
    "EVAL",
    "return redis.pcall('xreadgroup','group','g','c','BLOCK',0,'STREAMS','s','>')",
    "1",
    "s",
];

#[test]
fn blocking_commands_and_wait_answer_at_once_in_a_script_after_redis_7_0() {
    let cases: &[(&[&str], &str)] = &[
        (BLPOP, "$-1\r\n"),
        (WAIT, ":0\r\n"),
        (BLMOVE, "$1\r\na\r\n"),
        (BZPOPMIN, "$-1\r\n"),
        (XREAD, "$-1\r\n"),
        (
            XREADGROUP,
            "-NOGROUP No such key 's' or consumer group 'g' in XREADGROUP with GROUP option\r\n",
        ),
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

/// The fake's append-only file is its dataset as it stands, rewritten at once: `DEBUG LOADAOF`
/// after `BGREWRITEAOF` loads it back, as Redis 7.4.1 does once its rewrite has ended (which a
/// live server needs time for, so the replies are the recorded ones).
#[test]
fn debug_loadaof_loads_the_rewritten_file_back() {
    let mut e = fake_redis::Engine::with_config(
        fake_redis::ManualClock::new(1_000_000),
        fake_redis::EngineConfig {
            version: Version::V7_4,
            enable_debug_command: fake_redis::DebugCommand::Yes,
            ..fake_redis::EngineConfig::default()
        },
    );
    let c = e.connect();
    let mut call = |cmd: &str| {
        let argv: Vec<Bytes> = cmd.split(' ').map(|w| Bytes::from(w.to_owned())).collect();
        let mut got = bytes::BytesMut::new();
        fake_redis::resp::encode(&e.execute(c, &argv), 2, &mut got);
        String::from_utf8_lossy(&got).into_owned()
    };
    for (cmd, want) in [
        ("SET k v", "+OK\r\n"),
        ("RPUSH l a b", ":2\r\n"),
        (
            "BGREWRITEAOF",
            "+Background append only file rewriting started\r\n",
        ),
        ("DEBUG LOADAOF", "+OK\r\n"),
        ("GET k", "$1\r\nv\r\n"),
        ("LRANGE l 0 -1", "*2\r\n$1\r\na\r\n$1\r\nb\r\n"),
    ] {
        assert_eq!(call(cmd), want, "{cmd}");
    }
}

const OS_NAMES: &[&str] = &[
    "EVAL",
    "local t={} for k in pairs(os) do t[#t+1]=k end return t",
    "0",
];
const OS_CLOCK: &[&str] = &[
    "EVAL",
    "local s=os.clock() while os.clock()-s < 0.01 do end return 1",
    "0",
];

const OS_WRITE: &[&str] = &["EVAL", "os.clock = nil", "0"];

/// Redis 7.4 and Valkey give scripts `os.clock` (and nothing else of `os`); it moves on while
/// a script runs, so a loop that waits for it ends. Redis 7.0 has no `os`.
#[test]
fn os_clock_is_there_after_redis_7_0() {
    let cases: &[(&[&str], &str)] = &[(OS_NAMES, "*1\r\n$5\r\nclock\r\n"), (OS_CLOCK, ":1\r\n")];
    assert_calls(Version::V7_4, "REDIS_7_4_SERVER", cases);
    assert_calls(Version::Valkey9_1, "VALKEY_SERVER", cases);
    // Read-only, as every library table is.
    assert_calls(
        Version::V7_4,
        "REDIS_7_4_SERVER",
        &[(
            OS_WRITE,
            "-ERR user_script:1: Attempt to modify a readonly table script: \
             cc08838557e822563d955497345b1210a6d6af0f, on @user_script:1.\r\n",
        )],
    );
    assert_calls(
        Version::Valkey9_1,
        "VALKEY_SERVER",
        &[(
            OS_WRITE,
            "-ERR user_script:1: Attempt to modify a readonly table script: on @user_script:1.\r\n",
        )],
    );
    assert_calls(
        Version::V7_0,
        "REDIS_7_0_SERVER",
        &[(
            OS_NAMES,
            "-ERR user_script:1: Script attempted to access nonexistent global variable 'os' \
             script: b5a073762da1c234cb23bf291fddc29782345659, on @user_script:1.\r\n",
        )],
    );
}

/// From Redis 7.2 on, a blocking timeout whose deadline falls past the 64-bit range is an error
/// (7.0 converts it to a negative number, or waits forever), and `LPOS` refuses the one rank
/// without a positive counterpart.
#[test]
fn out_of_range_timeouts_and_ranks_are_errors_after_redis_7_0() {
    let out_of_range = "-ERR timeout is out of range\r\n";
    let negative = "-ERR timeout is negative\r\n";
    let rank = "-ERR value is out of range, value must between -9223372036854775807 and \
                9223372036854775807\r\n";
    let later: &[(&[&str], &str)] = &[
        (&["BLPOP", "l", "0x7FFFFFFFFFFFFF"], out_of_range),
        (&["BLPOP", "l", "1e30"], out_of_range),
        (&["BLPOP", "l", "inf"], out_of_range),
        (&["BLPOP", "l", "-inf"], negative),
        (&["BLPOP", "l", "-1"], negative),
        (&["BLPOP", "l", "9223372036854775.807"], out_of_range),
        (
            &["XREAD", "BLOCK", "9223372036854775807", "STREAMS", "s", "$"],
            out_of_range,
        ),
        (&["RPUSH", "mylist", "a", "b", "c"], ":3\r\n"),
        (
            &["LPOS", "mylist", "c", "RANK", "-9223372036854775808"],
            rank,
        ),
        (
            &["LPOS", "mylist", "c", "RANK", "-9223372036854775807"],
            "$-1\r\n",
        ),
        (&["LPOS", "mylist", "c", "RANK", "-1"], ":2\r\n"),
    ];
    assert_calls(Version::V7_4, "REDIS_7_4_SERVER", later);
    assert_calls(Version::Valkey9_1, "VALKEY_SERVER", later);
    assert_calls(
        Version::V7_0,
        "REDIS_7_0_SERVER",
        &[
            (&["BLPOP", "l", "0x7FFFFFFFFFFFFF"], negative),
            (&["BLPOP", "l", "inf"], negative),
            (&["RPUSH", "mylist", "a", "b", "c"], ":3\r\n"),
            (
                &["LPOS", "mylist", "c", "RANK", "-9223372036854775808"],
                ":2\r\n",
            ),
        ],
    );
}

/// `HSCAN`'s `NOVALUES` (Redis 7.4 and Valkey): the fields alone, after the other options or
/// before them; `SSCAN`, `ZSCAN` and `SCAN` refuse it by name. Redis 7.0 knows no such option.
#[test]
fn hscan_novalues_after_redis_7_0() {
    let setup: &[(&[&str], &str)] = &[
        (&["HSET", "h", "a", "1", "b", "2"], ":2\r\n"),
        (&["SADD", "s", "m"], ":1\r\n"),
        (&["ZADD", "z", "1", "m"], ":1\r\n"),
    ];
    let mut cases = setup.to_vec();
    cases.extend_from_slice(&[
        (
            &["HSCAN", "h", "0", "NOVALUES"][..],
            "*2\r\n$1\r\n0\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n",
        ),
        (
            &["HSCAN", "h", "0", "novalues", "COUNT", "5", "MATCH", "b"],
            "*2\r\n$1\r\n0\r\n*1\r\n$1\r\nb\r\n",
        ),
        (
            &["HSCAN", "missing", "0", "NOVALUES"],
            "*2\r\n$1\r\n0\r\n*0\r\n",
        ),
        (
            &["SSCAN", "s", "0", "NOVALUES"],
            "-ERR NOVALUES option can only be used in HSCAN\r\n",
        ),
        (
            &["ZSCAN", "z", "0", "NOVALUES"],
            "-ERR NOVALUES option can only be used in HSCAN\r\n",
        ),
        (
            &["SCAN", "0", "NOVALUES"],
            "-ERR NOVALUES option can only be used in HSCAN\r\n",
        ),
    ]);
    assert_calls(Version::V7_4, "REDIS_7_4_SERVER", &cases);
    assert_calls(Version::Valkey9_1, "VALKEY_SERVER", &cases);
    let mut cases = setup.to_vec();
    cases.extend_from_slice(&[
        (
            &["HSCAN", "h", "0", "NOVALUES"][..],
            "-ERR syntax error\r\n",
        ),
        (&["SCAN", "0", "NOVALUES"], "-ERR syntax error\r\n"),
    ]);
    assert_calls(Version::V7_0, "REDIS_7_0_SERVER", &cases);
}
