//! The lock client's settings, with Redisson's names and defaults where Redisson has them.
//!
//! [`LockConfig`] is plain data with public fields; [`LockConfig::validate`] (called by
//! [`LockMachine::new`](crate::machine::LockMachine::new) and so by
//! [`LockClient::new`](crate::LockClient::new)) refuses a value that would make the lock unsafe, with
//! an error that names the value and the rule. Settings whose default follows another one
//! (`response_timeout`, `latch_ttl`, `wait_round_cap`) are `Option`s: `None` means "the default",
//! and the resolved value is read through the method of the same name.

use crate::keys::KeyLayout;
use crate::time::{Lease, Millis};

/// The longest `watchdog_timeout` or `latch_ttl`: both become a `PEXPIRE` or `SET … PX` on the
/// server, which Redis refuses past its limit (see [`Lease::MAX`]).
pub const MAX_SERVER_TTL: Millis = Lease::MAX;

/// The longest `latch_ttl`: one hour. A latch only has to outlive the attempts of one call (its
/// default is 4 × the response timeout, seconds), and every lock and unlock leaves two latch keys
/// that live this long, so a longer one only piles keys up; Redis's own limit (`Lease::MAX`, about
/// 285 million years) would make them keys that never go away.
pub const MAX_LATCH_TTL: Millis = Millis(3_600_000);

/// Settings of one lock client.
#[derive(Clone, Debug, PartialEq)]
pub struct LockConfig {
    /// The lease of a hold taken without an explicit lease, renewed by the watchdog every third of
    /// it (Redisson's `lockWatchdogTimeout`, default 30 s).
    pub watchdog_timeout: Millis,
    /// At most this many locks per `renew_batch` call (Redisson's `lockWatchdogBatchSize`, 100).
    pub batch_size: usize,
    /// How long a call may take before its outcome counts as unknown. `None`: `min(3 s,
    /// watchdog_timeout / 6)`. An explicit value must be below `watchdog_timeout / 3`, or one slow
    /// watchdog pass could outlive the lease.
    pub response_timeout: Option<Millis>,
    /// The part of a lease that the client's and the server's clocks may drift apart over it
    /// (`0.01` = 1 %). With `drift_constant` it makes the margin `valid_until` keeps below the
    /// server's expiry.
    pub drift_rate: f64,
    /// A fixed part of the drift margin (clock granularity, scheduling slack).
    pub drift_constant: Millis,
    /// How long a request's latch lives on the server, and so the window within which an attempt
    /// of unknown outcome may be repeated with the same request id. `None`: 4 × the response
    /// timeout (seconds, not minutes: latches must not pile up). At most [`MAX_LATCH_TTL`].
    pub latch_ttl: Option<Millis>,
    /// The longest a waiter sleeps between two attempts, bounding the cost of a lost unlock
    /// message or a holder without a TTL. `None`: `watchdog_timeout / 3`.
    pub wait_round_cap: Option<Millis>,
    /// When set, the watchdog stops renewing a hold this long after it was granted and emits a
    /// warning, so a stuck holder cannot keep a lock forever. `None`: no limit (Redisson's
    /// behaviour).
    pub max_hold: Option<Millis>,
    /// How long a fair lock's waiter that waits without a budget may stay silent before it loses
    /// its place in the queue (Redisson's `fairLockWaitTimeout`, 5 minutes). A waiter with a
    /// budget uses its budget.
    pub fair_lock_wait_timeout: Millis,
    /// The naming of helper keys and channels (Redisson-compatible by default).
    pub key_layout: KeyLayout,
    /// Whether every acquire, renewal and release waits, in the same round trip, until enough
    /// replicas have its writes (`WAIT`), and what it does when they do not: Redisson's
    /// `checkLockSyncedSlaves` (default on) and `slavesSyncTimeout`. `None` turns the check off.
    /// See [`SyncReplicas`].
    pub sync_replicas: Option<SyncReplicas>,
}

