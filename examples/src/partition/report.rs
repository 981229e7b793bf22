//! The figures across runs: per topology and mode, the sums of the checker's findings and the
//! quantiles of unavailability, printed as a Markdown table (the book's page shows one).

use super::checker::{Findings, quantile};
use super::client::Mode;
use std::collections::BTreeMap;
use std::fmt::Write;

/// The findings of every run of one mode on one topology, summed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Runs counted.
    pub runs: usize,
    /// Grants seen.
    pub grants: usize,
    /// Overlapping holds at the resource.
    pub violations: usize,
    /// Runs with at least one violation.
    pub runs_with_violations: usize,
    /// Stale tokens accepted.
    pub stale_accepted: usize,
    /// Writes refused for a stale token.
    pub rejected: usize,
    /// Believed holds that overlapped.
    pub double_grants: usize,
    /// Of which after a server fault.
    pub lost_grants: usize,
    /// Every heal's unavailability, ms.
    pub unavailable_ms: Vec<u64>,
}

impl Totals {
    /// Adds one run's findings.
    pub fn add(&mut self, f: &Findings) {
        self.runs += 1;
        self.grants += f.grants;
        self.violations += f.violations.len();
        self.runs_with_violations += usize::from(!f.violations.is_empty());
        self.stale_accepted += f.stale_accepted;
        self.rejected += f.rejected;
        self.double_grants += f.double_grants.len();
        self.lost_grants += f.lost_grants;
        self.unavailable_ms.extend(&f.unavailable_ms);
    }
}

/// Totals per (topology name, mode).
pub type Table = BTreeMap<(String, Mode), Totals>;

/// The table as Markdown.
pub fn markdown(table: &Table) -> String {
    let mut out = String::from(
        "| topology | mode | runs | grants | violations (runs) | stale accepted | rejected | double grants (after server faults) | unavailable after heal p50 / max |\n\
         |---|---|---|---|---|---|---|---|---|\n",
    );
    for ((topology, mode), t) in table {
        let p50 = quantile(&t.unavailable_ms, 0.5).map_or("-".into(), |v| format!("{v} ms"));
        let max = quantile(&t.unavailable_ms, 1.0).map_or("-".into(), |v| format!("{v} ms"));
        let _ = writeln!(
            out,
            "| {topology} | {} | {} | {} | {} ({}) | {} | {} | {} ({}) | {p50} / {max} |",
            mode.name(),
            t.runs,
            t.grants,
            t.violations,
            t.runs_with_violations,
            t.stale_accepted,
            t.rejected,
            t.double_grants,
            t.lost_grants,
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_sum_runs_and_the_table_has_a_row_per_mode() {
        let findings = Findings {
            grants: 4,
            stale_accepted: 0,
            unavailable_ms: vec![100, 300],
            ..Findings::default()
        };
        let mut table = Table::new();
        let totals = table.entry(("sentinel".into(), Mode::Fenced)).or_default();
        totals.add(&findings);
        totals.add(&findings);
        assert_eq!(totals.grants, 8);
        let text = markdown(&table);
        assert!(
            text.contains(
                "| sentinel | fenced | 2 | 8 | 0 (0) | 0 | 0 | 0 (0) | 100 ms / 300 ms |"
            )
        );
    }
}
