//! The ROS time source behind a ROS-time [`Clock`](super::Clock): system time until simulation
//! time is activated, then the latest `/clock` value; jump callbacks; simulated-time sleepers.
//!
//! Who calls what: `/clock` messages arrive through the node's `/clock` subscription, whose
//! callback (on the node's default worker) calls [`RosTimeSource::set_sim_time`]; the node's
//! `use_sim_time` parameter calls [`RosTimeSource::set_sim_active`] on the thread that sets it.
//! Both run the jump callbacks on that same thread: `pre` before the new time is visible,
//! `post` after, as rcl does. Neither holds `inner` while calling back into user code.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::Waker;
use std::time::Duration;

use super::system_nanos;
// The source's locks and the thread-local beside them are the facade's, so a loom model can
// race a timer's creation against a switch of the time base (`timer/loom_tests.rs`).
use crate::base::sync::{lock, model_lock, Mutex as ModelMutex, MutexGuard as ModelMutexGuard};

/// Shutdown signal shared by an executor and the clocks of its nodes, so sleeps end on
/// shutdown.
#[derive(Default)]
pub(crate) struct Lifeline {
    ended: AtomicBool,
    pub(crate) notify: tokio::sync::Notify,
    sources: Mutex<Vec<Weak<RosTimeSource>>>,
}

impl Lifeline {
    pub(crate) fn is_ended(&self) -> bool {
        self.ended.load(Ordering::Acquire)
    }
    pub(crate) fn end(&self) {
        self.ended.store(true, Ordering::Release);
        self.notify.notify_waiters();
        let sources: Vec<_> = lock(&self.sources)
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        for s in sources {
            s.wake_all_sleepers();
        }
    }
    /// Resolves once the executor has shut down.
    pub(crate) async fn ended(&self) {
        let notified = self.notify.notified();
        tokio::pin!(notified);
        // Registered before the flag is read, so an `end` between the two is not missed.
        notified.as_mut().enable();
        if !self.is_ended() {
            notified.await;
        }
    }

    /// `fut`'s output, or [`Error::Shutdown`](crate::Error::Shutdown) if the executor shuts
    /// down first (or already has): what every future that waits for the executor resolves
    /// to once nothing will ever complete it.
    pub(crate) async fn unless_ended<T>(
        &self,
        fut: impl std::future::Future<Output = crate::Result<T>>,
    ) -> crate::Result<T> {
        if self.is_ended() {
            return Err(crate::Error::Shutdown);
        }
        tokio::select! {
            biased;
            r = fut => r,
            () = self.ended() => Err(crate::Error::Shutdown),
        }
    }

    pub(crate) fn watch(&self, source: &Arc<RosTimeSource>) {
        let mut sources = lock(&self.sources);
        sources.retain(|w| w.strong_count() > 0);
        sources.push(Arc::downgrade(source));
    }
}

/// How a jump changed the clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockChange {
    /// Same source, the time stepped.
    NoChange,
    /// Simulation time was switched on.
    RosTimeActivated,
    /// Simulation time was switched off.
    RosTimeDeactivated,
}

/// A time jump, as passed to jump callbacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeJump {
    /// Whether the source changed.
    pub clock_change: ClockChange,
    /// New time minus old time, in nanoseconds.
    pub delta_nanos: i64,
}

/// Which jumps a jump callback wants (as `rcl_jump_threshold_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct JumpThreshold {
    /// Called when simulation time is switched on or off.
    pub on_clock_change: bool,
    /// Called for forward steps of at least this much.
    pub min_forward: Option<Duration>,
    /// Called for backward steps of at least this much (any backward step if zero).
    pub min_backward: Option<Duration>,
}

impl JumpThreshold {
    fn matches(&self, jump: &TimeJump) -> bool {
        match jump.clock_change {
            ClockChange::RosTimeActivated | ClockChange::RosTimeDeactivated => self.on_clock_change,
            ClockChange::NoChange if jump.delta_nanos > 0 => self
                .min_forward
                .is_some_and(|d| jump.delta_nanos as u128 >= d.as_nanos().max(1)),
            ClockChange::NoChange if jump.delta_nanos < 0 => self
                .min_backward
                .is_some_and(|d| jump.delta_nanos.unsigned_abs() as u128 >= d.as_nanos()),
            ClockChange::NoChange => false,
        }
    }
}

