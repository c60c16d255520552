//! `rclev bench pubsub --transport dds`: publish/subscribe between two processes over Fast DDS,
//! side by side in one run with the same Fast DDS engine used directly and with Cyclone DDS's
//! `ddsperf` as the outside reference.
//!
//! Variants:
//! - `rclev`: two rclev nodes on [`rclev_dds::DdsTransport`], `std_msgs/msg/ByteMultiArray`
//!   published with `Publisher::publish` and received by a subscription callback with the
//!   default delivery (`Delivery::Adaptive`: on the node's worker until the callback has
//!   proven short, then on Fast DDS's receive thread while the worker is idle) — everything
//!   an application goes through.
//! - `rclev-worker`: the same with `Delivery::Worker` subscriptions: every callback on the
//!   node's worker, which the receive thread wakes (the default before adaptive delivery).
//! - `rclev-direct`: the same with `Delivery::Direct` subscriptions: a callback runs on Fast
//!   DDS's receive thread whenever its worker is idle, unproven.
//! - `raw`: [`rclev_dds::engine`]: the same shim, participant set-up and QoS mapping, with
//!   none of rclev's layers: the sender writes a prepared CDR buffer, the receiver counts in a
//!   closure on Fast DDS's listener thread. Same DDS topic, same DDS type name, byte for byte
//!   the same samples (checked against rclev's encoder at start).
//! - `ddsperf`: Cyclone DDS's own benchmark tool (Debian `cyclonedds-tools`), type `KS` with
//!   `size` chosen so that its serialized sample has the same length as ours.
//! - `rcl`: ROS 2 Jazzy's rcl (the C library under rclcpp, rclpy and r2r) on rmw_fastrtps_cpp
//!   and the same Fast DDS 2.14: a C program (`rclev-cli/bench/rcl_pubsub.c`) compiled at run
//!   time against the PyPI wheels in rclev's venv ([`rcl`]), publishing with `rcl_publish` and
//!   taking with `rcl_wait` + `rcl_take` until empty, as an rcl-based executor does. Same
//!   topics, QoS and payload; its samples are checked at start to be byte for byte rclev's.
//!   Skipped, with a note, when there is no venv or no C compiler.
//!
//! Each variant runs two phases per message size, every phase with two fresh processes (the
//! `rclev` binary re-executed with the hidden `bench-dds-role` sub-command, or `ddsperf`):
//! - throughput: the sender publishes as fast as it can; the receiver counts messages and
//!   bytes in its callback/listener. After a warm-up, the window starts: messages/s and MB/s
//!   (payload bytes, 10⁶ B/MB) received, CPU of both processes per received message, steal.
//! - round trip at 1 kHz (`--ping-hz`): the ping process sends a sequence number and a send
//!   time (its `CLOCK_MONOTONIC`) every millisecond; the pong process sends each message back
//!   from its callback/listener; the ping process records now − send time in a histogram:
//!   p50/p99.
//!
//! Everything is reliable, KeepLast(10), volatile (ROS's default profile); ddsperf's data
//! topic gets `-k 10` (its ping/pong topics are always KeepLast(1)). The whole benchmark runs
//! in a fresh network namespace with only `lo` (the binary re-executes itself there with
//! [`rclev_dds::isolation`]: `unshare -n -m`, with a private `/dev/shm`), with a domain id of
//! its own and `ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST`.
//! Repetitions interleave the variants (and reverse their order every other repetition) so
//! that a noisy spell of the VM hits all of them; the table shows medians, and the ratios are
//! the medians of the per-repetition ratios. A case that fails (a variant that cannot move a
//! size, say) is shown as such in the table; the run goes on with the others.
//!
//! `--scenario many` measures a robot's shape instead ([`many`]): one process publishes on 10
//! topics at 1 kHz each (`--ping-hz`), 16 B by default; the other has 5 subscriptions on each
//! topic, 50 on one node (one worker, default delivery), and records the latency from the send
//! time each message carries to its callback: CPU per received message (both processes, and
//! the receiver alone) and latency p50/p99, for `rclev` against `raw` (50 readers with
//! listeners on the bare engine), and `rclev-worker` or `rclev-direct` if asked.

