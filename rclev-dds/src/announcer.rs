//! The participant's `ros_discovery_info` writer and reader (see `entities`): our nodes and
//! their endpoints published after every change, the peers' read into the graph.

use std::sync::{Arc, Mutex};

use cxx::UniquePtr;

use rclev::transport::Gid;
use rclev::{QoSProfile, Result};

use crate::endpoints::{create_reader, create_writer, EndpointSpec};
use crate::entities::{decode, encode, GidSize, TOPIC};
use crate::ffi::bridge::{DdsParticipant, DdsWriter, SampleMeta};
use crate::ffi::Endpoint;
use crate::graph::GraphCache;
use crate::matched::SampleSink;
use crate::qos::to_dds;
use crate::topic::NO_IDENTITY;

/// `rmw_dds_common/msg/ParticipantEntitiesInfo`'s DDS type name.
const TYPE_NAME: &str = "rmw_dds_common::msg::dds_::ParticipantEntitiesInfo_";

/// Reads the peers' samples into the graph; one that is not a `ParticipantEntitiesInfo` is
/// warned about and dropped (there is no executor here to report it to).
struct PeerEntities {
    graph: Arc<GraphCache>,
}

impl SampleSink for PeerEntities {
    fn sample(&self, data: &[u8], _: &SampleMeta) {
        match decode(data) {
            Ok(entities) => self.graph.remote_entities(entities),
            Err(e) => {
                tracing::warn!(target: "rclev_dds", "ros_discovery_info: {e}; sample dropped");
            }
        }
    }
}

/// Publishes this participant's `ros_discovery_info` and reads the peers'.
pub(crate) struct Announcer {
    /// Held while a state is taken from the graph and written, so that of two changes made
    /// at once the later state is written last.
    writer: Mutex<Endpoint<UniquePtr<DdsWriter>>>,
    _reader: Endpoint<UniquePtr<crate::ffi::bridge::DdsReader>>,
    graph: Arc<GraphCache>,
    participant: Gid,
    gid_size: GidSize,
}

impl Announcer {
    /// The graph endpoints of `participant` (whose GUID is `guid`), with rmw's QoS: reliable,
    /// transient local, keep last 1 for the writer (a late joiner gets the current state) and
    /// keep all for the reader. Publishes the (still empty) state at once, as rmw does.
    pub fn new(
        participant: &DdsParticipant,
        guid: Gid,
        graph: &Arc<GraphCache>,
        gid_size: GidSize,
    ) -> Result<Self> {
        let user_data = gid_size.user_data();
        let writer_qos = QoSProfile::default()
            .reliable()
            .transient_local()
            .keep_last(1);
        let reader_qos = QoSProfile::default()
            .reliable()
            .transient_local()
            .keep_all();
        let writer = create_writer(
            participant,
            graph,
            EndpointSpec {
                topic: TOPIC,
                type_name: TYPE_NAME,
                qos: &to_dds(&writer_qos),
                user_data: &user_data,
            },
            Arc::new(()),
        )?;
        let reader = create_reader(
            participant,
            graph,
            EndpointSpec {
                topic: TOPIC,
                type_name: TYPE_NAME,
                qos: &to_dds(&reader_qos),
                user_data: &user_data,
            },
            Arc::new(PeerEntities {
                graph: graph.clone(),
            }),
            Arc::new(()),
        )?;
        let announcer = Self {
            writer: Mutex::new(writer.writer),
            _reader: reader.reader,
            graph: graph.clone(),
            participant: guid,
            gid_size,
        };
        announcer.publish();
        Ok(announcer)
    }

    /// The graph this announcer publishes from.
    pub fn graph(&self) -> &Arc<GraphCache> {
        &self.graph
    }

    /// Publishes the participant's nodes and endpoints as they are now (after a change).
    /// A failure is logged: the graph is advisory, data keeps flowing without it.
    pub fn publish(&self) {
        let writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let state = self.graph.local_entities(self.participant);
        let written = encode(&state, self.gid_size)
            .map_err(|e| e.to_string())
            .and_then(|bytes| {
                writer
                    .write(&bytes, &NO_IDENTITY)
                    .map_err(|e| e.what().to_string())
            });
        if let Err(e) = written {
            tracing::warn!(target: "rclev_dds", "ros_discovery_info not published: {e}");
        }
    }
}
