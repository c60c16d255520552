//! The shared timer scheduler: one OS thread per executor that sleeps on a condition variable
//! until the earliest deadline and hands each tick to its timer's `EntityDispatch`.
//!
//! # Ground rules
//!
//! - `SchedState` (the heap, the waiter's intent, the shutdown flag) is only touched under
//!   `SchedulerCore::state`. User calls (`reset`, `cancel`, drop) take that lock briefly; the
//!   scheduler thread holds it while it pops due timers and decides how to wait, and never
//!   while it delivers ticks or spins.
//! - Ticks are delivered after the lock is dropped, so a worker woken by a tick never wakes into
//!   a held scheduler lock, and a slow mailbox push never delays `reset()` callers.
//! - Because of that, a tick popped just before a user re-arms the timer can be handed over
//!   just after. Every user arm records, under the lock, the stamp of the new schedule's first
//!   deadline in `TimerTick::floor`; ticks stamped below it are discarded by `hand_over` and by
//!   the worker, and never block a tick of the new schedule.
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
//! The loom models in `loom_tests.rs` check that a registration racing with the waiter going
//! to sleep is always seen, and for the simulated-time lanes that a `/clock` advance racing a
//! re-arm leaves no tick of the old arming current and loses no tick.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use std::collections::HashMap;

use super::heap::{Expiry, GridTime, SimTime, TimerHeap, TimerId};
use super::TimerPrecision;
use crate::executor::dispatch::EntityDispatch;
use crate::sync::{model_lock as lock, AtomicU64, Condvar, Mutex, MutexGuard, Ordering};

/// Marks a stamp in `TimerTick::due` as simulated time. Wall stamps stay below it (2^62 ns is
/// 146 years past the epoch), and `u64::MAX`, the disarmed floor, lies above every stamp.
pub(crate) const SIM_STAMP: u64 = 1 << 62;

/// What the scheduler hands a timer entity.
pub(crate) struct TimerTick {
    pub(crate) dispatch: Arc<EntityDispatch>,
    /// The undelivered tick's stamp: its deadline as nanoseconds since the scheduler's epoch
    /// plus one, or for simulated time the simulated ns plus one with [`SIM_STAMP`] set; zero
    /// when no tick is waiting for the callback. Set by the scheduler, taken by the worker
    /// (swap to zero).
    pub(crate) due: AtomicU64,
    /// Ticks dropped over the timer's life.
    pub(crate) dropped_total: AtomicU64,
    /// The timer is in a simulated-time lane.
    pub(crate) sim: std::sync::atomic::AtomicBool,
    /// The stamp of the first deadline of the current arming (`u64::MAX` while disarmed).
    /// Set under the scheduler lock whenever a user arms, cancels or re-periods the timer.
    /// Deliveries run outside that lock, so an expiry popped just before a `reset()` or a
    /// mode change can reach `hand_over` afterwards; its stamp lies below the floor, which
    /// marks it as belonging to the old schedule: it is discarded, never delivered or counted.
    pub(crate) floor: AtomicU64,
}

impl TimerTick {
    pub(crate) fn new(dispatch: Arc<EntityDispatch>) -> Self {
        Self {
            dispatch,
            due: AtomicU64::new(0),
            dropped_total: AtomicU64::new(0),
            sim: std::sync::atomic::AtomicBool::new(false),
            floor: AtomicU64::new(u64::MAX),
        }
    }

    /// Whether a tick stamped `stamp` belongs to the current arming: at or after its first
    /// deadline and in the same time base (a tick in flight while the timer moved between the
    /// wall and a simulated lane is not).
    pub(crate) fn is_current(&self, stamp: u64) -> bool {
        let floor = self.floor.load(Ordering::Acquire);
        stamp >= floor && (stamp & SIM_STAMP) == (floor & SIM_STAMP)
    }

