//! Beyond one machine: two Zenoh routers linked to each other, each with its own rclev nodes
//! connected only to it — as two hosts, each running its router, with the second router's
//! `connect/endpoints` naming the first. Here both "hosts" are in the test's loopback-only
//! namespace: router A on 127.0.0.1:7447, router B on 127.0.0.2:7448 (dialling A); the nodes'
//! sessions dial only their own router and have gossip off, so that every message, call and
//! graph token crosses the router-to-router link. Topics, services, actions and the graph
//! work across.

mod common;

use std::num::NonZeroU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rclev::interfaces::example_interfaces::action::{
    Fibonacci, Fibonacci_Feedback, Fibonacci_Goal, Fibonacci_Result,
};
use rclev::interfaces::std_msgs::msg::String as StringMsg;
use rclev::interfaces::std_srvs::srv::{SetBool, SetBool_Request, SetBool_Response};
use rclev::{
    ActionServerOptions, Arguments, CancelResponse, Context, Executor, GoalEnd, GoalResponse,
    GoalState, ServerGoalHandle, SpinOptions,
};
use rclev_zenoh::{ConfigOverride, Router, RouterCheck, ZenohOptions, ZenohTransport};

use common::in_netns;

const LIMIT: Duration = Duration::from_secs(120);
const WAIT: Duration = Duration::from_secs(30);

/// Options with `ZENOH_CONFIG_OVERRIDE`-style edits.
fn options(overrides: &str) -> ZenohOptions {
    ZenohOptions {
        overrides: ConfigOverride::parse_list(overrides).expect("valid overrides"),
        router_check: RouterCheck::Attempts(NonZeroU64::new(60).unwrap()),
        ..ZenohOptions::default()
    }
}

/// A "host": its router, and an executor whose session dials only that router.
struct Host {
    executor: Executor,
    _transport: Arc<ZenohTransport>,
    _router: Router,
}

fn host(router: &str, session: &str) -> Host {
    let router = Router::start(&options(router)).expect("a router");
    let transport = Arc::new(ZenohTransport::new(&options(session), 0, "/").expect("a session"));
    let executor = Context::new(transport.clone(), Arguments::default()).create_basic_executor();
    Host {
        executor,
        _transport: transport,
        _router: router,
    }
}

#[test]
fn nodes_behind_two_linked_routers_talk() {
    in_netns("nodes_behind_two_linked_routers_talk", &[], LIMIT, || {
        let a = host(
            r#"listen/endpoints=["tcp/127.0.0.1:7447"]"#,
            r#"connect/endpoints=["tcp/127.0.0.1:7447"];listen/endpoints=["tcp/127.0.0.1:0"];scouting/gossip/enabled=false"#,
        );
        let b = host(
            r#"listen/endpoints=["tcp/127.0.0.2:7448"];connect/endpoints=["tcp/127.0.0.1:7447"]"#,
            r#"connect/endpoints=["tcp/127.0.0.2:7448"];listen/endpoints=["tcp/127.0.0.2:0"];scouting/gossip/enabled=false"#,
        );
        let on_a = a.executor.create_node("on_a").unwrap();
        let on_b = b.executor.create_node("on_b").unwrap();
        let _service = on_a
            .create_service::<SetBool, _>("/across", |req: SetBool_Request| SetBool_Response {
                success: req.data,
                message: "from host a".into(),
            })
            .unwrap();
        let _action_server = on_a
            .create_action_server::<Fibonacci, _, _, _, _>(
                "/across_fibonacci",
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
        let publisher = on_a.create_publisher::<StringMsg>("/news").unwrap();
        let heard = Arc::new(Mutex::new(Vec::new()));
        let h = heard.clone();
        let _subscription = on_b
            .create_subscription::<StringMsg, _>("/news", move |m| {
                h.lock().unwrap().push(m.data.clone())
            })
            .unwrap();

        // The graph across: each side lists the other's node.
        let deadline = std::time::Instant::now() + WAIT;
        while !(on_b
            .get_node_names_and_namespaces()
            .contains(&("on_a".into(), "/".into()))
            && on_a
                .get_node_names_and_namespaces()
                .contains(&("on_b".into(), "/".into()))
            && publisher.get_subscription_count() == 1)
        {
            assert!(
                std::time::Instant::now() < deadline,
                "the graphs did not meet: {:?}",
                on_b.get_node_names_and_namespaces()
            );
            std::thread::sleep(Duration::from_millis(50));
        }

        // A topic across.
        publisher
            .publish(StringMsg {
                data: "hello across".into(),
            })
            .unwrap();
        let deadline = std::time::Instant::now() + WAIT;
        while heard.lock().unwrap().is_empty() && std::time::Instant::now() < deadline {
            let errors = b
                .executor
                .spin(SpinOptions::default().timeout(Duration::from_millis(50)));
            assert!(errors.is_empty(), "{errors:?}");
        }
        assert_eq!(*heard.lock().unwrap(), ["hello across"]);

        // A service and an action across, host a serving on a thread of its own.
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let s = stop.clone();
        let Host {
            executor: a_executor,
            _transport: _a_transport,
            _router: _a_router,
        } = a;
        let serving = std::thread::spawn(move || {
            while !s.load(std::sync::atomic::Ordering::Relaxed) {
                let errors =
                    a_executor.spin(SpinOptions::default().timeout(Duration::from_millis(50)));
                assert!(errors.is_empty(), "{errors:?}");
            }
        });
        let client = on_b.create_client::<SetBool>("/across").unwrap();
        let action_client = on_b
            .create_action_client::<Fibonacci>("/across_fibonacci")
            .unwrap();
        let answer = Arc::new(Mutex::new(None));
        let out = answer.clone();
        let goal_end = Arc::new(Mutex::new(None));
        let ended = goal_end.clone();
        let call = async move {
            client.wait_for_service(Some(WAIT)).await.unwrap();
            let response = client
                .call_with_timeout(SetBool_Request { data: true }, WAIT)
                .await;
            *out.lock().unwrap() = Some(response);
            action_client.wait_for_server(Some(WAIT)).await.unwrap();
            let handle = action_client
                .send_goal(Fibonacci_Goal { order: 6 })
                .await
                .unwrap();
            let (state, result) = handle.result().await.unwrap();
            *ended.lock().unwrap() = Some((state, result.sequence));
        };
        let errors = b.executor.spin(
            SpinOptions::default()
                .until_promise_resolved(call)
                .timeout(LIMIT),
        );
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        serving.join().unwrap();
        assert!(errors.is_empty(), "{errors:?}");
        let response = answer
            .lock()
            .unwrap()
            .take()
            .expect("the call ended")
            .unwrap();
        assert!(response.success);
        assert_eq!(response.message, "from host a");
        let (state, sequence) = goal_end.lock().unwrap().take().expect("the goal ended");
        assert_eq!(state, GoalState::Succeeded);
        assert_eq!(sequence, [0, 1, 1, 2, 3, 5, 8]);
    });
}
