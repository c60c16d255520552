//! Publishers, callback subscriptions and awaitable subscription streams.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll};

use futures::task::AtomicWaker;
use futures::Stream;

use super::callback::Callback;
use super::worker::WorkerCore;
use crate::error::{Error, Result};
use crate::executor::dispatch::{EntityDispatch, ExecContext, Executable, MAX_BATCH};
use crate::executor::fence::CallGate;
use crate::msg::Message;
use crate::qos::IntoPrimitiveOptions;
use crate::sync::lock;
use crate::transport::{
    MessageInfo, Payload, PublisherPort, ReadyHook, SubscriptionPort, TypeSupport,
};

/// Publishes messages of type `T` on one topic.
pub struct PublisherState<T: Message> {
    port: Arc<dyn PublisherPort>,
    topic: String,
    /// Publishing fails with [`Error::Shutdown`] once this has ended.
    life: Arc<crate::clock::Lifeline>,
    _type: std::marker::PhantomData<fn(T)>,
}

/// A shared handle to a publisher.
pub type Publisher<T> = Arc<PublisherState<T>>;

impl<T: Message> PublisherState<T> {
    pub(crate) fn create(
        core: &WorkerCore,
        options: impl IntoPrimitiveOptions,
    ) -> Result<Publisher<T>> {
        let endpoint = core.endpoint(options, TypeSupport::of::<T>(), None)?;
        let port = core.exec.context.transport().create_publisher(&endpoint)?;
        Ok(Arc::new(Self {
            port,
            topic: endpoint.name,
            life: core.exec.life.clone(),
            _type: std::marker::PhantomData,
        }))
    }

    /// Publishes a message; [`Error::Shutdown`] after the executor shut down.
    pub fn publish(&self, msg: T) -> Result<()> {
        self.publish_arc(Arc::new(msg))
    }

    /// Publishes a message already in an `Arc`: in process, every subscriber gets this `Arc`.
    pub fn publish_arc(&self, msg: Arc<T>) -> Result<()> {
        if self.life.is_ended() {
            return Err(Error::Shutdown);
        }
        self.port.publish(msg)
    }

    /// The fully qualified topic name.
    pub fn topic_name(&self) -> &str {
        &self.topic
    }

    /// How many subscriptions are matched.
    pub fn get_subscription_count(&self) -> usize {
        self.port.subscription_count()
    }
}

pub(crate) fn downcast<T: Message>(payload: Payload) -> Arc<T> {
    payload
        .downcast::<T>()
        .unwrap_or_else(|_| unreachable!("the transport refuses endpoints of another type"))
}

/// A message taken from the transport.
type Taken = (Payload, MessageInfo);

/// A subscription that runs a callback on its worker for every message. Dropping it (the last
/// [`Subscription`] handle) unsubscribes at once: even if its callback is running on a worker
/// right then, no further message is delivered to it.
pub struct SubscriptionState<T: Message> {
    entity: Arc<SubscriptionEntity<T>>,
}

/// What the worker runs; referenced by the worker only while it executes.
struct SubscriptionEntity<T: Message> {
    port: Arc<dyn SubscriptionPort>,
    /// Set when the user's handle is dropped; checked before every message of a batch.
    closed: AtomicBool,
    /// Raised while a callback is being started or runs; the handle's drop waits it out.
    gate: CallGate,
    dispatch: Arc<EntityDispatch>,
    /// The callback, with the batch buffer it is fed from (kept to avoid an allocation per
    /// round; only the worker running this entity locks it).
    receiver: Mutex<(Callback<Arc<T>>, Vec<Taken>)>,
    label: String,
    topic: String,
    worker: Arc<WorkerCore>,
}

/// A shared handle to a subscription; dropping the last one unsubscribes.
pub type Subscription<T> = crate::Handle<SubscriptionState<T>>;

