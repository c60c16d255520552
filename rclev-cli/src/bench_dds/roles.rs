//! The benchmark's processes (`rclev bench-dds-role`, hidden): sender, receiver, ping and pong,
//! and the many scenario's many-sender and many-receiver, each through rclev (`--engine
//! rclev`, `rclev-worker`, `rclev-direct`) or through the bare engine (`--engine raw`). The `rcl` variant's
//! processes (`rclev-cli/bench/rcl_pubsub.c`) speak the same protocol.
//!
//! A role prints `ready` once it is matched with its peer (senders and pings) or once its
//! reader exists (receivers and pongs), then answers every `mark` on stdin with a JSON line
//! of its counters (the round-trip histogram is reset at each mark), and exits on `quit` or at
//! the end of stdin.
//!
//! Every message is a `std_msgs/msg/ByteMultiArray` whose data starts with a sequence number
//! and the sender's `CLOCK_MONOTONIC` time in ns (both little-endian `u64`). The raw variant
//! writes the very bytes rclev's encoder produces for that message: encapsulation header,
//! empty `layout`, the data's length and the data.
//!
//! The many scenario: the many-sender publishes on `--topics` topics (`bench_dds_many_<i>`),
//! each at `--hz`, from one thread on one grid (topic after topic, so the topics' messages
//! are spread evenly over each period rather than sent in a burst); the many-receiver has
//! `--fanout` subscriptions (rclev: on one node, so one worker) or readers (raw) on every
//! topic, and records each message's latency from the send time it carries to its callback
//! (both processes' `CLOCK_MONOTONIC`, so on one host).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use rclev::interfaces::std_msgs::msg::ByteMultiArray;
use rclev::msg::Message;
use rclev::{Delivery, ExecutorOptions, IntoPrimitiveOptions, QoSProfile, SpinOptions};
use serde::{Deserialize, Serialize};

use crate::clock::sleep_until_ns;
use crate::errors::Result;
use rclev::clock::monotonic_nanos;

/// A role's first line: it is matched and (senders) sending.
pub const READY: &str = "ready";
/// Asks a role for its counters.
pub const MARK: &str = "mark";
/// Asks a role to exit.
pub const QUIT: &str = "quit";
/// Payload bytes every message needs: sequence number and send time.
pub const HEADER: usize = 16;
/// Bytes of the CDR sample before the payload: encapsulation header, `layout.dim`'s length,
/// `layout.data_offset`, `data`'s length.
const DATA_OFFSET: usize = 16;
/// How long a sender or ping waits for its peer to match.
const MATCH_LIMIT: Duration = Duration::from_secs(20);

/// ROS topic names; the raw engine uses their DDS names (`rt/…`).
const DATA: &str = "bench_dds_data";
const PING: &str = "bench_dds_ping";
const PONG: &str = "bench_dds_pong";

/// The many scenario's topics.
pub const MANY_TOPICS: usize = 10;
/// The many scenario's subscriptions per topic.
pub const MANY_FANOUT: usize = 5;

/// The many scenario's `i`th topic.
fn many_topic(i: usize) -> String {
    format!("bench_dds_many_{i}")
}

/// What a role process does.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Publishes as fast as it can.
    Sender,
    /// Counts what arrives.
    Receiver,
    /// Sends stamped messages at `--hz` and records the round trip of their echoes.
    Ping,
    /// Sends every message back.
    Pong,
    /// The many scenario: publishes on `--topics` topics, each at `--hz`.
    ManySender,
    /// The many scenario: `--fanout` subscriptions on each of `--topics` topics, recording
    /// send → callback latency.
    ManyReceiver,
}

impl Role {
    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Role::Sender => "sender",
            Role::Receiver => "receiver",
            Role::Ping => "ping",
            Role::Pong => "pong",
            Role::ManySender => "many-sender",
            Role::ManyReceiver => "many-receiver",
        }
    }
}

