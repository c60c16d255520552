//! `rclev bag play` against real ROS 2: bags written by rosbags (Python), played to rclpy
//! (Jazzy, rmw_fastrtps_cpp) nodes, each test in a network namespace of its own (built with
//! `--features dds`). The peers are `rclev-dds/tests/peers/bag_play_peer.py`.

#![cfg(feature = "dds")]

#[path = "../../rclev-dds/tests/common/mod.rs"]
mod common;

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{in_netns, Peer};

const LIMIT: Duration = Duration::from_secs(45);

/// The bags' first log time (`T0` of the peer script).
const T0: u64 = 1_765_000_000_000_000_000;
const MS: u64 = 1_000_000;

/// The venv's prefix, whose `share/` holds the Jazzy interface packages.
fn venv_prefix() -> PathBuf {
    common::python()
        .parent()
        .and_then(|bin| bin.parent())
        .unwrap()
        .to_path_buf()
}

/// A fresh directory, removed when dropped (a failing test's too), for the bags of test `name` (a
/// random name: each test runs in a PID namespace of its own, where every test process has the
/// same pid).
fn scratch(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("rclev-bag-play-{name}-"))
        .tempdir()
        .unwrap()
}

/// Writes bag `kind` (mixed, basic, clock) with rosbags into `dir`.
fn write_bag(dir: &std::path::Path, kind: &str) -> PathBuf {
    let bag = dir.join(kind);
    Peer::start("bag_play_peer.py", &["write", bag.to_str().unwrap(), kind]).finish(LIMIT);
    bag
}

/// Runs `rclev bag play ARGS` to its end (killed after `LIMIT`), its stdout and stderr
/// inherited by the test's, except stdout, which is returned with the status.
fn play(args: &[&str], ament: bool) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rclev"));
    c.args(["bag", "play"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if ament {
        c.env("AMENT_PREFIX_PATH", venv_prefix());
    } else {
        c.env_remove("AMENT_PREFIX_PATH");
    }
    let child = c.spawn().unwrap();
    let id = child.id();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let d = done.clone();
    std::thread::spawn(move || {
        let end = Instant::now() + LIMIT;
        while Instant::now() < end {
            if d.load(std::sync::atomic::Ordering::Relaxed) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        // SAFETY: kill(2) on a child we spawned and have not reaped (the flag is set after
        // `wait_with_output` returns, before which its pid cannot be reused).
        unsafe { libc::kill(id as i32, libc::SIGKILL) };
    });
    let out = child.wait_with_output().unwrap();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    out
}

fn play_ok(args: &[&str], ament: bool) -> String {
    let out = play(args, ament);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "rclev bag play {args:?} failed:\n{text}"
    );
    text
}

/// A message the listener peer received.
struct Received {
    topic: String,
    data: Vec<u8>,
    /// Monotonic seconds.
    recv: f64,
}

/// What the listener printed: its messages, and the QoS (reliability, durability) of the
/// publishers it saw by topic.
fn received(out: &str) -> (Vec<Received>, serde_json::Value) {
    let mut messages = Vec::new();
    let mut qos = serde_json::Value::Null;
    for line in out.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if let Some(q) = v.get("qos") {
            qos = q.clone();
            continue;
        }
        let hex = v["hex"].as_str().unwrap();
        messages.push(Received {
            topic: v["topic"].as_str().unwrap().to_string(),
            data: (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                .collect(),
            recv: v["recv"].as_f64().unwrap(),
        });
    }
    (messages, qos)
}

/// The bag's messages on `topic` (log time, CDR bytes), in order.
fn recorded(bag: &std::path::Path, topic: &str) -> Vec<(u64, Vec<u8>)> {
    rclev_bag::BagReader::open(bag)
        .unwrap()
        .messages_on([topic])
        .map(|m| {
            let m = m.unwrap();
            (m.log_time, m.data)
        })
        .collect()
}

/// Whether `got` is the CDR message `want`: DDS pads a message's serialized size to a multiple
/// of 4 (zeros the receiver ignores), which the bag does not store.
fn same_cdr(got: &[u8], want: &[u8]) -> bool {
    got.len() >= want.len()
        && got.len() - want.len() < 4
        && got[..want.len()] == *want
        && got[want.len()..].iter().all(|b| *b == 0)
}

/// The messages of `got` on `topic`.
fn on<'a>(got: &'a [Received], topic: &str) -> Vec<&'a Received> {
    got.iter().filter(|m| m.topic == topic).collect()
}

