//! Services and clients over DDS, with both ROS 2 service mappings, chosen per peer:
//!
//! - **rmw_fastrtps** (the ROS 2 default): the CDR body alone; a request carries the
//!   client's reply-reader GUID as its *related sample identity* (an RTPS inline QoS), the
//!   request id is that GUID with the request's RTPS sequence number, and the reply carries
//!   the request id back as its related sample identity.
//! - **rmw_cyclonedds**: a 16-byte header before the body (the client's 8-byte id and a
//!   64-bit sequence number, in the sample's byte order), echoed in the reply; clients and
//!   services name themselves in USER_DATA (`clientid=`/`serviceid=`).
//!
//! A server answers in the mapping the request came in; a client writes in the mapping of the
//! servers it is matched with and reads replies in either. rclev puts both kinds of
//! identification on its own endpoints, so either kind of peer finds what it looks for.
//!
//! Before a server replies to a client it has only just discovered, it waits (at most
//! [`REPLY_MATCH_WAIT`]) until its reply writer is matched with that client's reply reader,
//! as rmw does: a volatile reply written earlier would not reach the client.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use cxx::UniquePtr;

use rclev::qos::QosRole;
use rclev::throttle::ReportThrottle;
use rclev::transport::{
    ClientPort, EndpointInfo, EndpointKind, Gid, Payload, ReadyHook, RequestId, ServiceEndpoint,
    ServicePort, TypeSupport,
};
use rclev::{Error, QoSProfile, Result};

use crate::cdr::{require_encapsulation, with_cdr};
use crate::endpoints::{ReaderParts, WriterParts};
use crate::error::engine_error;
use crate::ffi::bridge::{DdsReader, DdsWriter, SampleIdentity, SampleMeta};
use crate::ffi::{Guarded, NO_IDENTITY};
use crate::graph::{DdsEntity, GraphCache};
use crate::inbox::{refill, Fill, Inbox, ReaderSlot};
use crate::matched::{Matched, SampleSink};
use crate::names::{cyclone_service_id, endpoint_user_data, id_text, service_topics, RosTopic};
use crate::node::{Announced, DdsNode};
use crate::qos::to_dds;

/// How long a reply waits for the client's reply reader to be matched.
pub(crate) const REPLY_MATCH_WAIT: Duration = Duration::from_secs(1);

/// Length of rmw_cyclonedds's request header.
const HEADER_LEN: usize = 16;
/// The CDR encapsulation header.
const ENCAPSULATION_LEN: usize = 4;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether a GUID names a reader (entity kind bit 0x04, as rmw_fastrtps tests it).
fn is_reader(guid: &[u8; 16]) -> bool {
    guid[15] & 0x04 != 0
}

/// rmw_cyclonedds's request header, read in the byte order its sample declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CycloneHeader {
    pub client: u64,
    pub sequence: i64,
}

impl CycloneHeader {
    /// Splits a sample into its header and the body (with the encapsulation header put back
    /// in front); `None` when the sample is too short to hold one.
    pub fn split(sample: &[u8]) -> Option<(CycloneHeader, Vec<u8>)> {
        if sample.len() < ENCAPSULATION_LEN + HEADER_LEN {
            return None;
        }
        let little = sample[1] & 1 == 1;
        let word = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&sample[at..at + 8]);
            if little {
                u64::from_le_bytes(b)
            } else {
                u64::from_be_bytes(b)
            }
        };
        let header = CycloneHeader {
            client: word(ENCAPSULATION_LEN),
            sequence: word(ENCAPSULATION_LEN + 8) as i64,
        };
        let mut body = Vec::with_capacity(sample.len() - HEADER_LEN);
        body.extend_from_slice(&sample[..ENCAPSULATION_LEN]);
        body.extend_from_slice(&sample[ENCAPSULATION_LEN + HEADER_LEN..]);
        Some((header, body))
    }

    /// `body` (CDR with encapsulation header) with this header put in after the
    /// encapsulation, in the body's byte order. The body's alignment is kept: the header is
    /// 16 bytes.
    pub fn join(&self, body: &[u8]) -> Vec<u8> {
        let little = body[1] & 1 == 1;
        let bytes = |v: u64| {
            if little {
                v.to_le_bytes()
            } else {
                v.to_be_bytes()
            }
        };
        let mut out = Vec::with_capacity(body.len() + HEADER_LEN);
        out.extend_from_slice(&body[..ENCAPSULATION_LEN]);
        out.extend_from_slice(&bytes(self.client));
        out.extend_from_slice(&bytes(self.sequence as u64));
        out.extend_from_slice(&body[ENCAPSULATION_LEN..]);
        out
    }
}