/// Through what a role moves its messages.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// rclev nodes on `rclev_dds::DdsTransport` with the default delivery
    /// (`Delivery::Adaptive`: on Fast DDS's receive thread once a callback has proven short).
    Rclev,
    /// The same, every callback on its worker (`Delivery::Worker`).
    RclevWorker,
    /// The same, with the subscriptions' callbacks delivered directly on Fast DDS's receive
    /// thread when the worker is idle (`Delivery::Direct`).
    RclevDirect,
    /// `rclev_dds::engine`: Fast DDS through the shim, without rclev's layers.
    Raw,
    /// rclev nodes on `rclev_zenoh::ZenohTransport` (default delivery), peer to peer (the
    /// sessions find each other through the router and connect directly, rmw_zenoh's default).
    RclevZenoh,
    /// A bare Zenoh session: the same key expressions, CDR bytes and attachments rclev-zenoh
    /// puts, with none of rclev's layers; peer to peer.
    RawZenoh,
    /// `rclev-zenoh` with every message through the router (the sessions are Zenoh clients).
    RclevZenohRouted,
    /// `raw-zenoh` with every message through the router.
    RawZenohRouted,
    /// `raw-zenoh` that also does what any client library must to hand a typed message over:
    /// each message encoded from a `ByteMultiArray`, and decoded into one on Zenoh's receive
    /// thread — no executor, no queue. The floor under `rclev-zenoh` (not in the defaults:
    /// `--variants raw-zenoh-typed,...`).
    RawZenohTyped,
    /// `raw-zenoh-typed` with every message through the router.
    RawZenohTypedRouted,
}

impl Engine {
    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Rclev => "rclev",
            Engine::RclevWorker => "rclev-worker",
            Engine::RclevDirect => "rclev-direct",
            Engine::Raw => "raw",
            Engine::RclevZenoh => "rclev-zenoh",
            Engine::RawZenoh => "raw-zenoh",
            Engine::RclevZenohRouted => "rclev-zenoh-routed",
            Engine::RawZenohRouted => "raw-zenoh-routed",
            Engine::RawZenohTyped => "raw-zenoh-typed",
            Engine::RawZenohTypedRouted => "raw-zenoh-typed-routed",
        }
    }

    /// Whether it runs over Zenoh (the benchmark then starts a router).
    pub fn is_zenoh(self) -> bool {
        matches!(
            self,
            Engine::RclevZenoh
                | Engine::RawZenoh
                | Engine::RclevZenohRouted
                | Engine::RawZenohRouted
                | Engine::RawZenohTyped
                | Engine::RawZenohTypedRouted
        )
    }

    /// The `ZENOH_CONFIG_OVERRIDE` its processes run with: Zenoh clients for the routed ones,
    /// which connect to the router only, so that it carries every message.
    pub fn zenoh_override(self) -> Option<&'static str> {
        matches!(
            self,
            Engine::RclevZenohRouted | Engine::RawZenohRouted | Engine::RawZenohTypedRouted
        )
        .then_some(r#"mode="client""#)
    }
}

/// One process of `bench pubsub --transport dds` (started by the benchmark itself).
#[derive(clap::Args, Debug)]
pub struct RoleArgs {
    /// What the process does.
    #[arg(long, value_enum)]
    role: Role,
    /// Through what it moves messages.
    #[arg(long, value_enum)]
    engine: Engine,
    /// Payload bytes per message.
    #[arg(long)]
    size: usize,
    /// Pings per second; in the many scenario, messages per second on each topic.
    #[arg(long, default_value_t = 1000.0)]
    hz: f64,
    /// The many scenario: topics.
    #[arg(long, default_value_t = MANY_TOPICS)]
    topics: usize,
    /// The many scenario: subscriptions per topic.
    #[arg(long, default_value_t = MANY_FANOUT)]
    fanout: usize,
}

/// A role's counters, as it answers a mark.
#[derive(Serialize, Deserialize, Debug, Default, Clone, Copy)]
pub struct Mark {
    /// `CLOCK_MONOTONIC` when the counters were read.
    pub t_ns: u64,
    /// The process's CPU time (user + system, getrusage).
    pub cpu_s: f64,
    /// Messages received (data, or echoes for a ping).
    pub received: u64,
    /// Payload bytes of the data messages received.
    pub bytes: u64,
    /// Sequence numbers skipped by what was received.
    pub gaps: u64,
    /// Messages written.
    pub sent: u64,
    /// Samples that were not a benchmark message, or echoes that could not be sent.
    pub malformed: u64,
    /// Round trips since the previous mark, and their percentiles; for a many-receiver, the
    /// send → callback latencies since the previous mark.
    pub rtt_count: u64,
    /// Median round trip (or latency), ns.
    pub rtt_p50_ns: u64,
    /// 99th percentile round trip (or latency), ns.
    pub rtt_p99_ns: u64,
    /// Longest round trip (or latency), ns.
    pub rtt_max_ns: u64,
}

