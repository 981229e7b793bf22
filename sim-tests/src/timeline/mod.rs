//! A scenario's story, as text and as a picture.
//!
//! The examples crate's scenarios and the race harness ([`crate::race`]) run the real library on
//! virtual time and record what happened as a [`Timeline`]:
//! events on lanes (one lane per client, lanes for the lock's keys on the server and for a
//! resource), bars for the spans that matter (a lease, a pause, a latch), arrows for the messages
//! between lanes, and notes for what a picture says beside them. This module only renders it: one
//! line per event for a terminal ([`fmt::Display`]), and a picture ([`layout`] places every label,
//! [`scene`] draws it as SVG). It knows nothing about locks, so the lesson is always whatever the
//! library did.

pub mod layout;
pub mod scene;

use std::fmt;

/// What kind of thing happened; the name is what the timeline prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// A lock was granted (first time or reentry).
    Acquire,
    /// A renewal reached the server and extended the lease.
    Renew,
    /// The key's TTL ran out on the server.
    Expire,
    /// The holder asked to unlock.
    Unlock,
    /// The server released the lock.
    Released,
    /// The client crashed.
    Crash,
    /// The client stopped (a GC pause).
    Pause,
    /// The client runs again.
    Resume,
    /// The server told the holder it no longer holds the lock.
    Lost,
    /// The holder's `valid_until` passed without a confirmation: it must assume the worst.
    MayBeLost,
    /// A `try_lock` gave up: its wait budget ran out.
    NotAcquired,
    /// The client started to wait for the lock.
    Wait,
    /// A reader read the resource (under a read hold, beside other readers).
    Read,
    /// A resource accepted a write.
    WriteAccepted,
    /// A resource rejected a write (a stale fencing token).
    WriteRejected,
    /// A call or reply was lost on the network.
    Dropped,
    /// A call got no reply within the response timeout: its outcome is unknown.
    Timeout,
    /// An unlock did not complete: not held any more, or its outcome is unknown.
    UnlockFailed,
    /// Anything else worth a line.
    Note,
}

impl EventKind {
    /// The event's name in the text timeline.
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Acquire => "acquire",
            EventKind::Renew => "renew",
            EventKind::Expire => "expire",
            EventKind::Unlock => "unlock",
            EventKind::Released => "released",
            EventKind::Crash => "crash",
            EventKind::Pause => "pause",
            EventKind::Resume => "resume",
            EventKind::Lost => "lost",
            EventKind::MayBeLost => "may be lost",
            EventKind::NotAcquired => "not acquired",
            EventKind::Wait => "wait",
            EventKind::Read => "read",
            EventKind::WriteAccepted => "write accepted",
            EventKind::WriteRejected => "write rejected",
            EventKind::Dropped => "dropped",
            EventKind::Timeout => "timeout",
            EventKind::UnlockFailed => "unlock failed",
            EventKind::Note => "note",
        }
    }

    /// The colour its mark and label are drawn in.
    pub fn colour(self) -> &'static str {
        match self {
            EventKind::Acquire | EventKind::Released => "#2e7d32",
            EventKind::Renew => "#1565c0",
            EventKind::Expire | EventKind::Lost | EventKind::MayBeLost | EventKind::Crash => {
                "#c62828"
            }
            EventKind::WriteRejected | EventKind::Dropped | EventKind::UnlockFailed => "#ef6c00",
            EventKind::Pause | EventKind::Resume => "#6a1b9a",
            _ => "#424242",
        }
    }
}

/// One thing that happened, at a virtual time, to an actor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// Virtual milliseconds since the scenario began.
    pub at_ms: u64,
    /// Who: a client's name, or the server.
    pub actor: String,
    /// What.
    pub kind: EventKind,
    /// The details: lock, owner, TTL, token.
    pub detail: String,
}

/// A span on a lane: a lease, a key's life, a pause.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bar {
    /// The lane.
    pub actor: String,
    /// Start, virtual ms.
    pub from_ms: u64,
    /// End, virtual ms.
    pub to_ms: u64,
    /// A short label drawn inside the bar.
    pub label: String,
    /// A CSS colour.
    pub colour: &'static str,
}

/// What a message between two lanes is; each kind has its own line style.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArrowKind {
    /// A call, from a client to the server.
    Call,
    /// A reply, from the server back to the caller.
    Reply,
    /// A published message, from the server to a subscriber.
    Publish,
    /// A write a resource accepted.
    WriteAccepted,
    /// A write a resource rejected.
    WriteRejected,
}

impl ArrowKind {
    /// What the legend calls it.
    pub fn meaning(self) -> &'static str {
        match self {
            ArrowKind::Call => "call",
            ArrowKind::Reply => "reply",
            ArrowKind::Publish => "unlock message",
            ArrowKind::WriteAccepted => "write accepted",
            ArrowKind::WriteRejected => "write rejected",
        }
    }
}

/// A message from one lane to another: it leaves `from_lane` at `from_ms` and reaches `to_lane`
/// at `to_ms`, so a late one is slanted by its lateness. A lost one ends in a cross half-way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arrow {
    /// Where it leaves.
    pub from_lane: String,
    /// When it leaves, virtual ms.
    pub from_ms: u64,
    /// Where it goes.
    pub to_lane: String,
    /// When it arrives (for a lost one: when it would have).
    pub to_ms: u64,
    /// Which kind of message.
    pub kind: ArrowKind,
    /// It never arrived.
    pub lost: bool,
    /// What it carried, shown when the pointer rests on it.
    pub detail: String,
}

/// A few words a picture shows on a lane at a moment, beside the events (a reply's meaning, a
/// token): not part of the text timeline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    /// The lane.
    pub lane: String,
    /// When, virtual ms.
    pub at_ms: u64,
    /// The words.
    pub text: String,
    /// A CSS colour.
    pub colour: &'static str,
    /// May be left out where labels crowd (a routine renewal); the legend then says how many.
    pub routine: bool,
}

