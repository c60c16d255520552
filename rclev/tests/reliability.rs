//! The reliability suite of issue 9: timer churn, message flood, service storm, shutdown under
//! load, a panic in every callback kind, and a blocking callback on every runtime choice. Each
//! stress phase runs for a time budget and checks invariants that must hold however the threads
//! interleave: no callback starts after the call that stopped it returned, no message is lost or
//! reordered, every service call resolves exactly once, shutdown is prompt and final, panics are
//! reported and isolated, and workers do not wait for each other.
//!
//! The budget is `RCLEV_STRESS_SECS` seconds per stress phase (default 2, so that the file takes
//! well under a minute in debug on two cores). A long run:
//!
//! ```text
//! RCLEV_STRESS_SECS=60 cargo test --release --test reliability -- --nocapture
//! ```
//!
//! Each test prints a one-line summary of its figures per configuration (`--nocapture` shows
//! them). The tests take turns (one lock): on a small machine, stress tests running side by side
//! would only measure each other. Nothing asserts speed except the loosest of bounds; every wait
//! has a deadline of seconds, so a failure ends the test instead of hanging it.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicU8, Ordering::SeqCst};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use rclev::interfaces::example_interfaces::action::Fibonacci;
use rclev::interfaces::example_interfaces::action::Fibonacci_Goal as FibonacciGoal;
use rclev::interfaces::example_interfaces::action::Fibonacci_Result as FibonacciResult;
use rclev::interfaces::example_interfaces::srv::AddTwoInts;
use rclev::interfaces::example_interfaces::srv::AddTwoInts_Request as AddTwoIntsRequest;
use rclev::interfaces::example_interfaces::srv::AddTwoInts_Response as AddTwoIntsResponse;
use rclev::interfaces::std_msgs::msg::Int64;
use rclev::{
    ActionClient, ActionServer, ActionServerOptions, CancelResponse, Client, Context, Error,
    Executor, ExecutorOptions, GoalEnd, GoalResponse, GoalState, IntoPrimitiveOptions,
    IntoTimerOptions, JumpThreshold, Node, QoSProfile, RuntimeChoice, ServerGoalHandle, Service,
    SpinOptions, Subscription, Timer, TimerInfo, TimerOptions, Worker,
};

// ---------------------------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------------------------

const DEFAULT_STRESS_SECS: f64 = 2.0;

/// How long a condition that should hold promptly may take before the test fails.
const DEADLINE: Duration = Duration::from_secs(20);

/// How long a service call or an action goal may stay unresolved.
const CALL_DEADLINE: Duration = Duration::from_secs(10);

/// The stress budget: `RCLEV_STRESS_SECS` seconds per stress phase.
fn budget() -> Duration {
    std::env::var("RCLEV_STRESS_SECS")
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .map_or(
            Duration::from_secs_f64(DEFAULT_STRESS_SECS),
            Duration::from_secs_f64,
        )
}

/// The tests of this file run one at a time.
fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// A small xorshift generator: the tests need no statistical quality, only variety.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Threads of this process whose name starts with `prefix`. Worker threads are named
/// `rclev-<node name>`, cut to 15 bytes.
fn threads_named(prefix: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.starts_with(prefix))
        .count()
}

/// Polls `done` every millisecond; how long it took, or `None` after `limit`.
fn poll_until(limit: Duration, mut done: impl FnMut() -> bool) -> Option<Duration> {
    let start = Instant::now();
    loop {
        if done() {
            return Some(start.elapsed());
        }
        if start.elapsed() >= limit {
            return None;
        }
        thread::sleep(Duration::from_millis(1));
    }
}

/// [`poll_until`] that fails the test after `limit`.
fn wait_for(what: &str, limit: Duration, done: impl FnMut() -> bool) -> Duration {
    poll_until(limit, done)
        .unwrap_or_else(|| panic!("timed out after {limit:?} waiting for {what}"))
}

/// Joins threads, failing the test if they take longer than `limit` together.
fn join_within<T>(handles: Vec<JoinHandle<T>>, limit: Duration, what: &str) -> Vec<T> {
    let deadline = Instant::now() + limit;
    handles
        .into_iter()
        .map(|h| {
            while !h.is_finished() {
                assert!(
                    Instant::now() < deadline,
                    "{what} did not finish within {limit:?}"
                );
                thread::sleep(Duration::from_millis(1));
            }
            h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
        })
        .collect()
}

/// Runs `fut` on a runtime of its own, failing the test after [`CALL_DEADLINE`].
fn resolve<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async { tokio::time::timeout(CALL_DEADLINE, fut).await })
        .unwrap_or_else(|_| panic!("{what} did not resolve within {CALL_DEADLINE:?}"))
}

/// Set right after `shutdown()` returned; a callback that sees it set started too late.
#[derive(Default)]
struct ShutFlag {
    down: AtomicBool,
    late: AtomicU64,
}

impl ShutFlag {
    /// Called first thing by every callback of the tests that shut down under load.
    fn check(&self) {
        if self.down.load(SeqCst) {
            self.late.fetch_add(1, SeqCst);
        }
    }
}

/// The runtime choices of [`RuntimeChoice`], with `Auto` both outside and inside a runtime.
#[derive(Clone, Copy, Debug)]
enum Rt {
    /// `Auto` outside any runtime: a thread per worker.
    Auto,
    ThreadPerWorker,
    /// `Own { worker_threads: 2 }`.
    Own2,
    /// `Auto` created inside a two-thread tokio runtime, which it adopts.
    AutoInTokio,
}

impl Rt {
    const ALL: [Rt; 4] = [Rt::Auto, Rt::ThreadPerWorker, Rt::Own2, Rt::AutoInTokio];

    fn name(self) -> &'static str {
        match self {
            Rt::Auto => "Auto, thread per worker",
            Rt::ThreadPerWorker => "ThreadPerWorker",
            Rt::Own2 => "Own{worker_threads:2}",
            Rt::AutoInTokio => "Auto in a 2-thread tokio runtime",
        }
    }
}

/// An executor on one of the runtime choices. Fields drop in order: the executor before the
/// tokio runtime it adopted.
struct TestExecutor {
    executor: Arc<Executor>,
    _tokio: Option<tokio::runtime::Runtime>,
}

impl TestExecutor {
    fn new(rt: Rt, mut options: ExecutorOptions) -> Self {
        options.runtime = match rt {
            Rt::Auto | Rt::AutoInTokio => RuntimeChoice::Auto,
            Rt::ThreadPerWorker => RuntimeChoice::ThreadPerWorker,
            Rt::Own2 => RuntimeChoice::Own { worker_threads: 2 },
        };
        let context = Context::default();
        match rt {
            Rt::AutoInTokio => {
                let tokio = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                    .unwrap();
                let executor = tokio
                    .block_on(async move { context.create_executor(options) })
                    .unwrap();
                Self {
                    executor: Arc::new(executor),
                    _tokio: Some(tokio),
                }
            }
            _ => Self {
                executor: Arc::new(context.create_executor(options).unwrap()),
                _tokio: None,
            },
        }
    }
}

impl std::ops::Deref for TestExecutor {
    type Target = Arc<Executor>;
    fn deref(&self) -> &Arc<Executor> {
        &self.executor
    }
}

/// A spin on a thread of its own. If the test fails before the spin was stopped, dropping this
/// shuts the executor down so nothing is left spinning.
struct Spinner {
    executor: Arc<Executor>,
    done: Receiver<(Vec<Error>, Instant)>,
    finished: bool,
}

impl Spinner {
    fn start(executor: &Arc<Executor>) -> Self {
        let (tx, done) = std::sync::mpsc::channel();
        let e = executor.clone();
        let limit = budget() * 4 + Duration::from_secs(120);
        thread::Builder::new()
            .name("spinner".into())
            .spawn(move || {
                let errors = e.spin(SpinOptions::default().timeout(limit));
                let _ = tx.send((errors, Instant::now()));
            })
            .unwrap();
        Self {
            executor: executor.clone(),
            done,
            finished: false,
        }
    }

