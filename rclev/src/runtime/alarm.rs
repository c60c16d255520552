//! A worker's alarm: how a worker sleeps until a timer's deadline itself, instead of being
//! woken for it by another thread or busy-waiting.
//!
//! A timer tick can reach its worker well before its deadline (a worker pacing a fast timer
//! pulls the next tick right after running one, see `timer::scheduler::SchedulerCore::pull`).
//! The timer then asks for the worker to be woken shortly before the deadline
//! ([`ExecContext::sleep_until`](super::executable::ExecContext::sleep_until)) and returns; the
//! worker runs other work meanwhile or parks. When the alarm goes off, the timer is queued in
//! the mailbox again and busy-waits only the last few microseconds.
//!
//! The kernel timer is a `timerfd` on `CLOCK_MONOTONIC` (the clock `Instant` reads) armed at
//! an absolute time, registered with the worker's Tokio reactor: a parked worker thread sleeps
//! in the reactor's `epoll_wait` and the kernel's high-resolution timer wakes exactly that
//! thread, with no timer slack (timerfd timers have none). So the tick's path on a busy host is
//! one thread woken by one kernel timer, as for a thread sleeping in `clock_nanosleep`; a
//! second thread (the scheduler) waking and then waking the worker needed two CPUs to come
//! free in time.
//!
//! A worker alone on a thread of its own (the default [`RuntimeChoice::ThreadPerWorker`]) does
//! better still: with no other task on its runtime to starve, it blocks its thread until the
//! alarm time ([`WorkerAlarm::block_until`], a futex wait with 1 ns timer slack), woken early
//! by anything that would wake its task ([`Unparker`]). Measured here, a thread woken by a
//! timerfd through `epoll_wait` runs 3–5 µs later than one whose own timed sleep ends, and on a
//! busy host that difference costs ticks (docs/performance.md, "Timers on a busy host").
//!
//! The timerfd needs the runtime's I/O driver; the executor uses alarms only on runtimes it
//! built itself (see `ExecutorShared::workers_have_alarms`).
//!
//! [`RuntimeChoice::ThreadPerWorker`]: crate::RuntimeChoice::ThreadPerWorker

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;
use std::time::Instant;

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

use super::executable::Executable;
use super::mailbox::MailItem;

/// An entity waiting on the alarm.
struct Waiting {
    /// When to queue it again.
    wake: Instant,
    /// What it waits for (a timer's deadline): entities are queued in this order.
    deadline: Instant,
    entity: Weak<dyn Executable>,
}

/// One worker's alarm: the entities waiting for their wake-up time, and the kernel timer set
/// for the earliest of them.
pub(crate) struct WorkerAlarm {
    /// Created on first use, inside the worker's runtime; `Err` if that failed (the worker
    /// then polls instead of sleeping in the reactor).
    fd: Option<std::io::Result<AsyncFd<OwnedFd>>>,
    /// Whether the runtime can have one.
    allowed: bool,
    /// The worker has a thread of its own and may block it (see [`Self::may_block`]).
    dedicated: bool,
    /// Entities to queue again at their time. Few: one per paced timer of this worker.
    waiting: Vec<Waiting>,
    /// What the kernel timer is set to.
    armed_for: Option<Instant>,
}

impl WorkerAlarm {
    /// An alarm; `allowed` says whether the worker's runtime has an I/O driver, `dedicated`
    /// whether that runtime runs on a thread of the worker's own.
    pub(crate) fn new(allowed: bool, dedicated: bool) -> Self {
        Self {
            fd: None,
            allowed,
            dedicated: allowed && dedicated,
            waiting: Vec::new(),
            armed_for: None,
        }
    }

    /// Whether the alarm can be used: entities may ask for a wake-up.
    pub(crate) fn available(&self) -> bool {
        self.allowed
    }

    /// The kernel timer, created on first use (inside the worker's runtime); `None` if that
    /// failed (descriptors exhausted).
    fn timer(&mut self) -> Option<&AsyncFd<OwnedFd>> {
        let fd = self.fd.get_or_insert_with(|| {
            // SAFETY: timerfd_create takes no pointers; a non-negative result is a new file
            // descriptor that nothing else owns, so OwnedFd may take it.
            let raw = unsafe {
                libc::timerfd_create(
                    libc::CLOCK_MONOTONIC,
                    libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
                )
            };
            if raw < 0 {
                return Err(std::io::Error::last_os_error());
            }
            // SAFETY: see above: `raw` is a fresh descriptor owned by nobody else.
            let owned = unsafe { OwnedFd::from_raw_fd(raw) };
            // SAFETY: the AsyncFd owns `owned`, which keeps the descriptor open and its
            // `as_raw_fd` unchanged until the AsyncFd is dropped; nothing else closes it.
            unsafe { AsyncFd::register_with_interest(owned, Interest::READABLE) }
                .map_err(|e| e.into_parts().1)
        });
        fd.as_ref().ok()
    }

