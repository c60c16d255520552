//! Regression tests for the defects of the hardening issue (#9), one or more per defect, named
//! after what they protect. Each of them failed on the code before its fix.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::spin_until;
use rclev::interfaces::builtin_interfaces::msg::Time as TimeMsg;
use rclev::interfaces::example_interfaces::action::Fibonacci;
use rclev::interfaces::example_interfaces::action::Fibonacci_Goal as FibonacciGoal;
use rclev::interfaces::example_interfaces::action::Fibonacci_Result as FibonacciResult;
use rclev::interfaces::rosgraph_msgs::msg::Clock as ClockMsg;
use rclev::{
    ActionServerOptions, CancelResponse, Context, Error, GoalEnd, GoalResponse, GoalState,
    IntoTimerOptions, NodeOptions, ServerGoalHandle, SpinOptions, TimerInfo,
};

fn counter() -> (Arc<AtomicU64>, impl FnMut() + Send + 'static) {
    let count = Arc::new(AtomicU64::new(0));
    let c = count.clone();
    (count, move || {
        c.fetch_add(1, Ordering::SeqCst);
    })
}

// Defect 1: a timer reusing a dropped timer's scheduler slot took the dead timer's heap entry.

#[test]
fn a_oneshot_in_a_reused_slot_fires() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("reuse").unwrap();
    let (_, cb) = counter();
    let dead = node
        .create_timer_repeating(Duration::from_millis(5), cb)
        .unwrap();
    drop(dead);
    let fired = Arc::new(tokio::sync::Notify::new());
    let f = fired.clone();
    let _oneshot = node
        .create_timer_oneshot(Duration::from_millis(20), move || f.notify_one())
        .unwrap();
    spin_until(&executor, async move { fired.notified().await });
}

#[test]
fn a_repeating_timer_in_a_reused_slot_keeps_its_own_grid() {
    for sim in [false, true] {
        let executor = Context::default().create_basic_executor();
        let node = executor
            .create_node(NodeOptions::new("reuse").parameter_override("use_sim_time", sim))
            .unwrap();
        let clock_pub = node.create_publisher::<ClockMsg>("/clock").unwrap();
        let (_, cb) = counter();
        let dead = node
            .create_timer_repeating(Duration::from_millis(30).node_time(), cb)
            .unwrap();
        drop(dead);
        let before = node.get_clock().now();
        let first = Arc::new(Mutex::new(None));
        let (f, notify) = (first.clone(), Arc::new(tokio::sync::Notify::new()));
        let n = notify.clone();
        let _timer = node
            .create_timer_repeating(
                Duration::from_millis(100).node_time(),
                move |info: TimerInfo| {
                    f.lock().unwrap().get_or_insert(info.expected_call_time);
                    n.notify_one();
                },
            )
            .unwrap();
        let after = node.get_clock().now();
        let created = before;
        if sim {
            // Past the dead timer's 30 ms deadline, short of the new one's 100 ms.
            for ms in [10, 40, 70, 101] {
                clock_pub
                    .publish(ClockMsg {
                        clock: TimeMsg::from_nanos(created.nanos + ms * 1_000_000),
                    })
                    .unwrap();
            }
        }
        spin_until(&executor, async move { notify.notified().await });
        // Armed between `before` and `after`: its first grid point is 100 ms after that (the
        // dead timer's grid would put it at 130 ms).
        let first = first.lock().unwrap().unwrap();
        // 1 ms of slack for the µs between reading the Instant and the wall clock.
        assert!(
            first.nanos - before.nanos >= 99_000_000 && first.nanos - after.nanos <= 101_000_000,
            "first call off the timer's own grid (sim: {sim}): {} ns after creation",
            first.nanos - before.nanos
        );
    }
}

// Defect 2: a huge `result_timeout` overflowed and killed the server's worker.

#[test]
fn a_duration_max_result_timeout_keeps_results() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("server").unwrap();
    let options = ActionServerOptions {
        result_timeout: Duration::MAX,
        ..Default::default()
    };
    let _server = node
        .create_action_server::<Fibonacci, _, _, _, _>(
            "fib",
            options,
            |_, _| GoalResponse::AcceptAndExecute,
            |_: &ServerGoalHandle<Fibonacci>| CancelResponse::Accept,
            |h: ServerGoalHandle<Fibonacci>| async move {
                GoalEnd::Succeeded(FibonacciResult {
                    sequence: vec![h.goal().order],
                })
            },
        )
        .unwrap();
    let client = node.create_action_client::<Fibonacci>("fib").unwrap();
    let out = Arc::new(Mutex::new(Vec::new()));
    let o = out.clone();
    spin_until(&executor, async move {
        for order in 1..=3 {
            let goal = client.send_goal(FibonacciGoal { order }).await.unwrap();
            let (state, result) = goal.result().await.unwrap();
            o.lock().unwrap().push((state, result.sequence));
        }
    });
    assert_eq!(
        *out.lock().unwrap(),
        (1..=3)
            .map(|o| (GoalState::Succeeded, vec![o]))
            .collect::<Vec<_>>()
    );
}

