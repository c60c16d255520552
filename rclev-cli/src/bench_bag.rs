//! `rclev bench bag`: what recording and playing bags costs, each part against a baseline
//! measured side by side in the same run.
//!
//! - **writer** ([`writer`]): `rclev_bag::BagWriter` against the `mcap` crate writing the same
//!   messages directly (the same write options `BagWriter` uses: profile `ros2`, rosbag2's
//!   768 KiB chunks, no CRCs; one schema and one channel, `write_to_known_channel`), to files
//!   in the temporary directory (`TMPDIR`), for payloads of 16 B, 1 KiB, 64 KiB and 1 MiB,
//!   uncompressed and zstd: messages/s, MB/s, process CPU per message and the ratio
//!   rclev/mcap.
//! - **record** ([`record`]): the whole recorder, `rclev bag record`, as a child process, fed
//!   over DDS by a publisher process of this binary (`bench-bag-publisher`, hidden) on an
//!   absolute-deadline schedule: 10 000 msg/s of 16 B and 100 msg/s of 1 MiB. Published,
//!   in the bag (read back with `rclev_bag::BagReader`), lost, the recorder's CPU per message
//!   and per MB, and beside it the CPU the `mcap` crate takes to write the same messages in
//!   this process (measured right after each recording).
//! - **play** ([`play`]): the timing of `rclev bag play`, measured at a subscriber process
//!   (`bench-bag-subscriber`, hidden) that keeps each message's DDS reception time: a bag of
//!   1 kHz × 16 B and one of 100 Hz × 64 KiB is played, and each message's deviation from its
//!   schedule (the bag's log-time spacing) is reported, p50/p99/max, beside the same
//!   subscriber fed by `bench-bag-publisher` at the same rate on `clock_nanosleep` deadlines.
//!
//! The record and play parts run in a fresh network namespace with only `lo` (the binary
//! re-executes itself there with [`rclev_dds::isolation`], as `bench pubsub --transport dds`
//! does), with a domain id of its own. Every part runs its cases `--repeat` times,
//! interleaved (the variants' order reversed every other repetition), so that a noisy spell
//! of the machine hits both sides; the tables show medians and the ratios are medians of the
//! per-repetition ratios.

mod play;
mod record;
mod roles;
mod writer;

use std::path::{Path, PathBuf};
use std::time::Duration;

use rclev_dds::isolation::Isolated;
use serde::Serialize;

use crate::errors::Result;
use crate::report::write_json;
pub use roles::{publisher, subscriber, PublisherArgs, SubscriberArgs};

/// Set inside the benchmark's network namespace.
const INSIDE: &str = "RCLEV_BENCH_BAG_NETNS";
/// How long a child process may take to start, discover its peer and say so.
const START_LIMIT: Duration = Duration::from_secs(30);

/// A part of `rclev bench bag`.
#[derive(clap::ValueEnum, Clone, Copy, PartialEq, Eq, Debug)]
pub enum Part {
    /// BagWriter against the mcap crate, in this process.
    Writer,
    /// `rclev bag record` fed over DDS.
    Record,
    /// `rclev bag play`'s timing at a subscriber.
    Play,
}

impl Part {
    /// Whether the part needs DDS (and so the network namespace).
    fn uses_dds(self) -> bool {
        matches!(self, Part::Record | Part::Play)
    }
}

/// What `rclev bench bag` was asked for.
pub struct Options<'a> {
    /// Which parts to run, in this order.
    pub parts: Vec<Part>,
    /// writer: the longest a run may write (it also stops at 256 MiB or 2 000 000 messages);
    /// record: how long the publisher publishes.
    pub secs: f64,
    /// play: the bags' duration.
    pub play_secs: f64,
    /// writer: payload sizes.
    pub sizes: Vec<usize>,
    /// Runs of every case, interleaved.
    pub repeat: usize,
    /// Where to write the rows as JSON.
    pub json: Option<&'a Path>,
}

/// One JSON row: `part` says which table it belongs to.
#[derive(Serialize, Clone, Debug)]
#[serde(tag = "part", rename_all = "lowercase")]
pub enum Row {
    /// A writer run (or median).
    Writer(writer::WriterRow),
    /// A recording (or median).
    Record(record::RecordRow),
    /// A play-timing run (or median).
    Play(play::PlayRow),
}

