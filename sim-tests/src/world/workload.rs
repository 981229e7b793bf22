//! What each client does with its lock: the workload of a case, and the resources it writes to.
//!
//! A cycle is: acquire (wait, lease or try, as the client's spec says), write, re-enter once if
//! the spec asks, work half the cycle's work time, write, give back the inner hold, work the other
//! half, write, unlock; then think and start again, until the spec's cycles are done. Each write
//! goes to two resources per lock: an unfenced one, which accepts anything and only records
//! critical sections that overlap, and a fenced one, which refuses a token below the highest it
//! has accepted. The work time of each cycle is drawn from (seed, stream, client, cycle). On a
//! read-write lock a reader's accesses are reads: they overlap only a writer's section, and a
//! downgrading writer's cycle is the one `read_write` describes.

use super::read_write::Belief;
use super::{Ev, World, stream};
use crate::case::AcquireKind;
use crate::server::SimServer;
use fake_redis::seed::Seed;
use lock_core::machine::{
    AcquireRequest, Acquired, Done, HoldId, Input, LockError, OpId, OwnerId, Request, RwSide,
    UnlockOutcome, Wait,
};
use lock_core::{Lease, Millis, Owner};

/// Where a client's workload is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    NotStarted,
    Acquiring(OpId),
    Reentering(OpId),
    /// Holding; `writes` of the three (start, middle, end) done.
    Working {
        writes: u8,
    },
    ReleasingInner(OpId),
    Releasing(OpId),
    Thinking,
    Finished,
}

/// The hold a client's current cycle works under, and what the observers track of it.
pub(super) struct Holding {
    pub(super) hold: HoldId,
    pub(super) owner: OwnerId,
    /// The owner's name on the server (`<client id>:<owner id>`), as the grant gave it: the
    /// observers read the owner's count under it at every write.
    pub(super) owner_name: Owner,
    pub(super) token: Option<u64>,
    /// The hold the nested re-entry of this cycle was granted, which it must release: the same
    /// hold, or a new one if the outer hold had been lost meanwhile.
    pub(super) reentered: Option<HoldId>,
    /// Whether a call on this hold ended with its outcome unknown, or its `valid_until` passed:
    /// the server's count may differ from the client's for the rest of the hold, so (f) no longer
    /// applies to it.
    pub(super) uncertain: bool,
    pub(super) work: u64,
    /// The client-side interval being built: start and believed end (simulation ms).
    pub(super) believed_from: u64,
    pub(super) believed_until: u64,
    /// On a read-write lock, which hold `hold` is.
    pub(super) side: Option<RwSide>,
    /// A downgrading writer's read hold while it still holds the write, with what it believes
    /// of it.
    pub(super) downgrade: Option<Belief>,
}

impl<S: SimServer> World<S> {
    /// Starts an operation: the client waits in `phase` for its outcome, and its machine is
    /// handed the request.
    fn start_op(&mut self, client: usize, phase: fn(OpId) -> Phase, request: Request) {
        let c = &mut self.clients[client];
        c.next_op += 1;
        let op = OpId(c.next_op);
        c.phase = phase(op);
        self.feed(client, Input::Request { op, request });
    }

    fn acquire_request(&self, client: usize, owner: Option<OwnerId>) -> AcquireRequest {
        let spec = &self.case.clients[client];
        let (lease, wait) = match spec.acquire {
            AcquireKind::Watchdog => (None, Wait::Forever),
            AcquireKind::Lease(ms) => (Some(ms), Wait::Forever),
            AcquireKind::Try { wait, lease } => (lease, Wait::Budget(Millis(wait))),
        };
        AcquireRequest {
            name: self.shared_name(spec.lock),
            owner,
            lease: lease.map(|ms| Lease::from_millis(ms.max(1)).expect("lease ≥ 1 ms")),
            // A re-entry does not wait: if the owner no longer holds the lock (its lease ran out),
            // it is told at once.
            wait: if owner.is_some() {
                Wait::Budget(Millis::ZERO)
            } else {
                wait
            },
            // A fair lock and a read-write lock draw no token.
            fenced: spec.fenced && !self.case.is_fair(spec.lock) && !self.case.is_rw(spec.lock),
        }
    }

