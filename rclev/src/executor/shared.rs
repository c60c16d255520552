//! `ExecutorShared`: the state an executor shares with its nodes (through accessors), worker
//! spawning, shutdown, and the spin loop itself.

use std::sync::Arc;

use tokio::runtime::{Handle, RuntimeFlavor};
use tokio::sync::Notify;

use super::{ExecutorOptions, SpinOptions};
use crate::base::error::{Error, Result};
use crate::base::sync::{lock, Ordering};
use crate::executor::context::Context;
use crate::runtime::core::{SpinGate, WorkerHost};
use crate::runtime::mailbox::Mailbox;
use crate::runtime::worker;
use crate::timer::TimerScheduler;

/// State shared by the executor and the nodes created from it. The node layer sees it only
/// through the methods below: the context (transport and arguments), the worker host, the
/// lifeline, the timer scheduler, and [`spawn_worker`](Self::spawn_worker); how workers are
/// run stays the executor's business.
pub(crate) struct ExecutorShared {
    pub(super) context: Context,
    pub(super) handle: Handle,
    /// Workers run on threads of their own (see [`RuntimeChoice::ThreadPerWorker`](super::RuntimeChoice::ThreadPerWorker)).
    pub(super) dedicated_workers: bool,
    /// Workers' runtimes are the executor's own, built with an I/O driver, so workers can
    /// sleep to timer deadlines on an alarm (see `alarm`). An adopted runtime may lack the
    /// driver (Tokio panics on use then), so its workers do without.
    pub(super) workers_have_alarms: bool,
    /// What the workers see of the executor (layer 3: the executor core).
    pub(super) host: Arc<WorkerHost>,
    pub(super) options: ExecutorOptions,
    pub(super) timers: TimerScheduler,
    /// Ends the sleeps of the nodes' clocks on shutdown.
    pub(super) life: Arc<crate::clock::Lifeline>,
    pub(super) shutdown_notify: Notify,
    pub(super) halt_notify: Notify,
    /// The virtual timeline every clock of this executor's nodes reads, for a
    /// [`VirtualTimeExecutor`](super::VirtualTimeExecutor) (set before any node exists).
    pub(super) virtual_time: std::sync::OnceLock<Arc<crate::clock::RosTimeSource>>,
}

impl ExecutorShared {
    /// The shared state over a runtime and a timer scheduler that already exist. Separate from
    /// [`Executor::new`](super::Executor::new) so the loom models can build one without threads (see `for_model`).
    pub(super) fn new(
        context: Context,
        handle: Handle,
        dedicated_workers: bool,
        workers_have_alarms: bool,
        options: ExecutorOptions,
        timers: TimerScheduler,
    ) -> Self {
        let shared_multi_thread =
            !dedicated_workers && handle.runtime_flavor() == RuntimeFlavor::MultiThread;
        Self {
            context,
            handle,
            dedicated_workers,
            workers_have_alarms,
            host: Arc::new(WorkerHost::new(
                shared_multi_thread,
                options.error_handler.clone(),
            )),
            options,
            timers,
            life: Arc::default(),
            shutdown_notify: Notify::new(),
            halt_notify: Notify::new(),
            virtual_time: std::sync::OnceLock::new(),
        }
    }

    /// An executor for the loom models: the real shared state, with `handle` (a current-thread
    /// runtime the model never drives) and a timer scheduler whose thread is not started. Its
    /// workers are run by the models themselves, on loom threads. One spin is active (the gate
    /// is open), as while `spin` runs.
    #[cfg(all(test, rclev_loom))]
    pub(crate) fn for_model(handle: Handle) -> Arc<Self> {
        Self::for_model_with_precision(handle, crate::timer::TimerPrecision::low_cpu())
    }

    /// [`for_model`](Self::for_model) whose timers are handed over early by up to
    /// `precision.handoff_lead` (the models of ticks popped ahead of their deadline).
    #[cfg(all(test, rclev_loom))]
    pub(crate) fn for_model_with_precision(
        handle: Handle,
        precision: crate::timer::TimerPrecision,
    ) -> Arc<Self> {
        let options = ExecutorOptions {
            worker_spin: std::time::Duration::ZERO,
            handle_sigint: false,
            timer_precision: precision,
            ..ExecutorOptions::default()
        };
        let timers = TimerScheduler::without_thread(options.timer_precision.clone());
        let shared = Arc::new(Self::new(
            Context::default(),
            handle,
            false,
            false,
            options,
            timers,
        ));
        shared.host.gate.open();
        shared
    }

    /// The virtual timeline of a virtual-time executor.
    pub(crate) fn virtual_time(&self) -> Option<&Arc<crate::clock::RosTimeSource>> {
        self.virtual_time.get()
    }

    pub(crate) fn is_shut_down(&self) -> bool {
        self.host.is_shut_down()
    }

    pub(crate) fn report(&self, error: Error) {
        self.host.report(error)
    }

    /// [`Error::Shutdown`] once the executor has shut down: nothing created then would ever run.
    pub(crate) fn check_running(&self) -> Result<()> {
        self.host.check_running()
    }

