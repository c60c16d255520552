//! A managed node's communication interface, as rcl_lifecycle's `com_interface.c` and
//! rclcpp_lifecycle/rclpy answer it: the five services and the `~/transition_event` messages.
//!
//! The services run on the node's default worker and reach the node through a weak reference:
//! the node owns them, and they never keep it alive. `~/change_state` is asynchronous: its
//! future runs the whole transition (async callbacks included) on the worker's task and answers
//! when the transition has ended, so the other services keep answering meanwhile (`get_state`
//! then says `configuring`, …).

use std::sync::{Arc, Weak};

use super::LifecycleNodeState;
use crate::base::error::Result;
use crate::base::lifecycle_state::{CallbackReturn, State, Transition, TransitionRequest};
use crate::endpoint::IntoPrimitiveOptions;
use crate::interfaces::lifecycle_msgs::{msg, srv};
use crate::node::Service;
use crate::qos::QoSProfile;

/// The node's lifecycle services; dropping it withdraws them.
pub(super) struct LifecycleServices {
    _change_state: Service<srv::ChangeState>,
    _get_state: Service<srv::GetState>,
    _get_available_states: Service<srv::GetAvailableStates>,
    _get_available_transitions: Service<srv::GetAvailableTransitions>,
    _get_transition_graph: Service<srv::GetAvailableTransitions>,
}

/// `lifecycle_msgs/msg/State` of `state`.
pub(super) fn state_msg(state: State) -> msg::State {
    msg::State {
        id: state.id(),
        label: state.label().to_string(),
    }
}

/// `lifecycle_msgs/msg/TransitionDescription` of `t`.
pub(super) fn description(t: &Transition) -> msg::TransitionDescription {
    msg::TransitionDescription {
        transition: msg::Transition {
            id: t.id,
            label: t.label.to_string(),
        },
        start_state: state_msg(t.start),
        goal_state: state_msg(t.goal),
    }
}

/// The `~/transition_event` message of a step from `start` to `goal`: as rcl fills it, with
/// only the two states (timestamp 0, an empty transition).
pub(super) fn event(start: State, goal: State) -> msg::TransitionEvent {
    msg::TransitionEvent {
        timestamp: 0,
        transition: msg::Transition::default(),
        start_state: state_msg(start),
        goal_state: state_msg(goal),
    }
}

/// Offers `~/<name>` answered by `answer` with the node (a default response once it is gone).
fn serve<S>(
    node: &Arc<LifecycleNodeState>,
    name: &str,
    answer: impl Fn(&LifecycleNodeState) -> S::Response + Send + 'static,
) -> Result<Service<S>>
where
    S: crate::msg::ServiceType,
    S::Response: Default,
{
    let weak: Weak<LifecycleNodeState> = Arc::downgrade(node);
    node.node().create_service::<S, _>(
        format!("~/{name}").qos(QoSProfile::services_default()),
        move |_request: S::Request| match weak.upgrade() {
            Some(node) => answer(&node),
            None => S::Response::default(),
        },
    )
}

impl LifecycleServices {
    pub(super) fn start(node: &Arc<LifecycleNodeState>) -> Result<Self> {
        let weak = Arc::downgrade(node);
        let change_state = node.node().create_async_service::<srv::ChangeState, _, _>(
            "~/change_state".qos(QoSProfile::services_default()),
            move |request: srv::ChangeState_Request| {
                let node = weak.upgrade();
                async move {
                    let Some(node) = node else {
                        return srv::ChangeState_Response { success: false };
                    };
                    let transition = TransitionRequest::from_id_and_label(
                        request.transition.id,
                        &request.transition.label,
                    );
                    // As rclcpp and rclpy answer: whether the callback succeeded.
                    let outcome = node.run_transition(transition).await;
                    srv::ChangeState_Response {
                        success: matches!(outcome, Ok((_, CallbackReturn::Success))),
                    }
                }
            },
        )?;
        Ok(Self {
            _change_state: change_state,
            _get_state: serve::<srv::GetState>(node, "get_state", |node| srv::GetState_Response {
                current_state: state_msg(node.current_state()),
            })?,
            _get_available_states: serve::<srv::GetAvailableStates>(
                node,
                "get_available_states",
                |_| srv::GetAvailableStates_Response {
                    available_states: State::ALL.into_iter().map(state_msg).collect(),
                },
            )?,
            _get_available_transitions: serve::<srv::GetAvailableTransitions>(
                node,
                "get_available_transitions",
                |node| srv::GetAvailableTransitions_Response {
                    available_transitions: node
                        .current_state()
                        .transitions()
                        .map(description)
                        .collect(),
                },
            )?,
            _get_transition_graph: serve::<srv::GetAvailableTransitions>(
                node,
                "get_transition_graph",
                |_| srv::GetAvailableTransitions_Response {
                    available_transitions: Transition::graph().iter().map(description).collect(),
                },
            )?,
        })
    }
}
