//! The in-process transport: the embedded default. Messages move as `Arc`s, never copied.
//!
//! Lock order (outer first): `Registry` → `Topic::publishers` → a publisher's `history` →
//! `Topic::subscriptions` → a subscription's queue. The publish path takes only the last three,
//! and only the history lock when the publisher is transient-local.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};

use super::{
    ClientPort, Endpoint, MessageInfo, Payload, PublisherPort, ReadyHook, RequestId, ServicePort,
    SubscriptionPort, Transport, TypeSupport,
};
use crate::error::{Error, Result};
use crate::qos::{Durability, QoSProfile};
use crate::sync::lock;

/// The in-process transport. One instance is one "domain": endpoints created through the same
/// instance (the same [`Context`](crate::Context)) see each other.
#[derive(Default)]
pub struct IntraProcess {
    registry: Arc<IntraProcessShared>,
}

#[derive(Default)]
struct Registry {
    topics: HashMap<String, Weak<Topic>>,
    services: HashMap<String, Weak<ServiceSlot>>,
}

static NEXT_GID: AtomicU64 = AtomicU64::new(1);

fn next_gid() -> u64 {
    NEXT_GID.fetch_add(1, Ordering::Relaxed)
}

impl IntraProcess {
    /// A new, empty domain.
    pub fn new() -> Self {
        Self::default()
    }

    fn shared(&self) -> Arc<IntraProcessShared> {
        self.registry.clone()
    }

    fn topic(&self, endpoint: &Endpoint) -> Result<Arc<Topic>> {
        let mut reg = lock(&self.registry);
        if let Some(topic) = reg.topics.get(&endpoint.name).and_then(Weak::upgrade) {
            if topic.type_support.type_id != endpoint.type_support.type_id {
                return Err(Error::TopicTypeMismatch {
                    topic: endpoint.name.clone(),
                    existing: topic.type_support.info.type_name.to_string(),
                    requested: endpoint.type_support.info.type_name.to_string(),
                });
            }
            return Ok(topic);
        }
        let topic = Arc::new(Topic {
            registry: Arc::downgrade(&self.registry),
            name: endpoint.name.clone(),
            type_support: endpoint.type_support,
            publishers: Mutex::new(Vec::new()),
            subscriptions: RwLock::new(Vec::new()),
        });
        reg.topics
            .insert(endpoint.name.clone(), Arc::downgrade(&topic));
        Ok(topic)
    }
}

struct Topic {
    /// Where the topic is listed, so it can unlist itself when its last endpoint goes.
    registry: Weak<IntraProcessShared>,
    name: String,
    type_support: TypeSupport,
    publishers: Mutex<Vec<Arc<PublisherShared>>>,
    subscriptions: RwLock<Vec<Arc<SubscriptionQueue>>>,
}

impl Drop for Topic {
    fn drop(&mut self) {
        let Some(registry) = self.registry.upgrade() else {
            return;
        };
        let mut reg = lock(&registry);
        // Only this dead topic's entry: a new topic of the same name may have replaced it.
        if reg
            .topics
            .get(&self.name)
            .is_some_and(|w| w.strong_count() == 0)
        {
            reg.topics.remove(&self.name);
        }
    }
}

impl Topic {
    fn fan_out(&self, msg: &Payload, info: MessageInfo) {
        let subs = self.subscriptions.read().unwrap_or_else(|p| p.into_inner());
        for sub in subs.iter() {
            sub.push(msg.clone(), info);
        }
    }
}

struct PublisherShared {
    gid: u64,
    qos: QoSProfile,
    sequence: AtomicU64,
    /// The last `depth` messages, kept for late-joining transient-local subscriptions.
    history: Option<Mutex<VecDeque<(Payload, MessageInfo)>>>,
    depth: Option<usize>,
}

struct IntraPublisher {
    topic: Arc<Topic>,
    shared: Arc<PublisherShared>,
}

