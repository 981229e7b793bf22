//! Where everything of a timeline goes in its picture, so that no label lands on another.
//!
//! Time runs left to right and each lane is a horizontal band: its bars in tracks on the lane's
//! line (bars that overlap in time get a track each), and above and below them rows of labels.
//! Each label is centred on its moment and goes into the first row, nearest the line first, where
//! it meets no label already placed; a lane is as tall as the rows it needed, so labels of one lane
//! never reach another. Routine labels (a renewal, say) are placed last and only in the rows
//! nearest the line: where those are full they are left out, their mark and arrow still drawn, and
//! the legend says how many. Messages are arrows from one lane's band to another's. The same input
//! always gives the same picture: everything is placed in a fixed order.

use super::scene::{Anchor, BoxXY, Role, Scene, Shape, Text, text_width};
use super::{ArrowKind, Event, EventKind, Timeline, stamp};

/// The picture's width, px.
pub const WIDTH: f64 = 1200.0;
/// Where the time axis starts (the lane names are left of it).
const LEFT: f64 = 150.0;
const RIGHT: f64 = 30.0;
/// A label's font size.
const LABEL: f64 = 11.0;
/// A bar's text size.
const BAR_TEXT: f64 = 10.0;
/// From one label row to the next.
const ROW: f64 = 14.0;
/// A bar track's height.
const TRACK: f64 = 16.0;
/// Space between a lane's last label row and the next lane, where arrows run.
const LANE_GAP: f64 = 18.0;
/// Horizontal space kept between two labels of one row.
const GAP: f64 = 6.0;
/// Rows on each side of a lane that routine labels may use.
const ROUTINE_ROWS: usize = 2;
/// A mark's radius.
const MARK_R: f64 = 4.5;
/// How far right of its call a reply is drawn, so that a round trip of a millisecond shows as
/// two lines and not one.
const REPLY_SHIFT: f64 = 3.0;