// Defects 3 and 8: periods beyond ~292 years looped forever or panicked.

#[test]
fn periods_beyond_i64_nanoseconds_are_refused() {
    let executor = Context::default().create_basic_executor();
    let sim_node = executor
        .create_node(NodeOptions::new("sim").parameter_override("use_sim_time", true))
        .unwrap();
    let node = executor.create_node("wall").unwrap();
    let too_long = [
        Duration::MAX,
        Duration::from_nanos(i64::MAX as u64) + Duration::from_nanos(1),
        Duration::from_secs(300 * 365 * 86_400),
    ];
    for period in too_long {
        for n in [&node, &sim_node] {
            let r = n.create_timer_repeating(period.node_time(), || {});
            assert!(
                matches!(r, Err(Error::InvalidPeriod(p)) if p == period),
                "{r:?}"
            );
            let r = n.create_timer_oneshot(period.node_time(), || {});
            assert!(matches!(r, Err(Error::InvalidPeriod(_))), "{r:?}");
            let r = n.create_timer_inert(period);
            assert!(matches!(r, Err(Error::InvalidPeriod(_))), "{r:?}");
        }
    }
    // The longest accepted period works and never fires.
    let (count, cb) = counter();
    let _t = sim_node
        .create_timer_repeating(rclev::timer::MAX_PERIOD.node_time(), cb)
        .unwrap();
    let _w = node
        .create_timer_repeating(rclev::timer::MAX_PERIOD, || {})
        .unwrap();
    let _ = executor.spin(SpinOptions::spin_once().timeout(Duration::from_millis(50)));
    assert_eq!(count.load(Ordering::SeqCst), 0);
}

#[test]
fn a_timer_at_the_end_of_simulated_time_fires_once_and_stops() {
    let executor = Context::default().create_basic_executor();
    let node = executor
        .create_node(NodeOptions::new("sim").parameter_override("use_sim_time", true))
        .unwrap();
    let clock_pub = node.create_publisher::<ClockMsg>("/clock").unwrap();
    let (count, cb) = counter();
    let _t = node
        .create_timer_repeating(Duration::from_secs(3600).node_time(), cb)
        .unwrap();
    clock_pub
        .publish(ClockMsg {
            clock: TimeMsg::from_nanos(i64::MAX),
        })
        .unwrap();
    let c = count.clone();
    spin_until(&executor, async move {
        while c.load(Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    });
    let _ = executor.spin(SpinOptions::spin_once().timeout(Duration::from_millis(50)));
    assert_eq!(count.load(Ordering::SeqCst), 1);
}

#[test]
fn huge_sleeps_and_rates_do_not_return_at_once() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let clock = rclev::Clock::steady();
        for d in [Duration::MAX, Duration::from_secs(300 * 365 * 86_400)] {
            let slept = tokio::time::timeout(Duration::from_millis(30), clock.sleep_for(d)).await;
            assert!(slept.is_err(), "sleep_for({d:?}) returned {slept:?}");
            let mut rate = rclev::Rate::new(clock.clone(), d);
            let slept = tokio::time::timeout(Duration::from_millis(30), rate.sleep()).await;
            assert!(slept.is_err(), "Rate({d:?}).sleep() returned {slept:?}");
        }
    });
}

// Defect 4: futures waiting for the executor hang after shutdown.

/// Runs `fut` on a runtime of its own, failing the test if it takes more than 10 s.
fn resolve<T>(fut: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async { tokio::time::timeout(Duration::from_secs(10), fut).await })
        .expect("the future never resolved")
}

