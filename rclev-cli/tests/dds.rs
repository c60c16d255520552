//! `rclev topic echo` and `rclev topic pub` over DDS, against a real rclpy node and against
//! each other, each test in a network namespace of its own (built with `--features dds`).

#![cfg(feature = "dds")]

#[path = "../../rclev-dds/tests/common/mod.rs"]
mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::{in_netns, Peer};

const LIMIT: Duration = Duration::from_secs(60);

fn rclev() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rclev"));
    c.stdout(Stdio::piped()).stderr(Stdio::inherit());
    c
}

/// Runs a command to its end (at most `limit`) and returns its stdout; panics if it failed.
fn output(mut c: Command, limit: Duration) -> String {
    let child = c.spawn().unwrap();
    let id = child.id();
    let killer = std::thread::spawn(move || {
        std::thread::sleep(limit);
        // SAFETY: kill(2) on a pid we spawned; if it already exited the call fails harmlessly
        // (the pid cannot be reused before `wait_with_output` below reaps it).
        unsafe { libc::kill(id as i32, libc::SIGKILL) };
    });
    let out = child.wait_with_output().unwrap();
    drop(killer);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{c:?} failed ({}):\n{text}",
        out.status
    );
    text
}

#[test]
fn topic_pub_reaches_an_rclpy_listener() {
    in_netns("topic_pub_reaches_an_rclpy_listener", LIMIT, || {
        let listener = Peer::start("rclpy_peer.py", &["listener", "chatter", "string", "3"]);
        // The listener checks "hello from rclpy {i}" for i = 0, 1, 2: publish those three.
        let mut outs = Vec::new();
        for i in 0..3 {
            let mut c = rclev();
            c.args([
                "topic",
                "pub",
                "/chatter",
                "std_msgs/msg/String",
                &format!("{{data: hello from rclpy {i}}}"),
                "--once",
            ]);
            outs.push(output(c, LIMIT));
        }
        assert!(
            outs[0].contains("publishing #1: {data: hello from rclpy 0}"),
            "{outs:?}"
        );
        let out = listener.finish(LIMIT);
        assert!(out.contains("listener: received 3"), "{out}");
    });
}

#[test]
fn topic_echo_prints_what_rclpy_publishes() {
    in_netns("topic_echo_prints_what_rclpy_publishes", LIMIT, || {
        let talker = Peer::start("rclpy_peer.py", &["talker", "chatter", "string", "3"]);
        let mut c = rclev();
        // No type given: found from the publisher.
        c.args(["topic", "echo", "/chatter", "--count", "3"]);
        let out = output(c, LIMIT);
        assert_eq!(
            out,
            "data: hello from rclpy 0\n---\ndata: hello from rclpy 1\n---\ndata: hello from rclpy 2\n---\n"
        );
        talker.finish(LIMIT);
    });
}

#[test]
fn topic_echo_and_pub_talk_across_processes() {
    in_netns("topic_echo_and_pub_talk_across_processes", LIMIT, || {
        let mut echo = rclev();
        echo.args([
            "topic",
            "echo",
            "pose",
            "geometry_msgs/msg/PoseStamped",
            "--once",
        ]);
        let echo = echo.spawn().unwrap();
        let mut publisher = rclev();
        publisher
            .args([
                "topic",
                "pub",
                "pose",
                "geometry_msgs/msg/PoseStamped",
                "{header: {frame_id: map}, pose: {position: {x: 1.5}}}",
                "-r",
                "20",
            ])
            .stdout(Stdio::null());
        let mut publisher = publisher.spawn().unwrap();
        let out = echo.wait_with_output().unwrap();
        publisher.kill().unwrap();
        publisher.wait().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success());
        assert!(
            text.starts_with("header:\n  stamp:\n    sec: 0\n    nanosec: 0\n  frame_id: map\npose:\n  position:\n    x: 1.5\n"),
            "{text}"
        );
        assert!(text.contains("    w: 1.0\n---\n"), "{text}");
    });
}

#[test]
fn unknown_types_and_bad_yaml_are_clear_errors() {
    let out = Command::new(env!("CARGO_BIN_EXE_rclev"))
        .args(["topic", "pub", "/x", "nope_msgs/msg/Nope", "{}"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("'nope_msgs/msg/Nope' is not one rclev knows"));
    let out = Command::new(env!("CARGO_BIN_EXE_rclev"))
        .args(["topic", "pub", "/x", "std_msgs/msg/Int32", "{data: many}"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("data: an integer expected"));
}

#[test]
fn a_topic_name_ros_2_refuses_is_a_clear_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_rclev"))
        .args([
            "topic",
            "pub",
            "bad name",
            "std_msgs/msg/String",
            "{}",
            "--once",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("invalid topic name"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
