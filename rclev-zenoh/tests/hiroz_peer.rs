//! rclev-zenoh against an independent implementation of rmw_zenoh's wire: hiroz (the Zenoh
//! authors' ROS 2 stack in Rust, `peers/hiroz-peer`, built once by `.ci/zenoh-peers`, run by
//! `.ci/oracles`), through a Zenoh router that is not rclev's embedded one: zenoh-python's
//! (`tests/peers/zenoh_router.py`, the Zenoh 1.10.2 runtime zenohd runs), in a loopback-only
//! namespace.
//!
//! Each side sees the other in its graph; topics, services and actions work in both
//! directions. GIDs are not compared: hiroz derives them its own way (the byte-exact checks of
//! rclev's GIDs are in `rmw_zenoh_peer.rs`).

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rclev::interfaces::example_interfaces::srv::{
    AddTwoInts, AddTwoInts_Request, AddTwoInts_Response,
};
use rclev::interfaces::std_msgs::msg::String as StringMsg;
use rclev::msg::{Message, ServiceType};
use rclev::transport::EndpointKind;
use rclev::{Executor, SpinOptions};

use common::{executor, in_netns, spin_until, PeerProcess};

const LIMIT: Duration = Duration::from_secs(180);
const WAIT: Duration = Duration::from_secs(60);

/// A Zenoh router (zenoh-python's) on rmw_zenoh's router endpoint, no multicast scouting,
/// listening when this returns; killed when dropped.
fn zenoh_router() -> PeerProcess {
    let mut router = PeerProcess::python("zenoh_router.py", &["tcp/127.0.0.1:7447"]);
    router.line("ready", WAIT);
    router
}

