//! The shared timer scheduler: one OS thread per executor that sleeps on a condition variable
//! until the earliest deadline and hands each tick to its timer's `EntityDispatch`.
//!
//! # Ground rules
//!
//! - `SchedState` (the heap, the waiter's intent, the shutdown flag) is only touched under
//!   `SchedulerCore::state`. User calls (`reset`, `cancel`, drop) take that lock briefly; the
//!   scheduler thread holds it while it pops due timers and decides how to wait, and never
//!   while it announces ticks or spins.
//! - A tick is handed over in two steps. [`hand_over`] puts its stamp in the timer's `due`
//!   slot *under the lock, in the lock section that popped it* (the scheduler thread's
//!   `collect_due`, a worker's [`pull`](SchedulerCore::pull), a `/clock` advance); the
//!   announcement (the dispatch's `notify`, a mailbox push that may wake the worker) comes
//!   after the lock is dropped, so a worker woken by a tick never wakes into a held scheduler
//!   lock, and a slow mailbox push never delays `reset()` callers.
//! - Every new arming (arm, cancel, re-period, removal, lane switch; see
//!   [`start_arming`]) records the stamp of its first deadline in
//!   `TimerTick::floor` and empties `due`, under the same lock. With the rule above, `due`
//!   only ever holds a tick of the timer's current arming, and the ticks of one arming enter it
//!   in deadline order (each pop advances the timer's grid under the lock). A tick popped
//!   before a re-arm is in `due` before the re-arm, which drops it; none can arrive after it.
//!   The worker takes ticks out without this lock (`entry.rs` states the rules of the
//!   per-timer state both sides share; `core.rs`, at `CallbackSlot`, how a stop orders itself
//!   with the worker's take).
//!
//!   The store once ran after the lock was dropped, and a stamp was all that told an old
//!   arming's tick from a new one's, which is not enough: a tick popped ahead of its deadline
//!   (early hand-off) under the old mode could land after a mode change that kept an earlier
//!   deadline (a tick still waiting), with a stamp above the new arming's floor; the new
//!   one-shot then ran for that tick, and again for its own (issue 24, the loom model
//!   `loom_a_mode_change_never_runs_a_tick_popped_under_the_old_mode`). The same gap let a
//!   tick the watchdog took back land after the worker had pulled and taken a later one
//!   (`loom_a_watchdog_take_back_racing_a_pull_keeps_ticks_in_order`).
//! - The simulated-time lanes (`sim.rs`) live in the same state under the same lock.
//!
//! # The sleep/wake handshake
//!
//! Before waiting, the thread records under the lock *how* it waits in `SchedState::waiter`
//! (`Forever`, or `Until(t)`) and snapshots `generation`. A registrant that arms a deadline
//! needing a wake-up earlier than `t` bumps `generation` and notifies the condvar — under the
//! same lock. Because the decision ("the earliest deadline is d, so sleep until t") and the
//! condvar wait happen under one lock acquisition, a registration cannot land between them;
//! the wait loop re-checks `generation` (the predicate) after every return, so spurious or
//! early returns are harmless and a notification that came before the wait began is not lost.
//!
//! Registrants only signal when the new deadline beats the waiter's target (`waiter == Busy`
//! means the thread will re-examine the heap anyway), which keeps `reset()` on a busy executor
//! from costing a futex wake each.
//!
//! # Precision
//!
//! The thread never busy-waits. It hands a tick over *early*, by the adaptive hand-off lead
//! (see [`TimerPrecision::handoff_lead`]), and the worker busy-waits the last microseconds to the
//! exact deadline before it calls back. One early hand-off thus hides both the scheduler's own
//! wake-up overshoot and the worker's wake-up latency, and only one thread spins.
//!
//! Fast timers leave this thread's path after their first tick: their worker pulls each next
//! tick itself ([`SchedulerCore::pull`]) and sleeps to it; the thread only wakes once per
//! [`PACING_WATCHDOG`] for them (see `heap.rs`).
//!
//! The loom models in `loom_tests.rs` check that a registration racing with the waiter going
//! to sleep is always seen; that a re-arm racing the scheduler thread's pop, a worker's pull
//! or a `/clock` advance leaves no tick of the old arming to run; that a mode change racing an
//! early hand-off never runs the new callback for a tick of the old mode; and that a watchdog
//! take-back racing a pull keeps one arming's ticks in order.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::entry::{hand_over, start_arming, Stamp, TimerTick};
use super::heap::{SimTime, TimerHeap, TimerId};
use super::options::TimerPrecision;
use super::sim::SimLanes;
use super::stats::TickCounters;
use crate::base::sync::{model_lock as lock, AtomicU64, Condvar, Mutex, MutexGuard, Ordering};
use crate::clock::MonotonicEpoch;

