//! A timer's state ([`TimerCore`]): what its handle, the scheduler and its worker share, and
//! how it is created, armed, re-moded and moved between the wall and a simulated lane. The
//! worker's side (taking a tick, calling back) is in `execute.rs`.

use std::any::Any;
use std::sync::atomic::{AtomicI64, AtomicU8};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::callback::{TimerCallback, TimerInfo};
use super::entry::{Stamp, TimerTick};
use super::heap::{GridTime, SimTime, TimerId};
use super::options::{IntoTimerOptions, TimerOptions, MAX_PERIOD};
use super::pacing::Pacing;
use super::scheduler::SchedulerCore;
use crate::base::error::{Error, Result};
use crate::clock::{Clock, ClockType, TimeBaseFollower};
use crate::runtime::callback::Callback;
use crate::runtime::dispatch::EntityDispatch;
use crate::runtime::executable::Executable;
use crate::runtime::fence::CallGate;
use crate::runtime::worker::WorkerRef;
// The stop protocol's atomics (`canceled`, `stops`, `dropped`) and the timer's locks are the
// facade's, so the loom models can run the real `execute` against a real stop.
use crate::base::sync::{model_lock as lock, AtomicBool, AtomicU64, Mutex, Ordering};

// `TimerCore::mode`. An atomic rather than part of the callback slot, so the handle's getters
// (`is_oneshot`, `is_inert`) never wait for a running callback.
/// Calls back at every grid point.
pub(super) const MODE_REPEATING: u8 = 0;
/// Calls back once, at the first deadline of each arming.
pub(super) const MODE_ONESHOT: u8 = 1;
/// Keeps its schedule, calls nothing.
pub(super) const MODE_INERT: u8 = 2;

/// The period the scheduler's heap keeps for a timer of `mode`: zero is the heap's one-shot (a
/// slot of period zero fires once and disarms), so a one-shot's `period` is only its delay.
fn heap_period(mode: u8, period: Duration) -> Duration {
    if mode == MODE_ONESHOT {
        Duration::ZERO
    } else {
        period
    }
}

/// Which ordering of the scheduler a timer is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Lane {
    /// The OS-deadline heap (steady, system, and ROS time without simulation).
    Wall(TimerId),
    /// The heap of the timer's simulated clock.
    Sim(TimerId),
}

/// What the scheduler and the worker hold: the timer's state. The worker references it only
/// while it executes a tick; the user's [`TimerState`](super::TimerState) owns it.
pub(crate) struct TimerCore {
    /// What the scheduler holds of the timer (see `entry.rs`).
    pub(super) tick: Arc<TimerTick>,
    /// Where the scheduler orders the timer; changes when simulated time is switched.
    pub(super) lane: Mutex<Lane>,
    pub(super) sched: Arc<SchedulerCore>,
    pub(super) callback: Mutex<CallbackSlot>,
    /// One of the `MODE_*` constants.
    pub(super) mode: AtomicU8,
    /// The period (for a one-shot: the delay), as created.
    pub(super) period: Duration,
    pub(super) clock: Clock,
    /// Set by `cancel`, cleared by `reset`.
    pub(super) canceled: AtomicBool,
    /// The timer clock's time at the start of the last callback (or at creation/reset).
    pub(super) last_call: AtomicI64,
    /// The worker that runs the callback.
    pub(super) worker: WorkerRef,
    /// Whatever keeps `worker` running (the node layer's `WorkerCore`): held for the timer's
    /// life, as any entity holds its worker.
    pub(super) _keep_alive: Arc<dyn Any + Send + Sync>,
    /// Bumped (`SeqCst`) by everything after which a tick already taken must not start its
    /// callback: `cancel`, `reset`, mode changes, the handle's drop. The worker notes it when it
    /// takes a tick and re-reads it through the start fence (see `executor::fence`).
    pub(super) stops: AtomicU64,
    /// Raised while a callback is being started or runs; stops wait it out.
    pub(super) gate: CallGate,
    /// The user's handle is gone: the timer never re-enters the scheduler (a clock switch
    /// racing with the drop would otherwise re-insert it) and its worker no longer pulls its
    /// ticks (its slot id may hold a new timer). Set under `lane`, before the removal.
    pub(super) dropped: AtomicBool,
    /// The worker's own pacing (see `execute.rs`); only the worker touches it.
    pub(super) pacing: Pacing,
}

