//! The checker: what a partition run's history says about the lock, per lock name (one per
//! workload mode).
//!
//! It reads only the history (`history.rs`), never the processes, so a history saved from a run
//! can be checked again. Four questions, Jepsen's for a lock:
//!
//! - **violations**: two holds whose writes interleave at the resource. A hold's writes span from
//!   its first accepted write to its last, on the resource's one clock; two such spans of
//!   different holds that overlap mean two clients each wrote while believing the lock was
//!   theirs alone.
//! - **stale tokens accepted**: an accepted write whose token is below the highest accepted
//!   before it, or equal to it but from another hold. The resource should refuse both; counting
//!   them here checks the fencing end to end.
//! - **double grants**: two holds that each believed themselves granted at once (a grant until
//!   the client saw it lost, stopped, or started to unlock). Those that began while a server fault
//!   (a partition of servers, a primary paused or killed) was the latest fault are counted as
//!   grants lost on failover.
//! - **unavailability**: after each heal, how long until the lock was next granted to anyone.

use super::history::{Kind, Record};
use std::collections::BTreeMap;

/// A hold: a client's n-th acquire.
pub type HoldKey = (String, u64);

/// Two holds that overlapped, and when the second began.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Overlap {
    /// The hold that began first.
    pub first: HoldKey,
    /// The hold that began while the first was still on.
    pub second: HoldKey,
    /// When the overlap began, µs since the epoch.
    pub at_us: u64,
}

/// The checker's findings for one lock.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Findings {
    /// How many grants the clients saw.
    pub grants: usize,
    /// Holds whose accepted writes interleaved (pairs).
    pub violations: Vec<Overlap>,
    /// Accepted writes with a stale token.
    pub stale_accepted: usize,
    /// Writes the resource rejected for a stale token.
    pub rejected: usize,
    /// Believed holds that overlapped (pairs).
    pub double_grants: Vec<Overlap>,
    /// Of those, the ones that began after a server fault: grants lost on failover.
    pub lost_grants: usize,
    /// Per heal, ms until the next grant (to the end of the history if none came).
    pub unavailable_ms: Vec<u64>,
}

/// Checks every lock of `history`: one [`Findings`] per lock name.
pub fn check(history: &[Record]) -> BTreeMap<String, Findings> {
    let mut locks: BTreeMap<String, Vec<&Record>> = BTreeMap::new();
    for r in history
        .iter()
        .filter(|r| !r.lock.is_empty() && r.actor != "nemesis")
    {
        locks.entry(r.lock.clone()).or_default().push(r);
    }
    let faults: Vec<&Record> = history.iter().filter(|r| r.actor == "nemesis").collect();
    let end_us = history.iter().map(|r| r.at_us).max().unwrap_or(0);
    locks
        .into_iter()
        .map(|(lock, records)| {
            let findings = check_lock(&records, &faults, end_us);
            (lock, findings)
        })
        .collect()
}

fn check_lock(records: &[&Record], faults: &[&Record], end_us: u64) -> Findings {
    let double_grants = overlaps(&believed_holds(records, end_us));
    let lost_grants = double_grants
        .iter()
        .filter(|o| latest_fault_is_server(faults, o.at_us))
        .count();
    Findings {
        grants: records.iter().filter(|r| r.kind == Kind::Granted).count(),
        violations: overlaps(&write_spans(records)),
        stale_accepted: stale_accepted(records),
        rejected: records.iter().filter(|r| r.kind == Kind::Rejected).count(),
        double_grants,
        lost_grants,
        unavailable_ms: unavailability(records, faults, end_us),
    }
}

/// Each hold's span of accepted writes, on the resource's clock.
fn write_spans(records: &[&Record]) -> BTreeMap<HoldKey, (u64, u64)> {
    let mut spans: BTreeMap<HoldKey, (u64, u64)> = BTreeMap::new();
    for r in records.iter().filter(|r| r.kind == Kind::Accepted) {
        let span = spans
            .entry((r.actor.clone(), r.hold))
            .or_insert((r.at_us, r.at_us));
        span.1 = span.1.max(r.at_us);
    }
    spans
}

/// Each hold's believed span: from its grant to the first sign the client had that it ended.
fn believed_holds(records: &[&Record], end_us: u64) -> BTreeMap<HoldKey, (u64, u64)> {
    let mut spans: BTreeMap<HoldKey, (u64, u64)> = BTreeMap::new();
    for r in records.iter() {
        let key = (r.actor.clone(), r.hold);
        match r.kind {
            Kind::Granted => {
                spans.insert(key, (r.at_us, end_us));
            }
            Kind::Lost | Kind::Stopped | Kind::Unlock => {
                if let Some(span) = spans.get_mut(&key) {
                    span.1 = span.1.min(r.at_us);
                }
            }
            _ => {}
        }
    }
    spans
}

/// Pairs of spans of different holds that overlap (strictly: a span that ends where the next
/// begins does not).
fn overlaps(spans: &BTreeMap<HoldKey, (u64, u64)>) -> Vec<Overlap> {
    let mut sorted: Vec<(&HoldKey, &(u64, u64))> = spans.iter().collect();
    sorted.sort_by_key(|(_, (from, _))| *from);
    let mut found = Vec::new();
    for (i, (a, (a_from, a_to))) in sorted.iter().enumerate() {
        for (b, (b_from, _)) in sorted.iter().skip(i + 1) {
            if b_from >= a_to {
                break;
            }
            if b_from >= a_from && a != b {
                found.push(Overlap {
                    first: (*a).clone(),
                    second: (*b).clone(),
                    at_us: *b_from,
                });
            }
        }
    }
    found
}

