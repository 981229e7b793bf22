//! An in-process Redis simulator on one virtual clock (being built; see the README).
//!
//! For now it re-exports the lock scripts it will run natively.

pub use lock_core::script;