    /// Halts the spin and returns its errors. A halt that comes before the spin began waits
    /// for nothing, so it is repeated until the spin returns.
    fn halt(mut self) -> Vec<Error> {
        let deadline = Instant::now() + DEADLINE;
        loop {
            self.executor.commands().halt_spinning();
            match self.done.recv_timeout(Duration::from_millis(10)) {
                Ok((errors, _)) => {
                    self.finished = true;
                    return errors;
                }
                Err(RecvTimeoutError::Timeout) => assert!(
                    Instant::now() < deadline,
                    "the spin did not return after halt_spinning()"
                ),
                Err(RecvTimeoutError::Disconnected) => panic!("the spinning thread died"),
            }
        }
    }

    /// Waits for the spin to return by itself; its errors and when it returned.
    fn returned_within(mut self, limit: Duration) -> (Vec<Error>, Instant) {
        let r = self
            .done
            .recv_timeout(limit)
            .unwrap_or_else(|e| panic!("the spin did not return within {limit:?}: {e:?}"));
        self.finished = true;
        r
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        if !self.finished {
            self.executor.commands().shutdown();
        }
    }
}

/// Waits until neither the workers nor the timer thread woke up more than once (one wake-up
/// may be in flight) during 200 ms; returns how long it took to get there.
fn wait_idle(executor: &Executor) -> Duration {
    let start = Instant::now();
    loop {
        let before = executor.diagnostics();
        thread::sleep(Duration::from_millis(200));
        let after = executor.diagnostics();
        // Sums over live workers: they fall as workers of dropped nodes end.
        let workers = after.worker_wakeups.saturating_sub(before.worker_wakeups);
        let timer = after
            .timer_thread_wakeups
            .saturating_sub(before.timer_thread_wakeups);
        if workers <= 1 && timer <= 1 {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "the executor is not idle with every timer dropped: {workers} worker and {timer} \
             timer-thread wake-ups in 200 ms"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Timer churn
//
// Regression: a worker that picked a timer up just before the timer's drop and noted `stops`
// only after it ran the tick handed over before the drop, after the drop had returned (a few
// `Dropped` late callbacks per run when another process loads the second core).
// ---------------------------------------------------------------------------------------------

const CHURN_THREADS: u64 = 3;
/// Timers a churn thread keeps alive at most.
const MAX_LIVE_TIMERS: usize = 24;
/// A churn thread moves to a fresh node and worker this often (operations).
const OPS_PER_NODE: u64 = 512;

#[derive(Default)]
struct ChurnFigures {
    created: AtomicU64,
    dropped: AtomicU64,
    cancels: AtomicU64,
    resets: AtomicU64,
    remodes: AtomicU64,
    calls: AtomicU64,
    /// Calls that started after the call that stopped their callback had returned.
    late: AtomicU64,
    late_reasons: Mutex<Vec<Stopped>>,
    nodes: AtomicU64,
}

/// Where churned timers live: a node's default worker or a worker of it.
#[derive(Clone)]
enum Target {
    Node(Node),
    Worker(Worker<()>),
}

#[derive(Clone, Copy)]
enum Mode {
    Repeating,
    OneShot,
    Inert,
}

impl Target {
    fn create_timer(
        &self,
        mode: Mode,
        options: TimerOptions,
        mut callback: impl FnMut() + Send + 'static,
    ) -> rclev::Result<Timer> {
        match (self, mode) {
            (Target::Node(n), Mode::Repeating) => n.create_timer_repeating(options, callback),
            (Target::Node(n), Mode::OneShot) => n.create_timer_oneshot(options, callback),
            (Target::Node(n), Mode::Inert) => n.create_timer_inert(options),
            (Target::Worker(w), Mode::Repeating) => {
                w.create_timer_repeating(options, move |_: &mut (), _| callback())
            }
            (Target::Worker(w), Mode::OneShot) => {
                w.create_timer_oneshot(options, move |_: &mut (), _| callback())
            }
            (Target::Worker(w), Mode::Inert) => w.create_timer_inert(options),
        }
    }
}

/// Why a churned callback must not start any more (the value of its probe; 0: it may).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Stopped {
    Dropped = 1,
    Canceled = 2,
    /// Replaced by `set_oneshot`/`set_repeating`.
    Replaced = 3,
    /// Removed by `set_inert`.
    Inert = 4,
    /// Installed on a cancelled timer, not reset since.
    InstalledCanceled = 5,
}

impl Stopped {
    fn from_u8(v: u8) -> Option<Self> {
        [
            Self::Dropped,
            Self::Canceled,
            Self::Replaced,
            Self::Inert,
            Self::InstalledCanceled,
        ]
        .into_iter()
        .find(|s| *s as u8 == v)
    }
}

/// A churned callback's flag: raised (`SeqCst`) with the reason right after the call that stops
/// the callback returned; a call that sees it raised started too late.
type Probe = Arc<AtomicU8>;

fn stop_probe(probe: &Probe, why: Stopped) {
    probe.store(why as u8, SeqCst);
}

/// A timer callback watched by a fresh [`Probe`].
fn probed(
    figures: &Arc<ChurnFigures>,
    shut: &Arc<ShutFlag>,
) -> (Probe, impl FnMut() + Send + 'static) {
    let probe = Probe::default();
    let (p, f, sh) = (probe.clone(), figures.clone(), shut.clone());
    let callback = move || {
        sh.check();
        if let Some(why) = Stopped::from_u8(p.load(SeqCst)) {
            f.late.fetch_add(1, SeqCst);
            f.late_reasons.lock().unwrap().push(why);
        }
        f.calls.fetch_add(1, SeqCst);
    };
    (probe, callback)
}

/// Periods log-uniform between 50 µs and 2 ms, on the steady clock or the node's ROS time.
fn random_timer_options(rng: &mut Rng) -> TimerOptions {
    let micros = 50.0 * 40f64.powf(rng.unit());
    let period = Duration::from_micros(micros as u64);
    if rng.below(2) == 0 {
        period.steady_time()
    } else {
        period.node_time()
    }
}

/// A live churned timer.
struct Churned {
    timer: Timer,
    /// The probe of the installed callback; `None` while inert.
    probe: Option<Probe>,
    canceled: bool,
}

struct ChurnSetup {
    executor: Arc<Executor>,
    /// Long-lived places for timers, shared by the churn threads.
    home: Vec<Target>,
    /// Node-name prefix of the nodes the churn threads create.
    prefix: String,
    figures: Arc<ChurnFigures>,
    shut: Arc<ShutFlag>,
    stop: Arc<AtomicBool>,
}

fn drop_churned(churned: Churned, figures: &ChurnFigures) {
    let Churned { timer, probe, .. } = churned;
    drop(timer);
    if let Some(p) = probe {
        stop_probe(&p, Stopped::Dropped);
    }
    figures.dropped.fetch_add(1, SeqCst);
}

/// Replaces the callback of `c` with a fresh probed one (`set_oneshot`/`set_repeating`).
fn remode(c: &mut Churned, oneshot: bool, setup: &ChurnSetup) {
    let (probe, callback) = probed(&setup.figures, &setup.shut);
    // A cancelled timer stays cancelled across mode changes: the new callback must not run
    // before a reset.
    if c.canceled {
        stop_probe(&probe, Stopped::InstalledCanceled);
    }
    if oneshot {
        c.timer.set_oneshot(callback);
    } else {
        c.timer.set_repeating(callback);
    }
    if let Some(old) = c.probe.replace(probe) {
        stop_probe(&old, Stopped::Replaced);
    }
    setup.figures.remodes.fetch_add(1, SeqCst);
}

/// One churn thread: creates, drops, cancels, resets and re-modes timers until `stop` (or the
/// executor shuts down), moving to a fresh node and worker every [`OPS_PER_NODE`] operations.
fn churn_timers(setup: &ChurnSetup, thread: u64) {
    let f = &setup.figures;
    let mut rng = Rng::new(thread + 1);
    let mut live: Vec<Churned> = Vec::new();
    let mut own: Vec<Target> = Vec::new();
    let mut ops = 0u64;
    'churn: while !setup.stop.load(SeqCst) {
        if ops.is_multiple_of(OPS_PER_NODE) {
            let name = format!("{}{thread}n{}", setup.prefix, ops / OPS_PER_NODE);
            let Ok(node) = setup.executor.create_node(name) else {
                break;
            };
            let Ok(worker) = node.create_worker(()) else {
                break;
            };
            f.nodes.fetch_add(1, SeqCst);
            // The previous node and worker end once their last timer is dropped.
            own = vec![Target::Node(node), Target::Worker(worker)];
        }
        ops += 1;
        if rng.below(16) == 0 {
            // Let the timers fire now and then: back-to-back operations would re-arm and stop
            // most of them before their first tick.
            thread::sleep(Duration::from_micros(100 + rng.below(400) as u64));
        }
        let roll = rng.below(100);
        if live.len() < 4 || (roll < 30 && live.len() < MAX_LIVE_TIMERS) {
            let target = if rng.below(2) == 0 {
                &own[rng.below(own.len())]
            } else {
                &setup.home[rng.below(setup.home.len())]
            };
            let mode = match rng.below(10) {
                0..=4 => Mode::Repeating,
                5..=8 => Mode::OneShot,
                _ => Mode::Inert,
            };
            let options = random_timer_options(&mut rng);
            let (probe, callback) = probed(f, &setup.shut);
            match target.create_timer(mode, options, callback) {
                Ok(timer) => {
                    f.created.fetch_add(1, SeqCst);
                    live.push(Churned {
                        timer,
                        probe: (!matches!(mode, Mode::Inert)).then_some(probe),
                        canceled: false,
                    });
                }
                Err(Error::Shutdown) => break 'churn,
                Err(e) => panic!("cannot create a timer: {e}"),
            }
            continue;
        }
        let i = rng.below(live.len());
        match roll {
            0..=49 => drop_churned(live.swap_remove(i), f),
            50..=61 => {
                let c = &mut live[i];
                c.timer.cancel();
                if let Some(p) = &c.probe {
                    stop_probe(p, Stopped::Canceled);
                }
                c.canceled = true;
                f.cancels.fetch_add(1, SeqCst);
            }
            62..=73 | 95.. => {
                let c = &mut live[i];
                if c.canceled {
                    // Calls may start again once the reset is under way.
                    if let Some(p) = &c.probe {
                        p.store(0, SeqCst);
                    }
                    c.canceled = false;
                }
                c.timer.reset();
                f.resets.fetch_add(1, SeqCst);
            }
            74..=81 => remode(&mut live[i], true, setup),
            82..=89 => remode(&mut live[i], false, setup),
            _ => {
                let c = &mut live[i];
                c.timer.set_inert();
                if let Some(old) = c.probe.take() {
                    stop_probe(&old, Stopped::Inert);
                }
                f.remodes.fetch_add(1, SeqCst);
            }
        }
    }
    for c in live.drain(..) {
        drop_churned(c, f);
    }
}

fn timer_churn(rt: Rt, prefix: &str) {
    let _serial = serial();
    let started = Instant::now();
    let executor = TestExecutor::new(rt, ExecutorOptions::default());
    let figures = Arc::new(ChurnFigures::default());
    let stop = Arc::new(AtomicBool::new(false));
    let home_node = executor.create_node(format!("{prefix}home")).unwrap();
    let setup = Arc::new(ChurnSetup {
        executor: executor.executor.clone(),
        home: vec![
            Target::Node(home_node.clone()),
            Target::Worker(home_node.create_worker(()).unwrap()),
            Target::Worker(home_node.create_worker(()).unwrap()),
        ],
        prefix: prefix.to_string(),
        figures: figures.clone(),
        shut: Arc::default(),
        stop: stop.clone(),
    });
    let spinner = Spinner::start(&executor);
    let threads: Vec<_> = (0..CHURN_THREADS)
        .map(|t| {
            let s = setup.clone();
            thread::spawn(move || churn_timers(&s, t))
        })
        .collect();
    thread::sleep(budget());
    stop.store(true, SeqCst);
    join_within(threads, DEADLINE, "the churn threads");
    // Every churned timer is dropped: a late callback would start about now.
    thread::sleep(Duration::from_millis(50));
    let idle_after = wait_idle(&executor);
    drop(setup);
    drop(home_node);
    let thread_prefix = format!("rclev-{prefix}");
    let threads_gone = poll_until(DEADLINE, || threads_named(&thread_prefix) == 0);
    let errors = spinner.halt();
    let late = figures.late.load(SeqCst);
    println!(
        "timer churn ({}): {} timers created, {} dropped, {} cancels, {} resets, {} re-modes, \
         {} calls, {late} late callbacks, {} nodes; idle (a 200 ms window without wake-ups) \
         {} ms after the last drop, worker threads gone {} ms after the nodes; {:.1} s",
        rt.name(),
        figures.created.load(SeqCst),
        figures.dropped.load(SeqCst),
        figures.cancels.load(SeqCst),
        figures.resets.load(SeqCst),
        figures.remodes.load(SeqCst),
        figures.calls.load(SeqCst),
        figures.nodes.load(SeqCst),
        idle_after.as_millis(),
        threads_gone.map_or("never".into(), |d| d.as_millis().to_string()),
        started.elapsed().as_secs_f64(),
    );
    assert!(errors.is_empty(), "errors while spinning: {errors:?}");
    assert!(figures.calls.load(SeqCst) > 0, "no timer ever fired");
    assert_eq!(
        late,
        0,
        "timer callbacks started after the drop/cancel/set_* of their timer returned: {:?}",
        figures.late_reasons.lock().unwrap()
    );
    assert!(
        threads_gone.is_some(),
        "{} worker threads of dropped nodes left",
        threads_named(&thread_prefix)
    );
}

#[test]
fn timer_churn_with_a_thread_per_worker() {
    timer_churn(Rt::Auto, "chA");
}

#[test]
fn timer_churn_on_an_owned_runtime() {
    timer_churn(Rt::Own2, "chO");
}

// ---------------------------------------------------------------------------------------------
// Message flood
// ---------------------------------------------------------------------------------------------

/// Publishers of a flood at most (the subscriptions' payload has a slot per publisher).
const MAX_PUBLISHERS: usize = 4;
/// Messages the publishers may be ahead of the slow subscription; bounds the queues.
const FLOOD_WINDOW: u64 = 10_000;

/// `(publisher, seq)` in one `Int64`.
fn pack(publisher: usize, seq: u64) -> i64 {
    (((publisher as u64) << 48) | seq) as i64
}

fn unpack(data: i64) -> (usize, u64) {
    let d = data as u64;
    ((d >> 48) as usize, d & ((1 << 48) - 1))
}

#[derive(Default)]
struct SubFigures {
    received: AtomicU64,
    /// Messages whose sequence number was not the next one of their publisher (lost,
    /// duplicated or reordered).
    out_of_order: AtomicU64,
}

struct FloodSub {
    sub: Subscription<Int64>,
    figures: Arc<SubFigures>,
    slow: bool,
}

struct Flood {
    subs: Vec<FloodSub>,
    _workers: Vec<Worker<[u64; MAX_PUBLISHERS]>>,
    publishers: Vec<JoinHandle<()>>,
    sent: Arc<AtomicU64>,
}

impl Flood {
    /// `fast` fast subscriptions and one slow one (~50 µs per message), each on a worker of its
    /// own, and `publishers` threads publishing as fast as the window lets them until `stop` or
    /// shutdown. Reliable KeepAll on both ends.
    fn start(
        node: &Node,
        topic: &str,
        fast: usize,
        publishers: usize,
        stop: &Arc<AtomicBool>,
        shut: &Arc<ShutFlag>,
    ) -> Self {
        assert!(publishers <= MAX_PUBLISHERS);
        let keep_all = || topic.qos(QoSProfile::default().keep_all());
        let mut subs = Vec::new();
        let mut workers = Vec::new();
        for k in 0..=fast {
            let slow = k == fast;
            let worker = node.create_worker([0u64; MAX_PUBLISHERS]).unwrap();
            let figures = Arc::new(SubFigures::default());
            let (f, s) = (figures.clone(), shut.clone());
            let sub = worker
                .create_subscription::<Int64, _>(
                    keep_all(),
                    move |next: &mut [u64; MAX_PUBLISHERS], m: Arc<Int64>| {
                        s.check();
                        let (p, seq) = unpack(m.data);
                        if next[p] != seq {
                            f.out_of_order.fetch_add(1, SeqCst);
                        }
                        next[p] = seq + 1;
                        if slow {
                            thread::sleep(Duration::from_micros(50));
                        }
                        f.received.fetch_add(1, SeqCst);
                    },
                )
                .unwrap();
            subs.push(FloodSub { sub, figures, slow });
            workers.push(worker);
        }
        let slowest = subs.last().unwrap().figures.clone();
        let sent = Arc::new(AtomicU64::new(0));
        let publishers = (0..publishers)
            .map(|id| {
                let publisher = node.create_publisher::<Int64>(keep_all()).unwrap();
                let (stop, sent, slowest) = (stop.clone(), sent.clone(), slowest.clone());
                thread::spawn(move || {
                    let mut seq = 0;
                    while !stop.load(SeqCst) {
                        let ahead = sent
                            .load(SeqCst)
                            .saturating_sub(slowest.received.load(SeqCst));
                        if ahead > FLOOD_WINDOW {
                            thread::sleep(Duration::from_micros(50));
                            continue;
                        }
                        match publisher.publish(Int64 {
                            data: pack(id, seq),
                        }) {
                            Ok(()) => {}
                            Err(e) if e.error == Error::Shutdown => break,
                            Err(e) => panic!("publishing failed: {e}"),
                        }
                        seq += 1;
                        sent.fetch_add(1, SeqCst);
                    }
                })
            })
            .collect();
        Self {
            subs,
            _workers: workers,
            publishers,
            sent,
        }
    }
}

fn message_flood(rt: Rt) {
    let started = Instant::now();
    let executor = TestExecutor::new(rt, ExecutorOptions::default());
    let node = executor.create_node("flood").unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let spinner = Spinner::start(&executor);
    let mut flood = Flood::start(&node, "flood", 2, MAX_PUBLISHERS, &stop, &Arc::default());
    thread::sleep(budget());
    stop.store(true, SeqCst);
    join_within(
        std::mem::take(&mut flood.publishers),
        DEADLINE,
        "the publishers",
    );
    let sent = flood.sent.load(SeqCst);
    let drained = poll_until(DEADLINE, || {
        flood
            .subs
            .iter()
            .all(|s| s.figures.received.load(SeqCst) >= sent)
    });
    let errors = spinner.halt();
    let received: Vec<String> = flood
        .subs
        .iter()
        .map(|s| {
            let n = s.figures.received.load(SeqCst);
            if s.slow {
                format!("{n} (slow)")
            } else {
                n.to_string()
            }
        })
        .collect();
    let out_of_order: u64 = flood
        .subs
        .iter()
        .map(|s| s.figures.out_of_order.load(SeqCst))
        .sum();
    let lost: u64 = flood
        .subs
        .iter()
        .map(|s| sent.saturating_sub(s.figures.received.load(SeqCst)) + s.sub.lost_count())
        .sum();
    println!(
        "message flood ({}): {MAX_PUBLISHERS} publishers sent {sent} messages; received {} \
         on {} subscriptions; {lost} lost, {out_of_order} out of order; drained {} ms after \
         the last publish; {:.1} s",
        rt.name(),
        received.join(" / "),
        flood.subs.len(),
        drained.map_or("never".into(), |d| d.as_millis().to_string()),
        started.elapsed().as_secs_f64(),
    );
    assert!(errors.is_empty(), "errors while spinning: {errors:?}");
    assert!(sent > 0, "nothing was published");
    assert_eq!(lost, 0, "messages lost");
    assert_eq!(out_of_order, 0, "messages out of order");
    for s in &flood.subs {
        assert_eq!(s.figures.received.load(SeqCst), sent, "messages duplicated");
    }
}

#[test]
fn message_flood_loses_nothing_and_keeps_order() {
    let _serial = serial();
    for rt in [Rt::Auto, Rt::Own2] {
        message_flood(rt);
    }
}

// ---------------------------------------------------------------------------------------------
// Service storm
// ---------------------------------------------------------------------------------------------

const STORM_BATCH: usize = 64;
const CLIENTS_PER_SERVICE: usize = 2;

#[derive(Default)]
struct StormFigures {
    issued: AtomicU64,
    answered: AtomicU64,
    unavailable: AtomicU64,
    shut_down: AtomicU64,
    wrong: AtomicU64,
    unexpected: AtomicU64,
    hung: AtomicU64,
    handled: AtomicU64,
    handled_twice: AtomicU64,
    services_recreated: AtomicU64,
    clients_recreated: AtomicU64,
    first_problem: Mutex<Option<String>>,
}

impl StormFigures {
    fn problem(&self, what: String) {
        self.first_problem.lock().unwrap().get_or_insert(what);
    }
    fn get(counter: &AtomicU64) -> u64 {
        counter.load(SeqCst)
    }
}

/// Services on workers of their own, clients on two nodes, and the churn that drops and
/// re-creates both while calls fly.
struct Storm {
    names: Vec<String>,
    workers: Vec<Worker<()>>,
    client_nodes: Vec<Node>,
    services: Mutex<Vec<Option<Service<AddTwoInts>>>>,
    clients: Mutex<Vec<Client<AddTwoInts>>>,
    /// Which request ids (`a`) the servers handled, as a bit set.
    seen: Arc<Mutex<Vec<u64>>>,
    figures: Arc<StormFigures>,
    shut: Arc<ShutFlag>,
    next_a: AtomicI64,
}

impl Storm {
    fn new(
        server_node: &Node,
        client_nodes: Vec<Node>,
        prefix: &str,
        services: usize,
        shut: &Arc<ShutFlag>,
    ) -> Arc<Self> {
        let storm = Self {
            names: (0..services).map(|i| format!("{prefix}{i}")).collect(),
            workers: (0..services)
                .map(|_| server_node.create_worker(()).unwrap())
                .collect(),
            client_nodes,
            services: Mutex::default(),
            clients: Mutex::default(),
            seen: Arc::default(),
            figures: Arc::default(),
            shut: shut.clone(),
            next_a: AtomicI64::new(0),
        };
        let servers = (0..services)
            .map(|i| Some(storm.service(i).unwrap()))
            .collect();
        *storm.services.lock().unwrap() = servers;
        let clients = (0..services * CLIENTS_PER_SERVICE)
            .map(|j| storm.client(j).unwrap())
            .collect();
        *storm.clients.lock().unwrap() = clients;
        Arc::new(storm)
    }

    fn service(&self, i: usize) -> rclev::Result<Service<AddTwoInts>> {
        let (seen, figures, shut) = (self.seen.clone(), self.figures.clone(), self.shut.clone());
        self.workers[i].create_service::<AddTwoInts, _>(
            self.names[i].as_str(),
            move |_: &mut (), r: AddTwoIntsRequest| {
                shut.check();
                figures.handled.fetch_add(1, SeqCst);
                let (word, bit) = (r.a as usize / 64, r.a as usize % 64);
                let mut seen = seen.lock().unwrap();
                if seen.len() <= word {
                    seen.resize(word + 1, 0);
                }
                if seen[word] & (1 << bit) != 0 {
                    figures.handled_twice.fetch_add(1, SeqCst);
                }
                seen[word] |= 1 << bit;
                AddTwoIntsResponse { sum: r.a + r.b }
            },
        )
    }

    fn client(&self, j: usize) -> rclev::Result<Client<AddTwoInts>> {
        self.client_nodes[j % self.client_nodes.len()]
            .create_client::<AddTwoInts>(self.names[j / CLIENTS_PER_SERVICE].as_str())
    }

    /// Issues batches of concurrent calls, each call a task on `rt`, until `stop` or shutdown.
    fn caller(&self, id: u64, rt: &tokio::runtime::Runtime, stop: &AtomicBool) {
        let f = &self.figures;
        let mut rng = Rng::new(1000 + id);
        while !stop.load(SeqCst) {
            let client = {
                let clients = self.clients.lock().unwrap();
                clients[rng.below(clients.len())].clone()
            };
            let calls: Vec<_> = (0..STORM_BATCH)
                .map(|_| {
                    let a = self.next_a.fetch_add(1, SeqCst);
                    let b = rng.below(1_000_000) as i64;
                    (a + b, client.call(AddTwoIntsRequest { a, b }))
                })
                .collect();
            // The calls do not keep their client alive: the churner may drop it meanwhile.
            drop(client);
            f.issued.fetch_add(STORM_BATCH as u64, SeqCst);
            let results = rt.block_on(async {
                let tasks: Vec<_> = calls
                    .into_iter()
                    .map(|(want, call)| tokio::spawn(async move { (want, call.await) }))
                    .collect();
                tokio::time::timeout(CALL_DEADLINE, futures::future::join_all(tasks)).await
            });
            let Ok(results) = results else {
                f.hung.fetch_add(1, SeqCst);
                f.problem(format!(
                    "a batch of {STORM_BATCH} calls did not resolve within {CALL_DEADLINE:?}"
                ));
                return;
            };
            let mut shut_down = false;
            for r in results {
                let (want, result) = r.expect("a call task panicked");
                match result {
                    Ok(response) if response.sum == want => {
                        f.answered.fetch_add(1, SeqCst);
                    }
                    Ok(response) => {
                        f.wrong.fetch_add(1, SeqCst);
                        f.problem(format!(
                            "answer {} to a call whose sum is {want}",
                            response.sum
                        ));
                    }
                    Err(Error::ServiceUnavailable(_)) => {
                        f.unavailable.fetch_add(1, SeqCst);
                    }
                    Err(Error::Shutdown) => {
                        f.shut_down.fetch_add(1, SeqCst);
                        shut_down = true;
                    }
                    Err(e) => {
                        f.unexpected.fetch_add(1, SeqCst);
                        f.problem(format!("a call failed with {e:?}"));
                    }
                }
            }
            if shut_down {
                break;
            }
        }
    }

    /// Drops and re-creates services (sometimes leaving a gap without a server) and clients
    /// until `stop` or shutdown.
    fn churner(&self, stop: &AtomicBool) {
        let f = &self.figures;
        let mut rng = Rng::new(77);
        while !stop.load(SeqCst) {
            thread::sleep(Duration::from_micros(200 + rng.below(1800) as u64));
            if rng.below(2) == 0 {
                let i = rng.below(self.names.len());
                let old = self.services.lock().unwrap()[i].take();
                // Its unanswered requests fail with ServiceUnavailable.
                drop(old);
                if rng.below(2) == 0 {
                    thread::sleep(Duration::from_micros(rng.below(500) as u64));
                }
                match self.service(i) {
                    Ok(s) => self.services.lock().unwrap()[i] = Some(s),
                    Err(Error::Shutdown) => break,
                    Err(e) => panic!("cannot re-create service {}: {e}", self.names[i]),
                }
                f.services_recreated.fetch_add(1, SeqCst);
            } else {
                let j = rng.below(self.names.len() * CLIENTS_PER_SERVICE);
                match self.client(j) {
                    Ok(c) => {
                        let old = std::mem::replace(&mut self.clients.lock().unwrap()[j], c);
                        // Its calls in flight fail with ServiceUnavailable.
                        drop(old);
                    }
                    Err(Error::Shutdown) => break,
                    Err(e) => panic!("cannot re-create a client: {e}"),
                }
                f.clients_recreated.fetch_add(1, SeqCst);
            }
        }
    }

    /// Starts `callers` caller threads (on `rt`) and the churner.
    fn start(
        self: &Arc<Self>,
        callers: u64,
        rt: &Arc<tokio::runtime::Runtime>,
        stop: &Arc<AtomicBool>,
    ) -> Vec<JoinHandle<()>> {
        let mut threads: Vec<JoinHandle<()>> = (0..callers)
            .map(|id| {
                let (storm, rt, stop) = (self.clone(), rt.clone(), stop.clone());
                thread::spawn(move || storm.caller(id, &rt, &stop))
            })
            .collect();
        let (storm, stop) = (self.clone(), stop.clone());
        threads.push(thread::spawn(move || storm.churner(&stop)));
        threads
    }
}

fn calls_runtime() -> Arc<tokio::runtime::Runtime> {
    Arc::new(
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap(),
    )
}

fn service_storm(rt: Rt) {
    let started = Instant::now();
    let executor = TestExecutor::new(rt, ExecutorOptions::default());
    let node = executor.create_node("storm").unwrap();
    let client_nodes = vec![node.clone(), executor.create_node("storm_clients").unwrap()];
    let storm = Storm::new(&node, client_nodes, "storm", 3, &Arc::default());
    let calls_rt = calls_runtime();
    let stop = Arc::new(AtomicBool::new(false));
    let spinner = Spinner::start(&executor);
    let threads = storm.start(3, &calls_rt, &stop);
    thread::sleep(budget());
    stop.store(true, SeqCst);
    join_within(threads, DEADLINE + CALL_DEADLINE, "the storm threads");
    let errors = spinner.halt();
    let f = &storm.figures;
    let get = StormFigures::get;
    println!(
        "service storm ({}): {} calls from 3 threads, {} answered, {} unavailable, {} wrong, \
         {} other errors, {} batches hung, {} handled twice; {} services and {} clients \
         re-created; {:.1} s",
        rt.name(),
        get(&f.issued),
        get(&f.answered),
        get(&f.unavailable),
        get(&f.wrong),
        get(&f.unexpected),
        get(&f.hung),
        get(&f.handled_twice),
        get(&f.services_recreated),
        get(&f.clients_recreated),
        started.elapsed().as_secs_f64(),
    );
    let problem = f.first_problem.lock().unwrap().clone();
    assert!(errors.is_empty(), "errors while spinning: {errors:?}");
    assert_eq!(get(&f.hung), 0, "{problem:?}");
    assert_eq!(get(&f.wrong), 0, "{problem:?}");
    assert_eq!(get(&f.unexpected), 0, "{problem:?}");
    assert_eq!(
        get(&f.shut_down),
        0,
        "calls failed with Shutdown before any shutdown"
    );
    assert_eq!(get(&f.handled_twice), 0, "requests handled twice");
    assert_eq!(
        get(&f.answered) + get(&f.unavailable),
        get(&f.issued),
        "calls not resolved exactly once"
    );
    assert!(get(&f.answered) > 0, "no call was answered");
}

#[test]
fn service_storm_resolves_every_call_once() {
    let _serial = serial();
    for rt in [Rt::Auto, Rt::Own2] {
        service_storm(rt);
    }
}

// ---------------------------------------------------------------------------------------------
// Shutdown under load
// ---------------------------------------------------------------------------------------------

#[derive(Default)]
struct GoalFigures {
    sent: AtomicU64,
    succeeded: AtomicU64,
    shut_down: AtomicU64,
    unavailable: AtomicU64,
    unexpected: AtomicU64,
    hung: AtomicU64,
    first_problem: Mutex<Option<String>>,
}

/// A Fibonacci server whose goals take 1–3 ms of `tokio` sleep; every callback, and the
/// execution after its sleep, checks `shut`.
fn sleepy_fib_server(
    worker: &Worker<()>,
    name: &str,
    shut: &Arc<ShutFlag>,
) -> ActionServer<Fibonacci> {
    let (s1, s2, s3) = (shut.clone(), shut.clone(), shut.clone());
    worker
        .create_action_server::<Fibonacci, _, _, _, _>(
            name,
            ActionServerOptions::default(),
            move |_, _| {
                s1.check();
                GoalResponse::AcceptAndExecute
            },
            move |_: &ServerGoalHandle<Fibonacci>| {
                s2.check();
                CancelResponse::Accept
            },
            move |h: ServerGoalHandle<Fibonacci>| {
                let s = s3.clone();
                async move {
                    s.check();
                    let order = h.goal().order;
                    tokio::time::sleep(Duration::from_millis(1 + order as u64 % 3)).await;
                    // Resumed: polled only while no shutdown has happened either.
                    s.check();
                    GoalEnd::Succeeded(FibonacciResult {
                        sequence: vec![order],
                    })
                }
            },
        )
        .unwrap()
}

/// Sends goals one after another and waits for each result, until `stop` or shutdown.
fn goal_sender(
    client: ActionClient<Fibonacci>,
    id: i32,
    stop: Arc<AtomicBool>,
    f: Arc<GoalFigures>,
) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut order = id * 1_000_000;
    while !stop.load(SeqCst) {
        order += 1;
        let goal = client.send_goal(FibonacciGoal { order });
        f.sent.fetch_add(1, SeqCst);
        let outcome = rt.block_on(async move {
            let result = async move {
                let goal = goal.await?;
                goal.result().await
            };
            tokio::time::timeout(CALL_DEADLINE, result).await
        });
        match outcome {
            Err(_) => {
                f.hung.fetch_add(1, SeqCst);
                return;
            }
            Ok(Ok((GoalState::Succeeded, r))) if r.sequence == [order] => {
                f.succeeded.fetch_add(1, SeqCst);
            }
            Ok(Err(Error::Shutdown)) => {
                f.shut_down.fetch_add(1, SeqCst);
                break;
            }
            Ok(Err(Error::ServiceUnavailable(_))) => {
                f.unavailable.fetch_add(1, SeqCst);
            }
            Ok(other) => {
                f.unexpected.fetch_add(1, SeqCst);
                f.first_problem
                    .lock()
                    .unwrap()
                    .get_or_insert(format!("goal {order} ended with {other:?}"));
            }
        }
    }
}

