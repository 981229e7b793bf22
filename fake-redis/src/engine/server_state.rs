//! What the server commands keep beside the keyspace: the encoding thresholds `CONFIG SET`
//! changes (which `OBJECT ENCODING` reads) and the time of the last `SAVE`. The commands that
//! read and change it live in `cmd/server.rs` and `cmd/config.rs`; the state is the engine's,
//! beside the rest of the server's, so that the engine needs nothing from the commands.

/// The encoding thresholds of Redis 7.0 (`CONFIG SET` changes them): past them a value converts.
#[derive(Clone, Debug)]
pub(crate) struct Encodings {
    /// `hash-max-listpack-entries`.
    pub hash_entries: usize,
    /// `hash-max-listpack-value`.
    pub hash_value: usize,
    /// `zset-max-listpack-entries`.
    pub zset_entries: usize,
    /// `zset-max-listpack-value`.
    pub zset_value: usize,
    /// `set-max-intset-entries`.
    pub set_intset_entries: usize,
    /// Whether a small set of other members is a listpack (Redis 7.2 and later), not a hash
    /// table (Redis 7.0).
    pub set_listpack: bool,
    /// `set-max-listpack-entries` (Redis 7.2 and later).
    pub set_listpack_entries: usize,
    /// `set-max-listpack-value` (Redis 7.2 and later).
    pub set_listpack_value: usize,
    /// Whether a small list is a listpack (Redis 7.2 and later), not a quicklist (Redis 7.0).
    pub list_listpack: bool,
    /// `list-max-listpack-size`: a count of elements when positive, else a size in bytes (-1:
    /// 4 KB, -2: 8 KB, ... -5: 64 KB).
    pub list_size: i64,
    /// `stream-node-max-bytes` and `stream-node-max-entries`.
    pub stream_nodes: super::stream::NodeLimits,
}

impl Default for Encodings {
    fn default() -> Encodings {
        // Redis 7.0.15's defaults, as `CONFIG GET` shows them.
        Encodings {
            hash_entries: 512,
            hash_value: 64,
            zset_entries: 128,
            zset_value: 64,
            set_intset_entries: 512,
            set_listpack: false,
            set_listpack_entries: 128,
            set_listpack_value: 64,
            list_listpack: false,
            list_size: -2,
            stream_nodes: super::stream::NodeLimits::default(),
        }
    }
}

/// What the server commands keep beside the keyspace.
#[derive(Debug, Default)]
pub(crate) struct ServerState {
    /// The encoding thresholds.
    pub encodings: Encodings,
    /// When `SAVE` or `BGSAVE` last ran (unix seconds); None: since the server started.
    pub last_save: Option<i64>,
    /// What `DEBUG` switches set (`cmd/debug.rs`).
    pub debug: DebugSwitches,
    /// `BGREWRITEAOF` has written an append-only file, which `DEBUG LOADAOF` loads back even
    /// with `appendonly no`, as Redis does with the file it left.
    pub aof_written: bool,
}

/// The switches `DEBUG` sets, which the rest of the server reads.
#[derive(Debug, Default, Clone)]
pub(crate) struct DebugSwitches {
    /// `DEBUG SET-DISABLE-DENY-SCRIPTS 1`: scripts may call the commands Redis flags
    /// `noscript` (`DEBUG` itself, `CLIENT`, the blocking pops).
    pub deny_scripts_disabled: bool,
    /// `DEBUG QUICKLIST-PACKED-THRESHOLD`: the size from which a list element would sit in a
    /// plain node of its own (0: Redis's default, 1 GB).
    pub quicklist_packed_threshold: u64,
    /// `DEBUG PAUSE-CRON 1`: what Redis's `serverCron` does waits, here the slow active expiry
    /// cycle and the tracking table's limit (which the next command's start still applies).
    pub pause_cron: bool,
}
