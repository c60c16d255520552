//! Timers, driven by the executor's shared timer scheduler.
//!
//! `node.create_timer_repeating(period, callback)` registers a timer with the scheduler thread,
//! which hands each tick to the timer's worker through the same coalescing `EntityDispatch` as
//! every other entity. The scheduler never waits for a callback: if the callback of the
//! previous tick has not started when the next one is due, the new tick is dropped and
//! counted ([`TimerInfo::missed_ticks`]). Deadlines advance on the grid
//! `start + k·period`, so a timer that keeps up never drifts, and a stalled one skips to the
//! next grid point instead of bursting.

use std::any::Any;
use std::future::Future;
use std::sync::atomic::{AtomicI64, AtomicU8};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod entry;
mod heap;
mod scheduler;
mod sim;

#[cfg(all(test, rclev_loom))]
mod loom_tests;

pub(crate) use scheduler::TimerScheduler;

use crate::clock::{Clock, ClockType, Time, TimeBaseFollower};
use crate::error::{Error, Result};
use crate::executor::dispatch::{EntityDispatch, ExecContext, Executable};
use crate::executor::fence::CallGate;
use crate::executor::worker::WorkerRef;
use crate::node::callback::Callback;
// The stop protocol's atomics (`canceled`, `stops`, `dropped`) and the timer's locks are the
// facade's, so the loom models can run the real `execute` against a real stop.
use crate::sync::{model_lock as lock, AtomicBool, AtomicU64, Mutex, Ordering};
use entry::{Stamp, TimerTick};
use heap::{GridTime, SimTime, TimerId};
use scheduler::SchedulerCore;

/// The scheduler's precision/CPU trade-offs. The default aims at tick lateness well under
/// 10 µs for a few percent of a core per kHz of ticks; [`TimerPrecision::low_cpu`] gives up
/// busy-waiting for lateness of the order of the wake-up latencies (~50 µs here).
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

/// The longest period (or one-shot delay) a timer accepts: `i64::MAX` nanoseconds, as in rcl.
pub const MAX_PERIOD: Duration = Duration::from_nanos(i64::MAX as u64);

/// `at + d`, or the farthest instant the platform represents beyond it.
fn far_instant(at: Instant, d: Duration) -> Instant {
    at.checked_add(d).unwrap_or_else(|| {
        // A year at a time down to the edge of `Instant`'s range; at most ~292 iterations,
        // and only for delays no clock will ever reach.
        let mut far = at;
        let year = Duration::from_secs(365 * 86_400);
        while let Some(next) = far.checked_add(year) {
            far = next;
        }
        far
    })
}

const MODE_REPEATING: u8 = 0;
const MODE_ONESHOT: u8 = 1;
const MODE_INERT: u8 = 2;

/// Which ordering of the scheduler a timer is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lane {
    /// The OS-deadline heap (steady, system, and ROS time without simulation).
    Wall(TimerId),
    /// The heap of the timer's simulated clock.
    Sim(TimerId),
}

/// A timer. Dropping the last handle removes it from the scheduler at once: once the drop
/// has returned, its callback never starts again, even if a tick was being handed to it right
/// then (the same holds after [`cancel`](Self::cancel), [`reset`](Self::reset) for the previous
/// schedule, and the `set_*` mode changes for the previous callback). A callback already running
/// is not interrupted.
pub struct TimerState {
    core: Arc<TimerCore>,
}

/// What the scheduler and the worker hold: the timer's state. The worker references it only
/// while it executes a tick; the user's [`TimerState`] owns it.
pub(crate) struct TimerCore {
    tick: Arc<TimerTick>,
    lane: Mutex<Lane>,
    sched: Arc<SchedulerCore>,
    callback: Mutex<CallbackSlot>,
    mode: AtomicU8,
    period: Duration,
    clock: Clock,
    canceled: AtomicBool,
    /// The timer clock's time at the start of the last callback (or at creation/reset).
    last_call: AtomicI64,
    /// The worker that runs the callback.
    worker: WorkerRef,
    /// Whatever keeps `worker` running (the node layer's `WorkerCore`): held for the timer's
    /// life, as any entity holds its worker.
    _keep_alive: Arc<dyn Any + Send + Sync>,
    /// Bumped (`SeqCst`) by everything after which a tick already taken must not start its
    /// callback: `cancel`, `reset`, mode changes, the handle's drop. The worker notes it when it
    /// takes a tick and re-reads it through the start fence (see `executor::fence`).
    stops: AtomicU64,
    /// Raised while a callback is being started or runs; stops wait it out.
    gate: CallGate,
    /// The user's handle is gone: the timer never re-enters the scheduler (a clock switch
    /// racing with the drop would otherwise re-insert it).
    dropped: AtomicBool,
}

/// A shared handle to a timer.
pub type Timer = crate::Handle<TimerState>;

