//! The command stream a client reads after `SYNC`: what a replica of Redis receives.
//!
//! The fake's own replicas take a primary's writes as key effects (`engine/replication.rs`). A
//! client that sends `SYNC` (Redis's test suite does, to read what a command propagates) gets
//! Redis's form instead: the dataset as an RDB file in one bulk payload, then each write as the
//! command Redis propagates for it, in the order they ran. `cmd/propagate.rs` decides what a
//! command propagates (relative times become absolute, `GETDEL` becomes `DEL`, a script's writes
//! its calls); this module keeps the stream: a `SELECT` whenever the database changes (and first
//! of all, as Redis forgets the replicas' database when one attaches), a key that expiry or
//! eviction removes as a `DEL` of its own before the command that removed it, and the commands
//! of one transaction or script in `MULTI` … `EXEC` when there are more than one.
//!
//! While no client reads a stream none of this runs: the databases count nothing and a command
//! pays one branch.

use crate::engine::memory::encoding;
use crate::engine::rdb::{self, Compact};
use crate::engine::{ClientId, DATABASES, Engine};
use crate::resp::Frame;
use bytes::Bytes;

/// The clients that read the stream, and what the running command has propagated so far.
#[derive(Default)]
pub(crate) struct ReplStreams {
    clients: Vec<u64>,
    /// The database the stream is in, once a `SELECT` said it.
    db: Option<usize>,
    /// The commands of the running command (or transaction, or script), with their databases.
    pending: Vec<(usize, Vec<Bytes>)>,
    /// The deletions of keys expiry or eviction removed meanwhile: each goes out on its own,
    /// ahead of the command's, never inside its `MULTI`.
    removed: Vec<(usize, Vec<Bytes>)>,
}

impl ReplStreams {
    /// Forgets what the running command propagated so far: a node that became a replica while
    /// it ran sends none of it, as Redis propagates nothing once it is a replica.
    pub(crate) fn drop_pending(&mut self) {
        self.pending.clear();
        self.removed.clear();
    }
}

/// RDB opcodes.
const OP_AUX: u8 = 0xFA;
const OP_RESIZEDB: u8 = 0xFB;
const OP_EXPIRETIME_MS: u8 = 0xFC;
const OP_SELECTDB: u8 = 0xFE;
const OP_EOF: u8 = 0xFF;

impl Engine {
    /// Makes `client` a reader of the command stream (Redis's `SYNC` from a replica) and gives
    /// the RDB file of the dataset it starts from: every write after this reaches the client's
    /// outbox as the command Redis propagates. None for a client that is not connected.
    pub fn attach_replica_stream(&mut self, client: ClientId) -> Option<Vec<u8>> {
        if !self.clients.contains_key(&client.0) {
            return None;
        }
        let now = self.clock_now();
        let payload = self.rdb_file(now);
        let streams = self.repl_streams.get_or_insert_with(Box::default);
        if !streams.clients.contains(&client.0) {
            streams.clients.push(client.0);
        }
        streams.db = None;
        for db in &mut self.dbs {
            db.log_stream(true);
            db.take_stream_removed();
        }
        Some(payload)
    }

    /// Whether `client` reads the command stream (it sent `SYNC`): Redis counts such a client as
    /// a replica, so its output buffer is held to the replica class's limits.
    pub fn is_replica_stream(&self, client: ClientId) -> bool {
        self.repl_streams
            .as_ref()
            .is_some_and(|streams| streams.clients.contains(&client.0))
    }

    /// Stops streaming to `client` (a disconnect); the databases stop counting with the last.
    pub(crate) fn detach_replica_stream(&mut self, client: u64) {
        let Some(streams) = &mut self.repl_streams else {
            return;
        };
        streams.clients.retain(|&c| c != client);
        if streams.clients.is_empty() {
            self.repl_streams = None;
            for db in &mut self.dbs {
                db.log_stream(false);
            }
        }
    }

    /// The clients that read the stream.
    pub(crate) fn stream_readers(&self) -> Vec<u64> {
        self.repl_streams
            .as_ref()
            .map_or_else(Vec::new, |s| s.clients.clone())
    }

    /// Every database's writes so far, when a client reads the stream (None otherwise): a
    /// command that raised it wrote.
    #[inline]
    pub(crate) fn stream_writes(&self) -> Option<u64> {
        self.repl_streams.as_ref()?;
        Some(self.dbs.iter().map(|db| db.stream_writes()).sum())
    }

    /// Adds what a command run in database `db` propagates, after the deletions of the keys
    /// that expired while it ran.
    pub(crate) fn stream_commands(&mut self, db: usize, commands: Vec<Vec<Bytes>>) {
        self.stream_removals();
        // A replica propagates nothing of its own (the writes a transaction runs after its
        // `REPLICAOF`).
        if self.replication.is_replica() {
            return;
        }
        if let Some(streams) = &mut self.repl_streams {
            streams
                .pending
                .extend(commands.into_iter().map(|argv| (db, argv)));
        }
    }

