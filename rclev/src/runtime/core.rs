//! The executor core's shared state: what workers and callbacks need of their executor — the
//! spin gate, the shutdown flag, error reporting, idle notification and the registry of worker
//! mailboxes. `ExecutorShared` (the `Executor`, a layer above) owns one and adds the runtime,
//! the timer scheduler and the context; workers hold only this.

use std::sync::atomic::AtomicUsize as StdAtomicUsize;
use std::sync::{Arc, Mutex, Weak};
use std::task::Waker;

use tokio::sync::Notify;

use super::mailbox::{self, Mailbox};
use crate::base::error::{Error, Result};
use crate::base::sync::{
    lock, model_lock, AtomicBool, AtomicUsize, Notify as GateNotify, Ordering,
};
use crate::base::throttle::ReportThrottle;

/// A callback for every error the executor reports (see `ExecutorOptions::error_handler`).
pub type ErrorHandler = Arc<dyn Fn(&Error) + Send + Sync>;

/// Errors kept for `spin`'s return value when nobody spins for a long time.
const MAX_KEPT_ERRORS: usize = 1024;

/// Malformed messages logged, per topic, at most every 10 s.
static MALFORMED: ReportThrottle = ReportThrottle::new(std::time::Duration::from_secs(10));

/// What the workers see of their executor.
pub(crate) struct WorkerHost {
    pub(crate) gate: SpinGate,
    /// Workers are tasks on a multi-threaded runtime they share (see `mailbox`'s wakes).
    shared_multi_thread: bool,
    shut_down: AtomicBool,
    workers: Mutex<Vec<Weak<Mailbox>>>,
    /// Only a hint for waking idle watchers, never part of a modelled protocol: `std`'s.
    pub(crate) idle_watchers: StdAtomicUsize,
    pub(crate) idle_notify: Notify,
    pub(crate) errors: Mutex<Vec<Error>>,
    error_handler: Option<ErrorHandler>,
}

impl WorkerHost {
    pub(crate) fn new(shared_multi_thread: bool, error_handler: Option<ErrorHandler>) -> Self {
        Self {
            gate: SpinGate::default(),
            shared_multi_thread,
            shut_down: AtomicBool::new(false),
            workers: Mutex::new(Vec::new()),
            idle_watchers: StdAtomicUsize::new(0),
            idle_notify: Notify::new(),
            errors: Mutex::new(Vec::new()),
            error_handler,
        }
    }

    pub(crate) fn is_shut_down(&self) -> bool {
        // SeqCst: one side of the start fence's Dekker pair (see `fence`).
        self.shut_down.load(Ordering::SeqCst)
    }

    /// Sets the shutdown flag; `false` if it was already set.
    pub(crate) fn begin_shutdown(&self) -> bool {
        !self.shut_down.swap(true, Ordering::SeqCst)
    }

    pub(crate) fn report(&self, error: Error) {
        match &error {
            // A peer can send malformed messages as fast as it likes: logged rate-limited per
            // topic (the handler and the spin's errors still see each one).
            Error::MalformedMessage { topic, .. } => {
                if let Some(held_back) = MALFORMED.note(topic) {
                    crate::diagnostic!(ERROR, target: "rclev", "{error}{held_back}");
                }
            }
            _ => crate::diagnostic!(ERROR, target: "rclev", "{error}"),
        }
        if let Some(h) = &self.error_handler {
            h(&error);
        }
        let mut errors = lock(&self.errors);
        if errors.len() < MAX_KEPT_ERRORS {
            errors.push(error);
        }
    }

    pub(crate) fn notify_idle(&self) {
        if self.idle_watchers.load(Ordering::Acquire) > 0 {
            self.idle_notify.notify_waiters();
        }
    }

    /// [`Error::Shutdown`] once the executor has shut down: nothing created then would ever run.
    pub(crate) fn check_running(&self) -> Result<()> {
        if self.is_shut_down() {
            return Err(Error::Shutdown);
        }
        Ok(())
    }

    /// Registers a new worker's mailbox so shutdown closes it; fails after shutdown.
    pub(crate) fn register_worker(&self, mailbox: &Arc<Mailbox>) -> Result<()> {
        {
            let mut workers = lock(&self.workers);
            workers.retain(|w| w.strong_count() > 0);
            workers.push(Arc::downgrade(mailbox));
        }
        // Checked after registering: `shutdown` sets the flag before it collects the workers
        // under the same lock, so either it sees this mailbox or this sees the flag.
        if let Err(e) = self.check_running() {
            mailbox.close();
            return Err(e);
        }
        Ok(())
    }

    pub(crate) fn live_workers(&self) -> Vec<Arc<Mailbox>> {
        lock(&self.workers)
            .iter()
            .filter_map(Weak::upgrade)
            .collect()
    }

    pub(crate) fn all_idle(&self) -> bool {
        self.live_workers().iter().all(|m| m.is_idle())
    }

    /// Closes every worker's mailbox after `begin_shutdown`. A callback a worker decided to
    /// start before it could see the flag has started by the time this returns; none starts
    /// later.
    pub(crate) fn close_workers(&self) {
        for m in self.live_workers() {
            m.close();
            m.fence.wait_out();
        }
    }