impl PublisherPort for IntraPublisher {
    fn publish(&self, msg: Payload) -> Result<()> {
        let info = MessageInfo {
            publisher_gid: self.shared.gid,
            publication_sequence_number: self.shared.sequence.fetch_add(1, Ordering::Relaxed) + 1,
        };
        match &self.shared.history {
            // Held across the fan-out so a late joiner sees each message exactly once: either
            // in the replayed history or through its queue.
            Some(history) => {
                let mut history = lock(history);
                history.push_back((msg.clone(), info));
                if let Some(depth) = self.shared.depth {
                    while history.len() > depth {
                        history.pop_front();
                    }
                }
                self.topic.fan_out(&msg, info);
            }
            None => self.topic.fan_out(&msg, info),
        }
        Ok(())
    }

    fn subscription_count(&self) -> usize {
        self.topic
            .subscriptions
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .len()
    }
}

impl Drop for IntraPublisher {
    fn drop(&mut self) {
        lock(&self.topic.publishers).retain(|p| !Arc::ptr_eq(p, &self.shared));
    }
}

struct SubscriptionQueue {
    qos: QoSProfile,
    depth: Option<usize>,
    queue: Mutex<QueueState>,
    hook: Arc<dyn ReadyHook>,
}

#[derive(Default)]
struct QueueState {
    items: VecDeque<(Payload, MessageInfo)>,
    lost: u64,
}

impl SubscriptionQueue {
    fn push(&self, msg: Payload, info: MessageInfo) {
        {
            let mut q = lock(&self.queue);
            q.items.push_back((msg, info));
            if let Some(depth) = self.depth {
                if q.items.len() > depth {
                    q.items.pop_front();
                    q.lost += 1;
                }
            }
        }
        self.hook.ready();
    }
}

struct IntraSubscription {
    topic: Arc<Topic>,
    queue: Arc<SubscriptionQueue>,
}

impl SubscriptionPort for IntraSubscription {
    fn take(&self) -> Option<(Payload, MessageInfo)> {
        lock(&self.queue.queue).items.pop_front()
    }
    fn take_batch(&self, max: usize, out: &mut Vec<(Payload, MessageInfo)>) -> bool {
        let mut q = lock(&self.queue.queue);
        let n = max.min(q.items.len());
        out.extend(q.items.drain(..n));
        !q.items.is_empty()
    }
    fn lost_count(&self) -> u64 {
        lock(&self.queue.queue).lost
    }
    fn close(&self) {
        self.unsubscribe();
    }
}

impl Drop for IntraSubscription {
    fn drop(&mut self) {
        self.close();
    }
}

impl IntraSubscription {
    fn unsubscribe(&self) {
        self.topic
            .subscriptions
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|s| !Arc::ptr_eq(s, &self.queue));
    }
}

struct ServiceSlot {
    name: String,
    request_type: TypeSupport,
    /// Lock order: `requests` before `in_progress`.
    requests: Mutex<RequestQueue>,
    /// Requests taken by the server and not answered yet, with where the answer goes.
    in_progress: Mutex<HashMap<RequestId, Weak<ClientQueue>>>,
    hook: Arc<dyn ReadyHook>,
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

struct IntraService {
    registry: Weak<IntraProcessShared>,
    slot: Arc<ServiceSlot>,
}

/// The part of the transport a service needs to unregister itself.
type IntraProcessShared = Mutex<Registry>;

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
            client.push(id.sequence_number, Ok(response));
        }
        Ok(())
    }

    fn close(&self) {
        self.withdraw();
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
}

