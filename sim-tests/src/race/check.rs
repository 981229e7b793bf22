//! The built-in invariants and the named situations, read off a run's [`History`].
//!
//! Who believes they hold what is worked out here from the lock's own hold events, the way the
//! simulator's checker (c) reads its clients: a hold is believed from its grant while its state
//! is valid and its `valid_until` is ahead.

use super::record::{History, What};
use super::schedule::{Fault, client_name};
use crate::checkers;
use crate::history::{self, Checker, Interval};
use lock_core::HoldState;
use std::collections::BTreeMap;
use std::fmt;

/// The invariants every race checks unless told not to ([`Race::without`](super::Race::without)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Builtin {
    /// No two clients believe they hold one lock at once (the simulator's checker (c)). A
    /// forward jump of the server's clock inside the first belief excuses an overlap: the lease
    /// ran out early on the server, which no client can see.
    OneBeliever,
    /// Fencing tokens only rise at the resource: it never takes one below or equal to another
    /// client's it took (the simulator's checker (b)).
    FencingRises,
    /// No write names a hold after that hold was reported lost or possibly lost: what
    /// [`LockGuard::run`](lock_core::LockGuard::run) promises (the work is dropped the moment the
    /// lease may be lost).
    NoWriteAfterLoss,
}

impl Builtin {
    /// Every built-in invariant.
    pub const ALL: [Builtin; 3] = [
        Builtin::OneBeliever,
        Builtin::FencingRises,
        Builtin::NoWriteAfterLoss,
    ];
}

impl fmt::Display for Builtin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Builtin::OneBeliever => "no two clients believe they hold one lock at once",
            Builtin::FencingRises => "fencing tokens only rise at the resource",
            Builtin::NoWriteAfterLoss => "no write under a hold after it was reported lost",
        })
    }
}

/// A situation a run may reach, counted so that a green run shows what it explored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Situation {
    /// A client's hold was reported lost or possibly lost while that client was paused: its
    /// renewals could not get through.
    RenewalLostInPause,
    /// A client was granted a lock while another client still had a hold of it that had not
    /// ended (granted, not released, not lost): the other's code still thinks it holds.
    GrantWhileOtherBelieved,
    /// The resource refused a fenced write.
    WriteRejectedByFencing,
    /// A failover lost the writes of a grant its owner had been told of.
    FailoverLostGrant,
}

impl Situation {
    /// Every situation.
    pub const ALL: [Situation; 4] = [
        Situation::RenewalLostInPause,
        Situation::GrantWhileOtherBelieved,
        Situation::WriteRejectedByFencing,
        Situation::FailoverLostGrant,
    ];
}

impl fmt::Display for Situation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Situation::RenewalLostInPause => "a renewal lost during a pause",
            Situation::GrantWhileOtherBelieved => {
                "an acquire granted while another client still believed it held"
            }
            Situation::WriteRejectedByFencing => "a write rejected by fencing",
            Situation::FailoverLostGrant => "a failover that lost a grant",
        })
    }
}

/// One broken invariant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Broken {
    /// The invariant's name.
    pub invariant: String,
    /// When it broke, virtual ms (the end of the run for an invariant over the whole history).
    pub at: u64,
    /// What, in words.
    pub message: String,
}

impl fmt::Display for Broken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (at {} ms): {}",
            self.invariant, self.at, self.message
        )
    }
}

/// A hold as its client believed it: `[from, to)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Belief {
    pub client: usize,
    pub lock: String,
    pub from: u64,
    pub to: u64,
}

/// When each client crashed, from the schedule.
fn crashes(faults: &[Fault]) -> BTreeMap<usize, u64> {
    let mut out = BTreeMap::new();
    for f in faults {
        if let Fault::Crash { client, at } = *f {
            let t = out.entry(client).or_insert(at);
            *t = (*t).min(at);
        }
    }
    out
}

