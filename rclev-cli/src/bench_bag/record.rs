//! The record part: `rclev bag record` as a child process, fed over DDS by
//! `bench-bag-publisher` (see [`roles`](super::roles)).
//!
//! Per scenario and repetition: the publisher starts and waits for a subscription; the
//! recorder (`rclev bag record <topic> -o <dir>`) starts, finds the topic and subscribes
//! (`Subscribed to topic '<topic>'` on its stdout); the publisher publishes `hz × --secs`
//! messages on its grid (reliable, KeepLast(1000)), says how many, and stays ~1 s so that
//! they are acknowledged. Then the recorder gets SIGINT and closes its bag, which is read back
//! with `rclev_bag::BagReader`: published, in the bag, lost (published − in the bag), and
//! what the recorder said (`Recorded N messages … lost: L …`).
//!
//! The recorder's CPU is read from `/proc/<pid>/stat` (user + system, 10 ms resolution) when
//! it subscribed and just before SIGINT: its start-up and its closing are left out. Beside it,
//! the baseline: the CPU this process takes to write the same number of messages of the same
//! size with the `mcap` crate directly (as the writer part's `mcap` side, uncompressed),
//! measured right after each recording. The difference is what receiving over DDS and the
//! recorder's own work cost on top of writing the file.

use std::process::Command;
use std::time::Duration;

use rclev_bag::{BagReader, Compression};
use serde::Serialize;

use super::roles::{DATA_OFFSET, MATCHED};
use super::writer::{self, Messages, Writer};
use super::{
    dir_bytes, failure_summary, median_of, ratio_cell, ratio_range, Options, Scratch, START_LIMIT,
};
use crate::bench_dds::procs::Proc;
use crate::bench_dds::size_label;
use crate::errors::Result;

/// The topic recorded.
const TOPIC: &str = "/bench_bag_record";
/// What is recorded: payload bytes and messages per second. 160 kB/s of small messages (the
/// per-message cost), and 100 MB/s of camera-sized ones (the per-byte cost).
const SCENARIOS: [(usize, f64); 2] = [(16, 10_000.0), (1 << 20, 100.0)];
/// How long a process may take to exit once its work is done (the recorder closes its bag).
const EXIT_LIMIT: Duration = Duration::from_secs(30);

/// One JSON row of the record part: a recording, or (`rep` null) the medians over them.
#[derive(Serialize, Clone, Debug)]
pub struct RecordRow {
    /// Payload bytes per message (the CDR is 16 B more).
    pub size: usize,
    /// Messages published per second.
    pub hz: f64,
    /// The repetition, from 0; `null` on the median rows.
    pub rep: Option<usize>,
    /// Messages the publisher published.
    pub published: u64,
    /// Publishes that failed.
    pub publish_failed: u64,
    /// Messages in the bag, counted by reading it.
    pub in_bag: u64,
    /// Published − in the bag.
    pub lost: i64,
    /// The count the recorder printed (`Recorded N messages`), if it did.
    pub recorder_recorded: Option<u64>,
    /// The loss the recorder printed (`lost: L`), if it did.
    pub recorder_lost: Option<u64>,
    /// The recorder's CPU while recording (user + system), seconds.
    pub recorder_cpu_s: f64,
    /// The recorder's CPU per message in the bag, µs.
    pub recorder_cpu_us_per_msg: f64,
    /// The recorder's CPU per MB (10⁶ B of CDR) in the bag, ms.
    pub recorder_cpu_ms_per_mb: f64,
    /// The mcap crate's CPU to write the same messages directly, per message, µs.
    pub mcap_cpu_us_per_msg: f64,
    /// The same per MB, ms.
    pub mcap_cpu_ms_per_mb: f64,
    /// Message bytes (CDR) in the bag per second of publishing, 10⁶ B/s.
    pub bag_mb_per_s: f64,
    /// Size of the bag's files, 10⁶ B.
    pub bag_file_mb: f64,
}

