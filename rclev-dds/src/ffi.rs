//! The bridge to the C++ shim (`cpp/shim.{h,cc}`): what crosses, and the Rust sinks Fast DDS's
//! threads call.
//!
//! Everything here is plumbing: bytes, GUIDs, counts. The sinks hand each call to a handler
//! trait object at once; a panic in a handler is caught here, because unwinding into C++
//! would abort the process.

use std::panic::{catch_unwind, AssertUnwindSafe};

#[cxx::bridge(namespace = "rclev_dds")]
pub(crate) mod bridge {
    /// A DDS GUID as on the wire: 12-byte prefix, 4-byte entity id.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    struct Guid {
        bytes: [u8; 16],
    }

    /// A sample's identity: its writer's GUID and the writer's sequence number for it.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    struct SampleIdentity {
        guid: [u8; 16],
        /// -1: unknown.
        seq: i64,
        /// Whether the identity is set at all (a sample without a related identity).
        set: bool,
    }

    /// What comes with a received sample.
    #[derive(Debug, Clone, Copy)]
    struct SampleMeta {
        identity: SampleIdentity,
        related: SampleIdentity,
        source_timestamp_ns: i64,
        reception_timestamp_ns: i64,
    }

    /// A resolved ROS QoS profile, as the shim applies it. Durations in ns, -1 = infinite.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    struct EndpointQos {
        reliable: bool,
        transient_local: bool,
        keep_all: bool,
        depth: u32,
        deadline_ns: i64,
        lifespan_ns: i64,
        /// 0 automatic, 1 manual by participant, 2 manual by topic.
        liveliness: u8,
        lease_ns: i64,
    }

    /// `ROS_AUTOMATIC_DISCOVERY_RANGE`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum DiscoveryRange {
        Off,
        Localhost,
        Subnet,
        SystemDefault,
    }

    /// How to create the participant.
    #[derive(Debug, Clone)]
    struct ParticipantConfig {
        domain_id: u32,
        range: DiscoveryRange,
        static_peers: Vec<String>,
        shared_memory: bool,
        user_data: Vec<u8>,
        name: String,
    }

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum EventKind {
        Matched,
        IncompatibleQos,
        DeadlineMissed,
        /// Writers: liveliness lost (total, total_change). Readers: liveliness changed
        /// (alive in `total_count`, not alive in `total_count_change`, their changes in
        /// `current_count` and `current_count_change`).
        Liveliness,
        SampleLost,
    }

    /// A status change of a writer or reader.
    #[derive(Debug, Clone, Copy)]
    struct EndpointEvent {
        kind: EventKind,
        total_count: i64,
        total_count_change: i64,
        current_count: i64,
        current_count_change: i64,
        /// `QosPolicyId_t` of the last incompatible policy.
        policy: u32,
        /// The peer that matched or unmatched.
        peer: [u8; 16],
    }

    /// A remote (or local) endpoint discovered, changed or gone.
    #[derive(Debug, Clone)]
    struct DiscoveredEndpoint {
        alive: bool,
        writer: bool,
        guid: [u8; 16],
        topic: String,
        type_name: String,
        user_data: Vec<u8>,
        qos: EndpointQos,
    }

    /// A participant discovered or gone.
    #[derive(Debug, Clone)]
    struct DiscoveredParticipant {
        alive: bool,
        guid: [u8; 16],
        user_data: Vec<u8>,
    }

    extern "Rust" {
        type ReaderSink;
        fn on_sample(self: &ReaderSink, data: &[u8], meta: &SampleMeta);
        fn on_event(self: &ReaderSink, event: &EndpointEvent);

        type WriterSink;
        fn on_event(self: &WriterSink, event: &EndpointEvent);

        type GraphSink;
        fn on_endpoint(self: &GraphSink, endpoint: &DiscoveredEndpoint);
        fn on_participant(self: &GraphSink, participant: &DiscoveredParticipant);
    }

    unsafe extern "C++" {
        include!("rclev-dds/cpp/shim.h");

        type DdsParticipant;
        type DdsWriter;
        type DdsReader;

        fn engine_version() -> String;

        fn create_participant(
            config: &ParticipantConfig,
            sink: Box<GraphSink>,
        ) -> Result<UniquePtr<DdsParticipant>>;
        fn guid(self: &DdsParticipant) -> Guid;

        fn create_writer(
            participant: &DdsParticipant,
            topic: &str,
            type_name: &str,
            qos: &EndpointQos,
            user_data: &[u8],
            sink: Box<WriterSink>,
        ) -> Result<UniquePtr<DdsWriter>>;
        fn write(self: &DdsWriter, data: &[u8], related: &SampleIdentity)
            -> Result<SampleIdentity>;
        fn guid(self: &DdsWriter) -> Guid;

        fn create_reader(
            participant: &DdsParticipant,
            topic: &str,
            type_name: &str,
            qos: &EndpointQos,
            user_data: &[u8],
            sink: Box<ReaderSink>,
        ) -> Result<UniquePtr<DdsReader>>;
        fn guid(self: &DdsReader) -> Guid;
    }
}

