//! Testing nodes on virtual time ([`VirtualTimeExecutor`]): timers, clocks, sleeps, rates and
//! service timeouts follow a timeline the test moves, so seconds and minutes of a node's life
//! run in milliseconds, and every deadline is met exactly, on any host.
//!
//! The first test is the example the README points to: a node with behaviour over time
//! (a heartbeat watchdog), tested as a user would test theirs.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rclev::interfaces::example_interfaces::srv::{
    AddTwoInts, AddTwoInts_Request as AddTwoIntsRequest, AddTwoInts_Response as AddTwoIntsResponse,
};
use rclev::interfaces::std_msgs::msg::String as StringMsg;
use rclev::{ClockType, Error, Node, Rate, VirtualTimeExecutor};

const SECOND: Duration = Duration::from_secs(1);

/// A watchdog node: checks once a second when it last heard a heartbeat, and publishes one
/// alarm when that was more than `silence` ago (again only after heartbeats resume and stop).
struct Watchdog {
    _heartbeats: rclev::Subscription<StringMsg>,
    _check: rclev::Timer,
}

fn watchdog(node: &Node, silence: Duration) -> rclev::Result<Watchdog> {
    let clock = node.get_clock();
    let last = Arc::new(Mutex::new(clock.now()));
    let alarmed = Arc::new(AtomicU64::new(0));
    let (l, a, c) = (last.clone(), alarmed.clone(), clock.clone());
    let heartbeats = node.create_subscription::<StringMsg, _>("heartbeat", move |_msg| {
        *l.lock().unwrap() = c.now();
        a.store(0, Ordering::Relaxed);
    })?;
    let alarm = node.create_publisher::<StringMsg>("alarm")?;
    let check = node.create_timer_repeating(SECOND, move || {
        let quiet = clock
            .now()
            .duration_since(*last.lock().unwrap())
            .unwrap_or_default();
        if quiet > silence && alarmed.swap(1, Ordering::Relaxed) == 0 {
            let data = format!("no heartbeat for {quiet:?}");
            alarm.publish(StringMsg { data }).unwrap();
        }
    })?;
    Ok(Watchdog {
        _heartbeats: heartbeats,
        _check: check,
    })
}

#[test]
fn a_watchdog_node_alarms_after_three_silent_seconds() {
    let test = VirtualTimeExecutor::new().unwrap();
    let node = test.create_node("watchdog").unwrap();
    let _watchdog = watchdog(&node, 3 * SECOND).unwrap();

    let probe = test.create_node("probe").unwrap();
    let heartbeat = probe.create_publisher::<StringMsg>("heartbeat").unwrap();
    let alarms = Arc::new(Mutex::new(Vec::new()));
    let (a, clock) = (alarms.clone(), probe.get_clock());
    let _alarms = probe
        .create_subscription::<StringMsg, _>("alarm", move |msg| {
            a.lock().unwrap().push((clock.now(), msg.data.clone()));
        })
        .unwrap();
    let start = test.now();

    // A heartbeat every second for five seconds: no alarm.
    for _ in 0..5 {
        heartbeat.publish(StringMsg::default()).unwrap();
        assert!(test.advance(SECOND).is_empty());
    }
    assert!(alarms.lock().unwrap().is_empty());
    // Then silence. The last heartbeat was at 4 s; the check at 8 s is the first to find more
    // than 3 s of quiet, and only one alarm is raised however long the silence lasts.
    assert!(test.advance(60 * SECOND).is_empty());
    let alarms = alarms.lock().unwrap();
    assert_eq!(alarms.len(), 1, "{alarms:?}");
    let (at, text) = &alarms[0];
    assert_eq!(at.nanos - start.nanos, 8_000_000_000);
    assert_eq!(text, "no heartbeat for 4s");
    assert_eq!(test.elapsed(), 65 * SECOND);
}