/// How far ahead a worker pulls its timer's next tick (see [`SchedulerCore::pull`]): timers of
/// 500 Hz and faster are paced by their workers; slower ones need the scheduler thread's
/// wake-up once per tick anyway, and gain nothing.
pub(crate) const PULL_HORIZON: Duration = Duration::from_millis(2);

/// How often the scheduler thread checks that the workers pacing timers keep pulling.
pub(crate) const PACING_WATCHDOG: Duration = Duration::from_millis(100);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Waiter {
    /// Examining the heap or delivering: it will look again before it waits.
    Busy,
    /// Waiting until this instant.
    Until(Instant),
    /// Waiting with no timer armed.
    Forever,
}

/// Everything behind the scheduler lock.
pub(super) struct SchedState {
    heap: TimerHeap<TimerTick>,
    /// Timers paced by simulated clocks, one heap per clock ("lane"), keyed in simulated time.
    /// The thread never waits on these: they are examined only when their clock moves.
    pub(super) sim: SimLanes,
    waiter: Waiter,
    shutdown: bool,
}

/// The scheduler without its thread: what timers register with, and the loop the thread runs.
pub(crate) struct SchedulerCore {
    pub(super) state: Mutex<SchedState>,
    wake: Condvar,
    /// Bumped, under `state`, whenever the waiter must re-examine the heap.
    generation: AtomicU64,
    wakeups: AtomicU64,
    /// Current hand-off lead in ns, adapted by [`Self::worker_arrived`] within `lead_cap_ns`.
    lead_ns: AtomicU64,
    /// `precision.handoff_lead`, lowered by [`Self::fit_lead`] for short periods.
    lead_cap_ns: AtomicU64,
    /// Wall stamps count from it, and steady times are reported through it, exactly on the
    /// grid.
    pub(crate) epoch: MonotonicEpoch,
    precision: TimerPrecision,
    /// Where ticks went and how late each thread was (diagnostics only).
    pub(crate) counters: TickCounters,
}

impl SchedulerCore {
    pub(crate) fn new(precision: TimerPrecision) -> Self {
        Self {
            state: Mutex::new(SchedState {
                heap: TimerHeap::default(),
                sim: SimLanes::default(),
                waiter: Waiter::Busy,
                shutdown: false,
            }),
            wake: Condvar::new(),
            generation: AtomicU64::new(0),
            wakeups: AtomicU64::new(0),
            lead_ns: AtomicU64::new(precision.handoff_lead.as_nanos() as u64),
            lead_cap_ns: AtomicU64::new(precision.handoff_lead.as_nanos() as u64),
            epoch: MonotonicEpoch::now(),
            precision,
            counters: TickCounters::default(),
        }
    }

    /// A wall deadline's stamp, relative to this scheduler's epoch.
    fn wall_stamp(&self, deadline: Instant) -> Stamp {
        Stamp::wall(self.epoch.since(deadline))
    }

    /// The deadline a wall stamp stands for (the inverse of `wall_stamp`).
    pub(super) fn wall_deadline(&self, stamp: Stamp) -> Instant {
        self.epoch
            .instant_after(Duration::from_nanos(stamp.nanos()))
    }

    /// How early ticks are handed to workers.
    fn lead(&self) -> Duration {
        Duration::from_nanos(self.lead_ns.load(Ordering::Relaxed))
    }

    /// When the thread wants to wake for a deadline: at its hand-off point.
    fn wake_for(&self, deadline: Instant) -> Instant {
        deadline.checked_sub(self.lead()).unwrap_or(deadline)
    }

