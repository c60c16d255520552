//! The ROS graph as a transport sees it: nodes and their endpoints, the queries built on them
//! (`ros2 node list`, `ros2 topic list -t`, `count_subscribers`, `service_is_ready`), and the
//! notification that something changed.
//!
//! A transport only lists what it knows — [`Transport::graph`](super::Transport::graph)
//! returns one [`GraphSnapshot`] — and bumps its [`GraphNotifier`] on every change; every
//! query is answered here, the same way for every transport.

use std::collections::BTreeMap;

use tokio::sync::watch;

use super::Gid;
use crate::msg::TypeHash;
use crate::qos::QoSProfile;

/// A node's name and namespace.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeName {
    /// The name (`talker`).
    pub name: String,
    /// The absolute namespace (`/`, `/robot1`).
    pub namespace: String,
}

impl NodeName {
    /// `namespace/name`, as `ros2 node list` prints it.
    pub fn fully_qualified(&self) -> String {
        if self.namespace == "/" {
            format!("/{}", self.name)
        } else {
            format!("{}/{}", self.namespace, self.name)
        }
    }
}

/// What an endpoint is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EndpointKind {
    /// A topic publisher.
    Publisher,
    /// A topic subscription.
    Subscription,
    /// A service server.
    Service,
    /// A service client.
    Client,
}

/// One endpoint on the graph (`rmw_topic_endpoint_info_t`, extended to services).
#[derive(Debug, Clone, PartialEq)]
pub struct EndpointInfo {
    /// The node it belongs to.
    pub node: NodeName,
    /// Fully qualified topic or service name.
    pub name: String,
    /// What it is.
    pub kind: EndpointKind,
    /// `pkg/msg/Name` (for services, `pkg/srv/Name`).
    pub type_name: String,
    /// The type's RIHS01 hash (all zeros when the peer did not announce one).
    pub type_hash: TypeHash,
    /// Its GID.
    pub gid: Gid,
    /// Its (resolved) QoS.
    pub qos: QoSProfile,
}

impl EndpointInfo {
    /// The graph entry of an endpoint: the one way transports (and tests) build one.
    ///
    /// `name` is the fully qualified topic or service name, `type_name` the ROS type name
    /// (`pkg/msg/Name`, `pkg/srv/Name` for services), `type_hash` its RIHS01 hash (all zeros
    /// when unknown), and `qos` the endpoint's resolved profile.
    ///
    /// ```
    /// use rclev::msg::TypeHash;
    /// use rclev::transport::{EndpointInfo, EndpointKind, Gid, NodeName};
    /// use rclev::QoSProfile;
    ///
    /// let node = NodeName { name: "talker".into(), namespace: "/".into() };
    /// let info = EndpointInfo::new(
    ///     node,
    ///     "/chatter",
    ///     EndpointKind::Publisher,
    ///     "std_msgs/msg/String",
    ///     TypeHash([0; 32]),
    ///     Gid([1; 16]),
    ///     QoSProfile::default(),
    /// );
    /// assert_eq!(info.node.fully_qualified(), "/talker");
    /// assert_eq!(info.type_name, "std_msgs/msg/String");
    /// ```
    pub fn new(
        node: NodeName,
        name: impl Into<String>,
        kind: EndpointKind,
        type_name: impl Into<String>,
        type_hash: TypeHash,
        gid: Gid,
        qos: QoSProfile,
    ) -> Self {
        Self {
            node,
            name: name.into(),
            kind,
            type_name: type_name.into(),
            type_hash,
            gid,
            qos,
        }
    }
}

/// The graph at one moment.
#[derive(Debug, Clone, Default)]
pub struct GraphSnapshot {
    /// Every node known.
    pub nodes: Vec<NodeName>,
    /// Every endpoint known.
    pub endpoints: Vec<EndpointInfo>,
}

impl GraphSnapshot {
    fn names_and_types(&self, kinds: &[EndpointKind]) -> Vec<(String, Vec<String>)> {
        let mut out: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for e in self.endpoints.iter().filter(|e| kinds.contains(&e.kind)) {
            let types = out.entry(&e.name).or_default();
            if !types.contains(&e.type_name) {
                types.push(e.type_name.clone());
            }
        }
        out.into_iter()
            .map(|(name, mut types)| {
                types.sort();
                (name.to_string(), types)
            })
            .collect()
    }

    /// Topics with their types, sorted (`ros2 topic list -t`).
    pub fn topic_names_and_types(&self) -> Vec<(String, Vec<String>)> {
        self.names_and_types(&[EndpointKind::Publisher, EndpointKind::Subscription])
    }

    /// Services with their types, sorted (`ros2 service list -t`).
    pub fn service_names_and_types(&self) -> Vec<(String, Vec<String>)> {
        self.names_and_types(&[EndpointKind::Service, EndpointKind::Client])
    }

    /// Endpoints of `kind` on `name`.
    pub fn endpoints_of(&self, name: &str, kind: EndpointKind) -> Vec<EndpointInfo> {
        self.endpoints
            .iter()
            .filter(|e| e.kind == kind && e.name == name)
            .cloned()
            .collect()
    }

    /// How many endpoints of `kind` are on `name`.
    pub fn count(&self, name: &str, kind: EndpointKind) -> usize {
        self.endpoints
            .iter()
            .filter(|e| e.kind == kind && e.name == name)
            .count()
    }

    /// Nodes, sorted by fully qualified name (`ros2 node list`).
    pub fn node_names(&self) -> Vec<NodeName> {
        let mut nodes = self.nodes.clone();
        nodes.sort();
        nodes.dedup();
        nodes
    }
}

/// Tells whoever waits that the graph changed: a version counter behind a `watch` channel, so
/// a waiter that looks at the graph, then waits, cannot miss a change in between.
#[derive(Debug)]
pub struct GraphNotifier {
    version: watch::Sender<u64>,
}

impl Default for GraphNotifier {
    fn default() -> Self {
        Self {
            version: watch::channel(0).0,
        }
    }
}

impl GraphNotifier {
    /// Records a change and wakes every waiter.
    pub fn changed(&self) {
        self.version.send_modify(|v| *v += 1);
    }

    /// A receiver whose `changed().await` returns after the next change.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.version.subscribe()
    }
}