/// The replica check after each lock write (Redisson's `checkLockSyncedSlaves`).
///
/// A call the lock makes to take, renew or give back a hold goes out with `WAIT <min_replicas>
/// <timeout>` behind it, in one round trip, and its reply carries how many replicas acknowledged
/// the write. When the primary has replicas connected (the backend learns how many from the server:
/// `INFO replication` on a single primary, `CLUSTER NODES` on a cluster, again after a broken
/// connection and every few seconds) and fewer than `min_replicas` acknowledge within `timeout`:
///
/// - an acquire is **not granted**: it ends with
///   [`LockError::ReplicasNotSynced`](crate::LockError::ReplicasNotSynced), and the grant the
///   primary made is given back at once by a release carrying its count (as the grant of an
///   acquire whose outcome is unknown is), so the lock is free for the next try and a failover
///   cannot hand the lost grant's key to anyone;
/// - a renewal counts as **not confirmed**: `valid_until` does not move (a 0 still says the hold is
///   lost), so the hold becomes may-be-lost if no later renewal is acknowledged in time;
/// - an unlock's outcome is **unknown**: it ends with `ReplicasNotSynced` (its
///   [`outcome_unknown`](crate::LockError::outcome_unknown) is true); a failover now may bring the
///   lock back until its lease runs out.
///
/// A primary with no replica connected is not checked (Redisson's rule: a single server has
/// nothing to wait for), and neither is a call whose backend runs no `WAIT` (the simulator, and
/// the fake's in-process backend unless it was told of replicas with `with_replicas`, report no
/// replica count).
///
/// With [`SyncMode::Auto`] the wait is `WAITAOF` where the primary writes an append-only file
/// (see there): a replica then acknowledges a write only once its own AOF has it on disk.
///
/// What it cannot promise: `WAIT` makes a write more likely to survive a failover, not certain
/// (a replica may acknowledge and then be lost with the primary, and Redis's failover does not
/// pick the most advanced replica by this check). Fencing tokens are what keep a resource safe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyncReplicas {
    /// How many replicas must acknowledge each write (default 1). Above the number the primary
    /// has, every checked write is refused.
    pub min_replicas: u32,
    /// How long the server waits for them (`slavesSyncTimeout`). `None`: 1 s, or half the response
    /// timeout if that is shorter, so a call that waits the whole of it is still answered. An
    /// explicit value must stay below the response timeout.
    pub timeout: Option<Millis>,
    /// Which wait follows a write: `WAIT` always ([`SyncMode::Ack`], the default), or `WAITAOF`
    /// where the primary's AOF is on ([`SyncMode::Auto`]).
    pub mode: SyncMode,
}

impl Default for SyncReplicas {
    fn default() -> Self {
        SyncReplicas {
            min_replicas: 1,
            timeout: None,
            mode: SyncMode::Ack,
        }
    }
}

/// The wait after a lock write: Redisson 4's `SyncMode`, for the two of its modes a lock can use.
///
/// Redisson 4.7's locks call their scripts with `SyncMode.WAIT` (`syncedEvalNoRetry` in its
/// `CommandAsyncService`), so they always send `WAIT`: that is [`SyncMode::Ack`], this lock's
/// default, and what a Java peer on the same lock does. Its `SyncMode.AUTO` is
/// [`SyncMode::Auto`], decided the way Redisson decides it: the primary's `INFO` says
/// `aof_enabled:1` and the server accepts `WAITAOF` (Redisson sends `WAITAOF 0 0 0` once to find
/// out; Redis 7.2 brought the command, so Redis 7.0 refuses it). Then the write is followed by
/// `WAITAOF 1 <min_replicas> <timeout>` (the local AOF and the replicas' AOFs) instead of `WAIT
/// <min_replicas> <timeout>`, and the replicas' count of its reply (`[local, replicas]`) is what is
/// held against `min_replicas`, as Redisson reads it; the local count is not checked, as Redisson
/// does not. The backends that learn the topology from `INFO` take this form (a single primary,
/// Sentinel); a cluster's backend and the fake's in-process one always send `WAIT`.
///
/// A replica with its own AOF acknowledges a `WAITAOF` only after it wrote the write to disk
/// (`appendfsync everysec`: within about a second), so a shorter `timeout` than that refuses
/// writes that `WAIT` would have let through.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SyncMode {
    /// `WAIT` after each write: the replicas have it in memory (Redisson's `SyncMode.WAIT`, which
    /// its locks use).
    #[default]
    Ack,
    /// `WAITAOF` after each write when the primary's AOF is on and the server has the command,
    /// `WAIT` otherwise (Redisson's `SyncMode.AUTO`).
    Auto,
}