    fn drop_ticks(&self, n: u64) {
        self.dropped_total.fetch_add(n, Ordering::Relaxed);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Waiter {
    /// Examining the heap or delivering: it will look again before it waits.
    Busy,
    /// Waiting until this instant.
    Until(Instant),
    /// Waiting with no timer armed.
    Forever,
}

struct SchedState {
    heap: TimerHeap<TimerTick>,
    /// Timers paced by simulated clocks, one heap per clock ("lane"), keyed in simulated time.
    /// The thread never waits on these: they are examined only when their clock moves.
    sim: HashMap<u64, TimerHeap<TimerTick, SimTime>>,
    waiter: Waiter,
    shutdown: bool,
}

pub(crate) struct SchedulerCore {
    state: Mutex<SchedState>,
    wake: Condvar,
    /// Bumped, under `state`, whenever the waiter must re-examine the heap.
    generation: AtomicU64,
    wakeups: AtomicU64,
    /// Current hand-off lead in ns, adapted by [`Self::worker_arrived`] within `lead_cap_ns`.
    lead_ns: AtomicU64,
    /// `precision.handoff_lead`, lowered by [`Self::fit_lead`] for short periods.
    lead_cap_ns: AtomicU64,
    pub(crate) epoch: Instant,
    /// `CLOCK_MONOTONIC` at `epoch`, to report steady times exactly on the grid.
    pub(crate) epoch_steady_ns: i64,
    precision: TimerPrecision,
}

impl SchedulerCore {
    pub(crate) fn new(precision: TimerPrecision) -> Self {
        Self {
            state: Mutex::new(SchedState {
                heap: TimerHeap::default(),
                sim: HashMap::new(),
                waiter: Waiter::Busy,
                shutdown: false,
            }),
            wake: Condvar::new(),
            generation: AtomicU64::new(0),
            wakeups: AtomicU64::new(0),
            lead_ns: AtomicU64::new(precision.handoff_lead.as_nanos() as u64),
            lead_cap_ns: AtomicU64::new(precision.handoff_lead.as_nanos() as u64),
            epoch: Instant::now(),
            epoch_steady_ns: crate::clock::steady_nanos(),
            precision,
        }
    }

    /// A wall deadline as stored in `TimerTick::due`: ns since the epoch, plus one (below
    /// [`SIM_STAMP`] for the next 146 years).
    fn wall_stamp(&self, deadline: Instant) -> u64 {
        let ns = deadline.saturating_duration_since(self.epoch).as_nanos();
        u64::try_from(ns).map_or(SIM_STAMP - 1, |ns| ns.min(SIM_STAMP - 2) + 1)
    }

    /// A simulated deadline as stored in `TimerTick::due`: ns, plus one, marked.
    fn sim_stamp(deadline: SimTime) -> u64 {
        (deadline.0.max(0) as u64 + 1) | SIM_STAMP
    }

    /// Records where the timer's current arming starts. Called under the scheduler lock, so
    /// every expiry popped before it carries a stamp of the previous arming.
    fn set_floor<K: GridTime>(heap: &TimerHeap<TimerTick, K>, id: TimerId, stamp: Option<u64>) {
        if let Some(slot) = heap.slot(id) {
            slot.target
                .floor
                .store(stamp.unwrap_or(u64::MAX), Ordering::Release);
        }
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
        Self::set_floor(&state.heap, id, deadline.map(|d| self.wall_stamp(d)));
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
    /// popped meanwhile under the old arming, which the floor would then take as current.
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
        Self::set_floor(&state.heap, id, deadline.map(|d| self.wall_stamp(d)));
        if let Some(d) = deadline {
            self.kick_if_earlier(&mut state, d);
        }
    }

    /// Removes a timer. After this returns the scheduler holds no entry for it and will not
    /// start delivering a new tick for it, and a tick popped before (handed over outside the
    /// lock, possibly after this returns) no longer counts as current: the floor is raised to
    /// the disarmed sentinel, as for a cancel. `TimerState`'s drop relies on that: its stop
    /// bump comes after this, so a worker that notes `stops` only after the bump sees the
    /// raised floor in `take_tick` (and one that noted it before is caught by the bump).
    pub(crate) fn remove(&self, id: TimerId) {
        let mut state = lock(&self.state);
        Self::set_floor(&state.heap, id, None);
        state.heap.remove(id);
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

    /// Hands one expiry to its timer. Runs without the scheduler lock.
    fn deliver(&self, expiry: Expiry<TimerTick>) {
        let stamp = self.wall_stamp(expiry.deadline);
        Self::hand_over(&expiry.target, stamp, expiry.skipped);
    }

    fn hand_over(tick: &TimerTick, stamp: u64, skipped: u64) {
        if !tick.is_current(stamp) {
            // Popped before the timer was re-armed: a tick of the old schedule.
            return;
        }
        if skipped > 0 {
            tick.drop_ticks(skipped);
        }
        let mut waiting = tick.due.load(Ordering::Acquire);
        loop {
            if waiting != 0 && tick.is_current(waiting) {
                // The previous tick's callback has not started: drop this one (no backlog).
                tick.drop_ticks(1);
                return;
            }
            // Empty, or holding a tick of an old schedule that the worker would discard.
            match tick.due.compare_exchange_weak(
                waiting,
                stamp,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    tick.dispatch.notify();
                    return;
                }
                Err(now) => waiting = now,
            }
        }
    }

    /// Adds a timer to the lane of simulated clock `lane`.
    pub(crate) fn sim_insert(
        &self,
        lane: u64,
        tick: Arc<TimerTick>,
        deadline: Option<SimTime>,
        period: Duration,
    ) -> TimerId {
        tick.sim.store(true, std::sync::atomic::Ordering::Release);
        let mut state = lock(&self.state);
        let heap = state.sim.entry(lane).or_default();
        let id = heap.insert(tick, deadline, period);
        Self::set_floor(heap, id, deadline.map(Self::sim_stamp));
        id
    }

    /// Re-arms or cancels a simulated-clock timer, optionally with a new period.
    /// `when` reads the simulated clock under the scheduler lock, for the reason given at
    /// [`arm`](Self::arm): `/clock` moves the time before it pops, so a deadline read under the
    /// lock lies above every tick popped under the old arming. Returns the deadline armed.
    pub(crate) fn sim_arm(
        &self,
        lane: u64,
        id: TimerId,
        when: impl FnOnce() -> Option<SimTime>,
        period: Option<Duration>,
    ) -> Option<SimTime> {
        let mut state = lock(&self.state);
        let heap = state.sim.get_mut(&lane)?;
        if let Some(p) = period {
            heap.set_period(id, p);
        }
        let deadline = when();
        heap.arm(id, deadline);
        Self::set_floor(heap, id, deadline.map(Self::sim_stamp));
        deadline
    }

    /// Removes a simulated-clock timer; like [`remove`](Self::remove), a tick popped before no
    /// longer counts as current.
    pub(crate) fn sim_remove(&self, lane: u64, id: TimerId) {
        if let Some(heap) = lock(&self.state).sim.get_mut(&lane) {
            Self::set_floor(heap, id, None);
            heap.remove(id);
        }
    }

    /// A simulated-clock timer's next deadline.
    pub(crate) fn sim_deadline(&self, lane: u64, id: TimerId) -> Option<SimTime> {
        lock(&self.state).sim.get(&lane)?.slot(id)?.deadline
    }

    /// Simulated clock `lane` moved forward to `now`: hands over every timer now due, one call
    /// per timer with the grid points it skipped counted as missed. Costs O(k log n) for k
    /// timers due out of n; the others are not looked at.
    pub(crate) fn sim_advance(&self, lane: u64, now: SimTime) {
        let mut due = Vec::new();
        {
            let mut state = lock(&self.state);
            let Some(heap) = state.sim.get_mut(&lane) else {
                return;
            };
            while let Some(e) = heap.pop_due(now, now) {
                due.push(e);
            }
        }
        for e in due {
            Self::hand_over(&e.target, Self::sim_stamp(e.deadline), e.skipped);
        }
    }

    /// Simulated clock `lane` jumped back to `now`: as rcl does, a repeating timer whose last
    /// grid point lies after `now` restarts one period from `now`. O(n), on backward jumps only.
    pub(crate) fn sim_jumped_back(&self, lane: u64, now: SimTime) {
        let mut state = lock(&self.state);
        let Some(heap) = state.sim.get_mut(&lane) else {
            return;
        };
        for (id, deadline, period) in heap.armed() {
            let last = SimTime(
                deadline
                    .0
                    .saturating_sub(crate::clock::saturating_nanos(period)),
            );
            if !period.is_zero() && last > now {
                let restart = now.checked_plus(period);
                heap.arm(id, restart);
                Self::set_floor(heap, id, restart.map(Self::sim_stamp));
            }
        }
    }

    /// Pops everything due for hand-off at `now` into `due`.
    fn collect_due(&self, state: &mut SchedState, now: Instant, due: &mut Vec<Expiry<TimerTick>>) {
        let horizon = now + self.lead();
        while let Some(e) = state.heap.pop_due(horizon, now) {
            due.push(e);
        }
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
    pub(crate) fn run_while(&self, mut keep_going: impl FnMut(u64) -> bool) {
        let mut due: Vec<Expiry<TimerTick>> = Vec::new();
        let mut delivered = 0;
        let mut state = lock(&self.state);
        while !state.shutdown && keep_going(delivered) {
            let now = Instant::now();
            self.collect_due(&mut state, now, &mut due);
            if !due.is_empty() {
                drop(state);
                for expiry in due.drain(..) {
                    self.deliver(expiry);
                    delivered += 1;
                }
                state = lock(&self.state);
                continue;
            }
            state = self.wait(state);
        }
    }
}

/// Sets the calling thread's timer slack (Linux `PR_SET_TIMERSLACK`): how late the kernel may
/// fire this thread's timed waits to batch wake-ups. The default 50 µs directly adds to every
/// tick's lateness.
fn set_thread_timer_slack(slack: Duration) {
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

    /// Whether the thread has exited.
    pub(crate) fn has_exited(&self) -> bool {
        self.thread
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .is_none_or(|h| h.is_finished())
    }
}

#[cfg(all(test, not(rclev_loom)))]
mod tests {
    use super::*;
    use crate::executor::mailbox::Mailbox;

    fn tick_with_floor(floor: u64) -> TimerTick {
        let tick = TimerTick::new(EntityDispatch::unbound(Arc::new(Mailbox::default())));
        tick.floor.store(floor, Ordering::Release);
        tick
    }

    #[test]
    fn a_stamp_of_the_other_time_base_is_never_current() {
        let sim = |ns: u64| (ns + 1) | SIM_STAMP;
        let wall = tick_with_floor(1_000);
        assert!(wall.is_current(1_000) && wall.is_current(5_000));
        assert!(!wall.is_current(999), "before the floor");
        assert!(
            !wall.is_current(sim(2_000)),
            "a sim tick after a switch to the wall"
        );
        let simulated = tick_with_floor(sim(1_000));
        assert!(simulated.is_current(sim(1_000)) && simulated.is_current(sim(9_000)));
        assert!(
            !simulated.is_current(5_000_000_000),
            "a wall tick after a switch to sim"
        );
        assert!(!simulated.is_current(sim(999)));
        let disarmed = tick_with_floor(u64::MAX);
        assert!(!disarmed.is_current(sim(i64::MAX as u64 >> 2)) && !disarmed.is_current(1));
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
}