    /// The workload: acquire, write (start), re-enter, work, write (middle), release inner
    /// holds, work, write (end), release.
    pub(super) fn step(&mut self, client: usize) {
        let phase = self.clients[client].phase;
        match phase {
            Phase::NotStarted | Phase::Thinking => {
                let request = self.acquire_request(client, None);
                let name = self.name(client);
                self.mark(&name, "wait", || request.name.to_string());
                let request = self.acquire_on_its_lock(client, request);
                self.start_op(client, Phase::Acquiring, request);
            }
            Phase::Working { writes } => {
                self.write(client);
                let writes = writes + 1;
                let reentered = self.clients[client]
                    .holding
                    .as_ref()
                    .is_some_and(|h| h.reentered.is_some());
                if writes == 2 && reentered {
                    self.release_inner(client);
                } else if writes == 3 {
                    self.release(client);
                } else {
                    self.work_half(client, writes);
                }
            }
            _ => {}
        }
    }

    /// Works on for half of this cycle's work time with `writes` of the three writes done, then
    /// takes the next step.
    fn work_half(&mut self, client: usize, writes: u8) {
        self.clients[client].phase = Phase::Working { writes };
        let half = self.clients[client]
            .holding
            .as_ref()
            .map_or(0, |h| h.work / 2);
        self.schedule(self.now + half, Ev::Step { client });
    }

    fn release_inner(&mut self, client: usize) {
        if self.downgrades(client) {
            self.downgrade(client);
            return;
        }
        let Some(h) = self.clients[client].holding.as_ref() else {
            return;
        };
        let (hold, owner) = (h.reentered.unwrap_or(h.hold), h.owner);
        let name = self.shared_name(self.case.clients[client].lock);
        let who = self.name(client);
        self.mark(&who, "unlock", || format!("{name} (the inner hold)"));
        self.start_op(
            client,
            Phase::ReleasingInner,
            Request::Release { hold, name, owner },
        );
    }

    /// A downgrading writer gives back its write and works on under the read hold it took: what
    /// it believed of the write ends now, and its read hold becomes the cycle's.
    fn downgrade(&mut self, client: usize) {
        let Some(h) = self.clients[client].holding.as_ref() else {
            return;
        };
        let (hold, owner) = (h.hold, h.owner);
        let lock = self.case.clients[client].lock;
        let name = self.shared_name(lock);
        let field = self.hold_field(client, h.owner_name.clone());
        let key = self.lock_key(lock);
        self.clients[client]
            .unlocked
            .unlock_sent(key, field.as_bytes().clone());
        self.close_belief(client);
        if let Some(h) = self.clients[client].holding.as_mut()
            && let Some(read) = h.downgrade.take()
        {
            h.hold = read.hold;
            h.side = Some(RwSide::Read);
            h.reentered = None;
            h.believed_from = read.from;
            h.believed_until = read.until;
        }
        let who = self.name(client);
        self.mark(&who, "unlock", || {
            format!("{name} (the write hold: downgraded to its read hold)")
        });
        self.start_op(
            client,
            Phase::ReleasingInner,
            Request::Release { hold, name, owner },
        );
    }

    fn release(&mut self, client: usize) {
        let Some(h) = self.clients[client].holding.as_ref() else {
            return;
        };
        let (hold, owner) = (h.hold, h.owner);
        let lock = self.case.clients[client].lock;
        let name = self.shared_name(lock);
        let field = self.hold_field(client, h.owner_name.clone());
        let key = self.lock_key(lock);
        self.clients[client]
            .unlocked
            .unlock_sent(key, field.as_bytes().clone());
        self.close_belief(client);
        self.close_section(client);
        let who = self.name(client);
        self.mark(&who, "unlock", || name.to_string());
        self.start_op(
            client,
            Phase::Releasing,
            Request::Release { hold, name, owner },
        );
    }

