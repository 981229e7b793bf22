//! An in-process Redis fake on virtual time, for testing code that uses Redis, and locks above all.
//!
//! placeholder (front doors not wired yet)

pub mod backend;
pub mod clock;
mod cmd;
pub mod connection;
mod db;
pub mod engine;
pub mod fault;
pub mod frame;
pub mod link;
pub mod resp;
pub mod server;
pub mod subscriber;

pub use backend::FakeBackend;
pub use clock::{Clock, DEFAULT_EPOCH_MS, ManualClock, SystemClock, TokioClock};
pub use connection::FakeConnection;
pub use db::{Entry, Hash, Value};
pub use engine::{ClientId, Engine, EngineConfig, Outbound};
pub use fault::{
    CommandFate, CommandFault, DeliveryFate, Fault, FaultEvent, FaultEventKind, FaultPlan, NodeId,
    Trigger,
};
pub use frame::Frame;
pub use link::{DEFAULT_RESPONSE_TIMEOUT, SharedEngine, shared};
pub use subscriber::FakeSubscriber;
