//! Services and clients: a service is a Zenoh queryable on the service's key expression,
//! declared complete, announced by an `SS` token; a call is a query on it (target all
//! complete queryables, no consolidation, as rmw_zenoh) carrying the request and an
//! attachment with the client's sequence number and GID, which the reply echoes.
//!
//! The server keeps each query it has not answered: in its [`Inbox`] until the worker takes
//! the request (KeepLast depth: the oldest dropped), then among the pending ones until the
//! response is sent (at most [`MAX_PENDING`], the oldest dropped). A query dropped unanswered
//! ends with no reply, which the client reports as a failed call at once rather than after
//! its timeout. A client queues at most one response per request it sent.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use zenoh::bytes::ZBytes;
use zenoh::query::{ConsolidationMode, Query, QueryTarget, Reply};
use zenoh::Wait;

use rclev::qos::QosRole;
use rclev::transport::{
    ClientPort, DeserializeFn, Gid, Inbox, InboxHistory, Payload, ReadyHook, RequestId,
    ServiceEndpoint, ServicePort, ServiceTypes,
};
use rclev::{Error, History, QoSProfile, Result};

use super::graph::MatchKey;
use super::topic::{decode_payload, encode, now_ns, read_attachment};
use super::{zenoh_error, Announced, Shared, ZenohNode};
use crate::wire::keyexpr::{service_keyexpr, service_type_name};
use crate::wire::{Attachment, EntityKind, TopicInfo, WireQos, WireTypeHash};

/// The most requests a server holds taken but not yet answered; beyond it the oldest is
/// dropped (its client's call fails). Bounds what peers can make a server keep while its
/// handlers are slow or never answer.
pub const MAX_PENDING: usize = 4096;

/// A service's key expression and its token's topic part.
fn service_wire(
    node: &ZenohNode,
    endpoint: &ServiceEndpoint,
    qos: &QoSProfile,
) -> Result<(String, TopicInfo)> {
    let types = &endpoint.types;
    let invalid = |e: crate::wire::WireError| Error::InvalidArgument {
        argument: format!("service type {}", types.type_name),
        reason: e.to_string(),
    };
    let keyexpr = service_keyexpr(node.shared.domain_id, &endpoint.name, types).map_err(invalid)?;
    let type_name = service_type_name(types.request.info.dds_type_name).map_err(invalid)?;
    Ok((
        keyexpr,
        TopicInfo {
            name: endpoint.name.clone(),
            type_name: type_name.to_owned(),
            type_hash: types.type_hash.into(),
            qos: WireQos::from_profile(qos),
        },
    ))
}

/// A request waiting for the worker: its id, its body and the query to answer.
type Request = (RequestId, Payload, Query);

/// What the queryable's callback shares with the port.
struct Requests {
    inbox: Inbox<Request>,
    decode: Option<DeserializeFn>,
    max_len: usize,
}

impl Requests {
    /// A query arrived: on Zenoh's receive thread.
    fn on_query(&self, query: Query) {
        let name = self.inbox.name();
        // Without an attachment there is no request id to answer to (rmw_zenoh drops such
        // queries too); dropping the query ends the caller's call with no reply.
        let Some(attachment) = read_attachment(query.attachment(), name) else {
            return;
        };
        let Some(payload) = query.payload() else {
            return;
        };
        if payload.len() > self.max_len {
            self.inbox.refused(
                payload.len(),
                &format_args!("client {}", attachment.source_gid),
            );
            return;
        }
        let len = payload.len();
        let request = decode_payload(payload.to_bytes(), self.decode);
        let id = RequestId {
            writer_guid: attachment.source_gid,
            sequence_number: attachment.sequence_number,
        };
        if self.inbox.push((id, request, query), len) {
            self.inbox.received(false);
        }
    }
}

/// A ROS service: a complete queryable on the service's key expression.
pub(crate) struct ZenohService {
    requests: Arc<Requests>,
    queryable: Mutex<Option<zenoh::query::Queryable<()>>>,
    /// Taken requests awaiting their response, oldest first.
    pending: Mutex<VecDeque<(RequestId, Query)>>,
    types: ServiceTypes,
    announced: Mutex<Option<Announced>>,
}