    pub(super) fn close_section(&mut self, client: usize) {
        let lock = self.case.clients[client].lock;
        if let Some(s) = self.sections.get_mut(&lock) {
            s.remove(&client);
        }
    }

    fn write(&mut self, client: usize) {
        let spec = &self.case.clients[client];
        let lock = spec.lock;
        let fenced = spec.fenced;
        let name = self.name(client);
        // A reader's access conflicts only with a writer's section.
        let writes = self.is_writer(client);
        let others: Vec<usize> = self
            .sections
            .get(&lock)
            .map(|s| {
                s.iter()
                    .copied()
                    .filter(|&c| c != client && (writes || self.is_writer(c)))
                    .collect()
            })
            .unwrap_or_default();
        for other in others {
            let other = self.name(other).to_string();
            self.history
                .unfenced_overlaps
                .push((self.now, lock, name.to_string(), other));
        }
        if writes {
            self.mark(&name, "write", || format!("unfenced L{lock}"));
        } else {
            self.mark(&name, "read", || format!("unfenced L{lock}"));
        }
        self.check_quiescent_counts(client);
        let token = self.clients[client].holding.as_ref().and_then(|h| h.token);
        if let (true, Some(token)) = (fenced, token) {
            let max = self.fenced_max.entry(lock).or_default();
            let accepted = token >= *max;
            if accepted {
                *max = token;
            }
            self.history
                .fenced_writes
                .push((self.now, lock, name.to_string(), token, accepted));
            let what = if accepted {
                "write-accepted"
            } else {
                "write-rejected"
            };
            self.mark(&name, what, || format!("fenced L{lock} token={token}"));
        }
    }

    pub(super) fn done(&mut self, client: usize, op: OpId, result: Result<Done, LockError>) {
        let name = self.name(client);
        // The lock's name is spelled out only in the marks, and only when they are written.
        let lock = LockName(self.case.clients[client].lock);
        let phase = self.clients[client].phase;
        if phase == Phase::Acquiring(op) {
            self.clients[client].waiting_as = None;
        }
        match (phase, result) {
            (Phase::Acquiring(p), Ok(Done::Acquired(a))) if p == op => self.begin_hold(client, a),
            (Phase::Reentering(p), result) if p == op => {
                if let Ok(Done::Acquired(a)) = &result {
                    if let Some(h) = self.clients[client].holding.as_mut() {
                        h.token = a.token.or(h.token);
                        h.reentered = Some(a.hold);
                    }
                    if self.downgrades(client) {
                        self.begin_downgrade(client, a);
                    }
                } else {
                    self.note(&name, || format!("re-entry failed: {result:?}"));
                    self.doubt_hold(client);
                }
                self.work_half(client, 1);
            }
            (Phase::ReleasingInner(p), result) if p == op => {
                match &result {
                    Ok(Done::Unlocked(outcome @ UnlockOutcome::StillHeld)) => {
                        self.mark(&name, "released", || released(&lock, outcome, None));
                    }
                    Ok(Done::Unlocked(UnlockOutcome::Released)) if self.downgrades(client) => {
                        self.mark(&name, "released", || {
                            format!("{lock}: its write hold is given back, its read hold kept")
                        });
                    }
                    Ok(other) => self.note(&name, || format!("inner release: {other:?}")),
                    Err(e) => self.mark(&name, "unlock-failed", || e.to_string()),
                }
                if result.is_err() {
                    self.doubt_hold(client);
                }
                self.work_half(client, 2);
            }
            (Phase::Acquiring(p), result) if p == op => {
                self.mark(&name, "not-acquired", || match &result {
                    Ok(_) => format!("{lock}: the wait budget ran out"),
                    Err(e) => e.to_string(),
                });
                self.next_cycle(client);
            }
            (Phase::Releasing(p), result) if p == op => {
                match &result {
                    Ok(Done::Unlocked(outcome)) => {
                        let side = self.clients[client].holding.as_ref().and_then(|h| h.side);
                        self.mark(&name, "released", || released(&lock, outcome, side));
                        // A definite outcome: the owner's count is settled on both sides.
                        self.check_quiescent_counts(client);
                    }
                    Err(e) => self.mark(&name, "unlock-failed", || e.to_string()),
                    Ok(other) => self.mark(&name, "unlock-failed", || format!("{other:?}")),
                }
                self.clients[client].holding = None;
                self.next_cycle(client);
            }
            (_, result) => self.note(&name, || format!("op {} done: {result:?}", op.0)),
        }
    }

