//! What a run records: every hold event of every client's lock, every read and write of the
//! shared resource, every fault as it strikes, and each client's notes and result, in the order
//! they happened. [`History`] is the finished record the invariants read; [`Store`] is the
//! resource model the clients write to.

use lock_core::machine::LockEvent;
use lock_core::{HoldEvent, HoldState, LockGuard};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use tokio::time::Instant;

/// One thing that happened in a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Virtual ms since the run began.
    pub at: u64,
    /// The client it happened to or was done by, if one (an index: `a` is 0).
    pub client: Option<usize>,
    /// What.
    pub what: What,
}

/// The kinds of [`Entry`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum What {
    /// The client's lock granted (or re-entered) a hold.
    Granted {
        /// The lock's name.
        lock: String,
        /// The hold (unique within its client).
        hold: u64,
        /// The hold's count after the grant.
        count: u32,
        /// The hold's `valid_until`, virtual ms.
        valid_until: u64,
    },
    /// The watchdog confirmed a renewal.
    Renewed {
        /// The lock's name.
        lock: String,
        /// The hold.
        hold: u64,
        /// The new `valid_until`.
        valid_until: u64,
    },
    /// `valid_until` moved for another reason.
    ValidUntil {
        /// The lock's name.
        lock: String,
        /// The hold.
        hold: u64,
        /// The new `valid_until`.
        valid_until: u64,
    },
    /// The hold's state changed, as its guard reports it.
    State {
        /// The lock's name.
        lock: String,
        /// The hold.
        hold: u64,
        /// The new state.
        state: HoldState,
        /// The `valid_until` at the change.
        valid_until: u64,
    },
    /// A read of the resource.
    Read {
        /// The key.
        key: String,
        /// The value read (0 for a key never written).
        value: i64,
    },
    /// A write to the resource.
    Write(Write),
    /// A fault struck (or ended: a pause's end).
    Fault(String),
    /// The client's own words ([`Ctx::note`](super::Ctx::note)).
    Note(String),
    /// The client's code returned this (its `Debug` form).
    Done(String),
}

/// One write to the resource.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Write {
    /// The key.
    pub key: String,
    /// The value written.
    pub value: i64,
    /// The value the key had before this write was applied (or refused).
    pub before: i64,
    /// The hold the writer named (lock name, hold), if it wrote under one.
    pub hold: Option<(String, u64)>,
    /// The fencing token it carried, if it was a fenced write.
    pub token: Option<u64>,
    /// Whether the resource took it (an unfenced write always is).
    pub accepted: bool,
}

/// The record of a run as it is written: shared by the clients' observers and stores.
#[derive(Debug)]
pub(crate) struct Log {
    origin: Instant,
    pub(crate) entries: Vec<Entry>,
    values: BTreeMap<String, i64>,
    /// Per key, the highest token a fenced write carried that the resource accepted.
    fences: BTreeMap<String, u64>,
}

/// A handle on a run's [`Log`].
pub(crate) type SharedLog = Arc<Mutex<Log>>;

impl Log {
    pub(crate) fn new(origin: Instant) -> SharedLog {
        Arc::new(Mutex::new(Log {
            origin,
            entries: Vec::new(),
            values: BTreeMap::new(),
            fences: BTreeMap::new(),
        }))
    }

    pub(crate) fn ms(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.origin).as_millis() as u64
    }

    pub(crate) fn now(&self) -> u64 {
        self.ms(Instant::now())
    }

    pub(crate) fn push(&mut self, at: u64, client: Option<usize>, what: What) {
        self.entries.push(Entry { at, client, what });
    }

    /// Records a hold event of `client`'s lock.
    pub(crate) fn hold_event(&mut self, client: usize, e: HoldEvent) {
        let at = self.ms(e.at);
        let vu = e.valid_until.map(|t| self.ms(t)).unwrap_or(at);
        let what = match e.event {
            LockEvent::Acquired { hold, count, .. } => What::Granted {
                lock: hold.name.to_string(),
                hold: hold.id.0,
                count,
                valid_until: vu,
            },
            LockEvent::Renewed { hold, .. } => What::Renewed {
                lock: hold.name.to_string(),
                hold: hold.id.0,
                valid_until: vu,
            },
            LockEvent::ValidUntilChanged { hold, .. } => What::ValidUntil {
                lock: hold.name.to_string(),
                hold: hold.id.0,
                valid_until: vu,
            },
            LockEvent::StateChanged { hold, state, .. } => What::State {
                lock: hold.name.to_string(),
                hold: hold.id.0,
                state,
                valid_until: vu,
            },
            LockEvent::MaxHoldReached { hold, .. } => {
                What::Note(format!("{}: max_hold reached", hold.name))
            }
        };
        self.push(at, Some(client), what);
    }
}

/// The shared resource model: integer values by key, recording every read and write, and
/// refusing a fenced write whose token is below the highest the key has accepted (a database
/// row with a `fence` column, a storage service that checks tokens).
///
/// Each client's [`Ctx`](super::Ctx) has its own handle, which signs its writes.
#[derive(Clone, Debug)]
pub struct Store {
    client: usize,
    log: SharedLog,
}

