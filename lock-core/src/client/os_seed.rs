//! Where a production client's ids come from: the one place the lock reads the wall clock and the
//! operating system's randomness.
//!
//! It lives in the driver, not beside [`SeededIds`] in the machine, so that the machine reads no
//! clock and draws no randomness at all; a simulation hands it a seed instead.

use crate::machine::SeededIds;

impl SeededIds {
    /// A source seeded from the operating system's randomness (through the standard library's
    /// randomly keyed hasher) and the wall clock, for production clients.
    pub fn from_os() -> SeededIds {
        use std::hash::{BuildHasher, Hasher};
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        hasher.write_u128(wall);
        hasher.write_u32(std::process::id());
        SeededIds::new(hasher.finish())
    }
}