    /// Queues `entity` again at `wake`, for something due at `deadline` (replacing an
    /// earlier request of the same entity).
    pub(crate) fn add(&mut self, wake: Instant, deadline: Instant, entity: Weak<dyn Executable>) {
        self.waiting.retain(|w| !Weak::ptr_eq(&w.entity, &entity));
        self.waiting.push(Waiting {
            wake,
            deadline,
            entity,
        });
    }

    /// The earliest wake-up time waiting.
    pub(crate) fn next(&self) -> Option<Instant> {
        self.waiting.iter().map(|w| w.wake).min()
    }

    /// The earliest deadline waiting.
    pub(crate) fn earliest_deadline(&self) -> Option<Instant> {
        self.waiting.iter().map(|w| w.deadline).min()
    }

    /// Moves the entities whose time has come (at `now`) into `out`, in deadline order, with
    /// every entity waiting for an earlier deadline than one of them (its own wake-up may be
    /// later, its margin being smaller): entities run in deadline order, as the scheduler
    /// hands ticks over.
    pub(crate) fn take_due(&mut self, now: Instant, out: &mut Vec<Weak<dyn Executable>>) {
        let Some(upto) = self
            .waiting
            .iter()
            .filter(|w| w.wake <= now)
            .map(|w| w.deadline)
            .max()
        else {
            return;
        };
        let mut due: Vec<Waiting> = Vec::new();
        let mut i = 0;
        while i < self.waiting.len() {
            if self.waiting[i].deadline <= upto {
                due.push(self.waiting.swap_remove(i));
            } else {
                i += 1;
            }
        }
        due.sort_by_key(|w| w.deadline);
        out.extend(due.into_iter().map(|w| w.entity));
    }

    /// Whether the worker may block its thread until the alarm instead of parking its task:
    /// it has a thread of its own, no async callback of its own is in flight (`idle_futures`),
    /// and no task is spawned on the thread's runtime (the worker itself is the future the
    /// thread blocks on, not a task), so blocking starves no one.
    pub(crate) fn may_block(&self, idle_futures: bool) -> bool {
        self.dedicated
            && idle_futures
            && tokio::runtime::Handle::try_current()
                .is_ok_and(|h| h.metrics().num_alive_tasks() == 0)
    }

    /// Blocks the thread until `at` or until `unparker` is woken (or spuriously); the caller
    /// registered `unparker`'s waker wherever its task waits.
    pub(crate) fn block_until(&self, at: Instant) {
        let now = Instant::now();
        if at > now {
            std::thread::park_timeout(at - now);
        }
    }

    /// Sets the kernel timer for the earliest waiting entry and registers the task's waker
    /// with it. `Ready` if that time has already come (nothing registered then: run the due
    /// entries first).
    pub(crate) fn poll_arm(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let Some(next) = self.next() else {
            return Poll::Pending;
        };
        let armed_for = self.armed_for;
        let Some(fd) = self.timer() else {
            // No kernel timer to be had: poll again at once rather than sleep through the
            // deadline (the worker busy-waits, as without an alarm).
            cx.waker().wake_by_ref();
            return Poll::Pending;
        };
        if armed_for != Some(next) && set_timer(fd.get_ref(), next).is_err() {
            // Cannot happen for a valid absolute time; if it did, polling again soon beats
            // sleeping through the deadline.
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        self.armed_for = Some(next);
        let fd = self
            .fd
            .as_ref()
            .and_then(|f| f.as_ref().ok())
            .expect("created above");
        loop {
            match fd.poll_read_ready(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(_)) => {
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                Poll::Ready(Ok(mut guard)) => {
                    // The expiration count is not read: re-arming resets it, and each expiry
                    // is a new edge for the reactor. Readiness is cleared only up to the event
                    // seen here (Tokio compares its tick), so a newer expiry is never lost.
                    guard.clear_ready();
                    if Instant::now() >= next {
                        self.armed_for = None;
                        return Poll::Ready(());
                    }
                    // Left from an expiry before the timer was re-armed: poll again, which
                    // registers the waker for the expiry now set.
                }
            }
        }
    }
}

/// A waker for a worker that may block its thread: wakes the worker's task as usual and
/// unparks the thread, in case it is blocked in [`WorkerAlarm::block_until`]. Unparking a
/// thread that is not parked costs one atomic operation.
pub(crate) struct Unparker {
    thread: Thread,
    task: Mutex<Option<Waker>>,
}

impl Unparker {
    /// For the calling thread.
    pub(crate) fn for_this_thread() -> Arc<Self> {
        Arc::new(Self {
            thread: std::thread::current(),
            task: Mutex::new(None),
        })
    }

