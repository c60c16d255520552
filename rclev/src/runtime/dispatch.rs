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
//! An entity with adaptive delivery (`Delivery::Adaptive`, see `adaptive`) has a runner too,
//! used only while its runs have proven short; until then (and after a long run) the push
//! goes to [`notify`](EntityDispatch::notify).
//!
//! The loom model in `executor/loom_tests.rs` checks this protocol on the real worker loop
//! (`run_worker`, `run_batch`) together with the mailbox's parking: calling `begin` after the
//! entity's `execute` in `run_batch` makes it deadlock.

use std::sync::{Arc, OnceLock, Weak};

use super::adaptive::AdaptiveDelivery;
use super::executable::{Coalescing, Executable};
use super::mailbox::{MailItem, Mailbox};
use crate::base::sync::{AtomicBool, Ordering};
use crate::endpoint::AdaptiveDeliveryState;
use crate::transport::ReadyHook;

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
    /// Set for entities delivered directly only once proven short (`Delivery::Adaptive`).
    adaptive: OnceLock<AdaptiveDelivery>,
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
            adaptive: OnceLock::new(),
        })
    }

    /// Lets receive threads run the entity directly (before [`bind`](Self::bind)).
    pub(crate) fn set_direct(&self, runner: Box<dyn DirectRunner>) {
        let _ = self.direct.set(runner);
    }

    /// Lets receive threads run the entity directly once it has proven short, and only while
    /// it stays so (before [`bind`](Self::bind); see `adaptive`).
    pub(crate) fn set_adaptive(&self, runner: Box<dyn DirectRunner>) {
        let _ = self.adaptive.set(AdaptiveDelivery::default());
        let _ = self.direct.set(runner);
    }

    /// The entity's adaptive delivery, if it has one: its callbacks are timed through it.
    pub(crate) fn adaptive(&self) -> Option<&AdaptiveDelivery> {
        self.adaptive.get()
    }

    /// What adaptive delivery has learnt so far; `None` unless adaptively delivered.
    pub(crate) fn adaptive_state(&self) -> Option<AdaptiveDeliveryState> {
        self.adaptive.get().map(AdaptiveDelivery::state)
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

impl Coalescing for EntityDispatch {
    fn begin(&self) {
        EntityDispatch::begin(self)
    }

    fn notify_first(&self) {
        EntityDispatch::notify_first(self)
    }
}

impl ReadyHook for EntityDispatch {
    fn ready(&self) {
        self.notify();
    }

    fn ready_on_receive_thread(&self) {
        if let Some(runner) = self.direct.get() {
            // Asked first: the first question starts adaptive delivery's timing of calls.
            let allowed = self
                .adaptive
                .get()
                .is_none_or(AdaptiveDelivery::direct_allowed);
            // A queued entry means the worker has work: it takes this item too.
            if self.pending.load(Ordering::Acquire) {
                return;
            }
            // Not proven short (yet, or any more): the worker runs it.
            if !allowed {
                self.notify();
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
    use crate::runtime::executable::ExecContext;
    use crate::runtime::mailbox::Take;

    struct Probe {
        dispatch: Arc<EntityDispatch>,
    }
    impl Executable for Probe {
        fn execute(&self, _cx: &mut ExecContext<'_>) {}
        fn dispatch(&self) -> &dyn crate::runtime::executable::Coalescing {
            &*self.dispatch
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
