//! The nemesis's schedule: which fault happens when, drawn from the run's seed alone.
//!
//! The schedule is pure data, decided before any process starts, so the seed, the duration and
//! the fault list reproduce it exactly (the rerun command the orchestrator prints carries them).
//! What the processes then do under it is real and not replayed: a rerun repeats the faults, not
//! the interleaving.
//!
//! Faults come one at a time: each starts, lasts a drawn time, heals, and is followed by a quiet
//! gap in which the lock can recover (the checker measures how long it took).

use lock_core::seed::SplitMix64;
use std::fmt;

/// The kinds of fault, as named on the command line (`--faults`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FaultKind {
    /// The lock's primary cut off from its replicas (and, on Sentinel, from the sentinels).
    PrimaryReplicas,
    /// A majority/minority split: the primary, one more server and client 0 of each mode on the
    /// minority side.
    Split,
    /// One client of each mode cut off from the primary.
    ClientPrimary,
    /// The primary stopped (SIGSTOP) and resumed: a GC pause of the server.
    PauseServer,
    /// One client of each mode stopped and resumed: a GC pause of the holder.
    PauseClient,
    /// The primary killed (SIGKILL) and restarted, empty, at the heal.
    Kill,
    /// Latency on the primary's front door (the proxy).
    Latency,
    /// Loss on the primary's front door: a lost segment costs a retransmission's delay.
    Loss,
}

impl FaultKind {
    /// Every kind.
    pub const ALL: [FaultKind; 8] = [
        FaultKind::PrimaryReplicas,
        FaultKind::Split,
        FaultKind::ClientPrimary,
        FaultKind::PauseServer,
        FaultKind::PauseClient,
        FaultKind::Kill,
        FaultKind::Latency,
        FaultKind::Loss,
    ];

    /// The name the command line uses.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::PrimaryReplicas => "primary-replicas",
            FaultKind::Split => "split",
            FaultKind::ClientPrimary => "client-primary",
            FaultKind::PauseServer => "pause-server",
            FaultKind::PauseClient => "pause-client",
            FaultKind::Kill => "kill",
            FaultKind::Latency => "latency",
            FaultKind::Loss => "loss",
        }
    }

    /// Whether the fault strikes the servers (else it strikes clients).
    pub fn is_server(self) -> bool {
        !matches!(self, FaultKind::ClientPrimary | FaultKind::PauseClient)
    }
}

/// One fault of the schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// When it starts, ms after the workload starts.
    pub at_ms: u64,
    /// How long it lasts before it heals, ms.
    pub for_ms: u64,
    /// What it is.
    pub kind: FaultKind,
    /// The client index it strikes in each mode (client faults), or the split's extra server.
    pub target: usize,
    /// Latency in ms, or loss in percent; 0 for the other kinds.
    pub amount: u64,
}

impl Step {
    /// When it heals, ms after the workload starts.
    pub fn heal_ms(&self) -> u64 {
        self.at_ms + self.for_ms
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let class = if self.kind.is_server() {
            "server"
        } else {
            "client"
        };
        write!(f, "{class}: {}", self.kind.name())?;
        match self.kind {
            FaultKind::ClientPrimary | FaultKind::PauseClient => {
                write!(f, " (client {} of each mode)", self.target)?;
            }
            FaultKind::Latency => write!(f, " ({} ms)", self.amount)?,
            FaultKind::Loss => write!(f, " ({} %)", self.amount)?,
            _ => {}
        }
        write!(f, " at {} ms for {} ms", self.at_ms, self.for_ms)
    }
}

/// A number in `lo..=hi` from `rng`.
fn draw(rng: &mut SplitMix64, lo: u64, hi: u64) -> u64 {
    lo + rng.next_u64() % (hi - lo + 1)
}

/// The schedule of a workload of `duration_ms`, drawn from `seed` over `kinds` (every kind if
/// empty), with `clients` clients per mode. The first fault starts after a second of calm;
/// nothing starts in the last two seconds, so every fault heals with time left to recover.
pub fn schedule(seed: u64, duration_ms: u64, kinds: &[FaultKind], clients: usize) -> Vec<Step> {
    let kinds = if kinds.is_empty() {
        &FaultKind::ALL[..]
    } else {
        kinds
    };
    let mut rng = SplitMix64::new(seed);
    let mut steps = Vec::new();
    let mut at_ms = 1_000;
    loop {
        let kind = kinds[(rng.next_u64() % kinds.len() as u64) as usize];
        let for_ms = match kind {
            // Long enough, often, to outlive the 3 s lease the workload uses.
            FaultKind::PauseClient | FaultKind::PauseServer => draw(&mut rng, 1_000, 4_500),
            _ => draw(&mut rng, 1_500, 4_000),
        };
        if at_ms + for_ms + 2_000 > duration_ms {
            break;
        }
        let amount = match kind {
            FaultKind::Latency => draw(&mut rng, 50, 600),
            FaultKind::Loss => draw(&mut rng, 10, 60),
            _ => 0,
        };
        let target = (rng.next_u64() % clients.max(1) as u64) as usize;
        steps.push(Step {
            at_ms,
            for_ms,
            kind,
            target,
            amount,
        });
        at_ms += for_ms + draw(&mut rng, 1_000, 2_500);
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_draws_the_same_schedule_and_another_seed_another() {
        let a = schedule(7, 30_000, &[], 3);
        assert_eq!(a, schedule(7, 30_000, &[], 3));
        assert_ne!(a, schedule(8, 30_000, &[], 3));
    }

    #[test]
    fn faults_do_not_overlap_and_heal_before_the_end() {
        for seed in 0..50 {
            let steps = schedule(seed, 12_000, &[], 2);
            for pair in steps.windows(2) {
                assert!(pair[0].heal_ms() < pair[1].at_ms);
            }
            for step in &steps {
                assert!(step.heal_ms() + 2_000 <= 12_000);
                assert!(step.target < 2);
            }
        }
    }

    #[test]
    fn only_the_kinds_asked_for_are_drawn() {
        let steps = schedule(3, 60_000, &[FaultKind::Kill], 2);
        assert!(!steps.is_empty());
        assert!(steps.iter().all(|s| s.kind == FaultKind::Kill));
    }
}
