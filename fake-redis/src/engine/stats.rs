//! What a server counts about the commands it runs: `INFO`'s `commandstats`, `errorstats` and
//! `latencystats` sections, `total_commands_processed`, `instantaneous_ops_per_sec` and
//! `total_error_replies`, and the slow log (`SLOWLOG`).
//!
//! `instantaneous_ops_per_sec` is sampled as Redis's `serverCron` samples it, on the engine's
//! clock: at the first tick 100 ms or more after the last sample, the commands per second since
//! then; it reads the mean of the last 16 samples (those not yet taken count as 0).
//!
//! The rules are Redis 7.0's `call()` and `rejectCommand()`:
//!
//! - A command that runs counts a call under its name (a container's subcommand under
//!   `config|get`), and a failed call if it replied an error. Each command of an `EXEC` and each
//!   `redis.call` of a script runs, and counts, on its own; `EXEC` and `EVAL` count too. A
//!   blocking command counts once, when its block ends (`engine/blocking.rs`).
//! - A command refused before it runs (wrong arity, `NOAUTH`, the pub/sub context, `READONLY`,
//!   a bad command queued in `MULTI`) counts a rejected call and no call; an unknown command or
//!   subcommand counts under no name at all.
//! - Every error reply counts in `errorstats` under its first word (`ERR`, `WRONGTYPE`), rejected
//!   or not, inside a transaction or a script. A script that fails because its `redis.call`
//!   failed (or returns the error its `redis.pcall` got) repeats an error already counted, and
//!   is not counted twice, as Redis marks those errors; this is matched by text: the script's
//!   error starts with the last error one of its calls replied. Redis 7.0 keeps every error code
//!   it ever saw; the fake keeps the first [`ERROR_CODES`] (and counts each reply in
//!   `total_error_replies` whatever its code), so a client that invents codes cannot grow the
//!   table without bound.
//!
//! **Time.** The engine's clock stands still while a command runs (`docs/ARCHITECTURE.md`'s one
//! clock), so every command ran in 0 µs: `usec` and `usec_per_call` read 0, every latency
//! percentile is Redis's smallest bucket (`0.001`, one nanosecond, Redis's floor for a
//! measurement), and a slow log entry's duration is 0. So `slowlog-log-slower-than 0` logs every
//! command, as on Redis, and any larger threshold logs none, which is what Redis does for a
//! command faster than the threshold; a negative one turns the log off, as in Redis.
//!
//! **The slow log** keeps Redis's entries: an id that counts up across `SLOWLOG RESET`, the unix
//! second of the command's (frozen) time, the duration, the arguments (at most 32, the last
//! saying `... (N more arguments)`; each at most 128 bytes, then `... (N more bytes)`; `AUTH`'s
//! and `HELLO … AUTH`'s secrets as `(redacted)`), the client's address and name. `EXEC` is not
//! logged (its commands are), nor a command that blocked, nor a refused one; a script's calls are,
//! with Redis's address for its Lua client, `?:0`, and no name. `slowlog-max-len` bounds it.

use super::Engine;
use crate::resp::Frame;
use bytes::Bytes;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt::Write as _;
use std::hash::{BuildHasherDefault, Hasher};

/// At most this many distinct error codes are kept in `errorstats` (Redis 7.2's bound).
pub(crate) const ERROR_CODES: usize = 128;

/// Slow log entries keep at most this many arguments (Redis's `SLOWLOG_ENTRY_MAX_ARGC`).
const SLOWLOG_MAX_ARGS: usize = 32;
/// Slow log entries keep at most this many bytes of an argument (`SLOWLOG_ENTRY_MAX_STRING`).
const SLOWLOG_MAX_BYTES: usize = 128;

