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

use super::entry::{Stamp, TimerTick};
use super::heap::{GridTime, SimTime, TimerHeap, TimerId};
use super::scheduler::{hand_over, SchedulerCore};
use crate::sync::model_lock as lock;

/// The lanes, by the simulated clock's lane number.
pub(super) type SimLanes = HashMap<u64, TimerHeap<TimerTick, SimTime>>;

impl SchedulerCore {
    /// Adds a timer to the lane of simulated clock `lane`.
    pub(crate) fn sim_insert(
        &self,
        lane: u64,
        tick: Arc<TimerTick>,
        deadline: Option<SimTime>,
        period: Duration,
    ) -> TimerId {
        tick.sim.store(true, std::sync::atomic::Ordering::Release);
        let mut state = lock(&self.state);
        let heap = state.sim.entry(lane).or_default();
        let id = heap.insert(tick, deadline, period);
        Self::start_arming(heap, id, deadline.map(Stamp::sim));
        id
    }

    /// Re-arms or cancels a simulated-clock timer, optionally with a new period.
    /// `when` reads the simulated clock under the scheduler lock, for the reason given at
    /// [`arm`](Self::arm): `/clock` moves the time before it pops, so a deadline read under the
    /// lock lies at or after every tick popped under the old arming. Returns the deadline
    /// armed.
    pub(crate) fn sim_arm(
        &self,
        lane: u64,
        id: TimerId,
        when: impl FnOnce() -> Option<SimTime>,
        period: Option<Duration>,
    ) -> Option<SimTime> {
        let mut state = lock(&self.state);
        let heap = state.sim.get_mut(&lane)?;
        if let Some(p) = period {
            heap.set_period(id, p);
        }
        let deadline = when();
        heap.arm(id, deadline);
        Self::start_arming(heap, id, deadline.map(Stamp::sim));
        deadline
    }

    /// Removes a simulated-clock timer; like [`remove`](Self::remove), the tick waiting in
    /// `due` is dropped and no other is handed over.
    pub(crate) fn sim_remove(&self, lane: u64, id: TimerId) {
        if let Some(heap) = lock(&self.state).sim.get_mut(&lane) {
            Self::start_arming(heap, id, None);
            heap.remove(id);
        }
    }

    /// A simulated-clock timer's next deadline.
    pub(crate) fn sim_deadline(&self, lane: u64, id: TimerId) -> Option<SimTime> {
        lock(&self.state).sim.get(&lane)?.slot(id)?.deadline
    }

    /// Simulated clock `lane` moved forward to `now`: hands over every timer now due, one call
    /// per timer with the grid points it skipped counted as missed. Costs O(k log n) for k
    /// timers due out of n; the others are not looked at.
    ///
    /// Each tick is stored in its timer's `due` under the lock, as it is popped, and announced
    /// after the lock is dropped (the scheduler's ground rules).
    pub(crate) fn sim_advance(&self, lane: u64, now: SimTime) {
        let mut announce = Vec::new();
        {
            let mut state = lock(&self.state);
            let Some(heap) = state.sim.get_mut(&lane) else {
                return;
            };
            while let Some(e) = heap.pop_due(now, now) {
                if hand_over(&e.target, Stamp::sim(e.deadline), e.skipped, &self.counters) {
                    announce.push(e.target);
                }
            }
        }
        for tick in announce {
            tick.dispatch.notify();
        }
    }

    /// Simulated clock `lane` jumped back to `now`: as rcl does, a repeating timer whose last
    /// grid point lies after `now` restarts one period from `now`. O(n), on backward jumps only.
    pub(crate) fn sim_jumped_back(&self, lane: u64, now: SimTime) {
        let mut state = lock(&self.state);
        let Some(heap) = state.sim.get_mut(&lane) else {
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
                Self::start_arming(heap, id, restart.map(Stamp::sim));
            }
        }
    }
}

/// Simulated-time steps arrive from the clock layer through this.
impl crate::clock::SimTimeSink for SchedulerCore {
    fn sim_jumped_back(&self, lane: u64, nanos: i64) {
        SchedulerCore::sim_jumped_back(self, lane, SimTime(nanos))
    }
    fn sim_advance(&self, lane: u64, nanos: i64) {
        SchedulerCore::sim_advance(self, lane, SimTime(nanos))
    }
}
