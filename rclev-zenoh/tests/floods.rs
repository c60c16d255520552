//! Floods of large messages into a subscription that does not keep up, over Zenoh: its queue
//! holds at most its byte budget (`max_queue_bytes`, 128 MiB by default) whatever its history,
//! the same policy as over DDS. Zenoh has no per-reader history that could push back on the
//! publisher, so a KeepAll queue refuses the newest beyond its budget (counted as lost) and a
//! KeepLast one drops its oldest. In a loopback-only namespace of its own, through the
//! embedded router; the publisher is a second transport in this process, as a second process
//! would have one.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rclev::interfaces::std_msgs::msg::ByteMultiArray;
use rclev::{IntoPrimitiveOptions, QoSProfile};
use rclev_zenoh::{Router, ZenohOptions};

use common::{eventually, executor, in_netns, spin_until};

const LIMIT: Duration = Duration::from_secs(180);
const MEET: Duration = Duration::from_secs(30);
const MIB: usize = 1 << 20;

/// This process's resident memory, MiB.
fn rss_mib() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: usize = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096 / MIB
}

/// Publishes `count` messages of 1 MiB (reliable, KeepAll, as rmw_zenoh's flow control
/// blocks for) at a subscription with `qos` and a `budget`-byte queue whose executor does not
/// spin meanwhile; then spins it until it has taken all it queued. Returns (messages taken,
/// lost, RSS growth in MiB while the flood lasted).
fn flood(qos: QoSProfile, budget: usize, count: usize) -> (usize, u64, usize) {
    let _router = Router::start(&ZenohOptions::default()).expect("a router");
    let (_ta, a) = executor();
    let (_tb, b) = executor();
    let talker = a.create_node("flooder").unwrap();
    let listener = b.create_node("slow").unwrap();
    let publisher = talker
        .create_publisher::<ByteMultiArray>("/flood".qos(QoSProfile::default().keep_all()))
        .unwrap();
    let taken = Arc::new(AtomicUsize::new(0));
    let t = taken.clone();
    let subscription = listener
        .create_subscription::<ByteMultiArray, _>(
            "/flood".qos(qos).max_queue_bytes(budget),
            move |m: Arc<ByteMultiArray>| {
                assert_eq!(m.data.len(), MIB - 16);
                t.fetch_add(1, Ordering::Relaxed);
            },
        )
        .unwrap();
    assert!(
        eventually(MEET, || (publisher.get_subscription_count() == 1)
            .then_some(()))
        .is_some(),
        "the publisher never matched the subscription"
    );
    let before = rss_mib();
    let message = ByteMultiArray {
        data: vec![7; MIB - 16],
        ..Default::default()
    };
    let mut peak = before;
    for _ in 0..count {
        publisher.publish(message.clone()).unwrap();
        peak = peak.max(rss_mib());
    }
    // Everything published has arrived (or been refused) once the queue stops changing:
    // look until taken + queued + lost accounts for every message.
    assert!(
        spin_until(&b, MEET, || {
            taken.load(Ordering::Relaxed) as u64 + subscription.lost_count() >= count as u64
        }),
        "taken {} + lost {} of {count}",
        taken.load(Ordering::Relaxed),
        subscription.lost_count()
    );
    peak = peak.max(rss_mib());
    (
        taken.load(Ordering::Relaxed),
        subscription.lost_count(),
        peak - before,
    )
}

/// The defect: a KeepAll subscription held up to 10,000 samples of any size; with 1 MiB
/// samples the process reached 3.4 GB in 12 s and was still growing.
#[test]
fn a_keep_all_subscription_flooded_with_1_mib_messages_holds_its_byte_budget() {
    in_netns(
        "a_keep_all_subscription_flooded_with_1_mib_messages_holds_its_byte_budget",
        &[],
        LIMIT,
        || {
            let budget = 32 * MIB;
            let (taken, lost, grew) = flood(QoSProfile::default().keep_all(), budget, 300);
            println!("KeepAll, 300 × 1 MiB into a 32 MiB budget: taken {taken}, lost {lost}, RSS +{grew} MiB");
            // The budget is in wire bytes (1 MiB each): 32 fit, the rest are refused (a few
            // more may be taken: some are still on their way when the executor spins).
            assert!(taken >= 28 && lost > 0, "{taken} taken, {lost} lost");
            assert_eq!(taken as u64 + lost, 300);
            // The queue, a message being encoded and one being received, and Zenoh's
            // buffers: far from 300 MiB.
            assert!(grew < 32 + 100, "RSS grew {grew} MiB");
        },
    );
}

/// A KeepLast history of large messages keeps its newest within the budget.
#[test]
fn a_deep_keep_last_history_of_1_mib_messages_holds_its_byte_budget() {
    in_netns(
        "a_deep_keep_last_history_of_1_mib_messages_holds_its_byte_budget",
        &[],
        LIMIT,
        || {
            let budget = 16 * MIB;
            let (taken, lost, grew) = flood(QoSProfile::default().keep_last(1000), budget, 200);
            println!("KeepLast(1000), 200 × 1 MiB into a 16 MiB budget: taken {taken}, lost {lost}, RSS +{grew} MiB");
            assert!(taken >= 13 && lost > 0, "{taken} taken, {lost} lost");
            assert_eq!(taken as u64 + lost, 200);
            assert!(grew < 16 + 100, "RSS grew {grew} MiB");
        },
    );
}
