//! The bridge to the C++ shim (`cpp/shim.{h,cc}`): what crosses, and the Rust sinks Fast DDS's
//! threads call.
//!
//! Everything here is plumbing: bytes, GUIDs, counts. The sinks hand each call to a handler
//! trait object at once; a panic in a handler is caught here, because unwinding into C++
//! would abort the process.

use rclev::transport::EncodeInPlace;
use std::any::Any;
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

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
        /// A buffer of `len` bytes for the next sample, which the shim fills while Fast DDS
        /// takes it (see [`ReaderSink::sample_buffer`]).
        fn sample_buffer(self: &ReaderSink, len: usize) -> *mut u8;
        /// The sample the shim just wrote into the buffer, `len` bytes.
        fn on_sample(self: &ReaderSink, len: usize, meta: &SampleMeta);
        fn on_event(self: &ReaderSink, event: &EndpointEvent);

        type WriterSink;
        fn on_event(self: &WriterSink, event: &EndpointEvent);

        type PayloadEncoder;
        /// Encodes the sample into Fast DDS's payload buffer; its length, or 0 if it did not
        /// fit (or failed: the encoder keeps the error).
        fn encode(self: &mut PayloadEncoder, out: &mut [u8]) -> usize;

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
        fn write_encoded(
            self: &DdsWriter,
            capacity: u32,
            encoder: &mut PayloadEncoder,
            related: &SampleIdentity,
        ) -> Result<SampleIdentity>;
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
    fn sample(&self, data: Vec<u8>, meta: &bridge::SampleMeta);
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

thread_local! {
    /// How deep this thread is in Fast DDS listener calls (see [`on_listener_thread`]).
    static IN_LISTENER: Cell<u32> = const { Cell::new(0) };
}

/// Runs a handler call from a Fast DDS thread: a panic must not unwind into C++.
fn guarded(what: &str, f: impl FnOnce()) {
    IN_LISTENER.with(|d| d.set(d.get() + 1));
    if catch_unwind(AssertUnwindSafe(f)).is_err() {
        tracing::error!(target: "rclev_dds", "a {what} handler panicked; the event is dropped");
    }
    IN_LISTENER.with(|d| d.set(d.get() - 1));
}

/// Whether this thread is inside one of Fast DDS's listener calls: a directly delivered
/// callback (`Delivery::Direct`) runs there, with its reader's lock held.
fn on_listener_thread() -> bool {
    IN_LISTENER.with(|d| d.get() > 0)
}

/// Refuses to create a DDS endpoint inside a listener call. Fast DDS's discovery matches
/// endpoints holding its discovery lock and then takes each reader's lock; creating one holding
/// a reader's lock takes them the other way round, which can deadlock with discovery.
pub(crate) fn refuse_on_listener_thread(what: &str) -> rclev::Result<()> {
    if on_listener_thread() {
        return Err(rclev::Error::Transport(format!(
            "cannot create a DDS {what} inside a directly delivered callback (it runs on Fast \
             DDS's receive thread with a reader's lock held): create it beforehand, or use \
             Delivery::Worker"
        )));
    }
    Ok(())
}

/// Owns a DDS endpoint and deletes it when dropped, except inside a listener call: there the
/// deletion (which takes the discovery lock, and waits for the endpoint's own listener if the
/// drop comes from its callback) is handed to a short-lived thread, which runs it once the
/// listener call that holds the locks has returned.
pub(crate) struct Endpoint<T: Send + 'static>(Option<T>);

impl<T: Send + 'static> Endpoint<T> {
    pub(crate) fn new(inner: T) -> Self {
        Self(Some(inner))
    }
}

impl<T: Send + 'static> std::ops::Deref for Endpoint<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // `None` only inside `drop`.
        self.0.as_ref().expect("endpoint used after drop")
    }
}

