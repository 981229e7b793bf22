//! A run's fault schedule: the faults one seed draws from a [`Swarm`], as a plain value that
//! prints as one line and parses back (the replay command carries it).
//!
//! Clients are named `a`, `b`, `c`, … in the order the race declares them; times are virtual
//! milliseconds since the run began.

use fake_redis::seed::Seed;
use std::fmt;

/// One fault of a schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// A GC pause of the whole client process: its code is not polled and nothing it sends or
    /// receives moves for `ms`, from `at`.
    Pause {
        /// The client.
        client: usize,
        /// When it starts.
        at: u64,
        /// How long it lasts.
        ms: u64,
    },
    /// The client's `nth` request (counting its lock's calls and its own commands together,
    /// from 0) is lost before the server sees it.
    DropRequest {
        /// The client.
        client: usize,
        /// Which request.
        nth: u64,
    },
    /// The client's `nth` request is applied and its reply lost.
    DropReply {
        /// The client.
        client: usize,
        /// Which request.
        nth: u64,
    },
    /// The client's `nth` request reaches the server `ms` late.
    Delay {
        /// The client.
        client: usize,
        /// Which request.
        nth: u64,
        /// How late.
        ms: u64,
    },
    /// The client process dies at `at`: its code stops, its lock's driver stops, its
    /// connections close.
    Crash {
        /// The client.
        client: usize,
        /// When.
        at: u64,
    },
    /// The server restarts at `at`, keeping its data (as with persistence) or losing it.
    Restart {
        /// When.
        at: u64,
        /// Whether the data survives.
        keep_data: bool,
    },
    /// At `at` a replica that lags by `lag` ms takes over: the writes of the last `lag` ms are
    /// lost.
    Failover {
        /// When.
        at: u64,
        /// The replica's lag.
        lag: u64,
    },
    /// At `at` the server's clock jumps by `by` ms (back when negative).
    ClockJump {
        /// When.
        at: u64,
        /// By how much.
        by: i64,
    },
}

/// A client's name in schedules and reports: `a`, `b`, … (then `c26`, … past `z`).
pub fn client_name(index: usize) -> String {
    if index < 26 {
        char::from(b'a' + index as u8).to_string()
    } else {
        format!("c{index}")
    }
}

fn client_index(name: &str) -> Option<usize> {
    let b = name.as_bytes();
    if b.len() == 1 && b[0].is_ascii_lowercase() {
        return Some(usize::from(b[0] - b'a'));
    }
    name.strip_prefix('c')?.parse().ok()
}

impl Fault {
    /// The client it strikes, if it strikes one.
    pub fn client(&self) -> Option<usize> {
        match *self {
            Fault::Pause { client, .. }
            | Fault::DropRequest { client, .. }
            | Fault::DropReply { client, .. }
            | Fault::Delay { client, .. }
            | Fault::Crash { client, .. } => Some(client),
            _ => None,
        }
    }

    /// When it strikes, for the faults given a time (the others strike a numbered request).
    pub fn at(&self) -> Option<u64> {
        match *self {
            Fault::Pause { at, .. }
            | Fault::Crash { at, .. }
            | Fault::Restart { at, .. }
            | Fault::Failover { at, .. }
            | Fault::ClockJump { at, .. } => Some(at),
            _ => None,
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Fault::Pause { client, at, ms } => {
                write!(f, "pause {} at={at} for={ms}", client_name(client))
            }
            Fault::DropRequest { client, nth } => {
                write!(f, "drop-request {} n={nth}", client_name(client))
            }
            Fault::DropReply { client, nth } => {
                write!(f, "drop-reply {} n={nth}", client_name(client))
            }
            Fault::Delay { client, nth, ms } => {
                write!(f, "delay {} n={nth} by={ms}", client_name(client))
            }
            Fault::Crash { client, at } => write!(f, "crash {} at={at}", client_name(client)),
            Fault::Restart { at, keep_data } => {
                let data = if keep_data { "keep" } else { "lose" };
                write!(f, "restart at={at} data={data}")
            }
            Fault::Failover { at, lag } => write!(f, "failover at={at} lag={lag}"),
            Fault::ClockJump { at, by } => write!(f, "clock-jump at={at} by={by}"),
        }
    }
}

/// Why a schedule's text did not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("cannot read the schedule: {0}")]
pub struct ParseError(String);

