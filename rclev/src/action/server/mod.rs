//! The action server.
//!
//! - `mod.rs`: the user's [`ActionServerState`] and its options, creation, and the endpoint
//!   names the client shares.
//! - `callbacks.rs`: the goal, cancel and execute callbacks' verdicts and storage.
//! - `entity.rs`: `ServerInner`, the server proper: endpoints, goals, and the executable
//!   that drains requests.
//! - `requests.rs`: `send_goal` and `cancel_goal` handling.
//! - `results.rs`: goal transitions, results, `get_result` and result expiry.
//! - `goal_handle.rs`: [`ServerGoalHandle`], the execute callback's handle on a goal.
//!
//! Ground rules:
//! - `ServerInner::closed` is set while `goals` is held, and every path that adds a goal
//!   checks it under the same lock, so no goal is added after the server was closed.
//! - Locks are taken `handlers` before `goals`, never the other way round; no user callback
//!   runs while `goals` is held.
//! - A goal's expiry timer is never dropped while `goals` is held: dropping a timer takes the
//!   scheduler's lock.

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod callbacks;
mod entity;
mod goal_handle;
mod requests;
mod results;

pub(crate) use callbacks::{async_execute, handlers, sync_execute, ExecuteFn};
pub use callbacks::{CancelResponse, GoalEnd, GoalResponse};
pub use goal_handle::ServerGoalHandle;

use crate::action::wire::{action_service, action_topic, feedback_qos, status_qos};
use crate::action::{GoalState, GoalUuid};
use crate::base::error::Result;
use crate::base::sync::lock;
use crate::clock::ClockType;
use crate::interfaces::action_msgs::msg::GoalStatusArray;
use crate::interfaces::action_msgs::srv::CancelGoal;
use crate::msg::ActionType;
use crate::node::entity::bind_entity;
use crate::node::events::WarningHook;
use crate::node::WorkerCore;
use callbacks::{CancelFn, GoalFn, Handlers};
use entity::ServerInner;

/// Server options.
#[derive(Debug, Clone)]
pub struct ActionServerOptions {
    /// How long a finished goal's result is kept for `get_result`. Default 15 minutes, as in
    /// rcl_action. A timeout beyond [`MAX_PERIOD`](crate::timer::MAX_PERIOD) (~292 years, e.g.
    /// `Duration::MAX`) keeps results for the server's life.
    pub result_timeout: Duration,
    /// The clock that times result expiry. Default: the node's ROS time (so it follows `/clock`
    /// under simulation time).
    pub clock: ClockType,
}

impl Default for ActionServerOptions {
    fn default() -> Self {
        Self {
            result_timeout: Duration::from_secs(15 * 60),
            clock: ClockType::RosTime,
        }
    }
}

/// An action server. Dropping it removes its endpoints: clients waiting for results get
/// [`Error::ServiceUnavailable`](crate::Error::ServiceUnavailable), and goal handles still held
/// by executions become inert.
///
/// ```
/// use rclev::interfaces::example_interfaces::action::{Fibonacci, Fibonacci_Goal, Fibonacci_Result};
/// use rclev::{ActionServerOptions, CancelResponse, GoalResponse, GoalState, SpinOptions};
/// use std::time::Duration;
///
/// let executor = rclev::Context::default().create_basic_executor();
/// let node = executor.create_node("fibonacci_server")?;
/// let (goals, accepted) = std::sync::mpsc::channel();
/// let server = node.create_action_server_with_callback::<Fibonacci, _, _, _>(
///     "fibonacci",
///     ActionServerOptions::default(),
///     |_id, _goal| GoalResponse::AcceptAndDefer, // accepted now, started later
///     |_goal| CancelResponse::Accept,
///     move |goal| goals.send(goal).unwrap(),
/// )?;
/// assert_eq!(server.action_name(), "/fibonacci");
/// let client = node.create_action_client::<Fibonacci>("fibonacci")?;
/// let sent = client.send_goal(Fibonacci_Goal { order: 1 });
/// let (tx, rx) = std::sync::mpsc::channel();
/// let errors = executor.spin(
///     SpinOptions::default()
///         .until_promise_resolved(async move { tx.send(sent.await.map(|_| ())).unwrap() })
///         .timeout(Duration::from_secs(5)),
/// );
/// assert!(errors.is_empty());
/// rx.try_recv().unwrap()?;
/// let goal = accepted.try_recv().unwrap();
/// assert_eq!(server.goal_states(), [(goal.goal_id(), GoalState::Accepted)]);
/// goal.execute()?;
/// assert_eq!(server.goal_states(), [(goal.goal_id(), GoalState::Executing)]);
/// goal.succeed(Fibonacci_Result { sequence: vec![0, 1] })?;
/// // Kept, for clients to fetch the result, until `result_timeout` has passed.
/// assert_eq!(server.goal_states(), [(goal.goal_id(), GoalState::Succeeded)]);
/// # Ok::<(), rclev::Error>(())
/// ```
pub struct ActionServerState<A: ActionType> {
    inner: Arc<ServerInner<A>>,
}