/// Runs a role until `quit`.
pub fn role(args: RoleArgs) -> Result {
    if args.size < HEADER || args.size > u32::MAX as usize - 64 {
        return Err(format!("--size {}: from {HEADER} bytes to 4 GiB", args.size).into());
    }
    if !(args.hz.is_finite() && args.hz > 0.0) {
        return Err("--hz must be positive".into());
    }
    if args.topics == 0 || args.fanout == 0 {
        return Err("--topics and --fanout must be at least 1".into());
    }
    let dds = || rclev_dds::DdsTransport::context();
    match args.engine {
        Engine::Rclev => rclev_role(&args, Delivery::default(), dds()?),
        Engine::RclevWorker => rclev_role(&args, Delivery::Worker, dds()?),
        Engine::RclevDirect => rclev_role(&args, Delivery::Direct, dds()?),
        Engine::Raw => raw_role(&args),
        #[cfg(feature = "zenoh")]
        Engine::RclevZenoh | Engine::RclevZenohRouted => rclev_role(
            &args,
            Delivery::default(),
            rclev_zenoh::ZenohTransport::context()?,
        ),
        #[cfg(feature = "zenoh")]
        Engine::RawZenoh
        | Engine::RawZenohRouted
        | Engine::RawZenohTyped
        | Engine::RawZenohTypedRouted => raw_zenoh_role(&args),
        #[cfg(not(feature = "zenoh"))]
        _ => Err("rclev was built without Zenoh (the `zenoh` feature)".into()),
    }
}

/// Writes the sequence number and the send time at the start of a payload.
fn stamp(payload: &mut [u8], seq: u64) {
    payload[..8].copy_from_slice(&seq.to_le_bytes());
    payload[8..HEADER].copy_from_slice(&(monotonic_nanos() as u64).to_le_bytes());
}

fn read_u64(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
}

/// The payload of a raw sample: the byte sequence after [`DATA_OFFSET`], little-endian CDR.
fn payload_of(cdr: &[u8]) -> Option<&[u8]> {
    if cdr.get(..2)? != [0, 1] {
        return None;
    }
    let len = u32::from_le_bytes(cdr.get(12..16)?.try_into().ok()?) as usize;
    cdr.get(DATA_OFFSET..DATA_OFFSET + len)
}

/// The payload the `rcl` variant's program fills a message with for `--dump-sample` (see
/// `rclev-cli/bench/rcl_pubsub.c`): not all zeros, so that a byte out of place shows.
pub fn check_pattern(size: usize) -> Vec<u8> {
    (0..size)
        .map(|i| i.wrapping_mul(31).wrapping_add(7) as u8)
        .collect()
}

/// rclev's encoding of a message carrying [`check_pattern`], which rmw's must equal.
pub fn pattern_sample(size: usize) -> Result<Vec<u8>> {
    Ok(rclev::msg::to_cdr(&ByteMultiArray {
        data: check_pattern(size),
        ..Default::default()
    })?)
}

/// The raw variant's sample: built by hand once, and checked to be what rclev's encoder
/// writes for the same message, so that both variants put identical bytes on the wire.
fn raw_sample(size: usize) -> Result<Vec<u8>> {
    let mut cdr = Vec::with_capacity(DATA_OFFSET + size);
    cdr.extend_from_slice(&[0, 1, 0, 0]); // CDR_LE, no options
    cdr.extend_from_slice(&0u32.to_le_bytes()); // layout.dim: empty
    cdr.extend_from_slice(&0u32.to_le_bytes()); // layout.data_offset
    cdr.extend_from_slice(&(size as u32).to_le_bytes()); // data's length
    cdr.resize(DATA_OFFSET + size, 0);
    let typed = rclev::msg::to_cdr(&ByteMultiArray {
        data: vec![0; size],
        ..Default::default()
    })?;
    if typed != cdr {
        return Err("the raw sample differs from rclev's encoding of the same message".into());
    }
    Ok(cdr)
}

fn qos() -> QoSProfile {
    QoSProfile::default().keep_last(10).reliable().volatile()
}

/// What a role counts; written by the receiving thread, read by the control thread.
struct Stats {
    received: AtomicU64,
    bytes: AtomicU64,
    gaps: AtomicU64,
    /// The sequence number expected next.
    next_seq: AtomicU64,
    sent: AtomicU64,
    malformed: AtomicU64,
    rtt: Mutex<Histogram<u64>>,
}

impl Stats {
    fn new() -> Result<Arc<Stats>> {
        Ok(Arc::new(Stats {
            received: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            gaps: AtomicU64::new(0),
            next_seq: AtomicU64::new(0),
            sent: AtomicU64::new(0),
            malformed: AtomicU64::new(0),
            // 1 ns to 10 s, 3 significant digits.
            rtt: Mutex::new(Histogram::new_with_bounds(1, 10_000_000_000, 3)?),
        }))
    }