/// The timer's callback. The worker takes it out while calling it, so the callback may change
/// its own timer's mode (`set_oneshot` from inside the callback) without deadlocking; it is
/// put back only if no new callback was installed meanwhile (`version` unchanged).
///
/// Lock order: `callback`, then `lane`, then the scheduler's state. Every stop
/// ([`TimerCore::stop`]: `change()`, `reset`, `cancel`, the drop) re-arms or removes the timer,
/// swaps the callback and bumps `stops` under `callback`, and `execute` notes `stops` and takes
/// the tick under it too, so a tick is always run by the callback of the schedule it belongs
/// to, and is stopped only by stops that came after it was taken. The worker holds `callback`
/// only to take the tick and to put the callback back, never while it waits or calls back.
///
/// "The schedule it belongs to" rests on the scheduler's side of the hand-over: a tick enters
/// `due` under the scheduler lock, in the step that popped it, and the re-arm inside a stop
/// empties `due` under that lock (`entry.rs`). So at the take, under `callback`, `due` holds
/// nothing of an arming older than the last stop.
pub(super) struct CallbackSlot {
    /// `None` while the worker runs it, and for an inert timer.
    pub(super) callback: Option<Callback<TimerInfo>>,
    /// Bumped by every mode change (each installs a new callback, or none).
    pub(super) version: u64,
    /// The stamp of the last tick taken ([`Stamp::NONE`]: none yet), for
    /// [`TimerCore::missed_before`].
    pub(super) last_stamp: Stamp,
}

/// Which timer to create, with its callback.
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

/// Creates a timer's core on `host`'s worker (the user's handle wraps it, `timer/mod.rs`).
pub(super) fn create<H: TimerHost>(
    host: &Arc<H>,
    options: impl IntoTimerOptions,
    kind: TimerKind,
) -> Result<Arc<TimerCore>> {
    let options = options.into_timer_options();
    // First: after shutdown, that is the error, whatever the options.
    let site = host.timer_site(options.clock)?;
    create_on(site, options, kind)
}

fn create_on(site: TimerSite, options: TimerOptions, kind: TimerKind) -> Result<Arc<TimerCore>> {
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
    let heap_period = heap_period(mode, options.period);
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
        pacing: Pacing::default(),
    });
    let entity: Arc<dyn Executable> = timer.clone();
    dispatch.bind(Arc::downgrade(&entity), false);
    if let Some(src) = &source {
        let follower: std::sync::Weak<dyn TimeBaseFollower> = Arc::downgrade(&timer) as _;
        src.register_timer(follower);
    }
    timer.arm_in(Some(options.period), None);
    Ok(timer)
}

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