mod ddsperf;
mod many;
pub(crate) mod procs;
mod rcl;
mod roles;
mod table;

use std::path::Path;
use std::time::Duration;

use rclev_dds::isolation::Isolated;
use serde::Serialize;

use crate::errors::Result;
use crate::report::write_json;
use procs::Proc;
pub use roles::{role, RoleArgs};
use table::{Failure, Repetition};

/// Set inside the benchmark's network namespace.
const INSIDE: &str = "RCLEV_BENCH_DDS_NETNS";
/// How long a process may take to start and match its peer.
const START_LIMIT: Duration = Duration::from_secs(30);

/// What `rclev bench pubsub --transport dds` measures.
#[derive(clap::ValueEnum, Clone, Copy, PartialEq, Eq, Debug)]
pub enum Scenario {
    /// One publisher and one subscription per process pair: throughput, then round trip.
    Pair,
    /// A robot's shape: 10 topics at `--ping-hz` each into 50 subscriptions on one node.
    Many,
}

impl Scenario {
    /// The sizes measured when `--sizes` is not given.
    pub fn default_sizes(self) -> Vec<usize> {
        match self {
            Scenario::Pair => vec![16, 65536],
            Scenario::Many => vec![16],
        }
    }

    /// The variants measured when `--variants` is not given.
    pub fn default_variants(self) -> Vec<String> {
        let names: &[&str] = match self {
            Scenario::Pair => &["rclev", "rclev-worker", "raw", "rcl", "ddsperf"],
            Scenario::Many => &["rclev", "raw"],
        };
        names.iter().map(|n| n.to_string()).collect()
    }
}

/// What `rclev bench pubsub --transport dds` was asked for.
pub struct Options<'a> {
    /// Which measurement.
    pub scenario: Scenario,
    /// Seconds per measurement window (each phase of each case).
    pub secs: f64,
    /// Seconds of traffic before each window starts.
    pub warmup: f64,
    /// Payload sizes: bytes in the message's byte sequence (at least 16).
    pub sizes: Vec<usize>,
    /// Runs of every case; the table shows medians.
    pub repeat: usize,
    /// Which of `rclev`, `rclev-worker`, `rclev-direct`, `raw`, `rcl`, `ddsperf` to run.
    pub variants: Vec<String>,
    /// Round trips per second in the latency phase (1000 by default); in the many scenario,
    /// messages per second on each topic.
    pub ping_hz: f64,
    /// Where to write the rows as JSON.
    pub json: Option<&'a Path>,
}

/// Who moves the messages.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Variant {
    Rclev,
    RclevWorker,
    RclevDirect,
    Raw,
    Ddsperf,
    Rcl,
    RclevZenoh,
    RawZenoh,
    RclevZenohRouted,
    RawZenohRouted,
    RawZenohTyped,
    RawZenohTypedRouted,
}

/// The variants of `--transport zenoh`: rclev-zenoh against a bare Zenoh session, peer to
/// peer and through the router, with rclev on DDS beside them.
pub const ZENOH_VARIANTS: [&str; 5] = [
    "rclev-zenoh",
    "raw-zenoh",
    "rclev-zenoh-routed",
    "raw-zenoh-routed",
    "rclev",
];

