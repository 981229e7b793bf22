//! Units of time, as types.
//!
//! The lock speaks in milliseconds, as Redis's `PEXPIRE` and `PTTL` do. A bare `u64` cannot say
//! whether it is a duration or a point in time, so both get a newtype: [`Millis`] is a span,
//! [`MonoTime`] a reading of a monotonic clock that the caller owns (the lock machine never reads a
//! clock itself), and [`Lease`] a span that Redis will accept as a key's time to live.

use std::fmt;
use std::ops::{Add, Sub};

/// A span of time in whole milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Millis(pub u64);

impl Millis {
    /// Zero milliseconds.
    pub const ZERO: Millis = Millis(0);

    /// Whole seconds as milliseconds.
    pub const fn from_secs(secs: u64) -> Millis {
        Millis(secs * 1000)
    }

    /// The number of milliseconds.
    pub const fn as_u64(self) -> u64 {
        self.0
    }

    /// `self - other`, or zero when `other` is larger.
    pub const fn saturating_sub(self, other: Millis) -> Millis {
        Millis(self.0.saturating_sub(other.0))
    }

    /// As a `std::time::Duration`.
    pub const fn to_duration(self) -> std::time::Duration {
        std::time::Duration::from_millis(self.0)
    }

    /// From a `std::time::Duration`, truncated to whole milliseconds (saturating).
    pub fn from_duration(d: std::time::Duration) -> Millis {
        Millis(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }
}

impl From<std::time::Duration> for Millis {
    /// Whole milliseconds, rounded down; a span past `u64::MAX` ms saturates.
    fn from(d: std::time::Duration) -> Millis {
        Millis::from_duration(d)
    }
}

impl From<Millis> for std::time::Duration {
    fn from(m: Millis) -> std::time::Duration {
        m.to_duration()
    }
}

impl Add for Millis {
    type Output = Millis;
    fn add(self, rhs: Millis) -> Millis {
        Millis(self.0.saturating_add(rhs.0))
    }
}

impl fmt::Display for Millis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ms", self.0)
    }
}

/// A reading of a monotonic clock, in milliseconds since an origin its owner chose.
///
/// The lock machine is handed one with every input; it never asks for the time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MonoTime(pub u64);

impl MonoTime {
    /// The origin.
    pub const ZERO: MonoTime = MonoTime(0);

    /// Milliseconds since the origin.
    pub const fn as_millis(self) -> u64 {
        self.0
    }

    /// The span from `earlier` to `self`, zero if `earlier` is later.
    pub const fn since(self, earlier: MonoTime) -> Millis {
        Millis(self.0.saturating_sub(earlier.0))
    }

    /// `self - span`, clamped at the origin.
    pub const fn saturating_sub(self, span: Millis) -> MonoTime {
        MonoTime(self.0.saturating_sub(span.0))
    }
}

impl Add<Millis> for MonoTime {
    type Output = MonoTime;
    fn add(self, rhs: Millis) -> MonoTime {
        MonoTime(self.0.saturating_add(rhs.0))
    }
}

impl Sub<MonoTime> for MonoTime {
    type Output = Millis;
    fn sub(self, rhs: MonoTime) -> Millis {
        self.since(rhs)
    }
}

impl fmt::Display for MonoTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:03}s", self.0 / 1000, self.0 % 1000)
    }
}

/// A lock's time to live on the server: from 1 ms to [`Lease::MAX`].
///
/// Redis deletes a key whose `PEXPIRE` is zero or negative, so a zero lease would release the lock
/// the moment it was taken. At the other end, Redis 7.0 refuses a `PEXPIRE` or `SET … PX` whose
/// deadline, the server's unix time in ms plus the lease, passes `i64::MAX` ("invalid expire
/// time"). Both are refused here, before any call is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Lease(Millis);

/// A lease that Redis would not keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "a lease must be from 1 ms to {max} (got {0}); Redis refuses an expiry past i64::MAX ms of \
     unix time; use the watchdog (no lease) for an open-ended hold",
    max = Lease::MAX
)]
pub struct InvalidLease(pub Millis);

impl Lease {
    /// The longest lease: 9 × 10¹⁸ ms. Redis accepts a lease up to `i64::MAX` minus its clock's
    /// unix time in ms; this bound leaves room for a server clock up to about 7 million years
    /// past 1970, so no server refuses it, while still about 285 million years long.
    pub const MAX: Millis = Millis(9_000_000_000_000_000_000);

    /// A lease of `span`, refused when it is below 1 ms or above [`Lease::MAX`].
    pub fn new(span: Millis) -> Result<Lease, InvalidLease> {
        if span.0 == 0 || span > Lease::MAX {
            Err(InvalidLease(span))
        } else {
            Ok(Lease(span))
        }
    }

    /// A lease of `ms` milliseconds, refused when it is below 1 ms or above [`Lease::MAX`].
    pub fn from_millis(ms: u64) -> Result<Lease, InvalidLease> {
        Lease::new(Millis(ms))
    }

    /// The span.
    pub const fn millis(self) -> Millis {
        self.0
    }
}

impl fmt::Display for Lease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_lease_is_refused() {
        assert_eq!(Lease::from_millis(0), Err(InvalidLease(Millis(0))));
        assert_eq!(Lease::from_millis(1).unwrap().millis(), Millis(1));
    }

    #[test]
    fn a_lease_redis_would_refuse_is_refused_with_the_limit() {
        assert_eq!(Lease::new(Lease::MAX).unwrap().millis(), Lease::MAX);
        for too_long in [
            Lease::MAX.as_u64() + 1,
            i64::MAX as u64,
            u64::MAX,
            Millis::from_duration(std::time::Duration::MAX).as_u64(),
        ] {
            let err = Lease::from_millis(too_long).unwrap_err();
            let text = err.to_string();
            assert!(text.contains("9000000000000000000 ms"), "{text}");
            assert!(!text.contains("at least"), "{text}");
        }
    }

    #[test]
    fn monotime_arithmetic_saturates() {
        assert_eq!(MonoTime(5).since(MonoTime(9)), Millis::ZERO);
        assert_eq!(MonoTime(5) + Millis(10), MonoTime(15));
        assert_eq!(MonoTime(5).saturating_sub(Millis(10)), MonoTime::ZERO);
        assert_eq!(MonoTime(10_001).to_string(), "10.001s");
    }
}
