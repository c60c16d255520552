//! The generated `robot_msgs` types: defaults, constants, identity with rclev's std types,
//! CDR, names, bounds, hashes against rosidl, and use on a node.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rclev::interfaces::builtin_interfaces::msg::{Duration as DurationMsg, Time};
use rclev::interfaces::geometry_msgs::msg::{Point, Pose, Quaternion};
use rclev::interfaces::std_msgs::msg::Header;
use rclev::msg::{from_cdr, to_cdr, ActionType, CdrError, Message, ServiceType};
use rclev::{
    ActionServerOptions, CancelResponse, Context, GoalEnd, GoalResponse, GoalState,
    ServerGoalHandle, SpinOptions,
};
use rclev_interfaces_demo::robot_msgs::action::*;
use rclev_interfaces_demo::robot_msgs::msg::{Cell, Telemetry};
use rclev_interfaces_demo::robot_msgs::srv::*;

/// A telemetry message with every field set away from its default.
fn full_telemetry() -> Telemetry {
    Telemetry {
        header: Header {
            stamp: Time {
                sec: 1_700_000_000,
                nanosec: 123_456_789,
            },
            frame_id: "odom".into(),
        },
        pose: Pose {
            position: Point {
                x: 1.5,
                y: -2.25,
                z: 0.0,
            },
            orientation: Quaternion {
                x: 0.0,
                y: 0.0,
                z: std::f64::consts::FRAC_1_SQRT_2,
                w: std::f64::consts::FRAC_1_SQRT_2,
            },
        },
        r#type: Telemetry::SOURCE_HARDWARE,
        name: "rover-2 ✓".into(),
        cells: (0..Telemetry::MAX_CELLS)
            .map(|i| Cell {
                voltage: 3.6 + f32::from(i) * 0.01,
                temperature: 30.0,
                balancing: i % 2 == 0,
            })
            .collect(),
        wheel_speeds: [1.0, -1.0, 0.5, f32::MAX],
        wheel_radii: [0.2; 4],
        tags: vec!["a".into(), "sixteen-bytes-xx".into(), String::new()],
        payload: (0..=255).collect(),
    }
}

