//! The event-driven executor: workers on Tokio, fed only by readiness pushes.
//!
//! An [`Executor`] owns a Tokio runtime or adopts the one it is created in. Each
//! [`Worker`](crate::Worker) is a task with a mailbox; entities push themselves into it through
//! their `EntityDispatch` when they have work. Callbacks run only while the executor is spinning
//! (the *spin gate* is open); readiness that arrives meanwhile waits, coalesced, in the mailboxes.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::{Handle, Runtime, RuntimeFlavor};

pub(crate) mod context;
#[cfg(target_os = "linux")]
mod sigint;
#[cfg(target_os = "linux")]
pub use sigint::{install_sigint_handler, sigint_received};

#[cfg(all(test, rclev_loom))]
mod loom_tests;
mod shared;
mod virtual_time;

pub(crate) use shared::ExecutorShared;

use crate::base::error::{Error, Result};
use crate::executor::context::Context;
// The spin gate's and the shutdown flag's atomics, the gate's waiter list and the closing
// spin's notification are the facade's: the loom models run the real gate and worker code.
use crate::base::sync::Ordering;
pub(crate) use crate::runtime::core::in_section_of_worker;
use crate::timer::{TimerPrecision, TimerScheduler};

/// Which Tokio runtime the executor's workers run on.
#[derive(Debug, Clone)]
pub enum RuntimeChoice {
    /// Adopt the runtime the executor is created in; outside any runtime, behave as
    /// [`ThreadPerWorker`](Self::ThreadPerWorker).
    Auto,
    /// Every worker gets its own OS thread running a current-thread Tokio runtime (async
    /// callbacks and tasks they spawn run there); the executor keeps a one-thread runtime for
    /// its own bookkeeping. Waking a worker then wakes exactly one thread, which is what makes
    /// high-rate timers cheap: a shared multi-threaded pool also wakes a second, idle thread to
    /// look for work on every external wake-up. A worker that paces a fast timer and has no
    /// other task on its runtime sleeps to the tick's deadline in a timed wait of its thread
    /// (woken early by any new work for it), the cheapest and most punctual sleep there is;
    /// with tasks of its own in flight it sleeps in the runtime's reactor instead.
    ThreadPerWorker,
    /// Own a new multi-threaded runtime with this many threads; workers are tasks on it.
    Own {
        /// Runtime worker threads (at least 1).
        worker_threads: usize,
    },
    /// Run workers as tasks on this runtime.
    Adopt(Handle),
}

pub use crate::runtime::core::ErrorHandler;
pub use virtual_time::VirtualTimeExecutor;

/// How an executor is built.
#[derive(Clone)]
pub struct ExecutorOptions {
    /// The runtime.
    pub runtime: RuntimeChoice,
    /// Longest an idle worker spins before parking, when work has lately been arriving more
    /// often than that (see `SpinPolicy`). Zero never spins. Default 60 µs.
    pub worker_spin: Duration,
    /// Called for every error raised while spinning, besides the `tracing` event and the
    /// list that `spin` returns.
    pub error_handler: Option<ErrorHandler>,
    /// Precision/CPU trade-offs of the timer scheduler.
    pub timer_precision: TimerPrecision,
    /// While a spin runs, Ctrl-C (SIGINT) shuts the executor down so the spin returns and
    /// destructors run, as in rclcpp and rclpy; a second Ctrl-C during that ends the process.
    /// Outside spins Ctrl-C keeps its previous meaning, unless [`install_sigint_handler`] made
    /// the handler the process's for good. Default `true`; set `false` to handle signals
    /// yourself (e.g. with `tokio::signal`).
    pub handle_sigint: bool,
}

impl Default for ExecutorOptions {
    fn default() -> Self {
        Self {
            runtime: RuntimeChoice::Auto,
            worker_spin: Duration::from_micros(60),
            error_handler: None,
            timer_precision: TimerPrecision::default(),
            handle_sigint: true,
        }
    }
}

impl std::fmt::Debug for ExecutorOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecutorOptions")
            .field("runtime", &self.runtime)
            .field("worker_spin", &self.worker_spin)
            .field("timer_precision", &self.timer_precision)
            .field("handle_sigint", &self.handle_sigint)
            .finish_non_exhaustive()
    }
}

/// When a spin returns.
///
/// ```
/// use rclev::SpinOptions;
/// use std::time::Duration;
/// let opts = SpinOptions::default().timeout(Duration::from_millis(5));
/// let once = SpinOptions::spin_once();
/// # let _ = (opts, once);
/// ```
#[derive(Default)]
pub struct SpinOptions {
    /// Return once every worker has run out of ready work.
    pub only_next_available_work: bool,
    /// Return when this future resolves.
    pub until_promise_resolved: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
    /// Return after this long.
    pub timeout: Option<Duration>,
}

