//! A simulated run as a plain value: who does what, over which network, under which faults.
//!
//! A [`Case`] prints as text and parses back, so a failing case can be shown, shrunk, committed and
//! replayed (`SIM_CASE='…' cargo test -p sim-tests --test replay`). The same value is the scripted
//! API of the examples: "client a locks at 0 with the watchdog, works 8 s; pause a at 19 s for 36 s".
//!
//! The text is one item per line (or per `;`): a `case` line with the global settings, a `client`
//! line per client, a `fault` line per fault, each a list of `key=value` words.
//!
//! A lock is plain, fair or read-write for the whole case (`fair=0,1` on the case line lists the
//! fair ones, `rw=0,1` the read-write ones): Redisson's fair lock and read-write lock share their
//! lock key with the plain lock, so one name is never taken two ways, and every client of a fair
//! lock acquires it fairly. A client of a read-write lock takes it as its `role=` says: `read`,
//! `write`, or `downgrade` (a writer that takes a read hold and keeps it past its write release).
//! Both words are written only when they say something (a case without them is a case of plain
//! locks), so every case written before them reads and replays as it did.
//!
//! The server is one node unless the case line says `replicas=N`: then it is a primary with `N`
//! replicas on the one clock and seed, each batch of the primary's writes reaching a replica after
//! a lag drawn in `lag=FIXED..MAX` (ms), and `sync=on|off` says whether the lock's replica check
//! (`WAIT` after each lock write) is on. Two failovers exist, told apart by their words:
//! `fault failover at=T replica=R` promotes replica `R` with whatever it has received by `T` (the
//! old primary's connections close; the other replicas are left behind with it, so the new primary
//! has none); `fault failover at=T lag=L`, the older word, keeps its meaning on any server: the
//! node rolls back, in place, the writes of its last `L` ms, as a replica lagging by `L` would
//! lack them. The three words are written only on a case with replicas.
//!
//! A case whose line says `shards=N` runs on a Redis Cluster of `N` shards, each a primary with
//! the case's replicas (`replicas=`, `lag=`, `sync=` as above, per shard), the slots split as
//! `redis-cli --cluster create` splits them, so lock `Ln`'s keys live on the shard of `Ln`'s slot.
//! Its words: `fault failover at=T replica=R shard=S` promotes shard `S`'s replica;
//! `fault migrate lock=N shard=S at=T for=D` moves lock `N`'s slot to shard `S`, its keys at times
//! spread over `D` ms from `T` (clients meet `ASK`, then `MOVED`); and, on any case with replicas,
//! `fault partition node=P at=T for=D clients=a,b` cuts node `P` (the topology's port order: a
//! cluster's primaries by shard, then their replicas; or the primary, then its replicas) off from
//! the rest of its shard for `D` ms (its replicas stall, or it stalls), and from clients `a` and
//! `b`, whose requests to it and its replies to them are lost. `shard=` is written only on a
//! cluster, `clients=` only when it names one.

use std::fmt;
use std::str::FromStr;

/// How a client acquires its lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AcquireKind {
    /// `lock()`: wait forever, lease = watchdog timeout, renewed by the watchdog.
    Watchdog,
    /// `lock_with_lease(ms)`: wait forever, fixed lease, no watchdog.
    Lease(u64),
    /// `try_lock(wait, lease)`: wait at most `wait` ms; `lease` None = watchdog.
    Try {
        /// The wait budget in ms.
        wait: u64,
        /// The lease in ms, or the watchdog.
        lease: Option<u64>,
    },
}

/// How a client of a read-write lock takes it (on any other lock, every client is a writer: it
/// holds the lock alone).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum RwRole {
    /// The write hold; a re-entry re-enters it.
    #[default]
    Write,
    /// A read hold, shared with other readers; a re-entry takes one more read count.
    Read,
    /// The write hold, then a read hold of the same owner (the downgrade) in place of the
    /// re-entry; the write is given back halfway through the work and the read at its end, so the
    /// second half of the work is done as a reader.
    Downgrade,
}

impl RwRole {
    fn word(self) -> &'static str {
        match self {
            RwRole::Write => "write",
            RwRole::Read => "read",
            RwRole::Downgrade => "downgrade",
        }
    }
}