#[test]
fn client_calls_resolve_with_shutdown() {
    use rclev::interfaces::example_interfaces::srv::AddTwoInts;
    use rclev::interfaces::example_interfaces::srv::AddTwoInts_Request as AddTwoIntsRequest;
    use rclev::interfaces::example_interfaces::srv::AddTwoInts_Response as AddTwoIntsResponse;
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("calls").unwrap();
    let _service = node
        .create_service::<AddTwoInts, _>("add", |r: AddTwoIntsRequest| AddTwoIntsResponse {
            sum: r.a + r.b,
        })
        .unwrap();
    let client = node.create_client::<AddTwoInts>("add").unwrap();
    // Nobody spins: these stay in flight until the shutdown.
    let in_flight: Vec<_> = (0..100)
        .map(|a| client.call(AddTwoIntsRequest { a, b: 1 }))
        .collect();
    executor.shutdown();
    for call in in_flight {
        assert!(matches!(resolve(call), Err(Error::Shutdown)));
    }
    let after = client.call(AddTwoIntsRequest { a: 1, b: 1 });
    assert!(matches!(resolve(after), Err(Error::Shutdown)));
}

#[test]
fn action_futures_and_feedback_end_with_shutdown() {
    use futures::StreamExt;
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("actions").unwrap();
    let _server = node
        .create_action_server::<Fibonacci, _, _, _, _>(
            "slow",
            ActionServerOptions::default(),
            |_, _| GoalResponse::AcceptAndExecute,
            |_: &ServerGoalHandle<Fibonacci>| CancelResponse::Accept,
            |_h: ServerGoalHandle<Fibonacci>| async move {
                std::future::pending::<()>().await;
                GoalEnd::Succeeded(FibonacciResult::default())
            },
        )
        .unwrap();
    let client = node.create_action_client::<Fibonacci>("slow").unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let c = client.clone();
    spin_until(&executor, async move {
        let goal = c.send_goal(FibonacciGoal { order: 5 }).await.unwrap();
        tx.send(goal).unwrap();
    });
    let goal = rx.recv().unwrap();
    let mut feedback = goal.feedback().unwrap();
    let result = goal.result();
    let cancel = goal.cancel();
    let pending_goal = client.send_goal(FibonacciGoal { order: 1 });
    executor.shutdown();
    assert!(matches!(resolve(result), Err(Error::Shutdown)));
    assert!(matches!(resolve(cancel), Err(Error::Shutdown)));
    assert!(matches!(resolve(pending_goal), Err(Error::Shutdown)));
    assert_eq!(resolve(feedback.next()), None);
    let after = client.send_goal(FibonacciGoal { order: 1 });
    assert!(matches!(resolve(after), Err(Error::Shutdown)));
}

#[test]
fn workers_and_entities_after_shutdown_are_refused() {
    use rclev::interfaces::std_msgs::msg::Int64;
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("early").unwrap();
    let worker = node.create_worker(0u32).unwrap();
    let publisher = node.create_publisher::<Int64>("x").unwrap();
    executor.shutdown();
    assert!(matches!(resolve(worker.run(|n| *n)), Err(Error::Shutdown)));
    assert!(matches!(node.create_worker(1u8), Err(Error::Shutdown)));
    assert!(matches!(executor.create_node("late"), Err(Error::Shutdown)));
    assert!(matches!(
        publisher.publish(Int64 { data: 1 }).map_err(Error::from),
        Err(Error::Shutdown)
    ));
    assert!(matches!(
        node.create_publisher::<Int64>("y"),
        Err(Error::Shutdown)
    ));
    assert!(matches!(
        node.create_subscription::<Int64, _>("y", |_| {}),
        Err(Error::Shutdown)
    ));
    assert!(matches!(
        node.create_timer_repeating(Duration::from_millis(1), || {}),
        Err(Error::Shutdown)
    ));
    assert!(matches!(
        node.create_guard_condition(|| {}),
        Err(Error::Shutdown)
    ));
}

// Defect 5: callbacks started after shutdown() and after spin() returned.

/// A subscription whose callback runs `on_first` for message 1, with 16 messages queued.
fn batch_subscription(
    on_first: impl Fn() + Send + 'static,
) -> (
    rclev::Executor,
    rclev::Subscription<rclev::interfaces::std_msgs::msg::Int64>,
    Arc<Mutex<Vec<i64>>>,
) {
    use rclev::interfaces::std_msgs::msg::Int64;
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("batch").unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let sub = node
        .create_subscription::<Int64, _>("batch".qos_keep_all(), move |m: Arc<Int64>| {
            s.lock().unwrap().push(m.data);
            if m.data == 1 {
                on_first();
            }
        })
        .unwrap();
    let publisher = node
        .create_publisher::<Int64>("batch".qos_keep_all())
        .unwrap();
    for data in 1..=16 {
        publisher.publish(Int64 { data }).unwrap();
    }
    (executor, sub, seen)
}