/// How a reply finds its client.
#[derive(Debug, Clone)]
enum ReplyRoute {
    /// rmw_fastrtps: the related sample identity to send; the client's reply reader to wait
    /// for, when the identity names one.
    RelatedIdentity {
        related: SampleIdentity,
        reader: Option<Gid>,
    },
    /// rmw_cyclonedds: the header to echo; the `clientid=` whose reply reader to wait for.
    Header {
        header: CycloneHeader,
        client_id: Option<String>,
    },
}

/// Requests as the listener receives them (see `inbox` for the queue's bound and policy: the
/// service's QoS depth, like rmw's request history). Each queued request carries its reply
/// route; once the service's callback took it, the route waits in `routes` for the response.
struct RequestInbox {
    inbox: Inbox<(RequestId, Payload, Option<ReplyRoute>)>,
    fill: Fill,
    /// Routes of requests taken and not answered yet: as many as the service's callbacks hold
    /// (each is answered or abandoned).
    routes: Mutex<HashMap<RequestId, ReplyRoute>>,
    graph: Arc<GraphCache>,
}

impl SampleSink for RequestInbox {
    fn sample(&self, data: Vec<u8>, meta: &SampleMeta) {
        let writer = Gid(meta.identity.guid);
        let (id, body, route) = if meta.related.set {
            let id = RequestId {
                writer_guid: Gid(meta.related.guid),
                sequence_number: meta.identity.seq,
            };
            let route = ReplyRoute::RelatedIdentity {
                related: SampleIdentity {
                    guid: meta.related.guid,
                    seq: meta.identity.seq,
                    set: true,
                },
                // A client's reply reader lives in its request writer's participant: one
                // named elsewhere is not waited for (a peer could name readers that never
                // come, and hold the service's worker for a second each).
                reader: (is_reader(&meta.related.guid)
                    && meta.related.guid[..12] == meta.identity.guid[..12])
                    .then_some(Gid(meta.related.guid)),
            };
            (id, data, Some(route))
        } else if let Some(remote) = self
            .graph
            .remote(&writer)
            .filter(|e| e.needs_cyclone_header(&writer))
        {
            match CycloneHeader::split(&data) {
                Some((header, body)) => {
                    let mut gid = [0u8; 16];
                    gid[..8].copy_from_slice(&header.client.to_be_bytes());
                    gid[8..].copy_from_slice(&writer.0[8..]);
                    let id = RequestId {
                        writer_guid: Gid(gid),
                        sequence_number: header.sequence,
                    };
                    let client_id = remote.user_data.get("clientid").cloned();
                    (id, body, Some(ReplyRoute::Header { header, client_id }))
                }
                // Too short for a header: hand it on as it is, the node layer reports it
                // malformed (no reply can be routed for it).
                None => (
                    RequestId {
                        writer_guid: writer,
                        sequence_number: meta.identity.seq,
                    },
                    data,
                    None,
                ),
            }
        } else {
            // A Fast DDS client that sent no related identity (older rmw): the writer's own
            // identity is the request id, and the reply's related identity.
            let id = RequestId {
                writer_guid: writer,
                sequence_number: meta.identity.seq,
            };
            let route = ReplyRoute::RelatedIdentity {
                related: SampleIdentity {
                    guid: meta.identity.guid,
                    seq: meta.identity.seq,
                    set: true,
                },
                reader: None,
            };
            (id, data, Some(route))
        };
        self.inbox
            .push((id, Payload::Serialized(Box::new(body)), route), meta.len);
        if self.fill != Fill::RoomLimited {
            self.inbox.received(false);
        }
    }

    fn refused(&self, len: usize, meta: &SampleMeta) {
        self.inbox.refused(
            len,
            &format_args!("writer {}", crate::names::id_text(&meta.identity.guid)),
        );
    }

    fn room(&self) -> usize {
        self.inbox.room()
    }

    fn data_available(&self) {
        self.inbox.received(false);
    }
}

