//! The read-write locks of a case: their clients' requests, the downgrade, and which of a
//! client's holds each of the machine's events speaks of.
//!
//! A client of a read-write lock sends Redisson's read or write acquire through the same machine
//! as a plain client, as its role says, and releases its holds with the same request. A reader
//! re-enters with one more read count and a writer with one more write count. A downgrading
//! writer takes a read hold in place of the re-entry, gives back its write halfway through the
//! work, and does the second half as a reader: while it holds both, the world tracks what it
//! believes of each apart, since checker (h) treats them apart (a client's own read and write
//! holds never conflict, but its write must not outlive its write's `valid_until`).

use super::World;
use crate::case::RwRole;
use crate::history::{Interval, RwInterval};
use crate::server::SimServer;
use lock_core::Owner;
use lock_core::machine::{AcquireRequest, Acquired, HoldId, Request, RwSide};

/// What a client believes of one hold: from when, until when (simulation ms).
#[derive(Clone, Debug)]
pub(super) struct Belief {
    pub(super) hold: HoldId,
    pub(super) from: u64,
    pub(super) until: u64,
}

/// Which of a client's beliefs an event of the machine about a hold speaks of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Which {
    /// The hold the client's cycle works under (every event, on any lock but a read-write one).
    Current,
    /// A downgrading writer's read hold, while it still holds the write.
    Downgrade,
    /// Neither: a hold the cycle gave back (the write of a downgrade), or an earlier cycle's.
    Neither,
}

impl<S: SimServer> World<S> {
    /// The role of `client` on its lock, if that is a read-write lock.
    pub(super) fn rw_role(&self, client: usize) -> Option<RwRole> {
        let spec = &self.case.clients[client];
        self.case.is_rw(spec.lock).then_some(spec.role)
    }

    /// Whether `client` downgrades: a writer that takes a read hold in place of its re-entry.
    pub(super) fn downgrades(&self, client: usize) -> bool {
        self.rw_role(client) == Some(RwRole::Downgrade)
    }

    /// The side of the hold a cycle of `client` starts with, on a read-write lock.
    pub(super) fn first_side(&self, client: usize) -> Option<RwSide> {
        self.rw_role(client).map(|role| match role {
            RwRole::Read => RwSide::Read,
            RwRole::Write | RwRole::Downgrade => RwSide::Write,
        })
    }

    /// Whether `client` writes under its current hold: on any lock but a read-write one it does;
    /// on one, while its hold is the write.
    pub(super) fn is_writer(&self, client: usize) -> bool {
        match self.first_side(client) {
            None => true,
            Some(_) => self.clients[client]
                .holding
                .as_ref()
                .is_some_and(|h| h.side == Some(RwSide::Write)),
        }
    }

    /// The request for `acquire` on read-write lock: the first side of the cycle, or for a
    /// re-entry (an acquire by the cycle's owner) the same side, except that a downgrading writer
    /// takes a read hold.
    pub(super) fn read_write_request(&self, client: usize, acquire: AcquireRequest) -> Request {
        let first = self.first_side(client).unwrap_or(RwSide::Write);
        let side = if acquire.owner.is_some() && self.downgrades(client) {
            RwSide::Read
        } else {
            first
        };
        Request::ReadWriteAcquire { acquire, side }
    }

    /// The hash field of `owner`'s current hold: the owner itself for a read hold, and
    /// `<owner>:write` for a write hold (or a plain lock's hold, which is the owner).
    pub(super) fn hold_field(&self, client: usize, owner: Owner) -> Owner {
        let side = self.clients[client].holding.as_ref().and_then(|h| h.side);
        match side {
            Some(RwSide::Write) => owner.writer(),
            _ => owner,
        }
    }

