//! A node on a [`DdsTransport`](crate::DdsTransport)'s participant, as its endpoints see it:
//! the writers and readers it makes, and the graph entries it announces.

use std::sync::atomic::AtomicU32;
use std::sync::Arc;

use rclev::transport::{EndpointInfo, EventHook, Gid, NodeName};
use rclev::Result;

use crate::announcer::Announcer;
use crate::endpoints::{EndpointSpec, ParticipantHandle, ReaderParts, WriterParts};
use crate::ffi::bridge::{EndpointQos, ReaderMode};
use crate::graph::DdsEntity;
use crate::matched::SampleSink;

/// What a transport's nodes and endpoints share.
pub(crate) struct Shared {
    /// `ros_discovery_info`; shared with every endpoint's [`Announced`].
    pub announcer: Arc<Announcer>,
    /// The participant (every endpoint keeps the C++ participant alive on its own, too), its
    /// graph, and the queue of deletions deferred from listener calls, joined when the last
    /// of the transport and its endpoints is gone.
    pub handle: ParticipantHandle,
    pub guid: [u8; 16],
    /// Counter for rmw_cyclonedds-style client and service ids.
    pub next_service_id: AtomicU32,
}

/// A node on the DDS graph: on it from [`new`](Self::new) until dropped.
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
    /// Adds the node `name` to the graph and to `ros_discovery_info`.
    pub fn new(shared: Arc<Shared>, name: NodeName) -> Self {
        let id = shared.handle.graph.add_node(name.clone());
        shared.announcer.publish();
        Self { shared, name, id }
    }

    /// A DDS writer of this node's participant, whose QoS events go to `hook`.
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

    /// A DDS reader of this node's participant, whose samples go to `sink` (taken as `mode`
    /// says) and whose QoS events go to `hook`.
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
