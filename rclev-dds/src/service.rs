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

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use cxx::UniquePtr;

use rclev::qos::QosRole;
use rclev::transport::{
    ClientPort, EndpointKind, Gid, Payload, ReadyHook, RequestId, ServiceEndpoint, ServicePort,
    TypeSupport,
};
use rclev::{Error, QoSProfile, Result};

use crate::ffi::bridge::{DdsReader, DdsWriter, SampleIdentity, SampleMeta};
use crate::ffi::Endpoint;
use crate::graph::{DdsEntity, GraphCache};
use crate::matched::{Matched, SampleSink};
use crate::names::{cyclone_service_id, endpoint_user_data, id_text, service_topics, RosTopic};
use crate::qos::to_dds;
use crate::topic::{require_encapsulation, with_cdr, NO_IDENTITY};
use crate::transport::{engine_error, Announced, DdsNode};

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

/// Requests as the listener receives them.
struct RequestInbox {
    name: String,
    queue: Mutex<VecDeque<(RequestId, Payload)>>,
    routes: Mutex<HashMap<RequestId, ReplyRoute>>,
    graph: Arc<GraphCache>,
    closed: AtomicBool,
    ready: Arc<dyn ReadyHook>,
}

impl SampleSink for RequestInbox {
    fn sample(&self, data: &[u8], meta: &SampleMeta) {
        if self.closed.load(Ordering::Acquire) {
            return;
        }
        let writer = Gid(meta.identity.guid);
        let remote = self.graph.remote(&writer);
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
                reader: is_reader(&meta.related.guid).then_some(Gid(meta.related.guid)),
            };
            (id, data.to_vec(), Some(route))
        } else if remote
            .as_ref()
            .is_some_and(|e| e.needs_cyclone_header(&writer))
        {
            match CycloneHeader::split(data) {
                Some((header, body)) => {
                    let mut gid = [0u8; 16];
                    gid[..8].copy_from_slice(&header.client.to_be_bytes());
                    gid[8..].copy_from_slice(&writer.0[8..]);
                    let id = RequestId {
                        writer_guid: Gid(gid),
                        sequence_number: header.sequence,
                    };
                    let client_id = remote.and_then(|e| e.user_data.get("clientid").cloned());
                    (id, body, Some(ReplyRoute::Header { header, client_id }))
                }
                // Too short for a header: hand it on as it is, the node layer reports it
                // malformed (no reply can be routed for it).
                None => (
                    RequestId {
                        writer_guid: writer,
                        sequence_number: meta.identity.seq,
                    },
                    data.to_vec(),
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
            (id, data.to_vec(), Some(route))
        };
        if let Some(route) = route {
            lock(&self.routes).insert(id, route);
        }
        lock(&self.queue).push_back((id, Payload::Serialized(Box::new(body))));
        self.ready.ready();
    }
}

