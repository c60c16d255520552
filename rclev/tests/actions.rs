//! Actions: lifecycle, rejection, cancel, abort, concurrency, result expiry, drops.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::spin_until;
use futures::StreamExt;
use rclev::interfaces::action_msgs::msg::GoalStatusArray;
use rclev::interfaces::builtin_interfaces::msg::Time as TimeMsg;
use rclev::interfaces::example_interfaces::action::Fibonacci;
use rclev::interfaces::example_interfaces::action::Fibonacci_Feedback as FibonacciFeedback;
use rclev::interfaces::example_interfaces::action::Fibonacci_Goal as FibonacciGoal;
use rclev::interfaces::example_interfaces::action::Fibonacci_Result as FibonacciResult;
use rclev::interfaces::rosgraph_msgs::msg::Clock as ClockMsg;
use rclev::{
    ActionServer, ActionServerOptions, CancelResponse, ClockType, Context, Error, Executor,
    GoalEnd, GoalResponse, GoalState, IntoPrimitiveOptions, Node, NodeOptions, QoSProfile,
    ServerGoalHandle, SpinOptions, VirtualTimeExecutor,
};

/// A Fibonacci server: rejects negative orders, accepts cancels, publishes the sequence as
/// feedback every `step`, and aborts on order 13.
fn fibonacci_server(
    node: &Node,
    step: Duration,
    options: ActionServerOptions,
) -> ActionServer<Fibonacci> {
    node.create_action_server::<Fibonacci, _, _, _, _>(
        "fibonacci",
        options,
        |_id, goal: &FibonacciGoal| {
            if goal.order < 0 {
                GoalResponse::Reject
            } else {
                GoalResponse::AcceptAndExecute
            }
        },
        |_h: &ServerGoalHandle<Fibonacci>| CancelResponse::Accept,
        move |handle: ServerGoalHandle<Fibonacci>| async move {
            let mut sequence = vec![0, 1];
            for i in 1..handle.goal().order.max(1) as usize {
                if handle.is_cancel_requested() {
                    return GoalEnd::Canceled(FibonacciResult { sequence });
                }
                sequence.push(sequence[i] + sequence[i - 1]);
                handle
                    .publish_feedback(FibonacciFeedback {
                        sequence: sequence.clone(),
                    })
                    .unwrap();
                tokio::select! {
                    _ = tokio::time::sleep(step) => {}
                    _ = handle.cancel_requested() => {}
                }
            }
            if handle.goal().order == 13 {
                return GoalEnd::Aborted(FibonacciResult { sequence });
            }
            GoalEnd::Succeeded(FibonacciResult { sequence })
        },
    )
    .unwrap()
}

fn fib(order: usize) -> Vec<i32> {
    let mut s = vec![0, 1];
    for i in 1..order.max(1) {
        s.push(s[i] + s[i - 1]);
    }
    s
}

fn setup() -> (Executor, Node, Node) {
    let executor = Context::default().create_basic_executor();
    let server_node = executor.create_node("fib_server").unwrap();
    let client_node = executor.create_node("fib_client").unwrap();
    (executor, server_node, client_node)
}

/// An executor with a Fibonacci server (see [`fibonacci_server`]) and a client for it.
fn fib_pair(
    step: Duration,
    options: ActionServerOptions,
) -> (
    Executor,
    ActionServer<Fibonacci>,
    Node,
    rclev::ActionClient<Fibonacci>,
) {
    let (executor, server_node, client_node) = setup();
    let server = fibonacci_server(&server_node, step, options);
    let client = client_node
        .create_action_client::<Fibonacci>("fibonacci")
        .unwrap();
    (executor, server, client_node, client)
}