/// A ROS service server: a request reader on `rq/<name>Request` and a reply writer on
/// `rr/<name>Reply`.
pub(crate) struct DdsService {
    requests: Arc<RequestInbox>,
    request_reader: ReaderSlot,
    reply_writer: Guarded<UniquePtr<DdsWriter>>,
    reply_matched: Arc<Matched>,
    response: TypeSupport,
    announced: Mutex<Option<Announced>>,
}

impl DdsService {
    pub fn new(
        node: &DdsNode,
        endpoint: &ServiceEndpoint,
        ready: Arc<dyn ReadyHook>,
    ) -> Result<Arc<Self>> {
        let setup = Setup::new(node, endpoint, Side::Server)?;
        let fill = Fill::of(setup.reader_qos.history);
        let requests = Arc::new(RequestInbox {
            inbox: Inbox::new(&endpoint.name, fill.history(), ready),
            fill,
            routes: Mutex::new(HashMap::new()),
            graph: node.shared.handle.graph.clone(),
        });
        let opened = setup.open(node, endpoint, fill, requests.clone())?;
        Ok(Arc::new(Self {
            requests,
            request_reader: Mutex::new(Some(opened.reader.reader)),
            reply_writer: opened.writer.writer,
            reply_matched: opened.writer.matched,
            response: endpoint.types.response,
            announced: Mutex::new(Some(opened.announced)),
        }))
    }

    /// Waits until the client behind `route` can receive a reply.
    fn wait_for_client(&self, route: &ReplyRoute) -> bool {
        match route {
            ReplyRoute::RelatedIdentity {
                reader: Some(reader),
                ..
            } => self
                .reply_matched
                .wait_for(REPLY_MATCH_WAIT, |g| g == reader),
            ReplyRoute::RelatedIdentity { reader: None, .. } => true,
            ReplyRoute::Header {
                client_id: Some(client),
                ..
            } => {
                let graph = &self.requests.graph;
                self.reply_matched.wait_for(REPLY_MATCH_WAIT, |g| {
                    graph
                        .remote(g)
                        .is_some_and(|e| e.user_data.get("clientid") == Some(client))
                })
            }
            ReplyRoute::Header {
                client_id: None, ..
            } => true,
        }
    }
}

impl ServicePort for DdsService {
    fn take_request(&self) -> Option<(RequestId, Payload)> {
        refill(
            self.requests.fill,
            &self.requests.inbox,
            &self.request_reader,
            1,
        );
        let (id, payload, route) = self.requests.inbox.pop()?;
        if let Some(route) = route {
            lock(&self.requests.routes).insert(id, route);
        }
        Some((id, payload))
    }

    fn send_response(&self, id: RequestId, response: Payload) -> Result<()> {
        let name = self.requests.inbox.name();
        let route = lock(&self.requests.routes).remove(&id).ok_or_else(|| {
            Error::Transport(format!(
                "service {name:?}: no request {id:?} is waiting for a response"
            ))
        })?;
        // A client whose participant has left is gone for good (rmw's "GONE"): its requests
        // still queued are not waited on, a second each, after a flood from it.
        if let ReplyRoute::RelatedIdentity {
            reader: Some(reader),
            ..
        } = &route
        {
            if !self.requests.graph.participant_alive(reader) {
                return Err(Error::Transport(format!(
                    "service {name:?}: the client's participant has left; response dropped"
                )));
            }
        }
        if !self.wait_for_client(&route) {
            return Err(Error::Timeout {
                what: format!("service {name:?}: the client's reply reader to match"),
                after: REPLY_MATCH_WAIT,
            });
        }
        with_cdr(&response, &self.response, |body| {
            require_encapsulation(body, name)?;
            match &route {
                ReplyRoute::RelatedIdentity { related, .. } => {
                    self.reply_writer
                        .write(body, related)
                        .map_err(engine_error)?;
                }
                ReplyRoute::Header { header, .. } => {
                    self.reply_writer
                        .write(&header.join(body), &NO_IDENTITY)
                        .map_err(engine_error)?;
                }
            }
            Ok(())
        })
    }

    fn abandon_request(&self, id: RequestId) {
        lock(&self.requests.routes).remove(&id);
    }

