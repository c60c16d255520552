//! [`Delivery`]: which thread runs a subscription's callback.

/// Where a subscription's callback runs.
///
/// Over DDS a message arrives on the transport's receive thread (Fast DDS's). Handing it to the
/// callback's worker means waking a parked worker: 15–40 µs and two context switches, most of
/// what a short callback costs, and on a small machine a third busy thread beside the sender
/// and the receive thread. Running the callback on the receive thread saves all that, but holds
/// the thread: every other reader of the participant waits while it runs.
///
/// - [`Delivery::Adaptive`] (the default) runs a callback on the receive thread only once it
///   has *proven short*: each call is timed (with its message's decode), and after 16 calls in
///   a row of at most 250 µs each, the receive thread may run it while its worker is idle. One
///   longer call sends it back to its worker at once, and it must then prove itself over twice
///   as many calls as before (up to 1 024; over 16 again if it had been short for eight times
///   its proving period, as a host preempting a short call makes it look long). A callback
///   that creates an entity or sends a service or action request (whose reply it might wait
///   for) is never run on the receive thread again. What this guarantees: a call runs on a
///   receive thread only right after at least 16 short calls in a row; so a callback that
///   blocks or runs long on every message never holds a receive thread, and one that starts
///   doing so after it has proven short holds it for one call, then runs on its worker.
///   [`SubscriptionState::delivery_state`] shows what it has learnt.
/// - [`Delivery::Worker`] always runs the callback on its worker: for callbacks that may block
///   at any time (e.g. one waiting on a lock another thread holds for long).
/// - [`Delivery::Direct`] runs it on the receive thread whenever its worker is idle, unproven:
///   for callbacks known to be short.
///
/// Whichever thread runs it, a callback runs as one of its worker's callbacks: never at the
/// same time as another of them, only while the executor spins, with its payload, panics
/// reported. When the worker is busy, has work queued or the executor does not spin, the
/// message goes to the worker. Only transports with a receive thread of their own (DDS) run
/// callbacks on it; in process, and for async callbacks, every delivery is the worker's.
///
/// On DDS the receive thread is Fast DDS's, inside the reader's listener with the reader's lock
/// held, so a callback that runs there must be short and must not block: no waiting for a
/// service reply or for another message (the receive thread that would bring it is the one
/// waiting), no long computation (other readers of the participant wait behind it). Creating
/// DDS entities there fails with [`Error::Transport`](crate::Error::Transport) rather than risk
/// Fast DDS's discovery lock order (with `Adaptive`, only a callback's first such creation can
/// meet this, if it comes after the callback has proven short; it then runs on its worker);
/// dropping them is deferred until the callback has returned.
///
/// [`SubscriptionState::delivery_state`]: crate::SubscriptionState::delivery_state
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Delivery {
    /// The callback runs on the receive thread once proven short, on its worker otherwise (the
    /// default).
    #[default]
    Adaptive,
    /// The callback always runs on its worker.
    Worker,
    /// The callback may run on the transport's receive thread whenever its worker is idle.
    Direct,
}

/// What an adaptively delivered subscription has learnt about its callback
/// ([`Delivery::Adaptive`]); see `SubscriptionState::delivery_state`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AdaptiveDeliveryState {
    /// Whether a receive thread may run the callback now.
    pub direct_allowed: bool,
    /// Whether the callback did something that bars it from receive threads for good.
    pub barred: bool,
    /// Times a long call sent the callback back to its worker.
    pub demotions: u64,
    /// Short calls in a row it needs (again) before it may run directly.
    pub proving_runs: u64,
    /// Calls on a transport's receive thread.
    pub direct_runs: u64,
    /// Calls on its worker.
    pub worker_runs: u64,
}