/// Runs the record part and prints its table.
pub(super) fn run(options: &Options<'_>) -> Result<Vec<RecordRow>> {
    eprintln!(
        "bag record: rclev bag record fed over DDS for {} s, {} repetition(s), domain {}",
        options.secs,
        options.repeat,
        std::env::var("ROS_DOMAIN_ID").unwrap_or_default()
    );
    let mut rows = Vec::new();
    let mut failures = Vec::new();
    for rep in 0..options.repeat {
        for &(size, hz) in &SCENARIOS {
            match record_once(size, hz, options.secs, rep) {
                Ok(row) => {
                    eprintln!(
                        "  rep {rep} {:>6} × {hz} Hz: published {} in bag {} lost {} \
                         (recorder: {:?} lost {:?}); recorder {:.2} µs/msg {:.2} ms/MB, mcap \
                         {:.2} µs/msg {:.2} ms/MB; {:.1} MB/s",
                        size_label(size),
                        row.published,
                        row.in_bag,
                        row.lost,
                        row.recorder_recorded,
                        row.recorder_lost,
                        row.recorder_cpu_us_per_msg,
                        row.recorder_cpu_ms_per_mb,
                        row.mcap_cpu_us_per_msg,
                        row.mcap_cpu_ms_per_mb,
                        row.bag_mb_per_s
                    );
                    rows.push(row);
                }
                Err(e) => {
                    eprintln!("  rep {rep} {} × {hz} Hz failed: {e}", size_label(size));
                    failures.push(((size, hz), e.to_string()));
                }
            }
        }
    }
    let medians = medians(&rows);
    print(&rows, &medians, &failures);
    rows.extend(medians);
    Ok(rows)
}

/// `Recorded N messages … lost: L …`: N and L, where given.
fn parse_summary(line: &str) -> (Option<u64>, Option<u64>) {
    let number_after = |key: &str| {
        let rest = &line[line.find(key)? + key.len()..];
        let digits: String = rest
            .trim_start()
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        digits.parse().ok()
    };
    (number_after("Recorded "), number_after("lost:"))
}

fn record_once(size: usize, hz: f64, secs: f64, rep: usize) -> Result<RecordRow> {
    let scratch = Scratch::new("record")?;
    let bag = scratch.path().join("bag");
    let exe = std::env::current_exe()?;
    let mut command = Command::new(&exe);
    command
        .args(["bench-bag-publisher", "--topic", TOPIC])
        .args([
            "--size".to_string(),
            size.to_string(),
            "--hz".into(),
            hz.to_string(),
            "--secs".into(),
            secs.to_string(),
        ]);
    let mut publisher = Proc::spawn(command, "the publisher".into())?;
    let mut command = Command::new(&exe);
    command.args(["bag", "record", TOPIC, "-o"]).arg(&bag);
    let mut recorder = Proc::spawn(command, "rclev bag record".into())?;
    recorder.wait_for(START_LIMIT, |l| l.contains("Subscribed to topic"))?;
    let cpu_before = recorder.cpu_secs()?;
    publisher.wait_for(START_LIMIT, |l| l == MATCHED)?;
    let line = publisher.wait_for(Duration::from_secs_f64(secs) + START_LIMIT, |l| {
        l.starts_with("published ")
    })?;
    let mut words = line.split_whitespace();
    let (published, publish_failed) = match (words.nth(1), words.nth(1)) {
        (Some(p), Some(f)) => (p.parse::<u64>()?, f.parse::<u64>()?),
        _ => return Err(format!("the publisher said {line:?}").into()),
    };
    publisher.wait_exit(EXIT_LIMIT)?;
    let cpu_s = recorder.cpu_secs()? - cpu_before;
    // SAFETY: kill(2) on the recorder's pid: it is our child and not reaped yet (Proc reaps
    // it in wait_exit, below), so the pid is still its.
    if unsafe { libc::kill(recorder.pid() as i32, libc::SIGINT) } != 0 {
        return Err(format!(
            "SIGINT to the recorder: {}",
            std::io::Error::last_os_error()
        )
        .into());
    }
    // The summary line is the recorder's to print; a recorder that prints none still has its
    // bag counted.
    let (recorder_recorded, recorder_lost) = recorder
        .wait_for(EXIT_LIMIT, |l| l.starts_with("Recorded "))
        .map(|l| parse_summary(&l))
        .unwrap_or((None, None));
    recorder.wait_exit(EXIT_LIMIT)?;
    let reader = BagReader::open(&bag)?;
    let mut in_bag = 0u64;
    for m in reader.messages_on([TOPIC]) {
        m?;
        in_bag += 1;
    }
    let bag_file_mb = dir_bytes(&bag) as f64 / 1e6;
    drop(scratch);

    // The baseline, right after: the mcap crate writing what the recorder wrote.
    let messages = Messages::new(size, in_bag)?;
    let scratch = Scratch::new("record-mcap")?;
    let direct = writer::write(
        Writer::Mcap,
        &messages,
        in_bag,
        Compression::None,
        None,
        scratch.path(),
    )?;
    let mb = in_bag as f64 * (DATA_OFFSET + size) as f64 / 1e6;
    let per = |cpu: f64, n: f64, scale: f64| if n > 0.0 { cpu / n * scale } else { 0.0 };
    Ok(RecordRow {
        size,
        hz,
        rep: Some(rep),
        published,
        publish_failed,
        in_bag,
        lost: published as i64 - in_bag as i64,
        recorder_recorded,
        recorder_lost,
        recorder_cpu_s: cpu_s,
        recorder_cpu_us_per_msg: per(cpu_s, in_bag as f64, 1e6),
        recorder_cpu_ms_per_mb: per(cpu_s, mb, 1e3),
        mcap_cpu_us_per_msg: per(direct.cpu_s, direct.messages as f64, 1e6),
        mcap_cpu_ms_per_mb: per(direct.cpu_s, mb, 1e3),
        bag_mb_per_s: mb / secs,
        bag_file_mb,
    })
}

