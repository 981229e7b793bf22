//! `maxclients`, shared by the engine and the TCP server that admits connections by it.
//!
//! The server decides on each new connection, before the client exists and without the engine's
//! lock (Redis's `acceptCommonHandler` checks before `createClient`), while `CONFIG GET/SET
//! maxclients`, `INFO clients` and `INFO stats`' `rejected_connections` live in the engine. So
//! the limit and the count of refused connections are atomics both sides hold, as the running
//! script is (`ScriptWatch`, in `engine/script_watch.rs`).
//!
//! The `ceiling` is what the process's open-file limit allows (Redis's `adjustOpenFilesLimit`:
//! the descriptors minus 32 kept for the server's own use), found once when the server starts
//! (`server::fit_open_files`). `CONFIG SET maxclients` above it is refused with Redis's error,
//! as Redis refuses a value its descriptors cannot serve. In-process engines have none.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Redis's default `maxclients`.
pub const DEFAULT_MAXCLIENTS: usize = 10_000;

/// The engine's `maxclients`, its ceiling, and the connections refused by it (see the
/// [module docs](self)).
#[derive(Debug)]
pub struct ClientLimit {
    maxclients: AtomicUsize,
    ceiling: Option<usize>,
    rejected: AtomicU64,
}

impl ClientLimit {
    /// A limit of `maxclients` that `CONFIG SET` may raise up to `ceiling` (without one, to any
    /// value Redis's range allows).
    pub fn new(maxclients: usize, ceiling: Option<usize>) -> ClientLimit {
        ClientLimit {
            maxclients: AtomicUsize::new(maxclients),
            ceiling,
            rejected: AtomicU64::new(0),
        }
    }

    /// How many clients may be connected at once.
    pub fn maxclients(&self) -> usize {
        self.maxclients.load(Ordering::Relaxed)
    }

    /// The most `maxclients` may be, if the descriptors bound it.
    pub fn ceiling(&self) -> Option<usize> {
        self.ceiling
    }

    /// Sets `maxclients` (`CONFIG SET`); past the ceiling, refuses with it.
    pub(crate) fn set_maxclients(&self, maxclients: usize) -> Result<(), usize> {
        match self.ceiling {
            Some(ceiling) if maxclients > ceiling => Err(ceiling),
            _ => {
                self.maxclients.store(maxclients, Ordering::Relaxed);
                Ok(())
            }
        }
    }

    /// Counts a connection refused over `maxclients`.
    pub fn count_rejected(&self) {
        self.rejected.fetch_add(1, Ordering::Relaxed);
    }

    /// Connections refused over `maxclients` since the start or `CONFIG RESETSTAT`.
    pub fn rejected(&self) -> u64 {
        self.rejected.load(Ordering::Relaxed)
    }

    /// Forgets the count of refused connections (`CONFIG RESETSTAT`).
    pub(crate) fn reset_stats(&self) {
        self.rejected.store(0, Ordering::Relaxed);
    }
}

impl Default for ClientLimit {
    fn default() -> ClientLimit {
        ClientLimit::new(DEFAULT_MAXCLIENTS, None)
    }
}
