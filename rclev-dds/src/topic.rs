//! Publishers and subscriptions over DDS writers and readers.
//!
//! A KeepLast subscription takes every sample on Fast DDS's receive thread (the shim's
//! listener) into its own queue, which keeps the ROS history (the oldest dropped and counted
//! lost), and rings its [`ReadyHook`]: the executor is pushed, never polls. A KeepAll one
//! leaves samples in Fast DDS's history and rings the hook; its worker takes them (see
//! `inbox`). A subscription with `Delivery::Direct` may have its callback run right there, on
//! the receive thread, when its worker is idle. Lock order: the reader slot, then the queue
//! mutex (a leaf); hooks are called after both are released.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use cxx::UniquePtr;

use rclev::msg::CdrError;
use rclev::qos::QosRole;
use rclev::transport::{
    EndpointInfo, EndpointKind, EventHook, Gid, MessageInfo, Payload, PublisherPort, ReadyHook,
    SubscriptionPort, TopicEndpoint, TypeSupport,
};
use rclev::{DeliveryError, Error, QoSProfile, Result};

use crate::cdr::with_cdr;
use crate::error::engine_error;
use crate::ffi::bridge::{DdsWriter, SampleMeta};
use crate::ffi::{Guarded, PayloadEncoder, NO_IDENTITY};
use crate::graph::DdsEntity;
use crate::inbox::{fill_on_demand, Fill, Inbox, ReaderSlot};
use crate::matched::{Matched, SampleSink};
use crate::names::{endpoint_user_data, topic_topic};
use crate::node::{Announced, DdsNode};
use crate::qos::to_dds;

/// A ROS publisher: one DDS writer on `rt/<name>`.
pub(crate) struct DdsPublisher {
    writer: Guarded<UniquePtr<DdsWriter>>,
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
            EndpointInfo::new(
                node.name.clone(),
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
        if let (Payload::Shared(value), Some(encode)) =
            (&msg, self.type_support.serialize_in_place())
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

/// What the listener shares with the subscription port: the ROS history (see `inbox` for
/// its bound and policy) and the count of what was received.
struct SubscriptionInbox {
    inbox: Inbox<(Vec<u8>, MessageInfo)>,
    /// Messages received so far, for `reception_sequence_number`; written by whoever pushes
    /// (the receive thread, or an on-demand take on the worker), one at a time.
    received: AtomicU64,
}

impl SampleSink for SubscriptionInbox {
    fn sample(&self, data: Vec<u8>, meta: &SampleMeta) {
        let info = MessageInfo {
            source_timestamp: system_time(meta.source_timestamp_ns),
            received_timestamp: system_time(meta.reception_timestamp_ns),
            publisher_gid: Gid(meta.identity.guid),
            publication_sequence_number: u64::try_from(meta.identity.seq).unwrap_or(0),
            reception_sequence_number: self.received.fetch_add(1, Ordering::Relaxed) + 1,
            from_intra_process: false,
        };
        self.inbox.push((data, info));
        if !self.inbox.on_demand() {
            // This is Fast DDS's receive thread: a directly delivered subscription's callback
            // may run right here (`Delivery::Direct`).
            self.inbox.received(true);
        }
    }

    fn refused(&self, len: usize, meta: &SampleMeta) {
        self.inbox.refused(len, &meta.identity.guid);
    }

    fn data_available(&self) {
        self.inbox.received(true);
    }
}

/// A ROS subscription: one DDS reader on `rt/<name>`.
pub(crate) struct DdsSubscription {
    shared: Arc<SubscriptionInbox>,
    /// Taken (and so deleted) by `close`; used by on-demand takes.
    reader: ReaderSlot,
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
        let offers = node.shared.handle.graph.offers(&endpoint.name);
        let qos = endpoint.qos.resolve(QosRole::Subscription, &offers);
        qos.validate()?;
        let ts = endpoint.type_support;
        let fill = Fill::of(qos.history);
        let shared = Arc::new(SubscriptionInbox {
            inbox: Inbox::new(&endpoint.name, fill, ready),
            received: AtomicU64::new(0),
        });
        let parts = node.new_reader(
            &topic_topic(&endpoint.name, qos.avoid_ros_namespace_conventions),
            ts.info.dds_type_name,
            &to_dds(&qos),
            &endpoint_user_data(None, &ts.info.hash),
            fill.reader_mode(ts.info.max_serialized_size()),
            shared.clone(),
            events,
        )?;
        let gid = Gid(parts.reader.guid().bytes);
        let announced = node.announce(
            EndpointInfo::new(
                node.name.clone(),
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
            shared,
            reader: Mutex::new(Some(parts.reader)),
            matched: parts.matched,
            gid,
            qos,
            announced: Mutex::new(Some(announced)),
        }))
    }

    /// Moves up to `max` of the oldest messages, converted by `f`, into `out`; whether more
    /// are left.
    fn take_into<T>(
        &self,
        max: usize,
        out: &mut Vec<T>,
        f: impl FnMut((Vec<u8>, MessageInfo)) -> T,
    ) -> bool {
        let maybe_more = fill_on_demand(&self.shared.inbox, &self.reader, max);
        let mut items = self.shared.inbox.items();
        let n = max.min(items.len());
        out.extend(items.drain(..n).map(f));
        maybe_more || !items.is_empty()
    }
}

impl SubscriptionPort for DdsSubscription {
    fn take(&self) -> Option<(Payload, MessageInfo)> {
        let mut one = Vec::with_capacity(1);
        self.take_batch(1, &mut one);
        one.pop()
    }

    fn take_batch(&self, max: usize, out: &mut Vec<(Payload, MessageInfo)>) -> bool {
        self.take_into(max, out, |(bytes, info)| {
            (Payload::Serialized(Box::new(bytes)), info)
        })
    }

    fn take_payloads(&self, max: usize, out: &mut Vec<Payload>) -> bool {
        self.take_into(max, out, |(bytes, _)| Payload::Serialized(Box::new(bytes)))
    }

    fn lost_count(&self) -> u64 {
        self.shared.inbox.lost_count()
    }

    fn refused_count(&self) -> u64 {
        self.shared.inbox.refused_count()
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
        // Nothing is queued from here on; deleting the reader waits for a listener call in
        // flight, and no lock of ours is held meanwhile.
        self.shared.inbox.close();
        let reader = self.reader.lock().unwrap_or_else(|e| e.into_inner()).take();
        drop(reader);
        let announced = self
            .announced
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        drop(announced);
        // Again: a push that had checked the flag before it was set may have queued one
        // more; the reader is gone now, so nothing comes after this.
        self.shared.inbox.close();
    }
}

impl Drop for DdsSubscription {
    fn drop(&mut self) {
        self.close();
    }
}
