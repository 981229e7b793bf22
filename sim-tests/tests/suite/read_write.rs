//! The read-write lock inside the envelope.
//!
//! Invariant: with clients of read-write locks (readers, writers and writers that downgrade to a
//! read hold) among the plain ones, and under the same pauses, dropped and delayed requests and
//! replies, lost unlock messages and crashes as the safety suite: every safety checker holds for
//! them too ((a), (c), (d), (f); a read-write lock draws no fencing token), and (h) no write hold
//! overlaps another owner's read or write hold, on the server nor by `valid_until`.

use crate::common::{SAFETY, each_case, of_rules};
use lock_core::machine::RwSide;
use proptest::prelude::*;
use sim_tests::history::RwInterval;
use sim_tests::strategy::Envelope;
use sim_tests::{Case, Checker, ClientSpec, RwRole, explain, run};
use std::cell::Cell;

/// Whether two different clients' read holds of one lock overlap in `holds`: readers shared.
fn readers_shared(holds: &[RwInterval]) -> bool {
    let reads: Vec<&RwInterval> = holds
        .iter()
        .filter(|h| h.side == RwSide::Read && h.span.from < h.span.to)
        .collect();
    reads.iter().enumerate().any(|(i, a)| {
        reads[i + 1..].iter().any(|b| {
            a.span.lock == b.span.lock
                && a.span.who != b.span.who
                && a.span.from < b.span.to
                && b.span.from < a.span.to
        })
    })
}

#[test]
fn read_write_locks_keep_a_writer_alone_under_faults() {
    let rules = [
        &SAFETY[..],
        &[Checker::ReadWriteServer, Checker::ReadWriteClient],
    ]
    .concat();
    // Not vacuous: some runs have readers sharing, and some a writer that downgrades.
    let (runs, shared, downgraded) = (Cell::new(0u32), Cell::new(0u32), Cell::new(0u32));
    each_case(1_000, Envelope::safe_read_write(), |case| {
        let run = run(&case);
        runs.set(runs.get() + 1);
        let bad = of_rules(&run, &rules);
        prop_assert!(bad.is_empty(), "{}", explain(&case, &run, &bad));
        if readers_shared(&run.history.rw_client_holds) {
            shared.set(shared.get() + 1);
        }
        if run.marks.iter().any(|m| m.detail.contains("downgraded")) {
            downgraded.set(downgraded.get() + 1);
        }
        Ok(())
    });
    println!(
        "{} runs, 0 violations; readers shared a lock in {}, a writer downgraded in {}",
        runs.get(),
        shared.get(),
        downgraded.get()
    );
    assert!(shared.get() > 0, "no run had two readers sharing a lock");
    assert!(downgraded.get() > 0, "no run had a writer downgrade");
}

/// Readers a and b share L0 from 0 s for 6 s; w asks for the write at 1 s; c asks to read at 8 s,
/// while w writes; d, a writer that downgrades, asks at 10 s.
fn readers_and_a_writer() -> Case {
    let mut case = Case::new(5, 60_000);
    case.rw = vec![0];
    let spec = |name: &str, role, start, work| {
        let mut c = ClientSpec::new(name, 0);
        c.role = role;
        c.start = start;
        c.work = (work, work);
        c.fenced = false;
        c
    };
    case.clients = vec![
        spec("a", RwRole::Read, 0, 6_000),
        spec("b", RwRole::Read, 0, 6_000),
        spec("w", RwRole::Write, 1_000, 4_000),
        spec("c", RwRole::Read, 8_000, 2_000),
        spec("d", RwRole::Downgrade, 10_000, 4_000),
    ];
    case
}

#[test]
fn readers_share_a_writer_waits_for_them_and_a_later_reader_waits_for_the_writer() {
    let case = readers_and_a_writer();
    let run = run(&case);
    let all: Vec<_> = run.violations.iter().collect();
    assert!(all.is_empty(), "{}", explain(&case, &run, &all));
    let at = |n: &str| run.first(n, "acquire").expect("every client acquires");
    let released = |n: &str| run.all(n, "released").last().copied().expect("released");
    // a and b read at once; w is granted only once both gave their read holds back, woken by
    // the last one's message, not by a poll.
    assert!(at("a") < 10 && at("b") < 10, "{}", run.timeline());
    let readers_done = released("a").max(released("b"));
    assert!(
        at("w") >= readers_done && at("w") - readers_done < 20,
        "{}",
        run.timeline()
    );
    // c asked while w wrote: it waits until w's release, which wakes it.
    let w_done = released("w");
    assert!(
        at("c") >= w_done && at("c") - w_done < 20,
        "{}",
        run.timeline()
    );
    // d takes the write, then a read hold, and gives the write back first: a downgrade.
    let d_acquires = run.all("d", "acquire");
    assert_eq!(d_acquires.len(), 2, "{}", run.timeline());
    assert!(
        run.marks
            .iter()
            .any(|m| m.actor == "d" && m.what == "unlock" && m.detail.contains("downgraded")),
        "{}",
        run.timeline()
    );
    // The writers' holds are alone on the server; the readers' overlap.
    let server = &run.history.rw_server_holds;
    assert!(readers_shared(server), "{server:#?}");
    assert!(server.iter().any(|h| h.side == RwSide::Write));
    // A read-write lock draws no token, and (a) and (c) see none of it.
    assert!(run.history.tokens.is_empty());
    assert!(run.history.server_grants.is_empty() && run.history.client_intervals.is_empty());
}

#[test]
fn a_case_of_read_write_locks_replays_to_the_same_trace_from_its_text() {
    let case = readers_and_a_writer();
    let text = case.one_line();
    assert!(
        text.contains(" rw=0") && text.contains("role=downgrade"),
        "{text}"
    );
    let again: Case = text.parse().unwrap();
    assert_eq!(again, case);
    assert_eq!(run(&again).trace_hash, run(&case).trace_hash);
}

#[test]
fn a_reader_that_asks_while_readers_hold_joins_them_ahead_of_a_waiting_writer() {
    // Redisson's read lock: while the mode is read, a reader is granted whoever waits to write.
    let mut case = readers_and_a_writer();
    case.clients.truncate(3);
    let mut late = ClientSpec::new("e", 0);
    late.role = RwRole::Read;
    late.start = 3_000;
    late.work = (1_000, 1_000);
    late.fenced = false;
    case.clients.push(late);
    let run = run(&case);
    let all: Vec<_> = run.violations.iter().collect();
    assert!(all.is_empty(), "{}", explain(&case, &run, &all));
    let e = run.first("e", "acquire").expect("e reads");
    let w = run.first("w", "acquire").expect("w writes");
    assert!(
        e - 3_000 < 10 && e < w,
        "e at {e}, w at {w}\n{}",
        run.timeline()
    );
}
