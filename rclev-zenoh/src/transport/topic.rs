//! Publishers and subscriptions: a Zenoh publisher or subscriber on the topic's data key
//! expression, announced by an `MP`/`MS` token.
//!
//! A subscription decodes each sample on Zenoh's receive thread (the subscriber's callback)
//! with its type support, straight from Zenoh's buffer when the payload is one slice, queues
//! it in its [`Inbox`] (KeepLast: the newest depth; KeepAll: at most [`KEEP_ALL_LIMIT`], the
//! rest refused and counted as lost, since Zenoh keeps no history to push back from), and
//! rings its hook there: the executor is pushed, never polls. Samples longer than any encoding
//! of the type are refused before decoding; a missing or malformed attachment only leaves the
//! message info's publisher fields unknown. Lock order: the inbox's mutex is a leaf; hooks
//! are rung after it is released.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use zenoh::bytes::ZBytes;
use zenoh::sample::Sample;
use zenoh::Wait;

use rclev::qos::QosRole;
use rclev::throttle::ReportThrottle;
use rclev::transport::{
    DeserializeFn, EventHook, Gid, Inbox, InboxHistory, MessageInfo, Payload, PublisherPort,
    ReadyHook, SubscriptionPort, TopicEndpoint, TypeSupport,
};
use rclev::{DeliveryError, History, QoSProfile, Result};

use super::events::LossTracker;
use super::graph::MatchKey;
use super::{zenoh_error, Announced, Shared, ZenohNode};
use crate::wire::keyexpr::data_keyexpr;
use crate::wire::{Attachment, CongestionControl, EntityKind, TopicInfo, WireQos, WireTypeHash};

/// The most messages a KeepAll subscription queues (as it holds at most its byte budget,
/// `TopicEndpoint::max_queue_bytes`): Zenoh has no per-reader history that could push back on
/// the publisher, so beyond either the newest are refused, counted as lost.
pub const KEEP_ALL_LIMIT: usize = 10_000;

/// Malformed attachments, logged per endpoint at most every 10 s.
static BAD_ATTACHMENT: ReportThrottle = ReportThrottle::new(Duration::from_secs(10));

/// Nanoseconds since the Unix epoch now (what attachments carry).
pub(crate) fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// A time given in ns since the Unix epoch (a peer's: negative means unknown).
pub(crate) fn system_time(ns: i64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_nanos(u64::try_from(ns).unwrap_or(0))
}

/// `payload`'s CDR bytes in a buffer of their own, which Zenoh takes without a copy.
pub(crate) fn encode(payload: &Payload, type_support: &TypeSupport) -> Result<Vec<u8>> {
    let Payload::Shared(value) = payload else {
        // Bytes already (serialized publishing): copied once into Zenoh's buffer.
        return Ok(payload.cdr(type_support, &mut Vec::new())?.to_vec());
    };
    let capacity = match type_support.encoded_len() {
        Some(len) => len(&**value)?,
        None => 64,
    };
    let mut buf = Vec::with_capacity(capacity);
    type_support.serialize(&**value, &mut buf)?;
    Ok(buf)
}

/// The attachment of `sample` or a query, decoded; `None` (reported, rate-limited) when it is
/// missing or malformed.
pub(crate) fn read_attachment(attachment: Option<&ZBytes>, endpoint: &str) -> Option<Attachment> {
    let bytes = attachment?.to_bytes();
    match Attachment::decode(&bytes) {
        Ok(attachment) => Some(attachment),
        Err(error) => {
            if let Some(held_back) = BAD_ATTACHMENT.note(endpoint) {
                rclev::diagnostic!(WARN, target: "rclev_zenoh", "{endpoint}: attachment ignored: {error}{held_back}");
            }
            None
        }
    }
}

/// Decodes `bytes` with `decode` if the type has a decoder and they decode; else keeps them
/// as bytes (the node layer decodes those again and reports the same error as malformed).
pub(crate) fn decode_payload(
    bytes: std::borrow::Cow<'_, [u8]>,
    decode: Option<DeserializeFn>,
) -> Payload {
    match decode.and_then(|decode| decode(&bytes).ok()) {
        Some(value) => Payload::Shared(value),
        None => Payload::Serialized(Box::new(bytes.into_owned())),
    }
}

/// The topic part of a token for `endpoint` with resolved `qos`.
fn topic_info(endpoint: &TopicEndpoint, qos: &QoSProfile) -> TopicInfo {
    let info = &endpoint.type_support.info;
    TopicInfo {
        name: endpoint.name.clone(),
        type_name: info.dds_type_name.to_owned(),
        type_hash: info.hash.into(),
        qos: WireQos::from_profile(qos),
    }
}

