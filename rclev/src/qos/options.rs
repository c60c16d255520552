//! What an entity is created with: its name, QoS, and for topic endpoints where its callback
//! runs and who hears its QoS events.

use std::fmt;
use std::sync::{Arc, Mutex};

use super::{QoSProfile, QosEvent};

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

/// A QoS event handler given in an entity's options: it runs on the entity's worker for each
/// event, from the ones its creation raised on (a clash with endpoints that were there first).
///
/// Cloning it, or the options that hold it, shares the one handler: every entity created from
/// the clones calls it, one call at a time.
#[derive(Clone)]
pub struct QosEventHandler(Arc<Mutex<dyn FnMut(QosEvent) + Send>>);

impl QosEventHandler {
    /// Wraps `handler`.
    pub fn new(handler: impl FnMut(QosEvent) + Send + 'static) -> Self {
        Self(Arc::new(Mutex::new(handler)))
    }

    /// Calls the handler. A panic in an earlier call leaves it usable: the state it mutates is
    /// the user's, and the panic was reported where it happened.
    pub(crate) fn call(&self, event: QosEvent) {
        let mut handler = self.0.lock().unwrap_or_else(|p| p.into_inner());
        (*handler)(event)
    }
}

impl fmt::Debug for QosEventHandler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("QosEventHandler(..)")
    }
}

/// Where a subscription's callback runs.
///
/// By default ([`Delivery::Worker`]) every callback runs on its worker: the transport's receive
/// thread queues the message and wakes the worker. Waking a parked worker costs 15–40 µs and two
/// context switches per message burst, which is most of what a short callback costs over DDS.
///
/// [`Delivery::Direct`] removes that hand-off for callbacks that are short: when the worker is
/// parked with nothing queued, the transport's receive thread runs the callback itself, still
/// as one of the worker's callbacks (never at the same time as another of them, only while the
/// executor spins, with its payload, panics reported). When the worker is busy or the executor
/// does not spin, the message goes the default way. Only transports with a receive thread of
/// their own (DDS) deliver directly; async callbacks always run on their worker.
///
/// On DDS the receive thread is Fast DDS's, inside the reader's listener with the reader's lock
/// held, so a direct callback must be short and must not block: no waiting for a service reply
/// or for another message (the receive thread that would bring it is the one waiting), no long
/// computation (other readers of the participant wait behind it). Creating DDS entities in it
/// fails with [`Error::Transport`](crate::Error::Transport) rather than risk Fast
/// DDS's discovery lock order; dropping them is deferred until the callback has returned.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Delivery {
    /// The callback runs on its worker (the default).
    #[default]
    Worker,
    /// The callback may run on the transport's receive thread when its worker is idle.
    Direct,
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
            delivery: Delivery::Worker,
            event_handler: None,
        }
    }
}

impl IntoPrimitiveOptions for String {
    fn into_primitive_options(self) -> PrimitiveOptions {
        PrimitiveOptions {
            name: self,
            qos: QoSProfile::default(),
            delivery: Delivery::Worker,
            event_handler: None,
        }
    }
}
