//! What an entity is created with: its name, QoS, and for topic endpoints where its callback
//! runs and who hears its QoS events.

use super::Delivery;
use crate::qos::{QoSProfile, QosEvent, QosEventHandler};

/// The bytes a subscription's queue (and a service's or client's) holds at most unless told
/// otherwise: 128 MiB, the messages received but not yet taken, counted by their length on
/// the wire. A KeepLast history of large messages drops its oldest beyond it; a KeepAll one
/// refuses (or, over DDS, leaves with the sender) the newest. Change it per subscription with
/// [`IntoPrimitiveOptions::max_queue_bytes`].
pub const DEFAULT_QUEUE_BYTES: usize = 128 << 20;

/// Options for a publisher, subscription, service or client: the name plus QoS.
///
/// A plain `&str` converts into options with the default QoS; chain [`IntoPrimitiveOptions::qos`]
/// to choose another: `node.create_publisher::<Int64>("count".qos(QoSProfile::sensor_data()))`.
#[derive(Debug, Clone)]
pub struct PrimitiveOptions {
    /// Topic or service name, relative, private (`~/…`) or absolute.
    pub name: String,
    /// QoS profile.
    pub qos: QoSProfile,
    /// Where a subscription's callback runs (ignored by the other entities).
    pub delivery: Delivery,
    /// The handler of a publisher's or subscription's QoS events, from its creation on (see
    /// [`IntoPrimitiveOptions::event_handler`]). Services and clients have no QoS events and
    /// refuse one.
    pub event_handler: Option<QosEventHandler>,
    /// The most bytes a subscription's queue holds on a wire transport (see
    /// [`IntoPrimitiveOptions::max_queue_bytes`]).
    pub max_queue_bytes: usize,
}

/// Conversion into [`PrimitiveOptions`], implemented for names and options.
pub trait IntoPrimitiveOptions: Sized {
    /// Converts.
    fn into_primitive_options(self) -> PrimitiveOptions;
    /// Replaces the QoS profile.
    fn qos(self, qos: QoSProfile) -> PrimitiveOptions {
        let mut o = self.into_primitive_options();
        o.qos = qos;
        o
    }
    /// Sets where a subscription's callback runs (see [`Delivery`]).
    fn delivery(self, delivery: Delivery) -> PrimitiveOptions {
        let mut o = self.into_primitive_options();
        o.delivery = delivery;
        o
    }
    /// Gives a publisher or subscription (or subscription stream) its QoS event handler at
    /// creation. It runs on the entity's worker for every event, those its creation raises
    /// included (a clash with endpoints that were on the topic first), and replaces the
    /// default handler, which warns about incompatibilities. A handler set after creation
    /// (`set_event_handler`) gets those events too, but they have been warned about by then.
    /// Services and clients have no QoS events: creating one with a handler fails with
    /// [`Error::InvalidQos`](crate::Error::InvalidQos).
    fn event_handler(self, handler: impl FnMut(QosEvent) + Send + 'static) -> PrimitiveOptions {
        let mut o = self.into_primitive_options();
        o.event_handler = Some(QosEventHandler::new(handler));
        o
    }
    /// Bounds a subscription's queue on a wire transport (DDS, Zenoh) to `bytes` of received
    /// messages not yet taken, counted by their length on the wire, beside its QoS history's
    /// bound: [`DEFAULT_QUEUE_BYTES`] (128 MiB)
    /// unless set. A KeepLast history drops its oldest messages beyond it (the newest is
    /// always kept); a KeepAll one refuses the newest over Zenoh, and over DDS leaves them
    /// with the writer, whose reliable writes are then pushed back. Raise it for deep
    /// histories of large messages (a KeepLast(100) of 4 MiB images needs 400 MiB); lower it
    /// to bound what a flooding publisher can make the process hold.
    fn max_queue_bytes(self, bytes: usize) -> PrimitiveOptions {
        let mut o = self.into_primitive_options();
        o.max_queue_bytes = bytes;
        o
    }
}

/// The options a name gives: default QoS, delivery and queue bound, no event handler.
fn named(name: String) -> PrimitiveOptions {
    PrimitiveOptions {
        name,
        qos: QoSProfile::default(),
        delivery: Delivery::default(),
        event_handler: None,
        max_queue_bytes: DEFAULT_QUEUE_BYTES,
    }
}

impl IntoPrimitiveOptions for PrimitiveOptions {
    fn into_primitive_options(self) -> PrimitiveOptions {
        self
    }
}

impl IntoPrimitiveOptions for &str {
    fn into_primitive_options(self) -> PrimitiveOptions {
        named(self.to_string())
    }
}

impl IntoPrimitiveOptions for String {
    fn into_primitive_options(self) -> PrimitiveOptions {
        named(self)
    }
}
