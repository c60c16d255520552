//! What a timer calls: the user's callback ([`TimerCallback`], made from closures by
//! [`IntoTimerCallback`]) and what it is told ([`TimerInfo`]).

use std::future::Future;
use std::time::Duration;

use crate::clock::Time;
use crate::runtime::callback::Callback;

/// What a timer callback is told about its call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimerInfo {
    /// When this call was due (a point on the timer's grid), on the timer's clock.
    pub expected_call_time: Time,
    /// When the callback actually started, on the timer's clock.
    pub actual_call_time: Time,
    /// Grid points between the previous call and this one that got no call: their ticks were
    /// dropped because they were late (the callback or the system could not keep up). So
    /// `expected_call_time` lies `missed_ticks + 1` periods after the previous call's; for the
    /// first call after (re-)arming, it counts the grid points skipped before it.
    pub missed_ticks: u64,
}

impl TimerInfo {
    /// How late the call started.
    pub fn lateness(&self) -> Duration {
        self.actual_call_time
            .duration_since(self.expected_call_time)
            .unwrap_or_default()
    }
}

/// A timer callback, made from a closure by [`IntoTimerCallback`].
pub struct TimerCallback(pub(crate) Callback<TimerInfo>);

/// Closures usable as timer callbacks: `FnMut()` or `FnMut(TimerInfo)`.
pub trait IntoTimerCallback<Args> {
    /// Converts.
    fn into_timer_callback(self) -> TimerCallback;
}

impl<F: FnMut() + Send + 'static> IntoTimerCallback<()> for F {
    fn into_timer_callback(mut self) -> TimerCallback {
        TimerCallback(Callback::plain(move |_info: TimerInfo| self()))
    }
}

impl<F: FnMut(TimerInfo) + Send + 'static> IntoTimerCallback<TimerInfo> for F {
    fn into_timer_callback(self) -> TimerCallback {
        TimerCallback(Callback::plain(self))
    }
}

impl TimerCallback {
    /// A callback that gets the worker's payload.
    pub(crate) fn with_payload<P: 'static>(
        f: impl FnMut(&mut P, TimerInfo) + Send + 'static,
    ) -> Self {
        Self(Callback::with_payload(f))
    }
    /// An async callback.
    pub(crate) fn asynchronous<Fut: Future<Output = ()> + Send + 'static>(
        f: impl FnMut(TimerInfo) -> Fut + Send + 'static,
    ) -> Self {
        Self(Callback::asynchronous(f))
    }
}
