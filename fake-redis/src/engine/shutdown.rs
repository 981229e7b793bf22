//! `SHUTDOWN`: the server stops.
//!
//! A successful `SHUTDOWN` closes every connection, its caller's without a reply, and leaves
//! the engine down: a door that sends it another command finds it so ([`Engine::is_shut_down`])
//! and carries that out as a server that is gone, the TCP server by stopping (its listener
//! closes, as `redis-server` exits), the in-process doors by refusing the connection as they do
//! for a crashed client process. A [`Fault::Restart`](crate::Fault::Restart) (or
//! [`Engine::restart`]) brings the engine back up, with its data if it has persistence, as a
//! restarted server.

use crate::engine::{ClientId, Engine};

impl Engine {
    /// Stops the server now for `SHUTDOWN` run by `caller`: every other connection closes at
    /// once, the caller's once its command is done, and its reply is not sent.
    pub(crate) fn shut_down(&mut self, caller: u64) {
        self.shut_down = true;
        let others: Vec<u64> = self
            .clients
            .keys()
            .copied()
            .filter(|&id| id != caller)
            .collect();
        for id in others {
            self.disconnect(ClientId(id));
        }
        if let Some(c) = self.clients.get_mut(&caller) {
            c.closing = true;
            c.no_reply = true;
        }
    }

    /// Whether `SHUTDOWN` stopped the server (until a restart).
    pub fn is_shut_down(&self) -> bool {
        self.shut_down
    }
}