/// Every believed span of every hold.
pub(crate) fn beliefs(h: &History, faults: &[Fault]) -> Vec<Belief> {
    struct Open {
        lock: String,
        from: Option<u64>,
        valid_until: u64,
        valid: bool,
    }
    let crashed = crashes(faults);
    let mut holds: BTreeMap<(usize, u64), Open> = BTreeMap::new();
    let mut out = Vec::new();
    let close = |out: &mut Vec<Belief>, c: usize, o: &mut Open, at: u64| {
        if let Some(from) = o.from.take() {
            let to = at
                .min(o.valid_until)
                .min(crashed.get(&c).copied().unwrap_or(u64::MAX));
            out.push(Belief {
                client: c,
                lock: o.lock.clone(),
                from,
                to: to.max(from),
            });
        }
    };
    for e in &h.entries {
        let Some(c) = e.client else { continue };
        let (lock, hold) = match &e.what {
            What::Granted { lock, hold, .. }
            | What::Renewed { lock, hold, .. }
            | What::ValidUntil { lock, hold, .. }
            | What::State { lock, hold, .. } => (lock, *hold),
            _ => continue,
        };
        let o = holds.entry((c, hold)).or_insert_with(|| Open {
            lock: lock.clone(),
            from: None,
            valid_until: 0,
            valid: false,
        });
        if o.from.is_some() && e.at >= o.valid_until {
            let vu = o.valid_until;
            close(&mut out, c, o, vu);
        }
        match &e.what {
            What::Granted { valid_until, .. } => {
                o.valid = true;
                o.valid_until = *valid_until;
            }
            What::Renewed { valid_until, .. } | What::ValidUntil { valid_until, .. } => {
                o.valid_until = *valid_until;
            }
            What::State { state, .. } if *state == HoldState::Valid => o.valid = true,
            What::State { .. } => {
                o.valid = false;
                close(&mut out, c, o, e.at);
            }
            _ => {}
        }
        if o.valid && o.from.is_none() && o.valid_until > e.at {
            o.from = Some(e.at);
        }
    }
    for ((c, _), mut o) in holds {
        close(&mut out, c, &mut o, u64::MAX);
    }
    out
}

/// The built-in invariants in `on`, over `h`.
pub(crate) fn builtins(h: &History, faults: &[Fault], on: &[Builtin]) -> Vec<Broken> {
    let mut out = Vec::new();
    if on.contains(&Builtin::OneBeliever) {
        one_believer(h, faults, &mut out);
    }
    if on.contains(&Builtin::FencingRises) {
        fencing(h, &mut out);
    }
    if on.contains(&Builtin::NoWriteAfterLoss) {
        no_write_after_loss(h, &mut out);
    }
    out
}

/// Lock names as the simulator's checkers number them.
fn lock_numbers<'a>(names: impl Iterator<Item = &'a str>) -> BTreeMap<&'a str, u32> {
    let mut out = BTreeMap::new();
    for name in names {
        let n = out.len() as u32;
        out.entry(name).or_insert(n);
    }
    out
}

fn one_believer(h: &History, faults: &[Fault], out: &mut Vec<Broken>) {
    let beliefs = beliefs(h, faults);
    let numbers = lock_numbers(beliefs.iter().map(|b| b.lock.as_str()));
    let intervals: Vec<Interval> = beliefs
        .iter()
        .map(|b| Interval {
            lock: numbers[b.lock.as_str()],
            who: client_name(b.client),
            from: b.from,
            to: b.to,
        })
        .collect();
    let name = |n: u32| {
        numbers
            .iter()
            .find(|(_, v)| **v == n)
            .map_or("?", |(k, _)| *k)
    };
    for (a, b) in checkers::overlapping(&intervals) {
        let jumped = faults.iter().any(
            |f| matches!(*f, Fault::ClockJump { at, by } if by > 0 && at >= a.from && at <= b.from),
        );
        if jumped {
            continue;
        }
        out.push(Broken {
            invariant: Builtin::OneBeliever.to_string(),
            at: b.from,
            message: format!(
                "{} believed it held {} over [{}, {}) ms and {} believed it held it from {} ms",
                a.who,
                name(a.lock),
                a.from,
                a.to,
                b.who,
                b.from
            ),
        });
    }
}

