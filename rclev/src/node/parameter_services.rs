//! What makes a node's parameters reachable from other processes, as rclcpp and rclpy nodes
//! do by default: the six parameter services (`~/get_parameters`, `~/get_parameter_types`,
//! `~/set_parameters`, `~/set_parameters_atomically`, `~/describe_parameters`,
//! `~/list_parameters` — what `ros2 param` and rclpy's `AsyncParameterClient` call) and the
//! `/parameter_events` publisher.
//!
//! Where rclcpp and rclpy answer differently, rclpy's way is taken: a name that is not
//! declared gets a `PARAMETER_NOT_SET` value (or an empty descriptor) in its place, so that
//! the answer lines up with the request (rclcpp answers an empty list then).
//!
//! The services run on the node's default worker and reach the node through a weak
//! reference: the node owns them, and they never keep it alive.

use std::sync::{Arc, Weak};

use super::service::{create_service, ServiceCallback};
use super::{NodeState, Publisher, Service};
use crate::base::error::Result;
use crate::endpoint::IntoPrimitiveOptions;
use crate::interfaces::rcl_interfaces::{msg as rcl, srv};
use crate::msg::ServiceType;
use crate::parameter::{Parameter, ParameterChange, ParameterError, ParameterValue, Parameters};
use crate::qos::QoSProfile;

/// The node's parameter services; dropping it withdraws them.
pub(crate) struct ParameterServices {
    _get: Service<srv::GetParameters>,
    _get_types: Service<srv::GetParameterTypes>,
    _set: Service<srv::SetParameters>,
    _set_atomically: Service<srv::SetParametersAtomically>,
    _describe: Service<srv::DescribeParameters>,
    _list: Service<srv::ListParameters>,
}

/// Offers `~/<name>`, answered by `answer` with the node's parameters (a default response
/// once the node is gone).
fn serve<S>(
    node: &Arc<NodeState>,
    name: &str,
    answer: impl Fn(&Parameters, S::Request) -> S::Response + Send + 'static,
) -> Result<Service<S>>
where
    S: ServiceType,
    S::Response: Default,
{
    let weak: Weak<NodeState> = Arc::downgrade(node);
    create_service::<S>(
        &node.core,
        format!("~/{name}").qos(QoSProfile::parameters()),
        ServiceCallback::plain(move |request| match weak.upgrade() {
            Some(node) => answer(node.parameters(), request),
            None => S::Response::default(),
        }),
    )
}

fn result(outcome: std::result::Result<(), ParameterError>) -> rcl::SetParametersResult {
    match outcome {
        Ok(()) => rcl::SetParametersResult {
            successful: true,
            reason: String::new(),
        },
        Err(e) => rcl::SetParametersResult {
            successful: false,
            reason: e.to_string(),
        },
    }
}

/// A requested change: a value to set, or `None` to undeclare (`PARAMETER_NOT_SET`).
type Requested = (String, Option<ParameterValue>);

fn requested(p: &rcl::Parameter) -> std::result::Result<Requested, ParameterError> {
    ParameterValue::from_msg(&p.value)
        .map(|value| (p.name.clone(), value))
        .map_err(|reason| ParameterError::OutOfRange {
            name: p.name.clone(),
            reason,
        })
}

/// Sets or undeclares one parameter.
fn apply_one(params: &Parameters, p: &rcl::Parameter) -> std::result::Result<(), ParameterError> {
    match requested(p)? {
        (name, Some(value)) => params.set(&name, value),
        (name, None) => params.undeclare(&name),
    }
}

/// All of them or none: the values are set at once (checked against every descriptor and
/// set-callback), after checking that every undeclaration would be allowed; then those.
fn apply_atomically(
    params: &Parameters,
    ps: &[rcl::Parameter],
) -> std::result::Result<(), ParameterError> {
    let requested: Vec<Requested> = ps
        .iter()
        .map(requested)
        .collect::<std::result::Result<_, _>>()?;
    let (sets, deletions): (Vec<_>, Vec<_>) = requested.into_iter().partition(|(_, v)| v.is_some());
    for (name, _) in &deletions {
        params.check_undeclare(name)?;
    }
    let sets: Vec<Parameter> = sets
        .into_iter()
        .filter_map(|(name, value)| value.map(|value| Parameter { name, value }))
        .collect();
    if !sets.is_empty() {
        params.set_all(&sets)?;
    }
    for (name, _) in &deletions {
        params.undeclare(name)?;
    }
    Ok(())
}

