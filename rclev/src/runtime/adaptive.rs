//! Adaptive delivery (`Delivery::Adaptive`, the default): a subscription's callback runs on the
//! transport's receive thread only once it has *proven short* on its worker, and goes back to
//! its worker the moment one run is not.
//!
//! Direct delivery (see `direct`) saves a worker wake-up per message, which over DDS is most
//! of what a short callback costs; but a callback run on the receive thread holds that thread,
//! and every other reader of the participant waits behind it. Adaptive delivery gets the
//! first without risking the second for callbacks that are not short:
//!
//! - **proving**: every run of the callback (with the message's decode) is timed, wherever it
//!   runs. After [`PROVING_RUNS`] runs in a row each shorter than [`SHORT_RUN`] (and none of
//!   which did anything that must not happen on a receive thread, see below), the entity may
//!   be run directly;
//! - **demotion**: a run that takes longer than `SHORT_RUN` makes it a worker-only entity again
//!   at once, and it must prove itself over twice as many runs as last time (at most
//!   [`MAX_PROVING_RUNS`]), unless it had been short for [`GOOD_STINT`] times that since it
//!   was allowed: then over [`PROVING_RUNS`] again. A callback that is slow now and then spends
//!   most of its life on its worker, while one the host merely preempted comes back soon;
//! - **hazards**: a run that creates an entity or sends a service or action request (see
//!   [`note_receive_thread_hazard`]) bars the entity from direct runs for good. On DDS,
//!   creating an endpoint on the receive thread risks a lock-order deadlock with discovery
//!   (rclev-dds refuses it there), and a callback that sends a request may wait for the reply,
//!   which the very receive thread it holds would have to bring.
//!
//! The guarantee this gives, stated in [`Delivery`](crate::Delivery): a callback that blocks
//! (or runs long) on every message never runs on a receive thread; one that starts blocking
//! after it has proven short holds the receive thread for at most one run before it is back on
//! its worker, and then for at most one run per proving period. What direct delivery always
//! guarantees holds as well: the callbacks of a worker never run at the same time.
//!
//! Concurrency: runs of one entity never overlap (a worker's callbacks are exclusive, whether
//! the worker or a receive thread runs them), so [`AdaptiveDelivery::record`] has one caller at
//! a time and its read-modify-writes need no compare-and-swap. The receive thread reads
//! [`AdaptiveDelivery::direct_allowed`] as a hint: a stale answer either runs a proven entity
//! on its worker once more or runs a just-demoted one directly once more; both are harmless,
//! and the run is timed either way.

use std::cell::Cell;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::base::error::Result;

use crate::base::sync::{AtomicBool, AtomicU64, Ordering};
use crate::endpoint::AdaptiveDeliveryState;
use crate::transport::{
    ClientPort, EventHook, NodePort, PublisherPort, ReadyHook, ServiceEndpoint, ServicePort,
    SubscriptionPort, TopicEndpoint,
};

/// A run at most this long counts as short. Long enough that an ordinary message callback
/// (decode, a little arithmetic, a publish) passes on a busy host, short enough that a callback
/// that sleeps, waits for I/O or crunches a large message does not.
pub(crate) const SHORT_RUN: Duration = Duration::from_micros(250);

/// Short runs in a row an entity needs before its first direct run.
pub(crate) const PROVING_RUNS: u64 = 16;

/// The longest proving period a demoted entity is given.
pub(crate) const MAX_PROVING_RUNS: u64 = 1024;

/// A demoted entity that had run this many times its proving period in short calls since it
/// was allowed starts over from [`PROVING_RUNS`] instead of doubling: a host that preempts a
/// receive thread in the middle of a short call now and then (a VM stall, a time slice) makes
/// the call look long, and should not keep a well-behaved callback on its worker.
pub(crate) const GOOD_STINT: u64 = 8;