/// How long between two heartbeats of a reliable transient-local publisher, which let
/// subscribers notice a missed last sample and fetch it from the cache.
const HEARTBEAT: Duration = Duration::from_millis(500);

/// The Zenoh side of a publisher: plain, or (TRANSIENT_LOCAL) advanced, with a cache of
/// `depth` samples that late-joining advanced subscribers query, as rmw_zenoh's.
enum Sender {
    Plain(zenoh::pubsub::Publisher<'static>),
    Advanced(zenoh_ext::AdvancedPublisher<'static>),
}

impl Sender {
    fn declare(shared: &Shared, keyexpr: String, qos: &WireQos) -> zenoh::Result<Self> {
        let congestion = match qos.congestion_control() {
            CongestionControl::Block => zenoh::qos::CongestionControl::Block,
            CongestionControl::Drop => zenoh::qos::CongestionControl::Drop,
        };
        let reliability = if qos.zenoh_reliable() {
            zenoh::qos::Reliability::Reliable
        } else {
            zenoh::qos::Reliability::BestEffort
        };
        let builder = shared
            .zenoh()
            .declare_publisher(keyexpr)
            .congestion_control(congestion)
            .reliability(reliability);
        let Some(depth) = qos.publisher_cache_depth() else {
            return builder.wait().map(Sender::Plain);
        };
        use zenoh_ext::AdvancedPublisherBuilderExt;
        let depth = usize::try_from(depth).unwrap_or(usize::MAX).max(1);
        let mut advanced = builder
            .cache(zenoh_ext::CacheConfig::default().max_samples(depth))
            .publisher_detection();
        if qos.sample_miss_detection() {
            advanced = advanced.sample_miss_detection(
                zenoh_ext::MissDetectionConfig::default().heartbeat(HEARTBEAT),
            );
        }
        advanced.wait().map(Sender::Advanced)
    }

    fn put(&self, payload: ZBytes, attachment: ZBytes) -> zenoh::Result<()> {
        match self {
            Sender::Plain(p) => p.put(payload).attachment(attachment).wait(),
            Sender::Advanced(p) => p.put(payload).attachment(attachment).wait(),
        }
    }
}

/// A ROS publisher: a Zenoh publisher on the topic's key expression.
pub(crate) struct ZenohPublisher {
    shared: Arc<Shared>,
    publisher: Sender,
    type_support: TypeSupport,
    name: String,
    type_hash: WireTypeHash,
    /// The last sequence number used (the first message carries 1).
    sequence: AtomicI64,
    gid: Gid,
    qos: QoSProfile,
    /// The graph's match watch raising this publisher's matched events.
    watch: u64,
    _announced: Announced,
}

impl Drop for ZenohPublisher {
    fn drop(&mut self) {
        self.shared.graph.unwatch(self.watch);
    }
}

impl ZenohPublisher {
    pub fn new(
        node: &ZenohNode,
        endpoint: &TopicEndpoint,
        events: Arc<dyn EventHook>,
    ) -> Result<Self> {
        let qos = endpoint.qos.resolve(QosRole::Publisher, &[]);
        qos.validate()?;
        let info = &endpoint.type_support.info;
        let topic = topic_info(endpoint, &qos);
        let wire_qos = topic.qos;
        let keyexpr = data_keyexpr(
            node.shared.domain_id,
            &endpoint.name,
            info.dds_type_name,
            topic.type_hash,
        );
        let publisher = Sender::declare(&node.shared, keyexpr.clone(), &wire_qos)
            .map_err(|e| zenoh_error(&format!("declaring a publisher on {keyexpr}"), e))?;
        let token = node.endpoint_token(EntityKind::Publisher, topic);
        let gid = token.gid();
        let announced = node.shared.announce(&token)?;
        let type_hash = info.hash.into();
        let watch = node.shared.graph.watch(
            MatchKey {
                name: &endpoint.name,
                dds_type_name: info.dds_type_name,
                type_hash: &type_hash,
                kind: EntityKind::Subscription,
            },
            events,
        );
        Ok(Self {
            shared: node.shared.clone(),
            publisher,
            type_support: endpoint.type_support,
            name: endpoint.name.clone(),
            type_hash,
            sequence: AtomicI64::new(0),
            gid,
            qos,
            watch,
            _announced: announced,
        })
    }
}

impl PublisherPort for ZenohPublisher {
    fn publish(&self, msg: Payload) -> Result<(), DeliveryError<Payload>> {
        let bytes = match encode(&msg, &self.type_support) {
            Ok(bytes) => bytes,
            Err(error) => return Err(DeliveryError { error, value: msg }),
        };
        let attachment = Attachment {
            sequence_number: self.sequence.fetch_add(1, Ordering::Relaxed) + 1,
            source_timestamp: now_ns(),
            source_gid: self.gid,
        };
        let put = self.publisher.put(
            ZBytes::from(bytes),
            ZBytes::from(attachment.encode().to_vec()),
        );
        match put {
            Ok(()) => Ok(()),
            Err(e) => Err(DeliveryError {
                error: zenoh_error(&format!("publishing on {}", self.name), e),
                value: msg,
            }),
        }
    }

    fn subscription_count(&self) -> usize {
        self.shared.graph.count(MatchKey {
            name: &self.name,
            dds_type_name: self.type_support.info.dds_type_name,
            type_hash: &self.type_hash,
            kind: EntityKind::Subscription,
        })
    }

    fn gid(&self) -> Gid {
        self.gid
    }

    fn qos(&self) -> QoSProfile {
        self.qos
    }
}

/// What the subscriber's callback shares with the port.
struct Receiver {
    inbox: Inbox<(Payload, MessageInfo)>,
    decode: Option<DeserializeFn>,
    /// Longer samples are refused before decoding.
    max_len: usize,
    /// Messages received so far, for `reception_sequence_number`.
    received: AtomicU64,
    /// Whether the subscription's owner reads message infos; if not, no clock is read per
    /// message.
    reads_info: bool,
    /// Each publisher's last sequence number, for message-lost events (events.rs).
    losses: Mutex<LossTracker>,
    events: Arc<dyn EventHook>,
}

impl Receiver {
    /// A sample arrived: on Zenoh's receive thread.
    fn on_sample(&self, sample: &Sample) {
        if self.inbox.is_closed() {
            return;
        }
        let attachment = read_attachment(sample.attachment(), self.inbox.name());
        if let Some(a) = attachment {
            let lost = self
                .losses
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .note(a.source_gid, a.sequence_number);
            if let Some(event) = lost {
                self.events.event(event);
            }
        }
        let payload = sample.payload();
        if payload.len() > self.max_len {
            let sender = attachment.map_or(Gid::default(), |a| a.source_gid);
            self.inbox
                .refused(payload.len(), &format_args!("publisher {sender}"));
            return;
        }
        let len = payload.len();
        let payload = decode_payload(payload.to_bytes(), self.decode);
        let info = MessageInfo {
            source_timestamp: system_time(attachment.map_or(0, |a| a.source_timestamp)),
            received_timestamp: if self.reads_info {
                SystemTime::now()
            } else {
                SystemTime::UNIX_EPOCH
            },
            publisher_gid: attachment.map_or(Gid::default(), |a| a.source_gid),
            publication_sequence_number: attachment
                .and_then(|a| u64::try_from(a.sequence_number).ok())
                .unwrap_or(0),
            reception_sequence_number: self.received.fetch_add(1, Ordering::Relaxed) + 1,
            from_intra_process: false,
        };
        if self.inbox.push((payload, info), len) {
            // Zenoh's receive thread: a directly delivered subscription's callback may run
            // right here (`Delivery::Direct`).
            self.inbox.received(true);
        }
    }
}

/// The inbox bound for a resolved history.
fn inbox_history(history: History) -> InboxHistory {
    match history {
        History::KeepAll => InboxHistory::KeepAll {
            limit: KEEP_ALL_LIMIT,
        },
        History::KeepLast(n) => InboxHistory::KeepLast(n.max(1)),
        History::SystemDefault => InboxHistory::KeepLast(1),
    }
}

/// The Zenoh side of a subscription: plain, or (TRANSIENT_LOCAL) advanced, asking every
/// publisher's cache, late joiners' too, for up to `depth` samples of history. Only held:
/// dropping it undeclares.
#[allow(dead_code)]
enum Listener {
    Plain(zenoh::pubsub::Subscriber<()>),
    Advanced(zenoh_ext::AdvancedSubscriber<()>),
}

impl Listener {
    fn declare(
        shared: &Shared,
        keyexpr: String,
        qos: &WireQos,
        sink: Arc<Receiver>,
    ) -> zenoh::Result<Self> {
        let builder = shared.zenoh().declare_subscriber(keyexpr);
        if qos.durability != WireQos::TRANSIENT_LOCAL {
            return builder
                .callback(move |sample| sink.on_sample(&sample))
                .wait()
                .map(Listener::Plain);
        }
        use zenoh_ext::AdvancedSubscriberBuilderExt;
        let depth = usize::try_from(qos.depth).unwrap_or(usize::MAX).max(1);
        builder
            .callback(move |sample| sink.on_sample(&sample))
            .history(
                zenoh_ext::HistoryConfig::default()
                    .detect_late_publishers()
                    .max_samples(depth),
            )
            .subscriber_detection()
            .wait()
            .map(Listener::Advanced)
    }
}

/// A ROS subscription: a Zenoh subscriber on the topic's key expression.
pub(crate) struct ZenohSubscription {
    shared: Arc<Shared>,
    receiver: Arc<Receiver>,
    subscriber: Mutex<Option<Listener>>,
    name: String,
    dds_type_name: &'static str,
    type_hash: WireTypeHash,
    gid: Gid,
    qos: QoSProfile,
    /// The graph's match watch raising this subscription's matched events.
    watch: u64,
    announced: Mutex<Option<Announced>>,
}

impl ZenohSubscription {
    pub fn new(
        node: &ZenohNode,
        endpoint: &TopicEndpoint,
        ready: Arc<dyn ReadyHook>,
        events: Arc<dyn EventHook>,
    ) -> Result<Arc<Self>> {
        let offers = node.shared.graph.offers(&endpoint.name);
        let qos = endpoint.qos.resolve(QosRole::Subscription, &offers);
        qos.validate()?;
        let info = &endpoint.type_support.info;
        let receiver = Arc::new(Receiver {
            inbox: Inbox::new(&endpoint.name, inbox_history(qos.history), ready)
                .with_max_bytes(endpoint.max_queue_bytes),
            decode: endpoint.type_support.deserialize(),
            max_len: info.max_serialized_size().unwrap_or(usize::MAX),
            received: AtomicU64::new(0),
            reads_info: endpoint.reads_message_info,
            losses: Mutex::new(LossTracker::default()),
            events: events.clone(),
        });
        let topic = topic_info(endpoint, &qos);
        let keyexpr = data_keyexpr(
            node.shared.domain_id,
            &endpoint.name,
            info.dds_type_name,
            topic.type_hash,
        );
        let subscriber =
            Listener::declare(&node.shared, keyexpr.clone(), &topic.qos, receiver.clone())
                .map_err(|e| zenoh_error(&format!("declaring a subscriber on {keyexpr}"), e))?;
        let token = node.endpoint_token(EntityKind::Subscription, topic);
        let gid = token.gid();
        let announced = node.shared.announce(&token)?;
        let type_hash = info.hash.into();
        let watch = node.shared.graph.watch(
            MatchKey {
                name: &endpoint.name,
                dds_type_name: info.dds_type_name,
                type_hash: &type_hash,
                kind: EntityKind::Publisher,
            },
            events,
        );
        Ok(Arc::new(Self {
            shared: node.shared.clone(),
            receiver,
            subscriber: Mutex::new(Some(subscriber)),
            name: endpoint.name.clone(),
            dds_type_name: info.dds_type_name,
            type_hash,
            gid,
            qos,
            watch,
            announced: Mutex::new(Some(announced)),
        }))
    }

    fn take_into<T>(
        &self,
        max: usize,
        out: &mut Vec<T>,
        f: impl FnMut((Payload, MessageInfo)) -> T,
    ) -> bool {
        self.receiver.inbox.take_into(max, out, f)
    }
}

impl SubscriptionPort for ZenohSubscription {
    fn take(&self) -> Option<(Payload, MessageInfo)> {
        self.receiver.inbox.pop()
    }

    fn take_batch(&self, max: usize, out: &mut Vec<(Payload, MessageInfo)>) -> bool {
        self.take_into(max, out, |taken| taken)
    }

    fn take_payloads(&self, max: usize, out: &mut Vec<Payload>) -> bool {
        self.take_into(max, out, |(payload, _)| payload)
    }

    fn lost_count(&self) -> u64 {
        self.receiver.inbox.lost_count()
    }

    fn refused_count(&self) -> u64 {
        self.receiver.inbox.refused_count()
    }

    fn publisher_count(&self) -> usize {
        self.shared.graph.count(MatchKey {
            name: &self.name,
            dds_type_name: self.dds_type_name,
            type_hash: &self.type_hash,
            kind: EntityKind::Publisher,
        })
    }

    fn gid(&self) -> Gid {
        self.gid
    }

    fn qos(&self) -> QoSProfile {
        self.qos
    }

    fn close(&self) {
        self.shared.graph.unwatch(self.watch);
        self.receiver.inbox.close();
        // Undeclaring waits for a callback in flight; no lock of ours is held meanwhile.
        let subscriber = self
            .subscriber
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        drop(subscriber);
        let announced = self
            .announced
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        drop(announced);
        // Again: a callback that had checked the flag before it was set may have queued one.
        self.receiver.inbox.close();
    }
}

impl Drop for ZenohSubscription {
    fn drop(&mut self) {
        self.close();
    }
}