/// A ROS service server: a request reader on `rq/<name>Request` and a reply writer on
/// `rr/<name>Reply`.
pub(crate) struct DdsService {
    inbox: Arc<RequestInbox>,
    request_reader: Mutex<Option<Endpoint<UniquePtr<DdsReader>>>>,
    reply_writer: Endpoint<UniquePtr<DdsWriter>>,
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
        let Setup {
            reader_qos,
            writer_qos,
            request_topic,
            reply_topic,
            id,
            ..
        } = Setup::new(node, endpoint)?;
        let types = &endpoint.types;
        let graph = node.shared.graph.clone();
        let inbox = Arc::new(RequestInbox {
            name: endpoint.name.clone(),
            queue: Mutex::new(VecDeque::new()),
            routes: Mutex::new(HashMap::new()),
            graph: graph.clone(),
            closed: AtomicBool::new(false),
            ready,
        });
        // The reply writer first: a request may arrive as soon as the reader exists.
        let writer = node.new_writer(
            &reply_topic,
            types.response.info.dds_type_name,
            &to_dds(&writer_qos),
            &endpoint_user_data(Some(("serviceid", &id)), &types.response.info.hash),
            Arc::new(()),
        )?;
        let reader = node.new_reader(
            &request_topic,
            types.request.info.dds_type_name,
            &to_dds(&reader_qos),
            &endpoint_user_data(Some(("serviceid", &id)), &types.request.info.hash),
            inbox.clone(),
            Arc::new(()),
        )?;
        let gid = Gid(reader.reader.guid().bytes);
        let announced = node.announce(
            node.endpoint_info(
                &endpoint.name,
                EndpointKind::Service,
                types.type_name,
                types.type_hash,
                gid,
                reader_qos,
            ),
            vec![
                DdsEntity::Reader(gid),
                DdsEntity::Writer(Gid(writer.writer.guid().bytes)),
            ],
        );
        Ok(Arc::new(Self {
            inbox,
            request_reader: Mutex::new(Some(reader.reader)),
            reply_writer: writer.writer,
            reply_matched: writer.matched,
            response: types.response,
            announced: Mutex::new(Some(announced)),
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
                let graph = &self.inbox.graph;
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
        lock(&self.inbox.queue).pop_front()
    }

    fn send_response(&self, id: RequestId, response: Payload) -> Result<()> {
        let route = lock(&self.inbox.routes).remove(&id).ok_or_else(|| {
            Error::Transport(format!(
                "service {:?}: no request {id:?} is waiting for a response",
                self.inbox.name
            ))
        })?;
        if !self.wait_for_client(&route) {
            return Err(Error::Timeout {
                what: format!(
                    "service {:?}: the client's reply reader to match",
                    self.inbox.name
                ),
                after: REPLY_MATCH_WAIT,
            });
        }
        with_cdr(&response, &self.response, |body| {
            require_encapsulation(body, &self.inbox.name)?;
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
        lock(&self.inbox.routes).remove(&id);
    }

    fn close(&self) {
        self.inbox.closed.store(true, Ordering::Release);
        let reader = lock(&self.request_reader).take();
        drop(reader);
        let announced = lock(&self.announced).take();
        drop(announced);
        lock(&self.inbox.queue).clear();
        lock(&self.inbox.routes).clear();
    }
}

impl Drop for DdsService {
    fn drop(&mut self) {
        self.close();
    }
}

/// What a server and a client both start from.
struct Setup {
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

impl Setup {
    fn new(node: &DdsNode, endpoint: &ServiceEndpoint) -> Result<Self> {
        let reader_qos = endpoint.qos.resolve(QosRole::Subscription, &[]);
        let writer_qos = endpoint.qos.resolve(QosRole::Publisher, &[]);
        reader_qos.validate()?;
        writer_qos.validate()?;
        let (request_topic, reply_topic) =
            service_topics(&endpoint.name, endpoint.qos.avoid_ros_namespace_conventions);
        let n = node.shared.next_service_id.fetch_add(1, Ordering::Relaxed);
        let id_bytes = cyclone_service_id(&node.shared.guid, n);
        Ok(Self {
            reader_qos,
            writer_qos,
            request_topic,
            reply_topic,
            id: id_text(&id_bytes),
            id_bytes,
        })
    }
}

/// Responses as the listener receives them, filtered to this client's.
struct ResponseInbox {
    queue: Mutex<VecDeque<(i64, Result<Payload>)>>,
    /// This client's reply reader and request writer (set once both exist): a Fast DDS
    /// reply for this client names one of them as its related identity.
    own: OnceLock<([u8; 16], [u8; 16])>,
    /// This client's id in rmw_cyclonedds's header.
    header_id: u64,
    ready: Arc<dyn ReadyHook>,
}

impl SampleSink for ResponseInbox {
    fn sample(&self, data: &[u8], meta: &SampleMeta) {
        let Some((reader, writer)) = self.own.get() else {
            return;
        };
        let response = if meta.related.set {
            if meta.related.guid != *reader && meta.related.guid != *writer {
                return; // another client's
            }
            (meta.related.seq, data.to_vec())
        } else {
            match CycloneHeader::split(data) {
                Some((header, body)) if header.client == self.header_id => (header.sequence, body),
                _ => return,
            }
        };
        lock(&self.queue).push_back((response.0, Ok(Payload::Serialized(Box::new(response.1)))));
        self.ready.ready();
    }
}

/// A ROS service client: a request writer on `rq/<name>Request` and a reply reader on
/// `rr/<name>Reply`.
pub(crate) struct DdsClient {
    name: String,
    inbox: Arc<ResponseInbox>,
    request_writer: Endpoint<UniquePtr<DdsWriter>>,
    request_matched: Arc<Matched>,
    _reply_reader: Endpoint<UniquePtr<DdsReader>>,
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
        let Setup {
            reader_qos,
            writer_qos,
            request_topic,
            reply_topic,
            id,
            id_bytes,
        } = Setup::new(node, endpoint)?;
        let types = &endpoint.types;
        // The header's client id: the unique half of the 16-byte id (rmw_cyclonedds uses an
        // instance handle; any 8 bytes the client filters replies on will do).
        let mut header_id = [0u8; 8];
        header_id.copy_from_slice(&id_bytes[8..16]);
        let inbox = Arc::new(ResponseInbox {
            queue: Mutex::new(VecDeque::new()),
            own: OnceLock::new(),
            header_id: u64::from_be_bytes(header_id),
            ready,
        });
        let reader = node.new_reader(
            &reply_topic,
            types.response.info.dds_type_name,
            &to_dds(&reader_qos),
            &endpoint_user_data(Some(("clientid", &id)), &types.response.info.hash),
            inbox.clone(),
            Arc::new(()),
        )?;
        let writer = node.new_writer(
            &request_topic,
            types.request.info.dds_type_name,
            &to_dds(&writer_qos),
            &endpoint_user_data(Some(("clientid", &id)), &types.request.info.hash),
            Arc::new(()),
        )?;
        let reader_guid = reader.reader.guid().bytes;
        let writer_guid = writer.writer.guid().bytes;
        let _ = inbox.own.set((reader_guid, writer_guid));
        let gid = Gid(writer_guid);
        let announced = node.announce(
            node.endpoint_info(
                &endpoint.name,
                EndpointKind::Client,
                types.type_name,
                types.type_hash,
                gid,
                writer_qos,
            ),
            vec![DdsEntity::Reader(Gid(reader_guid)), DdsEntity::Writer(gid)],
        );
        Ok(Arc::new(Self {
            name: endpoint.name.clone(),
            inbox,
            request_writer: writer.writer,
            request_matched: writer.matched,
            _reply_reader: reader.reader,
            reply_matched: reader.matched,
            request: types.request,
            graph: node.shared.graph.clone(),
            last_sequence: Mutex::new(0),
            gid,
            _announced: announced,
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
        lock(&self.inbox.queue).pop_front()
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
