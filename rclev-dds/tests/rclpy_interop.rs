//! rclev against a real ROS 2 Jazzy node: rclpy 7.1.6 on rmw_fastrtps_cpp 8.4.3 with Fast
//! DDS 2.14.5, installed from PyPI into the oracle venv. Each test runs in a network
//! namespace of its own (see `common`).

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{call_retrying, eventually, finish_while_spinning, in_netns, spin_until, Peer};
use rclev::interfaces::std_msgs::msg::String as StringMsg;
use rclev::msg::Message;
use rclev::{Context, Executor, SpinOptions};
use rclev_dds::DdsTransport;
use rclev_oracle_tests::test_msgs;
use test_msgs::msg::BasicTypes;
use test_msgs::srv::{BasicTypes as BasicTypesSrv, BasicTypes_Request, BasicTypes_Response};

const LIMIT: Duration = Duration::from_secs(90);
const PEER_LIMIT: Duration = Duration::from_secs(40);

fn executor() -> Executor {
    Context::with_transport(Arc::new(DdsTransport::from_env().unwrap())).create_basic_executor()
}

/// The `i`-th `BasicTypes` message of the peer script (`basic(i)` there).
fn basic(i: i64) -> BasicTypes {
    BasicTypes {
        bool_value: i % 2 == 0,
        byte_value: (i % 256) as u8,
        char_value: (65 + i % 26) as u8,
        float32_value: 0.5 * i as f32,
        float64_value: -1.25 * i as f64,
        int8_value: (-i).rem_euclid(128) as i8,
        uint8_value: (i % 256) as u8,
        int16_value: (-300 * i) as i16,
        uint16_value: (300 * i) as u16,
        int32_value: (-70000 * i) as i32,
        uint32_value: (70000 * i) as u32,
        int64_value: -(1i64 << 40) * i,
        uint64_value: (1u64 << 40) * i as u64,
    }
}

#[test]
fn rclpy_publishes_and_rclev_receives() {
    in_netns("rclpy_publishes_and_rclev_receives", LIMIT, || {
        let executor = executor();
        let node = executor.create_node("listener").unwrap();
        let strings = Arc::new(Mutex::new(Vec::new()));
        let s = strings.clone();
        let _strings = node
            .create_subscription::<StringMsg, _>("chatter", move |m| {
                s.lock().unwrap().push(m.data.clone())
            })
            .unwrap();
        let basics = Arc::new(Mutex::new(Vec::new()));
        let b = basics.clone();
        let _basics = node
            .create_subscription::<BasicTypes, _>("basic", move |m| b.lock().unwrap().push(*m))
            .unwrap();
        let talker = Peer::start("rclpy_peer.py", &["talker", "chatter", "string", "5"]);
        let basic_talker = Peer::start("rclpy_peer.py", &["talker", "basic", "basic", "5"]);
        assert!(spin_until(&executor, PEER_LIMIT, || {
            strings.lock().unwrap().len() == 5 && basics.lock().unwrap().len() == 5
        }));
        talker.finish(PEER_LIMIT);
        basic_talker.finish(PEER_LIMIT);
        let strings = strings.lock().unwrap().clone();
        assert_eq!(
            strings,
            (0..5)
                .map(|i| format!("hello from rclpy {i}"))
                .collect::<Vec<_>>()
        );
        assert_eq!(
            *basics.lock().unwrap(),
            (0..5).map(basic).collect::<Vec<_>>()
        );
    });
}

