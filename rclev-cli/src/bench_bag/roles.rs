//! The benchmark's child processes (hidden sub-commands of this binary) and the messages
//! every part writes, publishes and plays.
//!
//! - `bench-bag-publisher`: publishes `--hz` × `--secs` messages of `--size` bytes over the
//!   transport `RMW_IMPLEMENTATION` names (DDS here), on a grid of absolute deadlines. It waits
//!   for a matched subscription (the recorder's, or the timing subscriber's) first and prints
//!   `matched`, then publishes every message of the grid (one that is late goes out at once:
//!   the count is exact), prints `published <n> failed <f>`, and stays ~1 s so that the
//!   reliable writer sees its last samples acknowledged before it goes.
//! - `bench-bag-subscriber`: subscribes, prints `ready`, and keeps each message's sequence
//!   number and DDS reception time until `--count` came or none came for a while; then prints
//!   them as one JSON line and exits.
//!
//! Every message is a `std_msgs/msg/ByteMultiArray` whose `data` (`--size` bytes) starts with
//! the message's sequence number (little-endian `u64`); the rest is image-like bytes (a
//! gradient with noise), so that zstd has something to do.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use rclev::interfaces::std_msgs::msg::ByteMultiArray;
use rclev::msg::TypeInfo;
use rclev::transport::{MessageInfo, NodePort, Payload, TopicEndpoint};
use rclev::QoSProfile;
use serde::{Deserialize, Serialize};

use crate::clock::sleep_until_ns;
use crate::errors::Result;
use crate::topic::{cli_node, type_support};
use crate::wire::CliTransport;
use rclev::clock::monotonic_nanos;

/// The smallest payload: the sequence number.
pub const MIN_SIZE: usize = 8;
/// Bytes of a `ByteMultiArray`'s CDR before its data: encapsulation header, `layout.dim`'s
/// length, `layout.data_offset`, `data`'s length.
pub const DATA_OFFSET: usize = 16;
/// The first line of a publisher once a subscription matched.
pub const MATCHED: &str = "matched";
/// The first line of a subscriber once it subscribed.
pub const READY: &str = "ready";
/// How long a publisher waits for a subscription to match.
const MATCH_LIMIT: Duration = Duration::from_secs(30);
/// How long a publisher stays after its last message: reliable samples still unacknowledged
/// when a writer is deleted are lost to the reader.
const LINGER: Duration = Duration::from_secs(1);

/// The QoS every benchmark publisher offers (and the bags record): reliable, KeepLast(1000),
/// volatile, so that a recorder that falls behind for a moment loses nothing.
pub fn qos() -> QoSProfile {
    QoSProfile::default().keep_last(1000).reliable().volatile()
}

/// The type of every benchmark message.
pub fn type_info() -> TypeInfo {
    TypeInfo::of::<ByteMultiArray>()
}

/// The CDR of message `seq` of `size` payload bytes: rclev's encoding of a `ByteMultiArray`
/// (checked once per call against the hand-written layout, which the sequence number's
/// position relies on), its data image-like bytes that vary with `seq`.
pub fn message(size: usize, seq: u64) -> Result<Vec<u8>> {
    let mut cdr = rclev::msg::to_cdr(&ByteMultiArray {
        data: vec![0; size],
        ..Default::default()
    })?;
    if cdr.len() != DATA_OFFSET + size
        || cdr[12..DATA_OFFSET] != (size as u32).to_le_bytes()
        || size < MIN_SIZE
    {
        return Err(format!("a {size} B ByteMultiArray is not laid out as expected").into());
    }
    fill(&mut cdr[DATA_OFFSET..], seq);
    Ok(cdr)
}

/// Image-like bytes: a gradient over 640-byte rows, shifted by `seq`, plus 2 bits of noise
/// (zstd at its default level makes about 1.4× of it: neither all zeros nor incompressible);
/// the sequence number in the first 8.
fn fill(data: &mut [u8], seq: u64) {
    // xorshift64: cheap, deterministic noise.
    let mut x = seq.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for (i, b) in data.iter_mut().enumerate() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let gradient = (i % 640) / 3 + (i / 640) / 2 + seq as usize;
        *b = (gradient as u8).wrapping_add((x & 0x03) as u8);
    }
    stamp(data, seq);
}

/// Writes sequence number `seq` at the start of a message's data.
pub fn stamp(data: &mut [u8], seq: u64) {
    data[..8].copy_from_slice(&seq.to_le_bytes());
}

/// The sequence number of a message's CDR.
fn seq_of(cdr: &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(
        cdr.get(DATA_OFFSET..DATA_OFFSET + 8)?.try_into().ok()?,
    ))
}

/// Prints one line on stdout, at once (the benchmark waits for it).
fn say(line: &str) -> Result {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")?;
    out.flush()?;
    Ok(())
}

