//! [`DdsTransport`]: one Fast DDS participant per transport, and the nodes registered on it.

use std::sync::Arc;

use tokio::sync::watch;

use rclev::qos::QosEventKind;
use rclev::transport::{
    ClientPort, EndpointInfo, EndpointKind, EventHook, Gid, GraphSnapshot, NodeName, NodePort,
    PublisherPort, ReadyHook, ServiceEndpoint, ServicePort, SubscriptionPort, TopicEndpoint,
    Transport,
};
use rclev::{Arguments, Context, Error, Result};

/// The bound of the name and namespace strings in `rmw_dds_common/msg/NodeEntitiesInfo`.
const NODE_NAME_BOUND: usize = 256;

use crate::announcer::Announcer;
use crate::config::DdsOptions;
pub(crate) use crate::endpoints::engine_error;
use crate::endpoints::{EndpointSpec, ParticipantHandle, ReaderParts, WriterParts};
use crate::ffi::bridge::{EndpointQos, ReaderMode};
use crate::graph::{DdsEntity, GraphCache};
use crate::matched::SampleSink;

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

/// What the transport's nodes and endpoints share.
pub(crate) struct Shared {
    /// `ros_discovery_info`; shared with every endpoint's [`Announced`].
    pub announcer: Arc<Announcer>,
    /// The participant (every endpoint keeps the C++ participant alive on its own, too), its
    /// graph, and the queue of deletions deferred from listener calls, joined when the last
    /// of the transport and its endpoints is gone.
    pub handle: ParticipantHandle,
    pub guid: [u8; 16],
    /// Counter for rmw_cyclonedds-style client and service ids.
    pub next_service_id: std::sync::atomic::AtomicU32,
}

impl DdsTransport {
    /// A transport with the options ROS 2 reads from the environment (`ROS_DOMAIN_ID`,
    /// `ROS_AUTOMATIC_DISCOVERY_RANGE`, `ROS_STATIC_PEERS`, `ROS_LOCALHOST_ONLY`).
    pub fn from_env() -> Result<Self> {
        Self::new(&DdsOptions::from_env()?)
    }

    /// A transport with the given options.
    pub fn new(options: &DdsOptions) -> Result<Self> {
        let engine = crate::engine_version();
        let graph = Arc::new(GraphCache::default());
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
                next_service_id: std::sync::atomic::AtomicU32::new(1),
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
        let id = self.shared.handle.graph.add_node(node.clone());
        self.shared.announcer.publish();
        Ok(Arc::new(DdsNode {
            shared: self.shared.clone(),
            name: node.clone(),
            id,
        }))
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

/// A node on the DDS graph.
pub(crate) struct DdsNode {
    pub shared: Arc<Shared>,
    pub name: NodeName,
    id: u64,
}

impl Drop for DdsNode {
    fn drop(&mut self) {
        self.shared.handle.graph.remove_node(self.id);
        self.shared.announcer.publish();
    }
}

impl DdsNode {
    pub fn new_writer(
        &self,
        topic: &str,
        type_name: &str,
        qos: &EndpointQos,
        user_data: &[u8],
        hook: Arc<dyn EventHook>,
    ) -> Result<WriterParts> {
        let spec = EndpointSpec {
            topic,
            type_name,
            qos,
            user_data,
        };
        self.shared.handle.create_writer(spec, hook)
    }

    #[allow(clippy::too_many_arguments)]
    pub fn new_reader<S: SampleSink + 'static>(
        &self,
        topic: &str,
        type_name: &str,
        qos: &EndpointQos,
        user_data: &[u8],
        mode: ReaderMode,
        sink: Arc<S>,
        hook: Arc<dyn EventHook>,
    ) -> Result<ReaderParts> {
        let spec = EndpointSpec {
            topic,
            type_name,
            qos,
            user_data,
        };
        self.shared.handle.create_reader(spec, mode, sink, hook)
    }

    /// Records a local endpoint, made of the DDS `entities`, on the graph and in
    /// `ros_discovery_info`; the returned guard withdraws it again.
    pub fn announce(&self, info: EndpointInfo, entities: Vec<DdsEntity>) -> Announced {
        let gid = info.gid;
        self.shared.handle.graph.add_local(info, self.id, entities);
        self.shared.announcer.publish();
        Announced {
            announcer: self.shared.announcer.clone(),
            gid,
        }
    }

    pub fn endpoint_info(
        &self,
        name: &str,
        kind: EndpointKind,
        type_name: &str,
        type_hash: rclev::msg::TypeHash,
        gid: rclev::transport::Gid,
        qos: rclev::QoSProfile,
    ) -> EndpointInfo {
        EndpointInfo {
            node: self.name.clone(),
            name: name.to_string(),
            kind,
            type_name: type_name.to_string(),
            type_hash,
            gid,
            qos,
        }
    }
}

/// A local endpoint's place on the graph, withdrawn on drop.
pub(crate) struct Announced {
    announcer: Arc<Announcer>,
    gid: Gid,
}

impl Drop for Announced {
    fn drop(&mut self) {
        self.announcer.graph().remove_local(&self.gid);
        self.announcer.publish();
    }
}

impl NodePort for DdsNode {
    fn create_publisher(
        &self,
        endpoint: &TopicEndpoint,
        events: Arc<dyn EventHook>,
    ) -> Result<Arc<dyn PublisherPort>> {
        Ok(Arc::new(crate::topic::DdsPublisher::new(
            self, endpoint, events,
        )?))
    }

    fn create_subscription(
        &self,
        endpoint: &TopicEndpoint,
        ready: Arc<dyn ReadyHook>,
        events: Arc<dyn EventHook>,
    ) -> Result<Arc<dyn SubscriptionPort>> {
        Ok(crate::topic::DdsSubscription::new(
            self, endpoint, ready, events,
        )?)
    }

    fn create_service(
        &self,
        endpoint: &ServiceEndpoint,
        ready: Arc<dyn ReadyHook>,
    ) -> Result<Arc<dyn ServicePort>> {
        Ok(crate::service::DdsService::new(self, endpoint, ready)?)
    }

    fn create_client(
        &self,
        endpoint: &ServiceEndpoint,
        ready: Arc<dyn ReadyHook>,
    ) -> Result<Arc<dyn ClientPort>> {
        Ok(crate::service::DdsClient::new(self, endpoint, ready)?)
    }
}
