//! The deterministic simulator of lock races (being built; see the README).
