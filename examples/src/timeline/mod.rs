//! A scenario's story, as text and as a picture.
//!
//! The examples run the real library on virtual time and record what happened as a [`Timeline`]:
//! events on lanes (one lane per client, one for the lock key on the server) and bars for the spans
//! that matter (a lease, a pause). This module only renders it: one line per event for a terminal,
//! and an SVG with a time axis in seconds for a browser. It knows nothing about locks, so the lesson
//! is always whatever the library did.

use std::fmt::{self, Write as _};

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
            EventKind::WriteAccepted => "write accepted",
            EventKind::WriteRejected => "write rejected",
            EventKind::Dropped => "dropped",
            EventKind::Timeout => "timeout",
            EventKind::UnlockFailed => "unlock failed",
            EventKind::Note => "note",
        }
    }

    fn colour(self) -> &'static str {
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

/// A scenario's events and spans, in time order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Timeline {
    /// The scenario's title.
    pub title: String,
    /// The lanes, top to bottom.
    pub lanes: Vec<String>,
    /// The events.
    pub events: Vec<Event>,
    /// The spans.
    pub bars: Vec<Bar>,
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

    fn lane(&mut self, actor: &str) {
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

    fn end_ms(&self) -> u64 {
        let events = self.events.iter().map(|e| e.at_ms);
        let bars = self.bars.iter().map(|b| b.to_ms);
        events.chain(bars).max().unwrap_or(0).max(1000)
    }

    /// The SVG picture: a lane per actor, bars for spans, labelled marks for events, and a time
    /// axis in seconds.
    pub fn to_svg(&self) -> String {
        const LEFT: f64 = 130.0;
        const RIGHT: f64 = 40.0;
        const TOP: f64 = 50.0;
        const LANE: f64 = 130.0;
        const WIDTH: f64 = 1100.0;
        let end = self.end_ms() as f64;
        let x = |ms: u64| LEFT + (ms as f64) * (WIDTH - LEFT - RIGHT) / end;
        let height = TOP + LANE * self.lanes.len() as f64 + 50.0;
        let mut svg = String::new();
        let _ = writeln!(
            svg,
            r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" font-family="sans-serif" font-size="11">"#
        );
        let _ = writeln!(
            svg,
            r##"<rect width="100%" height="100%" fill="#ffffff"/>"##
        );
        let _ = writeln!(
            svg,
            r#"<text x="{LEFT}" y="24" font-size="16" font-weight="bold">{}</text>"#,
            escape(&self.title)
        );
        for (i, lane) in self.lanes.iter().enumerate() {
            let y = TOP + LANE * i as f64 + LANE / 2.0;
            let _ = writeln!(
                svg,
                r##"<text x="10" y="{:.1}" font-size="13" font-weight="bold">{}</text><line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#bdbdbd"/>"##,
                y + 4.0,
                escape(lane),
                WIDTH - RIGHT
            );
        }
        let lane_y = |actor: &str| {
            let i = self.lanes.iter().position(|l| l == actor).unwrap_or(0);
            TOP + LANE * i as f64 + LANE / 2.0
        };
        for bar in self.bars.iter().filter(|b| b.to_ms > b.from_ms) {
            let y = lane_y(&bar.actor);
            let (x1, x2) = (x(bar.from_ms), x(bar.to_ms));
            let _ = writeln!(
                svg,
                r#"<rect x="{x1:.1}" y="{:.1}" width="{:.1}" height="14" rx="3" fill="{}" fill-opacity="0.25" stroke="{}"><title>{}</title></rect>"#,
                y - 7.0,
                (x2 - x1).max(1.0),
                bar.colour,
                bar.colour,
                escape(&bar.label)
            );
            // A label only where it fits inside its bar (about 6 px a character).
            if x2 - x1 > 6.0 * bar.label.len() as f64 + 6.0 {
                let _ = writeln!(
                    svg,
                    r#"<text x="{:.1}" y="{:.1}" fill="{}">{}</text>"#,
                    x1 + 3.0,
                    y + 4.0,
                    bar.colour,
                    escape(&bar.label)
                );
            }
        }
        // Events of one lane at one millisecond share a mark, their names stacked in a column;
        // a column close to the previous one on its lane goes to the other side of the lane.
        let mut groups: Vec<(&str, u64, Vec<&Event>)> = Vec::new();
        for e in self.sorted_events() {
            match groups.last_mut() {
                Some((actor, at, list)) if *actor == e.actor && *at == e.at_ms => list.push(e),
                _ => groups.push((&e.actor, e.at_ms, vec![e])),
            }
        }
        groups.sort_by_key(|(actor, at, _)| (*actor, *at));
        let mut last_x: std::collections::BTreeMap<&str, (f64, bool)> = Default::default();
        for (actor, at, list) in &groups {
            let y = lane_y(actor);
            let cx = x(*at);
            let above = match last_x.get(actor) {
                Some((px, was_above)) if cx - px < 70.0 => !was_above,
                _ => true,
            };
            last_x.insert(actor, (cx, above));
            let colour = list[0].kind.colour();
            let title: Vec<String> = list
                .iter()
                .map(|e| format!("{} {} {}", stamp(e.at_ms), e.kind.name(), e.detail))
                .collect();
            let _ = writeln!(
                svg,
                r#"<circle cx="{cx:.1}" cy="{y:.1}" r="5" fill="{colour}"><title>{}</title></circle>"#,
                escape(&title.join("\n"))
            );
            for (i, e) in list.iter().enumerate() {
                let ly = if above {
                    y - 14.0 - 12.0 * i as f64
                } else {
                    y + 22.0 + 12.0 * i as f64
                };
                let _ = writeln!(
                    svg,
                    r#"<text x="{cx:.1}" y="{ly:.1}" text-anchor="middle" fill="{}">{}</text>"#,
                    e.kind.colour(),
                    escape(e.kind.name())
                );
            }
        }
        let axis_y = TOP + LANE * self.lanes.len() as f64 + 10.0;
        let _ = writeln!(
            svg,
            r##"<line x1="{LEFT}" y1="{axis_y:.1}" x2="{:.1}" y2="{axis_y:.1}" stroke="#000"/>"##,
            WIDTH - RIGHT
        );
        let step = tick_step(self.end_ms());
        let mut t = 0;
        while t <= self.end_ms() {
            let tx = x(t);
            let _ = writeln!(
                svg,
                r##"<line x1="{tx:.1}" y1="{axis_y:.1}" x2="{tx:.1}" y2="{:.1}" stroke="#000"/><text x="{tx:.1}" y="{:.1}" text-anchor="middle">{} s</text>"##,
                axis_y + 5.0,
                axis_y + 18.0,
                t / 1000
            );
            t += step;
        }
        svg.push_str("</svg>\n");
        svg
    }
}

/// A tick spacing that gives about ten ticks: 1, 2 or 5 times a power of ten seconds.
fn tick_step(end_ms: u64) -> u64 {
    let rough = (end_ms / 10).max(1000);
    let mut base = 1000;
    loop {
        for m in [1, 2, 5] {
            if base * m >= rough {
                return base * m;
            }
        }
        base *= 10;
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
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
    fn ticks_are_round() {
        assert_eq!(tick_step(60_000), 10_000);
        assert_eq!(tick_step(5_000), 1_000);
        assert_eq!(tick_step(3_600_000), 500_000);
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
