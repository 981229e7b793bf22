//! The checkers: every rule the simulator holds a run to, in one module.
//!
//! - (a) server-side exclusivity: per lock, the server's grant intervals of different owners never
//!   overlap; an overlap after the server lost data (a restart without persistence, a failover)
//!   is named as the documented limit of a single Redis. In [`check`], over the [`History`].
//! - (b) fencing: tokens strictly increase per grant, across restarts and failovers too, and the
//!   fenced resource accepts no write whose token is below the highest it has accepted, nor that
//!   token from a second client. In [`check`].
//! - (c) client-side exclusivity: the intervals [grant, min(`valid_until`, unlock send)] of
//!   different clients never overlap. In [`check`].
//! - (d) no renewal of a hold is sent after its unlock was sent, even if the unlock's reply was
//!   lost: [`UnlockedHolds`], run online as each renewal is sent, since which holds were unlocked
//!   at that moment is not kept.
//! - (e) liveness: a waiter acquires a crashed holder's lock within the holder's lease plus two
//!   round trips plus 1 ms of the crash, and a healthy holder never loses a watchdog lock:
//!   [`liveness`], over a finished [`Run`]. It is not part of every run: a pause, a lost message
//!   or a server that loses data rightly delays a waiter or costs a hold, so it applies only where
//!   nothing but crashes goes wrong, as in the liveness suite.
//! - (f) the server's hold count equals the client's whenever the hold is quiescent: [`quiescent`]
//!   and [`hold_counts`], run online at the moments the workload settles (a write, a definite
//!   unlock), since they read the server's state at that moment.
//!
//! - (g) fair grant order: on a fair lock, no owner is granted while a live waiter that arrived
//!   before it still waits: [`fair_grant`], run online at each grant, since it reads the queue
//!   and which clients still wait at that moment. The exact rule is in [`fair_grant`]'s doc.
//!
//! - (h) read-write exclusion: on a read-write lock, no write hold overlaps a read or write hold
//!   of another owner, on the server (each owner's fields in the lock's hash) and by `valid_until`
//!   (two clients that both believe they hold, one of them as writer, at one instant). In
//!   [`check`], over the [`History`]; (a) and (c) do not look at read-write locks, whose readers
//!   rightly share. The exact rule and its excuses are in [`read_write_overlaps`]' doc.
//!
//! [`check`] also reports every write to the unfenced resource inside another client's critical
//! section ([`Checker::UnfencedOverlap`]): not a rule of the lock but the symptom the suites
//! require outside the safe envelope, where only fencing protects the resource.

pub use crate::history::{Checker, Violation};

use crate::case::{AcquireKind, Case, Fault};
use crate::history::{History, Interval, Mark, Run, RwInterval};
use bytes::Bytes;
use lock_core::machine::Call;
use lock_core::machine::RwSide;
use lock_core::script::{renew_batch, rw};
use std::collections::{BTreeMap, BTreeSet};

/// The pairs of intervals of one lock, of different holders, that overlap (each pair once, the
/// earlier-starting first): checkers (a) and (c), and the race harness's believed holds.
pub fn overlapping(intervals: &[Interval]) -> Vec<(&Interval, &Interval)> {
    let mut by_lock: BTreeMap<u32, Vec<&Interval>> = BTreeMap::new();
    for i in intervals.iter().filter(|i| i.from < i.to) {
        by_lock.entry(i.lock).or_default().push(i);
    }
    let mut out = Vec::new();
    for list in by_lock.values_mut() {
        list.sort_by_key(|i| (i.from, i.to));
        for (n, a) in list.iter().enumerate() {
            for b in &list[n + 1..] {
                if b.from >= a.to {
                    break;
                }
                if a.who != b.who {
                    out.push((*a, *b));
                }
            }
        }
    }
    out
}

