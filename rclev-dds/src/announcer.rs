//! The participant's `ros_discovery_info` writer and reader (see `entities`): our nodes and
//! their endpoints published after every change, the peers' read into the graph.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use cxx::UniquePtr;

use rclev::throttle::ReportThrottle;
use rclev::transport::Gid;
use rclev::{QoSProfile, Result};

use crate::endpoints::{EndpointSpec, ParticipantHandle};
use crate::entities::{decode, encode, GidSize, TOPIC};
use crate::ffi::bridge::{DdsReader, DdsWriter, SampleMeta};
use crate::ffi::{Guarded, NO_IDENTITY};
use crate::graph::GraphCache;
use crate::inbox::Fill;
use crate::matched::SampleSink;
use crate::names::id_text;
use crate::qos::to_dds;

/// `rmw_dds_common/msg/ParticipantEntitiesInfo`'s DDS type name.
const TYPE_NAME: &str = "rmw_dds_common::msg::dds_::ParticipantEntitiesInfo_";

/// Samples of `ros_discovery_info` dropped, logged per writer at most every 10 s: a peer can
/// send them as fast as it likes.
static DROPPED: ReportThrottle = ReportThrottle::new(Duration::from_secs(10));

/// Reads the peers' samples into the graph, on the receive thread. One that is not a
/// `ParticipantEntitiesInfo`, or that speaks for another participant than its writer's, is
/// counted, warned about (rate-limited) and dropped: there is no executor here to report it
/// to.
struct PeerEntities {
    graph: Arc<GraphCache>,
}

impl PeerEntities {
    fn drop_sample(&self, writer: &[u8; 16], why: &str) {
        if let Some(held_back) = DROPPED.note(&id_text(writer)) {
            rclev::diagnostic!(WARN,
                target: "rclev_dds",
                "ros_discovery_info from writer {}: {why}; sample dropped{held_back}",
                id_text(writer)
            );
        }
    }
}

impl SampleSink for PeerEntities {
    fn sample(&self, data: Vec<u8>, meta: &SampleMeta) {
        let writer = &meta.identity.guid;
        match decode(&data) {
            // A participant describes itself on its own writer: a sample about another one
            // would let any peer invent participants (and grow the graph without bound).
            Ok(entities) if entities.gid.0[..12] != writer[..12] => self.drop_sample(
                writer,
                "it speaks for another participant than its writer's",
            ),
            Ok(entities) => self.graph.remote_entities(entities),
            Err(e) => self.drop_sample(writer, &e.to_string()),
        }
    }
}

/// How many `ros_discovery_info` samples this process has dropped (see [`PeerEntities`]).
pub(crate) fn dropped_samples() -> u64 {
    DROPPED.total()
}

/// Publishes this participant's `ros_discovery_info` and reads the peers'.
pub(crate) struct Announcer {
    /// Held while a state is taken from the graph and written, so that of two changes made
    /// at once the later state is written last.
    writer: Mutex<Guarded<UniquePtr<DdsWriter>>>,
    _reader: Guarded<UniquePtr<DdsReader>>,
    graph: Arc<GraphCache>,
    participant: Gid,
    gid_size: GidSize,
}

impl Announcer {
    /// The graph endpoints of `participant` (whose GUID is `guid`), with rmw's QoS: reliable,
    /// transient local, keep last 1 for the writer (a late joiner gets the current state) and
    /// keep all for the reader. Publishes the (still empty) state at once, as rmw does.
    pub fn new(participant: &ParticipantHandle, guid: Gid, gid_size: GidSize) -> Result<Self> {
        let graph = &participant.graph;
        let user_data = gid_size.user_data();
        let writer_qos = QoSProfile::default()
            .reliable()
            .transient_local()
            .keep_last(1);
        let reader_qos = QoSProfile::default()
            .reliable()
            .transient_local()
            .keep_all();
        let writer = participant.create_writer(
            EndpointSpec {
                topic: TOPIC,
                type_name: TYPE_NAME,
                qos: &to_dds(&writer_qos),
                user_data: &user_data,
            },
            Arc::new(()),
        )?;
        // Taken at once on the receive thread and read into the graph there: nothing queues.
        let eager = Fill::KeepLast(1).reader_mode(None);
        let reader = participant.create_reader(
            EndpointSpec {
                topic: TOPIC,
                type_name: TYPE_NAME,
                qos: &to_dds(&reader_qos),
                user_data: &user_data,
            },
            eager,
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
            rclev::diagnostic!(WARN, target: "rclev_dds", "ros_discovery_info not published: {e}");
        }
    }
}
