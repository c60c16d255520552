//! What an entity is created with: its name, QoS, and for topic endpoints where its callback
//! runs and who hears its QoS events.

use super::Delivery;
use crate::qos::{QoSProfile, QosEvent, QosEventHandler};

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
}

impl IntoPrimitiveOptions for PrimitiveOptions {
    fn into_primitive_options(self) -> PrimitiveOptions {
        self
    }
}

impl IntoPrimitiveOptions for &str {
    fn into_primitive_options(self) -> PrimitiveOptions {
        PrimitiveOptions {
            name: self.to_string(),
            qos: QoSProfile::default(),
            delivery: Delivery::default(),
            event_handler: None,
        }
    }
}

impl IntoPrimitiveOptions for String {
    fn into_primitive_options(self) -> PrimitiveOptions {
        PrimitiveOptions {
            name: self,
            qos: QoSProfile::default(),
            delivery: Delivery::default(),
            event_handler: None,
        }
    }
}
