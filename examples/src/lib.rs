//! Programs that teach the watchdog: scenarios on virtual time, rendered as timelines, and one
//! page of them all.

pub mod page;
pub mod scenarios;
pub mod timeline;
