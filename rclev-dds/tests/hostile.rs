//! A hostile or broken peer cannot abort, hang or exhaust an rclev process: a raw Fast DDS
//! participant (`tests/hostile/hostile_peer.cc`, built here against the Fast DDS rclev-dds
//! links) announces endpoints with names that are not UTF-8 and garbage USER_DATA, floods
//! `ros_discovery_info` with malformed samples, floods a KeepAll subscription and a bounded
//! service with large samples; a plain rclpy client floods a service. Each runs in a network
//! namespace of its own, bounded in time, and the rclev node keeps working throughout.
//!
//! The floods last `RCLEV_FLOOD_SECS` seconds (default 30) and print the process's resident
//! memory every half second (`-- --nocapture`); docs/performance.md, "Hostile peers", quotes them.

mod common;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use common::{dds_context, eventually, in_netns, reliable_keep_all, spin_until, Pair, Peer};
use rclev::interfaces::example_interfaces::srv::{
    AddTwoInts, AddTwoInts_Request, AddTwoInts_Response,
};
use rclev::interfaces::std_msgs::msg::{ByteMultiArray, String as StringMsg};
use rclev::interfaces::std_srvs::srv::{Trigger, Trigger_Request, Trigger_Response};
use rclev::{IntoPrimitiveOptions, SpinOptions};

// ---- the hostile peer -----------------------------------------------------------------------

/// The hostile peer's binary, compiled on first use (once per test binary and source).
fn hostile_peer() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let source =
                PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/hostile/hostile_peer.cc");
            let text = std::fs::read(&source).unwrap();
            let hash = text.iter().fold(14695981039346656037u64, |h, b| {
                (h ^ *b as u64).wrapping_mul(1099511628211)
            });
            let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
                .join(format!("hostile_peer-{hash:016x}"));
            if out.exists() {
                return out;
            }
            // Built under a name of its own, then renamed: tests in parallel may build it too
            // (each in a PID namespace of its own: the name is random, not the pid).
            let partial = tempfile::Builder::new()
                .prefix("hostile_peer-")
                .tempfile_in(env!("CARGO_TARGET_TMPDIR"))
                .unwrap()
                .into_temp_path();
            let mut cmd = Command::new("g++");
            cmd.args(["-std=c++17", "-O1", "-Wno-deprecated-declarations"])
                .arg(format!("-I{}", env!("RCLEV_DDS_FASTDDS_INCLUDE")))
                .arg(&source)
                .arg("-o")
                .arg(&partial);
            for dir in env!("RCLEV_DDS_FASTDDS_LIBDIRS").split(':') {
                cmd.arg(format!("-L{dir}"))
                    .arg(format!("-Wl,--disable-new-dtags,-rpath,{dir}"));
            }
            cmd.args(["-lfastrtps", "-lfastcdr"]);
            let status = cmd.status().expect("g++ builds the hostile peer");
            assert!(status.success(), "building {} failed", source.display());
            partial.persist(&out).unwrap();
            out
        })
        .clone()
}

/// A running hostile peer; killed when dropped.
struct Hostile {
    child: Child,
    lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
    /// Its stdin: a flood's writer lives until it ends.
    stdin: Option<std::process::ChildStdin>,
    /// Its "done" line's count, once read.
    written: Option<u64>,
}

impl Hostile {
    /// Starts the peer with `args` and waits (at most 30 s) until it says its entities exist.
    fn start(args: &[&str]) -> Hostile {
        let mut child = Command::new(hostile_peer())
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the hostile peer starts");
        let stdin = child.stdin.take();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let ready = lines.next().and_then(|l| l.ok());
        assert_eq!(
            ready.as_deref(),
            Some("ready"),
            "the hostile peer did not start"
        );
        Hostile {
            child,
            lines,
            stdin,
            written: None,
        }
    }