    fn close(&self) {
        self.requests.inbox.close();
        let reader = lock(&self.request_reader).take();
        drop(reader);
        let announced = lock(&self.announced).take();
        drop(announced);
        // Again, now that no listener call is left (see DdsSubscription::close).
        self.requests.inbox.close();
        lock(&self.requests.routes).clear();
    }

    fn lost_count(&self) -> u64 {
        self.requests.inbox.lost_count()
    }

    fn refused_count(&self) -> u64 {
        self.requests.inbox.refused_count()
    }
}

impl Drop for DdsService {
    fn drop(&mut self) {
        self.close();
    }
}

/// Which end of a service a [`Setup`] is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    /// A server: reads requests, writes replies.
    Server,
    /// A client: writes requests, reads replies.
    Client,
}

/// What a server and a client both start from.
struct Setup {
    side: Side,
    /// The resolved QoS of its reader and of its writer (both directions use the endpoint's
    /// profile).
    reader_qos: QoSProfile,
    writer_qos: QoSProfile,
    /// `rq/<name>Request`, `rr/<name>Reply`.
    request_topic: String,
    reply_topic: String,
    /// Its rmw_cyclonedds-style id (`clientid=`/`serviceid=`), as text and as bytes.
    id: String,
    id_bytes: [u8; 16],
}

/// A server's or client's DDS reader and writer, and its place on the graph.
struct Opened {
    reader: ReaderParts,
    writer: WriterParts,
    announced: Announced,
}

impl Setup {
    fn new(node: &DdsNode, endpoint: &ServiceEndpoint, side: Side) -> Result<Self> {
        let reader_qos = endpoint.qos.resolve(QosRole::Subscription, &[]);
        let writer_qos = endpoint.qos.resolve(QosRole::Publisher, &[]);
        reader_qos.validate()?;
        writer_qos.validate()?;
        let (request_topic, reply_topic) =
            service_topics(&endpoint.name, endpoint.qos.avoid_ros_namespace_conventions);
        let n = node.shared.next_service_id.fetch_add(1, Ordering::Relaxed);
        let id_bytes = cyclone_service_id(&node.shared.guid, n);
        Ok(Self {
            side,
            reader_qos,
            writer_qos,
            request_topic,
            reply_topic,
            id: id_text(&id_bytes),
            id_bytes,
        })
    }

    /// Creates the reader (whose samples go to `sink`, queued as `fill` says) and the writer,
    /// the reply topic's first: a server's reply writer exists before a request can arrive, a
    /// client's reply reader before it can send one. Then announces them as one endpoint: a
    /// server by its request reader, a client by its request writer, as rmw lists them.
    fn open<S: SampleSink + 'static>(
        &self,
        node: &DdsNode,
        endpoint: &ServiceEndpoint,
        fill: Fill,
        sink: Arc<S>,
    ) -> Result<Opened> {
        let types = &endpoint.types;
        let request = (&self.request_topic, &types.request);
        let reply = (&self.reply_topic, &types.response);
        let (id_key, kind, (read_topic, read_type), (write_topic, write_type)) = match self.side {
            Side::Server => ("serviceid", EndpointKind::Service, request, reply),
            Side::Client => ("clientid", EndpointKind::Client, reply, request),
        };
        let user_data =
            |ts: &TypeSupport| endpoint_user_data(Some((id_key, &self.id)), &ts.info.hash);
        let new_writer = || {
            node.new_writer(
                write_topic,
                write_type.info.dds_type_name,
                &to_dds(&self.writer_qos),
                &user_data(write_type),
                Arc::new(()),
            )
        };
        // A sample's length is bounded as its type is (rmw_cyclonedds's header adds 16).
        let max_read = read_type.info.max_serialized_size().map(|n| n + HEADER_LEN);
        let new_reader = || {
            node.new_reader(
                read_topic,
                read_type.info.dds_type_name,
                &to_dds(&self.reader_qos),
                &user_data(read_type),
                fill.reader_mode(max_read),
                sink,
                Arc::new(()),
            )
        };
        let (reader, writer) = match self.side {
            Side::Server => {
                let writer = new_writer()?;
                (new_reader()?, writer)
            }
            Side::Client => {
                let reader = new_reader()?;
                (reader, new_writer()?)
            }
        };
        let reader_gid = Gid(reader.reader.guid().bytes);
        let writer_gid = Gid(writer.writer.guid().bytes);
        let (gid, qos) = match self.side {
            Side::Server => (reader_gid, self.reader_qos),
            Side::Client => (writer_gid, self.writer_qos),
        };
        let announced = node.announce(
            EndpointInfo::new(
                node.name.clone(),
                &endpoint.name,
                kind,
                types.type_name,
                types.type_hash,
                gid,
                qos,
            ),
            vec![DdsEntity::Reader(reader_gid), DdsEntity::Writer(writer_gid)],
        );
        Ok(Opened {
            reader,
            writer,
            announced,
        })
    }
}

