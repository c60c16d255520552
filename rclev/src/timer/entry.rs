//! A timer's entry: the state the scheduler and the timer's worker share, and the [`Stamp`]s
//! they exchange through it.
//!
//! # Ground rules
//!
//! - `due` is the hand-over slot. Only the scheduler's delivery ([`hand_over`]) puts a
//!   stamp in, into an empty slot, and only under the scheduler lock, in the lock section that
//!   popped the tick (the scheduler thread's, a worker's pull, a `/clock` advance); only the
//!   worker takes one out (a swap to [`Stamp::NONE`], in `execute.rs`, without the lock). So at
//!   most one tick waits per timer: a tick that finds one still waiting is dropped and counted,
//!   never queued behind it.
//! - Every new arming (arm, cancel, re-period, removal, lane switch) empties `due` and writes
//!   `floor` in one step under the scheduler lock ([`start_arming`]). With the rule
//!   above, `due` holds only ticks of the current arming, one arming's ticks enter it in
//!   deadline order, and a tick popped before a re-arm cannot arrive after it: a stamp alone
//!   could not tell, as an early hand-off or a worker's pull pops a tick ahead of its deadline,
//!   past the first deadline of an arming that starts at the next deadline. The worker checks
//!   the tick it took against `floor` (a lane switch re-arms without the timer's callback lock,
//!   so it can land between the take and the check) and counts missed grid points from it.
//! - `sim` (which kind of lane the timer is in) only steers the worker's spin policy, and
//!   `dropped_total` is a statistic: both are relaxed hints, part of no protocol.

use std::sync::Arc;
use std::time::Duration;

use super::heap::{GridTime, SimTime, TimerHeap, TimerId};
use super::stats::TickCounters;
use crate::base::sync::{AtomicU64, Ordering};
use crate::runtime::dispatch::EntityDispatch;

/// A tick's deadline as it travels through [`TimerTick::due`] and [`TimerTick::floor`]: one
/// `u64`, so it is swapped and compared atomically, and ordered like the deadlines within one
/// time base.
///
/// Layout: bit 62 ([`Stamp::SIM_BIT`]) says simulated time; the bits below hold the deadline's
/// nanoseconds plus [`Stamp::BIAS`] — since the scheduler's epoch for the wall, simulated
/// (ROS time) for a lane. All zeros is [`Stamp::NONE`], all ones [`Stamp::DISARMED`].
///
/// A simulated deadline's nanoseconds are exact below 2^62 − 1 (the year 2116) and at
/// `i64::MAX` (the "never" an overflowing arm saturates to); in between, bit 62 of the
/// nanoseconds merges with the marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Stamp(u64);

impl Stamp {
    /// In `due`: no tick waiting. No deadline encodes to it, thanks to [`Stamp::BIAS`].
    pub(crate) const NONE: Stamp = Stamp(0);
    /// The floor of a timer with no arming (cancelled, spent or removed): above every stamp,
    /// so no tick is current.
    pub(crate) const DISARMED: Stamp = Stamp(u64::MAX);
    /// Marks a simulated-time stamp. Wall stamps stay below it: 2^62 ns is 146 years past the
    /// scheduler's epoch, and later deadlines saturate at [`Stamp::MAX_WALL`].
    const SIM_BIT: u64 = 1 << 62;
    /// Added to a deadline's nanoseconds so that a deadline at zero is not [`Stamp::NONE`].
    const BIAS: u64 = 1;
    /// The largest wall stamp: the wall never reaches [`Stamp::SIM_BIT`].
    const MAX_WALL: u64 = Self::SIM_BIT - 1;

    /// A wall deadline `since_epoch` after the scheduler's epoch.
    pub(crate) fn wall(since_epoch: Duration) -> Self {
        let ns = u64::try_from(since_epoch.as_nanos()).unwrap_or(u64::MAX);
        Stamp(ns.min(Self::MAX_WALL - Self::BIAS) + Self::BIAS)
    }

    /// A simulated deadline (a time before the epoch counts as the epoch).
    pub(crate) fn sim(deadline: SimTime) -> Self {
        Stamp((deadline.0.max(0) as u64 + Self::BIAS) | Self::SIM_BIT)
    }

    /// Whether this is a simulated-time stamp.
    pub(crate) fn is_sim(self) -> bool {
        self.0 & Self::SIM_BIT != 0
    }

    /// Whether both stamps are of the same time base (wall or simulated).
    fn same_base(self, other: Stamp) -> bool {
        (self.0 & Self::SIM_BIT) == (other.0 & Self::SIM_BIT)
    }

