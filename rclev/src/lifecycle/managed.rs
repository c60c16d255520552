//! Managed entities: publishers that publish and timers that tick only while their node is
//! active, and the [`ManagedEntity`] trait for the user's own.
//!
//! All of a node's managed entities are switched together, by one [`Activation`] the node
//! owns and its entities share: on right before `on_activate` runs (so the callback may
//! publish, as rclcpp's demo does after calling `LifecycleNode::on_activate`), off right before
//! any other callback runs, and in the end on exactly when the transition ends in `active`
//! (an `on_activate` that fails or errs switches them off again; an `on_deactivate` that fails
//! switches them back on).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use crate::base::error::DeliveryError;
use crate::logging::Logger;
use crate::msg::Message;
use crate::node::Publisher;
use crate::runtime::callback::Callback;
use crate::timer::{TimerCallback, TimerInfo};

/// Whether a node's managed entities are on, shared by the node and its entities.
#[derive(Default)]
pub(super) struct Activation {
    active: AtomicBool,
    /// Bumped each time the entities are switched off: an inactive period's number, so each
    /// publisher warns once per period (as rclcpp's `LifecyclePublisher` does).
    inactive_periods: AtomicU64,
}

impl Activation {
    pub(super) fn is_active(&self) -> bool {
        self.active.load(Ordering::Acquire)
    }

    /// Switches; `true` if that changed anything.
    pub(super) fn set(&self, on: bool) -> bool {
        let was = self.active.swap(on, Ordering::AcqRel);
        if was && !on {
            self.inactive_periods.fetch_add(1, Ordering::AcqRel);
        }
        was != on
    }

    /// A timer callback that does nothing unless the entities are on: a tick that was on its
    /// way when the node left `active` is dropped (the timer is also cancelled then).
    pub(super) fn gate(self: &Arc<Self>, callback: TimerCallback) -> TimerCallback {
        let on = self.clone();
        TimerCallback(match callback.0 {
            Callback::Sync(mut f) => Callback::Sync(Box::new(
                move |payload: &mut (dyn std::any::Any + Send), info: TimerInfo| {
                    if on.is_active() {
                        f(payload, info)
                    }
                },
            )),
            Callback::Async(mut f) => Callback::Async(Box::new(move |info: TimerInfo| {
                if on.is_active() {
                    f(info)
                } else {
                    Box::pin(async {})
                }
            })),
        })
    }
}

/// Something switched on and off with its managed node's state: see the [module
/// docs](crate::lifecycle#managed-entities) for when. Register it with
/// [`LifecycleNodeState::add_managed_entity`](super::LifecycleNodeState::add_managed_entity);
/// the node holds it weakly.
///
/// The methods run on the thread that runs the transition, outside the node's locks: they may
/// ask the node for its state, but not start a transition (it would be refused: one is in
/// progress).
pub trait ManagedEntity: Send + Sync {
    /// The node's managed entities are switched on (right before `on_activate` runs).
    fn on_activate(&self);
    /// The node's managed entities are switched off.
    fn on_deactivate(&self);
}

/// A publisher that publishes only while its node's managed entities are on (the node is
/// `active`, or `activating`). While they are off, [`publish`](Self::publish) drops the
/// message and returns `Ok(())`, as rclcpp's `LifecyclePublisher` does; the first drop of each
/// inactive period logs a warning through the node's logger ("Trying to publish message on the
/// topic '/chatter', but the publisher is not activated"), later ones of that period are
/// silent.
///
/// ```
/// use rclev::interfaces::std_msgs::msg::String as StringMsg;
/// use rclev::lifecycle::State;
///
/// let executor = rclev::Context::default().create_basic_executor();
/// let node = executor.create_lifecycle_node("lc_talker").unwrap();
/// let publisher = node.create_lifecycle_publisher::<StringMsg>("lifecycle_chatter").unwrap();
/// assert!(!publisher.is_activated());
/// publisher.publish(StringMsg { data: "dropped".into() }).unwrap(); // logged once, dropped
/// node.configure().unwrap();
/// assert_eq!(node.activate().unwrap(), State::Active);
/// assert!(publisher.is_activated());
/// ```
pub struct LifecyclePublisherState<T: Message> {
    publisher: Publisher<T>,
    activation: Arc<Activation>,
    logger: Logger,
    /// The inactive period last warned about, plus one (0: none yet).
    warned: AtomicU64,
}

/// A shared handle to a managed publisher; dropping the last one unregisters the publisher.
pub type LifecyclePublisher<T> = crate::EntityHandle<LifecyclePublisherState<T>>;

impl<T: Message> LifecyclePublisherState<T> {
    pub(super) fn new(
        publisher: Publisher<T>,
        activation: Arc<Activation>,
        logger: Logger,
    ) -> LifecyclePublisher<T> {
        crate::EntityHandle::new(Self {
            publisher,
            activation,
            logger,
            warned: AtomicU64::new(0),
        })
    }

    /// Whether messages are published now (the node's managed entities are on).
    pub fn is_activated(&self) -> bool {
        self.activation.is_active()
    }

    /// Publishes `msg` while activated; otherwise drops it (see the type's docs) and returns
    /// `Ok(())`. Errors are the publisher's ([`PublisherState::publish`]).
    ///
    /// [`PublisherState::publish`]: crate::PublisherState::publish
    pub fn publish(&self, msg: T) -> Result<(), DeliveryError<T>> {
        if !self.activation.is_active() {
            self.dropped();
            return Ok(());
        }
        self.publisher.publish(msg)
    }

    /// [`publish`](Self::publish) for a message already in an `Arc`.
    pub fn publish_arc(&self, msg: Arc<T>) -> Result<(), DeliveryError<Arc<T>>> {
        if !self.activation.is_active() {
            self.dropped();
            return Ok(());
        }
        self.publisher.publish_arc(msg)
    }

    fn dropped(&self) {
        let period = self.activation.inactive_periods.load(Ordering::Acquire) + 1;
        if self.warned.swap(period, Ordering::AcqRel) != period {
            crate::log_warn!(
                self.logger,
                "Trying to publish message on the topic '{}', but the publisher is not activated",
                self.publisher.topic_name()
            );
        }
    }

    /// The fully qualified topic name.
    pub fn topic_name(&self) -> &str {
        self.publisher.topic_name()
    }

    /// How many subscriptions are matched.
    pub fn get_subscription_count(&self) -> usize {
        self.publisher.get_subscription_count()
    }

    /// The publisher underneath, which publishes whatever the node's state: for its graph
    /// information and QoS, or to publish regardless of the lifecycle.
    pub fn publisher(&self) -> &Publisher<T> {
        &self.publisher
    }
}

impl<T: Message> std::fmt::Debug for LifecyclePublisherState<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LifecyclePublisher")
            .field("topic", &self.publisher.topic_name())
            .field("activated", &self.is_activated())
            .finish()
    }
}
