//! Safety inside the envelope.
//!
//! Invariant: under arbitrary GC pauses, dropped and delayed requests and replies, lost unlock
//! messages and client crashes (with clocks that agree and a server that keeps its data):
//! (a) the server never grants one lock to two owners at once, (b) fencing tokens strictly rise,
//! (c) no two clients believe they hold one lock at the same time, (d) no renewal of a hold is
//! sent after its unlock, and (f) client and server agree on hold counts whenever quiet.

use crate::common::{SAFETY, each_case, of_rules};
use proptest::prelude::*;
use sim_tests::strategy::Envelope;
use sim_tests::{explain, run};

#[test]
fn safety_holds_under_pauses_drops_delays_and_crashes() {
    each_case(4_000, Envelope::safe(), |case| {
        let run = run(&case);
        let bad = of_rules(&run, &SAFETY);
        prop_assert!(bad.is_empty(), "{}", explain(&case, &run, &bad));
        Ok(())
    });
}