/// One client and its workload: a loop of acquire, work, unlock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientSpec {
    /// Its name in timelines (`a`, `b`, …).
    pub name: String,
    /// Which lock (`L0`, `L1`, …) it contends for.
    pub lock: u32,
    /// How it acquires.
    pub acquire: AcquireKind,
    /// Whether it draws fencing tokens and writes to the fenced resource with them (never on a
    /// fair lock, which draws no token).
    pub fenced: bool,
    /// When it starts, ms.
    pub start: u64,
    /// How long it works while holding the lock, ms (drawn in this range per cycle).
    pub work: (u64, u64),
    /// How long it waits between cycles, ms.
    pub think: u64,
    /// Whether each cycle re-enters once (1) while holding, releasing that hold before the end.
    pub reentry: u32,
    /// How many cycles it runs; 0 = until the horizon.
    pub cycles: u32,
    /// How fast its clock runs against the simulation's, in parts per million (+ = fast).
    pub drift_ppm: i64,
    /// How it takes a read-write lock (ignored on any other lock).
    pub role: RwRole,
}

impl ClientSpec {
    /// A client that locks `lock` with the watchdog at `start` and works `work` ms, once.
    pub fn new(name: &str, lock: u32) -> ClientSpec {
        ClientSpec {
            name: name.to_owned(),
            lock,
            acquire: AcquireKind::Watchdog,
            fenced: true,
            start: 0,
            work: (1_000, 1_000),
            think: 0,
            reentry: 0,
            cycles: 1,
            drift_ppm: 0,
            role: RwRole::Write,
        }
    }
}

/// Something that goes wrong, at a virtual time, in the case's own words.
///
/// A run turns these into fake-redis's faults once, when it starts (the world's network does): a
/// window on a client's messages becomes a fault in a plan the network asks about each message; a
/// crash, a restart, a failover and a clock jump become the engine's. The case keeps its own type
/// because its text names clients and windows in simulation ms, and because its pause and its
/// reply windows do not mean quite what fake-redis's do (`world/network.rs` says how).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The client stops for `for_ms` (a GC pause): nothing it sends leaves, nothing reaches it.
    Pause {
        /// The client's index.
        client: usize,
        /// When, ms.
        at: u64,
        /// How long, ms.
        for_ms: u64,
    },
    /// The client dies: its connection closes and it never acts again.
    Crash {
        /// The client's index.
        client: usize,
        /// When, ms.
        at: u64,
    },
    /// Requests the client sends in `[from, to)` are lost (never applied).
    DropRequests {
        /// The client's index.
        client: usize,
        /// From, ms.
        from: u64,
        /// To, ms.
        to: u64,
    },
    /// Replies the server sends to the client in `[from, to)` are lost (the calls were applied).
    DropReplies {
        /// The client's index.
        client: usize,
        /// From, ms.
        from: u64,
        /// To, ms.
        to: u64,
    },
    /// Requests the client sends in `[from, to)` arrive `by` ms late (they still apply).
    DelayRequests {
        /// The client's index.
        client: usize,
        /// From, ms.
        from: u64,
        /// To, ms.
        to: u64,
        /// The delay, ms.
        by: u64,
    },
    /// Replies to the client in `[from, to)` arrive `by` ms late.
    DelayReplies {
        /// The client's index.
        client: usize,
        /// From, ms.
        from: u64,
        /// To, ms.
        to: u64,
        /// The delay, ms.
        by: u64,
    },
    /// Pub/sub messages to the client in `[from, to)` are lost.
    DropPubSub {
        /// The client's index.
        client: usize,
        /// From, ms.
        from: u64,
        /// To, ms.
        to: u64,
    },
    /// The server restarts without persistence: data and scripts are gone.
    Restart {
        /// When, ms.
        at: u64,
    },
    /// The server fails over to a replica that lags by `lag` ms of writes.
    Failover {
        /// When, ms.
        at: u64,
        /// How many ms of the newest writes are lost.
        lag: u64,
    },
    /// The primary fails over to its replica `replica`, promoted with whatever it has received
    /// (a case with replicas; without one, or once the replica is primary or left behind, nothing
    /// happens). On a cluster, the primary of shard `shard`.
    Promote {
        /// When, ms.
        at: u64,
        /// The replica's index.
        replica: u16,
        /// The shard (0 unless the case is a cluster).
        shard: u16,
    },
    /// A cluster's slot of lock `lock` moves to shard `to_shard`: from `at` the slot migrates,
    /// its keys move one by one at times spread over `for_ms`, and then the shard owns it.
    Migrate {
        /// The lock whose slot moves.
        lock: u32,
        /// The shard it moves to.
        to_shard: u16,
        /// When the migration starts, ms.
        at: u64,
        /// How long it takes, ms.
        for_ms: u64,
    },
    /// Node `node` (the topology's port order) is cut off from the others of its shard, and
    /// from the clients `clients`, for `for_ms`: its replication stalls, and those clients'
    /// requests to it and its replies to them are lost.
    Partition {
        /// The node.
        node: u16,
        /// When, ms.
        at: u64,
        /// How long, ms.
        for_ms: u64,
        /// The clients cut off from it (indices), in ascending order.
        clients: Vec<usize>,
    },
    /// The server's clock jumps by `by` ms (forward expires keys early).
    ClockJump {
        /// When, ms.
        at: u64,
        /// By how much, ms.
        by: i64,
    },
}