    /// Which belief of `client` an event about `hold` speaks of.
    pub(super) fn which(&self, client: usize, hold: HoldId) -> Which {
        if self.rw_role(client).is_none() {
            return Which::Current;
        }
        let Some(h) = self.clients[client].holding.as_ref() else {
            // The first grant of a cycle is heard before the cycle's hold begins.
            return Which::Current;
        };
        if h.downgrade.as_ref().is_some_and(|d| d.hold == hold) {
            Which::Downgrade
        } else if h.hold == hold || (h.reentered == Some(hold) && !self.downgrades(client)) {
            Which::Current
        } else {
            Which::Neither
        }
    }

    /// The side an event about `hold` of `client` speaks of, for its mark.
    pub(super) fn side_of(&self, client: usize, hold: HoldId) -> Option<RwSide> {
        match self.which(client, hold) {
            Which::Downgrade => Some(RwSide::Read),
            _ => match self.clients[client].holding.as_ref() {
                Some(h) if h.hold == hold => h.side,
                Some(_) if self.downgrades(client) => Some(RwSide::Read),
                _ => self.first_side(client),
            },
        }
    }

    /// A downgrading writer was granted its read hold `a`: what it believes of it starts now.
    pub(super) fn begin_downgrade(&mut self, client: usize, a: &Acquired) {
        let until = self.sim_time(client, a.valid_until);
        let now = self.now;
        if let Some(h) = self.clients[client].holding.as_mut() {
            h.downgrade = Some(Belief {
                hold: a.hold,
                from: now,
                until,
            });
        }
    }

    /// The read hold client `client` keeps from a downgrade, if it holds one.
    fn downgrade_mut(&mut self, client: usize) -> Option<&mut Belief> {
        self.clients[client]
            .holding
            .as_mut()
            .and_then(|h| h.downgrade.as_mut())
    }

    /// The downgrade's read hold is confirmed until `valid_until` (simulation ms).
    pub(super) fn extend_downgrade(&mut self, client: usize, valid_until: u64) {
        let (now, lock, who) = (self.now, self.case.clients[client].lock, self.name(client));
        let Some(d) = self.downgrade_mut(client) else {
            return;
        };
        if now >= d.until {
            let closed = (d.from, d.until);
            d.from = now;
            d.until = valid_until;
            self.record_belief(lock, &who, Some(RwSide::Read), closed.0, closed.1);
        } else {
            d.until = valid_until;
        }
    }

    /// The downgrade's read hold ended (lost, or given back) now.
    pub(super) fn close_downgrade(&mut self, client: usize) {
        let (now, lock, who) = (self.now, self.case.clients[client].lock, self.name(client));
        let Some(d) = self.downgrade_mut(client) else {
            return;
        };
        let closed = (d.from, d.until.min(now));
        d.from = now;
        d.until = now;
        self.record_belief(lock, &who, Some(RwSide::Read), closed.0, closed.1);
    }

    /// A closed interval of what client `who` believed it held of `lock`: for (c), or on a
    /// read-write lock, with its side, for (h).
    pub(super) fn record_belief(
        &mut self,
        lock: u32,
        who: &str,
        side: Option<RwSide>,
        from: u64,
        to: u64,
    ) {
        let span = Interval {
            lock,
            who: who.to_owned(),
            from,
            to,
        };
        match side {
            None => self.history.client_intervals.push(span),
            Some(side) => self.history.rw_client_holds.push(RwInterval { span, side }),
        }
    }

    /// A closed server-side grant of `lock` to the hash field `field`: for (a), or on a
    /// read-write lock, as a read or write hold of the field's owner, for (h).
    pub(super) fn record_grant(&mut self, lock: u32, field: &[u8], from: u64, to: u64) {
        let field = String::from_utf8_lossy(field).into_owned();
        if !self.case.is_rw(lock) {
            self.history.server_grants.push(Interval {
                lock,
                who: field,
                from,
                to,
            });
            return;
        }
        let (who, side) = match field.strip_suffix(":write") {
            Some(owner) => (owner.to_owned(), RwSide::Write),
            None => (field, RwSide::Read),
        };
        self.history.rw_server_holds.push(RwInterval {
            span: Interval {
                lock,
                who,
                from,
                to,
            },
            side,
        });
    }
}