/// How the receive times of `got` follow the log times of `want` (same length) played at
/// `rate`: the median and largest |error| in ms once the constant offset (the median one) is
/// taken out, and the span of the arrivals over the recorded one.
///
/// The span is measured from the first message that came on time (within 20 ms): the first
/// message or two can come ~150 ms late whoever publishes them, a DDS discovery effect — the
/// player's writer matched the subscription (`--wait-for-subscribers`) before the rclpy reader
/// matched the writer, so the reader drops the first sample and gets it again at the writer's
/// next heartbeat.
fn timing(got: &[&Received], want: &[(u64, Vec<u8>)], rate: f64) -> (f64, f64, f64) {
    let scheduled: Vec<f64> = want
        .iter()
        .map(|(t, _)| (t - want[0].0) as f64 / 1e9 / rate)
        .collect();
    let offsets: Vec<f64> = got
        .iter()
        .zip(&scheduled)
        .map(|(g, s)| g.recv - s)
        .collect();
    let mut sorted = offsets.clone();
    sorted.sort_by(f64::total_cmp);
    let median_offset = sorted[sorted.len() / 2];
    let errors: Vec<f64> = offsets
        .iter()
        .map(|o| ((o - median_offset) * 1e3).abs())
        .collect();
    let first = errors.iter().position(|e| *e < 20.0).unwrap();
    let last = got.len() - 1;
    let span = (got[last].recv - got[first].recv) / (scheduled[last] - scheduled[first]);
    let mut sorted = errors;
    sorted.sort_by(f64::total_cmp);
    (sorted[sorted.len() / 2], *sorted.last().unwrap(), span)
}

/// Every message, byte for byte and in order per topic; their spacing as recorded: after the
/// constant delivery delay is taken out, the median error under 5 ms, and the span of the
/// arrivals within 20% of the recorded one (generous: a busy host delays some deliveries;
/// the bag benchmark measures the precision itself).
#[test]
fn plays_a_rosbags_bag_to_rclpy_in_order_and_on_time() {
    in_netns(
        "plays_a_rosbags_bag_to_rclpy_in_order_and_on_time",
        LIMIT,
        || {
            let scratch = scratch("timing");
            let dir = scratch.path();
            let bag = write_bag(dir, "mixed");
            let listener = Peer::start(
                "bag_play_peer.py",
                &[
                    "listen",
                    "60",
                    "30",
                    "/chatter:std_msgs/msg/String",
                    "/camera:sensor_msgs/msg/Image",
                ],
            );
            let out = play_ok(
                &[bag.to_str().unwrap(), "--wait-for-subscribers", "1"],
                true,
            );
            assert!(out.contains("Playing "), "{out}");
            assert!(out.contains("Published 60 messages on 2 topics."), "{out}");
            let (got, qos) = received(&listener.finish(LIMIT));
            for topic in ["/chatter", "/camera"] {
                let want = recorded(&bag, topic);
                let got = on(&got, topic);
                assert_eq!(got.len(), want.len(), "{topic}");
                for (g, (_, w)) in got.iter().zip(&want) {
                    assert!(
                        same_cdr(&g.data, w),
                        "{topic}: a message differs, or came out of order: {:?} vs {w:?}",
                        g.data
                    );
                }
                let (median, max, span) = timing(&got, &want, 1.0);
                eprintln!(
                    "{topic}: median |error| {median:.3} ms, max {max:.3} ms, span ratio \
                     {span:.4}"
                );
                assert!(median < 5.0, "{topic}: median error {median} ms");
                assert!((0.8..1.2).contains(&span), "{topic}: span ratio {span}");
            }
            // Recorded reliable and volatile (rosbags' default): offered the same.
            assert_eq!(
                qos["/chatter"][0],
                serde_json::json!(["reliable", "volatile"])
            );
        },
    );
}