impl ZenohService {
    pub fn new(
        node: &ZenohNode,
        endpoint: &ServiceEndpoint,
        ready: Arc<dyn ReadyHook>,
    ) -> Result<Arc<Self>> {
        let qos = endpoint.qos.resolve(QosRole::Subscription, &[]);
        qos.validate()?;
        let (keyexpr, topic) = service_wire(node, endpoint, &qos)?;
        let history = match qos.history {
            History::KeepLast(n) => InboxHistory::KeepLast(n.max(1)),
            History::SystemDefault => InboxHistory::KeepLast(1),
            History::KeepAll => InboxHistory::KeepAll { limit: MAX_PENDING },
        };
        let request = &endpoint.types.request;
        let requests = Arc::new(Requests {
            inbox: Inbox::new(&endpoint.name, history, ready),
            decode: request.deserialize(),
            max_len: request.info.max_serialized_size().unwrap_or(usize::MAX),
        });
        let sink = requests.clone();
        let queryable = node
            .shared
            .zenoh()
            .declare_queryable(keyexpr.clone())
            .complete(true)
            .callback(move |query| sink.on_query(query))
            .wait()
            .map_err(|e| zenoh_error(&format!("declaring a queryable on {keyexpr}"), e))?;
        let token = node.endpoint_token(EntityKind::Service, topic);
        let announced = node.shared.announce(&token)?;
        Ok(Arc::new(Self {
            requests,
            queryable: Mutex::new(Some(queryable)),
            pending: Mutex::new(VecDeque::new()),
            types: endpoint.types,
            announced: Mutex::new(Some(announced)),
        }))
    }

    fn pending(&self) -> MutexGuard<'_, VecDeque<(RequestId, Query)>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The pending query of request `id`, removed.
    fn take_pending(&self, id: RequestId) -> Option<Query> {
        let mut pending = self.pending();
        let at = pending
            .iter()
            .position(|(pending_id, _)| *pending_id == id)?;
        pending.remove(at).map(|(_, query)| query)
    }
}

impl ServicePort for ZenohService {
    fn take_request(&self) -> Option<(RequestId, Payload)> {
        let (id, request, query) = self.requests.inbox.pop()?;
        let dropped = {
            let mut pending = self.pending();
            pending.push_back((id, query));
            (pending.len() > MAX_PENDING).then(|| pending.pop_front())
        };
        // Dropped outside the lock: it sends the caller the end of its query.
        drop(dropped);
        Some((id, request))
    }

    fn send_response(&self, id: RequestId, response: Payload) -> Result<()> {
        let Some(query) = self.take_pending(id) else {
            return Err(Error::Transport(format!(
                "{}: no request {} of client {} is waiting for a response",
                self.requests.inbox.name(),
                id.sequence_number,
                id.writer_guid
            )));
        };
        let bytes = encode(&response, &self.types.response)?;
        let attachment = Attachment {
            sequence_number: id.sequence_number,
            source_timestamp: now_ns(),
            source_gid: id.writer_guid,
        };
        query
            .reply(query.key_expr().clone(), ZBytes::from(bytes))
            .attachment(ZBytes::from(attachment.encode().to_vec()))
            .wait()
            .map_err(|e| zenoh_error(&format!("replying on {}", self.requests.inbox.name()), e))
    }

    fn abandon_request(&self, id: RequestId) {
        // The query ends unanswered: the client's call fails at once.
        drop(self.take_pending(id));
    }

    fn close(&self) {
        self.requests.inbox.close();
        let queryable = self
            .queryable
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        drop(queryable);
        let announced = self
            .announced
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        drop(announced);
        self.requests.inbox.close();
        let pending = std::mem::take(&mut *self.pending());
        drop(pending);
    }

    fn lost_count(&self) -> u64 {
        self.requests.inbox.lost_count()
    }

    fn refused_count(&self) -> u64 {
        self.requests.inbox.refused_count()
    }
}

impl Drop for ZenohService {
    fn drop(&mut self) {
        self.close();
    }
}

/// What a client's query callbacks share with its port.
struct Responses {
    inbox: Inbox<(i64, Result<Payload>)>,
    decode: Option<DeserializeFn>,
    max_len: usize,
}

/// One call in flight: the first reply is queued; when Zenoh drops the callback (the query
/// is over) without one, the call is failed.
struct Call {
    responses: Arc<Responses>,
    sequence_number: i64,
    answered: AtomicBool,
}

