//! `rclev lifecycle nodes|list|get|set` over DDS against an rclpy `rclpy.lifecycle.LifecycleNode`
//! (`lifecycle_peer.py node`) and against an rclev managed node, each test in a network
//! namespace of its own (built with `--features dds`). Outputs are `ros2 lifecycle`'s.

#![cfg(feature = "dds")]

#[path = "../../rclev-dds/tests/common/mod.rs"]
mod common;

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use common::{in_netns, Peer};

const LIMIT: Duration = Duration::from_secs(240);
const EACH: Duration = Duration::from_secs(60);

fn rclev() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rclev"));
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    c
}

/// Runs `rclev <args>` to its end (killed after [`EACH`]): (success, stdout, stderr).
fn run(args: &[&str]) -> (bool, String, String) {
    let child = rclev().args(args).spawn().unwrap();
    let id = child.id();
    let killer = std::thread::spawn(move || {
        std::thread::sleep(EACH);
        // SAFETY: kill(2) on a pid we spawned; if it already exited the call fails harmlessly
        // (the pid cannot be reused before `wait_with_output` below reaps it).
        unsafe { libc::kill(id as i32, libc::SIGKILL) };
    });
    let out = child.wait_with_output().unwrap();
    drop(killer);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// `rclev <args>`'s stdout; it must succeed.
fn run_ok(args: &[&str]) -> String {
    let (ok, out, err) = run(args);
    assert!(ok, "rclev {args:?} failed:\n{out}\n{err}");
    out
}

/// `rclev <args>`'s stderr; it must fail.
fn run_err(args: &[&str]) -> String {
    let (ok, out, err) = run(args);
    assert!(!ok, "rclev {args:?} succeeded:\n{out}");
    err
}

/// Runs `rclev <args>` until its stdout is `expected` (at most 10 times: the peer may still be
/// starting, or be heard only at its next announcement), and returns that stdout.
fn run_until(args: &[&str], expected: &str) -> String {
    for _ in 0..10 {
        let (ok, out, _) = run(args);
        if ok && out == expected {
            return out;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    run_ok(args)
}

fn assert_has(out: &str, line: &str) {
    assert!(out.contains(line), "{line:?} missing from:\n{out}");
}

const FROM_UNCONFIGURED: &str = "- configure [1]\n\tStart: unconfigured\n\tGoal: configuring\n\
                                 - shutdown [5]\n\tStart: unconfigured\n\tGoal: shuttingdown\n";

/// Drives `node` (whose on_activate fails with an error the first time) through every
/// transition with `rclev lifecycle`, checking each output against ros2's format.
fn drive(node: &str) {
    assert_eq!(run_ok(&["lifecycle", "get", node]), "unconfigured [1]\n");
    assert_eq!(run_ok(&["lifecycle", "list", node]), FROM_UNCONFIGURED);
    let graph = run_ok(&["lifecycle", "list", node, "--all"]);
    assert_eq!(graph.lines().filter(|l| l.starts_with("- ")).count(), 25);
    assert_has(
        &graph,
        "- transition_error [62]\n\tStart: errorprocessing\n\tGoal: finalized\n",
    );

    assert_eq!(
        run_ok(&["lifecycle", "set", node, "configure"]),
        "Transitioning successful\n"
    );
    assert_eq!(run_ok(&["lifecycle", "get", node]), "inactive [2]\n");
    assert_eq!(
        run_ok(&["lifecycle", "list", node]),
        "- cleanup [2]\n\tStart: inactive\n\tGoal: cleaningup\n\
         - activate [3]\n\tStart: inactive\n\tGoal: activating\n\
         - shutdown [6]\n\tStart: inactive\n\tGoal: shuttingdown\n"
    );
    // By id; the first activation fails with an error: errorprocessing, then unconfigured.
    assert_has(
        &run_err(&["lifecycle", "set", node, "3"]),
        "Transitioning failed",
    );
    assert_eq!(run_ok(&["lifecycle", "get", node]), "unconfigured [1]\n");
    assert_has(
        &run_err(&["lifecycle", "set", node, "activate"]),
        "Unknown transition requested, available ones are:\n- configure [1]\n- shutdown [5]",
    );
    for transition in ["configure", "activate"] {
        assert_eq!(
            run_ok(&["lifecycle", "set", node, transition]),
            "Transitioning successful\n"
        );
    }
    assert_eq!(run_ok(&["lifecycle", "get", node]), "active [3]\n");
    assert_eq!(
        run_ok(&["lifecycle", "list", node]),
        "- deactivate [4]\n\tStart: active\n\tGoal: deactivating\n\
         - shutdown [7]\n\tStart: active\n\tGoal: shuttingdown\n"
    );
    for transition in ["deactivate", "cleanup", "shutdown"] {
        assert_eq!(
            run_ok(&["lifecycle", "set", node, transition]),
            "Transitioning successful\n"
        );
    }
    assert_eq!(run_ok(&["lifecycle", "get", node]), "finalized [4]\n");
    assert_eq!(run_ok(&["lifecycle", "list", node]), "");
}

#[test]
fn lifecycle_verbs_drive_an_rclpy_lifecycle_node() {
    in_netns(
        "lifecycle_verbs_drive_an_rclpy_lifecycle_node",
        LIMIT,
        || {
            let peer = Peer::start("lifecycle_peer.py", &["node", "rclpy_lc", "200"]);
            // A plain rclpy node beside it is not listed.
            let plain = Peer::start("rclpy_peer.py", &["stay", "200"]);
            assert_eq!(
                run_until(&["lifecycle", "nodes"], "/rclpy_lc\n"),
                "/rclpy_lc\n"
            );
            // Each command is a new participant: on a busy host it may finish discovery
            // before it has heard the peer's get_state service (a CI run printed 0).
            assert_eq!(run_until(&["lifecycle", "nodes", "-c"], "1\n"), "1\n");
            assert_eq!(
                run_until(&["lifecycle", "get"], "/rclpy_lc: unconfigured [1]\n"),
                "/rclpy_lc: unconfigured [1]\n"
            );
            assert_has(
                &run_err(&["lifecycle", "get", "/rclpy_stay"]),
                "Node not found",
            );
            drive("/rclpy_lc");
            let out = peer.interrupt(EACH);
            for line in [
                "node: on_configure from unconfigured\n",
                "node: on_activate from inactive\n",
                "node: on_error from inactive\n",
                "node: on_deactivate from active\n",
                "node: on_cleanup from inactive\n",
                "node: on_shutdown from unconfigured\n",
                "node: done in state finalized\n",
            ] {
                assert_has(&out, line);
            }
            drop(plain);
        },
    );
}

/// The same against an rclev managed node in this process (namespaced, relative name given).
#[test]
fn lifecycle_verbs_drive_an_rclev_lifecycle_node() {
    use rclev::lifecycle::{CallbackReturn, State};
    use std::sync::atomic::{AtomicU32, Ordering};

    in_netns(
        "lifecycle_verbs_drive_an_rclev_lifecycle_node",
        LIMIT,
        || {
            let executor = common::dds_context().create_basic_executor();
            let lc = executor
                .create_lifecycle_node(rclev::NodeOptions::new("lc_talker").namespace("/robot"))
                .unwrap();
            let activations = AtomicU32::new(0);
            lc.on_activate(move |_| {
                if activations.fetch_add(1, Ordering::SeqCst) == 0 {
                    Err("first activation fails")
                } else {
                    Ok(CallbackReturn::Success)
                }
            });
            // Spin on a thread of its own until the commands are done.
            let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
            let executor = Arc::new(executor);
            let spinning = {
                let executor = executor.clone();
                std::thread::spawn(move || {
                    executor.spin(rclev::SpinOptions::default().until_promise_resolved(async {
                        let _ = stopped.await;
                    }))
                })
            };
            assert_eq!(
                run_until(&["lifecycle", "nodes"], "/robot/lc_talker\n"),
                "/robot/lc_talker\n"
            );
            drive("robot/lc_talker");
            assert_eq!(lc.current_state(), State::Finalized);
            stop.send(()).unwrap();
            let errors = spinning.join().unwrap();
            assert!(errors.is_empty(), "{errors:?}");
        },
    );
}

#[test]
fn lifecycle_argument_errors_are_clear() {
    let out = Command::new(env!("CARGO_BIN_EXE_rclev"))
        .args(["lifecycle", "set", "/node"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert_has(&String::from_utf8_lossy(&out.stderr), "<TRANSITION>");
}