/// `rclev bench-bag-publisher` (started by `bench bag`).
#[derive(clap::Args, Debug)]
pub struct PublisherArgs {
    /// The topic.
    #[arg(long)]
    topic: String,
    /// Payload bytes per message.
    #[arg(long)]
    size: usize,
    /// Messages per second.
    #[arg(long)]
    hz: f64,
    /// Seconds of publishing: `hz × secs` messages.
    #[arg(long)]
    secs: f64,
}

/// Publishes as [`PublisherArgs`] say (see the [module](self)).
pub fn publisher(args: PublisherArgs) -> Result {
    let positive = |x: f64| x.is_finite() && x > 0.0;
    if args.size < MIN_SIZE || !positive(args.hz) || !positive(args.secs) {
        return Err("--size must be at least 8, --hz and --secs positive".into());
    }
    let count = (args.hz * args.secs).round() as u64;
    let transport = CliTransport::from_env()?;
    let node = cli_node(&transport, "bench_bag_pub")?;
    let publisher = node.create_publisher(
        &TopicEndpoint {
            name: args.topic.clone(),
            type_support: type_support(type_info()),
            qos: qos(),
            reads_message_info: false,
            max_queue_bytes: rclev::transport::DEFAULT_QUEUE_BYTES,
        },
        Arc::new(()),
    )?;
    let deadline = Instant::now() + MATCH_LIMIT;
    while publisher.subscription_count() == 0 {
        if Instant::now() > deadline {
            return Err(format!("no subscription matched within {MATCH_LIMIT:?}").into());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    say(MATCHED)?;
    // One message made ahead, only its sequence number changed per publish: the schedule
    // measures the publisher, not the making of megabytes.
    let template = message(args.size, 0)?;
    rclev::timer::set_thread_timer_slack(Duration::from_nanos(1));
    let period = 1e9 / args.hz;
    let start = monotonic_nanos() as u64 + 1_000_000;
    let (mut published, mut failed) = (0u64, 0u64);
    for seq in 0..count {
        sleep_until_ns(start + (seq as f64 * period) as u64);
        let mut cdr = template.clone();
        stamp(&mut cdr[DATA_OFFSET..], seq);
        match publisher.publish(Payload::Serialized(Box::new(cdr))) {
            Ok(()) => published += 1,
            Err(_) => failed += 1,
        }
    }
    say(&format!("published {published} failed {failed}"))?;
    std::thread::sleep(LINGER);
    Ok(())
}

/// `rclev bench-bag-subscriber` (started by `bench bag`).
#[derive(clap::Args, Debug)]
pub struct SubscriberArgs {
    /// The topic.
    #[arg(long)]
    topic: String,
    /// Messages to wait for.
    #[arg(long)]
    count: u64,
    /// Give up once no message came for this long after the first (seconds).
    #[arg(long, default_value_t = 3.0)]
    idle_secs: f64,
    /// Give up if no message came this long after subscribing (seconds).
    #[arg(long, default_value_t = 60.0)]
    first_secs: f64,
}

/// What a subscriber prints when it is done.
#[derive(Serialize, Deserialize, Debug, Default)]
pub struct Received {
    /// Each message's sequence number and DDS reception time (ns since the epoch), in order
    /// of arrival.
    pub times: Vec<(u64, u64)>,
    /// Messages that were not a benchmark message.
    pub malformed: u64,
}

/// Subscribes and records reception times (see the [module](self)).
pub fn subscriber(args: SubscriberArgs) -> Result {
    let transport = CliTransport::from_env()?;
    let node: Arc<dyn NodePort> = cli_node(&transport, "bench_bag_sub")?;
    // The reception time Fast DDS stamps (`reads_message_info`), not when this thread got
    // round to taking the message: the figure is the sender's timing, not our wake-up.
    let (sub, rx) = crate::topic::subscribe(&node, &args.topic, type_info(), qos(), true)?;
    say(READY)?;
    let mut out = Received {
        times: Vec::with_capacity(args.count.min(1 << 20) as usize),
        malformed: 0,
    };
    let subscribed = Instant::now();
    let mut last = None::<Instant>;
    let mut batch: Vec<(Payload, MessageInfo)> = Vec::new();
    while (out.times.len() as u64) < args.count {
        let idle = match last {
            Some(t) => t.elapsed().as_secs_f64() > args.idle_secs,
            None => subscribed.elapsed().as_secs_f64() > args.first_secs,
        };
        if idle {
            break;
        }
        let _ = rx.recv_timeout(Duration::from_millis(100));
        loop {
            let more = sub.take_batch(64, &mut batch);
            for (payload, info) in batch.drain(..) {
                // A wire transport hands over bytes; anything else is not a benchmark message.
                let seq = match &payload {
                    Payload::Serialized(cdr) => seq_of(cdr),
                    _ => None,
                };
                let Some(seq) = seq else {
                    out.malformed += 1;
                    continue;
                };
                let at = info
                    .received_timestamp
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .map(|d| d.as_nanos() as u64)
                    .unwrap_or(0);
                out.times.push((seq, at));
                last = Some(Instant::now());
            }
            if !more {
                break;
            }
        }
    }
    say(&serde_json::to_string(&out)?)
}