crate::base::sync::thread_local! {
    /// Operations on this thread that must not happen on a receive thread (see
    /// [`note_receive_thread_hazard`]); compared before and after a run.
    static HAZARDS: Cell<u64> = const { Cell::new(0) };
}

/// Marks that the calling thread did something a directly delivered callback must not do: it
/// created an entity on a transport, or sent a service or action request (whose reply it may
/// wait for). An adaptively delivered callback that does this is never run on a receive thread
/// again.
pub(crate) fn note_receive_thread_hazard() {
    HAZARDS.with(|h| h.set(h.get().wrapping_add(1)));
}

fn hazards() -> u64 {
    HAZARDS.with(Cell::get)
}

/// A node's transport port that marks every endpoint creation as a receive-thread hazard
/// (see [`note_receive_thread_hazard`]): every entity a node or its workers create goes
/// through it, actions' and lifecycle services' included.
pub(crate) struct HazardNotingPort(pub(crate) Arc<dyn NodePort>);

impl NodePort for HazardNotingPort {
    fn create_publisher(
        &self,
        endpoint: &TopicEndpoint,
        events: Arc<dyn EventHook>,
    ) -> Result<Arc<dyn PublisherPort>> {
        note_receive_thread_hazard();
        self.0.create_publisher(endpoint, events)
    }

    fn create_subscription(
        &self,
        endpoint: &TopicEndpoint,
        ready: Arc<dyn ReadyHook>,
        events: Arc<dyn EventHook>,
    ) -> Result<Arc<dyn SubscriptionPort>> {
        note_receive_thread_hazard();
        self.0.create_subscription(endpoint, ready, events)
    }

    fn create_service(
        &self,
        endpoint: &ServiceEndpoint,
        ready: Arc<dyn ReadyHook>,
    ) -> Result<Arc<dyn ServicePort>> {
        note_receive_thread_hazard();
        self.0.create_service(endpoint, ready)
    }

    fn create_client(
        &self,
        endpoint: &ServiceEndpoint,
        ready: Arc<dyn ReadyHook>,
    ) -> Result<Arc<dyn ClientPort>> {
        note_receive_thread_hazard();
        self.0.create_client(endpoint, ready)
    }
}

/// What one adaptively delivered entity has learnt about its runs.
pub(crate) struct AdaptiveDelivery {
    /// Whether a receive thread has offered to run the entity: until one has (and with a
    /// transport that has none, in process), calls are not timed, which costs nothing.
    offered: AtomicBool,
    /// Whether a receive thread may run the entity now.
    allowed: AtomicBool,
    /// Set for good once a run did something hazardous.
    barred: AtomicBool,
    /// Short runs in a row since the last long one.
    streak: AtomicU64,
    /// Short runs in a row needed to be allowed.
    required: AtomicU64,
    demotions: AtomicU64,
    direct_runs: AtomicU64,
    worker_runs: AtomicU64,
}

impl Default for AdaptiveDelivery {
    fn default() -> Self {
        Self {
            offered: AtomicBool::new(false),
            allowed: AtomicBool::new(false),
            barred: AtomicBool::new(false),
            streak: AtomicU64::new(0),
            required: AtomicU64::new(PROVING_RUNS),
            demotions: AtomicU64::new(0),
            direct_runs: AtomicU64::new(0),
            worker_runs: AtomicU64::new(0),
        }
    }
}

impl AdaptiveDelivery {
    /// Whether a receive thread may run the entity now (a hint; see the module docs). Asked by
    /// receive threads only: the first question starts the timing of calls.
    pub(crate) fn direct_allowed(&self) -> bool {
        if !self.offered.load(Ordering::Relaxed) {
            self.offered.store(true, Ordering::Relaxed);
        }
        self.allowed.load(Ordering::Relaxed)
    }

    /// Whether calls are timed: once a receive thread has offered to run the entity.
    fn learning(&self) -> bool {
        self.offered.load(Ordering::Relaxed)
    }

    /// Starts timing a run.
    pub(crate) fn start(&self) -> RunTiming {
        RunTiming {
            started: Instant::now(),
            hazards: hazards(),
        }
    }