#[test]
fn rclev_publishes_and_rclpy_receives() {
    in_netns("rclev_publishes_and_rclpy_receives", LIMIT, || {
        let executor = executor();
        let node = executor.create_node("talker").unwrap();
        let strings = node.create_publisher::<StringMsg>("chatter").unwrap();
        let basics = node.create_publisher::<BasicTypes>("basic").unwrap();
        let listener = Peer::start("rclpy_peer.py", &["listener", "chatter", "string", "5"]);
        let basic_listener = Peer::start("rclpy_peer.py", &["listener", "basic", "basic", "5"]);
        assert!(eventually(PEER_LIMIT, || {
            strings.get_subscription_count() == 1 && basics.get_subscription_count() == 1
        }));
        for i in 0..5 {
            strings
                .publish(StringMsg {
                    data: format!("hello from rclpy {i}"),
                })
                .unwrap();
            basics.publish(basic(i)).unwrap();
        }
        let out = listener.finish(PEER_LIMIT);
        assert!(out.contains("listener: received 5"), "{out}");
        let out = basic_listener.finish(PEER_LIMIT);
        assert!(out.contains("listener: received 5"), "{out}");
        // rclpy's graph shows rclev's writer with the type hash rclev announced.
        let info = Peer::start("rclpy_peer.py", &["publisher_info", "/chatter"]).finish(PEER_LIMIT);
        assert!(
            info.contains(&format!(
                "publisher std_msgs/msg/String {}",
                StringMsg::TYPE_HASH
            )),
            "{info}"
        );
        let graph = node.get_publishers_info_by_topic("/chatter").unwrap();
        assert_eq!(graph.len(), 1);
        assert_eq!(graph[0].type_name, "std_msgs/msg/String");
    });
}

/// `ros_discovery_info` both ways: rclpy lists rclev's nodes (namespaces included) and finds
/// their publishers and services by node, as `ros2 node list` / `ros2 node info` do; rclev lists
/// rclpy's nodes and names the node of an rclpy publisher.
#[test]
fn rclpy_and_rclev_see_each_others_nodes() {
    in_netns("rclpy_and_rclev_see_each_others_nodes", LIMIT, || {
        let executor = executor();
        let talker = executor.create_node("rclev_talker").unwrap();
        let robot = executor
            .create_node(rclev::NodeOptions::new("rclev_robot").namespace("/robot1"))
            .unwrap();
        let _chatter = talker.create_publisher::<StringMsg>("chatter").unwrap();
        let _service = robot
            .create_service::<BasicTypesSrv, _>("reset", |_: BasicTypes_Request| {
                BasicTypes_Response::default()
            })
            .unwrap();
        let out = Peer::start(
            "rclpy_peer.py",
            &["node_list", "/rclev_talker", "/robot1/rclev_robot"],
        )
        .finish(PEER_LIMIT);
        assert!(
            out.contains("node /rclev_talker publishes /chatter std_msgs/msg/String"),
            "{out}"
        );
        assert!(
            out.contains("node /robot1/rclev_robot serves /robot1/reset test_msgs/srv/BasicTypes"),
            "{out}"
        );

        let stay = Peer::start("rclpy_peer.py", &["stay", "30"]);
        let other = rclev::transport::NodeName {
            name: "other".into(),
            namespace: "/peer_ns".into(),
        };
        assert!(
            eventually(PEER_LIMIT, || {
                let nodes = talker.get_node_names();
                nodes.contains(&other)
                    && talker
                        .get_publishers_info_by_topic("/peer_ns/chatter")
                        .unwrap()
                        .iter()
                        .any(|p| p.node == other)
            }),
            "{:?}",
            talker.graph()
        );
        let names = talker.get_node_names();
        assert!(names.iter().any(|n| n.name == "rclpy_stay"), "{names:?}");
        // rclev's own nodes are listed once, from its own records.
        assert_eq!(
            names.iter().filter(|n| n.name == "rclev_talker").count(),
            1,
            "{names:?}"
        );
        assert!(stay.interrupt(PEER_LIMIT).contains("stay: done"));
        // A peer that is gone takes its nodes along.
        assert!(eventually(PEER_LIMIT, || !talker
            .get_node_names()
            .contains(&other)));
    });
}

