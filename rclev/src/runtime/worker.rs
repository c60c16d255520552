//! The worker loop: one Tokio task per worker that drains its mailbox, runs ready entities and
//! polls the worker's in-flight async callbacks.
//!
//! Callbacks of one worker run one at a time on this task (so they may mutate the payload);
//! different workers are different tasks and run in parallel on the runtime's threads.

use std::any::Any;
use std::future::poll_fn;
use std::sync::Arc;
use std::task::Poll;
use std::time::Instant;

use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};

use super::alarm::{Unparker, WorkerAlarm};
use super::core::WorkerHost;
use super::executable::{ExecContext, Executable};
use super::mailbox::{MailItem, Mailbox, Take, WorkerPayload};
use super::policy::order_ticks;
use super::policy::PollBudget;
pub(crate) use super::policy::SpinPolicy;
use crate::base::error::{panic_message, Error};

/// A worker as the entities it runs see it from below the node layer: the mailbox their
/// readiness goes to, and the executor core their callbacks report to. Holding one does not keep
/// the worker running: its task ends when the node layer's last `WorkerCore` is dropped, so an
/// entity holds one of those too (opaquely, e.g. a timer's keep-alive).
#[derive(Clone)]
pub(crate) struct WorkerRef {
    pub(crate) mailbox: Arc<Mailbox>,
    pub(crate) host: Arc<WorkerHost>,
}

impl WorkerRef {
    /// Whether the calling thread is this worker, running one of its callbacks: a stop called
    /// from there must not wait for the callback it is called from.
    pub(crate) fn is_current(&self) -> bool {
        super::core::in_section_of_worker(&self.mailbox)
    }
}