/// Checker (h)'s pairs: the holds of one read-write lock, of different owners (or clients), that
/// overlap while one of them is the write hold.
///
/// The rule: a write hold excludes every other owner's read and write holds, and read holds of
/// different owners may overlap. One owner's read and write holds may overlap too: a writer may
/// take read holds (the downgrade), which is why the server side names a writer by its owner,
/// without the `:write` of its field. On the server, a hold runs from the moment its field is
/// seen in the lock's hash until it is seen gone (at the key's deadline if it expired); on the
/// client side, from the grant to the earlier of `valid_until` and the moment its release is sent.
///
/// The excuses are those of (a) and (c). The client side has none: `valid_until` holds under
/// every fault of the envelope and under data loss too (the client notices the loss at once).
/// On the server, an overlap that a restart without persistence or a failover to a lagging
/// replica made (the first hold was dropped with the server's data) is reported, named as the
/// documented limit of a single Redis. Clocks that run at different rates are outside the
/// envelope; there `valid_until` may promise more than the server keeps, as it may for (c).
pub fn read_write_overlaps(holds: &[RwInterval]) -> Vec<(&RwInterval, &RwInterval)> {
    let mut by_lock: BTreeMap<u32, Vec<&RwInterval>> = BTreeMap::new();
    for h in holds.iter().filter(|h| h.span.from < h.span.to) {
        by_lock.entry(h.span.lock).or_default().push(h);
    }
    let mut out = Vec::new();
    for list in by_lock.values_mut() {
        list.sort_by_key(|h| (h.span.from, h.span.to));
        for (n, a) in list.iter().enumerate() {
            for b in &list[n + 1..] {
                if b.span.from >= a.span.to {
                    break;
                }
                let writes = a.side == RwSide::Write || b.side == RwSide::Write;
                if writes && a.span.who != b.span.who {
                    out.push((*a, *b));
                }
            }
        }
    }
    out
}

/// What (a) and (h) add to an overlap when the server `lost` data before it ended: the first
/// `what` (grant, hold) was dropped with it, the documented limit of a single Redis.
fn lost_data(lost: bool, what: &str) -> String {
    if lost {
        format!(
            " (the server lost data: a failover or restart without persistence dropped the \
             first {what}, the documented limit of a single Redis)"
        )
    } else {
        String::new()
    }
}

fn side_word(side: RwSide) -> &'static str {
    match side {
        RwSide::Read => "read",
        RwSide::Write => "write",
    }
}

/// Every violation of the run that (a), (b), (c) and (h) find in `history`, with those (d), (f)
/// and (g) found while it ran, ordered by checker and time.
pub fn check(history: &History) -> Vec<Violation> {
    let mut out = history.online.clone();
    for (a, b) in overlapping(&history.server_grants) {
        let lost = history.data_loss.iter().any(|&t| t < a.to.max(b.to));
        out.push(Violation {
            checker: Checker::ServerExclusive,
            at: b.from,
            message: format!(
                "L{}: {} held [{}, {}) and {} was granted at {}{}",
                a.lock,
                a.who,
                a.from,
                a.to,
                b.who,
                b.from,
                lost_data(lost, "grant")
            ),
        });
    }
    for (lock, grants) in &history.tokens {
        let mut highest: Option<u64> = None;
        for (at, owner, token) in grants {
            if let Some(max) = highest
                && *token <= max
            {
                out.push(Violation {
                    checker: Checker::Fencing,
                    at: *at,
                    message: format!("L{lock}: {owner} was granted token {token}, not above {max}"),
                });
            }
            highest = Some(highest.map_or(*token, |m| m.max(*token)));
        }
    }
    // Per lock, the highest token the resource accepted and whose it was: a token is one grant's,
    // so another client writing with the same one means the counter repeated itself.
    let mut highest: BTreeMap<u32, (u64, &str)> = BTreeMap::new();
    for (at, lock, client, token, accepted) in &history.fenced_writes {
        if !*accepted {
            continue;
        }
        if let Some(&(max, holder)) = highest.get(lock) {
            let message = if *token < max {
                Some(format!(
                    "L{lock}: the fenced resource accepted {client}'s token {token} after {max}"
                ))
            } else if *token == max && holder != client.as_str() {
                Some(format!(
                    "L{lock}: the fenced resource accepted {client}'s token {token}, {holder}'s too"
                ))
            } else {
                None
            };
            if let Some(message) = message {
                out.push(Violation {
                    checker: Checker::Fencing,
                    at: *at,
                    message,
                });
            }
        }
        let best = highest.entry(*lock).or_insert((*token, client));
        if *token > best.0 {
            *best = (*token, client);
        }
    }
    for (a, b) in overlapping(&history.client_intervals) {
        out.push(Violation {
            checker: Checker::ClientExclusive,
            at: b.from,
            message: format!(
                "L{}: client {} believed it held the lock during [{}, {}) and client {} during [{}, {})",
                a.lock, a.who, a.from, a.to, b.who, b.from, b.to
            ),
        });
    }
    for (a, b) in read_write_overlaps(&history.rw_server_holds) {
        let lost = history
            .data_loss
            .iter()
            .any(|&t| t < a.span.to.max(b.span.to));
        out.push(Violation {
            checker: Checker::ReadWriteServer,
            at: b.span.from,
            message: format!(
                "L{}: {} held the {} hold during [{}, {}) and {} was granted the {} hold at {}{}",
                a.span.lock,
                a.span.who,
                side_word(a.side),
                a.span.from,
                a.span.to,
                b.span.who,
                side_word(b.side),
                b.span.from,
                lost_data(lost, "hold")
            ),
        });
    }
    for (a, b) in read_write_overlaps(&history.rw_client_holds) {
        out.push(Violation {
            checker: Checker::ReadWriteClient,
            at: b.span.from,
            message: format!(
                "L{}: client {} believed it held the {} hold during [{}, {}) and client {} the {} \
                 hold during [{}, {})",
                a.span.lock,
                a.span.who,
                side_word(a.side),
                a.span.from,
                a.span.to,
                b.span.who,
                side_word(b.side),
                b.span.from,
                b.span.to
            ),
        });
    }
    for (at, lock, writer, other) in &history.unfenced_overlaps {
        out.push(Violation {
            checker: Checker::UnfencedOverlap,
            at: *at,
            message: format!(
                "L{lock}: {writer} wrote to the unfenced resource inside {other}'s critical section"
            ),
        });
    }
    out.sort_by_key(|v| (v.checker, v.at));
    out
}