impl std::str::FromStr for Fault {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Fault, ParseError> {
        let bad = || ParseError(format!("`{s}` is not a fault"));
        let words: Vec<&str> = s.split_whitespace().collect();
        let (&kind, rest) = words.split_first().ok_or_else(bad)?;
        let value = |key: &str| -> Result<&str, ParseError> {
            rest.iter()
                .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
                .ok_or_else(bad)
        };
        let num = |key: &str| -> Result<u64, ParseError> { value(key)?.parse().map_err(|_| bad()) };
        let client = || -> Result<usize, ParseError> {
            rest.first().and_then(|w| client_index(w)).ok_or_else(bad)
        };
        Ok(match kind {
            "pause" => Fault::Pause {
                client: client()?,
                at: num("at")?,
                ms: num("for")?,
            },
            "drop-request" => Fault::DropRequest {
                client: client()?,
                nth: num("n")?,
            },
            "drop-reply" => Fault::DropReply {
                client: client()?,
                nth: num("n")?,
            },
            "delay" => Fault::Delay {
                client: client()?,
                nth: num("n")?,
                ms: num("by")?,
            },
            "crash" => Fault::Crash {
                client: client()?,
                at: num("at")?,
            },
            "restart" => Fault::Restart {
                at: num("at")?,
                keep_data: match value("data")? {
                    "keep" => true,
                    "lose" => false,
                    _ => return Err(bad()),
                },
            },
            "failover" => Fault::Failover {
                at: num("at")?,
                lag: num("lag")?,
            },
            "clock-jump" => Fault::ClockJump {
                at: num("at")?,
                by: value("by")?.parse().map_err(|_| bad())?,
            },
            _ => return Err(bad()),
        })
    }
}

/// A seed and the faults it plays: what a replay command carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// The seed (the fake's seed, the lock clients' ids, and the draw of the faults).
    pub seed: u64,
    /// The faults, in the order drawn.
    pub faults: Vec<Fault>,
}

impl fmt::Display for Schedule {
    /// `seed=17; pause a at=120 for=40000; drop-reply b n=3`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "seed={}", self.seed)?;
        for fault in &self.faults {
            write!(f, "; {fault}")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for Schedule {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Schedule, ParseError> {
        let mut parts = s.split(';').map(str::trim).filter(|p| !p.is_empty());
        let seed = parts
            .next()
            .and_then(|p| p.strip_prefix("seed="))
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| ParseError(format!("`{s}` does not start with seed=<n>")))?;
        let faults = parts.map(str::parse).collect::<Result<_, _>>()?;
        Ok(Schedule { seed, faults })
    }
}

/// The kinds of fault a swarm may draw.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// [`Fault::Pause`].
    Pause,
    /// [`Fault::DropRequest`] and [`Fault::DropReply`].
    LostMessage,
    /// [`Fault::Delay`].
    Delay,
    /// [`Fault::Crash`].
    Crash,
    /// [`Fault::Restart`].
    Restart,
    /// [`Fault::Failover`].
    Failover,
    /// [`Fault::ClockJump`].
    ClockJump,
}

impl Kind {
    /// Every kind.
    pub const ALL: [Kind; 7] = [
        Kind::Pause,
        Kind::LostMessage,
        Kind::Delay,
        Kind::Crash,
        Kind::Restart,
        Kind::Failover,
        Kind::ClockJump,
    ];
}

/// What a seed may draw (swarm testing: each seed first draws which of the allowed kinds it
/// uses, so some seeds hammer one kind and others mix a few), and the ranges of each.
#[derive(Clone, Debug, PartialEq)]
pub struct Swarm {
    /// The kinds allowed.
    pub kinds: Vec<Kind>,
    /// At most this many faults per seed (at least one is drawn).
    pub max_faults: u32,
    /// Timed faults strike in `[0, window_ms)`.
    pub window_ms: u64,
    /// A pause lasts between these (inclusive).
    pub pause_ms: (u64, u64),
    /// A delay lasts between these.
    pub delay_ms: (u64, u64),
    /// A failover's replica lags by between these.
    pub lag_ms: (u64, u64),
    /// A clock jump moves by up to this much, either way.
    pub jump_ms: u64,
    /// Lost and delayed messages strike one of each client's first this many requests.
    pub requests: u64,
}