impl Fault {
    /// When the fault starts, ms.
    pub fn at(&self) -> u64 {
        match *self {
            Fault::Pause { at, .. }
            | Fault::Crash { at, .. }
            | Fault::Restart { at }
            | Fault::Failover { at, .. }
            | Fault::Promote { at, .. }
            | Fault::Migrate { at, .. }
            | Fault::Partition { at, .. }
            | Fault::ClockJump { at, .. } => at,
            Fault::DropRequests { from, .. }
            | Fault::DropReplies { from, .. }
            | Fault::DelayRequests { from, .. }
            | Fault::DelayReplies { from, .. }
            | Fault::DropPubSub { from, .. } => from,
        }
    }

    /// The client the fault strikes, if it strikes one.
    pub fn client_mut(&mut self) -> Option<&mut usize> {
        match self {
            Fault::Pause { client, .. }
            | Fault::Crash { client, .. }
            | Fault::DropRequests { client, .. }
            | Fault::DropReplies { client, .. }
            | Fault::DelayRequests { client, .. }
            | Fault::DelayReplies { client, .. }
            | Fault::DropPubSub { client, .. } => Some(client),
            Fault::Restart { .. }
            | Fault::Failover { .. }
            | Fault::Promote { .. }
            | Fault::Migrate { .. }
            | Fault::Partition { .. }
            | Fault::ClockJump { .. } => None,
        }
    }

    /// Whether the fault loses data on the server (so server-side exclusivity and the fencing
    /// counter may break: the documented limit of a single Redis).
    pub fn loses_data(&self) -> bool {
        matches!(
            self,
            Fault::Restart { .. } | Fault::Failover { .. } | Fault::Promote { .. }
        )
    }
}

/// A whole run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Case {
    /// The root seed: every random draw of the run derives from it.
    pub seed: u64,
    /// When the run stops, ms.
    pub horizon: u64,
    /// The clients' watchdog timeout, ms.
    pub watchdog: u64,
    /// The drift margin rate the clients assume (parts per million of a lease).
    pub margin_ppm: u64,
    /// One-way network latency range, ms.
    pub latency: (u64, u64),
    /// Probability of losing any one message, per mille, per direction: (client to server, server
    /// to client). The text form is `loss=UP/DOWN`, or `loss=N` for both.
    pub loss: (u32, u32),
    /// The clients.
    pub clients: Vec<ClientSpec>,
    /// The faults.
    pub faults: Vec<Fault>,
    /// The locks taken as Redisson's fair lock, in ascending order.
    pub fair: Vec<u32>,
    /// The locks taken as Redisson's read-write lock, in ascending order.
    pub rw: Vec<u32>,
    /// How many replicas the primary has (0: the server is one node).
    pub replicas: u16,
    /// Each replica's lag, ms: fixed, and the most a batch's seeded jitter takes it to.
    pub replica_lag: (u64, u64),
    /// Whether the lock's replica check is on (it matters only with replicas).
    pub sync: bool,
    /// How many shards the cluster has (0: the server is no cluster).
    pub shards: u16,
}

impl Case {
    /// A case with no clients and no faults.
    pub fn new(seed: u64, horizon: u64) -> Case {
        Case {
            seed,
            horizon,
            watchdog: 30_000,
            margin_ppm: 10_000,
            latency: (1, 1),
            loss: (0, 0),
            clients: Vec::new(),
            faults: Vec::new(),
            fair: Vec::new(),
            rw: Vec::new(),
            replicas: 0,
            replica_lag: (0, 0),
            sync: true,
            shards: 0,
        }
    }

    /// Whether lock `lock` is a fair lock in this case.
    pub fn is_fair(&self, lock: u32) -> bool {
        self.fair.contains(&lock)
    }

    /// Whether lock `lock` is a read-write lock in this case.
    pub fn is_rw(&self, lock: u32) -> bool {
        self.rw.contains(&lock)
    }

