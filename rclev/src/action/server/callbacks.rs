//! What the user's callbacks return, and how they are stored: the goal and cancel callbacks'
//! verdicts, an async execution's end, and the boxed closures the server keeps.

use std::future::Future;

use futures::future::BoxFuture;
use futures::FutureExt;

use super::ServerGoalHandle;
use crate::action::GoalUuid;
use crate::msg::ActionType;

/// The goal callback's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GoalResponse {
    /// Refuse the goal.
    Reject,
    /// Accept it and start executing at once.
    AcceptAndExecute,
    /// Accept it; the execute callback gets it in `Accepted` state and calls
    /// [`ServerGoalHandle::execute`] when it starts.
    AcceptAndDefer,
}

/// The cancel callback's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelResponse {
    /// Keep executing.
    Reject,
    /// Move the goal to `Canceling` and signal its execution.
    Accept,
}

/// How an async goal execution ended.
#[derive(Debug, Clone, PartialEq)]
pub enum GoalEnd<R> {
    /// Succeeded with a result.
    Succeeded(R),
    /// Aborted, with a (partial) result.
    Aborted(R),
    /// Canceled (after a cancel request was accepted), with a (partial) result.
    Canceled(R),
}

pub(super) type GoalFn<A> =
    Box<dyn FnMut(&GoalUuid, &<A as ActionType>::Goal) -> GoalResponse + Send>;
pub(super) type CancelFn<A> = Box<dyn FnMut(&ServerGoalHandle<A>) -> CancelResponse + Send>;

type AsyncExecuteFn<A> = Box<
    dyn FnMut(ServerGoalHandle<A>) -> BoxFuture<'static, GoalEnd<<A as ActionType>::Result>> + Send,
>;

/// The execute callback, plain or async.
pub(crate) enum ExecuteFn<A: ActionType> {
    Sync(Box<dyn FnMut(ServerGoalHandle<A>) + Send>),
    Async(AsyncExecuteFn<A>),
}

/// The three callbacks. They are `FnMut`, so they sit behind one lock and at most one runs at a
/// time (an async execution's future runs outside it).
pub(super) struct Handlers<A: ActionType> {
    pub(super) goal: GoalFn<A>,
    pub(super) cancel: CancelFn<A>,
    pub(super) execute: ExecuteFn<A>,
}

/// The closures an action server needs, converted for storage.
pub(crate) fn handlers<A: ActionType>(
    goal: impl FnMut(&GoalUuid, &A::Goal) -> GoalResponse + Send + 'static,
    cancel: impl FnMut(&ServerGoalHandle<A>) -> CancelResponse + Send + 'static,
) -> (GoalFn<A>, CancelFn<A>) {
    (Box::new(goal), Box::new(cancel))
}

/// An async execute callback, converted for storage.
pub(crate) fn async_execute<A: ActionType, F, Fut>(mut f: F) -> ExecuteFn<A>
where
    F: FnMut(ServerGoalHandle<A>) -> Fut + Send + 'static,
    Fut: Future<Output = GoalEnd<A::Result>> + Send + 'static,
{
    ExecuteFn::Async(Box::new(move |h| f(h).boxed()))
}

/// A plain execute callback, converted for storage.
pub(crate) fn sync_execute<A: ActionType>(
    f: impl FnMut(ServerGoalHandle<A>) + Send + 'static,
) -> ExecuteFn<A> {
    ExecuteFn::Sync(Box::new(f))
}
