//! Timers, driven by the executor's shared timer scheduler.
//!
//! `node.create_timer_repeating(period, callback)` registers a timer with the scheduler thread,
//! which hands each tick to the timer's worker through the same coalescing `EntityDispatch` as
//! every other entity. The scheduler never waits for a callback: if the callback of the
//! previous tick has not started when the next one is due, the new tick is dropped and
//! counted ([`TimerInfo::missed_ticks`]). Deadlines advance on the grid
//! `start + k·period`, so a timer that keeps up never drifts, and a stalled one skips to the
//! next grid point instead of bursting.
//!
//! # A tick's path
//!
//! From deadline to callback, a tick crosses 11 files in 16 hops (a hop: a call into another
//! file), with one thread switch; `docs/architecture.md`, "A tick's path", counts them.
//!
//! 1. `timer/scheduler.rs`: the scheduler thread pops the due timer from its heap
//!    (`run_while`, `collect_due`, `heap.rs`) and, still under its lock, `hand_over`
//!    (`entry.rs`, with the per-timer state and its rules) puts the tick's stamp in the
//!    timer's `due` slot; then it drops the lock and notifies the timer's dispatch, which
//!    queues the timer in its worker's mailbox (`runtime/dispatch.rs`, `runtime/mailbox.rs`)
//!    unless an entry for it is already queued. Simulated- and virtual-time ticks join here,
//!    from `sim_advance` (`sim.rs`).
//! 2. `runtime/worker.rs`: the worker loop takes the entry (`run_batch`), orders ticks by
//!    deadline (`runtime/policy.rs`), `begin`s it and calls the timer's `Executable::execute`
//!    (`runtime/executable.rs`).
//! 3. `timer/execute.rs`: `TimerCore::execute` takes the tick if it is still current, waits
//!    out the last microseconds to its deadline, counts the missed grid points and starts the
//!    callback (`ExecContext::start`, through the start fence `runtime/fence.rs`, and
//!    `Callback::call` in `runtime/callback.rs`).
//!
//! # Fast timers: paced by their worker
//!
//! A tick path of two threads needs two wake-ups per tick, and on a busy host both threads
//! must find a CPU in time. So a timer of 500 Hz or faster leaves the scheduler thread's path
//! after its first tick: right after running a tick, the worker pulls the timer's next tick
//! from the same heap (`SchedulerCore::pull`, under the same lock and floor rules), and
//! sleeps to its deadline itself on its alarm (`executor/alarm.rs`: on a thread of its own, a
//! timed park woken early by any new work; else a timerfd in its runtime's reactor). The
//! scheduler thread then wakes once per watchdog interval (100 ms) to see that the worker
//! keeps pulling, and takes the timer back if it does not. The grid, the drop-late rule, the
//! coalescing `due` slot and the re-arm rules are unchanged: a pulled tick is popped and
//! stored under the scheduler lock exactly as a delivered one.
//!
//! The other files: `mod.rs` (this one) holds the user's handle, `callback.rs` the callback
//! types, `options.rs` the options, `core.rs` the timer's state, its creation, arming and mode
//! changes, `heap.rs` the scheduler's lock-free ordering, and `stats.rs` the tick path's
//! counters ([`TimerStats`]).

use std::sync::Arc;
use std::time::Duration;

mod callback;
mod core;
mod entry;
mod execute;
mod heap;
mod options;
mod pacing;
mod scheduler;
mod sim;
mod stats;

#[cfg(all(test, rclev_loom))]
mod loom_tests;

pub use options::{IntoTimerOptions, TimerOptions, TimerPrecision, MAX_PERIOD};
pub use stats::TimerStats;

pub(crate) use self::core::{TimerHost, TimerKind, TimerSite};
pub use callback::{IntoTimerCallback, TimerCallback, TimerInfo};
pub use scheduler::set_thread_timer_slack;
pub(crate) use scheduler::TimerScheduler;

use self::core::{Lane, TimerCore, MODE_INERT, MODE_ONESHOT, MODE_REPEATING};
use crate::base::sync::{model_lock as lock, Ordering};
use crate::clock::Clock;

/// A timer. Dropping the last handle removes it from the scheduler at once: once the drop
/// has returned, its callback never starts again, even if a tick was being handed to it right
/// then (the same holds after [`cancel`](Self::cancel), [`reset`](Self::reset) for the previous
/// schedule, and the `set_*` mode changes for the previous callback). A callback already running
/// is not interrupted.
///
/// ```
/// use std::time::Duration;
///
/// let executor = rclev::Context::default().create_basic_executor();
/// let node = executor.create_node("demo")?;
/// let timer = node.create_timer_repeating(Duration::from_secs(60), || println!("a minute"))?;
/// assert_eq!(timer.period(), Duration::from_secs(60));
/// assert!(timer.time_until_next_call().unwrap() <= Duration::from_secs(60));
/// timer.cancel();
/// assert!(timer.is_canceled());
/// assert_eq!(timer.time_until_next_call(), None);
/// timer.reset(); // armed again, a period from now
/// assert!(!timer.is_canceled());
/// timer.set_oneshot(|| println!("once, at the next deadline"));
/// assert!(timer.is_oneshot());
/// # Ok::<(), rclev::Error>(())
/// ```
pub struct TimerState {
    pub(super) core: Arc<TimerCore>,
}

