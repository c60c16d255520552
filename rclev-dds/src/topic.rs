//! Publishers and subscriptions over DDS writers and readers.
//!
//! A KeepLast subscription takes every sample on Fast DDS's receive thread (the shim's
//! listener), decoded straight from Fast DDS's buffer (see `SubscriptionInbox`), into its own
//! queue, which keeps the ROS history (the oldest dropped and counted lost), and rings its
//! [`ReadyHook`]: the executor is pushed, never polls. A KeepAll one leaves samples in Fast
//! DDS's history and rings the hook; its worker takes (and decodes) them (see `inbox`). A
//! subscription with `Delivery::Direct` may have its callback run right there, on the receive
//! thread, when its worker is idle. Lock order: the reader slot, then the queue mutex (a
//! leaf); hooks are called after both are released.

use std::any::Any;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use cxx::UniquePtr;

use rclev::msg::CdrError;
use rclev::qos::QosRole;
use rclev::transport::{
    DeserializeFn, EndpointInfo, EndpointKind, EventHook, Gid, MessageInfo, Payload, PublisherPort,
    ReadyHook, SubscriptionPort, TopicEndpoint, TypeSupport,
};
use rclev::{DeliveryError, Error, QoSProfile, Result};

use crate::cdr::with_cdr;
use crate::error::engine_error;
use crate::ffi::bridge::{DdsWriter, SampleMeta};
use crate::ffi::{Guarded, PayloadEncoder, NO_IDENTITY};
use crate::graph::DdsEntity;
use crate::inbox::{refill, Fill, Inbox, ReaderSlot};
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
    /// in Fast DDS's payload for encoding the next ones in place, for a type support that
    /// cannot size a message itself. 0 before the first.
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

    /// The room to reserve in Fast DDS's payload for encoding `value` straight into it, or
    /// `None` to encode it into a buffer of rclev's own first.
    ///
    /// With a type support that can size its encoding (every generated type), the exact
    /// length: a pass over the message that writes nothing (a 4 MiB image's pixels are one
    /// field, counted, not read), so the first message of a topic and one larger than the
    /// last are encoded in place too, once, like every other. Without one, the last length
    /// seen plus headroom, once a message has been encoded the other way.
    fn in_place_capacity(&self, value: &(dyn Any + Send + Sync)) -> Result<Option<u32>> {
        if let Some(encoded_len) = self.type_support.encoded_len() {
            let len = encoded_len(value)?;
            return match u32::try_from(len) {
                Ok(len) => Ok(Some(len)),
                // RTPS payload lengths are 32-bit.
                Err(_) => Err(Error::Transport(format!(
                    "a message of {len} bytes is longer than a DDS sample can be (4 GiB)"
                ))),
            };
        }
        Ok(match self.size_hint.load(Ordering::Relaxed) {
            0 => None,
            hint => payload_capacity(hint),
        })
    }
}