#[test]
fn sleeps_and_rates_in_async_callbacks_follow_virtual_time() {
    let test = VirtualTimeExecutor::new().unwrap();
    let node = test.create_node("sleeper").unwrap();
    let clock = node.get_clock();
    let start = clock.now();
    let steady = node.clock_of(ClockType::SteadyTime);
    let out = test
        .run_until(async move {
            assert!(steady.sleep_for(Duration::from_secs(90)).await);
            let after_sleep = clock.now();
            let mut rate = Rate::new(clock.clone(), Duration::from_millis(250));
            for _ in 0..8 {
                assert!(rate.sleep().await);
            }
            (after_sleep, clock.now())
        })
        .unwrap();
    assert_eq!(out.0.nanos - start.nanos, 90_000_000_000);
    assert_eq!(out.1.nanos - start.nanos, 92_000_000_000);
    assert_eq!(test.elapsed(), Duration::from_secs(92));
}

#[test]
fn service_timeouts_are_exact_on_virtual_time() {
    let test = VirtualTimeExecutor::new().unwrap();
    let node = test.create_node("caller").unwrap();
    let client = node.create_client::<AddTwoInts>("add").unwrap();
    let started = test.elapsed();
    let (c, n) = (client.clone(), node.clone());
    let (none_yet, slow_call, quick) = test
        .run_until(async move {
            // Nobody serves "add" yet: the wait times out after exactly 30 s.
            let none_yet = c.wait_for_service(Some(Duration::from_secs(30))).await;
            // A server that takes 10 s to answer (sleeping on its node's clock).
            let clock = n.get_clock();
            let _service = n
                .create_async_service::<AddTwoInts, _, _>("add", move |req| {
                    let clock = clock.clone();
                    async move {
                        clock.sleep_for(Duration::from_secs(10)).await;
                        AddTwoIntsResponse { sum: req.a + req.b }
                    }
                })
                .unwrap();
            c.wait_for_service(Some(Duration::from_secs(1)))
                .await
                .unwrap();
            let slow_call = c
                .call_with_timeout(AddTwoIntsRequest { a: 1, b: 2 }, Duration::from_secs(5))
                .await;
            let quick = c
                .call_with_timeout(AddTwoIntsRequest { a: 2, b: 3 }, Duration::from_secs(11))
                .await;
            (none_yet, slow_call, quick)
        })
        .unwrap();
    assert!(
        matches!(none_yet, Err(Error::Timeout { after, .. }) if after == Duration::from_secs(30)),
        "{none_yet:?}"
    );
    assert!(
        matches!(slow_call, Err(Error::Timeout { .. })),
        "{slow_call:?}"
    );
    assert_eq!(quick.unwrap().sum, 5);
    // 30 s of waiting, 5 s until the first call timed out, 10 s for the second answer (the
    // server still works off the first request meanwhile: it runs its callbacks concurrently).
    assert_eq!(test.elapsed() - started, Duration::from_secs(45));
}

#[test]
fn a_future_nothing_will_resolve_is_reported_not_waited_for() {
    let test = VirtualTimeExecutor::new().unwrap();
    let res = test.run_until(std::future::pending::<()>());
    assert!(
        matches!(res, Err(Error::VirtualTimeStalled { elapsed }) if elapsed.is_zero()),
        "{res:?}"
    );
    // A timer gives it somewhere to go: time moves to it, and on.
    let node = test.create_node("n").unwrap();
    let _timer = node
        .create_timer_oneshot(Duration::from_secs(7), || {})
        .unwrap();
    let (at, errors) = test.advance_to_next().unwrap();
    assert!(errors.is_empty());
    assert_eq!(at, Duration::from_secs(7));
    assert!(test.advance_to_next().is_none(), "nothing left to wait for");
}

#[test]
fn use_sim_time_does_not_detach_a_node_from_virtual_time() {
    let test = VirtualTimeExecutor::new().unwrap();
    let node = test
        .create_node(rclev::NodeOptions::new("sim").parameter_override("use_sim_time", true))
        .unwrap();
    let before = node.get_clock().now();
    assert!(test.advance(Duration::from_secs(3)).is_empty());
    assert_eq!(node.get_clock().now().nanos - before.nanos, 3_000_000_000);
    node.set_parameter("use_sim_time", false).unwrap();
    assert!(test.advance(Duration::from_secs(2)).is_empty());
    assert_eq!(node.get_clock().now().nanos - before.nanos, 5_000_000_000);
}
