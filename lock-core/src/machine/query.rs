//! Force unlock and the read-only queries: one call each, no retry.
//!
//! A force unlock is not repeated after an unknown outcome: a second `DEL` could delete a lock
//! someone took in between. Queries are plain commands (`EXISTS`, `HGET`, `PTTL`).

use super::{
    Call, CallPurpose, Done, LockError, LockMachine, OpId, OpKind, OwnerId, RemainingLease,
};
use crate::backend::BackendError;
use crate::reply::Reply;
use crate::script::{force_unlock, parse_i64};
use crate::time::Millis;
use bytes::Bytes;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Query {
    ForceUnlock,
    IsLocked,
    HoldCount,
    RemainingLease,
}

impl Query {
    fn operation(self) -> &'static str {
        match self {
            Query::ForceUnlock => "force_unlock",
            Query::IsLocked => "is_locked",
            Query::HoldCount => "hold_count",
            Query::RemainingLease => "remaining_lease",
        }
    }
}

#[derive(Debug)]
pub(crate) struct SingleOp {
    query: Query,
    name: String,
}

impl LockMachine {
    pub(crate) fn start_force_unlock(&mut self, op: OpId, name: String) {
        // As Redisson does, this client's own holds of the lock stop renewing first.
        let own: Vec<_> = self
            .holds
            .keys()
            .filter(|(n, _)| *n == name)
            .cloned()
            .collect();
        for key in own {
            self.mark_lost(&key);
        }
        let call = force_unlock::call(&self.keys(&name));
        let op = self.insert_op(
            Some(op),
            OpKind::Single(SingleOp {
                query: Query::ForceUnlock,
                name,
            }),
        );
        self.send_call(Call::Script(call), CallPurpose::Single { op });
    }

    pub(crate) fn start_query(
        &mut self,
        op: OpId,
        query: Query,
        name: String,
        owner: Option<OwnerId>,
    ) {
        let keys = self.keys(&name);
        let argv: Vec<Bytes> = match query {
            Query::IsLocked => vec![Bytes::from_static(b"EXISTS"), keys.lock],
            Query::HoldCount => {
                let owner = self.owner(owner.unwrap_or(OwnerId(0)));
                vec![
                    Bytes::from_static(b"HGET"),
                    keys.lock,
                    owner.as_bytes().clone(),
                ]
            }
            Query::RemainingLease | Query::ForceUnlock => {
                vec![Bytes::from_static(b"PTTL"), keys.lock]
            }
        };
        let op = self.insert_op(Some(op), OpKind::Single(SingleOp { query, name }));
        self.send_call(Call::Command(argv), CallPurpose::Single { op });
    }

    pub(crate) fn on_single_result(&mut self, op: u64, result: Result<Reply, BackendError>) {
        let Some(OpKind::Single(single)) = self.ops.get(&op).map(|o| &o.kind) else {
            return;
        };
        let (query, name) = (single.query, single.name.clone());
        let operation = query.operation();
        let unexpected = |reply: &Reply| LockError::UnexpectedReply {
            name: name.clone(),
            operation,
            error: crate::script::DecodeError {
                script: operation,
                reply: reply.to_string(),
            },
        };
        let result = match result {
            Err(error) if error.is_unknown() => Err(LockError::OutcomeUnknown {
                name: name.clone(),
                operation,
                detail: error.to_string(),
            }),
            Err(error) => Err(LockError::Backend {
                name: name.clone(),
                operation,
                error,
            }),
            Ok(reply) => match (query, &reply) {
                (Query::ForceUnlock, _) => force_unlock::decode(&reply)
                    .map(Done::ForceUnlocked)
                    .map_err(|error| LockError::UnexpectedReply {
                        name: name.clone(),
                        operation,
                        error,
                    }),
                (Query::IsLocked, Reply::Int(n)) => Ok(Done::Locked(*n > 0)),
                (Query::HoldCount, Reply::Nil) => Ok(Done::HoldCount(0)),
                (Query::HoldCount, Reply::Bulk(b)) => parse_i64(b)
                    .and_then(|n| u64::try_from(n).ok())
                    .map(Done::HoldCount)
                    .ok_or_else(|| unexpected(&reply)),
                (Query::RemainingLease, Reply::Int(-2)) => {
                    Ok(Done::RemainingLease(RemainingLease::NotLocked))
                }
                (Query::RemainingLease, Reply::Int(-1)) => {
                    Ok(Done::RemainingLease(RemainingLease::NoTtl))
                }
                (Query::RemainingLease, Reply::Int(n)) if *n >= 0 => Ok(Done::RemainingLease(
                    RemainingLease::Remaining(Millis(*n as u64)),
                )),
                _ => Err(unexpected(&reply)),
            },
        };
        self.finish_op(op, result);
    }
}