impl Variant {
    fn name(self) -> &'static str {
        match self {
            Variant::Rclev => "rclev",
            Variant::RclevWorker => "rclev-worker",
            Variant::RclevDirect => "rclev-direct",
            Variant::Raw => "raw",
            Variant::Ddsperf => "ddsperf",
            Variant::Rcl => "rcl",
            Variant::RclevZenoh => "rclev-zenoh",
            Variant::RawZenoh => "raw-zenoh",
            Variant::RclevZenohRouted => "rclev-zenoh-routed",
            Variant::RawZenohRouted => "raw-zenoh-routed",
            Variant::RawZenohTyped => "raw-zenoh-typed",
            Variant::RawZenohTypedRouted => "raw-zenoh-typed-routed",
        }
    }

    /// The engine of this binary's role processes that the variant runs on, if it does.
    fn engine(self) -> Option<roles::Engine> {
        match self {
            Variant::Rclev => Some(roles::Engine::Rclev),
            Variant::RclevWorker => Some(roles::Engine::RclevWorker),
            Variant::RclevDirect => Some(roles::Engine::RclevDirect),
            Variant::Raw => Some(roles::Engine::Raw),
            Variant::RclevZenoh => Some(roles::Engine::RclevZenoh),
            Variant::RawZenoh => Some(roles::Engine::RawZenoh),
            Variant::RclevZenohRouted => Some(roles::Engine::RclevZenohRouted),
            Variant::RawZenohRouted => Some(roles::Engine::RawZenohRouted),
            Variant::RawZenohTyped => Some(roles::Engine::RawZenohTyped),
            Variant::RawZenohTypedRouted => Some(roles::Engine::RawZenohTypedRouted),
            Variant::Ddsperf | Variant::Rcl => None,
        }
    }
}

/// What a throughput window measured.
#[derive(Clone, Copy, Debug)]
struct Throughput {
    msgs_per_s: f64,
    sent_per_s: Option<f64>,
    /// Sequence numbers the receiver never saw, % of those sent in the window.
    lost_percent: f64,
    sender_cores: f64,
    receiver_cores: f64,
    steal_percent: f64,
}

/// What a round-trip window measured.
#[derive(Clone, Copy, Debug)]
struct RoundTrip {
    p50_us: f64,
    p99_us: f64,
    samples: u64,
}

/// One JSON row: a run of one variant at one size, or (`rep` null) the medians over the runs.
#[derive(Serialize, Clone, Debug)]
pub struct Row {
    pub variant: &'static str,
    /// Payload bytes per message (the byte sequence's length).
    pub size: usize,
    /// The repetition, from 0; `null` on the median rows.
    pub rep: Option<usize>,
    /// Messages received per second in the throughput window.
    pub msgs_per_s: f64,
    /// Payload megabytes (10⁶ B) received per second.
    pub mb_per_s: f64,
    /// Messages the sender wrote per second (ddsperf: its own per-second report).
    pub sent_per_s: Option<f64>,
    /// Messages the receiver never got (KeepLast(10) overwrites), % of those sent.
    pub lost_percent: f64,
    /// CPU time of sender and receiver together per received message, µs.
    pub cpu_us_per_msg: f64,
    /// CPU time of the receiving process alone per received message, µs.
    pub receiver_cpu_us_per_msg: f64,
    /// CPU the sending process used over the window, in cores.
    pub sender_cores: f64,
    /// CPU the receiving process used over the window, in cores.
    pub receiver_cores: f64,
    /// VM steal over the throughput window, % of all CPU time.
    pub steal_percent: f64,
    /// Round trip at `--ping-hz` (1 kHz), median, µs.
    pub rtt_p50_us: f64,
    /// Round trip at `--ping-hz` (1 kHz), 99th percentile, µs.
    pub rtt_p99_us: f64,
    /// Round trips measured in the window.
    pub rtt_samples: u64,
}

