//! A deterministic simulator of lock races: lock machines, a network, the fake's engine and
//! faults on one virtual clock, with checkers for every safety and liveness rule of the lock.
//!
//! A [`Case`] is a plain value (it prints as text and parses back); [`run`] plays it on the fake
//! engine and returns the trace and the [`Violation`]s. The same case always gives the same trace.

pub mod case;
pub mod history;
pub mod rng;
pub mod server;
pub mod world;

pub use case::{AcquireKind, Case, ClientSpec, Fault};
pub use history::{Checker, History, Violation};
pub use world::{Run, World};