/// Checker (d)'s memory of one client: the (lock key, owner) pairs whose last unlock was sent,
/// which no renewal may name until the owner is granted the lock afresh. On a read-write lock the
/// owner is the hash field the renewal names: the owner for its read hold, `<owner>:write` for
/// its write hold.
#[derive(Debug, Default)]
pub struct UnlockedHolds(BTreeSet<(Bytes, Bytes)>);

impl UnlockedHolds {
    /// The last unlock of `owner`'s hold of the lock `key` was sent.
    pub fn unlock_sent(&mut self, key: Bytes, owner: Bytes) {
        self.0.insert((key, owner));
    }

    /// `owner` was granted the lock `key`: a new hold, which may be renewed whatever happened to
    /// an earlier hold of the same owner.
    pub fn granted(&mut self, key: Bytes, owner: Bytes) {
        self.0.remove(&(key, owner));
    }

    /// Reports into `out` every hold that `call`, sent by `client` at `at`, renews after its
    /// unlock.
    pub fn check_renewal(&self, at: u64, client: &str, call: &Call, out: &mut Vec<Violation>) {
        let Call::Script(script) = call else { return };
        // A read-write lock's read holds are renewed by their own batch, which names each lock
        // beside its key prefix.
        let step = match script.script.name {
            name if name == renew_batch::SCRIPT.name => 1,
            name if name == rw::renew::SCRIPT.name => 2,
            _ => return,
        };
        let keys = script.keys.iter().step_by(step);
        for (key, owner) in keys.zip(script.args.iter().skip(1)) {
            if self.0.contains(&(key.clone(), owner.clone())) {
                out.push(Violation {
                    checker: Checker::NoRenewAfterUnlock,
                    at,
                    message: format!(
                        "client {client} sent a renewal of {} for {} after its unlock",
                        String::from_utf8_lossy(key),
                        String::from_utf8_lossy(owner)
                    ),
                });
            }
        }
    }
}

/// Whether checker (f) applies to a hold at `now`: its client has no call or operation
/// `in_flight`, no call on the hold ended with its outcome unknown, and the hold's `valid_until`
/// has not passed. Otherwise the server's count may rightly differ from the client's.
pub fn quiescent(in_flight: bool, outcome_unknown: bool, valid_until: u64, now: u64) -> bool {
    !in_flight && !outcome_unknown && now < valid_until
}