    /// The deadline in nanoseconds: since the scheduler's epoch for a wall stamp, simulated
    /// for a sim one. Only for stamps made by [`wall`](Self::wall) or [`sim`](Self::sim).
    pub(crate) fn nanos(self) -> u64 {
        (self.0 & !Self::SIM_BIT) - Self::BIAS
    }

    /// Nanoseconds from `earlier`'s deadline to this one's, zero unless this one is later
    /// ([`Stamp::DISARMED`] lies after every deadline). For stamps of one time base.
    pub(crate) fn nanos_since(self, earlier: Stamp) -> u64 {
        (self.0 & !Self::SIM_BIT).saturating_sub(earlier.0 & !Self::SIM_BIT)
    }
}

/// A [`Stamp`] in one of the facade's atomics (so the loom models see its accesses).
pub(crate) struct AtomicStamp(AtomicU64);

impl AtomicStamp {
    /// An atomic holding `stamp`.
    pub(crate) fn new(stamp: Stamp) -> Self {
        Self(AtomicU64::new(stamp.0))
    }

    /// Reads the stamp.
    pub(crate) fn load(&self, order: Ordering) -> Stamp {
        Stamp(self.0.load(order))
    }

    /// Replaces the stamp.
    pub(crate) fn store(&self, stamp: Stamp, order: Ordering) {
        self.0.store(stamp.0, order)
    }

    /// Replaces the stamp, returning the previous one.
    pub(crate) fn swap(&self, stamp: Stamp, order: Ordering) -> Stamp {
        Stamp(self.0.swap(stamp.0, order))
    }

    /// `AtomicU64::compare_exchange` on stamps.
    pub(crate) fn compare_exchange(
        &self,
        current: Stamp,
        new: Stamp,
        success: Ordering,
        failure: Ordering,
    ) -> Result<Stamp, Stamp> {
        self.0
            .compare_exchange(current.0, new.0, success, failure)
            .map(Stamp)
            .map_err(Stamp)
    }
}

/// A timer as the scheduler holds it (in its heaps) and hands ticks to it; the timer's
/// `TimerCore` holds it too and takes the ticks. See the ground rules above.
pub(crate) struct TimerTick {
    /// Where a delivered tick is announced: the timer's entity dispatch, into its worker's
    /// mailbox.
    pub(crate) dispatch: Arc<EntityDispatch>,
    /// The undelivered tick's stamp; [`Stamp::NONE`] when no tick is waiting for the callback.
    /// Set by the scheduler, taken by the worker.
    pub(crate) due: AtomicStamp,
    /// Ticks dropped over the timer's life.
    pub(crate) dropped_total: AtomicU64,
    /// The timer is in a simulated-time lane.
    pub(crate) sim: std::sync::atomic::AtomicBool,
    /// The stamp of the first deadline of the current arming ([`Stamp::DISARMED`] while
    /// disarmed). Set under the scheduler lock, with `due` emptied, whenever a user arms,
    /// cancels or re-periods the timer, and when the scheduler removes it.
    pub(crate) floor: AtomicStamp,
}

impl TimerTick {
    /// A disarmed timer's entry, announcing ticks through `dispatch`.
    pub(crate) fn new(dispatch: Arc<EntityDispatch>) -> Self {
        Self {
            dispatch,
            due: AtomicStamp::new(Stamp::NONE),
            dropped_total: AtomicU64::new(0),
            sim: std::sync::atomic::AtomicBool::new(false),
            floor: AtomicStamp::new(Stamp::DISARMED),
        }
    }

    /// Whether a tick stamped `stamp` can belong to the current arming: at or after its first
    /// deadline and in the same time base (a tick taken just before the timer moved between the
    /// wall and a simulated lane is not). For a tick taken from `due`, which holds only the
    /// current arming's ticks, this tells whether a new arming started since the take.
    pub(crate) fn is_current(&self, stamp: Stamp) -> bool {
        let floor = self.floor.load(Ordering::Acquire);
        stamp >= floor && stamp.same_base(floor)
    }

    /// Counts `n` ticks as dropped.
    pub(crate) fn drop_ticks(&self, n: u64) {
        self.dropped_total.fetch_add(n, Ordering::Relaxed);
    }
}