    /// Caps the hand-off lead at half the shortest period, so ticks are never handed over
    /// more than one period ahead.
    fn fit_lead(&self, period: Duration) {
        if !period.is_zero() {
            let cap = (period / 2).as_nanos() as u64;
            self.lead_cap_ns.fetch_min(cap, Ordering::Relaxed);
            self.lead_ns.fetch_min(cap, Ordering::Relaxed);
        }
    }

    /// Whether the adaptive lead sits at its cap: early hand-off cannot cover more wake-up
    /// latency, so workers must stay awake between ticks.
    pub(crate) fn lead_is_capped(&self) -> bool {
        self.lead_ns.load(Ordering::Relaxed) >= self.lead_cap_ns.load(Ordering::Relaxed)
    }

    /// Feedback from a worker that started a tick `early_ns` before its deadline (negative:
    /// after it). The lead grows at once by any lateness and shrinks slowly while workers
    /// arrive with time to spare, so it settles just above the typical scheduler-overshoot plus
    /// worker-wake-up latency instead of spinning the full cap on every tick.
    pub(crate) fn worker_arrived(&self, early_ns: i64) {
        self.counters.worker_arrived(early_ns);
        const TARGET: i64 = 2_000;
        let lead = self.lead_ns.load(Ordering::Relaxed) as i64;
        let cap = self.lead_cap_ns.load(Ordering::Relaxed) as i64;
        let next = if early_ns < TARGET / 2 {
            lead + (TARGET - early_ns)
        } else {
            lead - (early_ns - TARGET) / 16
        };
        let next = next.clamp(0, cap);
        // Written only on change: the scheduler thread reads this line on every hand-off.
        if next != lead {
            self.lead_ns.store(next as u64, Ordering::Relaxed);
        }
    }

    fn kick_if_earlier(&self, state: &mut SchedState, deadline: Instant) {
        let kick = match state.waiter {
            Waiter::Busy => false,
            Waiter::Forever => true,
            Waiter::Until(t) => self.wake_for(deadline) < t,
        };
        if kick {
            state.waiter = Waiter::Busy;
            self.generation.fetch_add(1, Ordering::Release);
            self.wake.notify_one();
        }
    }

    pub(crate) fn insert(
        &self,
        tick: Arc<TimerTick>,
        deadline: Option<Instant>,
        period: Duration,
    ) -> TimerId {
        self.fit_lead(period);
        let mut state = lock(&self.state);
        let id = state.heap.insert(tick, deadline, period);
        start_arming(&state.heap, id, deadline.map(|d| self.wall_stamp(d)));
        if let Some(d) = deadline {
            self.kick_if_earlier(&mut state, d);
        }
        id
    }

    /// Re-arms (`Some`) or cancels (`None`, keeping the slot as a tombstone).
    /// Optionally with a new period, in the same step.
    ///
    /// `when` gives the deadline and is evaluated under the scheduler lock: a deadline computed
    /// from a clock read before the lock could, after a delay, lie below the stamp of a tick
    /// popped meanwhile under the old arming, and the worker, which counts missed grid points
    /// from the previous tick it ran when that lies above the floor, would count them wrong.
    pub(crate) fn arm(
        &self,
        id: TimerId,
        when: impl FnOnce() -> Option<Instant>,
        period: Option<Duration>,
    ) {
        if let Some(p) = period {
            self.fit_lead(p);
        }
        let mut state = lock(&self.state);
        if let Some(p) = period {
            state.heap.set_period(id, p);
        }
        let deadline = when();
        state.heap.arm(id, deadline);
        start_arming(&state.heap, id, deadline.map(|d| self.wall_stamp(d)));
        match deadline {
            Some(d) => self.kick_if_earlier(&mut state, d),
            None => self.kick_if_idle(&mut state),
        }
    }