/// A scenario's events and spans, in time order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Timeline {
    /// The scenario's title.
    pub title: String,
    /// What it teaches, shown under the title of the picture.
    pub lesson: String,
    /// The lanes, top to bottom.
    pub lanes: Vec<String>,
    /// The events.
    pub events: Vec<Event>,
    /// The spans.
    pub bars: Vec<Bar>,
    /// The messages between lanes.
    pub arrows: Vec<Arrow>,
    /// The picture's notes.
    pub notes: Vec<Note>,
    /// What each bar colour means, for the legend (colours no bar uses are left out of it).
    pub bar_meanings: Vec<(&'static str, String)>,
    /// Lines the legend ends with: what a short name in the picture stands for in full.
    pub footnotes: Vec<String>,
}

/// Formats virtual milliseconds as the timeline prints them: `[  10.001s]`.
pub fn stamp(at_ms: u64) -> String {
    format!("[{:>4}.{:03}s]", at_ms / 1000, at_ms % 1000)
}

impl Timeline {
    /// An empty timeline with these lanes.
    pub fn new(title: impl Into<String>, lanes: &[&str]) -> Timeline {
        Timeline {
            title: title.into(),
            lanes: lanes.iter().map(|l| l.to_string()).collect(),
            ..Timeline::default()
        }
    }

    /// Records an event (lanes are added as actors appear).
    pub fn event(&mut self, at_ms: u64, actor: &str, kind: EventKind, detail: impl Into<String>) {
        self.lane(actor);
        self.events.push(Event {
            at_ms,
            actor: actor.to_owned(),
            kind,
            detail: detail.into(),
        });
    }

    /// Records a span.
    pub fn bar(
        &mut self,
        actor: &str,
        from_ms: u64,
        to_ms: u64,
        label: impl Into<String>,
        colour: &'static str,
    ) {
        self.lane(actor);
        self.bars.push(Bar {
            actor: actor.to_owned(),
            from_ms,
            to_ms: to_ms.max(from_ms),
            label: label.into(),
            colour,
        });
    }

    /// Records a message between two lanes.
    pub fn arrow(&mut self, arrow: Arrow) {
        self.lane(&arrow.from_lane);
        self.lane(&arrow.to_lane);
        self.arrows.push(arrow);
    }

    /// Records a note on a lane.
    pub fn note(&mut self, note: Note) {
        self.lane(&note.lane);
        self.notes.push(note);
    }

    /// Says what bars of `colour` mean, for the legend.
    pub fn bar_meaning(&mut self, colour: &'static str, meaning: impl Into<String>) {
        if !self.bar_meanings.iter().any(|(c, _)| *c == colour) {
            self.bar_meanings.push((colour, meaning.into()));
        }
    }

    /// Adds a lane at the bottom, unless it is there already.
    pub fn lane(&mut self, actor: &str) {
        if !self.lanes.iter().any(|l| l == actor) {
            self.lanes.push(actor.to_owned());
        }
    }

    /// The events in time order (stable for equal times).
    pub fn sorted_events(&self) -> Vec<&Event> {
        let mut events: Vec<&Event> = self.events.iter().collect();
        events.sort_by_key(|e| e.at_ms);
        events
    }

    /// The first event of `kind` by `actor`, if any.
    pub fn first(&self, actor: &str, kind: EventKind) -> Option<&Event> {
        self.sorted_events()
            .into_iter()
            .find(|e| e.actor == actor && e.kind == kind)
    }

    /// The times of every event of `kind` by `actor`.
    pub fn times(&self, actor: &str, kind: EventKind) -> Vec<u64> {
        self.sorted_events()
            .into_iter()
            .filter(|e| e.actor == actor && e.kind == kind)
            .map(|e| e.at_ms)
            .collect()
    }

    /// The time the picture's axis runs to: the last thing drawn, and at least a second.
    pub fn end_ms(&self) -> u64 {
        let events = self.events.iter().map(|e| e.at_ms);
        let bars = self.bars.iter().map(|b| b.to_ms);
        let arrows = self.arrows.iter().map(|a| a.to_ms.max(a.from_ms));
        let notes = self.notes.iter().map(|n| n.at_ms);
        events
            .chain(bars)
            .chain(arrows)
            .chain(notes)
            .max()
            .unwrap_or(0)
            .max(1000)
    }

    /// The SVG picture: a lane per actor, bars for spans, arrows for messages, labelled marks for
    /// events, a legend, and a time axis in seconds.
    pub fn to_svg(&self) -> String {
        layout::layout(self).to_svg()
    }
}

impl fmt::Display for Timeline {
    /// One line per event: time, actor, event, details.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let width = self.lanes.iter().map(|l| l.len()).max().unwrap_or(6).max(6);
        for e in self.sorted_events() {
            writeln!(
                f,
                "{} {:<width$}  {:<14} {}",
                stamp(e.at_ms),
                e.actor,
                e.kind.name(),
                e.detail
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_have_seconds_and_milliseconds() {
        assert_eq!(stamp(10_001), "[  10.001s]");
        assert_eq!(stamp(0), "[   0.000s]");
    }

    #[test]
    fn text_lists_events_in_time_order() {
        let mut t = Timeline::new("t", &["client-a", "server"]);
        t.event(10_000, "client-a", EventKind::Renew, "orders ttl=30000");
        t.event(0, "client-a", EventKind::Acquire, "orders");
        let text = t.to_string();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "[   0.000s] client-a  acquire        orders");
        assert_eq!(
            lines[1],
            "[  10.000s] client-a  renew          orders ttl=30000"
        );
    }
}
