//! Publishers, callback subscriptions and awaitable subscription streams.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll};

use futures::task::AtomicWaker;
use futures::Stream;

use super::entity::{self, bind_entity, decode, topic_endpoint};
use super::events::{EventSink, WarningHook};
use super::worker_core::WorkerCore;
use crate::base::error::{DeliveryError, Error, Result};
use crate::base::sync::lock;
use crate::endpoint::AdaptiveDeliveryState;
use crate::endpoint::{Delivery, IntoPrimitiveOptions};
use crate::msg::Message;
use crate::qos::{QoSProfile, QosEvent};
use crate::runtime::adaptive::timed_run;
use crate::runtime::callback::Callback;
use crate::runtime::core::WorkerHost;
use crate::runtime::direct::{running_direct, WorkerLender};
use crate::runtime::dispatch::EntityDispatch;
use crate::runtime::executable::{ExecContext, Executable, MAX_BATCH};
use crate::runtime::fence::CallGate;
use crate::transport::{Gid, MessageInfo, Payload, PublisherPort, ReadyHook, SubscriptionPort};

/// Publishes messages of type `T` on one topic. Made by
/// [`create_publisher`](crate::NodeState::create_publisher); the [`Publisher`] handle derefs to
/// it and clones cheaply, to share with callbacks. Dropping the last handle unregisters the
/// publisher at once: subscriptions stop counting it.
///
/// ```
/// use rclev::interfaces::std_msgs::msg::String as StringMsg;
/// use std::sync::Arc;
///
/// let executor = rclev::Context::default().create_basic_executor();
/// let node = executor.create_node("talker")?;
/// let publisher = node.create_publisher::<StringMsg>("chatter")?;
/// assert_eq!(publisher.get_subscription_count(), 0);
/// let _listener = node.create_subscription::<StringMsg, _>("chatter", |_msg| {})?;
/// assert_eq!(publisher.get_subscription_count(), 1);
/// // In process every subscription gets this very `Arc`: the message is not copied.
/// publisher.publish_arc(Arc::new(StringMsg { data: "a big message".into() }))?;
/// // A message that cannot be sent comes back in the error.
/// executor.shutdown();
/// let refused = publisher.publish(StringMsg { data: "too late".into() }).unwrap_err();
/// assert!(matches!(refused.error, rclev::Error::Shutdown));
/// assert_eq!(refused.into_inner().data, "too late");
/// # Ok::<(), rclev::Error>(())
/// ```
pub struct PublisherState<T: Message> {
    port: Arc<dyn PublisherPort>,
    events: Arc<EventSink>,
    topic: String,
    /// Publishing fails with [`Error::Shutdown`] once this has ended.
    life: Arc<crate::clock::Lifeline>,
    _type: std::marker::PhantomData<fn(T)>,
}

/// A shared handle to a publisher; dropping the last one unregisters the publisher.
pub type Publisher<T> = crate::EntityHandle<PublisherState<T>>;

impl<T: Message> PublisherState<T> {
    pub(crate) fn create(
        core: &Arc<WorkerCore>,
        options: impl IntoPrimitiveOptions,
    ) -> Result<Publisher<T>> {
        let mut options = options.into_primitive_options();
        let handler = options.event_handler.take();
        let endpoint = topic_endpoint::<T>(core, options)?;
        let events = EventSink::create(core, format!("publisher {}", endpoint.name), handler)?;
        let port = core.node.port.create_publisher(&endpoint, events.clone())?;
        Ok(crate::EntityHandle::new(Self {
            port,
            events,
            topic: endpoint.name,
            life: core.exec.life().clone(),
            _type: std::marker::PhantomData,
        }))
    }

    /// Publishes a message. After the executor shut down (or if the transport refuses it) the
    /// message comes back in the error.
    pub fn publish(&self, msg: T) -> Result<(), DeliveryError<T>> {
        self.publish_arc(Arc::new(msg)).map_err(|e| DeliveryError {
            error: e.error,
            value: Arc::try_unwrap(e.value).unwrap_or_else(|shared| (*shared).clone()),
        })
    }

    /// Publishes a message already in an `Arc`: in process, every subscriber gets this `Arc`.
    pub fn publish_arc(&self, msg: Arc<T>) -> Result<(), DeliveryError<Arc<T>>> {
        if self.life.is_ended() {
            return Err(DeliveryError {
                error: Error::Shutdown,
                value: msg,
            });
        }
        self.port
            .publish(Payload::Shared(msg))
            .map_err(|e| DeliveryError {
                error: e.error,
                // A transport bug otherwise: the trait says it hands back what it was given.
                value: decode::<T>(e.value).unwrap_or_else(|reason| {
                    panic!("the transport handed back another payload than it was given: {reason}")
                }),
            })
    }

