//! The `send_goal` and `cancel_goal` requests: the user's goal and cancel callbacks decide, and
//! an accepted goal is handed to the execute callback.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use futures::FutureExt;

use super::callbacks::{CancelResponse, ExecuteFn, GoalResponse};
use super::entity::CancelSignal;
use super::entity::{GoalEntry, ServerInner};
use crate::action::{GoalEvent, GoalState, GoalUuid};
use crate::base::error::{panic_message, Error};
use crate::base::sync::lock;
use crate::interfaces::action_msgs::msg::GoalInfo;
use crate::interfaces::action_msgs::srv::{CancelGoal_Request, CancelGoal_Response};
use crate::msg::{ActionType, SendGoalRequest};
use crate::runtime::executable::ExecContext;
use crate::transport::{Payload, RequestId};

/// A goal picked by a cancel request: its id, goal, cancel signal and state.
type CancelCandidate<A> = (
    GoalUuid,
    Arc<<A as ActionType>::Goal>,
    Arc<CancelSignal>,
    GoalState,
);

impl<A: ActionType> ServerInner<A> {
    pub(super) fn on_send_goal(
        &self,
        cx: &mut ExecContext<'_>,
        rid: RequestId,
        request: SendGoalRequest<A>,
    ) {
        let label = self.label();
        let mut handlers = lock(&self.handlers);
        let (id, goal) = A::split_send_goal_request(request);
        let verdict = cx
            .guarded(&label, |_| (handlers.goal)(&id, &goal))
            .unwrap_or(GoalResponse::Reject);
        let duplicate = lock(&self.goals).contains_key(&id);
        let stamp = self.worker.node.clock.now().to_msg();
        if verdict == GoalResponse::Reject || duplicate {
            let _ = self.send_goal.send_response(
                rid,
                Payload::Shared(Arc::new(A::send_goal_response(false, stamp))),
            );
            return;
        }
        let cancel = Arc::new(CancelSignal::default());
        let goal = Arc::new(goal);
        let mut goals = lock(&self.goals);
        if self.is_closed() {
            // The client was already told the server is gone.
            return;
        }
        goals.insert(
            id,
            GoalEntry {
                info: GoalInfo { goal_id: id, stamp },
                goal: goal.clone(),
                state: GoalState::Accepted,
                result: None,
                waiting: Vec::new(),
                cancel: cancel.clone(),
                _expiry: None,
            },
        );
        drop(goals);
        let _ = self.send_goal.send_response(
            rid,
            Payload::Shared(Arc::new(A::send_goal_response(true, stamp))),
        );
        if verdict == GoalResponse::AcceptAndExecute {
            let _ = self.transition(&id, GoalEvent::Execute, None);
        } else {
            self.publish_status();
        }
        let handle = self.handle(id, goal, cancel);
        match &mut handlers.execute {
            ExecuteFn::Sync(f) => {
                if cx.guarded(&label, |_| f(handle.clone())).is_none() {
                    let _ = handle.abort(A::Result::default());
                }
            }
            ExecuteFn::Async(f) => {
                let Some(fut) = cx.guarded(&label, |_| f(handle.clone())) else {
                    let _ = handle.abort(A::Result::default());
                    return;
                };
                let exec = self.worker.exec.clone();
                cx.spawn(Box::pin(async move {
                    match std::panic::AssertUnwindSafe(fut).catch_unwind().await {
                        Ok(end) => {
                            if let Err(e) = handle.finish(end) {
                                crate::diagnostic!(WARN, target: "rclev", "goal {}: {e}", handle.goal_id());
                            }
                        }
                        Err(p) => {
                            let _ = handle.abort(A::Result::default());
                            exec.report(Error::CallbackPanicked {
                                entity: label,
                                message: panic_message(&*p),
                            });
                        }
                    }
                }));
            }
        }
    }

    pub(super) fn on_cancel(
        &self,
        cx: &mut ExecContext<'_>,
        rid: RequestId,
        request: CancelGoal_Request,
    ) {
        let target = request.goal_info.goal_id;
        let before = request.goal_info.stamp.as_nanos();
        // ROS 2 semantics: a zero id with a zero stamp cancels every goal; a stamp also cancels
        // every goal accepted at or before it.
        let candidates: Vec<CancelCandidate<A>> = {
            let goals = lock(&self.goals);
            goals
                .iter()
                .filter(|(id, g)| {
                    (target.is_zero() && before == 0)
                        || **id == target
                        || (before != 0 && g.info.stamp.as_nanos() <= before)
                })
                .map(|(id, g)| (*id, g.goal.clone(), g.cancel.clone(), g.state))
                .collect()
        };
        let mut canceling = Vec::new();
        let mut terminated = false;
        let label = self.label();
        for (id, goal, signal, state) in candidates {
            if state.is_terminal() {
                terminated = true;
                continue;
            }
            let handle = self.handle(id, goal, signal.clone());
            let verdict = {
                let mut handlers = lock(&self.handlers);
                cx.guarded(&label, |_| (handlers.cancel)(&handle))
                    .unwrap_or(CancelResponse::Reject)
            };
            if verdict == CancelResponse::Accept
                && self.transition(&id, GoalEvent::CancelGoal, None).is_ok()
            {
                signal.requested.store(true, Ordering::Release);
                signal.notify.notify_waiters();
                if let Some(g) = lock(&self.goals).get(&id) {
                    canceling.push(g.info);
                }
            }
        }
        let return_code = if !canceling.is_empty() {
            0
        } else if terminated {
            3
        } else if !target.is_zero() && !lock(&self.goals).contains_key(&target) {
            2
        } else {
            1
        };
        let _ = self.cancel_goal.send_response(
            rid,
            Payload::Shared(Arc::new(CancelGoal_Response {
                return_code,
                goals_canceling: canceling,
            })),
        );
    }
}
