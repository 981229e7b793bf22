//! What `watchdog-timeline` tells about a run, as text for a terminal and as one web page of every
//! scenario side by side.
//!
//! The page is one self-contained file: each scenario's picture inline, its lesson, its text
//! timeline, the parameters it ran with and the commands that replay it, with its style inline and
//! nothing fetched from anywhere, so it opens from a disk or an archive as it is. The text report
//! is the program's own output, so the page shows exactly what a learner sees in a terminal.

use crate::scenarios::{Knob, Params, SCENARIOS, Scenario, fenced_verdict};
use crate::timeline::Timeline;
use crate::timeline::scene::escape;
use sim_tests::{Case, Run};
use std::fmt::Write as _;

/// The flags of `knobs` that give `p` to `watchdog-timeline`: only those that differ from the
/// defaults.
pub fn flags(knobs: &[Knob], p: &Params) -> String {
    let d = Params::default();
    let mut out = String::new();
    for k in knobs {
        if let Some(value) = k.value(p)
            && k.value(&d) != Some(value)
        {
            let _ = write!(out, " --{} {value}", k.flag());
        }
    }
    out
}

/// The command that runs this scenario again with these parameters.
pub fn rerun_command(s: &Scenario, p: &Params) -> String {
    format!(
        "cargo run -p examples --bin watchdog-timeline -- --scenario {}{}",
        s.name,
        flags(s.honours, p)
    )
}

/// The command that replays the run in the simulator, with its full trace.
pub fn replay_command(case: &Case) -> String {
    format!(
        "SIM_CASE='{}' cargo test -p sim-tests --test replay -- --nocapture",
        case.one_line()
    )
}

/// What the program prints for a run: the timeline, the lesson, what the checkers saw, the
/// simulator's whole trace if asked for (`trace`), and the command that replays it.
pub fn report(
    s: &Scenario,
    p: &Params,
    (case, run, timeline): (&Case, &Run, &Timeline),
    trace: bool,
) -> String {
    let mut out = format!(
        "scenario {} (watchdog_timeout {} ms)\n\n{timeline}\nlesson: {}\n",
        s.name, p.watchdog_timeout, s.lesson
    );
    // A fenced write also goes to the simulator's unfenced twin of the resource: what that twin
    // saw is told apart, each line with the fenced resource's verdict on the same write, so that
    // no line reads as if the lesson's resource had taken a stale write.
    let (mut broken, mut twin) = (Vec::new(), Vec::new());
    for v in &run.violations {
        match fenced_verdict(run, v) {
            Some(verdict) => twin.push(format!("  - {v}; {verdict}")),
            None => broken.push(format!("  - {v}")),
        }
    }
    if !broken.is_empty() {
        let _ = write!(out, "\nwhat the checkers saw:\n{}\n", broken.join("\n"));
    }
    if !twin.is_empty() {
        let _ = write!(
            out,
            "\nwhat the unfenced twin of the resource saw (the simulator sends every write to an \
             unfenced copy of the resource too, to show what fencing prevents; this scenario's \
             resource is the fenced one):\n{}\n",
            twin.join("\n")
        );
    }
    if trace {
        let _ = write!(out, "\ntrace:\n{}\n", run.timeline());
    }
    let _ = write!(
        out,
        "\nreplay this exact run{}: {}\n",
        foreign_caveat(s, p),
        replay_command(case)
    );
    out
}

/// What a replay of the case leaves out: a scenario's foreign clients are its own, not the
/// case's, so the case replays only ours.
fn foreign_caveat(s: &Scenario, p: &Params) -> &'static str {
    if s.foreign(p).is_empty() {
        ""
    } else {
        " (our clients only: the foreign lock's clients are the scenario's, run it again for both)"
    }
}