impl IntraService {
    fn withdraw(&self) {
        if let Some(reg) = self.registry.upgrade() {
            let mut reg = lock(&reg);
            if let Some(existing) = reg.services.get(&self.slot.name) {
                if std::ptr::eq(existing.as_ptr(), Arc::as_ptr(&self.slot)) {
                    reg.services.remove(&self.slot.name);
                }
            }
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
        self.withdraw();
    }
}

struct ClientQueue {
    responses: Mutex<VecDeque<(i64, Result<Payload>)>>,
    hook: Arc<dyn ReadyHook>,
}

impl ClientQueue {
    fn push(&self, seq: i64, response: Result<Payload>) {
        lock(&self.responses).push_back((seq, response));
        self.hook.ready();
    }
}

struct IntraClient {
    registry: Weak<IntraProcessShared>,
    service_name: String,
    request_type: TypeSupport,
    gid: u64,
    sequence: AtomicU64,
    queue: Arc<ClientQueue>,
}

impl IntraClient {
    fn slot(&self) -> Option<Arc<ServiceSlot>> {
        let reg = self.registry.upgrade()?;
        let reg = lock(&reg);
        reg.services.get(&self.service_name).and_then(Weak::upgrade)
    }
}

impl ClientPort for IntraClient {
    fn send_request(&self, request: Payload) -> Result<i64> {
        let slot = self
            .slot()
            .ok_or_else(|| Error::ServiceUnavailable(self.service_name.clone()))?;
        if slot.request_type.type_id != self.request_type.type_id {
            return Err(Error::TopicTypeMismatch {
                topic: self.service_name.clone(),
                existing: slot.request_type.info.type_name.to_string(),
                requested: self.request_type.info.type_name.to_string(),
            });
        }
        let seq = self.sequence.fetch_add(1, Ordering::Relaxed) as i64 + 1;
        let id = RequestId {
            client_gid: self.gid,
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
        slot.hook.ready();
        Ok(seq)
    }

    fn take_response(&self) -> Option<(i64, Result<Payload>)> {
        lock(&self.queue.responses).pop_front()
    }

    fn service_is_ready(&self) -> bool {
        self.slot().is_some()
    }
}

impl Transport for IntraProcess {
    fn create_publisher(&self, endpoint: &Endpoint) -> Result<Arc<dyn PublisherPort>> {
        let depth = endpoint.qos.depth()?;
        let topic = self.topic(endpoint)?;
        let shared = Arc::new(PublisherShared {
            gid: next_gid(),
            qos: endpoint.qos,
            sequence: AtomicU64::new(0),
            history: (endpoint.qos.durability == Durability::TransientLocal)
                .then(|| Mutex::new(VecDeque::new())),
            depth,
        });
        let mut pubs = lock(&topic.publishers);
        {
            let subs = topic
                .subscriptions
                .read()
                .unwrap_or_else(|p| p.into_inner());
            for sub in subs.iter() {
                if let Some(reason) = QoSProfile::incompatibility(&endpoint.qos, &sub.qos) {
                    return Err(Error::IncompatibleQos {
                        topic: topic.name.clone(),
                        reason,
                    });
                }
            }
        }
        pubs.push(shared.clone());
        drop(pubs);
        Ok(Arc::new(IntraPublisher { topic, shared }))
    }

    fn create_subscription(
        &self,
        endpoint: &Endpoint,
        hook: Arc<dyn ReadyHook>,
    ) -> Result<Arc<dyn SubscriptionPort>> {
        let depth = endpoint.qos.depth()?;
        let topic = self.topic(endpoint)?;
        let queue = Arc::new(SubscriptionQueue {
            qos: endpoint.qos,
            depth,
            queue: Mutex::new(QueueState::default()),
            hook,
        });
        let pubs = lock(&topic.publishers);
        for p in pubs.iter() {
            if let Some(reason) = QoSProfile::incompatibility(&p.qos, &endpoint.qos) {
                return Err(Error::IncompatibleQos {
                    topic: topic.name.clone(),
                    reason,
                });
            }
        }
        let late_joiner = endpoint.qos.durability == Durability::TransientLocal;
        // Hold every history lock while replaying and joining, so no message is seen twice or
        // missed (see the lock order above).
        let histories: Vec<_> = if late_joiner {
            pubs.iter()
                .filter_map(|p| p.history.as_ref())
                .map(lock)
                .collect()
        } else {
            Vec::new()
        };
        let mut replayed = false;
        {
            let mut q = lock(&queue.queue);
            for history in &histories {
                for (msg, info) in history.iter() {
                    q.items.push_back((msg.clone(), *info));
                    replayed = true;
                    if depth.is_some_and(|d| q.items.len() > d) {
                        q.items.pop_front();
                    }
                }
            }
        }
        topic
            .subscriptions
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .push(queue.clone());
        drop(histories);
        drop(pubs);
        if replayed {
            queue.hook.ready();
        }
        Ok(Arc::new(IntraSubscription { topic, queue }))
    }