    /// Waits until the peer says it is done (a flood: done writing, its writer still there)
    /// and returns how many samples it wrote.
    fn wrote(&mut self) -> u64 {
        if let Some(n) = self.written {
            return n;
        }
        let done = self.lines.next().and_then(|l| l.ok()).unwrap_or_default();
        let n = done
            .strip_prefix("done ")
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("the hostile peer's last line: {done:?}"));
        self.written = Some(n);
        n
    }

    /// Waits until the peer is done, lets it end (its stdin closed), and returns how many
    /// samples it wrote.
    fn finish(mut self) -> u64 {
        let n = self.wrote();
        drop(self.stdin.take());
        let status = self.child.wait().unwrap();
        assert!(status.success(), "the hostile peer failed: {status}");
        n
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `f` on another thread while `executor` spins; its result.
fn while_spinning<T: Send + 'static>(
    executor: &rclev::Executor,
    limit: Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let out = Arc::new(Mutex::new(None));
    let o = out.clone();
    std::thread::spawn(move || *o.lock().unwrap() = Some(f()));
    assert!(
        spin_until(executor, limit, || out.lock().unwrap().is_some()),
        "not done within {limit:?}"
    );
    let value = out.lock().unwrap().take().unwrap();
    value
}

/// One call of service `name` from a new client of `node`, while `executor` spins: its
/// answer, `None` if none came within 40 s (the call's own timeout is 15 s).
fn call_once<S: rclev::msg::ServiceType>(
    executor: &rclev::Executor,
    node: &rclev::Node,
    name: &str,
    request: S::Request,
) -> Option<rclev::Result<S::Response>> {
    let client = node.create_client::<S>(name).unwrap();
    let answer = Arc::new(Mutex::new(None));
    let a = answer.clone();
    let call = async move {
        client
            .wait_for_service(Some(Duration::from_secs(10)))
            .await
            .unwrap();
        let response = client
            .call_with_timeout(request, Duration::from_secs(15))
            .await;
        *a.lock().unwrap() = Some(response);
    };
    let _ = executor.spin(
        SpinOptions::default()
            .until_promise_resolved(call)
            .timeout(Duration::from_secs(40)),
    );
    let answer = answer.lock().unwrap().take();
    answer
}

// ---- memory --------------------------------------------------------------------------------

/// This process's resident memory, MB.
fn rss_mb() -> f64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: f64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as f64;
    pages * page / 1e6
}

/// How long each flood lasts: `RCLEV_FLOOD_SECS`, else 10 s (memory levels off within 4 s;
/// docs/performance.md's figures are taken with 30).
fn flood_secs() -> u64 {
    std::env::var("RCLEV_FLOOD_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10)
        .max(3)
}

/// The resident memory while a flood lasts, sampled every half second while `executor` spins
/// (its callbacks run meanwhile), until `done` holds; then printed and checked flat.
struct RssCurve {
    what: &'static str,
    points: Vec<(f64, f64)>,
}

impl RssCurve {
    fn record(
        what: &'static str,
        executor: &rclev::Executor,
        limit: Duration,
        done: impl Fn() -> bool,
    ) -> Self {
        let start = Instant::now();
        let mut points = vec![(0.0, rss_mb())];
        while !done() {
            assert!(start.elapsed() < limit, "{what}: not over within {limit:?}");
            let errors = executor.spin(SpinOptions::default().timeout(Duration::from_millis(500)));
            // Errors a flood may cause (e.g. a request the server could not answer) are the
            // test's to check, not a failure of spinning.
            drop(errors);
            points.push((start.elapsed().as_secs_f64(), rss_mb()));
        }
        let curve = RssCurve { what, points };
        println!("{curve}");
        curve
    }

    /// Memory never goes above `cap_mb` during the flood.
    fn assert_at_most(&self, cap_mb: f64) {
        let peak = self.points.iter().map(|p| p.1).fold(0.0, f64::max);
        assert!(peak <= cap_mb, "{}: over {cap_mb} MB\n{self}", self.what);
    }

    /// Memory stays under `cap_mb` and stops growing: the last third's peak is within 48 MB of
    /// the middle third's. For floods that fill no large history, so that a busy host, which
    /// slows a history's filling, cannot make a bounded curve look like growth.
    fn assert_flat(&self, cap_mb: f64) {
        self.assert_at_most(cap_mb);
        let n = self.points.len();
        assert!(n >= 6, "{}: too few points", self.what);
        let peak = |range: &[(f64, f64)]| range.iter().map(|p| p.1).fold(0.0, f64::max);
        let middle = peak(&self.points[n / 3..2 * n / 3]);
        let last = peak(&self.points[2 * n / 3..]);
        assert!(
            last <= middle + 48.0,
            "{}: memory still grows ({middle:.0} → {last:.0} MB)\n{self}",
            self.what
        );
    }
}

impl std::fmt::Display for RssCurve {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: RSS MB by s:", self.what)?;
        for (t, mb) in &self.points {
            write!(f, " {t:.1}={mb:.0}")?;
        }
        Ok(())
    }
}