fn medians(rows: &[RecordRow]) -> Vec<RecordRow> {
    let mut out = Vec::new();
    for &(size, hz) in &SCENARIOS {
        let runs: Vec<&RecordRow> = rows.iter().filter(|r| r.size == size).collect();
        if runs.is_empty() {
            continue;
        }
        let m = |f: fn(&RecordRow) -> f64| median_of(&runs, f);
        let opt = |f: fn(&RecordRow) -> Option<u64>| {
            let v: Vec<f64> = runs.iter().filter_map(|r| f(r)).map(|x| x as f64).collect();
            (!v.is_empty()).then(|| crate::bench_dds::median(v) as u64)
        };
        out.push(RecordRow {
            size,
            hz,
            rep: None,
            published: m(|r| r.published as f64) as u64,
            publish_failed: m(|r| r.publish_failed as f64) as u64,
            in_bag: m(|r| r.in_bag as f64) as u64,
            lost: m(|r| r.lost as f64) as i64,
            recorder_recorded: opt(|r| r.recorder_recorded),
            recorder_lost: opt(|r| r.recorder_lost),
            recorder_cpu_s: m(|r| r.recorder_cpu_s),
            recorder_cpu_us_per_msg: m(|r| r.recorder_cpu_us_per_msg),
            recorder_cpu_ms_per_mb: m(|r| r.recorder_cpu_ms_per_mb),
            mcap_cpu_us_per_msg: m(|r| r.mcap_cpu_us_per_msg),
            mcap_cpu_ms_per_mb: m(|r| r.mcap_cpu_ms_per_mb),
            bag_mb_per_s: m(|r| r.bag_mb_per_s),
            bag_file_mb: m(|r| r.bag_file_mb),
        });
    }
    out
}

fn print(rows: &[RecordRow], medians: &[RecordRow], failures: &[((usize, f64), String)]) {
    let opt = |v: Option<u64>| v.map_or("–".to_string(), |v| v.to_string());
    println!();
    println!(
        "Bag record: rclev bag record fed over DDS (medians); CPU beside the mcap crate \
         writing the same messages directly:"
    );
    println!();
    println!(
        "| scenario | published | in bag | lost | recorder said (lost) | recorder CPU µs/msg | \
         mcap CPU µs/msg | recorder CPU ms/MB | mcap CPU ms/MB | CPU recorder/mcap | bag MB/s |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for r in medians {
        let ratio = ratio_range(
            rows.iter()
                .filter(|x| x.size == r.size && x.mcap_cpu_us_per_msg > 0.0)
                .map(|x| x.recorder_cpu_us_per_msg / x.mcap_cpu_us_per_msg)
                .collect(),
        );
        println!(
            "| {} × {} Hz | {} | {} | {} | {} ({}) | {:.2} | {:.2} | {:.2} | {:.2} | {} | {:.1} |",
            size_label(r.size),
            r.hz,
            r.published,
            r.in_bag,
            r.lost,
            opt(r.recorder_recorded),
            opt(r.recorder_lost),
            r.recorder_cpu_us_per_msg,
            r.mcap_cpu_us_per_msg,
            r.recorder_cpu_ms_per_mb,
            r.mcap_cpu_ms_per_mb,
            ratio_cell(ratio),
            r.bag_mb_per_s
        );
    }
    for ((size, hz), n, why) in failure_summary(failures) {
        println!(
            "| {} × {hz} Hz | failed ({n}×): {why} | | | | | | | | | |",
            size_label(size)
        );
    }
    println!();
    println!(
        "The recorder's CPU covers receiving over DDS as well as writing: the mcap column is \
         the writing alone."
    );
}