/// Runs a worker until its mailbox closes or the executor shuts down.
pub(crate) async fn run_worker(
    mailbox: Arc<Mailbox>,
    exec: Arc<WorkerHost>,
    payload: WorkerPayload,
    mut spin: SpinPolicy,
    mut alarm: WorkerAlarm,
) {
    // `None` while the worker is parked and its payload waits in the mailbox, where a receive
    // thread may borrow it (see `mailbox`): who holds the payload runs the callbacks.
    let mut payload = Some(payload);
    #[cfg(not(rclev_loom))]
    if let Ok(handle) = tokio::runtime::Handle::try_current() {
        let _ = mailbox.runtime.set(handle);
    }
    let mut batch: Vec<MailItem> = Vec::new();
    let mut spawned: Vec<BoxFuture<'static, ()>> = Vec::new();
    let mut in_flight: FuturesUnordered<BoxFuture<'static, ()>> = FuturesUnordered::new();
    // When the worker last ran out of work; `None` while it has work.
    let mut idle_since: Option<Instant> = None;
    let mut alarm_due: Vec<std::sync::Weak<dyn Executable>> = Vec::new();
    // Wakes this thread too, for a worker that may block it on its alarm.
    let unparker = Unparker::for_this_thread();
    #[cfg(not(rclev_loom))]
    let in_flight_waker = Arc::new(InFlightWaker {
        mailbox: mailbox.clone(),
        task: std::sync::Mutex::new(None),
    });
    let report = |e: Error| exec.report(e);

    poll_fn(|cx| {
        mailbox
            .wakeups
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // Everything this poll runs is inside a section: a closing spin waits for it.
        let _section = exec.gate.section(&exec, &mailbox);
        let mut budget = PollBudget::start(Instant::now());
        loop {
            if exec.is_shut_down() {
                return Poll::Ready(());
            }
            if !exec.gate.is_open_or_register(cx.waker()) {
                if mailbox.watch_close(cx.waker()) {
                    return Poll::Ready(());
                }
                // Items taken by the parking `take` below have not run: they wait for the
                // next spin in the mailbox, where spin-once's idle check can see them.
                if !batch.is_empty() {
                    mailbox.requeue_front(batch.drain(..));
                }
                mailbox.set_idle();
                exec.notify_idle();
                return Poll::Pending;
            }
            if !in_flight.is_empty() {
                // Polling resumes user code: through the start fence, like a callback.
                mailbox.fence.enter();
                let stopped = exec.is_shut_down();
                mailbox.fence.leave();
                if stopped {
                    return Poll::Ready(());
                }
                #[cfg(not(rclev_loom))]
                {
                    mailbox.polling_in_flight();
                    let waker = in_flight_waker.for_task(cx.waker());
                    let mut cx = std::task::Context::from_waker(&waker);
                    while let Poll::Ready(Some(())) = in_flight.poll_next_unpin(&mut cx) {}
                }
                // The models leave the idle bookkeeping of async callbacks out.
                #[cfg(rclev_loom)]
                while let Poll::Ready(Some(())) = in_flight.poll_next_unpin(cx) {}
            }

            // Entities whose alarm went off are queued again (see `alarm`), first and in
            // deadline order.
            alarm.take_due(Instant::now(), &mut alarm_due);
            for entity in alarm_due.drain(..).rev().filter_map(|e| e.upgrade()) {
                entity.dispatch().notify_first();
            }

            // A non-empty batch was taken by the parking `take` below and is run here.
            let taken = if batch.is_empty() {
                mailbox.take(&mut batch, None, &mut payload)
            } else {
                Take::Items
            };
            // Ticks queued from both sides (alarm and scheduler thread), or handed over as
            // timers were added, run in deadline order.
            if batch.len() > 1 {
                order_ticks(&mut batch);
            }
            let lent = matches!(taken, Take::Lent);
            match taken {
                Take::Closed => return Poll::Ready(()),
                Take::Items => {
                    if let Some(t) = idle_since.take() {
                        if batch.iter().any(needs_spin) {
                            spin.record_gap(Instant::now().saturating_duration_since(t));
                        } else {
                            spin.record_no_spin_needed();
                        }
                    }
                    // Items come with the payload: `take` hands it back when it parked.
                    let Some(payload) = payload.as_deref_mut() else {
                        unreachable!("a worker took items without its payload");
                    };
                    run_batch(
                        &mailbox,
                        &mut batch,
                        payload,
                        &mut spawned,
                        &report,
                        &exec,
                        &mut alarm,
                    );
                    for fut in spawned.drain(..) {
                        in_flight.push(fenced(fut, &mailbox, &exec));
                    }
                    if budget.round_done(Instant::now) {
                        cx.waker().wake_by_ref();
                        return Poll::Pending;
                    }
                    continue;
                }
                // Lent: a receive thread runs one of this worker's entities; park (no spin,
                // no idle period) until it is done.
                Take::Empty | Take::Lent => {}
            }

            // When the worker ran out of work (the spin policy measures gaps from it).
            let since = (!lent).then(|| *idle_since.get_or_insert_with(Instant::now));
            if let Some(spin_until) = since.and_then(|since| spin.spin_until(since, alarm.next())) {
                // Spinning runs nothing: a receive thread may borrow the worker meanwhile, as
                // when it is parked. Otherwise a worker that spins because work comes often
                // would turn every direct delivery into a hand-off to itself, and keep spinning.
                mailbox.lend_while_spinning(&mut payload);
                while !mailbox.has_items() && Instant::now() < spin_until {
                    std::hint::spin_loop();
                }
                if mailbox.has_items() || alarm.next().is_some_and(|t| t <= Instant::now()) {
                    continue;
                }
            }
            // With an alarm waiting, either block the thread until it (woken early by
            // anything that would wake the task: the waker registered below unparks it), or
            // arm the kernel timer before parking, so that it going off from here on wakes
            // this task.
            let block_until = alarm
                .next()
                .filter(|_| alarm.may_block(in_flight.is_empty()));
            if block_until.is_none() && alarm.poll_arm(cx).is_ready() {
                continue;
            }
            let waker = match block_until {
                Some(_) => unparker.waker(cx.waker()),
                None => cx.waker().clone(),
            };
            match mailbox.take(&mut batch, Some(&waker), &mut payload) {
                Take::Closed => return Poll::Ready(()),
                Take::Items => continue,
                Take::Empty => {
                    exec.notify_idle();
                    if let Some(at) = block_until {
                        alarm.block_until(at);
                        continue;
                    }
                    return Poll::Pending;
                }
                Take::Lent => {
                    // A receive thread holds the payload and may finish without queueing
                    // anything: the alarm must still wake the task (armed here if the block
                    // path skipped it above).
                    if block_until.is_some() && alarm.poll_arm(cx).is_ready() {
                        continue;
                    }
                    return Poll::Pending;
                }
            }
        }
    })
    .await
}

/// The waker the worker's async callbacks get: marks the mailbox (see
/// [`Mailbox::in_flight_woken`]) before waking the worker's task, so a callback woken by a
/// response, a sleep or another worker's message keeps the worker from counting as idle until
/// it has been polled.
#[cfg(not(rclev_loom))]
struct InFlightWaker {
    mailbox: Arc<Mailbox>,
    /// The task's waker as of the worker's latest poll.
    task: std::sync::Mutex<Option<std::task::Waker>>,
}