    /// The fully qualified topic name.
    pub fn topic_name(&self) -> &str {
        &self.topic
    }

    /// How many subscriptions are matched.
    pub fn get_subscription_count(&self) -> usize {
        self.port.subscription_count()
    }

    /// The publisher's GID, as subscriptions see it in [`MessageInfo::publisher_gid`].
    pub fn gid(&self) -> Gid {
        self.port.gid()
    }

    /// The QoS in effect (`SystemDefault`/`BestAvailable` policies resolved).
    pub fn actual_qos(&self) -> QoSProfile {
        self.port.qos()
    }

    /// Runs `handler` on the publisher's worker for each QoS event (matched, incompatible QoS
    /// or type, deadline missed, liveliness lost), starting with those kept since the
    /// publisher's creation (one per kind, merged). Replaces the default handler, which warns
    /// about incompatibilities, and any handler set before. To have no event warned about,
    /// give the handler at creation instead
    /// ([`IntoPrimitiveOptions::event_handler`]).
    pub fn set_event_handler(&self, handler: impl FnMut(QosEvent) + Send + 'static) {
        self.events.set_handler(Callback::plain(handler));
    }
}

/// A subscription's callback, by what it gets.
pub(crate) enum SubscriptionCallback<T> {
    /// The message only: the transport is not asked for message infos (most callbacks).
    Message(Callback<Arc<T>>),
    /// The message and its [`MessageInfo`].
    WithInfo(Callback<(Arc<T>, MessageInfo)>),
}

impl<T> SubscriptionCallback<T> {
    /// Whether the callback runs to completion when called (not async).
    fn is_sync(&self) -> bool {
        match self {
            Self::Message(f) => matches!(f, Callback::Sync(_)),
            Self::WithInfo(f) => matches!(f, Callback::Sync(_)),
        }
    }
}

/// The callback with the buffer its batches are taken into (kept to avoid an allocation per
/// round).
enum Receiver<T> {
    Message(Callback<Arc<T>>, Vec<Payload>),
    WithInfo(Callback<(Arc<T>, MessageInfo)>, Vec<(Payload, MessageInfo)>),
}

/// A subscription that runs a callback on its worker for every message. Dropping it (the last
/// [`Subscription`] handle) unsubscribes at once: even if its callback is running on a worker
/// right then, no further message is delivered to it.
///
/// ```
/// use rclev::interfaces::std_msgs::msg::Int64;
/// use rclev::{IntoPrimitiveOptions, QoSProfile, SpinOptions};
/// use std::time::Duration;
///
/// let executor = rclev::Context::default().create_basic_executor();
/// let node = executor.create_node("follower")?;
/// let (tx, rx) = std::sync::mpsc::channel();
/// // Keep only the newest message: older ones not taken yet are dropped and counted.
/// let latest = node.create_subscription::<Int64, _>(
///     "setpoint".qos(QoSProfile::default().keep_last(1)),
///     move |msg| tx.send(msg.data).unwrap(),
/// )?;
/// let publisher = node.create_publisher::<Int64>("setpoint")?;
/// for data in 1..=3 {
///     publisher.publish(Int64 { data })?;
/// }
/// let errors = executor.spin(SpinOptions::spin_once().timeout(Duration::from_secs(5)));
/// assert!(errors.is_empty());
/// assert_eq!(rx.try_iter().collect::<Vec<_>>(), [3]);
/// assert_eq!(latest.lost_count(), 2);
/// assert_eq!(latest.topic_name(), "/setpoint");
/// drop(latest); // unsubscribes
/// assert_eq!(publisher.get_subscription_count(), 0);
/// # Ok::<(), rclev::Error>(())
/// ```
pub struct SubscriptionState<T: Message> {
    entity: Arc<SubscriptionEntity<T>>,
}

/// What the worker runs; referenced by the worker only while it executes.
struct SubscriptionEntity<T: Message> {
    port: Arc<dyn SubscriptionPort>,
    events: Arc<EventSink>,
    /// Messages that could not be decoded (each also reported to the error handler).
    malformed: AtomicU64,
    /// Set when the user's handle is dropped; checked before every message of a batch.
    closed: AtomicBool,
    /// Raised while a callback is being started or runs; the handle's drop waits it out.
    gate: CallGate,
    dispatch: Arc<EntityDispatch>,
    /// Only the worker running this entity locks it.
    receiver: Mutex<Receiver<T>>,
    label: String,
    topic: String,
    worker: Arc<WorkerCore>,
}