    /// After a cancel or removal: if no timer is armed any more, wakes a thread waiting for
    /// one (a paced timer's watchdog, up to [`PACING_WATCHDOG`] away) so that it waits
    /// forever now, and an idle executor has no timer wake-up left. Only then: a cancel with
    /// other timers armed leaves the thread's plan alone (it looks again when it wakes).
    fn kick_if_idle(&self, state: &mut SchedState) {
        if matches!(state.waiter, Waiter::Until(_)) && state.heap.next_deadline().is_none() {
            state.waiter = Waiter::Busy;
            self.generation.fetch_add(1, Ordering::Release);
            self.wake.notify_one();
        }
    }

    /// The worker's side of pacing (see `heap.rs`): called by the worker right after it ran
    /// a tick of timer `id`, puts the timer's next tick in its `due` slot at once if that is
    /// due within [`PULL_HORIZON`], *without* announcing it to the dispatch: the caller, the
    /// timer's own worker, sleeps to its deadline itself and then runs it (or announces it
    /// now). The scheduler thread is then not on the tick's path at all: it only checks, once
    /// per [`PACING_WATCHDOG`], that the worker keeps pulling. Returns the deadline of the tick
    /// handed over.
    ///
    /// The tick is popped and stored under the lock as the scheduler thread's are, so a re-arm
    /// racing with a pull, or the watchdog taking the timer back, is resolved by the same rules
    /// (see the ground rules). `now` is the caller's reading of the clock (a model passes a
    /// time of its choosing).
    pub(crate) fn pull(&self, id: TimerId, now: Instant) -> Option<Instant> {
        let mut state = lock(&self.state);
        if state.shutdown {
            return None;
        }
        match state
            .heap
            .pull(id, now + PULL_HORIZON, now, PACING_WATCHDOG)
        {
            Ok(pulled) => {
                let stamp = self.wall_stamp(pulled.deadline);
                hand_over(&pulled.target, stamp, pulled.skipped, &self.counters)
                    .then_some(pulled.deadline)
            }
            Err(unpaced) => {
                if let Some(deadline) = unpaced {
                    self.kick_if_earlier(&mut state, deadline);
                }
                None
            }
        }
    }

    /// Removes a timer. After this returns the scheduler holds no entry for it and will not
    /// hand over a tick of it again, and the tick waiting in `due` is dropped, as for a cancel
    /// (the floor is the disarmed sentinel). `TimerState`'s drop relies on that: it removes and
    /// bumps `stops` in one step under the timer's callback lock (`TimerCore::stop`), so a
    /// worker that takes a tick after it finds none, and one that took it before is caught by
    /// the bump.
    pub(crate) fn remove(&self, id: TimerId) {
        let mut state = lock(&self.state);
        start_arming(&state.heap, id, None);
        state.heap.remove(id);
        self.kick_if_idle(&mut state);
    }

    /// The timer's next deadline (`None` if cancelled or a spent one-shot).
    pub(crate) fn deadline(&self, id: TimerId) -> Option<Instant> {
        lock(&self.state).heap.slot(id).and_then(|s| s.deadline)
    }

    pub(crate) fn wakeups(&self) -> u64 {
        self.wakeups.load(Ordering::Relaxed)
    }

    pub(crate) fn shutdown(&self) {
        let mut state = lock(&self.state);
        state.shutdown = true;
        self.generation.fetch_add(1, Ordering::Release);
        self.wake.notify_all();
    }

    /// Pops everything due for hand-off at `now` and hands it over (under the lock, see the
    /// ground rules); the timers whose tick was stored go into `announce`, for the caller to
    /// announce once it dropped the lock. Returns how many ticks it popped.
    fn collect_due(
        &self,
        state: &mut SchedState,
        now: Instant,
        announce: &mut Vec<Arc<TimerTick>>,
    ) -> u64 {
        let horizon = now + self.lead();
        let mut popped = 0;
        while let Some(e) = state.heap.pop_due(horizon, now) {
            popped += 1;
            if hand_over(
                &e.target,
                self.wall_stamp(e.deadline),
                e.skipped,
                &self.counters,
            ) {
                announce.push(e.target);
            }
        }
        popped
    }

