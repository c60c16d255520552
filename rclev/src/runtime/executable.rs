//! An entity as its worker runs it: the [`Executable`] trait, the [`ExecContext`] a worker
//! lends each run (payload, start fence, async spawns, the alarm), and the part of the
//! entity's dispatch the worker drives ([`Coalescing`]).
//!
//! This file names neither the mailbox nor `EntityDispatch`: the mailbox holds `Executable`s
//! and the dispatch pushes into the mailbox, so both build on this one, not on each other.

use std::any::Any;
use std::time::Instant;

use futures::future::BoxFuture;

use super::fence::{CallGate, StartFence};
use crate::base::error::{panic_message, Error};

/// The part of an entity's dispatch (`EntityDispatch`, see `dispatch`) that its worker
/// drives.
pub(crate) trait Coalescing: Send + Sync {
    /// The worker starts running the entity's mailbox entry: readiness from now on queues a
    /// fresh entry (see the coalescing protocol in `dispatch`).
    fn begin(&self);
    /// Queues the entity again at the front of its worker's mailbox (a worker handing back a
    /// round it could not finish).
    fn notify_first(&self);
}

/// How many items an entity takes per mailbox entry before yielding to the other entities of
/// its worker.
pub(crate) const MAX_BATCH: usize = 16;

/// An entity as its worker sees it.
pub(crate) trait Executable: Send + Sync + 'static {
    /// Runs one round of ready work. Called only by the owning worker, after `begin()`.
    fn execute(&self, cx: &mut ExecContext<'_>);
    /// The entity's dispatch, as its worker drives it (an `EntityDispatch`).
    fn dispatch(&self) -> &dyn Coalescing;
    /// Whether work arriving for this entity counts towards the worker's spin-before-park
    /// decision. Timers whose early hand-off already hides the worker's wake-up say no, so
    /// they do not keep a worker spinning for nothing.
    fn arrivals_need_spin(&self) -> bool {
        true
    }
    /// The wall-clock deadline of the work this entity holds queued, for a timer tick: a
    /// worker's round runs the ticks it holds in deadline order (see `policy::order_ticks`).
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
    /// Whether the worker's mailbox holds items (its lock-free hint), for
    /// [`others_waiting`](Self::others_waiting).
    pub(crate) mailbox_has_items: &'a dyn Fn() -> bool,
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
        self.later_in_round || (self.mailbox_has_items)()
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
