//! The bridge to the C++ shim (`cpp/shim.{h,cc}`): what crosses, and the Rust sinks Fast DDS's
//! threads call.
//!
//! Everything here is plumbing: bytes, GUIDs, counts. The sinks hand each call to a handler
//! trait object at once; a panic in a handler is caught here, because unwinding into C++
//! would abort the process. What a peer sends crosses as bytes (names too) and Rust decides
//! what it means; the shim catches every exception its listener bodies could throw.

use rclev::throttle::ReportThrottle;
use rclev::transport::EncodeInPlace;
use std::any::Any;
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

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
        /// The sample's length on the wire (its CDR bytes, encapsulation header included).
        len: usize,
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

    /// A remote (or local) endpoint discovered, changed or gone. Its names are the bytes the
    /// peer announced: nothing makes them UTF-8.
    #[derive(Debug, Clone)]
    struct DiscoveredEndpoint {
        alive: bool,
        writer: bool,
        guid: [u8; 16],
        topic: Vec<u8>,
        type_name: Vec<u8>,
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

    /// How a reader hands its samples over.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    struct ReaderMode {
        /// false: the listener takes every sample on the receive thread at once (the Rust
        /// queue keeps the ROS history). true (a KeepAll reader): the listener takes only as
        /// many as the Rust queue has room for (`room`), then calls `on_data_available`; the
        /// rest stay in Fast DDS's history (a few samples: its resource limits are small),
        /// which pushes back on a reliable writer, until [`DdsReader::take`] takes them as the
        /// queue makes room. Takes of one reader are serialized, so samples keep their order.
        room_limited: bool,
        /// For a room-limited reader: how many samples Fast DDS's history holds (its
        /// resource limits).
        history_samples: u32,
        /// Samples longer than this are refused (`on_refused`) without being copied.
        max_sample_len: usize,
    }

    extern "Rust" {
        /// The bytes in a Rust `Vec`, in one copy.
        fn copy_bytes(bytes: &[u8]) -> Vec<u8>;
        /// A listener body caught an exception (`what` names the callback, `detail` is the
        /// exception's message as bytes); counted and reported, rate-limited.
        fn listener_failed(what: &str, detail: &[u8]);

        type ReaderSink;
        /// What a reader keeps of a sample's bytes (CDR with its encapsulation header) while
        /// Fast DDS lends them: called by the shim's type from inside `take_next_sample`, the
        /// reader's lock held. Its typed value decoded from them, or a copy of them.
        fn keep(self: &ReaderSink, data: &[u8]) -> Box<Taken>;
        /// A sample taken: what `keep` made of it, with its metadata.
        fn on_sample(self: &ReaderSink, sample: Box<Taken>, meta: &SampleMeta);
        /// A sample of `len` bytes refused for being longer than the reader's `max_sample_len`.
        fn on_refused(self: &ReaderSink, len: usize, meta: &SampleMeta);
        /// How many samples a room-limited reader's queue takes now.
        fn room(self: &ReaderSink) -> usize;
        /// A room-limited reader took what it could: its worker has samples to take.
        fn on_data_available(self: &ReaderSink);
        fn on_event(self: &ReaderSink, event: &EndpointEvent);

        type WriterSink;
        fn on_event(self: &WriterSink, event: &EndpointEvent);

        type Taken;

        type PayloadEncoder;
        /// Encodes the sample into Fast DDS's payload buffer; its length, or 0 if it did not
        /// fit (or failed: the encoder keeps the error). Never more than `out.len()`, which
        /// the shim checks again.
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
            mode: &ReaderMode,
            sink: Box<ReaderSink>,
        ) -> Result<UniquePtr<DdsReader>>;
        fn guid(self: &DdsReader) -> Guid;
        /// Takes up to `max` samples into the reader's sink; how many were taken.
        fn take(self: &DdsReader, max: usize) -> Result<usize>;
    }
}

/// "No related sample identity", for plain writes.
pub(crate) const NO_IDENTITY: bridge::SampleIdentity = bridge::SampleIdentity {
    guid: [0; 16],
    seq: -1,
    set: false,
};

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
// SAFETY: a reader handle is created, dropped and asked to `take`, which Fast DDS's
// DataReader::take_next_sample allows from any thread (it locks the reader); its listener's
// sink is `Sync`.
unsafe impl Send for bridge::DdsReader {}
// SAFETY: as above.
unsafe impl Sync for bridge::DdsReader {}

