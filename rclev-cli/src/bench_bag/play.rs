//! The play part: how closely `rclev bag play` keeps to a bag's schedule, measured at a
//! subscriber process (`bench-bag-subscriber`, see [`roles`](super::roles)).
//!
//! Per scenario, a bag is written first (`BagWriter`): `hz × --play-secs` messages of one
//! size, log times exactly one period apart, reliable KeepLast(1000) as offered QoS. Per
//! repetition, two variants, in alternating order, each with a fresh subscriber:
//! - `rclev-play`: `rclev bag play <bag> --wait-for-subscribers 1` (the player waits for the
//!   subscriber's match, then plays);
//! - `publisher` (the baseline): `bench-bag-publisher` at the same rate, size and count,
//!   publishing on `clock_nanosleep` deadlines from one thread — the schedule kept as well as
//!   a process can keep it.
//!
//! The subscriber keeps each message's sequence number and DDS reception time. A message's
//! offset is its reception time, relative to the first message's, minus its log time relative
//! to the first's; its deviation is its offset minus the smallest offset of the run (the
//! fastest delivery: what an on-time publish plus the quickest way through DDS looks like).
//! The table shows p50/p99/max deviations in µs and the messages that did not arrive.

use std::process::Command;
use std::time::Duration;

use rclev_bag::{BagTopic, BagWriter, WriterOptions};
use serde::Serialize;

use super::roles::{message, qos, type_info, Received, READY};
use super::{
    failure_summary, median_of, order, ratio_cell, ratio_range, Options, Scratch, START_LIMIT,
};
use crate::bench_dds::procs::Proc;
use crate::bench_dds::size_label;
use crate::errors::Result;

/// The topic played.
const TOPIC: &str = "/bench_bag_play";
/// What is played: payload bytes and messages per second.
const SCENARIOS: [(usize, f64); 2] = [(16, 1000.0), (64 << 10, 100.0)];
/// How long a process may take to exit once its work is done.
const EXIT_LIMIT: Duration = Duration::from_secs(30);
/// The first message's log time (any fixed instant).
const FIRST_LOG_TIME: u64 = 1_765_000_000_000_000_000;

/// Who publishes the messages the subscriber times.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Sender {
    /// `rclev bag play`.
    Play,
    /// `bench-bag-publisher`, the baseline.
    Publisher,
}

impl Sender {
    fn name(self) -> &'static str {
        match self {
            Sender::Play => "rclev-play",
            Sender::Publisher => "publisher",
        }
    }
}

/// One JSON row of the play part: a run, or (`rep` null) the medians over the runs.
#[derive(Serialize, Clone, Debug)]
pub struct PlayRow {
    /// `rclev-play` or `publisher` (the baseline).
    pub variant: &'static str,
    /// Payload bytes per message.
    pub size: usize,
    /// Messages per second in the bag.
    pub hz: f64,
    /// The repetition, from 0; `null` on the median rows.
    pub rep: Option<usize>,
    /// Messages in the bag.
    pub expected: u64,
    /// Messages the subscriber received.
    pub received: u64,
    /// Deviation from the schedule, median, µs.
    pub dev_p50_us: f64,
    /// Deviation from the schedule, 99th percentile, µs.
    pub dev_p99_us: f64,
    /// Largest deviation from the schedule, µs.
    pub dev_max_us: f64,
}

/// A scenario's bag and the log time of each message relative to the first.
struct PlayBag {
    size: usize,
    hz: f64,
    _scratch: Scratch,
    path: std::path::PathBuf,
    schedule: Vec<u64>,
}

fn write_bag(size: usize, hz: f64, secs: f64) -> Result<PlayBag> {
    let scratch = Scratch::new("play")?;
    let path = scratch.path().join("bag");
    let count = (hz * secs).round() as u64;
    let period = 1e9 / hz;
    let mut bag = BagWriter::create(&path, WriterOptions::default())?;
    let id = bag.add_topic(BagTopic::new(TOPIC, &type_info(), vec![qos()]))?;
    let mut schedule = Vec::with_capacity(count as usize);
    for seq in 0..count {
        // The publisher's grid is the same formula: both variants have the same schedule.
        let at = (seq as f64 * period) as u64;
        bag.write_raw(
            id,
            FIRST_LOG_TIME + at,
            FIRST_LOG_TIME + at,
            &message(size, seq)?,
        )?;
        schedule.push(at);
    }
    bag.finish()?;
    Ok(PlayBag {
        size,
        hz,
        _scratch: scratch,
        path,
        schedule,
    })
}

