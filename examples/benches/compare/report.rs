//! The report of the `compare` benchmark: the Markdown table of `BENCHMARKS.md`, the targets and
//! why each missed one was missed, rendered from a results file of `key<TAB>value` lines
//! (`--report FILE`).
//!
//! Kept apart from the measurements, which only write figures: this is the writer (the rows, the
//! ratios against their bounds, the figures derived from others) and the small template engine
//! that fills a text's `{key}` with a figure of the run; what the rows and targets say is in
//! `targets.rs`.

use super::targets::{ROWS, TARGETS};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// How a ratio must compare with its bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bound {
    /// At least the bound.
    AtLeast,
    /// At most the bound.
    AtMost,
    /// Strictly below the bound.
    Below,
}

/// One target of issue 9: a ratio of two figures and the bound it must meet.
pub(crate) struct Target {
    pub(crate) what: &'static str,
    /// A ratio measured directly (the median of per-round ratios), used when present.
    pub(crate) paired: Option<&'static str>,
    pub(crate) numerator: &'static str,
    pub(crate) denominator: &'static str,
    pub(crate) bound: f64,
    pub(crate) kind: Bound,
    pub(crate) meaning: &'static str,
    /// Why the target is missed when it is, as profiling the code at this commit showed; the
    /// figures it names are in the table.
    pub(crate) why_missed: &'static str,
}

fn format_value(value: f64, unit: &str, decimals: usize) -> String {
    let shown = if unit == "MiB" {
        value / (1024.0 * 1024.0)
    } else {
        value
    };
    let text = format!("{shown:.decimals$}");
    // Thousands separators for the integer part.
    let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
    let (sign, digits) = int.strip_prefix('-').map_or(("", int), |d| ("-", d));
    let mut grouped = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    if frac.is_empty() {
        format!("{sign}{grouped}")
    } else {
        format!("{sign}{grouped}.{frac}")
    }
}

/// `text` with each `{key}` replaced by that figure of this run, shown as its row shows it.
fn fill(text: &str, figures: &BTreeMap<String, f64>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}').map(|c| open + c) else {
            break;
        };
        let key = &rest[open + 1..close];
        out.push_str(&rest[..open]);
        match figures.get(key) {
            Some(value) => {
                let (unit, decimals) = ROWS
                    .iter()
                    .find(|(k, ..)| *k == key)
                    .map_or(("", 0), |(_, _, unit, decimals)| (*unit, *decimals));
                out.push_str(&format_value(*value, unit, decimals));
            }
            None => out.push_str("(not measured in this run)"),
        }
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}

/// Figures computed from others: the uncontended gap per pair, bytes per key on each side.
fn derive(figures: &mut BTreeMap<String, f64>) {
    let get = |f: &BTreeMap<String, f64>, k: &str| f.get(k).copied();
    for tag in ["mt", "ct"] {
        if let (Some(ours), Some(raw)) = (
            get(figures, &format!("unc_{tag}_ours_pairs_s")),
            get(figures, &format!("unc_{tag}_raw_pairs_s")),
        ) && ours > 0.0
            && raw > 0.0
        {
            figures.insert(format!("unc_{tag}_gap_us"), 1e6 / ours - 1e6 / raw);
        }
    }
    // The bound of the targets on absolute rates, which are written in millions.
    figures.insert("one_million".into(), 1e6);
    if let (Some(native), Some(lua)) = (
        get(figures, "crit_lock_pair_native_s"),
        get(figures, "crit_lock_pair_lua_s"),
    ) && lua > 0.0
    {
        figures.insert("crit_lock_pair_native_over_lua".into(), native / lua);
    }
    // What the instruction counts say about the rate targets: the instructions this machine ran
    // per second in the timed row, and the count per unit that the target would allow at it.
    for (instr, rate, per_s, needed, target) in [
        (
            "cg_engine_pair_instr",
            "crit_lock_pair_native_s",
            "cg_engine_rate_g",
            "cg_engine_pair_needed",
            2e6,
        ),
        (
            "cg_sim_event_instr",
            "sim_events_s",
            "cg_sim_rate_g",
            "cg_sim_event_needed",
            3e6,
        ),
    ] {
        if let (Some(count), Some(units_s)) = (get(figures, instr), get(figures, rate)) {
            figures.insert(per_s.into(), count * units_s / 1e9);
            figures.insert(needed.into(), count * units_s / target);
        }
    }
    if let (Some(peak), Some(before), Some(keys)) = (
        get(figures, "mem_fake_peak_rss_bytes"),
        get(figures, "mem_fake_rss_before_bytes"),
        get(figures, "mem_fake_keys"),
    ) && keys > 0.0
    {
        figures.insert("mem_fake_bytes_per_key".into(), (peak - before) / keys);
    }
    if let (Some(rss), Some(before), Some(keys)) = (
        get(figures, "mem_redis_used_memory_rss_bytes"),
        get(figures, "mem_redis_rss_before_bytes"),
        get(figures, "mem_redis_keys"),
    ) && keys > 0.0
    {
        figures.insert("mem_redis_bytes_per_key".into(), (rss - before) / keys);
    }
}

