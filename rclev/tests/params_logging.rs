//! Node parameters and logging (`/rosout` and captures together).

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rclev::interfaces::rcl_interfaces::msg::Log;
use rclev::{
    Context, Error, IntoPrimitiveOptions, LogSeverity, NodeOptions, Parameter, ParameterDescriptor,
    ParameterError, ParameterValue, QoSProfile, SpinOptions,
};

#[test]
fn node_parameters_with_descriptors_overrides_and_rejecting_callbacks() {
    let ctx = Context::from_args([
        "prog",
        "--ros-args",
        "-p",
        "speed:=2.5",
        "-p",
        "other_node:speed:=9.0",
    ])
    .unwrap();
    let executor = ctx.create_basic_executor();
    let node = executor
        .create_node(NodeOptions::new("robot").parameter_override("name", "r2"))
        .unwrap();
    assert_eq!(
        node.declare_parameter("speed", 1.0).unwrap(),
        ParameterValue::Double(2.5)
    );
    assert_eq!(
        node.declare_parameter("name", "default").unwrap(),
        ParameterValue::String("r2".into())
    );
    node.declare_parameter_with(
        "gain",
        5,
        ParameterDescriptor::default().integer_range(0, 10, 1),
    )
    .unwrap();
    node.declare_parameter_with("frame", "base", ParameterDescriptor::read_only())
        .unwrap();
    node.declare_parameter("tags", vec!["a".to_string()])
        .unwrap();
    assert!(
        node.get_parameter("use_sim_time").is_some(),
        "use_sim_time is declared by every node"
    );

    assert!(matches!(
        node.set_parameter("gain", 11),
        Err(Error::Parameter(ParameterError::OutOfRange { .. }))
    ));
    assert!(matches!(
        node.set_parameter("frame", "x"),
        Err(Error::Parameter(ParameterError::ReadOnly(_)))
    ));
    assert!(matches!(
        node.set_parameter("speed", "fast"),
        Err(Error::Parameter(ParameterError::WrongType { .. }))
    ));

    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let guard = node.add_on_set_parameters_callback(move |changes: &[Parameter]| {
        s.lock()
            .unwrap()
            .extend(changes.iter().map(|c| c.name.clone()));
        match changes.iter().find(|c| c.name == "speed") {
            Some(c) if c.value == ParameterValue::Double(0.0) => {
                Err("speed 0 stalls the robot".into())
            }
            _ => Ok(()),
        }
    });
    assert_eq!(
        node.set_parameter("speed", 0.0),
        Err(Error::Parameter(ParameterError::Rejected(
            "speed 0 stalls the robot".into()
        )))
    );
    assert_eq!(
        node.get_parameter("speed"),
        Some(ParameterValue::Double(2.5))
    );
    node.set_parameters(&[
        Parameter {
            name: "speed".into(),
            value: 3.0.into(),
        },
        Parameter {
            name: "gain".into(),
            value: 7.into(),
        },
    ])
    .unwrap();
    assert_eq!(node.get_parameter("gain"), Some(ParameterValue::Integer(7)));
    assert_eq!(*seen.lock().unwrap(), vec!["speed", "speed", "gain"]);
    drop(guard);
    node.set_parameter("speed", 0.0).unwrap();
}

fn rosout_listener(executor: &rclev::Executor) -> (rclev::Subscription<Log>, Arc<Mutex<Vec<Log>>>) {
    let listener = executor.create_node("rosout_listener").unwrap();
    let got = Arc::new(Mutex::new(Vec::new()));
    let g = got.clone();
    let sub = listener
        .create_subscription::<Log, _>(
            "/rosout".qos(QoSProfile::default().keep_all().transient_local()),
            move |m| g.lock().unwrap().push((*m).clone()),
        )
        .unwrap();
    (sub, got)
}