/// `--clock 100` drives a use_sim_time node: its 0.1 s sim timer over a 2 s bag at rate 2
/// fires about 20 times (never fewer than 10), and its clock reads times of the bag.
#[test]
fn clock_drives_a_sim_time_rclpy_node() {
    in_netns("clock_drives_a_sim_time_rclpy_node", LIMIT, || {
        let scratch = scratch("clock");
        let dir = scratch.path();
        let bag = write_bag(dir, "clock");
        let node = Peer::start(
            "bag_play_peer.py",
            &["simclock", "30", "/tick:std_msgs/msg/String"],
        );
        let started = Instant::now();
        play_ok(
            &[
                bag.to_str().unwrap(),
                "--wait-for-subscribers",
                "1",
                "--clock",
                "100",
                "--rate",
                "2",
            ],
            true,
        );
        let played = started.elapsed();
        let v: serde_json::Value = serde_json::from_str(node.finish(LIMIT).trim()).unwrap();
        let fires = v["fires"].as_u64().unwrap();
        eprintln!("sim timer fired {fires} times; playback took {played:?}");
        assert!((10..=22).contains(&fires), "fired {fires} times");
        for now in v["nows"].as_array().unwrap() {
            let now = now.as_u64().unwrap();
            assert!(
                (T0..=T0 + 2000 * MS).contains(&now),
                "sim time {now} outside the bag"
            );
        }
    });
}

/// `--topics` plays only the topics named; `--remap` renames them.
#[test]
fn topics_and_remap_choose_and_rename() {
    in_netns("topics_and_remap_choose_and_rename", LIMIT, || {
        let scratch = scratch("remap");
        let dir = scratch.path();
        let bag = write_bag(dir, "mixed");
        let listener = Peer::start(
            "bag_play_peer.py",
            &[
                "listen",
                "50",
                "30",
                "/talk:std_msgs/msg/String",
                "/camera:sensor_msgs/msg/Image",
                "/chatter:std_msgs/msg/String",
            ],
        );
        let out = play_ok(
            &[
                bag.to_str().unwrap(),
                "--wait-for-subscribers",
                "1",
                "--topics",
                "chatter",
                "--remap",
                "/chatter:=/talk",
                "--delay",
                "0.2",
            ],
            true,
        );
        assert!(out.contains("Published 50 messages on 1 topic."), "{out}");
        let (got, _) = received(&listener.finish(LIMIT));
        let want = recorded(&bag, "/chatter");
        let talk = on(&got, "/talk");
        assert_eq!(talk.len(), want.len());
        assert!(talk
            .iter()
            .zip(&want)
            .all(|(g, (_, w))| same_cdr(&g.data, w)));
        assert_eq!(
            on(&got, "/camera").len(),
            0,
            "a topic not asked for was played"
        );
        assert_eq!(
            on(&got, "/chatter").len(),
            0,
            "a remapped topic kept its name"
        );
    });
}

