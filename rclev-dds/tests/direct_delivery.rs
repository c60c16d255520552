//! `Delivery::Direct` over DDS: subscription callbacks run on Fast DDS's receive thread when
//! their worker is idle, still as the worker's callbacks, and what must not happen there
//! (creating DDS entities, deleting them synchronously) is refused or deferred.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{dds_context, eventually, in_netns, reliable_keep_all, spin_until, Pair};
use rclev::interfaces::std_msgs::msg::Int64;
use rclev::{Delivery, Error, IntoPrimitiveOptions, Node, Publisher, SpinOptions, Subscription};

/// The kernel's name of the calling thread: Fast DDS names its receive threads `dds.shm.<port>`
/// and `dds.udp.<port>`; rclev's workers are `rclev-…`.
fn thread_name() -> String {
    std::fs::read_to_string("/proc/thread-self/comm")
        .unwrap()
        .trim()
        .to_string()
}

fn on_receive_thread(name: &str) -> bool {
    name.starts_with("dds.")
}

/// Two participants, and the talker's publisher of numbers (reliable, keep-all).
fn numbers() -> (Pair, Publisher<Int64>) {
    let pair = Pair::new();
    let publisher = pair
        .talker
        .create_publisher::<Int64>("numbers".qos(reliable_keep_all()))
        .unwrap();
    (pair, publisher)
}

/// What one subscription saw.
#[derive(Default)]
struct Seen {
    values: Mutex<Vec<i64>>,
    threads: Mutex<Vec<String>>,
}