/// The Markdown table of figures, the targets, and why each missed one was missed, from
/// `key<TAB>value` lines (a later line for the same key wins).
pub(crate) fn report(results: &str) -> String {
    let mut figures: BTreeMap<String, f64> = results
        .lines()
        .filter_map(|line| {
            let (key, value) = line.split_once('\t')?;
            Some((key.trim().to_owned(), value.trim().parse().ok()?))
        })
        .collect();
    derive(&mut figures);
    let mut out = String::new();
    let _ = writeln!(out, "| measurement | figure | unit |\n|---|---:|---|");
    for (key, label, unit, decimals) in ROWS {
        if let Some(value) = figures.get(*key) {
            let label = label.replace("  ", "&nbsp;&nbsp;");
            let _ = writeln!(
                out,
                "| {label} | {} | {unit} |",
                format_value(*value, unit, *decimals)
            );
        }
    }
    let _ = writeln!(
        out,
        "\n### Targets\n\n| ratio | measured | target | met? | what it means for a user |\n|---|---:|---:|---|---|"
    );
    let mut missed = Vec::new();
    for t in TARGETS {
        let bound = match t.kind {
            Bound::AtLeast => format!("≥ {}", t.bound),
            Bound::AtMost => format!("≤ {}", t.bound),
            Bound::Below => format!("< {}", t.bound),
        };
        let direct = t.paired.and_then(|k| figures.get(k).copied());
        let divided = match (figures.get(t.numerator), figures.get(t.denominator)) {
            (Some(n), Some(d)) => Some(n / d),
            _ => None,
        };
        let Some(ratio) = direct.or(divided) else {
            let _ = writeln!(
                out,
                "| {} | not measured | {bound} | **missed: not measured in this run** | {} |",
                t.what, t.meaning
            );
            continue;
        };
        let met = match t.kind {
            Bound::AtLeast => ratio >= t.bound,
            Bound::AtMost => ratio <= t.bound,
            Bound::Below => ratio < t.bound,
        };
        let how = if direct.is_some() {
            " (median of the per-round ratios)"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "| {}{how} | {ratio:.2} | {bound} | {} | {} |",
            t.what,
            if met { "met" } else { "**missed**" },
            t.meaning
        );
        if !met {
            missed.push((t, ratio, bound));
        }
    }
    if missed.is_empty() {
        let _ = writeln!(out, "\nEvery target was met in this run.");
    } else {
        let _ = writeln!(out, "\n### Missed targets, and why\n");
        for (t, ratio, bound) in missed {
            let _ = writeln!(
                out,
                "- **{}**: measured {ratio:.2}, target {bound}. {}\n",
                t.what,
                fill(t.why_missed, &figures)
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
            );
        }
    }
    out
}