// ---- counting warnings ---------------------------------------------------------------------

/// A `tracing` subscriber that counts the WARN and ERROR events of `rclev_dds` and `rclev`
/// whose message contains a given text (the process's only subscriber: each test runs in a
/// process of its own).
struct WarningCounter {
    needle: &'static str,
    count: Arc<AtomicUsize>,
}

impl tracing::Subscriber for WarningCounter {
    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        *metadata.level() <= tracing::Level::WARN
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        struct Message(String);
        impl tracing::field::Visit for Message {
            fn record_debug(&mut self, _: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                self.0 += &format!("{value:?}");
            }
        }
        let mut message = Message(String::new());
        event.record(&mut message);
        if message.0.contains(self.needle) {
            self.count.fetch_add(1, Ordering::Relaxed);
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// Counts, from now on, this process's warnings that contain `needle`.
fn count_warnings(needle: &'static str) -> Arc<AtomicUsize> {
    let count = Arc::new(AtomicUsize::new(0));
    tracing::subscriber::set_global_default(WarningCounter {
        needle,
        count: count.clone(),
    })
    .expect("the first subscriber of this process");
    count
}

// ---- the tests -----------------------------------------------------------------------------

/// The peer's endpoints with names that are not UTF-8: a writer and a reader on
/// `rt/bad\xff\xfe`, a writer whose type name ends in `\xff\xfe`, a reader on a name cut in the
/// middle of a character, a request writer and a reply reader with bad names. Before the fix,
/// the first one discovered ended every rclev process on the domain (`std::terminate` from an
/// exception on Fast DDS's thread) within 0.1 s.
#[test]
fn a_peer_announcing_names_that_are_not_utf8_aborts_nothing() {
    in_netns(
        "a_peer_announcing_names_that_are_not_utf8_aborts_nothing",
        Duration::from_secs(120),
        || {
            let peer = Hostile::start(&["names", "15"]);
            let pair = Pair::new();
            // Both participants discover all six endpoints of the peer (and leave them out).
            assert!(
                eventually(Duration::from_secs(20), || rclev_dds::wire_stats()
                    .endpoints_ignored
                    >= 12),
                "the peer's endpoints were not all seen: {:?}",
                rclev_dds::wire_stats()
            );
            // Meanwhile rclev talks as ever.
            assert_eq!(
                pair.exchange("chatter", 5),
                (0..5).map(|i| format!("hello {i}")).collect::<Vec<_>>()
            );
            let listener = &pair.listener;
            // The graph works (the talker's topic shows) and shows nothing of the bad
            // endpoints.
            let _shown = pair.talker.create_publisher::<StringMsg>("shown").unwrap();
            let shown = || {
                listener
                    .get_topic_names_and_types()
                    .iter()
                    .any(|(name, _)| name == "/shown")
            };
            assert!(eventually(Duration::from_secs(10), shown));
            let topics = listener.get_topic_names_and_types();
            assert!(
                topics.iter().all(|(name, types)| !name.contains("bad")
                    && !name.contains('\u{fffd}')
                    && types.iter().all(|t| !t.contains('\u{fffd}'))),
                "{topics:?}"
            );
            // The peer stayed, met nothing that failed, and ends on its own.
            assert_eq!(peer.finish(), 0);
            assert_eq!(rclev_dds::wire_stats().listener_failures, 0);
        },
    );
}

/// 8 s of malformed `ros_discovery_info` samples, as fast as a peer can write them: each is
/// counted and dropped, and they make a couple of warnings, not one per sample (424,466 lines
/// before the fix).
#[test]
fn malformed_discovery_samples_are_counted_and_warned_about_rate_limited() {
    in_netns(
        "malformed_discovery_samples_are_counted_and_warned_about_rate_limited",
        Duration::from_secs(120),
        || {
            let warnings = count_warnings("ros_discovery_info");
            let executor = dds_context().create_basic_executor();
            let node = executor.create_node("survivor").unwrap();
            let peer = Hostile::start(&["discovery-info", "8"]);
            let written = while_spinning(&executor, Duration::from_secs(60), move || peer.finish());
            let dropped = rclev_dds::wire_stats().discovery_samples_dropped;
            let lines = warnings.load(Ordering::Relaxed);
            println!("malformed ros_discovery_info: {written} written, {dropped} dropped, {lines} warnings");
            assert!(
                dropped >= 100,
                "only {dropped} of {written} samples were seen"
            );
            assert!(
                (1..=3).contains(&lines),
                "{lines} warnings for {dropped} malformed samples"
            );
            // The node still works: its own graph, and a message to itself.
            assert!(node.get_node_names().iter().any(|n| n.name == "survivor"));
            let publisher = node.create_publisher::<StringMsg>("after").unwrap();
            let got = Arc::new(AtomicU64::new(0));
            let g = got.clone();
            let _sub = node
                .create_subscription::<StringMsg, _>("after", move |_| {
                    g.fetch_add(1, Ordering::Relaxed);
                })
                .unwrap();
            assert!(eventually(Duration::from_secs(10), || publisher
                .get_subscription_count()
                == 1));
            publisher
                .publish(StringMsg {
                    data: "still here".into(),
                })
                .unwrap();
            assert!(spin_until(&executor, Duration::from_secs(10), || got
                .load(Ordering::Relaxed)
                == 1));
        },
    );
}

/// A reliable KeepAll subscription whose callback takes 100 ms, flooded with `size`-byte
/// messages by a writer that never waits; its queue holds at most `budget` bytes
/// (`max_queue_bytes`), and Fast DDS's history a few samples beside it, so the writer is
/// pushed back: memory levels off, and every message the callback gets is the next one
/// (publication sequence numbers without a gap). Returns the RSS curve.
fn flood_keep_all(what: &'static str, size: usize, budget: Option<usize>) -> RssCurve {
    let executor = dds_context().create_basic_executor();
    let node = executor.create_node("slow_reader").unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let options = "flood".qos(reliable_keep_all());
    let options = match budget {
        Some(bytes) => options.max_queue_bytes(bytes),
        None => options,
    };
    let sub = node
        .create_subscription_with_info::<ByteMultiArray, _>(options, move |msg, info| {
            assert_eq!(msg.data.len(), size - 16);
            std::thread::sleep(Duration::from_millis(100));
            s.lock().unwrap().push(info.publication_sequence_number);
        })
        .unwrap();
    let secs = flood_secs();
    let peer = Hostile::start(&[
        "flood",
        "rt/flood",
        "std_msgs::msg::dds_::ByteMultiArray_",
        &size.to_string(),
        &secs.to_string(),
    ]);
    let written = Arc::new(AtomicU64::new(u64::MAX));
    let w = written.clone();
    let writer = std::thread::spawn(move || {
        let mut peer = peer;
        w.store(peer.wrote(), Ordering::Release);
        peer
    });
    let curve = RssCurve::record(what, &executor, Duration::from_secs(secs + 60), || {
        written.load(Ordering::Acquire) != u64::MAX
    });
    let peer = writer.join().unwrap();
    let during = seen.lock().unwrap().len();
    // The writer stays until the callback has had ten: how many it gets during the flood
    // depends on the host (on a loaded one, what the pushed-back reader missed comes at the
    // writer's heartbeats, a few samples each), not what is checked here. The limit only
    // keeps a reader that never gets them from hanging the test.
    let progressed = spin_until(&executor, Duration::from_secs(120), || {
        seen.lock().unwrap().len() >= 10
    });
    let written = peer.finish();
    let seen = seen.lock().unwrap().clone();
    println!(
        "{what}: {written} written, {} taken by the callback ({during} during the flood), lost {}",
        seen.len(),
        sub.lost_count()
    );
    assert!(progressed, "the callback ran {} times", seen.len());
    let expected: Vec<u64> = (seen[0]..seen[0] + seen.len() as u64).collect();
    assert_eq!(seen, expected, "a message was skipped");
    assert_eq!(seen[0], 1, "the first message was lost");
    assert_eq!(sub.lost_count(), 0);
    curve
}

/// 64 KiB messages, the default budget (128 MiB): the queue holds ~2,000 of them. Before the
/// first fix the subscription queued everything in RAM (20 → 2,554 MB in 5 s); before the
/// byte budget Fast DDS's history held 5,000 (~330 MB, ~410 MB for the process).
#[test]
fn a_flooded_keep_all_subscription_pushes_back_instead_of_growing() {
    in_netns(
        "a_flooded_keep_all_subscription_pushes_back_instead_of_growing",
        // The flood, up to 120 s for the callback to get ten, and starting up.
        Duration::from_secs(flood_secs() + 240),
        || {
            let curve = flood_keep_all("KeepAll subscription, 64 KiB flood", 65536, None);
            // The budget, four samples in Fast DDS, and the process's own ~30 MB. (How fast
            // it fills depends on the host: the bound is the check.)
            curve.assert_at_most(128.0 * 1.049 + 130.0);
        },
    );
}

/// The defect (over Zenoh first): a KeepAll subscription's queue was bounded in messages
/// only, so 1 MiB messages grew it to gigabytes. 1 MiB messages into a 32 MiB budget: the
/// process stays near the budget, and nothing is lost (the writer is pushed back).
#[test]
fn a_keep_all_queue_of_large_messages_holds_its_byte_budget() {
    in_netns(
        "a_keep_all_queue_of_large_messages_holds_its_byte_budget",
        // The flood, up to 120 s for the callback to get ten, and starting up.
        Duration::from_secs(flood_secs() + 240),
        || {
            let curve = flood_keep_all(
                "KeepAll subscription, 1 MiB flood, 32 MiB budget",
                1 << 20,
                Some(32 << 20),
            );
            // 32 MiB queued, 4 MiB in Fast DDS, the writer's fragments in flight, ~30 MB of
            // process: well under 10,000 × 1 MiB, or Fast DDS's old 5,000 × 1 MiB.
            curve.assert_at_most(32.0 * 1.049 + 130.0);
        },
    );
}

/// A `std_srvs/Trigger` server (QoS depth 10) flooded by a plain rclpy client that loops
/// `call_async` without waiting: the server keeps at most its depth of requests (the oldest go,
/// counted as lost, as with rmw's request history) and answers the rest; memory levels off.
/// Before the fix: 20 → 329 MB in 30 s, and it stayed there after the flood.
#[test]
fn a_service_flooded_by_a_client_keeps_its_depth() {
    in_netns(
        "a_service_flooded_by_a_client_keeps_its_depth",
        Duration::from_secs(flood_secs() + 120),
        || {
            let executor = dds_context().create_basic_executor();
            let node = executor.create_node("trigger_server").unwrap();
            let answered = Arc::new(AtomicU64::new(0));
            let a = answered.clone();
            let service = node
                .create_service::<Trigger, _>("trigger", move |_| {
                    std::thread::sleep(Duration::from_millis(2));
                    a.fetch_add(1, Ordering::Relaxed);
                    Trigger_Response {
                        success: true,
                        message: "ok".into(),
                    }
                })
                .unwrap();
            let secs = flood_secs();
            let client = Peer::start(
                "rclpy_peer.py",
                &["flood_client", "/trigger", &secs.to_string()],
            );
            let out = Arc::new(Mutex::new(None));
            let o = out.clone();
            std::thread::spawn(move || {
                *o.lock().unwrap() = Some(client.finish(Duration::from_secs(secs + 60)))
            });
            let curve = RssCurve::record(
                "Trigger server, rclpy call_async flood",
                &executor,
                Duration::from_secs(secs + 90),
                || out.lock().unwrap().is_some(),
            );
            let out = out.lock().unwrap().take().unwrap();
            println!(
                "{} answered {}, lost {}",
                out.trim(),
                answered.load(Ordering::Relaxed),
                service.lost_count()
            );
            assert!(answered.load(Ordering::Relaxed) > 100);
            assert!(
                service.lost_count() > 0,
                "the flood never outran the server: {out}"
            );
            curve.assert_flat(400.0);
            // Right after the flood, a new client is answered at once: what the flood left is
            // at most the service's depth, and a reply to the client that left is not waited
            // for (before the fix, ~90,000 queued requests were worked off at one a second).
            let answer = call_once::<Trigger>(&executor, &node, "trigger", Trigger_Request {});
            assert!(
                matches!(answer, Some(Ok(Trigger_Response { success: true, .. }))),
                "a call after the flood: {answer:?}"
            );
        },
    );
}

/// An `AddTwoInts` server (a request is 20 bytes on the wire) sent 64 KiB requests at 4,000 a
/// second: each is refused before it is copied out of Fast DDS, counted, and never reaches the
/// callback; the server still answers a real client afterwards. Before the fix they were
/// accepted and queued (at ~135 MB/s in a flood).
#[test]
fn oversized_requests_for_a_bounded_type_are_refused_and_counted() {
    in_netns(
        "oversized_requests_for_a_bounded_type_are_refused_and_counted",
        Duration::from_secs(flood_secs() + 120),
        || {
            let executor = dds_context().create_basic_executor();
            let node = executor.create_node("adder").unwrap();
            let calls = Arc::new(AtomicU64::new(0));
            let c = calls.clone();
            let service = node
                .create_service::<AddTwoInts, _>("add", move |req| {
                    c.fetch_add(1, Ordering::Relaxed);
                    AddTwoInts_Response { sum: req.a + req.b }
                })
                .unwrap();
            let secs = flood_secs();
            let peer = Hostile::start(&[
                "flood",
                "rq/addRequest",
                "example_interfaces::srv::dds_::AddTwoInts_Request_",
                "65536",
                &secs.to_string(),
                // 4,000 requests (256 MB) a second: at full speed Fast DDS itself drops most of
                // them before they reach a KeepLast(10) reader, and few would be seen.
                "250",
            ]);
            let written = Arc::new(AtomicU64::new(u64::MAX));
            let w = written.clone();
            let finisher = std::thread::spawn(move || w.store(peer.finish(), Ordering::Release));
            let curve = RssCurve::record(
                "AddTwoInts server, 64 KiB requests",
                &executor,
                Duration::from_secs(secs + 60),
                || written.load(Ordering::Acquire) != u64::MAX,
            );
            finisher.join().unwrap();
            println!(
                "oversized requests: {} written, {} refused, {} reached the callback",
                written.load(Ordering::Acquire),
                service.refused_count(),
                calls.load(Ordering::Relaxed)
            );
            assert!(
                service.refused_count() >= 100,
                "too few requests were seen to be refused"
            );
            assert_eq!(
                calls.load(Ordering::Relaxed),
                0,
                "an oversized request got through"
            );
            curve.assert_flat(400.0);
            // A real client is still answered.
            let answer =
                call_once::<AddTwoInts>(&executor, &node, "add", AddTwoInts_Request { a: 2, b: 3 });
            assert!(
                matches!(answer, Some(Ok(AddTwoInts_Response { sum: 5 }))),
                "{answer:?}"
            );
        },
    );
}
