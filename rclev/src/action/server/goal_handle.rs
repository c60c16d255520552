//! The goal handle an execute callback gets: it reads the goal, publishes feedback, watches for
//! cancellation and finishes the goal. It holds the server weakly and goes inert once the
//! server is closed.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use super::callbacks::GoalEnd;
use super::entity::{CancelSignal, ServerInner};
use crate::action::{GoalEvent, GoalState, GoalUuid};
use crate::base::error::{Error, Result};
use crate::base::sync::lock;
use crate::msg::ActionType;
use crate::transport::Payload;

/// The server's handle on one goal, given to the execute callback. Cloneable; it holds the
/// server weakly, so after the server is dropped every method returns
/// [`Error::GoalUnknown`].
pub struct ServerGoalHandle<A: ActionType> {
    pub(super) id: GoalUuid,
    pub(super) goal: Arc<A::Goal>,
    pub(super) server: Weak<ServerInner<A>>,
    pub(super) cancel: Arc<CancelSignal>,
}

impl<A: ActionType> Clone for ServerGoalHandle<A> {
    fn clone(&self) -> Self {
        Self {
            id: self.id,
            goal: self.goal.clone(),
            server: self.server.clone(),
            cancel: self.cancel.clone(),
        }
    }
}

impl<A: ActionType> std::fmt::Debug for ServerGoalHandle<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerGoalHandle")
            .field("goal_id", &self.id.to_string())
            .finish()
    }
}

impl<A: ActionType> ServerInner<A> {
    /// The handle on goal `id` that the execute callback gets.
    pub(super) fn handle(
        &self,
        id: GoalUuid,
        goal: Arc<A::Goal>,
        cancel: Arc<CancelSignal>,
    ) -> ServerGoalHandle<A> {
        ServerGoalHandle {
            id,
            goal,
            server: self.me.clone(),
            cancel,
        }
    }
}

impl<A: ActionType> ServerGoalHandle<A> {
    /// The goal's id.
    pub fn goal_id(&self) -> GoalUuid {
        self.id
    }

    /// The goal.
    pub fn goal(&self) -> &A::Goal {
        &self.goal
    }

    fn server(&self) -> Result<Arc<ServerInner<A>>> {
        self.server
            .upgrade()
            .filter(|s| !s.is_closed())
            .ok_or_else(|| Error::GoalUnknown(self.id.to_string()))
    }

    /// The goal's current state (`Unknown` once the server or the goal is gone).
    pub fn state(&self) -> GoalState {
        self.server()
            .ok()
            .and_then(|s| lock(&s.goals).get(&self.id).map(|g| g.state))
            .unwrap_or(GoalState::Unknown)
    }

    /// Starts executing a goal accepted with
    /// [`GoalResponse::AcceptAndDefer`](super::GoalResponse::AcceptAndDefer).
    pub fn execute(&self) -> Result<()> {
        self.server()?
            .transition(&self.id, GoalEvent::Execute, None)
            .map(drop)
    }

    /// Publishes feedback for this goal.
    pub fn publish_feedback(&self, feedback: A::Feedback) -> Result<()> {
        let server = self.server()?;
        if self.state().is_terminal() || self.state() == GoalState::Unknown {
            return Err(Error::GoalUnknown(self.id.to_string()));
        }
        server
            .feedback
            .publish(Payload::Shared(Arc::new(A::feedback_message(
                self.id, feedback,
            ))))
            .map_err(|e| e.error)
    }

    /// Whether a cancel request for this goal was accepted.
    pub fn is_cancel_requested(&self) -> bool {
        self.cancel.requested.load(Ordering::Acquire)
    }

    /// Resolves when a cancel request for this goal is accepted (at once if one was).
    pub async fn cancel_requested(&self) {
        loop {
            let notified = self.cancel.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_cancel_requested() {
                return;
            }
            notified.await;
        }
    }

    /// Finishes the goal successfully.
    pub fn succeed(&self, result: A::Result) -> Result<()> {
        self.server()?
            .transition(&self.id, GoalEvent::Succeed, Some(result))
            .map(drop)
    }

    /// Finishes the goal unsuccessfully.
    pub fn abort(&self, result: A::Result) -> Result<()> {
        self.server()?
            .transition(&self.id, GoalEvent::Abort, Some(result))
            .map(drop)
    }

    /// Finishes a canceling goal as canceled.
    pub fn canceled(&self, result: A::Result) -> Result<()> {
        self.server()?
            .transition(&self.id, GoalEvent::Canceled, Some(result))
            .map(drop)
    }

    pub(crate) fn finish(&self, end: GoalEnd<A::Result>) -> Result<()> {
        match end {
            GoalEnd::Succeeded(r) => self.succeed(r),
            GoalEnd::Aborted(r) => self.abort(r),
            GoalEnd::Canceled(r) => self.canceled(r),
        }
    }
}
