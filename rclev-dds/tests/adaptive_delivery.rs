//! `Delivery::Adaptive`, the default, over DDS: a callback runs on Fast DDS's receive thread only
//! once it has proven short on its worker; a callback that blocks never holds the receive
//! thread (other subscriptions keep receiving), and one that starts blocking holds it for at
//! most one call; callbacks that create entities or send requests stay on their worker.
//!
//! Nothing here bounds a time: each test counts where callbacks ran, and a blocking callback
//! waits for another stream to make progress, which it could not do if the blocking callback
//! held the thread that brings that stream.

mod common;

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{eventually, in_netns, reliable_keep_all, Pair};
use rclev::interfaces::std_msgs::msg::Int64;
use rclev::{Delivery, IntoPrimitiveOptions, Publisher, SpinOptions, Subscription};

/// The kernel's name of the calling thread: Fast DDS names its receive threads `dds.shm.<port>`
/// and `dds.udp.<port>`; rclev's workers are `rclev-…`.
fn thread_name() -> String {
    std::fs::read_to_string("/proc/thread-self/comm")
        .unwrap()
        .trim()
        .to_string()
}

fn on_receive_thread() -> bool {
    thread_name().starts_with("dds.")
}

/// The short calls in a row a callback needs before its first call on a receive thread
/// (`runtime::adaptive::PROVING_RUNS`, documented on `Delivery::Adaptive`).
const PROVING_CALLS: usize = 16;

fn publisher(pair: &Pair, topic: &str) -> Publisher<Int64> {
    pair.talker
        .create_publisher::<Int64>(topic.qos(reliable_keep_all()))
        .unwrap()
}

/// Spins the listener's executor while `body` runs on this thread; returns the spin's errors.
fn while_spinning(pair: &Pair, body: impl FnOnce()) {
    let cmds = pair.b.commands();
    std::thread::scope(|scope| {
        let spinner = scope.spawn(|| pair.b.spin(SpinOptions::default()));
        body();
        cmds.halt_spinning();
        let errors = spinner.join().unwrap();
        assert!(errors.is_empty(), "{errors:?}");
    });
}

