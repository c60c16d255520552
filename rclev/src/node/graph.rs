//! Graph queries of a node: what the transport knows about other nodes and their endpoints.

use std::time::Duration;

use tokio::sync::watch;

use super::NodeState;
use crate::base::error::{Error, Result};
use crate::clock::{Clock, Lifeline};
use crate::qos::QosEventKind;
use crate::transport::{EndpointInfo, EndpointKind, GraphSnapshot, NodeName};

impl NodeState {
    /// The graph as the transport knows it now (every node and endpoint).
    pub fn graph(&self) -> GraphSnapshot {
        self.core.exec.context().transport().graph()
    }

    /// Every node on the graph, sorted (`ros2 node list`).
    pub fn get_node_names(&self) -> Vec<NodeName> {
        self.graph().node_names()
    }

    /// Every node on the graph as `(name, namespace)` pairs, sorted by namespace, then name
    /// (rclcpp's and rclpy's `get_node_names_and_namespaces`).
    pub fn get_node_names_and_namespaces(&self) -> Vec<(String, String)> {
        let mut nodes: Vec<(String, String)> = self
            .get_node_names()
            .into_iter()
            .map(|n| (n.name, n.namespace))
            .collect();
        nodes.sort_by(|a, b| (&a.1, &a.0).cmp(&(&b.1, &b.0)));
        nodes
    }

    /// Topics on the graph with their types, sorted (`ros2 topic list -t`).
    pub fn get_topic_names_and_types(&self) -> Vec<(String, Vec<String>)> {
        self.graph().topic_names_and_types()
    }

    /// Services on the graph with their types, sorted (`ros2 service list -t`).
    pub fn get_service_names_and_types(&self) -> Vec<(String, Vec<String>)> {
        self.graph().service_names_and_types()
    }

    /// How many publishers `topic` (expanded as this node would) has, of any type.
    pub fn count_publishers(&self, topic: &str) -> Result<usize> {
        let name = self.resolve_topic_name(topic)?;
        Ok(self.graph().count(&name, EndpointKind::Publisher))
    }

    /// How many subscriptions `topic` (expanded as this node would) has, of any type.
    pub fn count_subscribers(&self, topic: &str) -> Result<usize> {
        let name = self.resolve_topic_name(topic)?;
        Ok(self.graph().count(&name, EndpointKind::Subscription))
    }

    /// The publishers of `topic`, with their node, type, GID and QoS (`ros2 topic info -v`).
    pub fn get_publishers_info_by_topic(&self, topic: &str) -> Result<Vec<EndpointInfo>> {
        let name = self.resolve_topic_name(topic)?;
        Ok(self.graph().endpoints_of(&name, EndpointKind::Publisher))
    }

    /// The subscriptions of `topic`, with their node, type, GID and QoS.
    pub fn get_subscriptions_info_by_topic(&self, topic: &str) -> Result<Vec<EndpointInfo>> {
        let name = self.resolve_topic_name(topic)?;
        Ok(self.graph().endpoints_of(&name, EndpointKind::Subscription))
    }

    /// Resolves after the next change of the graph (a node or endpoint appeared or went), or
    /// with [`Error::Shutdown`] once the executor has shut down.
    pub async fn wait_for_graph_change(&self) -> Result<()> {
        let mut changes = self.core.exec.context().transport().graph_changes();
        changes.borrow_and_update();
        self.core
            .exec
            .life()
            .unless_ended(next_change(&mut changes))
            .await
    }

    /// Whether the node's transport ever reports QoS events of `kind` (the in-process
    /// transport does not watch deadlines or liveliness leases).
    pub fn supports_qos_event(&self, kind: QosEventKind) -> bool {
        self.core.exec.context().transport().supports_event(kind)
    }
}

/// Waits until `ready()` holds, re-checking it on every graph change (no polling), at most
/// `timeout` ([`Error::Timeout`] about `what` then; `None`: no limit), and with
/// [`Error::Shutdown`] once `life` ends. What `wait_for_service` and `wait_for_server` are
/// made of. The timeout runs on `clock` (the node's steady clock: virtual under a
/// `VirtualTimeExecutor`). Needs a Tokio runtime when a timeout is given.
pub(crate) async fn wait_on_graph(
    mut changes: watch::Receiver<u64>,
    life: &Lifeline,
    clock: &Clock,
    what: impl FnOnce() -> String,
    timeout: Option<Duration>,
    ready: impl Fn() -> bool,
) -> Result<()> {
    let wait = async {
        loop {
            // Marked seen before the check: a change after it wakes the wait below.
            changes.borrow_and_update();
            if ready() {
                return Ok(());
            }
            next_change(&mut changes).await?;
        }
    };
    let bounded = async {
        match timeout {
            None => wait.await,
            Some(after) => clock.timeout(after, wait).await.unwrap_or_else(|| {
                Err(Error::Timeout {
                    what: what(),
                    after,
                })
            }),
        }
    };
    life.unless_ended(bounded).await
}

/// The next graph change; an error once the transport has shut down.
async fn next_change(changes: &mut watch::Receiver<u64>) -> Result<()> {
    changes
        .changed()
        .await
        .map_err(|_| Error::Transport("the transport has shut down".into()))
}