#[cfg(not(rclev_loom))]
impl InFlightWaker {
    /// This waker, after recording `task` as the one to wake.
    fn for_task(self: &Arc<Self>, task: &std::task::Waker) -> std::task::Waker {
        let mut current = self.task.lock().unwrap_or_else(|p| p.into_inner());
        if !current.as_ref().is_some_and(|w| w.will_wake(task)) {
            *current = Some(task.clone());
        }
        drop(current);
        std::task::Waker::from(self.clone())
    }
}

#[cfg(not(rclev_loom))]
impl std::task::Wake for InFlightWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.mailbox.in_flight_woken();
        let task = self.task.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if let Some(task) = task {
            task.wake();
        }
    }
}

fn needs_spin(item: &MailItem) -> bool {
    match item {
        MailItem::Entity(weak) => weak.upgrade().is_none_or(|e| e.arrivals_need_spin()),
        MailItem::Job(_) | MailItem::Spawned(_) => true,
    }
}

/// Runs the items of one mailbox take, in order, while the executor runs and the spin gate is
/// open (what is left waits, in order, in the mailbox for the next spin).
fn run_batch(
    mailbox: &Mailbox,
    batch: &mut Vec<MailItem>,
    payload: &mut (dyn Any + Send),
    spawned: &mut Vec<BoxFuture<'static, ()>>,
    report: &dyn Fn(Error),
    exec: &WorkerHost,
    alarm: &mut WorkerAlarm,
) {
    let can_sleep = alarm.available();
    let mut items = batch.drain(..);
    while let Some(item) = items.next() {
        // Checked per item: after shutdown no further callback starts, and after the last
        // spin returns the rest waits (in order) for the next spin.
        if exec.is_shut_down() {
            return;
        }
        if !exec.gate.is_open() {
            mailbox.requeue_front(std::iter::once(item).chain(items));
            return;
        }
        let mut cx = ExecContext {
            payload: &mut *payload,
            spawned: &mut *spawned,
            report,
            fence: &mailbox.fence,
            shut_down: &|| exec.is_shut_down(),
            mailbox_has_items: &|| mailbox.has_items(),
            later_in_round: items.len() > 0,
            wake_at: None,
            alarm_deadline: alarm.earliest_deadline(),
        };
        match item {
            MailItem::Entity(weak) => {
                let Some(entity) = weak.upgrade() else {
                    continue;
                };
                let mut wake_at = None;
                if can_sleep {
                    cx.wake_at = Some(&mut wake_at);
                }
                entity.dispatch().begin();
                // User callbacks are guarded inside `execute`; this catches a panic in rclev's
                // own entity code, which would otherwise end the worker's task without a word.
                if let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    entity.execute(&mut cx)
                })) {
                    report(Error::CallbackPanicked {
                        entity: "entity (internal)".into(),
                        message: panic_message(&*p),
                    });
                }
                // `cx` (which borrows `wake_at`) is not used after `execute`.
                if let Some((wake, deadline)) = wake_at {
                    alarm.add(wake, deadline, weak);
                }
            }
            MailItem::Job(job) => {
                // A job is user code too: started through the fence like a callback. Refused
                // only after shutdown; dropping the job then fails its `run` future with
                // `Error::Shutdown`.
                cx.guarded("worker job", job);
            }
            MailItem::Spawned(fut) => cx.spawn(fut),
        }
    }
}

/// An in-flight async callback whose every poll goes through the worker's start fence. A poll
/// resumes user code, and one `poll_next` of the in-flight set may poll several futures, each
/// after the previous one's poll ran for as long as it liked: the fence check before
/// `poll_next` does not cover the later ones, which could resume after `shutdown()` returned.
/// After shutdown the future is not polled again (the worker drops it when its loop ends).
fn fenced(
    mut fut: BoxFuture<'static, ()>,
    mailbox: &Arc<Mailbox>,
    exec: &Arc<WorkerHost>,
) -> BoxFuture<'static, ()> {
    let (mailbox, exec) = (mailbox.clone(), exec.clone());
    Box::pin(poll_fn(move |cx| {
        mailbox.fence.enter();
        let stopped = exec.is_shut_down();
        mailbox.fence.leave();
        if stopped {
            return Poll::Pending;
        }
        fut.poll_unpin(cx)
    }))
}

/// Wraps an async callback so a panic inside it is reported instead of killing the worker task.
pub(crate) fn guard_async(
    label: String,
    exec: Arc<WorkerHost>,
    fut: impl std::future::Future<Output = ()> + Send + 'static,
) -> BoxFuture<'static, ()> {
    std::panic::AssertUnwindSafe(fut)
        .catch_unwind()
        .map(move |r| {
            if let Err(p) = r {
                exec.report(Error::CallbackPanicked {
                    entity: label,
                    message: panic_message(&*p),
                });
            }
        })
        .boxed()
}