impl TimerCore {
    /// A stop: `publish` re-arms, cancels or removes the timer (starting a new arming under the
    /// scheduler lock: the floor raised, the tick waiting in `due` dropped, see `entry.rs`) and
    /// may swap the callback; then every tick taken before ends: none of them starts its
    /// callback after this returns (a call already running is waited for, unless this is that
    /// call's own worker).
    ///
    /// `publish` and the `stops` bump happen as one step under the `callback` lock, and the
    /// worker notes `stops` and takes its tick as one step under that lock too (`execute`).
    /// So the tick a worker takes and the count it notes lie on the same side of every stop:
    ///
    /// - taken before: the tick is of the old arming (or the old callback's), the count is
    ///   from before the bump, and the start fence either sees the bump and skips the call, or
    ///   makes this stop wait in the gate until the call has returned;
    /// - taken after: the old arming's tick was dropped from `due` by the re-arm, and no tick
    ///   popped under it can be stored after it (ticks are stored under the scheduler lock as
    ///   they are popped), so the tick is of the new arming; it carries the bumped count and
    ///   runs.
    ///
    /// Bumping after releasing the lock (as this once did) lost ticks: a worker could note the
    /// count before a `set_oneshot`, take the new arming's first tick with the new callback
    /// (handed over between the re-arm and the bump), and then see the bump and skip the call;
    /// the one-shot, spent, never fired (issue 24; the loom model
    /// `loom_a_mode_change_racing_a_tick_never_loses_the_new_oneshot`). Bumping before
    /// `publish` would instead let a worker that noted the new count still take a tick of the
    /// old arming before the floor rose, and run it after the stop returned.
    ///
    /// Returns what `publish` returned, after the wait (a replaced callback is dropped there,
    /// outside the locks).
    pub(super) fn stop<R>(&self, publish: impl FnOnce(&mut CallbackSlot) -> R) -> R {
        let mut slot = lock(&self.callback);
        let published = publish(&mut slot);
        self.stops.fetch_add(1, Ordering::SeqCst);
        drop(slot);
        self.gate.wait_out(self.worker.is_current());
        published
    }

    /// The number of the simulated clock's lane. Asked only while the timer is in
    /// `Lane::Sim`, which it enters only with a clock that has a source; 0 otherwise.
    pub(super) fn sim_lane(&self) -> u64 {
        self.clock.source().map_or(0, |s| s.lane)
    }

    /// Arms the timer `delay` from now on its clock (`None`: cancel), optionally changing the
    /// heap period.
    pub(super) fn arm_in(&self, delay: Option<Duration>, period: Option<Duration>) {
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
        let period = heap_period(self.mode.load(Ordering::Acquire), self.period);
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
}

impl TimerCore {
    pub(super) fn is_canceled(&self) -> bool {
        self.canceled.load(Ordering::SeqCst)
    }

    pub(super) fn is_oneshot(&self) -> bool {
        self.mode.load(Ordering::Acquire) == MODE_ONESHOT
    }

    /// The deadline of a wall tick waiting in `due` (current, not yet taken): with pacing,
    /// the worker pulls a tick up to a period early, and the heap's deadline is then the one
    /// after it.
    pub(super) fn waiting_wall_deadline(&self) -> Option<Instant> {
        let waiting = self.tick.due.load(Ordering::Acquire);
        (waiting != Stamp::NONE && !waiting.is_sim() && self.tick.is_current(waiting))
            .then(|| self.sched.wall_deadline(waiting))
    }

    pub(crate) fn time_until_next_call(&self) -> Option<Duration> {
        match *lock(&self.lane) {
            Lane::Wall(id) => {
                let next = match (self.sched.deadline(id), self.waiting_wall_deadline()) {
                    (Some(d), Some(w)) => Some(d.min(w)),
                    (d, w) => d.or(w),
                };
                next.map(|d| d.saturating_duration_since(Instant::now()))
            }
            Lane::Sim(id) => self
                .sched
                .sim_deadline(self.sim_lane(), id)
                .map(|d| d.since(SimTime(self.clock.now().nanos))),
        }
    }

    pub(super) fn change(&self, mode: u8, callback: Option<Callback<TimerInfo>>) {
        let replaced = self.stop(|slot| {
            // The new mode starts at the timer's next deadline, a tick waiting in `due`
            // included (it may have passed). Re-arming drops that tick, and any tick popped
            // under the old mode with it: none is run by the new callback, even one popped
            // ahead of its deadline, after the new arming's first one (see `stop`).
            let period = heap_period(mode, self.period);
            let delay = match self.time_until_next_call() {
                Some(d) => Some(d),
                None if self.is_canceled() => None,
                None => Some(self.period),
            };
            self.arm_in(delay, Some(period));
            slot.version += 1;
            self.mode.store(mode, Ordering::Release);
            std::mem::replace(&mut slot.callback, callback)
        });
        // The old callback (user code, in its destructor) is dropped outside the timer's locks.
        drop(replaced);
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