/// Checker (f) for one quiescent hold of `lock` by `client` at `at`: the violation, if the client
/// counts `client_count` holds and the server `server_count`.
pub fn hold_counts(
    at: u64,
    client: &str,
    lock: &str,
    client_count: i64,
    server_count: i64,
) -> Option<Violation> {
    (client_count != server_count).then(|| Violation {
        checker: Checker::HoldCounts,
        at,
        message: format!(
            "client {client} counts {client_count} holds of {lock}, the server {server_count}"
        ),
    })
}

/// A place in a fair lock's queue as checker (g) sees it just before a grant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FairPlace {
    /// The waiting owner (`<client_id>:<owner_id>`).
    pub owner: String,
    /// When the server applied the acquire that put it in the queue, simulation ms.
    pub arrived: u64,
    /// Its arrival's rank: places that arrived at one millisecond keep the order they were
    /// applied in.
    pub rank: u64,
    /// Its deadline in the timeouts set (unix ms, Redisson's score), if it has one.
    pub deadline: Option<i64>,
    /// Whether its client still waits on the acquire that owns the place: not given up, not
    /// timed out, not ended by an error, not crashed.
    pub waiting: bool,
}

/// Checker (g) for one grant of fair lock `lock` to `granted` at `at`, by an acquire that carried
/// the client's clock `clock` (unix ms), given the queue's places just before it was applied (in
/// queue order) and the grantee's own rank if it had a place.
///
/// The rule: a waiter is *ahead* of the grantee if its place arrived earlier (a grantee without a
/// place arrived last). A waiter ahead is *live* if its client still waits on the acquire that
/// made the place, and its place was not stale by Redisson's rule: a place whose deadline is at
/// or before the granting call's clock is purged by that call (it went `thread_wait` without a
/// poll: a paused client's, or one whose polls were lost), so its waiter is excused. A waiter
/// that gave up, ran out of budget, ended with an error or crashed is excused too, whether or not
/// its place is still in the queue (a crashed client's and a lost give-up's places stay until
/// they go stale). Every live waiter ahead of the grantee is a violation. A waiter that lost its
/// place some other way is not seen by this rule: it is gone from the queue the rule reads. A
/// server that lost its data loses its queue too, and the places that follow arrive anew.
pub fn fair_grant(
    at: u64,
    lock: u32,
    granted: &str,
    granted_rank: Option<u64>,
    clock: i64,
    places: &[FairPlace],
) -> Option<Violation> {
    let skipped: Vec<String> = places
        .iter()
        .filter(|p| p.owner != granted && granted_rank.is_none_or(|rank| p.rank < rank))
        .filter(|p| p.waiting && p.deadline.is_none_or(|d| d > clock))
        .map(|p| format!("{} (queued at {} ms)", p.owner, p.arrived))
        .collect();
    (!skipped.is_empty()).then(|| Violation {
        checker: Checker::FairOrder,
        at,
        message: format!(
            "L{lock}: {granted} was granted the fair lock while {} still waited ahead of it",
            skipped.join(", ")
        ),
    })
}

/// Checker (e) over a finished run of `case` (a traced one: it reads the run's marks), by time.
///
/// It applies only where nothing but crashes goes wrong: with random loss, a fault on the server
/// or a fault on a client's messages, a waiter may rightly be late and a holder rightly lose its
/// lock. Then:
/// - when a client crashes holding its lock on the server while another waits for that lock,
///   some other client acquires it within the crashed holder's lease plus two round trips plus
///   1 ms (if the run lasts that long), unless every waiter gave up or crashed first;
/// - a client whose lock the watchdog renews, which no fault strikes and whose clock agrees with
///   the simulation's, never hears its hold is lost or may be lost.
pub fn liveness(case: &Case, run: &Run) -> Vec<Violation> {
    let mut out = Vec::new();
    if case.loss != (0, 0) || !case.faults.iter().all(|f| matches!(f, Fault::Crash { .. })) {
        return out;
    }
    for fault in &case.faults {
        if let Fault::Crash { client, at } = *fault {
            out.extend(waiter_after_crash(case, run, client, at));
        }
    }
    for (i, spec) in case.clients.iter().enumerate() {
        let renewed = matches!(
            spec.acquire,
            AcquireKind::Watchdog | AcquireKind::Try { lease: None, .. }
        );
        let crashes = case
            .faults
            .iter()
            .any(|f| matches!(*f, Fault::Crash { client, .. } if client == i));
        if !renewed || crashes || spec.drift_ppm != 0 {
            continue;
        }
        let losses = run
            .marks
            .iter()
            .filter(|m| m.actor == spec.name && (m.what == "lost" || m.what == "may-be-lost"));
        for m in losses {
            out.push(Violation {
                checker: Checker::Liveness,
                at: m.at,
                message: format!(
                    "client {} holds L{} under the watchdog, nothing went wrong for it, and it \
                     heard: {} {}",
                    spec.name, spec.lock, m.what, m.detail
                ),
            });
        }
    }
    out.sort_by_key(|v| v.at);
    out
}

