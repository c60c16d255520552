//! The server entity: its endpoints, its goals, and the executable that drains the three
//! services' requests when the server's dispatch runs. Request handling is in `requests.rs`,
//! state changes and results in `results.rs`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use super::callbacks::Handlers;
use super::ActionServerOptions;
use crate::action::{GoalState, GoalUuid};
use crate::base::sync::lock;
use crate::interfaces::action_msgs::msg::{GoalInfo, GoalStatus, GoalStatusArray};
use crate::msg::ActionType;
use crate::node::entity::{decode_owned, report_malformed};
use crate::node::WorkerCore;
use crate::runtime::dispatch::EntityDispatch;
use crate::runtime::executable::{ExecContext, Executable, MAX_BATCH};
use crate::timer::Timer;
use crate::transport::{Payload, PublisherPort, RequestId, ServicePort};

/// Set when a cancel request for the goal is accepted; shared by the server's goal entry and
/// every clone of the goal's handle.
#[derive(Default)]
pub(super) struct CancelSignal {
    pub(super) requested: AtomicBool,
    pub(super) notify: tokio::sync::Notify,
}

/// One goal the server knows, from acceptance until its result expires.
pub(super) struct GoalEntry<A: ActionType> {
    pub(super) info: GoalInfo,
    pub(super) goal: Arc<A::Goal>,
    pub(super) state: GoalState,
    pub(super) result: Option<A::Result>,
    /// `get_result` requests waiting for the goal to finish.
    pub(super) waiting: Vec<RequestId>,
    pub(super) cancel: Arc<CancelSignal>,
    /// Expires the result; held here so that dropping the server cancels it.
    pub(super) _expiry: Option<Timer>,
}

/// The server proper. Owned by [`ActionServerState`](super::ActionServerState); its dispatch (as
/// the executable), goal handles and expiry timers hold it weakly.
pub(super) struct ServerInner<A: ActionType> {
    pub(super) name: String,
    pub(super) send_goal: Arc<dyn ServicePort>,
    pub(super) cancel_goal: Arc<dyn ServicePort>,
    pub(super) get_result: Arc<dyn ServicePort>,
    pub(super) feedback: Arc<dyn PublisherPort>,
    pub(super) status: Arc<dyn PublisherPort>,
    pub(super) dispatch: Arc<EntityDispatch>,
    pub(super) goals: Mutex<HashMap<GoalUuid, GoalEntry<A>>>,
    /// Set by [`ServerInner::close`] while it holds `goals`, so no goal is added after the
    /// server was closed. Checked by everything that would act on the server's behalf: the
    /// worker and goal handles may still hold it for a moment after the user dropped it.
    pub(super) closed: AtomicBool,
    pub(super) handlers: Mutex<Handlers<A>>,
    pub(super) options: ActionServerOptions,
    pub(super) worker: Arc<WorkerCore>,
    pub(super) me: Weak<ServerInner<A>>,
}

impl<A: ActionType> ServerInner<A> {
    pub(super) fn label(&self) -> String {
        format!("action server {}", self.name)
    }

    pub(super) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Withdraws the server at once: its services disappear (clients waiting for a response or
    /// a result get [`Error::ServiceUnavailable`](crate::Error::ServiceUnavailable)), its goals
    /// and their expiry timers are dropped, and goal handles become inert.
    pub(super) fn close(&self) {
        let goals = {
            let mut goals = lock(&self.goals);
            self.closed.store(true, Ordering::Release);
            std::mem::take(&mut *goals)
        };
        self.send_goal.close();
        self.cancel_goal.close();
        self.get_result.close();
        // Outside the lock: dropping an expiry timer takes the scheduler's lock.
        drop(goals);
    }

    pub(super) fn publish_status(&self) {
        if self.is_closed() {
            return;
        }
        let status_list = lock(&self.goals)
            .values()
            .map(|g| GoalStatus {
                goal_info: g.info,
                status: g.state as i8,
            })
            .collect();
        let _ = self
            .status
            .publish(Payload::Shared(Arc::new(GoalStatusArray { status_list })));
    }
}

impl<A: ActionType> ServerInner<A> {
    /// A request that could not be decoded: abandoned and reported.
    fn malformed(&self, port: &dyn ServicePort, id: RequestId, reason: String) {
        port.abandon_request(id);
        report_malformed(self.worker.exec.host(), &self.name, reason);
    }
}

impl<A: ActionType> Executable for ServerInner<A> {
    fn execute(&self, cx: &mut ExecContext<'_>) {
        if self.is_closed() {
            return;
        }
        let mut more = false;
        for i in 0..MAX_BATCH {
            let Some((rid, p)) = self.send_goal.take_request() else {
                break;
            };
            match decode_owned(p) {
                Ok(request) => self.on_send_goal(cx, rid, request),
                Err(reason) => self.malformed(&*self.send_goal, rid, reason),
            }
            more |= i + 1 == MAX_BATCH;
        }
        for i in 0..MAX_BATCH {
            let Some((rid, p)) = self.cancel_goal.take_request() else {
                break;
            };
            match decode_owned(p) {
                Ok(request) => self.on_cancel(cx, rid, request),
                Err(reason) => self.malformed(&*self.cancel_goal, rid, reason),
            }
            more |= i + 1 == MAX_BATCH;
        }
        for i in 0..MAX_BATCH {
            let Some((rid, p)) = self.get_result.take_request() else {
                break;
            };
            match decode_owned(p) {
                Ok(request) => self.on_get_result(rid, request),
                Err(reason) => self.malformed(&*self.get_result, rid, reason),
            }
            more |= i + 1 == MAX_BATCH;
        }
        if more {
            self.dispatch.notify();
        }
    }

    fn dispatch(&self) -> &dyn crate::runtime::executable::Coalescing {
        &*self.dispatch
    }
}
