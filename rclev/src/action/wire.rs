//! The action protocol's five endpoints as ROS 2 names them (`<action>/_action/<suffix>`),
//! with their QoS, for the server and the client alike.

use crate::base::error::Result;
use crate::endpoint::IntoPrimitiveOptions;
use crate::msg::{Message, ServiceType};
use crate::node::entity::{service_endpoint, topic_endpoint};
use crate::node::WorkerCore;
use crate::qos::QoSProfile;
use crate::transport::{ServiceEndpoint, TopicEndpoint};

/// A topic of action `name` (already expanded): `feedback` or `status`.
pub(crate) fn action_topic<T: Message>(
    core: &WorkerCore,
    name: &str,
    suffix: &str,
    qos: QoSProfile,
) -> Result<TopicEndpoint> {
    topic_endpoint::<T>(core, format!("{name}/_action/{suffix}").qos(qos))
}

/// One of the three services of action `name`: `send_goal`, `cancel_goal`, `get_result`, on
/// the services' default QoS.
pub(crate) fn action_service<S: ServiceType>(
    core: &WorkerCore,
    name: &str,
    suffix: &str,
) -> Result<ServiceEndpoint> {
    service_endpoint::<S>(
        core,
        format!("{name}/_action/{suffix}").qos(QoSProfile::services_default()),
    )
}

/// The status topic's QoS (rcl_action's): keep last 1, reliable, transient local.
pub(crate) fn status_qos() -> QoSProfile {
    QoSProfile::default().keep_last(1).transient_local()
}

/// The feedback topic's QoS on the server: rcl_action's default profile.
pub(crate) fn feedback_qos() -> QoSProfile {
    QoSProfile::default()
}

/// The feedback topic's QoS on the client: keep all, so a burst of feedback over many goals
/// is not cut to the last ten before the worker takes it (history depth does not take part
/// in matching).
pub(crate) fn client_feedback_qos() -> QoSProfile {
    QoSProfile::default().keep_all()
}
