//! The commands a standalone Redis 7.0 refuses or answers trivially (`CLUSTER`, `READONLY`,
//! `READWRITE`, `ASKING`, `MODULE`, `PFDEBUG`, `PFSELFTEST`, `LOLWUT`) against a redis-server of
//! the test's own, byte for byte, in RESP2 and RESP3.

use crate::support;

use bytes::Bytes;
use fake_redis::resp::Frame;
use fake_redis::{Engine, ManualClock};
use support::raw;

const CASES: &[raw::Case] = &[
    // Every CLUSTER subcommand with its arity, then the refusals that come before the command.
    &[
        &["CLUSTER HELP"],
        &["CLUSTER INFO"],
        &["CLUSTER NODES"],
        &["CLUSTER SLOTS"],
        &["CLUSTER SHARDS"],
        &["CLUSTER MYID"],
        &["CLUSTER LINKS"],
        &["CLUSTER KEYSLOT foo"],
        &["CLUSTER COUNTKEYSINSLOT 1"],
        &["CLUSTER GETKEYSINSLOT 1 10"],
        &["CLUSTER ADDSLOTS 1 2"],
        &["CLUSTER ADDSLOTSRANGE 1 2"],
        &["CLUSTER DELSLOTS 1"],
        &["CLUSTER DELSLOTSRANGE 1 2"],
        &["CLUSTER FLUSHSLOTS"],
        &["CLUSTER BUMPEPOCH"],
        &["CLUSTER COUNT-FAILURE-REPORTS abc"],
        &["CLUSTER FAILOVER"],
        &["CLUSTER FAILOVER FORCE"],
        &["CLUSTER FORGET abc"],
        &["CLUSTER MEET 127.0.0.1 7000"],
        &["CLUSTER REPLICAS abc"],
        &["CLUSTER SLAVES abc"],
        &["CLUSTER REPLICATE abc"],
        &["CLUSTER RESET HARD"],
        &["CLUSTER SAVECONFIG"],
        &["CLUSTER SET-CONFIG-EPOCH 1"],
        &["CLUSTER SETSLOT 1 STABLE"],
        &["cluster info"],
        &["CLUSTER INFO extra"],
        &["CLUSTER HELP extra"],
        &["CLUSTER KEYSLOT"],
        &["CLUSTER bogus"],
        &["CLUSTER"],
    ],
    &[
        &["READONLY"],
        &["READWRITE"],
        &["ASKING"],
        &["READONLY x"],
        &["ASKING x"],
    ],
    &[
        &["MODULE LIST"],
        &["MODULE HELP"],
        &["MODULE LOAD /no/such/module.so"],
        &[
            "MODULE",
            "LOADEX",
            "/no/such/module.so",
            "CONFIG",
            "a",
            "b",
            "ARGS",
            "c",
        ],
        &["MODULE UNLOAD nosuchmodule"],
        &["MODULE LIST extra"],
        &["MODULE LOAD"],
        &["MODULE bogus"],
        &["MODULE"],
    ],
    // PFDEBUG on a sparse value, then on the dense value GETREG leaves.
    &[
        &["PFDEBUG GETREG missing"],
        &["PFADD h a b c d e"],
        &["PFDEBUG ENCODING h"],
        &["PFDEBUG DECODE h"],
        &["PFDEBUG bogus h"],
        &["PFDEBUG TODENSE h"],
        &["PFDEBUG TODENSE h"],
        &["PFDEBUG ENCODING h"],
        &["PFDEBUG DECODE h"],
        &["PFCOUNT h"],
        &["GET h"],
        &["PFADD g x"],
        &["PFDEBUG GETREG g"],
        &["PFDEBUG ENCODING g"],
        &["SET", "s", "not an hll"],
        &["PFDEBUG ENCODING s"],
        &["LPUSH l x"],
        &["PFDEBUG ENCODING l"],
        &["PFDEBUG ENCODING"],
        &["PFSELFTEST"],
        &["PFSELFTEST x"],
    ],
    // The version line; the drawings of versions 5 and 6 are random, only their errors here.
    &[
        &["LOLWUT"],
        &["LOLWUT extra args"],
        &["LOLWUT VERSION 7"],
        &["LOLWUT VERSION 4"],
        &["LOLWUT VERSION 55"],
        &["LOLWUT VERSION -1"],
        &["LOLWUT VERSION x"],
        &["LOLWUT VERSION"],
        &["LOLWUT VERSION 5 x"],
        &["LOLWUT VERSION 5 1 1 x"],
        &["LOLWUT VERSION 6 1 x"],
    ],
    // Redis lists subcommands in its hash table's order, so only commands without them here.
    &[&[
        "COMMAND",
        "INFO",
        "readonly",
        "readwrite",
        "asking",
        "pfdebug",
        "pfselftest",
        "lolwut",
    ]],
];

raw::same_as_redis!(
    CASES,
    raw::FLUSHALL,
    every_case_replies_as_redis_does_in_resp2,
    every_case_replies_as_redis_does_in_resp3
);

/// Versions 5 and 6 of `LOLWUT` end with Redis's caption and version line (the drawing above
/// them is Redis's random one, left out).
#[test]
fn lolwut_drawings_end_with_redis_s_captions() {
    let mut engine = Engine::new(ManualClock::default());
    let client = engine.connect();
    let mut call = |words: &[&str]| {
        let argv: Vec<Bytes> = words
            .iter()
            .map(|w| Bytes::copy_from_slice(w.as_bytes()))
            .collect();
        match engine.execute(client, &argv) {
            Frame::Bulk(text) | Frame::Verbatim { text, .. } => text,
            other => panic!("LOLWUT answered {other:?}"),
        }
    };
    let five = call(&["LOLWUT", "VERSION", "5", "10", "2", "2"]);
    assert!(
        five.ends_with(b"\nGeorg Nees - schotter, plotter on paper, 1968. Redis ver. 7.0.15\n")
    );
    let six = call(&["LOLWUT", "VERSION", "6"]);
    assert!(six.ends_with(
        b"\nDedicated to the 8 bit game developers of past and present.\n\
          Original 8 bit image from Plaguemon by hikikomori. Redis ver. 7.0.15\n"
    ));
}