#[test]
fn full_lifecycle_with_feedback_and_status() {
    let (executor, _server, client_node, client) =
        fib_pair(Duration::from_millis(2), ActionServerOptions::default());
    assert!(client.server_is_available());
    assert_eq!(client.action_name(), "/fibonacci");
    // The status topic carries ROS 2's name.
    let status = client_node
        .create_subscription_stream::<GoalStatusArray>(
            "/fibonacci/_action/status".qos(QoSProfile::default().keep_all().transient_local()),
        )
        .unwrap();
    let out = Arc::new(Mutex::new(None));
    let o = out.clone();
    spin_until(&executor, async move {
        let handle = client.send_goal(FibonacciGoal { order: 10 }).await.unwrap();
        let mut feedback = handle.feedback().unwrap();
        assert!(matches!(handle.feedback(), Err(Error::AlreadyTaken(_))));
        let mut got = Vec::new();
        while let Some(f) = feedback.next().await {
            got.push(f.sequence);
        }
        let (state, result) = handle.result().await.unwrap();
        assert_eq!(handle.status(), GoalState::Succeeded);
        *o.lock().unwrap() = Some((got, state, result, handle.goal_id()));
    });
    let (feedback, state, result, id) = out.lock().unwrap().take().unwrap();
    assert_eq!(state, GoalState::Succeeded);
    assert_eq!(result.sequence, fib(10));
    // What holds on any transport: feedback arrives in order, without gaps or duplicates
    // among what arrives. Feedback and status are two topics, so across processes the last
    // feedback may come after the terminal status, which ends the stream.
    assert!(!feedback.is_empty() && feedback.len() <= 9);
    for (k, f) in feedback.iter().enumerate() {
        assert_eq!(f, &fib(k + 2));
    }
    // In process the client drains feedback before it looks at status, so none is lost.
    assert_eq!(feedback.len(), 9, "in process every feedback arrives");
    let mut states = Vec::new();
    while let Some((array, _)) = status.try_recv() {
        for s in &array.status_list {
            if s.goal_info.goal_id == id {
                states.push(GoalState::from_i8(s.status));
            }
        }
    }
    states.dedup();
    assert!(
        matches!(
            states.first(),
            Some(GoalState::Accepted | GoalState::Executing)
        ),
        "{states:?}"
    );
    assert!(states.contains(&GoalState::Executing), "{states:?}");
    assert_eq!(states.last(), Some(&GoalState::Succeeded), "{states:?}");
}

#[test]
fn rejected_goal_and_abort() {
    let (executor, server_node, client_node) = setup();
    let _server = fibonacci_server(&server_node, Duration::ZERO, ActionServerOptions::default());
    let client = client_node
        .create_action_client::<Fibonacci>("fibonacci")
        .unwrap();
    let out = Arc::new(Mutex::new(None));
    let o = out.clone();
    spin_until(&executor, async move {
        let rejected = client.send_goal(FibonacciGoal { order: -1 }).await;
        let aborted = client
            .send_goal(FibonacciGoal { order: 13 })
            .await
            .unwrap()
            .result()
            .await;
        *o.lock().unwrap() = Some((rejected.map(|_| ()), aborted));
    });
    let (rejected, aborted) = out.lock().unwrap().take().unwrap();
    assert_eq!(rejected, Err(Error::GoalRejected));
    let (state, result) = aborted.unwrap();
    assert_eq!(state, GoalState::Aborted);
    assert_eq!(result.sequence, fib(13));
}

#[test]
fn cancel_during_execution() {
    let (executor, _server, _client_node, client) =
        fib_pair(Duration::from_millis(20), ActionServerOptions::default());
    let out = Arc::new(Mutex::new(None));
    let o = out.clone();
    spin_until(&executor, async move {
        let handle = client.send_goal(FibonacciGoal { order: 40 }).await.unwrap();
        let mut feedback = handle.feedback().unwrap();
        feedback.next().await.unwrap();
        let answer = handle.cancel().await.unwrap();
        let (state, result) = handle.result().await.unwrap();
        *o.lock().unwrap() = Some((answer, state, result));
    });
    let (answer, state, result) = out.lock().unwrap().take().unwrap();
    assert_eq!(answer.return_code, 0);
    assert_eq!(answer.goals_canceling.len(), 1);
    assert_eq!(state, GoalState::Canceled);
    assert!(result.sequence.len() < fib(40).len());
}

