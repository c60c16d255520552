//! `EntityDispatch`: the one path by which every entity (subscription, service, client, guard
//! condition, timer, action) tells its worker that it has work.
//!
//! # Coalescing protocol
//!
//! `pending` is `true` from the moment a mailbox entry for the entity is queued until the worker
//! starts running that entry. So at most one entry per entity is ever queued, however many
//! readiness pushes arrive.
//!
//! - **Producer** (transport thread, timer scheduler, `trigger()`): first makes the item
//!   takeable (pushes the message into the entity's queue, stores the tick), then
//!   `pending.swap(true)`. Only the producer that flips `false → true` pushes a mailbox entry.
//! - **Worker**: on dequeuing the entry calls [`EntityDispatch::begin`] (`pending.swap(false)`)
//!   *before* taking items, then takes a bounded batch.
//!
//! No readiness is lost: an item made takeable before the worker's `swap(false)` is seen by the
//! worker's take (the swaps are `AcqRel` on one atomic, and the item's queue has its own lock);
//! an item made takeable after it finds `pending == false` and queues a fresh entry. The price
//! is an occasional entry that finds nothing to take, which is harmless. An entity that stops
//! after a full batch with items left re-notifies itself, which puts it at the back of the
//! mailbox: that is what keeps a flooded subscription from starving its neighbours. (It may
//! take a few batches in one turn, but only while `ExecContext::others_waiting` says nothing
//! else waits.)
//!
//! # Direct delivery
//!
//! An entity with a [`DirectRunner`] (a subscription with `Delivery::Direct`) may be run by the
//! transport's receive thread itself ([`ReadyHook::ready_on_receive_thread`]): the runner
//! borrows the parked worker's payload, so the entity runs as one of the worker's callbacks.
//! The item is takeable before the runner looks (the producer's order), and when the worker
//! cannot be borrowed the push falls back to [`notify`](EntityDispatch::notify), so nothing is
//! lost; items the direct run leaves queue an entry as the worker would.
//!
//! The loom model in `executor/loom_tests.rs` checks this protocol on the real worker loop
//! (`run_worker`, `run_batch`) together with the mailbox's parking: calling `begin` after the
//! entity's `execute` in `run_batch` makes it deadlock.

use std::any::Any;
use std::sync::{Arc, OnceLock, Weak};
use std::time::Instant;

use futures::future::BoxFuture;

use super::fence::{CallGate, StartFence};
use super::mailbox::{MailItem, Mailbox};
use crate::error::{panic_message, Error};
use crate::sync::{AtomicBool, Ordering};
use crate::transport::ReadyHook;

/// How many items an entity takes per mailbox entry before yielding to the other entities of
/// its worker.
pub(crate) const MAX_BATCH: usize = 16;

/// An entity as its worker sees it.
pub(crate) trait Executable: Send + Sync + 'static {
    /// Runs one round of ready work. Called only by the owning worker, after `begin()`.
    fn execute(&self, cx: &mut ExecContext<'_>);
    /// The entity's dispatch.
    fn dispatch(&self) -> &EntityDispatch;
    /// Whether work arriving for this entity counts towards the worker's spin-before-park
    /// decision. Timers whose early hand-off already hides the worker's wake-up say no, so
    /// they do not keep a worker spinning for nothing.
    fn arrivals_need_spin(&self) -> bool {
        true
    }
    /// The wall-clock deadline of the work this entity holds queued, for a timer tick: a
    /// worker's round runs the ticks it holds in deadline order (see `alarm::order_ticks`).
    /// `None` for other entities.
    fn pending_deadline(&self) -> Option<Instant> {
        None
    }
}