#[test]
fn shutdown_under_load_is_prompt_and_final() {
    let _serial = serial();
    let started = Instant::now();
    let executor = TestExecutor::new(Rt::Auto, ExecutorOptions::default());
    let shut = Arc::new(ShutFlag::default());
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads: Vec<JoinHandle<()>> = Vec::new();
    let spinner = Spinner::start(&executor);

    // Timer churn.
    let churn = Arc::new(ChurnFigures::default());
    let home = executor.create_node("sdhome").unwrap();
    let setup = Arc::new(ChurnSetup {
        executor: executor.executor.clone(),
        home: vec![
            Target::Node(home.clone()),
            Target::Worker(home.create_worker(()).unwrap()),
        ],
        prefix: "sdc".into(),
        figures: churn.clone(),
        shut: shut.clone(),
        stop: stop.clone(),
    });
    for t in 0..2 {
        let s = setup.clone();
        threads.push(thread::spawn(move || churn_timers(&s, t)));
    }

    // Message flood.
    let flood_node = executor.create_node("sdflood").unwrap();
    let mut flood = Flood::start(&flood_node, "sd_flood", 1, 2, &stop, &shut);
    threads.append(&mut flood.publishers);

    // Service storm.
    let storm_node = executor.create_node("sdstorm").unwrap();
    let storm = Storm::new(&storm_node, vec![storm_node.clone()], "sd_storm", 2, &shut);
    let calls_rt = calls_runtime();
    threads.append(&mut storm.start(2, &calls_rt, &stop));

    // Actions.
    let act_node = executor.create_node("sdact").unwrap();
    let act_worker = act_node.create_worker(()).unwrap();
    let _server = sleepy_fib_server(&act_worker, "sd_fib", &shut);
    let act_client = act_node
        .create_action_client::<Fibonacci>("sd_fib")
        .unwrap();
    let goals = Arc::new(GoalFigures::default());
    for id in 0..2 {
        let (c, s, g) = (act_client.clone(), stop.clone(), goals.clone());
        threads.push(thread::spawn(move || goal_sender(c, id, s, g)));
    }

    thread::sleep(budget());
    let (tx, rx) = std::sync::mpsc::channel();
    let (e, s) = (executor.executor.clone(), shut.clone());
    thread::spawn(move || {
        let began = Instant::now();
        e.shutdown();
        s.down.store(true, SeqCst);
        let _ = tx.send((began, began.elapsed()));
    });
    let (began, shutdown_took) = rx
        .recv_timeout(DEADLINE)
        .expect("shutdown() did not return");
    let (errors, spin_returned) = spinner.returned_within(Duration::from_secs(5));
    let spin_after = spin_returned.saturating_duration_since(began);
    let timer_thread_gone = poll_until(DEADLINE, || executor.diagnostics().timer_thread_exited);
    let threads_gone = poll_until(DEADLINE, || threads_named("rclev-sd") == 0);
    // The load threads end on their own on Shutdown errors; `stop` ends those that sleep.
    stop.store(true, SeqCst);
    join_within(threads, DEADLINE + CALL_DEADLINE, "the load threads");
    let late = shut.late.load(SeqCst);
    let s = &storm.figures;
    let get = StormFigures::get;
    println!(
        "shutdown under load: shutdown() took {:.2} ms, spin returned {:.2} ms after it began, \
         {late} callbacks after shutdown; timer thread exited {} ms and worker threads {} ms \
         after shutdown returned; load: {} timers churned, {} messages, {} calls ({} answered, \
         {} unavailable, {} shut down, {} hung), {} goals ({} succeeded, {} unavailable, {} \
         shut down, {} hung); {:.1} s",
        shutdown_took.as_secs_f64() * 1e3,
        spin_after.as_secs_f64() * 1e3,
        timer_thread_gone.map_or("never".into(), |d| d.as_millis().to_string()),
        threads_gone.map_or("never".into(), |d| d.as_millis().to_string()),
        churn.created.load(SeqCst),
        flood.sent.load(SeqCst),
        get(&s.issued),
        get(&s.answered),
        get(&s.unavailable),
        get(&s.shut_down),
        get(&s.hung),
        get(&goals.sent),
        get(&goals.succeeded),
        get(&goals.unavailable),
        get(&goals.shut_down),
        get(&goals.hung),
        started.elapsed().as_secs_f64(),
    );
    assert!(errors.is_empty(), "errors while spinning: {errors:?}");
    assert!(
        shutdown_took < Duration::from_secs(5),
        "shutdown() took {shutdown_took:?}"
    );
    assert!(
        spin_after < Duration::from_secs(5),
        "the spin returned {spin_after:?} after shutdown began"
    );
    assert_eq!(late, 0, "callbacks started after shutdown() returned");
    assert_eq!(
        churn.late.load(SeqCst),
        0,
        "late timer callbacks: {:?}",
        churn.late_reasons.lock().unwrap()
    );
    let problem = s.first_problem.lock().unwrap().clone();
    assert_eq!(get(&s.hung), 0, "{problem:?}");
    assert_eq!(get(&s.wrong), 0, "{problem:?}");
    assert_eq!(get(&s.unexpected), 0, "{problem:?}");
    assert_eq!(get(&s.handled_twice), 0, "requests handled twice");
    assert_eq!(
        get(&s.answered) + get(&s.unavailable) + get(&s.shut_down),
        get(&s.issued),
        "calls not resolved exactly once"
    );
    let problem = goals.first_problem.lock().unwrap().clone();
    assert_eq!(get(&goals.hung), 0, "goals never resolved");
    assert_eq!(get(&goals.unexpected), 0, "{problem:?}");
    assert!(timer_thread_gone.is_some(), "the timer thread did not exit");
    assert!(
        threads_gone.is_some(),
        "{} worker threads left after shutdown",
        threads_named("rclev-sd")
    );
}

