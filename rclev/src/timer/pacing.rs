//! How a worker paces a timer it pulls ticks of (see "Fast timers" in `mod.rs`), as a policy
//! without I/O: given the deadline and the time, [`Pacing::alarm_time`] says when the worker's
//! alarm should go off; given how early the alarm brought a tick, [`Pacing::arrived`] adapts
//! the margin. `execute.rs` reads the clock and acts on them; the tests below give them made-up
//! instants.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The shortest wait worth the worker's alarm: below it, arming the kernel timer and waking
/// cost about as much as busy-waiting.
pub(super) const MIN_SLEEP: Duration = Duration::from_micros(10);

/// The alarm margin's ceiling: a worker woken this late by its alarm is stalled, not slow,
/// and a larger margin would only busy-wait more.
pub(super) const MAX_ALARM_MARGIN: Duration = Duration::from_micros(100);

/// The margin a timer starts with: about a wake-up's latency here; adapted from the first tick.
const INITIAL_MARGIN: Duration = Duration::from_micros(15);

/// The margin's step per tick, either way.
const STEP_NS: i64 = 500;

/// How the worker paces a timer it pulls ticks of: whether it does, and how early its alarm
/// must go off to reach the deadline in time. Only the worker running the timer reads or
/// writes these (relaxed atomics, as `TimerCore` is shared).
pub(super) struct Pacing {
    /// The last tick was pulled by the worker (arrivals then need no spinning worker).
    pub(super) pulled: AtomicBool,
    /// The tick now waiting was deferred to the worker's alarm.
    pub(super) on_alarm: AtomicBool,
    /// How long before the deadline the alarm is set (ns), adapted to how early the worker
    /// actually runs after it.
    margin_ns: AtomicU64,
}

impl Default for Pacing {
    fn default() -> Self {
        Self {
            pulled: AtomicBool::new(false),
            on_alarm: AtomicBool::new(false),
            margin_ns: AtomicU64::new(INITIAL_MARGIN.as_nanos() as u64),
        }
    }
}

impl Pacing {
    /// When the alarm should wake the worker for a tick due at `deadline`, seen at `now`: the
    /// margin before the deadline. A wake-up less than [`MIN_SLEEP`] away is not worth a sleep:
    /// `None` (busy-wait instead), unless `always`, then `now` (run through the alarm at once,
    /// to keep deadline order with ticks waiting there).
    pub(super) fn alarm_time(
        &self,
        deadline: Instant,
        now: Instant,
        always: bool,
    ) -> Option<Instant> {
        let margin = Duration::from_nanos(self.margin_ns.load(Ordering::Relaxed));
        let wake = deadline.checked_sub(margin).unwrap_or(now);
        if wake >= now + MIN_SLEEP {
            Some(wake)
        } else {
            always.then_some(now)
        }
    }

    /// Adapts the margin to a tick that the alarm brought `early_ns` before its
    /// deadline (negative: after it), by a fixed step either way: the margin settles where half
    /// the ticks arrive in time (median lateness ~0) rather than where nearly all do. Covering
    /// the tail of the wake-up latency would make every tick busy-wait it, and on a busy host a
    /// thread that burns more CPU waits longer for one whenever it wakes, which costs more
    /// ticks than it saves (docs/performance.md, "Timers on a busy host"). Never above a quarter
    /// of the period, so a fast timer still sleeps most of each period (half a period cost
    /// 2–13 % of the ticks at 50 kHz on a busy host, side by side).
    pub(super) fn arrived(&self, early_ns: i64, period: Duration) {
        let margin = self.margin_ns.load(Ordering::Relaxed) as i64;
        let cap = (period.as_nanos() / 4).min(MAX_ALARM_MARGIN.as_nanos()) as i64;
        let next = if early_ns < 1_000 {
            margin + STEP_NS
        } else {
            margin - STEP_NS
        };
        self.margin_ns
            .store(next.clamp(0, cap) as u64, Ordering::Relaxed);
    }

    /// The current margin.
    #[cfg(test)]
    fn margin(&self) -> Duration {
        Duration::from_nanos(self.margin_ns.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: Duration = Duration::from_micros(1);

    #[test]
    fn the_alarm_goes_off_the_margin_before_the_deadline() {
        let pacing = Pacing::default();
        let t0 = Instant::now();
        // 1 ms ahead: wake 15 µs (the initial margin) early.
        assert_eq!(
            pacing.alarm_time(t0 + 1000 * US, t0, false),
            Some(t0 + 985 * US)
        );
        // 20 µs ahead: the wake-up would be 5 µs away, under MIN_SLEEP: busy-wait...
        assert_eq!(pacing.alarm_time(t0 + 20 * US, t0, false), None);
        // ...unless the tick must go through the alarm (deadline order): at once.
        assert_eq!(pacing.alarm_time(t0 + 20 * US, t0, true), Some(t0));
        // Exactly MIN_SLEEP away is worth it.
        assert_eq!(
            pacing.alarm_time(t0 + 25 * US, t0, false),
            Some(t0 + 10 * US)
        );
    }

    #[test]
    fn the_margin_settles_where_half_the_ticks_come_in_time() {
        let pacing = Pacing::default();
        let period = 100 * US; // a 10 kHz timer: the cap is 25 µs
                               // Late (or under 1 µs early) ticks grow it by 0.5 µs, early ones shrink it.
        pacing.arrived(-3_000, period);
        assert_eq!(pacing.margin(), Duration::from_nanos(15_500));
        pacing.arrived(4_000, period);
        pacing.arrived(4_000, period);
        assert_eq!(pacing.margin(), Duration::from_nanos(14_500));
        // Capped at a quarter of the period, and at MAX_ALARM_MARGIN for slow timers.
        for _ in 0..100 {
            pacing.arrived(0, period);
        }
        assert_eq!(pacing.margin(), 25 * US);
        for _ in 0..400 {
            pacing.arrived(0, Duration::from_millis(10));
        }
        assert_eq!(pacing.margin(), MAX_ALARM_MARGIN);
        // Never below zero.
        for _ in 0..400 {
            pacing.arrived(50_000, period);
        }
        assert_eq!(pacing.margin(), Duration::ZERO);
        let t0 = Instant::now();
        assert_eq!(
            pacing.alarm_time(t0 + 100 * US, t0, false),
            Some(t0 + 100 * US)
        );
    }
}