#[test]
fn the_default_runs_callbacks_on_the_receive_thread_once_they_proved_short() {
    in_netns(
        "the_default_runs_callbacks_on_the_receive_thread_once_they_proved_short",
        Duration::from_secs(90),
        || {
            const COUNT: i64 = 3000;
            let pair = Pair::new();
            let numbers = publisher(&pair, "numbers");
            let seen: Arc<Mutex<Vec<(i64, bool)>>> = Arc::default();
            let s = seen.clone();
            // No delivery given: the default.
            let sub = pair
                .listener
                .create_subscription::<Int64, _>("numbers".qos(reliable_keep_all()), move |m| {
                    s.lock().unwrap().push((m.data, on_receive_thread()));
                })
                .unwrap();
            assert_eq!(Delivery::default(), Delivery::Adaptive);
            assert!(eventually(Duration::from_secs(10), || numbers
                .get_subscription_count()
                == 1));
            while_spinning(&pair, || {
                for n in 0..COUNT {
                    numbers.publish(Int64 { data: n }).unwrap();
                    if n % 64 == 0 {
                        // Gaps let the worker park, which is when a receive thread may run it.
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
                assert!(eventually(Duration::from_secs(30), || seen
                    .lock()
                    .unwrap()
                    .len()
                    >= COUNT as usize));
            });
            let seen = seen.lock().unwrap();
            let values: Vec<i64> = seen.iter().map(|&(n, _)| n).collect();
            assert_eq!(
                values,
                (0..COUNT).collect::<Vec<_>>(),
                "every message, in order"
            );
            assert!(
                seen[..PROVING_CALLS].iter().all(|&(_, direct)| !direct),
                "a callback ran on the receive thread before it had proven short"
            );
            let direct = seen.iter().filter(|&&(_, direct)| direct).count();
            let state = sub.delivery_state().expect("adaptively delivered");
            println!("{direct} of {COUNT} callbacks ran on the receive thread; {state:?}");
            assert!(direct > 0, "no callback ran on the receive thread");
            assert_eq!(state.direct_runs as usize, direct);
            assert!((state.direct_runs + state.worker_runs) as i64 <= COUNT);
            assert!(!state.barred);
        },
    );
}

/// Publishes numbers on `topic` every `period` until `stop`.
fn stream(
    numbers: &Publisher<Int64>,
    period: Duration,
    stop: &AtomicBool,
    mut each: impl FnMut(i64),
) {
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        numbers.publish(Int64 { data: n }).unwrap();
        each(n);
        n += 1;
        std::thread::sleep(period);
    }
}

/// A subscription counting a fast stream on another worker of the listener's node (callbacks
/// of one worker never run at once, so a blocked worker would stall its own subscriptions by
/// design; reception by others is what a blocking callback must not stall).
fn fast_counter(
    pair: &Pair,
    received: &Arc<AtomicI64>,
) -> (rclev::Worker<()>, Subscription<Int64>) {
    let worker = pair.listener.create_worker(()).unwrap();
    let r = received.clone();
    let sub = worker
        .create_subscription::<Int64, _>("fast".qos(reliable_keep_all()), move |_, m| {
            assert_eq!(m.data, r.load(Ordering::SeqCst), "fast stream out of order");
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    (worker, sub)
}

/// Waits until the fast stream has advanced by `by` messages; whether it did within `limit`.
fn wait_for_progress(received: &AtomicI64, by: i64, limit: Duration) -> bool {
    let target = received.load(Ordering::SeqCst) + by;
    let deadline = Instant::now() + limit;
    while received.load(Ordering::SeqCst) < target {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    true
}

#[test]
fn a_callback_that_blocks_never_holds_the_receive_thread_and_others_keep_receiving() {
    in_netns(
        "a_callback_that_blocks_never_holds_the_receive_thread_and_others_keep_receiving",
        Duration::from_secs(120),
        || {
            const SLOW_CALLS: usize = 40;
            let pair = Pair::new();
            let (fast, slow) = (publisher(&pair, "fast"), publisher(&pair, "slow"));
            let received = Arc::new(AtomicI64::new(0));
            let (_worker, _fast_sub) = fast_counter(&pair, &received);
            // Each call blocks until the fast stream has moved on: if it held the receive
            // thread that brings the fast stream, it would wait in vain (and say so).
            let calls: Arc<Mutex<Vec<(bool, bool)>>> = Arc::default();
            let (c, r) = (calls.clone(), received.clone());
            let slow_sub = pair
                .listener
                .create_subscription::<Int64, _>("slow".qos(reliable_keep_all()), move |_| {
                    let direct = on_receive_thread();
                    let progressed = wait_for_progress(&r, 5, Duration::from_secs(5));
                    c.lock().unwrap().push((direct, progressed));
                })
                .unwrap();
            assert!(eventually(Duration::from_secs(10), || {
                fast.get_subscription_count() == 1 && slow.get_subscription_count() == 1
            }));
            let stop = AtomicBool::new(false);
            while_spinning(&pair, || {
                std::thread::scope(|scope| {
                    scope.spawn(|| stream(&fast, Duration::from_micros(300), &stop, |_| {}));
                    for n in 0..SLOW_CALLS as i64 {
                        slow.publish(Int64 { data: n }).unwrap();
                        // Each slow message finds the worker idle again: the moment a receive
                        // thread could take it over.
                        let done = n as usize + 1;
                        assert!(eventually(Duration::from_secs(20), || calls
                            .lock()
                            .unwrap()
                            .len()
                            >= done));
                    }
                    stop.store(true, Ordering::Relaxed);
                });
            });
            let calls = calls.lock().unwrap();
            assert_eq!(calls.len(), SLOW_CALLS);
            assert!(
                calls.iter().all(|&(direct, _)| !direct),
                "a blocking callback ran on the receive thread: {calls:?}"
            );
            assert!(
                calls.iter().all(|&(_, progressed)| progressed),
                "the fast stream stalled while the slow callback blocked: {calls:?}"
            );
            let state = slow_sub.delivery_state().unwrap();
            println!(
                "slow: {state:?}; fast received {}",
                received.load(Ordering::SeqCst)
            );
            assert_eq!((state.direct_runs, state.demotions), (0, 0), "{state:?}");
        },
    );
}

#[test]
fn a_callback_that_starts_blocking_holds_the_receive_thread_once_then_runs_on_its_worker() {
    in_netns(
        "a_callback_that_starts_blocking_holds_the_receive_thread_once_then_runs_on_its_worker",
        Duration::from_secs(120),
        || {
            const SHORT_CALLS: i64 = 200;
            const BLOCKING_CALLS: i64 = 20;
            let pair = Pair::new();
            let (fast, slow) = (publisher(&pair, "fast"), publisher(&pair, "slow"));
            let received = Arc::new(AtomicI64::new(0));
            let (_worker, _fast_sub) = fast_counter(&pair, &received);
            // Short at first; from message SHORT_CALLS on, each call blocks for 20 ms (a
            // bounded wait: one such call may run on the receive thread, by design).
            let blocking_direct = Arc::new(AtomicU64::new(0));
            let calls = Arc::new(AtomicI64::new(0));
            let (bd, c) = (blocking_direct.clone(), calls.clone());
            let slow_sub = pair
                .listener
                .create_subscription::<Int64, _>("slow".qos(reliable_keep_all()), move |m| {
                    if m.data >= SHORT_CALLS {
                        if on_receive_thread() {
                            bd.fetch_add(1, Ordering::SeqCst);
                        }
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    c.fetch_add(1, Ordering::SeqCst);
                })
                .unwrap();
            assert!(eventually(Duration::from_secs(10), || {
                fast.get_subscription_count() == 1 && slow.get_subscription_count() == 1
            }));
            let stop = AtomicBool::new(false);
            let sent_fast = AtomicI64::new(0);
            while_spinning(&pair, || {
                std::thread::scope(|scope| {
                    scope.spawn(|| {
                        stream(&fast, Duration::from_micros(500), &stop, |n| {
                            sent_fast.store(n + 1, Ordering::SeqCst)
                        })
                    });
                    for n in 0..SHORT_CALLS + BLOCKING_CALLS {
                        slow.publish(Int64 { data: n }).unwrap();
                        // One at a time, each finding the worker idle.
                        assert!(eventually(Duration::from_secs(20), || calls
                            .load(Ordering::SeqCst)
                            > n));
                    }
                    stop.store(true, Ordering::Relaxed);
                });
                // Nothing of the fast stream was lost, whatever the slow callback did.
                let sent = sent_fast.load(Ordering::SeqCst);
                assert!(eventually(Duration::from_secs(20), || received
                    .load(Ordering::SeqCst)
                    == sent));
            });
            let state = slow_sub.delivery_state().unwrap();
            let blocking_direct = blocking_direct.load(Ordering::SeqCst);
            println!("slow: {state:?}; blocking calls on the receive thread: {blocking_direct}");
            assert!(
                blocking_direct <= 1,
                "{blocking_direct} blocking calls held the receive thread"
            );
            // A call that blocked on its worker after the callback had proven short demotes
            // it as well (its message had found the worker busy), so at least as many.
            assert!(state.demotions >= blocking_direct, "{state:?}");
            assert!(!state.direct_allowed, "{state:?}");
            assert!(
                state.direct_runs > 0,
                "the short calls never ran on the receive thread: {state:?}"
            );
        },
    );
}

#[test]
fn callbacks_that_create_entities_or_send_requests_stay_on_their_worker() {
    in_netns(
        "callbacks_that_create_entities_or_send_requests_stay_on_their_worker",
        Duration::from_secs(90),
        || {
            const COUNT: i64 = 300;
            let pair = Pair::new();
            let numbers = publisher(&pair, "numbers");
            let requests = publisher(&pair, "requests");
            // Creates a publisher on its first message, then is short.
            let node = pair.listener.clone();
            let made = Arc::new(Mutex::new(Vec::new()));
            let m = made.clone();
            let direct_after = Arc::new(AtomicU64::new(0));
            let da = direct_after.clone();
            let creating = pair
                .listener
                .create_subscription::<Int64, _>("numbers".qos(reliable_keep_all()), move |msg| {
                    if msg.data == 0 {
                        m.lock()
                            .unwrap()
                            .push(node.create_publisher::<Int64>("made_in_callback").unwrap());
                    } else if on_receive_thread() {
                        da.fetch_add(1, Ordering::SeqCst);
                    }
                })
                .unwrap();
            // Sends a request on every message (no server: it fails, which is beside the point).
            let client = pair
                .listener
                .create_client::<rclev::interfaces::std_srvs::srv::Trigger>("nobody")
                .unwrap();
            let requesting = pair
                .listener
                .create_subscription::<Int64, _>("requests".qos(reliable_keep_all()), move |_| {
                    drop(client.call(Default::default()));
                })
                .unwrap();
            assert!(eventually(Duration::from_secs(10), || {
                numbers.get_subscription_count() == 1 && requests.get_subscription_count() == 1
            }));
            let seen = || {
                let (a, b) = (
                    creating.delivery_state().unwrap(),
                    requesting.delivery_state().unwrap(),
                );
                a.direct_runs + a.worker_runs + b.direct_runs + b.worker_runs
            };
            while_spinning(&pair, || {
                for n in 0..COUNT {
                    numbers.publish(Int64 { data: n }).unwrap();
                    requests.publish(Int64 { data: n }).unwrap();
                    std::thread::sleep(Duration::from_micros(500));
                }
                assert!(eventually(Duration::from_secs(30), || seen() >= 2 * COUNT as u64));
            });
            for (what, state) in [
                ("creating", creating.delivery_state().unwrap()),
                ("requesting", requesting.delivery_state().unwrap()),
            ] {
                println!("{what}: {state:?}");
                assert!(state.barred, "{what}: {state:?}");
                assert_eq!(state.direct_runs, 0, "{what}: {state:?}");
            }
            assert_eq!(made.lock().unwrap().len(), 1);
            assert_eq!(direct_after.load(Ordering::SeqCst), 0);
        },
    );
}