/// `--rate 2 --start-offset 1`: only the messages from 1 s into the bag, twice as fast.
#[test]
fn rate_and_start_offset_shift_and_scale_the_schedule() {
    in_netns(
        "rate_and_start_offset_shift_and_scale_the_schedule",
        LIMIT,
        || {
            let scratch = scratch("rate");
            let dir = scratch.path();
            let bag = write_bag(dir, "mixed");
            let want: Vec<(u64, Vec<u8>)> = recorded(&bag, "/chatter")
                .into_iter()
                .filter(|(t, _)| *t >= T0 + 1000 * MS)
                .collect();
            assert_eq!(want.len(), 25);
            let listener = Peer::start(
                "bag_play_peer.py",
                &["listen", "25", "30", "/chatter:std_msgs/msg/String"],
            );
            play_ok(
                &[
                    bag.to_str().unwrap(),
                    "--wait-for-subscribers",
                    "1",
                    "--topics",
                    "/chatter",
                    "--rate",
                    "2",
                    "--start-offset",
                    "1.0",
                ],
                true,
            );
            let (got, _) = received(&listener.finish(LIMIT));
            let got = on(&got, "/chatter");
            assert_eq!(got.len(), want.len());
            assert!(got
                .iter()
                .zip(&want)
                .all(|(g, (_, w))| same_cdr(&g.data, w)));
            let (median, max, span) = timing(&got, &want, 2.0);
            eprintln!(
                "rate 2: median |error| {median:.3} ms, max {max:.3} ms, span ratio {span:.4}"
            );
            // 24 gaps of 40 ms at rate 2: 480 ms; at rate 1 it would be 960.
            assert!((0.8..1.2).contains(&span), "span ratio {span}");
        },
    );
}

/// A QoS overrides file replaces the recorded profile: the rclpy side sees a best-effort,
/// transient-local publisher.
#[test]
fn qos_overrides_file_sets_the_offered_profile() {
    in_netns("qos_overrides_file_sets_the_offered_profile", LIMIT, || {
        let scratch = scratch("overrides");
        let dir = scratch.path();
        let bag = write_bag(dir, "mixed");
        let overrides = dir.join("overrides.yaml");
        std::fs::write(
            &overrides,
            "/chatter:\n  history: keep_last\n  depth: 50\n  reliability: best_effort\n  \
             durability: transient_local\n",
        )
        .unwrap();
        let listener = Peer::start(
            "bag_play_peer.py",
            &[
                // Best effort: the first message or two may be lost to discovery (see
                // `timing`); the listener ends at 45.
                "listen",
                "45",
                "30",
                "--best-effort",
                "/chatter:std_msgs/msg/String",
            ],
        );
        let out = play_ok(
            &[
                bag.to_str().unwrap(),
                "--wait-for-subscribers",
                "1",
                "--topics",
                "/chatter",
                "--qos-profile-overrides-path",
                overrides.to_str().unwrap(),
            ],
            true,
        );
        assert!(
            out.contains("Overriding QoS profile for topic /chatter"),
            "{out}"
        );
        let (got, qos) = received(&listener.finish(LIMIT));
        assert_eq!(
            qos["/chatter"][0],
            serde_json::json!(["best_effort", "transient_local"])
        );
        // Best effort on loopback: all or nearly all arrive.
        assert!(on(&got, "/chatter").len() >= 45, "{}", got.len());
    });
}

/// A type rclev neither compiles in nor finds installed (no AMENT_PREFIX_PATH): the bag's
/// schema defines it, and rclpy receives every message as recorded.
#[test]
fn a_type_known_only_from_the_bag_schema_plays() {
    in_netns("a_type_known_only_from_the_bag_schema_plays", LIMIT, || {
        let scratch = scratch("schema");
        let dir = scratch.path();
        let bag = write_bag(dir, "basic");
        let listener = Peer::start(
            "bag_play_peer.py",
            &["listen", "20", "30", "/basic:test_msgs/msg/BasicTypes"],
        );
        let out = play_ok(
            &[bag.to_str().unwrap(), "--wait-for-subscribers", "1"],
            false,
        );
        assert!(out.contains("Published 20 messages on 1 topic."), "{out}");
        let (got, _) = received(&listener.finish(LIMIT));
        let want = recorded(&bag, "/basic");
        assert_eq!(got.len(), want.len());
        assert!(got
            .iter()
            .zip(&want)
            .all(|(g, (_, w))| same_cdr(&g.data, w)));
    });
}

