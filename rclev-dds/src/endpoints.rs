//! Creating a DDS writer or reader with its listener: match tracking, graph notifications,
//! QoS events and, for readers, where samples go.

use std::sync::Arc;

use cxx::UniquePtr;

use rclev::transport::EventHook;
use rclev::Result;

use crate::ffi::bridge::{self, DdsParticipant, DdsReader, DdsWriter, EndpointQos};
use crate::ffi::{refuse_on_listener_thread, Endpoint, ReaderSink, WriterSink};
use crate::graph::GraphCache;
use crate::matched::{Matched, ReaderEvents, SampleSink, WriterEvents};

/// Fast DDS's errors (C++ exceptions) as rclev's.
pub(crate) fn engine_error(e: cxx::Exception) -> rclev::Error {
    rclev::Error::Transport(e.what().to_string())
}

/// A DDS writer with its match tracking.
pub(crate) struct WriterParts {
    pub writer: Endpoint<UniquePtr<DdsWriter>>,
    pub matched: Arc<Matched>,
}

/// A DDS reader with its match tracking.
pub(crate) struct ReaderParts {
    pub reader: Endpoint<UniquePtr<DdsReader>>,
    pub matched: Arc<Matched>,
}

/// What every endpoint is created with.
pub(crate) struct EndpointSpec<'a> {
    pub topic: &'a str,
    pub type_name: &'a str,
    pub qos: &'a EndpointQos,
    pub user_data: &'a [u8],
}

/// A writer of `participant`; its matches tell `graph`'s waiters, its QoS events go to `hook`.
pub(crate) fn create_writer(
    participant: &DdsParticipant,
    graph: &Arc<GraphCache>,
    spec: EndpointSpec<'_>,
    hook: Arc<dyn EventHook>,
) -> Result<WriterParts> {
    refuse_on_listener_thread("writer")?;
    let matched = Arc::new(Matched::default());
    let events = WriterEvents {
        matched: matched.clone(),
        graph: graph.clone(),
        hook,
    };
    let writer = bridge::create_writer(
        participant,
        spec.topic,
        spec.type_name,
        spec.qos,
        spec.user_data,
        Box::new(WriterSink(Box::new(events))),
    )
    .map_err(engine_error)?;
    Ok(WriterParts {
        writer: Endpoint::new(writer),
        matched,
    })
}

/// A reader of `participant` whose samples go to `sink` (on Fast DDS's receive thread).
pub(crate) fn create_reader<S: SampleSink + 'static>(
    participant: &DdsParticipant,
    graph: &Arc<GraphCache>,
    spec: EndpointSpec<'_>,
    sink: Arc<S>,
    hook: Arc<dyn EventHook>,
) -> Result<ReaderParts> {
    refuse_on_listener_thread("reader")?;
    let matched = Arc::new(Matched::default());
    let events = ReaderEvents {
        sink,
        matched: matched.clone(),
        graph: graph.clone(),
        hook,
    };
    let reader = bridge::create_reader(
        participant,
        spec.topic,
        spec.type_name,
        spec.qos,
        spec.user_data,
        Box::new(ReaderSink::new(Box::new(events))),
    )
    .map_err(engine_error)?;
    Ok(ReaderParts {
        reader: Endpoint::new(reader),
        matched,
    })
}