/// The hash of a name's address in [`Stats`]'s table: one multiply (Fibonacci hashing). The
/// standard hasher resists collisions an attacker chooses, which addresses of `'static` names
/// cannot be, and cost more than the rest of counting a call.
#[derive(Default)]
struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_usize(&mut self, n: usize) {
        self.0 = (n as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// One command's counters (`cmdstat_<name>`).
#[derive(Clone, Copy, Debug, Default)]
struct CommandStat {
    calls: u64,
    rejected: u64,
    failed: u64,
}

/// The counters `INFO` reports, which `CONFIG RESETSTAT` forgets.
#[derive(Default)]
pub(crate) struct Stats {
    /// `total_commands_processed`: every command that ran, a transaction's and a script's calls
    /// included.
    pub commands: u64,
    /// `total_connections_received`.
    pub connections: u64,
    /// `total_error_replies`.
    pub error_replies: u64,
    /// `keyspace_hits` and `keyspace_misses`: the reads that found their key and that did not
    /// (`Engine::read_lookup`).
    pub keyspace_hits: u64,
    pub keyspace_misses: u64,
    /// Per command, keyed by the address of its `'static` name (names are unique and never
    /// move), so counting a call is one multiply of a pointer; sorted by name when shown.
    by_command: HashMap<usize, (&'static str, CommandStat), BuildHasherDefault<AddressHasher>>,
    /// Per error code, in byte order (Redis's radix tree gives the same).
    errors: BTreeMap<Bytes, u64>,
    /// The last error a script's call replied, which the script's own error may repeat.
    script_error: Option<Bytes>,
    /// The slow log, which `CONFIG RESETSTAT` keeps.
    pub slowlog: SlowLog,
    /// Valkey's `COMMANDLOG` of requests and of replies larger than their thresholds
    /// (`commandlog-request-larger-than`, `commandlog-reply-larger-than`, in bytes: a request as
    /// the RESP array its arguments make, a reply as it is written in the client's protocol).
    pub large_requests: SizeLog,
    pub large_replies: SizeLog,
    /// The running command is one Redis would have blocked (a door that does not wait answered
    /// it as its timeout): like a block that ended, it is not slow-logged.
    pub skip_slowlog: bool,
    /// `instantaneous_ops_per_sec`'s samples.
    pub ops: OpsSampler,
    /// `lazyfreed_objects`: what Redis would have freed on its background thread (see
    /// [`Engine::count_lazy_free`]).
    pub lazyfreed: u64,
}

/// How many allocations a value must have before Redis frees it on its background thread
/// rather than at once (`LAZYFREE_THRESHOLD`).
pub(crate) const LAZYFREE_THRESHOLD: usize = 64;

/// How many samples `instantaneous_ops_per_sec` averages (Redis's `STATS_METRIC_SAMPLES`).
const OPS_SAMPLES: usize = 16;

/// How often a sample is taken, in ms (Redis's `serverCron` period for it).
const OPS_SAMPLE_PERIOD_MS: i64 = 100;

/// The samples of `instantaneous_ops_per_sec` (see the [module docs](self)).
#[derive(Default)]
pub(crate) struct OpsSampler {
    /// When the last sample was taken, and the command count then.
    last: Option<(i64, u64)>,
    samples: [u64; OPS_SAMPLES],
    next: usize,
}

impl OpsSampler {
    /// Takes a sample at `now` if the period has passed, `commands` being the count so far.
    pub(crate) fn tick(&mut self, now: i64, commands: u64) {
        let Some((at, before)) = self.last else {
            self.last = Some((now, commands));
            return;
        };
        let elapsed = now.saturating_sub(at);
        if elapsed < OPS_SAMPLE_PERIOD_MS {
            return;
        }
        let ops = commands.saturating_sub(before);
        self.samples[self.next] = ops.saturating_mul(1000) / elapsed.unsigned_abs();
        self.next = (self.next + 1) % OPS_SAMPLES;
        self.last = Some((now, commands));
    }

    /// `instantaneous_ops_per_sec`.
    pub(crate) fn per_second(&self) -> u64 {
        self.samples.iter().sum::<u64>() / OPS_SAMPLES as u64
    }
}

impl Stats {
    /// `CONFIG RESETSTAT`: every counter starts over; the slow log stays.
    pub(crate) fn reset(&mut self) {
        let slowlog = std::mem::take(&mut self.slowlog);
        let large_requests = std::mem::take(&mut self.large_requests);
        let large_replies = std::mem::take(&mut self.large_replies);
        *self = Stats {
            slowlog,
            large_requests,
            large_replies,
            ..Stats::default()
        };
    }

    fn command(&mut self, name: &'static str) -> &mut CommandStat {
        &mut self
            .by_command
            .entry(name.as_ptr() as usize)
            .or_insert((name, CommandStat::default()))
            .1
    }

    /// Counts an error reply under its code.
    fn error(&mut self, text: &[u8]) {
        self.error_replies += 1;
        let code = text.split(|&b| b == b' ').next().unwrap_or_default();
        if let Some(count) = self.errors.get_mut(code) {
            *count += 1;
        } else if self.errors.len() < ERROR_CODES {
            self.errors.insert(Bytes::copy_from_slice(code), 1);
        }
    }

    /// The commands that were called or refused, by name.
    fn commands_by_name(&self) -> Vec<(&'static str, CommandStat)> {
        let mut all: Vec<_> = self.by_command.values().copied().collect();
        all.sort_unstable_by_key(|(name, _)| *name);
        all
    }

    /// `INFO commandstats`.
    pub(crate) fn commandstats_section(&self) -> String {
        let mut s = String::from("# Commandstats\r\n");
        for (name, c) in self.commands_by_name() {
            let _ = write!(
                s,
                "cmdstat_{name}:calls={},usec=0,usec_per_call=0.00,rejected_calls={},\
                 failed_calls={}\r\n",
                c.calls, c.rejected, c.failed
            );
        }
        s
    }

    /// `INFO errorstats`.
    pub(crate) fn errorstats_section(&self) -> String {
        let mut s = String::from("# Errorstats\r\n");
        for (code, count) in &self.errors {
            let _ = write!(
                s,
                "errorstat_{}:count={count}\r\n",
                String::from_utf8_lossy(code)
            );
        }
        s
    }

    /// `INFO latencystats`, for `latency-tracking-info-percentiles` (`percentiles`): every call
    /// took 0 ns, which Redis's histogram records as its floor of 1 ns.
    pub(crate) fn latencystats_section(&self, tracking: bool, percentiles: &str) -> String {
        let mut s = String::from("# Latencystats\r\n");
        if !tracking {
            return s;
        }
        let fields: Vec<String> = percentiles
            .split_whitespace()
            .filter_map(|p| p.parse::<f64>().ok())
            .map(|p| format!("p{p}=0.001"))
            .collect();
        for (name, c) in self.commands_by_name() {
            if c.calls > 0 {
                let _ = write!(
                    s,
                    "latency_percentiles_usec_{name}:{}\r\n",
                    fields.join(",")
                );
            }
        }
        s
    }

    /// `LATENCY HISTOGRAM [command…]`: each named command (every one when none is named) that
    /// was called, with its calls all in the first bucket (1 µs).
    pub(crate) fn latency_histogram(&self, only: &[&str]) -> Frame {
        let entries = self
            .commands_by_name()
            .into_iter()
            .filter(|(name, c)| c.calls > 0 && (only.is_empty() || only.contains(name)))
            .map(|(name, c)| {
                let calls = i64::try_from(c.calls).unwrap_or(i64::MAX);
                let histogram = Frame::Map(vec![(Frame::Integer(1), Frame::Integer(calls))]);
                (
                    Frame::Bulk(Bytes::from_static(name.as_bytes())),
                    Frame::Map(vec![
                        (
                            Frame::Bulk(Bytes::from_static(b"calls")),
                            Frame::Integer(calls),
                        ),
                        (
                            Frame::Bulk(Bytes::from_static(b"histogram_usec")),
                            histogram,
                        ),
                    ]),
                )
            })
            .collect();
        Frame::Map(entries)
    }
}

/// One slow log entry.
#[derive(Clone, Debug)]
struct SlowEntry {
    id: u64,
    unix_seconds: i64,
    /// The duration (0 µs on the fake), or for Valkey's large-request and large-reply logs the
    /// size in bytes.
    value: i64,
    args: Vec<Bytes>,
    addr: Bytes,
    name: Bytes,
}

/// The slow log: the newest entry first, at most `max_len` of them.
#[derive(Debug)]
pub(crate) struct SlowLog {
    next_id: u64,
    entries: VecDeque<SlowEntry>,
    /// `slowlog-log-slower-than`, µs: negative turns the log off.
    slower_than: i64,
    /// `slowlog-max-len`.
    max_len: usize,
}

impl Default for SlowLog {
    fn default() -> SlowLog {
        SlowLog {
            next_id: 0,
            entries: VecDeque::new(),
            slower_than: 10_000,
            max_len: 128,
        }
    }
}

/// A log of sizes, its threshold in bytes: larger than 1 MB by default, as Valkey's
/// large-request and large-reply logs.
#[derive(Debug)]
pub(crate) struct SizeLog(pub SlowLog);

impl Default for SizeLog {
    fn default() -> SizeLog {
        SizeLog(SlowLog {
            slower_than: 1 << 20,
            ..SlowLog::default()
        })
    }
}

impl SlowLog {
    /// Whether a size of `bytes` is logged: past the threshold, which is not negative.
    #[inline]
    fn logs_size(&self, bytes: i64) -> bool {
        self.slower_than >= 0 && bytes > self.slower_than
    }

    /// Whether a command that ran in 0 µs is logged: only when the threshold is 0.
    #[inline]
    fn logs_instant_commands(&self) -> bool {
        self.slower_than == 0
    }

    /// `CONFIG SET slowlog-log-slower-than`.
    pub(crate) fn set_slower_than(&mut self, us: i64) {
        self.slower_than = us;
    }

    /// `CONFIG SET slowlog-max-len`: older entries past it go with the next entry, as in Redis.
    pub(crate) fn set_max_len(&mut self, len: usize) {
        self.max_len = len;
    }

    /// `SLOWLOG LEN`.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// `SLOWLOG RESET`: the entries go, the ids count on.
    pub(crate) fn reset(&mut self) {
        self.entries.clear();
    }

    /// `SLOWLOG GET [count]`: the newest `count` entries (all for None).
    pub(crate) fn newest(&self, count: Option<usize>) -> Frame {
        let n = count.unwrap_or(usize::MAX);
        Frame::Array(
            self.entries
                .iter()
                .take(n)
                .map(|e| {
                    Frame::Array(vec![
                        Frame::Integer(i64::try_from(e.id).unwrap_or(i64::MAX)),
                        Frame::Integer(e.unix_seconds),
                        Frame::Integer(e.value),
                        Frame::Array(e.args.iter().cloned().map(Frame::Bulk).collect()),
                        Frame::Bulk(e.addr.clone()),
                        Frame::Bulk(e.name.clone()),
                    ])
                })
                .collect(),
        )
    }

    fn push(&mut self, unix_seconds: i64, value: i64, argv: &[Bytes], addr: Bytes, name: Bytes) {
        let id = self.next_id;
        self.next_id += 1;
        self.entries.push_front(SlowEntry {
            id,
            unix_seconds,
            value,
            args: slowlog_args(argv),
            addr,
            name,
        });
        self.entries.truncate(self.max_len);
    }
}

/// The arguments as a slow log entry keeps them: secrets redacted, at most 32 (the last saying how
/// many more there were), each at most 128 bytes (then how many more bytes it had).
fn slowlog_args(argv: &[Bytes]) -> Vec<Bytes> {
    let redacted = redacted(argv);
    let shown = argv.len().min(SLOWLOG_MAX_ARGS);
    let mut args = Vec::with_capacity(shown);
    for (i, arg) in argv.iter().enumerate().take(shown) {
        if shown != argv.len() && i == shown - 1 {
            let more = argv.len() - shown + 1;
            args.push(Bytes::from(format!("... ({more} more arguments)")));
        } else if redacted.contains(&i) {
            args.push(Bytes::from_static(b"(redacted)"));
        } else if arg.len() > SLOWLOG_MAX_BYTES {
            let more = arg.len() - SLOWLOG_MAX_BYTES;
            let mut cut = arg[..SLOWLOG_MAX_BYTES].to_vec();
            cut.extend_from_slice(format!("... ({more} more bytes)").as_bytes());
            args.push(Bytes::from(cut));
        } else {
            args.push(arg.clone());
        }
    }
    args
}

/// An error reply's text, whether or not it is UTF-8.
fn error_bytes(frame: &Frame) -> Option<&[u8]> {
    match frame {
        Frame::Error(text) => Some(text.as_bytes()),
        Frame::ErrorBytes(text) => Some(text),
        _ => None,
    }
}

/// The positions of the arguments Redis keeps out of its logs: every argument of `AUTH`, and the
/// user name and password after `HELLO`'s `AUTH`.
fn redacted(argv: &[Bytes]) -> Vec<usize> {
    let Some(name) = argv.first() else {
        return Vec::new();
    };
    if name.eq_ignore_ascii_case(b"auth") {
        return (1..argv.len()).collect();
    }
    if name.eq_ignore_ascii_case(b"hello")
        && let Some(at) = argv.iter().position(|a| a.eq_ignore_ascii_case(b"auth"))
    {
        return vec![at + 1, at + 2];
    }
    Vec::new()
}

impl Engine {
    /// Counts a command `name` of client `client` that ran with `argv` and replied `reply`; a
    /// script's call (`from_script`) is logged as the script's Lua client.
    pub(crate) fn count_call(
        &mut self,
        client: u64,
        name: &'static str,
        argv: &[Bytes],
        reply: &Frame,
        from_script: bool,
    ) {
        let stats = &mut self.stats;
        stats.commands += 1;
        let command = stats.command(name);
        command.calls += 1;
        if let Some(text) = error_bytes(reply) {
            command.failed += 1;
            let repeated = !from_script
                && stats
                    .script_error
                    .take()
                    .is_some_and(|inner| text.starts_with(&inner));
            if !repeated {
                stats.error(text);
            }
            if from_script {
                stats.script_error = Some(Bytes::copy_from_slice(text));
            }
        } else if !from_script {
            stats.script_error = None;
        }
        let skip = std::mem::take(&mut self.stats.skip_slowlog);
        if self.stats.slowlog.logs_instant_commands() && name != "exec" && !skip {
            self.log_slow(client, argv, from_script, Log::Slow, 0);
        }
        if self.version().is_valkey() && !from_script {
            self.log_large(client, argv, reply);
        }
    }

    /// Valkey's large-request and large-reply logs: `argv` as the RESP array a client sends,
    /// `reply` as written in the client's protocol, each logged past its threshold.
    fn log_large(&mut self, client: u64, argv: &[Bytes], reply: &Frame) {
        let request = resp_array_len(argv);
        if self.stats.large_requests.0.logs_size(request) {
            self.log_slow(client, argv, false, Log::Requests, request);
        }
        if self.stats.large_replies.0.slower_than >= 0 {
            let mut out = bytes::BytesMut::new();
            crate::resp::encode(
                reply,
                self.protocol(crate::engine::ClientId(client)),
                &mut out,
            );
            let size = i64::try_from(out.len()).unwrap_or(i64::MAX);
            if self.stats.large_replies.0.logs_size(size) {
                self.log_slow(client, argv, false, Log::Replies, size);
            }
        }
    }

    /// Counts a blocking command `name` whose block ended with `reply` (Redis's
    /// `updateStatsOnUnblock`; it is not logged as slow).
    pub(crate) fn count_unblocked(&mut self, name: &'static str, reply: &Frame) {
        let stats = &mut self.stats;
        stats.commands += 1;
        let command = stats.command(name);
        command.calls += 1;
        if let Some(text) = error_bytes(reply) {
            command.failed += 1;
            stats.error(text);
        }
    }

    /// Counts a command `name` refused before it ran with `error` ("NULL" for a name that is no
    /// command: then only the error counts).
    pub(crate) fn count_rejection(&mut self, name: &'static str, error: &Frame) {
        let stats = &mut self.stats;
        if name != "NULL" {
            stats.command(name).rejected += 1;
        }
        if let Some(text) = error_bytes(error) {
            stats.error(text);
        }
    }

    /// Counts `objects` that a `FLUSH … ASYNC` of `items` (functions, scripts) hands to Redis's
    /// background thread: Redis frees that few at once, and more there, counting them in
    /// `lazyfreed_objects` once freed. The fake frees at once either way, so nothing is ever
    /// pending (`lazyfree_pending_objects` reads 0) and the count is there as soon as the
    /// flush returns.
    pub(crate) fn count_lazy_free(&mut self, items: usize, objects: usize) {
        if items > LAZYFREE_THRESHOLD {
            self.stats.lazyfreed += objects as u64;
        }
    }

    /// Counts a script's call refused before it ran (`scriptCall`'s checks) with `error`: a
    /// rejected call of the command `name` (None for a name that is no command) and the error,
    /// which the script's own error repeats when it fails for it.
    pub(crate) fn count_script_rejection(&mut self, name: Option<&'static str>, error: &[u8]) {
        let stats = &mut self.stats;
        if let Some(name) = name {
            stats.command(name).rejected += 1;
        }
        stats.error(error);
        stats.script_error = Some(Bytes::copy_from_slice(error));
    }

    fn log_slow(&mut self, client: u64, argv: &[Bytes], from_script: bool, log: Log, value: i64) {
        let unix_seconds = self.now().div_euclid(1000);
        let (addr, name) = if from_script {
            (Bytes::from_static(b"?:0"), Bytes::new())
        } else {
            let name = self
                .client_mut(client)
                .and_then(|c| c.name.clone())
                .unwrap_or_default();
            (Bytes::from(format!("in-process:{client}")), name)
        };
        let log = match log {
            Log::Slow => &mut self.stats.slowlog,
            Log::Requests => &mut self.stats.large_requests.0,
            Log::Replies => &mut self.stats.large_replies.0,
        };
        log.push(unix_seconds, value, argv, addr, name);
    }
}

/// Which of the command logs an entry goes to.
#[derive(Clone, Copy)]
enum Log {
    Slow,
    Requests,
    Replies,
}

/// The bytes of `argv` sent as a RESP array of bulk strings: `*N\r\n`, then `$len\r\n`, the
/// argument and `\r\n` each.
fn resp_array_len(argv: &[Bytes]) -> i64 {
    let digits = |n: usize| n.checked_ilog10().map_or(1, |d| d as usize + 1);
    let args: usize = argv
        .iter()
        .map(|a| 1 + digits(a.len()) + 2 + a.len() + 2)
        .sum();
    i64::try_from(1 + digits(argv.len()) + 2 + args).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<Bytes> {
        words.iter().map(|w| Bytes::from(w.to_string())).collect()
    }

    #[test]
    fn a_slow_log_entry_keeps_thirty_one_arguments_and_counts_the_rest() {
        let mut words = vec!["RPUSH".to_string(), "l".to_string()];
        words.extend((0..40).map(|i| i.to_string()));
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        let args = slowlog_args(&argv(&words));
        assert_eq!(args.len(), 32);
        assert_eq!(&args[30][..], b"28");
        assert_eq!(&args[31][..], b"... (11 more arguments)");
    }

    #[test]
    fn a_slow_log_entry_cuts_a_long_argument_at_128_bytes() {
        let long = "x".repeat(200);
        let args = slowlog_args(&argv(&["SET", "k", &long]));
        assert_eq!(args[2].len(), 128 + "... (72 more bytes)".len());
        assert!(args[2].ends_with(b"xx... (72 more bytes)"));
    }

    #[test]
    fn secrets_are_redacted() {
        let auth = slowlog_args(&argv(&["AUTH", "user", "pw"]));
        assert_eq!(auth, argv(&["AUTH", "(redacted)", "(redacted)"]));
        let hello = slowlog_args(&argv(&["HELLO", "3", "AUTH", "u", "p", "SETNAME", "n"]));
        assert_eq!(
            hello,
            argv(&[
                "HELLO",
                "3",
                "AUTH",
                "(redacted)",
                "(redacted)",
                "SETNAME",
                "n"
            ])
        );
    }

    #[test]
    fn the_error_table_stops_growing_at_its_bound_and_the_total_counts_on() {
        let mut stats = Stats::default();
        for i in 0..ERROR_CODES + 10 {
            stats.error(format!("E{i} x").as_bytes());
        }
        stats.error(b"E0 again");
        assert_eq!(stats.errors.len(), ERROR_CODES);
        assert_eq!(stats.errors[&Bytes::from_static(b"E0")], 2);
        assert_eq!(stats.error_replies, ERROR_CODES as u64 + 11);
    }
}
