//! Large messages cross DDS with one copy each way, counted: 1 MiB and 4 MiB
//! `sensor_msgs/msg/Image`s between two rclev participants of one process (over Fast DDS's
//! shared memory, in a network namespace of the test's own), with a KeepLast subscription
//! (decoded on Fast DDS's receive thread, the callback on the worker or, directly delivered,
//! right there) and a KeepAll one (taken and decoded by the worker).
//!
//! Copies are counted through this binary's global allocator: every Rust allocation (or
//! growth) of at least the image's size is noted, as made on the publishing thread inside
//! `publish` or elsewhere (the receive side: Fast DDS's receive threads, rclev's workers). A
//! copy of the pixels into a buffer of rclev's own needs such an allocation; Fast DDS's own
//! buffers are C++ allocations, which this allocator does not see.
//!
//! - Publishing: no such allocation. The message is encoded straight into Fast DDS's payload,
//!   sized beforehand by a counting pass: one copy (the encoding), also for the first message
//!   of a publisher.
//! - Receiving: exactly one per message, of exactly the pixels' size: the image's `data`,
//!   decoded straight from Fast DDS's buffer. (Before, the shim copied each sample into a Rust
//!   buffer and the node layer decoded that: two.)

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{eventually, in_netns, reliable_keep_all, Pair};
use rclev::interfaces::sensor_msgs::msg::Image;
use rclev::interfaces::std_msgs::msg::Header;
use rclev::{Delivery, History, IntoPrimitiveOptions, QoSProfile, SpinOptions};

/// Allocations at least this large are counted (`usize::MAX`: none).
static THRESHOLD: AtomicUsize = AtomicUsize::new(usize::MAX);
/// Those made on the publishing thread inside `publish`.
static PUBLISH_ALLOCS: AtomicU64 = AtomicU64::new(0);
/// Those made on any other thread but the test's own.
static RECEIVE_ALLOCS: AtomicU64 = AtomicU64::new(0);
/// Their bytes.
static RECEIVE_BYTES: AtomicU64 = AtomicU64::new(0);

/// Who the current thread allocates for.
#[derive(Clone, Copy, PartialEq)]
enum Role {
    /// Fast DDS's threads and rclev's workers: the receive side.
    Receiving,
    /// The test thread inside `publish`.
    Publishing,
    /// The test thread otherwise (making the messages it publishes): not counted.
    Test,
}

thread_local! {
    // Const-initialized and without a destructor: reading it allocates nothing and works
    // at any point of a thread's life, as an allocator needs.
    static ROLE: Cell<Role> = const { Cell::new(Role::Receiving) };
}

