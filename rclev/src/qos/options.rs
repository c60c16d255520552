//! What an entity is created with: its name and QoS.

use super::QoSProfile;

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
        }
    }
}

impl IntoPrimitiveOptions for String {
    fn into_primitive_options(self) -> PrimitiveOptions {
        PrimitiveOptions {
            name: self,
            qos: QoSProfile::default(),
            delivery: Delivery::Worker,
        }
    }
}