/// What a worker lends an entity while it executes.
pub(crate) struct ExecContext<'a> {
    /// The worker's payload (`()` for a node's default worker).
    pub(crate) payload: &'a mut (dyn Any + Send),
    /// Async callbacks started in this round; the worker's task polls them.
    pub(crate) spawned: &'a mut Vec<BoxFuture<'static, ()>>,
    /// Where callback panics are reported.
    pub(crate) report: &'a dyn Fn(Error),
    /// The worker's start fence.
    pub(crate) fence: &'a StartFence,
    /// Whether the executor has shut down (a `SeqCst` read: the fence's other side).
    pub(crate) shut_down: &'a dyn Fn() -> bool,
    /// The worker's mailbox, for [`others_waiting`](Self::others_waiting).
    pub(crate) mailbox: &'a Mailbox,
    /// Items of the worker's current round wait after this one.
    pub(crate) later_in_round: bool,
    /// Where the entity asks to be run again at a time ([`Self::sleep_until`]): the wake-up
    /// and the deadline it waits for. `None` where the worker has no alarm (see `alarm`).
    pub(crate) wake_at: Option<&'a mut Option<(Instant, Instant)>>,
    /// The earliest deadline other entities wait for on the worker's alarm.
    pub(crate) alarm_deadline: Option<Instant>,
}

/// A callback was not started: the executor shut down or the entity stopped it (closed,
/// cancelled, its schedule or callback replaced) just before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Refused;

impl ExecContext<'_> {
    /// Whether other work waits its turn on this worker: later items of this round, or new
    /// ones in the mailbox (a lock-free hint). An entity working off a backlog goes on only
    /// while nothing does.
    pub(crate) fn others_waiting(&self) -> bool {
        self.later_in_round || self.mailbox.has_items()
    }

    /// Asks the worker to run this entity again at `wake`, for something due at `deadline`
    /// (it is queued then, as if notified), so it can wait for a time without holding the
    /// worker. `false` if this worker cannot (no alarm on its runtime, or run on a receive
    /// thread): the entity must wait itself.
    pub(crate) fn sleep_until(&mut self, wake: Instant, deadline: Instant) -> bool {
        match &mut self.wake_at {
            Some(slot) => {
                **slot = Some((wake, deadline));
                true
            }
            None => false,
        }
    }

    /// Whether another entity waits on the worker's alarm for a deadline before `deadline`:
    /// then this one must not busy-wait ahead of it.
    pub(crate) fn earlier_deadline_waiting(&self, deadline: Instant) -> bool {
        self.alarm_deadline.is_some_and(|d| d < deadline)
    }

    /// Whether [`Self::sleep_until`] is available here.
    pub(crate) fn can_sleep(&self) -> bool {
        self.wake_at.is_some()
    }

    /// Starts a user callback through the worker's start fence (see `fence`): unless the
    /// executor has shut down or `still_wanted` (the entity's stop conditions, read with
    /// `SeqCst`) says no, `f` runs with panics caught and reported. `Ok(None)`: it panicked.
    pub(crate) fn start<R>(
        &mut self,
        label: &str,
        still_wanted: impl FnOnce() -> bool,
        f: impl FnOnce(&mut (dyn Any + Send)) -> R,
    ) -> Result<Option<R>, Refused> {
        self.start_gated(None, label, still_wanted, f)
    }

    /// [`start`](Self::start) that also holds the entity's [`CallGate`] raised from before the
    /// stop conditions are read until `f` returns, so the entity's drop/cancel from another
    /// thread waits for this call.
    pub(crate) fn start_gated<R>(
        &mut self,
        gate: Option<&CallGate>,
        label: &str,
        still_wanted: impl FnOnce() -> bool,
        f: impl FnOnce(&mut (dyn Any + Send)) -> R,
    ) -> Result<Option<R>, Refused> {
        struct Lower<'a>(Option<&'a CallGate>);
        impl Drop for Lower<'_> {
            fn drop(&mut self) {
                if let Some(g) = self.0 {
                    g.leave();
                }
            }
        }
        if let Some(g) = gate {
            g.enter();
        }
        let _lower = Lower(gate);
        self.fence.enter();
        if (self.shut_down)() || !still_wanted() {
            self.fence.leave();
            return Err(Refused);
        }
        let payload = &mut *self.payload;
        let fence = self.fence;
        let run = std::panic::AssertUnwindSafe(|| {
            fence.leave();
            f(payload)
        });
        match std::panic::catch_unwind(run) {
            Ok(r) => Ok(Some(r)),
            Err(p) => {
                (self.report)(Error::CallbackPanicked {
                    entity: label.to_string(),
                    message: panic_message(&*p),
                });
                Ok(None)
            }
        }
    }

    /// [`start`](Self::start) for a callback with no stop condition of its own; `None` if it
    /// panicked or the executor shut down.
    pub(crate) fn guarded<R>(
        &mut self,
        label: &str,
        f: impl FnOnce(&mut (dyn Any + Send)) -> R,
    ) -> Option<R> {
        self.start(label, || true, f).ok().flatten()
    }

    /// Queues an async callback's future on the worker's task.
    pub(crate) fn spawn(&mut self, fut: BoxFuture<'static, ()>) {
        self.spawned.push(fut);
    }
}