    /// The text on one line (items separated by `; `), for a command line.
    pub fn one_line(&self) -> String {
        self.to_string().trim_end().replace('\n', "; ")
    }

    fn client_name(&self, i: usize) -> &str {
        self.clients.get(i).map_or("?", |c| c.name.as_str())
    }
}

fn range(r: (u64, u64)) -> String {
    format!("{}..{}", r.0, r.1)
}

impl fmt::Display for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "case seed={} horizon={} watchdog={} margin_ppm={} latency={} loss={}/{}",
            self.seed,
            self.horizon,
            self.watchdog,
            self.margin_ppm,
            range(self.latency),
            self.loss.0,
            self.loss.1
        )?;
        if !self.fair.is_empty() {
            let locks: Vec<String> = self.fair.iter().map(u32::to_string).collect();
            write!(f, " fair={}", locks.join(","))?;
        }
        if !self.rw.is_empty() {
            let locks: Vec<String> = self.rw.iter().map(u32::to_string).collect();
            write!(f, " rw={}", locks.join(","))?;
        }
        if self.shards > 0 {
            write!(f, " shards={}", self.shards)?;
        }
        if self.replicas > 0 {
            write!(
                f,
                " replicas={} lag={} sync={}",
                self.replicas,
                range(self.replica_lag),
                if self.sync { "on" } else { "off" }
            )?;
        }
        writeln!(f)?;
        for c in &self.clients {
            let acquire = match c.acquire {
                AcquireKind::Watchdog => "watchdog".to_owned(),
                AcquireKind::Lease(ms) => format!("lease:{ms}"),
                AcquireKind::Try { wait, lease: None } => format!("try:{wait}"),
                AcquireKind::Try {
                    wait,
                    lease: Some(l),
                } => format!("try:{wait}:{l}"),
            };
            write!(
                f,
                "client {} lock={} acquire={acquire} fenced={} start={} work={} think={} reentry={} cycles={} drift_ppm={}",
                c.name,
                c.lock,
                c.fenced,
                c.start,
                range(c.work),
                c.think,
                c.reentry,
                c.cycles,
                c.drift_ppm
            )?;
            if c.role != RwRole::default() {
                write!(f, " role={}", c.role.word())?;
            }
            writeln!(f)?;
        }
        for fault in &self.faults {
            match *fault {
                Fault::Pause { client, at, for_ms } => writeln!(
                    f,
                    "fault pause {} at={at} for={for_ms}",
                    self.client_name(client)
                )?,
                Fault::Crash { client, at } => {
                    writeln!(f, "fault crash {} at={at}", self.client_name(client))?
                }
                Fault::DropRequests { client, from, to } => writeln!(
                    f,
                    "fault drop-requests {} from={from} to={to}",
                    self.client_name(client)
                )?,
                Fault::DropReplies { client, from, to } => writeln!(
                    f,
                    "fault drop-replies {} from={from} to={to}",
                    self.client_name(client)
                )?,
                Fault::DelayRequests {
                    client,
                    from,
                    to,
                    by,
                } => writeln!(
                    f,
                    "fault delay-requests {} from={from} to={to} by={by}",
                    self.client_name(client)
                )?,
                Fault::DelayReplies {
                    client,
                    from,
                    to,
                    by,
                } => writeln!(
                    f,
                    "fault delay-replies {} from={from} to={to} by={by}",
                    self.client_name(client)
                )?,
                Fault::DropPubSub { client, from, to } => writeln!(
                    f,
                    "fault drop-pubsub {} from={from} to={to}",
                    self.client_name(client)
                )?,
                Fault::Restart { at } => writeln!(f, "fault restart at={at}")?,
                Fault::Failover { at, lag } => writeln!(f, "fault failover at={at} lag={lag}")?,
                Fault::Promote { at, replica, shard } => {
                    write!(f, "fault failover at={at} replica={replica}")?;
                    if self.shards > 0 {
                        write!(f, " shard={shard}")?;
                    }
                    writeln!(f)?
                }
                Fault::Migrate {
                    lock,
                    to_shard,
                    at,
                    for_ms,
                } => writeln!(
                    f,
                    "fault migrate lock={lock} shard={to_shard} at={at} for={for_ms}"
                )?,
                Fault::Partition {
                    node,
                    at,
                    for_ms,
                    ref clients,
                } => {
                    write!(f, "fault partition node={node} at={at} for={for_ms}")?;
                    if !clients.is_empty() {
                        let names: Vec<&str> =
                            clients.iter().map(|&c| self.client_name(c)).collect();
                        write!(f, " clients={}", names.join(","))?;
                    }
                    writeln!(f)?
                }
                Fault::ClockJump { at, by } => writeln!(f, "fault clock-jump at={at} by={by}")?,
            }
        }
        Ok(())
    }
}

