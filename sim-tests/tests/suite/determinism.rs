//! The same case gives a byte-identical trace; another seed gives another trace.

use proptest::prelude::*;
use sim_tests::run;
use sim_tests::strategy::{Envelope, cases};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(sim_tests::cases(200)))]

    /// Invariant: running a case twice gives identical trace hashes.
    #[test]
    fn the_same_case_gives_the_same_trace(case in cases(Envelope::safe())) {
        let first = run(&case);
        let second = run(&case);
        prop_assert_eq!(first.trace_hash, second.trace_hash);
        prop_assert_eq!(first.trace, second.trace);
    }
}

#[test]
fn different_seeds_give_different_traces() {
    let text = "case seed=1 horizon=60000 latency=1..20; \
                client a lock=0 work=500..5000 cycles=0; client b lock=0 work=500..5000 cycles=0";
    let a: sim_tests::Case = text.parse().unwrap();
    let mut b = a.clone();
    b.seed = 2;
    assert_ne!(run(&a).trace_hash, run(&b).trace_hash);
}
