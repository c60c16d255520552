//! Deterministic virtual-time testing: an executor whose clocks read a virtual timeline that
//! moves only when everything is idle or when the test moves it.
//!
//! Every clock its nodes hand out — ROS time, steady and system time alike — reads one virtual
//! timeline, and everything that waits on a clock follows it: timers, [`Clock::sleep_until`](crate::Clock::sleep_until)
//! and [`Rate`](crate::Rate), service call and `wait_for_*` timeouts, action result expiry. The
//! timeline is simulated time from the start (the machinery `use_sim_time` uses, with the test
//! in place of `/clock`), so a deadline is reached exactly, never early or late, and a node
//! with a 10 s timer and a 5 s action timeout is tested in milliseconds.
//!
//! Moving the timeline is a loop of two steps: run every worker until all are idle (no queued
//! work, no async callback woken and not yet polled), then set the time to the earliest
//! deadline anything waits for (a timer on the timeline or a sleep), which hands the due timers
//! to their workers and wakes the due sleeps. So callbacks run in deadline order, and what a
//! callback starts (a publish, a request, a new timer) is finished before time moves on.
//!
//! Not covered: Tokio's own timers (`tokio::time::sleep` in a callback runs on real time: sleep
//! on a node's clock instead), tasks the test spawns on a runtime itself, and wire transports
//! (whose peers run on real time). Callbacks of different workers still run in parallel; time
//! only moves once all of them are done.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use super::{Executor, ExecutorOptions, RuntimeChoice, SpinOptions};
use crate::base::error::{Error, Result};
use crate::clock::{ClockType, RosTimeSource, Time};
use crate::executor::context::Context;
use crate::runtime::mailbox::{MailItem, Mailbox};

/// An executor on a virtual clock, for tests: its nodes' timers, clocks, sleeps, rates,
/// service and action timeouts follow a timeline that moves only when every worker is idle
/// ([`run_until`](Self::run_until)) or when the test says so ([`advance`](Self::advance)).
///
/// It dereferences to the [`Executor`] it wraps: create nodes on it as on any executor.
///
/// ```
/// use rclev::VirtualTimeExecutor;
/// use std::sync::{Arc, atomic::{AtomicU32, Ordering}};
/// use std::time::Duration;
///
/// let test = VirtualTimeExecutor::new()?;
/// let node = test.create_node("patrol")?;
/// let ticks = Arc::new(AtomicU32::new(0));
/// let t = ticks.clone();
/// let _timer = node.create_timer_repeating(Duration::from_secs(10), move || {
///     t.fetch_add(1, Ordering::Relaxed);
/// })?;
/// // A minute of the node's life, in about a millisecond of the test's.
/// let errors = test.advance(Duration::from_secs(60));
/// assert!(errors.is_empty());
/// assert_eq!(ticks.load(Ordering::Relaxed), 6);
/// assert_eq!(test.elapsed(), Duration::from_secs(60));
/// # Ok::<(), rclev::Error>(())
/// ```
pub struct VirtualTimeExecutor {
    executor: Executor,
    timeline: Arc<RosTimeSource>,
    /// Where [`run_until`](Self::run_until) runs its future: the mailbox of a worker of its
    /// own, so that the future's wake-ups count against idleness like a callback's.
    runner: Arc<Mailbox>,
    /// The timeline's reading at creation.
    start: i64,
}

impl VirtualTimeExecutor {
    /// A virtual-time executor on a new in-process context. The timeline starts at the system
    /// time of the call (so stamps look like today's) and then moves only as the test says.
    pub fn new() -> Result<Self> {
        Self::with_context(&Context::default())
    }

    /// A virtual-time executor on `context` (its transport should be in-process: peers over a
    /// wire run on real time).
    pub fn with_context(context: &Context) -> Result<Self> {
        let options = ExecutorOptions {
            // A thread per worker whatever runtime the test runs in; nothing spins, and Ctrl-C
            // is the test harness's.
            runtime: RuntimeChoice::ThreadPerWorker,
            worker_spin: Duration::ZERO,
            handle_sigint: false,
            ..ExecutorOptions::default()
        };
        let executor = context.create_executor(options)?;
        let shared = executor.shared().clone();
        let sink: std::sync::Weak<dyn crate::clock::SimTimeSink> =
            Arc::downgrade(&shared.timers().core) as _;
        let start = crate::clock::Clock::system().now().nanos;
        let timeline = Arc::new(RosTimeSource::new_virtual(sink, start));
        shared.life().watch(&timeline);
        let weak = Arc::downgrade(&shared);
        timeline.set_reporter(Box::new(move |e| match weak.upgrade() {
            Some(exec) => exec.report(e),
            None => crate::diagnostic!(ERROR, target: "rclev", "{e}"),
        }));
        if shared.virtual_time.set(timeline.clone()).is_err() {
            unreachable!("a new executor has no timeline yet");
        }
        let runner = Arc::new(Mailbox::default());
        shared.spawn_worker(&runner, Box::new(()), "virtual-time")?;
        Ok(Self {
            executor,
            timeline,
            runner,
            start,
        })
    }

