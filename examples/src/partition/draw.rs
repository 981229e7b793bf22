//! Draws a run's history as a timeline with the project's renderer (`examples::timeline`): one
//! lane per client of a lock, one for the resource, one for the nemesis; a bar for each hold the
//! client believed it had and for each fault.
//!
//! A run's history is long; the picture is drawn over a window (around a violation, say), with
//! times shown from the window's start.

use super::checker::Overlap;
use super::history::{Kind, Record};
use crate::timeline::{EventKind, Note, Timeline};

const HOLD: &str = "#2e7d32";
const FAULT: &str = "#c62828";

/// The timeline of `lock` over `from_ms..to_ms` of the history.
pub fn timeline(history: &[Record], lock: &str, from_ms: u64, to_ms: u64, title: &str) -> Timeline {
    let mut t = Timeline::new(title, &["nemesis"]);
    t.bar_meaning(HOLD, "a hold its client believed it had");
    t.bar_meaning(FAULT, "a fault of the nemesis");
    let inside = |r: &&Record| r.at_ms() >= from_ms && r.at_ms() <= to_ms;
    let ours = |r: &&Record| r.lock == lock || r.actor == "nemesis";
    let at = |r: &Record| r.at_ms().saturating_sub(from_ms);
    for r in history.iter().filter(ours).filter(inside) {
        event(&mut t, r, at(r));
    }
    bars(&mut t, history, lock, from_ms, to_ms);
    t.lane("resource");
    t
}

fn event(t: &mut Timeline, r: &Record, at: u64) {
    let token = r.token.map(|t| format!(" token {t}")).unwrap_or_default();
    let hold = format!("hold {}{token}", r.hold);
    match r.kind {
        Kind::Granted => t.event(at, &r.actor, EventKind::Acquire, hold),
        Kind::Lost => t.event(
            at,
            &r.actor,
            EventKind::MayBeLost,
            format!("{hold}: {}", r.detail),
        ),
        Kind::Stopped => t.event(
            at,
            &r.actor,
            EventKind::Lost,
            format!("{hold}: work dropped"),
        ),
        Kind::Unlock => t.event(at, &r.actor, EventKind::Unlock, hold),
        Kind::Unlocked if r.detail != "Released" && r.detail != "released" => t.event(
            at,
            &r.actor,
            EventKind::UnlockFailed,
            format!("{hold}: {}", r.detail),
        ),
        Kind::Accepted => t.event(
            at,
            "resource",
            EventKind::WriteAccepted,
            format!("{} {hold} {}", r.actor, r.detail),
        ),
        Kind::Rejected => t.event(
            at,
            "resource",
            EventKind::WriteRejected,
            format!("{} {hold} {}", r.actor, r.detail),
        ),
        Kind::Fault => t.event(at, "nemesis", EventKind::Note, r.detail.clone()),
        Kind::Heal => t.event(
            at,
            "nemesis",
            EventKind::Resume,
            format!("healed: {}", r.detail),
        ),
        _ => {}
    }
}

/// The bars: believed holds (grant to the first sign of their end) and faults (start to heal).
fn bars(t: &mut Timeline, history: &[Record], lock: &str, from_ms: u64, to_ms: u64) {
    let clip = |a: u64, b: u64| {
        (
            a.max(from_ms) - from_ms,
            b.min(to_ms).max(from_ms) - from_ms,
        )
    };
    for (i, r) in history.iter().enumerate() {
        let end = |pred: &dyn Fn(&Record) -> bool| {
            history[i + 1..]
                .iter()
                .find(|e| pred(e))
                .map_or(to_ms, Record::at_ms)
        };
        if r.kind == Kind::Granted && r.lock == lock && r.at_ms() <= to_ms {
            let stop = end(&|e: &Record| {
                e.actor == r.actor
                    && e.hold == r.hold
                    && matches!(
                        e.kind,
                        Kind::Lost | Kind::Stopped | Kind::Unlock | Kind::Unlocked
                    )
            });
            if stop >= from_ms {
                let (a, b) = clip(r.at_ms(), stop);
                t.bar(&r.actor, a, b, format!("hold {}", r.hold), HOLD);
            }
        }
        if r.kind == Kind::Fault && r.at_ms() <= to_ms {
            let stop = end(&|e: &Record| e.kind == Kind::Heal);
            if stop >= from_ms {
                let (a, b) = clip(r.at_ms(), stop);
                t.bar("nemesis", a, b, r.detail.clone(), FAULT);
            }
        }
    }
}

/// The timeline around one violation: a second before the first hold's grant to a second after
/// the overlap began, with a note naming the two holds.
pub fn violation(history: &[Record], lock: &str, v: &Overlap, title: &str) -> Timeline {
    let granted = history
        .iter()
        .find(|r| r.kind == Kind::Granted && r.actor == v.first.0 && r.hold == v.first.1)
        .map_or(v.at_us / 1000, Record::at_ms);
    let from_ms = granted.saturating_sub(1_000);
    let to_ms = v.at_us / 1000 + 1_500;
    let mut t = timeline(history, lock, from_ms, to_ms, title);
    t.note(Note {
        lane: "resource".into(),
        at_ms: (v.at_us / 1000).saturating_sub(from_ms),
        text: format!(
            "{} hold {} writes inside {} hold {}",
            v.second.0, v.second.1, v.first.0, v.first.1
        ),
        colour: FAULT,
        routine: false,
    });
    t.footnotes.push(format!(
        "Times are from {} ms into the run's history.",
        from_ms
    ));
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::partition::checker::check;

    fn rec(at_ms: u64, actor: &str, kind: Kind, hold: u64) -> Record {
        Record {
            at_us: at_ms * 1000,
            actor: actor.into(),
            kind,
            lock: "l".into(),
            hold,
            token: None,
            detail: String::new(),
        }
    }

    #[test]
    fn a_violation_is_drawn_with_both_holds_and_the_writes_between() {
        let history = vec![
            rec(5_000, "a", Kind::Granted, 1),
            rec(5_100, "a", Kind::Accepted, 1),
            rec(9_000, "b", Kind::Granted, 1),
            rec(9_100, "b", Kind::Accepted, 1),
            rec(9_500, "a", Kind::Accepted, 1),
        ];
        let findings = check(&history);
        let v = &findings["l"].violations[0];
        let t = violation(&history, "l", v, "t");
        let text = t.to_string();
        assert!(text.contains("[   1.000s] a"), "{text}");
        assert_eq!(
            t.times("resource", EventKind::WriteAccepted),
            vec![1_100, 5_100, 5_500]
        );
        assert_eq!(t.bars.iter().filter(|b| b.colour == HOLD).count(), 2);
        assert!(t.to_svg().contains("writes inside a hold 1"));
    }
}