/// rclpy's parameter client (what `ros2 param` uses) on an rclev node: list, get, set
/// (accepted, and refused by the node's callback), describe, and the node's
/// `/parameter_events`; then rclev's clients on an rclpy node's parameter services, and rclpy
/// seeing the event of the change.
#[test]
fn parameters_across_rclpy_and_rclev() {
    use rclev::interfaces::rcl_interfaces::msg::{Parameter as ParameterMsg, ParameterEvent};
    use rclev::interfaces::rcl_interfaces::srv::{
        GetParameters, GetParameters_Request, SetParameters, SetParameters_Request,
    };
    use rclev::{ParameterDescriptor, ParameterValue};

    in_netns("parameters_across_rclpy_and_rclev", LIMIT, || {
        let executor = executor();
        let node = executor.create_node("rclev_params").unwrap();
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
        let _veto = node.add_on_set_parameters_callback(|changes| {
            match changes
                .iter()
                .any(|p| p.value == ParameterValue::Integer(7))
            {
                true => Err("seven is unlucky".into()),
                false => Ok(()),
            }
        });
        let peer = Peer::start("rclpy_peer.py", &["param_client", "/rclev_params"]);
        let out = finish_while_spinning(&executor, peer, PEER_LIMIT);
        for line in [
            "list: arm.speed gain start_type_description_service use_sim_time",
            "get: 5 1.5 None",
            "set gain=8: ok",
            "set gain=7: refused: parameter change rejected: seven is unlucky",
            "describe gain: type=2 description='loop gain' range=[(0, 10, 1)]",
            "event changed gain=8",
        ] {
            assert!(out.contains(line), "{line:?} missing from:\n{out}");
        }
        assert_eq!(node.get_parameter("gain"), Some(ParameterValue::Integer(8)));

        // The other way round: rclev's clients on rclpy's parameter services.
        let events = Arc::new(Mutex::new(Vec::<ParameterEvent>::new()));
        let e = events.clone();
        let _events = node
            .create_subscription::<ParameterEvent, _>("/parameter_events", move |m| {
                e.lock().unwrap().push((*m).clone())
            })
            .unwrap();
        let server = Peer::start("rclpy_peer.py", &["param_server", "30"]);
        let get = node
            .create_client::<GetParameters>("/rclpy_param_server/get_parameters")
            .unwrap();
        let set = node
            .create_client::<SetParameters>("/rclpy_param_server/set_parameters")
            .unwrap();
        let answers = Arc::new(Mutex::new(None));
        let a = answers.clone();
        let gain = |v: i64| ParameterMsg {
            name: "gain".into(),
            value: ParameterValue::Integer(v).to_msg(),
        };
        let errors = executor.spin(
            SpinOptions::default()
                .until_promise_resolved(async move {
                    get.wait_for_service(Some(PEER_LIMIT)).await.unwrap();
                    set.wait_for_service(Some(PEER_LIMIT)).await.unwrap();
                    let request = GetParameters_Request {
                        names: vec!["gain".into(), "label".into()],
                    };
                    let got = call_retrying(&get, request, Duration::from_secs(5), 3)
                        .await
                        .unwrap();
                    // Setting again what a lost reply applied already changes nothing.
                    let request = SetParameters_Request {
                        parameters: vec![gain(9), gain(7)],
                    };
                    let set = call_retrying(&set, request, Duration::from_secs(5), 3)
                        .await
                        .unwrap();
                    *a.lock().unwrap() = Some((got, set));
                })
                .timeout(PEER_LIMIT),
        );
        assert!(errors.is_empty(), "{errors:?}");
        let (got, set) = answers.lock().unwrap().take().expect("answers");
        assert_eq!(got.values[0].integer_value, 3);
        assert_eq!(got.values[1].string_value, "rclpy");
        assert!(set.results[0].successful);
        assert!(!set.results[1].successful);
        assert_eq!(set.results[1].reason, "seven is unlucky");
        assert!(spin_until(&executor, PEER_LIMIT, || events
            .lock()
            .unwrap()
            .iter()
            .any(|e| e.node == "/rclpy_param_server"
                && e.changed_parameters.iter().any(
                    |p| p.name == "gain" && p.value.integer_value == 9
                ))));
        let out = server.interrupt(PEER_LIMIT);
        assert!(out.contains("param_server: gain=9"), "{out}");
        // Every event the peer took decoded (one that did not would show its bytes here).
        assert!(!out.contains("undecodable event"), "{out}");
    });
}

/// rclpy asks an rclev node for the description of a type it publishes
/// (`~/get_type_description`) and finds that it hashes to the hash rclev announced.
#[test]
fn rclpy_fetches_an_rclev_type_description() {
    in_netns("rclpy_fetches_an_rclev_type_description", LIMIT, || {
        let executor = executor();
        let node = executor.create_node("described").unwrap();
        let _basics = node.create_publisher::<BasicTypes>("basic").unwrap();
        let peer = Peer::start(
            "rclpy_peer.py",
            &["type_description", "/described", "/basic"],
        );
        let out = finish_while_spinning(&executor, peer, PEER_LIMIT);
        let hash = BasicTypes::TYPE_HASH.to_string();
        assert!(
            out.contains(&format!(
                "type_description: test_msgs/msg/BasicTypes announced={hash} computed={hash}"
            )),
            "{out}"
        );
    });
}