    /// Waits as the heap says: forever, or until the head's hand-off point. Returns with the
    /// lock held and `waiter == Busy`.
    fn wait<'a>(&'a self, mut state: MutexGuard<'a, SchedState>) -> MutexGuard<'a, SchedState> {
        let seen = self.generation.load(Ordering::Acquire);
        let changed = || self.generation.load(Ordering::Acquire) != seen;
        match state.heap.next_deadline() {
            None => {
                state.waiter = Waiter::Forever;
                while !changed() && !state.shutdown {
                    state = self.wake.wait(state).unwrap_or_else(|p| p.into_inner());
                }
                self.wakeups.fetch_add(1, Ordering::Relaxed);
            }
            Some(deadline) => {
                // Never sleep for less than half the lead: ticks are handed over a lead early,
                // so waking up to half a lead late still hands them over early, and with dense
                // deadlines (many timers) it turns a futex round trip per timer into one per
                // batch.
                let wake_at = self
                    .wake_for(deadline)
                    .max(Instant::now() + self.lead() / 2);
                state.waiter = Waiter::Until(wake_at);
                loop {
                    let now = Instant::now();
                    if changed() || state.shutdown || now >= wake_at {
                        break;
                    }
                    state = self
                        .wake
                        .wait_timeout(state, wake_at - now)
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                }
                if !changed() {
                    let overshoot = Instant::now().saturating_duration_since(wake_at);
                    self.counters.scheduler_woke(overshoot.as_nanos() as u64);
                }
                self.wakeups.fetch_add(1, Ordering::Relaxed);
            }
        }
        state.waiter = Waiter::Busy;
        state
    }

    /// The scheduler thread's body.
    pub(crate) fn run(&self) {
        set_thread_timer_slack(self.precision.timer_slack);
        self.run_while(|_| true);
    }

    /// The scheduler loop, until shutdown or until `keep_going(ticks delivered so far)` says
    /// stop (the loom models stop after the tick they wait for).
    ///
    /// `delivered` counts the ticks popped, whether they were stored or dropped (the timer's
    /// previous tick still waiting).
    pub(crate) fn run_while(&self, mut keep_going: impl FnMut(u64) -> bool) {
        let mut announce: Vec<Arc<TimerTick>> = Vec::new();
        let mut delivered = 0;
        let mut state = lock(&self.state);
        while !state.shutdown && keep_going(delivered) {
            let now = Instant::now();
            let popped = self.collect_due(&mut state, now, &mut announce);
            if popped > 0 {
                delivered += popped;
                drop(state);
                for tick in announce.drain(..) {
                    tick.dispatch.notify();
                }
                state = lock(&self.state);
                continue;
            }
            state = self.wait(state);
        }
    }
}

/// The simulated-time lanes (`sim.rs`), under the scheduler lock.
impl SchedulerCore {
    /// Adds a timer to the lane of simulated clock `lane`.
    pub(crate) fn sim_insert(
        &self,
        lane: u64,
        tick: Arc<TimerTick>,
        deadline: Option<SimTime>,
        period: Duration,
    ) -> TimerId {
        lock(&self.state).sim.insert(lane, tick, deadline, period)
    }

    /// Re-arms or cancels a simulated-clock timer, optionally with a new period.
    /// `when` reads the simulated clock under the scheduler lock, for the reason given at
    /// [`arm`](Self::arm): `/clock` moves the time before it pops, so a deadline read under the
    /// lock lies at or after every tick popped under the old arming. Returns the deadline
    /// armed.
    pub(crate) fn sim_arm(
        &self,
        lane: u64,
        id: TimerId,
        when: impl FnOnce() -> Option<SimTime>,
        period: Option<Duration>,
    ) -> Option<SimTime> {
        lock(&self.state).sim.arm(lane, id, when, period)
    }

    /// Removes a simulated-clock timer; like [`remove`](Self::remove), the tick waiting in
    /// `due` is dropped and no other is handed over.
    pub(crate) fn sim_remove(&self, lane: u64, id: TimerId) {
        lock(&self.state).sim.remove(lane, id)
    }

    /// A simulated-clock timer's next deadline.
    pub(crate) fn sim_deadline(&self, lane: u64, id: TimerId) -> Option<SimTime> {
        lock(&self.state).sim.deadline(lane, id)
    }