    /// A data message arrived (throughput phase).
    fn on_data(&self, payload: &[u8]) {
        let Some(seq) = read_u64(payload, 0) else {
            self.bad();
            return;
        };
        // One thread delivers a reader's samples, so load-then-store does not race here.
        let next = self.next_seq.load(Ordering::Relaxed);
        if seq > next {
            self.gaps.fetch_add(seq - next, Ordering::Relaxed);
        }
        self.next_seq.store(seq + 1, Ordering::Relaxed);
        self.received.fetch_add(1, Ordering::Relaxed);
        self.bytes
            .fetch_add(payload.len() as u64, Ordering::Relaxed);
    }

    /// An echo arrived (round-trip phase).
    fn on_pong(&self, payload: &[u8]) {
        let Some(sent) = read_u64(payload, 8) else {
            self.bad();
            return;
        };
        self.record_since(sent);
    }

    /// A many-scenario message arrived: its latency from the send time it carries.
    fn on_stamped(&self, payload: &[u8]) {
        let Some(sent) = read_u64(payload, 8) else {
            self.bad();
            return;
        };
        self.bytes
            .fetch_add(payload.len() as u64, Ordering::Relaxed);
        self.record_since(sent);
    }

    /// Counts a message and records now − `sent` in the histogram.
    fn record_since(&self, sent: u64) {
        let d = (monotonic_nanos() as u64).saturating_sub(sent).max(1);
        self.received.fetch_add(1, Ordering::Relaxed);
        let mut h = self.rtt.lock().unwrap_or_else(|e| e.into_inner());
        h.saturating_record(d);
    }

    fn bad(&self) {
        self.malformed.fetch_add(1, Ordering::Relaxed);
    }

    fn mark(&self) -> Mark {
        let (rtt_count, rtt_p50_ns, rtt_p99_ns, rtt_max_ns) = {
            let mut h = self.rtt.lock().unwrap_or_else(|e| e.into_inner());
            let r = (
                h.len(),
                h.value_at_quantile(0.5),
                h.value_at_quantile(0.99),
                h.max(),
            );
            h.reset();
            r
        };
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Mark {
            t_ns: monotonic_nanos() as u64,
            cpu_s: crate::report::process_cpu_secs(),
            received: get(&self.received),
            bytes: get(&self.bytes),
            gaps: get(&self.gaps),
            sent: get(&self.sent),
            malformed: get(&self.malformed),
            rtt_count,
            rtt_p50_ns,
            rtt_p99_ns,
            rtt_max_ns,
        }
    }
}

/// Prints one line on stdout, at once (the benchmark waits for it).
fn say(line: &str) -> Result {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")?;
    out.flush()?;
    Ok(())
}

/// Answers marks until `quit` or the end of stdin.
fn control(stats: &Stats) -> Result {
    use std::io::BufRead;
    for line in std::io::stdin().lock().lines() {
        match line?.trim() {
            MARK => say(&serde_json::to_string(&stats.mark())?)?,
            QUIT => break,
            other => return Err(format!("unknown command {other:?}").into()),
        }
    }
    Ok(())
}

/// Says `ready`, then serves marks until `quit`, spinning `executor` meanwhile if there is one.
fn serve(stats: &Arc<Stats>, executor: Option<&rclev::Executor>) -> Result {
    say(READY)?;
    let (quit, quitted) = tokio::sync::oneshot::channel::<()>();
    let s = stats.clone();
    let control = std::thread::spawn(move || {
        let result = control(&s);
        let _ = quit.send(());
        result
    });
    match executor {
        Some(executor) => crate::errors::report_spin(executor.spin(
            SpinOptions::default().until_promise_resolved(async move {
                let _ = quitted.await;
            }),
        )),
        None => {
            let _ = quitted.blocking_recv();
        }
    }
    control.join().map_err(|_| "the control thread panicked")?
}