impl Default for LockConfig {
    fn default() -> Self {
        LockConfig {
            watchdog_timeout: Millis::from_secs(30),
            batch_size: 100,
            response_timeout: None,
            drift_rate: 0.01,
            drift_constant: Millis(2),
            latch_ttl: None,
            wait_round_cap: None,
            max_hold: None,
            fair_lock_wait_timeout: Millis::from_secs(300),
            key_layout: KeyLayout::default(),
            sync_replicas: Some(SyncReplicas::default()),
        }
    }
}

/// A setting the lock refuses, naming the value and the rule it breaks.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// A duration that must be positive is zero.
    #[error("{setting} is 0 ms; it must be at least 1 ms")]
    ZeroDuration {
        /// The setting's name.
        setting: &'static str,
    },
    /// A duration the server would have to keep as a TTL is beyond what Redis accepts.
    #[error(
        "{setting} is {value}, above the {limit} Redis accepts as a key's time to live (its unix \
         time in ms plus the TTL must stay within i64::MAX)"
    )]
    TtlTooLong {
        /// The setting's name.
        setting: &'static str,
        /// The value given.
        value: Millis,
        /// [`MAX_SERVER_TTL`].
        limit: Millis,
    },
    /// `batch_size` is zero.
    #[error("batch_size is 0; the watchdog needs at least 1 lock per renew call (default 100)")]
    ZeroBatchSize,
    /// An explicit response timeout is not below a third of the watchdog timeout.
    #[error(
        "response_timeout is {response_timeout}, which is not below watchdog_timeout / 3 = {limit}; \
         a watchdog pass that slow could outlive the lease: lower response_timeout or raise \
         watchdog_timeout"
    )]
    ResponseTimeoutTooLong {
        /// The value given.
        response_timeout: Millis,
        /// `watchdog_timeout / 3`, the bound it must stay below.
        limit: Millis,
    },
    /// The drift rate is not a fraction in `[0, 0.5)`.
    #[error("drift_rate is {0}; it must be a fraction in [0, 0.5) of the lease (0.01 = 1 %)")]
    DriftRate(f64),
    /// The drift margin would swallow the watchdog's lease.
    #[error(
        "the drift margin at the watchdog lease is {margin}, not below watchdog_timeout / 3 = \
         {limit}; lower drift_constant or drift_rate"
    )]
    DriftMarginTooLarge {
        /// `drift_rate × watchdog_timeout + drift_constant`.
        margin: Millis,
        /// `watchdog_timeout / 3`.
        limit: Millis,
    },
    /// The latch would outlive any call's attempts by far, leaving keys behind that do not go
    /// away for as long.
    #[error(
        "latch_ttl is {latch_ttl}, above the {limit} a latch may live; every lock and unlock \
         leaves two latch keys that live this long, and a latch only has to outlive the attempts \
         of one call (default 4 × response_timeout): lower latch_ttl"
    )]
    LatchTooLong {
        /// The value given.
        latch_ttl: Millis,
        /// [`MAX_LATCH_TTL`].
        limit: Millis,
    },
    /// The latch would expire before one attempt could be answered.
    #[error(
        "latch_ttl is {latch_ttl}, below the response timeout {response_timeout}; a repeated \
         attempt could find the latch gone and count twice: raise latch_ttl"
    )]
    LatchTooShort {
        /// The value given.
        latch_ttl: Millis,
        /// The resolved response timeout.
        response_timeout: Millis,
    },
    /// `sync_replicas` asks for no replica at all.
    #[error(
        "sync_replicas.min_replicas is 0; it must be at least 1 (set sync_replicas to None to turn \
         the replica check off)"
    )]
    ZeroSyncReplicas,
    /// The replica check's timeout is not below the response timeout: a call that waited for it
    /// would count as unknown.
    #[error(
        "sync_replicas.timeout is {timeout}, not below the response timeout {response_timeout}; a \
         call waiting that long for its replicas would time out: lower it or raise response_timeout"
    )]
    SyncTimeoutTooLong {
        /// The value given.
        timeout: Millis,
        /// The resolved response timeout.
        response_timeout: Millis,
    },
}

impl LockConfig {
    /// The period of the watchdog: a third of `watchdog_timeout`, measured from the end of the
    /// previous pass.
    pub fn watchdog_period(&self) -> Millis {
        Millis(self.watchdog_timeout.as_u64() / 3)
    }