impl PublisherPort for DdsPublisher {
    fn publish(&self, msg: Payload) -> Result<(), DeliveryError<Payload>> {
        // A message encoded straight into Fast DDS's payload: no copy through a buffer of
        // rclev's own.
        if let (Payload::Shared(value), Some(encode)) =
            (&msg, self.type_support.serialize_in_place())
        {
            let capacity = match self.in_place_capacity(&**value) {
                Ok(capacity) => capacity,
                Err(error) => return Err(DeliveryError { error, value: msg }),
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
///
/// Samples are queued as the messages the subscription's callback gets: decoded with its type
/// support straight from Fast DDS's buffer while the shim's type deserializes them (the one
/// copy rclev makes of a sample), and queued as `Payload::Shared`. Samples of types without a
/// decoder (the CLI's dynamic ones) and samples that do not decode are queued as their bytes
/// (`Payload::Serialized`, copied once); the node layer reports the latter as malformed, with
/// the decoder's reason, as for any wire bytes. A KeepLast queue may drop a decoded message
/// for a newer one: decoding happens before the history's bound applies (as copying did).
struct SubscriptionInbox {
    inbox: Inbox<(Payload, MessageInfo)>,
    fill: Fill,
    /// The subscription's decoder, if its type has one.
    decode: Option<DeserializeFn>,
    /// Messages received so far, for `reception_sequence_number`; written by whoever pushes
    /// (the receive thread, or an on-demand take on the worker), one at a time.
    received: AtomicU64,
}

impl SubscriptionInbox {
    /// Queues a message received; rings the hook when this is Fast DDS's receive thread.
    fn queue(&self, payload: Payload, meta: &SampleMeta) {
        let info = MessageInfo {
            source_timestamp: system_time(meta.source_timestamp_ns),
            received_timestamp: system_time(meta.reception_timestamp_ns),
            publisher_gid: Gid(meta.identity.guid),
            publication_sequence_number: u64::try_from(meta.identity.seq).unwrap_or(0),
            reception_sequence_number: self.received.fetch_add(1, Ordering::Relaxed) + 1,
            from_intra_process: false,
        };
        self.inbox.push((payload, info), meta.len);
        if self.fill != Fill::RoomLimited {
            // This is Fast DDS's receive thread: a directly delivered subscription's callback
            // may run right here (`Delivery::Direct`). A room-limited reader's listener rings
            // once it has taken what it could (`data_available`), outside the take.
            self.inbox.received(true);
        }
    }
}

impl SampleSink for SubscriptionInbox {
    fn decode(&self, data: &[u8]) -> Option<Arc<dyn Any + Send + Sync>> {
        // A sample that does not decode is kept as bytes: the node layer decodes those again
        // and reports the same error, counted as for any malformed message.
        self.decode.and_then(|decode| decode(data).ok())
    }

    fn decoded(&self, value: Arc<dyn Any + Send + Sync>, meta: &SampleMeta) {
        self.queue(Payload::Shared(value), meta);
    }

    fn sample(&self, data: Vec<u8>, meta: &SampleMeta) {
        self.queue(Payload::Serialized(Box::new(data)), meta);
    }

    fn refused(&self, len: usize, meta: &SampleMeta) {
        self.inbox.refused(
            len,
            &format_args!("writer {}", crate::names::id_text(&meta.identity.guid)),
        );
    }

    fn room(&self) -> usize {
        self.inbox.room()
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
            inbox: Inbox::new(&endpoint.name, fill.history(), ready)
                .with_max_bytes(endpoint.max_queue_bytes),
            fill,
            decode: ts.deserialize(),
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
        f: impl FnMut((Payload, MessageInfo)) -> T,
    ) -> bool {
        let maybe_more = refill(self.shared.fill, &self.shared.inbox, &self.reader, max);
        let left = self.shared.inbox.take_into(max, out, f);
        // What was taken made room: take more from Fast DDS now, so that a writer pushed back
        // is released without waiting for the next take.
        let more = refill(self.shared.fill, &self.shared.inbox, &self.reader, max);
        maybe_more || left || more
    }
}

impl SubscriptionPort for DdsSubscription {
    fn take(&self) -> Option<(Payload, MessageInfo)> {
        let mut one = Vec::with_capacity(1);
        self.take_batch(1, &mut one);
        one.pop()
    }

    fn take_batch(&self, max: usize, out: &mut Vec<(Payload, MessageInfo)>) -> bool {
        self.take_into(max, out, |taken| taken)
    }

    fn take_payloads(&self, max: usize, out: &mut Vec<Payload>) -> bool {
        self.take_into(max, out, |(payload, _)| payload)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ffi::ReaderHandler;
    use crate::graph::GraphCache;
    use crate::matched::ReaderEvents;
    use rclev::interfaces::std_msgs::msg::Int64;

    struct Quiet;
    impl ReadyHook for Quiet {
        fn ready(&self) {}
    }

    const META: SampleMeta = SampleMeta {
        identity: NO_IDENTITY,
        related: NO_IDENTITY,
        source_timestamp_ns: 0,
        reception_timestamp_ns: 0,
        len: 12,
    };

    /// A KeepLast(8) subscription's inbox decoding with `decode`, and the listener over it.
    fn listener(decode: Option<DeserializeFn>) -> ReaderEvents<SubscriptionInbox> {
        ReaderEvents {
            sink: Arc::new(SubscriptionInbox {
                inbox: Inbox::new("/t", Fill::KeepLast(8).history(), Arc::new(Quiet)),
                fill: Fill::KeepLast(8),
                decode,
                received: AtomicU64::new(0),
            }),
            matched: Arc::default(),
            graph: Arc::new(GraphCache::default()),
            hook: Arc::new(()),
        }
    }

    /// Passes `bytes` through the listener as the shim does: lent to `keep`, then taken.
    fn receive(listener: &ReaderEvents<SubscriptionInbox>, bytes: &[u8]) {
        let kept = listener.keep(bytes);
        listener.sample(kept, &META);
    }

    /// A typed subscription queues the message decoded from the lent bytes; bytes that do not
    /// decode, and every sample of a type without a decoder, are queued as bytes (the node
    /// layer reports the former as malformed, and decodes the latter itself).
    #[test]
    fn samples_are_queued_decoded_or_as_their_bytes() {
        let cdr = rclev::msg::to_cdr(&Int64 { data: 5 }).unwrap();
        let typed = listener(TypeSupport::of::<Int64>().deserialize());
        receive(&typed, &cdr);
        receive(&typed, &cdr[..6]);
        let mut items = Vec::new();
        typed.sink.inbox.take_into(usize::MAX, &mut items, |i| i);
        assert!(
            matches!(&items[0].0, Payload::Shared(v) if v.downcast_ref::<Int64>() == Some(&Int64 { data: 5 })),
            "{:?}",
            items[0].0
        );
        assert!(
            matches!(&items[1].0, Payload::Serialized(b) if b[..] == cdr[..6]),
            "{:?}",
            items[1].0
        );
        assert_eq!(items[1].1.reception_sequence_number, 2);

        let untyped = listener(None);
        receive(&untyped, &cdr);
        let mut items = Vec::new();
        untyped.sink.inbox.take_into(usize::MAX, &mut items, |i| i);
        assert!(
            matches!(&items[0].0, Payload::Serialized(b) if b[..] == cdr[..]),
            "{:?}",
            items[0].0
        );
    }
}