/// Bad options end the command at once with a message saying what is wrong, before anything
/// goes on the network.
#[test]
fn bad_options_are_errors_that_say_why() {
    let scratch = scratch("bad");
    let dir = scratch.path();
    let bag = dir.join("no-bag-needed");
    let bag = bag.to_str().unwrap();
    let overrides = dir.join("bad.yaml");
    let cases: &[(&[&str], &str, &str)] = &[
        (&["--remap", "/a=/b"], "", "old_topic:=new_topic"),
        (&["--remap", "/a:=1b"], "", "'/a:=1b'"),
        (&["--rate", "0"], "", "--rate must be a positive number"),
        (
            &["--start-offset=-1"],
            "",
            "--start-offset must be a non-negative",
        ),
        (
            &["--qos-profile-overrides-path", overrides.to_str().unwrap()],
            "/chatter: {depth: 5, reliability: sometimes}\n",
            "unknown QoS reliability 'sometimes'",
        ),
        (
            &["--qos-profile-overrides-path", overrides.to_str().unwrap()],
            "/chatter: {depth: 5, relyability: reliable}\n",
            "unexpected key 'relyability'",
        ),
        (
            &["--qos-profile-overrides-path", overrides.to_str().unwrap()],
            "/chatter: {depth: [",
            "--qos-profile-overrides-path",
        ),
    ];
    for (args, file, message) in cases {
        std::fs::write(&overrides, file).unwrap();
        let mut all = vec![bag];
        all.extend_from_slice(args);
        let out = play(&all, true);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} succeeded");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
    let out = play(&[bag], true);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no-bag-needed"),
        "a missing bag is named"
    );
}

/// The defect: a message whose CDR payload was empty was "published" (counted among the
/// messages played), and no later message on its topic reached any subscriber, rclev's or
/// rclpy's. A payload that is not CDR (shorter than its 4-byte header, or with a header
/// naming no CDR representation) is now skipped with a warning naming it, and the rest is
/// played.
#[test]
fn a_message_that_is_not_cdr_is_skipped_and_the_rest_played() {
    in_netns(
        "a_message_that_is_not_cdr_is_skipped_and_the_rest_played",
        LIMIT,
        || {
            use rclev::interfaces::std_msgs::msg::String as Text;
            let scratch = scratch("not-cdr");
            let dir = scratch.path();
            let bag = dir.join("bag");
            let mut w =
                rclev_bag::BagWriter::create(&bag, rclev_bag::WriterOptions::default()).unwrap();
            let t = w
                .add_topic(rclev_bag::BagTopic::of::<Text>(
                    "/chatter",
                    rclev::QoSProfile::default(),
                ))
                .unwrap();
            let good = |i: u64| {
                rclev::msg::to_cdr(&Text {
                    data: format!("m{i}"),
                })
                .unwrap()
            };
            let payloads: Vec<Vec<u8>> = vec![
                good(0),
                Vec::new(),
                good(2),
                vec![0, 1],
                good(4),
                vec![0x7f, 0x7f, 0, 0, 1, 2, 3, 4],
                good(6),
                good(7),
            ];
            for (i, p) in payloads.iter().enumerate() {
                let at = T0 + i as u64 * 20 * MS;
                w.write_raw(t, at, at, p).unwrap();
            }
            w.finish().unwrap();
            let listener = Peer::start(
                "bag_play_peer.py",
                &["listen", "5", "30", "/chatter:std_msgs/msg/String"],
            );
            let out = play(
                &[bag.to_str().unwrap(), "--wait-for-subscribers", "1"],
                false,
            );
            let stdout = String::from_utf8_lossy(&out.stdout);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{stdout}\n{stderr}");
            assert!(
                stdout.contains("Published 5 messages on 1 topic"),
                "{stdout}"
            );
            assert_eq!(
                stderr.matches("skipping message").count(),
                3,
                "one warning per payload skipped: {stderr}"
            );
            assert!(
                stderr.contains("3 messages of the bag are not CDR"),
                "{stderr}"
            );
            let (got, _) = received(&listener.finish(LIMIT));
            let data: Vec<String> = got
                .iter()
                .map(|m| rclev::msg::from_cdr::<Text>(&m.data).unwrap().data)
                .collect();
            assert_eq!(data, ["m0", "m2", "m4", "m6", "m7"]);
        },
    );
}
