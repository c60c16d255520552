//! loom models of the worker side of the executor, on the real code: each runs the real worker
//! loop (`run_worker`, hence `run_batch`, the mailbox's parking and the spin gate's sections)
//! with `loom::future::block_on` on a loom thread, over a real `ExecutorShared` that has no
//! runtime threads and no timer thread (`ExecutorShared::for_model`). Run with
//! `RUSTFLAGS="--cfg rclev_loom" cargo test --release --lib loom` (`.ci/run` does).
//!
//! loom reports a model thread blocked forever as a deadlock: a worker parked with work left
//! and nothing left to wake it (lost readiness) fails the models that way.

use std::sync::Arc;

use loom::future::block_on;

use super::ExecutorShared;
use crate::base::sync::{model_lock as lock, AtomicBool, AtomicU64, Condvar, Mutex, Ordering};
use crate::loom_model::{check, idle_runtime, spawn_worker};
use crate::runtime::direct::WorkerLender;
use crate::runtime::dispatch::EntityDispatch;
use crate::runtime::executable::{ExecContext, Executable};
use crate::runtime::mailbox::{MailItem, Mailbox};
use crate::transport::ReadyHook;

/// An entity whose "queue" is a count of takeable items.
struct Counter {
    dispatch: Arc<EntityDispatch>,
    takeable: AtomicU64,
    /// Items the worker has taken, and a signal for whoever waits for them.
    consumed: Mutex<u64>,
    progress: Condvar,
    /// Entries the worker has started (`run_batch` asks for the dispatch once per entry, just
    /// before it calls `begin`), and entries the producer saw `notify` queue.
    begun: AtomicU64,
    queued: AtomicU64,
}

impl Executable for Counter {
    fn execute(&self, _cx: &mut ExecContext<'_>) {
        let taken = self.takeable.swap(0, Ordering::AcqRel);
        if taken > 0 {
            *lock(&self.consumed) += taken;
            self.progress.notify_all();
        }
    }
    fn dispatch(&self) -> &dyn crate::runtime::executable::Coalescing {
        self.begun.fetch_add(1, Ordering::SeqCst);
        &*self.dispatch
    }
}

/// The readiness path: a producer making items takeable and calling `EntityDispatch::notify`,
/// racing with the real worker loop, which takes mailbox entries, `begin`s them in `run_batch`,
/// runs the entity, and parks through the mailbox's waker when it finds nothing. The main
/// thread waits until every item has been taken, so a lost readiness (an item left with no
/// entry queued and no wake-up) deadlocks the model. It also checks the coalescing bound: the
/// producer never sees two entries queued for the entity that the worker has not begun.
///
/// Moving `begin` after `execute` in `run_batch` makes this deadlock.
#[test]
fn loom_readiness_is_never_lost_and_entries_coalesce() {
    const ITEMS: u64 = 2;
    let handle = idle_runtime();
    check("readiness (real run_worker)", Some(4), move || {
        let exec = ExecutorShared::for_model(handle.clone());
        // One spin is active for the whole model (`for_model`): the gate is modelled separately.
        let mailbox = Arc::new(Mailbox::default());
        let dispatch = EntityDispatch::unbound(mailbox.clone());
        let counter = Arc::new(Counter {
            dispatch: dispatch.clone(),
            takeable: AtomicU64::new(0),
            consumed: Mutex::new(0),
            progress: Condvar::new(),
            begun: AtomicU64::new(0),
            queued: AtomicU64::new(0),
        });
        let entity: Arc<dyn Executable> = counter.clone();
        dispatch.bind(Arc::downgrade(&entity), false);

        let worker = spawn_worker(&exec, &mailbox);
        let c = counter.clone();
        let producer = loom::thread::spawn(move || {
            for _ in 0..ITEMS {
                // Make the item takeable first, then push readiness (the protocol's order).
                c.takeable.fetch_add(1, Ordering::Release);
                if c.dispatch.notify() {
                    let queued = c.queued.fetch_add(1, Ordering::SeqCst) + 1;
                    // `begun` may run ahead of the real `begin` by one call and `queued` lags
                    // the real push, so this can only under-count what is queued.
                    assert!(
                        queued <= c.begun.load(Ordering::SeqCst) + 1,
                        "two entries queued for one entity"
                    );
                }
            }
        });

        {
            let mut consumed = lock(&counter.consumed);
            while *consumed < ITEMS {
                consumed = counter.progress.wait(consumed).unwrap();
            }
        }
        producer.join().unwrap();
        // What dropping the worker's node does: the worker ends.
        mailbox.close();
        worker.join().unwrap();
        assert_eq!(counter.takeable.load(Ordering::Acquire), 0);
    });
}

/// An entity whose one callback checks that the spin has not returned, at its start and at
/// its end.
struct Probe {
    dispatch: Arc<EntityDispatch>,
    ran: AtomicBool,
    spin_returned: AtomicBool,
    /// Set by the callback if it saw the spin returned; the callback's own panics would be
    /// caught and reported by `start`, not seen by loom.
    violated: AtomicBool,
}

impl Executable for Probe {
    fn execute(&self, cx: &mut ExecContext<'_>) {
        let _ = cx.start(
            "probe",
            || true,
            |_| {
                if self.spin_returned.load(Ordering::SeqCst) {
                    self.violated.store(true, Ordering::SeqCst);
                }
                self.ran.store(true, Ordering::SeqCst);
                if self.spin_returned.load(Ordering::SeqCst) {
                    self.violated.store(true, Ordering::SeqCst);
                }
            },
        );
    }
    fn dispatch(&self) -> &dyn crate::runtime::executable::Coalescing {
        &*self.dispatch
    }
}

