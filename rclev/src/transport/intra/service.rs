//! Services in process: one server per name, requests queued at the server, responses routed
//! back to the client that asked.
//!
//! Stronger than the [`Transport`](crate::transport::Transport) contract: a request with no
//! server to take it fails at once, and a server that goes away answers what it holds with
//! [`Error::ServiceUnavailable`] instead of leaving its clients to their timeouts.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use super::{Domain, IntraNode};
use crate::base::error::{Error, Result};
use crate::base::sync::lock;
use crate::transport::{
    ClientPort, EndpointInfo, EndpointKind, Gid, Payload, ReadyHook, RequestId, ServiceEndpoint,
    ServicePort, ServiceTypes, TypeSupport,
};

pub(super) struct ServiceSlot {
    name: String,
    types: ServiceTypes,
    /// Lock order: `requests` before `in_progress`.
    requests: Mutex<RequestQueue>,
    /// Requests taken by the server and not answered yet, with where the answer goes.
    in_progress: Mutex<HashMap<RequestId, Weak<ClientQueue>>>,
    ready: Arc<dyn ReadyHook>,
}

/// Requests waiting for the server. `closed` lives under the same lock as the queue so that a
/// client that found the slot just before the service closed either gets its request into the
/// queue before `close` drains it (and is answered with an error) or is refused: never queued
/// after the drain, where nobody would answer it.
#[derive(Default)]
struct RequestQueue {
    queued: VecDeque<(RequestId, Payload, Weak<ClientQueue>)>,
    closed: bool,
}

/// Converts a payload between two Rust types of one interface (through CDR); shares it as it
/// is when the types are the same.
fn carry(payload: Payload, from: &TypeSupport, to: &TypeSupport) -> Result<Payload> {
    if from.rust_type() == to.rust_type() {
        return Ok(payload);
    }
    payload.to_serialized(from)
}

struct IntraService {
    domain: Weak<Domain>,
    slot: Arc<ServiceSlot>,
    gid: Gid,
    closed: AtomicBool,
}

pub(super) fn create_service(
    node: &IntraNode,
    endpoint: &ServiceEndpoint,
    ready: Arc<dyn ReadyHook>,
) -> Result<Arc<dyn ServicePort>> {
    endpoint.qos.validate()?;
    let slot = {
        let mut reg = lock(&node.domain.registry);
        if reg
            .services
            .get(&endpoint.name)
            .and_then(Weak::upgrade)
            .is_some()
        {
            return Err(Error::ServiceAlreadyExists(endpoint.name.clone()));
        }
        let slot = Arc::new(ServiceSlot {
            name: endpoint.name.clone(),
            types: endpoint.types,
            requests: Mutex::default(),
            in_progress: Mutex::default(),
            ready,
        });
        reg.services
            .insert(endpoint.name.clone(), Arc::downgrade(&slot));
        slot
    };
    let gid = Gid::next_local();
    node.domain.announce(EndpointInfo::new(
        node.name.clone(),
        &endpoint.name,
        EndpointKind::Service,
        endpoint.types.type_name,
        endpoint.types.type_hash,
        gid,
        endpoint.qos,
    ));
    Ok(Arc::new(IntraService {
        domain: Arc::downgrade(&node.domain),
        slot,
        gid,
        closed: AtomicBool::new(false),
    }))
}

impl ServicePort for IntraService {
    fn take_request(&self) -> Option<(RequestId, Payload)> {
        // Both locks at once, so `close` never drains `in_progress` between the two steps and
        // leaves a taken request without an answer.
        let mut requests = lock(&self.slot.requests);
        let (id, payload, reply_to) = requests.queued.pop_front()?;
        lock(&self.slot.in_progress).insert(id, reply_to);
        Some((id, payload))
    }

