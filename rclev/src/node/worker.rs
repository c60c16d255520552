//! Workers: a payload plus a mailbox, run by one Tokio task.

use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use super::worker_core::WorkerCore;
use super::Node;
use crate::base::error::{Error, Result};
use crate::runtime::callback::payload_of;
use crate::runtime::mailbox::MailItem;
use crate::timer::{TimerCallback, TimerInfo};

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
                        message: crate::base::error::panic_message(&*panic),
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