/// Spins `executor` on a thread of its own until the returned guard is dropped.
struct Spinning {
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Spinning {
    fn start(executor: Executor) -> Self {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::spawn(move || {
            while !s.load(std::sync::atomic::Ordering::Relaxed) {
                let errors =
                    executor.spin(SpinOptions::default().timeout(Duration::from_millis(50)));
                assert!(errors.is_empty(), "{errors:?}");
            }
        });
        Self {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Spinning {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let joined = thread.join();
            if !std::thread::panicking() {
                joined.expect("the spinning thread");
            }
        }
    }
}

/// A hiroz talker's messages reach an rclev subscription, and rclev's graph shows the hiroz
/// node and its publisher; an rclev publisher's messages reach a hiroz listener.
#[test]
fn topics_flow_both_ways_between_rclev_and_hiroz() {
    in_netns(
        "topics_flow_both_ways_between_rclev_and_hiroz",
        &[],
        LIMIT,
        || {
            let _router = zenoh_router();
            let (_transport, executor) = executor();
            let node = executor.create_node("rclev_node").unwrap();
            let heard = Arc::new(Mutex::new(Vec::<String>::new()));
            let h = heard.clone();
            let _subscription = node
                .create_subscription::<StringMsg, _>("/from_hiroz", move |m| {
                    h.lock().unwrap().push(m.data.clone())
                })
                .unwrap();
            let mut talker = PeerProcess::program("hiroz-peer", &["talk", "/from_hiroz"]);
            talker.line("ready", WAIT);
            assert!(
                spin_until(&executor, WAIT, || heard.lock().unwrap().len() >= 10),
                "heard {:?}",
                heard.lock().unwrap()
            );
            // Every one is the talker's, and once flowing none is lost in between (the talker
            // counts from 1; the first ones may predate the match, and the first few may take
            // the router before the sessions' direct link is up).
            let heard = heard.lock().unwrap().clone();
            let numbers: Vec<u64> = heard
                .iter()
                .map(|d| {
                    d.strip_prefix("hiroz ")
                        .and_then(|n| n.parse().ok())
                        .unwrap_or_else(|| panic!("unexpected data {d:?}"))
                })
                .collect();
            let tail = &numbers[numbers.len() - 5..];
            assert!(tail.windows(2).all(|w| w[1] == w[0] + 1), "{numbers:?}");
            // The graph shows the hiroz node and its publisher, with the type's official hash.
            let seen = spin_until(&executor, WAIT, || {
                let nodes = node.get_node_names();
                let publishers = node.get_publishers_info_by_topic("/from_hiroz").unwrap();
                nodes.iter().any(|n| n.name == "hiroz_talker")
                    && publishers.iter().any(|e| {
                        e.node.name == "hiroz_talker"
                            && e.type_name == "std_msgs/msg/String"
                            && e.type_hash == StringMsg::TYPE_HASH
                    })
            });
            assert!(
                seen,
                "{:?} {:?}",
                node.get_node_names(),
                node.get_publishers_info_by_topic("/from_hiroz")
            );
            drop(talker);

            let publisher = node.create_publisher::<StringMsg>("/to_hiroz").unwrap();
            let mut listener = PeerProcess::program("hiroz-peer", &["listen", "/to_hiroz", "3"]);
            listener.line("ready", WAIT);
            // Published until the listener is matched (a volatile topic: what is sent before
            // the match goes nowhere), then three in a row.
            assert!(
                spin_until(&executor, WAIT, || publisher.get_subscription_count() > 0),
                "the hiroz listener never matched"
            );
            for i in 0..3 {
                publisher
                    .publish(StringMsg {
                        data: format!("rclev {i}"),
                    })
                    .unwrap();
            }
            let mut got: Vec<String> = (0..3).map(|_| listener.line("heard ", WAIT)).collect();
            got.sort();
            assert_eq!(got, ["rclev 0", "rclev 1", "rclev 2"]);
            assert!(listener.wait_success(WAIT), "{:?}", listener.seen);
        },
    );
}

/// A hiroz client calls an rclev service, and an rclev client calls a hiroz service.
#[test]
fn services_work_both_ways_between_rclev_and_hiroz() {
    in_netns(
        "services_work_both_ways_between_rclev_and_hiroz",
        &[],
        LIMIT,
        || {
            let _router = zenoh_router();
            // The rclev server spins on a thread of its own, the rclev client here.
            let (_ta, serving) = executor();
            let (_tb, executor) = executor();
            let server_node = serving.create_node("rclev_adder").unwrap();
            let _service = server_node
                .create_service::<AddTwoInts, _>("/rclev_add", |r: AddTwoInts_Request| {
                    AddTwoInts_Response { sum: r.a + r.b }
                })
                .unwrap();
            let _spinning = Spinning::start(serving);
            let node = executor.create_node("rclev_caller").unwrap();
            let client = node.create_client::<AddTwoInts>("/hiroz_add").unwrap();
            let mut server = PeerProcess::program("hiroz-peer", &["serve", "/hiroz_add"]);
            server.line("ready", WAIT);

            let mut caller = PeerProcess::program("hiroz-peer", &["call", "/rclev_add", "40", "2"]);
            assert_eq!(caller.line("sum ", WAIT), "42");
            assert!(caller.wait_success(WAIT), "{:?}", caller.seen);

            let answer = Arc::new(Mutex::new(None));
            let a = answer.clone();
            let call = async move {
                client.wait_for_service(Some(WAIT)).await.unwrap();
                let response = client
                    .call_with_timeout(AddTwoInts_Request { a: 1000, b: 337 }, WAIT)
                    .await;
                *a.lock().unwrap() = Some(response);
            };
            let errors = executor.spin(
                SpinOptions::default()
                    .until_promise_resolved(call)
                    .timeout(LIMIT),
            );
            assert!(errors.is_empty(), "{errors:?}");
            let response = answer.lock().unwrap().take().expect("the call ran");
            assert_eq!(response.expect("hiroz's reply").sum, 1337);
            assert_eq!(server.line("request ", WAIT), "1000 337");
        },
    );
}

/// A hiroz action client's goal runs on an rclev action server (feedback, then the result),
/// and an rclev action client's goal runs on a hiroz action server.
#[test]
fn actions_work_both_ways_between_rclev_and_hiroz() {
    in_netns(
        "actions_work_both_ways_between_rclev_and_hiroz",
        &[],
        LIMIT,
        || {
            use rclev::interfaces::example_interfaces::action::{
                Fibonacci, Fibonacci_Feedback, Fibonacci_Goal, Fibonacci_Result,
            };
            use rclev::{
                ActionServerOptions, CancelResponse, GoalEnd, GoalResponse, GoalState,
                ServerGoalHandle,
            };
            let _router = zenoh_router();
            // The rclev server spins on a thread of its own, the rclev client here.
            let (_ta, serving) = executor();
            let (_tb, executor) = executor();
            let server_node = serving.create_node("rclev_fib_server").unwrap();
            let _server = server_node
                .create_action_server::<Fibonacci, _, _, _, _>(
                    "/rclev_fibonacci",
                    ActionServerOptions::default(),
                    |_id, _goal: &Fibonacci_Goal| GoalResponse::AcceptAndExecute,
                    |_h: &ServerGoalHandle<Fibonacci>| CancelResponse::Accept,
                    |handle: ServerGoalHandle<Fibonacci>| async move {
                        let mut sequence = vec![0, 1];
                        for i in 1..handle.goal().order as usize {
                            sequence.push(sequence[i] + sequence[i - 1]);
                            handle
                                .publish_feedback(Fibonacci_Feedback {
                                    sequence: sequence.clone(),
                                })
                                .unwrap();
                        }
                        GoalEnd::Succeeded(Fibonacci_Result { sequence })
                    },
                )
                .unwrap();
            let _spinning = Spinning::start(serving);
            let node = executor.create_node("rclev_fib_client").unwrap();
            let client = node
                .create_action_client::<Fibonacci>("/hiroz_fibonacci")
                .unwrap();
            let mut server =
                PeerProcess::program("hiroz-peer", &["action-serve", "/hiroz_fibonacci"]);
            server.line("ready", WAIT);

            let mut sender =
                PeerProcess::program("hiroz-peer", &["action-send", "/rclev_fibonacci", "8"]);
            sender.line("accepted", WAIT);
            assert_eq!(sender.line("result ", WAIT), "0,1,1,2,3,5,8,13,21");
            assert!(sender.wait_success(WAIT), "{:?}", sender.seen);

            let out = Arc::new(Mutex::new(None));
            let o = out.clone();
            let feedback = Arc::new(Mutex::new(Vec::new()));
            let f = feedback.clone();
            // hiroz 0.2.1 announces its cancel service with a CancelGoal hash that is not
            // Jazzy's (022cb8eb… against 573d8b0a… in the action_msgs wheel), so that service
            // never matches ours (nor an rmw_zenoh node's: the hash is in the key expression)
            // and `wait_for_server`, which wants all three services, would not return. The
            // goal and result services match: wait for those, and check the discrepancy.
            let ready = spin_until(&executor, WAIT, || {
                let graph = node.graph();
                let served = |name: &str, hash: rclev::msg::TypeHash| {
                    graph
                        .endpoints_of(name, EndpointKind::Service)
                        .iter()
                        .any(|e| e.type_hash == hash)
                };
                served(
                    "/hiroz_fibonacci/_action/send_goal",
                    <Fibonacci as rclev::msg::ActionType>::SendGoal::TYPE_HASH,
                ) && served(
                    "/hiroz_fibonacci/_action/get_result",
                    <Fibonacci as rclev::msg::ActionType>::GetResult::TYPE_HASH,
                ) && !graph
                    .endpoints_of(
                        "/hiroz_fibonacci/_action/cancel_goal",
                        EndpointKind::Service,
                    )
                    .is_empty()
            });
            assert!(ready, "hiroz's action server is not in the graph");
            let cancel = node.graph().endpoints_of(
                "/hiroz_fibonacci/_action/cancel_goal",
                EndpointKind::Service,
            );
            assert!(
                cancel.iter().all(|e| e.type_hash
                    != <rclev::interfaces::action_msgs::srv::CancelGoal as ServiceType>::TYPE_HASH),
                "hiroz's CancelGoal hash is Jazzy's now: wait_for_server can be used ({cancel:?})"
            );
            let goal = async move {
                let handle = client.send_goal(Fibonacci_Goal { order: 5 }).await.unwrap();
                let mut stream = handle.feedback().expect("the feedback stream");
                let collect = async {
                    while let Some(fb) = stream.recv().await {
                        f.lock().unwrap().push(fb.sequence.len());
                    }
                };
                // The stream ends with the goal.
                let (result, ()) = tokio::join!(handle.result(), collect);
                let (state, result) = result.unwrap();
                *o.lock().unwrap() = Some((state, result.sequence));
            };
            let errors = executor.spin(
                SpinOptions::default()
                    .until_promise_resolved(goal)
                    .timeout(LIMIT),
            );
            assert!(errors.is_empty(), "{errors:?}");
            let (state, sequence) = out.lock().unwrap().take().expect("the goal ended");
            assert_eq!(state, GoalState::Succeeded);
            assert_eq!(sequence, [0, 1, 1, 2, 3, 5]);
            assert!(
                !feedback.lock().unwrap().is_empty(),
                "no feedback from hiroz"
            );
        },
    );
}

/// hiroz's graph shows the rclev node and its publisher (rclev's graph showing hiroz's is
/// checked in `topics_flow_both_ways_between_rclev_and_hiroz`).
#[test]
fn hiroz_sees_the_rclev_node_in_its_graph() {
    in_netns("hiroz_sees_the_rclev_node_in_its_graph", &[], LIMIT, || {
        let _router = zenoh_router();
        let (_transport, executor) = executor();
        let node = executor.create_node("rclev_seen").unwrap();
        let _publisher = node.create_publisher::<StringMsg>("/seen_topic").unwrap();
        let mut observer =
            PeerProcess::program("hiroz-peer", &["graph", "rclev_seen", "/seen_topic"]);
        assert!(observer.wait_success(WAIT), "{:?}", observer.seen);
        // Its lines were all printed before it exited; `line` reads them in order.
        let mut lines = Vec::new();
        loop {
            let line = observer.line("", WAIT);
            if line == "done" {
                break;
            }
            lines.push(line);
        }
        assert!(lines.iter().any(|l| l == "node / rclev_seen"), "{lines:?}");
        // hiroz lists a topic's type as the DDS name in the token.
        assert!(
            lines
                .iter()
                .any(|l| l == "topic /seen_topic std_msgs::msg::dds_::String_"),
            "{lines:?}"
        );
    });
}
