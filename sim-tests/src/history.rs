//! What happened in a run, as the checkers need it, and the checkers themselves (SPEC §7).
//!
//! The world records facts as they happen: server-side grants and their ends, tokens the server
//! handed out, client-side intervals of believed ownership, renewal calls, writes to the resources,
//! crashes and the acquires that followed. After the run, [`History::check`] turns them into
//! [`Violation`]s, one checker per rule:
//!
//! - (a) server-side exclusivity: per lock, grant intervals of different owners never overlap;
//! - (b) fencing: tokens strictly increase per grant, and the fenced resource accepts no stale write;
//! - (c) client-side exclusivity: [grant, min(valid_until, unlock send)] of different clients never
//!   overlap;
//! - (d) no renewal of a hold after its unlock was sent;
//! - (e) liveness: a waiter acquires a crashed holder's lock in time; a healthy holder never loses a
//!   watchdog lock;
//! - (f) the server's hold count equals the client's whenever the hold is quiescent.

use std::collections::BTreeMap;
use std::fmt;

/// The rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Checker {
    /// (a) server-side exclusivity.
    ServerExclusive,
    /// (b) fencing tokens.
    Fencing,
    /// (c) client-side exclusivity.
    ClientExclusive,
    /// (d) no renewal after unlock.
    NoRenewAfterUnlock,
    /// (e) liveness.
    Liveness,
    /// (f) hold counts agree.
    HoldCounts,
    /// The unfenced resource saw overlapping critical sections (expected outside the envelope).
    UnfencedOverlap,
}

impl fmt::Display for Checker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Checker::ServerExclusive => "(a) server-side exclusivity",
            Checker::Fencing => "(b) fencing",
            Checker::ClientExclusive => "(c) client-side exclusivity",
            Checker::NoRenewAfterUnlock => "(d) no renewal after unlock",
            Checker::Liveness => "(e) liveness",
            Checker::HoldCounts => "(f) hold counts agree",
            Checker::UnfencedOverlap => "unfenced resource overlap",
        })
    }
}

/// One broken rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Which rule.
    pub checker: Checker,
    /// When (simulation ms).
    pub at: u64,
    /// What, in words.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at {} ms: {}", self.checker, self.at, self.message)
    }
}

/// A span of ownership, half-open: `[from, to)` in simulation ms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interval {
    /// Which lock.
    pub lock: u32,
    /// Who (an owner string on the server, a client name on the client side).
    pub who: String,
    /// Start.
    pub from: u64,
    /// End.
    pub to: u64,
}

/// Everything the checkers read.
#[derive(Clone, Debug, Default)]
pub struct History {
    /// (a): closed server-side grant intervals.
    pub server_grants: Vec<Interval>,
    /// Times at which the server lost data (restart, failover).
    pub data_loss: Vec<u64>,
    /// (b): tokens granted by the server, per lock, in order: (time, owner, token).
    pub tokens: BTreeMap<u32, Vec<(u64, String, u64)>>,
    /// (b): writes to the fenced resource: (time, lock, client, token, accepted).
    pub fenced_writes: Vec<(u64, u32, String, u64, bool)>,
    /// (c): closed client-side intervals.
    pub client_intervals: Vec<Interval>,
    /// Unfenced resource overlaps: (time, lock, writer, other holder).
    pub unfenced_overlaps: Vec<(u64, u32, String, String)>,
    /// (d), (e), (f): violations found while running.
    pub online: Vec<Violation>,
}

fn overlapping(intervals: &[Interval]) -> Vec<(&Interval, &Interval)> {
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

impl History {
    /// Every violation of the run, ordered by checker and time.
    pub fn check(&self) -> Vec<Violation> {
        let mut out = self.online.clone();
        for (a, b) in overlapping(&self.server_grants) {
            let lost = self.data_loss.iter().any(|&t| t < a.to.max(b.to));
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
                    if lost {
                        " (the server lost data: a failover or restart without persistence \
                         dropped the first grant, the documented limit of a single Redis)"
                    } else {
                        ""
                    }
                ),
            });
        }
        for (lock, grants) in &self.tokens {
            let mut highest: Option<(u64, &str)> = None;
            for (at, owner, token) in grants {
                if let Some((max, _)) = highest
                    && *token <= max
                {
                    out.push(Violation {
                        checker: Checker::Fencing,
                        at: *at,
                        message: format!(
                            "L{lock}: {owner} was granted token {token}, not above {max}"
                        ),
                    });
                }
                highest = Some(highest.map_or((*token, owner), |(m, o)| {
                    if *token > m { (*token, owner) } else { (m, o) }
                }));
            }
        }
        let mut highest: BTreeMap<u32, u64> = BTreeMap::new();
        for (at, lock, client, token, accepted) in &self.fenced_writes {
            let max = highest.entry(*lock).or_default();
            if *accepted && *token < *max {
                out.push(Violation {
                    checker: Checker::Fencing,
                    at: *at,
                    message: format!(
                        "L{lock}: the fenced resource accepted {client}'s token {token} after {max}"
                    ),
                });
            }
            if *accepted {
                *max = (*max).max(*token);
            }
        }
        for (a, b) in overlapping(&self.client_intervals) {
            out.push(Violation {
                checker: Checker::ClientExclusive,
                at: b.from,
                message: format!(
                    "L{}: client {} believed it held the lock during [{}, {}) and client {} during [{}, {})",
                    a.lock, a.who, a.from, a.to, b.who, b.from, b.to
                ),
            });
        }
        for (at, lock, writer, other) in &self.unfenced_overlaps {
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
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let v = h.check();
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
        let v = h.check();
        assert_eq!(
            v.iter().filter(|v| v.checker == Checker::Fencing).count(),
            2,
            "{v:#?}"
        );
    }
}