    /// Simulated clock `lane` moved forward to `now`: hands over every timer now due. Each
    /// tick is stored in its timer's `due` under the lock, as it is popped, and announced after
    /// the lock is dropped (the ground rules above).
    pub(crate) fn sim_advance(&self, lane: u64, now: SimTime) {
        let mut announce = Vec::new();
        lock(&self.state)
            .sim
            .advance(lane, now, &self.counters, &mut announce);
        for tick in announce {
            tick.dispatch.notify();
        }
    }

    /// Simulated clock `lane` jumped back to `now` (see [`SimLanes::jumped_back`]).
    pub(crate) fn sim_jumped_back(&self, lane: u64, now: SimTime) {
        lock(&self.state).sim.jumped_back(lane, now)
    }
}

/// Simulated-time steps arrive from the clock layer through this.
impl crate::clock::SimTimeSink for SchedulerCore {
    fn sim_jumped_back(&self, lane: u64, nanos: i64) {
        SchedulerCore::sim_jumped_back(self, lane, SimTime(nanos))
    }
    fn sim_advance(&self, lane: u64, nanos: i64) {
        SchedulerCore::sim_advance(self, lane, SimTime(nanos))
    }
    fn sim_next_deadline(&self, lane: u64) -> Option<i64> {
        lock(&self.state).sim.next_deadline(lane).map(|t| t.0)
    }
}

/// Sets the calling thread's timer slack (Linux `PR_SET_TIMERSLACK`): how late the kernel may
/// end this thread's timed sleeps and waits to batch wake-ups. The default 50 µs directly adds
/// to every tick's lateness; rclev's timer threads use [`TimerPrecision::timer_slack`]. Affects
/// only the calling thread (and threads it starts afterwards); zero is taken as 1 ns. A no-op
/// on other systems than Linux.
pub fn set_thread_timer_slack(slack: Duration) {
    #[cfg(target_os = "linux")]
    {
        // Zero would mean "reset to the default" to the kernel.
        let ns = (slack.as_nanos() as libc::c_ulong).max(1);
        // SAFETY: PR_SET_TIMERSLACK takes an integer argument and affects only the calling
        // thread; it cannot fail in a way that leaves memory in a bad state.
        unsafe {
            libc::prctl(
                libc::PR_SET_TIMERSLACK,
                ns,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
            );
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = slack;
}

/// The executor's scheduler: the core plus its thread.
pub(crate) struct TimerScheduler {
    pub(crate) core: Arc<SchedulerCore>,
    thread: std::sync::Mutex<Option<JoinHandle<()>>>,
}

impl TimerScheduler {
    pub(crate) fn start(precision: TimerPrecision) -> std::io::Result<Self> {
        let core = Arc::new(SchedulerCore::new(precision));
        let c = core.clone();
        let thread = std::thread::Builder::new()
            .name("rclev-timers".into())
            .spawn(move || c.run())?;
        Ok(Self {
            core,
            thread: std::sync::Mutex::new(Some(thread)),
        })
    }

    /// A scheduler whose thread is never started, for the loom models: they drive the core
    /// (`run_while`, `sim_advance`) from their own threads.
    #[cfg(all(test, rclev_loom))]
    pub(crate) fn without_thread(precision: TimerPrecision) -> Self {
        Self {
            core: Arc::new(SchedulerCore::new(precision)),
            thread: std::sync::Mutex::new(None),
        }
    }

    pub(crate) fn shutdown(&self) {
        self.core.shutdown();
    }

    /// Stops the thread and waits for it to exit.
    pub(crate) fn join(&self) {
        self.core.shutdown();
        let handle = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(h) = handle {
            let _ = h.join();
        }
    }

    pub(crate) fn wakeups(&self) -> u64 {
        self.core.wakeups()
    }

    pub(crate) fn stats(&self) -> super::stats::TimerStats {
        self.core.counters.snapshot()
    }

    /// Whether the thread has exited.
    pub(crate) fn has_exited(&self) -> bool {
        self.thread
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .is_none_or(|h| h.is_finished())
    }
}