fn fencing(h: &History, out: &mut Vec<Broken>) {
    let numbers = lock_numbers(h.writes().map(|(_, _, w)| w.key.as_str()));
    let mut record = history::History::default();
    for (at, client, w) in h.writes() {
        if let Some(token) = w.token {
            record.fenced_writes.push((
                at,
                numbers[w.key.as_str()],
                client_name(client),
                token,
                w.accepted,
            ));
        }
    }
    for v in checkers::check(&record) {
        if v.checker == Checker::Fencing {
            out.push(Broken {
                invariant: Builtin::FencingRises.to_string(),
                at: v.at,
                message: v.message,
            });
        }
    }
}

fn no_write_after_loss(h: &History, out: &mut Vec<Broken>) {
    // (client, hold) -> the state that ended its validity, while it stays so.
    let mut reported: BTreeMap<(usize, u64), (HoldState, u64)> = BTreeMap::new();
    for e in &h.entries {
        let Some(c) = e.client else { continue };
        match &e.what {
            What::State { hold, state, .. } if *state == HoldState::Valid => {
                reported.remove(&(c, *hold));
            }
            What::State { hold, state, .. } => {
                reported.entry((c, *hold)).or_insert((*state, e.at));
            }
            What::Write(w) => {
                if let Some((lock, hold)) = &w.hold
                    && let Some((state, since)) = reported.get(&(c, *hold))
                    && w.accepted
                {
                    out.push(Broken {
                        invariant: Builtin::NoWriteAfterLoss.to_string(),
                        at: e.at,
                        message: format!(
                            "{} wrote {} = {} under its hold of {lock}, reported {state} at {since} ms",
                            client_name(c),
                            w.key,
                            w.value
                        ),
                    });
                }
            }
            _ => {}
        }
    }
}

/// Which situations the run reached.
pub(crate) fn situations(h: &History, faults: &[Fault]) -> Vec<Situation> {
    let mut out = Vec::new();
    let mut reach = |s: Situation| {
        if !out.contains(&s) {
            out.push(s);
        }
    };
    // Holds that have begun and not ended, per client: (lock, granted at).
    let mut live: BTreeMap<(usize, u64), (String, u64)> = BTreeMap::new();
    for e in &h.entries {
        let Some(c) = e.client else { continue };
        match &e.what {
            What::Granted {
                lock, hold, count, ..
            } => {
                if *count == 1
                    && live
                        .iter()
                        .any(|((other, _), (l, _))| *other != c && l == lock)
                {
                    reach(Situation::GrantWhileOtherBelieved);
                }
                live.entry((c, *hold)).or_insert((lock.clone(), e.at));
            }
            What::State { hold, state, .. } => {
                if *state != HoldState::Valid {
                    let paused = faults.iter().any(|f| {
                        matches!(*f, Fault::Pause { client, at, ms }
                            if client == c && e.at >= at && e.at <= at + ms)
                    });
                    if paused {
                        reach(Situation::RenewalLostInPause);
                    }
                }
                if state.is_ended() {
                    live.remove(&(c, *hold));
                }
            }
            What::Write(w) if w.token.is_some() && !w.accepted => {
                reach(Situation::WriteRejectedByFencing);
            }
            What::Fault(text) if text.starts_with("crashed") => {
                live.retain(|(client, _), _| *client != c);
            }
            _ => {}
        }
    }
    // A failover that lost the key of a lock a client had been granted and still held.
    for e in &h.entries {
        if let What::Fault(text) = &e.what
            && let Some(lost) = text
                .strip_prefix("failover")
                .and_then(|t| t.split(": lost ").nth(1))
        {
            let keys: Vec<&str> = lost.split(' ').collect();
            if grants_alive_at(h, e.at).any(|lock| keys.contains(&lock.as_str())) {
                reach(Situation::FailoverLostGrant);
            }
        }
    }
    out.sort();
    out
}

/// The locks of the holds that had been granted and had not ended by `t`.
fn grants_alive_at(h: &History, t: u64) -> impl Iterator<Item = String> {
    let mut live: BTreeMap<(usize, u64), String> = BTreeMap::new();
    for e in h.entries.iter().take_while(|e| e.at <= t) {
        let Some(c) = e.client else { continue };
        match &e.what {
            What::Granted { hold, lock, .. } => {
                live.entry((c, *hold)).or_insert_with(|| lock.clone());
            }
            What::State { hold, state, .. } if state.is_ended() => {
                live.remove(&(c, *hold));
            }
            _ => {}
        }
    }
    live.into_values()
}