type JumpFn = Box<dyn FnMut(&TimeJump) + Send>;

struct JumpEntry {
    threshold: JumpThreshold,
    pre: Mutex<JumpFn>,
    post: Mutex<JumpFn>,
}

/// Keeps jump callbacks registered; dropping it unregisters them.
#[must_use = "dropping this handle unregisters the jump callbacks at once, and `let _ = …` drops it too: keep it in a named binding (`let _jumps = …`)"]
pub struct JumpHandle {
    _entry: Arc<JumpEntry>,
}

impl std::fmt::Debug for JumpHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JumpHandle")
            .field("threshold", &self._entry.threshold)
            .finish()
    }
}

#[derive(Default)]
struct SourceInner {
    jumps: Vec<Weak<JumpEntry>>,
    timers: Vec<Weak<dyn TimeBaseFollower>>,
    /// Simulated-time sleepers by (deadline, id).
    sleepers: BTreeMap<(i64, u64), Waker>,
    next_sleeper: u64,
}

static NEXT_LANE: AtomicU64 = AtomicU64::new(1);

crate::base::sync::thread_local! {
    /// Lanes of the sources whose `change` lock this thread holds, i.e. whose jump callbacks
    /// may be running on it. Switching such a source's time base from a jump callback would
    /// take the non-reentrant lock twice; it is refused instead (see `changing_here`).
    static CHANGING: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Holds a source's `change` lock and marks it as changing on this thread.
struct ChangeGuard<'a> {
    lane: u64,
    _serial: ModelMutexGuard<'a, ()>,
}

impl Drop for ChangeGuard<'_> {
    fn drop(&mut self) {
        CHANGING.with(|c| {
            let mut c = c.borrow_mut();
            if let Some(i) = c.iter().rposition(|l| *l == self.lane) {
                c.remove(i);
            }
        });
    }
}

/// A timer that runs on a ROS time source and follows it between the system clock and
/// simulated time. The clock layer knows timers only through this (the timer layer, above
/// it, implements it), so that the clock does not import the timer.
pub(crate) trait TimeBaseFollower: Send + Sync {
    /// The time left until the next call, measured on the current time base, just before a
    /// switch: the "time credit" carried over to the new base.
    fn time_until_next_call(&self) -> Option<std::time::Duration>;
    /// Moves to the new time base (`to_sim`), due after `credit`.
    fn switch_lane(&self, to_sim: bool, credit: Option<std::time::Duration>);
}

/// Where a source's simulated-time steps go: its lane in the executor's timer scheduler.
pub(crate) trait SimTimeSink: Send + Sync {
    /// `/clock` went back to `nanos` on `lane`.
    fn sim_jumped_back(&self, lane: u64, nanos: i64);
    /// `/clock` reached `nanos` on `lane`: hand over what is due.
    fn sim_advance(&self, lane: u64, nanos: i64);
    /// The earliest deadline of a timer on `lane`, if any is armed.
    fn sim_next_deadline(&self, lane: u64) -> Option<i64>;
}

pub(crate) struct RosTimeSource {
    /// This clock's lane in the timer scheduler.
    pub(crate) lane: u64,
    sim_active: AtomicBool,
    /// Latest `/clock` time in ns (0 until the first message, as in rcl).
    sim_now: AtomicI64,
    /// Bumped whenever sleepers must re-check (activation changes, shutdown).
    generation: AtomicU64,
    sched: Option<Weak<dyn SimTimeSink>>,
    inner: ModelMutex<SourceInner>,
    /// Serialises time changes so jump callbacks see them in order.
    change: ModelMutex<()>,
    /// Where a panicking jump callback is reported (the executor's error list and handler);
    /// set once by the node that owns the source.
    reporter: std::sync::OnceLock<Reporter>,
}

/// Reports an error raised outside any worker (here: a jump callback's panic).
pub(crate) type Reporter = Box<dyn Fn(crate::Error) + Send + Sync>;