/// The spin gate: the real worker loop, whose sections check the gate, racing the last spin's
/// close (`SpinGate::close`, then the real `quiesce`). Once the close-and-quiesce has
/// returned, the callback is not running and never starts: it either ran (start and end)
/// before, or the worker saw the gate closed and left the entry queued for the next spin.
#[test]
fn loom_no_callback_runs_after_the_last_spin_returns() {
    let handle = idle_runtime();
    check("spin gate close vs worker section", None, move || {
        let exec = ExecutorShared::for_model(handle.clone());
        let mailbox = Arc::new(Mailbox::default());
        let dispatch = EntityDispatch::unbound(mailbox.clone());
        let probe = Arc::new(Probe {
            dispatch: dispatch.clone(),
            ran: AtomicBool::new(false),
            spin_returned: AtomicBool::new(false),
            violated: AtomicBool::new(false),
        });
        let entity: Arc<dyn Executable> = probe.clone();
        // Ready before the worker starts.
        dispatch.bind(Arc::downgrade(&entity), true);

        let worker = spawn_worker(&exec, &mailbox);
        // The spin ends (what `spin_async` does after its select).
        if exec.host().gate.close() {
            block_on(exec.host().gate.quiesce());
        }
        probe.spin_returned.store(true, Ordering::SeqCst);
        assert!(
            probe.ran.load(Ordering::SeqCst) || mailbox.has_items(),
            "the entry neither ran nor waits for the next spin"
        );
        mailbox.close();
        worker.join().unwrap();
        assert!(
            !probe.violated.load(Ordering::SeqCst),
            "a callback ran after the last spin returned"
        );
    });
}

/// A directly delivered entity: its callback and the worker's job both check that no other
/// callback of the worker runs meanwhile.
struct Lendee {
    dispatch: Arc<EntityDispatch>,
    takeable: AtomicU64,
    inside: Arc<AtomicBool>,
    violated: Arc<AtomicBool>,
    consumed: Arc<(Mutex<u64>, Condvar)>,
}

/// Marks a callback of the worker running; flags an overlap.
fn enter_callback(inside: &AtomicBool, violated: &AtomicBool) {
    if inside.swap(true, Ordering::SeqCst) {
        violated.store(true, Ordering::SeqCst);
    }
}

fn count(consumed: &(Mutex<u64>, Condvar), n: u64) {
    *lock(&consumed.0) += n;
    consumed.1.notify_all();
}

impl Executable for Lendee {
    fn execute(&self, _cx: &mut ExecContext<'_>) {
        let taken = self.takeable.swap(0, Ordering::AcqRel);
        if taken > 0 {
            enter_callback(&self.inside, &self.violated);
            self.inside.store(false, Ordering::SeqCst);
            count(&self.consumed, taken);
        }
    }
    fn dispatch(&self) -> &dyn crate::runtime::executable::Coalescing {
        &*self.dispatch
    }
}

/// Direct delivery on the real code: a receive thread making an item takeable and calling
/// `ready_on_receive_thread` (hence `WorkerLender::run`: the mailbox's `claim_direct` and
/// `release_direct`, the section and gate check) races the real worker loop, which parks its
/// payload in the mailbox, and a job pushed to the worker. The worker's callbacks never
/// overlap, and both the item and the job are consumed whichever thread runs them: a wake-up
/// lost around the lend (the worker parked with work queued after `release_direct`) leaves
/// the main thread waiting forever, which loom reports as a deadlock.
#[test]
fn loom_direct_runs_exclude_the_worker_and_lose_nothing() {
    let handle = idle_runtime();
    check("direct delivery (real WorkerLender)", Some(3), move || {
        let exec = ExecutorShared::for_model(handle.clone());
        let mailbox = Arc::new(Mailbox::default());
        let dispatch = EntityDispatch::unbound(mailbox.clone());
        dispatch.set_direct(Box::new(WorkerLender::new(
            mailbox.clone(),
            exec.host().clone(),
        )));
        let inside = Arc::new(AtomicBool::new(false));
        let violated = Arc::new(AtomicBool::new(false));
        let consumed = Arc::new((Mutex::new(0), Condvar::new()));
        let lendee = Arc::new(Lendee {
            dispatch: dispatch.clone(),
            takeable: AtomicU64::new(0),
            inside: inside.clone(),
            violated: violated.clone(),
            consumed: consumed.clone(),
        });
        let entity: Arc<dyn Executable> = lendee.clone();
        dispatch.bind(Arc::downgrade(&entity), false);

        let worker = spawn_worker(&exec, &mailbox);
        let l = lendee.clone();
        let receiver = loom::thread::spawn(move || {
            l.takeable.fetch_add(1, Ordering::Release);
            l.dispatch.ready_on_receive_thread();
        });
        let (job_inside, job_violated, job_consumed) =
            (inside.clone(), violated.clone(), consumed.clone());
        mailbox.push(MailItem::Job(Box::new(move |_| {
            enter_callback(&job_inside, &job_violated);
            job_inside.store(false, Ordering::SeqCst);
            count(&job_consumed, 1);
        })));

        {
            let mut n = lock(&consumed.0);
            while *n < 2 {
                n = consumed.1.wait(n).unwrap();
            }
        }
        receiver.join().unwrap();
        mailbox.close();
        worker.join().unwrap();
        assert!(
            !violated.load(Ordering::SeqCst),
            "two callbacks of one worker overlapped"
        );
        assert_eq!(lendee.takeable.load(Ordering::Acquire), 0);
    });
}