/// rclpy hears rclev's log records on `/rosout`, with the logger name ROS 2 gives a node in a
/// namespace and the severity (late: from the transient-local history).
#[test]
fn rclpy_hears_rclevs_rosout() {
    in_netns("rclpy_hears_rclevs_rosout", LIMIT, || {
        let executor = executor();
        let node = executor
            .create_node(rclev::NodeOptions::new("rclev_logger").namespace("/ns"))
            .unwrap();
        rclev::log_info!(node, "hello {}", 1);
        rclev::log_warn!(node, "careful");
        let out = Peer::start("rclpy_peer.py", &["rosout", "ns.rclev_logger", "20", "30"])
            .finish(PEER_LIMIT);
        assert!(out.contains("rosout 20 ns.rclev_logger: hello 1"), "{out}");
        assert!(out.contains("rosout 30 ns.rclev_logger: careful"), "{out}");
    });
}

#[test]
fn rclpy_calls_an_rclev_service() {
    in_netns("rclpy_calls_an_rclev_service", LIMIT, || {
        let executor = executor();
        let node = executor.create_node("server").unwrap();
        let _service = node
            .create_service::<BasicTypesSrv, _>("rclev_service", |req: BasicTypes_Request| {
                BasicTypes_Response {
                    int64_value: 2 * req.int64_value,
                    bool_value: !req.bool_value,
                    string_value: format!("rclev answers '{}'", req.string_value),
                    ..Default::default()
                }
            })
            .unwrap();
        let client = Peer::start("rclpy_peer.py", &["client", "rclev_service", "8"]);
        let out = finish_while_spinning(&executor, client, PEER_LIMIT);
        assert!(out.contains("client: right answers 8/8"), "{out}");
    });
}

#[test]
fn rclev_calls_an_rclpy_service() {
    in_netns("rclev_calls_an_rclpy_service", LIMIT, || {
        let executor = executor();
        let node = executor.create_node("client").unwrap();
        let client = node
            .create_client::<BasicTypesSrv>("rclpy_service")
            .unwrap();
        let server = Peer::start("rclpy_peer.py", &["server", "rclpy_service", "8"]);
        let answers = Arc::new(Mutex::new(None));
        let a = answers.clone();
        let calls = async move {
            client.wait_for_service(Some(PEER_LIMIT)).await?;
            let calls = (0..8).map(|i| {
                client.call_with_timeout(
                    BasicTypes_Request {
                        int64_value: 10 * i,
                        bool_value: true,
                        string_value: format!("rclev call {i}"),
                        ..Default::default()
                    },
                    Duration::from_secs(10),
                )
            });
            let responses = futures::future::join_all(calls).await;
            *a.lock().unwrap() = Some(responses);
            Ok::<_, rclev::Error>(())
        };
        let errors = executor.spin(
            SpinOptions::default()
                .until_promise_resolved(async move { calls.await.unwrap() })
                .timeout(PEER_LIMIT),
        );
        assert!(errors.is_empty(), "{errors:?}");
        let answers = answers.lock().unwrap().take().expect("the calls finished");
        for (i, answer) in answers.into_iter().enumerate() {
            let r = answer.unwrap();
            assert_eq!(r.int64_value, 10 * i as i64 + 1);
            assert!(!r.bool_value);
            assert_eq!(r.string_value, format!("rclpy answers 'rclev call {i}'"));
        }
        let out = server.finish(PEER_LIMIT);
        assert!(out.contains("server: served"), "{out}");
    });
}

mod actions {
    use super::*;
    use futures::StreamExt;
    use rclev::{
        ActionServerOptions, CancelResponse, GoalEnd, GoalResponse, GoalState, ServerGoalHandle,
    };
    use test_msgs::action::{Fibonacci, Fibonacci_Feedback, Fibonacci_Goal, Fibonacci_Result};