    /// Ends timing a run begun with [`start`](Self::start) on this thread; `direct` if a
    /// receive thread ran it.
    pub(crate) fn finish(&self, run: RunTiming, direct: bool) {
        let hazardous = hazards() != run.hazards;
        let runs = if direct {
            &self.direct_runs
        } else {
            &self.worker_runs
        };
        runs.fetch_add(1, Ordering::Relaxed);
        self.record(run.started.elapsed(), hazardous);
    }

    /// Learns from one run: how long it took and whether it did something hazardous. One
    /// caller at a time (see the module docs).
    pub(crate) fn record(&self, elapsed: Duration, hazardous: bool) {
        if hazardous && !self.barred.swap(true, Ordering::Relaxed) {
            self.allowed.store(false, Ordering::Relaxed);
        }
        if elapsed > SHORT_RUN {
            let streak = self.streak.swap(0, Ordering::Relaxed);
            if self.allowed.swap(false, Ordering::Relaxed) {
                self.demotions.fetch_add(1, Ordering::Relaxed);
                let required = self.required.load(Ordering::Relaxed);
                // Calls since it was allowed: after a long stint of short ones, one long call
                // is more likely the host preempting a short call than the callback changing.
                let stint = streak.saturating_sub(required);
                let next = if stint >= GOOD_STINT * required {
                    PROVING_RUNS
                } else {
                    (required * 2).min(MAX_PROVING_RUNS)
                };
                self.required.store(next, Ordering::Relaxed);
            }
            return;
        }
        let streak = self.streak.load(Ordering::Relaxed) + 1;
        self.streak.store(streak, Ordering::Relaxed);
        if streak >= self.required.load(Ordering::Relaxed) && !self.barred.load(Ordering::Relaxed) {
            self.allowed.store(true, Ordering::Relaxed);
        }
    }

    /// What it has learnt so far.
    pub(crate) fn state(&self) -> AdaptiveDeliveryState {
        AdaptiveDeliveryState {
            direct_allowed: self.allowed.load(Ordering::Relaxed),
            barred: self.barred.load(Ordering::Relaxed),
            demotions: self.demotions.load(Ordering::Relaxed),
            proving_runs: self.required.load(Ordering::Relaxed),
            direct_runs: self.direct_runs.load(Ordering::Relaxed),
            worker_runs: self.worker_runs.load(Ordering::Relaxed),
        }
    }
}

/// Runs `f` (one callback of an entity, with what it takes to start it: a message's decode),
/// timed and learnt from if the entity is adaptively delivered; `direct` if a receive thread
/// runs it. Callbacks are timed one by one rather than the entity's whole run, because a run
/// on the worker may work off a backlog of many messages while a receive thread's takes one.
pub(crate) fn timed_run<R>(
    adaptive: Option<&AdaptiveDelivery>,
    direct: bool,
    f: impl FnOnce() -> R,
) -> R {
    let Some(adaptive) = adaptive.filter(|a| a.learning()) else {
        return f();
    };
    let run = adaptive.start();
    let result = f();
    adaptive.finish(run, direct);
    result
}

/// A run being timed (see [`AdaptiveDelivery::start`]).
pub(crate) struct RunTiming {
    started: Instant,
    hazards: u64,
}

#[cfg(all(test, not(rclev_loom)))]
mod tests {
    use super::*;

    const FAST: Duration = Duration::from_micros(5);
    const SLOW: Duration = Duration::from_millis(5);

    fn prove(a: &AdaptiveDelivery, runs: u64) {
        for _ in 0..runs {
            a.record(FAST, false);
        }
    }

    #[test]
    fn allowed_after_the_proving_runs_and_not_before() {
        let a = AdaptiveDelivery::default();
        prove(&a, PROVING_RUNS - 1);
        assert!(!a.direct_allowed());
        prove(&a, 1);
        assert!(a.direct_allowed());
    }