impl RosTimeSource {
    pub(crate) fn new(sched: Option<Weak<dyn SimTimeSink>>) -> Self {
        Self {
            lane: NEXT_LANE.fetch_add(1, Ordering::Relaxed),
            sim_active: AtomicBool::new(false),
            sim_now: AtomicI64::new(0),
            generation: AtomicU64::new(0),
            sched,
            inner: ModelMutex::new(SourceInner::default()),
            change: ModelMutex::new(()),
            reporter: std::sync::OnceLock::new(),
        }
    }

    /// Sets where jump-callback panics are reported (once).
    pub(crate) fn set_reporter(&self, reporter: Reporter) {
        let _ = self.reporter.set(reporter);
    }

    fn sim_sink(&self) -> Option<Arc<dyn SimTimeSink>> {
        self.sched.as_ref()?.upgrade()
    }

    pub(crate) fn is_sim_active(&self) -> bool {
        self.sim_active.load(Ordering::Acquire)
    }

    pub(crate) fn sim_now(&self) -> i64 {
        self.sim_now.load(Ordering::Acquire)
    }

    pub(crate) fn now_nanos(&self) -> i64 {
        if self.is_sim_active() {
            self.sim_now()
        } else {
            system_nanos()
        }
    }

    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    fn begin_change(&self) -> ChangeGuard<'_> {
        let serial = model_lock(&self.change);
        CHANGING.with(|c| c.borrow_mut().push(self.lane));
        ChangeGuard {
            lane: self.lane,
            _serial: serial,
        }
    }

    /// Whether this thread is inside a time change of this source (running its jump
    /// callbacks), where switching simulation time on or off cannot be done.
    pub(crate) fn changing_here(&self) -> bool {
        CHANGING.with(|c| c.borrow().contains(&self.lane))
    }

    /// Holds the time base (simulated or not) still until the guard drops: a timer created
    /// under it picks its lane and registers for switches as one step, so a concurrent
    /// `set_sim_active` either sees it registered or happens before it looks. `None` when this
    /// thread is already inside a change of this source (a jump callback), which holds it.
    pub(crate) fn hold_time_base(&self) -> Option<ModelMutexGuard<'_, ()>> {
        (!self.changing_here()).then(|| model_lock(&self.change))
    }

    pub(crate) fn register_timer(&self, timer: Weak<dyn TimeBaseFollower>) {
        let mut inner = model_lock(&self.inner);
        inner.timers.retain(|w| w.strong_count() > 0);
        inner.timers.push(timer);
    }

    pub(crate) fn add_jump_callback(
        &self,
        threshold: JumpThreshold,
        pre: JumpFn,
        post: JumpFn,
    ) -> JumpHandle {
        let entry = Arc::new(JumpEntry {
            threshold,
            pre: Mutex::new(pre),
            post: Mutex::new(post),
        });
        let mut inner = model_lock(&self.inner);
        inner.jumps.retain(|w| w.strong_count() > 0);
        inner.jumps.push(Arc::downgrade(&entry));
        JumpHandle { _entry: entry }
    }

    fn jump_entries(&self, jump: &TimeJump) -> Vec<Arc<JumpEntry>> {
        model_lock(&self.inner)
            .jumps
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|e| e.threshold.matches(jump))
            .collect()
    }

    fn call_jumps(&self, entries: &[Arc<JumpEntry>], jump: &TimeJump, pre: bool) {
        for e in entries {
            let slot = if pre { &e.pre } else { &e.post };
            let mut f = lock(slot);
            if let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(jump))) {
                let error = crate::Error::CallbackPanicked {
                    entity: format!("{} jump callback", if pre { "pre" } else { "post" }),
                    message: crate::base::error::panic_message(&*p),
                };
                match self.reporter.get() {
                    Some(report) => report(error),
                    None => crate::diagnostic!(ERROR, target: "rclev", "{error}"),
                }
            }
        }
    }

    /// Switches simulation time on or off; ROS-time timers carry the time left until their next
    /// call over to the new time base (rcl's "time credit").
    pub(crate) fn set_sim_active(&self, active: bool) {
        let _change = self.begin_change();
        if self.is_sim_active() == active {
            return;
        }
        let before = self.now_nanos();
        let after = if active {
            self.sim_now()
        } else {
            system_nanos()
        };
        let jump = TimeJump {
            clock_change: if active {
                ClockChange::RosTimeActivated
            } else {
                ClockChange::RosTimeDeactivated
            },
            delta_nanos: after - before,
        };
        let entries = self.jump_entries(&jump);
        self.call_jumps(&entries, &jump, true);
        let timers: Vec<_> = model_lock(&self.inner)
            .timers
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        let credits: Vec<_> = timers.iter().map(|t| t.time_until_next_call()).collect();
        self.sim_active.store(active, Ordering::Release);
        for (t, credit) in timers.iter().zip(credits) {
            t.switch_lane(active, credit);
        }
        // Also bumps the generation, so sleepers started on the old time base end.
        self.wake_all_sleepers();
        self.call_jumps(&entries, &jump, false);
    }

    /// A new `/clock` value. While simulation time is active this paces the lane's timers
    /// (O(k log n) for k due), wakes due sleepers and runs jump callbacks for steps that cross
    /// their thresholds; otherwise the value is only remembered.
    pub(crate) fn set_sim_time(&self, nanos: i64) {
        let _change = self.begin_change();
        if !self.is_sim_active() {
            self.sim_now.store(nanos, Ordering::Release);
            return;
        }
        let old = self.sim_now();
        let jump = TimeJump {
            clock_change: ClockChange::NoChange,
            delta_nanos: nanos - old,
        };
        let entries = self.jump_entries(&jump);
        self.call_jumps(&entries, &jump, true);
        self.sim_now.store(nanos, Ordering::Release);
        if let Some(sink) = self.sim_sink() {
            if nanos < old {
                sink.sim_jumped_back(self.lane, nanos);
            }
            sink.sim_advance(self.lane, nanos);
        }
        self.wake_sleepers_until(nanos);
        self.call_jumps(&entries, &jump, false);
    }

    fn wake_sleepers_until(&self, nanos: i64) {
        let woken: Vec<Waker> = {
            let mut inner = model_lock(&self.inner);
            let later = inner.sleepers.split_off(&(nanos.saturating_add(1), 0));
            std::mem::replace(&mut inner.sleepers, later)
                .into_values()
                .collect()
        };
        for w in woken {
            w.wake();
        }
    }

    pub(crate) fn wake_all_sleepers(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
        let woken: Vec<Waker> = std::mem::take(&mut model_lock(&self.inner).sleepers)
            .into_values()
            .collect();
        for w in woken {
            w.wake();
        }
    }

    /// Registers (or refreshes) a simulated-time sleeper; `None` if `until` has already
    /// passed or the generation moved (the caller re-checks).
    pub(crate) fn register_sleeper(
        &self,
        key: Option<(i64, u64)>,
        until: i64,
        generation: u64,
        waker: &Waker,
    ) -> Option<(i64, u64)> {
        let mut inner = model_lock(&self.inner);
        // Re-checked under the lock `set_sim_time` takes to wake sleepers.
        if self.sim_now() >= until || self.generation() != generation {
            return None;
        }
        let key = key.unwrap_or_else(|| {
            inner.next_sleeper += 1;
            (until, inner.next_sleeper)
        });
        inner.sleepers.insert(key, waker.clone());
        Some(key)
    }

    /// A timeline that is simulated from the start, at `start` ns: a virtual-time executor's
    /// (`executor/virtual_time.rs`), which alone moves it.
    pub(crate) fn new_virtual(sched: Weak<dyn SimTimeSink>, start: i64) -> Self {
        let source = Self::new(Some(sched));
        source.sim_now.store(start, Ordering::Release);
        source.sim_active.store(true, Ordering::Release);
        source
    }

    /// The earliest time anything waits for on this timeline: a timer's deadline on its lane
    /// or a sleeper's end.
    pub(crate) fn next_deadline(&self) -> Option<i64> {
        let sleeper = model_lock(&self.inner)
            .sleepers
            .keys()
            .next()
            .map(|(until, _)| *until);
        let timer = self.sim_sink().and_then(|s| s.sim_next_deadline(self.lane));
        match (sleeper, timer) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    pub(crate) fn remove_sleeper(&self, key: (i64, u64)) {
        model_lock(&self.inner).sleepers.remove(&key);
    }
}
