//! Publishers and subscriptions over DDS writers and readers.
//!
//! A subscription takes every sample on Fast DDS's receive thread (the shim's listener) into
//! its own queue, which keeps the ROS history (KeepLast drops the oldest and counts it lost),
//! and rings its [`ReadyHook`]: the executor is pushed, never polls. A subscription with
//! `Delivery::Direct` may have its callback run right there, on the receive thread, when its
//! worker is idle. Lock order: the queue mutex is a leaf; hooks are called after it is released.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use cxx::UniquePtr;

use rclev::msg::CdrError;
use rclev::qos::QosRole;
use rclev::transport::{
    EndpointKind, EventHook, Gid, MessageInfo, Payload, PublisherPort, ReadyHook, SubscriptionPort,
    TopicEndpoint, TypeSupport,
};
use rclev::{DeliveryError, Error, History, QoSProfile, Result};

use crate::ffi::bridge::{DdsReader, SampleIdentity, SampleMeta};
use crate::ffi::{Endpoint, PayloadEncoder};
use crate::graph::DdsEntity;
use crate::matched::{Matched, SampleSink};
use crate::names::{endpoint_user_data, topic_topic};
use crate::qos::to_dds;
use crate::transport::{engine_error, Announced, DdsNode};

/// "No related sample identity" for plain writes.
pub(crate) const NO_IDENTITY: SampleIdentity = SampleIdentity {
    guid: [0; 16],
    seq: -1,
    set: false,
};

