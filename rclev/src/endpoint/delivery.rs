//! [`Delivery`]: which thread runs a subscription's callback.

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
