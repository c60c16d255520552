//! `rclev bag record` and `rclev bag info` over DDS against rclpy publishers, and over Zenoh
//! against rclev's own, each test in a network namespace of its own (built with
//! `--features dds`; the Zenoh test with `zenoh` too). What the bags hold is checked by the
//! Python oracles (`rosbags`, `mcap-ros2-support`: rclev-bag/tests/oracle.py).

#![cfg(feature = "dds")]

#[path = "../../rclev-dds/tests/common/mod.rs"]
mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{in_netns, Peer};
use serde_json::Value;

/// A test's whole run, in its namespace.
const LIMIT: Duration = Duration::from_secs(150);
/// One step inside it (a peer's end, a recorder's line): well below [`LIMIT`], so that a step
/// that hangs fails with its own message rather than the namespace's time-out.
const STEP: Duration = Duration::from_secs(60);

fn rclev() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rclev"));
    c.stdout(Stdio::piped()).stderr(Stdio::inherit());
    // Nothing installed: a type rclev does not compile in can only be learnt from its
    // publisher's node.
    c.env_remove("AMENT_PREFIX_PATH");
    c
}

/// A bag directory in a fresh temporary directory (kept while `tmp` lives).
fn bag_dir(tmp: &tempfile::TempDir, name: &str) -> PathBuf {
    tmp.path().join(name)
}

/// A recorder started with `args`, its stdout read until it subscribed to every one of
/// `topics`.
struct Recorder {
    child: Child,
    lines: std::sync::mpsc::Receiver<String>,
    /// Every line read so far.
    seen: Vec<String>,
}

impl Recorder {
    fn start(mut c: Command, topics: &[&str]) -> Recorder {
        let mut child = c.spawn().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        // stdout, and stderr too when the test piped it, as one stream of lines.
        let stdout: Box<dyn std::io::Read + Send> = Box::new(child.stdout.take().unwrap());
        let stderr = child
            .stderr
            .take()
            .map(|e| Box::new(e) as Box<dyn std::io::Read + Send>);
        for stream in std::iter::once(stdout).chain(stderr) {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for l in BufReader::new(stream).lines().map_while(Result::ok) {
                    if tx.send(l).is_err() {
                        break;
                    }
                }
            });
        }
        let mut r = Recorder {
            child,
            lines,
            seen: Vec::new(),
        };
        // In whatever order the recorder subscribes.
        let mut waiting: Vec<String> = topics
            .iter()
            .map(|t| format!("Subscribed to topic '{t}'"))
            .collect();
        let deadline = Instant::now() + STEP;
        while !waiting.is_empty() {
            let left = deadline.saturating_duration_since(Instant::now());
            let Ok(l) = r.lines.recv_timeout(left) else {
                panic!("the recorder never printed {waiting:?}");
            };
            waiting.retain(|w| !l.contains(w.as_str()));
            r.seen.push(l);
        }
        r
    }

    fn wait_for(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + STEP;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) => {
                    self.seen.push(l.clone());
                    if l.contains(needle) {
                        return l;
                    }
                }
                Err(_) => panic!("the recorder never printed '{needle}'"),
            }
        }
    }

    /// Ctrl-C, then its last line (the summary); panics unless it exits 0.
    fn stop(self) -> String {
        self.stop_seen().0
    }

    /// [`stop`](Self::stop), with every line the recorder printed.
    fn stop_seen(mut self) -> (String, Vec<String>) {
        // SAFETY: kill(2) on a child we spawned and have not reaped yet.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        let summary = self.wait_for("Recorded ");
        let deadline = Instant::now() + STEP;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "the recorder did not exit after its summary"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(status.success(), "the recorder exited with {status}");
        (summary, std::mem::take(&mut self.seen))
    }
}

impl Drop for Recorder {
    /// A test that fails midway leaves no recorder behind.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn run(mut c: Command) -> String {
    let out = c.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{c:?} failed ({}):\n{text}",
        out.status
    );
    text
}