    /// The lock is granted: the hold starts, the first write is made, and the client re-enters
    /// or goes to work.
    fn begin_hold(&mut self, client: usize, a: Acquired) {
        let name = self.name(client);
        let spec = &self.case.clients[client];
        let (lock, work_range, reentry) = (spec.lock, spec.work, spec.reentry);
        self.clients[client].work_seq += 1;
        let work = Seed(self.case.seed).blend_range(
            stream::WORK,
            client as u64,
            self.clients[client].work_seq,
            work_range.0,
            work_range.1,
        );
        let until = self.sim_time(client, a.valid_until);
        self.clients[client].holding = Some(Holding {
            hold: a.hold,
            owner: a.owner,
            owner_name: a.owner_name.clone(),
            token: a.token,
            reentered: None,
            // Granted by a reply that came after its lease could have run out.
            uncertain: until <= self.now,
            work,
            believed_from: self.now,
            believed_until: until,
            side: self.first_side(client),
            downgrade: None,
        });
        self.sections.entry(lock).or_default().insert(client);
        self.note(&name, || {
            format!("holds L{lock} token={:?} work={work}", a.token)
        });
        self.write(client);
        if reentry > 0 || self.downgrades(client) {
            let request = self.acquire_request(client, Some(a.owner));
            let request = self.acquire_on_its_lock(client, request);
            self.start_op(client, Phase::Reentering, request);
        } else {
            self.work_half(client, 1);
        }
    }

    fn next_cycle(&mut self, client: usize) {
        let spec = &self.case.clients[client];
        let (cycles, think) = (spec.cycles, spec.think);
        let c = &mut self.clients[client];
        c.cycles_done += 1;
        if cycles != 0 && c.cycles_done >= cycles {
            c.phase = Phase::Finished;
            return;
        }
        c.phase = Phase::Thinking;
        // At least 50 ms between cycles, so a client whose try_lock keeps failing does not spin.
        self.schedule(self.now + think.max(50), Ev::Step { client });
    }
}

/// What an unlock of `lock` did, as the `released` mark says it. On a read-write lock (`side`
/// is the hold's) the last count of a hold says nothing of the key, which other readers may
/// still hold.
fn released(lock: &LockName, outcome: &UnlockOutcome, side: Option<RwSide>) -> String {
    match (outcome, side) {
        (UnlockOutcome::Released, None) => {
            format!("{lock}: the key is deleted and waiters are told")
        }
        (UnlockOutcome::Released, Some(RwSide::Read)) => {
            format!("{lock}: its read hold is given back")
        }
        (UnlockOutcome::Released, Some(RwSide::Write)) => {
            format!("{lock}: its write hold is given back")
        }
        (UnlockOutcome::StillHeld, _) => format!("{lock}: one hold given back, still held"),
    }
}

/// A lock's number, written as its name ([`lock_name`](super::lock_name)) only when a mark
/// formats it.
struct LockName(u32);

impl std::fmt::Display for LockName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "L{}", self.0)
    }
}