/// What a reader kept of a sample taken out of Fast DDS's history.
pub(crate) enum Taken {
    /// Its bytes (CDR with its encapsulation header), copied out of Fast DDS's buffer.
    Bytes(Vec<u8>),
    /// Its typed value, decoded straight from Fast DDS's buffer (a [`Payload::Shared`]'s).
    ///
    /// [`Payload::Shared`]: rclev::transport::Payload::Shared
    Decoded(Arc<dyn Any + Send + Sync>),
    /// Nothing: keeping it panicked (reported); the sample is dropped.
    Lost,
}

/// What a reader's listener reports.
pub(crate) trait ReaderHandler: Send + Sync {
    /// What to keep of a sample's bytes, which Fast DDS lends for this call only.
    fn keep(&self, data: &[u8]) -> Taken;
    /// A sample was taken: what [`keep`](Self::keep) made of it.
    fn sample(&self, taken: Taken, meta: &bridge::SampleMeta);
    /// A sample of `len` bytes was refused: longer than the type can be.
    fn refused(&self, len: usize, meta: &bridge::SampleMeta);
    /// How many samples a room-limited reader's queue takes now.
    fn room(&self) -> usize;
    /// A room-limited reader took what it could: there are samples to take.
    fn data_available(&self);
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

fn copy_bytes(bytes: &[u8]) -> Vec<u8> {
    bytes.to_vec()
}

/// Exceptions the shim's listener bodies caught (see [`listener_failures`]).
static LISTENER_FAILURES: ReportThrottle = ReportThrottle::new(Duration::from_secs(10));

fn listener_failed(what: &str, detail: &[u8]) {
    let _ = catch_unwind(|| {
        if let Some(held_back) = LISTENER_FAILURES.note(what) {
            rclev::diagnostic!(WARN,
                target: "rclev_dds",
                "{what} failed and was skipped: {}{held_back}",
                String::from_utf8_lossy(detail)
            );
        }
    });
}

/// How many exceptions the C++ shim's listener bodies have caught in this process.
pub(crate) fn listener_failures() -> u64 {
    LISTENER_FAILURES.total()
}

thread_local! {
    /// How deep this thread is in Fast DDS listener calls (see [`on_listener_thread`]).
    static IN_LISTENER: Cell<u32> = const { Cell::new(0) };
}

/// Runs a handler call from a Fast DDS thread: a panic must not unwind into C++.
fn guarded(what: &str, f: impl FnOnce()) {
    IN_LISTENER.with(|d| d.set(d.get() + 1));
    if catch_unwind(AssertUnwindSafe(f)).is_err() {
        rclev::diagnostic!(ERROR, target: "rclev_dds", "a {what} handler panicked; the event is dropped");
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
             Delivery::Worker (an adaptively delivered callback runs on its worker from now on)"
        )));
    }
    Ok(())
}

/// Deletes Fast DDS entities that were dropped inside a listener call, once that call has
/// returned: on a thread of its own, started with the first such drop. Deleting an entity
/// takes Fast DDS's discovery lock, and waits for the entity's own listener if the drop comes
/// from its callback: done right there it would deadlock.
///
/// One queue per participant (transport or raw engine), shared by its entities: the last
/// owner to go (the transport, or an entity that outlived it) closes it and joins its thread,
/// so every deferred deletion has run when the participant is gone — unless that last owner
/// goes on a listener thread or on the queue's own thread, where waiting could deadlock; then
/// the thread finishes the queue on its own.
#[derive(Default)]
pub(crate) struct DropQueue {
    reaper: Mutex<Option<Reaper>>,
}

struct Reaper {
    tx: mpsc::Sender<Box<dyn Send>>,
    thread: std::thread::JoinHandle<()>,
}