#[test]
fn defaults_come_from_the_definitions() {
    let t = Telemetry::default();
    assert_eq!(t.r#type, 1);
    assert_eq!(t.name, "rover");
    assert_eq!(t.wheel_radii, [0.1, 0.1, 0.125, 0.125]);
    assert_eq!(t.wheel_speeds, [0.0; 4]);
    assert!(t.cells.is_empty() && t.tags.is_empty() && t.payload.is_empty());
    assert_eq!(t.header, Header::default());
    // Quaternion's own default (w = 1) reaches through the nested Pose.
    assert_eq!(t.pose.orientation.w, 1.0);

    let c = Cell::default();
    assert_eq!((c.voltage, c.temperature, c.balancing), (0.0, 25.0, false));

    let req = SetMode_Request::default();
    assert_eq!((req.mode, req.reason.as_str()), (0, "operator"));
    assert_eq!(SetMode_Response::default().error, 0);

    let goal = Dock_Goal::default();
    assert_eq!((goal.dock_id.as_str(), goal.max_speed), ("dock_1", 0.5));
    assert_eq!(Dock_Result::default().elapsed, DurationMsg::default());
}

#[test]
fn constants_are_typed_associated_consts() {
    // The annotations are the check: each constant has its .msg type.
    const SIM: u8 = Telemetry::SOURCE_SIM;
    const HARDWARE: u8 = Telemetry::SOURCE_HARDWARE;
    const MAX_CELLS: u8 = Telemetry::MAX_CELLS;
    const FRAME: &str = Telemetry::FRAME;
    const NOMINAL: f64 = Telemetry::NOMINAL_VOLTAGE;
    assert_eq!((SIM, HARDWARE, MAX_CELLS), (0, 1, 8));
    assert_eq!(FRAME, "base_link");
    assert_eq!(NOMINAL, 24.0);

    const AUTONOMOUS: u8 = SetMode_Request::MODE_AUTONOMOUS;
    const REFUSED: i8 = SetMode_Response::ERROR_REFUSED;
    assert_eq!(
        (
            SetMode_Request::MODE_IDLE,
            SetMode_Request::MODE_MANUAL,
            AUTONOMOUS
        ),
        (0, 1, 2)
    );
    assert_eq!((SetMode_Response::ERROR_NONE, REFUSED), (0, -1));

    const CONTACT: u8 = Dock_Feedback::PHASE_CONTACT;
    assert_eq!(
        (
            Dock_Feedback::PHASE_APPROACH,
            Dock_Feedback::PHASE_ALIGN,
            CONTACT
        ),
        (0, 1, 2)
    );
}

#[test]
fn referenced_std_types_are_rclevs_own() {
    // These compile only if the generated fields have rclev's types, not copies of them.
    let header: rclev::interfaces::std_msgs::msg::Header = Header {
        frame_id: "map".into(),
        ..Default::default()
    };
    let mut t = Telemetry {
        header,
        ..Default::default()
    };
    let pose: &rclev::interfaces::geometry_msgs::msg::Pose = &t.pose;
    let _ = pose;
    t.header.stamp = rclev::interfaces::builtin_interfaces::msg::Time::from_nanos(5);
    let elapsed: rclev::interfaces::builtin_interfaces::msg::Duration =
        Dock_Result::default().elapsed;
    let _ = elapsed;
    let stamp: Time = t.header.stamp;
    assert_eq!(stamp.as_nanos(), 5);
    // And the action protocol uses rclev's UUID.
    let id = rclev::interfaces::unique_identifier_msgs::msg::UUID::random();
    let request = Dock::send_goal_request(id, Dock_Goal::default());
    assert_eq!(request.goal_id, id);
}

#[test]
fn cdr_round_trips() {
    let t = full_telemetry();
    let bytes = to_cdr(&t).unwrap();
    assert_eq!(from_cdr::<Telemetry>(&bytes).unwrap(), t);
    let t = Telemetry::default();
    assert_eq!(from_cdr::<Telemetry>(&to_cdr(&t).unwrap()).unwrap(), t);

    let req = SetMode_Request {
        mode: SetMode_Request::MODE_MANUAL,
        reason: "x".repeat(64),
    };
    assert_eq!(
        from_cdr::<SetMode_Request>(&to_cdr(&req).unwrap()).unwrap(),
        req
    );
    let fb = Dock_FeedbackMessage {
        goal_id: rclev::interfaces::unique_identifier_msgs::msg::UUID::random(),
        feedback: Dock_Feedback {
            phase: Dock_Feedback::PHASE_ALIGN,
            distance_remaining: 0.25,
        },
    };
    assert_eq!(
        from_cdr::<Dock_FeedbackMessage>(&to_cdr(&fb).unwrap()).unwrap(),
        fb
    );

    // The layout is plain CDR: header, then f32, f32, bool, little-endian.
    let cell = Cell {
        voltage: 3.5,
        temperature: -1.0,
        balancing: true,
    };
    let mut expected = vec![0, 1, 0, 0];
    expected.extend(3.5f32.to_le_bytes());
    expected.extend((-1.0f32).to_le_bytes());
    expected.push(1);
    assert_eq!(to_cdr(&cell).unwrap(), expected);
}

fn bound_error<T: Message>(msg: &T) -> (&'static str, usize, usize) {
    match to_cdr(msg) {
        Err(rclev::Error::Serialization(CdrError::BoundExceeded { what, len, bound })) => {
            (what, len, bound)
        }
        other => panic!("expected a bound error, got {other:?}"),
    }
}

#[test]
fn bounds_are_enforced() {
    let mut t = full_telemetry();
    t.cells.push(Cell::default()); // 9 > MAX_CELLS
    assert_eq!(bound_error(&t), ("sequence", 9, 8));

    let mut t = full_telemetry();
    t.tags = vec![String::new(); 5];
    assert_eq!(bound_error(&t), ("sequence", 5, 4));

    let mut t = full_telemetry();
    t.tags[0] = "seventeen-bytes-x".into();
    assert_eq!(bound_error(&t), ("string", 17, 16));

    let req = SetMode_Request {
        reason: "y".repeat(65),
        ..Default::default()
    };
    assert_eq!(bound_error(&req), ("string", 65, 64));

    // Decoding checks the bounds too: a 65-byte reason, written by hand.
    let mut bytes = vec![0, 1, 0, 0, SetMode_Request::MODE_IDLE, 0, 0, 0];
    bytes.extend(66u32.to_le_bytes());
    bytes.extend([b'z'; 65]);
    bytes.push(0);
    match from_cdr::<SetMode_Request>(&bytes) {
        Err(rclev::Error::Serialization(CdrError::BoundExceeded {
            len: 65, bound: 64, ..
        })) => {}
        other => panic!("expected a bound error, got {other:?}"),
    }
}

#[test]
fn type_names() {
    assert_eq!(Telemetry::TYPE_NAME, "robot_msgs/msg/Telemetry");
    assert_eq!(
        Telemetry::DDS_TYPE_NAME,
        "robot_msgs::msg::dds_::Telemetry_"
    );
    assert_eq!(Cell::DDS_TYPE_NAME, "robot_msgs::msg::dds_::Cell_");
    assert_eq!(
        <SetMode as ServiceType>::TYPE_NAME,
        "robot_msgs/srv/SetMode"
    );
    assert_eq!(SetMode_Request::TYPE_NAME, "robot_msgs/srv/SetMode_Request");
    assert_eq!(
        SetMode_Request::DDS_TYPE_NAME,
        "robot_msgs::srv::dds_::SetMode_Request_"
    );
    assert_eq!(
        SetMode_Response::DDS_TYPE_NAME,
        "robot_msgs::srv::dds_::SetMode_Response_"
    );
    assert_eq!(<Dock as ActionType>::TYPE_NAME, "robot_msgs/action/Dock");
    assert_eq!(
        Dock_Goal::DDS_TYPE_NAME,
        "robot_msgs::action::dds_::Dock_Goal_"
    );
    assert_eq!(
        Dock_SendGoal_Request::TYPE_NAME,
        "robot_msgs/action/Dock_SendGoal_Request"
    );
    assert_eq!(
        Dock_SendGoal_Request::DDS_TYPE_NAME,
        "robot_msgs::action::dds_::Dock_SendGoal_Request_"
    );
    assert_eq!(
        Dock_FeedbackMessage::DDS_TYPE_NAME,
        "robot_msgs::action::dds_::Dock_FeedbackMessage_"
    );
}

/// Every type robot_msgs defines, by ROS name, with the hash rclev-codegen gave it.
fn generated_hashes() -> BTreeMap<&'static str, String> {
    fn msg<T: Message>() -> (&'static str, String) {
        (T::TYPE_NAME, T::TYPE_HASH.to_string())
    }
    fn srv<S: ServiceType>() -> (&'static str, String) {
        (S::TYPE_NAME, S::TYPE_HASH.to_string())
    }
    fn action<A: ActionType>() -> (&'static str, String) {
        (A::TYPE_NAME, A::TYPE_HASH.to_string())
    }
    BTreeMap::from([
        msg::<Cell>(),
        msg::<Telemetry>(),
        srv::<SetMode>(),
        msg::<SetMode_Request>(),
        msg::<SetMode_Response>(),
        msg::<SetMode_Event>(),
        action::<Dock>(),
        msg::<Dock_Goal>(),
        msg::<Dock_Result>(),
        msg::<Dock_Feedback>(),
        msg::<Dock_FeedbackMessage>(),
        srv::<Dock_SendGoal>(),
        msg::<Dock_SendGoal_Request>(),
        msg::<Dock_SendGoal_Response>(),
        msg::<Dock_SendGoal_Event>(),
        srv::<Dock_GetResult>(),
        msg::<Dock_GetResult_Request>(),
        msg::<Dock_GetResult_Response>(),
        msg::<Dock_GetResult_Event>(),
    ])
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn oracle_venv() -> PathBuf {
    let path = std::env::var_os("RCLEV_ORACLE_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target/oracle-venv"));
    assert!(
        path.join("bin/python").is_file() && path.join("share").is_dir(),
        "the ROS 2 oracle venv is missing at {}: run `bash .ci/oracles` first \
         (or point RCLEV_ORACLE_VENV at one)",
        path.display()
    );
    path
}