    #[test]
    fn rclpy_action_client_drives_an_rclev_action_server() {
        in_netns(
            "actions::rclpy_action_client_drives_an_rclev_action_server",
            LIMIT,
            || {
                let executor = executor();
                let node = executor.create_node("fibonacci_server").unwrap();
                let _server = node
                    .create_action_server::<Fibonacci, _, _, _, _>(
                        "fibonacci",
                        ActionServerOptions::default(),
                        |_id, _goal: &Fibonacci_Goal| GoalResponse::AcceptAndExecute,
                        |_goal: &ServerGoalHandle<Fibonacci>| CancelResponse::Accept,
                        |goal: ServerGoalHandle<Fibonacci>| async move {
                            let mut sequence = vec![0, 1];
                            for i in 1..goal.goal().order as usize {
                                if goal.is_cancel_requested() {
                                    return GoalEnd::Canceled(Fibonacci_Result { sequence });
                                }
                                sequence.push(sequence[i] + sequence[i - 1]);
                                let _ = goal.publish_feedback(Fibonacci_Feedback {
                                    sequence: sequence.clone(),
                                });
                                tokio::time::sleep(Duration::from_millis(20)).await;
                            }
                            GoalEnd::Succeeded(Fibonacci_Result { sequence })
                        },
                    )
                    .unwrap();
                let client = Peer::start("rclpy_peer.py", &["action_client", "fibonacci"]);
                let out = finish_while_spinning(&executor, client, PEER_LIMIT);
                assert!(
                    out.contains("action_client: result [0, 1, 1, 2, 3, 5, 8] status 4"),
                    "{out}"
                );
                assert!(out.contains("canceled goal status 5"), "{out}");
            },
        );
    }

    #[test]
    fn rclev_action_client_drives_an_rclpy_action_server() {
        in_netns(
            "actions::rclev_action_client_drives_an_rclpy_action_server",
            LIMIT,
            || {
                let executor = executor();
                let node = executor.create_node("fibonacci_client").unwrap();
                let client = node.create_action_client::<Fibonacci>("fibonacci").unwrap();
                let server = Peer::start("rclpy_peer.py", &["action_server", "fibonacci"]);
                let outcome = Arc::new(Mutex::new(None));
                let o = outcome.clone();
                let run = async move {
                    client.wait_for_server(Some(PEER_LIMIT)).await?;
                    let goal = client.send_goal(Fibonacci_Goal { order: 6 }).await?;
                    let mut feedback = goal.feedback()?;
                    let mut seen = 0;
                    while feedback.next().await.is_some() {
                        seen += 1;
                    }
                    let (state, result) = goal.result().await?;
                    // A long goal, canceled after its first feedback.
                    let long = client.send_goal(Fibonacci_Goal { order: 1000 }).await?;
                    let mut long_feedback = long.feedback()?;
                    long_feedback.next().await;
                    let cancel = long.cancel().await?;
                    let (long_state, _) = long.result().await?;
                    *o.lock().unwrap() =
                        Some((state, result.sequence, seen, cancel.return_code, long_state));
                    Ok::<_, rclev::Error>(())
                };
                let errors = executor.spin(
                    SpinOptions::default()
                        .until_promise_resolved(async move { run.await.unwrap() })
                        .timeout(PEER_LIMIT),
                );
                assert!(errors.is_empty(), "{errors:?}");
                let (state, sequence, seen, cancel_code, long_state) =
                    outcome.lock().unwrap().take().expect("the goals finished");
                assert_eq!(state, GoalState::Succeeded);
                assert_eq!(sequence, vec![0, 1, 1, 2, 3, 5, 8]);
                assert!(seen > 0, "feedback arrived");
                assert_eq!(cancel_code, 0);
                assert_eq!(long_state, GoalState::Canceled);
                let out = server.finish(PEER_LIMIT);
                assert!(out.contains("succeeded"), "{out}");
            },
        );
    }
}

