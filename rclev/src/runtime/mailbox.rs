//! A worker's mailbox: a vector behind a mutex that the worker swaps out whole, so a producer's
//! push is one short critical section and the worker takes everything in one.
//!
//! Parking: the worker registers its waker *under the mailbox lock* only after seeing the
//! mailbox empty under that same lock, and a producer takes the waker under the lock after
//! pushing. A push therefore either lands before the worker looks (the worker sees it) or finds
//! the waker (and wakes it) — never neither. The `has_items` atomic is only a hint for the
//! worker's brief spin before it parks; correctness never depends on it.
//!
//! Lending: a parked worker leaves its payload in the inbox (`parked`), and whoever holds the
//! payload is the one running the worker's callbacks. A transport's receive thread may take it
//! ([`Mailbox::claim_direct`]) only while the worker is parked with nothing queued, and gives it
//! back with [`Mailbox::release_direct`], which wakes the worker if work was queued meanwhile.
//! While it is lent, the worker's `take` finds [`Take::Lent`] and parks again. So the worker's
//! callbacks still run one at a time, whichever thread runs them (see `executor::direct`).

use std::any::Any;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Weak;
use std::task::Waker;

use super::executable::Executable;
// The inbox lock is the facade's, so the loom model of dispatch + parking covers it.
use crate::base::sync::{model_lock as lock, Mutex};

/// A one-off job for the worker's payload (from `Worker::run`).
pub(crate) type Job = Box<dyn FnOnce(&mut (dyn Any + Send)) + Send>;

/// A worker's payload (`()` for a node's default worker).
pub(crate) type WorkerPayload = Box<dyn Any + Send>;

/// One mailbox entry.
pub(crate) enum MailItem {
    /// An entity became ready. Weak, so a dropped entity is never run.
    Entity(Weak<dyn Executable>),
    /// Run a closure on the payload.
    Job(Job),
    /// An async callback's future, started by a callback that ran off the worker's task
    /// (directly on a receive thread): the worker polls it with its own.
    Spawned(futures::future::BoxFuture<'static, ()>),
}

#[derive(Default)]
struct Inbox {
    items: Vec<MailItem>,
    waker: Option<Waker>,
    /// Woken only by `close`: the worker parks on the spin gate while nobody spins, and must
    /// still end when its mailbox closes (its node dropped), not linger until the next spin.
    close_waker: Option<Waker>,
    /// The worker took items and has not come back empty-handed yet, or a receive thread
    /// borrowed the payload.
    busy: bool,
    closed: bool,
    /// The payload of a parked worker; `None` while the worker or a receive thread holds it.
    parked: Option<WorkerPayload>,
    /// A receive thread holds the payload (between `claim_direct` and `release_direct`).
    lent: bool,
    /// One of the worker's async callbacks was woken and the worker has not polled it since
    /// (see [`Mailbox::in_flight_woken`]): the worker is not idle, though its task may not
    /// have run yet.
    in_flight_woken: bool,
}

/// A worker's mailbox.
#[derive(Default)]
pub(crate) struct Mailbox {
    inbox: Mutex<Inbox>,
    has_items: AtomicBool,
    /// How often the worker's task was woken from a park (for the idle zero-wakeup check).
    pub(crate) wakeups: AtomicU64,
    /// The worker's start fence (see `fence`): `shutdown` waits it out.
    pub(crate) fence: super::fence::StartFence,
    /// The Tokio runtime the worker runs on, recorded by the worker when it starts: a
    /// callback run on a receive thread enters it, so it can spawn tasks as on the worker.
    pub(crate) runtime: std::sync::OnceLock<tokio::runtime::Handle>,
}

/// What `Mailbox::take` found.
pub(crate) enum Take {
    /// Items were moved into the caller's buffer.
    Items,
    /// Nothing; if a waker was given it is registered.
    Empty,
    /// The mailbox was closed: the worker should exit.
    Closed,
    /// A receive thread has borrowed the payload and runs one of the worker's entities; the
    /// worker takes nothing now (if a waker was given it is registered, and
    /// [`release_direct`](Mailbox::release_direct) wakes it when there is work).
    Lent,
}

impl Mailbox {
    /// Queues an item; `false` (item dropped) if the mailbox is closed.
    pub(crate) fn push(&self, item: MailItem) -> bool {
        let waker = {
            let mut inbox = lock(&self.inbox);
            if inbox.closed {
                return false;
            }
            inbox.items.push(item);
            self.has_items.store(true, Ordering::Release);
            inbox.waker.take()
        };
        // Woken outside the lock so the worker does not wake into a held mutex.
        if let Some(w) = waker {
            wake_elsewhere_if_shared(w);
        }
        true
    }

