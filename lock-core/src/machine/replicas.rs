//! The replica check after each lock write (Redisson's `checkLockSyncedSlaves`, see
//! [`SyncReplicas`](crate::config::SyncReplicas)).
//!
//! Every call that writes a hold (an acquire, a release, a renewal batch, of every lock kind)
//! carries a `WAIT` for the backend to send in the same round trip. The machine never learns the
//! topology: the reply says how many replicas acknowledged and how many the primary has, and this
//! file turns that into a [`Shortfall`] or nothing. What a shortfall means is decided where each
//! call's reply is read: `acquire.rs` does not grant (and gives the grant back), `watchdog.rs`
//! does not confirm, `release.rs` answers that the unlock's outcome is unknown.

use super::LockMachine;
use crate::script::{ReplicaAcks, ReplicaWait};

/// Fewer replicas than required acknowledged a call's writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Shortfall {
    pub acked: u32,
    pub required: u32,
}

impl LockMachine {
    /// The `WAIT` a lock write carries, when the check is on.
    pub(crate) fn replica_wait(&self) -> Option<ReplicaWait> {
        let (replicas, timeout) = self.config.replica_wait()?;
        let mode = self.config.sync_replicas?.mode;
        Some(ReplicaWait {
            replicas,
            timeout,
            mode,
        })
    }

    /// Whether `acks` falls short. A primary with no replica connected has nothing to wait for
    /// (Redisson skips the check there too), so it never does.
    pub(crate) fn shortfall(&self, acks: ReplicaAcks) -> Option<Shortfall> {
        let (required, _) = self.config.replica_wait()?;
        (acks.connected > 0 && acks.acked < required).then_some(Shortfall {
            acked: acks.acked,
            required,
        })
    }
}