/// Waits until `matched` holds.
fn wait_matched(matched: impl Fn() -> bool) -> Result {
    let deadline = Instant::now() + MATCH_LIMIT;
    while !matched() {
        if Instant::now() > deadline {
            return Err(format!("no peer matched within {MATCH_LIMIT:?}").into());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}

/// Calls `send` with 0, 1, 2… at `hz` on a grid of absolute deadlines until `stop`; after a
/// stall longer than a period it rejoins the grid instead of sending a burst (a burst would
/// measure queueing, not the round trip).
fn pace(hz: f64, stop: &AtomicBool, mut send: impl FnMut(u64) -> Result) -> Result {
    rclev::timer::set_thread_timer_slack(Duration::from_nanos(1));
    let period = (1e9 / hz) as u64;
    let mut next = monotonic_nanos() as u64 + period;
    let mut seq = 0;
    while !stop.load(Ordering::Relaxed) {
        sleep_until_ns(next);
        send(seq)?;
        seq += 1;
        next += period;
        let now = monotonic_nanos() as u64;
        if now > next {
            next = now + period - (now - next) % period;
        }
    }
    Ok(())
}

/// A thread that sends until stopped, and the flag that stops it.
struct SendThread {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Result>,
}

impl SendThread {
    fn start(body: impl FnOnce(&AtomicBool) -> Result + Send + 'static) -> SendThread {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        SendThread {
            stop,
            thread: std::thread::spawn(move || body(&s)),
        }
    }

    fn stop(self) -> Result {
        self.stop.store(true, Ordering::Relaxed);
        self.thread
            .join()
            .map_err(|_| "the sending thread panicked")?
    }
}

/// The role through rclev: a node on `context`'s transport, its publisher and subscription.
fn rclev_role(args: &RoleArgs, delivery: Delivery, context: rclev::Context) -> Result {
    let executor = context.create_executor(ExecutorOptions::default())?;
    let node = executor.create_node(match args.role {
        Role::Sender => "bench_sender",
        Role::Receiver => "bench_receiver",
        Role::Ping => "bench_ping",
        Role::Pong => "bench_pong",
        Role::ManySender => "bench_many_sender",
        Role::ManyReceiver => "bench_many_receiver",
    })?;
    let stats = Stats::new()?;
    let size = args.size;
    match args.role {
        Role::Receiver => {
            let s = stats.clone();
            let _sub = node.create_subscription::<ByteMultiArray, _>(
                DATA.qos(qos()).delivery(delivery),
                move |m: Arc<ByteMultiArray>| s.on_data(&m.data),
            )?;
            serve(&stats, Some(&executor))
        }
        Role::Sender => {
            let publisher = node.create_publisher::<ByteMultiArray>(DATA.qos(qos()))?;
            wait_matched(|| publisher.get_subscription_count() > 0)?;
            let s = stats.clone();
            // What an application does: a new message per publish.
            let sender = SendThread::start(move |stop| {
                let mut seq = 0;
                while !stop.load(Ordering::Relaxed) {
                    let mut data = vec![0; size];
                    stamp(&mut data, seq);
                    publisher
                        .publish(ByteMultiArray {
                            data,
                            ..Default::default()
                        })
                        .map_err(|e| e.error)?;
                    s.sent.fetch_add(1, Ordering::Relaxed);
                    seq += 1;
                }
                Ok(())
            });
            serve(&stats, Some(&executor))?;
            sender.stop()
        }
        Role::Pong => {
            let publisher = node.create_publisher::<ByteMultiArray>(PONG.qos(qos()))?;
            let s = stats.clone();
            let _sub = node.create_subscription::<ByteMultiArray, _>(
                PING.qos(qos()).delivery(delivery),
                move |m: Arc<ByteMultiArray>| {
                    if publisher.publish_arc(m).is_err() {
                        s.bad();
                    }
                },
            )?;
            serve(&stats, Some(&executor))
        }
        Role::Ping => {
            let publisher = node.create_publisher::<ByteMultiArray>(PING.qos(qos()))?;
            let s = stats.clone();
            let sub = node.create_subscription::<ByteMultiArray, _>(
                PONG.qos(qos()).delivery(delivery),
                move |m: Arc<ByteMultiArray>| s.on_pong(&m.data),
            )?;
            wait_matched(|| {
                publisher.get_subscription_count() > 0 && sub.get_publisher_count() > 0
            })?;
            let s = stats.clone();
            let hz = args.hz;
            let pinger = SendThread::start(move |stop| {
                pace(hz, stop, |seq| {
                    let mut data = vec![0; size];
                    stamp(&mut data, seq);
                    publisher
                        .publish(ByteMultiArray {
                            data,
                            ..Default::default()
                        })
                        .map_err(|e| e.error)?;
                    s.sent.fetch_add(1, Ordering::Relaxed);
                    Ok(())
                })
            });
            serve(&stats, Some(&executor))?;
            pinger.stop()
        }
        Role::ManyReceiver => {
            // All on one node, so on one worker: what a robot's node with many inputs is.
            let mut subscriptions = Vec::with_capacity(args.topics * args.fanout);
            for t in 0..args.topics {
                for _ in 0..args.fanout {
                    let s = stats.clone();
                    subscriptions.push(node.create_subscription::<ByteMultiArray, _>(
                        many_topic(t).qos(qos()).delivery(delivery),
                        move |m: Arc<ByteMultiArray>| s.on_stamped(&m.data),
                    )?);
                }
            }
            serve(&stats, Some(&executor))
        }
        Role::ManySender => {
            let publishers = (0..args.topics)
                .map(|t| node.create_publisher::<ByteMultiArray>(many_topic(t).qos(qos())))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            let fanout = args.fanout;
            wait_matched(|| {
                publishers
                    .iter()
                    .all(|p| p.get_subscription_count() >= fanout)
            })?;
            let s = stats.clone();
            let (rate, topics) = (args.hz * args.topics as f64, args.topics as u64);
            let sender = SendThread::start(move |stop| {
                pace(rate, stop, |n| {
                    let mut data = vec![0; size];
                    stamp(&mut data, n / topics);
                    publishers[(n % topics) as usize]
                        .publish(ByteMultiArray {
                            data,
                            ..Default::default()
                        })
                        .map_err(|e| e.error)?;
                    s.sent.fetch_add(1, Ordering::Relaxed);
                    Ok(())
                })
            });
            serve(&stats, Some(&executor))?;
            sender.stop()
        }
    }
}

/// The role on the bare engine: prepared CDR out, counting in the listener.
fn raw_role(args: &RoleArgs) -> Result {
    use rclev_dds::engine::Participant;
    let participant = Participant::new(&rclev_dds::DdsOptions::from_env()?)?;
    let ty = ByteMultiArray::DDS_TYPE_NAME;
    let topic = |name: &str| format!("rt/{name}");
    let stats = Stats::new()?;
    let sample = raw_sample(args.size)?;
    match args.role {
        Role::Receiver => {
            let s = stats.clone();
            let _reader =
                participant.create_reader(
                    &topic(DATA),
                    ty,
                    &qos(),
                    move |cdr| match payload_of(cdr) {
                        Some(payload) => s.on_data(payload),
                        None => s.bad(),
                    },
                )?;
            serve(&stats, None)
        }
        Role::Sender => {
            let writer = participant.create_writer(&topic(DATA), ty, &qos())?;
            wait_matched(|| writer.matched() > 0)?;
            let s = stats.clone();
            let sender = SendThread::start(move |stop| {
                let mut sample = sample;
                let mut seq = 0;
                while !stop.load(Ordering::Relaxed) {
                    stamp(&mut sample[DATA_OFFSET..], seq);
                    writer.write(&sample)?;
                    s.sent.fetch_add(1, Ordering::Relaxed);
                    seq += 1;
                }
                Ok(())
            });
            serve(&stats, None)?;
            sender.stop()
        }
        Role::Pong => {
            let writer = participant.create_writer(&topic(PONG), ty, &qos())?;
            let s = stats.clone();
            let _reader = participant.create_reader(&topic(PING), ty, &qos(), move |cdr| {
                if writer.write(cdr).is_err() {
                    s.bad();
                }
            })?;
            serve(&stats, None)
        }
        Role::Ping => {
            let writer = participant.create_writer(&topic(PING), ty, &qos())?;
            let s = stats.clone();
            let reader =
                participant.create_reader(
                    &topic(PONG),
                    ty,
                    &qos(),
                    move |cdr| match payload_of(cdr) {
                        Some(payload) => s.on_pong(payload),
                        None => s.bad(),
                    },
                )?;
            wait_matched(|| writer.matched() > 0 && reader.matched() > 0)?;
            let s = stats.clone();
            let hz = args.hz;
            let pinger = SendThread::start(move |stop| {
                let mut sample = sample;
                pace(hz, stop, |seq| {
                    stamp(&mut sample[DATA_OFFSET..], seq);
                    writer.write(&sample)?;
                    s.sent.fetch_add(1, Ordering::Relaxed);
                    Ok(())
                })
            });
            serve(&stats, None)?;
            pinger.stop()
        }
        Role::ManyReceiver => {
            let mut readers = Vec::with_capacity(args.topics * args.fanout);
            for t in 0..args.topics {
                for _ in 0..args.fanout {
                    let s = stats.clone();
                    readers.push(participant.create_reader(
                        &topic(many_topic(t).as_str()),
                        ty,
                        &qos(),
                        move |cdr| match payload_of(cdr) {
                            Some(payload) => s.on_stamped(payload),
                            None => s.bad(),
                        },
                    )?);
                }
            }
            serve(&stats, None)
        }
        Role::ManySender => {
            let writers = (0..args.topics)
                .map(|t| participant.create_writer(&topic(many_topic(t).as_str()), ty, &qos()))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            let fanout = args.fanout;
            wait_matched(|| writers.iter().all(|w| w.matched() >= fanout))?;
            let s = stats.clone();
            let (rate, topics) = (args.hz * args.topics as f64, args.topics as u64);
            let sender = SendThread::start(move |stop| {
                let mut sample = sample;
                pace(rate, stop, |n| {
                    stamp(&mut sample[DATA_OFFSET..], n / topics);
                    writers[(n % topics) as usize].write(&sample)?;
                    s.sent.fetch_add(1, Ordering::Relaxed);
                    Ok(())
                })
            });
            serve(&stats, None)?;
            sender.stop()
        }
    }
}

/// `raw-zenoh-typed`'s encoding: the raw sample's payload put in a new message, and that
/// encoded into a new buffer, as a library's publish of a message does.
#[cfg(feature = "zenoh")]
fn typed_cdr(sample: &[u8]) -> rclev::Result<Vec<u8>> {
    let msg = ByteMultiArray {
        data: payload_of(sample)
            .unwrap_or(&sample[DATA_OFFSET..])
            .to_vec(),
        ..Default::default()
    };
    rclev::msg::to_cdr(&msg)
}

/// The role on a bare Zenoh session: prepared CDR and a fresh attachment out (what
/// rclev-zenoh puts, byte for byte), counting in the subscriber's callback. The pair scenario
/// only.
#[cfg(feature = "zenoh")]
fn raw_zenoh_role(args: &RoleArgs) -> Result {
    use rclev_zenoh::wire::{keyexpr::data_keyexpr, Attachment};
    use zenoh::bytes::ZBytes;
    use zenoh::Wait;

    let session = rclev_zenoh::ZenohSession::from_env()?;
    let z = session.zenoh();
    let domain = rclev_zenoh::config::domain_id_from_env()?;
    let key = |name: &str| {
        data_keyexpr(
            domain,
            &format!("/{name}"),
            ByteMultiArray::DDS_TYPE_NAME,
            ByteMultiArray::TYPE_HASH.into(),
        )
    };
    // rclev-zenoh's default for a reliable keep-last publisher: congestion control drop,
    // Zenoh's default too.
    let publisher = |name: &str| z.declare_publisher(key(name)).wait();
    let gid = rclev::transport::Gid([7; 16]);
    let put = move |publisher: &zenoh::pubsub::Publisher<'_>, bytes: Vec<u8>, seq: i64| {
        let attachment = Attachment {
            sequence_number: seq,
            source_timestamp: monotonic_nanos(),
            source_gid: gid,
        };
        publisher
            .put(ZBytes::from(bytes))
            .attachment(ZBytes::from(attachment.encode().to_vec()))
            .wait()
    };
    let matched =
        |p: &zenoh::pubsub::Publisher<'_>| p.matching_status().wait().is_ok_and(|m| m.matching());
    let stats = Stats::new()?;
    let sample = raw_sample(args.size)?;
    let typed = matches!(
        args.engine,
        Engine::RawZenohTyped | Engine::RawZenohTypedRouted
    );
    match args.role {
        Role::Receiver if typed => {
            let s = stats.clone();
            let _subscriber = z
                .declare_subscriber(key(DATA))
                .callback(move |sample| {
                    match rclev::msg::from_cdr::<ByteMultiArray>(&sample.payload().to_bytes()) {
                        Ok(msg) => s.on_data(&msg.data),
                        Err(_) => s.bad(),
                    }
                })
                .wait()?;
            serve(&stats, None)
        }
        Role::Receiver => {
            let s = stats.clone();
            let _subscriber = z
                .declare_subscriber(key(DATA))
                .callback(
                    move |sample| match payload_of(&sample.payload().to_bytes()) {
                        Some(payload) => s.on_data(payload),
                        None => s.bad(),
                    },
                )
                .wait()?;
            serve(&stats, None)
        }
        Role::Sender => {
            let data = publisher(DATA)?;
            wait_matched(|| matched(&data))?;
            let s = stats.clone();
            let sender = SendThread::start(move |stop| {
                let mut sample = sample;
                let mut seq = 0;
                while !stop.load(Ordering::Relaxed) {
                    stamp(&mut sample[DATA_OFFSET..], seq);
                    // A buffer per put, as rclev-zenoh encodes each message into its own;
                    // typed: encoded from a message, as a library's publish must.
                    let bytes = if typed {
                        typed_cdr(&sample)?
                    } else {
                        sample.clone()
                    };
                    put(&data, bytes, seq as i64 + 1)?;
                    s.sent.fetch_add(1, Ordering::Relaxed);
                    seq += 1;
                }
                Ok(())
            });
            serve(&stats, None)?;
            sender.stop()
        }
        Role::Pong => {
            let pong = publisher(PONG)?;
            let s = stats.clone();
            let _subscriber = z
                .declare_subscriber(key(PING))
                .callback(move |sample| {
                    let bytes = sample.payload().to_bytes().into_owned();
                    // Typed: decoded into a message and that encoded back, as a library's
                    // echo does.
                    let bytes = if typed {
                        match rclev::msg::from_cdr::<ByteMultiArray>(&bytes)
                            .and_then(|msg| rclev::msg::to_cdr(&msg))
                        {
                            Ok(bytes) => bytes,
                            Err(_) => return s.bad(),
                        }
                    } else {
                        bytes
                    };
                    if put(&pong, bytes, 1).is_err() {
                        s.bad();
                    }
                })
                .wait()?;
            serve(&stats, None)
        }
        Role::Ping => {
            let ping = publisher(PING)?;
            let s = stats.clone();
            let _subscriber = z
                .declare_subscriber(key(PONG))
                .callback(move |sample| {
                    let bytes = sample.payload().to_bytes();
                    if typed {
                        match rclev::msg::from_cdr::<ByteMultiArray>(&bytes) {
                            Ok(msg) => s.on_pong(&msg.data),
                            Err(_) => s.bad(),
                        }
                    } else {
                        match payload_of(&bytes) {
                            Some(payload) => s.on_pong(payload),
                            None => s.bad(),
                        }
                    }
                })
                .wait()?;
            // The pong's publisher is matched once it put its subscriber up; our subscriber
            // is matched when its pong publisher is (the pong starts first).
            wait_matched(|| matched(&ping))?;
            let s = stats.clone();
            let hz = args.hz;
            let pinger = SendThread::start(move |stop| {
                let mut sample = sample;
                pace(hz, stop, |seq| {
                    stamp(&mut sample[DATA_OFFSET..], seq);
                    let bytes = if typed {
                        typed_cdr(&sample)?
                    } else {
                        sample.clone()
                    };
                    put(&ping, bytes, seq as i64 + 1)?;
                    s.sent.fetch_add(1, Ordering::Relaxed);
                    Ok(())
                })
            });
            serve(&stats, None)?;
            pinger.stop()
        }
        Role::ManySender | Role::ManyReceiver => {
            Err("the many scenario has no raw Zenoh variant".into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_raw_sample_is_rclevs_encoding_and_parses_back() {
        let mut sample = raw_sample(20).unwrap();
        stamp(&mut sample[DATA_OFFSET..], 7);
        let payload = payload_of(&sample).unwrap();
        assert_eq!(payload.len(), 20);
        assert_eq!(read_u64(payload, 0), Some(7));
        let msg: ByteMultiArray = rclev::msg::from_cdr(&sample).unwrap();
        assert_eq!(msg.data, payload);
        assert!(payload_of(&sample[..20]).is_none());
        assert!(payload_of(&[0, 0, 0, 0]).is_none());
    }

    #[test]
    fn the_check_pattern_sample_is_the_raw_layout() {
        let sample = pattern_sample(40).unwrap();
        assert_eq!(
            &sample[..DATA_OFFSET],
            &raw_sample(40).unwrap()[..DATA_OFFSET]
        );
        assert_eq!(payload_of(&sample).unwrap(), check_pattern(40));
        assert_eq!(check_pattern(3), [7, 38, 69]);
    }

    #[test]
    fn gaps_are_counted_from_sequence_numbers() {
        let stats = Stats::new().unwrap();
        let mut p = [0u8; HEADER];
        for seq in [0u64, 1, 5, 6] {
            p[..8].copy_from_slice(&seq.to_le_bytes());
            stats.on_data(&p);
        }
        stats.on_data(&[1, 2]);
        let m = stats.mark();
        assert_eq!((m.received, m.gaps, m.bytes, m.malformed), (4, 3, 64, 1));
    }
}
