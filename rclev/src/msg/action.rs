//! The messages of the ROS 2 action protocol (`action_msgs`, `unique_identifier_msgs`) and the
//! per-action request/response wrappers, plus `example_interfaces/action/Fibonacci`.
//!
//! The wrappers are generic over the action's goal/result/feedback messages. In process their
//! types are told apart by `TypeId`; their `TYPE_NAME`s are placeholders that a DDS transport
//! will have to replace with the per-action names (`…::dds_::Fibonacci_SendGoal_Request_`).

use serde::{Deserialize, Serialize};

use super::{Message, TimeMsg};

/// `unique_identifier_msgs/msg/UUID`: a goal's id.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
pub struct GoalUuid {
    /// The 16 bytes.
    pub uuid: [u8; 16],
}

impl GoalUuid {
    /// A random (version 4) id.
    pub fn random() -> Self {
        Self {
            uuid: uuid::Uuid::new_v4().into_bytes(),
        }
    }
    /// Whether this is the all-zero id (in a cancel request: "every goal").
    pub fn is_zero(&self) -> bool {
        self.uuid == [0; 16]
    }
}

impl std::fmt::Display for GoalUuid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", uuid::Uuid::from_bytes(self.uuid))
    }
}

impl Message for GoalUuid {
    const TYPE_NAME: &'static str = "unique_identifier_msgs/msg/UUID";
}

/// `action_msgs/msg/GoalInfo`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GoalInfo {
    /// The goal's id.
    pub goal_id: GoalUuid,
    /// When the server accepted it.
    pub stamp: TimeMsg,
}
impl Message for GoalInfo {
    const TYPE_NAME: &'static str = "action_msgs/msg/GoalInfo";
}

/// `action_msgs/msg/GoalStatus`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GoalStatus {
    /// Which goal.
    pub goal_info: GoalInfo,
    /// One of the `STATUS_*` constants ([`GoalState`](crate::action::GoalState) as `i8`).
    pub status: i8,
}
impl Message for GoalStatus {
    const TYPE_NAME: &'static str = "action_msgs/msg/GoalStatus";
}

/// `action_msgs/msg/GoalStatusArray`, published on `<action>/_action/status`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GoalStatusArray {
    /// Every goal the server still knows.
    pub status_list: Vec<GoalStatus>,
}
impl Message for GoalStatusArray {
    const TYPE_NAME: &'static str = "action_msgs/msg/GoalStatusArray";
}

/// `action_msgs/srv/CancelGoal` request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CancelGoalRequest {
    /// The goal (a zero id with a zero stamp: every goal).
    pub goal_info: GoalInfo,
}
impl Message for CancelGoalRequest {
    const TYPE_NAME: &'static str = "action_msgs/srv/CancelGoal_Request";
}

/// `action_msgs/srv/CancelGoal` response.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CancelGoalResponse {
    /// 0 none (accepted), 1 rejected, 2 unknown goal id, 3 goal terminated.
    pub return_code: i8,
    /// The goals now canceling.
    pub goals_canceling: Vec<GoalInfo>,
}
impl Message for CancelGoalResponse {
    const TYPE_NAME: &'static str = "action_msgs/srv/CancelGoal_Response";
}

/// `<Action>_SendGoal` request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(bound = "G: Message")]
pub struct SendGoalRequest<G> {
    /// The id the client chose.
    pub goal_id: GoalUuid,
    /// The goal.
    pub goal: G,
}
impl<G: Message> Message for SendGoalRequest<G> {
    const TYPE_NAME: &'static str = "rclev/action/SendGoal_Request";
}

/// `<Action>_SendGoal` response.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SendGoalResponse {
    /// Whether the server accepted the goal.
    pub accepted: bool,
    /// When.
    pub stamp: TimeMsg,
}
impl Message for SendGoalResponse {
    const TYPE_NAME: &'static str = "rclev/action/SendGoal_Response";
}

/// `<Action>_GetResult` request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct GetResultRequest {
    /// Which goal.
    pub goal_id: GoalUuid,
}
impl Message for GetResultRequest {
    const TYPE_NAME: &'static str = "rclev/action/GetResult_Request";
}

/// `<Action>_GetResult` response.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(bound = "R: Message")]
pub struct GetResultResponse<R> {
    /// The goal's final status (0 if the server does not know the goal).
    pub status: i8,
    /// The result.
    pub result: R,
}
impl<R: Message> Message for GetResultResponse<R> {
    const TYPE_NAME: &'static str = "rclev/action/GetResult_Response";
}

/// `<Action>_FeedbackMessage`, published on `<action>/_action/feedback`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(bound = "F: Message")]
pub struct FeedbackMessage<F> {
    /// Which goal.
    pub goal_id: GoalUuid,
    /// The feedback.
    pub feedback: F,
}
impl<F: Message> Message for FeedbackMessage<F> {
    const TYPE_NAME: &'static str = "rclev/action/FeedbackMessage";
}

/// A ROS 2 action type: goal, result and feedback messages.
pub trait ActionType: Send + Sync + 'static {
    /// The goal.
    type Goal: Message;
    /// The result (its `Default` is what an unknown or expired goal's result reads as).
    type Result: Message + Default;
    /// The feedback.
    type Feedback: Message;
    /// The ROS 2 type name, e.g. `example_interfaces/action/Fibonacci`.
    const TYPE_NAME: &'static str;
}

/// `example_interfaces/action/Fibonacci` goal.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FibonacciGoal {
    /// How many numbers of the sequence to compute.
    pub order: i32,
}
impl Message for FibonacciGoal {
    const TYPE_NAME: &'static str = "example_interfaces/action/Fibonacci_Goal";
}

/// `example_interfaces/action/Fibonacci` result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FibonacciResult {
    /// The sequence.
    pub sequence: Vec<i32>,
}
impl Message for FibonacciResult {
    const TYPE_NAME: &'static str = "example_interfaces/action/Fibonacci_Result";
}

/// `example_interfaces/action/Fibonacci` feedback.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FibonacciFeedback {
    /// The sequence so far.
    pub sequence: Vec<i32>,
}
impl Message for FibonacciFeedback {
    const TYPE_NAME: &'static str = "example_interfaces/action/Fibonacci_Feedback";
}

/// `example_interfaces/action/Fibonacci`.
#[derive(Debug)]
pub struct Fibonacci;
impl ActionType for Fibonacci {
    type Goal = FibonacciGoal;
    type Result = FibonacciResult;
    type Feedback = FibonacciFeedback;
    const TYPE_NAME: &'static str = "example_interfaces/action/Fibonacci";
}
