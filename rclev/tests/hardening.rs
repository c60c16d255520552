//! Regression tests for the defects of the hardening issue (#9), one or more per defect, named
//! after what they protect. Each of them failed on the code before its fix.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::spin_until;
use rclev::msg::{Clock as ClockMsg, Fibonacci, FibonacciGoal, FibonacciResult, TimeMsg};
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
    executor.spin(SpinOptions::spin_once().timeout(Duration::from_millis(50)));
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
    executor.spin(SpinOptions::spin_once().timeout(Duration::from_millis(50)));
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
