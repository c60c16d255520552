//! `rclev topic echo` and `rclev topic pub` over DDS, against a real rclpy node and against
//! each other, each test in a network namespace of its own (built with `--features dds`).

#![cfg(feature = "dds")]

#[path = "../../rclev-dds/tests/common/mod.rs"]
mod common;
mod support;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::{in_netns, Peer};
use support::{interrupted_at, KilledOnDrop, Moment};

const LIMIT: Duration = Duration::from_secs(60);

/// The venv's prefix: its `share/` holds the Jazzy interface packages (test_msgs among them)
/// that the tools read at run time, as from a sourced ROS 2 installation.
fn venv_prefix() -> std::path::PathBuf {
    common::python()
        .parent()
        .and_then(|bin| bin.parent())
        .unwrap()
        .to_path_buf()
}

fn rclev() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rclev"));
    c.stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .env("AMENT_PREFIX_PATH", venv_prefix());
    c
}

/// `rclev <args>`.
fn rclev_with(args: &[&str]) -> Command {
    let mut c = rclev();
    c.args(args);
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

/// Issue 25: `topic echo` of another type than the publishers' says so (DDS never matches
/// them, so nothing would ever be printed) with the types and the publisher's node, and keeps
/// waiting, as `ros2 topic echo` does; Ctrl-C then ends it cleanly.
#[test]
fn topic_echo_of_another_type_warns_and_keeps_waiting() {
    use std::io::{BufRead, BufReader};
    in_netns(
        "topic_echo_of_another_type_warns_and_keeps_waiting",
        LIMIT,
        || {
            let talker = Peer::start(
                "rclpy_peer.py",
                &["talker", "chatter", "string", "3000", "10", "0"],
            );
            let mut child = rclev()
                .args(["topic", "echo", "/chatter", "std_msgs/Int32"])
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let stderr = BufReader::new(child.stderr.take().unwrap());
            let warning = stderr
                .lines()
                .map(Result::unwrap)
                .find(|l| l.contains("Incompatible type"))
                .expect("a warning before stderr closed");
            assert_eq!(
                warning,
                "rclev: warning: Incompatible type on topic '/chatter': the publisher of node \
             /rclpy_talker offers std_msgs/msg/String, not std_msgs/msg/Int32; no messages will \
             be received from it (still waiting for a std_msgs/msg/Int32 publisher; Ctrl-C to \
             stop)"
            );
            // SAFETY: kill(2) on a child we spawned and have not reaped yet.
            unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success(), "{}", out.status);
            assert_eq!(
                String::from_utf8_lossy(&out.stdout),
                "",
                "nothing was echoed"
            );
            drop(talker);
        },
    );
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

/// Runs `rclev <args>` (with the venv's installed types), expecting it to fail before it
/// touches the network; returns its stderr.
fn refused(args: &[&str]) -> String {
    let out = rclev().args(args).stderr(Stdio::piped()).output().unwrap();
    assert!(!out.status.success(), "rclev {args:?} succeeded");
    String::from_utf8_lossy(&out.stderr).to_string()
}

#[test]
fn unknown_types_and_bad_yaml_are_clear_errors() {
    assert_has(
        &refused(&["topic", "pub", "/x", "nope_msgs/msg/Nope", "{}"]),
        "'nope_msgs/msg/Nope' is not one rclev knows",
    );
    assert_has(
        &refused(&["topic", "pub", "/x", "std_msgs/msg/Int32", "{data: many}"]),
        "data: an integer expected",
    );
}

/// Issue 25: an unknown type is one sentence (no repetition) offering the closest known names
/// of the kind the command takes — typos, the same name in other packages, installed types
/// (test_msgs, from AMENT_PREFIX_PATH) as well as rclev's own — and a name of another kind is
/// pointed out.
#[test]
fn unknown_types_suggest_the_closest_known_names() {
    let cases: [(&[&str], &str); 6] = [
        (
            &["topic", "pub", "/x", "std_msgs/msg/Strin", "{}"],
            "error: message type 'std_msgs/msg/Strin' is not one rclev knows (neither shipped \
             with rclev nor installed under AMENT_PREFIX_PATH); did you mean std_msgs/msg/String?",
        ),
        (
            &["topic", "echo", "/x", "nope_msgs/String"],
            "error: message type 'nope_msgs/msg/String' is not one rclev knows (neither shipped \
             with rclev nor installed under AMENT_PREFIX_PATH); did you mean one of \
             std_msgs/msg/String, example_interfaces/msg/String?",
        ),
        (
            &["topic", "pub", "/x", "test_msgs/msg/BasicTipes", "{}"],
            "error: message type 'test_msgs/msg/BasicTipes' is not one rclev knows (neither \
             shipped with rclev nor installed under AMENT_PREFIX_PATH); did you mean \
             test_msgs/msg/BasicTypes?",
        ),
        (
            &["service", "call", "/x", "std_srvs/srv/Trgger"],
            "error: service type 'std_srvs/srv/Trgger' is not one rclev knows (neither shipped \
             with rclev nor installed under AMENT_PREFIX_PATH); did you mean std_srvs/srv/Trigger?",
        ),
        (
            &["action", "send_goal", "/fib", "test_msgs/Fibonaci", "{}"],
            "error: action type 'test_msgs/action/Fibonaci' is not one rclev knows (neither \
             shipped with rclev nor installed under AMENT_PREFIX_PATH); did you mean \
             test_msgs/action/Fibonacci?",
        ),
        (
            &["topic", "pub", "/x", "example_interfaces/AddTwoInts", "{}"],
            "error: message type 'example_interfaces/msg/AddTwoInts' is not one rclev knows \
             (neither shipped with rclev nor installed under AMENT_PREFIX_PATH); \
             example_interfaces/srv/AddTwoInts is a service type",
        ),
    ];
    for (args, expected) in cases {
        assert_eq!(refused(args).trim_end(), expected, "rclev {args:?}");
    }
    assert_has(
        &refused(&["service", "call", "/x", "std_msgs/msg/String"]),
        "'std_msgs/msg/String' names a message type; a service type is expected",
    );
    assert_has(
        &refused(&["topic", "pub", "/x", "String", "{}"]),
        "'String' is not a message type name: expected pkg/msg/Name or pkg/Name",
    );
}

/// Issue 25: ros2's short form `pkg/Name` is taken wherever a type is, as the kind the verb
/// implies: `topic echo|pub` messages, `service call` services, `action send_goal` actions.
#[test]
fn short_type_names_are_taken_as_the_verb_implies() {
    in_netns(
        "short_type_names_are_taken_as_the_verb_implies",
        LIMIT,
        || {
            let talker = Peer::start(
                "rclpy_peer.py",
                &["talker", "chatter", "string", "3000", "10", "0"],
            );
            assert_has(
                &run_ok(&["topic", "echo", "/chatter", "std_msgs/String", "--once"]),
                "data: hello from rclpy ",
            );
            drop(talker);
            let listener = Peer::start("rclpy_peer.py", &["listener", "chatter", "string", "1"]);
            run_ok(&[
                "topic",
                "pub",
                "/chatter",
                "std_msgs/String",
                "{data: hello from rclpy 0}",
                "--once",
            ]);
            assert_has(&listener.finish(LIMIT), "listener: received 1");
            let server = Peer::start("rclpy_peer.py", &["param_server", "60"]);
            let call = run_ok(&[
                "service",
                "call",
                "/rclpy_param_server/get_parameters",
                "rcl_interfaces/GetParameters",
                "{names: [label]}",
            ]);
            assert_has(&call, "  string_value: rclpy\n");
            drop(server);
            let actions = Peer::start("rclpy_peer.py", &["action_server", "fib"]);
            let goal = run_ok(&[
                "action",
                "send_goal",
                "/fib",
                "test_msgs/Fibonacci",
                "{order: 2}",
            ]);
            assert_has(&goal, "Goal finished with status: SUCCEEDED\n");
            drop(actions);
        },
    );
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

/// Runs `rclev <args>` to its end and returns its stdout (panics if it failed).
fn run_ok(args: &[&str]) -> String {
    let mut c = rclev();
    c.args(args);
    output(c, LIMIT)
}

/// Runs `rclev <args>`, expecting it to fail; returns its stderr.
fn run_err(args: &[&str]) -> String {
    let out = rclev().args(args).stderr(Stdio::piped()).output().unwrap();
    assert!(!out.status.success(), "rclev {args:?} succeeded");
    String::from_utf8_lossy(&out.stderr).to_string()
}

/// Runs `rclev <args>` until it succeeds with every one of `needles` in its output (at most
/// 10 times: peers still starting, or heard only at their next announcement), and returns
/// that output.
fn run_until(args: &[&str], needles: &[&str]) -> String {
    for _ in 0..10 {
        let out = rclev().args(args).stderr(Stdio::null()).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        if out.status.success() && needles.iter().all(|n| text.contains(n)) {
            return text;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    // The last try again, failing with its output.
    run_ok(args)
}

fn assert_has(out: &str, line: &str) {
    assert!(out.contains(line), "{line:?} missing from:\n{out}");
}

/// `node`, `topic list|info|hz|bw`, `service` and `param` against a real rclpy node.
#[test]
fn graph_and_param_verbs_against_an_rclpy_node() {
    in_netns("graph_and_param_verbs_against_an_rclpy_node", LIMIT, || {
        let server = Peer::start("rclpy_peer.py", &["param_server", "60"]);
        let talker = Peer::start(
            "rclpy_peer.py",
            &["talker", "chatter", "string", "3000", "10", "0"],
        );
        // The peers take a moment to start (Python imports): look until they are up.
        let nodes = run_until(
            &["node", "list"],
            &["/rclpy_param_server\n", "/rclpy_talker\n"],
        );
        assert_has(&nodes, "/rclpy_param_server\n");
        assert_has(&nodes, "/rclpy_talker\n");
        let info = run_until(
            &["node", "info", "/rclpy_param_server"],
            &["get_parameters"],
        );
        assert_has(&info, "/rclpy_param_server\n  Subscribers:\n    /parameter_events: rcl_interfaces/msg/ParameterEvent\n  Publishers:");
        assert_has(
            &info,
            "    /rclpy_param_server/get_parameters: rcl_interfaces/srv/GetParameters\n",
        );
        assert_has(
            &run_err(&["node", "info", "/nobody"]),
            "Unable to find node '/nobody'",
        );

        let topics = run_until(&["topic", "list", "-t"], &["/chatter"]);
        assert_has(&topics, "/chatter [std_msgs/msg/String]\n");
        assert_has(
            &topics,
            "/parameter_events [rcl_interfaces/msg/ParameterEvent]\n",
        );
        let info = run_until(
            &["topic", "info", "/chatter", "-v"],
            &["Node name: rclpy_talker"],
        );
        assert_has(&info, "Type: std_msgs/msg/String\n");
        assert_has(&info, "Publisher count: 1\n");
        assert_has(&info, "Node name: rclpy_talker\n");
        assert_has(&info, "Endpoint type: PUBLISHER\n");
        assert_has(&info, "  Reliability: RELIABLE\n");
        let hz = run_ok(&["topic", "hz", "/chatter", "--reports", "2"]);
        assert_has(&hz, "average rate: ");
        assert_has(&hz, "window: ");
        let bw = run_ok(&["topic", "bw", "/chatter", "--reports", "1"]);
        assert_has(&bw, "Subscribed to [/chatter]\n");
        assert_has(&bw, "Message size mean: 32 B");

        let services = run_until(
            &["service", "list", "-t"],
            &["/rclpy_param_server/set_parameters"],
        );
        assert_has(
            &services,
            "/rclpy_param_server/set_parameters [rcl_interfaces/srv/SetParameters]\n",
        );
        assert_eq!(
            run_until(
                &["service", "type", "/rclpy_param_server/list_parameters"],
                &["ListParameters"]
            ),
            "rcl_interfaces/srv/ListParameters\n"
        );

        let call = run_ok(&[
            "service",
            "call",
            "/rclpy_param_server/get_parameters",
            "rcl_interfaces/srv/GetParameters",
            "{names: [label]}",
        ]);
        assert_has(&call, "requester: making request: {names: [label]}\n");
        assert_has(&call, "response:\nvalues:\n- type: 4\n");
        assert_has(&call, "  string_value: rclpy\n");

        let list = run_ok(&["param", "list", "/rclpy_param_server"]);
        assert_has(&list, "  gain\n  label\n");
        assert_eq!(
            run_ok(&["param", "get", "/rclpy_param_server", "gain"]),
            "Integer value is: 3\n"
        );
        assert_eq!(
            run_ok(&["param", "set", "/rclpy_param_server", "gain", "9"]),
            "Set parameter successful\n"
        );
        assert_has(
            &run_err(&["param", "set", "/rclpy_param_server", "gain", "7"]),
            "Setting parameter failed: seven is unlucky",
        );
        assert_eq!(
            run_ok(&["param", "get", "rclpy_param_server", "gain"]),
            "Integer value is: 9\n"
        );
        assert_has(
            &run_ok(&["param", "describe", "/rclpy_param_server", "gain"]),
            "Parameter name: gain\n  Type: integer\n",
        );
        let dump = run_ok(&["param", "dump", "/rclpy_param_server"]);
        assert_has(&dump, "/rclpy_param_server:\n  ros__parameters:\n");
        assert_has(&dump, "    gain: 9\n    label: 'rclpy'\n");
        assert_has(
            &run_err(&["param", "get", "/nobody", "gain"]),
            "Node not found: /nobody",
        );
        drop(talker);
        assert_has(&server.interrupt(LIMIT), "param_server: gain=9");
    });
}

/// `action list|info` against an rclpy action server, and Ctrl-C ending `topic echo` and
/// `topic hz` cleanly (exit status 0).
#[test]
fn action_verbs_and_ctrl_c() {
    in_netns("action_verbs_and_ctrl_c", LIMIT, || {
        let server = Peer::start("rclpy_peer.py", &["action_server", "fib"]);
        let listed = run_until(&["action", "list", "-t"], &["/fib"]);
        assert_has(&listed, "/fib [test_msgs/action/Fibonacci]\n");
        let info = run_until(&["action", "info", "/fib"], &["/rclpy_action_server"]);
        assert_has(
            &info,
            "Action: /fib\nAction clients: 0\nAction servers: 1\n    /rclpy_action_server\n",
        );
        assert_has(
            &run_err(&["action", "info", "/nothing"]),
            "Unknown action '/nothing'",
        );
        // test_msgs is not one of rclev's generated packages: its definitions are read from
        // the installation (AMENT_PREFIX_PATH), as ros2 reads them.
        let goal = run_ok(&[
            "action",
            "send_goal",
            "/fib",
            "test_msgs/action/Fibonacci",
            "{order: 4}",
            "--feedback",
        ]);
        assert_has(&goal, "Sending goal:\n     order: 4\n");
        assert_has(&goal, "Goal accepted with ID: ");
        assert_has(
            &goal,
            "Feedback:\n    sequence:\n    - 0\n    - 1\n    - 1\n",
        );
        assert_has(
            &goal,
            "Result:\n    sequence:\n    - 0\n    - 1\n    - 1\n    - 2\n    - 3\n",
        );
        assert_has(&goal, "Goal finished with status: SUCCEEDED\n");
        assert_has(
            &run_err(&["action", "send_goal", "/fib", "nope_msgs/action/Nope", "{}"]),
            "is not one rclev knows",
        );
        drop(server);
        let talker = Peer::start(
            "rclpy_peer.py",
            &["talker", "basic", "basic", "300", "10", "0"],
        );
        let echoed = run_ok(&[
            "topic",
            "echo",
            "/basic",
            "test_msgs/msg/BasicTypes",
            "--once",
        ]);
        assert_has(&echoed, "int64_value: ");
        assert_has(&echoed, "char_value: ");
        drop(talker);
        for args in [
            &["topic", "echo", "/quiet", "std_msgs/msg/String"][..],
            &["topic", "pub", "/quiet", "std_msgs/msg/String", "{data: x}"][..],
        ] {
            let child = rclev().args(args).spawn().unwrap();
            std::thread::sleep(Duration::from_secs(2));
            // SAFETY: kill(2) on a child we spawned and have not reaped yet.
            unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "rclev {args:?} after Ctrl-C: {}",
                out.status
            );
        }
    });
}

/// `rclev interface show` prints the definitions of the files the ROS 2 Jazzy wheels ship (the
/// oracle venv's `share/`): the same fields, constants and defaults line for line (rclev vendors
/// them without comments), with nested types expanded below them.
#[test]
fn interface_show_prints_the_official_definitions() {
    let share = common::python()
        .parent()
        .and_then(|bin| bin.parent())
        .unwrap()
        .join("share");
    // Definition lines: comments, blank lines and runs of spaces left out.
    let contract = |text: &str| -> Vec<String> {
        text.lines()
            .map(|l| {
                l.split('#')
                    .next()
                    .unwrap_or("")
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .filter(|l| !l.is_empty())
            .collect()
    };
    for name in [
        "std_msgs/msg/String",
        "geometry_msgs/msg/PoseStamped",
        "rcl_interfaces/msg/Log",
        "rcl_interfaces/srv/SetParameters",
        "action_msgs/srv/CancelGoal",
        "sensor_msgs/msg/Imu",
    ] {
        let kind = name.split('/').nth(1).unwrap();
        let official = std::fs::read_to_string(share.join(format!("{name}.{kind}")))
            .unwrap_or_else(|e| panic!("{name}: {e} (bash .ci/oracles installs the venv)"));
        let shown = run_ok(&["interface", "show", name]);
        // The top level: lines not indented (nested types are, by a tab per level).
        let top: String = shown
            .lines()
            .filter(|l| !l.starts_with('\t'))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(contract(&top), contract(&official), "{name}:\n{shown}");
    }
    let pose = run_ok(&["interface", "show", "geometry_msgs/msg/PoseStamped"]);
    assert_has(
        &pose,
        "std_msgs/Header header\n\tbuiltin_interfaces/Time stamp\n\t\tint32 sec\n",
    );
    assert!(run_ok(&["interface", "list"]).contains("std_msgs/msg/String\n"));
    assert_has(
        &run_err(&["interface", "show", "nope/msg/Nope"]),
        "error: message type 'nope/msg/Nope' is not one rclev ships",
    );
}

/// One Ctrl-C ends `topic hz` cleanly (exit 0), whenever it comes: during the DDS set-up,
/// while it waits for a publisher, while the publisher is silent, between reports; it used to
/// exit 1 ("interrupted") or, for a second Ctrl-C pressed after a wait that ignored the first,
/// 130. The other commands that run until Ctrl-C are interrupted at the same kinds of moment.
#[test]
fn ctrl_c_ends_the_long_running_verbs_cleanly_at_any_moment() {
    use Moment::{After, AtOnce};
    in_netns(
        "ctrl_c_ends_the_long_running_verbs_cleanly_at_any_moment",
        Duration::from_secs(180),
        || {
            // A publisher of /chatter at 20 Hz (rclev's own: it runs until interrupted), a
            // node with a publisher that sends nothing (/peer_ns/chatter), an action server.
            let mut talker = KilledOnDrop(Some(
                rclev()
                    .args(["topic", "pub", "/chatter", "std_msgs/String", "{data: hi}"])
                    .args(["-r", "20"])
                    .stdout(Stdio::null())
                    .spawn()
                    .unwrap(),
            ));
            let silent = Peer::start("rclpy_peer.py", &["stay", "90"]);
            let hz = |topic: &'static str| vec!["topic", "hz", topic];
            let mut runs: Vec<(Vec<&str>, Moment)> = Vec::new();
            // 20 of `topic hz`.
            for _ in 0..4 {
                runs.push((hz("/chatter"), AtOnce));
            }
            for _ in 0..3 {
                runs.push((hz("/nobody"), AtOnce));
            }
            let not_yet = "does not appear to be published yet";
            runs.push((hz("/nobody"), After(true, not_yet, 1)));
            runs.push((hz("/peer_ns/chatter"), AtOnce));
            for n in [1, 1, 2] {
                runs.push((hz("/peer_ns/chatter"), After(false, "no new messages", n)));
            }
            for n in [1, 1, 1, 2, 2, 2, 3, 4] {
                runs.push((hz("/chatter"), After(false, "average rate", n)));
            }
            // The others.
            let bw = vec!["topic", "bw", "/chatter"];
            runs.push((bw.clone(), AtOnce));
            runs.push((bw, After(false, " from ", 1)));
            let echo = vec!["topic", "echo", "/chatter"];
            runs.push((echo.clone(), AtOnce));
            runs.push((echo, After(false, "data: hi", 2)));
            runs.push((vec!["topic", "echo", "/nobody", "std_msgs/String"], AtOnce));
            let publish = vec!["topic", "pub", "/other", "std_msgs/String", "{data: x}"];
            runs.push((publish.clone(), AtOnce));
            runs.push((publish.clone(), After(false, "publishing #1", 1)));
            let mut waiting = publish;
            waiting.extend(["-w", "1"]);
            runs.push((waiting, After(false, "Waiting for at least", 1)));
            let no_server = vec![
                "action",
                "send_goal",
                "/nofib",
                "test_msgs/Fibonacci",
                "{order: 3}",
            ];
            runs.push((no_server.clone(), AtOnce));
            runs.push((no_server, After(false, "Waiting for an action server", 1)));
            for (args, moment) in &runs {
                interrupted_at(rclev_with(args), args, *moment);
            }
            // A goal that runs 2 s (40 steps of 50 ms), interrupted at its first feedback.
            let server = Peer::start("rclpy_peer.py", &["action_server", "fib"]);
            let goal_args = [
                "action",
                "send_goal",
                "/fib",
                "test_msgs/Fibonacci",
                "{order: 40}",
                "--feedback",
            ];
            let (goal, _) = interrupted_at(
                rclev_with(&goal_args),
                &goal_args,
                After(false, "Feedback:", 1),
            );
            assert_has(&goal, "Goal accepted with ID: ");
            drop(server);
            drop(silent);
            // The talker, too, ends cleanly on Ctrl-C.
            let mut talker = talker.0.take().unwrap();
            // SAFETY: kill(2) on a child we spawned and have not reaped yet.
            unsafe { libc::kill(talker.id() as i32, libc::SIGINT) };
            let status = talker.wait().unwrap();
            assert!(status.success(), "topic pub: {status}");
        },
    );
}

/// `node info` of the `stay` peer's first node, complete.
const STAY_NODE_INFO: &str = "/rclpy_stay
  Subscribers:
  Publishers:
    /parameter_events: rcl_interfaces/msg/ParameterEvent
    /rosout: rcl_interfaces/msg/Log
  Service Servers:
    /rclpy_stay/describe_parameters: rcl_interfaces/srv/DescribeParameters
    /rclpy_stay/get_parameter_types: rcl_interfaces/srv/GetParameterTypes
    /rclpy_stay/get_parameters: rcl_interfaces/srv/GetParameters
    /rclpy_stay/get_type_description: type_description_interfaces/srv/GetTypeDescription
    /rclpy_stay/list_parameters: rcl_interfaces/srv/ListParameters
    /rclpy_stay/set_parameters: rcl_interfaces/srv/SetParameters
    /rclpy_stay/set_parameters_atomically: rcl_interfaces/srv/SetParametersAtomically
  Service Clients:
  Action Servers:
  Action Clients:
";

/// `topic list -t` with the `stay` peer (and `param_server`, which adds no topic), complete.
const STAY_TOPICS: &str = "/parameter_events [rcl_interfaces/msg/ParameterEvent]
/peer_ns/chatter [std_msgs/msg/String]
/rosout [rcl_interfaces/msg/Log]
";

/// `node list` with the `stay` and `param_server` peers on the graph, complete.
const TWO_PEERS_NODES: &str = "/peer_ns/other\n/rclpy_param_server\n/rclpy_stay\n";

/// Issue 27: a fresh invocation of a graph verb never answers with less than the graph holds.
/// Each is a new participant, which a peer sometimes hears only at a periodic announcement,
/// up to ~3 s later: by default the verbs listen a whole announcement period and a margin (a
/// verb about one named node stops once it has found it whole). Ten each of `node info`,
/// `topic list -t` and `node list` in turn, then six at once, against two rclpy processes:
/// every answer complete. (The verbs used to stop once the peers heard had settled: 13 of 104
/// such answers missed one of two rclpy processes.)
#[test]
fn fresh_graph_queries_answer_completely() {
    in_netns(
        "fresh_graph_queries_answer_completely",
        Duration::from_secs(300),
        || {
            let peer = Peer::start("rclpy_peer.py", &["stay", "200"]);
            let other = Peer::start("rclpy_peer.py", &["param_server", "200"]);
            // The peers take a moment to start (Python imports): look until all is up.
            run_until(&["node", "list"], &[TWO_PEERS_NODES]);
            run_until(&["topic", "list", "-t"], &["/peer_ns/chatter"]);
            for run in 0..10 {
                assert_eq!(
                    run_ok(&["node", "info", "/rclpy_stay"]),
                    STAY_NODE_INFO,
                    "node info, run {run}"
                );
                assert_eq!(
                    run_ok(&["topic", "list", "-t"]),
                    STAY_TOPICS,
                    "topic list -t, run {run}"
                );
                assert_eq!(
                    run_ok(&["node", "list"]),
                    TWO_PEERS_NODES,
                    "node list, run {run}"
                );
            }
            let at_once: Vec<_> = (0..6)
                .map(|i| {
                    let args: &[&str] = if i % 2 == 0 {
                        &["node", "info", "/rclpy_stay"]
                    } else {
                        &["topic", "list", "-t"]
                    };
                    (i, rclev().args(args).spawn().unwrap())
                })
                .collect();
            for (i, child) in at_once {
                let out = child.wait_with_output().unwrap();
                assert!(out.status.success(), "at once, {i}: {}", out.status);
                let expected = if i % 2 == 0 {
                    STAY_NODE_INFO
                } else {
                    STAY_TOPICS
                };
                assert_eq!(
                    String::from_utf8_lossy(&out.stdout),
                    expected,
                    "at once, {i}"
                );
            }
            drop(peer);
            drop(other);
        },
    );
}

/// `--no-wait` and `--wait <seconds>` are taken by the graph verbs, not together; a node
/// that is not there is still reported as ros2 reports it.
#[test]
fn graph_verbs_take_wait_flags() {
    in_netns("graph_verbs_take_wait_flags", LIMIT, || {
        assert_has(
            &run_err(&["topic", "list", "--no-wait", "--wait", "2"]),
            "cannot be used with",
        );
        assert_has(
            &run_err(&["node", "list", "--wait", "soon"]),
            "'soon' is not a number of seconds",
        );
        for args in [
            &["node", "list", "--no-wait"][..],
            &["topic", "list", "--wait", "0.5"],
            &["topic", "info", "/x", "--no-wait"],
            &["service", "list", "--no-wait"],
            &["service", "type", "/x", "--no-wait"],
            &["action", "list", "--wait", "0"],
            &["action", "info", "/x", "--no-wait"],
            &["lifecycle", "nodes", "--no-wait"],
            &["lifecycle", "get", "--wait", "0.2"],
        ] {
            // Nothing on this graph: the lists are empty, the named things unknown.
            let out = rclev().args(args).stderr(Stdio::piped()).output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                out.status.success() || stderr.contains("Unknown"),
                "rclev {args:?}: {stderr}"
            );
            assert_eq!(String::from_utf8_lossy(&out.stdout), "", "rclev {args:?}");
        }
        assert_has(
            &run_err(&["node", "info", "/nobody", "--no-wait"]),
            "Unable to find node '/nobody'",
        );
    });
}

/// `rclev <args>` with no interface packages installed (`AMENT_PREFIX_PATH` unset): only the
/// types rclev ships, and those it learns from nodes.
fn rclev_bare(args: &[&str]) -> Command {
    let mut c = rclev();
    c.args(args).env_remove("AMENT_PREFIX_PATH");
    c
}

/// The defect: `service call` and `topic echo` of a type rclev does not ship said "source the
/// ROS 2 setup first" when nothing was installed — there was nothing to source. They now learn
/// the type from a node that uses it (its `~/get_type_description`, as `bag record` does),
/// and say how to point rclev at interface files when no node can tell (a service type over
/// DDS: tests/zenoh.rs learns one over Zenoh).
#[test]
fn types_rclev_does_not_know_are_learnt_from_the_nodes_that_use_them() {
    in_netns(
        "types_rclev_does_not_know_are_learnt_from_the_nodes_that_use_them",
        Duration::from_secs(180),
        || {
            // A test_msgs/BasicTypes talker (test_msgs ships with rclpy, not with rclev).
            let talker = Peer::start("rclpy_peer.py", &["talker", "learn_t", "basic", "3"]);
            let out = rclev_bare(&["topic", "echo", "/learn_t", "--once"])
                .stderr(Stdio::piped())
                .output()
                .unwrap();
            let (stdout, stderr) = (
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr),
            );
            assert!(out.status.success(), "{stdout}\n{stderr}");
            assert!(stdout.contains("int64_value: 0\n"), "{stdout}");
            assert!(
                stderr.contains("learnt type test_msgs/msg/BasicTypes from node /rclpy_"),
                "{stderr}"
            );
            talker.finish(LIMIT);

            // topic pub of it, learnt from the subscribing node.
            let listener = Peer::start("rclpy_peer.py", &["listener", "learn_p", "basic", "1"]);
            let out = rclev_bare(&[
                "topic",
                "pub",
                "/learn_p",
                "test_msgs/msg/BasicTypes",
                "{bool_value: true, byte_value: 0, char_value: 65}",
                "--once",
            ])
            .stderr(Stdio::piped())
            .output()
            .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{stderr}");
            assert!(
                stderr.contains("learnt type test_msgs/msg/BasicTypes from node /rclpy_"),
                "{stderr}"
            );
            let heard = listener.finish(LIMIT);
            assert!(heard.contains("got 0 0.0 0\n"), "{heard}");

            // Its service cannot be learnt over DDS (the server announces its request's hash,
            // which its node does not describe): said plainly, with where to put the files.
            let server = Peer::start("rclpy_peer.py", &["server", "learn_s", "1"]);
            let out = rclev_bare(&[
                "service",
                "call",
                "/learn_s",
                "test_msgs/srv/BasicTypes",
                "{int64_value: 41, string_value: hi}",
            ])
            .stderr(Stdio::piped())
            .output()
            .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success());
            assert!(
                stderr.contains("cannot learn a service type from it (over Zenoh it can)"),
                "{stderr}"
            );
            assert!(stderr.contains("AMENT_PREFIX_PATH"), "{stderr}");
            drop(server);

            // Nobody to learn from: the error says where rclev looks for interface files.
            let out = rclev_bare(&["topic", "echo", "/nobody", "test_msgs/msg/BasicTypes"])
                .stderr(Stdio::piped())
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success());
            assert!(
                stderr.contains("share/<package>/{msg,srv,action}"),
                "{stderr}"
            );
            assert!(!stderr.contains("source the ROS 2"), "{stderr}");
        },
    );
}