    /// The keys expiry and eviction removed, as `DEL`s in the pending commands.
    fn stream_removals(&mut self) {
        let Some(streams) = &mut self.repl_streams else {
            return;
        };
        for (i, db) in self.dbs.iter_mut().enumerate() {
            for key in db.take_stream_removed() {
                streams
                    .removed
                    .push((i, vec![Bytes::from_static(b"DEL"), key]));
            }
        }
    }

    /// Ends a command (or an expiry pass): what it propagated goes to every reader, in
    /// `MULTI` … `EXEC` when it is more than one command.
    pub(crate) fn flush_streams(&mut self, now: i64) {
        self.stream_removals();
        let Some(streams) = &mut self.repl_streams else {
            return;
        };
        if streams.pending.is_empty() && streams.removed.is_empty() {
            return;
        }
        let removed = std::mem::take(&mut streams.removed);
        let pending = std::mem::take(&mut streams.pending);
        let wrap = pending.len() > 1;
        let mut frames = Vec::new();
        let select = |streams: &mut ReplStreams, db: usize, frames: &mut Vec<Frame>| {
            if streams.db != Some(db) {
                streams.db = Some(db);
                frames.push(command(vec![
                    Bytes::from_static(b"SELECT"),
                    Bytes::from(db.to_string()),
                ]));
            }
        };
        for (db, argv) in removed {
            select(streams, db, &mut frames);
            frames.push(command(argv));
        }
        // `MULTI` goes first, and the `SELECT` its first command needs inside it.
        if wrap {
            frames.push(command(vec![Bytes::from_static(b"MULTI")]));
        }
        for (db, argv) in pending {
            select(streams, db, &mut frames);
            frames.push(command(argv));
        }
        if wrap {
            frames.push(command(vec![Bytes::from_static(b"EXEC")]));
        }
        for id in streams.clients.clone() {
            if let Some(c) = self.clients.get_mut(&id) {
                for frame in &frames {
                    c.push(now, frame.clone());
                }
            }
        }
    }

    /// The dataset as an RDB file of the engine's release: each live key as `DUMP` writes its
    /// value, with its deadline, database by database, and the checksum.
    fn rdb_file(&mut self, now: i64) -> Vec<u8> {
        let version: u16 = match self.version() {
            crate::engine::Version::V7_0 => 10,
            crate::engine::Version::V7_4 => 12,
            _ => 11,
        };
        let mut out = format!("REDIS{version:04}").into_bytes();
        let aux = |out: &mut Vec<u8>, key: &[u8], value: &[u8]| {
            out.push(OP_AUX);
            rdb::put_string(out, key);
            rdb::put_string(out, value);
        };
        aux(
            &mut out,
            b"redis-ver",
            self.version().redis_version().as_bytes(),
        );
        aux(&mut out, b"redis-bits", b"64");
        aux(&mut out, b"ctime", (now / 1000).to_string().as_bytes());
        let encodings = self.server_state().encodings.clone();
        let server = self.version();
        for i in 0..DATABASES {
            let db = &self.dbs[i];
            let keys: Vec<(&[u8], &crate::engine::db::Entry)> = db.live_iter(now).collect();
            if keys.is_empty() {
                continue;
            }
            out.push(OP_SELECTDB);
            rdb::put_len(&mut out, i as u64);
            out.push(OP_RESIZEDB);
            rdb::put_len(&mut out, keys.len() as u64);
            let volatile = keys.iter().filter(|(_, e)| e.deadline().is_some()).count();
            rdb::put_len(&mut out, volatile as u64);
            for (key, entry) in keys {
                if let Some(at) = entry.deadline() {
                    out.push(OP_EXPIRETIME_MS);
                    out.extend_from_slice(&at.to_le_bytes());
                }
                let compact = match encoding(entry, &encodings) {
                    "listpack" | "listpackex" | "intset" => Compact::Yes,
                    _ => Compact::No,
                };
                // `DUMP`'s payload is the type, the value, then two bytes of version and
                // eight of checksum: the file puts the key between the type and the value.
                let dumped = rdb::dump(&entry.value, compact, server);
                let body = &dumped[..dumped.len().saturating_sub(10)];
                if let Some((kind, value)) = body.split_first() {
                    out.push(*kind);
                    rdb::put_string(&mut out, key);
                    out.extend_from_slice(value);
                }
            }
        }
        out.push(OP_EOF);
        let crc = rdb::crc64(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }
}

/// A propagated command as the stream carries it: an array of bulk strings.
fn command(argv: Vec<Bytes>) -> Frame {
    Frame::Array(argv.into_iter().map(Frame::Bulk).collect())
}