/// Hands a tick stamped `stamp` to its timer, `skipped` grid points after the previous one
/// (counted as dropped): the first step of a tick's path after the heap. The tick goes into
/// `due`, unless the previous one still waits there (its callback has not started): then this
/// one is dropped and counted, never queued behind it. Returns whether the tick was stored;
/// the caller announces a stored tick to the timer's dispatch (which queues the timer in its
/// worker's mailbox, `executor/dispatch.rs`) after dropping the lock, unless it is the timer's
/// own worker pulling it.
///
/// Called under the scheduler lock, in the lock section that popped the tick: so `stamp` is of
/// the timer's current arming, and so is a tick waiting in `due` (a new arming empties it under
/// this lock, [`start_arming`]). Only this puts a tick in (so one at a time),
/// and only the worker takes one out, lock-free.
pub(super) fn hand_over(
    tick: &TimerTick,
    stamp: Stamp,
    skipped: u64,
    counters: &TickCounters,
) -> bool {
    if skipped > 0 {
        tick.drop_ticks(skipped);
        counters.dropped_late(skipped);
    }
    match tick
        .due
        .compare_exchange(Stamp::NONE, stamp, Ordering::AcqRel, Ordering::Acquire)
    {
        Ok(_) => {
            counters.handed_over();
            true
        }
        Err(_) => {
            // The previous tick's callback has not started: drop this one (no backlog).
            tick.drop_ticks(1);
            counters.dropped_worker_busy();
            false
        }
    }
}

/// Starts the timer's new arming, whose first deadline is stamped `first` (`None`:
/// disarmed): records the floor and drops the previous arming's tick still waiting in
/// `due`, if any. Called under the scheduler lock, in the lock section that re-arms the
/// heap: every tick popped before was stored before (see [`hand_over`]), so none of the old
/// arming is left to run, and every tick stored after is of the new one.
pub(super) fn start_arming<K: GridTime>(
    heap: &TimerHeap<TimerTick, K>,
    id: TimerId,
    first: Option<Stamp>,
) {
    if let Some(slot) = heap.slot(id) {
        let tick = &slot.target;
        tick.floor
            .store(first.unwrap_or(Stamp::DISARMED), Ordering::Release);
        tick.due.store(Stamp::NONE, Ordering::Release);
    }
}

#[cfg(all(test, not(rclev_loom)))]
mod tests {
    use super::*;
    use crate::runtime::mailbox::Mailbox;

    fn tick_with_floor(floor: Stamp) -> TimerTick {
        let tick = TimerTick::new(EntityDispatch::unbound(Arc::new(Mailbox::default())));
        tick.floor.store(floor, Ordering::Release);
        tick
    }

    fn wall(ns: u64) -> Stamp {
        Stamp::wall(Duration::from_nanos(ns))
    }

    fn sim(ns: i64) -> Stamp {
        Stamp::sim(SimTime(ns))
    }

    #[test]
    fn a_stamp_of_the_other_time_base_is_never_current() {
        let on_wall = tick_with_floor(wall(1_000));
        assert!(on_wall.is_current(wall(1_000)) && on_wall.is_current(wall(5_000)));
        assert!(!on_wall.is_current(wall(999)), "before the floor");
        assert!(
            !on_wall.is_current(sim(2_000)),
            "a sim tick after a switch to the wall"
        );
        let simulated = tick_with_floor(sim(1_000));
        assert!(simulated.is_current(sim(1_000)) && simulated.is_current(sim(9_000)));
        assert!(
            !simulated.is_current(wall(5_000_000_000)),
            "a wall tick after a switch to sim"
        );
        assert!(!simulated.is_current(sim(999)));
        let disarmed = tick_with_floor(Stamp::DISARMED);
        assert!(!disarmed.is_current(sim(i64::MAX >> 2)) && !disarmed.is_current(wall(0)));
    }

    #[test]
    fn stamps_keep_their_deadlines_and_sentinels_apart() {
        assert!(Stamp::NONE < wall(0) && wall(0).nanos() == 0);
        // The wall saturates below the sim marker, however far the deadline.
        let far = Stamp::wall(Duration::MAX);
        assert!(!far.is_sim() && far < sim(0) && far < Stamp::DISARMED);
        assert_eq!(sim(1_234).nanos(), 1_234);
        assert_eq!(sim(i64::MAX).nanos(), i64::MAX as u64);
        assert!(sim(-5) == sim(0) && sim(i64::MAX) < Stamp::DISARMED);
        assert_eq!(wall(3_500).nanos_since(wall(1_000)), 2_500);
        assert_eq!(wall(1_000).nanos_since(Stamp::DISARMED), 0);
    }
}
