//! QoS events of publishers and subscriptions, from the transport to the user's handler on
//! the entity's worker.
//!
//! Events of one kind that arrive before the handler ran merge into one (their changes add
//! up, see [`QosEvent::merge`]), so a burst costs one call and loses no count, and at most one
//! event per [`QosEventKind`](crate::qos::QosEventKind) is ever kept. They are kept from the
//! endpoint's creation on, for a handler: a transport raises events inside the `create_*`
//! call (clashes and matches with the endpoints already on the topic), before the caller holds
//! the entity. A handler given in the entity's options (`.event_handler(..)`) hears those like
//! any other; one set later (`set_event_handler`) gets what was kept until then, at once.
//! Meanwhile, the events that mean two endpoints silently do not talk (incompatible QoS or
//! type) are also logged as warnings, as rclcpp does.

use std::sync::{Arc, Mutex};

use super::entity::bind_entity;
use super::worker_core::WorkerCore;
use crate::base::error::Result;
use crate::base::sync::lock;
use crate::qos::{QosEvent, QosEventHandler};
use crate::runtime::callback::Callback;
use crate::runtime::dispatch::EntityDispatch;
use crate::runtime::executable::{ExecContext, Executable};
use crate::transport::EventHook;

/// Collects one entity's events and runs its handler.
///
/// Locks: `handler` and `state` are never held together, and neither while the handler runs
/// (it is taken out of `handler` for that, so it may call `set_event_handler` itself).
pub(crate) struct EventSink {
    label: String,
    state: Mutex<SinkState>,
    /// The handler, taken out while it runs.
    handler: Mutex<Option<Callback<QosEvent>>>,
    dispatch: Arc<EntityDispatch>,
    worker: Arc<WorkerCore>,
}

struct SinkState {
    /// At most one event per kind, oldest kind first; kept until a handler takes them.
    pending: Vec<QosEvent>,
    /// Set once a handler is: from then on events wake the worker instead of being warned
    /// about. Written after `handler` is filled, so a wake always finds a handler.
    has_handler: bool,
}

impl EventSink {
    /// A sink for the entity called `label`, on `core`'s worker, with the handler given in the
    /// entity's options if there is one.
    pub(crate) fn create(
        core: &Arc<WorkerCore>,
        label: String,
        handler: Option<QosEventHandler>,
    ) -> Result<Arc<Self>> {
        let handler = handler.map(|h| Callback::plain(move |event| h.call(event)));
        bind_entity(core, false, |dispatch| {
            Ok(Arc::new(Self {
                label,
                state: Mutex::new(SinkState {
                    pending: Vec::new(),
                    has_handler: handler.is_some(),
                }),
                handler: Mutex::new(handler),
                dispatch,
                worker: core.clone(),
            }))
        })
    }

    /// Sets the handler; it gets the events kept so far, and every later one.
    pub(crate) fn set_handler(&self, handler: Callback<QosEvent>) {
        *lock(&self.handler) = Some(handler);
        let kept = {
            let mut state = lock(&self.state);
            state.has_handler = true;
            !state.pending.is_empty()
        };
        // An event that arrives from now on wakes the worker itself; one kept before only
        // this wake delivers.
        if kept {
            self.dispatch.notify();
        }
    }
}

/// The default for endpoints without a handler: warn about the events that mean two
/// endpoints silently do not talk, as rclcpp does; ignore the rest.
fn warn_by_default(label: &str, event: QosEvent) {
    if event.is_warning() {
        crate::diagnostic!(WARN, target: "rclev", "{label}: {event:?}");
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
        let handled = {
            let mut state = lock(&self.state);
            // Into the kept event of its kind, else kept on its own (events are `Copy`).
            if !state
                .pending
                .iter_mut()
                .any(|kept| kept.merge(event).is_ok())
            {
                state.pending.push(event);
            }
            state.has_handler
        };
        if handled {
            self.dispatch.notify();
        } else {
            warn_by_default(&self.label, event);
        }
    }
}

impl Executable for EventSink {
    fn execute(&self, cx: &mut ExecContext<'_>) {
        let Some(mut handler) = lock(&self.handler).take() else {
            return;
        };
        let events = std::mem::take(&mut lock(&self.state).pending);
        let host = self.worker.exec.host();
        for event in events {
            if handler
                .call(cx, &self.label, host, event, None, || true)
                .is_err()
            {
                break;
            }
        }
        let mut slot = lock(&self.handler);
        // A handler set while this one ran (from inside it, or another thread) replaces it.
        if slot.is_none() {
            *slot = Some(handler);
        }
    }

    fn dispatch(&self) -> &dyn crate::runtime::executable::Coalescing {
        &*self.dispatch
    }
}