#[test]
fn cancel_before_execution_and_invalid_transitions() {
    let (executor, server_node, client_node) = setup();
    let deferred: Arc<Mutex<Vec<ServerGoalHandle<Fibonacci>>>> = Arc::default();
    let d = deferred.clone();
    let cancels = Arc::new(AtomicUsize::new(0));
    let c = cancels.clone();
    let server = server_node
        .create_action_server_with_callback::<Fibonacci, _, _, _>(
            "deferred",
            ActionServerOptions::default(),
            |_, _| GoalResponse::AcceptAndDefer,
            move |h| {
                c.fetch_add(1, Ordering::SeqCst);
                // The cancel callback sees the real goal.
                if h.goal().order == 7 {
                    CancelResponse::Accept
                } else {
                    CancelResponse::Reject
                }
            },
            move |h| d.lock().unwrap().push(h),
        )
        .unwrap();
    let client = client_node
        .create_action_client::<Fibonacci>("deferred")
        .unwrap();
    let out = Arc::new(Mutex::new(None));
    let (o, d2) = (out.clone(), deferred.clone());
    spin_until(&executor, async move {
        let keep = client.send_goal(FibonacciGoal { order: 5 }).await.unwrap();
        let handle = client.send_goal(FibonacciGoal { order: 7 }).await.unwrap();
        let refused = keep.cancel().await.unwrap();
        let answer = handle.cancel().await.unwrap();
        // The execution side finishes the canceling goal as canceled.
        let server_side = d2
            .lock()
            .unwrap()
            .iter()
            .find(|h| h.goal().order == 7)
            .cloned()
            .unwrap();
        assert_eq!(server_side.state(), GoalState::Canceling);
        assert!(server_side.is_cancel_requested());
        server_side.canceled(FibonacciResult::default()).unwrap();
        let (state, _) = handle.result().await.unwrap();
        // The other one executes and succeeds.
        let other = d2
            .lock()
            .unwrap()
            .iter()
            .find(|h| h.goal().order == 5)
            .cloned()
            .unwrap();
        assert_eq!(other.state(), GoalState::Accepted);
        let premature = other.succeed(FibonacciResult::default());
        other.execute().unwrap();
        other
            .succeed(FibonacciResult { sequence: vec![1] })
            .unwrap();
        let twice = other.succeed(FibonacciResult::default());
        let (other_state, other_result) = keep.result().await.unwrap();
        *o.lock().unwrap() = Some((
            refused,
            answer,
            state,
            premature,
            twice,
            other_state,
            other_result,
        ));
    });
    let (refused, answer, state, premature, twice, other_state, other_result) =
        out.lock().unwrap().take().unwrap();
    assert_eq!(
        refused.return_code, 1,
        "a rejected cancel is not 'rejected'"
    );
    assert_eq!(answer.return_code, 0);
    assert_eq!(state, GoalState::Canceled);
    assert!(matches!(
        premature,
        Err(Error::InvalidGoalTransition {
            from: GoalState::Accepted,
            ..
        })
    ));
    assert!(matches!(
        twice,
        Err(Error::InvalidGoalTransition {
            from: GoalState::Succeeded,
            ..
        })
    ));
    assert_eq!(other_state, GoalState::Succeeded);
    assert_eq!(other_result.sequence, vec![1]);
    assert_eq!(cancels.load(Ordering::SeqCst), 2);
    assert_eq!(server.goal_states().len(), 2);
}

