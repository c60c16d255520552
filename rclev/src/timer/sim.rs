//! The scheduler's simulated-time lanes: timers whose clock follows `/clock`.
//!
//! Each simulated clock has its own heap, its *lane*, keyed in simulated time. The scheduler
//! thread never waits on a lane: a lane is examined only when its clock moves, through
//! [`SimTimeSink`](crate::clock::SimTimeSink), after the clock layer stored the new time. So a
//! lane costs nothing while `/clock` is quiet, and a tick is handed over when `/clock` passes
//! its deadline, never early (there is no hand-off lead here).
//!
//! The lanes live in the scheduler's state and follow its ground rules (see `scheduler.rs`):
//! touched only under its lock, ticks stored in `due` in the lock section that popped them and
//! announced after it, every arm starting a new arming (floor set, `due` emptied). Their
//! ticks carry [`Stamp::sim`] stamps, ordered within the lane's time base. The loom models in
//! `loom_tests.rs` race `/clock` advances with re-arms, removals and each other.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use super::entry::{hand_over, start_arming, Stamp, TimerTick};
use super::heap::{GridTime, SimTime, TimerHeap, TimerId};
use super::stats::TickCounters;

/// The lanes, by the simulated clock's lane number. The scheduler owns them in its state and
/// calls these methods under its lock (`SchedulerCore::sim_*` in `scheduler.rs`).
#[derive(Default)]
pub(super) struct SimLanes(HashMap<u64, TimerHeap<TimerTick, SimTime>>);

impl SimLanes {
    /// Adds a timer to the lane of simulated clock `lane`.
    pub(super) fn insert(
        &mut self,
        lane: u64,
        tick: Arc<TimerTick>,
        deadline: Option<SimTime>,
        period: Duration,
    ) -> TimerId {
        tick.sim.store(true, std::sync::atomic::Ordering::Release);
        let heap = self.0.entry(lane).or_default();
        let id = heap.insert(tick, deadline, period);
        start_arming(heap, id, deadline.map(Stamp::sim));
        id
    }

    /// Re-arms or cancels a timer, optionally with a new period; `when` reads the simulated
    /// clock (under the scheduler lock, see `SchedulerCore::sim_arm`). The deadline armed.
    pub(super) fn arm(
        &mut self,
        lane: u64,
        id: TimerId,
        when: impl FnOnce() -> Option<SimTime>,
        period: Option<Duration>,
    ) -> Option<SimTime> {
        let heap = self.0.get_mut(&lane)?;
        if let Some(p) = period {
            heap.set_period(id, p);
        }
        let deadline = when();
        heap.arm(id, deadline);
        start_arming(heap, id, deadline.map(Stamp::sim));
        deadline
    }

    /// Removes a timer; the tick waiting in `due` is dropped and no other is handed over.
    pub(super) fn remove(&mut self, lane: u64, id: TimerId) {
        if let Some(heap) = self.0.get_mut(&lane) {
            start_arming(heap, id, None);
            heap.remove(id);
        }
    }

    /// The earliest deadline armed on lane `lane`.
    pub(super) fn next_deadline(&mut self, lane: u64) -> Option<SimTime> {
        self.0.get_mut(&lane)?.next_deadline()
    }

    /// A timer's next deadline.
    pub(super) fn deadline(&self, lane: u64, id: TimerId) -> Option<SimTime> {
        self.0.get(&lane)?.slot(id)?.deadline
    }

    /// Clock `lane` moved forward to `now`: stores a tick in every timer now due (one per
    /// timer, the grid points it skipped counted as missed) and adds those to `announce`,
    /// for the caller to notify after dropping the lock. O(k log n) for k timers due out of n.
    pub(super) fn advance(
        &mut self,
        lane: u64,
        now: SimTime,
        counters: &TickCounters,
        announce: &mut Vec<Arc<TimerTick>>,
    ) {
        let Some(heap) = self.0.get_mut(&lane) else {
            return;
        };
        while let Some(e) = heap.pop_due(now, now) {
            if hand_over(&e.target, Stamp::sim(e.deadline), e.skipped, counters) {
                announce.push(e.target);
            }
        }
    }

    /// Clock `lane` jumped back to `now`: as rcl does, a repeating timer whose last grid point
    /// lies after `now` restarts one period from `now`. O(n), on backward jumps only.
    pub(super) fn jumped_back(&mut self, lane: u64, now: SimTime) {
        let Some(heap) = self.0.get_mut(&lane) else {
            return;
        };
        for (id, deadline, period) in heap.armed() {
            let last = SimTime(
                deadline
                    .0
                    .saturating_sub(crate::clock::saturating_nanos(period)),
            );
            if !period.is_zero() && last > now {
                let restart = now.checked_plus(period);
                heap.arm(id, restart);
                start_arming(heap, id, restart.map(Stamp::sim));
            }
        }
    }
}