    fn send_response(&self, id: RequestId, response: Payload) -> Result<()> {
        let reply_to = lock(&self.slot.in_progress).remove(&id);
        // A client that was dropped meanwhile simply no longer wants the answer.
        if let Some(client) = reply_to.and_then(|w| w.upgrade()) {
            let response = carry(response, &self.slot.types.response, &client.types.response);
            client.push(id.sequence_number, response);
        }
        Ok(())
    }

    fn abandon_request(&self, id: RequestId) {
        let reply_to = lock(&self.slot.in_progress).remove(&id);
        if let Some(client) = reply_to.and_then(|w| w.upgrade()) {
            client.push(
                id.sequence_number,
                Err(Error::ServiceFailed(self.slot.name.clone())),
            );
        }
    }

    fn close(&self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        if let Some(domain) = self.domain.upgrade() {
            {
                let mut reg = lock(&domain.registry);
                if let Some(existing) = reg.services.get(&self.slot.name) {
                    if std::ptr::eq(existing.as_ptr(), Arc::as_ptr(&self.slot)) {
                        reg.services.remove(&self.slot.name);
                    }
                }
            }
            domain.withdraw(self.gid);
        }
        // Nobody will answer these: tell their clients instead of letting them hang.
        let gone = || Err(Error::ServiceUnavailable(self.slot.name.clone()));
        let (queued, taken): (Vec<_>, Vec<_>) = {
            let mut requests = lock(&self.slot.requests);
            requests.closed = true;
            let queued = requests.queued.drain(..).collect();
            let taken = lock(&self.slot.in_progress).drain().collect();
            (queued, taken)
        };
        for (id, _, client) in queued {
            if let Some(c) = client.upgrade() {
                c.push(id.sequence_number, gone());
            }
        }
        for (id, client) in taken {
            if let Some(c) = client.upgrade() {
                c.push(id.sequence_number, gone());
            }
        }
    }
}

impl Drop for IntraService {
    fn drop(&mut self) {
        self.close();
    }
}

struct ClientQueue {
    types: ServiceTypes,
    responses: Mutex<VecDeque<(i64, Result<Payload>)>>,
    ready: Arc<dyn ReadyHook>,
}

impl ClientQueue {
    fn push(&self, seq: i64, response: Result<Payload>) {
        lock(&self.responses).push_back((seq, response));
        self.ready.ready();
    }
}

struct IntraClient {
    domain: Weak<Domain>,
    service_name: String,
    gid: Gid,
    sequence: AtomicU64,
    queue: Arc<ClientQueue>,
}

pub(super) fn create_client(
    node: &IntraNode,
    endpoint: &ServiceEndpoint,
    ready: Arc<dyn ReadyHook>,
) -> Result<Arc<dyn ClientPort>> {
    endpoint.qos.validate()?;
    let gid = Gid::next_local();
    node.domain.announce(EndpointInfo::new(
        node.name.clone(),
        &endpoint.name,
        EndpointKind::Client,
        endpoint.types.type_name,
        endpoint.types.type_hash,
        gid,
        endpoint.qos,
    ));
    Ok(Arc::new(IntraClient {
        domain: Arc::downgrade(&node.domain),
        service_name: endpoint.name.clone(),
        gid,
        sequence: AtomicU64::new(0),
        queue: Arc::new(ClientQueue {
            types: endpoint.types,
            responses: Mutex::default(),
            ready,
        }),
    }))
}

impl IntraClient {
    /// The server, if there is one of this client's service type (like topics, services of
    /// two types on one name do not match).
    fn slot(&self) -> Option<Arc<ServiceSlot>> {
        let domain = self.domain.upgrade()?;
        let reg = lock(&domain.registry);
        let slot = reg.services.get(&self.service_name)?.upgrade()?;
        let (ours, theirs) = (&self.queue.types, &slot.types);
        (ours.type_name == theirs.type_name && ours.type_hash == theirs.type_hash).then_some(slot)
    }
}