    #[test]
    fn a_long_run_restarts_the_proof() {
        let a = AdaptiveDelivery::default();
        prove(&a, PROVING_RUNS - 1);
        a.record(SLOW, false);
        prove(&a, PROVING_RUNS - 1);
        assert!(
            !a.direct_allowed(),
            "the streak started again after the long run"
        );
        prove(&a, 1);
        assert!(a.direct_allowed());
        assert_eq!(
            a.state().demotions,
            0,
            "it was not allowed when it ran long"
        );
    }

    #[test]
    fn each_demotion_doubles_the_proving_period_up_to_its_cap() {
        let a = AdaptiveDelivery::default();
        let mut required = PROVING_RUNS;
        for demotion in 1..=10 {
            prove(&a, required - 1);
            assert!(
                !a.direct_allowed(),
                "not allowed after {} short runs",
                required - 1
            );
            prove(&a, 1);
            assert!(a.direct_allowed(), "allowed after {required} short runs");
            a.record(SLOW, false);
            assert!(!a.direct_allowed(), "one long run demotes");
            required = (required * 2).min(MAX_PROVING_RUNS);
            let state = a.state();
            assert_eq!(state.demotions, demotion);
            assert_eq!(state.proving_runs, required);
        }
        assert_eq!(a.state().proving_runs, MAX_PROVING_RUNS);
    }

    #[test]
    fn a_demotion_after_a_long_good_stint_starts_over_from_the_first_proving_period() {
        let a = AdaptiveDelivery::default();
        prove(&a, PROVING_RUNS);
        a.record(SLOW, false);
        assert_eq!(a.state().proving_runs, 2 * PROVING_RUNS);
        // Allowed again, then short for a long stint before one long call.
        prove(&a, 2 * PROVING_RUNS + GOOD_STINT * 2 * PROVING_RUNS);
        a.record(SLOW, false);
        let state = a.state();
        assert_eq!((state.demotions, state.proving_runs), (2, PROVING_RUNS));
        // One call short of a good stint: doubled.
        prove(&a, PROVING_RUNS + GOOD_STINT * PROVING_RUNS - 1);
        a.record(SLOW, false);
        assert_eq!(a.state().proving_runs, 2 * PROVING_RUNS);
    }

    #[test]
    fn a_hazard_bars_for_good() {
        let a = AdaptiveDelivery::default();
        prove(&a, PROVING_RUNS);
        assert!(a.direct_allowed());
        a.record(FAST, true);
        assert!(!a.direct_allowed());
        prove(&a, 10 * MAX_PROVING_RUNS);
        assert!(!a.direct_allowed());
        assert!(a.state().barred);
    }

    #[test]
    fn calls_are_timed_only_once_a_receive_thread_has_offered() {
        let a = AdaptiveDelivery::default();
        timed_run(Some(&a), false, || ());
        assert_eq!(a.state().worker_runs, 0, "in process: nothing to learn");
        assert!(!a.direct_allowed());
        timed_run(Some(&a), true, || ());
        timed_run(Some(&a), false, || ());
        let state = a.state();
        assert_eq!((state.direct_runs, state.worker_runs), (1, 1));
    }

    #[test]
    fn a_hazard_on_this_thread_is_seen_by_the_run_that_did_it() {
        let a = AdaptiveDelivery::default();
        a.direct_allowed();
        for _ in 0..PROVING_RUNS {
            let run = a.start();
            a.finish(run, false);
        }
        assert_eq!(a.state().worker_runs, PROVING_RUNS);
        let run = a.start();
        note_receive_thread_hazard();
        a.finish(run, true);
        assert!(a.state().barred);
        // Another thread's hazard is not this run's.
        let b = AdaptiveDelivery::default();
        b.direct_allowed();
        let run = b.start();
        std::thread::spawn(note_receive_thread_hazard)
            .join()
            .unwrap();
        b.finish(run, false);
        assert!(!b.state().barred);
    }
}