/// Runs the benchmark (in a network namespace of its own when a DDS part is asked for).
pub fn run(options: Options<'_>) -> Result {
    let positive = |x: f64| x.is_finite() && x > 0.0;
    if !positive(options.secs) || !positive(options.play_secs) {
        return Err("--secs and --play-secs must be positive".into());
    }
    if options.repeat == 0 || options.parts.is_empty() {
        return Err("--repeat must be at least 1 and --parts not empty".into());
    }
    if let Some(size) = options
        .sizes
        .iter()
        .find(|&&s| !(roles::MIN_SIZE..=u32::MAX as usize - 64).contains(&s))
    {
        return Err(format!(
            "size {size}: from {} bytes (a message carries a sequence number) to 4 GiB",
            roles::MIN_SIZE
        )
        .into());
    }
    if options.parts.iter().any(|p| p.uses_dds()) && std::env::var_os(INSIDE).is_none() {
        return reexec_in_netns();
    }
    let mut rows = Vec::new();
    // A part of which no case completed, by name: the run goes on with the other parts (their
    // figures are worth having), and fails at the end.
    let mut empty = Vec::new();
    for part in &options.parts {
        let before = rows.len();
        match part {
            Part::Writer => rows.extend(writer::run(&options)?.into_iter().map(Row::Writer)),
            Part::Record => rows.extend(record::run(&options)?.into_iter().map(Row::Record)),
            Part::Play => rows.extend(play::run(&options)?.into_iter().map(Row::Play)),
        }
        if rows.len() == before {
            empty.push(format!("{part:?}").to_lowercase());
        }
    }
    if let Some(path) = options.json {
        write_json(path, &rows)?;
    }
    if !empty.is_empty() {
        return Err(format!("no case of {} completed", empty.join(", ")).into());
    }
    Ok(())
}

/// Runs this very command again in a fresh network namespace with only `lo` up and a
/// `/dev/shm` of its own ([`rclev_dds::isolation`]): no traffic leaves the machine and no other
/// DDS participant joins.
fn reexec_in_netns() -> Result {
    // 231 or 232: away from the tests' domains (1..=200) and `bench pubsub`'s (201..=230); 232
    // is the highest id whose RTPS ports (7400 + 250 × id + …) fit in 16 bits. The namespace
    // keeps concurrent runs apart already; the domain is a second fence.
    let domain = 231 + std::process::id() % 2;
    let mut run = Isolated::new(std::env::current_exe()?);
    run.ros_domain(domain)
        .command()
        .args(std::env::args_os().skip(1))
        .env(INSIDE, "1");
    let status = run
        .status()
        .map_err(|e| format!("the benchmark's network namespace: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("the benchmark failed in its network namespace ({status})").into())
    }
}

/// A directory of its own under the temporary directory, removed on drop (a bag directory
/// must not exist before it is written; a failed run must not leave hundreds of MB behind).
struct Scratch(PathBuf);

impl Scratch {
    fn new(what: &str) -> Result<Scratch> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "rclev-bench-bag-{}-{what}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir)?;
        Ok(Scratch(dir))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Bytes in the files under `dir` (not recursive: a bag directory is flat).
fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// The order of `n` variants in repetition `rep`: reversed every other one, so that neither
/// side always runs first (after the other has warmed the page cache, say).
fn order(n: usize, rep: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (0..n).collect();
    if rep % 2 == 1 {
        v.reverse();
    }
    v
}

/// Median, low and high of a list of ratios; `None` if it is empty.
fn ratio_range(ratios: Vec<f64>) -> Option<(f64, f64, f64)> {
    if ratios.is_empty() {
        return None;
    }
    let lo = ratios.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Some((crate::bench_dds::median(ratios), lo, hi))
}

/// A ratio cell: `median (low–high)`, or `–`.
fn ratio_cell(r: Option<(f64, f64, f64)>) -> String {
    match r {
        Some((m, lo, hi)) => format!("{m:.2} ({lo:.2}–{hi:.2})"),
        None => "–".into(),
    }
}

/// The median of one field over some rows.
fn median_of<R>(rows: &[&R], f: impl Fn(&R) -> f64) -> f64 {
    crate::bench_dds::median(rows.iter().map(|r| f(r)).collect())
}

/// Failed cases grouped by what failed (in first-seen order): how many times, and the first
/// line of the first error.
fn failure_summary<K: PartialEq + Clone>(failures: &[(K, String)]) -> Vec<(K, usize, String)> {
    let mut out: Vec<(K, usize, String)> = Vec::new();
    for (key, why) in failures {
        match out.iter_mut().find(|(k, _, _)| k == key) {
            Some(entry) => entry.1 += 1,
            None => out.push((
                key.clone(),
                1,
                why.lines().next().unwrap_or_default().to_string(),
            )),
        }
    }
    out
}