#[test]
fn a_hundred_concurrent_goals_with_feedback() {
    let (executor, server_node, client_node) = setup();
    let worker = server_node.create_worker(()).unwrap();
    // Every execution waits here until all hundred are running: goals executed one after
    // another would never get past it.
    let all_running = Arc::new(tokio::sync::Barrier::new(100));
    // On an extra worker, to show actions are ordinary entities.
    let _server = worker
        .create_action_server::<Fibonacci, _, _, _, _>(
            "fibonacci",
            ActionServerOptions::default(),
            |_, _| GoalResponse::AcceptAndExecute,
            |_| CancelResponse::Reject,
            move |h: ServerGoalHandle<Fibonacci>| {
                let all_running = all_running.clone();
                async move {
                    all_running.wait().await;
                    let order = h.goal().order as usize;
                    for k in 0..3 {
                        h.publish_feedback(FibonacciFeedback { sequence: vec![k] })
                            .unwrap();
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                    GoalEnd::Succeeded(FibonacciResult {
                        sequence: fib(order),
                    })
                }
            },
        )
        .unwrap();
    let client = client_node
        .create_action_client::<Fibonacci>("fibonacci")
        .unwrap();
    let done = Arc::new(AtomicUsize::new(0));
    let d = done.clone();
    spin_until(&executor, async move {
        let goals = (0..100).map(|i| {
            let client = client.clone();
            let d = d.clone();
            async move {
                let handle = client
                    .send_goal(FibonacciGoal { order: 1 + i % 20 })
                    .await
                    .unwrap();
                let feedback: Vec<_> = handle.feedback().unwrap().collect().await;
                // In order on any transport; all three in process (see above).
                assert!(feedback.iter().map(|f| f.sequence[0]).eq(0..3));
                let (state, result) = handle.result().await.unwrap();
                assert_eq!(state, GoalState::Succeeded);
                assert_eq!(result.sequence, fib((1 + i % 20) as usize));
                d.fetch_add(1, Ordering::SeqCst);
            }
        });
        futures::future::join_all(goals).await;
    });
    assert_eq!(done.load(Ordering::SeqCst), 100);
}

fn wait_until(executor: &Executor, mut cond: impl FnMut() -> bool, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out: {what}");
        let _ = executor.spin(SpinOptions::default().timeout(Duration::from_millis(5)));
    }
}

#[test]
fn results_expire_after_the_timeout_on_the_steady_clock() {
    // On virtual time: the expiry is checked to the nanosecond, and the test waits no real
    // second. The goal takes 2 s (two steps of 1 s on the node's clock).
    let test = VirtualTimeExecutor::new().unwrap();
    let server_node = test.create_node("fib_server").unwrap();
    let client_node = test.create_node("fib_client").unwrap();
    let clock = server_node.get_clock();
    let server = server_node
        .create_action_server::<Fibonacci, _, _, _, _>(
            "fibonacci",
            ActionServerOptions {
                result_timeout: Duration::from_secs(5),
                clock: ClockType::SteadyTime,
            },
            |_id, _goal: &FibonacciGoal| GoalResponse::AcceptAndExecute,
            |_h: &ServerGoalHandle<Fibonacci>| CancelResponse::Accept,
            move |handle: ServerGoalHandle<Fibonacci>| {
                let clock = clock.clone();
                async move {
                    for _ in 0..2 {
                        clock.sleep_for(Duration::from_secs(1)).await;
                    }
                    GoalEnd::Succeeded(FibonacciResult {
                        sequence: fib(handle.goal().order as usize),
                    })
                }
            },
        )
        .unwrap();
    let client = client_node
        .create_action_client::<Fibonacci>("fibonacci")
        .unwrap();
    let (state, result) = test
        .run_until(async move {
            let h = client.send_goal(FibonacciGoal { order: 3 }).await.unwrap();
            h.result().await.unwrap()
        })
        .unwrap();
    assert_eq!((state, result.sequence), (GoalState::Succeeded, fib(3)));
    assert_eq!(test.elapsed(), Duration::from_secs(2), "finished at 2 s");
    // Kept for the whole timeout after finishing, and not a nanosecond longer.
    assert!(test
        .advance(Duration::from_secs(5) - Duration::from_nanos(1))
        .is_empty());
    assert_eq!(
        server.goal_states().len(),
        1,
        "result kept until the timeout"
    );
    assert!(test.advance(Duration::from_nanos(1)).is_empty());
    assert!(
        server.goal_states().is_empty(),
        "result expired at the timeout"
    );
}