impl Repetition for Row {
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

impl Row {
    fn new(variant: Variant, size: usize, rep: usize, t: &Throughput, r: &RoundTrip) -> Row {
        Row {
            variant: variant.name(),
            size,
            rep: Some(rep),
            msgs_per_s: t.msgs_per_s,
            mb_per_s: t.msgs_per_s * size as f64 / 1e6,
            sent_per_s: t.sent_per_s,
            lost_percent: t.lost_percent,
            cpu_us_per_msg: if t.msgs_per_s > 0.0 {
                (t.sender_cores + t.receiver_cores) / t.msgs_per_s * 1e6
            } else {
                0.0
            },
            receiver_cpu_us_per_msg: if t.msgs_per_s > 0.0 {
                t.receiver_cores / t.msgs_per_s * 1e6
            } else {
                0.0
            },
            sender_cores: t.sender_cores,
            receiver_cores: t.receiver_cores,
            steal_percent: t.steal_percent,
            rtt_p50_us: r.p50_us,
            rtt_p99_us: r.p99_us,
            rtt_samples: r.samples,
        }
    }
}

/// Runs the benchmark: re-executes itself in a network namespace of its own, then runs there.
pub fn run(options: Options<'_>) -> Result {
    let variants = parse_variants(&options.variants)?;
    let positive = |x: f64| x.is_finite() && x > 0.0;
    if !positive(options.secs) || !(options.warmup == 0.0 || positive(options.warmup)) {
        return Err("--secs must be positive and --warmup not negative".into());
    }
    if options.repeat == 0 || options.sizes.is_empty() {
        return Err("--repeat must be at least 1 and --sizes not empty".into());
    }
    if !positive(options.ping_hz) || options.ping_hz > 100_000.0 {
        return Err("--ping-hz must be above 0 and at most 100000".into());
    }
    if let Some(&size) = options
        .sizes
        .iter()
        .find(|&&s| !(roles::HEADER..=u32::MAX as usize - 64).contains(&s))
    {
        return Err(format!(
            "size {size}: from {} bytes (a message carries a sequence number and a send time) \
             to 4 GiB",
            roles::HEADER
        )
        .into());
    }
    if options.scenario == Scenario::Many {
        if let Some(v) = variants
            .iter()
            .find(|v| v.engine().is_none_or(roles::Engine::is_zenoh))
        {
            return Err(format!(
                "the many scenario runs rclev, rclev-worker, rclev-direct and raw, not {}",
                v.name()
            )
            .into());
        }
    }
    if std::env::var_os(INSIDE).is_none() {
        return reexec_in_netns();
    }
    match options.scenario {
        Scenario::Pair => run_inside(&options, &variants),
        Scenario::Many => many::run(&options, &variants),
    }
}

fn parse_variants(names: &[String]) -> Result<Vec<Variant>> {
    let mut out = Vec::new();
    for name in names {
        let v = match name.trim() {
            "rclev" => Variant::Rclev,
            "rclev-worker" => Variant::RclevWorker,
            "rclev-direct" => Variant::RclevDirect,
            "raw" => Variant::Raw,
            "ddsperf" => Variant::Ddsperf,
            "rcl" => Variant::Rcl,
            "rclev-zenoh" => Variant::RclevZenoh,
            "raw-zenoh" => Variant::RawZenoh,
            "rclev-zenoh-routed" => Variant::RclevZenohRouted,
            "raw-zenoh-routed" => Variant::RawZenohRouted,
            "raw-zenoh-typed" => Variant::RawZenohTyped,
            "raw-zenoh-typed-routed" => Variant::RawZenohTypedRouted,
            other => {
                return Err(format!(
                    "unknown variant {other:?}: rclev, rclev-worker, rclev-direct, raw, rcl, \
                     ddsperf, rclev-zenoh, raw-zenoh, rclev-zenoh-routed, raw-zenoh-routed, \
                     raw-zenoh-typed or raw-zenoh-typed-routed"
                )
                .into())
            }
        };
        if v.engine().is_some_and(roles::Engine::is_zenoh) && !cfg!(feature = "zenoh") {
            return Err(format!(
                "variant {name}: rclev was built without Zenoh (the `zenoh` feature)"
            )
            .into());
        }
        if !out.contains(&v) {
            out.push(v);
        }
    }
    if out.is_empty() {
        return Err("--variants is empty".into());
    }
    Ok(out)
}

/// Runs this very command again in a fresh network namespace with only `lo` up and a `/dev/shm`
/// of its own ([`rclev_dds::isolation`]), as the DDS tests do: no traffic leaves the machine, no
/// other DDS participant can join, and no shared-memory segment another process left behind is
/// met.
fn reexec_in_netns() -> Result {
    // Domains 201..=230: away from the tests' (1..=200), different between concurrent runs.
    let domain = 201 + std::process::id() % 30;
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

fn run_inside(options: &Options<'_>, wanted: &[Variant]) -> Result {
    let mut variants = wanted.to_vec();
    // Why a variant asked for does not run, printed with the tables.
    let mut skipped = Vec::new();
    if variants.contains(&Variant::Ddsperf) && !ddsperf::available() {
        skipped.push(
            "ddsperf: not found, the Cyclone DDS reference is skipped \
             (`apt-get install -y cyclonedds-tools` installs it)"
                .to_string(),
        );
        variants.retain(|v| *v != Variant::Ddsperf);
    }
    let mut rcl_program = None;
    if variants.contains(&Variant::Rcl) {
        let ready = rcl::program().and_then(|program| {
            for &size in &options.sizes {
                rcl::check_sample(&program, size)?;
            }
            Ok(program)
        });
        match ready {
            Ok(program) => rcl_program = Some(program),
            Err(e) => {
                skipped.push(format!("rcl: skipped: {e}"));
                variants.retain(|v| *v != Variant::Rcl);
            }
        }
    }
    for note in &skipped {
        eprintln!("{note}");
    }
    if variants.is_empty() {
        return Err("nothing to run".into());
    }
    // The Zenoh variants' router (rmw_zenohd's configuration, tcp/[::]:7447), in process.
    #[cfg(feature = "zenoh")]
    let _router = if variants
        .iter()
        .any(|v| v.engine().is_some_and(roles::Engine::is_zenoh))
    {
        Some(rclev_zenoh::Router::start(
            &rclev_zenoh::ZenohOptions::default(),
        )?)
    } else {
        None
    };
    let domain = std::env::var("ROS_DOMAIN_ID").unwrap_or_default();
    eprintln!(
        "DDS pub/sub benchmark: domain {domain}, sizes {:?} B, {} s windows after {} s warm-up, \
         {} repetition(s), Fast DDS {}",
        options.sizes,
        options.secs,
        options.warmup,
        options.repeat,
        rclev_dds::engine_version()
    );
    let (rows, failures) = table::run_interleaved(
        &variants,
        &options.sizes,
        options.repeat,
        |variant, size, rep| {
            let (t, r) = run_case(variant, size, options, rcl_program.as_ref())?;
            let row = Row::new(variant, size, rep, &t, &r);
            eprintln!(
                "  rep {rep} {:>7} {:>6} B: {:>9.0} msg/s {:>8.1} MB/s, {:>5.2} µs \
                 CPU/msg, lost {:.1}%, steal {:.1}% | RTT p50 {:.1} µs p99 {:.1} µs \
                 ({} samples)",
                row.variant,
                size,
                row.msgs_per_s,
                row.mb_per_s,
                row.cpu_us_per_msg,
                row.lost_percent,
                row.steal_percent,
                row.rtt_p50_us,
                row.rtt_p99_us,
                row.rtt_samples
            );
            Ok(row)
        },
    );
    let medians = medians(&rows, &variants, &options.sizes);
    print_tables(&rows, &medians, &failures, &variants, &options.sizes);
    print_notes(&skipped);
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

/// The skipped variants, after the tables.
fn print_notes(skipped: &[String]) {
    if !skipped.is_empty() {
        println!();
        for note in skipped {
            println!("Note: {note}");
        }
    }
}

fn run_case(
    variant: Variant,
    size: usize,
    options: &Options<'_>,
    rcl_program: Option<&rcl::Program>,
) -> Result<(Throughput, RoundTrip)> {
    let (warmup, secs) = (
        Duration::from_secs_f64(options.warmup),
        Duration::from_secs_f64(options.secs),
    );
    let runner = match (variant, variant.engine(), rcl_program) {
        (Variant::Ddsperf, _, _) => {
            return Ok((
                ddsperf::throughput(size, warmup, secs)?,
                ddsperf::round_trip(size, options.ping_hz, warmup, secs)?,
            ))
        }
        (_, Some(engine), _) => Runner::Own(engine),
        (Variant::Rcl, None, Some(program)) => Runner::Rcl(program.clone()),
        _ => return Err("the rcl program was not built".into()),
    };
    Ok((
        roles_throughput(&runner, size, options.ping_hz, warmup, secs)?,
        roles_round_trip(&runner, size, options.ping_hz, warmup, secs)?,
    ))
}

/// How a variant's role processes start.
enum Runner {
    /// This binary's `bench-dds-role` on an engine.
    Own(roles::Engine),
    /// The rcl variant's program ([`rcl`]).
    Rcl(rcl::Program),
}

impl Runner {
    fn spawn(&self, role: roles::Role, size: usize, hz: f64) -> Result<Proc> {
        match self {
            Runner::Own(engine) => spawn_role(role, *engine, size, hz),
            Runner::Rcl(program) => {
                let mut cmd = rcl::command(program);
                cmd.args([
                    "--role",
                    role.name(),
                    "--size",
                    &size.to_string(),
                    "--hz",
                    &hz.to_string(),
                ]);
                Proc::spawn(cmd, format!("rcl {}", role.name()))
            }
        }
    }
}

/// Starts a role process of this binary.
fn spawn_role(role: roles::Role, engine: roles::Engine, size: usize, hz: f64) -> Result<Proc> {
    let mut cmd = std::process::Command::new(std::env::current_exe()?);
    cmd.args([
        "bench-dds-role",
        "--role",
        role.name(),
        "--engine",
        engine.name(),
        "--size",
        &size.to_string(),
        "--hz",
        &hz.to_string(),
    ]);
    if let Some(edit) = engine.zenoh_override() {
        cmd.env("ZENOH_CONFIG_OVERRIDE", edit);
    }
    if engine.is_zenoh() {
        // The router runs in the benchmark's process: the role's session finds it at once.
        cmd.env("ZENOH_ROUTER_CHECK_ATTEMPTS", "30");
    }
    Proc::spawn(cmd, format!("{} {}", engine.name(), role.name()))
}

fn roles_throughput(
    runner: &Runner,
    size: usize,
    hz: f64,
    warmup: Duration,
    secs: Duration,
) -> Result<Throughput> {
    let mut receiver = runner.spawn(roles::Role::Receiver, size, hz)?;
    receiver.wait_for(START_LIMIT, |l| l == roles::READY)?;
    let mut sender = runner.spawn(roles::Role::Sender, size, hz)?;
    sender.wait_for(START_LIMIT, |l| l == roles::READY)?;
    std::thread::sleep(warmup);
    let steal0 = crate::report::steal_jiffies();
    let (r0, s0) = (receiver.mark()?, sender.mark()?);
    std::thread::sleep(secs);
    let (r1, s1) = (receiver.mark()?, sender.mark()?);
    let steal1 = crate::report::steal_jiffies();
    sender.finish()?;
    receiver.finish()?;
    let rx_secs = (r1.t_ns - r0.t_ns) as f64 / 1e9;
    let tx_secs = (s1.t_ns - s0.t_ns) as f64 / 1e9;
    let received = r1.received - r0.received;
    let lost = r1.gaps - r0.gaps;
    if received == 0 {
        return Err("the receiver got nothing in the window".into());
    }
    if r1.malformed > 0 {
        return Err(format!("the receiver got {} malformed messages", r1.malformed).into());
    }
    Ok(Throughput {
        msgs_per_s: received as f64 / rx_secs,
        sent_per_s: Some((s1.sent - s0.sent) as f64 / tx_secs),
        lost_percent: 100.0 * lost as f64 / (received + lost) as f64,
        sender_cores: (s1.cpu_s - s0.cpu_s) / tx_secs,
        receiver_cores: (r1.cpu_s - r0.cpu_s) / rx_secs,
        steal_percent: steal_percent(steal0, steal1),
    })
}

fn roles_round_trip(
    runner: &Runner,
    size: usize,
    hz: f64,
    warmup: Duration,
    secs: Duration,
) -> Result<RoundTrip> {
    let mut pong = runner.spawn(roles::Role::Pong, size, hz)?;
    pong.wait_for(START_LIMIT, |l| l == roles::READY)?;
    let mut ping = runner.spawn(roles::Role::Ping, size, hz)?;
    ping.wait_for(START_LIMIT, |l| l == roles::READY)?;
    std::thread::sleep(warmup);
    ping.mark()?; // Drops what the warm-up recorded.
    std::thread::sleep(secs);
    let m = ping.mark()?;
    ping.finish()?;
    pong.finish()?;
    if m.rtt_count == 0 {
        return Err("no round trip completed in the window".into());
    }
    Ok(RoundTrip {
        p50_us: m.rtt_p50_ns as f64 / 1e3,
        p99_us: m.rtt_p99_ns as f64 / 1e3,
        samples: m.rtt_count,
    })
}

/// Steal between two `/proc/stat` readings, % of all CPU time.
fn steal_percent(a: (u64, u64), b: (u64, u64)) -> f64 {
    let (ds, dt) = (b.0.saturating_sub(a.0), b.1.saturating_sub(a.1));
    if dt == 0 {
        0.0
    } else {
        100.0 * ds as f64 / dt as f64
    }
}

/// The median of `v` (NaN when empty).
pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The median row of every variant and size that has runs (each column on its own).
fn medians(rows: &[Row], variants: &[Variant], sizes: &[usize]) -> Vec<Row> {
    let mut out = Vec::new();
    for &size in sizes {
        for v in variants {
            let runs: Vec<&Row> = rows
                .iter()
                .filter(|r| r.variant == v.name() && r.size == size)
                .collect();
            if runs.is_empty() {
                continue;
            }
            let m = |f: fn(&Row) -> f64| median(runs.iter().map(|r| f(r)).collect());
            let sent: Vec<f64> = runs.iter().filter_map(|r| r.sent_per_s).collect();
            out.push(Row {
                variant: v.name(),
                size,
                rep: None,
                msgs_per_s: m(|r| r.msgs_per_s),
                mb_per_s: m(|r| r.mb_per_s),
                sent_per_s: (!sent.is_empty()).then(|| median(sent)),
                lost_percent: m(|r| r.lost_percent),
                cpu_us_per_msg: m(|r| r.cpu_us_per_msg),
                receiver_cpu_us_per_msg: m(|r| r.receiver_cpu_us_per_msg),
                sender_cores: m(|r| r.sender_cores),
                receiver_cores: m(|r| r.receiver_cores),
                steal_percent: m(|r| r.steal_percent),
                rtt_p50_us: m(|r| r.rtt_p50_us),
                rtt_p99_us: m(|r| r.rtt_p99_us),
                rtt_samples: median(runs.iter().map(|r| r.rtt_samples as f64).collect()) as u64,
            });
        }
    }
    out
}

/// `16 B`, `64 KiB`, `1 MiB`.
pub(crate) fn size_label(size: usize) -> String {
    if size >= 1 << 20 && size.is_multiple_of(1 << 20) {
        format!("{} MiB", size >> 20)
    } else if size >= 1024 && size.is_multiple_of(1024) {
        format!("{} KiB", size / 1024)
    } else {
        format!("{size} B")
    }
}

/// Prints the medians and the ratios as Markdown tables (README-ready); a variant that has no
/// run at a size gets a row saying why.
fn print_tables(
    rows: &[Row],
    medians: &[Row],
    failures: &[Failure],
    variants: &[Variant],
    sizes: &[usize],
) {
    println!();
    println!(
        "| size | variant | received msgs/s | MB/s | sent msgs/s | CPU µs/msg (both) | \
         receiver CPU µs/msg | lost % | RTT p50 µs | RTT p99 µs | steal % |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for (&size, v) in sizes
        .iter()
        .flat_map(|s| variants.iter().map(move |v| (s, v)))
    {
        let Some(r) = medians
            .iter()
            .find(|r| r.size == size && r.variant == v.name())
        else {
            if let Some(cell) = Failure::cell(failures, v.name(), size) {
                println!(
                    "| {} | {} | {cell} | | | | | | | | |",
                    size_label(size),
                    v.name()
                );
            }
            continue;
        };
        println!(
            "| {} | {} | {:.0} | {:.1} | {} | {:.2} | {:.2} | {:.1} | {:.1} | {:.1} | {:.1} |",
            size_label(r.size),
            r.variant,
            r.msgs_per_s,
            r.mb_per_s,
            r.sent_per_s.map_or("–".into(), |s| format!("{s:.0}")),
            r.cpu_us_per_msg,
            r.receiver_cpu_us_per_msg,
            r.lost_percent,
            r.rtt_p50_us,
            r.rtt_p99_us,
            r.steal_percent
        );
    }
    table::print_ratios(
        rows,
        sizes,
        &[
            ("rclev", "raw"),
            ("rclev-worker", "raw"),
            ("rclev-direct", "raw"),
            ("rclev", "rcl"),
            ("rclev-worker", "rcl"),
            ("rclev-direct", "rcl"),
            ("rclev", "ddsperf"),
            ("rclev-direct", "ddsperf"),
            ("rclev-zenoh", "raw-zenoh"),
            ("rclev-zenoh-routed", "raw-zenoh-routed"),
            ("raw-zenoh-typed", "raw-zenoh"),
            ("rclev-zenoh", "raw-zenoh-typed"),
            ("raw-zenoh-typed-routed", "raw-zenoh-routed"),
            ("rclev-zenoh-routed", "raw-zenoh-typed-routed"),
            ("rclev-zenoh", "rclev"),
        ],
        &[
            ("msgs/s", |r| r.msgs_per_s),
            ("RTT p50", |r| r.rtt_p50_us),
            ("RTT p99", |r| r.rtt_p99_us),
            ("CPU/msg", |r| r.cpu_us_per_msg),
            ("receiver CPU/msg", |r| r.receiver_cpu_us_per_msg),
        ],
    );
    println!();
    println!(
        "Zenoh targets: rclev-zenoh/raw-zenoh (and routed) msgs/s ≥ 0.9, RTT p50 ≤ 1.1×. \
         rclev-zenoh/rclev compares the two transports."
    );
    println!(
        "Targets (default delivery, rclev): rclev/raw msgs/s ≥ 0.6 at 16 B and ≥ 0.9 at 64 KiB, \
         RTT p50 ≤ 1.15× raw's, CPU/msg ≤ rcl's. ddsperf batches its writes \
         (dds_write_set_batch), so its throughput is not a like-for-like engine figure; its RTT \
         percentiles are the medians of its per-second reports. rcl publishes through \
         rmw_fastrtps's default asynchronous mode (a Fast DDS thread sends), rclev and raw \
         synchronously."
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_paired_ratios() {
        let t = |m| Throughput {
            msgs_per_s: m,
            sent_per_s: None,
            lost_percent: 0.0,
            sender_cores: 1.0,
            receiver_cores: 0.5,
            steal_percent: 0.0,
        };
        let r = |p| RoundTrip {
            p50_us: p,
            p99_us: 2.0 * p,
            samples: 10,
        };
        let rows = vec![
            Row::new(Variant::Rclev, 16, 0, &t(90.0), &r(110.0)),
            Row::new(Variant::Raw, 16, 0, &t(100.0), &r(100.0)),
            Row::new(Variant::Rclev, 16, 1, &t(40.0), &r(300.0)),
            Row::new(Variant::Raw, 16, 1, &t(50.0), &r(200.0)),
        ];
        let m = medians(&rows, &[Variant::Rclev, Variant::Raw], &[16]);
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].msgs_per_s, 65.0);
        assert_eq!(m[0].rep, None);
        let (mid, lo, hi) =
            table::paired_ratio(&rows, 16, "rclev", "raw", |r| r.msgs_per_s).unwrap();
        assert_eq!((lo, hi), (0.8, 0.9));
        assert!((mid - 0.85).abs() < 1e-9);
        assert!(table::paired_ratio(&rows, 16, "rclev", "ddsperf", |r| r.msgs_per_s).is_none());
        // 1.5 cores over 90 msg/s.
        assert!((rows[0].cpu_us_per_msg - 1.5 / 90.0 * 1e6).abs() < 1e-6);
    }

    #[test]
    fn variants_parse() {
        let v = parse_variants(&["raw".into(), "rclev".into(), "raw".into()]).unwrap();
        assert_eq!(v, [Variant::Raw, Variant::Rclev]);
        assert!(parse_variants(&["cyclone".into()]).is_err());
    }
}