/// A fenced write the resource refused: its token is below one it accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the resource refused token {token}: it accepted {highest} already")]
pub struct Stale {
    /// The token refused.
    pub token: u64,
    /// The highest accepted before.
    pub highest: u64,
}

impl Store {
    pub(crate) fn new(client: usize, log: SharedLog) -> Store {
        Store { client, log }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The value at `key` (0 if never written).
    pub fn read(&self, key: &str) -> i64 {
        let mut log = self.lock();
        let value = log.values.get(key).copied().unwrap_or(0);
        let at = log.now();
        log.push(
            at,
            Some(self.client),
            What::Read {
                key: key.to_owned(),
                value,
            },
        );
        value
    }

    fn put(
        &self,
        key: &str,
        value: i64,
        guard: Option<&LockGuard>,
        fenced: bool,
    ) -> Result<(), Stale> {
        let mut log = self.lock();
        let before = log.values.get(key).copied().unwrap_or(0);
        let token = if fenced {
            guard.and_then(LockGuard::token)
        } else {
            None
        };
        let refused = match (fenced, token, log.fences.get(key)) {
            (true, Some(t), Some(&highest)) if t < highest => Some(Stale { token: t, highest }),
            _ => None,
        };
        if refused.is_none() {
            log.values.insert(key.to_owned(), value);
            if let Some(t) = token {
                let highest = log.fences.entry(key.to_owned()).or_insert(t);
                *highest = (*highest).max(t);
            }
        }
        let at = log.now();
        let write = Write {
            key: key.to_owned(),
            value,
            before,
            hold: guard.map(|g| (g.name().to_owned(), g.hold_id().0)),
            token,
            accepted: refused.is_none(),
        };
        log.push(at, Some(self.client), What::Write(write));
        refused.map_or(Ok(()), Err)
    }

    /// Writes `value` at `key`, under no lock the harness knows of (a lock of the client's own).
    pub fn write(&self, key: &str, value: i64) {
        let _ = self.put(key, value, None, false);
    }

    /// Writes `value` at `key` under `guard`'s hold, without a fencing token: the resource takes
    /// it whatever happened to the hold, and the harness can tell whether the hold had been
    /// reported lost.
    pub fn write_holding(&self, guard: &LockGuard, key: &str, value: i64) {
        let _ = self.put(key, value, Some(guard), false);
    }

    /// Writes `value` at `key` with `guard`'s fencing token (take the lock with
    /// [`Acquire::fenced`](lock_core::Acquire::fenced)): refused when the key has accepted a
    /// higher token. A guard without a token writes unfenced.
    pub fn write_fenced(&self, guard: &LockGuard, key: &str, value: i64) -> Result<(), Stale> {
        self.put(key, value, Some(guard), true)
    }
}

/// The finished record of a run, in the order things happened: what invariants read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct History {
    /// Every entry.
    pub entries: Vec<Entry>,
    /// How many clients ran.
    pub clients: usize,
}

impl History {
    /// Every write, with its time and writer.
    pub fn writes(&self) -> impl Iterator<Item = (u64, usize, &Write)> {
        self.entries
            .iter()
            .filter_map(|e| match (&e.what, e.client) {
                (What::Write(w), Some(c)) => Some((e.at, c, w)),
                _ => None,
            })
    }

    /// The writes of `key` the resource took, in order.
    pub fn accepted_writes<'a>(
        &'a self,
        key: &'a str,
    ) -> impl Iterator<Item = (u64, usize, &'a Write)> + 'a {
        self.writes()
            .filter(move |(_, _, w)| w.accepted && w.key == key)
    }

    /// The first accepted write of `key` that did not build on the one before it: a write of
    /// `before + 1` made from a stale read shows up as a value that is not one above the value
    /// it replaced. `None` when every accepted write of `key` added exactly one.
    pub fn lost_increment(&self, key: &str) -> Option<(u64, usize, &Write)> {
        self.writes()
            .find(|(_, _, w)| w.accepted && w.key == key && w.value != w.before + 1)
    }
}

impl fmt::Display for What {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            What::Granted {
                lock,
                hold,
                count,
                valid_until,
            } => write!(
                f,
                "granted {lock} hold={hold} count={count} valid_until={valid_until}"
            ),
            What::Renewed {
                lock,
                hold,
                valid_until,
            } => write!(f, "renewed {lock} hold={hold} valid_until={valid_until}"),
            What::ValidUntil {
                lock,
                hold,
                valid_until,
            } => write!(f, "valid_until of {lock} hold={hold} now {valid_until}"),
            What::State {
                lock,
                hold,
                state,
                valid_until,
            } => write!(
                f,
                "{lock} hold={hold} is {state} (valid_until {valid_until})"
            ),
            What::Read { key, value } => write!(f, "read {key} = {value}"),
            What::Write(w) => {
                write!(f, "write {} = {} (was {})", w.key, w.value, w.before)?;
                if let Some(t) = w.token {
                    write!(f, " token={t}")?;
                }
                if !w.accepted {
                    f.write_str(" REFUSED")?;
                }
                Ok(())
            }
            What::Fault(s) => write!(f, "fault: {s}"),
            What::Note(s) => write!(f, "note: {s}"),
            What::Done(s) => write!(f, "returned {s}"),
        }
    }
}