    /// Moves every queued item into `out`, and the payload into `payload` if the worker left it
    /// here when it parked. When there are none and `park` is given, registers it as the waker
    /// for the next push, marks the worker idle and parks the payload (taking it from
    /// `payload`), which a receive thread may then borrow.
    pub(crate) fn take(
        &self,
        out: &mut Vec<MailItem>,
        park: Option<&Waker>,
        payload: &mut Option<WorkerPayload>,
    ) -> Take {
        let mut inbox = lock(&self.inbox);
        if inbox.closed {
            return Take::Closed;
        }
        if inbox.lent {
            if let Some(w) = park {
                register(&mut inbox.waker, w);
            }
            return Take::Lent;
        }
        if !inbox.items.is_empty() {
            std::mem::swap(&mut inbox.items, out);
            self.has_items.store(false, Ordering::Relaxed);
            inbox.busy = true;
            if payload.is_none() {
                *payload = inbox.parked.take();
            }
            return Take::Items;
        }
        if let Some(w) = park {
            inbox.busy = false;
            register(&mut inbox.waker, w);
            if let Some(p) = payload.take() {
                inbox.parked = Some(p);
            }
        }
        Take::Empty
    }

    /// Leaves the payload of a worker that runs nothing for a moment (it spins before
    /// parking) in the mailbox, so that a receive thread may borrow it as from a parked worker.
    /// The worker's next `take` gives it back with the items, or finds it lent.
    pub(crate) fn lend_while_spinning(&self, payload: &mut Option<WorkerPayload>) {
        let mut inbox = lock(&self.inbox);
        if inbox.closed {
            return;
        }
        if let Some(p) = payload.take() {
            inbox.parked = Some(p);
        }
        inbox.busy = false;
    }

    /// Borrows a parked worker's payload for a receive thread that will run one of the
    /// worker's entities: only if the worker is parked (its payload is here) with nothing
    /// queued. Marks the worker busy until [`release_direct`](Self::release_direct).
    pub(crate) fn claim_direct(&self) -> Option<WorkerPayload> {
        let mut inbox = lock(&self.inbox);
        if inbox.closed || inbox.busy || !inbox.items.is_empty() {
            return None;
        }
        let payload = inbox.parked.take()?;
        inbox.busy = true;
        inbox.lent = true;
        Some(payload)
    }