const STYLE: &str = "\
body { font-family: system-ui, sans-serif; margin: 0 auto; max-width: 1240px; padding: 0 16px 48px; color: #212121; }
h1 { font-size: 1.6em; margin: 24px 0 8px; }
h2 { font-size: 1.3em; margin: 40px 0 4px; border-top: 1px solid #e0e0e0; padding-top: 16px; }
nav a { margin-right: 12px; }
.lesson { font-size: 1.05em; max-width: 70em; }
figure { margin: 12px 0; }
figure svg { max-width: 100%; height: auto; border: 1px solid #eeeeee; }
pre { background: #f5f5f5; padding: 8px 10px; overflow-x: auto; font-size: 12px; }
table { border-collapse: collapse; font-size: 14px; }
td, th { border: 1px solid #e0e0e0; padding: 2px 8px; text-align: left; }
code { font-size: 0.95em; }
";

/// The page of every scenario, each run with `p`.
pub fn page(p: &Params) -> String {
    let mut html = String::new();
    html.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    html.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    html.push_str("<title>watchdog lock lab: the scenarios</title>\n");
    let _ = writeln!(html, "<style>\n{STYLE}</style>\n</head>\n<body>");
    html.push_str("<h1>watchdog lock lab: the scenarios</h1>\n");
    html.push_str(
        "<p class=\"lesson\">Each scenario is one lesson, run by the real lock library on the fake \
         Redis in virtual time: every arrow, cross, bar and label below is what that run did. \
         Lanes are the clients, the lock's key on the server (its owner and hold count), its \
         expiry (a bar from each grant or renewal to the deadline it set), the unlock latch, the \
         fencing counter and the resource; time runs left to right. Hover a \
         mark, a bar or an arrow for its details. Each scenario's table lists the parameters it \
         honours. This page is written by \
         <code>cargo run -p examples --bin watchdog-timeline -- --html docs/index.html</code>.</p>\n",
    );
    html.push_str("<nav>");
    for s in SCENARIOS {
        let _ = write!(html, "<a href=\"#{0}\">{0}</a>", s.name);
    }
    html.push_str("</nav>\n");
    for s in SCENARIOS {
        let (case, run, timeline) = s.run(p);
        section(&mut html, s, p, &case, &run, &timeline);
    }
    html.push_str("</body>\n</html>\n");
    html
}

fn section(html: &mut String, s: &Scenario, p: &Params, case: &Case, run: &Run, t: &Timeline) {
    let _ = writeln!(html, "<section id=\"{}\">", s.name);
    let _ = writeln!(html, "<h2>{}</h2>", s.name);
    let _ = writeln!(html, "<p class=\"lesson\">{}</p>", escape(s.lesson));
    let _ = writeln!(html, "<figure>\n{}</figure>", t.to_svg());
    // Only the knobs this scenario honours: any other would change nothing.
    html.push_str("<table><tr><th>parameter</th><th>value</th></tr>\n");
    for k in s.honours {
        let _ = writeln!(
            html,
            "<tr><td><code>--{}</code></td><td>{}</td></tr>",
            k.flag(),
            escape(&k.describe(p))
        );
    }
    html.push_str("</table>\n");
    let _ = writeln!(
        html,
        "<p>Run it again:</p>\n<pre>{}</pre>\n<p>Replay it in the simulator, with every call and reply{}:</p>\n<pre>{}</pre>",
        escape(&rerun_command(s, p)),
        escape(foreign_caveat(s, p)),
        escape(&replay_command(case))
    );
    let _ = writeln!(
        html,
        "<details><summary>The text timeline</summary>\n<pre>{}</pre>\n</details>\n</section>",
        escape(&report(s, p, (case, run, t), false))
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_changed_flags_are_given() {
        assert_eq!(flags(&Knob::ALL, &Params::default()), "");
        let p = Params {
            watchdog_timeout: 9_000,
            clients: Some(3),
            ..Params::default()
        };
        assert_eq!(
            flags(&Knob::ALL, &p),
            " --watchdog-timeout 9000 --clients 3"
        );
    }

    #[test]
    fn only_the_flags_a_scenario_honours_are_given() {
        let p = Params {
            crash_at: 9_000,
            work: Some(4_000),
            ..Params::default()
        };
        let watchdog = crate::scenarios::find("watchdog").unwrap();
        assert_eq!(
            rerun_command(watchdog, &p),
            "cargo run -p examples --bin watchdog-timeline -- --scenario watchdog --work 4000"
        );
    }
}
