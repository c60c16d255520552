//! The in-process transport: the embedded default. Messages move as `Arc`s, never copied, and
//! never serialized unless two Rust types of one interface meet on a topic.
//!
//! It keeps the [`Transport`] contract and some stronger guarantees, which `docs/transport.md`
//! lists: matching and delivery are synchronous (a publish has reached every matched queue
//! when it returns), a request to a service that has no server fails at once, and a withdrawn
//! server fails the requests it leaves unanswered.
//!
//! Lock order (outer first): `Registry` → `Topic::endpoints` → a publisher's `history` → a
//! publisher's `matched` → a subscription's queue; a `Registry` lock is never taken under any
//! other. Events and ready hooks are fired after the topic lock is released.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::watch;

use super::{
    ClientPort, EndpointInfo, EventHook, Gid, GraphNotifier, GraphSnapshot, NodeName, NodePort,
    PublisherPort, ReadyHook, ServiceEndpoint, ServicePort, SubscriptionPort, TopicEndpoint,
    Transport,
};
use crate::base::error::Result;
use crate::base::sync::lock;
use crate::qos::QosEventKind;

mod item;
mod matching;
mod queue;
mod service;
mod subscription;
mod topic;

/// The in-process transport. One instance is one "domain": endpoints created through the same
/// instance (the same [`Context`](crate::Context)) see each other.
#[derive(Default)]
pub struct IntraProcess {
    domain: Arc<Domain>,
}

/// What every node and endpoint of the domain reaches back to.
#[derive(Default)]
struct Domain {
    registry: Mutex<Registry>,
    graph: GraphNotifier,
}

#[derive(Default)]
struct Registry {
    topics: HashMap<String, Weak<topic::Topic>>,
    services: HashMap<String, Weak<service::ServiceSlot>>,
    /// Live nodes, by a key unique for the domain's lifetime.
    nodes: HashMap<u64, NodeName>,
    next_node: u64,
    /// Every live endpoint, for the graph.
    endpoints: HashMap<Gid, EndpointInfo>,
}

impl Domain {
    /// Lists an endpoint on the graph.
    fn announce(&self, info: EndpointInfo) {
        lock(&self.registry).endpoints.insert(info.gid, info);
        self.graph.changed();
    }

    /// Takes an endpoint off the graph (idempotent).
    fn withdraw(&self, gid: Gid) {
        if lock(&self.registry).endpoints.remove(&gid).is_some() {
            self.graph.changed();
        }
    }
}

impl IntraProcess {
    /// A new, empty domain.
    pub fn new() -> Self {
        Self::default()
    }
}

/// A node of the domain; dropping it takes it off the graph.
struct IntraNode {
    domain: Arc<Domain>,
    key: u64,
    name: NodeName,
}

impl Drop for IntraNode {
    fn drop(&mut self) {
        lock(&self.domain.registry).nodes.remove(&self.key);
        self.domain.graph.changed();
    }
}

impl Transport for IntraProcess {
    fn create_node(&self, node: &NodeName) -> Result<Arc<dyn NodePort>> {
        let key = {
            let mut reg = lock(&self.domain.registry);
            reg.next_node += 1;
            let key = reg.next_node;
            reg.nodes.insert(key, node.clone());
            key
        };
        self.domain.graph.changed();
        Ok(Arc::new(IntraNode {
            domain: self.domain.clone(),
            key,
            name: node.clone(),
        }))
    }

    fn graph(&self) -> GraphSnapshot {
        let reg = lock(&self.domain.registry);
        GraphSnapshot {
            nodes: reg.nodes.values().cloned().collect(),
            endpoints: reg.endpoints.values().cloned().collect(),
        }
    }

    fn graph_changes(&self) -> watch::Receiver<u64> {
        self.domain.graph.subscribe()
    }

    fn supports_event(&self, kind: QosEventKind) -> bool {
        // Deadlines and leases are matched but not watched: nothing in process runs a clock
        // for them. Messages are never lost other than by the history policy.
        !matches!(
            kind,
            QosEventKind::OfferedDeadlineMissed
                | QosEventKind::RequestedDeadlineMissed
                | QosEventKind::LivelinessLost
        )
    }
}

impl NodePort for IntraNode {
    fn create_publisher(
        &self,
        endpoint: &TopicEndpoint,
        events: Arc<dyn EventHook>,
    ) -> Result<Arc<dyn PublisherPort>> {
        topic::create_publisher(self, endpoint, events)
    }

    fn create_subscription(
        &self,
        endpoint: &TopicEndpoint,
        ready: Arc<dyn ReadyHook>,
        events: Arc<dyn EventHook>,
    ) -> Result<Arc<dyn SubscriptionPort>> {
        subscription::create_subscription(self, endpoint, ready, events)
    }

    fn create_service(
        &self,
        endpoint: &ServiceEndpoint,
        ready: Arc<dyn ReadyHook>,
    ) -> Result<Arc<dyn ServicePort>> {
        service::create_service(self, endpoint, ready)
    }

    fn create_client(
        &self,
        endpoint: &ServiceEndpoint,
        ready: Arc<dyn ReadyHook>,
    ) -> Result<Arc<dyn ClientPort>> {
        service::create_client(self, endpoint, ready)
    }
}