    /// Gives a borrowed payload back; wakes the worker if work was queued meanwhile. After
    /// `close` the payload is dropped here, as the worker would have dropped it.
    pub(crate) fn release_direct(&self, payload: WorkerPayload) {
        let mut inbox = lock(&self.inbox);
        inbox.lent = false;
        inbox.busy = false;
        if inbox.closed {
            drop(inbox);
            drop(payload);
            return;
        }
        inbox.parked = Some(payload);
        let waker = if inbox.items.is_empty() {
            None
        } else {
            inbox.waker.take()
        };
        drop(inbox);
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// Puts items the worker took but did not run back at the front, in order.
    pub(crate) fn requeue_front(&self, items: impl Iterator<Item = MailItem>) {
        let mut inbox = lock(&self.inbox);
        if inbox.closed {
            return;
        }
        let newer = std::mem::take(&mut inbox.items);
        inbox.items.extend(items);
        inbox.items.extend(newer);
        if !inbox.items.is_empty() {
            self.has_items.store(true, Ordering::Release);
        }
    }

    /// Marks the worker idle without parking here (it parks on the spin gate instead).
    pub(crate) fn set_idle(&self) {
        lock(&self.inbox).busy = false;
    }

    /// Whether the worker has nothing queued and is not running anything.
    pub(crate) fn is_idle(&self) -> bool {
        let inbox = lock(&self.inbox);
        inbox.items.is_empty() && !inbox.busy && !inbox.in_flight_woken
    }

    /// One of the worker's async callbacks was woken (its waker calls this before waking the
    /// task). Until the worker polls its callbacks again the worker counts as busy, so an
    /// idle check between the wake and the task's next run (`SpinOptions::spin_once`, a
    /// virtual-time step) does not take it for idle.
    #[cfg(not(rclev_loom))]
    pub(crate) fn in_flight_woken(&self) {
        lock(&self.inbox).in_flight_woken = true;
    }

    /// The worker is about to poll its async callbacks: wakes from now on mark it again.
    #[cfg(not(rclev_loom))]
    pub(crate) fn polling_in_flight(&self) {
        lock(&self.inbox).in_flight_woken = false;
    }

    /// Lock-free hint that items are queued.
    pub(crate) fn has_items(&self) -> bool {
        self.has_items.load(Ordering::Acquire)
    }

    /// Closes the mailbox and wakes the worker so it exits; queued items are dropped.
    pub(crate) fn close(&self) {
        let (waker, close_waker, _items, _payload) = {
            let mut inbox = lock(&self.inbox);
            inbox.closed = true;
            // Dropped outside the lock: entities and payloads run user destructors.
            (
                inbox.waker.take(),
                inbox.close_waker.take(),
                std::mem::take(&mut inbox.items),
                inbox.parked.take(),
            )
        };
        for w in [waker, close_waker].into_iter().flatten() {
            w.wake();
        }
    }

    /// Registers `waker` to be woken when the mailbox closes; `true` if it already has.
    pub(crate) fn watch_close(&self, waker: &Waker) -> bool {
        let mut inbox = lock(&self.inbox);
        if inbox.closed {
            return true;
        }
        register(&mut inbox.close_waker, waker);
        false
    }
}

/// Stores `waker` in `slot` unless the one there already wakes the same task.
fn register(slot: &mut Option<Waker>, waker: &Waker) {
    match slot {
        Some(old) if old.will_wake(waker) => {}
        _ => *slot = Some(waker.clone()),
    }
}

crate::base::sync::thread_local! {
    /// Set while this thread runs a worker section on a shared multi-threaded runtime (see
    /// [`wake_elsewhere_if_shared`]).
    pub(crate) static ON_SHARED_RUNTIME: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Wakes a parked worker. On a shared multi-threaded Tokio runtime, a task woken from a
/// runtime thread goes to that thread's LIFO slot, which other threads cannot steal: worker B
/// woken by worker A's callback would then wait until A's callback returns, however long it
/// blocks (spawned tasks take the LIFO slot too). From inside a section on such a runtime the
/// wake is therefore made from the runtime's blocking pool, off the runtime's worker threads: it
/// goes to the shared injection queue, where an idle thread picks B up at once.
#[cfg(not(rclev_loom))]
fn wake_elsewhere_if_shared(waker: Waker) {
    if ON_SHARED_RUNTIME.with(|c| c.get()) {
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            drop(handle.spawn_blocking(move || waker.wake()));
            return;
        }
    }
    waker.wake();
}

#[cfg(rclev_loom)]
fn wake_elsewhere_if_shared(waker: Waker) {
    waker.wake();
}
