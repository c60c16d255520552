//! Goal state changes and results: every transition goes through [`ServerInner::transition`],
//! which on a terminal state records the result, answers the `get_result` requests waiting for
//! it and arms the result's expiry timer.

use std::sync::Arc;

use super::entity::ServerInner;
use crate::action::{GoalEvent, GoalState, GoalUuid};
use crate::base::error::{Error, Result};
use crate::base::sync::lock;
use crate::msg::{ActionType, GetResultRequest};
use crate::node::Callback;
use crate::timer::{create_timer, TimerCallback, TimerKind, TimerOptions};
use crate::transport::{Payload, RequestId};

impl<A: ActionType> ServerInner<A> {
    pub(super) fn respond_result(&self, rid: RequestId, status: GoalState, result: A::Result) {
        let _ = self.get_result.send_response(
            rid,
            Payload::Shared(Arc::new(A::get_result_response(status as i8, result))),
        );
    }

    pub(super) fn transition(
        &self,
        id: &GoalUuid,
        event: GoalEvent,
        result: Option<A::Result>,
    ) -> Result<GoalState> {
        let (next, waiting, result) = {
            let mut goals = lock(&self.goals);
            let entry = goals
                .get_mut(id)
                .ok_or_else(|| Error::GoalUnknown(id.to_string()))?;
            let next = entry
                .state
                .after(event)
                .ok_or(Error::InvalidGoalTransition {
                    goal: id.to_string(),
                    from: entry.state,
                    event,
                })?;
            entry.state = next;
            if next.is_terminal() {
                entry.result = Some(result.unwrap_or_default());
                (
                    next,
                    std::mem::take(&mut entry.waiting),
                    entry.result.clone(),
                )
            } else {
                (next, Vec::new(), None)
            }
        };
        // Status first: a client that has the result can count on the status array showing
        // the terminal state already.
        self.publish_status();
        if next.is_terminal() {
            let result = result.unwrap_or_default();
            for rid in waiting {
                self.respond_result(rid, next, result.clone());
            }
            self.schedule_expiry(*id);
        }
        Ok(next)
    }

    /// Arms a one-shot timer on the shared scheduler that forgets the goal after the result
    /// timeout. The timer holds the server weakly.
    pub(super) fn schedule_expiry(&self, id: GoalUuid) {
        if self.options.result_timeout > crate::timer::MAX_PERIOD {
            // Longer than any clock can count: the result is kept for the server's life.
            return;
        }
        let weak = self.me.clone();
        let expire = TimerCallback(Callback::plain(move |_| {
            if let Some(server) = weak.upgrade() {
                let removed = lock(&server.goals).remove(&id);
                if removed.is_some() {
                    server.publish_status();
                }
            }
        }));
        let options = TimerOptions {
            period: self.options.result_timeout,
            clock: self.options.clock,
        };
        match create_timer(&self.worker, options, TimerKind::OneShot(expire)) {
            Ok(timer) => {
                if let Some(entry) = lock(&self.goals).get_mut(&id) {
                    entry._expiry = Some(timer);
                }
            }
            Err(e) => {
                crate::diagnostic!(ERROR, target: "rclev", "cannot schedule result expiry: {e}")
            }
        }
    }

    pub(super) fn on_get_result(&self, rid: RequestId, request: GetResultRequest<A>) {
        let goal_id = A::get_result_request_goal_id(&request);
        let ready = {
            let mut goals = lock(&self.goals);
            match goals.get_mut(&goal_id) {
                None => Some((GoalState::Unknown, A::Result::default())),
                Some(g) if g.state.is_terminal() => {
                    Some((g.state, g.result.clone().unwrap_or_default()))
                }
                Some(g) => {
                    g.waiting.push(rid);
                    None
                }
            }
        };
        if let Some((state, result)) = ready {
            self.respond_result(rid, state, result);
        }
    }
}
