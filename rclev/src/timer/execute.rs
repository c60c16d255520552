//! The worker's side of a timer, the last step of a tick's path (see the module doc of
//! `timer`): taking the tick the scheduler handed over and calling back.

use std::time::{Duration, Instant};

use super::core::TimerCore;
use super::entry::Stamp;
use super::TimerInfo;
use crate::clock::{ClockType, Time};
use crate::executor::dispatch::{EntityDispatch, ExecContext, Executable};
use crate::sync::{model_lock as lock, Ordering};

/// The worker runs this when the timer's mailbox entry comes up.
impl Executable for TimerCore {
    fn execute(&self, cx: &mut ExecContext<'_>) {
        // Noted before the tick is taken: a stop after this point ends the tick even if
        // `take_tick` still saw the old state.
        let stops = self.stops.load(Ordering::SeqCst);
        let (info, mut callback, version) = {
            let mut slot = lock(&self.callback);
            let Some((mut info, stamp)) = self.take_tick() else {
                return;
            };
            info.missed_ticks = self.missed_before(stamp, slot.last_stamp);
            slot.last_stamp = stamp;
            (info, slot.callback.take(), slot.version)
        };
        self.last_call
            .store(info.actual_call_time.nanos, Ordering::Release);
        let Some(cb) = callback.as_mut() else {
            return;
        };
        // A drop raised the floor (under the scheduler lock) before it bumped `stops`: a tick
        // noted after the bump was refused by `take_tick`, one noted before is refused here.
        let not_stopped = || self.stops.load(Ordering::SeqCst) == stops;
        let _ = cb.call(
            cx,
            "timer",
            &self.worker.host,
            info,
            Some(&self.gate),
            not_stopped,
        );
        let mut slot = lock(&self.callback);
        if slot.version == version {
            slot.callback = callback;
        }
    }

    fn dispatch(&self) -> &EntityDispatch {
        &self.tick.dispatch
    }

    fn arrivals_need_spin(&self) -> bool {
        // Sim ticks come with /clock, whose subscription decides; wall ticks need the worker
        // spinning only when the hand-off lead is pinned at its cap, i.e. cannot grow to cover
        // the worker's wake-up (periods of a few tens of µs).
        !self.tick.sim.load(Ordering::Relaxed) && self.sched.lead_is_capped()
    }
}

impl TimerCore {
    /// Wall instant `at` as a time of the timer's clock, whose time at `now` is `clock_now`.
    fn wall_time(&self, at: Instant, now: Instant, clock_now: Time) -> Time {
        if clock_now.clock_type == ClockType::SteadyTime {
            // `Instant` reads CLOCK_MONOTONIC too: map through the fixed epoch, so grid points
            // stay exact multiples of the period apart.
            return Time {
                nanos: self.sched.epoch_steady_ns
                    + at.saturating_duration_since(self.sched.epoch).as_nanos() as i64,
                clock_type: ClockType::SteadyTime,
            };
        }
        let back = now.saturating_duration_since(at).as_nanos() as i64;
        let ahead = at.saturating_duration_since(now).as_nanos() as i64;
        Time {
            nanos: clock_now.nanos - back + ahead,
            clock_type: clock_now.clock_type,
        }
    }

    /// How many grid points of the current arming lie between the tick stamped `previous` and
    /// the one stamped `stamp` (both current), or before `stamp` when `previous` belongs to an
    /// earlier arming. Computed from the stamps rather than counted as ticks are dropped, so a
    /// tick dropped while this one waited (a later grid point) is reported by the next call,
    /// not this one.
    fn missed_before(&self, stamp: Stamp, previous: Stamp) -> u64 {
        let period = self.period.as_nanos() as u64;
        if period == 0 {
            return 0;
        }
        if previous != Stamp::NONE && previous < stamp && self.tick.is_current(previous) {
            (stamp.nanos_since(previous) / period).saturating_sub(1)
        } else {
            stamp.nanos_since(self.tick.floor.load(Ordering::Acquire)) / period
        }
    }

    /// Takes the handed-over tick and works out its call times (all but `missed_ticks`); `None`
    /// if there is none. Returns the tick's stamp too.
    fn take_tick(&self) -> Option<(TimerInfo, Stamp)> {
        let stamp = self.tick.due.swap(Stamp::NONE, Ordering::AcqRel);
        // A drop removed the timer, which raised the floor: its ticks are no longer current.
        if stamp == Stamp::NONE || self.is_canceled() || !self.tick.is_current(stamp) {
            return None;
        }
        if stamp.is_sim() {
            // Simulated time: handed over when `/clock` passed the deadline, never early.
            let info = TimerInfo {
                expected_call_time: Time {
                    nanos: stamp.nanos() as i64,
                    clock_type: ClockType::RosTime,
                },
                actual_call_time: self.clock.now(),
                missed_ticks: 0,
            };
            return Some((info, stamp));
        }
        let expected = self.sched.epoch + Duration::from_nanos(stamp.nanos());
        // Ticks are handed over up to the hand-off lead early; never call back before the
        // deadline.
        let mut now = Instant::now();
        let early = expected.saturating_duration_since(now).as_nanos() as i64
            - now.saturating_duration_since(expected).as_nanos() as i64;
        self.sched.worker_arrived(early);
        while now < expected {
            std::hint::spin_loop();
            now = Instant::now();
        }
        let clock_now = if self.clock.clock_type() == ClockType::SteadyTime {
            Time {
                nanos: 0,
                clock_type: ClockType::SteadyTime,
            }
        } else {
            self.clock.now()
        };
        let info = TimerInfo {
            expected_call_time: self.wall_time(expected, now, clock_now),
            actual_call_time: self.wall_time(now, now, clock_now),
            missed_ticks: 0,
        };
        Some((info, stamp))
    }
}