/// A shared handle to a subscription; dropping the last one unsubscribes.
pub type Subscription<T> = crate::EntityHandle<SubscriptionState<T>>;

pub(crate) fn create_subscription<T: Message>(
    core: &Arc<WorkerCore>,
    options: impl IntoPrimitiveOptions,
    callback: SubscriptionCallback<T>,
) -> Result<Subscription<T>> {
    let mut options = options.into_primitive_options();
    let handler = options.event_handler.take();
    // Async callbacks run on their worker's task whatever the option says.
    let delivery = if callback.is_sync() {
        options.delivery
    } else {
        Delivery::Worker
    };
    let mut endpoint = topic_endpoint::<T>(core, options)?;
    let receiver = match callback {
        SubscriptionCallback::Message(f) => Receiver::Message(f, Vec::with_capacity(MAX_BATCH)),
        SubscriptionCallback::WithInfo(f) => {
            endpoint.reads_message_info = true;
            Receiver::WithInfo(f, Vec::with_capacity(MAX_BATCH))
        }
    };
    let label = format!("subscription {}", endpoint.name);
    let events = EventSink::create(core, label.clone(), handler)?;
    let sub = bind_entity(core, true, |dispatch| {
        let lender = || {
            Box::new(WorkerLender::new(
                core.mailbox.clone(),
                core.exec.host().clone(),
            ))
        };
        match delivery {
            Delivery::Adaptive => dispatch.set_adaptive(lender()),
            Delivery::Direct => dispatch.set_direct(lender()),
            Delivery::Worker => {}
        }
        let port =
            core.node
                .port
                .create_subscription(&endpoint, dispatch.clone(), events.clone())?;
        Ok(Arc::new(SubscriptionEntity {
            port,
            events,
            malformed: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            gate: CallGate::default(),
            dispatch,
            receiver: Mutex::new(receiver),
            label,
            topic: endpoint.name.clone(),
            worker: core.clone(),
        }))
    })?;
    Ok(crate::EntityHandle::new(SubscriptionState { entity: sub }))
}

/// Counts and reports a message that could not be decoded; the subscription goes on.
fn report_malformed(counter: &AtomicU64, host: &WorkerHost, topic: &str, reason: String) {
    counter.fetch_add(1, Ordering::Relaxed);
    entity::report_malformed(host, topic, reason);
}

impl<T: Message> SubscriptionState<T> {
    /// The fully qualified topic name.
    pub fn topic_name(&self) -> &str {
        &self.entity.topic
    }
    /// What [adaptive delivery](Delivery::Adaptive) has learnt about this subscription's
    /// callback: whether it may run on the transport's receive thread now, how often it ran
    /// there and on its worker, and how often a long run sent it back. `None` for a
    /// subscription delivered otherwise (an explicit [`Delivery`], or an async callback).
    pub fn delivery_state(&self) -> Option<AdaptiveDeliveryState> {
        self.entity.dispatch.adaptive_state()
    }
    /// Messages dropped because the KeepLast history was full before the callback took them.
    pub fn lost_count(&self) -> u64 {
        self.entity.port.lost_count()
    }
    /// Messages dropped because they could not be decoded (each was also reported to the
    /// executor's error handler as [`Error::MalformedMessage`]), and those a wire transport
    /// refused before decoding: longer than any encoding of the type can be (reported as a
    /// rate-limited warning).
    pub fn malformed_count(&self) -> u64 {
        self.entity.malformed.load(Ordering::Relaxed) + self.entity.port.refused_count()
    }
    /// How many publishers are matched.
    pub fn get_publisher_count(&self) -> usize {
        self.entity.port.publisher_count()
    }
    /// The subscription's GID.
    pub fn gid(&self) -> Gid {
        self.entity.port.gid()
    }
    /// The QoS in effect (`SystemDefault`/`BestAvailable` policies resolved).
    pub fn actual_qos(&self) -> QoSProfile {
        self.entity.port.qos()
    }
    /// Runs `handler` on the subscription's worker for each QoS event (matched, incompatible
    /// QoS or type, deadline missed, liveliness changed, message lost), starting with those
    /// kept since the subscription's creation (one per kind, merged). Replaces the default
    /// handler, which warns about incompatibilities, and any handler set before. To have no
    /// event warned about, give the handler at creation instead
    /// ([`IntoPrimitiveOptions::event_handler`]).
    pub fn set_event_handler(&self, handler: impl FnMut(QosEvent) + Send + 'static) {
        self.entity.events.set_handler(Callback::plain(handler));
    }
}