/// Every message of the bag, as the oracles decode it: (via, topic, message) per line.
fn oracle_read(bag: &Path) -> Vec<Value> {
    let out = Command::new(common::python())
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../rclev-bag/tests/oracle.py"))
        .arg("read")
        .arg(bag)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "oracle.py read failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A recording of rclpy publishers — std_msgs/String, which rclev compiles in, and
/// test_msgs/BasicTypes, which it learns from the publisher's `~/get_type_description`
/// (nothing is installed) — holds every message, and rosbags and mcap-ros2-support read
/// each one back equal to what was published.
#[test]
fn record_takes_every_message_of_rclpy_publishers() {
    in_netns(
        "record_takes_every_message_of_rclpy_publishers",
        LIMIT,
        || {
            let tmp = tempfile::tempdir().unwrap();
            let dir = bag_dir(&tmp, "from_rclpy");
            let mut c = rclev();
            c.args(["bag", "record", "-a", "-x", "rosout|parameter_events", "-o"])
                .arg(&dir);
            // The publishers come first, so that the recorder finds them (their types) as
            // ros2 bag record would; they wait for it before publishing.
            let chatter = Peer::start("rclpy_peer.py", &["talker", "chatter", "string", "50"]);
            let basic = Peer::start("rclpy_peer.py", &["talker", "basic", "basic", "50"]);
            let recorder = Recorder::start(c, &["/chatter", "/basic"]);
            chatter.finish(STEP);
            basic.finish(STEP);
            let summary = recorder.stop();
            assert!(
                summary.contains("Recorded 100 messages on 2 topics"),
                "{summary}"
            );
            assert!(summary.contains("lost: 0"), "{summary}");

            let mut info = rclev();
            info.args(["bag", "info"]).arg(&dir);
            let info = run(info);
            assert!(
                info.contains(
                    "Topic: /chatter | Type: std_msgs/msg/String | Count: 50 | Serialization \
                     Format: cdr"
                ),
                "{info}"
            );
            assert!(
                info.contains("Topic: /basic | Type: test_msgs/msg/BasicTypes | Count: 50"),
                "{info}"
            );
            assert!(info.contains("\nMessages:          100\n"), "{info}");

            let lines = oracle_read(&dir);
            for via in ["rosbags", "mcap"] {
                let of = |topic: &str| -> Vec<&Value> {
                    lines
                        .iter()
                        .filter(|l| l["via"] == via && l["topic"] == topic)
                        .map(|l| &l["msg"])
                        .collect()
                };
                let (texts, basics) = (of("/chatter"), of("/basic"));
                assert_eq!((texts.len(), basics.len()), (50, 50), "{via}");
                for i in 0..50i64 {
                    let n = i as usize;
                    assert_eq!(texts[n]["data"], format!("hello from rclpy {i}"), "{via}");
                    let b = basics[n];
                    // rclpy_peer.py's basic(i).
                    assert_eq!(b["bool_value"], i % 2 == 0, "{via} {b}");
                    assert_eq!(b["int64_value"], -(1i64 << 40) * i, "{via} {b}");
                    assert_eq!(b["uint64_value"], (1u64 << 40) * i as u64, "{via} {b}");
                    assert_eq!(b["float64_value"], -1.25 * i as f64, "{via} {b}");
                    assert_eq!(b["float32_value"], 0.5 * i as f64, "{via} {b}");
                    assert_eq!(b["int16_value"], -300 * i, "{via} {b}");
                    assert_eq!(b["uint32_value"], 70000 * i, "{via} {b}");
                    assert_eq!(b["char_value"], 65 + i % 26, "{via} {b}");
                }
            }
        },
    );
}

/// Forty topics of five types rclev does not know, from one rclpy node: each type is asked
/// of the node and learnt once (a bounded pool of askers does it), and every topic is
/// recorded whole.
#[test]
fn record_learns_each_type_once_for_many_topics() {
    in_netns(
        "record_learns_each_type_once_for_many_topics",
        LIMIT,
        || {
            const TOPICS: usize = 40;
            const EACH: usize = 5;
            const KINDS: [&str; 5] = ["BasicTypes", "Builtins", "Defaults", "Nested", "Strings"];
            let tmp = tempfile::tempdir().unwrap();
            let dir = bag_dir(&tmp, "many");
            let mut c = rclev();
            c.args(["bag", "record", "-e", "^/many_", "-o"]).arg(&dir);
            let peer = Peer::start(
                "rclpy_peer.py",
                &["many_talkers", &TOPICS.to_string(), &EACH.to_string()],
            );
            let topics: Vec<String> = (0..TOPICS).map(|i| format!("/many_{i}")).collect();
            let recorder =
                Recorder::start(c, &topics.iter().map(String::as_str).collect::<Vec<_>>());
            peer.finish(STEP);
            let (summary, seen) = recorder.stop_seen();
            assert!(
                summary.contains(&format!(
                    "Recorded {} messages on {TOPICS} topics",
                    TOPICS * EACH
                )),
                "{summary}"
            );
            assert!(summary.contains("lost: 0"), "{summary}");
            for kind in KINDS {
                let learnt = seen
                    .iter()
                    .filter(|l| l.starts_with(&format!("Learnt type test_msgs/msg/{kind} from ")))
                    .count();
                assert_eq!(
                    learnt,
                    1,
                    "{kind} learnt {learnt} times:\n{}",
                    seen.join("\n")
                );
            }

            let mut info = rclev();
            info.args(["bag", "info"]).arg(&dir);
            let info = run(info);
            for (i, topic) in topics.iter().enumerate() {
                let kind = KINDS[i % KINDS.len()];
                assert!(
                    info.contains(&format!(
                        "Topic: {topic} | Type: test_msgs/msg/{kind} | Count: {EACH} |"
                    )),
                    "{info}"
                );
            }
        },
    );
}

/// Topics whose types no node will describe (their node offers no
/// `~/get_type_description`) are not recorded, and do not hold up the others: a known topic
/// beside them is recorded whole, and Ctrl-C ends the recording at once, whatever asks are
/// queued or under way.
#[test]
fn topics_whose_types_cannot_be_learnt_hold_up_nothing() {
    in_netns(
        "topics_whose_types_cannot_be_learnt_hold_up_nothing",
        LIMIT,
        || {
            let tmp = tempfile::tempdir().unwrap();
            let dir = bag_dir(&tmp, "silent");
            // More topics than the recorder has askers.
            let silent = Peer::start("rclpy_peer.py", &["silent_talkers", "12", "40"]);
            let chatter = Peer::start("rclpy_peer.py", &["talker", "chatter", "string", "50"]);
            let mut c = rclev();
            c.args(["bag", "record", "-e", "^/(silent_|chatter$)", "-o"])
                .arg(&dir);
            let recorder = Recorder::start(c, &["/chatter"]);
            chatter.finish(STEP);
            let (summary, seen) = recorder.stop_seen();
            assert!(
                summary.contains("Recorded 50 messages on 1 topics"),
                "{summary}"
            );
            assert!(
                !seen.iter().any(|l| l.contains("/silent_")),
                "{}",
                seen.join("\n")
            );
            drop(silent);
            let mut info = rclev();
            info.args(["bag", "info"]).arg(&dir);
            let info = run(info);
            assert!(info.contains("Topic: /chatter |"), "{info}");
            assert!(!info.contains("/silent_"), "{info}");
        },
    );
}

/// A topic of a type rclev does not know, written by a DDS participant outside ROS 2 (no
/// node to ask for the type: Cyclone DDS, no `ros_discovery_info`), is not recorded, and the
/// recorder says why, once.
#[test]
fn a_topic_with_no_node_to_describe_its_type_is_said_once() {
    in_netns(
        "a_topic_with_no_node_to_describe_its_type_is_said_once",
        LIMIT,
        || {
            let tmp = tempfile::tempdir().unwrap();
            let dir = bag_dir(&tmp, "nodeless");
            let writer = Peer::start("cyclone_peer.py", &["raw_writer", "30"]);
            let mut c = rclev();
            c.args(["bag", "record", "/raw_unknown", "-o"])
                .arg(&dir)
                .stderr(Stdio::piped());
            let mut recorder = Recorder::start(c, &[]);
            let warning = recorder.wait_for("not recording /raw_unknown yet");
            assert!(
                warning.contains("rclev_nobody_msgs/msg/Unknown")
                    && warning.contains("no ROS node is known"),
                "{warning}"
            );
            let (summary, seen) = recorder.stop_seen();
            assert!(
                summary.contains("Recorded 0 messages on 0 topics"),
                "{summary}"
            );
            let said = seen
                .iter()
                .filter(|l| l.contains("not recording /raw_unknown"))
                .count();
            assert_eq!(said, 1, "{}", seen.join("\n"));
            drop(writer);
        },
    );
}

/// A recorder killed mid-recording (SIGKILL: no chance to close the bag) leaves a bag
/// `rclev bag info` still reads, up to the last complete chunk, saying it was not closed.
#[test]
fn a_killed_recorder_leaves_a_readable_bag() {
    in_netns("a_killed_recorder_leaves_a_readable_bag", LIMIT, || {
        let tmp = tempfile::tempdir().unwrap();
        let dir = bag_dir(&tmp, "killed");
        let talker = Peer::start("rclpy_peer.py", &["talker", "chatter", "string", "3000"]);
        let mut c = rclev();
        c.args(["bag", "record", "/chatter", "-o"]).arg(&dir);
        let mut recorder = Recorder::start(c, &["/chatter"]);
        // The recorder pushes a chunk to the file every second: once one is there, kill it.
        let file = dir.join("killed_0.mcap");
        let deadline = Instant::now() + STEP;
        while std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0) < 1024 {
            assert!(
                Instant::now() < deadline,
                "no chunk reached {}",
                file.display()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        recorder.child.kill().unwrap();
        recorder.child.wait().unwrap();
        drop(talker);
        assert!(!dir.join("metadata.yaml").exists());

        let mut info = rclev();
        info.args(["bag", "info"]).arg(&dir);
        let info = run(info);
        assert!(info.contains("has no metadata.yaml"), "{info}");
        assert!(info.contains("Incomplete: "), "{info}");
        let count: u64 = info
            .lines()
            .find_map(|l| l.strip_prefix("Messages:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no message count in:\n{info}"));
        assert!(count > 0, "{info}");
        assert!(
            info.contains(&format!(
                "Topic: /chatter | Type: std_msgs/msg/String | Count: {count}"
            )),
            "{info}"
        );
    });
}

/// Bad options are refused before anything is recorded.
#[test]
fn record_refuses_bad_options() {
    let tmp = tempfile::tempdir().unwrap();
    for args in [
        vec!["bag", "record"],
        vec!["bag", "record", "-e", "("],
        vec!["bag", "record", "-a", "--storage-preset-profile", "lz9"],
        vec!["bag", "record", "bad topic name"],
    ] {
        let out = rclev()
            .args(&args)
            .arg("-o")
            .arg(tmp.path().join("never"))
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?} succeeded");
        assert!(
            !tmp.path().join("never").exists(),
            "{args:?} created the bag"
        );
    }
    let existing = tmp.path().join("existing");
    std::fs::create_dir(&existing).unwrap();
    let out = rclev()
        .args(["bag", "record", "-a", "-o"])
        .arg(&existing)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("already exists"));
}

