//! Blocked `XREAD` and `XREADGROUP` served by a second connection's `XADD`, on a redis-server of
//! the test's own and on the fake, in RESP2 and RESP3: the blocked client's reply, the writer's
//! replies and what the streams hold afterwards must be the same, timeouts and the errors of a
//! deleted key or group included (the harness is `support/blocked.rs`).

use crate::support;

use support::blocked::{self, Case};

/// What each case starts from.
const RESET: &str = "DEL xs xs2 xnothing";

const CASES: &[Case] = &[
    Case {
        setup: &["XADD xs 1-1 old 1"],
        blocking: "XREAD BLOCK 0 STREAMS xs $",
        writes: &["XADD xs 2-1 a 1"],
        after: &["XRANGE xs - +"],
    },
    Case {
        // The stream written to answers alone; COUNT bounds a transaction's entries.
        setup: &[],
        blocking: "XREAD COUNT 2 BLOCK 0 STREAMS xs xs2 $ 0",
        writes: &[
            "MULTI",
            "XADD xs2 1-1 a 1",
            "XADD xs2 1-2 b 2",
            "XADD xs2 1-3 c 3",
            "EXEC",
        ],
        after: &["XLEN xs2"],
    },
    Case {
        // A key of another type meanwhile leaves it blocked; an added and deleted entry answers
        // the stream with no entries.
        setup: &["XADD xs 5-0 a 1"],
        blocking: "XREAD BLOCK 0 STREAMS xs $",
        writes: &[
            "DEL xs",
            "SET xs text",
            "DEL xs",
            "MULTI",
            "XADD xs 6-0 b 2",
            "XDEL xs 6-0",
            "EXEC",
        ],
        after: &["XLEN xs"],
    },
    Case {
        setup: &[],
        blocking: "XREAD BLOCK 50 STREAMS xnothing $",
        writes: &[],
        after: &["EXISTS xnothing"],
    },
    Case {
        setup: &["XGROUP CREATE xs g $ MKSTREAM"],
        blocking: "XREADGROUP GROUP g alice BLOCK 0 STREAMS xs >",
        writes: &["XADD xs 1-1 a 1"],
        after: &["XPENDING xs g", "XINFO GROUPS xs"],
    },
    Case {
        setup: &["XGROUP CREATE xs g $ MKSTREAM"],
        blocking: "XREADGROUP GROUP g bob COUNT 1 NOACK BLOCK 0 STREAMS xs >",
        writes: &["MULTI", "XADD xs 1-1 a 1", "XADD xs 1-2 b 2", "EXEC"],
        after: &["XPENDING xs g", "XINFO GROUPS xs"],
    },
    Case {
        setup: &["XGROUP CREATE xs g $ MKSTREAM"],
        blocking: "XREADGROUP GROUP g alice BLOCK 0 STREAMS xs >",
        writes: &["DEL xs"],
        after: &["EXISTS xs"],
    },
    Case {
        setup: &["XGROUP CREATE xs g $ MKSTREAM"],
        blocking: "XREADGROUP GROUP g alice BLOCK 0 STREAMS xs >",
        writes: &["XGROUP DESTROY xs g"],
        after: &["XINFO GROUPS xs"],
    },
    Case {
        setup: &["XGROUP CREATE xs g $ MKSTREAM"],
        blocking: "XREADGROUP GROUP g alice BLOCK 60 STREAMS xs >",
        writes: &[],
        after: &["XINFO CONSUMERS xs g"],
    },
];
blocked::same_as_redis!(
    CASES,
    RESET,
    a_blocked_stream_read_is_served_by_another_connection_s_xadd_as_on_redis,
    a_blocked_stream_read_is_served_by_another_connection_s_xadd_as_on_redis_in_resp3
);
