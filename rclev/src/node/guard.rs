//! Guard conditions: user-triggered readiness.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::callback::Callback;
use super::worker::WorkerCore;
use crate::error::Result;
use crate::executor::dispatch::{EntityDispatch, ExecContext, Executable};
use crate::sync::lock;

/// A guard condition: [`trigger`](Self::trigger) it from any thread and its callback runs on
/// its worker. Triggers that arrive before the callback runs merge into one run.
pub struct GuardConditionState {
    triggered: AtomicBool,
    dispatch: Arc<EntityDispatch>,
    callback: Mutex<Callback<()>>,
    worker: Arc<WorkerCore>,
}

/// A shared handle to a guard condition.
pub type GuardCondition = crate::Handle<GuardConditionState>;

pub(crate) fn create_guard_condition(
    core: &Arc<WorkerCore>,
    callback: Callback<()>,
) -> Result<GuardCondition> {
    core.exec.check_running()?;
    let dispatch = EntityDispatch::unbound(core.mailbox.clone());
    let guard = Arc::new(GuardConditionState {
        triggered: AtomicBool::new(false),
        dispatch: dispatch.clone(),
        callback: Mutex::new(callback),
        worker: core.clone(),
    });
    let entity: Arc<dyn Executable> = guard.clone();
    dispatch.bind(Arc::downgrade(&entity), false);
    Ok(crate::Handle::from_arc(guard))
}

impl GuardConditionState {
    /// Triggers the guard condition.
    pub fn trigger(&self) {
        self.triggered.store(true, Ordering::Release);
        self.dispatch.notify();
    }
}

impl Executable for GuardConditionState {
    fn execute(&self, cx: &mut ExecContext<'_>) {
        if self.triggered.swap(false, Ordering::AcqRel) {
            let _ = lock(&self.callback).call(
                cx,
                "guard condition",
                &self.worker.exec,
                (),
                None,
                || true,
            );
        }
    }
    fn dispatch(&self) -> &EntityDispatch {
        &self.dispatch
    }
}

impl std::fmt::Debug for GuardConditionState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuardCondition")
            .field("triggered", &self.triggered.load(Ordering::Relaxed))
            .finish()
    }
}