thread_local! {
    /// Serialization scratch per publishing thread: no allocation per publish.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Serializes `payload` (or borrows its bytes) and hands them to `f`.
pub(crate) fn with_cdr<R>(
    payload: &Payload,
    type_support: &TypeSupport,
    f: impl FnOnce(&[u8]) -> Result<R>,
) -> Result<R> {
    SCRATCH.with(|scratch| {
        // A publish from inside `f` (never done) would find the scratch borrowed: use a
        // fresh buffer then rather than panic.
        match scratch.try_borrow_mut() {
            Ok(mut buf) => {
                let bytes = payload.cdr(type_support, &mut buf)?;
                f(bytes)
            }
            Err(_) => {
                let mut buf = Vec::new();
                let bytes = payload.cdr(type_support, &mut buf)?;
                f(bytes)
            }
        }
    })
}

/// A ROS publisher: one DDS writer on `rt/<name>`.
pub(crate) struct DdsPublisher {
    writer: Endpoint<UniquePtr<crate::ffi::bridge::DdsWriter>>,
    matched: Arc<Matched>,
    type_support: TypeSupport,
    /// The encoded size of the last message that went through `with_cdr`: room to reserve
    /// in Fast DDS's payload for encoding the next ones in place. 0 before the first.
    size_hint: AtomicUsize,
    gid: Gid,
    qos: QoSProfile,
    _announced: Announced,
}

/// Room reserved in Fast DDS's payload for a message expected to take `hint` bytes: messages
/// of one topic are usually alike, and a little headroom lets a slightly larger one fit.
fn payload_capacity(hint: usize) -> Option<u32> {
    u32::try_from(hint + hint / 8 + 64).ok()
}

impl DdsPublisher {
    pub fn new(
        node: &DdsNode,
        endpoint: &TopicEndpoint,
        events: Arc<dyn EventHook>,
    ) -> Result<Self> {
        let qos = endpoint.qos.resolve(QosRole::Publisher, &[]);
        qos.validate()?;
        let ts = endpoint.type_support;
        let parts = node.new_writer(
            &topic_topic(&endpoint.name, qos.avoid_ros_namespace_conventions),
            ts.info.dds_type_name,
            &to_dds(&qos),
            &endpoint_user_data(None, &ts.info.hash),
            events,
        )?;
        let gid = Gid(parts.writer.guid().bytes);
        let announced = node.announce(
            node.endpoint_info(
                &endpoint.name,
                EndpointKind::Publisher,
                ts.info.type_name,
                ts.info.hash,
                gid,
                qos,
            ),
            vec![DdsEntity::Writer(gid)],
        );
        Ok(Self {
            writer: parts.writer,
            matched: parts.matched,
            type_support: ts,
            size_hint: AtomicUsize::new(0),
            gid,
            qos,
            _announced: announced,
        })
    }
}

impl PublisherPort for DdsPublisher {
    fn publish(&self, msg: Payload) -> Result<(), DeliveryError<Payload>> {
        // A message encoded straight into Fast DDS's payload: no copy through a buffer of
        // rclev's own. Once the topic's message size is known, and while messages fit.
        if let (Payload::Shared(value), Some(encode)) = (&msg, self.type_support.serialize_in_place)
        {
            let capacity = match self.size_hint.load(Ordering::Relaxed) {
                0 => None,
                hint => payload_capacity(hint),
            };
            if let Some(capacity) = capacity {
                let mut encoder = PayloadEncoder::new(value.clone(), encode);
                let written = self
                    .writer
                    .write_encoded(capacity, &mut encoder, &NO_IDENTITY);
                match (written, encoder.failed.take()) {
                    (Ok(_), _) => return Ok(()),
                    // Larger than the room reserved: the usual way below, which learns its size.
                    (Err(_), Some(Error::Serialization(CdrError::NoRoom { .. }))) => {}
                    (Err(_), Some(error)) => return Err(DeliveryError { error, value: msg }),
                    (Err(e), None) => {
                        return Err(DeliveryError {
                            error: engine_error(e),
                            value: msg,
                        })
                    }
                }
            }
        }
        let written = with_cdr(&msg, &self.type_support, |bytes| {
            self.size_hint.store(bytes.len(), Ordering::Relaxed);
            self.writer.write(bytes, &NO_IDENTITY).map_err(engine_error)
        });
        match written {
            Ok(_) => Ok(()),
            Err(error) => Err(DeliveryError { error, value: msg }),
        }
    }

    fn subscription_count(&self) -> usize {
        self.matched.count()
    }

    fn gid(&self) -> Gid {
        self.gid
    }

    fn qos(&self) -> QoSProfile {
        self.qos
    }
}

/// A point in time given in nanoseconds since the Unix epoch.
pub(crate) fn system_time(ns: i64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_nanos(u64::try_from(ns).unwrap_or(0))
}

/// The ROS history of a subscription, filled from the listener thread.
struct Queue {
    items: VecDeque<(Vec<u8>, MessageInfo)>,
    received: u64,
}

/// What the listener shares with the subscription port.
struct SubscriptionInbox {
    queue: Mutex<Queue>,
    /// `None`: keep all.
    depth: Option<usize>,
    lost: AtomicU64,
    closed: AtomicBool,
    ready: Arc<dyn ReadyHook>,
}

impl SubscriptionInbox {
    fn queue(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl SampleSink for SubscriptionInbox {
    fn sample(&self, data: &[u8], meta: &SampleMeta) {
        self.sample_owned(data.to_vec(), meta);
    }

    fn sample_owned(&self, data: Vec<u8>, meta: &SampleMeta) {
        if self.closed.load(Ordering::Acquire) {
            return;
        }
        {
            let mut q = self.queue();
            q.received += 1;
            let info = MessageInfo {
                source_timestamp: system_time(meta.source_timestamp_ns),
                received_timestamp: system_time(meta.reception_timestamp_ns),
                publisher_gid: Gid(meta.identity.guid),
                publication_sequence_number: u64::try_from(meta.identity.seq).unwrap_or(0),
                reception_sequence_number: q.received,
                from_intra_process: false,
            };
            q.items.push_back((data, info));
            if let Some(depth) = self.depth {
                while q.items.len() > depth {
                    q.items.pop_front();
                    self.lost.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        // This is Fast DDS's receive thread: a directly delivered subscription's callback may
        // run right here (`Delivery::Direct`).
        self.ready.ready_on_receive_thread();
    }
}

/// A ROS subscription: one DDS reader on `rt/<name>`.
pub(crate) struct DdsSubscription {
    inbox: Arc<SubscriptionInbox>,
    /// Taken (and so deleted) by `close`.
    reader: Mutex<Option<Endpoint<UniquePtr<DdsReader>>>>,
    matched: Arc<Matched>,
    gid: Gid,
    qos: QoSProfile,
    announced: Mutex<Option<Announced>>,
}

impl DdsSubscription {
    pub fn new(
        node: &DdsNode,
        endpoint: &TopicEndpoint,
        ready: Arc<dyn ReadyHook>,
        events: Arc<dyn EventHook>,
    ) -> Result<Arc<Self>> {
        let offers = node.shared.graph.offers(&endpoint.name);
        let qos = endpoint.qos.resolve(QosRole::Subscription, &offers);
        qos.validate()?;
        let ts = endpoint.type_support;
        let inbox = Arc::new(SubscriptionInbox {
            queue: Mutex::new(Queue {
                items: VecDeque::new(),
                received: 0,
            }),
            depth: match qos.history {
                History::KeepAll => None,
                History::KeepLast(n) => Some(n.max(1)),
                History::SystemDefault => Some(1),
            },
            lost: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            ready,
        });
        let parts = node.new_reader(
            &topic_topic(&endpoint.name, qos.avoid_ros_namespace_conventions),
            ts.info.dds_type_name,
            &to_dds(&qos),
            &endpoint_user_data(None, &ts.info.hash),
            inbox.clone(),
            events,
        )?;
        let gid = Gid(parts.reader.guid().bytes);
        let announced = node.announce(
            node.endpoint_info(
                &endpoint.name,
                EndpointKind::Subscription,
                ts.info.type_name,
                ts.info.hash,
                gid,
                qos,
            ),
            vec![DdsEntity::Reader(gid)],
        );
        Ok(Arc::new(Self {
            inbox,
            reader: Mutex::new(Some(parts.reader)),
            matched: parts.matched,
            gid,
            qos,
            announced: Mutex::new(Some(announced)),
        }))
    }
}

impl SubscriptionPort for DdsSubscription {
    fn take(&self) -> Option<(Payload, MessageInfo)> {
        let (bytes, info) = self.inbox.queue().items.pop_front()?;
        Some((Payload::Serialized(Box::new(bytes)), info))
    }

    fn take_batch(&self, max: usize, out: &mut Vec<(Payload, MessageInfo)>) -> bool {
        let mut q = self.inbox.queue();
        let n = max.min(q.items.len());
        out.extend(
            q.items
                .drain(..n)
                .map(|(bytes, info)| (Payload::Serialized(Box::new(bytes)), info)),
        );
        !q.items.is_empty()
    }

    fn take_payloads(&self, max: usize, out: &mut Vec<Payload>) -> bool {
        let mut q = self.inbox.queue();
        let n = max.min(q.items.len());
        out.extend(
            q.items
                .drain(..n)
                .map(|(bytes, _)| Payload::Serialized(Box::new(bytes))),
        );
        !q.items.is_empty()
    }

    fn lost_count(&self) -> u64 {
        self.inbox.lost.load(Ordering::Relaxed)
    }

    fn publisher_count(&self) -> usize {
        self.matched.count()
    }

    fn gid(&self) -> Gid {
        self.gid
    }

    fn qos(&self) -> QoSProfile {
        self.qos
    }

    fn close(&self) {
        self.inbox.closed.store(true, Ordering::Release);
        // Deleting the reader waits for a listener call in flight; no lock of ours is held.
        let reader = self.reader.lock().unwrap_or_else(|e| e.into_inner()).take();
        drop(reader);
        let announced = self
            .announced
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        drop(announced);
        self.inbox.queue().items.clear();
    }
}

impl Drop for DdsSubscription {
    fn drop(&mut self) {
        self.close();
    }
}

/// Validation that a payload was serialized to something (used by services too).
pub(crate) fn require_encapsulation(bytes: &[u8], what: &str) -> Result<()> {
    if bytes.len() < 4 {
        return Err(Error::MalformedMessage {
            topic: what.to_string(),
            reason: format!("{} bytes: no CDR encapsulation header", bytes.len()),
        });
    }
    Ok(())
}