impl ClientPort for IntraClient {
    fn send_request(&self, request: Payload) -> Result<i64> {
        let slot = self
            .slot()
            .ok_or_else(|| Error::ServiceUnavailable(self.service_name.clone()))?;
        let request = carry(request, &self.queue.types.request, &slot.types.request)?;
        let seq = self.sequence.fetch_add(1, Ordering::Relaxed) as i64 + 1;
        let id = RequestId {
            writer_guid: self.gid,
            sequence_number: seq,
        };
        {
            let mut requests = lock(&slot.requests);
            if requests.closed {
                return Err(Error::ServiceUnavailable(self.service_name.clone()));
            }
            requests
                .queued
                .push_back((id, request, Arc::downgrade(&self.queue)));
        }
        slot.ready.ready();
        Ok(seq)
    }

    fn take_response(&self) -> Option<(i64, Result<Payload>)> {
        lock(&self.queue.responses).pop_front()
    }

    fn service_is_ready(&self) -> bool {
        self.slot().is_some()
    }

    fn gid(&self) -> Gid {
        self.gid
    }
}

impl Drop for IntraClient {
    fn drop(&mut self) {
        if let Some(domain) = self.domain.upgrade() {
            domain.withdraw(self.gid);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interfaces::example_interfaces::srv::{AddTwoInts, AddTwoInts_Request};
    use crate::qos::QoSProfile;
    use crate::transport::{IntraProcess, NodeName, Transport};

    struct CountingHook(AtomicU64);

    impl ReadyHook for CountingHook {
        fn ready(&self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn endpoint() -> ServiceEndpoint {
        ServiceEndpoint {
            name: "/add".into(),
            types: ServiceTypes::of::<AddTwoInts>(),
            qos: QoSProfile::services_default(),
        }
    }

    fn request() -> Payload {
        Payload::Shared(Arc::new(AddTwoInts_Request { a: 1, b: 2 }))
    }

    #[test]
    fn closing_a_service_answers_what_it_holds_and_refuses_late_requests() {
        let transport = IntraProcess::new();
        let node = transport
            .create_node(&NodeName {
                name: "n".into(),
                namespace: "/".into(),
            })
            .unwrap();
        let hook = || Arc::new(CountingHook(AtomicU64::new(0)));
        let service = node.create_service(&endpoint(), hook()).unwrap();
        let client = node.create_client(&endpoint(), hook()).unwrap();
        let taken = client.send_request(request()).unwrap();
        let queued = client.send_request(request()).unwrap();
        let (taken_id, _) = service.take_request().unwrap();
        assert_eq!(taken_id.sequence_number, taken);
        assert_eq!(taken_id.writer_guid, client.gid());
        // A client that looked the slot up just before the close: put the slot back where
        // it finds it, as if its lookup had won the race.
        let registry = || lock(&transport.domain.registry);
        let slot = Arc::downgrade(&registry().services["/add"].upgrade().unwrap());
        service.close();
        assert!(!client.service_is_ready());
        registry().services.insert("/add".into(), slot);
        assert!(matches!(
            client.send_request(request()),
            Err(Error::ServiceUnavailable(_))
        ));
        assert!(service.take_request().is_none());
        let mut answers: Vec<_> = std::iter::from_fn(|| client.take_response()).collect();
        answers.sort_by_key(|(seq, _)| *seq);
        assert_eq!(answers.len(), 2);
        assert_eq!((answers[0].0, answers[1].0), (taken, queued));
        assert!(answers
            .iter()
            .all(|(_, r)| matches!(r, Err(Error::ServiceUnavailable(_)))));
        // A response to the request taken before the close has nobody left to reach.
        service
            .send_response(
                taken_id,
                Payload::Shared(Arc::new(
                    crate::interfaces::example_interfaces::srv::AddTwoInts_Response { sum: 3 },
                )),
            )
            .unwrap();
        assert!(client.take_response().is_none());
        // Closing again, and dropping, change nothing.
        service.close();
        drop(service);
        assert!(client.take_response().is_none());
    }
}
