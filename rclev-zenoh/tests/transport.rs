//! rclev ↔ rclev over the Zenoh transport: two transports (two sessions, as two processes
//! would have) meeting through the embedded router, in a loopback-only namespace of their own.
//! Topics carry messages with rmw_zenoh's attachment (the publisher's GID and sequence numbers
//! reach the subscriber's message info), the graph lists nodes and endpoints from liveliness
//! tokens on both sides and forgets them when they go, services answer calls, and a call to
//! no server fails with a typed error.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rclev::interfaces::std_msgs::msg::String as StringMsg;
use rclev::interfaces::std_srvs::srv::{SetBool, SetBool_Request};
use rclev::SpinOptions;
use rclev_zenoh::{Router, ZenohOptions};

use common::{eventually, executor, in_netns, spin_until};

const LIMIT: Duration = Duration::from_secs(120);
const MEET: Duration = Duration::from_secs(30);

#[test]
fn two_transports_exchange_messages_and_see_each_others_graph() {
    in_netns(
        "two_transports_exchange_messages_and_see_each_others_graph",
        &[],
        LIMIT,
        || {
            let _router = Router::start(&ZenohOptions::default()).expect("a router");
            let (_ta, a) = executor();
            let (tb, b) = executor();
            let talker = a.create_node("talker").unwrap();
            let listener = b
                .create_node(rclev::NodeOptions::new("listener").namespace("/ns"))
                .unwrap();
            let publisher = talker.create_publisher::<StringMsg>("/chatter").unwrap();
            let heard = Arc::new(Mutex::new(Vec::new()));
            let h = heard.clone();
            let _subscription = listener
                .create_subscription_with_info::<StringMsg, _>(
                    "/chatter",
                    move |m: Arc<StringMsg>, info: rclev::transport::MessageInfo| {
                        h.lock().unwrap().push((m.data.clone(), info))
                    },
                )
                .unwrap();

            // Each side lists the other's node and endpoints, from their tokens.
            assert!(
                eventually(MEET, || (publisher.get_subscription_count() == 1
                    && talker
                        .get_node_names_and_namespaces()
                        .contains(&("listener".into(), "/ns".into()))
                    && listener
                        .get_publishers_info_by_topic("/chatter")
                        .unwrap()
                        .iter()
                        .any(|p| p.node.name == "talker" && p.gid == publisher.gid()))
                .then_some(()))
                .is_some(),
                "the graphs did not meet: {:?}",
                listener.get_node_names_and_namespaces()
            );
            // Every node's own topics (/rosout, /parameter_events) are listed too.
            let topics = listener.get_topic_names_and_types();
            for (name, ty) in [
                ("/chatter", "std_msgs/msg/String"),
                ("/rosout", "rcl_interfaces/msg/Log"),
            ] {
                assert!(
                    topics.contains(&(name.to_string(), vec![ty.to_string()])),
                    "{topics:?}"
                );
            }

            for i in 0..5 {
                publisher
                    .publish(StringMsg {
                        data: format!("hello {i}"),
                    })
                    .unwrap();
            }
            assert!(spin_until(&b, MEET, || heard.lock().unwrap().len() == 5));
            let heard = heard.lock().unwrap();
            for (i, (data, info)) in heard.iter().enumerate() {
                assert_eq!(data, &format!("hello {i}"));
                assert_eq!(info.publisher_gid, publisher.gid());
                assert_eq!(info.publication_sequence_number, i as u64 + 1);
                assert_eq!(info.reception_sequence_number, i as u64 + 1);
                assert!(!info.from_intra_process);
            }
            drop(heard);

            // A node that goes is forgotten by the other side.
            drop(publisher);
            drop(talker);
            assert!(eventually(MEET, || (!listener
                .get_node_names_and_namespaces()
                .contains(&("talker".into(), "/".into())))
            .then_some(()))
            .is_some());
            assert_eq!(tb.refused_token_count(), 0);
        },
    );
}