impl<T: Message> Drop for SubscriptionState<T> {
    fn drop(&mut self) {
        // SeqCst, then the call gate: a call deciding to start or running right now has
        // returned when this returns (unless this is that call), and none starts later (see
        // `executor::fence`).
        self.entity.closed.store(true, Ordering::SeqCst);
        let own_worker = self.entity.worker.is_current();
        self.entity.gate.wait_out(own_worker);
        self.entity.port.close();
    }
}

/// How many batches a subscription works off in one turn while nothing else waits on its
/// worker. Going round the mailbox after every batch costs a push and a take; measured, that
/// was ~6% of the worker's time when a fast publisher had run ahead of it.
const BACKLOG_BATCHES: usize = 8;

impl<T: Message> SubscriptionEntity<T> {
    /// Decodes and delivers a taken batch, `arg` making each callback argument. `false` once a
    /// callback was refused (unsubscribed or shut down): the rest of the batch is dropped.
    fn deliver<I, A: 'static>(
        &self,
        cx: &mut ExecContext<'_>,
        callback: &mut Callback<A>,
        taken: impl Iterator<Item = (Payload, I)>,
        arg: impl Fn(Arc<T>, I) -> A,
    ) -> bool {
        let host = self.worker.exec.host();
        let (adaptive, direct) = (self.dispatch.adaptive(), running_direct());
        for (payload, info) in taken {
            // Timed for adaptive delivery: decoding is part of what a receive thread would do.
            let call = timed_run(adaptive, direct, || {
                let msg = match decode::<T>(payload) {
                    Ok(msg) => msg,
                    Err(reason) => {
                        report_malformed(&self.malformed, host, &self.topic, reason);
                        return Ok(());
                    }
                };
                let still_subscribed = || !self.closed.load(Ordering::SeqCst);
                callback.call(
                    cx,
                    &self.label,
                    host,
                    arg(msg, info),
                    Some(&self.gate),
                    still_subscribed,
                )
            });
            if call.is_err() {
                // Dropping the iterator empties the buffer it drains.
                return false;
            }
        }
        true
    }

    /// Takes and delivers one batch; `true` if more messages are queued and delivery goes on.
    fn take_and_deliver(&self, cx: &mut ExecContext<'_>, receiver: &mut Receiver<T>) -> bool {
        // One lock for the batch, so a fast publisher and the worker do not take turns on the
        // queue's mutex for every message.
        let (more, delivered) = match receiver {
            Receiver::Message(callback, batch) => {
                let more = self.port.take_payloads(MAX_BATCH, batch);
                let taken = batch.drain(..).map(|p| (p, ()));
                (more, self.deliver(cx, callback, taken, |m, ()| m))
            }
            Receiver::WithInfo(callback, batch) => {
                let more = self.port.take_batch(MAX_BATCH, batch);
                let taken = batch.drain(..);
                (more, self.deliver(cx, callback, taken, |m, info| (m, info)))
            }
        };
        more && delivered && !self.closed.load(Ordering::Acquire)
    }
}

impl<T: Message> Executable for SubscriptionEntity<T> {
    fn execute(&self, cx: &mut ExecContext<'_>) {
        let mut receiver = lock(&self.receiver);
        for _ in 0..BACKLOG_BATCHES {
            if !self.take_and_deliver(cx, &mut receiver) {
                return;
            }
            if cx.others_waiting() {
                break;
            }
        }
        // More is queued: to the back of the mailbox, behind the worker's other entities.
        self.dispatch.notify();
    }

    fn dispatch(&self) -> &dyn crate::runtime::executable::Coalescing {
        &*self.dispatch
    }
}

#[derive(Default)]
struct StreamHook {
    waker: AtomicWaker,
}

impl ReadyHook for StreamHook {
    fn ready(&self) {
        self.waker.wake();
    }
}

/// A subscription consumed by `.await`ing it instead of through a callback: messages arrive
/// without the executor spinning. The stream ends (`None`) once the executor has shut down and
/// the messages queued before have been taken.
///
/// ```
/// # #[tokio::main(flavor = "multi_thread")]
/// # async fn main() {
/// use futures::StreamExt;
/// use rclev::{Context, interfaces::std_msgs::msg::String as StringMsg};
///
/// let executor = Context::default().create_basic_executor();
/// let node = executor.create_node("listener").unwrap();
/// let mut chatter = node.create_subscription_stream::<StringMsg>("chatter").unwrap();
/// let publisher = node.create_publisher::<StringMsg>("chatter").unwrap();
/// publisher.publish(StringMsg { data: "hello".into() }).unwrap();
/// assert_eq!(chatter.next().await.unwrap().data, "hello");
/// # }
/// ```
pub struct SubscriptionStream<T: Message> {
    port: Arc<dyn SubscriptionPort>,
    topic: String,
    host: Arc<crate::runtime::core::WorkerHost>,
    malformed: AtomicU64,
    hook: Arc<StreamHook>,
    /// Resolves when the executor shuts down; `None` once it has.
    ended: Option<futures::future::BoxFuture<'static, ()>>,
    _type: std::marker::PhantomData<fn() -> T>,
}