/// Runs an entity on the calling (receive) thread as one of its worker's callbacks, if the
/// worker can lend itself right now (see `executor::direct`).
pub(crate) trait DirectRunner: Send + Sync {
    /// Runs `entity` here and returns `true`, or returns `false` having run nothing.
    fn run(&self, entity: &Arc<dyn Executable>) -> bool;
}

/// The coalescing readiness path of one entity. See the module docs for the protocol.
pub(crate) struct EntityDispatch {
    /// `true` while a mailbox entry for this entity is queued and not yet begun.
    pending: AtomicBool,
    target: OnceLock<Weak<dyn Executable>>,
    mailbox: Arc<Mailbox>,
    /// Set for entities delivered directly on receive threads.
    direct: OnceLock<Box<dyn DirectRunner>>,
}

impl EntityDispatch {
    /// A dispatch not yet bound to its entity. It starts out `pending`, so readiness pushed
    /// before [`bind`](Self::bind) is coalesced and then delivered by `bind`.
    pub(crate) fn unbound(mailbox: Arc<Mailbox>) -> Arc<Self> {
        Arc::new(Self {
            pending: AtomicBool::new(true),
            target: OnceLock::new(),
            mailbox,
            direct: OnceLock::new(),
        })
    }

    /// Lets receive threads run the entity directly (before [`bind`](Self::bind)).
    pub(crate) fn set_direct(&self, runner: Box<dyn DirectRunner>) {
        let _ = self.direct.set(runner);
    }

    /// Binds the entity. With `deliver_now`, one entry is queued at once so anything that
    /// arrived before binding is taken (entities whose source existed first need this).
    pub(crate) fn bind(&self, target: Weak<dyn Executable>, deliver_now: bool) {
        let _ = self.target.set(target);
        self.pending.store(false, Ordering::Release);
        if deliver_now {
            self.notify();
        }
    }

    /// Readiness push. Returns `true` if an entry was queued, `false` if one was already
    /// pending (the push was coalesced) or the worker has gone.
    pub(crate) fn notify(&self) -> bool {
        if self.pending.swap(true, Ordering::AcqRel) {
            return false;
        }
        match self.target.get() {
            Some(target) if self.mailbox.push(MailItem::Entity(target.clone())) => true,
            // Unbound (cannot happen after bind) or the mailbox is closed: nothing will ever
            // run this entity, so leave `pending` set and deliver nothing.
            _ => false,
        }
    }

    /// [`notify`](Self::notify), called by the entity's own worker between rounds, queueing
    /// the entity ahead of everything already queued (its alarm went off: it runs before work
    /// that arrived meanwhile, e.g. ticks of later deadlines).
    pub(crate) fn notify_first(&self) {
        if self.pending.swap(true, Ordering::AcqRel) {
            return;
        }
        if let Some(target) = self.target.get() {
            self.mailbox
                .requeue_front(std::iter::once(MailItem::Entity(target.clone())));
        }
    }

