//! Guard conditions: user-triggered readiness.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::entity::bind_entity;
use super::worker_core::WorkerCore;
use crate::base::error::Result;
use crate::base::sync::lock;
use crate::runtime::callback::Callback;
use crate::runtime::dispatch::EntityDispatch;
use crate::runtime::executable::{ExecContext, Executable};
use crate::runtime::fence::CallGate;

/// A guard condition: [`trigger`](Self::trigger) it from any thread and its callback runs on
/// its worker. Triggers that arrive before the callback runs merge into one run. Once the last
/// handle's drop has returned, the callback is not running (unless the drop came from the
/// callback itself) and never starts again.
pub struct GuardConditionState {
    entity: Arc<GuardEntity>,
}

/// What the worker runs; referenced by the worker only while it executes.
struct GuardEntity {
    triggered: AtomicBool,
    /// Set when the user's handle is dropped.
    closed: AtomicBool,
    gate: CallGate,
    dispatch: Arc<EntityDispatch>,
    callback: Mutex<Callback<()>>,
    worker: Arc<WorkerCore>,
}

/// A shared handle to a guard condition.
pub type GuardCondition = crate::EntityHandle<GuardConditionState>;

pub(crate) fn create_guard_condition(
    core: &Arc<WorkerCore>,
    callback: Callback<()>,
) -> Result<GuardCondition> {
    let guard = bind_entity(core, false, |dispatch| {
        Ok(Arc::new(GuardEntity {
            triggered: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            gate: CallGate::default(),
            dispatch,
            callback: Mutex::new(callback),
            worker: core.clone(),
        }))
    })?;
    Ok(crate::EntityHandle::new(GuardConditionState {
        entity: guard,
    }))
}

impl GuardConditionState {
    /// Triggers the guard condition.
    pub fn trigger(&self) {
        self.entity.triggered.store(true, Ordering::Release);
        self.entity.dispatch.notify();
    }
}

impl Drop for GuardConditionState {
    fn drop(&mut self) {
        let e = &self.entity;
        e.closed.store(true, Ordering::SeqCst);
        e.gate.wait_out(e.worker.is_current());
    }
}

impl Executable for GuardEntity {
    fn execute(&self, cx: &mut ExecContext<'_>) {
        if self.triggered.swap(false, Ordering::AcqRel) {
            let still_open = || !self.closed.load(Ordering::SeqCst);
            let _ = lock(&self.callback).call(
                cx,
                "guard condition",
                self.worker.exec.host(),
                (),
                Some(&self.gate),
                still_open,
            );
        }
    }
    fn dispatch(&self) -> &dyn crate::runtime::executable::Coalescing {
        &*self.dispatch
    }
}

impl std::fmt::Debug for GuardConditionState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuardCondition")
            .field("triggered", &self.entity.triggered.load(Ordering::Relaxed))
            .finish()
    }
}
