//! Topics on the in-process transport: ordering, history, durability, type and QoS checks.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{count_to, spin_until};
use futures::StreamExt;
use rclev::interfaces::std_msgs::msg::Int64;
use rclev::interfaces::std_msgs::msg::String as StringMsg;
use rclev::{Context, Error, IntoPrimitiveOptions, NameKind, NodeOptions, QoSProfile, SpinOptions};
use tokio::sync::Semaphore;

fn collecting_subscription(
    node: &rclev::Node,
    topic: impl IntoPrimitiveOptions,
) -> (
    rclev::Subscription<Int64>,
    Arc<Mutex<Vec<i64>>>,
    Arc<Semaphore>,
) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sem = Arc::new(Semaphore::new(0));
    let (s, p) = (seen.clone(), sem.clone());
    let sub = node
        .create_subscription::<Int64, _>(topic, move |m| {
            s.lock().unwrap().push(m.data);
            p.add_permits(1);
        })
        .unwrap();
    (sub, seen, sem)
}

#[test]
fn keep_all_reliable_delivers_100k_in_order() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("n").unwrap();
    let qos = QoSProfile::default().keep_all().reliable();
    let (sub, seen, sem) = collecting_subscription(&node, "numbers".qos(qos));
    let publisher = node.create_publisher::<Int64>("numbers".qos(qos)).unwrap();
    let n = 100_000;
    let producer = std::thread::spawn(move || {
        for i in 0..n {
            publisher.publish(Int64 { data: i }).unwrap();
        }
    });
    spin_until(&executor, count_to(&sem, n as u32));
    producer.join().unwrap();
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), n as usize);
    assert!(seen.iter().copied().eq(0..n), "out of order");
    assert_eq!(sub.lost_count(), 0);
}

#[test]
fn keep_last_drops_oldest_and_counts_loss() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("n").unwrap();
    let (sub, seen, _) =
        collecting_subscription(&node, "numbers".qos(QoSProfile::default().keep_last(5)));
    let publisher = node.create_publisher::<Int64>("numbers").unwrap();
    // Not spinning: everything queues in the subscription's history.
    for i in 0..20 {
        publisher.publish(Int64 { data: i }).unwrap();
    }
    let _ = executor.spin(SpinOptions::spin_once().timeout(Duration::from_secs(5)));
    assert_eq!(*seen.lock().unwrap(), vec![15, 16, 17, 18, 19]);
    assert_eq!(sub.lost_count(), 15);
}

#[test]
fn ordering_per_publisher_with_two_publishers() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("n").unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sem = Arc::new(Semaphore::new(0));
    let (s, p) = (seen.clone(), sem.clone());
    let _sub = node
        .create_subscription::<StringMsg, _>(
            "mixed".qos(QoSProfile::default().keep_all()),
            move |m| {
                s.lock().unwrap().push(m.data.clone());
                p.add_permits(1);
            },
        )
        .unwrap();
    let threads: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|tag| {
            let publisher = node.create_publisher::<StringMsg>("mixed").unwrap();
            std::thread::spawn(move || {
                for i in 0..5000 {
                    publisher
                        .publish(StringMsg {
                            data: format!("{tag}{i}"),
                        })
                        .unwrap();
                }
            })
        })
        .collect();
    spin_until(&executor, count_to(&sem, 10_000));
    threads.into_iter().for_each(|t| t.join().unwrap());
    let seen = seen.lock().unwrap();
    for tag in ["a", "b"] {
        let mine: Vec<usize> = seen
            .iter()
            .filter_map(|s| s.strip_prefix(tag))
            .map(|n| n.parse().unwrap())
            .collect();
        assert_eq!(
            mine,
            (0..5000).collect::<Vec<_>>(),
            "publisher {tag} reordered"
        );
    }
}

#[test]
fn transient_local_late_joiner_gets_last_n() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("n").unwrap();
    let latched = QoSProfile::default().keep_last(3).transient_local();
    let publisher = node.create_publisher::<Int64>("map".qos(latched)).unwrap();
    for i in 0..10 {
        publisher.publish(Int64 { data: i }).unwrap();
    }
    let (_late, seen, _) = collecting_subscription(&node, "map".qos(latched));
    let (_volatile, seen_volatile, _) = collecting_subscription(&node, "map");
    let _ = executor.spin(SpinOptions::spin_once().timeout(Duration::from_secs(5)));
    assert_eq!(*seen.lock().unwrap(), vec![7, 8, 9]);
    assert!(seen_volatile.lock().unwrap().is_empty());
    publisher.publish(Int64 { data: 10 }).unwrap();
    let _ = executor.spin(SpinOptions::spin_once().timeout(Duration::from_secs(5)));
    assert_eq!(*seen.lock().unwrap(), vec![7, 8, 9, 10]);
    assert_eq!(*seen_volatile.lock().unwrap(), vec![10]);
}

