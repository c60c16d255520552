//! Counters of the tick path, for finding where ticks are lost and where lateness comes from
//! (`Executor::stats`, `rclev bench timers --verbose`).
//!
//! Plain relaxed atomics outside every protocol: they only count, so they are `std`'s even in
//! the loom build (they would only multiply the states loom explores).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// What the executor's timers did so far, summed over all its timers (the lateness fields over
/// wall-clock ones). Lateness comes
/// from two threads: the scheduler waking after its planned hand-off time, and the worker taking
/// the tick after its deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TimerStats {
    /// Ticks handed to a worker.
    pub handed_over: u64,
    /// Ticks dropped at hand-over because the worker had not yet taken the previous one.
    pub dropped_worker_busy: u64,
    /// Grid points skipped because the tick path reached them more than a period late: the
    /// scheduler thread, or a worker pulling the next tick of a timer it paces (after a
    /// callback that ran long, or a stall of its thread).
    pub dropped_late: u64,
    /// Timed waits of the scheduler thread that ran to their end.
    pub scheduler_timed_wakeups: u64,
    /// Sum over those of how long after the planned time the thread ran again (ns).
    pub scheduler_overshoot_ns: u64,
    /// Ticks a worker took at or before their deadline.
    pub worker_early: u64,
    /// Sum over those of how early (ns): time the worker spent waiting for the deadline.
    pub worker_early_ns: u64,
    /// Ticks a worker took after their deadline.
    pub worker_late: u64,
    /// Sum over those of how late (ns).
    pub worker_late_ns: u64,
    /// Ticks that waited on the worker's alarm (a kernel sleep to shortly before the deadline,
    /// or, for one too close to sleep for, a pass through the alarm's deadline order) instead
    /// of being busy-waited as they came.
    pub worker_slept: u64,
}

#[derive(Default)]
pub(crate) struct TickCounters {
    handed_over: AtomicU64,
    dropped_worker_busy: AtomicU64,
    dropped_late: AtomicU64,
    scheduler_timed_wakeups: AtomicU64,
    scheduler_overshoot_ns: AtomicU64,
    worker_early: AtomicU64,
    worker_early_ns: AtomicU64,
    worker_late: AtomicU64,
    worker_late_ns: AtomicU64,
    worker_slept: AtomicU64,
}

impl TickCounters {
    pub(crate) fn handed_over(&self) {
        self.handed_over.fetch_add(1, Relaxed);
    }
    pub(crate) fn dropped_worker_busy(&self) {
        self.dropped_worker_busy.fetch_add(1, Relaxed);
    }
    pub(crate) fn dropped_late(&self, n: u64) {
        self.dropped_late.fetch_add(n, Relaxed);
    }
    pub(crate) fn scheduler_woke(&self, overshoot_ns: u64) {
        self.scheduler_timed_wakeups.fetch_add(1, Relaxed);
        self.scheduler_overshoot_ns.fetch_add(overshoot_ns, Relaxed);
    }
    /// A worker took a tick `early_ns` before its deadline (negative: after it).
    pub(crate) fn worker_arrived(&self, early_ns: i64) {
        if early_ns >= 0 {
            self.worker_early.fetch_add(1, Relaxed);
            self.worker_early_ns.fetch_add(early_ns as u64, Relaxed);
        } else {
            self.worker_late.fetch_add(1, Relaxed);
            self.worker_late_ns
                .fetch_add(early_ns.unsigned_abs(), Relaxed);
        }
    }
    pub(crate) fn worker_slept(&self) {
        self.worker_slept.fetch_add(1, Relaxed);
    }

    pub(crate) fn snapshot(&self) -> TimerStats {
        TimerStats {
            handed_over: self.handed_over.load(Relaxed),
            dropped_worker_busy: self.dropped_worker_busy.load(Relaxed),
            dropped_late: self.dropped_late.load(Relaxed),
            scheduler_timed_wakeups: self.scheduler_timed_wakeups.load(Relaxed),
            scheduler_overshoot_ns: self.scheduler_overshoot_ns.load(Relaxed),
            worker_early: self.worker_early.load(Relaxed),
            worker_early_ns: self.worker_early_ns.load(Relaxed),
            worker_late: self.worker_late.load(Relaxed),
            worker_late_ns: self.worker_late_ns.load(Relaxed),
            worker_slept: self.worker_slept.load(Relaxed),
        }
    }
}