/// Why a case's text did not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("case text, item {item}: {message}")]
pub struct ParseError {
    /// Which item (1-based).
    pub item: usize,
    /// What is wrong.
    pub message: String,
}

struct Words<'a> {
    item: usize,
    pairs: Vec<(&'a str, &'a str)>,
}

impl<'a> Words<'a> {
    /// The `key=value` words of item `item` (a word without `=` has an empty value).
    fn new(item: usize, words: &[&'a str]) -> Words<'a> {
        Words {
            item,
            pairs: words
                .iter()
                .map(|w| w.split_once('=').unwrap_or((w, "")))
                .collect(),
        }
    }

    fn err(&self, message: impl Into<String>) -> ParseError {
        ParseError {
            item: self.item,
            message: message.into(),
        }
    }

    fn get(&self, key: &str) -> Option<&'a str> {
        self.pairs.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }

    fn num<T: FromStr>(&self, key: &str) -> Result<T, ParseError> {
        let v = self
            .get(key)
            .ok_or_else(|| self.err(format!("missing {key}=")))?;
        v.parse()
            .map_err(|_| self.err(format!("{key}={v} is not a number")))
    }

    fn num_or<T: FromStr>(&self, key: &str, default: T) -> Result<T, ParseError> {
        if self.get(key).is_some() {
            self.num(key)
        } else {
            Ok(default)
        }
    }

    fn range(&self, key: &str, default: (u64, u64)) -> Result<(u64, u64), ParseError> {
        let Some(v) = self.get(key) else {
            return Ok(default);
        };
        let bad = || self.err(format!("{key}={v} is not a range like 1..3"));
        let (a, b) = v.split_once("..").ok_or_else(bad)?;
        let (a, b) = (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
        if a > b {
            return Err(bad());
        }
        Ok((a, b))
    }

    /// A list of lock numbers, `key=0,1` (none when the key is absent), sorted and without
    /// repeats.
    fn locks(&self, key: &str) -> Result<Vec<u32>, ParseError> {
        let Some(v) = self.get(key) else {
            return Ok(Vec::new());
        };
        let mut locks = v
            .split(',')
            .map(|n| n.parse())
            .collect::<Result<Vec<u32>, _>>()
            .map_err(|_| self.err(format!("{key}={v} is not a list of locks like 0,1")))?;
        locks.sort_unstable();
        locks.dedup();
        Ok(locks)
    }

    /// A per-mille rate per direction: `key=UP/DOWN`, or `key=N` for both.
    fn up_down(&self, key: &str, default: (u32, u32)) -> Result<(u32, u32), ParseError> {
        let Some(v) = self.get(key) else {
            return Ok(default);
        };
        let num = |n: &str| {
            n.parse()
                .map_err(|_| self.err(format!("{key}={v} is not N or UP/DOWN (per mille)")))
        };
        match v.split_once('/') {
            Some((up, down)) => Ok((num(up)?, num(down)?)),
            None => num(v).map(|n| (n, n)),
        }
    }
}

impl FromStr for Case {
    type Err = ParseError;

    fn from_str(text: &str) -> Result<Case, ParseError> {
        let mut case: Option<Case> = None;
        let mut faults: Vec<(usize, Vec<&str>)> = Vec::new();
        for (i, line) in text
            .split(['\n', ';'])
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .enumerate()
        {
            let item = i + 1;
            let mut tokens = line.split_whitespace();
            let kind = tokens.next().unwrap_or_default();
            let rest: Vec<&str> = tokens.collect();
            match kind {
                "case" => {
                    let w = Words::new(item, &rest);
                    let mut c = Case::new(w.num("seed")?, w.num("horizon")?);
                    c.watchdog = w.num_or("watchdog", c.watchdog)?;
                    c.margin_ppm = w.num_or("margin_ppm", c.margin_ppm)?;
                    c.latency = w.range("latency", c.latency)?;
                    c.loss = w.up_down("loss", c.loss)?;
                    c.fair = w.locks("fair")?;
                    c.rw = w.locks("rw")?;
                    c.replicas = w.num_or("replicas", 0)?;
                    c.shards = w.num_or("shards", 0)?;
                    c.replica_lag = w.range("lag", c.replica_lag)?;
                    c.sync = match w.get("sync") {
                        None | Some("on") => true,
                        Some("off") => false,
                        Some(other) => return Err(w.err(format!("sync={other} is on or off"))),
                    };
                    case = Some(c);
                }
                "client" => {
                    let w = Words::new(item, rest.get(1..).unwrap_or_default());
                    let c = case
                        .as_mut()
                        .ok_or_else(|| w.err("a client before the case line"))?;
                    let name = rest.first().ok_or_else(|| w.err("a client needs a name"))?;
                    let mut spec = ClientSpec::new(name, w.num_or("lock", 0)?);
                    spec.acquire = parse_acquire(w.get("acquire").unwrap_or("watchdog"))
                        .ok_or_else(|| {
                            w.err("acquire= is watchdog, lease:MS, try:MS or try:MS:MS")
                        })?;
                    spec.fenced = w.get("fenced").is_none_or(|v| v != "false");
                    spec.start = w.num_or("start", 0)?;
                    spec.work = w.range("work", spec.work)?;
                    spec.think = w.num_or("think", 0)?;
                    spec.reentry = w.num_or("reentry", 0)?;
                    spec.cycles = w.num_or("cycles", 1)?;
                    spec.drift_ppm = w.num_or("drift_ppm", 0)?;
                    spec.role = match w.get("role") {
                        None | Some("write") => RwRole::Write,
                        Some("read") => RwRole::Read,
                        Some("downgrade") => RwRole::Downgrade,
                        Some(other) => {
                            return Err(
                                w.err(format!("role={other}: a role is read, write or downgrade"))
                            );
                        }
                    };
                    c.clients.push(spec);
                }
                "fault" => faults.push((item, rest)),
                other => {
                    return Err(ParseError {
                        item,
                        message: format!("unknown item {other:?} (case, client or fault)"),
                    });
                }
            }
        }
        let mut case = case.ok_or(ParseError {
            item: 0,
            message: "no case line".into(),
        })?;
        for (item, rest) in faults {
            let fault = parse_fault(&case, item, &rest)?;
            case.faults.push(fault);
        }
        Ok(case)
    }
}

fn parse_acquire(v: &str) -> Option<AcquireKind> {
    let parts: Vec<&str> = v.split(':').collect();
    Some(match parts.as_slice() {
        ["watchdog"] => AcquireKind::Watchdog,
        ["lease", ms] => AcquireKind::Lease(ms.parse().ok()?),
        ["try", wait] => AcquireKind::Try {
            wait: wait.parse().ok()?,
            lease: None,
        },
        ["try", wait, lease] => AcquireKind::Try {
            wait: wait.parse().ok()?,
            lease: Some(lease.parse().ok()?),
        },
        _ => return None,
    })
}

fn parse_fault(case: &Case, item: usize, rest: &[&str]) -> Result<Fault, ParseError> {
    let kind = rest.first().copied().unwrap_or_default();
    let targets_client = !matches!(
        kind,
        "restart" | "failover" | "clock-jump" | "migrate" | "partition"
    );
    let skip = if targets_client { 2 } else { 1 };
    let w = Words::new(item, rest.get(skip..).unwrap_or_default());
    let client = || -> Result<usize, ParseError> {
        let name = rest
            .get(1)
            .ok_or_else(|| w.err(format!("{kind} needs a client")))?;
        case.clients
            .iter()
            .position(|c| c.name == *name)
            .ok_or_else(|| w.err(format!("no client named {name}")))
    };
    Ok(match kind {
        "pause" => Fault::Pause {
            client: client()?,
            at: w.num("at")?,
            for_ms: w.num("for")?,
        },
        "crash" => Fault::Crash {
            client: client()?,
            at: w.num("at")?,
        },
        "drop-requests" => Fault::DropRequests {
            client: client()?,
            from: w.num("from")?,
            to: w.num("to")?,
        },
        "drop-replies" => Fault::DropReplies {
            client: client()?,
            from: w.num("from")?,
            to: w.num("to")?,
        },
        "delay-requests" => Fault::DelayRequests {
            client: client()?,
            from: w.num("from")?,
            to: w.num("to")?,
            by: w.num("by")?,
        },
        "delay-replies" => Fault::DelayReplies {
            client: client()?,
            from: w.num("from")?,
            to: w.num("to")?,
            by: w.num("by")?,
        },
        "drop-pubsub" => Fault::DropPubSub {
            client: client()?,
            from: w.num("from")?,
            to: w.num("to")?,
        },
        "restart" => Fault::Restart { at: w.num("at")? },
        "failover" if w.get("replica").is_some() => Fault::Promote {
            at: w.num("at")?,
            replica: w.num("replica")?,
            shard: w.num_or("shard", 0)?,
        },
        "migrate" => Fault::Migrate {
            lock: w.num("lock")?,
            to_shard: w.num("shard")?,
            at: w.num("at")?,
            for_ms: w.num("for")?,
        },
        "partition" => {
            let mut clients = match w.get("clients") {
                None => Vec::new(),
                Some(names) => names
                    .split(',')
                    .map(|name| {
                        case.clients
                            .iter()
                            .position(|c| c.name == name)
                            .ok_or_else(|| w.err(format!("no client named {name}")))
                    })
                    .collect::<Result<Vec<usize>, ParseError>>()?,
            };
            clients.sort_unstable();
            clients.dedup();
            Fault::Partition {
                node: w.num("node")?,
                at: w.num("at")?,
                for_ms: w.num("for")?,
                clients,
            }
        }
        "failover" => Fault::Failover {
            at: w.num("at")?,
            lag: w.num("lag")?,
        },
        "clock-jump" => Fault::ClockJump {
            at: w.num("at")?,
            by: w.num("by")?,
        },
        other => return Err(w.err(format!("unknown fault {other:?}"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Case {
        let mut case = Case::new(42, 120_000);
        let mut a = ClientSpec::new("a", 0);
        a.work = (8_000, 8_000);
        let mut b = ClientSpec::new("b", 0);
        b.acquire = AcquireKind::Try {
            wait: 3_000,
            lease: Some(10_000),
        };
        b.start = 1_000;
        b.fenced = false;
        b.drift_ppm = -200;
        case.clients = vec![a, b];
        case.faults = vec![
            Fault::Pause {
                client: 0,
                at: 19_000,
                for_ms: 36_000,
            },
            Fault::Failover { at: 5, lag: 100 },
            Fault::ClockJump { at: 7, by: -3 },
            Fault::DelayReplies {
                client: 1,
                from: 1,
                to: 2,
                by: 3,
            },
            Fault::DelayRequests {
                client: 0,
                from: 4,
                to: 9,
                by: 2,
            },
        ];
        case.loss = (3, 7);
        case.fair = vec![0, 2];
        case.rw = vec![1];
        case.clients[1].lock = 1;
        case.clients[1].role = RwRole::Downgrade;
        case
    }

    #[test]
    fn a_case_prints_and_parses_back() {
        let case = sample();
        let text = case.to_string();
        assert_eq!(text.parse::<Case>(), Ok(case.clone()));
        assert_eq!(case.one_line().parse::<Case>(), Ok(case));
    }

    #[test]
    fn every_fault_kind_prints_and_parses_back() {
        let mut case = sample();
        case.faults = vec![
            Fault::Pause {
                client: 1,
                at: 1,
                for_ms: 2,
            },
            Fault::Crash { client: 0, at: 3 },
            Fault::DropRequests {
                client: 1,
                from: 4,
                to: 5,
            },
            Fault::DropReplies {
                client: 0,
                from: 6,
                to: 7,
            },
            Fault::DelayRequests {
                client: 1,
                from: 8,
                to: 9,
                by: 10,
            },
            Fault::DelayReplies {
                client: 0,
                from: 11,
                to: 12,
                by: 13,
            },
            Fault::DropPubSub {
                client: 1,
                from: 14,
                to: 15,
            },
            Fault::Restart { at: 16 },
            Fault::Failover { at: 17, lag: 18 },
            Fault::ClockJump { at: 19, by: -20 },
            Fault::Promote {
                at: 21,
                replica: 1,
                shard: 0,
            },
            Fault::Partition {
                node: 1,
                at: 22,
                for_ms: 23,
                clients: vec![0, 1],
            },
            Fault::Partition {
                node: 0,
                at: 24,
                for_ms: 25,
                clients: vec![],
            },
        ];
        case.replicas = 2;
        case.replica_lag = (30, 45);
        case.sync = false;
        assert_eq!(case.to_string().parse::<Case>(), Ok(case.clone()));
        assert_eq!(case.one_line().parse::<Case>(), Ok(case));
    }

    #[test]
    fn a_case_without_fair_locks_prints_no_fair_word() {
        let mut case = sample();
        case.fair.clear();
        assert!(!case.to_string().contains("fair="), "{case}");
        let err = "case seed=1 horizon=5 fair=0,x"
            .parse::<Case>()
            .unwrap_err();
        assert!(err.message.contains("fair=0,x"), "{}", err.message);
    }

    #[test]
    fn a_case_without_read_write_locks_prints_no_rw_or_role_word() {
        let mut case = sample();
        case.rw.clear();
        case.clients[1].role = RwRole::Write;
        let text = case.to_string();
        assert!(!text.contains("rw=") && !text.contains("role="), "{text}");
        // A case line written before read-write locks existed reads as one of plain locks.
        let old: Case = "case seed=1 horizon=5; client a lock=0 drift_ppm=0"
            .parse()
            .unwrap();
        assert!(old.rw.is_empty());
        assert_eq!(old.clients[0].role, RwRole::Write);
        for role in [RwRole::Read, RwRole::Downgrade] {
            let mut case = sample();
            case.clients[0].role = role;
            assert_eq!(case.one_line().parse::<Case>(), Ok(case));
        }
        let err = "case seed=1 horizon=5 rw=0; client a role=reader"
            .parse::<Case>()
            .unwrap_err();
        assert_eq!(err.item, 2);
        assert!(err.message.contains("role=reader"), "{}", err.message);
    }

    #[test]
    fn a_case_without_replicas_prints_no_replica_words_and_old_failovers_keep_their_meaning() {
        let case = sample();
        let text = case.to_string();
        assert!(
            !text.contains("replicas=") && !text.contains("sync="),
            "{text}"
        );
        let old: Case = "case seed=1 horizon=5; fault failover at=3 lag=7"
            .parse()
            .unwrap();
        assert_eq!(old.replicas, 0);
        assert_eq!(old.faults, vec![Fault::Failover { at: 3, lag: 7 }]);
        let new: Case =
            "case seed=1 horizon=5 replicas=1 lag=20..30 sync=off; fault failover at=3 replica=0"
                .parse()
                .unwrap();
        assert_eq!(
            (new.replicas, new.replica_lag, new.sync),
            (1, (20, 30), false)
        );
        assert_eq!(
            new.faults,
            vec![Fault::Promote {
                at: 3,
                replica: 0,
                shard: 0
            }]
        );
        let err = "case seed=1 horizon=5 replicas=1 sync=maybe"
            .parse::<Case>()
            .unwrap_err();
        assert!(err.message.contains("sync=maybe"), "{}", err.message);
    }

    #[test]
    fn a_cluster_case_names_its_shards_and_its_faults_name_theirs() {
        let mut case = sample();
        case.shards = 3;
        case.replicas = 1;
        case.replica_lag = (5, 10);
        case.faults = vec![
            Fault::Promote {
                at: 1,
                replica: 0,
                shard: 2,
            },
            Fault::Migrate {
                lock: 1,
                to_shard: 0,
                at: 2,
                for_ms: 300,
            },
            Fault::Partition {
                node: 1,
                at: 4,
                for_ms: 5,
                clients: vec![1],
            },
        ];
        let text = case.one_line();
        assert!(text.contains(" shards=3 replicas=1"), "{text}");
        assert!(text.contains("replica=0 shard=2"), "{text}");
        assert!(text.contains("clients=b"), "{text}");
        assert_eq!(text.parse::<Case>(), Ok(case));
        // A case without shards writes no shard word, and its failover reads as shard 0's.
        let plain = "case seed=1 horizon=5 replicas=1; fault failover at=3 replica=0";
        let parsed: Case = plain.parse().unwrap();
        assert_eq!(parsed.shards, 0);
        assert!(!parsed.one_line().contains("shard"), "{parsed}");
        let err = "case seed=1 horizon=5 shards=3 replicas=1; client a; fault partition node=0 \
                   at=1 for=2 clients=a,zz"
            .parse::<Case>()
            .unwrap_err();
        assert!(
            err.message.contains("no client named zz"),
            "{}",
            err.message
        );
    }

    #[test]
    fn one_loss_rate_stands_for_both_directions() {
        let case: Case = "case seed=1 horizon=5 loss=7".parse().unwrap();
        assert_eq!(case.loss, (7, 7));
        let err = "case seed=1 horizon=5 loss=7/x"
            .parse::<Case>()
            .unwrap_err();
        assert_eq!(err.item, 1);
        assert!(err.message.contains("loss=7/x"), "{}", err.message);
    }

    #[test]
    fn bad_text_names_the_item() {
        let err = "case seed=1 horizon=5; client a acquire=forever"
            .parse::<Case>()
            .unwrap_err();
        assert_eq!(err.item, 2);
        let err = "case seed=1 horizon=5; fault pause zz at=1 for=2"
            .parse::<Case>()
            .unwrap_err();
        assert!(err.message.contains("no client named zz"));
    }
}