fn note(size: usize) {
    if size < THRESHOLD.load(Ordering::Relaxed) {
        return;
    }
    match ROLE.try_with(Cell::get).unwrap_or(Role::Receiving) {
        Role::Publishing => {
            PUBLISH_ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        Role::Receiving => {
            RECEIVE_ALLOCS.fetch_add(1, Ordering::Relaxed);
            RECEIVE_BYTES.fetch_add(size as u64, Ordering::Relaxed);
        }
        Role::Test => {}
    }
}

/// The system allocator, counting large allocations (see [`note`]).
struct Counting;

// SAFETY: every call is passed to `System` unchanged, with the caller's own guarantees;
// counting touches only atomics and a const-initialized thread-local, and never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: the caller's guarantees for `alloc`, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: the caller's guarantees for `alloc_zeroed`, passed on.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's guarantees for `dealloc`, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // A buffer grown past the threshold is a copy as well as an allocation.
        if new_size > layout.size() {
            note(new_size);
        }
        // SAFETY: the caller's guarantees for `realloc`, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// What one exchange counted.
#[derive(Debug)]
struct Counted {
    messages: u64,
    publish_allocs: u64,
    receive_allocs: u64,
    receive_bytes: u64,
}

/// The pixels of image `i`: distinct per image and per byte position.
fn pixels(i: usize, size: usize) -> Vec<u8> {
    (0..size)
        .map(|j| (j.wrapping_mul(31) ^ (j >> 11) ^ i.wrapping_mul(97)) as u8)
        .collect()
}

/// A `size`-byte mono8 image numbered `i` (in its frame id).
fn image(i: usize, data: Vec<u8>) -> Image {
    let width = 1024u32;
    Image {
        header: Header {
            frame_id: i.to_string(),
            ..Default::default()
        },
        height: u32::try_from(data.len()).unwrap() / width,
        width,
        encoding: "mono8".into(),
        is_bigendian: 0,
        step: width,
        data,
    }
}

/// Publishes `count` images of `size` bytes on `topic` from `pair`'s talker to a
/// subscription of its listener (with `qos` and `delivery`), one at a time (each once the
/// previous one has arrived, so that none is dropped), and checks that each arrives whole and
/// in order; what the allocator counted meanwhile.
fn exchange(
    pair: &Pair,
    topic: &str,
    size: usize,
    count: usize,
    qos: QoSProfile,
    delivery: Delivery,
) -> Counted {
    ROLE.with(|r| r.set(Role::Test));
    let expected: Arc<Vec<Vec<u8>>> = Arc::new((0..count).map(|i| pixels(i, size)).collect());
    let publisher = pair
        .talker
        .create_publisher::<Image>(topic.qos(qos))
        .unwrap();
    // (image number, whether it arrived whole)
    let arrived = Arc::new(Mutex::new(Vec::<(usize, bool)>::with_capacity(count)));
    let (e, a) = (expected.clone(), arrived.clone());
    let sub = pair
        .listener
        .create_subscription::<Image, _>(topic.qos(qos).delivery(delivery), move |m| {
            // Compared in place: the callback allocates nothing large.
            let i = m.header.frame_id.parse::<usize>().unwrap_or(usize::MAX);
            let whole = e.get(i).is_some_and(|want| {
                m.data == *want
                    && m.width == 1024
                    && m.height as usize * 1024 == size
                    && m.encoding == "mono8"
            });
            a.lock().unwrap().push((i, whole));
        })
        .unwrap();
    assert!(eventually(Duration::from_secs(10), || publisher
        .get_subscription_count()
        == 1));
    let cmds = pair.b.commands();
    let counted = std::thread::scope(|scope| {
        let spinner = scope.spawn(|| pair.b.spin(SpinOptions::default()));
        PUBLISH_ALLOCS.store(0, Ordering::SeqCst);
        RECEIVE_ALLOCS.store(0, Ordering::SeqCst);
        RECEIVE_BYTES.store(0, Ordering::SeqCst);
        THRESHOLD.store(size, Ordering::SeqCst);
        for (i, data) in expected.iter().enumerate() {
            let msg = image(i, data.clone());
            ROLE.with(|r| r.set(Role::Publishing));
            let published = publisher.publish(msg);
            ROLE.with(|r| r.set(Role::Test));
            published.unwrap();
            assert!(
                eventually(Duration::from_secs(20), || arrived.lock().unwrap().len()
                    > i),
                "image {i} of {size} bytes did not arrive"
            );
        }
        THRESHOLD.store(usize::MAX, Ordering::SeqCst);
        cmds.halt_spinning();
        let errors = spinner.join().unwrap();
        assert!(errors.is_empty(), "{errors:?}");
        Counted {
            messages: count as u64,
            publish_allocs: PUBLISH_ALLOCS.load(Ordering::SeqCst),
            receive_allocs: RECEIVE_ALLOCS.load(Ordering::SeqCst),
            receive_bytes: RECEIVE_BYTES.load(Ordering::SeqCst),
        }
    });
    assert_eq!(
        *arrived.lock().unwrap(),
        (0..count).map(|i| (i, true)).collect::<Vec<_>>(),
        "images arrived out of order or not whole"
    );
    assert_eq!(sub.lost_count(), 0);
    assert_eq!(sub.malformed_count(), 0);
    println!(
        "{topic}: {count} images of {size} bytes ({delivery:?}): per image, {:.2} allocations \
         of ≥ {size} bytes on the publishing side, {:.2} ({} bytes) on the receiving side",
        counted.publish_allocs as f64 / count as f64,
        counted.receive_allocs as f64 / count as f64,
        counted.receive_bytes / count as u64,
    );
    counted
}

/// The counts say one copy each way: nothing on the publishing side but the encoding into
/// Fast DDS's payload (no buffer of rclev's own), and on the receiving side one buffer per
/// image, the size of its pixels: the decoded message's own.
fn assert_one_copy(counted: &Counted, size: usize) {
    assert_eq!(
        counted.publish_allocs, 0,
        "publishing went through a buffer of rclev's own: {counted:?}"
    );
    assert_eq!(
        counted.receive_allocs, counted.messages,
        "receiving made other than one copy per image: {counted:?}"
    );
    assert_eq!(
        counted.receive_bytes,
        counted.messages * size as u64,
        "{counted:?}"
    );
}

const MIB: usize = 1 << 20;

fn keep_last(depth: usize) -> QoSProfile {
    QoSProfile {
        history: History::KeepLast(depth),
        ..QoSProfile::default()
    }
}

#[test]
fn images_cross_a_keep_last_subscription_with_one_copy_each_way() {
    in_netns(
        "images_cross_a_keep_last_subscription_with_one_copy_each_way",
        Duration::from_secs(120),
        || {
            let pair = Pair::new();
            for (topic, size, delivery) in [
                ("mib1", MIB, Delivery::Worker),
                ("mib4", 4 * MIB, Delivery::Worker),
                ("mib4_direct", 4 * MIB, Delivery::Direct),
            ] {
                let counted = exchange(&pair, topic, size, 4, keep_last(4), delivery);
                assert_one_copy(&counted, size);
            }
        },
    );
}

#[test]
fn images_cross_a_keep_all_subscription_with_one_copy_each_way() {
    in_netns(
        "images_cross_a_keep_all_subscription_with_one_copy_each_way",
        Duration::from_secs(120),
        || {
            let pair = Pair::new();
            for (topic, size) in [("mib1", MIB), ("mib4", 4 * MIB)] {
                let counted =
                    exchange(&pair, topic, size, 4, reliable_keep_all(), Delivery::Worker);
                assert_one_copy(&counted, size);
            }
        },
    );
}
