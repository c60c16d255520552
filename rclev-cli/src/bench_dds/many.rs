//! `rclev bench pubsub --transport dds --scenario many`: a robot's shape rather than one
//! stream.
//!
//! The sending process publishes on [`MANY_TOPICS`] (10) topics, each at `--ping-hz` (1 kHz by
//! default) and `--sizes` (16 B by default), from one thread on one grid, topic after topic
//! (see [`roles`](super::roles)). The receiving process has [`MANY_FANOUT`] (5) subscriptions
//! on each topic: 50 on one node, so on one worker, with the default delivery — as many
//! sensor inputs on one node. Ten topics with five subscriptions each rather than fifty
//! topics: the receiver's load (50 callbacks per period) is the same, and one sample fanned
//! out to several readers of one process is the common robot case (a camera's images read
//! by several components of one node).
//!
//! After a warm-up, over the window: messages received per second (50 k/s at 1 kHz when
//! nothing is lost), the share of what was sent (× 5) that arrived, the CPU time of both
//! processes and of the receiver alone per received message, and the latency from the send
//! time stamped in each message to its callback (both processes read `CLOCK_MONOTONIC` on the
//! same host), p50 and p99. `rclev` (and `rclev-direct`, if asked) against `raw`: 50 readers
//! with listeners on [`rclev_dds::engine`], counting on Fast DDS's receive thread.

use std::time::Duration;

use serde::Serialize;

use super::procs::Proc;
use super::roles::{self, Role, MANY_FANOUT, MANY_TOPICS};
use super::table::{self, Failure, Repetition};
use super::{median, size_label, spawn_role, steal_percent, Options, Variant, START_LIMIT};
use crate::errors::Result;
use crate::report::write_json;

/// One JSON row of the many scenario: a run of one variant at one size, or (`rep` null) the
/// medians over the runs.
#[derive(Serialize, Clone, Debug)]
pub struct ManyRow {
    /// `rclev`, `rclev-worker`, `rclev-direct` or `raw`.
    pub variant: &'static str,
    /// Payload bytes per message.
    pub size: usize,
    /// The repetition, from 0; `null` on the median rows.
    pub rep: Option<usize>,
    /// Topics published.
    pub topics: usize,
    /// Subscriptions in the receiving process (all topics).
    pub subscriptions: usize,
    /// Messages per second each topic is published at.
    pub hz_per_topic: f64,
    /// Messages the sender published per second, all topics.
    pub sent_per_s: f64,
    /// Callbacks (messages received by a subscription) per second, all subscriptions.
    pub msgs_per_s: f64,
    /// Received, % of sent × subscriptions per topic.
    pub delivered_percent: f64,
    /// CPU time of sender and receiver together per received message, µs.
    pub cpu_us_per_msg: f64,
    /// CPU time of the receiver alone per received message, µs.
    pub receiver_cpu_us_per_msg: f64,
    /// CPU the sending process used over the window, in cores.
    pub sender_cores: f64,
    /// CPU the receiving process used over the window, in cores.
    pub receiver_cores: f64,
    /// Send stamp → callback, median, µs.
    pub latency_p50_us: f64,
    /// Send stamp → callback, 99th percentile, µs.
    pub latency_p99_us: f64,
    /// Send stamp → callback, longest, µs.
    pub latency_max_us: f64,
    /// Latencies measured in the window.
    pub latency_samples: u64,
    /// VM steal over the window, % of all CPU time.
    pub steal_percent: f64,
}

/// Runs the many scenario (inside the benchmark's network namespace).
pub(super) fn run(options: &Options<'_>, variants: &[Variant]) -> Result {
    let domain = std::env::var("ROS_DOMAIN_ID").unwrap_or_default();
    eprintln!(
        "DDS many-subscriptions benchmark: domain {domain}, {MANY_TOPICS} topics × {} Hz into \
         {MANY_FANOUT} subscriptions each, sizes {:?} B, {} s windows after {} s warm-up, {} \
         repetition(s), Fast DDS {}",
        options.ping_hz,
        options.sizes,
        options.secs,
        options.warmup,
        options.repeat,
        rclev_dds::engine_version()
    );
    let (rows, failures) = table::run_interleaved(
        variants,
        &options.sizes,
        options.repeat,
        |variant, size, rep| {
            // Refused before the namespace was made.
            let engine = variant.engine().ok_or("not a variant of this scenario")?;
            let mut row = case(engine, size, options)?;
            row.variant = variant.name();
            row.rep = Some(rep);
            eprintln!(
                "  rep {rep} {:>12} {:>6} B: sent {:.0}/s, received {:.0}/s ({:.1}%), {:.2} µs \
                 CPU/msg ({:.2} receiver), latency p50 {:.1} µs p99 {:.1} µs, steal {:.1}%",
                row.variant,
                size,
                row.sent_per_s,
                row.msgs_per_s,
                row.delivered_percent,
                row.cpu_us_per_msg,
                row.receiver_cpu_us_per_msg,
                row.latency_p50_us,
                row.latency_p99_us,
                row.steal_percent
            );
            Ok(row)
        },
    );
    let medians = medians(&rows, variants, &options.sizes);
    print_tables(&rows, &medians, &failures, variants, &options.sizes);
    if let Some(path) = options.json {
        let mut all = rows.clone();
        all.extend(medians);
        write_json(path, &all)?;
    }
    if rows.is_empty() {
        return Err("no case completed".into());
    }
    Ok(())
}

