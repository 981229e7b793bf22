//! Force unlock and the read-only queries: one call each, no retry.
//!
//! A force unlock is not repeated after an unknown outcome: a second `DEL` could delete a lock
//! someone took in between. Queries are plain commands (`EXISTS`, `HGET`, `PTTL`).

use super::{
    BackendError, Call, CallPurpose, Done, LockError, LockMachine, LockName, OpId, OpKind,
    Operation, OwnerId, RemainingLease,
};
use crate::reply::Reply;
use crate::script::{ScriptCall, force_unlock, parse_i64};
use crate::time::Millis;
use bytes::Bytes;

/// A read-only question about a lock, asked with one plain command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Query {
    IsLocked,
    HoldCount(OwnerId),
    RemainingLease,
}

impl Query {
    fn operation(self) -> Operation {
        match self {
            Query::IsLocked => Operation::IsLocked,
            Query::HoldCount(_) => Operation::HoldCount,
            Query::RemainingLease => Operation::RemainingLease,
        }
    }
}

/// A force unlock or a query: its one call is in flight.
#[derive(Debug)]
pub(crate) struct SingleOp {
    operation: Operation,
    pub name: LockName,
}

impl LockMachine {
    pub(crate) fn start_force_unlock(&mut self, op: OpId, name: LockName) {
        let call = force_unlock::call(&self.keys(&name));
        self.start_force_unlock_with(op, name, call);
    }

    /// A force unlock of `name` by `call` (a plain lock's or a fair lock's script).
    pub(crate) fn start_force_unlock_with(&mut self, op: OpId, name: LockName, call: ScriptCall) {
        // As Redisson does, this client's own holds of the lock stop renewing first.
        let own: Vec<_> = self
            .holds
            .keys()
            .filter(|(n, _, _)| *n == name)
            .cloned()
            .collect();
        for key in own {
            self.mark_lost(&key);
        }
        let op = self.insert_op(
            Some(op),
            OpKind::Single(SingleOp {
                operation: Operation::ForceUnlock,
                name,
            }),
        );
        self.send_call(Call::Script(call), CallPurpose::Single { op });
    }

    pub(crate) fn start_query(&mut self, op: OpId, query: Query, name: LockName) {
        let lock = self.keys(&name).lock.clone();
        let argv: Vec<Bytes> = match query {
            Query::IsLocked => vec![Bytes::from_static(b"EXISTS"), lock],
            Query::HoldCount(owner) => {
                let owner = self.owner(owner);
                vec![Bytes::from_static(b"HGET"), lock, owner.as_bytes().clone()]
            }
            Query::RemainingLease => vec![Bytes::from_static(b"PTTL"), lock],
        };
        let single = SingleOp {
            operation: query.operation(),
            name,
        };
        let op = self.insert_op(Some(op), OpKind::Single(single));
        self.send_call(Call::Command(argv), CallPurpose::Single { op });
    }

    pub(crate) fn on_single_result(&mut self, op: u64, result: Result<Reply, BackendError>) {
        let Some(OpKind::Single(single)) = self.ops.get(op).map(|o| &o.kind) else {
            return;
        };
        let (operation, name) = (single.operation, single.name.to_string());
        let unexpected = |reply: &Reply| LockError::UnexpectedReply {
            name: name.clone(),
            operation,
            error: crate::script::DecodeError {
                script: operation.as_str(),
                reply: reply.to_string(),
            },
        };
        let result = match result {
            Err(error) if error.is_unknown() => Err(LockError::OutcomeUnknown {
                name: name.clone(),
                operation,
                last_error: error,
            }),
            Err(error) => Err(LockError::Backend {
                name: name.clone(),
                operation,
                error,
            }),
            Ok(reply) => match (operation, &reply) {
                (Operation::ForceUnlock, _) => force_unlock::decode(&reply)
                    .map(Done::ForceUnlocked)
                    .map_err(|error| LockError::UnexpectedReply {
                        name: name.clone(),
                        operation,
                        error,
                    }),
                (Operation::IsLocked, Reply::Int(n)) => Ok(Done::Locked(*n > 0)),
                (Operation::HoldCount, Reply::Nil) => Ok(Done::HoldCount(0)),
                (Operation::HoldCount, Reply::Bulk(b)) => parse_i64(b)
                    .and_then(|n| u64::try_from(n).ok())
                    .map(Done::HoldCount)
                    .ok_or_else(|| unexpected(&reply)),
                (Operation::RemainingLease, Reply::Int(-2)) => {
                    Ok(Done::RemainingLease(RemainingLease::NotLocked))
                }
                (Operation::RemainingLease, Reply::Int(-1)) => {
                    Ok(Done::RemainingLease(RemainingLease::NoTtl))
                }
                (Operation::RemainingLease, Reply::Int(n)) if *n >= 0 => Ok(Done::RemainingLease(
                    RemainingLease::Remaining(Millis(*n as u64)),
                )),
                _ => Err(unexpected(&reply)),
            },
        };
        self.finish_op(op, result);
    }
}
