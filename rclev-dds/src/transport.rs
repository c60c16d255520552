//! [`DdsTransport`]: one Fast DDS participant per transport, and the nodes registered on it
//! (`node`), which make their endpoints here (`topic`, `service`).

use std::sync::atomic::AtomicU32;
use std::sync::Arc;

use tokio::sync::watch;

use rclev::qos::QosEventKind;
use rclev::transport::{
    ClientPort, EventHook, Gid, GraphLimits, GraphSnapshot, NodeName, NodePort, PublisherPort,
    ReadyHook, ServiceEndpoint, ServicePort, SubscriptionPort, TopicEndpoint, Transport,
};
use rclev::{Arguments, Context, Error, Result};

use crate::announcer::Announcer;
use crate::config::DdsOptions;
use crate::endpoints::ParticipantHandle;
use crate::ffi::bridge::engine_version;
use crate::graph::GraphCache;
use crate::node::{DdsNode, Shared};
use crate::service::{DdsClient, DdsService};
use crate::topic::{DdsPublisher, DdsSubscription};

/// The bound of the name and namespace strings in `rmw_dds_common/msg/NodeEntitiesInfo`.
const NODE_NAME_BOUND: usize = 256;

/// rclev's DDS transport: rclev nodes as peers of ROS 2 nodes, over eProsima Fast DDS.
///
/// ```no_run
/// use rclev::Context;
/// let context = rclev_dds::DdsTransport::context().unwrap(); // ROS_DOMAIN_ID etc. from the environment
/// let executor = context.create_basic_executor();
/// ```
pub struct DdsTransport {
    shared: Arc<Shared>,
}

impl DdsTransport {
    /// A transport with the options ROS 2 reads from the environment (`ROS_DOMAIN_ID`,
    /// `ROS_AUTOMATIC_DISCOVERY_RANGE`, `ROS_STATIC_PEERS`, `ROS_LOCALHOST_ONLY`).
    pub fn from_env() -> Result<Self> {
        Self::new(&DdsOptions::from_env()?)
    }

    /// A transport with the given options.
    pub fn new(options: &DdsOptions) -> Result<Self> {
        let engine = engine_version();
        let graph = Arc::new(GraphCache::new(GraphLimits::from_env()?));
        let handle = ParticipantHandle::new(
            &options.participant_config(&engine),
            graph.clone(),
            Box::new(graph.clone()),
        )?;
        let guid = handle.participant.guid().bytes;
        graph.set_own_prefix(&guid);
        let announcer = Arc::new(Announcer::new(&handle, Gid(guid), options.gid_size)?);
        Ok(Self {
            shared: Arc::new(Shared {
                announcer,
                handle,
                guid,
                next_service_id: AtomicU32::new(1),
            }),
        })
    }

    /// A [`Context`] for a ROS 2 program: a transport made [`from_env`](Self::from_env), and
    /// the process's `--ros-args` ([`Arguments::from_env`]): what a node started by `ros2
    /// run` or a launch file needs.
    ///
    /// ```no_run
    /// let executor = rclev_dds::DdsTransport::context()?.create_basic_executor();
    /// let node = executor.create_node("talker")?; // `-r __node:=left` renames it
    /// # Ok::<(), rclev::Error>(())
    /// ```
    pub fn context() -> Result<Context> {
        Self::context_from(Arguments::from_env()?)
    }

    /// A [`Context`] over a transport made from the environment, whose nodes take
    /// `arguments` (its `--enclave` is the enclave the participant announces).
    pub fn context_from(arguments: Arguments) -> Result<Context> {
        let mut options = DdsOptions::from_env()?;
        if let Some(enclave) = arguments.enclave() {
            options.enclave = enclave.to_string();
        }
        Ok(Context::new(Arc::new(Self::new(&options)?), arguments))
    }

    /// [`context_from`](Self::context_from) with arguments given as a program's
    /// (`["prog", "--ros-args", "-r", "__ns:=/robot1"]`).
    pub fn context_from_args<S: AsRef<str>>(args: impl IntoIterator<Item = S>) -> Result<Context> {
        Self::context_from(Arguments::parse(args)?)
    }

    /// Whether discovery has caught up with what the peers announced: every other participant
    /// has sent its `ros_discovery_info`, and every endpoint listed there is discovered. Tools
    /// wait for it (on [`Transport::graph_changes`]) before printing the graph; a bare DDS
    /// participant, which sends none, keeps it false.
    pub fn graph_settled(&self) -> bool {
        self.shared.handle.graph.settled()
    }

    /// Announcements (discovered endpoints and participants, peers' node lists) left out of
    /// the graph so far for the graph cache's limits
    /// ([`GraphLimits`](rclev::transport::GraphLimits), from `RCLEV_GRAPH_CACHE_ENTRIES` and
    /// `RCLEV_GRAPH_CACHE_BYTES`).
    pub fn refused_graph_count(&self) -> u64 {
        self.shared.handle.graph.refused_count()
    }

    /// How many other participants (processes, usually) discovery has found alive.
    pub fn participant_count(&self) -> usize {
        self.shared.handle.graph.participant_count()
    }

    /// The participant's GUID (its GUID prefix and entity id `000001c1`).
    pub fn participant_guid(&self) -> [u8; 16] {
        self.shared.guid
    }
}

impl Transport for DdsTransport {
    fn create_node(&self, node: &NodeName) -> Result<Arc<dyn NodePort>> {
        // `ros_discovery_info` carries names of at most 256 characters: a longer one would make
        // every sample of this participant unreadable to its peers.
        for (what, text) in [("name", &node.name), ("namespace", &node.namespace)] {
            if text.len() > NODE_NAME_BOUND {
                return Err(Error::InvalidArgument {
                    argument: format!("node {what} of {} characters", text.len()),
                    reason: format!(
                        "ROS 2 graph messages carry node names and namespaces of at most \
                         {NODE_NAME_BOUND} characters"
                    ),
                });
            }
        }
        Ok(Arc::new(DdsNode::new(self.shared.clone(), node.clone())))
    }

    fn graph(&self) -> GraphSnapshot {
        self.shared.handle.graph.snapshot()
    }

    fn graph_changes(&self) -> watch::Receiver<u64> {
        self.shared.handle.graph.notifier().subscribe()
    }

    fn supports_event(&self, kind: QosEventKind) -> bool {
        // Fast DDS reports every status rmw maps, except an incompatible type: it matches by
        // type name only, so two types of one name cannot be told apart.
        kind != QosEventKind::IncompatibleType
    }
}

impl NodePort for DdsNode {
    fn create_publisher(
        &self,
        endpoint: &TopicEndpoint,
        events: Arc<dyn EventHook>,
    ) -> Result<Arc<dyn PublisherPort>> {
        Ok(Arc::new(DdsPublisher::new(self, endpoint, events)?))
    }

    fn create_subscription(
        &self,
        endpoint: &TopicEndpoint,
        ready: Arc<dyn ReadyHook>,
        events: Arc<dyn EventHook>,
    ) -> Result<Arc<dyn SubscriptionPort>> {
        Ok(DdsSubscription::new(self, endpoint, ready, events)?)
    }

    fn create_service(
        &self,
        endpoint: &ServiceEndpoint,
        ready: Arc<dyn ReadyHook>,
    ) -> Result<Arc<dyn ServicePort>> {
        Ok(DdsService::new(self, endpoint, ready)?)
    }

    fn create_client(
        &self,
        endpoint: &ServiceEndpoint,
        ready: Arc<dyn ReadyHook>,
    ) -> Result<Arc<dyn ClientPort>> {
        Ok(DdsClient::new(self, endpoint, ready)?)
    }
}
