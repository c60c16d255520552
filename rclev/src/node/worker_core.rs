//! The part of a worker that entities keep alive: its mailbox, its executor and its node.
//! Dropping the last reference closes the mailbox, which ends the worker's task. Entities
//! (`entity`, `pubsub`, `service`, `guard`, `events`) build on this, the user's `Worker`
//! handle (`worker.rs`) on them.

use std::any::Any;
use std::sync::Arc;

use super::identity::NodeIdentity;
use crate::base::error::Result;
use crate::clock::ClockType;
use crate::executor::ExecutorShared;
use crate::runtime::mailbox::Mailbox;
use crate::runtime::worker::WorkerRef;
use crate::timer::{TimerHost, TimerSite};

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