/// Publishes `count` numbers from one participant to a subscription with `delivery` on
/// another, whose worker also runs a 2 kHz timer; every callback of that worker checks that no
/// other one runs meanwhile. Returns what the subscription saw.
fn deliver(delivery: Delivery, count: i64) -> Arc<Seen> {
    let (pair, publisher) = numbers();
    let (listener, b) = (&pair.listener, &pair.b);
    let seen = Arc::new(Seen::default());
    let inside = Arc::new(AtomicBool::new(false));
    let overlaps = Arc::new(AtomicU64::new(0));
    let enter = {
        let (inside, overlaps) = (inside.clone(), overlaps.clone());
        move || {
            if inside.swap(true, Ordering::SeqCst) {
                overlaps.fetch_add(1, Ordering::SeqCst);
            }
        }
    };
    let (s, e, i) = (seen.clone(), enter.clone(), inside.clone());
    let _sub = listener
        .create_subscription::<Int64, _>(
            "numbers".qos(reliable_keep_all()).delivery(delivery),
            move |m| {
                e();
                s.values.lock().unwrap().push(m.data);
                s.threads.lock().unwrap().push(thread_name());
                std::hint::black_box((0..500).sum::<u64>());
                i.store(false, Ordering::SeqCst);
            },
        )
        .unwrap();
    let (e, i) = (enter, inside.clone());
    let _timer = listener
        .create_timer_repeating(Duration::from_micros(500), move || {
            e();
            std::hint::black_box((0..500).sum::<u64>());
            i.store(false, Ordering::SeqCst);
        })
        .unwrap();
    assert!(eventually(Duration::from_secs(10), || publisher
        .get_subscription_count()
        == 1));
    let cmds = b.commands();
    std::thread::scope(|scope| {
        let spinner = scope.spawn(|| b.spin(SpinOptions::default()));
        for n in 0..count {
            publisher.publish(Int64 { data: n }).unwrap();
            if n % 64 == 0 {
                // Gaps let the worker park, which is when a receive thread may borrow it.
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        let all = eventually(Duration::from_secs(20), || {
            seen.values.lock().unwrap().len() as i64 >= count
        });
        cmds.halt_spinning();
        let errors = spinner.join().unwrap();
        assert!(errors.is_empty(), "{errors:?}");
        assert!(
            all,
            "{} of {count} arrived",
            seen.values.lock().unwrap().len()
        );
    });
    assert_eq!(
        overlaps.load(Ordering::SeqCst),
        0,
        "two callbacks of one worker ran at once"
    );
    assert_eq!(*seen.values.lock().unwrap(), (0..count).collect::<Vec<_>>());
    seen
}

#[test]
fn direct_callbacks_run_on_the_receive_thread_in_order_and_one_at_a_time() {
    in_netns(
        "direct_callbacks_run_on_the_receive_thread_in_order_and_one_at_a_time",
        Duration::from_secs(90),
        || {
            let seen = deliver(Delivery::Direct, 3000);
            let threads = seen.threads.lock().unwrap();
            let direct = threads.iter().filter(|t| on_receive_thread(t)).count();
            println!(
                "{direct} of {} callbacks ran on Fast DDS's receive thread",
                threads.len()
            );
            assert!(direct > 0, "no callback ran directly: {threads:?}");
        },
    );
}

#[test]
fn worker_delivery_never_runs_callbacks_on_the_receive_thread() {
    in_netns(
        "worker_delivery_never_runs_callbacks_on_the_receive_thread",
        Duration::from_secs(90),
        || {
            let seen = deliver(Delivery::Worker, 500);
            let threads = seen.threads.lock().unwrap();
            assert!(threads.iter().all(|t| !on_receive_thread(t)), "{threads:?}");
        },
    );
}

/// A direct callback cannot create DDS endpoints (a typed error, not a deadlock with Fast
/// DDS's discovery), can drop its own subscription (deleted once it has returned), and a
/// panic in it is reported while the subscription goes on.
#[test]
fn a_direct_callback_is_refused_entities_may_drop_itself_and_panics_are_reported() {
    in_netns(
        "a_direct_callback_is_refused_entities_may_drop_itself_and_panics_are_reported",
        Duration::from_secs(90),
        || {
            let (pair, publisher) = numbers();
            let (listener, b) = (&pair.listener, &pair.b);
            // The subscription's own handle, for its callback to drop.
            let own: Arc<Mutex<Option<Subscription<Int64>>>> = Arc::default();
            let created = Arc::new(Mutex::new(None::<Result<(), String>>));
            let after_drop = Arc::new(AtomicU64::new(0));
            let panicked_once = Arc::new(AtomicBool::new(false));
            let (o, c, ad, p, n) = (
                own.clone(),
                created.clone(),
                after_drop.clone(),
                panicked_once.clone(),
                listener.clone(),
            );
            let sub = listener
                .create_subscription::<Int64, _>(
                    "numbers"
                        .qos(reliable_keep_all())
                        .delivery(Delivery::Direct),
                    move |m| {
                        if !p.swap(true, Ordering::SeqCst) {
                            panic!("first message {}", m.data);
                        }
                        if !on_receive_thread(&thread_name()) {
                            return;
                        }
                        if o.lock().unwrap().is_none() {
                            // Already dropped: nothing may arrive after that.
                            ad.fetch_add(1, Ordering::SeqCst);
                            return;
                        }
                        let made = n.create_publisher::<Int64>("made_in_callback");
                        *c.lock().unwrap() = Some(match made {
                            Err(Error::Transport(reason)) => {
                                println!("refused: {reason}");
                                Ok(())
                            }
                            Err(other) => Err(format!("another error: {other}")),
                            Ok(_) => Err("a DDS writer was created on the receive thread".into()),
                        });
                        // Dropping the last handle from inside its own callback.
                        drop(o.lock().unwrap().take());
                    },
                )
                .unwrap();
            *own.lock().unwrap() = Some(sub);
            assert!(eventually(Duration::from_secs(10), || publisher
                .get_subscription_count()
                == 1));

            let mut errors = Vec::new();
            let deadline = Instant::now() + Duration::from_secs(30);
            let mut n = 0;
            while created.lock().unwrap().is_none() && Instant::now() < deadline {
                publisher.publish(Int64 { data: n }).unwrap();
                n += 1;
                errors.extend(b.spin(SpinOptions::default().timeout(Duration::from_millis(20))));
            }
            let result = created.lock().unwrap().clone();
            assert_eq!(result, Some(Ok(())), "no direct run refused the writer");
            assert!(
                errors
                    .iter()
                    .any(|e| matches!(e, Error::CallbackPanicked { .. })),
                "the panic was not reported: {errors:?}"
            );
            // The subscription is gone: its reader is deleted and it gets nothing more.
            assert!(eventually(Duration::from_secs(10), || publisher
                .get_subscription_count()
                == 0));
            for n in 0..20 {
                publisher.publish(Int64 { data: n }).unwrap();
            }
            spin_until(b, Duration::from_millis(300), || false);
            assert_eq!(after_drop.load(Ordering::SeqCst), 0);
        },
    );
}

/// Two direct subscriptions in one process that answer each other, with many messages in
/// flight both ways at once. With Fast DDS's synchronous intra-process delivery a publish would
/// run the other subscription's listener on the publishing thread (a direct callback there
/// would hold one reader's lock and take the other's: two threads doing that in opposite
/// directions deadlock). rclev turns that delivery off: samples of one process arrive on the
/// receive threads like any other, and direct callbacks run there (with it on, none does).
#[test]
fn direct_callbacks_answering_each_other_in_one_process_do_not_deadlock() {
    in_netns(
        "direct_callbacks_answering_each_other_in_one_process_do_not_deadlock",
        Duration::from_secs(90),
        || {
            const ROUNDS: i64 = 2000;
            const IN_FLIGHT: i64 = 16;
            let executor = dds_context().create_basic_executor();
            let ping_node = executor.create_node("pinger").unwrap();
            let pong_node = executor.create_node("ponger").unwrap();
            let to_pong = ping_node
                .create_publisher::<Int64>("to_pong".qos(reliable_keep_all()))
                .unwrap();
            let to_ping = pong_node
                .create_publisher::<Int64>("to_ping".qos(reliable_keep_all()))
                .unwrap();
            // Tokens that made all their rounds.
            let finished = Arc::new(AtomicU64::new(0));
            let direct = Arc::new(AtomicU64::new(0));
            let (tp, f) = (to_pong.clone(), finished.clone());
            let _ping = direct_numbers(&ping_node, "to_ping", &direct, move |n| {
                if n < ROUNDS {
                    tp.publish(Int64 { data: n + 1 }).unwrap();
                } else {
                    f.fetch_add(1, Ordering::SeqCst);
                }
            });
            let tq = to_ping.clone();
            let _pong = direct_numbers(&pong_node, "to_pong", &direct, move |n| {
                tq.publish(Int64 { data: n }).unwrap();
            });
            assert!(eventually(Duration::from_secs(10), || {
                to_pong.get_subscription_count() == 1 && to_ping.get_subscription_count() == 1
            }));
            let cmds = executor.commands();
            std::thread::scope(|scope| {
                let spinner = scope.spawn(|| executor.spin(SpinOptions::default()));
                for _ in 0..IN_FLIGHT {
                    to_pong.publish(Int64 { data: 0 }).unwrap();
                }
                let done = eventually(Duration::from_secs(40), || {
                    finished.load(Ordering::SeqCst) == IN_FLIGHT as u64
                });
                cmds.halt_spinning();
                let errors = spinner.join().unwrap();
                assert!(errors.is_empty(), "{errors:?}");
                assert!(
                    done,
                    "{} of {IN_FLIGHT} tokens made it",
                    finished.load(Ordering::SeqCst)
                );
            });
            let direct = direct.load(Ordering::Relaxed);
            println!(
                "{direct} of {} callbacks ran on a receive thread",
                2 * ROUNDS * IN_FLIGHT
            );
            assert!(direct > 0, "no callback ran on a receive thread");
        },
    );
}

/// A direct subscription to numbers on `topic` that counts in `direct` the callbacks run on a
/// receive thread and hands each number to `answer`.
fn direct_numbers(
    node: &Node,
    topic: &str,
    direct: &Arc<AtomicU64>,
    answer: impl Fn(i64) + Send + 'static,
) -> Subscription<Int64> {
    let direct = direct.clone();
    node.create_subscription::<Int64, _>(
        topic.qos(reliable_keep_all()).delivery(Delivery::Direct),
        move |m| {
            if on_receive_thread(&thread_name()) {
                direct.fetch_add(1, Ordering::Relaxed);
            }
            answer(m.data);
        },
    )
    .unwrap()
}