    /// A waker that wakes `task` and this thread.
    pub(crate) fn waker(self: &Arc<Self>, task: &Waker) -> Waker {
        let mut slot = crate::base::sync::lock(&self.task);
        if !slot.as_ref().is_some_and(|w| w.will_wake(task)) {
            *slot = Some(task.clone());
        }
        drop(slot);
        Waker::from(self.clone())
    }
}

impl Wake for Unparker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if let Some(w) = crate::base::sync::lock(&self.task).as_ref() {
            w.wake_by_ref();
        }
        self.thread.unpark();
    }
}

/// Sets `fd` to expire once at `at` (absolute `CLOCK_MONOTONIC`).
fn set_timer(fd: &OwnedFd, at: Instant) -> std::io::Result<()> {
    // `Instant` reads CLOCK_MONOTONIC: map `at` through one reading of both.
    let (now, now_ns) = (Instant::now(), crate::clock::monotonic_nanos());
    let at_ns = if at >= now {
        now_ns.saturating_add(at.duration_since(now).as_nanos() as i64)
    } else {
        now_ns.saturating_sub(now.duration_since(at).as_nanos() as i64)
    }
    // Zero would disarm the timer.
    .max(1);
    let spec = libc::itimerspec {
        it_interval: libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
        it_value: libc::timespec {
            tv_sec: at_ns / 1_000_000_000,
            tv_nsec: at_ns % 1_000_000_000,
        },
    };
    // SAFETY: `spec` is a valid itimerspec we own; the old value is not asked for (null).
    let r = unsafe {
        libc::timerfd_settime(
            fd.as_raw_fd(),
            libc::TFD_TIMER_ABSTIME,
            &spec,
            std::ptr::null_mut(),
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Puts the timer ticks of a worker's round in deadline order, each taking the place in
/// `batch` of another tick (other items keep theirs). The alarm queues its entities first, but
/// a tick the scheduler thread handed over can already wait in the mailbox with an earlier
/// deadline (handed over late, on a busy host), and ticks queued while the worker was held up
/// wait in the order they were handed over: none may run after a later one. Cheap when the
/// ticks are in order already: one pass, no allocation.
pub(crate) fn order_ticks(batch: &mut Vec<MailItem>) {
    let deadline = |item: &MailItem| match item {
        MailItem::Entity(weak) => weak.upgrade().and_then(|e| e.pending_deadline()),
        _ => None,
    };
    let mut last = None;
    let in_order = batch.iter().filter_map(deadline).all(|d| {
        let ok = last.is_none_or(|l| l <= d);
        last = Some(d);
        ok
    });
    if in_order {
        return;
    }
    let mut slots: Vec<Option<MailItem>> = batch.drain(..).map(Some).collect();
    let mut ticks: Vec<(Instant, usize)> = slots
        .iter()
        .enumerate()
        .filter_map(|(i, item)| deadline(item.as_ref()?).map(|d| (d, i)))
        .collect();
    let places: Vec<usize> = ticks.iter().map(|&(_, i)| i).collect();
    // Stable: ticks of one deadline keep their order.
    ticks.sort_by_key(|&(d, _)| d);
    let mut order: Vec<usize> = (0..slots.len()).collect();
    for (place, (_, from)) in places.into_iter().zip(ticks) {
        order[place] = from;
    }
    batch.extend(
        order
            .into_iter()
            .map(|from| slots[from].take().expect("each item moves once")),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::executable::ExecContext;
    use std::time::Duration;

    /// A stand-in timer for [`order_ticks`]: a label and, if it holds a tick, its deadline.
    struct Tick(char, Option<Instant>);
    impl Executable for Tick {
        fn execute(&self, _cx: &mut ExecContext<'_>) {}
        fn dispatch(&self) -> &dyn crate::runtime::executable::Coalescing {
            unreachable!("order_ticks only reads deadlines")
        }
        fn pending_deadline(&self) -> Option<Instant> {
            self.1
        }
    }

    /// Ticks come to run in deadline order, each in the place of another tick; a job and an
    /// entity without a tick keep their places, and ties keep their order.
    #[test]
    fn a_round_runs_its_ticks_in_deadline_order() {
        let t0 = Instant::now();
        let at = |us| Some(t0 + Duration::from_micros(us));
        let entities: Vec<Arc<Tick>> = [
            Tick('a', at(300)),
            Tick('s', None),
            Tick('b', at(100)),
            Tick('c', at(300)),
            Tick('d', at(200)),
        ]
        .into_iter()
        .map(Arc::new)
        .collect();
        let mut batch: Vec<MailItem> = entities
            .iter()
            .map(|e| MailItem::Entity(Arc::downgrade(e) as Weak<dyn Executable>))
            .collect();
        batch.insert(2, MailItem::Job(Box::new(|_| {})));
        let labels = |batch: &[MailItem]| -> String {
            batch
                .iter()
                .map(|item| match item {
                    MailItem::Entity(w) => {
                        let e = w.upgrade().unwrap();
                        entities
                            .iter()
                            .find(|t| std::ptr::addr_eq(Arc::as_ptr(t), Arc::as_ptr(&e)))
                            .unwrap()
                            .0
                    }
                    MailItem::Job(_) => 'j',
                    MailItem::Spawned(_) => 'f',
                })
                .collect()
        };
        assert_eq!(labels(&batch), "asjbcd");
        order_ticks(&mut batch);
        assert_eq!(labels(&batch), "bsjdac");
        // In order already: untouched.
        order_ticks(&mut batch);
        assert_eq!(labels(&batch), "bsjdac");
    }

    /// Never upgraded: the alarm only holds it.
    struct Nothing;
    impl Executable for Nothing {
        fn execute(&self, _cx: &mut ExecContext<'_>) {}
        fn dispatch(&self) -> &dyn crate::runtime::executable::Coalescing {
            unreachable!("a dangling Weak is never upgraded")
        }
    }

    /// The alarm wakes a parked task at its time (not before), on a current-thread runtime.
    #[test]
    fn a_parked_task_is_woken_at_the_alarm_time() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut alarm = WorkerAlarm::new(true, false);
            assert!(alarm.available());
            assert!(alarm.timer().is_some());
            let dummy: Weak<dyn Executable> = Weak::<Nothing>::new();
            for delay_us in [50u64, 300, 2_000] {
                let at = Instant::now() + Duration::from_micros(delay_us);
                alarm.add(at, at, dummy.clone());
                std::future::poll_fn(|cx| alarm.poll_arm(cx)).await;
                assert!(Instant::now() >= at, "woken before its time");
                let mut due = Vec::new();
                alarm.take_due(Instant::now(), &mut due);
                assert_eq!(due.len(), 1);
                assert!(alarm.next().is_none());
            }
        });
    }

    #[test]
    fn a_later_request_of_the_same_entity_replaces_the_earlier() {
        let mut alarm = WorkerAlarm::new(false, false);
        assert!(!alarm.available(), "not allowed: no alarm");
        let e: Weak<dyn Executable> = Weak::<Nothing>::new();
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        alarm.add(t0 + ms(5), t0 + ms(5), e.clone());
        alarm.add(t0 + ms(1), t0 + ms(1), e.clone());
        assert_eq!(alarm.next(), Some(t0 + ms(1)));
        let mut due = Vec::new();
        alarm.take_due(t0 + ms(2), &mut due);
        assert_eq!(due.len(), 1);
        assert!(alarm.next().is_none());
    }

    /// Entities come out in deadline order, and one due later but woken later (a smaller
    /// margin) comes out with any due entity of a later deadline.
    #[test]
    fn due_entities_come_out_in_deadline_order() {
        let mut alarm = WorkerAlarm::new(false, false);
        let t0 = Instant::now();
        let us = Duration::from_micros;
        let a = Arc::new(Nothing);
        let b = Arc::new(Nothing);
        let c = Arc::new(Nothing);
        let weak = |x: &Arc<Nothing>| Arc::downgrade(x) as Weak<dyn Executable>;
        // a: deadline 100, wakes at 98; b: deadline 105, wakes at 90; c: deadline 300.
        alarm.add(t0 + us(98), t0 + us(100), weak(&a));
        alarm.add(t0 + us(90), t0 + us(105), weak(&b));
        alarm.add(t0 + us(290), t0 + us(300), weak(&c));
        let mut due = Vec::new();
        alarm.take_due(t0 + us(91), &mut due);
        let order: Vec<_> = due
            .iter()
            .map(|w| w.upgrade().unwrap())
            .map(|e| {
                if Arc::ptr_eq(&e, &(a.clone() as Arc<dyn Executable>)) {
                    'a'
                } else if Arc::ptr_eq(&e, &(b.clone() as Arc<dyn Executable>)) {
                    'b'
                } else {
                    'c'
                }
            })
            .collect();
        assert_eq!(order, vec!['a', 'b']);
        assert_eq!(alarm.next(), Some(t0 + us(290)));
    }
}