/// Responses a peer sent that this client could not be waiting for, logged per client at most
/// every 10 s.
static UNASKED: ReportThrottle = ReportThrottle::new(Duration::from_secs(10));

/// Responses as the listener receives them, filtered to this client's. The queue never holds
/// more responses than requests this client sent and has not had answered: a server (or a
/// peer posing as one) that sends more, duplicates say, has them dropped and counted.
struct ResponseInbox {
    inbox: Inbox<(i64, Result<Payload>)>,
    /// This client's reply reader and request writer (set once both exist): a Fast DDS
    /// reply for this client names one of them as its related identity.
    own: OnceLock<([u8; 16], [u8; 16])>,
    /// This client's id in rmw_cyclonedds's header.
    header_id: u64,
    /// Requests sent (counted before each write, so a response never arrives before its
    /// request is counted) and responses taken.
    sent: AtomicU64,
    taken: AtomicU64,
}

impl SampleSink for ResponseInbox {
    fn sample(&self, data: Vec<u8>, meta: &SampleMeta) {
        let Some((reader, writer)) = self.own.get() else {
            return;
        };
        let (sequence, body) = if meta.related.set {
            if meta.related.guid != *reader && meta.related.guid != *writer {
                return; // another client's
            }
            (meta.related.seq, data)
        } else {
            match CycloneHeader::split(&data) {
                Some((header, body)) if header.client == self.header_id => (header.sequence, body),
                _ => return,
            }
        };
        let answerable = self
            .sent
            .load(Ordering::Acquire)
            .saturating_sub(self.taken.load(Ordering::Acquire));
        let limit = usize::try_from(answerable).unwrap_or(usize::MAX);
        if self.inbox.push_within(
            (sequence, Ok(Payload::Serialized(Box::new(body)))),
            meta.len,
            limit,
        ) {
            self.inbox.received(false);
        } else if let Some(held_back) = UNASKED.note(self.inbox.name()) {
            rclev::diagnostic!(WARN,
                target: "rclev_dds",
                "client {}: a response (sequence {sequence}) from writer {} dropped: more responses than requests waiting{held_back}",
                self.inbox.name(),
                id_text(&meta.identity.guid),
            );
        }
    }

    fn refused(&self, len: usize, meta: &SampleMeta) {
        self.inbox.refused(
            len,
            &format_args!("writer {}", crate::names::id_text(&meta.identity.guid)),
        );
    }
}

/// A ROS service client: a request writer on `rq/<name>Request` and a reply reader on
/// `rr/<name>Reply`.
pub(crate) struct DdsClient {
    name: String,
    inbox: Arc<ResponseInbox>,
    request_writer: Guarded<UniquePtr<DdsWriter>>,
    request_matched: Arc<Matched>,
    _reply_reader: Guarded<UniquePtr<DdsReader>>,
    reply_matched: Arc<Matched>,
    request: TypeSupport,
    graph: Arc<GraphCache>,
    /// Serializes writes, so that the next RTPS sequence number is known before a write
    /// (rmw_cyclonedds's header carries it).
    last_sequence: Mutex<i64>,
    gid: Gid,
    _announced: Announced,
}