    /// The context: transport and command-line arguments.
    pub(crate) fn context(&self) -> &Context {
        &self.context
    }

    /// What workers and callbacks see of the executor: spin gate, error reporting.
    pub(crate) fn host(&self) -> &Arc<WorkerHost> {
        &self.host
    }

    /// Ends with the executor: sleeps, waits and futures watch it.
    pub(crate) fn life(&self) -> &Arc<crate::clock::Lifeline> {
        &self.life
    }

    /// The shared timer scheduler.
    pub(crate) fn timers(&self) -> &TimerScheduler {
        &self.timers
    }

    /// Starts a worker task over `mailbox` with `payload` (on the executor's runtime, or on a
    /// thread of its own named `rclev-<name>` with [`RuntimeChoice::ThreadPerWorker`](super::RuntimeChoice::ThreadPerWorker)).
    /// Fails after shutdown, or when the thread cannot be started.
    pub(crate) fn spawn_worker(
        &self,
        mailbox: &Arc<Mailbox>,
        payload: Box<dyn std::any::Any + Send>,
        name: &str,
    ) -> Result<()> {
        self.host.register_worker(mailbox)?;
        let task = worker::run_worker(
            mailbox.clone(),
            self.host.clone(),
            payload,
            worker::SpinPolicy::new(self.options.worker_spin),
            crate::runtime::alarm::WorkerAlarm::new(
                self.workers_have_alarms,
                self.dedicated_workers,
            ),
        );
        if self.dedicated_workers {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| Error::Runtime(format!("cannot build a worker runtime: {e}")))?;
            let slack = self.options.timer_precision.timer_slack;
            std::thread::Builder::new()
                .name(format!("rclev-{name}"))
                .spawn(move || {
                    // The worker sleeps to timer deadlines on this thread (see `alarm`).
                    crate::timer::set_thread_timer_slack(slack);
                    rt.block_on(task)
                })
                .map_err(|e| Error::Runtime(format!("cannot start a worker thread: {e}")))?;
        } else {
            self.handle.spawn(task);
        }
        Ok(())
    }

    pub(super) fn shutdown(&self) {
        if !self.host.begin_shutdown() {
            return;
        }
        self.timers.shutdown();
        self.life.end();
        self.host.close_workers();
        self.host.gate.wake_all();
        self.shutdown_notify.notify_waiters();
        self.halt_notify.notify_waiters();
    }

    /// Whether this thread is inside a worker section of this executor (running a callback).
    pub(super) fn called_from_callback(&self) -> bool {
        self.host.in_section_here()
    }

    pub(super) async fn spin_async(self: Arc<Self>, options: SpinOptions) -> Vec<Error> {
        if self.called_from_callback() {
            return vec![Error::SpinInsideCallback];
        }
        if self.is_shut_down() {
            self.host.gate.quiesce().await;
            return std::mem::take(&mut *lock(&self.host.errors));
        }
        #[cfg(target_os = "linux")]
        let _sigint = self
            .options
            .handle_sigint
            .then(|| super::sigint::SigintGuard::install(&self))
            .flatten();
        let shutdown = self.shutdown_notify.notified();
        let halted = self.halt_notify.notified();
        tokio::pin!(shutdown, halted);
        shutdown.as_mut().enable();
        halted.as_mut().enable();
        self.host.gate.open();
        // Closes the gate also if this future is dropped mid-spin.
        struct Close<'a>(&'a SpinGate, bool);
        impl Drop for Close<'_> {
            fn drop(&mut self) {
                if !self.1 {
                    self.0.close();
                }
            }
        }
        let mut close = Close(&self.host.gate, false);

        let until = async {
            match options.until_promise_resolved {
                Some(f) => {
                    use futures::FutureExt;
                    // A panicking promise ends the spin and is reported with this spin's
                    // errors, not lost with the spin's task.
                    if let Err(p) = std::panic::AssertUnwindSafe(f).catch_unwind().await {
                        self.report(Error::CallbackPanicked {
                            entity: "until_promise_resolved".into(),
                            message: crate::base::error::panic_message(&*p),
                        });
                    }
                }
                None => std::future::pending().await,
            }
        };
        let timeout = async {
            match options.timeout {
                Some(d) => tokio::time::sleep(d).await,
                None => std::future::pending().await,
            }
        };
        let idle = async {
            if !options.only_next_available_work {
                return std::future::pending().await;
            }
            self.host.idle_watchers.fetch_add(1, Ordering::AcqRel);
            loop {
                let notified = self.host.idle_notify.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                // Let workers woken by the gate start before judging them idle.
                tokio::task::yield_now().await;
                if self.host.all_idle() {
                    break;
                }
                notified.await;
            }
            self.host.idle_watchers.fetch_sub(1, Ordering::AcqRel);
        };
        if !self.is_shut_down() {
            tokio::select! {
                _ = shutdown => {}
                _ = halted => {}
                _ = until => {}
                _ = timeout => {}
                _ = idle => {}
            }
        }
        close.1 = true;
        if self.host.gate.close() {
            // Callbacks that run right now finish before this spin returns.
            self.host.gate.quiesce().await;
        }
        std::mem::take(&mut *lock(&self.host.errors))
    }
}