impl Call {
    fn on_reply(&self, reply: &Reply) {
        let result = match reply.result() {
            Ok(sample) => {
                let payload = sample.payload();
                if payload.len() > self.responses.max_len {
                    self.responses.inbox.refused(payload.len(), &"a server");
                    return;
                }
                Ok(decode_payload(payload.to_bytes(), self.responses.decode))
            }
            Err(error) => Err(Error::ServiceFailed(format!(
                "{}: the server replied with an error: {}",
                self.responses.inbox.name(),
                rclev::printable(&String::from_utf8_lossy(&error.payload().to_bytes()), 200)
            ))),
        };
        // Only the first reply counts (several servers may answer one call).
        if !self.answered.swap(true, Ordering::AcqRel) {
            self.deliver(result);
        }
    }

    fn deliver(&self, result: Result<Payload>) {
        let len = match &result {
            Ok(Payload::Serialized(bytes)) => bytes.len(),
            _ => 0,
        };
        if self
            .responses
            .inbox
            .push((self.sequence_number, result), len)
        {
            self.responses.inbox.received(false);
        }
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        if !self.answered.load(Ordering::Acquire) {
            let name = self.responses.inbox.name().to_owned();
            self.deliver(Err(Error::ServiceFailed(format!(
                "{name}: the call ended without a response (no server answered, or it dropped \
                 the request)"
            ))));
        }
    }
}

/// A ROS client: queries on the service's key expression.
pub(crate) struct ZenohClient {
    shared: Arc<Shared>,
    responses: Arc<Responses>,
    keyexpr: String,
    name: String,
    dds_type_name: String,
    type_hash: WireTypeHash,
    request: rclev::transport::TypeSupport,
    /// The last sequence number used (the first request carries 1).
    sequence: AtomicI64,
    gid: Gid,
    _announced: Announced,
}

impl ZenohClient {
    pub fn new(
        node: &ZenohNode,
        endpoint: &ServiceEndpoint,
        ready: Arc<dyn ReadyHook>,
    ) -> Result<Arc<Self>> {
        let qos = endpoint.qos.resolve(QosRole::Publisher, &[]);
        qos.validate()?;
        let (keyexpr, topic) = service_wire(node, endpoint, &qos)?;
        let response = &endpoint.types.response;
        let responses = Arc::new(Responses {
            // One response per request sent: never more than the calls in flight.
            inbox: Inbox::new(&endpoint.name, InboxHistory::OnDemand, ready),
            decode: response.deserialize(),
            max_len: response.info.max_serialized_size().unwrap_or(usize::MAX),
        });
        let dds_type_name = topic.type_name.clone();
        let token = node.endpoint_token(EntityKind::Client, topic);
        let gid = token.gid();
        let announced = node.shared.announce(&token)?;
        Ok(Arc::new(Self {
            shared: node.shared.clone(),
            responses,
            keyexpr,
            name: endpoint.name.clone(),
            dds_type_name,
            type_hash: endpoint.types.type_hash.into(),
            request: endpoint.types.request,
            sequence: AtomicI64::new(0),
            gid,
            _announced: announced,
        }))
    }
}

impl ClientPort for ZenohClient {
    fn send_request(&self, request: Payload) -> Result<i64> {
        if !self.service_is_ready() {
            return Err(Error::ServiceUnavailable(self.name.clone()));
        }
        let bytes = encode(&request, &self.request)?;
        let sequence_number = self.sequence.fetch_add(1, Ordering::Relaxed) + 1;
        let attachment = Attachment {
            sequence_number,
            source_timestamp: now_ns(),
            source_gid: self.gid,
        };
        let call = Call {
            responses: self.responses.clone(),
            sequence_number,
            answered: AtomicBool::new(false),
        };
        self.shared
            .zenoh()
            .get(self.keyexpr.clone())
            .payload(ZBytes::from(bytes))
            .attachment(ZBytes::from(attachment.encode().to_vec()))
            .target(QueryTarget::AllComplete)
            .consolidation(ConsolidationMode::None)
            .callback(move |reply| call.on_reply(&reply))
            .wait()
            .map_err(|e| zenoh_error(&format!("querying {}", self.keyexpr), e))?;
        Ok(sequence_number)
    }

    fn take_response(&self) -> Option<(i64, Result<Payload>)> {
        self.responses.inbox.pop()
    }

    fn service_is_ready(&self) -> bool {
        self.shared.graph.count(MatchKey {
            name: &self.name,
            dds_type_name: &self.dds_type_name,
            type_hash: &self.type_hash,
            kind: EntityKind::Service,
        }) > 0
    }

    fn gid(&self) -> Gid {
        self.gid
    }
}