/// The official rosidl pipeline (`oracle/hash_oracle.py`, std_msgs, geometry_msgs and
/// builtin_interfaces from the venv) hashes every robot_msgs type as rclev-codegen did.
#[test]
fn type_hashes_match_rosidl() {
    let venv = oracle_venv();
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("robot_msgs_hashes");
    let output = std::process::Command::new(venv.join("bin/python"))
        .arg(workspace().join("oracle/hash_oracle.py"))
        .arg("--package-dir")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("robot_msgs"))
        .args(["--package-name", "robot_msgs", "--out"])
        .arg(&out)
        .output()
        .expect("running hash_oracle.py");
    assert!(
        output.status.success(),
        "hash_oracle.py failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let official: BTreeMap<&str, String> = std::str::from_utf8(&output.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let (name, hash) = l.split_once(' ').expect("'<type> <hash>' lines");
            (name, hash.to_string())
        })
        .collect();
    let ours = generated_hashes();
    assert_eq!(official.len(), 19, "rosidl's types: {official:#?}");
    assert_eq!(ours, official);
    assert!(ours
        .values()
        .all(|h| h.starts_with("RIHS01_") && h.len() == 7 + 64));
}

/// Telemetry over a topic, SetMode over a service, Dock as an action, in one process.
#[test]
fn node_uses_the_types() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("robot_test").unwrap();

    let publisher = node.create_publisher::<Telemetry>("telemetry").unwrap();
    let mut telemetry = node
        .create_subscription_stream::<Telemetry>("telemetry")
        .unwrap();

    let mut mode = SetMode_Request::MODE_IDLE;
    let _service = node
        .create_service::<SetMode, _>("set_mode", move |req| SetMode_Response {
            success: true,
            previous_mode: std::mem::replace(&mut mode, req.mode),
            message: req.reason,
            ..Default::default()
        })
        .unwrap();
    let client = node.create_client::<SetMode>("set_mode").unwrap();

    let clock = node.get_clock();
    let listening = Arc::new(AtomicBool::new(false));
    let server_listening = listening.clone();
    let _server = node
        .create_action_server::<Dock, _, _, _, _>(
            "dock",
            ActionServerOptions::default(),
            |_id, goal: &Dock_Goal| match goal.dock_id.as_str() {
                "dock_1" => GoalResponse::AcceptAndExecute,
                _ => GoalResponse::Reject,
            },
            |_goal: &ServerGoalHandle<Dock>| CancelResponse::Accept,
            move |goal: ServerGoalHandle<Dock>| {
                let (clock, listening) = (clock.clone(), server_listening.clone());
                async move {
                    // Approach until the client listens (feedback sent before it opens its
                    // stream is not delivered to it), then one contact feedback, and done.
                    while !listening.load(Ordering::Acquire) {
                        goal.publish_feedback(Dock_Feedback {
                            phase: Dock_Feedback::PHASE_APPROACH,
                            distance_remaining: 1.0,
                        })
                        .unwrap();
                        clock.sleep_for(Duration::from_millis(5)).await;
                    }
                    goal.publish_feedback(Dock_Feedback {
                        phase: Dock_Feedback::PHASE_CONTACT,
                        distance_remaining: 0.0,
                    })
                    .unwrap();
                    GoalEnd::Succeeded(Dock_Result {
                        docked: true,
                        charge_percent: goal.goal().max_speed * 100.0,
                        elapsed: DurationMsg { sec: 1, nanosec: 2 },
                    })
                }
            },
        )
        .unwrap();
    let dock = node.create_action_client::<Dock>("dock").unwrap();

    let checks = async move {
        let sent = full_telemetry();
        publisher.publish(sent.clone())?;
        let received = telemetry.recv().await.expect("a telemetry message");
        assert_eq!(*received, sent);

        let response = client
            .call(SetMode_Request {
                mode: SetMode_Request::MODE_MANUAL,
                ..Default::default()
            })
            .await?;
        assert!(response.success);
        assert_eq!(response.previous_mode, SetMode_Request::MODE_IDLE);
        assert_eq!(response.message, "operator");

        let rejected = dock
            .send_goal(Dock_Goal {
                dock_id: "elsewhere".into(),
                ..Default::default()
            })
            .await;
        assert!(rejected.is_err(), "the server rejects unknown docks");

        let goal = dock.send_goal(Dock_Goal::default()).await?;
        let mut feedback = goal.feedback()?;
        listening.store(true, Ordering::Release);
        let mut phases = Vec::new();
        while let Some(f) = feedback.recv().await {
            phases.push(f.phase);
        }
        let (state, result) = goal.result().await?;
        assert_eq!(state, GoalState::Succeeded);
        assert!(result.docked);
        assert_eq!(result.charge_percent, 50.0);
        assert_eq!(result.elapsed, DurationMsg { sec: 1, nanosec: 2 });
        // Some approach feedback (maybe none), then contact, in order; the stream ends with the goal.
        assert_eq!(
            phases.last(),
            Some(&Dock_Feedback::PHASE_CONTACT),
            "{phases:?}"
        );
        assert!(phases.windows(2).all(|w| w[0] <= w[1]), "{phases:?}");
        Ok::<_, rclev::Error>(())
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let errors = executor.spin(
        SpinOptions::default()
            .until_promise_resolved(async move {
                let _ = tx.send(checks.await);
            })
            .timeout(Duration::from_secs(20)),
    );
    assert!(errors.is_empty(), "{errors:?}");
    rx.try_recv()
        .expect("the checks finished before the timeout")
        .unwrap();
}