/// The first half of (e) for the crash of client `crashed` at `at`.
fn waiter_after_crash(case: &Case, run: &Run, crashed: usize, at: u64) -> Option<Violation> {
    let holder = &case.clients[crashed];
    let lock = holder.lock;
    let held = run.history.server_grants.iter().any(|g| {
        g.lock == lock && g.from <= at && at < g.to && run.client_of(&g.who) == Some(&holder.name)
    });
    let lease = match holder.acquire {
        AcquireKind::Watchdog | AcquireKind::Try { lease: None, .. } => case.watchdog,
        AcquireKind::Lease(ms)
        | AcquireKind::Try {
            lease: Some(ms), ..
        } => ms.max(1),
    };
    let bound = at + lease + 4 * case.latency.1 + 1;
    if !held || bound > case.horizon {
        return None;
    }
    let rivals: Vec<&str> = case
        .clients
        .iter()
        .enumerate()
        .filter(|(c, spec)| *c != crashed && spec.lock == lock)
        .map(|(_, spec)| spec.name.as_str())
        .collect();
    let granted = rivals.iter().any(|&name| {
        marks_of(run, name).any(|m| m.what == "acquire" && at < m.at && m.at <= bound)
    });
    let waiting = rivals.iter().any(|&name| {
        // Waiting at the crash: its last acquire-related mark by then is its wait.
        let waiting_at_crash = marks_of(run, name)
            .filter(|m| {
                m.at <= at && matches!(m.what.as_str(), "wait" | "acquire" | "not-acquired")
            })
            .last()
            .is_some_and(|m| m.what == "wait");
        let left = marks_of(run, name).any(|m| {
            at < m.at && m.at <= bound && matches!(m.what.as_str(), "not-acquired" | "crash")
        });
        waiting_at_crash && !left
    });
    (waiting && !granted).then(|| Violation {
        checker: Checker::Liveness,
        at: bound,
        message: format!(
            "L{lock}: {} crashed holding it at {at} and no waiter acquired it by {bound} \
             (its lease {lease} ms, two round trips and 1 ms later)",
            holder.name
        ),
    })
}