fn stale_accepted(records: &[&Record]) -> usize {
    let mut highest: Option<(u64, HoldKey)> = None;
    let mut stale = 0;
    for r in records.iter().filter(|r| r.kind == Kind::Accepted) {
        let Some(token) = r.token else { continue };
        let key = (r.actor.clone(), r.hold);
        match &highest {
            Some((max, holder)) if token < *max || (token == *max && *holder != key) => {
                stale += 1;
            }
            Some((max, _)) if token == *max => {}
            _ => highest = Some((token, key)),
        }
    }
    stale
}

/// Whether the latest fault started at or before `at_us` was a server fault (the nemesis writes
/// the fault's target class, `server` or `client`, in the lock field of its records).
fn latest_fault_is_server(faults: &[&Record], at_us: u64) -> bool {
    faults
        .iter()
        .filter(|f| f.kind == Kind::Fault && f.at_us <= at_us)
        .max_by_key(|f| f.at_us)
        .is_some_and(|f| f.detail.starts_with("server"))
}

fn unavailability(records: &[&Record], faults: &[&Record], end_us: u64) -> Vec<u64> {
    faults
        .iter()
        .filter(|f| f.kind == Kind::Heal)
        .map(|heal| {
            let next = records
                .iter()
                .find(|r| r.kind == Kind::Granted && r.at_us >= heal.at_us)
                .map_or(end_us, |r| r.at_us);
            next.saturating_sub(heal.at_us) / 1000
        })
        .collect()
}

/// The `q`-quantile (0..=1) of `values` by the nearest-rank rule; `None` when empty.
pub fn quantile(values: &[u64], q: f64) -> Option<u64> {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let rank = (q * n as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, n) - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(at_us: u64, actor: &str, kind: Kind, hold: u64, token: Option<u64>) -> Record {
        Record {
            at_us,
            actor: actor.into(),
            kind,
            lock: "l".into(),
            hold,
            token,
            detail: String::new(),
        }
    }

    fn nemesis(at_us: u64, kind: Kind, detail: &str) -> Record {
        Record {
            at_us,
            actor: "nemesis".into(),
            kind,
            lock: String::new(),
            hold: 0,
            token: None,
            detail: detail.into(),
        }
    }

    #[test]
    fn interleaved_writes_of_two_holds_are_a_violation() {
        let history = vec![
            rec(10, "a", Kind::Granted, 1, None),
            rec(20, "a", Kind::Accepted, 1, None),
            rec(25, "b", Kind::Granted, 1, None),
            rec(30, "b", Kind::Accepted, 1, None),
            rec(40, "a", Kind::Accepted, 1, None),
        ];
        let findings = &check(&history)["l"];
        assert_eq!(findings.violations.len(), 1);
        assert_eq!(findings.violations[0].second, ("b".to_owned(), 1));
        assert_eq!(findings.double_grants.len(), 1);
    }

    #[test]
    fn holds_one_after_the_other_are_clean() {
        let history = vec![
            rec(10, "a", Kind::Granted, 1, Some(5)),
            rec(20, "a", Kind::Accepted, 1, Some(5)),
            rec(30, "a", Kind::Unlock, 1, None),
            rec(40, "b", Kind::Granted, 1, Some(6)),
            rec(50, "b", Kind::Accepted, 1, Some(6)),
        ];
        let findings = &check(&history)["l"];
        assert!(findings.violations.is_empty());
        assert!(findings.double_grants.is_empty());
        assert_eq!(findings.stale_accepted, 0);
        assert_eq!(findings.grants, 2);
    }

    #[test]
    fn a_lower_or_reused_token_accepted_is_stale() {
        let history = vec![
            rec(10, "a", Kind::Accepted, 1, Some(6)),
            rec(20, "b", Kind::Accepted, 1, Some(5)),
            rec(30, "b", Kind::Accepted, 2, Some(6)),
            rec(40, "a", Kind::Accepted, 1, Some(6)),
        ];
        assert_eq!(check(&history)["l"].stale_accepted, 2);
    }

    #[test]
    fn a_double_grant_after_a_server_fault_is_a_lost_grant() {
        let history = vec![
            nemesis(5, Kind::Fault, "server: partition"),
            rec(10, "a", Kind::Granted, 1, None),
            rec(25, "b", Kind::Granted, 1, None),
            nemesis(30, Kind::Heal, "server: partition"),
            rec(40, "a", Kind::Lost, 1, None),
        ];
        let findings = &check(&history)["l"];
        assert_eq!(findings.lost_grants, 1);
    }

    #[test]
    fn unavailability_runs_from_a_heal_to_the_next_grant() {
        let history = vec![
            nemesis(1_000, Kind::Heal, "client: pause"),
            rec(5_000, "a", Kind::Granted, 1, None),
            nemesis(6_000, Kind::Heal, "client: pause"),
            rec(9_000, "a", Kind::Unlock, 1, None),
        ];
        assert_eq!(check(&history)["l"].unavailable_ms, vec![4, 3]);
    }

    #[test]
    fn quantiles_take_the_nearest_rank() {
        assert_eq!(quantile(&[5, 1, 3], 0.5), Some(3));
        assert_eq!(quantile(&[5, 1, 3], 1.0), Some(5));
        assert_eq!(quantile(&[], 0.5), None);
    }
}
