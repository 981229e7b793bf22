//! A replica of a primary the fake cannot reach: `REPLICAOF host port` naming an address that no
//! node of the topology answers on.
//!
//! Redis answers `OK` at once and keeps trying to connect in the background, for as long as it
//! takes; meanwhile the node is a replica whose link is down. The fake does the same, except that
//! its attempts never succeed: the node refuses writes (`READONLY`), serves what it has, or
//! `MASTERDOWN` while `replica-serve-stale-data` is `no`, keeps expired keys for the primary to
//! delete, sends nothing to its `SYNC` readers (Redis propagates nothing while it is a replica),
//! and `ROLE` and `INFO replication` show the link still being set up. Becoming a replica ends
//! every block with Redis's `UNBLOCKED` error and closes those connections. `REPLICAOF NO ONE`
//! makes it a primary again with its data, a new replication id, and its `SYNC` readers
//! disconnected, as Redis's `replicationUnsetMaster` does.

use super::{Elsewhere, replid, stream};
use crate::engine::blocking::Waiter;
use crate::engine::{ClientId, Engine};
use crate::resp::Frame;
use bytes::Bytes;
use std::fmt::Write as _;

/// Redis's reply to a command that a replica with its link down refuses.
pub(crate) const MASTERDOWN: Frame = Frame::error(
    "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
);

impl Engine {
    /// `REPLICAOF host port` naming no node of the topology (see the [module docs](self)). A
    /// replica of a node of the topology leaves it (its stream is cut).
    pub(crate) fn follow_elsewhere(&mut self, host: Bytes, port: u16) {
        let now = self.now();
        let r = &mut self.replication;
        let (scripts_on_lua, down_since) = match (r.upstream.take(), r.elsewhere.take()) {
            (Some(up), _) => {
                let mut s = stream(&up.stream);
                s.cut = true;
                s.batches.clear();
                (up.scripts_on_lua, Some(now))
            }
            (None, Some(e)) => (e.scripts_on_lua, e.down_since),
            (None, None) => {
                let scripts_on_lua = self.lock_scripts_on_lua;
                // A script's write call on a replica fails as Redis words it; the Lua body says it.
                self.run_lock_scripts_on_lua(true);
                for db in &mut self.dbs {
                    db.keep_expired(true);
                }
                (scripts_on_lua, None)
            }
        };
        self.replication.elsewhere = Some(Elsewhere {
            host,
            port,
            scripts_on_lua,
            down_since,
        });
        if let Some(streams) = &mut self.repl_streams {
            streams.drop_pending();
        }
        self.unblock_all_for_new_role();
    }

    /// Redis's `disconnectAllBlockedClients`: every client blocked in a command (a pause's are
    /// not: theirs runs from the start later) gets `UNBLOCKED`, and its connection closes after
    /// that reply.
    fn unblock_all_for_new_role(&mut self) {
        let blocked: Vec<u64> = (self.clients.iter())
            .filter(|(_, c)| {
                c.blocked
                    .as_ref()
                    .is_some_and(|b| !matches!(b.waiter, Waiter::Postponed { .. }))
            })
            .map(|(&id, _)| id)
            .collect();
        for id in blocked {
            self.replication.waits.remove(&id);
            self.unblock(
                id,
                Frame::error(
                    "UNBLOCKED force unblock from blocking operation, instance state changed \
                     (master -> replica?)",
                ),
            );
            if let Some(c) = self.clients.get_mut(&id) {
                c.closing = true;
            }
        }
    }

    /// `REPLICAOF NO ONE` on a replica of an unreachable primary: a primary again, with a new
    /// replication id after the one it had; its `SYNC` readers are disconnected. False if the
    /// node was no such replica.
    pub(super) fn promote_from_elsewhere(&mut self) -> bool {
        let Some(e) = self.replication.elsewhere.take() else {
            return false;
        };
        for db in &mut self.dbs {
            db.keep_expired(false);
        }
        self.run_lock_scripts_on_lua(e.scripts_on_lua);
        let r = &mut self.replication;
        if let Some((id, _)) = r.replid.take() {
            r.replid = Some((replid(self.config.seed, r.offset as u64 ^ 0x9e37), id));
            r.second_offset = Some(r.offset + 1);
        }
        for id in self.stream_readers() {
            self.disconnect(ClientId(id));
        }
        true
    }

    /// The address of the unreachable primary the node follows, if it follows one.
    pub(crate) fn followed_elsewhere(&self) -> Option<(&[u8], u16)> {
        let e = self.replication.elsewhere.as_ref()?;
        Some((&e.host, e.port))
    }

    /// Whether the node is a replica whose link is down and `replica-serve-stale-data` is
    /// `no`: it refuses what Redis does not flag `stale` ([`MASTERDOWN`]).
    #[cold]
    pub(crate) fn refuses_stale_reads(&self) -> bool {
        self.replication.elsewhere.is_some()
            && (self.config.settings.get("replica-serve-stale-data")).is_some_and(|v| v == "no")
    }

    /// `ROLE` on such a replica: still connecting, with no offset from a primary.
    pub(super) fn elsewhere_role(&self) -> Option<Frame> {
        let e = self.replication.elsewhere.as_ref()?;
        Some(Frame::Array(vec![
            Frame::Bulk(Bytes::from_static(b"slave")),
            Frame::Bulk(e.host.clone()),
            Frame::Integer(i64::from(e.port)),
            Frame::Bulk(Bytes::from_static(b"connect")),
            Frame::Integer(-1),
        ]))
    }

    /// `INFO replication`'s lines about the primary of such a replica, from `role:` to
    /// `connected_slaves:`.
    pub(super) fn elsewhere_info(&self, s: &mut String) -> bool {
        let Some(e) = &self.replication.elsewhere else {
            return false;
        };
        let down = e
            .down_since
            .map_or(-1, |at| (self.now() - at).max(0) / 1000);
        let _ = write!(
            s,
            "role:slave\r\nmaster_host:{}\r\nmaster_port:{}\r\nmaster_link_status:down\r\n\
             master_last_io_seconds_ago:-1\r\nmaster_sync_in_progress:0\r\n\
             slave_read_repl_offset:{off}\r\nslave_repl_offset:{off}\r\n\
             master_link_down_since_seconds:{down}\r\nslave_priority:100\r\nslave_read_only:1\r\n\
             replica_announced:1\r\n",
            String::from_utf8_lossy(&e.host),
            e.port,
            off = self.replication.offset,
        );
        true
    }
}
