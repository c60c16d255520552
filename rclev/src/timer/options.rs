//! What a timer is created with: its period and clock ([`TimerOptions`], built from a bare
//! `Duration` by [`IntoTimerOptions`]), and the executor-wide [`TimerPrecision`].

use std::time::Duration;

use crate::clock::ClockType;

/// The scheduler's precision/CPU trade-offs. The default aims at tick lateness well under
/// 10 µs for a few percent of a core per kHz of ticks; [`TimerPrecision::low_cpu`] gives up
/// busy-waiting for lateness of the order of the wake-up latencies (~50 µs here).
///
/// These knobs shape the scheduler thread's hand-off. Timers of 500 Hz and faster are paced
/// by their worker after the first tick (see the `timer` module): the worker sleeps to each
/// deadline itself, waking a margin early that adapts to the median wake-up latency, at most a
/// quarter of the period, and busy-waits the rest; `timer_slack` applies to the worker's
/// thread too when it is one of the executor's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimerPrecision {
    /// Timer slack the scheduler thread asks the kernel for (`PR_SET_TIMERSLACK`). Linux's
    /// default of 50 µs makes every timed wait up to 50 µs late. Default 1 ns.
    pub timer_slack: Duration,
    /// At most this long before its deadline a tick is handed to the worker, which busy-waits
    /// to the deadline before calling back (a callback never starts early). This hides the
    /// scheduler thread's wake-up overshoot and the worker's wake-up latency (together
    /// ~20–60 µs here). Within this cap, and half the shortest timer period, the lead adapts to
    /// how early workers actually arrive, so the busy-wait settles at a few µs per tick.
    /// Zero disables early hand-off. Default 70 µs.
    pub handoff_lead: Duration,
}

impl Default for TimerPrecision {
    fn default() -> Self {
        Self {
            timer_slack: Duration::from_nanos(1),
            handoff_lead: Duration::from_micros(70),
        }
    }
}

impl TimerPrecision {
    /// No busy-waiting: the cheapest setting.
    pub fn low_cpu() -> Self {
        Self {
            timer_slack: Duration::from_nanos(1),
            handoff_lead: Duration::ZERO,
        }
    }
}

/// Which clock a timer follows, and its period.
///
/// ```
/// use rclev::{IntoTimerOptions, ClockType};
/// use std::time::Duration;
/// let opts = Duration::from_millis(10).node_time();
/// assert_eq!(opts.clock, ClockType::RosTime);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimerOptions {
    /// The period (for a one-shot: the delay).
    pub period: Duration,
    /// The clock whose time the timer reports. Default: steady.
    pub clock: ClockType,
}

impl TimerOptions {
    /// Options for `period` on the steady clock.
    pub fn new(period: Duration) -> Self {
        Self {
            period,
            clock: ClockType::SteadyTime,
        }
    }
}

/// Conversion into [`TimerOptions`]: a bare `Duration` or options, with clock choices chained.
pub trait IntoTimerOptions: Sized {
    /// Converts.
    fn into_timer_options(self) -> TimerOptions;
    /// Use the steady clock (the default).
    fn steady_time(self) -> TimerOptions {
        self.clock(ClockType::SteadyTime)
    }
    /// Use the system clock.
    fn system_time(self) -> TimerOptions {
        self.clock(ClockType::SystemTime)
    }
    /// Use the node's ROS time.
    fn node_time(self) -> TimerOptions {
        self.clock(ClockType::RosTime)
    }
    /// Use this clock type.
    fn clock(self, clock: ClockType) -> TimerOptions {
        let mut o = self.into_timer_options();
        o.clock = clock;
        o
    }
}

impl IntoTimerOptions for TimerOptions {
    fn into_timer_options(self) -> TimerOptions {
        self
    }
}

impl IntoTimerOptions for Duration {
    fn into_timer_options(self) -> TimerOptions {
        TimerOptions::new(self)
    }
}

/// The longest period (or one-shot delay) a timer accepts: `i64::MAX` nanoseconds, as in rcl.
pub const MAX_PERIOD: Duration = Duration::from_nanos(i64::MAX as u64);