impl DdsClient {
    pub fn new(
        node: &DdsNode,
        endpoint: &ServiceEndpoint,
        ready: Arc<dyn ReadyHook>,
    ) -> Result<Arc<Self>> {
        let setup = Setup::new(node, endpoint, Side::Client)?;
        // The header's client id: the unique half of the 16-byte id (rmw_cyclonedds uses an
        // instance handle; any 8 bytes the client filters replies on will do).
        let mut header_id = [0u8; 8];
        header_id.copy_from_slice(&setup.id_bytes[8..16]);
        // Bounded by the requests waiting, not by a depth: see `ResponseInbox`.
        let fill = Fill::KeepLast(usize::MAX);
        let inbox = Arc::new(ResponseInbox {
            inbox: Inbox::new(&endpoint.name, fill.history(), ready),
            own: OnceLock::new(),
            header_id: u64::from_be_bytes(header_id),
            sent: AtomicU64::new(0),
            taken: AtomicU64::new(0),
        });
        let opened = setup.open(node, endpoint, fill, inbox.clone())?;
        let reader_guid = opened.reader.reader.guid().bytes;
        let writer_guid = opened.writer.writer.guid().bytes;
        let _ = inbox.own.set((reader_guid, writer_guid));
        Ok(Arc::new(Self {
            name: endpoint.name.clone(),
            inbox,
            request_writer: opened.writer.writer,
            request_matched: opened.writer.matched,
            _reply_reader: opened.reader.reader,
            reply_matched: opened.reader.matched,
            request: endpoint.types.request,
            graph: node.shared.handle.graph.clone(),
            last_sequence: Mutex::new(0),
            gid: Gid(writer_guid),
            _announced: opened.announced,
        }))
    }

    /// Whether the servers this client reaches need rmw_cyclonedds's mapping (several servers
    /// of one service that disagree cannot all be served: ROS 2 leaves that undefined).
    fn servers_want_header(&self) -> bool {
        self.request_matched.all().iter().any(|g| {
            self.graph.remote(g).is_some_and(|e| {
                e.topic == RosTopic::Request(self.name.clone()) && e.needs_cyclone_header(g)
            })
        })
    }
}

impl ClientPort for DdsClient {
    fn send_request(&self, request: Payload) -> Result<i64> {
        if !self.service_is_ready() {
            return Err(Error::ServiceUnavailable(self.name.clone()));
        }
        let header = self.servers_want_header();
        let (reader_guid, _) = *self.inbox.own.get().expect("set at creation");
        with_cdr(&request, &self.request, |body| {
            require_encapsulation(body, &self.name)?;
            let mut last = lock(&self.last_sequence);
            // Before the write: its response may be taken on the receive thread before
            // `write` returns here. A failed write leaves one more answerable than there is:
            // slack, never a loss.
            self.inbox.sent.fetch_add(1, Ordering::AcqRel);
            let written = if header {
                let header = CycloneHeader {
                    client: self.inbox.header_id,
                    sequence: *last + 1,
                };
                self.request_writer
                    .write(&header.join(body), &NO_IDENTITY)
                    .map_err(engine_error)?
            } else {
                let related = SampleIdentity {
                    guid: reader_guid,
                    seq: -1,
                    set: true,
                };
                self.request_writer
                    .write(body, &related)
                    .map_err(engine_error)?
            };
            *last = written.seq;
            Ok(written.seq)
        })
    }

    fn take_response(&self) -> Option<(i64, Result<Payload>)> {
        let response = self.inbox.inbox.pop()?;
        self.inbox.taken.fetch_add(1, Ordering::AcqRel);
        Some(response)
    }

    fn service_is_ready(&self) -> bool {
        self.request_matched.count() > 0 && self.reply_matched.count() > 0
    }

    fn gid(&self) -> Gid {
        self.gid
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cyclone_header_round_trips_in_either_byte_order() {
        let header = CycloneHeader {
            client: 0x0102_0304_0506_0708,
            sequence: 42,
        };
        for encapsulation in [[0u8, 1, 0, 0], [0, 0, 0, 0]] {
            let mut body = encapsulation.to_vec();
            body.extend_from_slice(&[7, 0, 0, 0]);
            let sample = header.join(&body);
            assert_eq!(sample.len(), body.len() + 16);
            let (back, rest) = CycloneHeader::split(&sample).unwrap();
            assert_eq!(back, header);
            assert_eq!(rest, body);
        }
        let le = header.join(&[0, 1, 0, 0]);
        assert_eq!(&le[4..12], &0x0102_0304_0506_0708u64.to_le_bytes());
        assert_eq!(CycloneHeader::split(&[0, 1, 0, 0, 1, 2]), None);
    }

    #[test]
    fn readers_are_told_from_writers_by_entity_kind() {
        let mut g = [0u8; 16];
        g[15] = 0x04;
        assert!(is_reader(&g));
        g[15] = 0x03;
        assert!(!is_reader(&g));
        g[15] = 0x07;
        assert!(is_reader(&g));
    }
}