/// A shared handle to an action server.
pub type ActionServer<A> = crate::EntityHandle<ActionServerState<A>>;

pub(crate) fn create_action_server<A: ActionType>(
    core: &Arc<WorkerCore>,
    name: &str,
    options: ActionServerOptions,
    goal: GoalFn<A>,
    cancel: CancelFn<A>,
    execute: ExecuteFn<A>,
) -> Result<ActionServer<A>> {
    let full = core.node.expand(name)?;
    let port = &core.node.port;
    let inner = bind_entity(core, true, |dispatch| {
        let d = || dispatch.clone() as Arc<dyn crate::transport::ReadyHook>;
        let send_goal = port.create_service(
            &action_service::<A::SendGoal>(core, &full, "send_goal")?,
            d(),
        )?;
        let cancel_goal = port.create_service(
            &action_service::<CancelGoal>(core, &full, "cancel_goal")?,
            d(),
        )?;
        let get_result = port.create_service(
            &action_service::<A::GetResult>(core, &full, "get_result")?,
            d(),
        )?;
        let feedback = port.create_publisher(
            &action_topic::<A::FeedbackMessage>(core, &full, "feedback", feedback_qos())?,
            Arc::new(WarningHook(format!("action server {full}"))),
        )?;
        let status = port.create_publisher(
            &action_topic::<GoalStatusArray>(core, &full, "status", status_qos())?,
            Arc::new(WarningHook(format!("action server {full}"))),
        )?;
        Ok(Arc::new_cyclic(|me| ServerInner {
            name: full.clone(),
            send_goal,
            cancel_goal,
            get_result,
            feedback,
            status,
            dispatch,
            goals: Mutex::new(HashMap::new()),
            closed: AtomicBool::new(false),
            handlers: Mutex::new(Handlers {
                goal,
                cancel,
                execute,
            }),
            options,
            worker: core.clone(),
            me: me.clone(),
        }))
    })?;
    inner.publish_status();
    Ok(crate::EntityHandle::new(ActionServerState { inner }))
}

impl<A: ActionType> Drop for ActionServerState<A> {
    fn drop(&mut self) {
        self.inner.close();
    }
}

impl<A: ActionType> ActionServerState<A> {
    /// The fully qualified action name.
    pub fn action_name(&self) -> &str {
        &self.inner.name
    }

    /// The goals the server knows (including finished ones until their results expire).
    pub fn goal_states(&self) -> Vec<(GoalUuid, GoalState)> {
        lock(&self.inner.goals)
            .iter()
            .map(|(id, g)| (*id, g.state))
            .collect()
    }
}

impl<A: ActionType> std::fmt::Debug for ActionServerState<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActionServer")
            .field("name", &self.inner.name)
            .finish()
    }
}
