//! Workers: a payload plus a mailbox, run by one Tokio task.

use std::any::Any;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use super::callback::payload_of;
use super::{Node, NodeIdentity};
use crate::clock::ClockType;
use crate::error::{Error, Result};
use crate::executor::mailbox::{MailItem, Mailbox};
use crate::executor::worker::WorkerRef;
use crate::executor::ExecutorShared;
use crate::timer::{TimerCallback, TimerHost, TimerInfo, TimerSite};

/// The part of a worker that entities keep alive. Dropping the last reference closes the
/// mailbox, which ends the worker's task.
pub(crate) struct WorkerCore {
    pub(crate) mailbox: Arc<Mailbox>,
    pub(crate) exec: Arc<ExecutorShared>,
    pub(crate) node: Arc<NodeIdentity>,
}

impl WorkerCore {
    pub(crate) fn spawn(
        exec: &Arc<ExecutorShared>,
        node: Arc<NodeIdentity>,
        payload: Box<dyn Any + Send>,
    ) -> Result<Arc<Self>> {
        let mailbox = Arc::new(Mailbox::default());
        exec.spawn_worker(&mailbox, payload, &node.name)?;
        Ok(Arc::new(Self {
            mailbox,
            exec: exec.clone(),
            node,
        }))
    }
}

#[cfg(all(test, rclev_loom))]
impl WorkerCore {
    /// A worker for the loom models: the real core over `exec`, with a mailbox that is not
    /// registered with the executor and no task; the model runs `run_worker` on the mailbox
    /// itself. Its node's ROS clock is a steady clock: these models use no simulated time.
    pub(crate) fn for_model(exec: &Arc<ExecutorShared>) -> Arc<Self> {
        Self::for_model_with_clock(exec, crate::clock::Clock::steady())
    }

    /// [`for_model`](Self::for_model) whose node has `clock` as its ROS clock (a clock with a
    /// time source, for the models that switch simulation time).
    pub(crate) fn for_model_with_clock(
        exec: &Arc<ExecutorShared>,
        clock: crate::clock::Clock,
    ) -> Arc<Self> {
        Arc::new(Self {
            mailbox: Arc::new(Mailbox::default()),
            exec: exec.clone(),
            node: Arc::new(NodeIdentity {
                port: exec
                    .context()
                    .transport()
                    .create_node(&crate::transport::NodeName {
                        name: "model".into(),
                        namespace: "/".into(),
                    })
                    .expect("the in-process transport registers any node"),
                name: "model".into(),
                namespace: "/".into(),
                clock,
                life: exec.life().clone(),
                types: Default::default(),
                remap_rules: Vec::new(),
            }),
        })
    }
}

impl WorkerCore {
    /// Whether the calling thread is this worker, running one of its callbacks.
    pub(crate) fn is_current(&self) -> bool {
        crate::executor::in_section_of_worker(&self.mailbox)
    }

    /// This worker as the layers below the node see it.
    pub(crate) fn worker_ref(&self) -> WorkerRef {
        WorkerRef {
            mailbox: self.mailbox.clone(),
            host: self.exec.host().clone(),
        }
    }
}

/// Timers get from the node layer what the timer layer cannot reach: the executor's scheduler
/// and running state, and the node's clocks.
impl TimerHost for WorkerCore {
    fn timer_site(self: &Arc<Self>, clock: ClockType) -> Result<TimerSite> {
        self.exec.check_running()?;
        Ok(TimerSite {
            worker: self.worker_ref(),
            sched: self.exec.timers().core.clone(),
            clock: self.node.clock_of(clock),
            keep_alive: self.clone(),
        })
    }
}

impl Drop for WorkerCore {
    fn drop(&mut self) {
        self.mailbox.close();
    }
}

/// A worker with a payload of type `P`: callbacks created through it get `&mut P`, run one at a
/// time, and run in parallel with other workers' callbacks.
///
/// ```
/// use rclev::{Context, SpinOptions, interfaces::std_msgs::msg::Int64};
/// use std::time::Duration;
///
/// let executor = Context::default().create_basic_executor();
/// let node = executor.create_node("counter").unwrap();
/// let worker = node.create_worker(0_i64).unwrap();
/// let _sub = worker
///     .create_subscription::<Int64, _>("numbers", |sum: &mut i64, msg| *sum += msg.data)
///     .unwrap();
/// let publisher = node.create_publisher::<Int64>("numbers").unwrap();
/// publisher.publish(Int64 { data: 2 }).unwrap();
/// publisher.publish(Int64 { data: 3 }).unwrap();
/// let sum = worker.run(|sum: &mut i64| *sum);
/// let (tx, rx) = std::sync::mpsc::channel();
/// executor.spin(SpinOptions::default().until_promise_resolved(async move {
///     tx.send(sum.await.unwrap()).unwrap();
/// }).timeout(Duration::from_secs(5)));
/// assert_eq!(rx.recv().unwrap(), 5);
/// ```
pub struct WorkerState<P> {
    pub(crate) core: Arc<WorkerCore>,
    node: Node,
    _payload: PhantomData<fn() -> P>,
}

/// A shared handle to a worker.
pub type Worker<P> = Arc<WorkerState<P>>;

impl<P: Send + 'static> WorkerState<P> {
    pub(crate) fn create(node: &Node, payload: P) -> Result<Worker<P>> {
        let core = WorkerCore::spawn(&node.core.exec, node.identity.clone(), Box::new(payload))?;
        Ok(Arc::new(Self {
            core,
            node: node.clone(),
            _payload: PhantomData,
        }))
    }

    /// The node this worker belongs to.
    pub fn node(&self) -> &Node {
        &self.node
    }

    super::creation::entity_creation_methods! {
        bound: [&mut P,],
        param: [p: &mut P,],
        arg: [p,],
        wrap: with_payload,
        timer: [F: FnMut(&mut P, TimerInfo) + Send + 'static] F
            => |callback| TimerCallback::with_payload(callback),
        runs: "on this worker, with `&mut` its payload first",
        examples: worker,
    }

    /// Runs `f` on the payload (on the worker, between callbacks) and resolves to its result.
    /// The job runs only while the executor spins; it fails with [`Error::Shutdown`] if the
    /// executor shuts down first, and with [`Error::CallbackPanicked`] if `f` panics (the panic
    /// is also reported to the spin, like any callback's).
    pub fn run<R, F>(&self, f: F) -> impl Future<Output = Result<R>> + Send + 'static
    where
        R: Send + 'static,
        F: FnOnce(&mut P) -> R + Send + 'static,
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.core.mailbox.push(MailItem::Job(Box::new(move |p| {
            let payload = payload_of::<P>(p);
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(payload))) {
                Ok(r) => {
                    let _ = tx.send(Ok(r));
                }
                Err(panic) => {
                    let _ = tx.send(Err(Error::CallbackPanicked {
                        entity: "worker job".into(),
                        message: crate::error::panic_message(&*panic),
                    }));
                    // On to the worker, which reports it with the spin's errors.
                    std::panic::resume_unwind(panic);
                }
            }
        })));
        async move { rx.await.map_err(|_| Error::Shutdown)? }
    }
}

impl<P> std::fmt::Debug for WorkerState<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("node", &self.node.fully_qualified_name())
            .field("payload", &std::any::type_name::<P>())
            .finish()
    }
}