    /// The lease of a watchdog hold.
    ///
    /// On an unvalidated config whose `watchdog_timeout` is out of range, the nearest valid
    /// lease; [`validate`](Self::validate) refuses such a config, so a machine never sees one.
    pub fn watchdog_lease(&self) -> Lease {
        let clamped = Millis(self.watchdog_timeout.as_u64().clamp(1, Lease::MAX.as_u64()));
        Lease::new(clamped).unwrap_or_else(|_| unreachable!("clamped into the lease range"))
    }

    /// The resolved response timeout.
    pub fn response_timeout(&self) -> Millis {
        self.response_timeout
            .unwrap_or_else(|| Millis(3000.min(self.watchdog_timeout.as_u64() / 6).max(1)))
    }

    /// The resolved latch TTL.
    pub fn latch_ttl(&self) -> Millis {
        self.latch_ttl
            .unwrap_or_else(|| Millis(self.response_timeout().as_u64().saturating_mul(4)))
    }

    /// The resolved cap on one wait round.
    pub fn wait_round_cap(&self) -> Millis {
        self.wait_round_cap
            .unwrap_or_else(|| self.watchdog_period().max(Millis(1)))
    }

    /// The replica check's resolved settings, `None` when it is off: how many replicas, how long.
    pub fn replica_wait(&self) -> Option<(u32, Millis)> {
        let sync = self.sync_replicas?;
        let timeout = sync
            .timeout
            .unwrap_or_else(|| Millis(1000.min(self.response_timeout().as_u64() / 2).max(1)));
        Some((sync.min_replicas, timeout))
    }

    /// The margin `valid_until` keeps below the server's expiry for a call with `lease`:
    /// `drift_rate × lease + drift_constant`.
    pub fn drift_margin(&self, lease: Lease) -> Millis {
        let proportional = (lease.millis().as_u64() as f64 * self.drift_rate).ceil() as u64;
        Millis(proportional) + self.drift_constant
    }