#[test]
fn a_service_answers_calls_across_transports() {
    in_netns(
        "a_service_answers_calls_across_transports",
        &[],
        LIMIT,
        || {
            let _router = Router::start(&ZenohOptions::default()).expect("a router");
            let (_ta, a) = executor();
            let (_tb, b) = executor();
            let server = a.create_node("server").unwrap();
            let _service = server
                .create_service::<SetBool, _>("/flip", |req: SetBool_Request| {
                    rclev::interfaces::std_srvs::srv::SetBool_Response {
                        success: !req.data,
                        message: format!("got {}", req.data),
                    }
                })
                .unwrap();
            let caller = b.create_node("caller").unwrap();
            let client = caller.create_client::<SetBool>("/flip").unwrap();
            let nobody = caller.create_client::<SetBool>("/nobody").unwrap();
            let answers = Arc::new(Mutex::new(None));
            let out = answers.clone();
            let calls = async move {
                client.wait_for_service(Some(MEET)).await.unwrap();
                let mut got = Vec::new();
                for data in [true, false, true] {
                    let r = client
                        .call_with_timeout(SetBool_Request { data }, Duration::from_secs(20))
                        .await
                        .unwrap();
                    got.push((r.success, r.message));
                }
                let unavailable = nobody
                    .call_with_timeout(SetBool_Request { data: true }, Duration::from_secs(20))
                    .await;
                *out.lock().unwrap() = Some((got, unavailable));
            };
            // The server's executor spins on a thread of its own.
            let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let s = stop.clone();
            let serving = std::thread::spawn(move || {
                while !s.load(std::sync::atomic::Ordering::Relaxed) {
                    let errors = a.spin(SpinOptions::default().timeout(Duration::from_millis(50)));
                    assert!(errors.is_empty(), "{errors:?}");
                }
            });
            let errors = b.spin(
                SpinOptions::default()
                    .until_promise_resolved(calls)
                    .timeout(LIMIT),
            );
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            serving.join().unwrap();
            assert!(errors.is_empty(), "{errors:?}");
            let (got, unavailable) = answers.lock().unwrap().take().expect("the calls ran");
            assert_eq!(
                got,
                vec![
                    (false, "got true".to_string()),
                    (true, "got false".to_string()),
                    (false, "got true".to_string())
                ]
            );
            assert!(
                matches!(unavailable, Err(rclev::Error::ServiceUnavailable(_))),
                "{unavailable:?}"
            );
        },
    );
}

/// TRANSIENT_LOCAL: a subscription that comes after the messages were published still gets
/// the last `depth` of them from the publisher's cache (zenoh-ext's advanced publisher and
/// subscriber, as rmw_zenoh), and then the live ones.
#[test]
fn a_late_transient_local_subscription_gets_the_history() {
    in_netns(
        "a_late_transient_local_subscription_gets_the_history",
        &[],
        LIMIT,
        || {
            use rclev::IntoPrimitiveOptions;
            let _router = Router::start(&ZenohOptions::default()).expect("a router");
            let (_ta, a) = executor();
            let (_tb, b) = executor();
            let latched = rclev::QoSProfile::default().keep_last(3).transient_local();
            let talker = a.create_node("latcher").unwrap();
            let publisher = talker
                .create_publisher::<StringMsg>("/latched".qos(latched))
                .unwrap();
            for i in 0..5 {
                publisher
                    .publish(StringMsg {
                        data: format!("old {i}"),
                    })
                    .unwrap();
            }
            let listener = b.create_node("late").unwrap();
            let heard = Arc::new(Mutex::new(Vec::new()));
            let h = heard.clone();
            let _subscription = listener
                .create_subscription::<StringMsg, _>("/latched".qos(latched), move |m| {
                    h.lock().unwrap().push(m.data.clone())
                })
                .unwrap();
            assert!(
                spin_until(&b, MEET, || heard.lock().unwrap().len() >= 3),
                "{:?}",
                heard.lock().unwrap()
            );
            assert_eq!(*heard.lock().unwrap(), ["old 2", "old 3", "old 4"]);
            publisher.publish(StringMsg { data: "new".into() }).unwrap();
            assert!(spin_until(&b, MEET, || heard.lock().unwrap().len() == 4));
            assert_eq!(heard.lock().unwrap()[3], "new");
        },
    );
}