    /// Whether this thread is inside a worker section of this executor (running a callback).
    pub(crate) fn in_section_here(&self) -> bool {
        IN_SECTION_OF.with(|c| std::ptr::eq(c.get().0, self))
    }
}

/// The spin gate: callbacks run only while at least one spin is active, and a spin returns
/// only once no callback runs.
///
/// Workers do their work inside *sections* ([`SpinGate::section`]), one per poll of their task.
/// A worker raises `running` and then checks `active`; the last spin to close lowers `active`
/// and then waits for `running` to reach zero. Both sides use `SeqCst` (Dekker's pattern), so
/// either the worker sees the gate closed and runs nothing, or the closing spin sees the section
/// and waits it out: when `spin` returns, no callback of the executor is running and none starts
/// until the next spin (async callbacks are suspended: they are polled only inside sections).
/// `executor/loom_tests.rs` models this on the real gate and worker loop.
#[derive(Default)]
pub(crate) struct SpinGate {
    active: AtomicUsize,
    waiting: crate::base::sync::Mutex<Vec<Waker>>,
    /// Workers inside a section.
    running: AtomicUsize,
    /// Spins waiting for `running` to reach zero; sections notify `quiet` only then.
    closers: AtomicUsize,
    /// Tokio's `Notify` (under loom, the facade's stand-in with its `notify_waiters` contract).
    quiet: GateNotify,
}

/// A worker's section (see [`SpinGate`]); ends on drop.
pub(crate) struct Section<'a> {
    gate: &'a SpinGate,
    outer: SectionOwner,
    outer_shared: bool,
}

/// Whose worker section a thread is in: the executor's host (to refuse a spin from inside one
/// of its callbacks) and the worker's mailbox (a callback stopping an entity of its own worker
/// does not wait for itself). Null pointers: none. Only compared, never dereferenced.
type SectionOwner = (*const WorkerHost, *const Mailbox);

crate::base::sync::thread_local! {
    static IN_SECTION_OF: std::cell::Cell<SectionOwner> =
        const { std::cell::Cell::new((std::ptr::null(), std::ptr::null())) };
}

/// Whether this thread is running a section of the worker with `mailbox`.
pub(crate) fn in_section_of_worker(mailbox: &Mailbox) -> bool {
    IN_SECTION_OF.with(|c| std::ptr::eq(c.get().1, mailbox))
}

impl Drop for Section<'_> {
    fn drop(&mut self) {
        IN_SECTION_OF.with(|c| c.set(self.outer));
        mailbox::ON_SHARED_RUNTIME.with(|c| c.set(self.outer_shared));
        if self.gate.running.fetch_sub(1, Ordering::SeqCst) == 1
            && self.gate.closers.load(Ordering::SeqCst) > 0
        {
            self.gate.quiet.notify_waiters();
        }
    }
}

impl SpinGate {
    /// Whether the gate is open; if not, `waker` is woken when it opens.
    pub(crate) fn is_open_or_register(&self, waker: &Waker) -> bool {
        if self.is_open() {
            return true;
        }
        let mut waiting = model_lock(&self.waiting);
        // Re-checked under the lock `open` takes, so an opening cannot slip between.
        if self.is_open() {
            return true;
        }
        if !waiting.iter().any(|w| w.will_wake(waker)) {
            waiting.push(waker.clone());
        }
        false
    }

    pub(crate) fn is_open(&self) -> bool {
        self.active.load(Ordering::SeqCst) > 0
    }

    /// Starts a worker section on this thread for `host` (whose gate this is).
    pub(crate) fn section<'a>(&'a self, host: &WorkerHost, mailbox: &Mailbox) -> Section<'a> {
        self.running.fetch_add(1, Ordering::SeqCst);
        let outer = IN_SECTION_OF.with(|c| c.replace((host as *const _, mailbox as *const _)));
        let outer_shared = mailbox::ON_SHARED_RUNTIME.with(|c| c.replace(host.shared_multi_thread));
        Section {
            gate: self,
            outer,
            outer_shared,
        }
    }

    /// Waits until no worker is inside a section, unless a spin is active again meanwhile.
    pub(crate) async fn quiesce(&self) {
        self.closers.fetch_add(1, Ordering::SeqCst);
        loop {
            let quiet = self.quiet.notified();
            tokio::pin!(quiet);
            quiet.as_mut().enable();
            if self.running.load(Ordering::SeqCst) == 0 || self.is_open() {
                break;
            }
            quiet.await;
        }
        self.closers.fetch_sub(1, Ordering::SeqCst);
    }

    pub(crate) fn open(&self) {
        let waiting = {
            let mut waiting = model_lock(&self.waiting);
            self.active.fetch_add(1, Ordering::SeqCst);
            std::mem::take(&mut *waiting)
        };
        for w in waiting {
            w.wake();
        }
    }

    /// Closes this spin's hold on the gate; `true` if it was the last.
    pub(crate) fn close(&self) -> bool {
        self.active.fetch_sub(1, Ordering::SeqCst) == 1
    }

    pub(crate) fn wake_all(&self) {
        let waiting = std::mem::take(&mut *model_lock(&self.waiting));
        for w in waiting {
            w.wake();
        }
    }
}