impl DropQueue {
    /// Deletes `entity` on the queue's thread.
    fn defer(&self, entity: Box<dyn Send>) {
        let mut reaper = self.reaper.lock().unwrap_or_else(|e| e.into_inner());
        if reaper.is_none() {
            let (tx, rx) = mpsc::channel::<Box<dyn Send>>();
            let spawned = std::thread::Builder::new()
                .name("rclev-dds-drop".into())
                .spawn(move || {
                    for entity in rx {
                        drop(entity);
                    }
                });
            match spawned {
                Ok(thread) => *reaper = Some(Reaper { tx, thread }),
                Err(e) => {
                    // Deleting here could deadlock; keeping the entity costs only its memory.
                    rclev::diagnostic!(ERROR, target: "rclev_dds", "cannot start a thread to delete a DDS entity ({e}); it is leaked");
                    std::mem::forget(entity);
                    return;
                }
            }
        }
        if let Some(Reaper { tx, .. }) = reaper.as_ref() {
            if let Err(mpsc::SendError(entity)) = tx.send(entity) {
                // The thread is gone (it never ends while `tx` lives, unless an entity's
                // deletion panicked it): keep the entity rather than delete it here.
                std::mem::forget(entity);
            }
        }
    }
}

impl Drop for DropQueue {
    fn drop(&mut self) {
        let reaper = self
            .reaper
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let Some(Reaper { tx, thread }) = reaper else {
            return;
        };
        drop(tx); // the thread ends once it has deleted what is queued
        if !on_listener_thread() && thread.thread().id() != std::thread::current().id() {
            let _ = thread.join();
        }
    }
}

/// Owns a Fast DDS entity (participant, writer or reader handle) and deletes it when dropped,
/// except inside a listener call: there the deletion is handed to the participant's
/// [`DropQueue`]. Every entity handle rclev-dds keeps is one of these.
pub(crate) struct Guarded<T: Send + 'static> {
    inner: Option<T>,
    queue: Arc<DropQueue>,
}

impl<T: Send + 'static> Guarded<T> {
    pub(crate) fn new(inner: T, queue: Arc<DropQueue>) -> Self {
        Self {
            inner: Some(inner),
            queue,
        }
    }
}

impl<T: Send + 'static> std::ops::Deref for Guarded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // `None` only inside `drop`.
        self.inner.as_ref().expect("entity used after drop")
    }
}

impl<T: Send + 'static> Drop for Guarded<T> {
    fn drop(&mut self) {
        let Some(inner) = self.inner.take() else {
            return;
        };
        if on_listener_thread() {
            self.queue.defer(Box::new(inner));
        } else {
            drop(inner);
        }
    }
}

/// The Rust side of a reader's listener: hands each call to its handler at once. The shim's
/// type lends each sample's bytes to [`keep`](Self::keep) while they are still in Fast DDS's
/// history; what that makes of them (a typed value decoded from them, or a copy: the one copy
/// of the sample rclev makes either way) comes back with the sample's metadata in
/// `on_sample`, and the subscription queues that very value or buffer.
pub(crate) struct ReaderSink {
    handler: Box<dyn ReaderHandler>,
}

impl ReaderSink {
    pub(crate) fn new(handler: Box<dyn ReaderHandler>) -> Self {
        Self { handler }
    }

    fn keep(&self, data: &[u8]) -> Box<Taken> {
        let mut taken = Taken::Lost;
        guarded("sample", || taken = self.handler.keep(data));
        Box::new(taken)
    }
    fn on_sample(&self, sample: Box<Taken>, meta: &bridge::SampleMeta) {
        guarded("sample", || self.handler.sample(*sample, meta));
    }
    fn on_refused(&self, len: usize, meta: &bridge::SampleMeta) {
        guarded("refused sample", || self.handler.refused(len, meta));
    }
    fn room(&self) -> usize {
        let mut room = 0;
        guarded("room", || room = self.handler.room());
        room
    }
    fn on_data_available(&self) {
        guarded("data available", || self.handler.data_available());
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
        let room = out.len();
        match catch_unwind(AssertUnwindSafe(|| encode(&*self.value, out))) {
            Ok(Ok(n)) if n <= room => n,
            // The length becomes the payload's: more than was written would send whatever
            // lies beyond. Refused here, and by the shim too.
            Ok(Ok(n)) => {
                self.failed = Some(rclev::Error::Transport(format!(
                    "a message encoder claimed {n} bytes written into a buffer of {room}"
                )));
                0
            }
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