/// An action across two transports (its three services and two topics over Zenoh): the goal
/// is accepted, feedback is published, and the result comes back.
#[test]
fn an_action_runs_across_transports() {
    in_netns("an_action_runs_across_transports", &[], LIMIT, || {
        use rclev::interfaces::example_interfaces::action::{
            Fibonacci, Fibonacci_Feedback, Fibonacci_Goal, Fibonacci_Result,
        };
        use rclev::{
            ActionServerOptions, CancelResponse, GoalEnd, GoalResponse, GoalState, ServerGoalHandle,
        };
        let _router = Router::start(&ZenohOptions::default()).expect("a router");
        let (_ta, a) = executor();
        let (_tb, b) = executor();
        let server_node = a.create_node("fib_server").unwrap();
        let _server = server_node
            .create_action_server::<Fibonacci, _, _, _, _>(
                "/fibonacci",
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
        let client_node = b.create_node("fib_client").unwrap();
        let client = client_node
            .create_action_client::<Fibonacci>("/fibonacci")
            .unwrap();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let s = stop.clone();
        let serving = std::thread::spawn(move || {
            while !s.load(std::sync::atomic::Ordering::Relaxed) {
                let errors = a.spin(SpinOptions::default().timeout(Duration::from_millis(50)));
                assert!(errors.is_empty(), "{errors:?}");
            }
        });
        let out = Arc::new(Mutex::new(None));
        let o = out.clone();
        let goal = async move {
            client.wait_for_server(Some(MEET)).await.unwrap();
            let handle = client.send_goal(Fibonacci_Goal { order: 8 }).await.unwrap();
            let (state, result) = handle.result().await.unwrap();
            *o.lock().unwrap() = Some((state, result.sequence));
        };
        let errors = b.spin(
            SpinOptions::default()
                .until_promise_resolved(goal)
                .timeout(LIMIT),
        );
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        serving.join().unwrap();
        assert!(errors.is_empty(), "{errors:?}");
        let (state, sequence) = out.lock().unwrap().take().expect("the goal ended");
        assert_eq!(state, GoalState::Succeeded);
        assert_eq!(sequence, [0, 1, 1, 2, 3, 5, 8, 13, 21]);
    });
}

/// Simulation time over Zenoh: a node with `use_sim_time` follows the `/clock` another
/// transport publishes.
#[test]
fn sim_time_follows_a_clock_published_over_zenoh() {
    in_netns(
        "sim_time_follows_a_clock_published_over_zenoh",
        &[],
        LIMIT,
        || {
            use rclev::interfaces::builtin_interfaces::msg::Time as TimeMsg;
            use rclev::interfaces::rosgraph_msgs::msg::Clock as ClockMsg;
            let _router = Router::start(&ZenohOptions::default()).expect("a router");
            let (_ta, a) = executor();
            let (_tb, b) = executor();
            let driver = a.create_node("clock_driver").unwrap();
            let clock_pub = driver.create_publisher::<ClockMsg>("/clock").unwrap();
            let node = b
                .create_node(
                    rclev::NodeOptions::new("sim_node").parameter_override("use_sim_time", true),
                )
                .unwrap();
            let clock = node.get_clock();
            assert!(clock.is_sim_time_active());
            let at = 42_000_000_123i64;
            // Published until it is heard: /clock is volatile, a message sent before the
            // subscription reached the publisher goes nowhere.
            assert!(spin_until(&b, MEET, || {
                clock_pub
                    .publish(ClockMsg {
                        clock: TimeMsg::from_nanos(at),
                    })
                    .unwrap();
                clock.now().nanos == at
            }));
        },
    );
}

/// `/rosout` over Zenoh: what a node logs reaches another transport's `/rosout` subscriber,
/// with the logger's name.
#[test]
fn rosout_records_cross_transports() {
    in_netns("rosout_records_cross_transports", &[], LIMIT, || {
        use rclev::interfaces::rcl_interfaces::msg::Log;
        let _router = Router::start(&ZenohOptions::default()).expect("a router");
        let (_ta, a) = executor();
        let (_tb, b) = executor();
        let talker = a.create_node("chatty").unwrap();
        let listener = b.create_node("log_reader").unwrap();
        let heard = Arc::new(Mutex::new(Vec::new()));
        let h = heard.clone();
        let _rosout = listener
            .create_subscription::<Log, _>("/rosout", move |m: Arc<Log>| {
                h.lock().unwrap().push((m.name.clone(), m.msg.clone()))
            })
            .unwrap();
        // Logged until heard (the subscription takes a moment to reach the talker).
        assert!(spin_until(&b, MEET, || {
            rclev::log_info!(talker, "over zenoh");
            heard
                .lock()
                .unwrap()
                .iter()
                .any(|(name, msg)| name == "chatty" && msg == "over zenoh")
        }));
    });
}

/// QoS events over Zenoh, as rmw_zenoh raises them: a publisher and a subscription hear of
/// each other coming and going (matched events, from the graph), and a subscription hears of
/// the messages a publisher's sequence numbers skipped (message lost).
#[test]
fn matched_and_message_lost_events_are_raised() {
    in_netns(
        "matched_and_message_lost_events_are_raised",
        &[],
        LIMIT,
        || {
            use rclev::qos::{CountStatus, MatchedStatus, QosEvent, QosEventKind};
            use rclev_zenoh::wire::Attachment;
            use zenoh::Wait;
            let _router = Router::start(&ZenohOptions::default()).expect("a router");
            let (_ta, a) = executor();
            let (_tb, b) = executor();
            let talker = a.create_node("talker").unwrap();
            for kind in [
                QosEventKind::PublicationMatched,
                QosEventKind::SubscriptionMatched,
                QosEventKind::MessageLost,
            ] {
                assert!(talker.supports_qos_event(kind), "{kind:?}");
            }
            assert!(!talker.supports_qos_event(QosEventKind::OfferedDeadlineMissed));
            let publisher = talker.create_publisher::<StringMsg>("/events").unwrap();
            let offered = Arc::new(Mutex::new(Vec::new()));
            let o = offered.clone();
            publisher.set_event_handler(move |e| o.lock().unwrap().push(e));
            let listener = b.create_node("listener").unwrap();
            let subscription = listener
                .create_subscription::<StringMsg, _>("/events", |_| {})
                .unwrap();
            let requested = Arc::new(Mutex::new(Vec::new()));
            let r = requested.clone();
            subscription.set_event_handler(move |e| r.lock().unwrap().push(e));
            let matched = |log: &Arc<Mutex<Vec<QosEvent>>>, current: u64| {
                log.lock().unwrap().iter().any(|e| match e {
                    QosEvent::PublicationMatched(s) | QosEvent::SubscriptionMatched(s) => {
                        s.current_count == current
                    }
                    _ => false,
                })
            };
            assert!(spin_until(&a, MEET, || matched(&offered, 1)), "{offered:?}");
            assert!(
                spin_until(&b, MEET, || matched(&requested, 1)),
                "{requested:?}"
            );
            assert!(matches!(
                offered.lock().unwrap()[0],
                QosEvent::PublicationMatched(MatchedStatus {
                    total_count: 1,
                    total_count_change: 1,
                    current_count: 1,
                    current_count_change: 1,
                })
            ));

            // A bare session publishing with rmw_zenoh's attachment, numbering 1, 2, 5: two
            // messages lost.
            let gid = rclev::transport::Gid([9; 16]);
            let session = rclev_zenoh::ZenohSession::open(&ZenohOptions {
                router_check: rclev_zenoh::RouterCheck::Attempts(
                    std::num::NonZeroU64::new(60).unwrap(),
                ),
                ..ZenohOptions::default()
            })
            .expect("a bare session");
            let cdr = rclev::msg::to_cdr(&StringMsg { data: "n".into() }).unwrap();
            let heard = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let lossy = listener
                .create_subscription::<StringMsg, _>("/lossy", {
                    let heard = heard.clone();
                    move |_| {
                        heard.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                })
                .unwrap();
            let losses = Arc::new(Mutex::new(Vec::new()));
            let l = losses.clone();
            lossy.set_event_handler(move |e| l.lock().unwrap().push(e));
            let lossy_key = rclev_zenoh::wire::keyexpr::topic_keyexpr::<StringMsg>(0, "/lossy");
            let put = |sequence_number: i64| {
                let attachment = Attachment {
                    sequence_number,
                    source_timestamp: 0,
                    source_gid: gid,
                };
                session
                    .zenoh()
                    .put(&lossy_key, cdr.clone())
                    .attachment(attachment.encode().to_vec())
                    .wait()
                    .unwrap();
            };
            // Sent until the subscription hears one (it matches the bare session's put only
            // once Zenoh has routed its declaration); the numbers go on from there.
            let next = std::cell::Cell::new(1);
            assert!(spin_until(&b, MEET, || {
                if heard.load(std::sync::atomic::Ordering::Relaxed) == 0 {
                    put(next.get());
                    next.set(next.get() + 1);
                }
                heard.load(std::sync::atomic::Ordering::Relaxed) > 0
            }));
            // The puts before the first heard one went nowhere (no loss counted: the tracker
            // starts at the first number it hears).
            let before = heard.load(std::sync::atomic::Ordering::Relaxed);
            let last_sent = next.get() - 1;
            put(last_sent + 1);
            put(last_sent + 4);
            assert!(spin_until(&b, MEET, || !losses.lock().unwrap().is_empty()
                && heard.load(std::sync::atomic::Ordering::Relaxed)
                    >= before + 2));
            assert_eq!(
                *losses.lock().unwrap(),
                [QosEvent::MessageLost(CountStatus {
                    total_count: 2,
                    total_count_change: 2,
                })]
            );
            drop(session);

            // The subscription goes: the publisher hears its match end.
            drop(subscription);
            assert!(spin_until(&a, MEET, || matched(&offered, 0)), "{offered:?}");
        },
    );
}
