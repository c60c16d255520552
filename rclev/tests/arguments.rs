//! `--ros-args` on the in-process transport, end to end (issue 25): what a node created in a
//! context made from arguments is called, where its endpoints are, what its parameters and
//! loggers are, read back from the graph, the parameter store and the logger services. The
//! same rules are checked against rclpy over DDS in `rclev-dds/tests/ros_args_oracle.rs`.

mod common;

use std::sync::{Arc, Mutex};

use rclev::interfaces::rcl_interfaces::msg::LoggerLevel;
use rclev::interfaces::rcl_interfaces::srv::{
    GetLoggerLevels, GetLoggerLevels_Request, SetLoggerLevels, SetLoggerLevels_Request,
};
use rclev::interfaces::std_msgs::msg::String as StringMsg;
use rclev::interfaces::std_srvs::srv::{Trigger, Trigger_Response};
use rclev::transport::EndpointKind;
use rclev::{Context, Error, LogLevel, Node, NodeOptions, ParameterValue};

/// Every endpoint of the node `fqn` in the graph, as `kind name`, sorted.
fn endpoints(node: &Node, fqn: &str) -> Vec<String> {
    let mut out: Vec<String> = node
        .graph()
        .endpoints
        .iter()
        .filter(|e| e.node.fully_qualified() == fqn)
        .filter(|e| !e.name.starts_with("/parameter_events") && e.name != "/rosout")
        .filter(|e| !e.name.ends_with("/get_type_description"))
        .map(|e| {
            let kind = match e.kind {
                EndpointKind::Publisher => "pub",
                EndpointKind::Subscription => "sub",
                EndpointKind::Service => "srv",
                EndpointKind::Client => "cli",
            };
            format!("{kind} {}", e.name)
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

fn context(args: &[&str]) -> Context {
    Context::from_args(std::iter::once("prog").chain(args.iter().copied())).unwrap()
}

#[test]
fn remapping_renames_the_node_and_moves_its_names() {
    let ctx = context(&[
        "--ros-args",
        "-r",
        "__node:=renamed",
        "-r",
        "__ns:=/robot1",
        "-r",
        "chatter:=talk",
        "-r",
        "renamed:image:=image_raw",
        // A rule for another node leaves this one alone.
        "-r",
        "other_node:reset:=never",
        "-r",
        "/abs/in:=/moved/in",
        "-r",
        "reset:=reset_all",
        // An action's name as a whole, as Kilted's rcl remaps it (ros2/rcl#1170; Jazzy's rcl
        // does not, and remaps only rules naming the action's topics and services, which
        // apply here too).
        "-r",
        "fib:=fibonacci",
        "-r",
        "/robot1/fibonacci/_action/status:=/robot1/fib_status",
        "--",
    ]);
    let executor = ctx.create_basic_executor();
    let node = executor
        .create_node(NodeOptions::new("remap_me").start_parameter_services(false))
        .unwrap();
    assert_eq!(node.name(), "renamed");
    assert_eq!(node.namespace(), "/robot1");
    assert_eq!(node.fully_qualified_name(), "/robot1/renamed");
    let _chatter = node.create_publisher::<StringMsg>("chatter").unwrap();
    let _private = node.create_publisher::<StringMsg>("~/state").unwrap();
    let _status = node.create_publisher::<StringMsg>("{node}/status").unwrap();
    let _image = node
        .create_subscription::<StringMsg, _>("image", |_| {})
        .unwrap();
    let _abs = node
        .create_subscription::<StringMsg, _>("/abs/in", |_| {})
        .unwrap();
    let _reset = node
        .create_service::<Trigger, _>("reset", |_| Trigger_Response::default())
        .unwrap();
    let _client = node.create_client::<Trigger>("~/private_srv").unwrap();
    let _fib = node
        .create_action_client::<rclev::interfaces::example_interfaces::action::Fibonacci>("fib")
        .unwrap();
    assert_eq!(
        endpoints(&node, "/robot1/renamed"),
        [
            "cli /robot1/fibonacci/_action/cancel_goal",
            "cli /robot1/fibonacci/_action/get_result",
            "cli /robot1/fibonacci/_action/send_goal",
            "cli /robot1/renamed/private_srv",
            "pub /robot1/renamed/state",
            "pub /robot1/renamed/status",
            "pub /robot1/talk",
            "srv /robot1/reset_all",
            "sub /moved/in",
            "sub /robot1/fib_status",
            "sub /robot1/fibonacci/_action/feedback",
            "sub /robot1/image_raw",
        ]
    );
    // What the names resolve to, without creating anything.
    assert_eq!(node.resolve_topic_name("chatter").unwrap(), "/robot1/talk");
    assert_eq!(
        node.resolve_service_name("reset").unwrap(),
        "/robot1/reset_all"
    );
}

#[test]
fn node_specific_rules_and_local_arguments() {
    let ctx = context(&[
        "--ros-args",
        "-r",
        "left:__node:=left_cam",
        // Node-specific rules name the node as renamed (rcl remaps the name first).
        "-r",
        "left:image:=never",
        "-r",
        "left_cam:image:=left/image_raw",
        "-r",
        "image:=shared_image",
    ]);
    let executor = ctx.create_basic_executor();
    let left = executor.create_node("left").unwrap();
    let right = executor.create_node("right").unwrap();
    assert_eq!(left.fully_qualified_name(), "/left_cam");
    assert_eq!(right.fully_qualified_name(), "/right");
    assert_eq!(left.resolve_topic_name("image").unwrap(), "/left/image_raw");
    assert_eq!(right.resolve_topic_name("image").unwrap(), "/shared_image");
    // A node's own arguments come first; without the global ones, only they apply.
    let local = executor
        .create_node(NodeOptions::new("local").arguments([
            "--ros-args",
            "-r",
            "image:=mine",
            "-r",
            "__ns:=/local",
        ]))
        .unwrap();
    assert_eq!(local.fully_qualified_name(), "/local/local");
    assert_eq!(local.resolve_topic_name("image").unwrap(), "/local/mine");
    let isolated = executor
        .create_node(
            NodeOptions::new("isolated")
                .arguments(["--ros-args", "-r", "other:=x"])
                .use_global_arguments(false),
        )
        .unwrap();
    assert_eq!(isolated.resolve_topic_name("image").unwrap(), "/image");
}

#[test]
fn params_files_and_overrides_follow_rcl_precedence() {
    let dir = std::env::temp_dir().join(format!("rclev-arguments-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("cam.yaml");
    std::fs::write(
        &file,
        "/**:\n  ros__parameters:\n    rate: 20\n    labels: [a, 'b c']\n\
         /robot1/cam:\n  ros__parameters:\n    rate: 30\n    gain: 2.5\n    nested:\n      depth: 3\n\
         other:\n  ros__parameters:\n    rate: 99\n",
    )
    .unwrap();
    let ctx = context(&[
        "--ros-args",
        "-r",
        "__ns:=/robot1",
        "--params-file",
        file.to_str().unwrap(),
        "-p",
        "flag:=yes",
        // Keys name nodes by their full name: `cam` means `/cam`, not `/robot1/cam`.
        "-p",
        "cam:hex:=1",
        "-p",
        "hex:=0x1F",
        "-p",
        "quoted:='42'",
    ]);
    let executor = ctx.create_basic_executor();
    let node = executor
        .create_node(NodeOptions::new("cam").parameter_override("from_code", 7i64))
        .unwrap();
    let p = node.parameters();
    let declare = |name: &str, default: ParameterValue| {
        p.declare(name, default, Default::default()).unwrap();
        p.get(name).unwrap()
    };
    use ParameterValue as V;
    assert_eq!(declare("rate", V::Integer(1)), V::Integer(30));
    assert_eq!(declare("gain", V::Double(0.0)), V::Double(2.5));
    assert_eq!(declare("nested.depth", V::Integer(0)), V::Integer(3));
    assert_eq!(
        declare("labels", V::StringArray(vec![])),
        V::StringArray(vec!["a".into(), "b c".into()])
    );
    assert_eq!(declare("flag", V::Bool(false)), V::Bool(true));
    assert_eq!(declare("hex", V::Integer(0)), V::Integer(31));
    assert_eq!(
        declare("quoted", V::String(String::new())),
        V::String("42".into())
    );
    assert_eq!(declare("from_code", V::Integer(0)), V::Integer(7));
    assert_eq!(ctx.arguments().params_files(), [file.to_str().unwrap()]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_arguments_are_typed_errors() {
    for args in [
        &["--ros-args", "--no-such-flag"][..],
        &["--ros-args", "-r"],
        &["--ros-args", "-r", "no_separator"],
        &["--ros-args", "-r", "a*:=b"],
        &["--ros-args", "-p", "x:=[1, 2.5]"],
        &["--ros-args", "--params-file", "/nonexistent/file.yaml"],
        &["--ros-args", "--log-level", "loud"],
        &["--ros-args", "--enclave", "relative"],
        &["--ros-args", "--log-config-file", "log.conf"],
    ] {
        let program = std::iter::once("prog").chain(args.iter().copied());
        match Context::from_args(program) {
            Err(Error::InvalidArgument { argument, reason }) => {
                assert!(!argument.is_empty() && !reason.is_empty(), "{args:?}");
            }
            Err(other) => panic!("{args:?}: untyped error {other:?}"),
            Ok(_) => panic!("{args:?} accepted"),
        }
    }
    // Outside --ros-args the program's own arguments are left alone.
    let ctx = context(&[
        "--verbose",
        "input.bag",
        "--ros-args",
        "-r",
        "a:=b",
        "--",
        "-x",
    ]);
    assert_eq!(
        ctx.arguments().non_ros_arguments(),
        ["prog", "--verbose", "input.bag", "-x"]
    );
}

#[test]
fn log_levels_rosout_and_logger_services() {
    let ctx = context(&[
        "--ros-args",
        "--log-level",
        "args_talker:=warn",
        "--log-level",
        "args_talker.child:=debug",
        "--disable-rosout-logs",
    ]);
    let executor = ctx.create_basic_executor();
    let node = executor
        .create_node(
            NodeOptions::new("args_talker")
                .enable_logger_service(true)
                .start_parameter_services(false),
        )
        .unwrap();
    assert_eq!(node.logger().effective_level(), LogLevel::Warn);
    assert_eq!(
        rclev::logging::effective_level("args_talker.child.grandchild"),
        LogLevel::Debug
    );
    assert!(!node.logger().publishes_rosout());
    assert_eq!(
        node.graph().count("/rosout", EndpointKind::Publisher),
        0,
        "--disable-rosout-logs"
    );
    // The logger services, as rclpy answers them.
    let caller = executor.create_node("args_caller").unwrap();
    let get = caller
        .create_client::<GetLoggerLevels>("/args_talker/get_logger_levels")
        .unwrap();
    let set = caller
        .create_client::<SetLoggerLevels>("/args_talker/set_logger_levels")
        .unwrap();
    let answers = Arc::new(Mutex::new(None));
    let a = answers.clone();
    common::spin_until(&executor, async move {
        let before = get
            .call(GetLoggerLevels_Request {
                names: vec!["args_talker".into(), "args_unset_logger".into()],
            })
            .await
            .unwrap();
        let results = set
            .call(SetLoggerLevels_Request {
                levels: vec![
                    LoggerLevel {
                        name: "args_talker".into(),
                        level: 40,
                    },
                    LoggerLevel {
                        name: "args_talker".into(),
                        level: 33,
                    },
                ],
            })
            .await
            .unwrap();
        let after = get
            .call(GetLoggerLevels_Request {
                names: vec!["args_talker".into()],
            })
            .await
            .unwrap();
        *a.lock().unwrap() = Some((before, results, after));
    });
    let (before, results, after) = answers.lock().unwrap().take().unwrap();
    let levels = |r: &rclev::interfaces::rcl_interfaces::srv::GetLoggerLevels_Response| {
        r.levels
            .iter()
            .map(|l| (l.name.clone(), l.level))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        levels(&before),
        [
            ("args_talker".to_string(), 30),
            ("args_unset_logger".to_string(), 0)
        ]
    );
    assert!(results.results[0].successful);
    assert!(!results.results[1].successful);
    assert_eq!(
        results.results[1].reason,
        "Failed reason: Invalid logger level."
    );
    assert_eq!(levels(&after), [("args_talker".to_string(), 40)]);
    assert_eq!(node.logger().effective_level(), LogLevel::Error);
}
