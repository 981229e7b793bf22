//! The recorded history of a partition run: one line per thing that happened, written by every
//! process of the run into a file of its own and merged by the orchestrator for the checker.
//!
//! Every process on the machine reads the same wall clock, so each line carries microseconds
//! since the run's epoch (the orchestrator's start, handed to each process), and the merged
//! history is ordered by that clock. The format is plain tab-separated text, so a history can be
//! read with `sort`, and parsed back without a serialisation dependency.

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

/// What a line records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A client started an acquire.
    Acquiring,
    /// The lock was granted to the client (its token, if fenced).
    Granted,
    /// An acquire ended without the lock (budget spent, or an error: the detail says).
    NotGranted,
    /// The client's guard reported the hold lost or possibly lost (the detail is the state).
    Lost,
    /// The client's scoped work was stopped by `LockGuard::run` (the hold may be lost).
    Stopped,
    /// The client started to unlock.
    Unlock,
    /// The unlock ended (the detail is its outcome or error).
    Unlocked,
    /// The resource accepted a write (recorded by the resource; actor is the writer).
    Accepted,
    /// The resource rejected a write with a stale token (recorded by the resource).
    Rejected,
    /// The client's write did not reach the resource (the detail says why).
    WriteFailed,
    /// The nemesis started a fault (actor `nemesis`).
    Fault,
    /// The nemesis healed its fault.
    Heal,
}

impl Kind {
    const ALL: [Kind; 12] = [
        Kind::Acquiring,
        Kind::Granted,
        Kind::NotGranted,
        Kind::Lost,
        Kind::Stopped,
        Kind::Unlock,
        Kind::Unlocked,
        Kind::Accepted,
        Kind::Rejected,
        Kind::WriteFailed,
        Kind::Fault,
        Kind::Heal,
    ];

    /// The kind's name in a history file.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Acquiring => "acquiring",
            Kind::Granted => "granted",
            Kind::NotGranted => "not-granted",
            Kind::Lost => "lost",
            Kind::Stopped => "stopped",
            Kind::Unlock => "unlock",
            Kind::Unlocked => "unlocked",
            Kind::Accepted => "accepted",
            Kind::Rejected => "rejected",
            Kind::WriteFailed => "write-failed",
            Kind::Fault => "fault",
            Kind::Heal => "heal",
        }
    }

    fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == s)
    }
}

/// One line of a history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Microseconds since the run's epoch.
    pub at_us: u64,
    /// Who: a client (`unfenced-0`), or `nemesis`.
    pub actor: String,
    /// What.
    pub kind: Kind,
    /// The lock the record is about (empty for the nemesis).
    pub lock: String,
    /// The client's hold number (its n-th acquire), 0 where none applies.
    pub hold: u64,
    /// The fencing token, where there is one.
    pub token: Option<u64>,
    /// Free text without tabs or newlines: an error, a state, a fault's description.
    pub detail: String,
}

impl fmt::Display for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let token = self.token.map_or("-".to_owned(), |t| t.to_string());
        let detail = self.detail.replace(['\t', '\n', '\r'], " ");
        let lock = if self.lock.is_empty() {
            "-"
        } else {
            &self.lock
        };
        write!(
            f,
            "{}\t{}\t{}\t{}\t{}\t{}\t{}",
            self.at_us,
            self.actor,
            self.kind.name(),
            lock,
            self.hold,
            token,
            detail
        )
    }
}

impl Record {
    /// Parses one line written by [`Record`]'s `Display`; `None` for anything else.
    pub fn parse(line: &str) -> Option<Record> {
        let mut fields = line.splitn(7, '\t');
        let at_us = fields.next()?.parse().ok()?;
        let actor = fields.next()?.to_owned();
        let kind = Kind::parse(fields.next()?)?;
        let lock = match fields.next()? {
            "-" => String::new(),
            l => l.to_owned(),
        };
        let hold = fields.next()?.parse().ok()?;
        let token = match fields.next()? {
            "-" => None,
            t => Some(t.parse().ok()?),
        };
        let detail = fields.next().unwrap_or("").to_owned();
        Some(Record {
            at_us,
            actor,
            kind,
            lock,
            hold,
            token,
            detail,
        })
    }

    /// The milliseconds since the epoch, for the timeline.
    pub fn at_ms(&self) -> u64 {
        self.at_us / 1000
    }
}

/// Parses every line of `text` that is a record, ordered by time (stable: lines of one file at
/// the same microsecond keep their order). Lines that are not records are skipped: a process
/// killed mid-write may leave half a line.
pub fn parse_all(text: &str) -> Vec<Record> {
    let mut records: Vec<Record> = text.lines().filter_map(Record::parse).collect();
    records.sort_by_key(|r| r.at_us);
    records
}

/// Microseconds of the wall clock since `epoch_ms` (unix ms), 0 if the clock is behind it.
pub fn since_epoch_us(epoch_ms: u64) -> u64 {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros());
    let now = u64::try_from(now).unwrap_or(u64::MAX);
    now.saturating_sub(epoch_ms.saturating_mul(1000))
}

/// The wall clock in unix milliseconds.
pub fn unix_ms() -> u64 {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    u64::try_from(now).unwrap_or(u64::MAX)
}

/// Appends records to one process's history file, flushing each line so that a process killed
/// or paused leaves everything it recorded before.
pub struct Recorder {
    file: std::fs::File,
    epoch_ms: u64,
    actor: String,
}

impl Recorder {
    /// A recorder for `actor`, appending to `path`.
    pub fn open(path: &std::path::Path, actor: &str, epoch_ms: u64) -> std::io::Result<Recorder> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        Ok(Recorder {
            file,
            epoch_ms,
            actor: actor.to_owned(),
        })
    }

    /// Records one line now, as this recorder's actor. A failed write is reported on stderr:
    /// the history is the run's evidence, but a full disk must not stop the run.
    pub fn record(&mut self, kind: Kind, lock: &str, hold: u64, token: Option<u64>, detail: &str) {
        let actor = self.actor.clone();
        self.record_as(&actor, kind, lock, hold, token, detail);
    }

    /// Records one line now on behalf of `actor` (the resource records its writers' writes).
    pub fn record_as(
        &mut self,
        actor: &str,
        kind: Kind,
        lock: &str,
        hold: u64,
        token: Option<u64>,
        detail: &str,
    ) {
        use std::io::Write;
        let record = Record {
            at_us: since_epoch_us(self.epoch_ms),
            actor: actor.to_owned(),
            kind,
            lock: lock.to_owned(),
            hold,
            token,
            detail: detail.to_owned(),
        };
        if let Err(e) = writeln!(self.file, "{record}") {
            eprintln!("cannot record to the history: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_as_written() {
        let record = Record {
            at_us: 1_234,
            actor: "fenced-1".into(),
            kind: Kind::Granted,
            lock: "{pt}fenced".into(),
            hold: 7,
            token: Some(99),
            detail: "a\tb".into(),
        };
        let parsed = Record::parse(&record.to_string()).unwrap();
        assert_eq!(parsed.detail, "a b");
        assert_eq!(parsed.token, Some(99));
        assert_eq!(parsed.kind, Kind::Granted);
        assert_eq!(parsed.hold, 7);
    }

    #[test]
    fn half_lines_are_skipped_and_records_are_ordered() {
        let text = "20\tc\tgranted\tl\t1\t-\t\n10\tc\tacquiring\tl\t1\t-\t\n30\tc\tgra";
        let records = parse_all(text);
        assert_eq!(records.len(), 2);
        assert_eq!(records[0].kind, Kind::Acquiring);
    }
}
