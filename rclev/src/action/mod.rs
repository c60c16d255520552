//! ROS 2 actions on the executor: [`ActionServer`] and [`ActionClient`].
//!
//! The protocol is ROS 2's: services `<action>/_action/send_goal`, `cancel_goal` and
//! `get_result`, topics `<action>/_action/feedback` and `status`. Each server or client is one
//! entity with one `EntityDispatch` shared by all five endpoints, so it is delivered, coalesced
//! and run like any other entity, on any worker. Finished goals keep their result for
//! `result_timeout`, then expire through a one-shot timer on the executor's shared scheduler
//! (steady or ROS time, including simulated time); the timers belong to the server and hold
//! it weakly, so dropping the server or the node first never touches freed state.

mod client;
mod create;
mod server;
mod wire;

pub use crate::base::goal_state::{GoalEvent, GoalState};

pub(crate) use client::create_action_client;
pub use client::{ActionClient, ActionClientState, ClientGoalHandle, FeedbackStream};

/// A goal's id: `unique_identifier_msgs/msg/UUID`.
pub type GoalUuid = crate::interfaces::unique_identifier_msgs::msg::UUID;
pub(crate) use server::{async_execute, create_action_server, handlers, sync_execute, ExecuteFn};
pub use server::{
    ActionServer, ActionServerOptions, ActionServerState, CancelResponse, GoalEnd, GoalResponse,
    ServerGoalHandle,
};