trait KeepAll {
    fn qos_keep_all(self) -> rclev::PrimitiveOptions;
}
impl KeepAll for &str {
    fn qos_keep_all(self) -> rclev::PrimitiveOptions {
        use rclev::IntoPrimitiveOptions;
        self.qos(rclev::QoSProfile::default().keep_all())
    }
}

#[test]
fn no_callback_starts_after_shutdown_returned() {
    let commands = Arc::new(Mutex::new(None::<rclev::ExecutorCommands>));
    let c = commands.clone();
    let (executor, _sub, seen) = batch_subscription(move || {
        c.lock().unwrap().as_ref().unwrap().shutdown();
    });
    *commands.lock().unwrap() = Some(executor.commands());
    let errors = executor.spin(SpinOptions::default().timeout(Duration::from_secs(10)));
    assert!(errors.is_empty(), "{errors:?}");
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(*seen.lock().unwrap(), vec![1], "callbacks after shutdown");
}

#[test]
fn spin_returns_with_no_callback_running_and_loses_nothing() {
    let commands = Arc::new(Mutex::new(None::<rclev::ExecutorCommands>));
    let finished = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (c, f) = (commands.clone(), finished.clone());
    let (executor, _sub, seen) = batch_subscription(move || {
        c.lock().unwrap().as_ref().unwrap().halt_spinning();
        // Still running when the spin is asked to return: the spin waits for it.
        std::thread::sleep(Duration::from_millis(30));
        f.store(true, Ordering::SeqCst);
    });
    *commands.lock().unwrap() = Some(executor.commands());
    let errors = executor.spin(SpinOptions::default().timeout(Duration::from_secs(10)));
    assert!(errors.is_empty(), "{errors:?}");
    assert!(
        finished.load(Ordering::SeqCst),
        "spin returned mid-callback"
    );
    let after_spin = seen.lock().unwrap().clone();
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        *seen.lock().unwrap(),
        after_spin,
        "a callback started after spin returned"
    );
    // The rest of the batch waits for the next spin, in order.
    let s = seen.clone();
    spin_until(&executor, async move {
        while s.lock().unwrap().len() < 16 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    });
    assert_eq!(*seen.lock().unwrap(), (1..=16).collect::<Vec<_>>());
}

// Defect 6: timer callbacks after drop, cancel() and set_inert() returned.

#[derive(Clone, Copy, Debug)]
enum Stop {
    Drop,
    Cancel,
    SetInert,
}