#[test]
fn results_expire_on_simulated_time() {
    let executor = Context::default().create_basic_executor();
    let server_node = executor
        .create_node(NodeOptions::new("sim_server").parameter_override("use_sim_time", true))
        .unwrap();
    let client_node = executor.create_node("client").unwrap();
    let clock_pub = client_node.create_publisher::<ClockMsg>("/clock").unwrap();
    let step = |t_ms: i64| {
        clock_pub
            .publish(ClockMsg {
                clock: TimeMsg::from_nanos(t_ms * 1_000_000),
            })
            .unwrap();
        let clock = server_node.get_clock();
        wait_until(
            &executor,
            || clock.now().nanos == t_ms * 1_000_000,
            "/clock",
        );
    };
    step(10_000);
    let server = fibonacci_server(
        &server_node,
        Duration::ZERO,
        ActionServerOptions {
            result_timeout: Duration::from_secs(1),
            ..Default::default()
        },
    );
    let client = client_node
        .create_action_client::<Fibonacci>("fibonacci")
        .unwrap();
    spin_until(&executor, async move {
        client
            .send_goal(FibonacciGoal { order: 3 })
            .await
            .unwrap()
            .result()
            .await
            .unwrap();
    });
    // Wall time passes, sim time does not: the result stays.
    let _ = executor.spin(SpinOptions::default().timeout(Duration::from_millis(300)));
    assert_eq!(server.goal_states().len(), 1);
    step(10_500);
    assert_eq!(server.goal_states().len(), 1);
    step(11_100);
    wait_until(
        &executor,
        || server.goal_states().is_empty(),
        "sim-time expiry",
    );
}

#[test]
/// In process, a vanished server fails its clients at once. Across processes that is best
/// effort (a remote server can vanish silently): clients there use timeouts.
fn dropping_the_server_with_active_goals_fails_clients_cleanly() {
    let (executor, server_node, client_node) = setup();
    let handles: Arc<Mutex<Vec<ServerGoalHandle<Fibonacci>>>> = Arc::default();
    let h = handles.clone();
    let executing = Arc::new(tokio::sync::Semaphore::new(0));
    let e = executing.clone();
    let server = server_node
        .create_action_server_with_callback::<Fibonacci, _, _, _>(
            "doomed",
            ActionServerOptions::default(),
            |_, _| GoalResponse::AcceptAndExecute,
            |_| CancelResponse::Accept,
            move |handle| {
                h.lock().unwrap().push(handle);
                e.add_permits(1);
            },
        )
        .unwrap();
    let client = client_node
        .create_action_client::<Fibonacci>("doomed")
        .unwrap();
    let goal = Arc::new(Mutex::new(None));
    let g = goal.clone();
    let c = client.clone();
    spin_until(&executor, async move {
        *g.lock().unwrap() = Some(c.send_goal(FibonacciGoal { order: 3 }).await.unwrap());
        // The goal is executing (its handle was handed out) before the server goes.
        executing.acquire().await.unwrap().forget();
    });
    drop(server);
    assert!(!client.server_is_available());
    let handle = goal.lock().unwrap().take().unwrap();
    let result = Arc::new(Mutex::new(None));
    let r = result.clone();
    spin_until(&executor, async move {
        *r.lock().unwrap() = Some(handle.result().await);
    });
    assert!(matches!(
        result.lock().unwrap().take().unwrap(),
        Err(Error::ServiceUnavailable(_))
    ));
    // The execution's handle outlives the server and is inert, not dangling.
    let server_side = handles.lock().unwrap().pop().unwrap();
    assert_eq!(server_side.state(), GoalState::Unknown);
    assert!(matches!(
        server_side.succeed(FibonacciResult::default()),
        Err(Error::GoalUnknown(_))
    ));
    assert!(matches!(
        server_side.publish_feedback(FibonacciFeedback::default()),
        Err(Error::GoalUnknown(_))
    ));
    // New goals fail with a clear error, not a hang.
    let again = Arc::new(Mutex::new(None));
    let a = again.clone();
    spin_until(&executor, async move {
        *a.lock().unwrap() = Some(
            client
                .send_goal(FibonacciGoal { order: 1 })
                .await
                .map(|_| ()),
        );
    });
    assert!(matches!(
        again.lock().unwrap().take().unwrap(),
        Err(Error::ServiceUnavailable(_))
    ));
}