/// A shared handle to a timer.
pub type Timer = crate::EntityHandle<TimerState>;

/// Creates a timer on `host`'s worker.
pub(crate) fn create_timer<H: TimerHost>(
    host: &Arc<H>,
    options: impl IntoTimerOptions,
    kind: TimerKind,
) -> crate::Result<Timer> {
    let core = self::core::create(host, options, kind)?;
    Ok(crate::EntityHandle::new(TimerState { core }))
}

impl TimerState {
    /// Restarts the period from now (re-arming a cancelled or spent timer).
    pub fn reset(&self) {
        let t = &self.core;
        t.stop(|_| {
            t.canceled.store(false, Ordering::Release);
            t.arm_in(Some(t.period), None);
        });
    }

    /// Stops the timer until [`reset`](Self::reset). A tick already handed to the worker is
    /// dropped too.
    pub fn cancel(&self) {
        let t = &self.core;
        t.stop(|_| {
            t.canceled.store(true, Ordering::SeqCst);
            t.arm_in(None, None);
        });
    }

    /// Whether the timer is cancelled.
    pub fn is_canceled(&self) -> bool {
        self.core.is_canceled()
    }

    /// The period.
    pub fn period(&self) -> Duration {
        self.core.period
    }

    /// The clock the timer follows.
    pub fn clock(&self) -> &Clock {
        &self.core.clock
    }

    /// Time until the next tick on the timer's clock; zero if one is due; `None` if cancelled
    /// or a spent one-shot.
    pub fn time_until_next_call(&self) -> Option<Duration> {
        self.core.time_until_next_call()
    }

    /// Time on the timer's clock since the last callback started (or since the timer was
    /// created, reset or moved between time bases).
    pub fn time_since_last_call(&self) -> Duration {
        let t = &self.core;
        let elapsed = t.clock.now().nanos - t.last_call.load(Ordering::Acquire);
        Duration::from_nanos(elapsed.max(0) as u64)
    }

    /// Ticks dropped over the timer's life (late or coalesced).
    pub fn dropped_ticks(&self) -> u64 {
        self.core.tick.dropped_total.load(Ordering::Relaxed)
    }

    /// Whether this is a one-shot timer.
    pub fn is_oneshot(&self) -> bool {
        self.core.is_oneshot()
    }

    /// Whether this timer is inert (keeps its schedule but calls nothing).
    pub fn is_inert(&self) -> bool {
        self.core.mode.load(Ordering::Acquire) == MODE_INERT
    }

    /// Makes this a repeating timer with `callback`; a spent one-shot is re-armed.
    ///
    /// Mode changes keep the timer's next deadline (re-armed at it, give or take the moment
    /// between two clock reads) and take effect from it: that deadline's tick runs the new
    /// callback, and every tick handed over under the old mode (a worker may hold one, pulled
    /// early) is dropped, never run by the new callback. They may be called from the timer's
    /// own callback.
    pub fn set_repeating<Args>(&self, callback: impl IntoTimerCallback<Args>) {
        self.core
            .change(MODE_REPEATING, Some(callback.into_timer_callback().0));
    }

    /// Makes this a one-shot timer with `callback`: it fires at its next deadline, then stops.
    pub fn set_oneshot<Args>(&self, callback: impl IntoTimerCallback<Args>) {
        self.core
            .change(MODE_ONESHOT, Some(callback.into_timer_callback().0));
    }

    /// Makes this timer inert: it keeps its schedule but calls nothing.
    pub fn set_inert(&self) {
        self.core.change(MODE_INERT, None);
    }
}

impl Drop for TimerState {
    fn drop(&mut self) {
        let t = &self.core;
        // Out of the scheduler, so it can no longer pick this timer up; then a tick the worker
        // holds right now (it may be executing this very timer) is stopped.
        t.stop(|_| {
            let lane = lock(&t.lane);
            t.dropped.store(true, Ordering::SeqCst);
            match *lane {
                Lane::Wall(id) => t.sched.remove(id),
                Lane::Sim(id) => t.sched.sim_remove(t.sim_lane(), id),
            }
        });
    }
}

impl std::fmt::Debug for TimerState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Timer")
            .field("period", &self.core.period)
            .field("clock", &self.core.clock.clock_type())
            .field("canceled", &self.is_canceled())
            .finish()
    }
}