// A type or QoS mismatch used to fail the second endpoint's creation, which depended on the
// order endpoints were created in and cannot hold across processes. As in ROS 2, the two
// endpoints are now created and simply do not match, with an event on both sides:
// `tests/transport_seam.rs` checks that, in either order.

#[test]
fn invalid_names_are_typed_errors() {
    let executor = Context::default().create_basic_executor();
    for bad in ["", "9lives", "with space", "dash-ed"] {
        assert!(matches!(
            executor.create_node(bad),
            Err(Error::InvalidName {
                kind: NameKind::Node,
                ..
            })
        ));
    }
    assert!(matches!(
        executor.create_node(NodeOptions::new("ok").namespace("/bad//ns")),
        Err(Error::InvalidName {
            kind: NameKind::Namespace,
            ..
        })
    ));
    let node = executor
        .create_node(NodeOptions::new("cam").namespace("robot"))
        .unwrap();
    assert_eq!(node.fully_qualified_name(), "/robot/cam");
    assert_eq!(
        node.resolve_topic_name("~/info").unwrap(),
        "/robot/cam/info"
    );
    for bad in ["a//b", "trailing/", "~nope", "1x", ""] {
        assert!(matches!(
            node.create_publisher::<Int64>(bad),
            Err(Error::InvalidName {
                kind: NameKind::Topic,
                ..
            })
        ));
    }
    let p = node.create_publisher::<Int64>("image").unwrap();
    assert_eq!(p.topic_name(), "/robot/image");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscription_stream_is_awaitable_without_spinning() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("n").unwrap();
    let mut stream = node
        .create_subscription_stream::<Int64>("s".qos(QoSProfile::default().keep_all()))
        .unwrap();
    let publisher = node.create_publisher::<Int64>("s").unwrap();
    let producer = tokio::spawn(async move {
        for i in 0..1000 {
            publisher.publish(Int64 { data: i }).unwrap();
            if i % 100 == 0 {
                tokio::task::yield_now().await;
            }
        }
    });
    for i in 0..500 {
        assert_eq!(stream.recv().await.unwrap().data, i);
    }
    for i in 500..1000 {
        assert_eq!(stream.next().await.unwrap().data, i);
    }
    producer.await.unwrap();
    assert!(stream.try_recv().is_none());
}

#[test]
fn dropped_subscription_gets_nothing_more() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("n").unwrap();
    let (sub, seen, _) = collecting_subscription(&node, "d");
    let publisher = node.create_publisher::<Int64>("d").unwrap();
    publisher.publish(Int64 { data: 1 }).unwrap();
    drop(sub);
    publisher.publish(Int64 { data: 2 }).unwrap();
    assert_eq!(publisher.get_subscription_count(), 0);
    let _ = executor.spin(SpinOptions::spin_once().timeout(Duration::from_secs(2)));
    assert!(seen.lock().unwrap().is_empty());
}

/// Dropping a subscription from another thread while its callback runs waits for that call to
/// return (so no call of it is running or starting once the drop returns), then delivers
/// nothing more, not even the rest of the batch the worker had taken.
#[test]
fn dropping_a_subscription_while_its_callback_runs_waits_for_it_and_stops_delivery() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("n").unwrap();
    let publisher = node.create_publisher::<Int64>("busy").unwrap();
    let (entered_tx, entered_rx) = std::sync::mpsc::channel();
    let finished = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (s, f) = (seen.clone(), finished.clone());
    let sub = node
        .create_subscription::<Int64, _>("busy", move |m| {
            s.lock().unwrap().push(m.data);
            if m.data == 1 {
                entered_tx.send(()).unwrap();
                std::thread::sleep(Duration::from_millis(100));
                f.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        })
        .unwrap();
    for data in 1..=3 {
        publisher.publish(Int64 { data }).unwrap();
    }
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    let p = publisher.clone();
    let dropper = std::thread::spawn(move || {
        entered_rx.recv_timeout(Duration::from_secs(20)).unwrap();
        // Messages 2 and 3 are already in the worker's batch when the handle goes.
        drop(sub);
        let finished_at_drop = finished.load(std::sync::atomic::Ordering::SeqCst);
        let matched_after_drop = p.get_subscription_count();
        done_tx.send(()).unwrap();
        (finished_at_drop, matched_after_drop)
    });
    spin_until(&executor, async move {
        done_rx.await.unwrap();
    });
    let _ = executor.spin(SpinOptions::default().timeout(Duration::from_millis(200)));
    assert_eq!(dropper.join().unwrap(), (true, 0));
    assert_eq!(*seen.lock().unwrap(), vec![1]);
}