    /// Checks every rule; the machine and the client call this before using a config.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let positive = |setting: &'static str, value: Option<Millis>| match value {
            Some(Millis(0)) => Err(ConfigError::ZeroDuration { setting }),
            _ => Ok(()),
        };
        positive("watchdog_timeout", Some(self.watchdog_timeout))?;
        positive("response_timeout", self.response_timeout)?;
        positive("latch_ttl", self.latch_ttl)?;
        positive("wait_round_cap", self.wait_round_cap)?;
        positive("max_hold", self.max_hold)?;
        positive("fair_lock_wait_timeout", Some(self.fair_lock_wait_timeout))?;
        let within_ttl = |setting: &'static str, value: Millis| {
            if value > MAX_SERVER_TTL {
                Err(ConfigError::TtlTooLong {
                    setting,
                    value,
                    limit: MAX_SERVER_TTL,
                })
            } else {
                Ok(())
            }
        };
        within_ttl("watchdog_timeout", self.watchdog_timeout)?;
        if self.latch_ttl() > MAX_LATCH_TTL {
            return Err(ConfigError::LatchTooLong {
                latch_ttl: self.latch_ttl(),
                limit: MAX_LATCH_TTL,
            });
        }
        within_ttl("fair_lock_wait_timeout", self.fair_lock_wait_timeout)?;
        if self.batch_size == 0 {
            return Err(ConfigError::ZeroBatchSize);
        }
        let limit = self.watchdog_period();
        if self.watchdog_timeout.as_u64() < 3 {
            return Err(ConfigError::ZeroDuration {
                setting: "watchdog_timeout / 3",
            });
        }
        if let Some(rt) = self.response_timeout
            && rt >= limit
        {
            return Err(ConfigError::ResponseTimeoutTooLong {
                response_timeout: rt,
                limit,
            });
        }
        if !(0.0..0.5).contains(&self.drift_rate) {
            return Err(ConfigError::DriftRate(self.drift_rate));
        }
        let margin = self.drift_margin(self.watchdog_lease());
        if margin >= limit {
            return Err(ConfigError::DriftMarginTooLarge { margin, limit });
        }
        if self.latch_ttl() < self.response_timeout() {
            return Err(ConfigError::LatchTooShort {
                latch_ttl: self.latch_ttl(),
                response_timeout: self.response_timeout(),
            });
        }
        if let Some(sync) = self.sync_replicas {
            if sync.min_replicas == 0 {
                return Err(ConfigError::ZeroSyncReplicas);
            }
            positive("sync_replicas.timeout", sync.timeout)?;
            if let Some(timeout) = sync.timeout
                && timeout >= self.response_timeout()
            {
                return Err(ConfigError::SyncTimeoutTooLong {
                    timeout,
                    response_timeout: self.response_timeout(),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_redisson_and_the_watchdog() {
        let c = LockConfig::default();
        c.validate().unwrap();
        assert_eq!(c.watchdog_period(), Millis(10_000));
        assert_eq!(c.response_timeout(), Millis(3000));
        assert_eq!(c.latch_ttl(), Millis(12_000));
        assert_eq!(c.wait_round_cap(), Millis(10_000));
        assert_eq!(c.drift_margin(c.watchdog_lease()), Millis(302));
        assert_eq!(c.fair_lock_wait_timeout, Millis(300_000));
        // Redisson's checkLockSyncedSlaves (on) and slavesSyncTimeout (1 s).
        assert_eq!(c.replica_wait(), Some((1, Millis(1000))));
        let short = LockConfig {
            watchdog_timeout: Millis(3000),
            ..LockConfig::default()
        };
        assert_eq!(short.response_timeout(), Millis(500));
        // A short response timeout shortens the default wait, so that a call waiting the whole
        // of it is still answered.
        assert_eq!(short.replica_wait(), Some((1, Millis(250))));
    }

    #[test]
    fn the_replica_check_is_refused_when_it_could_never_pass_or_be_answered() {
        let none = LockConfig {
            sync_replicas: Some(SyncReplicas {
                min_replicas: 0,
                ..SyncReplicas::default()
            }),
            ..LockConfig::default()
        };
        assert_eq!(none.validate(), Err(ConfigError::ZeroSyncReplicas));
        let slow = LockConfig {
            sync_replicas: Some(SyncReplicas {
                min_replicas: 1,
                timeout: Some(Millis(3000)),
                ..SyncReplicas::default()
            }),
            ..LockConfig::default()
        };
        assert_eq!(
            slow.validate(),
            Err(ConfigError::SyncTimeoutTooLong {
                timeout: Millis(3000),
                response_timeout: Millis(3000),
            })
        );
        let off = LockConfig {
            sync_replicas: None,
            ..LockConfig::default()
        };
        off.validate().unwrap();
        assert_eq!(off.replica_wait(), None);
    }

    #[test]
    fn unsafe_settings_are_refused_by_name() {
        let zero = LockConfig {
            watchdog_timeout: Millis(0),
            ..LockConfig::default()
        };
        assert_eq!(
            zero.validate(),
            Err(ConfigError::ZeroDuration {
                setting: "watchdog_timeout"
            })
        );
        let batch = LockConfig {
            batch_size: 0,
            ..LockConfig::default()
        };
        assert_eq!(batch.validate(), Err(ConfigError::ZeroBatchSize));
        let slow = LockConfig {
            response_timeout: Some(Millis(10_000)),
            ..LockConfig::default()
        };
        let err = slow.validate().unwrap_err();
        assert!(
            err.to_string().contains("response_timeout is 10000 ms"),
            "{err}"
        );
        assert!(
            err.to_string().contains("watchdog_timeout / 3 = 10000 ms"),
            "{err}"
        );
    }

    #[test]
    fn ttls_beyond_what_redis_accepts_are_refused_with_the_limit() {
        for value in [
            i64::MAX as u64,
            u64::MAX,
            Millis::from_duration(std::time::Duration::MAX).as_u64(),
        ] {
            let long = LockConfig {
                watchdog_timeout: Millis(value),
                ..LockConfig::default()
            };
            let err = long.validate().unwrap_err();
            assert!(
                matches!(
                    err,
                    ConfigError::TtlTooLong {
                        setting: "watchdog_timeout",
                        ..
                    }
                ),
                "{err}"
            );
            assert!(err.to_string().contains("9000000000000000000 ms"), "{err}");
        }
        let longest = LockConfig {
            watchdog_timeout: MAX_SERVER_TTL,
            ..LockConfig::default()
        };
        longest.validate().unwrap();
        assert_eq!(longest.watchdog_lease().millis(), MAX_SERVER_TTL);
    }
}