#[test]
/// In process (see above): the withdrawal is seen at once.
fn dropping_the_server_while_its_callback_runs_withdraws_it_at_once() {
    let (executor, server_node, client_node) = setup();
    let (entered_tx, entered_rx) = std::sync::mpsc::channel();
    let (resume_tx, resume_rx) = std::sync::mpsc::channel::<()>();
    let (inside_tx, inside_rx) = std::sync::mpsc::channel();
    let server = server_node
        .create_action_server_with_callback::<Fibonacci, _, _, _>(
            "busy",
            ActionServerOptions::default(),
            |_, _| GoalResponse::AcceptAndExecute,
            |_| CancelResponse::Accept,
            move |handle| {
                entered_tx.send(()).unwrap();
                let _ = resume_rx.recv_timeout(Duration::from_secs(20));
                // Still on the worker, which still holds the server: the handle is inert.
                inside_tx
                    .send((handle.state(), handle.succeed(FibonacciResult::default())))
                    .unwrap();
            },
        )
        .unwrap();
    let client = client_node
        .create_action_client::<Fibonacci>("busy")
        .unwrap();
    let c = client.clone();
    let dropper = std::thread::spawn(move || {
        entered_rx.recv_timeout(Duration::from_secs(20)).unwrap();
        drop(server);
        let available_after_drop = c.server_is_available();
        resume_tx.send(()).unwrap();
        available_after_drop
    });
    let result = Arc::new(Mutex::new(None));
    let r = result.clone();
    spin_until(&executor, async move {
        let handle = client.send_goal(FibonacciGoal { order: 3 }).await.unwrap();
        *r.lock().unwrap() = Some(handle.result().await);
    });
    assert!(!dropper.join().unwrap());
    assert!(matches!(
        result.lock().unwrap().take().unwrap(),
        Err(Error::ServiceUnavailable(_))
    ));
    // The client may have its error before the callback is done: wait for the callback.
    let (state, succeeded) = inside_rx.recv_timeout(Duration::from_secs(20)).unwrap();
    assert_eq!(state, GoalState::Unknown);
    assert!(matches!(succeeded, Err(Error::GoalUnknown(_))));
}

#[test]
fn dropping_the_client_mid_goal_leaves_the_server_working() {
    let (executor, server, client_node, client) =
        fib_pair(Duration::from_millis(10), ActionServerOptions::default());
    let c = client.clone();
    spin_until(&executor, async move {
        let handle = c.send_goal(FibonacciGoal { order: 5 }).await.unwrap();
        drop(handle);
    });
    drop(client);
    wait_until(
        &executor,
        || {
            server
                .goal_states()
                .iter()
                .any(|(_, s)| *s == GoalState::Succeeded)
        },
        "the orphaned goal to finish",
    );
    // And a new client still works.
    let client = client_node
        .create_action_client::<Fibonacci>("fibonacci")
        .unwrap();
    let out = Arc::new(Mutex::new(None));
    let o = out.clone();
    spin_until(&executor, async move {
        *o.lock().unwrap() = Some(
            client
                .send_goal(FibonacciGoal { order: 4 })
                .await
                .unwrap()
                .result()
                .await
                .unwrap(),
        );
    });
    assert_eq!(out.lock().unwrap().take().unwrap().1.sequence, fib(4));
}

#[test]
fn wait_for_server_is_woken_when_the_server_appears() {
    let (executor, server_node, client_node) = setup();
    let client = client_node
        .create_action_client::<Fibonacci>("fibonacci")
        .unwrap();
    assert!(!client.server_is_available());
    let done = Arc::new(Mutex::new(None));
    let d = done.clone();
    spin_until(&executor, async move {
        let early = client
            .wait_for_server(Some(Duration::from_millis(20)))
            .await;
        assert!(matches!(early, Err(Error::Timeout { .. })), "{early:?}");
        let waiting = client.wait_for_server(Some(Duration::from_secs(10)));
        let appear = async {
            tokio::task::yield_now().await;
            fibonacci_server(
                &server_node,
                Duration::from_millis(1),
                ActionServerOptions::default(),
            )
        };
        let (waited, server) = tokio::join!(waiting, appear);
        waited.unwrap();
        let handle = client.send_goal(FibonacciGoal { order: 3 }).await.unwrap();
        *d.lock().unwrap() = Some(handle.result().await.unwrap().1.sequence);
        drop(server);
    });
    assert_eq!(done.lock().unwrap().take().unwrap(), fib(3));
}