/// One measurement: a fresh receiver and sender on `engine`.
fn case(engine: roles::Engine, size: usize, options: &Options<'_>) -> Result<ManyRow> {
    let hz = options.ping_hz;
    let mut receiver: Proc = spawn_role(Role::ManyReceiver, engine, size, hz)?;
    receiver.wait_for(START_LIMIT, |l| l == roles::READY)?;
    let mut sender = spawn_role(Role::ManySender, engine, size, hz)?;
    sender.wait_for(START_LIMIT, |l| l == roles::READY)?;
    std::thread::sleep(Duration::from_secs_f64(options.warmup));
    let steal0 = crate::report::steal_jiffies();
    // The receiver's mark also drops the latencies the warm-up recorded.
    let (r0, s0) = (receiver.mark()?, sender.mark()?);
    std::thread::sleep(Duration::from_secs_f64(options.secs));
    let (r1, s1) = (receiver.mark()?, sender.mark()?);
    let steal1 = crate::report::steal_jiffies();
    sender.finish()?;
    receiver.finish()?;
    if r1.malformed > 0 {
        return Err(format!("the receiver got {} malformed messages", r1.malformed).into());
    }
    let received = r1.received - r0.received;
    if received == 0 || r1.rtt_count == 0 {
        return Err("the receiver got nothing in the window".into());
    }
    let rx_secs = (r1.t_ns - r0.t_ns) as f64 / 1e9;
    let tx_secs = (s1.t_ns - s0.t_ns) as f64 / 1e9;
    let msgs_per_s = received as f64 / rx_secs;
    let sent_per_s = (s1.sent - s0.sent) as f64 / tx_secs;
    let sender_cores = (s1.cpu_s - s0.cpu_s) / tx_secs;
    let receiver_cores = (r1.cpu_s - r0.cpu_s) / rx_secs;
    Ok(ManyRow {
        variant: "",
        size,
        rep: None,
        topics: MANY_TOPICS,
        subscriptions: MANY_TOPICS * MANY_FANOUT,
        hz_per_topic: hz,
        sent_per_s,
        msgs_per_s,
        delivered_percent: if sent_per_s > 0.0 {
            100.0 * msgs_per_s / (sent_per_s * MANY_FANOUT as f64)
        } else {
            0.0
        },
        cpu_us_per_msg: (sender_cores + receiver_cores) / msgs_per_s * 1e6,
        receiver_cpu_us_per_msg: receiver_cores / msgs_per_s * 1e6,
        sender_cores,
        receiver_cores,
        latency_p50_us: r1.rtt_p50_ns as f64 / 1e3,
        latency_p99_us: r1.rtt_p99_ns as f64 / 1e3,
        latency_max_us: r1.rtt_max_ns as f64 / 1e3,
        latency_samples: r1.rtt_count,
        steal_percent: steal_percent(steal0, steal1),
    })
}

impl Repetition for ManyRow {
    fn variant(&self) -> &str {
        self.variant
    }
    fn size(&self) -> usize {
        self.size
    }
    fn rep(&self) -> Option<usize> {
        self.rep
    }
}