    fn create_service(
        &self,
        endpoint: &Endpoint,
        hook: Arc<dyn ReadyHook>,
    ) -> Result<Arc<dyn ServicePort>> {
        let shared = self.shared();
        let mut reg = lock(&shared);
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
            request_type: endpoint.type_support,
            requests: Mutex::default(),
            in_progress: Mutex::new(HashMap::new()),
            hook,
        });
        reg.services
            .insert(endpoint.name.clone(), Arc::downgrade(&slot));
        drop(reg);
        Ok(Arc::new(IntraService {
            registry: Arc::downgrade(&shared),
            slot,
        }))
    }

    fn create_client(
        &self,
        endpoint: &Endpoint,
        hook: Arc<dyn ReadyHook>,
    ) -> Result<Arc<dyn ClientPort>> {
        Ok(Arc::new(IntraClient {
            registry: Arc::downgrade(&self.shared()),
            service_name: endpoint.name.clone(),
            request_type: endpoint.type_support,
            gid: next_gid(),
            sequence: AtomicU64::new(0),
            queue: Arc::new(ClientQueue {
                responses: Mutex::new(VecDeque::new()),
                hook,
            }),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interfaces::example_interfaces::srv::{
        AddTwoInts_Request as AddTwoIntsRequest, AddTwoInts_Response as AddTwoIntsResponse,
    };

    struct CountingHook(AtomicU64);

    impl ReadyHook for CountingHook {
        fn ready(&self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn endpoint() -> Endpoint {
        Endpoint {
            name: "/add".into(),
            type_support: TypeSupport::of::<AddTwoIntsRequest>(),
            response_type: Some(TypeSupport::of::<AddTwoIntsResponse>()),
            qos: QoSProfile::default(),
        }
    }

    fn request() -> Payload {
        Arc::new(AddTwoIntsRequest { a: 1, b: 2 })
    }

    #[test]
    fn dead_topics_are_forgotten() {
        let transport = IntraProcess::new();
        for i in 0..1000 {
            let endpoint = Endpoint {
                name: format!("/t{i}"),
                ..endpoint()
            };
            let publisher = transport.create_publisher(&endpoint).unwrap();
            drop(publisher);
        }
        let kept = Endpoint {
            name: "/kept".into(),
            ..endpoint()
        };
        let _publisher = transport.create_publisher(&kept).unwrap();
        assert_eq!(lock(&transport.shared()).topics.len(), 1);
    }

    #[test]
    fn closing_a_service_answers_what_it_holds_and_refuses_late_requests() {
        let transport = IntraProcess::new();
        let service_hook = Arc::new(CountingHook(AtomicU64::new(0)));
        let client_hook = Arc::new(CountingHook(AtomicU64::new(0)));
        let service = transport
            .create_service(&endpoint(), service_hook.clone())
            .unwrap();
        let client = transport
            .create_client(&endpoint(), client_hook.clone())
            .unwrap();
        let taken = client.send_request(request()).unwrap();
        let queued = client.send_request(request()).unwrap();
        let (taken_id, _) = service.take_request().unwrap();
        assert_eq!(taken_id.sequence_number, taken);
        // A client that looked the slot up just before the close: put the slot back where
        // it finds it, as if its lookup had won the race.
        let slot = Arc::downgrade(
            &lock(&transport.shared()).services["/add"]
                .upgrade()
                .unwrap(),
        );
        service.close();
        assert!(!client.service_is_ready());
        lock(&transport.shared())
            .services
            .insert("/add".into(), slot);
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
            .send_response(taken_id, Arc::new(AddTwoIntsResponse { sum: 3 }))
            .unwrap();
        assert!(client.take_response().is_none());
        // Closing again, and dropping, change nothing.
        service.close();
        drop(service);
        assert!(client.take_response().is_none());
    }
}
