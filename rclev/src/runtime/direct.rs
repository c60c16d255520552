//! Direct delivery: a transport's receive thread runs an entity as one of its worker's
//! callbacks, instead of waking the worker to do it (`Delivery::Direct`).
//!
//! Waking a parked worker costs a futex wake, two context switches and, on a busy host, a wait
//! for a core; for a short callback that is most of the cost of a message. When the worker is
//! parked with nothing queued, the receive thread borrows its payload from the mailbox
//! ([`Mailbox::claim_direct`]) and runs the entity itself. Everything that makes it one of the
//! worker's callbacks holds there as on the worker:
//!
//! - **one at a time**: whoever holds the payload runs the worker's callbacks, and the worker
//!   takes nothing while it is lent (see `mailbox`);
//! - **the spin gate**: the run is a worker section, entered before the gate is read (as the
//!   worker does), so a closing spin waits for it and no callback starts while none spins;
//! - **the start fence, call gates, panics**: the entity starts its callbacks through the same
//!   [`ExecContext`] the worker lends;
//! - **the runtime**: the worker's Tokio runtime is entered, so a callback can spawn tasks.
//!
//! When the worker cannot be borrowed (it runs, spins or has work queued), the gate is closed,
//! or the executor has shut down, nothing runs here and the caller queues the entity as usual.

use std::cell::Cell;
use std::sync::Arc;

use super::core::WorkerHost;
use super::dispatch::DirectRunner;
use super::executable::{ExecContext, Executable};
use super::mailbox::{self, MailItem, Mailbox};
use crate::base::error::{panic_message, Error};

crate::base::sync::thread_local! {
    /// Set while this thread runs an entity directly: a run never nests in another (a callback
    /// whose publish reaches a reader synchronously queues that reader's work instead).
    static RUNNING_DIRECT: Cell<bool> = const { Cell::new(false) };
}

/// Whether this thread is running a callback directly, on behalf of a worker.
pub(crate) fn running_direct() -> bool {
    RUNNING_DIRECT.with(Cell::get)
}

/// Lends a worker to the receive threads of its directly delivered entities.
pub(crate) struct WorkerLender {
    mailbox: Arc<Mailbox>,
    host: Arc<WorkerHost>,
}

impl WorkerLender {
    pub(crate) fn new(mailbox: Arc<Mailbox>, host: Arc<WorkerHost>) -> Self {
        Self { mailbox, host }
    }
}

impl DirectRunner for WorkerLender {
    fn run(&self, entity: &Arc<dyn Executable>) -> bool {
        if running_direct() {
            return false;
        }
        let Some(mut payload) = self.mailbox.claim_direct() else {
            return false;
        };
        let (host, mailbox) = (&*self.host, &*self.mailbox);
        let ran = {
            // Raised before the gate is read, as the worker does (see `SpinGate`).
            let _section = host.gate.section(host, mailbox);
            // Not a runtime thread: a wake from here needs no detour (see `mailbox`).
            mailbox::ON_SHARED_RUNTIME.with(|c| c.set(false));
            if host.is_shut_down() || !host.gate.is_open() {
                false
            } else {
                RUNNING_DIRECT.with(|c| c.set(true));
                let _runtime = mailbox.runtime.get().map(|h| h.enter());
                let mut spawned = Vec::new();
                let report = |e: Error| host.report(e);
                let mut cx = ExecContext {
                    payload: &mut *payload,
                    spawned: &mut spawned,
                    report: &report,
                    fence: &mailbox.fence,
                    shut_down: &|| host.is_shut_down(),
                    mailbox_has_items: &|| mailbox.has_items(),
                    later_in_round: false,
                    // The worker's alarm is the worker's: an entity run here waits itself.
                    wake_at: None,
                    alarm_deadline: None,
                };
                // As in `run_batch`: user callbacks are guarded inside `execute`.
                if let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    entity.execute(&mut cx)
                })) {
                    report(Error::CallbackPanicked {
                        entity: "entity (internal)".into(),
                        message: panic_message(&*p),
                    });
                }
                RUNNING_DIRECT.with(|c| c.set(false));
                // Futures of async callbacks are polled by the worker, with its own.
                for fut in spawned {
                    mailbox.push(MailItem::Spawned(fut));
                }
                true
            }
        };
        self.mailbox.release_direct(payload);
        self.host.notify_idle();
        ran
    }
}

#[cfg(all(test, not(rclev_loom)))]
mod tests {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::thread::ThreadId;
    use std::time::{Duration, Instant};

    use super::*;
    use crate::node::entity::bind_entity;
    use crate::runtime::dispatch::EntityDispatch;
    use crate::transport::ReadyHook;
    use crate::{Context, Executor, ExecutorOptions, RuntimeChoice, SpinOptions, Worker};

    /// A directly delivered entity whose "queue" is a count of takeable items. Its callback
    /// adds what it takes to the worker's payload (a `u64`), records the thread it ran on, and
    /// checks that no other callback of the worker runs meanwhile.
    struct Probe {
        dispatch: Arc<EntityDispatch>,
        takeable: AtomicU64,
        inside: Arc<AtomicBool>,
        overlaps: AtomicU64,
        ran_on: std::sync::Mutex<Vec<ThreadId>>,
    }

    impl Executable for Probe {
        fn execute(&self, cx: &mut ExecContext<'_>) {
            let taken = self.takeable.swap(0, Ordering::AcqRel);
            if taken == 0 {
                return;
            }
            let _ = cx.guarded("probe", |payload| {
                if self.inside.swap(true, Ordering::SeqCst) {
                    self.overlaps.fetch_add(1, Ordering::SeqCst);
                }
                *payload.downcast_mut::<u64>().unwrap() += taken;
                self.ran_on
                    .lock()
                    .unwrap()
                    .push(std::thread::current().id());
                std::hint::black_box((0..200).sum::<u64>());
                self.inside.store(false, Ordering::SeqCst);
            });
        }
        fn dispatch(&self) -> &dyn crate::runtime::executable::Coalescing {
            &*self.dispatch
        }
    }