/// The timer's callback. The worker takes it out while calling it, so the callback may change
/// its own timer's mode (`set_oneshot` from inside the callback) without deadlocking; it is
/// put back only if no new callback was installed meanwhile (`version` unchanged).
///
/// Lock order: `callback`, then `lane`, then the scheduler's state. `change()` re-arms and
/// swaps the callback under `callback`, and `execute` takes the tick under it too, so a tick
/// is always run by the callback of the schedule it belongs to.
struct CallbackSlot {
    callback: Option<Callback<TimerInfo>>,
    version: u64,
    /// The stamp of the last tick taken ([`Stamp::NONE`]: none yet), for
    /// [`TimerCore::missed_before`].
    last_stamp: Stamp,
}

pub(crate) enum TimerKind {
    Repeating(TimerCallback),
    OneShot(TimerCallback),
    Inert,
}

/// What a new timer needs of the layers above it, handed over explicitly so the timer layer
/// depends on none of them.
pub(crate) struct TimerSite {
    /// The worker that runs the callback.
    pub(crate) worker: WorkerRef,
    /// The executor's timer scheduler.
    pub(crate) sched: Arc<SchedulerCore>,
    /// The timer's clock, resolved from [`TimerOptions::clock`].
    pub(crate) clock: Clock,
    /// Held for the timer's life: keeps `worker` running (dropping the last `WorkerCore` closes
    /// its mailbox).
    pub(crate) keep_alive: Arc<dyn Any + Send + Sync>,
}

/// Where timers can be created: implemented by the node layer's `WorkerCore`, which resolves
/// the clock type through its node and checks that the executor still runs.
pub(crate) trait TimerHost {
    /// What a timer on a clock of `clock` needs; [`Error::Shutdown`] once the executor has shut
    /// down (nothing created then would ever run).
    fn timer_site(self: &Arc<Self>, clock: ClockType) -> Result<TimerSite>;
}

/// Creates a timer on `host`'s worker.
pub(crate) fn create_timer<H: TimerHost>(
    host: &Arc<H>,
    options: impl IntoTimerOptions,
    kind: TimerKind,
) -> Result<Timer> {
    let options = options.into_timer_options();
    // First: after shutdown, that is the error, whatever the options.
    let site = host.timer_site(options.clock)?;
    create(site, options, kind)
}

fn create(site: TimerSite, options: TimerOptions, kind: TimerKind) -> Result<Timer> {
    let (mode, callback) = match kind {
        TimerKind::Repeating(cb) => (MODE_REPEATING, Some(cb.0)),
        TimerKind::OneShot(cb) => (MODE_ONESHOT, Some(cb.0)),
        TimerKind::Inert => (MODE_INERT, None),
    };
    // Zero repeats without end; beyond i64 nanoseconds (~292 years) is no time on a ROS clock
    // (rcl keeps timer periods as int64 ns too).
    if (mode != MODE_ONESHOT && options.period.is_zero()) || options.period > MAX_PERIOD {
        return Err(Error::InvalidPeriod(options.period));
    }
    let TimerSite {
        worker,
        sched,
        clock,
        keep_alive,
    } = site;
    let dispatch = EntityDispatch::unbound(worker.mailbox.clone());
    let tick = Arc::new(TimerTick::new(dispatch.clone()));
    let heap_period = if mode == MODE_ONESHOT {
        Duration::ZERO
    } else {
        options.period
    };
    // Registered disarmed; armed once the entity exists and its dispatch is bound.
    let source = clock.source().cloned();
    let _base = source.as_ref().map(|s| s.hold_time_base());
    let sim = source.as_ref().is_some_and(|s| s.is_sim_active());
    let lane = match &source {
        Some(src) if sim => Lane::Sim(sched.sim_insert(src.lane, tick.clone(), None, heap_period)),
        _ => Lane::Wall(sched.insert(tick.clone(), None, heap_period)),
    };
    let timer = Arc::new(TimerCore {
        tick,
        lane: Mutex::new(lane),
        sched,
        callback: Mutex::new(CallbackSlot {
            callback,
            version: 0,
            last_stamp: Stamp::NONE,
        }),
        mode: AtomicU8::new(mode),
        period: options.period,
        last_call: AtomicI64::new(clock.now().nanos),
        clock,
        canceled: AtomicBool::new(false),
        worker,
        _keep_alive: keep_alive,
        stops: AtomicU64::new(0),
        gate: CallGate::default(),
        dropped: AtomicBool::new(false),
    });
    let entity: Arc<dyn Executable> = timer.clone();
    dispatch.bind(Arc::downgrade(&entity), false);
    if let Some(src) = &source {
        let follower: std::sync::Weak<dyn TimeBaseFollower> = Arc::downgrade(&timer) as _;
        src.register_timer(follower);
    }
    timer.arm_in(Some(options.period), None);
    Ok(crate::Handle::new(TimerState { core: timer }))
}

impl TimerCore {
    /// Ends every tick taken so far: none of them starts its callback after this returns.
    fn stop_taken_ticks(&self) {
        self.stops.fetch_add(1, Ordering::SeqCst);
        self.gate.wait_out(self.worker.is_current());
    }

    fn sim_lane(&self) -> u64 {
        self.clock.source().map_or(0, |s| s.lane)
    }