#[test]
fn rosout_and_captures_both_see_every_record() {
    let executor = Context::default().create_basic_executor();
    let (_sub, rosout) = rosout_listener(&executor);
    let node = executor
        .create_node(NodeOptions::new("talker").namespace("/robot"))
        .unwrap();
    assert_eq!(node.logger().name(), "robot.talker");
    let capture = node.logger().capture();
    let second = node.logger().capture();
    rclev::log_info!(node, "value is {}", 7);
    rclev::log_warn!(node.logger(), "careful");
    rclev::log_debug!(node, "hidden at the default level");
    for _ in 0..5 {
        rclev::log_once!(node, LogSeverity::Info, "only once");
        rclev::log_throttle!(
            node,
            LogSeverity::Error,
            Duration::from_secs(60),
            "throttled"
        );
    }
    assert_no_errors(executor.spin(SpinOptions::spin_once().timeout(Duration::from_secs(5))));

    let expected = ["value is 7", "careful", "only once", "throttled"];
    let captured: Vec<String> = capture.records().into_iter().map(|r| r.message).collect();
    assert_eq!(captured, expected);
    assert_eq!(second.records().len(), 4, "a second capture missed records");
    let rosout = rosout.lock().unwrap();
    let published: Vec<&str> = rosout
        .iter()
        .filter(|l| l.name == "robot.talker")
        .map(|l| l.msg.as_str())
        .collect();
    assert_eq!(published, expected, "a capture swallowed /rosout records");
    assert_eq!(
        rosout.iter().find(|l| l.msg == "careful").unwrap().level,
        30
    );
    let stamp = rosout[0].stamp.as_nanos();
    let now = node.get_clock().now().nanos;
    assert!(stamp > 0 && stamp <= now, "stamp not from the node clock");
}

