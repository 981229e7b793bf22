//! Blocked pops served by a second connection's push, on a redis-server of the test's own and on
//! the fake, in RESP2 and RESP3: the blocked client's reply, the pusher's replies and the keys
//! left must be the same (the harness is `support/blocked.rs`).

use crate::support;

use support::blocked::{self, Case};

/// What each case starts from.
const RESET: &str = "DEL bq bq1 bq2 bd bz bnothing";

const CASES: &[Case] = &[
    Case {
        setup: &[],
        blocking: "BLPOP bq 0",
        writes: &["RPUSH bq a b"],
        after: &["LRANGE bq 0 -1"],
    },
    Case {
        setup: &[],
        blocking: "BRPOP bq1 bq2 0",
        writes: &["RPUSH bq2 x y"],
        after: &["LRANGE bq2 0 -1"],
    },
    Case {
        setup: &[],
        blocking: "BLMOVE bq bd RIGHT LEFT 0",
        writes: &["RPUSH bq x y"],
        after: &["LRANGE bq 0 -1", "LRANGE bd 0 -1"],
    },
    Case {
        setup: &["SET bd s"],
        blocking: "BRPOPLPUSH bq bd 0",
        writes: &["RPUSH bq x"],
        after: &["LRANGE bq 0 -1", "GET bd"],
    },
    Case {
        setup: &[],
        blocking: "BLMPOP 0 2 bq bq2 RIGHT COUNT 5",
        writes: &["RPUSH bq2 a b c"],
        after: &["EXISTS bq2"],
    },
    Case {
        setup: &[],
        blocking: "BZPOPMAX bz 0",
        writes: &["ZADD bz 1 a 2.5 b"],
        after: &["ZRANGE bz 0 -1 WITHSCORES"],
    },
    Case {
        setup: &[],
        blocking: "BZMPOP 0 1 bz MIN COUNT 2",
        writes: &["ZADD bz 1.5 a 2 b 3 c"],
        after: &["ZRANGE bz 0 -1 WITHSCORES"],
    },
    Case {
        // A key of another type leaves the client blocked; the list that follows serves it.
        setup: &[],
        blocking: "BLPOP bq 0",
        writes: &[
            "SET bq s",
            "DEL bq",
            "MULTI",
            "RPUSH bq x",
            "LPOP bq",
            "EXEC",
            "RPUSH bq y",
        ],
        after: &["EXISTS bq"],
    },
    Case {
        // A rename onto the awaited key serves the client even when the key existed (a stream
        // that came while it waited): Redis deletes the destination and adds it anew.
        setup: &["RPUSH bq2 a"],
        blocking: "BLPOP bq 0",
        writes: &["XADD bq 1-1 f v", "RENAME bq2 bq"],
        after: &["EXISTS bq"],
    },
    Case {
        setup: &[],
        blocking: "BLPOP bnothing 0.05",
        writes: &[],
        after: &[],
    },
];

blocked::same_as_redis!(
    CASES,
    RESET,
    a_blocked_pop_is_served_by_another_connection_s_push_as_on_redis,
    a_blocked_pop_is_served_by_another_connection_s_push_as_on_redis_in_resp3
);