/// The marks of the client `name`, in time order.
fn marks_of<'a>(run: &'a Run, name: &'a str) -> impl Iterator<Item = &'a Mark> {
    run.marks.iter().filter(move |m| m.actor == name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::ClientSpec;

    fn iv(lock: u32, who: &str, from: u64, to: u64) -> Interval {
        Interval {
            lock,
            who: who.into(),
            from,
            to,
        }
    }

    #[test]
    fn overlaps_are_found_only_between_different_owners_of_one_lock() {
        let h = History {
            client_intervals: vec![
                iv(0, "a", 0, 10),
                iv(0, "a", 5, 20),
                iv(1, "b", 5, 20),
                iv(0, "b", 10, 12),
                iv(0, "c", 19, 30),
            ],
            ..History::default()
        };
        let v = check(&h);
        assert_eq!(v.len(), 2, "{v:#?}");
        assert!(v.iter().all(|v| v.checker == Checker::ClientExclusive));
    }

    #[test]
    fn tokens_must_rise_and_stale_fenced_writes_must_be_refused() {
        let mut h = History::default();
        h.tokens.insert(
            0,
            vec![(1, "a".into(), 1), (2, "b".into(), 2), (3, "a".into(), 2)],
        );
        h.fenced_writes = vec![(4, 0, "b".into(), 2, true), (5, 0, "a".into(), 1, true)];
        let v = check(&h);
        assert_eq!(
            v.iter().filter(|v| v.checker == Checker::Fencing).count(),
            2,
            "{v:#?}"
        );
    }

    #[test]
    fn a_token_written_by_a_second_client_is_a_fencing_violation() {
        let h = History {
            fenced_writes: vec![
                (1, 0, "a".into(), 5, true),
                (2, 0, "a".into(), 5, true),
                (3, 0, "b".into(), 5, true),
            ],
            ..History::default()
        };
        let v = check(&h);
        assert_eq!(v.len(), 1, "{v:#?}");
        assert_eq!(v[0].checker, Checker::Fencing);
        assert_eq!(v[0].at, 3);
    }

    #[test]
    fn hold_counts_compare_only_quiescent_holds() {
        assert!(quiescent(false, false, 10, 9));
        assert!(!quiescent(true, false, 10, 9));
        assert!(!quiescent(false, true, 10, 9));
        assert!(!quiescent(false, false, 10, 10));
        assert_eq!(hold_counts(5, "a", "L0", 1, 1), None);
        let v = hold_counts(5, "a", "L0", 2, 1).expect("the counts differ");
        assert_eq!(v.checker, Checker::HoldCounts);
    }

    fn rw(lock: u32, who: &str, side: RwSide, from: u64, to: u64) -> RwInterval {
        RwInterval {
            span: iv(lock, who, from, to),
            side,
        }
    }

    #[test]
    fn a_writer_may_overlap_only_its_own_holds_and_readers_share() {
        use RwSide::{Read, Write};
        let h = History {
            rw_client_holds: vec![
                // Readers share; a writer's own read hold (the downgrade) is its own.
                rw(0, "a", Read, 0, 10),
                rw(0, "b", Read, 5, 20),
                rw(0, "c", Write, 20, 30),
                rw(0, "c", Read, 25, 40),
                rw(0, "d", Read, 40, 50),
                // On another lock, a writer overlapping a reader, and one touching a writer.
                rw(1, "a", Read, 0, 10),
                rw(1, "b", Write, 9, 12),
                rw(1, "c", Write, 12, 13),
            ],
            rw_server_holds: vec![rw(0, "x", Write, 0, 10), rw(0, "y", Write, 3, 4)],
            data_loss: vec![2],
            ..History::default()
        };
        let v = check(&h);
        assert_eq!(v.len(), 2, "{v:#?}");
        assert_eq!((v[0].checker, v[0].at), (Checker::ReadWriteServer, 3));
        assert!(v[0].message.contains("lost data"), "{}", v[0]);
        assert_eq!((v[1].checker, v[1].at), (Checker::ReadWriteClient, 9));
        assert!(v[1].message.contains("b the write hold"), "{}", v[1]);
        // None of it is (a) or (c)'s business.
        assert!(v.iter().all(|v| !matches!(
            v.checker,
            Checker::ServerExclusive | Checker::ClientExclusive
        )));
    }

    fn place(owner: &str, rank: u64, deadline: i64, waiting: bool) -> FairPlace {
        FairPlace {
            owner: owner.into(),
            arrived: rank * 10,
            rank,
            deadline: Some(deadline),
            waiting,
        }
    }

    #[test]
    fn a_fair_grant_may_pass_over_only_waiters_that_left_or_went_stale() {
        let queue = [place("a", 1, 500, true), place("b", 2, 900, true)];
        // The head is served, or a newcomer once every place ahead of it is excused.
        assert_eq!(fair_grant(7, 0, "a", Some(1), 100, &queue), None);
        let gone = [place("a", 1, 500, false), place("b", 2, 90, true)];
        assert_eq!(fair_grant(7, 0, "c", None, 100, &gone), None);
        // b jumps a live a; a newcomer jumps both.
        let v = fair_grant(7, 0, "b", Some(2), 100, &queue).expect("b passed over a");
        assert_eq!((v.checker, v.at), (Checker::FairOrder, 7));
        assert!(
            v.message.contains('a') && !v.message.contains("b (queued"),
            "{v}"
        );
        let v = fair_grant(7, 0, "c", None, 100, &queue).expect("c passed over a and b");
        assert!(
            v.message
                .contains("a (queued at 10 ms), b (queued at 20 ms)"),
            "{v}"
        );
        // a's place went stale at 500: purged by a call whose clock reads 500 or later.
        assert_eq!(fair_grant(7, 0, "b", Some(2), 500, &queue), None);
        assert!(fair_grant(7, 0, "b", Some(2), 499, &queue).is_some());
    }

    /// Client a holds L0 on the server from 0 to 40 s and crashes at 10 s; b waits from 0.5 s.
    fn crash(faults: Vec<Fault>) -> (Case, Run) {
        let mut case = Case::new(0, 100_000);
        case.clients = vec![ClientSpec::new("a", 0), ClientSpec::new("b", 0)];
        case.faults = faults;
        let run = Run {
            trace: Vec::new(),
            trace_hash: 0,
            events: 0,
            violations: Vec::new(),
            history: History {
                server_grants: vec![iv(0, "ca:1", 2, 40_000)],
                ..History::default()
            },
            marks: vec![mark(2, "a", "acquire"), mark(500, "b", "wait")],
            client_ids: vec![("ca".into(), "a".into()), ("cb".into(), "b".into())],
            messages: Vec::new(),
            deliveries: Vec::new(),
            queues: Vec::new(),
            foreign: Default::default(),
        };
        (case, run)
    }

    fn mark(at: u64, actor: &str, what: &str) -> Mark {
        Mark {
            at,
            actor: actor.into(),
            what: what.into(),
            detail: "L0".into(),
        }
    }

    #[test]
    fn a_waiter_must_get_a_crashed_holders_lock_within_its_lease_and_two_round_trips() {
        let crash_a = Fault::Crash {
            client: 0,
            at: 10_000,
        };
        // The bound: 10 s + the 30 s watchdog lease + four 1 ms legs + 1 ms.
        let (case, mut run) = crash(vec![crash_a.clone()]);
        run.marks.push(mark(40_005, "b", "acquire"));
        assert_eq!(liveness(&case, &run), Vec::new());
        run.marks.last_mut().unwrap().at = 40_006;
        let late = liveness(&case, &run);
        assert_eq!(late.len(), 1, "{late:#?}");
        assert_eq!((late[0].checker, late[0].at), (Checker::Liveness, 40_005));
        // A waiter that gave up is owed nothing; neither is one in a run with a pause in it.
        let (case, mut run) = crash(vec![crash_a.clone()]);
        run.marks.push(mark(5_000, "b", "not-acquired"));
        assert_eq!(liveness(&case, &run), Vec::new());
        let pause = Fault::Pause {
            client: 1,
            at: 1_000,
            for_ms: 60_000,
        };
        let (case, run) = crash(vec![crash_a, pause]);
        assert_eq!(liveness(&case, &run), Vec::new());
    }

    #[test]
    fn a_healthy_watchdog_holder_must_never_lose_its_lock() {
        let (case, mut run) = crash(Vec::new());
        run.marks.push(mark(20_000, "a", "may-be-lost"));
        let lost = liveness(&case, &run);
        assert_eq!(lost.len(), 1, "{lost:#?}");
        assert_eq!((lost[0].checker, lost[0].at), (Checker::Liveness, 20_000));
        // Not healthy: struck by a fault, on a lossy network, or under a fixed lease.
        let (case, mut run) = crash(vec![Fault::Crash {
            client: 0,
            at: 30_000,
        }]);
        run.marks.push(mark(20_000, "a", "may-be-lost"));
        run.marks.push(mark(45_000, "b", "acquire"));
        assert_eq!(liveness(&case, &run), Vec::new());
        let (mut case, mut run) = crash(Vec::new());
        run.marks.push(mark(20_000, "a", "lost"));
        case.loss = (0, 1);
        assert_eq!(liveness(&case, &run), Vec::new());
        case.loss = (0, 0);
        case.clients[0].acquire = AcquireKind::Lease(5_000);
        assert_eq!(liveness(&case, &run), Vec::new());
    }
}