/// Deviations (ns) of the messages received from `schedule` (see the [module](self)).
fn deviations(received: &Received, schedule: &[u64]) -> Vec<i64> {
    let Some(&(_, first_at)) = received.times.first() else {
        return Vec::new();
    };
    let offsets: Vec<i64> = received
        .times
        .iter()
        .filter_map(|&(seq, at)| {
            let planned = *schedule.get(seq as usize)? as i64;
            Some(at.wrapping_sub(first_at) as i64 - planned)
        })
        .collect();
    let fastest = offsets.iter().copied().min().unwrap_or(0);
    offsets.into_iter().map(|o| o - fastest).collect()
}

/// The `q` quantile (nearest rank) of sorted values.
fn quantile(sorted: &[i64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1] as f64
}

fn play_once(sender: Sender, bag: &PlayBag, secs: f64, rep: usize) -> Result<PlayRow> {
    let exe = std::env::current_exe()?;
    let expected = bag.schedule.len() as u64;
    let mut command = Command::new(&exe);
    command
        .args(["bench-bag-subscriber", "--topic", TOPIC, "--count"])
        .arg(expected.to_string());
    let mut subscriber = Proc::spawn(command, "the subscriber".into())?;
    subscriber.wait_for(START_LIMIT, |l| l == READY)?;
    let mut command = Command::new(&exe);
    match sender {
        Sender::Play => command.args(["bag", "play"]).arg(&bag.path).args([
            "--wait-for-subscribers",
            "1",
            "--disable-keyboard-controls",
        ]),
        Sender::Publisher => command
            .args(["bench-bag-publisher", "--topic", TOPIC])
            .args([
                "--size".to_string(),
                bag.size.to_string(),
                "--hz".into(),
                bag.hz.to_string(),
                "--secs".into(),
                secs.to_string(),
            ]),
    };
    let publisher = Proc::spawn(command, sender.name().into())?;
    // The sender first: one that fails says so at once, where the subscriber would wait for
    // its first message for a minute. Its lines are not needed (the player's progress, the
    // publisher's count).
    publisher.wait_exit(Duration::from_secs_f64(secs) + START_LIMIT + EXIT_LIMIT)?;
    // It lingered after its last message, and the subscriber stops when all came (or none
    // came for a while).
    let line = subscriber.wait_for(START_LIMIT, |l| l.starts_with('{'))?;
    let received: Received = serde_json::from_str(&line)?;
    subscriber.wait_exit(EXIT_LIMIT)?;
    let mut dev = deviations(&received, &bag.schedule);
    dev.sort_unstable();
    Ok(PlayRow {
        variant: sender.name(),
        size: bag.size,
        hz: bag.hz,
        rep: Some(rep),
        expected,
        received: received.times.len() as u64,
        dev_p50_us: quantile(&dev, 0.5) / 1e3,
        dev_p99_us: quantile(&dev, 0.99) / 1e3,
        dev_max_us: quantile(&dev, 1.0) / 1e3,
    })
}