#[test]
fn an_rclev_sim_time_timer_follows_rclpys_clock() {
    use rclev::interfaces::rosgraph_msgs::msg::Clock;
    use rclev::{IntoTimerOptions, NodeOptions, TimerInfo};
    use std::time::Instant;
    in_netns(
        "an_rclev_sim_time_timer_follows_rclpys_clock",
        LIMIT,
        || {
            const BASE: i64 = 1_000_000_000_000; // 1000 s
            const MS: i64 = 1_000_000;
            let executor = executor();
            let node = executor
                .create_node(NodeOptions::new("sim_node").parameter_override("use_sim_time", true))
                .unwrap();
            // Wall instants at which /clock stood still: the pause, as rclev saw it.
            let last = Arc::new(Mutex::new((i64::MIN, Vec::<(Instant, bool)>::new())));
            let l = last.clone();
            let _watch = node
                .create_subscription::<Clock, _>("/clock", move |c| {
                    let ns = c.clock.sec as i64 * 1_000_000_000 + c.clock.nanosec as i64;
                    let mut l = l.lock().unwrap();
                    let paused = ns == l.0;
                    l.0 = ns;
                    l.1.push((Instant::now(), paused));
                })
                .unwrap();
            let calls = Arc::new(Mutex::new(Vec::<(Instant, TimerInfo)>::new()));
            let c = calls.clone();
            let _timer = node
                .create_timer_repeating(
                    Duration::from_millis(100).node_time(),
                    move |i: TimerInfo| c.lock().unwrap().push((Instant::now(), i)),
                )
                .unwrap();
            let peer = Peer::start("rclpy_peer.py", &["clock", "1000"]);
            let done = Arc::new(Mutex::new(None));
            let d = done.clone();
            std::thread::spawn(move || *d.lock().unwrap() = Some(peer.finish(PEER_LIMIT)));
            let end = BASE + 3_000 * MS;
            assert!(spin_until(&executor, PEER_LIMIT, || {
                done.lock().unwrap().is_some() && node.get_clock().now().nanos == end
            }));
            let _ = executor.spin(SpinOptions::default().timeout(Duration::from_millis(100)));
            // The first /clock jumps from 0 to 1000 s: one call for the ticks missed on the way.
            let calls: Vec<_> = calls
                .lock()
                .unwrap()
                .iter()
                .filter(|(_, i)| i.expected_call_time.nanos > BASE)
                .cloned()
                .collect();
            // Every 100 ms grid point from the first /clock to the last fired or was counted
            // missed: 10 at 1x, none while paused, 20 at 2x.
            let fired: Vec<i64> = calls
                .iter()
                .map(|(_, i)| i.expected_call_time.nanos)
                .collect();
            // The first call counts as missed the grid points on the way from 0 to the first
            // /clock rclev saw. That is 1000 s when it sees the peer's first message, but on a
            // busy host that one can go out before the subscription matched (the topic is
            // volatile): then only the points after 1000 s count here.
            let missed: u64 = calls
                .iter()
                .enumerate()
                .map(|(k, (_, i))| match k {
                    0 => {
                        let after_base = (i.expected_call_time.nanos - BASE) / (100 * MS) - 1;
                        i.missed_ticks.min(after_base.max(0) as u64)
                    }
                    _ => i.missed_ticks,
                })
                .sum();
            assert_eq!(fired.len() as u64 + missed, 30, "{fired:?}");
            assert!(
                fired.iter().all(|t| (t - BASE) % (100 * MS) == 0),
                "{fired:?}"
            );
            let at_double_speed = fired.iter().filter(|t| **t > BASE + 1_000 * MS).count() as u64;
            assert!(at_double_speed >= 18, "{fired:?}");
            // Nothing fired while the clock stood still (between the second and the last paused
            // /clock rclev received, so a tick released just before the pause may finish).
            let clock = last.lock().unwrap().1.clone();
            let paused: Vec<Instant> = clock.iter().filter(|(_, p)| *p).map(|(t, _)| *t).collect();
            assert!(paused.len() >= 50, "the pause reached rclev");
            let (from, to) = (paused[1], paused[paused.len() - 30]);
            let during: Vec<_> = calls
                .iter()
                .filter(|(t, _)| *t > from && *t < to)
                .map(|(_, i)| i.expected_call_time.nanos)
                .collect();
            assert!(during.is_empty(), "fired while paused: {during:?}");
            let out = done.lock().unwrap().take().unwrap();
            assert!(out.contains("clock: ended"), "{out}");
        },
    );
}

mod qos {
    use super::*;
    use rclev::qos::{QosEvent, QosPolicyKind};
    use rclev::{IntoPrimitiveOptions, QoSProfile};

