//! What both DDS scenarios print the same way: failed cases, and the ratio table (the median
//! and range of per-repetition ratios, variant against baseline, column by column).

use super::{median, Variant};
use crate::errors::Result;

/// One measured case of a scenario: which variant, which size, which repetition.
pub(super) trait Repetition {
    /// The variant's name.
    fn variant(&self) -> &str;
    /// Payload bytes per message.
    fn size(&self) -> usize;
    /// The repetition, from 0; `None` on median rows.
    fn rep(&self) -> Option<usize>;
}

/// A case that did not complete.
pub(super) struct Failure {
    pub variant: &'static str,
    pub size: usize,
    /// The error (its first line goes into the table).
    pub why: String,
}

impl Failure {
    /// What the table says for a variant and size without a run: `None` if nothing failed.
    pub fn cell(failures: &[Failure], variant: &str, size: usize) -> Option<String> {
        let f: Vec<&Failure> = failures
            .iter()
            .filter(|f| f.variant == variant && f.size == size)
            .collect();
        let first = f.first()?;
        let why = first.why.lines().next().unwrap_or_default();
        Some(format!("failed ({}×): {why}", f.len()))
    }
}

/// Runs every case `repeat` times, interleaved so that a noisy spell of the VM hits all the
/// variants: for each repetition and size, each variant in turn, in reverse order every other
/// repetition. A case that fails is kept as a [`Failure`] (a variant that cannot move a size
/// must not cost the run the others' figures: the table says it failed, and why).
pub(super) fn run_interleaved<R>(
    variants: &[Variant],
    sizes: &[usize],
    repeat: usize,
    mut case: impl FnMut(Variant, usize, usize) -> Result<R>,
) -> (Vec<R>, Vec<Failure>) {
    let (mut rows, mut failures) = (Vec::new(), Vec::new());
    for rep in 0..repeat {
        for &size in sizes {
            let mut order = variants.to_vec();
            if rep % 2 == 1 {
                order.reverse();
            }
            for variant in order {
                match case(variant, size, rep) {
                    Ok(row) => rows.push(row),
                    Err(e) => {
                        eprintln!("  rep {rep} {} {size} B failed: {e}", variant.name());
                        failures.push(Failure {
                            variant: variant.name(),
                            size,
                            why: e.to_string(),
                        });
                    }
                }
            }
        }
    }
    (rows, failures)
}

/// Median and range of `ours / theirs` over the repetitions both have, for one column.
pub(super) fn paired_ratio<R: Repetition>(
    rows: &[R],
    size: usize,
    ours: &str,
    theirs: &str,
    f: fn(&R) -> f64,
) -> Option<(f64, f64, f64)> {
    let ratios: Vec<f64> = rows
        .iter()
        .filter(|r| r.variant() == ours && r.size() == size)
        .filter_map(|a| {
            let rep = a.rep()?;
            let b = rows
                .iter()
                .find(|b| b.variant() == theirs && b.size() == size && b.rep() == Some(rep))?;
            (f(b) > 0.0).then(|| f(a) / f(b))
        })
        .collect();
    if ratios.is_empty() {
        return None;
    }
    let lo = ratios.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Some((median(ratios), lo, hi))
}

/// A column of the ratio table: its heading and the figure it compares.
pub(super) type Column<R> = (&'static str, fn(&R) -> f64);

/// Prints "Ratios, …" and a Markdown table: one row per size and `(ours, theirs)` pair that
/// has paired repetitions in the first column, one cell per column.
pub(super) fn print_ratios<R: Repetition>(
    rows: &[R],
    sizes: &[usize],
    pairs: &[(&str, &str)],
    columns: &[Column<R>],
) {
    println!();
    println!("Ratios, median of the per-repetition ratios (range):");
    println!();
    let names: Vec<&str> = columns.iter().map(|c| c.0).collect();
    println!("| size | ratio | {} |", names.join(" | "));
    println!("| --- | --- |{}", " --- |".repeat(columns.len()));
    for &size in sizes {
        for &(ours, theirs) in pairs {
            let cells: Vec<Option<(f64, f64, f64)>> = columns
                .iter()
                .map(|&(_, f)| paired_ratio(rows, size, ours, theirs, f))
                .collect();
            if cells.first().is_none_or(|c| c.is_none()) {
                continue;
            }
            let cells: Vec<String> = cells
                .into_iter()
                .map(|c| match c {
                    Some((m, lo, hi)) => format!("{m:.2} ({lo:.2}–{hi:.2})"),
                    None => "–".into(),
                })
                .collect();
            println!(
                "| {} | {ours}/{theirs} | {} |",
                super::size_label(size),
                cells.join(" | ")
            );
        }
    }
}
