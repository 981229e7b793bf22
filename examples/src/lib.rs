//! Programs that teach the watchdog: scenarios on virtual time, rendered as timelines.

pub mod scenarios;
pub mod timeline;