    /// Arms the timer `delay` from now on its clock (`None`: cancel), optionally changing the
    /// heap period.
    fn arm_in(&self, delay: Option<Duration>, period: Option<Duration>) {
        match *lock(&self.lane) {
            Lane::Wall(id) => {
                let when = || delay.map(|d| far_instant(Instant::now(), d));
                self.sched.arm(id, when, period);
            }
            Lane::Sim(id) => {
                let mut now = SimTime(0);
                let when = || {
                    now = SimTime(self.clock.now().nanos);
                    delay.map(|d| now.checked_plus(d).unwrap_or(SimTime(i64::MAX)))
                };
                let deadline = self.sched.sim_arm(self.sim_lane(), id, when, period);
                // Already due (zero delay): hand over now rather than at the next `/clock`.
                if deadline.is_some_and(|d| d <= now) {
                    self.sched.sim_advance(self.sim_lane(), now);
                }
            }
        }
    }

    /// Moves the timer between the wall and the simulated ordering when simulation time is
    /// switched on or off, keeping `credit` until its next call (rcl semantics).
    pub(crate) fn switch_lane(&self, to_sim: bool, credit: Option<Duration>) {
        let mut lane = lock(&self.lane);
        if self.dropped.load(Ordering::Acquire) {
            return;
        }
        let period = if self.is_oneshot() {
            Duration::ZERO
        } else {
            self.period
        };
        let next = match (*lane, to_sim) {
            (Lane::Wall(id), true) => {
                self.sched.remove(id);
                Lane::Sim(
                    self.sched
                        .sim_insert(self.sim_lane(), self.tick.clone(), None, period),
                )
            }
            (Lane::Sim(id), false) => {
                self.sched.sim_remove(self.sim_lane(), id);
                self.tick.sim.store(false, Ordering::Release);
                Lane::Wall(self.sched.insert(self.tick.clone(), None, period))
            }
            (current, _) => current,
        };
        *lane = next;
        drop(lane);
        self.last_call
            .store(self.clock.now().nanos, Ordering::Release);
        if !self.is_canceled() {
            self.arm_in(credit, None);
        }
    }

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

impl TimerState {
    /// Restarts the period from now (re-arming a cancelled or spent timer).
    pub fn reset(&self) {
        let t = &self.core;
        t.canceled.store(false, Ordering::Release);
        t.arm_in(Some(t.period), None);
        t.stop_taken_ticks();
    }

    /// Stops the timer until [`reset`](Self::reset). A tick already handed to the worker is
    /// dropped too.
    pub fn cancel(&self) {
        let t = &self.core;
        t.canceled.store(true, Ordering::SeqCst);
        t.arm_in(None, None);
        t.stop_taken_ticks();
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
    /// Mode changes keep the timer's next deadline and take effect from it: a tick already
    /// handed over under the old mode is dropped, never run by the new callback. They may be
    /// called from the timer's own callback.
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

impl TimerCore {
    fn is_canceled(&self) -> bool {
        self.canceled.load(Ordering::SeqCst)
    }

    fn is_oneshot(&self) -> bool {
        self.mode.load(Ordering::Acquire) == MODE_ONESHOT
    }

    pub(crate) fn time_until_next_call(&self) -> Option<Duration> {
        match *lock(&self.lane) {
            Lane::Wall(id) => self
                .sched
                .deadline(id)
                .map(|d| d.saturating_duration_since(Instant::now())),
            Lane::Sim(id) => self
                .sched
                .sim_deadline(self.sim_lane(), id)
                .map(|d| d.since(SimTime(self.clock.now().nanos))),
        }
    }

    fn change(&self, mode: u8, callback: Option<Callback<TimerInfo>>) {
        let mut slot = lock(&self.callback);
        // Re-arming raises the tick floor, so a tick handed over (or in flight) under the old
        // mode is discarded: the new mode starts at the next deadline.
        let period = if mode == MODE_ONESHOT {
            Duration::ZERO
        } else {
            self.period
        };
        let delay = match self.time_until_next_call() {
            Some(d) => Some(d),
            None if self.is_canceled() => None,
            None => Some(self.period),
        };
        self.arm_in(delay, Some(period));
        slot.callback = callback;
        slot.version += 1;
        self.mode.store(mode, Ordering::Release);
        drop(slot);
        self.stop_taken_ticks();
    }
}

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

impl Drop for TimerState {
    fn drop(&mut self) {
        let t = &self.core;
        // First, so the scheduler can no longer pick this timer up.
        {
            let lane = lock(&t.lane);
            t.dropped.store(true, Ordering::SeqCst);
            match *lane {
                Lane::Wall(id) => t.sched.remove(id),
                Lane::Sim(id) => t.sched.sim_remove(t.sim_lane(), id),
            }
        }
        // Then a tick the worker holds right now (it may be executing this very timer).
        t.stop_taken_ticks();
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

/// The clock layer sees timers only through this.
impl TimeBaseFollower for TimerCore {
    fn time_until_next_call(&self) -> Option<Duration> {
        TimerCore::time_until_next_call(self)
    }
    fn switch_lane(&self, to_sim: bool, credit: Option<Duration>) {
        TimerCore::switch_lane(self, to_sim, credit)
    }
}