/// Over Zenoh (`RMW_IMPLEMENTATION=rmw_zenoh_cpp`, through `rclev zenoh router`), a recording
/// of `rclev topic pub` holds every message.
#[cfg(feature = "zenoh")]
#[test]
fn record_works_over_zenoh() {
    in_netns("record_works_over_zenoh", LIMIT, || {
        let zenoh = |mut c: Command| {
            c.env("RMW_IMPLEMENTATION", "rmw_zenoh_cpp")
                .env("ZENOH_ROUTER_CHECK_ATTEMPTS", "30");
            c
        };
        let mut router = zenoh(rclev())
            .args(["zenoh", "router"])
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let dir = bag_dir(&tmp, "over_zenoh");
        let mut publisher = zenoh(rclev());
        publisher.args([
            "topic",
            "pub",
            "/chatter",
            "std_msgs/msg/String",
            "{data: over zenoh}",
            "--rate",
            "20",
            "--times",
            "20",
        ]);
        let publisher = publisher.spawn().unwrap();
        let mut c = zenoh(rclev());
        c.args(["bag", "record", "/chatter", "-o"]).arg(&dir);
        let recorder = Recorder::start(c, &["/chatter"]);
        let out = publisher.wait_with_output().unwrap();
        assert!(out.status.success());
        let summary = recorder.stop();
        assert!(
            summary.contains("Recorded 20 messages on 1 topics"),
            "{summary}"
        );
        let lines = oracle_read(&dir);
        let texts: Vec<&Value> = lines
            .iter()
            .filter(|l| l["via"] == "rosbags")
            .map(|l| &l["msg"]["data"])
            .collect();
        assert_eq!(texts, vec!["over zenoh"; 20]);
        let _ = router.kill();
        let _ = router.wait();
    });
}
