//! The ROS 2 tools over Zenoh: with `RMW_IMPLEMENTATION=rmw_zenoh_cpp`, `rclev topic`,
//! `node`, `service`, `param`, `action` and `lifecycle` talk to rclev nodes on rclev-zenoh
//! through `rclev zenoh router`, and a node's type description service answers, in a network
//! namespace of their own (built with `--features dds,zenoh`).

#![cfg(all(feature = "dds", feature = "zenoh"))]

#[path = "../../rclev-dds/tests/common/mod.rs"]
mod common;

use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::in_netns;
use rclev::interfaces::example_interfaces::action::{Fibonacci, Fibonacci_Goal, Fibonacci_Result};
use rclev::interfaces::std_srvs::srv::{SetBool, SetBool_Request, SetBool_Response};
use rclev::{
    ActionServerOptions, CancelResponse, GoalEnd, GoalResponse, NodeOptions, ServerGoalHandle,
    SpinOptions,
};

const LIMIT: Duration = Duration::from_secs(120);

/// `rclev` on Zenoh, looking for the router for up to 30 s.
fn rclev() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rclev"));
    c.stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .env("RMW_IMPLEMENTATION", "rmw_zenoh_cpp")
        .env("ZENOH_ROUTER_CHECK_ATTEMPTS", "30");
    c
}

/// A child killed (and reaped) when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `rclev <args>` until it succeeds with every one of `needles` in its output (peers
/// still being discovered), at most 10 tries; that output.
fn run_until(args: &[&str], needles: &[&str]) -> String {
    let mut last = String::new();
    for _ in 0..10 {
        let out = rclev().args(args).output().unwrap();
        last = String::from_utf8_lossy(&out.stdout).to_string();
        if out.status.success() && needles.iter().all(|n| last.contains(n)) {
            return last;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    panic!("rclev {args:?} never printed {needles:?}; last output:\n{last}");
}

#[test]
fn the_tools_work_over_zenoh() {
    in_netns("the_tools_work_over_zenoh", LIMIT, || {
        let _router = Running(
            rclev()
                .args(["zenoh", "router"])
                .stdout(Stdio::null())
                .spawn()
                .unwrap(),
        );
        // An rclev node on Zenoh in this process: a service and parameter services.
        std::env::set_var("RMW_IMPLEMENTATION", "rmw_zenoh_cpp");
        std::env::set_var("ZENOH_ROUTER_CHECK_ATTEMPTS", "30");
        let executor = rclev_rmw::context().unwrap().create_basic_executor();
        let node = executor
            .create_node(NodeOptions::new("server").namespace("/zenoh"))
            .unwrap();
        node.declare_parameter("gain", 3i64).unwrap();
        let _flip = node
            .create_service::<SetBool, _>("flip", |req: SetBool_Request| SetBool_Response {
                success: !req.data,
                message: "flipped".into(),
            })
            .unwrap();
        let _fib = node
            .create_action_server::<Fibonacci, _, _, _, _>(
                "fib",
                ActionServerOptions::default(),
                |_id, _goal: &Fibonacci_Goal| GoalResponse::AcceptAndExecute,
                |_h: &ServerGoalHandle<Fibonacci>| CancelResponse::Accept,
                |handle: ServerGoalHandle<Fibonacci>| async move {
                    let mut sequence = vec![0, 1];
                    for i in 1..handle.goal().order as usize {
                        sequence.push(sequence[i] + sequence[i - 1]);
                    }
                    GoalEnd::Succeeded(Fibonacci_Result { sequence })
                },
            )
            .unwrap();
        // A lifecycle node (its five services and transition events) beside it.
        let _managed = executor
            .create_lifecycle_node(NodeOptions::new("managed").namespace("/zenoh"))
            .unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let spinning = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                let errors =
                    executor.spin(SpinOptions::default().timeout(Duration::from_millis(50)));
                assert!(errors.is_empty(), "{errors:?}");
            }
        });

        let nodes = run_until(&["node", "list"], &["/zenoh/server\n"]);
        assert!(nodes.contains("/zenoh/server\n"), "{nodes}");
        let services = run_until(&["service", "list", "-t"], &["/zenoh/flip"]);
        assert!(
            services.contains("/zenoh/flip [std_srvs/srv/SetBool]\n"),
            "{services}"
        );
        let call = run_until(
            &[
                "service",
                "call",
                "/zenoh/flip",
                "std_srvs/srv/SetBool",
                "{data: true}",
            ],
            &["response:"],
        );
        assert!(call.contains("success: false\n"), "{call}");
        assert!(call.contains("message: flipped\n"), "{call}");
        assert_eq!(
            run_until(&["param", "get", "/zenoh/server", "gain"], &["Integer"]),
            "Integer value is: 3\n"
        );

        // The type description service every node serves, called over Zenoh.
        let hash = <SetBool as rclev::msg::ServiceType>::TYPE_HASH.to_string();
        let request = format!(
            "{{type_name: std_srvs/srv/SetBool, type_hash: {hash}, include_type_sources: false}}"
        );
        let described = run_until(
            &[
                "service",
                "call",
                "/zenoh/server/get_type_description",
                "type_description_interfaces/srv/GetTypeDescription",
                &request,
            ],
            &["successful: true"],
        );
        assert!(
            described.contains("type_name: std_srvs/srv/SetBool_Request"),
            "{described}"
        );

        // An action: listed with its type, and a goal sent to it.
        let actions = run_until(&["action", "list", "-t"], &["/zenoh/fib"]);
        assert!(
            actions.contains("/zenoh/fib [example_interfaces/action/Fibonacci]\n"),
            "{actions}"
        );
        let goal = run_until(
            &[
                "action",
                "send_goal",
                "/zenoh/fib",
                "example_interfaces/action/Fibonacci",
                "{order: 4}",
            ],
            &["Goal finished"],
        );
        assert!(goal.contains("Goal accepted with ID: "), "{goal}");
        assert!(
            goal.contains("Goal finished with status: SUCCEEDED\n"),
            "{goal}"
        );

        // Lifecycle: read the state, drive a transition, read it again.
        assert_eq!(
            run_until(&["lifecycle", "get", "/zenoh/managed"], &["unconfigured"]),
            "unconfigured [1]\n"
        );
        assert_eq!(
            run_until(
                &["lifecycle", "set", "/zenoh/managed", "configure"],
                &["successful"]
            ),
            "Transitioning successful\n"
        );
        assert_eq!(
            run_until(&["lifecycle", "get", "/zenoh/managed"], &["inactive"]),
            "inactive [2]\n"
        );

        // topic echo ← topic pub, two processes.
        let echo = rclev()
            .args(["topic", "echo", "/talk", "std_msgs/msg/String", "--once"])
            .spawn()
            .unwrap();
        let _publisher = Running(
            rclev()
                .args([
                    "topic",
                    "pub",
                    "/talk",
                    "std_msgs/msg/String",
                    "{data: hi}",
                    "-r",
                    "20",
                ])
                .stdout(Stdio::null())
                .spawn()
                .unwrap(),
        );
        let topics = run_until(&["topic", "list", "-t"], &["/talk"]);
        assert!(topics.contains("/talk [std_msgs/msg/String]\n"), "{topics}");
        let out = echo.wait_with_output().unwrap();
        assert!(out.status.success());
        assert_eq!(String::from_utf8_lossy(&out.stdout), "data: hi\n---\n");

        stop.store(true, Ordering::Relaxed);
        spinning.join().unwrap();
    });
}