impl SpinOptions {
    /// Spin until every worker has run out of ready work (or another condition ends it).
    pub fn spin_once() -> Self {
        Self {
            only_next_available_work: true,
            ..Self::default()
        }
    }
    /// Spin until `promise` resolves.
    pub fn until_promise_resolved(mut self, promise: impl Future + Send + 'static) -> Self {
        self.until_promise_resolved = Some(Box::pin(async move {
            promise.await;
        }));
        self
    }
    /// Spin for at most `timeout`.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
}

/// What the executor shows of its workings, for observing it: that an idle executor never
/// wakes up, where timer ticks go on a busy host, that the timer thread is gone after a
/// shutdown. A snapshot, taken by [`Executor::diagnostics`]; the counters only grow, so two
/// snapshots' difference is what happened in between.
///
/// ```
/// use std::time::Duration;
///
/// let executor = rclev::Context::default().create_basic_executor();
/// let before = executor.diagnostics();
/// assert!(!before.timer_thread_exited);
/// let errors = executor.spin(rclev::SpinOptions::default().timeout(Duration::from_millis(20)));
/// assert!(errors.is_empty());
/// // Nothing to do, so no timer tick was handed over.
/// assert_eq!(executor.diagnostics().timers.handed_over, before.timers.handed_over);
/// executor.shutdown();
/// # Ok::<(), rclev::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExecutorDiagnostics {
    /// Times any worker task was polled (woken), summed over the workers alive now.
    pub worker_wakeups: u64,
    /// Times the timer scheduler thread woke up.
    pub timer_thread_wakeups: u64,
    /// The tick path: ticks handed over and dropped, and each thread's lateness.
    pub timers: crate::timer::TimerStats,
    /// Whether the timer scheduler's thread has exited (it does when the executor shuts down).
    pub timer_thread_exited: bool,
}

/// Executors are made from a context.
impl Context {
    /// An executor with default options ([`RuntimeChoice::Auto`]):
    /// created inside a Tokio runtime it adopts that runtime, and outside one it gives every
    /// worker a thread of its own.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let executor = rclev::Context::default().create_basic_executor();
    /// let node = executor.create_node("demo")?;
    /// // … entities …
    /// let errors = executor.spin(rclev::SpinOptions::default().timeout(Duration::from_millis(10)));
    /// assert!(errors.is_empty());
    /// # Ok::<(), rclev::Error>(())
    /// ```
    ///
    /// # Panics
    /// Only if the operating system refuses to create the runtime's threads; use
    /// [`create_executor`](Self::create_executor) to get that as an error instead.
    pub fn create_basic_executor(&self) -> Executor {
        self.create_executor(ExecutorOptions::default())
            .expect("the operating system refused to start the executor's threads")
    }

    /// An executor with the given options.
    ///
    /// ```
    /// use rclev::{ExecutorOptions, RuntimeChoice, TimerPrecision};
    /// use std::sync::Arc;
    ///
    /// let options = ExecutorOptions {
    ///     runtime: RuntimeChoice::Own { worker_threads: 2 }, // one pool for every worker
    ///     timer_precision: TimerPrecision::low_cpu(),        // no busy-waiting for deadlines
    ///     error_handler: Some(Arc::new(|e: &rclev::Error| eprintln!("callback failed: {e}"))),
    ///     handle_sigint: false,                               // the program handles Ctrl-C
    ///     ..ExecutorOptions::default()
    /// };
    /// let executor = rclev::Context::default().create_executor(options)?;
    /// let node = executor.create_node("demo")?;
    /// # Ok::<(), rclev::Error>(())
    /// ```
    pub fn create_executor(&self, options: ExecutorOptions) -> Result<Executor> {
        Executor::new(self.clone(), options)
    }
}

/// The executor. Create it from a [`Context`], create nodes on it, then spin.
///
/// ```
/// use rclev::{Context, SpinOptions};
/// use std::time::Duration;
///
/// let executor = Context::default().create_basic_executor();
/// let node = executor.create_node("doc_node").unwrap();
/// let guard = node.create_guard_condition(|| println!("triggered")).unwrap();
/// guard.trigger();
/// let errors = executor.spin(SpinOptions::spin_once().timeout(Duration::from_secs(1)));
/// assert!(errors.is_empty());
/// ```
pub struct Executor {
    shared: Arc<ExecutorShared>,
    runtime: Option<Runtime>,
}