pub(crate) fn create_subscription<T: Message>(
    core: &Arc<WorkerCore>,
    options: impl IntoPrimitiveOptions,
    callback: Callback<Arc<T>>,
) -> Result<Subscription<T>> {
    let endpoint = core.endpoint(options, TypeSupport::of::<T>(), None)?;
    let dispatch = EntityDispatch::unbound(core.mailbox.clone());
    let port = core
        .exec
        .context
        .transport()
        .create_subscription(&endpoint, dispatch.clone())?;
    let sub = Arc::new(SubscriptionEntity {
        port,
        closed: AtomicBool::new(false),
        gate: CallGate::default(),
        dispatch: dispatch.clone(),
        receiver: Mutex::new((callback, Vec::with_capacity(MAX_BATCH))),
        label: format!("subscription {}", endpoint.name),
        topic: endpoint.name,
        worker: core.clone(),
    });
    let entity: Arc<dyn Executable> = sub.clone();
    dispatch.bind(Arc::downgrade(&entity), true);
    Ok(crate::Handle::new(SubscriptionState { entity: sub }))
}

impl<T: Message> SubscriptionState<T> {
    /// The fully qualified topic name.
    pub fn topic_name(&self) -> &str {
        &self.entity.topic
    }
    /// Messages dropped because the KeepLast history was full before the callback took them.
    pub fn lost_count(&self) -> u64 {
        self.entity.port.lost_count()
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

impl<T: Message> Executable for SubscriptionEntity<T> {
    fn execute(&self, cx: &mut ExecContext<'_>) {
        let mut receiver = lock(&self.receiver);
        let (callback, batch) = &mut *receiver;
        // One lock for the batch, so a fast publisher and the worker do not take turns on the
        // queue's mutex for every message.
        let more = self.port.take_batch(MAX_BATCH, batch);
        for (payload, _info) in batch.drain(..) {
            let still_subscribed = || !self.closed.load(Ordering::SeqCst);
            let msg = downcast::<T>(payload);
            if callback
                .call(
                    cx,
                    &self.label,
                    &self.worker.exec.host,
                    msg,
                    Some(&self.gate),
                    still_subscribed,
                )
                .is_err()
            {
                // Unsubscribed or shut down: the rest of the batch goes too (dropping the
                // `Drain` empties the buffer).
                break;
            }
        }
        if more && !self.closed.load(Ordering::Acquire) {
            // Go to the back of the mailbox, behind the worker's other entities.
            self.dispatch.notify();
        }
    }

    fn dispatch(&self) -> &EntityDispatch {
        &self.dispatch
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
    hook: Arc<StreamHook>,
    /// Resolves when the executor shuts down; `None` once it has.
    ended: Option<futures::future::BoxFuture<'static, ()>>,
    _type: std::marker::PhantomData<fn() -> T>,
}

impl<T: Message> SubscriptionStream<T> {
    pub(crate) fn create(core: &WorkerCore, options: impl IntoPrimitiveOptions) -> Result<Self> {
        let endpoint = core.endpoint(options, TypeSupport::of::<T>(), None)?;
        let hook = Arc::new(StreamHook::default());
        let port = core
            .exec
            .context
            .transport()
            .create_subscription(&endpoint, hook.clone())?;
        let life = core.exec.life.clone();
        Ok(Self {
            port,
            hook,
            ended: Some(Box::pin(async move { life.ended().await })),
            _type: std::marker::PhantomData,
        })
    }

    /// Waits for the next message; `None` once the executor has shut down and nothing is
    /// queued.
    pub async fn recv(&mut self) -> Option<Arc<T>> {
        std::future::poll_fn(|cx| self.poll_take(cx)).await
    }

    /// Takes the next message with its info, if one is queued, without waiting.
    pub fn try_recv(&self) -> Option<(Arc<T>, MessageInfo)> {
        self.port.take().map(|(p, i)| (downcast::<T>(p), i))
    }

    /// Messages dropped because the KeepLast history was full.
    pub fn lost_count(&self) -> u64 {
        self.port.lost_count()
    }

    fn poll_take(&mut self, cx: &mut TaskContext<'_>) -> Poll<Option<Arc<T>>> {
        if let Some((p, _)) = self.port.take() {
            return Poll::Ready(Some(downcast::<T>(p)));
        }
        self.hook.waker.register(cx.waker());
        // Re-checked after registering: a message that landed in between would otherwise
        // have woken nobody.
        if let Some((p, _)) = self.port.take() {
            return Poll::Ready(Some(downcast::<T>(p)));
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
        self.poll_take(cx)
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
