//! Creating actions on nodes and workers. These methods belong to `NodeState` and
//! `WorkerState`, but live here (inherent impls may sit anywhere in the crate), so that the
//! node layer does not import the action layer above it.

use std::future::Future;
use std::sync::Arc;

use super::{async_execute, create_action_client, create_action_server, handlers, sync_execute};
use crate::error::Result;
use crate::node::{NodeState, WorkerCore, WorkerState};

impl NodeState {
    /// An action server whose callbacks run on the node's worker: `goal` accepts or rejects
    /// goals, `cancel` answers cancel requests, and `execute` runs each accepted goal as an
    /// async task that ends with [`GoalEnd`](crate::GoalEnd). See [`crate::action`].
    pub fn create_action_server<A, G, C, E, Fut>(
        &self,
        name: &str,
        options: crate::ActionServerOptions,
        goal: G,
        cancel: C,
        execute: E,
    ) -> Result<crate::ActionServer<A>>
    where
        A: crate::msg::ActionType,
        G: FnMut(&crate::action::GoalUuid, &A::Goal) -> crate::GoalResponse + Send + 'static,
        C: FnMut(&crate::ServerGoalHandle<A>) -> crate::CancelResponse + Send + 'static,
        E: FnMut(crate::ServerGoalHandle<A>) -> Fut + Send + 'static,
        Fut: Future<Output = crate::GoalEnd<A::Result>> + Send + 'static,
    {
        create_server(
            &self.core,
            name,
            options,
            goal,
            cancel,
            async_execute(execute),
        )
    }

    /// An action server with a plain execute callback: it gets each accepted goal's handle and
    /// finishes it (now or later, from anywhere) with `succeed`/`abort`/`canceled`.
    pub fn create_action_server_with_callback<A, G, C, E>(
        &self,
        name: &str,
        options: crate::ActionServerOptions,
        goal: G,
        cancel: C,
        execute: E,
    ) -> Result<crate::ActionServer<A>>
    where
        A: crate::msg::ActionType,
        G: FnMut(&crate::action::GoalUuid, &A::Goal) -> crate::GoalResponse + Send + 'static,
        C: FnMut(&crate::ServerGoalHandle<A>) -> crate::CancelResponse + Send + 'static,
        E: FnMut(crate::ServerGoalHandle<A>) + Send + 'static,
    {
        create_server(
            &self.core,
            name,
            options,
            goal,
            cancel,
            sync_execute(execute),
        )
    }

    /// An action client whose responses are taken on the node's worker.
    pub fn create_action_client<A: crate::msg::ActionType>(
        &self,
        name: &str,
    ) -> Result<crate::ActionClient<A>> {
        create_action_client(&self.core, name)
    }
}

impl<P: Send + 'static> WorkerState<P> {
    /// An action server whose callbacks run on this worker (see
    /// [`NodeState::create_action_server`](crate::NodeState::create_action_server)).
    pub fn create_action_server<A, G, C, E, Fut>(
        &self,
        name: &str,
        options: crate::ActionServerOptions,
        goal: G,
        cancel: C,
        execute: E,
    ) -> Result<crate::ActionServer<A>>
    where
        A: crate::msg::ActionType,
        G: FnMut(&crate::action::GoalUuid, &A::Goal) -> crate::GoalResponse + Send + 'static,
        C: FnMut(&crate::ServerGoalHandle<A>) -> crate::CancelResponse + Send + 'static,
        E: FnMut(crate::ServerGoalHandle<A>) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = crate::GoalEnd<A::Result>> + Send + 'static,
    {
        create_server(
            &self.core,
            name,
            options,
            goal,
            cancel,
            async_execute(execute),
        )
    }

    /// An action client whose responses are taken on this worker.
    pub fn create_action_client<A: crate::msg::ActionType>(
        &self,
        name: &str,
    ) -> Result<crate::ActionClient<A>> {
        create_action_client(&self.core, name)
    }
}

/// The one path every action server is created by.
fn create_server<A, G, C>(
    core: &Arc<WorkerCore>,
    name: &str,
    options: crate::ActionServerOptions,
    goal: G,
    cancel: C,
    execute: crate::action::ExecuteFn<A>,
) -> Result<crate::ActionServer<A>>
where
    A: crate::msg::ActionType,
    G: FnMut(&crate::action::GoalUuid, &A::Goal) -> crate::GoalResponse + Send + 'static,
    C: FnMut(&crate::ServerGoalHandle<A>) -> crate::CancelResponse + Send + 'static,
{
    let (goal, cancel) = handlers::<A>(goal, cancel);
    create_action_server(core, name, options, goal, cancel, execute)
}