    /// The virtual time now (as ROS time; steady and system clocks read the same value).
    pub fn now(&self) -> Time {
        Time {
            nanos: self.timeline.now_nanos(),
            clock_type: ClockType::RosTime,
        }
    }

    /// Virtual time elapsed since the executor was created.
    pub fn elapsed(&self) -> Duration {
        Duration::from_nanos((self.timeline.now_nanos() - self.start).max(0) as u64)
    }

    /// Runs every worker until all are idle, without moving time; returns the errors raised
    /// (callback panics and the like).
    #[must_use = "the errors raised while running (callback panics and the like) are lost unless looked at"]
    pub fn run_until_idle(&self) -> Vec<Error> {
        self.executor.spin(SpinOptions::spin_once())
    }

    /// Moves time forward by `by`, stopping at every deadline on the way (a timer's, a
    /// sleep's) to run what it wakes until every worker is idle again; ends at exactly
    /// `now + by`, idle. Returns the errors raised meanwhile.
    #[must_use = "the errors raised while running (callback panics and the like) are lost unless looked at"]
    pub fn advance(&self, by: Duration) -> Vec<Error> {
        let target = self
            .timeline
            .now_nanos()
            .saturating_add(crate::clock::saturating_nanos(by));
        let mut errors = self.run_until_idle();
        loop {
            match self.timeline.next_deadline() {
                Some(next) if next <= target => errors.extend(self.step_to(next)),
                _ => {
                    self.timeline.set_sim_time(target);
                    errors.extend(self.run_until_idle());
                    return errors;
                }
            }
        }
    }

    /// Moves time to the earliest deadline anything waits for and runs what it wakes until
    /// every worker is idle. `None` (time unchanged) when nothing waits on the timeline.
    pub fn advance_to_next(&self) -> Option<(Duration, Vec<Error>)> {
        let mut errors = self.run_until_idle();
        let next = self.timeline.next_deadline()?;
        errors.extend(self.step_to(next));
        Some((self.elapsed(), errors))
    }

    /// Runs `future` to completion on a worker of this executor, moving time to the next
    /// deadline whenever every worker (the future's included) is idle and the future has not
    /// resolved: a `client.call(…)`, `wait_for_service(Some(5 s))` or goal result resolves
    /// as fast as the work it waits for allows. [`Error::VirtualTimeStalled`] when the future
    /// is pending, every worker is idle and nothing is scheduled (it would wait forever).
    /// Errors raised by callbacks meanwhile are reported to the executor's error handler and
    /// `tracing`, as during a spin.
    pub fn run_until<F>(&self, future: F) -> Result<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let (tx, mut rx) = tokio::sync::oneshot::channel();
        let queued = self.runner.push(MailItem::Spawned(Box::pin(async move {
            let _ = tx.send(future.await);
        })));
        if !queued {
            return Err(Error::Shutdown);
        }
        loop {
            for e in self.run_until_idle() {
                crate::diagnostic!(ERROR, target: "rclev", "{e}");
            }
            match rx.try_recv() {
                Ok(output) => return Ok(output),
                Err(tokio::sync::oneshot::error::TryRecvError::Closed) => {
                    return Err(Error::Shutdown)
                }
                Err(tokio::sync::oneshot::error::TryRecvError::Empty) => {}
            }
            if self.executor.commands().is_shut_down() {
                return Err(Error::Shutdown);
            }
            match self.timeline.next_deadline() {
                Some(next) => {
                    let _ = self.step_to(next);
                }
                None => {
                    return Err(Error::VirtualTimeStalled {
                        elapsed: self.elapsed(),
                    })
                }
            }
        }
    }

    /// Sets the time to `at` (not before now) and runs what that wakes until idle.
    fn step_to(&self, at: i64) -> Vec<Error> {
        let now = self.timeline.now_nanos();
        // A deadline at or before now was handed over by the last step already, unless it is
        // still being armed: step past it rather than loop on it.
        let at = if at <= now { now.saturating_add(1) } else { at };
        self.timeline.set_sim_time(at);
        self.run_until_idle()
    }
}

impl std::ops::Deref for VirtualTimeExecutor {
    type Target = Executor;

    fn deref(&self) -> &Executor {
        &self.executor
    }
}

impl Drop for VirtualTimeExecutor {
    fn drop(&mut self) {
        self.runner.close();
    }
}

impl std::fmt::Debug for VirtualTimeExecutor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VirtualTimeExecutor")
            .field("elapsed", &self.elapsed())
            .finish_non_exhaustive()
    }
}