/// The median row of every variant and size that has runs (each column on its own).
fn medians(rows: &[ManyRow], variants: &[Variant], sizes: &[usize]) -> Vec<ManyRow> {
    let mut out = Vec::new();
    for &size in sizes {
        for v in variants {
            let runs: Vec<&ManyRow> = rows
                .iter()
                .filter(|r| r.variant == v.name() && r.size == size)
                .collect();
            let Some(first) = runs.first() else {
                continue;
            };
            let m = |f: fn(&ManyRow) -> f64| median(runs.iter().map(|r| f(r)).collect());
            out.push(ManyRow {
                rep: None,
                sent_per_s: m(|r| r.sent_per_s),
                msgs_per_s: m(|r| r.msgs_per_s),
                delivered_percent: m(|r| r.delivered_percent),
                cpu_us_per_msg: m(|r| r.cpu_us_per_msg),
                receiver_cpu_us_per_msg: m(|r| r.receiver_cpu_us_per_msg),
                sender_cores: m(|r| r.sender_cores),
                receiver_cores: m(|r| r.receiver_cores),
                latency_p50_us: m(|r| r.latency_p50_us),
                latency_p99_us: m(|r| r.latency_p99_us),
                latency_max_us: m(|r| r.latency_max_us),
                latency_samples: m(|r| r.latency_samples as f64) as u64,
                steal_percent: m(|r| r.steal_percent),
                ..(*first).clone()
            });
        }
    }
    out
}

/// Prints the medians and the ratios as Markdown tables.
fn print_tables(
    rows: &[ManyRow],
    medians: &[ManyRow],
    failures: &[Failure],
    variants: &[Variant],
    sizes: &[usize],
) {
    println!();
    println!(
        "| size | variant | topics × subs/topic | sent msgs/s | received msgs/s | delivered % | \
         CPU µs/msg (both) | CPU µs/msg (receiver) | latency p50 µs | latency p99 µs | steal % |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for &size in sizes {
        for v in variants {
            match medians
                .iter()
                .find(|r| r.size == size && r.variant == v.name())
            {
                Some(r) => println!(
                    "| {} | {} | {} × {} | {:.0} | {:.0} | {:.1} | {:.2} | {:.2} | {:.1} | {:.1} \
                     | {:.1} |",
                    size_label(size),
                    r.variant,
                    r.topics,
                    r.subscriptions / r.topics.max(1),
                    r.sent_per_s,
                    r.msgs_per_s,
                    r.delivered_percent,
                    r.cpu_us_per_msg,
                    r.receiver_cpu_us_per_msg,
                    r.latency_p50_us,
                    r.latency_p99_us,
                    r.steal_percent
                ),
                None => {
                    if let Some(cell) = Failure::cell(failures, v.name(), size) {
                        println!(
                            "| {} | {} | {cell} | | | | | | | | |",
                            size_label(size),
                            v.name()
                        );
                    }
                }
            }
        }
    }
    table::print_ratios(
        rows,
        sizes,
        &[
            ("rclev", "raw"),
            ("rclev-worker", "raw"),
            ("rclev-direct", "raw"),
        ],
        &[
            ("CPU/msg (both)", |r| r.cpu_us_per_msg),
            ("CPU/msg (receiver)", |r| r.receiver_cpu_us_per_msg),
            ("latency p50", |r| r.latency_p50_us),
            ("latency p99", |r| r.latency_p99_us),
            ("received msgs/s", |r| r.msgs_per_s),
        ],
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(variant: &'static str, rep: usize, cpu: f64) -> ManyRow {
        ManyRow {
            variant,
            size: 16,
            rep: Some(rep),
            topics: MANY_TOPICS,
            subscriptions: MANY_TOPICS * MANY_FANOUT,
            hz_per_topic: 1000.0,
            sent_per_s: 10_000.0,
            msgs_per_s: 50_000.0,
            delivered_percent: 100.0,
            cpu_us_per_msg: cpu,
            receiver_cpu_us_per_msg: cpu / 2.0,
            sender_cores: 0.1,
            receiver_cores: 0.2,
            latency_p50_us: 100.0,
            latency_p99_us: 200.0,
            latency_max_us: 300.0,
            latency_samples: 100_000,
            steal_percent: 0.0,
        }
    }

    #[test]
    fn medians_and_ratios_pair_repetitions() {
        let rows = vec![
            row("rclev", 0, 6.0),
            row("raw", 0, 3.0),
            row("rclev", 1, 8.0),
            row("raw", 1, 2.0),
        ];
        let m = medians(&rows, &[Variant::Rclev, Variant::Raw], &[16]);
        assert_eq!(m.len(), 2);
        assert_eq!(
            (m[0].variant, m[0].cpu_us_per_msg, m[0].rep),
            ("rclev", 7.0, None)
        );
        let (mid, lo, hi) =
            table::paired_ratio(&rows, 16, "rclev", "raw", |r| r.cpu_us_per_msg).unwrap();
        assert_eq!((mid, lo, hi), (3.0, 2.0, 4.0));
    }
}