impl<T: Send + 'static> Drop for Endpoint<T> {
    fn drop(&mut self) {
        let Some(inner) = self.0.take() else { return };
        if !on_listener_thread() {
            return drop(inner);
        }
        let deferred = std::thread::Builder::new()
            .name("rclev-dds-drop".into())
            .spawn(move || drop(inner));
        if let Err(e) = deferred {
            // Deleting here could deadlock; keeping the endpoint costs only its memory.
            tracing::error!(target: "rclev_dds", "cannot start a thread to delete a DDS endpoint ({e}); it is leaked");
        }
    }
}

/// The Rust side of a reader's listener.
///
/// Samples arrive in Rust-owned buffers: when Fast DDS takes a sample, the shim's type asks for
/// a buffer of the sample's length ([`sample_buffer`](Self::sample_buffer)), copies the bytes
/// into it (the one copy out of Fast DDS's history, which every reader makes) and then hands
/// it over with [`on_sample`](Self::on_sample). The subscription queues that very buffer: no
/// second copy. Both calls happen on the listener's thread within one `take_next_sample`,
/// with the reader's lock held, so one buffer is outstanding at a time.
pub(crate) struct ReaderSink {
    handler: Box<dyn ReaderHandler>,
    /// The buffer `sample_buffer` gave out, and the length asked for.
    pending: std::sync::Mutex<Option<(Vec<u8>, usize)>>,
}

impl ReaderSink {
    pub(crate) fn new(handler: Box<dyn ReaderHandler>) -> Self {
        Self {
            handler,
            pending: std::sync::Mutex::new(None),
        }
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, Option<(Vec<u8>, usize)>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn sample_buffer(&self, len: usize) -> *mut u8 {
        let mut pending = self.pending();
        let (buffer, _) = pending.insert((Vec::with_capacity(len), len));
        buffer.as_mut_ptr()
    }

    fn on_sample(&self, len: usize, meta: &bridge::SampleMeta) {
        let Some((mut buffer, asked)) = self.pending().take() else {
            tracing::error!(target: "rclev_dds", "a sample arrived without its buffer; dropped");
            return;
        };
        if len != asked {
            tracing::error!(target: "rclev_dds", "a sample of {len} bytes arrived in a buffer of {asked}; dropped");
            return;
        }
        // SAFETY: `buffer` was made with capacity `len` by `sample_buffer(len)` in this same
        // `take_next_sample` call, and the shim (`BlobType::deserialize`) copied exactly `len`
        // bytes of the sample into it before calling this with that length (`shim.cc`: it
        // calls `on_sample` only for a sample it deserialized into a buffer from here). So the
        // first `len` bytes are initialized.
        unsafe { buffer.set_len(len) };
        guarded("sample", || self.handler.sample(buffer, meta));
    }
    fn on_event(&self, event: &bridge::EndpointEvent) {
        guarded("reader event", || self.handler.event(event));
    }
}

/// A message to be encoded straight into the payload buffer Fast DDS sends it from (no copy
/// through a buffer of rclev's own): handed to `DdsWriter::write_encoded`, whose data type
/// calls [`encode`](Self::encode) from inside `DataWriter::write`, on the calling thread.
pub(crate) struct PayloadEncoder {
    value: Arc<dyn Any + Send + Sync>,
    encode_in_place: EncodeInPlace,
    /// Why the last `encode` wrote nothing.
    pub(crate) failed: Option<rclev::Error>,
}

impl PayloadEncoder {
    pub(crate) fn new(value: Arc<dyn Any + Send + Sync>, encode_in_place: EncodeInPlace) -> Self {
        Self {
            value,
            encode_in_place,
            failed: None,
        }
    }

    fn encode(&mut self, out: &mut [u8]) -> usize {
        let encode = self.encode_in_place;
        match catch_unwind(AssertUnwindSafe(|| encode(&*self.value, out))) {
            Ok(Ok(n)) => n,
            Ok(Err(e)) => {
                self.failed = Some(e);
                0
            }
            Err(_) => {
                self.failed = Some(rclev::Error::Transport(
                    "encoding a message panicked".into(),
                ));
                0
            }
        }
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
