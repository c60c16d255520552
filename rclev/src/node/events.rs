//! QoS events of publishers and subscriptions, from the transport to the user's handler on
//! the entity's worker.
//!
//! Events of one kind that arrive before the handler ran merge into one (their changes add
//! up, see [`QosEvent::merge`]), so a burst costs one call and loses no count. Without a
//! handler, the events that mean two endpoints silently do not talk (incompatible QoS or
//! type) are logged as warnings, as rclcpp does.

use std::sync::{Arc, Mutex};

use super::callback::Callback;
use super::entity::bind_entity;
use super::worker::WorkerCore;
use crate::error::Result;
use crate::executor::dispatch::{EntityDispatch, ExecContext, Executable};
use crate::qos::QosEvent;
use crate::sync::lock;
use crate::transport::EventHook;

/// Collects one entity's events and runs its handler.
pub(crate) struct EventSink {
    label: String,
    state: Mutex<SinkState>,
    /// The handler, taken out while it runs.
    handler: Mutex<Option<Callback<QosEvent>>>,
    dispatch: Arc<EntityDispatch>,
    worker: Arc<WorkerCore>,
}

#[derive(Default)]
struct SinkState {
    /// At most one event per kind, oldest kind first.
    pending: Vec<QosEvent>,
    has_handler: bool,
}

impl EventSink {
    /// A sink for the entity called `label`, on `core`'s worker.
    pub(crate) fn create(core: &Arc<WorkerCore>, label: String) -> Result<Arc<Self>> {
        bind_entity(core, false, |dispatch| {
            Ok(Arc::new(Self {
                label,
                state: Mutex::default(),
                handler: Mutex::new(None),
                dispatch,
                worker: core.clone(),
            }))
        })
    }

    /// Sets the handler; events from now on go to it.
    pub(crate) fn set_handler(&self, handler: Callback<QosEvent>) {
        *lock(&self.handler) = Some(handler);
        lock(&self.state).has_handler = true;
    }
}

/// The default for endpoints without a handler: warn about the events that mean two
/// endpoints silently do not talk, as rclcpp does; ignore the rest.
fn warn_by_default(label: &str, event: QosEvent) {
    if event.is_warning() {
        tracing::warn!(target: "rclev", "{label}: {event:?}");
    }
}

/// The events of an endpoint that has no handler of its own (a subscription stream, an
/// action's endpoints): warnings only.
pub(crate) struct WarningHook(pub(crate) String);

impl EventHook for WarningHook {
    fn event(&self, event: QosEvent) {
        warn_by_default(&self.0, event);
    }
}

impl EventHook for EventSink {
    fn event(&self, event: QosEvent) {
        let mut state = lock(&self.state);
        if !state.has_handler {
            drop(state);
            warn_by_default(&self.label, event);
            return;
        }
        let mut event = Some(event);
        for queued in state.pending.iter_mut() {
            match queued.merge(event.take().expect("put back on mismatch")) {
                Ok(()) => break,
                Err(back) => event = Some(back),
            }
        }
        state.pending.extend(event);
        drop(state);
        self.dispatch.notify();
    }
}

impl Executable for EventSink {
    fn execute(&self, cx: &mut ExecContext<'_>) {
        let events = std::mem::take(&mut lock(&self.state).pending);
        let mut handler = lock(&self.handler);
        let Some(handler) = handler.as_mut() else {
            return;
        };
        for event in events {
            let host = self.worker.exec.host();
            if handler
                .call(cx, &self.label, host, event, None, || true)
                .is_err()
            {
                return;
            }
        }
    }

    fn dispatch(&self) -> &EntityDispatch {
        &self.dispatch
    }
}