impl<T: Message> SubscriptionStream<T> {
    pub(crate) fn create(
        core: &Arc<WorkerCore>,
        options: impl IntoPrimitiveOptions,
    ) -> Result<Self> {
        let mut options = options.into_primitive_options();
        let handler = options.event_handler.take();
        let mut endpoint = topic_endpoint::<T>(core, options)?;
        // `try_recv` and `recv_with_info` hand out the info.
        endpoint.reads_message_info = true;
        let hook = Arc::new(StreamHook::default());
        let label = format!("subscription stream {}", endpoint.name);
        // A stream's messages need no worker, but a handler does: the worker it was created
        // on runs it, while the executor spins. Without one, warnings cost no entity.
        let events: Arc<dyn crate::transport::EventHook> = match handler {
            Some(handler) => EventSink::create(core, label, Some(handler))?,
            None => Arc::new(WarningHook(label)),
        };
        let port = core
            .node
            .port
            .create_subscription(&endpoint, hook.clone(), events)?;
        let life = core.exec.life().clone();
        Ok(Self {
            port,
            topic: endpoint.name,
            host: core.exec.host().clone(),
            malformed: AtomicU64::new(0),
            hook,
            ended: Some(Box::pin(async move { life.ended().await })),
            _type: std::marker::PhantomData,
        })
    }

    /// Waits for the next message; `None` once the executor has shut down and nothing is
    /// queued.
    pub async fn recv(&mut self) -> Option<Arc<T>> {
        self.recv_with_info().await.map(|(msg, _)| msg)
    }

    /// Waits for the next message and its [`MessageInfo`].
    pub async fn recv_with_info(&mut self) -> Option<(Arc<T>, MessageInfo)> {
        std::future::poll_fn(|cx| self.poll_take(cx)).await
    }

    /// Takes the next message with its info, if one is queued, without waiting.
    pub fn try_recv(&self) -> Option<(Arc<T>, MessageInfo)> {
        self.take()
    }

    /// Messages dropped because the KeepLast history was full.
    pub fn lost_count(&self) -> u64 {
        self.port.lost_count()
    }

    /// Messages dropped because they could not be decoded (each also reported to the
    /// executor's error handler), and those a wire transport refused before decoding.
    pub fn malformed_count(&self) -> u64 {
        self.malformed.load(Ordering::Relaxed) + self.port.refused_count()
    }

    /// The next decodable message; malformed ones are counted, reported and skipped.
    fn take(&self) -> Option<(Arc<T>, MessageInfo)> {
        loop {
            let (payload, info) = self.port.take()?;
            match decode::<T>(payload) {
                Ok(msg) => return Some((msg, info)),
                Err(reason) => report_malformed(&self.malformed, &self.host, &self.topic, reason),
            }
        }
    }

    fn poll_take(&mut self, cx: &mut TaskContext<'_>) -> Poll<Option<(Arc<T>, MessageInfo)>> {
        if let Some(taken) = self.take() {
            return Poll::Ready(Some(taken));
        }
        self.hook.waker.register(cx.waker());
        // Re-checked after registering: a message that landed in between would otherwise
        // have woken nobody.
        if let Some(taken) = self.take() {
            return Poll::Ready(Some(taken));
        }
        let still_running = match &mut self.ended {
            Some(ended) => ended.as_mut().poll(cx).is_pending(),
            None => false,
        };
        if still_running {
            return Poll::Pending;
        }
        self.ended = None;
        Poll::Ready(None)
    }
}

impl<T: Message> Stream for SubscriptionStream<T> {
    type Item = Arc<T>;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Arc<T>>> {
        self.poll_take(cx).map(|taken| taken.map(|(msg, _)| msg))
    }
}

impl<T: Message> std::fmt::Debug for PublisherState<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Publisher")
            .field("topic", &self.topic)
            .field("type", &T::TYPE_NAME)
            .finish()
    }
}

impl<T: Message> std::fmt::Debug for SubscriptionState<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("topic", &self.entity.topic)
            .field("type", &T::TYPE_NAME)
            .finish()
    }
}

impl<T: Message> std::fmt::Debug for SubscriptionStream<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubscriptionStream")
            .field("type", &T::TYPE_NAME)
            .finish()
    }
}