    /// Called by the worker when it starts running this entity's entry.
    pub(crate) fn begin(&self) {
        self.pending.swap(false, Ordering::AcqRel);
    }

    /// Whether an entry is queued and not begun.
    #[cfg(all(test, not(rclev_loom)))]
    pub(crate) fn is_pending(&self) -> bool {
        self.pending.load(Ordering::Acquire)
    }
}

impl ReadyHook for EntityDispatch {
    fn ready(&self) {
        self.notify();
    }

    fn ready_on_receive_thread(&self) {
        if let Some(runner) = self.direct.get() {
            // A queued entry means the worker has work: it takes this item too.
            if self.pending.load(Ordering::Acquire) {
                return;
            }
            if let Some(entity) = self.target.get().and_then(Weak::upgrade) {
                if runner.run(&entity) {
                    return;
                }
            }
        }
        self.notify();
    }
}

#[cfg(all(test, not(rclev_loom)))]
mod tests {
    use super::*;
    use crate::executor::mailbox::Take;

    struct Probe {
        dispatch: Arc<EntityDispatch>,
    }
    impl Executable for Probe {
        fn execute(&self, _cx: &mut ExecContext<'_>) {}
        fn dispatch(&self) -> &EntityDispatch {
            &self.dispatch
        }
    }

    fn probe() -> (Arc<Mailbox>, Arc<Probe>) {
        let mailbox = Arc::new(Mailbox::default());
        let dispatch = EntityDispatch::unbound(mailbox.clone());
        let probe = Arc::new(Probe {
            dispatch: dispatch.clone(),
        });
        let entity: Arc<dyn Executable> = probe.clone();
        dispatch.bind(Arc::downgrade(&entity), false);
        (mailbox, probe)
    }

    #[test]
    fn many_notifies_queue_one_entry() {
        let (mailbox, probe) = probe();
        let queued = (0..1000).filter(|_| probe.dispatch.notify()).count();
        assert_eq!(queued, 1);
        let mut out = Vec::new();
        assert!(matches!(
            mailbox.take(&mut out, None, &mut None),
            Take::Items
        ));
        assert_eq!(out.len(), 1);
        assert!(probe.dispatch.is_pending());
        // Once the worker begins the entry, the next readiness queues a fresh one.
        probe.dispatch.begin();
        assert!(probe.dispatch.notify());
        out.clear();
        assert!(matches!(
            mailbox.take(&mut out, None, &mut None),
            Take::Items
        ));
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn notifies_from_many_threads_are_never_lost() {
        let (mailbox, probe) = probe();
        let rounds = 2000;
        let mut out = Vec::new();
        std::thread::scope(|s| {
            for _ in 0..4 {
                let d = probe.dispatch.clone();
                s.spawn(move || {
                    for _ in 0..rounds {
                        d.notify();
                    }
                });
            }
            let mut max_queued = 0;
            for _ in 0..rounds {
                out.clear();
                if let Take::Items = mailbox.take(&mut out, None, &mut None) {
                    max_queued = max_queued.max(out.len());
                    probe.dispatch.begin();
                }
            }
            assert!(
                max_queued <= 1,
                "{max_queued} entries queued for one entity"
            );
        });
        // After every producer has finished, either an entry is queued or none is pending.
        out.clear();
        let queued = matches!(mailbox.take(&mut out, None, &mut None), Take::Items);
        assert_eq!(queued, probe.dispatch.is_pending());
    }

    #[test]
    fn dropped_entity_is_not_run() {
        let (mailbox, probe) = probe();
        probe.dispatch.notify();
        let dispatch = probe.dispatch.clone();
        drop(probe);
        let mut out = Vec::new();
        mailbox.take(&mut out, None, &mut None);
        let MailItem::Entity(weak) = out.pop().unwrap() else {
            panic!("expected an entity entry")
        };
        assert!(weak.upgrade().is_none());
        drop(dispatch);
    }
}