impl ParameterServices {
    pub(crate) fn start(node: &Arc<NodeState>) -> Result<Self> {
        Ok(Self {
            _get: serve::<srv::GetParameters>(node, "get_parameters", |params, req| {
                srv::GetParameters_Response {
                    values: req
                        .names
                        .iter()
                        .map(|n| params.get(n).map(|v| v.to_msg()).unwrap_or_default())
                        .collect(),
                }
            })?,
            _get_types: serve::<srv::GetParameterTypes>(
                node,
                "get_parameter_types",
                |params, req| srv::GetParameterTypes_Response {
                    types: req
                        .names
                        .iter()
                        .map(|n| {
                            params
                                .get(n)
                                .map_or(rcl::ParameterType::PARAMETER_NOT_SET, |v| v.type_id())
                        })
                        .collect(),
                },
            )?,
            _set: serve::<srv::SetParameters>(node, "set_parameters", |params, req| {
                srv::SetParameters_Response {
                    results: req
                        .parameters
                        .iter()
                        .map(|p| result(apply_one(params, p)))
                        .collect(),
                }
            })?,
            _set_atomically: serve::<srv::SetParametersAtomically>(
                node,
                "set_parameters_atomically",
                |params, req| srv::SetParametersAtomically_Response {
                    result: result(apply_atomically(params, &req.parameters)),
                },
            )?,
            _describe: serve::<srv::DescribeParameters>(
                node,
                "describe_parameters",
                |params, req| srv::DescribeParameters_Response {
                    descriptors: req
                        .names
                        .iter()
                        .map(|n| match (params.describe(n), params.get(n)) {
                            (Some(d), Some(v)) => d.to_msg(n, &v),
                            _ => rcl::ParameterDescriptor::default(),
                        })
                        .collect(),
                },
            )?,
            _list: serve::<srv::ListParameters>(node, "list_parameters", |params, req| {
                let (names, prefixes) = params.list(&req.prefixes, req.depth);
                srv::ListParameters_Response {
                    result: rcl::ListParametersResult { names, prefixes },
                }
            })?,
        })
    }
}

/// The `/parameter_events` message of a change of node `node`'s parameters at `stamp`.
pub(crate) fn parameter_event(
    change: &ParameterChange,
    node: &str,
    stamp: crate::interfaces::builtin_interfaces::msg::Time,
) -> rcl::ParameterEvent {
    let mut event = rcl::ParameterEvent {
        stamp,
        node: node.to_string(),
        ..Default::default()
    };
    match change {
        ParameterChange::New(p) => event.new_parameters.push(p.to_msg()),
        ParameterChange::Changed(ps) => {
            event.changed_parameters = ps.iter().map(Parameter::to_msg).collect()
        }
        ParameterChange::Deleted(p) => event.deleted_parameters.push(p.to_msg()),
    }
    event
}

/// Publishes every change of `params` on `/parameter_events`, stamped with `clock`, while
/// `publisher` (which the node owns) lives: the store may outlive the node (a
/// `TypedParameter` keeps it), and must not keep the node's publisher, and so the node, on the
/// graph.
pub(crate) fn publish_events(
    params: &Parameters,
    publisher: &Publisher<rcl::ParameterEvent>,
    node: String,
    clock: crate::clock::Clock,
) {
    let publisher = crate::EntityHandle::downgrade(publisher);
    params.observe(move |change| {
        let Some(publisher) = publisher.upgrade() else {
            return;
        };
        let event = parameter_event(change, &node, clock.now().to_msg());
        // Best effort, as in rclcpp: a change is not undone because its event was not sent.
        let _ = publisher.publish(event);
    });
}
