//! A run as a [`Timeline`]: the text a failure prints, the trace a replay compares byte for byte,
//! and the picture the teaching renderer draws.

use super::check::beliefs;
use super::play::Played;
use super::record::What;
use super::schedule::{Fault, Schedule, client_name};
use crate::timeline::{Arrow, ArrowKind, EventKind, Timeline};
use lock_core::HoldState;

const BELIEF: &str = "#a5d6a7";
const PAUSE: &str = "#ce93d8";

/// The timeline of a run of `schedule`.
pub(crate) fn timeline(
    title: &str,
    schedule: &Schedule,
    played: &Played,
    clients: usize,
) -> Timeline {
    let mut lanes: Vec<String> = (0..clients).map(client_name).collect();
    lanes.push("resource".into());
    lanes.push("server".into());
    let lanes: Vec<&str> = lanes.iter().map(String::as_str).collect();
    let mut t = Timeline::new(title, &lanes);
    t.lesson = format!("schedule: {schedule}");
    t.bar_meaning(BELIEF, "the client believes it holds the lock");
    t.bar_meaning(PAUSE, "the client is paused");
    for f in &schedule.faults {
        match *f {
            Fault::Pause { client, at, ms } => {
                let lane = client_name(client);
                t.event(at, &lane, EventKind::Pause, format!("for {ms} ms"));
                t.event(at + ms, &lane, EventKind::Resume, "");
                t.bar(&lane, at, at + ms, "paused", PAUSE);
            }
            Fault::Restart { at, keep_data } => {
                let data = if keep_data { "data kept" } else { "data lost" };
                t.event(at, "server", EventKind::Note, format!("restart, {data}"));
            }
            Fault::Failover { at, lag } => {
                t.event(
                    at,
                    "server",
                    EventKind::Note,
                    format!("failover, lag {lag} ms"),
                );
            }
            Fault::ClockJump { at, by } => {
                t.event(
                    at,
                    "server",
                    EventKind::Note,
                    format!("clock jumps {by} ms"),
                );
            }
            _ => {}
        }
    }
    let history = super::record::History {
        entries: played.entries.clone(),
        clients,
    };
    for b in beliefs(&history, &schedule.faults) {
        if b.to > b.from {
            t.bar(&client_name(b.client), b.from, b.to, b.lock.clone(), BELIEF);
        }
    }
    for e in &played.entries {
        let lane = e.client.map_or_else(|| "server".to_owned(), client_name);
        match &e.what {
            What::Granted {
                lock,
                hold,
                count,
                valid_until,
            } => t.event(
                e.at,
                &lane,
                EventKind::Acquire,
                format!("{lock} hold={hold} count={count} valid_until={valid_until}"),
            ),
            What::Renewed {
                lock, valid_until, ..
            } => t.event(
                e.at,
                &lane,
                EventKind::Renew,
                format!("{lock} valid_until={valid_until}"),
            ),
            What::ValidUntil {
                lock, valid_until, ..
            } => t.event(
                e.at,
                &lane,
                EventKind::Note,
                format!("{lock} valid_until now {valid_until}"),
            ),
            What::State { lock, state, .. } => {
                let kind = match state {
                    HoldState::MayBeLost => EventKind::MayBeLost,
                    HoldState::Lost => EventKind::Lost,
                    HoldState::Released => EventKind::Unlock,
                    _ => EventKind::Note,
                };
                t.event(e.at, &lane, kind, format!("{lock} is {state}"));
            }
            What::Read { key, value } => {
                t.event(e.at, &lane, EventKind::Read, format!("{key} = {value}"));
            }
            What::Write(w) => {
                let kind = if w.accepted {
                    EventKind::WriteAccepted
                } else {
                    EventKind::WriteRejected
                };
                let token = w.token.map(|t| format!(" token={t}")).unwrap_or_default();
                let detail = format!("{lane}: {} = {} (was {}){token}", w.key, w.value, w.before);
                t.event(e.at, "resource", kind, detail.clone());
                t.arrow(Arrow {
                    from_lane: lane.clone(),
                    from_ms: e.at,
                    to_lane: "resource".into(),
                    to_ms: e.at,
                    kind: if w.accepted {
                        ArrowKind::WriteAccepted
                    } else {
                        ArrowKind::WriteRejected
                    },
                    lost: false,
                    detail,
                });
            }
            What::Fault(text) if text == "crashed" => {
                t.event(e.at, &lane, EventKind::Crash, "");
            }
            What::Fault(_) => {}
            What::Note(text) => t.event(e.at, &lane, EventKind::Note, text.clone()),
            What::Done(out) => t.event(e.at, &lane, EventKind::Note, format!("returned {out}")),
        }
    }
    t
}

/// The whole trace of a run: its timeline, every request, every fault the fake applied. Two runs
/// of one schedule give the same bytes.
pub(crate) fn trace(t: &Timeline, played: &Played) -> String {
    let mut out = t.to_string();
    out.push_str("requests:\n");
    for line in &played.requests {
        out.push_str(line);
        out.push('\n');
    }
    out.push_str("faults applied:\n");
    for line in &played.fault_log {
        out.push_str(line);
        out.push('\n');
    }
    out.push_str(&format!("ended at {} ms\n", played.end));
    out
}