// ---------------------------------------------------------------------------------------------
// Faults
// ---------------------------------------------------------------------------------------------

/// Every panic message of the fault test: each callback kind panics once with its own.
const FAULTS: [&str; 15] = [
    "fault:subscription",
    "fault:async subscription",
    "fault:service",
    "fault:async service",
    "fault:guard condition",
    "fault:repeating timer",
    "fault:one-shot timer",
    "fault:async timer",
    "fault:goal callback",
    "fault:cancel callback",
    "fault:async execute callback",
    "fault:execute callback",
    "fault:jump callback",
    "fault:worker job",
    "fault:until_promise_resolved",
];

/// Keeps the expected panics of the fault test out of the output; others still print.
fn quiet_expected_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let message = payload
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
                .unwrap_or("");
            if !message.starts_with("fault:") {
                default(info);
            }
        }));
    });
}

/// How many `CallbackPanicked` errors in `errors` carry `message`.
fn panics_with(errors: &[Error], message: &str) -> usize {
    errors
        .iter()
        .filter(|e| matches!(e, Error::CallbackPanicked { message: m, .. } if m == message))
        .count()
}

/// Records values and panics with `message` on the first; the callbacks of the fault test.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<i64>>>);

impl Recorder {
    fn record(&self, value: i64, message: &'static str) {
        let first = {
            let mut seen = self.0.lock().unwrap();
            seen.push(value);
            seen.len() == 1
        };
        if first {
            std::panic::panic_any(message);
        }
    }
    /// Records without panicking.
    fn push(&self, value: i64) {
        self.0.lock().unwrap().push(value);
    }
    fn len(&self) -> usize {
        self.0.lock().unwrap().len()
    }
    fn values(&self) -> Vec<i64> {
        self.0.lock().unwrap().clone()
    }
}

