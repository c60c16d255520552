//! The worker's side of a timer, the last step of a tick's path (see the module doc of
//! `timer`): taking the tick the scheduler handed over and calling back.

use std::time::Instant;

use super::core::TimerCore;
use super::entry::Stamp;
use super::TimerInfo;
use crate::clock::{ClockType, Time};

use crate::base::sync::{model_lock as lock, Ordering};
use crate::runtime::executable::{ExecContext, Executable};

/// The worker runs this when the timer's mailbox entry comes up.
impl Executable for TimerCore {
    fn execute(&self, cx: &mut ExecContext<'_>) {
        let (stamp, stops, missed_ticks, mut callback, version) = {
            let mut slot = lock(&self.callback);
            // Noted with the take, as one step under the lock in which every stop re-arms (or
            // removes) and bumps `stops` (`TimerCore::stop`): a stop after this take ends the
            // tick, and the stop that armed the tick's own schedule does not.
            let stops = self.stops.load(Ordering::SeqCst);
            let Some(stamp) = self.take_tick(cx) else {
                return;
            };
            let missed_ticks = self.missed_before(stamp, slot.last_stamp);
            slot.last_stamp = stamp;
            (
                stamp,
                stops,
                missed_ticks,
                slot.callback.take(),
                slot.version,
            )
        };
        // Outside the lock: a stop does not wait for the busy-wait to the deadline.
        let info = TimerInfo {
            missed_ticks,
            ..self.call_times(stamp)
        };
        self.last_call
            .store(info.actual_call_time.nanos, Ordering::Release);
        // Inert (no callback): no call.
        if let Some(cb) = callback.as_mut() {
            // A stop after the take bumped `stops` (before or during the busy-wait, or while
            // the fence is raised): the call is refused, or the stop waits for it in the gate.
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
        // Called or inert, a paced timer keeps its pace (an inert one's next tick would
        // otherwise wait for the scheduler's watchdog).
        if cx.can_sleep() {
            self.pull_next_tick(cx);
        }
    }

    fn dispatch(&self) -> &dyn crate::runtime::executable::Coalescing {
        &*self.tick.dispatch
    }

    fn pending_deadline(&self) -> Option<Instant> {
        self.waiting_wall_deadline()
    }

    fn arrivals_need_spin(&self) -> bool {
        // Sim ticks come with /clock, whose subscription decides; ticks the worker pulls come
        // on its alarm. Other wall ticks need the worker spinning only when the hand-off lead
        // is pinned at its cap, i.e. cannot grow to cover the worker's wake-up (periods of a
        // few tens of µs on a worker without an alarm).
        !self.tick.sim.load(Ordering::Relaxed)
            && !self.pacing.pulled.load(Ordering::Relaxed)
            && self.sched.lead_is_capped()
    }
}

impl TimerCore {
    /// Wall instant `at` as a time of the timer's clock, whose time at `now` is `clock_now`.
    fn wall_time(&self, at: Instant, now: Instant, clock_now: Time) -> Time {
        if clock_now.clock_type == ClockType::SteadyTime {
            // `Instant` reads CLOCK_MONOTONIC too: map through the fixed epoch, so grid points
            // stay exact multiples of the period apart.
            return Time {
                nanos: self.sched.epoch.nanos_at(at),
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

    /// Pacing: right after a tick ran, takes the timer's next tick from the scheduler's heap
    /// if it is due soon (`SchedulerCore::pull`) and sets the worker's alarm for it; a tick
    /// too close for the alarm is queued at once (and busy-waited). One-shot, simulated-time
    /// and slow timers are left to the scheduler thread, and so is a timer with a tick still
    /// waiting (it runs next, and pulls after it).
    fn pull_next_tick(&self, cx: &mut ExecContext<'_>) {
        let deadline = if self.mode.load(Ordering::Acquire) == super::core::MODE_ONESHOT
            || self.is_canceled()
            || self.tick.due.load(Ordering::Acquire) != Stamp::NONE
        {
            None
        } else {
            // Lock order: `lane`, then the scheduler's state (see `CallbackSlot`).
            let lane = lock(&self.lane);
            match *lane {
                // A dropped timer's slot may already hold a new timer (the drop removes it
                // under this lock, after setting `dropped`): pulling would take that timer's
                // tick and never announce it.
                _ if self.dropped.load(Ordering::SeqCst) => None,
                super::core::Lane::Wall(id) => self.sched.pull(id, Instant::now()),
                super::core::Lane::Sim(_) => None,
            }
        };
        self.pacing
            .pulled
            .store(deadline.is_some(), Ordering::Relaxed);
        if let Some(deadline) = deadline {
            // Through the alarm even when too close to sleep (then due at once): it orders
            // the ticks waiting there by deadline, which the mailbox's queue would not.
            if !self.sleep_until_due(deadline, cx, true) {
                self.tick.dispatch.notify();
            }
        }
    }

    /// If the waiting tick is a wall tick of a timer the worker paces, due later than the
    /// alarm margin plus `MIN_SLEEP` (`pacing.rs`), leaves it in `due` and has the worker's alarm run the
    /// timer again shortly before its deadline. Whether it did. Ticks the scheduler thread
    /// handed over (a timer's first, one-shots, slow timers) are busy-waited as they come, at
    /// most the hand-off lead: that keeps them in the scheduler's deadline order. Either kind
    /// waits behind a tick of an earlier deadline already waiting on the alarm.
    fn defer_to_alarm(&self, cx: &mut ExecContext<'_>) -> bool {
        if !cx.can_sleep() {
            return false;
        }
        let Some(deadline) = self.waiting_wall_deadline() else {
            return false;
        };
        if self.pacing.pulled.load(Ordering::Relaxed) {
            self.sleep_until_due(deadline, cx, false)
        } else {
            cx.earlier_deadline_waiting(deadline) && cx.sleep_until(Instant::now(), deadline)
        }
    }

    /// Sets the worker's alarm for a tick due at `deadline`, the margin before it, unless
    /// that is less than `MIN_SLEEP` (`pacing.rs`) away. Whether it did. A tick too close to sleep for
    /// still goes through the alarm, due at once, when `always` or when a tick of an earlier
    /// deadline waits there: busy-waiting for it here would make that one late, and the alarm
    /// runs them in deadline order.
    fn sleep_until_due(&self, deadline: Instant, cx: &mut ExecContext<'_>, always: bool) -> bool {
        let always = always || cx.earlier_deadline_waiting(deadline);
        let Some(wake) = self.pacing.alarm_time(deadline, Instant::now(), always) else {
            return false;
        };
        if !cx.sleep_until(wake, deadline) {
            return false;
        }
        self.pacing.on_alarm.store(true, Ordering::Relaxed);
        self.sched.counters.worker_slept();
        true
    }

    /// The alarm brought a tick `early_ns` before its deadline: adapt the margin
    /// (`Pacing::arrived`, `pacing.rs`).
    fn alarm_arrived(&self, early_ns: i64) {
        self.pacing.arrived(early_ns, self.period);
    }

    /// Takes the handed-over tick (called under the `callback` lock); `None` if there is none,
    /// if it is not current, or if it was left waiting on the worker's alarm.
    fn take_tick(&self, cx: &mut ExecContext<'_>) -> Option<Stamp> {
        if self.defer_to_alarm(cx) {
            return None;
        }
        let stamp = self.tick.due.swap(Stamp::NONE, Ordering::AcqRel);
        // `due` holds only ticks of the current arming (`entry.rs`); a lane switch or a
        // backward `/clock` jump, which re-arm without the callback lock, may have started a
        // new one since the swap.
        if stamp == Stamp::NONE || self.is_canceled() || !self.tick.is_current(stamp) {
            return None;
        }
        Some(stamp)
    }

    /// The call times of the tick stamped `stamp` (all but `missed_ticks`): a wall tick is
    /// busy-waited to its deadline first, as it may come up to the hand-off lead early.
    fn call_times(&self, stamp: Stamp) -> TimerInfo {
        if stamp.is_sim() {
            // Simulated time: handed over when `/clock` (or a virtual-time step) passed the
            // deadline, never early. The timer's clock type (a virtual timeline serves all).
            return TimerInfo {
                expected_call_time: Time {
                    nanos: stamp.nanos() as i64,
                    clock_type: self.clock.clock_type(),
                },
                actual_call_time: self.clock.now(),
                missed_ticks: 0,
            };
        }
        let expected = self.sched.wall_deadline(stamp);
        // Ticks are handed over up to the hand-off lead early; never call back before the
        // deadline.
        let mut now = Instant::now();
        let early = expected.saturating_duration_since(now).as_nanos() as i64
            - now.saturating_duration_since(expected).as_nanos() as i64;
        if self.pacing.on_alarm.swap(false, Ordering::Relaxed) {
            // Brought by the alarm: its margin adapts, not the scheduler's hand-off lead.
            self.alarm_arrived(early);
            self.sched.counters.worker_arrived(early);
        } else {
            self.sched.worker_arrived(early);
        }
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
        TimerInfo {
            expected_call_time: self.wall_time(expected, now, clock_now),
            actual_call_time: self.wall_time(now, now, clock_now),
            missed_ticks: 0,
        }
    }
}