/// Runs the play part and prints its tables.
pub(super) fn run(options: &Options<'_>) -> Result<Vec<PlayRow>> {
    eprintln!(
        "bag play: rclev bag play against a clock_nanosleep publisher, {} s bags, {} \
         repetition(s), domain {}",
        options.play_secs,
        options.repeat,
        std::env::var("ROS_DOMAIN_ID").unwrap_or_default()
    );
    let bags = SCENARIOS
        .iter()
        .map(|&(size, hz)| write_bag(size, hz, options.play_secs))
        .collect::<Result<Vec<_>>>()?;
    let senders = [Sender::Play, Sender::Publisher];
    let mut rows = Vec::new();
    let mut failures = Vec::new();
    for rep in 0..options.repeat {
        for bag in &bags {
            for i in order(senders.len(), rep) {
                let sender = senders[i];
                match play_once(sender, bag, options.play_secs, rep) {
                    Ok(row) => {
                        eprintln!(
                            "  rep {rep} {:>10} {:>6} × {} Hz: received {}/{}, deviation p50 \
                             {:.1} µs p99 {:.1} µs max {:.1} µs",
                            row.variant,
                            size_label(bag.size),
                            bag.hz,
                            row.received,
                            row.expected,
                            row.dev_p50_us,
                            row.dev_p99_us,
                            row.dev_max_us
                        );
                        rows.push(row);
                    }
                    Err(e) => {
                        eprintln!(
                            "  rep {rep} {} {} × {} Hz failed: {e}",
                            sender.name(),
                            size_label(bag.size),
                            bag.hz
                        );
                        failures.push(((sender.name(), bag.size, bag.hz), e.to_string()));
                    }
                }
            }
        }
    }
    let medians = medians(&rows, &senders);
    print(&rows, &medians, &failures);
    rows.extend(medians);
    Ok(rows)
}

fn medians(rows: &[PlayRow], senders: &[Sender]) -> Vec<PlayRow> {
    let mut out = Vec::new();
    for &(size, hz) in &SCENARIOS {
        for s in senders {
            let runs: Vec<&PlayRow> = rows
                .iter()
                .filter(|r| r.size == size && r.variant == s.name())
                .collect();
            if runs.is_empty() {
                continue;
            }
            out.push(PlayRow {
                variant: s.name(),
                size,
                hz,
                rep: None,
                expected: runs[0].expected,
                received: median_of(&runs, |r| r.received as f64) as u64,
                dev_p50_us: median_of(&runs, |r| r.dev_p50_us),
                dev_p99_us: median_of(&runs, |r| r.dev_p99_us),
                dev_max_us: median_of(&runs, |r| r.dev_max_us),
            });
        }
    }
    out
}

/// rclev-play/publisher of one column, paired by repetition.
fn paired(rows: &[PlayRow], size: usize, f: fn(&PlayRow) -> f64) -> Option<(f64, f64, f64)> {
    let of = |v: &'static str| {
        rows.iter()
            .filter(move |r| r.variant == v && r.size == size)
    };
    ratio_range(
        of("rclev-play")
            .filter_map(|a| {
                let b = of("publisher").find(|b| b.rep == a.rep)?;
                (f(b) > 0.0).then(|| f(a) / f(b))
            })
            .collect(),
    )
}

fn print(rows: &[PlayRow], medians: &[PlayRow], failures: &[((&str, usize, f64), String)]) {
    println!();
    println!(
        "Bag play: deviation from the bag's schedule at a subscriber (DDS reception times), \
         medians:"
    );
    println!();
    println!("| scenario | sender | received | deviation p50 µs | p99 µs | max µs |");
    println!("| --- | --- | --- | --- | --- | --- |");
    for r in medians {
        println!(
            "| {} × {} Hz | {} | {}/{} | {:.1} | {:.1} | {:.1} |",
            size_label(r.size),
            r.hz,
            r.variant,
            r.received,
            r.expected,
            r.dev_p50_us,
            r.dev_p99_us,
            r.dev_max_us
        );
    }
    for ((sender, size, hz), n, why) in failure_summary(failures) {
        println!(
            "| {} × {hz} Hz | {sender} | failed ({n}×): {why} | | | |",
            size_label(size)
        );
    }
    println!();
    println!("Ratios rclev-play/publisher, median of the per-repetition ratios (range):");
    println!();
    println!("| scenario | p50 | p99 | max |");
    println!("| --- | --- | --- | --- |");
    for &(size, hz) in &SCENARIOS {
        println!(
            "| {} × {hz} Hz | {} | {} | {} |",
            size_label(size),
            ratio_cell(paired(rows, size, |r| r.dev_p50_us)),
            ratio_cell(paired(rows, size, |r| r.dev_p99_us)),
            ratio_cell(paired(rows, size, |r| r.dev_max_us)),
        );
    }
}