fn faults_on(rt: Rt) {
    quiet_expected_panics();
    let started = Instant::now();
    let handled = Arc::new(Mutex::new(Vec::<Error>::new()));
    let h = handled.clone();
    let options = ExecutorOptions {
        error_handler: Some(Arc::new(move |e: &Error| h.lock().unwrap().push(e.clone()))),
        ..Default::default()
    };
    let executor = TestExecutor::new(rt, options);
    let node = executor.create_node("faults").unwrap();
    let w1 = node.create_worker(()).unwrap();
    let w2 = node.create_worker(()).unwrap();
    let spinner = Spinner::start(&executor);
    let until = |what: &str, done: &dyn Fn() -> bool| wait_for(what, DEADLINE, done);

    // Subscription, with a neighbour on the same topic and worker.
    let sub = Recorder::default();
    let neighbour_sub = Recorder::default();
    let (r, n) = (sub.clone(), neighbour_sub.clone());
    let _sub = node
        .create_subscription::<Int64, _>("fault_sub", move |m: Arc<Int64>| {
            r.record(m.data, "fault:subscription")
        })
        .unwrap();
    let _neighbour = node
        .create_subscription::<Int64, _>("fault_sub", move |m: Arc<Int64>| n.push(m.data))
        .unwrap();
    let publisher = node.create_publisher::<Int64>("fault_sub").unwrap();
    for data in 1..=3 {
        publisher.publish(Int64 { data }).unwrap();
    }
    until("the subscription's next messages", &|| {
        sub.len() == 3 && neighbour_sub.len() == 3
    });
    assert_eq!(sub.values(), [1, 2, 3]);

    // Async subscription.
    let async_sub = Recorder::default();
    let r = async_sub.clone();
    let _async_sub = node
        .create_async_subscription::<Int64, _, _>("fault_async_sub", move |m: Arc<Int64>| {
            let r = r.clone();
            async move {
                tokio::task::yield_now().await;
                r.record(m.data, "fault:async subscription");
            }
        })
        .unwrap();
    let publisher = node.create_publisher::<Int64>("fault_async_sub").unwrap();
    for data in 1..=3 {
        publisher.publish(Int64 { data }).unwrap();
    }
    until("the async subscription's next messages", &|| {
        async_sub.len() == 3
    });

    // Services, sync on a worker and async on the node.
    let _service = w1
        .create_service::<AddTwoInts, _>("fault_svc", |_: &mut (), r: AddTwoIntsRequest| {
            if r.a == 1 {
                std::panic::panic_any("fault:service");
            }
            AddTwoIntsResponse { sum: r.a + r.b }
        })
        .unwrap();
    let _async_service = node
        .create_async_service::<AddTwoInts, _, _>(
            "fault_async_svc",
            |r: AddTwoIntsRequest| async move {
                tokio::task::yield_now().await;
                if r.a == 1 {
                    std::panic::panic_any("fault:async service");
                }
                AddTwoIntsResponse { sum: r.a + r.b }
            },
        )
        .unwrap();
    for name in ["fault_svc", "fault_async_svc"] {
        let client = node.create_client::<AddTwoInts>(name).unwrap();
        let failed = resolve(name, client.call(AddTwoIntsRequest { a: 1, b: 1 }));
        assert!(
            matches!(failed, Err(Error::ServiceFailed(_))),
            "{name}: {failed:?}"
        );
        let answered = resolve(name, client.call(AddTwoIntsRequest { a: 2, b: 3 }));
        assert_eq!(answered.map(|r| r.sum), Ok(5), "{name}");
    }

    // Guard condition.
    let guard_runs = Recorder::default();
    let r = guard_runs.clone();
    let guard = w2
        .create_guard_condition(move |_: &mut ()| r.record(0, "fault:guard condition"))
        .unwrap();
    guard.trigger();
    until("the guard condition's first run", &|| guard_runs.len() == 1);
    guard.trigger();
    until("the guard condition's second run", &|| {
        guard_runs.len() == 2
    });

    // Timers: repeating on a worker, one-shot and async on the node.
    let repeating = Recorder::default();
    let r = repeating.clone();
    let _repeating = w2
        .create_timer_repeating(Duration::from_millis(1), move |_: &mut (), _| {
            r.record(0, "fault:repeating timer")
        })
        .unwrap();
    let oneshot = Recorder::default();
    let r = oneshot.clone();
    let oneshot_timer = node
        .create_timer_oneshot(Duration::from_millis(1), move || {
            r.record(0, "fault:one-shot timer")
        })
        .unwrap();
    let async_timer = Recorder::default();
    let r = async_timer.clone();
    let _async_timer = node
        .create_async_timer_repeating(Duration::from_millis(1), move |_: TimerInfo| {
            let r = r.clone();
            async move {
                tokio::task::yield_now().await;
                r.record(0, "fault:async timer");
            }
        })
        .unwrap();
    until("the timers' next ticks", &|| {
        repeating.len() >= 3 && async_timer.len() >= 3 && oneshot.len() == 1
    });
    oneshot_timer.reset();
    until("the one-shot timer after its reset", &|| oneshot.len() == 2);

    // Action server with async execution: the goal callback panics for order 1, the cancel
    // callback on its first call, the execution for order 3.
    let cancels = Recorder::default();
    let c = cancels.clone();
    let _server = w1
        .create_action_server::<Fibonacci, _, _, _, _>(
            "fault_fib",
            ActionServerOptions::default(),
            |_, goal: &FibonacciGoal| {
                if goal.order == 1 {
                    std::panic::panic_any("fault:goal callback");
                }
                GoalResponse::AcceptAndExecute
            },
            move |_: &ServerGoalHandle<Fibonacci>| {
                c.record(0, "fault:cancel callback");
                CancelResponse::Accept
            },
            |h: ServerGoalHandle<Fibonacci>| async move {
                let order = h.goal().order;
                match order {
                    2 => {
                        h.cancel_requested().await;
                        GoalEnd::Canceled(FibonacciResult::default())
                    }
                    3 => {
                        tokio::task::yield_now().await;
                        std::panic::panic_any("fault:async execute callback")
                    }
                    _ => GoalEnd::Succeeded(FibonacciResult {
                        sequence: vec![order],
                    }),
                }
            },
        )
        .unwrap();
    let client = node.create_action_client::<Fibonacci>("fault_fib").unwrap();
    let rejected = resolve("goal 1", client.send_goal(FibonacciGoal { order: 1 }));
    assert!(matches!(rejected, Err(Error::GoalRejected)), "{rejected:?}");
    let goal = resolve("goal 2", client.send_goal(FibonacciGoal { order: 2 })).unwrap();
    let refused = resolve("the first cancel", goal.cancel()).unwrap();
    assert_ne!(
        refused.return_code, 0,
        "a panicking cancel callback accepted"
    );
    let accepted = resolve("the second cancel", goal.cancel()).unwrap();
    assert_eq!(accepted.return_code, 0);
    let (state, _) = resolve("goal 2's result", goal.result()).unwrap();
    assert_eq!(state, GoalState::Canceled);
    for (order, want) in [(3, GoalState::Aborted), (4, GoalState::Succeeded)] {
        let goal = resolve("a goal", client.send_goal(FibonacciGoal { order })).unwrap();
        let (state, _) = resolve("a result", goal.result()).unwrap();
        assert_eq!(state, want, "goal {order}");
    }

    // Action server with a plain execute callback (on the node: workers offer only async
    // execution), which panics for order 3.
    let _sync_server = node
        .create_action_server_with_callback::<Fibonacci, _, _, _>(
            "fault_fib_sync",
            ActionServerOptions::default(),
            |_, _| GoalResponse::AcceptAndExecute,
            |_: &ServerGoalHandle<Fibonacci>| CancelResponse::Accept,
            |h: ServerGoalHandle<Fibonacci>| {
                let order = h.goal().order;
                if order == 3 {
                    std::panic::panic_any("fault:execute callback");
                }
                h.succeed(FibonacciResult {
                    sequence: vec![order],
                })
                .unwrap();
            },
        )
        .unwrap();
    let client = node
        .create_action_client::<Fibonacci>("fault_fib_sync")
        .unwrap();
    for (order, want) in [(3, GoalState::Aborted), (4, GoalState::Succeeded)] {
        let goal = resolve("a goal", client.send_goal(FibonacciGoal { order })).unwrap();
        let (state, _) = resolve("a result", goal.result()).unwrap();
        assert_eq!(state, want, "goal {order} (plain execute)");
    }

    // Clock jump callback, called on this thread when use_sim_time switches.
    let pre = Recorder::default();
    let post = Recorder::default();
    let (r, p) = (pre.clone(), post.clone());
    let _jump = node
        .get_clock()
        .create_jump_callback(
            JumpThreshold {
                on_clock_change: true,
                min_forward: None,
                min_backward: None,
            },
            move |_| r.record(0, "fault:jump callback"),
            move |_| p.push(0),
        )
        .unwrap();
    node.set_parameter("use_sim_time", true).unwrap();
    assert!(node.get_clock().is_sim_time_active());
    node.set_parameter("use_sim_time", false).unwrap();
    assert!(!node.get_clock().is_sim_time_active());
    assert_eq!(
        (pre.len(), post.len()),
        (2, 2),
        "jump callbacks (pre, post)"
    );

    // Worker job.
    let job = resolve(
        "a panicking job",
        w1.run(|_: &mut ()| -> i32 { std::panic::panic_any("fault:worker job") }),
    );
    assert!(
        matches!(&job, Err(Error::CallbackPanicked { message, .. }) if message == "fault:worker job"),
        "{job:?}"
    );
    assert_eq!(resolve("the next job", w1.run(|_: &mut ()| 7)), Ok(7));

    // Neighbours on every worker still work.
    assert_eq!(resolve("a job on w2", w2.run(|_: &mut ()| 8)), Ok(8));
    let neighbour_runs = Recorder::default();
    let r = neighbour_runs.clone();
    let neighbour = node.create_guard_condition(move || r.push(0)).unwrap();
    neighbour.trigger();
    until("a guard condition on the node's worker", &|| {
        neighbour_runs.len() == 1
    });

    let mut errors = spinner.halt();

    // A panicking promise ends its spin with the panic; the next spin works.
    errors.extend(
        executor.spin(
            SpinOptions::default()
                .until_promise_resolved(async {
                    tokio::task::yield_now().await;
                    std::panic::panic_any("fault:until_promise_resolved")
                })
                .timeout(DEADLINE),
        ),
    );
    neighbour.trigger();
    let n = neighbour_runs.clone();
    errors.extend(
        executor.spin(
            SpinOptions::default()
                .until_promise_resolved(async move {
                    while n.len() < 2 {
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                })
                .timeout(DEADLINE),
        ),
    );
    assert_eq!(
        neighbour_runs.len(),
        2,
        "no callback ran after the promise panicked"
    );

    let handled = handled.lock().unwrap().clone();
    let missing: Vec<_> = FAULTS
        .iter()
        .filter(|m| panics_with(&errors, m) != 1 || panics_with(&handled, m) != 1)
        .map(|m| {
            format!(
                "{m} ({} in spin errors, {} to the handler)",
                panics_with(&errors, m),
                panics_with(&handled, m)
            )
        })
        .collect();
    println!(
        "faults ({}): {} panics in {} callback kinds, {} reported by spin and {} to the \
         error handler, each entity working afterwards; {:.1} s",
        rt.name(),
        FAULTS.len(),
        FAULTS.len(),
        errors.len(),
        handled.len(),
        started.elapsed().as_secs_f64(),
    );
    assert!(
        missing.is_empty(),
        "panics not reported exactly once: {missing:?}"
    );
    assert_eq!(errors.len(), FAULTS.len(), "other errors: {errors:?}");
    assert_eq!(handled.len(), FAULTS.len(), "other errors: {handled:?}");
}

#[test]
fn panics_in_every_callback_kind_are_reported_and_isolated() {
    let _serial = serial();
    for rt in Rt::ALL {
        faults_on(rt);
    }
}

// ---------------------------------------------------------------------------------------------
// Blocking
// ---------------------------------------------------------------------------------------------

const BLOCK: Duration = Duration::from_millis(1500);

/// What worker B had done when worker A's callback began and ended blocking.
struct BlockWindow {
    ticks: (u64, u64),
    messages: (u64, u64),
    published: (u64, u64),
    blocked: Duration,
}

fn blocking_on(rt: Rt) {
    let executor = TestExecutor::new(rt, ExecutorOptions::default());
    let node = executor.create_node("blocking").unwrap();
    let a = node.create_worker(()).unwrap();
    let b = node.create_worker(()).unwrap();
    let ticks = Arc::new(AtomicU64::new(0));
    let messages = Arc::new(AtomicU64::new(0));
    let published = Arc::new(AtomicU64::new(0));
    let t = ticks.clone();
    let _timer = b
        .create_timer_repeating(Duration::from_millis(1), move |_: &mut (), _| {
            t.fetch_add(1, SeqCst);
        })
        .unwrap();
    let m = messages.clone();
    let keep_all = || "blocking_stream".qos(QoSProfile::default().keep_all());
    let _sub = b
        .create_subscription::<Int64, _>(keep_all(), move |_: &mut (), _| {
            m.fetch_add(1, SeqCst);
        })
        .unwrap();
    let window = Arc::new(Mutex::new(None::<BlockWindow>));
    let (w, t, m, p) = (
        window.clone(),
        ticks.clone(),
        messages.clone(),
        published.clone(),
    );
    let blocker = a
        .create_guard_condition(move |_: &mut ()| {
            let snapshot = || (t.load(SeqCst), m.load(SeqCst), p.load(SeqCst));
            let began = Instant::now();
            let before = snapshot();
            thread::sleep(BLOCK);
            let after = snapshot();
            *w.lock().unwrap() = Some(BlockWindow {
                ticks: (before.0, after.0),
                messages: (before.1, after.1),
                published: (before.2, after.2),
                blocked: began.elapsed(),
            });
        })
        .unwrap();
    let publisher = node.create_publisher::<Int64>(keep_all()).unwrap();
    let spinner = Spinner::start(&executor);
    let stop = Arc::new(AtomicBool::new(false));
    let (s, p) = (stop.clone(), published.clone());
    let stream = thread::spawn(move || {
        while !s.load(SeqCst) {
            // Counted first, so no message is received before it counts as published.
            p.fetch_add(1, SeqCst);
            publisher.publish(Int64 { data: 0 }).unwrap();
            thread::sleep(Duration::from_millis(1));
        }
    });
    wait_for("worker B's timer to tick", DEADLINE, || {
        ticks.load(SeqCst) >= 50
    });
    blocker.trigger();
    wait_for("worker A's blocking callback to end", DEADLINE, || {
        window.lock().unwrap().is_some()
    });
    stop.store(true, SeqCst);
    join_within(vec![stream], DEADLINE, "the publishing thread");
    let errors = spinner.halt();
    let w = window.lock().unwrap().take().unwrap();
    let periods = w.blocked.as_millis() as u64;
    let ticked = w.ticks.1 - w.ticks.0;
    let received = w.messages.1 - w.messages.0;
    let sent = w.published.1 - w.published.0;
    println!(
        "blocking ({}): while worker A blocked for {:.2} s, worker B got {ticked} of {periods} \
         1 ms timer periods ({:.0}%) and {received} of {sent} messages published meanwhile",
        rt.name(),
        w.blocked.as_secs_f64(),
        ticked as f64 * 100.0 / periods as f64,
    );
    assert!(errors.is_empty(), "errors while spinning: {errors:?}");
    assert!(
        ticked * 2 >= periods,
        "{}: worker B's timer got {ticked} of {periods} ticks while worker A blocked",
        rt.name()
    );
    assert!(
        received * 2 >= sent,
        "{}: worker B got {received} of {sent} messages while worker A blocked",
        rt.name()
    );
}

#[test]
fn a_blocking_callback_does_not_hold_up_other_workers() {
    let _serial = serial();
    for rt in Rt::ALL {
        blocking_on(rt);
    }
}