    fn setup() -> (Executor, Worker<u64>, Arc<Probe>) {
        let exec = Context::default()
            .create_executor(ExecutorOptions {
                runtime: RuntimeChoice::ThreadPerWorker,
                handle_sigint: false,
                worker_spin: Duration::ZERO,
                ..ExecutorOptions::default()
            })
            .unwrap();
        let node = exec.create_node("direct_probe").unwrap();
        let worker = node.create_worker(0u64).unwrap();
        let core = worker.core.clone();
        let probe = bind_entity(&core, false, |dispatch| {
            dispatch.set_direct(Box::new(WorkerLender::new(
                core.mailbox.clone(),
                core.exec.host().clone(),
            )));
            Ok(Arc::new(Probe {
                dispatch,
                takeable: AtomicU64::new(0),
                inside: Arc::new(AtomicBool::new(false)),
                overlaps: AtomicU64::new(0),
                ran_on: Default::default(),
            }))
        })
        .unwrap();
        (exec, worker, probe)
    }

    /// What a receive thread does: make an item takeable, then push readiness.
    fn receive(probe: &Probe) {
        probe.takeable.fetch_add(1, Ordering::AcqRel);
        probe.dispatch.ready_on_receive_thread();
    }

    fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !f() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// The worker's payload total, read on the worker.
    fn payload_total(exec: &Executor, worker: &Worker<u64>) -> u64 {
        let (tx, rx) = std::sync::mpsc::channel();
        drop(worker.run(move |p: &mut u64| tx.send(*p).unwrap()));
        let _ = exec.spin(SpinOptions::spin_once().timeout(Duration::from_secs(5)));
        rx.recv_timeout(Duration::from_secs(5)).unwrap()
    }

    #[test]
    fn an_idle_worker_lends_itself_to_the_receive_thread() {
        let (exec, worker, probe) = setup();
        let cmds = exec.commands();
        std::thread::scope(|s| {
            let spinner = s.spawn(|| exec.spin(SpinOptions::default()));
            wait_until("the worker to park", || worker.core.mailbox.is_idle());
            let here = std::thread::current().id();
            // The spin has opened the gate once the worker parked with its payload lent out;
            // a few tries cover the gate opening after the worker parked.
            wait_until("a direct run", || {
                receive(&probe);
                probe.ran_on.lock().unwrap().contains(&here)
            });
            cmds.halt_spinning();
            assert!(spinner.join().unwrap().is_empty());
        });
        let sent = probe.ran_on.lock().unwrap().len() as u64;
        assert!(sent >= 1);
        assert_eq!(probe.takeable.load(Ordering::Acquire), 0);
        // Every direct run added to the same payload the worker's callbacks see.
        assert!(payload_total(&exec, &worker) >= 1);
    }

    #[test]
    fn nothing_runs_directly_while_no_spin_is_active_and_nothing_is_lost() {
        let (exec, worker, probe) = setup();
        // Let the worker park once, then stop spinning: the gate is closed.
        let _ = exec.spin(SpinOptions::spin_once().timeout(Duration::from_secs(1)));
        for _ in 0..5 {
            receive(&probe);
        }
        assert!(probe.ran_on.lock().unwrap().is_empty());
        // The next spin delivers all of it, on the worker.
        let _ = exec.spin(SpinOptions::spin_once().timeout(Duration::from_secs(5)));
        assert_eq!(probe.takeable.load(Ordering::Acquire), 0);
        assert_eq!(payload_total(&exec, &worker), 5);
        let here = std::thread::current().id();
        assert!(!probe.ran_on.lock().unwrap().contains(&here));
    }

    /// Two receive threads and a stream of worker jobs: the worker's callbacks never overlap,
    /// and every item is counted exactly once.
    #[test]
    fn direct_runs_and_the_worker_exclude_each_other_and_lose_nothing() {
        const PER_THREAD: u64 = 20_000;
        let (exec, worker, probe) = setup();
        let cmds = exec.commands();
        let jobs = Arc::new(AtomicU64::new(0));
        std::thread::scope(|s| {
            let spinner = s.spawn(|| exec.spin(SpinOptions::default()));
            let receivers: Vec<_> = (0..2)
                .map(|_| {
                    s.spawn(|| {
                        for _ in 0..PER_THREAD {
                            receive(&probe);
                        }
                    })
                })
                .collect();
            for _ in 0..2_000 {
                let (inside, jobs) = (probe.inside.clone(), jobs.clone());
                // The job is queued at once; its result is not needed.
                drop(worker.run(move |_: &mut u64| {
                    assert!(!inside.swap(true, Ordering::SeqCst), "a job overlapped");
                    jobs.fetch_add(1, Ordering::SeqCst);
                    inside.store(false, Ordering::SeqCst);
                }));
            }
            for r in receivers {
                r.join().unwrap();
            }
            wait_until("every item and job", || {
                probe.takeable.load(Ordering::Acquire) == 0 && jobs.load(Ordering::SeqCst) == 2_000
            });
            cmds.halt_spinning();
            assert!(spinner.join().unwrap().is_empty());
        });
        assert_eq!(probe.overlaps.load(Ordering::SeqCst), 0);
        assert_eq!(payload_total(&exec, &worker), 2 * PER_THREAD);
    }
}
