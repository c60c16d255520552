//! A participant and the DDS writers and readers made from it, each with its listener: match
//! tracking, graph notifications, QoS events and, for readers, where samples go. Every handle
//! is [`Guarded`]: dropped inside a listener call, its deletion waits on the participant's
//! [`DropQueue`].

use std::sync::Arc;

use cxx::UniquePtr;

use rclev::transport::EventHook;
use rclev::Result;

use crate::error::engine_error;
use crate::ffi::bridge::{
    self, DdsParticipant, DdsReader, DdsWriter, EndpointQos, ParticipantConfig, ReaderMode,
};
use crate::ffi::{
    refuse_on_listener_thread, DropQueue, GraphHandler, GraphSink, Guarded, ReaderSink, WriterSink,
};
use crate::graph::GraphCache;
use crate::matched::{Matched, ReaderEvents, SampleSink, WriterEvents};

/// A participant, the graph its writers' and readers' matches tell, and the queue their
/// deferred deletions wait on.
pub(crate) struct ParticipantHandle {
    pub participant: Guarded<UniquePtr<DdsParticipant>>,
    pub graph: Arc<GraphCache>,
    pub drops: Arc<DropQueue>,
}

impl ParticipantHandle {
    /// A participant made with `config`, whose discovery goes to `discovery`.
    pub fn new(
        config: &ParticipantConfig,
        graph: Arc<GraphCache>,
        discovery: Box<dyn GraphHandler>,
    ) -> Result<Self> {
        let drops = Arc::new(DropQueue::default());
        let participant = bridge::create_participant(config, Box::new(GraphSink(discovery)))
            .map_err(engine_error)?;
        Ok(Self {
            participant: Guarded::new(participant, drops.clone()),
            graph,
            drops,
        })
    }

    /// A writer; its matches tell the graph's waiters, its QoS events go to `hook`.
    pub fn create_writer(
        &self,
        spec: EndpointSpec<'_>,
        hook: Arc<dyn EventHook>,
    ) -> Result<WriterParts> {
        refuse_on_listener_thread("writer")?;
        let matched = Arc::new(Matched::default());
        let events = WriterEvents {
            matched: matched.clone(),
            graph: self.graph.clone(),
            hook,
        };
        let writer = bridge::create_writer(
            &self.participant,
            spec.topic,
            spec.type_name,
            spec.qos,
            spec.user_data,
            Box::new(WriterSink(Box::new(events))),
        )
        .map_err(engine_error)?;
        Ok(WriterParts {
            writer: Guarded::new(writer, self.drops.clone()),
            matched,
        })
    }

    /// A reader whose samples go to `sink` (on Fast DDS's receive thread, or on the thread
    /// that takes them when `mode` is on demand).
    pub fn create_reader<S: SampleSink + 'static>(
        &self,
        spec: EndpointSpec<'_>,
        mode: ReaderMode,
        sink: Arc<S>,
        hook: Arc<dyn EventHook>,
    ) -> Result<ReaderParts> {
        refuse_on_listener_thread("reader")?;
        let matched = Arc::new(Matched::default());
        let events = ReaderEvents {
            sink,
            matched: matched.clone(),
            graph: self.graph.clone(),
            hook,
        };
        let reader = bridge::create_reader(
            &self.participant,
            spec.topic,
            spec.type_name,
            spec.qos,
            spec.user_data,
            &mode,
            Box::new(ReaderSink::new(Box::new(events))),
        )
        .map_err(engine_error)?;
        Ok(ReaderParts {
            reader: Guarded::new(reader, self.drops.clone()),
            matched,
        })
    }
}

/// A DDS writer with its match tracking.
pub(crate) struct WriterParts {
    pub writer: Guarded<UniquePtr<DdsWriter>>,
    pub matched: Arc<Matched>,
}

/// A DDS reader with its match tracking.
pub(crate) struct ReaderParts {
    pub reader: Guarded<UniquePtr<DdsReader>>,
    pub matched: Arc<Matched>,
}

/// What every endpoint is created with.
pub(crate) struct EndpointSpec<'a> {
    pub topic: &'a str,
    pub type_name: &'a str,
    pub qos: &'a EndpointQos,
    pub user_data: &'a [u8],
}