/// What a bar colour, an arrow or a cross means, for the legend.
enum Key {
    Bar(&'static str, String),
    Arrow(ArrowKind),
    Cross,
}

/// A label waiting for its row.
struct Pending {
    x: f64,
    text: String,
    colour: &'static str,
    routine: bool,
    tooltip: Option<String>,
}

/// A placed label: its side (above the line or below), its row counted from the line, its span.
struct Placed {
    above: bool,
    row: usize,
    x0: f64,
    pending: Pending,
}

/// One lane's plan before its height is known.
struct LanePlan {
    tracks: usize,
    /// Per bar of the timeline on this lane: (bar index, track, whether its text goes inside it).
    bars: Vec<(usize, usize, bool)>,
    labels: Vec<Placed>,
    rows_above: usize,
    rows_below: usize,
    thinned: usize,
}

/// The picture of `t`, with every label placed.
pub fn layout(t: &Timeline) -> Scene {
    let end = t.end_ms() as f64;
    let x = |ms: u64| LEFT + (ms as f64) * (WIDTH - LEFT - RIGHT) / end;
    let mut scene = Scene {
        width: WIDTH,
        id: slug(&t.title),
        ..Scene::default()
    };
    let mut y = header(t, &mut scene);
    y = legend(t, &mut scene, y);
    let per_line = ((WIDTH - 20.0) / text_width("m", LABEL)) as usize;
    for line in t.footnotes.iter().flat_map(|f| wrap(f, per_line)) {
        scene.shapes.push(Shape::Text(Text {
            x: 10.0,
            y: y + 2.0,
            size: LABEL,
            bold: false,
            anchor: Anchor::Start,
            fill: "#424242",
            text: line,
            role: Role::Legend,
            backdrop: false,
            tooltip: None,
        }));
        y += ROW + 4.0;
    }
    let plans: Vec<LanePlan> = t.lanes.iter().map(|lane| plan_lane(t, lane, &x)).collect();
    scene.thinned = plans.iter().map(|p| p.thinned).sum();
    if scene.thinned > 0 {
        let words = format!(
            "{} routine labels (renewals, attempts on a taken lock) left out where they would crowd: every mark and arrow is drawn; hover one for its details",
            scene.thinned
        );
        scene.shapes.push(Shape::Text(Text {
            x: 10.0,
            y: y + 2.0,
            size: LABEL,
            bold: false,
            anchor: Anchor::Start,
            fill: "#616161",
            text: words,
            role: Role::Legend,
            backdrop: false,
            tooltip: None,
        }));
        y += ROW + 4.0;
    }
    // Each lane's band: (top of its bar tracks, bottom of them).
    let mut bands = Vec::with_capacity(plans.len());
    for plan in &plans {
        let top = y + 8.0 + plan.rows_above as f64 * ROW;
        let bottom = top + plan.tracks as f64 * TRACK;
        bands.push((top, bottom));
        y = bottom + 4.0 + plan.rows_below as f64 * ROW + LANE_GAP;
    }
    let line_of = |lane: &str| -> (f64, f64, f64) {
        let i = t.lanes.iter().position(|l| l == lane).unwrap_or(0);
        let (top, bottom) = bands[i];
        (top, (top + bottom) / 2.0, bottom)
    };
    for (lane, (top, bottom)) in t.lanes.iter().zip(&bands) {
        let mid = (top + bottom) / 2.0;
        scene
            .shapes
            .push(rule((LEFT, mid), (WIDTH - RIGHT, mid), "#bdbdbd"));
        scene.shapes.push(Shape::Text(Text {
            x: 10.0,
            y: mid + 4.0,
            size: 13.0,
            bold: true,
            anchor: Anchor::Start,
            fill: "#212121",
            text: lane.clone(),
            role: Role::LaneName,
            backdrop: false,
            tooltip: None,
        }));
    }
    let mut bar_texts = Vec::new();
    for (plan, (top, _)) in plans.iter().zip(&bands) {
        for &(b, track, inside) in &plan.bars {
            let bar = &t.bars[b];
            let (x1, x2) = (x(bar.from_ms), x(bar.to_ms));
            let at = BoxXY {
                x0: x1,
                y0: top + track as f64 * TRACK + 1.0,
                x1: x2.max(x1 + 1.0),
                y1: top + (track + 1) as f64 * TRACK - 1.0,
            };
            scene.shapes.push(Shape::Rect {
                at,
                colour: bar.colour,
                opacity: 0.25,
                bar: Some(b),
                tooltip: Some(format!(
                    "{} {} to {}",
                    bar.label,
                    stamp(bar.from_ms),
                    stamp(bar.to_ms)
                )),
            });
            if inside {
                bar_texts.push(Text {
                    x: x1 + 3.0,
                    y: (at.y0 + at.y1) / 2.0 + 3.5,
                    size: BAR_TEXT,
                    bold: false,
                    anchor: Anchor::Start,
                    fill: bar.colour,
                    text: bar.label.clone(),
                    role: Role::BarText(b),
                    backdrop: false,
                    tooltip: None,
                });
            }
        }
    }
    let axis_y = y;
    axis(t, &mut scene, axis_y, &x);
    for a in &t.arrows {
        let (from_top, _, from_bottom) = line_of(&a.from_lane);
        let (to_top, _, to_bottom) = line_of(&a.to_lane);
        let down = from_top < to_top;
        let shift = if a.kind == ArrowKind::Reply {
            REPLY_SHIFT
        } else {
            0.0
        };
        let from = (
            x(a.from_ms) + shift,
            if down { from_bottom } else { from_top },
        );
        let mut to = (x(a.to_ms) + shift, if down { to_top } else { to_bottom });
        if a.lost {
            to = ((from.0 + to.0) / 2.0, (from.1 + to.1) / 2.0);
        }
        let (colour, width, dash) = arrow_style(a.kind);
        scene.shapes.push(Shape::Line {
            from,
            to,
            colour,
            width,
            dash,
            head: !a.lost,
            tooltip: Some(a.detail.clone()),
        });
        if a.lost {
            scene.shapes.push(Shape::Cross {
                at: to,
                colour: "#c62828",
            });
        }
    }
    for (lane, (_, mid, _)) in t.lanes.iter().map(|l| (l, line_of(l))) {
        for (at, list) in groups(t, lane) {
            scene.shapes.push(Shape::Dot {
                at: (x(at), mid),
                r: MARK_R,
                colour: list[0].kind.colour(),
                tooltip: Some(details(&list)),
            });
        }
    }
    for (plan, (top, bottom)) in plans.into_iter().zip(bands) {
        for p in plan.labels {
            let y = if p.above {
                top - 3.0 - (p.row - 1) as f64 * ROW - super::scene::DESCENT * LABEL
            } else {
                bottom + 3.0 + (p.row - 1) as f64 * ROW + super::scene::ASCENT * LABEL
            };
            scene.shapes.push(Shape::Text(Text {
                x: p.x0,
                y,
                size: LABEL,
                bold: false,
                anchor: Anchor::Start,
                fill: p.pending.colour,
                text: p.pending.text,
                role: Role::Label,
                backdrop: true,
                tooltip: p.pending.tooltip,
            }));
        }
    }
    scene.shapes.extend(bar_texts.into_iter().map(Shape::Text));
    scene.height = axis_y + 34.0;
    scene
}

/// A bar's text is drawn inside it only where it fits.
fn fits(label: &str, width: f64) -> bool {
    text_width(label, BAR_TEXT) + 6.0 <= width
}

fn arrow_style(kind: ArrowKind) -> (&'static str, f64, Option<&'static str>) {
    match kind {
        ArrowKind::Call => ("#424242", 1.3, None),
        ArrowKind::Reply => ("#757575", 1.3, Some("5 3")),
        ArrowKind::Publish => ("#2e7d32", 1.3, Some("1.5 3")),
        ArrowKind::WriteAccepted => ("#2e7d32", 1.6, None),
        ArrowKind::WriteRejected => ("#c62828", 1.6, None),
    }
}

/// An id-safe form of the title, for the SVG's ids.
fn slug(title: &str) -> String {
    let s: String = title
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    format!("tl-{}", s.trim_matches('-'))
}

/// The title and the lesson, wrapped to the width; returns where the next thing goes.
fn header(t: &Timeline, scene: &mut Scene) -> f64 {
    scene.shapes.push(Shape::Text(Text {
        x: 10.0,
        y: 24.0,
        size: 16.0,
        bold: true,
        anchor: Anchor::Start,
        fill: "#212121",
        text: t.title.clone(),
        role: Role::Title,
        backdrop: false,
        tooltip: None,
    }));
    let mut y = 24.0;
    let per_line = ((WIDTH - 20.0) / text_width("m", 12.0)) as usize;
    for line in wrap(&t.lesson, per_line) {
        y += 16.0;
        scene.shapes.push(Shape::Text(Text {
            x: 10.0,
            y,
            size: 12.0,
            bold: false,
            anchor: Anchor::Start,
            fill: "#424242",
            text: line,
            role: Role::Title,
            backdrop: false,
            tooltip: None,
        }));
    }
    y + 12.0
}

/// `text` in lines of at most `width` characters, broken at spaces.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// What the legend explains: every bar colour used, every kind of arrow drawn, a cross if any.
fn keys(t: &Timeline) -> Vec<Key> {
    let mut keys = Vec::new();
    for (colour, meaning) in &t.bar_meanings {
        if t.bars.iter().any(|b| b.colour == *colour) {
            keys.push(Key::Bar(colour, meaning.clone()));
        }
    }
    for kind in [
        ArrowKind::Call,
        ArrowKind::Reply,
        ArrowKind::Publish,
        ArrowKind::WriteAccepted,
        ArrowKind::WriteRejected,
    ] {
        if t.arrows.iter().any(|a| a.kind == kind) {
            keys.push(Key::Arrow(kind));
        }
    }
    if t.arrows.iter().any(|a| a.lost) {
        keys.push(Key::Cross);
    }
    keys
}

/// The legend, in rows that wrap at the width; returns where the next thing goes.
fn legend(t: &Timeline, scene: &mut Scene, top: f64) -> f64 {
    const SAMPLE: f64 = 24.0;
    let mut x = 10.0;
    let mut y = top + 8.0;
    for key in keys(t) {
        let words = match &key {
            Key::Bar(_, meaning) => meaning.clone(),
            Key::Arrow(kind) => kind.meaning().to_owned(),
            Key::Cross => "lost on the way".to_owned(),
        };
        let width = SAMPLE + 6.0 + text_width(&words, LABEL);
        if x + width > WIDTH - 10.0 && x > 10.0 {
            x = 10.0;
            y += ROW + 4.0;
        }
        let mid = y - 4.0;
        match key {
            Key::Bar(colour, _) => scene.shapes.push(Shape::Rect {
                at: BoxXY {
                    x0: x,
                    y0: mid - 5.0,
                    x1: x + SAMPLE,
                    y1: mid + 5.0,
                },
                colour,
                opacity: 0.25,
                bar: None,
                tooltip: None,
            }),
            Key::Arrow(kind) => {
                let (colour, width, dash) = arrow_style(kind);
                scene.shapes.push(Shape::Line {
                    from: (x, mid),
                    to: (x + SAMPLE, mid),
                    colour,
                    width,
                    dash,
                    head: true,
                    tooltip: None,
                });
            }
            Key::Cross => scene.shapes.push(Shape::Cross {
                at: (x + SAMPLE / 2.0, mid),
                colour: "#c62828",
            }),
        }
        scene.shapes.push(Shape::Text(Text {
            x: x + SAMPLE + 6.0,
            y,
            size: LABEL,
            bold: false,
            anchor: Anchor::Start,
            fill: "#424242",
            text: words,
            role: Role::Legend,
            backdrop: false,
            tooltip: None,
        }));
        x += width + 18.0;
    }
    y + 12.0
}

fn axis(t: &Timeline, scene: &mut Scene, y: f64, x: &dyn Fn(u64) -> f64) {
    scene
        .shapes
        .push(rule((LEFT, y), (WIDTH - RIGHT, y), "#000000"));
    let step = tick_step(t.end_ms());
    let mut ms = 0;
    while ms <= t.end_ms() {
        let tx = x(ms);
        scene.shapes.push(rule((tx, y), (tx, y + 5.0), "#000000"));
        scene.shapes.push(Shape::Text(Text {
            x: tx,
            y: y + 18.0,
            size: LABEL,
            bold: false,
            anchor: Anchor::Middle,
            fill: "#000000",
            text: format!("{} s", ms / 1000),
            role: Role::Tick,
            backdrop: false,
            tooltip: None,
        }));
        ms += step;
    }
}

/// A thin plain line: a lane's, the axis, a tick.
fn rule(from: (f64, f64), to: (f64, f64), colour: &'static str) -> Shape {
    Shape::Line {
        from,
        to,
        colour,
        width: 1.0,
        dash: None,
        head: false,
        tooltip: None,
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

/// A lane's events grouped by millisecond, in time order: one mark and one label per group.
fn groups<'t>(t: &'t Timeline, lane: &str) -> Vec<(u64, Vec<&'t Event>)> {
    let mut groups: Vec<(u64, Vec<&Event>)> = Vec::new();
    for e in t.sorted_events().into_iter().filter(|e| e.actor == lane) {
        match groups.last_mut() {
            Some((at, list)) if *at == e.at_ms => list.push(e),
            _ => groups.push((e.at_ms, vec![e])),
        }
    }
    groups
}

fn details(list: &[&Event]) -> String {
    list.iter()
        .map(|e| format!("{} {} {}", stamp(e.at_ms), e.kind.name(), e.detail))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Bars in tracks, labels in rows, for one lane.
fn plan_lane(t: &Timeline, lane: &str, x: &dyn Fn(u64) -> f64) -> LanePlan {
    let mut ends: Vec<u64> = Vec::new();
    let mut bars = Vec::new();
    let mut pending = Vec::new();
    let marks: Vec<f64> = groups(t, lane).iter().map(|(at, _)| x(*at)).collect();
    let mut order: Vec<usize> = (0..t.bars.len())
        .filter(|&b| t.bars[b].actor == lane && t.bars[b].to_ms > t.bars[b].from_ms)
        .collect();
    order.sort_by_key(|&b| (t.bars[b].from_ms, t.bars[b].to_ms));
    for b in order {
        let bar = &t.bars[b];
        let track = match ends.iter().position(|&end| end <= bar.from_ms) {
            Some(track) => track,
            None => {
                ends.push(0);
                ends.len() - 1
            }
        };
        ends[track] = bar.to_ms;
        let (x1, x2) = (x(bar.from_ms), x(bar.to_ms));
        // Inside the bar only where it fits and no mark on the lane's line would cover it.
        let end = x1 + 3.0 + text_width(&bar.label, BAR_TEXT);
        let inside = fits(&bar.label, x2 - x1)
            && !marks
                .iter()
                .any(|m| *m + MARK_R >= x1 && *m - MARK_R <= end);
        bars.push((b, track, inside));
        if !inside {
            pending.push(Pending {
                x: (x1 + x2) / 2.0,
                text: bar.label.clone(),
                colour: bar.colour,
                routine: false,
                tooltip: None,
            });
        }
    }
    for (at, list) in groups(t, lane) {
        let names: Vec<&str> = list.iter().map(|e| e.kind.name()).collect();
        pending.push(Pending {
            x: x(at),
            // An arrow, not `>`, which would read as "greater than".
            text: names.join(" → "),
            colour: list[0].kind.colour(),
            routine: list.iter().all(|e| e.kind == EventKind::Renew),
            tooltip: Some(details(&list)),
        });
    }
    for n in t.notes.iter().filter(|n| n.lane == lane) {
        pending.push(Pending {
            x: x(n.at_ms),
            text: n.text.clone(),
            colour: n.colour,
            routine: n.routine,
            tooltip: Some(format!("{} {}", stamp(n.at_ms), n.text)),
        });
    }
    // The ones that must be shown first, each in time order; the sort is stable.
    pending.sort_by(|a, b| a.routine.cmp(&b.routine).then(a.x.total_cmp(&b.x)));
    let mut rows: Vec<Vec<(f64, f64)>> = Vec::new(); // slot 2k: above row k+1, 2k+1: below
    let mut labels = Vec::new();
    let mut thinned = 0;
    for p in pending {
        let w = text_width(&p.text, LABEL);
        let x0 = (p.x - w / 2.0).clamp(LEFT - 8.0, (WIDTH - 4.0 - w).max(LEFT - 8.0));
        let x1 = x0 + w;
        let limit = if p.routine {
            2 * ROUTINE_ROWS
        } else {
            usize::MAX
        };
        let free = |row: &Vec<(f64, f64)>| row.iter().all(|&(a, b)| x1 + GAP <= a || b + GAP <= x0);
        let slot = (0..limit).find(|&s| rows.get(s).is_none_or(free));
        let Some(slot) = slot else {
            thinned += 1;
            continue;
        };
        if rows.len() <= slot {
            rows.resize(slot + 1, Vec::new());
        }
        rows[slot].push((x0, x1));
        labels.push(Placed {
            above: slot % 2 == 0,
            row: slot / 2 + 1,
            x0,
            pending: p,
        });
    }
    let rows_on = |above: bool| {
        labels
            .iter()
            .filter(|l| l.above == above)
            .map(|l| l.row)
            .max()
            .unwrap_or(0)
    };
    LanePlan {
        tracks: ends.len().max(1),
        bars,
        rows_above: rows_on(true),
        rows_below: rows_on(false),
        labels,
        thinned,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round() {
        assert_eq!(tick_step(60_000), 10_000);
        assert_eq!(tick_step(5_000), 1_000);
        assert_eq!(tick_step(3_600_000), 500_000);
    }

    #[test]
    fn a_lesson_wraps_at_spaces() {
        assert_eq!(wrap("one two three", 7), vec!["one two", "three"]);
        assert_eq!(wrap("", 7), Vec::<String>::new());
    }

    #[test]
    fn labels_at_one_moment_take_rows_and_none_overlaps() {
        let mut t = Timeline::new("t", &["a"]);
        for kind in [
            EventKind::Unlock,
            EventKind::Resume,
            EventKind::WriteRejected,
        ] {
            t.event(55_000, "a", kind, "");
        }
        t.event(55_001, "a", EventKind::MayBeLost, "");
        t.event(55_002, "a", EventKind::UnlockFailed, "");
        t.bar("a", 19_000, 55_000, "GC pause", "#6a1b9a");
        t.bar("a", 0, 40_000, "believes it holds the lock", "#1565c0");
        let scene = layout(&t);
        assert!(scene.collisions().is_empty(), "{:?}", scene.collisions());
        assert_eq!(scene.thinned, 0);
        let labels = scene.texts().filter(|(_, t)| t.role == Role::Label).count();
        assert_eq!(labels, 3, "one label per millisecond");
    }
}