/// Stops a fast timer `rounds` times at a moment when it is firing and counts callbacks that
/// start after the stop returned.
fn late_timer_callbacks(stop: Stop, rounds: u32) -> u64 {
    use std::sync::atomic::AtomicBool;
    let executor = Arc::new(Context::default().create_basic_executor());
    let node = executor.create_node("stopper").unwrap();
    let late = Arc::new(AtomicU64::new(0));
    let e = executor.clone();
    let spinner =
        std::thread::spawn(move || e.spin(SpinOptions::default().timeout(Duration::from_secs(60))));
    for _ in 0..rounds {
        let stopped = Arc::new(AtomicBool::new(false));
        let fired = Arc::new(AtomicU64::new(0));
        let (s, l, f) = (stopped.clone(), late.clone(), fired.clone());
        let timer = node
            .create_timer_repeating(Duration::from_micros(100), move || {
                if s.load(Ordering::SeqCst) {
                    l.fetch_add(1, Ordering::SeqCst);
                }
                f.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
        while fired.load(Ordering::SeqCst) < 2 {
            std::thread::yield_now();
        }
        match stop {
            Stop::Drop => drop(timer),
            Stop::Cancel => timer.cancel(),
            Stop::SetInert => timer.set_inert(),
        }
        stopped.store(true, Ordering::SeqCst);
        // Let anything that would wrongly start do so.
        std::thread::sleep(Duration::from_micros(300));
    }
    executor.commands().shutdown();
    let errors = spinner.join().unwrap();
    assert!(errors.is_empty(), "{errors:?}");
    late.load(Ordering::SeqCst)
}

#[test]
fn no_timer_callback_starts_after_drop_cancel_or_set_inert_returned() {
    for stop in [Stop::Drop, Stop::Cancel, Stop::SetInert] {
        assert_eq!(late_timer_callbacks(stop, 1000), 0, "{stop:?}");
    }
}

// Defect 12: spin() from inside a callback.

#[test]
fn spin_inside_a_callback_is_refused() {
    for runtime in [
        rclev::RuntimeChoice::Auto,
        rclev::RuntimeChoice::Own { worker_threads: 2 },
    ] {
        let executor = Arc::new(
            Context::default()
                .create_executor(rclev::ExecutorOptions {
                    runtime,
                    ..Default::default()
                })
                .unwrap(),
        );
        let node = executor.create_node("nested").unwrap();
        let got = Arc::new(Mutex::new(None));
        let (e, g) = (Arc::downgrade(&executor), got.clone());
        let guard = node
            .create_guard_condition(move || {
                let e = e.upgrade().unwrap();
                let errors = e.spin(SpinOptions::default().timeout(Duration::from_secs(30)));
                *g.lock().unwrap() = Some(errors);
            })
            .unwrap();
        guard.trigger();
        let g = got.clone();
        spin_until(&executor, async move {
            while g.lock().unwrap().is_none() {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        });
        let errors = got.lock().unwrap().take().unwrap();
        assert!(
            matches!(errors.as_slice(), [Error::SpinInsideCallback]),
            "{errors:?}"
        );
    }
}

// Defect 15: a panicking `until_promise_resolved` future.

#[test]
fn a_panicking_promise_ends_the_spin_with_its_error() {
    let executor = Context::default().create_basic_executor();
    let errors = executor.spin(
        SpinOptions::default()
            .until_promise_resolved(async { panic!("promise broke") })
            .timeout(Duration::from_secs(10)),
    );
    assert!(
        matches!(errors.as_slice(), [Error::CallbackPanicked { message, .. }] if message.contains("promise broke")),
        "{errors:?}"
    );
    assert!(executor
        .spin(SpinOptions::spin_once().timeout(Duration::from_secs(1)))
        .is_empty());
}

// Defect 18: a subscription callback started after the subscription's drop returned.

#[test]
fn no_subscription_callback_starts_after_drop_returned() {
    use rclev::interfaces::std_msgs::msg::Int64;
    use std::sync::atomic::AtomicBool;
    let executor = Arc::new(Context::default().create_basic_executor());
    let node = executor.create_node("dropper").unwrap();
    let publisher = node.create_publisher::<Int64>("flood").unwrap();
    let e = executor.clone();
    let spinner =
        std::thread::spawn(move || e.spin(SpinOptions::default().timeout(Duration::from_secs(60))));
    let stop_flood = Arc::new(AtomicBool::new(false));
    let s = stop_flood.clone();
    let flooder = std::thread::spawn(move || {
        while !s.load(Ordering::SeqCst) {
            let _ = publisher.publish(Int64 { data: 1 });
        }
    });
    let late = Arc::new(AtomicU64::new(0));
    for _ in 0..2000 {
        let dropped = Arc::new(AtomicBool::new(false));
        let got = Arc::new(AtomicU64::new(0));
        let (d, l, g) = (dropped.clone(), late.clone(), got.clone());
        let sub = node
            .create_subscription::<Int64, _>("flood", move |_m: Arc<Int64>| {
                if d.load(Ordering::SeqCst) {
                    l.fetch_add(1, Ordering::SeqCst);
                }
                g.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
        while got.load(Ordering::SeqCst) == 0 {
            std::thread::yield_now();
        }
        drop(sub);
        dropped.store(true, Ordering::SeqCst);
    }
    stop_flood.store(true, Ordering::SeqCst);
    flooder.join().unwrap();
    executor.commands().shutdown();
    assert!(spinner.join().unwrap().is_empty());
    assert_eq!(late.load(Ordering::SeqCst), 0);
}

// Defect 7: workers on a shared runtime waited for each other's blocking callbacks.

/// Worker A's callback triggers worker B's guard condition, then blocks until B's callback
/// has run (or 5 s pass). Returns whether B ran while A was still blocked.
fn b_runs_while_a_blocks(executor: &rclev::Executor) -> bool {
    let node = executor.create_node("ab").unwrap();
    let a = node.create_worker(()).unwrap();
    let b = node.create_worker(()).unwrap();
    let (ran_tx, ran_rx) = std::sync::mpsc::sync_channel::<()>(1);
    let b_guard = b
        .create_guard_condition(move |_: &mut ()| {
            let _ = ran_tx.try_send(());
        })
        .unwrap();
    let verdict = Arc::new(Mutex::new(None));
    let v = verdict.clone();
    let ran_rx = Mutex::new(ran_rx);
    let a_guard = a
        .create_guard_condition(move |_: &mut ()| {
            b_guard.trigger();
            let ran = ran_rx
                .lock()
                .unwrap()
                .recv_timeout(Duration::from_secs(5))
                .is_ok();
            *v.lock().unwrap() = Some(ran);
        })
        .unwrap();
    a_guard.trigger();
    let v = verdict.clone();
    spin_until(executor, async move {
        while v.lock().unwrap().is_none() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    });
    let ran = verdict.lock().unwrap().unwrap();
    ran
}

#[test]
fn workers_on_an_owned_runtime_do_not_wait_for_each_other() {
    let executor = Context::default()
        .create_executor(rclev::ExecutorOptions {
            runtime: rclev::RuntimeChoice::Own { worker_threads: 2 },
            ..Default::default()
        })
        .unwrap();
    assert!(b_runs_while_a_blocks(&executor));
}

#[test]
fn workers_inside_tokio_main_do_not_wait_for_each_other() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let executor = rt.block_on(async { Context::default().create_basic_executor() });
    let _enter = rt.enter();
    assert!(b_runs_while_a_blocks(&executor));
}

// Defect 13: worker threads of dropped nodes lived on while nobody spun.

/// Threads of this process whose name starts with `prefix`.
fn threads_named(prefix: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.starts_with(prefix))
        .count()
}

#[test]
fn dropped_nodes_and_workers_leave_no_thread_behind() {
    let executor = Context::default().create_basic_executor();
    for _ in 0..3 {
        let nodes: Vec<_> = (0..20)
            .map(|i| executor.create_node(format!("gone{i}")).unwrap())
            .collect();
        let workers: Vec<_> = nodes.iter().map(|n| n.create_worker(()).unwrap()).collect();
        // Each thread names itself when it starts.
        while threads_named("rclev-gone") < 40 {
            std::thread::sleep(Duration::from_millis(1));
        }
        drop((nodes, workers));
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while threads_named("rclev-gone") > 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "{} worker threads left",
                threads_named("rclev-gone")
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

// Defect 14: a panicking jump callback was not reported.

#[test]
fn a_panicking_jump_callback_is_reported() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("jumpy").unwrap();
    let _jump = node
        .get_clock()
        .create_jump_callback(
            rclev::JumpThreshold {
                on_clock_change: true,
                min_forward: None,
                min_backward: None,
            },
            |_| panic!("pre broke"),
            |_| {},
        )
        .unwrap();
    node.set_parameter("use_sim_time", true).unwrap();
    // Still works after the panic.
    node.set_parameter("use_sim_time", false).unwrap();
    let errors = executor.spin(SpinOptions::spin_once().timeout(Duration::from_secs(1)));
    let panics = errors
        .iter()
        .filter(|e| matches!(e, Error::CallbackPanicked { message, .. } if message == "pre broke"))
        .count();
    assert_eq!(panics, 2, "{errors:?}");
}

// Defect 11: a ROS-time timer created while another thread switched `use_sim_time` on stayed
// on the wall clock.

#[test]
fn timers_created_during_a_switch_to_sim_time_follow_clock() {
    let executor = Context::default().create_basic_executor();
    let driver = executor.create_node("driver").unwrap();
    let clock_pub = driver.create_publisher::<ClockMsg>("/clock").unwrap();
    let fired = Arc::new(AtomicU64::new(0));
    let mut keep = Vec::new();
    const ROUNDS: u64 = 200;
    for i in 0..ROUNDS {
        let node = executor.create_node(format!("racer{i}")).unwrap();
        let barrier = Arc::new(std::sync::Barrier::new(2));
        let (n, b) = (node.clone(), barrier.clone());
        let switcher = std::thread::spawn(move || {
            b.wait();
            n.set_parameter("use_sim_time", true).unwrap();
        });
        barrier.wait();
        let f = fired.clone();
        // An hour of ROS time: on the wall clock it would never fire during this test.
        let timer = node
            .create_timer_oneshot(Duration::from_secs(3600).node_time(), move || {
                f.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
        switcher.join().unwrap();
        keep.push((node, timer));
    }
    clock_pub
        .publish(ClockMsg {
            clock: TimeMsg::from_nanos(7200 * 1_000_000_000),
        })
        .unwrap();
    let f = fired.clone();
    let errors = executor.spin(
        SpinOptions::default()
            .until_promise_resolved(async move {
                while f.load(Ordering::SeqCst) < ROUNDS {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            })
            .timeout(Duration::from_secs(10)),
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(
        fired.load(Ordering::SeqCst),
        ROUNDS,
        "timers left on the wall clock"
    );
}

// Guard conditions follow the same rule as timers and subscriptions: once the drop returned,
// the callback never starts again.

#[test]
fn no_guard_condition_callback_starts_after_drop_returned() {
    use std::sync::atomic::AtomicBool;
    let executor = Arc::new(Context::default().create_basic_executor());
    let node = executor.create_node("guards").unwrap();
    let e = executor.clone();
    let spinner =
        std::thread::spawn(move || e.spin(SpinOptions::default().timeout(Duration::from_secs(60))));
    let late = Arc::new(AtomicU64::new(0));
    for _ in 0..1000 {
        let dropped = Arc::new(AtomicBool::new(false));
        let runs = Arc::new(AtomicU64::new(0));
        let (d, l, r) = (dropped.clone(), late.clone(), runs.clone());
        let guard = node
            .create_guard_condition(move || {
                if d.load(Ordering::SeqCst) {
                    l.fetch_add(1, Ordering::SeqCst);
                }
                r.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
        let trigger = guard.clone();
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let triggerer = std::thread::spawn(move || {
            while !s.load(Ordering::SeqCst) {
                trigger.trigger();
                std::thread::yield_now();
            }
        });
        while runs.load(Ordering::SeqCst) < 2 {
            std::thread::yield_now();
        }
        stop.store(true, Ordering::SeqCst);
        triggerer.join().unwrap();
        drop(guard);
        dropped.store(true, Ordering::SeqCst);
    }
    executor.commands().shutdown();
    assert!(spinner.join().unwrap().is_empty());
    assert_eq!(late.load(Ordering::SeqCst), 0);
}

// Ctrl-C: a spin ends cleanly on SIGINT; a second SIGINT ends a program whose callback is stuck.

/// Runs in a child process started by `ctrl_c_*` below.
#[test]
fn sigint_child() {
    let Some(mode) = std::env::var_os("RCLEV_SIGINT_CHILD") else {
        return;
    };
    if mode == "outside" || mode == "outside_stuck" {
        // No spin: the program polls rclev's process-wide handler.
        rclev::executor::install_sigint_handler().unwrap();
        assert!(!rclev::executor::sigint_received());
        println!("ready");
        use std::io::Write;
        std::io::stdout().flush().unwrap();
        while !rclev::executor::sigint_received() {
            std::thread::sleep(Duration::from_millis(10));
        }
        println!("received");
        std::io::stdout().flush().unwrap();
        if mode == "outside_stuck" {
            // Does not wind down: only a second Ctrl-C ends it.
            loop {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        return;
    }
    let stuck = mode == "stuck";
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("sigint").unwrap();
    let mut first = true;
    let _timer = node
        .create_timer_repeating(Duration::from_millis(1), move || {
            if first {
                first = false;
                println!("ready");
                use std::io::Write;
                std::io::stdout().flush().unwrap();
            }
            if stuck {
                // A callback that never returns: the spin cannot wind down.
                loop {
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        })
        .unwrap();
    let errors = executor.spin(SpinOptions::default().timeout(Duration::from_secs(60)));
    println!("spin returned: {errors:?}");
}

/// Starts `sigint_child` in `mode`, sends it `signals` SIGINTs 200 ms apart once it is ready,
/// and returns its exit status and stdout.
fn run_sigint_child(mode: &str, signals: usize) -> (std::process::ExitStatus, String) {
    use std::io::{BufRead, BufReader, Read};
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "sigint_child", "--nocapture", "--test-threads=1"])
        .env("RCLEV_SIGINT_CHILD", mode)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while !line.contains("ready") {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "child ended early");
    }
    for _ in 0..signals {
        // SAFETY: signals our own child, which has not been waited for yet.
        assert_eq!(
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) },
            0
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return (status, rest);
        }
        assert!(std::time::Instant::now() < deadline, "child still running");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn ctrl_c_ends_the_spin_cleanly() {
    let (status, out) = run_sigint_child("normal", 1);
    assert!(status.success(), "{status:?}");
    assert!(out.contains("spin returned: []"), "{out}");
}

#[test]
fn a_second_ctrl_c_ends_a_stuck_program() {
    use std::os::unix::process::ExitStatusExt;
    let (status, out) = run_sigint_child("stuck", 2);
    assert_eq!(status.signal(), Some(libc::SIGINT), "{status:?}: {out}");
}

/// Outside any spin, a program that installed rclev's handler for good is told of Ctrl-C; a
/// second one ends it.
#[test]
fn ctrl_c_outside_spins_is_reported_once_the_handler_is_installed() {
    use std::os::unix::process::ExitStatusExt;
    let (status, out) = run_sigint_child("outside", 1);
    assert!(status.success(), "{status:?}");
    assert!(out.contains("received"), "{out}");
    let (status, out) = run_sigint_child("outside_stuck", 2);
    assert_eq!(status.signal(), Some(libc::SIGINT), "{status:?}: {out}");
    assert!(out.contains("received"), "{out}");
}

/// Records the thread that drops it: the last reference to an executor's context.
struct DropProbe {
    inner: rclev::transport::IntraProcess,
    dropped_on: Arc<Mutex<Vec<String>>>,
}

impl rclev::transport::Transport for DropProbe {
    fn create_node(
        &self,
        node: &rclev::transport::NodeName,
    ) -> rclev::Result<Arc<dyn rclev::transport::NodePort>> {
        self.inner.create_node(node)
    }
    fn graph(&self) -> rclev::transport::GraphSnapshot {
        self.inner.graph()
    }
    fn graph_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.graph_changes()
    }
    fn supports_event(&self, kind: rclev::qos::QosEventKind) -> bool {
        self.inner.supports_event(kind)
    }
}

impl Drop for DropProbe {
    fn drop(&mut self) {
        let name = std::thread::current().name().unwrap_or("?").to_string();
        self.dropped_on.lock().unwrap().push(name);
    }
}

/// Runs in a child process started by `ctrl_c_never_leaves_the_last_reference_to_the_watcher`.
#[test]
fn sigint_drop_child() {
    if std::env::var_os("RCLEV_SIGINT_DROP_CHILD").is_none() {
        return;
    }
    // Many executors spin at once and one Ctrl-C shuts them all down: while the watcher
    // still shuts down the last ones, the first have returned from their spins and let go of
    // their references. Repeated, so that an early return races the watcher's own drop.
    let dropped_on = Arc::new(Mutex::new(Vec::new()));
    for _ in 0..5 {
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let spinners: Vec<_> = (0..20)
            .map(|_| {
                let context = Context::with_transport(Arc::new(DropProbe {
                    inner: rclev::transport::IntraProcess::new(),
                    dropped_on: dropped_on.clone(),
                }));
                let executor = context.create_basic_executor();
                drop(context);
                let node = executor.create_node("n").unwrap();
                let tx = ready_tx.clone();
                let timer = node
                    .create_timer_oneshot(Duration::ZERO, move || {
                        let _ = tx.send(());
                    })
                    .unwrap();
                std::thread::spawn(move || {
                    let errors =
                        executor.spin(SpinOptions::default().timeout(Duration::from_secs(10)));
                    drop((timer, node, executor));
                    errors
                })
            })
            .collect();
        for _ in 0..20 {
            ready_rx.recv().unwrap();
        }
        // SAFETY: signals this very process; rclev's handler is installed while it spins.
        unsafe { libc::kill(libc::getpid(), libc::SIGINT) };
        for s in spinners {
            assert!(s.join().unwrap().is_empty());
        }
    }
    let on = dropped_on.lock().unwrap();
    let by_watcher = on.iter().filter(|n| *n == "rclev-sigint").count();
    println!(
        "dropped {} contexts, {by_watcher} on the SIGINT watcher",
        on.len()
    );
}

/// The SIGINT watcher shuts spinning executors down but never holds the last reference to
/// one: dropping it there tore a DDS participant down while `main` was already running
/// `exit()`, and crashed the process (rclev-dds/tests/shm/RESULTS.md).
#[test]
fn ctrl_c_never_leaves_the_last_reference_to_the_watcher() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "sigint_drop_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("RCLEV_SIGINT_DROP_CHILD", "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{:?}: {text}", out.status);
    assert!(
        text.contains("dropped 100 contexts, 0 on the SIGINT watcher"),
        "{text}"
    );
}

#[test]
fn subscription_streams_end_after_shutdown() {
    use futures::StreamExt;
    use rclev::interfaces::std_msgs::msg::Int64;
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("streams").unwrap();
    let mut stream = node.create_subscription_stream::<Int64>("s").unwrap();
    let publisher = node.create_publisher::<Int64>("s").unwrap();
    publisher.publish(Int64 { data: 1 }).unwrap();
    executor.shutdown();
    // What was queued before the shutdown is still taken; then the stream ends.
    assert_eq!(resolve(stream.next()).map(|m| m.data), Some(1));
    assert!(resolve(stream.next()).is_none());
    assert!(resolve(stream.recv()).is_none());
}