    #[test]
    fn a_late_rclpy_subscription_gets_rclevs_transient_local_history() {
        in_netns(
            "qos::a_late_rclpy_subscription_gets_rclevs_transient_local_history",
            LIMIT,
            || {
                let executor = executor();
                let node = executor.create_node("latched_talker").unwrap();
                let latched = QoSProfile::default().keep_last(5).transient_local();
                let publisher = node
                    .create_publisher::<StringMsg>("latched".qos(latched))
                    .unwrap();
                for i in 0..3 {
                    publisher
                        .publish(StringMsg {
                            data: format!("hello from rclpy {i}"),
                        })
                        .unwrap();
                }
                // The subscription joins after the three were published.
                let listener = Peer::start(
                    "rclpy_peer.py",
                    &["listener", "latched", "string", "3", "5,tl"],
                );
                let out = listener.finish(PEER_LIMIT);
                assert!(out.contains("listener: received 3"), "{out}");
            },
        );
    }

    #[test]
    fn a_late_rclev_subscription_gets_rclpys_transient_local_history() {
        in_netns(
            "qos::a_late_rclev_subscription_gets_rclpys_transient_local_history",
            LIMIT,
            || {
                let executor = executor();
                let node = executor.create_node("late_listener").unwrap();
                let talker = Peer::start(
                    "rclpy_peer.py",
                    &["talker", "latched", "string", "3", "5,tl", "0"],
                );
                // The publisher is there and has published (it does so at once, within 60 ms).
                assert!(eventually(PEER_LIMIT, || node
                    .count_publishers("/latched")
                    .unwrap_or(0)
                    == 1));
                std::thread::sleep(Duration::from_millis(500));
                let heard = Arc::new(Mutex::new(Vec::new()));
                let h = heard.clone();
                let latched = QoSProfile::default().keep_last(5).transient_local();
                let _sub = node
                    .create_subscription::<StringMsg, _>("latched".qos(latched), move |m| {
                        h.lock().unwrap().push(m.data.clone())
                    })
                    .unwrap();
                assert!(spin_until(&executor, PEER_LIMIT, || heard
                    .lock()
                    .unwrap()
                    .len()
                    == 3));
                assert_eq!(
                    *heard.lock().unwrap(),
                    (0..3)
                        .map(|i| format!("hello from rclpy {i}"))
                        .collect::<Vec<_>>()
                );
                talker.finish(PEER_LIMIT);
            },
        );
    }

    fn incompatible(events: &Arc<Mutex<Vec<QosEvent>>>) -> Option<QosPolicyKind> {
        events.lock().unwrap().iter().find_map(|e| match e {
            QosEvent::OfferedIncompatibleQos(s) | QosEvent::RequestedIncompatibleQos(s) => {
                Some(s.last_policy_kind)
            }
            _ => None,
        })
    }

    #[test]
    fn an_incompatible_pair_reports_the_clash_on_both_sides() {
        in_netns(
            "qos::an_incompatible_pair_reports_the_clash_on_both_sides",
            LIMIT,
            || {
                let executor = executor();
                let node = executor.create_node("clash").unwrap();
                // rclev offers best effort to a reliable rclpy subscription.
                let offered = Arc::new(Mutex::new(Vec::new()));
                let o = offered.clone();
                let publisher = node
                    .create_publisher::<StringMsg>("clash_a".qos(QoSProfile::sensor_data()))
                    .unwrap();
                publisher.set_event_handler(move |e| o.lock().unwrap().push(e));
                let rclpy_sub = Peer::start("rclpy_peer.py", &["incompatible_sub", "clash_a"]);
                // rclev requests reliable from a best-effort rclpy publisher.
                let requested = Arc::new(Mutex::new(Vec::new()));
                let r = requested.clone();
                let sub = node
                    .create_subscription::<StringMsg, _>("clash_b", |_| {})
                    .unwrap();
                sub.set_event_handler(move |e| r.lock().unwrap().push(e));
                let rclpy_pub = Peer::start("rclpy_peer.py", &["incompatible_pub", "clash_b"]);
                assert!(spin_until(&executor, PEER_LIMIT, || {
                    incompatible(&offered).is_some() && incompatible(&requested).is_some()
                }));
                assert_eq!(incompatible(&offered), Some(QosPolicyKind::Reliability));
                assert_eq!(incompatible(&requested), Some(QosPolicyKind::Reliability));
                let out = rclpy_sub.finish(PEER_LIMIT);
                assert!(out.contains("RELIABILITY"), "{out}");
                let out = rclpy_pub.finish(PEER_LIMIT);
                assert!(out.contains("RELIABILITY"), "{out}");
            },
        );
    }
}