#[test]
fn captures_on_parallel_threads_do_not_interfere() {
    let executor = Context::default().create_basic_executor();
    let nodes: Vec<_> = (0..4)
        .map(|i| executor.create_node(format!("n{i}")).unwrap())
        .collect();
    let threads: Vec<_> = nodes
        .into_iter()
        .map(|node| {
            std::thread::spawn(move || {
                let capture = node.logger().capture();
                for k in 0..200 {
                    rclev::log_info!(node, "{} {k}", node.name());
                }
                let records = capture.records();
                assert_eq!(records.len(), 200);
                assert!(records.iter().all(|r| r.logger_name == node.name()));
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

#[test]
fn rosout_can_be_turned_off_per_node() {
    let executor = Context::default().create_basic_executor();
    let (_sub, rosout) = rosout_listener(&executor);
    let quiet = executor
        .create_node(NodeOptions::new("quiet").enable_rosout(false))
        .unwrap();
    assert!(!quiet.logger().publishes_rosout());
    let capture = quiet.logger().capture();
    rclev::log_error!(quiet, "not on rosout");
    let deadline = Instant::now() + Duration::from_millis(100);
    while Instant::now() < deadline {
        assert_no_errors(
            executor.spin(SpinOptions::spin_once().timeout(Duration::from_millis(10))),
        );
    }
    assert!(rosout.lock().unwrap().iter().all(|l| l.name != "quiet"));
    assert_eq!(capture.records().len(), 1);
}

fn assert_no_errors(errors: Vec<rclev::Error>) {
    assert!(errors.is_empty(), "{errors:?}");
}

/// Runs inside a child process started by `node_logs_reach_the_console_without_a_subscriber`:
/// no `tracing` subscriber is installed there.
#[test]
fn console_logging_child() {
    if std::env::var_os("RCLEV_CONSOLE_CHILD").is_none() {
        return;
    }
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("console_talker").unwrap();
    rclev::log_info!(node, "hello from {}", "rclev");
    rclev::log_debug!(node, "not shown at the default level");
}

#[test]
fn node_logs_reach_the_console_without_a_subscriber() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "console_logging_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("RCLEV_CONSOLE_CHILD", "1")
        .output()
        .unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr
        .lines()
        .find(|l| l.contains("[console_talker]"))
        .unwrap_or_else(|| panic!("no console line in: {stderr}"));
    assert!(line.starts_with("[INFO] ["), "{line}");
    assert!(
        line.ends_with("[console_talker]: hello from rclev"),
        "{line}"
    );
    assert!(!stderr.contains("not shown"), "{stderr}");
}

/// Runs inside a child process started by `library_warnings_reach_the_console_without_a_subscriber`:
/// a warning of rclev's own (not a node's log), raised with no `tracing` subscriber installed
/// (`RCLEV_DIAGNOSTIC_CHILD=plain`), with one (`=subscriber`), or with the `rclev` logger's
/// level above it (`=quiet`).
#[test]
fn diagnostic_child() {
    let Some(mode) = std::env::var_os("RCLEV_DIAGNOSTIC_CHILD") else {
        return;
    };
    let mut args = vec!["prog", "--ros-args", "--log-file-name", "robot"];
    if mode == "quiet" {
        args.extend(["--log-level", "rclev:=error"]);
    }
    if mode == "subscriber" {
        let seen = Arc::new(AtomicU64::new(0));
        tracing::subscriber::set_global_default(WarnCounter(seen.clone())).unwrap();
        let _context = Context::from_args(args).unwrap();
        eprintln!("subscriber saw {} warnings", seen.load(Ordering::SeqCst));
    } else {
        let _context = Context::from_args(args).unwrap();
    }
}

/// A `tracing` subscriber that counts warnings (and sees nothing else).
struct WarnCounter(Arc<AtomicU64>);

impl tracing::Subscriber for WarnCounter {
    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        *metadata.level() == tracing::Level::WARN
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, _: &tracing::Event<'_>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// The defect: rclev's own warnings were `tracing` events only, and vanished unless the
/// program installed a subscriber (a `--log-file-name` rclev cannot honour, said to nobody).
/// They are printed on the console as rcl prints its warnings, in rcutils' format, until a
/// subscriber is installed; then they go there, once.
#[test]
fn library_warnings_reach_the_console_without_a_subscriber() {
    let run = |mode: &str| {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "diagnostic_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("RCLEV_DIAGNOSTIC_CHILD", mode)
            .env_remove("RCUTILS_CONSOLE_OUTPUT_FORMAT")
            .env_remove("RCUTILS_LOGGING_USE_STDOUT")
            .output()
            .unwrap();
        assert!(out.status.success(), "{mode}: {out:?}");
        String::from_utf8_lossy(&out.stderr).to_string()
    };
    let plain = run("plain");
    let line = plain
        .lines()
        .find(|l| l.contains("--log-file-name"))
        .unwrap_or_else(|| panic!("no console line in: {plain}"));
    assert!(line.starts_with("[WARN] ["), "{line}");
    assert!(line.contains("] [rclev]: --log-file-name"), "{line}");
    let with_subscriber = run("subscriber");
    assert!(
        with_subscriber.contains("subscriber saw 1 warnings"),
        "{with_subscriber}"
    );
    assert!(
        !with_subscriber.contains("[WARN]"),
        "printed twice: {with_subscriber}"
    );
    let quiet = run("quiet");
    assert!(!quiet.contains("--log-file-name"), "{quiet}");
}

/// The parameter services and `/parameter_events`, called as `ros2 param` and rclpy's
/// `AsyncParameterClient` call them (in process here; over DDS against rclpy in rclev-dds).
#[test]
fn parameter_services_answer_what_ros2_param_asks() {
    use rclev::interfaces::rcl_interfaces::msg::{
        Parameter as ParameterMsg, ParameterEvent, ParameterType as T,
    };
    use rclev::interfaces::rcl_interfaces::srv::*;

    let executor = Context::default().create_basic_executor();
    let node = executor
        .create_node(NodeOptions::new("robot").namespace("/r"))
        .unwrap();
    node.declare_parameter_with(
        "gain",
        5,
        ParameterDescriptor {
            description: "loop gain".into(),
            ..ParameterDescriptor::default().integer_range(0, 10, 1)
        },
    )
    .unwrap();
    node.declare_parameter("arm.speed", 1.5).unwrap();
    node.declare_parameter_with(
        "loose",
        "x",
        ParameterDescriptor {
            dynamic_typing: true,
            ..ParameterDescriptor::default()
        },
    )
    .unwrap();
    let _veto = node.add_on_set_parameters_callback(|changes| {
        if changes
            .iter()
            .any(|p| p.value == ParameterValue::Integer(7))
        {
            Err("seven is unlucky".into())
        } else {
            Ok(())
        }
    });
    let tool = executor
        .create_node(NodeOptions::new("tool").start_parameter_services(false))
        .unwrap();
    let events = Arc::new(Mutex::new(Vec::<ParameterEvent>::new()));
    let e = events.clone();
    // One permit per event of the node: the last one is published by the last call's service
    // callback, and reaches this subscription after that call has returned.
    let arrived = Arc::new(tokio::sync::Semaphore::new(0));
    let a = arrived.clone();
    let _events = tool
        .create_subscription::<ParameterEvent, _>(
            "/parameter_events".qos(QoSProfile::parameter_events()),
            move |m: Arc<ParameterEvent>| {
                if m.node == "/r/robot" {
                    a.add_permits(1);
                }
                e.lock().unwrap().push((*m).clone())
            },
        )
        .unwrap();
    let get = tool
        .create_client::<GetParameters>("/r/robot/get_parameters")
        .unwrap();
    let types = tool
        .create_client::<GetParameterTypes>("/r/robot/get_parameter_types")
        .unwrap();
    let set = tool
        .create_client::<SetParameters>("/r/robot/set_parameters")
        .unwrap();
    let atomic = tool
        .create_client::<SetParametersAtomically>("/r/robot/set_parameters_atomically")
        .unwrap();
    let describe = tool
        .create_client::<DescribeParameters>("/r/robot/describe_parameters")
        .unwrap();
    let list = tool
        .create_client::<ListParameters>("/r/robot/list_parameters")
        .unwrap();
    let param = |name: &str, value: ParameterValue| ParameterMsg {
        name: name.into(),
        value: value.to_msg(),
    };
    let delete = |name: &str| ParameterMsg {
        name: name.into(),
        ..Default::default()
    };
    let answers = Arc::new(Mutex::new(None));
    let a = answers.clone();
    common::spin_until(&executor, async move {
        let listed = list
            .call(ListParameters_Request {
                prefixes: vec![],
                depth: 0,
            })
            .await
            .unwrap();
        let got = get
            .call(GetParameters_Request {
                names: vec!["gain".into(), "nope".into(), "arm.speed".into()],
            })
            .await
            .unwrap();
        let typed = types
            .call(GetParameterTypes_Request {
                names: vec!["gain".into(), "nope".into()],
            })
            .await
            .unwrap();
        let described = describe
            .call(DescribeParameters_Request {
                names: vec!["gain".into(), "nope".into()],
            })
            .await
            .unwrap();
        let set_each = set
            .call(SetParameters_Request {
                parameters: vec![
                    param("gain", ParameterValue::Integer(8)),
                    param("gain", ParameterValue::Integer(7)),
                    param("gain", ParameterValue::Integer(11)),
                    param("gain", ParameterValue::String("x".into())),
                    param("undeclared", ParameterValue::Integer(1)),
                    delete("gain"),
                    delete("loose"),
                ],
            })
            .await
            .unwrap();
        let refused_atomically = atomic
            .call(SetParametersAtomically_Request {
                parameters: vec![
                    param("gain", ParameterValue::Integer(9)),
                    param("arm.speed", ParameterValue::Integer(2)),
                ],
            })
            .await
            .unwrap();
        let atomically = atomic
            .call(SetParametersAtomically_Request {
                parameters: vec![
                    param("gain", ParameterValue::Integer(9)),
                    param("arm.speed", ParameterValue::Double(2.5)),
                ],
            })
            .await
            .unwrap();
        *a.lock().unwrap() = Some((
            listed,
            got,
            typed,
            described,
            set_each,
            refused_atomically,
            atomically,
        ));
    });
    let (listed, got, typed, described, set_each, refused_atomically, atomically) =
        answers.lock().unwrap().take().unwrap();
    assert_eq!(
        listed.result.names,
        [
            "arm.speed",
            "gain",
            "loose",
            "start_type_description_service",
            "use_sim_time"
        ]
    );
    assert_eq!(listed.result.prefixes, ["arm"]);
    assert_eq!(got.values.len(), 3);
    assert_eq!(got.values[0].r#type, T::PARAMETER_INTEGER);
    assert_eq!(got.values[0].integer_value, 5);
    assert_eq!(got.values[1].r#type, T::PARAMETER_NOT_SET);
    assert_eq!(got.values[2].double_value, 1.5);
    assert_eq!(typed.types, [T::PARAMETER_INTEGER, T::PARAMETER_NOT_SET]);
    assert_eq!(described.descriptors[0].name, "gain");
    assert_eq!(described.descriptors[0].description, "loop gain");
    assert_eq!(described.descriptors[0].integer_range[0].to_value, 10);
    assert_eq!(described.descriptors[1].name, "");
    let outcomes: Vec<(bool, String)> = set_each
        .results
        .iter()
        .map(|r| (r.successful, r.reason.clone()))
        .collect();
    assert!(outcomes[0].0, "{outcomes:?}");
    assert!(
        !outcomes[1].0 && outcomes[1].1.contains("seven is unlucky"),
        "{outcomes:?}"
    );
    assert!(
        !outcomes[2].0 && outcomes[2].1.contains("outside"),
        "{outcomes:?}"
    );
    assert!(
        !outcomes[3].0 && outcomes[3].1.contains("integer"),
        "{outcomes:?}"
    );
    assert!(
        !outcomes[4].0 && outcomes[4].1.contains("not declared"),
        "{outcomes:?}"
    );
    assert!(
        !outcomes[5].0 && outcomes[5].1.contains("statically typed"),
        "{outcomes:?}"
    );
    assert!(outcomes[6].0, "{outcomes:?}");
    assert!(!refused_atomically.result.successful);
    assert_eq!(
        node.get_parameter("arm.speed"),
        Some(ParameterValue::Double(2.5)),
        "the atomic set that went through"
    );
    assert!(atomically.result.successful);
    assert_eq!(node.get_parameter("gain"), Some(ParameterValue::Integer(9)));
    assert_eq!(node.get_parameter("loose"), None);

    // The events: every change, from the node, in order (declarations came before the
    // subscription; this transport keeps no history for a volatile topic).
    common::spin_until(&executor, common::count_to(&arrived, 3));
    let events = events.lock().unwrap().clone();
    let changed: Vec<(String, Vec<String>, Vec<String>)> = events
        .iter()
        .filter(|e| e.node == "/r/robot")
        .map(|e| {
            let names = |ps: &[ParameterMsg]| ps.iter().map(|p| p.name.clone()).collect();
            (
                e.node.clone(),
                names(&e.changed_parameters),
                names(&e.deleted_parameters),
            )
        })
        .collect();
    assert_eq!(
        changed,
        [
            ("/r/robot".into(), vec!["gain".into()], vec![]),
            ("/r/robot".into(), vec![], vec!["loose".into()]),
            (
                "/r/robot".into(),
                vec!["gain".into(), "arm.speed".into()],
                vec![]
            ),
        ]
    );
}

/// A set of one parameter, on a thread of its own, held inside its set-callbacks until
/// released: the window in which issue 24 saw another thread undeclare and re-declare the name.
struct HeldSet {
    release: std::sync::mpsc::Sender<()>,
    setter: std::thread::JoinHandle<rclev::Result<()>>,
    _callback: rclev::SetCallbackHandle,
}

impl HeldSet {
    /// Starts `node.set_parameter(name, value)` and returns once its set-callback runs.
    fn start(node: &rclev::Node, name: &'static str, value: ParameterValue) -> Self {
        let (entered_tx, entered) = std::sync::mpsc::channel();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let (entered_tx, released) = (Mutex::new(entered_tx), Mutex::new(released));
        let held = value.clone();
        let callback = node.add_on_set_parameters_callback(move |changes| {
            if changes.iter().any(|p| p.name == name && p.value == held) {
                entered_tx.lock().unwrap().send(()).unwrap();
                released.lock().unwrap().recv().unwrap();
            }
            Ok(())
        });
        let n = node.clone();
        let setter = std::thread::spawn(move || n.set_parameter(name, value));
        entered.recv().unwrap();
        Self {
            release,
            setter,
            _callback: callback,
        }
    }

    /// Lets the set finish and returns its outcome.
    fn release(self) -> rclev::Result<()> {
        self.release.send(()).unwrap();
        self.setter.join().unwrap()
    }
}

fn dynamic() -> ParameterDescriptor {
    ParameterDescriptor {
        dynamic_typing: true,
        ..ParameterDescriptor::default()
    }
}

#[test]
fn a_set_held_in_its_callbacks_never_writes_into_a_redeclared_parameter() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("racer").unwrap();
    node.declare_parameter_with("mode", "fast", dynamic())
        .unwrap();
    let held = HeldSet::start(&node, "mode", "SLOW".into());
    node.parameters().undeclare("mode").unwrap();
    node.declare_parameter("mode", 0.5).unwrap();
    let outcome = held.release();
    assert_eq!(
        outcome,
        Err(Error::Parameter(ParameterError::Redeclared("mode".into())))
    );
    assert_eq!(
        node.get_parameter("mode"),
        Some(ParameterValue::Double(0.5))
    );
}

#[test]
fn a_set_held_in_its_callbacks_never_writes_into_a_redeclared_typed_parameter() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("racer").unwrap();
    node.declare_parameter_with("gain", "fast", dynamic())
        .unwrap();
    let held = HeldSet::start(&node, "gain", "SLOW".into());
    node.parameters().undeclare("gain").unwrap();
    let gain = node
        .declare_typed_parameter::<f64>("gain")
        .default(0.5)
        .declare()
        .unwrap();
    let outcome = held.release();
    assert_eq!(
        outcome,
        Err(Error::Parameter(ParameterError::Redeclared("gain".into())))
    );
    assert_eq!(gain.get(), 0.5);
    gain.set(0.75).unwrap();
    assert_eq!(gain.get(), 0.75);
}

#[test]
fn a_set_held_in_its_callbacks_never_overwrites_a_read_only_redeclaration() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("racer").unwrap();
    node.declare_parameter_with("frame", "base", dynamic())
        .unwrap();
    let held = HeldSet::start(&node, "frame", "odom".into());
    node.parameters().undeclare("frame").unwrap();
    node.declare_parameter_with("frame", "map", ParameterDescriptor::read_only())
        .unwrap();
    let outcome = held.release();
    assert_eq!(
        outcome,
        Err(Error::Parameter(ParameterError::Redeclared("frame".into())))
    );
    assert_eq!(
        node.get_parameter("frame"),
        Some(ParameterValue::String("map".into()))
    );
}

#[test]
fn a_set_held_in_its_callbacks_fails_if_its_parameter_was_undeclared() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("racer").unwrap();
    node.declare_parameter_with("gone", 1, dynamic()).unwrap();
    let held = HeldSet::start(&node, "gone", 2.into());
    node.parameters().undeclare("gone").unwrap();
    assert_eq!(
        held.release(),
        Err(Error::Parameter(ParameterError::NotDeclared("gone".into())))
    );
    assert_eq!(node.get_parameter("gone"), None);
}

/// As rclcpp (`declare_parameter` throws `InvalidParameterValueException`), a default the
/// descriptor does not allow is refused when it is the value the declaration would take.
#[test]
fn declared_defaults_outside_their_descriptor_are_refused() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("strict").unwrap();
    // Every case is tried under a name of its own (`p0`, `p1`, …), and the ones let through
    // are listed together.
    let mut accepted = Vec::new();
    let mut cases = 0..;
    let mut check = |case: String, declare: &dyn Fn(&str) -> Result<(), ParameterError>| {
        let name = format!("p{}", cases.next().unwrap());
        let outcome = declare(&name);
        let refused =
            matches!(&outcome, Err(ParameterError::OutOfRange { name: n, .. }) if *n == name);
        if !refused || node.parameters().has(&name) {
            accepted.push(format!("{case}: {outcome:?}"));
        }
    };
    for (value, step) in [(50, 0), (-1, 0), (3, 4)] {
        check(format!("plain {value} step {step}"), &|name| {
            let descriptor = ParameterDescriptor::default().integer_range(0, 10, step);
            node.parameters()
                .declare(name, value, descriptor)
                .map(|_| ())
        });
        check(format!("typed {value} step {step}"), &|name| {
            node.declare_typed_parameter::<i64>(name)
                .default(value)
                .range(0, 10, step)
                .declare()
                .map(|_| ())
        });
    }
    for value in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        check(format!("plain {value}"), &|name| {
            let descriptor = ParameterDescriptor::default().floating_point_range(0.0, 1.0, 0.0);
            node.parameters()
                .declare(name, value, descriptor)
                .map(|_| ())
        });
        check(format!("typed {value}"), &|name| {
            node.declare_typed_parameter::<f64>(name)
                .default(value)
                .range(0.0, 1.0, 0.0)
                .declare()
                .map(|_| ())
        });
    }
    assert!(accepted.is_empty(), "declared anyway: {accepted:?}");
    // What the descriptor allows still declares, bounds and steps included.
    let stepped = ParameterDescriptor::default().integer_range(0, 10, 4);
    assert_eq!(
        node.declare_parameter_with("eight", 8, stepped.clone())
            .unwrap(),
        ParameterValue::Integer(8)
    );
    assert_eq!(
        node.declare_parameter_with("ten", 10, stepped).unwrap(),
        ParameterValue::Integer(10)
    );
    let unit = node
        .declare_typed_parameter::<f64>("unit")
        .default(1.0)
        .range(0.0, 1.0, 0.0)
        .declare()
        .unwrap();
    assert_eq!(unit.get(), 1.0);
}

/// rclcpp checks the value a declaration takes: an override outside the range is refused
/// (`InvalidParameterValueException`; here `InvalidOverride`) and a default it replaces is not
/// looked at; with `ignore_override` the default is taken and checked, and the override is not
/// looked at.
#[test]
fn overrides_are_checked_at_declaration_unless_ignored() {
    let executor = Context::default().create_basic_executor();
    let mut options = NodeOptions::new("tuned");
    for (name, value) in [
        ("a", 50),
        ("b", 50),
        ("c", 50),
        ("d", 50),
        ("e", 5),
        ("f", 5),
    ] {
        options = options.parameter_override(name, value);
    }
    options = options
        .parameter_override("g", 50)
        .parameter_override("h", 5);
    let node = executor.create_node(options).unwrap();
    let range = || ParameterDescriptor::default().integer_range(0, 10, 0);
    let invalid_override = |r: Result<(), ParameterError>, param: &str| matches!(r, Err(ParameterError::InvalidOverride { name, .. }) if name == param);
    let p = node.parameters();
    assert!(invalid_override(
        p.declare("a", 5, range()).map(|_| ()),
        "a"
    ));
    let typed = node
        .declare_typed_parameter::<i64>("b")
        .default(5)
        .range(0, 10, 0)
        .declare();
    assert!(invalid_override(typed.map(|_| ()), "b"));
    assert!(!p.has("a") && !p.has("b"));
    // Ignored: the default, whatever the override.
    assert_eq!(
        p.declare_ignoring_override("c", 5, range()),
        Ok(ParameterValue::Integer(5))
    );
    let d = node
        .declare_typed_parameter::<i64>("d")
        .default(5)
        .range(0, 10, 0)
        .ignore_override()
        .declare()
        .unwrap();
    assert_eq!(d.get(), 5);
    // A valid override replaces a default outside the range, which is not checked (rclcpp).
    assert_eq!(p.declare("e", 50, range()), Ok(ParameterValue::Integer(5)));
    let f = node
        .declare_typed_parameter::<i64>("f")
        .default(50)
        .range(0, 10, 0)
        .declare()
        .unwrap();
    assert_eq!(f.get(), 5);
    // Ignoring the override, that default is checked again.
    assert!(matches!(
        p.declare_ignoring_override("g", 50, range()),
        Err(ParameterError::OutOfRange { .. })
    ));
    let h = node
        .declare_typed_parameter::<i64>("h")
        .default(50)
        .range(0, 10, 0)
        .ignore_override()
        .declare();
    assert!(matches!(h, Err(ParameterError::OutOfRange { .. })));
    // Without a default, an ignored override leaves nothing to declare.
    let none = node
        .declare_typed_parameter::<i64>("h")
        .ignore_override()
        .declare();
    assert!(invalid_override(none.map(|_| ()), "h"));
    assert!(!p.has("g") && !p.has("h"));
}