impl Default for Swarm {
    /// Every kind, at most 4 faults in the first 2 s, pauses up to 70 s (past the default 30 s
    /// lease), delays up to 2 s, lags up to 1 s, clock jumps up to 10 s.
    fn default() -> Swarm {
        Swarm {
            kinds: Kind::ALL.to_vec(),
            max_faults: 4,
            window_ms: 2_000,
            pause_ms: (100, 70_000),
            delay_ms: (1, 2_000),
            lag_ms: (1, 1_000),
            jump_ms: 10_000,
            requests: 24,
        }
    }
}

/// The random streams of a schedule's draw.
const KIND_ON: u64 = 1;
const COUNT: u64 = 2;
const PICK: u64 = 3;
const VALUE: u64 = 4;

impl Swarm {
    /// Only these kinds.
    pub fn only(mut self, kinds: &[Kind]) -> Swarm {
        self.kinds = kinds.to_vec();
        self
    }

    /// Every kind but these.
    pub fn without(mut self, kinds: &[Kind]) -> Swarm {
        self.kinds.retain(|k| !kinds.contains(k));
        self
    }

    /// At most `n` faults per seed.
    pub fn max_faults(mut self, n: u32) -> Swarm {
        self.max_faults = n.max(1);
        self
    }

    /// Timed faults strike in the first `ms`.
    pub fn window_ms(mut self, ms: u64) -> Swarm {
        self.window_ms = ms.max(1);
        self
    }

    /// Pauses last between `lo` and `hi` ms.
    pub fn pause_ms(mut self, lo: u64, hi: u64) -> Swarm {
        self.pause_ms = (lo, hi.max(lo));
        self
    }

    /// Failovers lose between `lo` and `hi` ms of writes.
    pub fn lag_ms(mut self, lo: u64, hi: u64) -> Swarm {
        self.lag_ms = (lo, hi.max(lo));
        self
    }

    /// The schedule of `seed` for `clients` clients: a pure function of the two.
    pub fn draw(&self, seed: u64, clients: usize) -> Schedule {
        let s = Seed(seed);
        // The swarm: each allowed kind is on with probability 1/2 (at least one is).
        let mut kinds: Vec<Kind> = self
            .kinds
            .iter()
            .copied()
            .filter(|k| s.chance(KIND_ON, *k as u64, 0, 0.5))
            .collect();
        if kinds.is_empty() && !self.kinds.is_empty() {
            let i = s.range(KIND_ON, 99, 0, 0, self.kinds.len() as u64 - 1);
            kinds.push(self.kinds[i as usize]);
        }
        let mut faults = Vec::new();
        if kinds.is_empty() {
            return Schedule { seed, faults };
        }
        let count = s.range(COUNT, 0, 0, 1, u64::from(self.max_faults));
        let clients = clients.max(1) as u64;
        for n in 0..count {
            let kind = kinds[s.range(PICK, n, 0, 0, kinds.len() as u64 - 1) as usize];
            let v = |i: u64, lo: u64, hi: u64| s.range(VALUE, n, i, lo, hi);
            let client = v(0, 0, clients - 1) as usize;
            let at = v(1, 0, self.window_ms - 1);
            let nth = v(2, 0, self.requests.max(1) - 1);
            faults.push(match kind {
                Kind::Pause => Fault::Pause {
                    client,
                    at,
                    ms: v(3, self.pause_ms.0, self.pause_ms.1),
                },
                Kind::LostMessage if v(4, 0, 1) == 0 => Fault::DropRequest { client, nth },
                Kind::LostMessage => Fault::DropReply { client, nth },
                Kind::Delay => Fault::Delay {
                    client,
                    nth,
                    ms: v(3, self.delay_ms.0, self.delay_ms.1),
                },
                Kind::Crash => Fault::Crash { client, at },
                Kind::Restart => Fault::Restart {
                    at,
                    keep_data: v(4, 0, 1) == 1,
                },
                Kind::Failover => Fault::Failover {
                    at,
                    lag: v(3, self.lag_ms.0, self.lag_ms.1),
                },
                Kind::ClockJump => {
                    let by = v(3, 1, self.jump_ms.max(1)) as i64;
                    Fault::ClockJump {
                        at,
                        by: if v(4, 0, 1) == 0 { by } else { -by },
                    }
                }
            });
        }
        Schedule { seed, faults }
    }
}