// SAFETY: the C++ entities are thread-safe (Fast DDS's DomainParticipant, DataWriter and
// DataReader may be used from any thread; the shim's own state, the topic table, is behind a
// mutex), and no method hands out references into them.
unsafe impl Send for bridge::DdsParticipant {}
// SAFETY: as above.
unsafe impl Sync for bridge::DdsParticipant {}
// SAFETY: as above; `write` and `assert_liveliness` are documented thread-safe by Fast DDS.
unsafe impl Send for bridge::DdsWriter {}
// SAFETY: as above.
unsafe impl Sync for bridge::DdsWriter {}
// SAFETY: a reader handle is only created and dropped; Fast DDS takes samples on its thread.
unsafe impl Send for bridge::DdsReader {}
// SAFETY: as above.
unsafe impl Sync for bridge::DdsReader {}

/// What a reader's listener reports.
pub(crate) trait ReaderHandler: Send + Sync {
    /// A sample arrived (CDR with its encapsulation header).
    fn sample(&self, data: &[u8], meta: &bridge::SampleMeta);
    /// A status changed.
    fn event(&self, event: &bridge::EndpointEvent);
}

/// What a writer's listener reports.
pub(crate) trait WriterHandler: Send + Sync {
    /// A status changed.
    fn event(&self, event: &bridge::EndpointEvent);
}

/// What the participant's listener reports.
pub(crate) trait GraphHandler: Send + Sync {
    /// An endpoint appeared, changed or left.
    fn endpoint(&self, endpoint: &bridge::DiscoveredEndpoint);
    /// A participant appeared, changed or left.
    fn participant(&self, participant: &bridge::DiscoveredParticipant);
}

/// A shared handler (the graph cache, which the transport reads too) serves as the sink's.
impl<T: GraphHandler> GraphHandler for std::sync::Arc<T> {
    fn endpoint(&self, endpoint: &bridge::DiscoveredEndpoint) {
        (**self).endpoint(endpoint)
    }
    fn participant(&self, participant: &bridge::DiscoveredParticipant) {
        (**self).participant(participant)
    }
}

/// Runs a handler call from a Fast DDS thread: a panic must not unwind into C++.
fn guarded(what: &str, f: impl FnOnce()) {
    if catch_unwind(AssertUnwindSafe(f)).is_err() {
        tracing::error!(target: "rclev_dds", "a {what} handler panicked; the event is dropped");
    }
}

/// The Rust side of a reader's listener.
pub(crate) struct ReaderSink(pub(crate) Box<dyn ReaderHandler>);

impl ReaderSink {
    fn on_sample(&self, data: &[u8], meta: &bridge::SampleMeta) {
        guarded("sample", || self.0.sample(data, meta));
    }
    fn on_event(&self, event: &bridge::EndpointEvent) {
        guarded("reader event", || self.0.event(event));
    }
}

/// The Rust side of a writer's listener.
pub(crate) struct WriterSink(pub(crate) Box<dyn WriterHandler>);

impl WriterSink {
    fn on_event(&self, event: &bridge::EndpointEvent) {
        guarded("writer event", || self.0.event(event));
    }
}

/// The Rust side of the participant's listener.
pub(crate) struct GraphSink(pub(crate) Box<dyn GraphHandler>);

impl GraphSink {
    fn on_endpoint(&self, endpoint: &bridge::DiscoveredEndpoint) {
        guarded("discovery", || self.0.endpoint(endpoint));
    }
    fn on_participant(&self, participant: &bridge::DiscoveredParticipant) {
        guarded("discovery", || self.0.participant(participant));
    }
}
