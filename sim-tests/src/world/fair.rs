//! The fair locks of a case: their clients' requests, and what checker (g) reads of their queues.
//!
//! A client of a fair lock sends Redisson's fair acquire through the same machine as a plain
//! client, with its clock in unix ms (the world's epoch plus the client's own clock, so drift
//! reaches the queue's deadlines as it would on a host). The queue is read back from the server
//! after every call that touches the lock, as the lock's hash is: each place keeps the moment its
//! owner joined, until the owner leaves the queue. At a grant, checker (g) compares the grantee
//! with the places as they were just before the granting call, and with which clients still wait
//! on the acquire that owns each place, which only the world knows.

use super::{EPOCH_MS, QueueSnapshot, World};
use crate::checkers::{self, FairPlace};
use crate::server::SimServer;
use bytes::Bytes;
use lock_core::machine::{AcquireRequest, Call, Request};
use lock_core::script::fair;

/// One place in a fair lock's queue, as last read from the server.
#[derive(Clone, Debug)]
pub(super) struct Place {
    owner: Bytes,
    arrived: u64,
    rank: u64,
    deadline: Option<i64>,
}

/// A fair lock's queue as the world last read it, in queue order.
#[derive(Debug, Default)]
pub(super) struct FairQueue {
    places: Vec<Place>,
}

/// A fair acquire about to reach the server: its lock, its owner and whether the owner held the
/// lock just before (a re-entry, not a grant), and the clock it carries.
pub(super) struct FairAttempt {
    lock: u32,
    owner: Bytes,
    held: bool,
    clock: i64,
}

impl<S: SimServer> World<S> {
    /// The request for `acquire` by `client`: a fair acquire on a fair lock, a read or write
    /// acquire on a read-write lock, else a plain one.
    pub(super) fn acquire_on_its_lock(&self, client: usize, acquire: AcquireRequest) -> Request {
        let lock = self.case.clients[client].lock;
        if self.case.is_rw(lock) {
            return self.read_write_request(client, acquire);
        }
        if !self.case.is_fair(lock) {
            return Request::Acquire(acquire);
        }
        let clock = self.client_time(client, self.now).0;
        Request::FairAcquire {
            acquire,
            wall_ms: EPOCH_MS.saturating_add(i64::try_from(clock).unwrap_or(i64::MAX)),
        }
    }

    /// Remembers which owner's place `client` waits for, when `call` is the first attempt of its
    /// cycle's acquire.
    pub(super) fn fair_call_sent(&mut self, client: usize, call: &Call) {
        if let Call::Script(s) = call
            && s.script.name == fair::acquire::SCRIPT.name
            && matches!(self.clients[client].phase, super::Phase::Acquiring(_))
        {
            self.clients[client].waiting_as = s.args.get(1).cloned();
        }
    }

    /// What checker (g) needs of `call` before the server applies it, if it is a fair acquire.
    pub(super) fn fair_attempt(&mut self, call: &Call) -> Option<FairAttempt> {
        let Call::Script(s) = call else { return None };
        if s.script.name != fair::acquire::SCRIPT.name {
            return None;
        }
        let lock = *self.lock_index.get(s.keys.first()?)?;
        let owner = s.args.get(1)?.clone();
        let clock = std::str::from_utf8(s.args.get(3)?).ok()?.parse().ok()?;
        let now = self.server_clock();
        let held = self
            .server
            .lock_state(&s.keys[0], now)
            .is_some_and(|state| state.owners.iter().any(|(o, _)| *o == owner));
        Some(FairAttempt {
            lock,
            owner,
            held,
            clock,
        })
    }

    /// Checker (g) after the server answered `attempt` with `granted`, before the queue is read
    /// again.
    pub(super) fn check_fair_grant(&mut self, attempt: FairAttempt, granted: bool) {
        if !granted || attempt.held {
            return;
        }
        let Some(queue) = self.fair_queues.get(&attempt.lock) else {
            return;
        };
        let places: Vec<FairPlace> = queue
            .places
            .iter()
            .map(|p| FairPlace {
                owner: String::from_utf8_lossy(&p.owner).into_owned(),
                arrived: p.arrived,
                rank: p.rank,
                deadline: p.deadline,
                waiting: self
                    .clients
                    .iter()
                    .any(|c| !c.crashed && c.waiting_as.as_ref() == Some(&p.owner)),
            })
            .collect();
        let rank = queue
            .places
            .iter()
            .find(|p| p.owner == attempt.owner)
            .map(|p| p.rank);
        let granted = String::from_utf8_lossy(&attempt.owner);
        let found = checkers::fair_grant(
            self.now,
            attempt.lock,
            &granted,
            rank,
            attempt.clock,
            &places,
        );
        self.history.online.extend(found);
    }

    /// Reads fair lock `lock`'s queue again: owners still queued keep their arrival, new ones
    /// arrive now, in queue order. A place found behind one that arrived after it has been purged
    /// and joined again at the tail (its owner's own poll purges a stale place and queues it anew
    /// in one call), so it arrives now too.
    pub(super) fn observe_queue(&mut self, lock: u32) {
        let Some(keys) = self.fair_keys.get(&lock) else {
            return;
        };
        let (queue_key, timeouts_key) = (keys.queue.clone(), keys.timeouts.clone());
        let now = self.server_clock();
        let read = self.server.fair_queue(&queue_key, &timeouts_key, now);
        let old = self.fair_queues.remove(&lock).unwrap_or_default();
        let mut places: Vec<Place> = Vec::with_capacity(read.len());
        for (owner, deadline) in read {
            let latest = places.last().map_or(0, |p| p.rank);
            let kept = old
                .places
                .iter()
                .find(|p| p.owner == owner && p.rank > latest);
            let place = match kept {
                Some(p) => Place {
                    deadline,
                    ..p.clone()
                },
                None => {
                    self.fair_arrivals += 1;
                    Place {
                        owner,
                        arrived: self.now,
                        rank: self.fair_arrivals,
                        deadline,
                    }
                }
            };
            places.push(place);
        }
        if self.tracing {
            let owners: Vec<String> = places
                .iter()
                .map(|p| String::from_utf8_lossy(&p.owner).into_owned())
                .collect();
            let last = self.queues.iter().rev().find(|q| q.lock == lock);
            let changed = last.map_or(!owners.is_empty(), |q| q.owners != owners);
            if changed {
                self.queues.push(QueueSnapshot {
                    at: self.now,
                    lock,
                    owners,
                });
            }
        }
        self.fair_queues.insert(lock, FairQueue { places });
    }
}
