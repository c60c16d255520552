//! rclev against a real ROS 2 Jazzy node: rclpy 7.1.6 on rmw_fastrtps_cpp 8.4.3 with Fast
//! DDS 2.14.5, installed from PyPI into the oracle venv. Each test runs in a network
//! namespace of its own (see `common`).

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{eventually, in_netns, Peer};
use rclev::interfaces::std_msgs::msg::String as StringMsg;
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

/// Spins `executor` until `done` holds (checked every 50 ms), at most `limit`.
fn spin_until(executor: &Executor, limit: Duration, done: impl Fn() -> bool) -> bool {
    let deadline = std::time::Instant::now() + limit;
    while !done() && std::time::Instant::now() < deadline {
        for e in executor.spin(SpinOptions::default().timeout(Duration::from_millis(50))) {
            panic!("error while spinning: {e}");
        }
    }
    done()
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
            .create_subscription::<BasicTypes, _>("basic", move |m| {
                b.lock().unwrap().push((*m).clone())
            })
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
        // rclpy sees rclev's writer with the type hash rclev announced.
        let graph = node.get_publishers_info_by_topic("/chatter").unwrap();
        assert_eq!(graph.len(), 1);
        assert_eq!(graph[0].type_name, "std_msgs/msg/String");
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
        let done = Arc::new(Mutex::new(None));
        let d = done.clone();
        std::thread::spawn(move || *d.lock().unwrap() = Some(client.finish(PEER_LIMIT)));
        assert!(spin_until(&executor, PEER_LIMIT, || done
            .lock()
            .unwrap()
            .is_some()));
        let out = done.lock().unwrap().take().unwrap();
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