impl Executor {
    pub(crate) fn new(context: Context, options: ExecutorOptions) -> Result<Self> {
        let build = |threads: usize| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(threads.max(1))
                .thread_name("rclev-worker")
                .enable_all()
                .build()
                .map_err(|e| Error::Runtime(e.to_string()))
        };
        let own_threads = |threads: usize| -> Result<(Handle, Option<Runtime>)> {
            let rt = build(threads)?;
            Ok((rt.handle().clone(), Some(rt)))
        };
        let (handle, runtime, dedicated_workers) = match &options.runtime {
            RuntimeChoice::Adopt(h) => (h.clone(), None, false),
            RuntimeChoice::Own { worker_threads } => {
                let (h, rt) = own_threads(*worker_threads)?;
                (h, rt, false)
            }
            RuntimeChoice::ThreadPerWorker => {
                let (h, rt) = own_threads(1)?;
                (h, rt, true)
            }
            RuntimeChoice::Auto => match Handle::try_current() {
                Ok(h) => (h, None, false),
                Err(_) => {
                    let (h, rt) = own_threads(1)?;
                    (h, rt, true)
                }
            },
        };
        let timers = TimerScheduler::start(options.timer_precision.clone())
            .map_err(|e| Error::Runtime(format!("cannot start the timer thread: {e}")))?;
        let shared = Arc::new(ExecutorShared::new(
            context,
            handle,
            dedicated_workers,
            runtime.is_some(),
            options,
            timers,
        ));
        Ok(Self { shared, runtime })
    }

    /// The state the executor shares with its nodes (nodes are created by the node layer:
    /// `Executor::create_node` is in `node/`).
    pub(crate) fn shared(&self) -> &Arc<ExecutorShared> {
        &self.shared
    }

    /// Spins on the calling thread until `options` says to stop, and returns the errors raised
    /// meanwhile. Works outside a runtime and inside a multi-threaded one (the thread is handed
    /// over with `block_in_place`); inside a current-thread runtime that also runs the workers
    /// it would deadlock, so it returns [`Error::BlockingSpinInsideRuntime`] instead.
    #[must_use = "the errors raised while spinning (callback panics and the like) are lost unless looked at"]
    pub fn spin(&self, options: SpinOptions) -> Vec<Error> {
        if self.shared.called_from_callback() {
            return vec![Error::SpinInsideCallback];
        }
        let task = self
            .shared
            .handle
            .spawn(self.shared.clone().spin_async(options));
        let wait = || {
            futures::executor::block_on(task).unwrap_or_else(|e| {
                vec![Error::Runtime(format!(
                    "the spin's task ended abnormally: {e}"
                ))]
            })
        };
        match Handle::try_current() {
            Ok(current) => match current.runtime_flavor() {
                RuntimeFlavor::CurrentThread => {
                    if current.id() == self.shared.handle.id() {
                        return vec![Error::BlockingSpinInsideRuntime];
                    }
                    wait()
                }
                _ => tokio::task::block_in_place(wait),
            },
            Err(_) => wait(),
        }
    }

    /// Spins until `options` says to stop, as a future: use it inside `#[tokio::main]`.
    #[must_use = "the errors raised while spinning (callback panics and the like) are lost unless looked at"]
    pub async fn spin_async(&self, options: SpinOptions) -> Vec<Error> {
        self.shared.clone().spin_async(options).await
    }

    /// A cloneable handle for halting or shutting down from elsewhere (e.g. a callback).
    pub fn commands(&self) -> ExecutorCommands {
        ExecutorCommands {
            shared: self.shared.clone(),
        }
    }

    /// Shuts down: every spin returns, no callback starts afterwards, workers and the timer
    /// thread exit.
    pub fn shutdown(&self) {
        self.shared.shutdown();
    }

    /// A snapshot of the executor's counters and the timer thread's state (see
    /// [`ExecutorDiagnostics`]).
    pub fn diagnostics(&self) -> ExecutorDiagnostics {
        ExecutorDiagnostics {
            worker_wakeups: self
                .shared
                .host
                .live_workers()
                .iter()
                .map(|m| m.wakeups.load(Ordering::Relaxed))
                .sum(),
            timer_thread_wakeups: self.shared.timers.wakeups(),
            timers: self.shared.timers.stats(),
            timer_thread_exited: self.shared.timers.has_exited(),
        }
    }

    /// The runtime handle the workers run on.
    pub fn runtime_handle(&self) -> &Handle {
        &self.shared.handle
    }
}

impl Drop for Executor {
    fn drop(&mut self) {
        self.shared.shutdown();
        self.shared.timers.join();
        if let Some(rt) = self.runtime.take() {
            // Not `drop(rt)`: that blocks, and panics when the executor is dropped in async code.
            rt.shutdown_background();
        }
    }
}

/// A cloneable handle to an executor's controls.
#[derive(Clone)]
pub struct ExecutorCommands {
    shared: Arc<ExecutorShared>,
}

impl ExecutorCommands {
    /// Makes every current spin return; the executor can be spun again.
    pub fn halt_spinning(&self) {
        self.shared.halt_notify.notify_waiters();
    }
    /// Shuts the executor down (see [`Executor::shutdown`]).
    pub fn shutdown(&self) {
        self.shared.shutdown();
    }
    /// Whether the executor has shut down.
    pub fn is_shut_down(&self) -> bool {
        self.shared.is_shut_down()
    }
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor")
            .field("owns_runtime", &self.runtime.is_some())
            .field("shut_down", &self.shared.is_shut_down())
            .finish()
    }
}

impl std::fmt::Debug for ExecutorCommands {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecutorCommands").finish_non_exhaustive()
    }
}
