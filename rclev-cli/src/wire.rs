//! The transport the CLI's ROS 2 tools use, chosen as ROS 2 chooses its middleware:
//! `RMW_IMPLEMENTATION` (unset: DDS; `rmw_zenoh_cpp`: Zenoh, when built with the `zenoh`
//! feature), read by [`rclev_rmw::Rmw::from_env`].

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use rclev::qos::QosEventKind;
use rclev::transport::{GraphSnapshot, NodeName, NodePort, Transport};
use rclev::Result;
use rclev_rmw::Rmw;

/// One of rclev's wire transports, with what the graph verbs ask beyond [`Transport`].
#[derive(Clone)]
pub(crate) enum CliTransport {
    /// rclev-dds.
    Dds(Arc<rclev_dds::DdsTransport>),
    /// rclev-zenoh.
    #[cfg(feature = "zenoh")]
    Zenoh(Arc<rclev_zenoh::ZenohTransport>),
}

impl CliTransport {
    /// The transport `RMW_IMPLEMENTATION` names, set up from the environment.
    pub fn from_env() -> Result<Self> {
        match Rmw::from_env()? {
            Rmw::Dds => Ok(Self::Dds(Arc::new(rclev_dds::DdsTransport::from_env()?))),
            #[cfg(feature = "zenoh")]
            Rmw::Zenoh => Ok(Self::Zenoh(Arc::new(
                rclev_zenoh::ZenohTransport::from_env()?,
            ))),
            #[cfg(not(feature = "zenoh"))]
            Rmw::Zenoh => Rmw::Zenoh.transport().map(|_| unreachable!()),
        }
    }

    /// The transport, for a [`rclev::Context`].
    pub fn shared(&self) -> Arc<dyn Transport> {
        match self {
            Self::Dds(t) => t.clone(),
            #[cfg(feature = "zenoh")]
            Self::Zenoh(t) => t.clone(),
        }
    }

    fn inner(&self) -> &dyn Transport {
        match self {
            Self::Dds(t) => &**t,
            #[cfg(feature = "zenoh")]
            Self::Zenoh(t) => &**t,
        }
    }

    /// The longest before [`graph_settled`](Self::graph_settled) holds, when the transport
    /// knows it does then whatever the peers do: over Zenoh, where settled means the graph
    /// holds everyone there was at the start. `None` over DDS, where nothing says how many
    /// participants there are, so settled means "everyone heard so far is complete".
    pub fn graph_settles_within(&self) -> Option<Duration> {
        match self {
            Self::Dds(_) => None,
            #[cfg(feature = "zenoh")]
            Self::Zenoh(_) => Some(rclev_zenoh::ZenohTransport::GRAPH_SETTLED_WITHIN),
        }
    }

    /// Whether discovery has caught up with what the peers announced (DDS: every peer's
    /// `ros_discovery_info` in; Zenoh: the peers the routers named met, and the initial
    /// liveliness query ended).
    pub fn graph_settled(&self) -> bool {
        match self {
            Self::Dds(t) => t.graph_settled(),
            #[cfg(feature = "zenoh")]
            Self::Zenoh(t) => t.graph_settled(),
        }
    }

    /// How many other processes discovery has found (DDS participants, Zenoh sessions with
    /// ROS entities).
    pub fn peer_count(&self) -> usize {
        match self {
            Self::Dds(t) => t.participant_count(),
            #[cfg(feature = "zenoh")]
            Self::Zenoh(t) => t.peer_count(),
        }
    }
}

/// `graph` with its node names, namespaces, endpoint names and type names passed through
/// [`rclev::printable`]: a valid ROS name is unchanged; any other comes out escaped
/// (`\u{1b}[2J`, `\n`), so that what the tools print is what a peer announced, not what
/// it makes the terminal do. (An escaped name matches no name a user types, or a valid one
/// the tools could subscribe to: nothing lost.)
pub(crate) fn printable_graph(mut graph: GraphSnapshot) -> GraphSnapshot {
    fn fix(s: &mut String) {
        if let std::borrow::Cow::Owned(escaped) = rclev::printable(s, usize::MAX) {
            *s = escaped;
        }
    }
    for node in &mut graph.nodes {
        fix(&mut node.name);
        fix(&mut node.namespace);
    }
    for e in &mut graph.endpoints {
        fix(&mut e.node.name);
        fix(&mut e.node.namespace);
        fix(&mut e.name);
        fix(&mut e.type_name);
    }
    graph
}

impl Transport for CliTransport {
    fn create_node(&self, node: &NodeName) -> Result<Arc<dyn NodePort>> {
        self.inner().create_node(node)
    }

    /// The graph, every name in it printable: the tools print what peers announce, and a
    /// name may hold escape sequences, BEL, NUL, a right-to-left override or a line break (see
    /// [`printable_graph`]).
    fn graph(&self) -> GraphSnapshot {
        printable_graph(self.inner().graph())
    }

    fn graph_changes(&self) -> watch::Receiver<u64> {
        self.inner().graph_changes()
    }

    fn supports_event(&self, kind: QosEventKind) -> bool {
        self.inner().supports_event(kind)
    }
}
