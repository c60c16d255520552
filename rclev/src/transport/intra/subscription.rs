//! The receiving side of an in-process topic: a subscription's queue (history depth, lost
//! count, reception numbers, lifespan), joining a topic (matching, transient-local replay),
//! taking, and leaving.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::matching::{fire, mismatch, pair, Pairing, Pending, Side, Status};
use super::topic::{topic, write, Item, Route, Topic};
use super::{Domain, IntraNode};
use crate::error::Result;
use crate::qos::compat::QosRole;
use crate::qos::{Durability, QoSProfile};
use crate::sync::lock;
use crate::transport::{
    EndpointKind, EventHook, Gid, MessageInfo, Payload, ReadyHook, SubscriptionPort, TopicEndpoint,
    TypeSupport,
};

pub(super) struct SubscriptionShared {
    gid: Gid,
    /// Whether its owner reads message info: publishers stamp messages only then.
    pub(super) reads_info: bool,
    pub(super) type_support: TypeSupport,
    pub(super) qos: QoSProfile,
    depth: Option<usize>,
    queue: Mutex<QueueState>,
    ready: Arc<dyn ReadyHook>,
    status: Mutex<Status>,
    events: Arc<dyn EventHook>,
}

#[derive(Default)]
struct QueueState {
    items: VecDeque<Item>,
    /// Replaced by newer ones in a full KeepLast history.
    lost: u64,
    /// Messages ever pushed; numbers them (reception sequence numbers).
    received: u64,
}

impl QueueState {
    fn push(&mut self, item: Item, depth: Option<usize>) {
        self.received += 1;
        self.items.push_back(item);
        if depth.is_some_and(|d| self.items.len() > d) {
            self.items.pop_front();
            self.lost += 1;
        }
    }

    /// The oldest message whose lifespan has not ended, with its reception number.
    fn pop(&mut self, now: &mut Option<u64>) -> Option<(Item, u64)> {
        loop {
            // Items leave only from the front, so the front one is number `received - len + 1`.
            let reception = self.received - self.items.len() as u64 + 1;
            let item = self.items.pop_front()?;
            if !item.expired(now) {
                return Some((item, reception));
            }
        }
    }
}

impl SubscriptionShared {
    pub(super) fn side(&self) -> Side<'_> {
        Side {
            role: QosRole::Subscription,
            status: &self.status,
            events: &self.events,
        }
    }

    pub(super) fn push(&self, item: Item) {
        lock(&self.queue).push(item, self.depth);
        self.ready.ready();
    }
}

struct IntraSubscription {
    /// Scratch for `take_batch`, kept to avoid an allocation per batch; only the taker locks it.
    batch: Mutex<Vec<Item>>,
    topic: Arc<Topic>,
    shared: Arc<SubscriptionShared>,
    domain: Arc<Domain>,
    closed: AtomicBool,
}

pub(super) fn create_subscription(
    node: &IntraNode,
    endpoint: &TopicEndpoint,
    ready: Arc<dyn ReadyHook>,
    events: Arc<dyn EventHook>,
) -> Result<Arc<dyn SubscriptionPort>> {
    endpoint.qos.validate()?;
    let topic = topic(&node.domain, &endpoint.name);
    let mut pending = Pending::new();
    let mut replayed = false;
    let shared;
    {
        let mut endpoints = lock(&topic.endpoints);
        // `BestAvailable` adapts to the publishers of this type present now, as in rmw.
        let offers: Vec<QoSProfile> = endpoints
            .publishers
            .iter()
            .filter(|p| p.type_support.same_interface(&endpoint.type_support))
            .map(|p| p.qos)
            .collect();
        let qos = endpoint.qos.resolve(QosRole::Subscription, &offers);
        let depth = qos.depth()?;
        shared = Arc::new(SubscriptionShared {
            gid: Gid::next_local(),
            reads_info: endpoint.reads_message_info,
            type_support: endpoint.type_support,
            qos,
            depth,
            queue: Mutex::default(),
            ready,
            status: Mutex::default(),
            events,
        });
        let late_joiner = qos.durability == Durability::TransientLocal;
        for p in &endpoints.publishers {
            let pairing = pair(p, &shared);
            let Pairing::Match { convert } = pairing else {
                mismatch(p, &shared, &pairing, &mut pending);
                continue;
            };
            // The publisher's history lock held while replaying and joining: each of its
            // messages is seen exactly once, replayed or queued by a later publish.
            let history = p.history.as_ref().filter(|_| late_joiner).map(lock);
            if let Some(history) = &history {
                let mut now = None;
                let mut queue = lock(&shared.queue);
                for item in history.iter().filter(|i| !i.expired(&mut now)) {
                    let mut item = item.clone();
                    if convert {
                        let mut buf = Vec::new();
                        match item.payload.cdr(&p.type_support, &mut buf) {
                            Ok(_) => item.payload = Payload::Serialized(buf),
                            // It was encoded when published; cannot fail now.
                            Err(_) => continue,
                        }
                    }
                    queue.push(item, depth);
                    replayed = true;
                }
            }
            write(&p.matched).add(Route {
                subscription: shared.clone(),
                convert,
            });
            drop(history);
            p.side().matched(true, &mut pending);
            shared.side().matched(true, &mut pending);
        }
        endpoints.subscriptions.push(shared.clone());
    }
    fire(pending);
    node.domain.announce(node.endpoint_info(
        &endpoint.name,
        EndpointKind::Subscription,
        endpoint.type_support.info.type_name,
        endpoint.type_support.info.hash,
        shared.gid,
        shared.qos,
    ));
    if replayed {
        shared.ready.ready();
    }
    Ok(Arc::new(IntraSubscription {
        batch: Mutex::default(),
        topic,
        shared,
        domain: node.domain.clone(),
        closed: AtomicBool::new(false),
    }))
}

impl SubscriptionPort for IntraSubscription {
    fn take(&self) -> Option<(Payload, MessageInfo)> {
        let (item, reception) = lock(&self.shared.queue).pop(&mut None)?;
        let info = item.info(reception);
        Some((item.payload, info))
    }

    fn take_batch(&self, max: usize, out: &mut Vec<(Payload, MessageInfo)>) -> bool {
        // The queue lock is what the publishing thread waits for: under it only move the
        // items out (a copy of 56 bytes each); lifespans and infos are looked at after.
        let mut batch = lock(&self.batch);
        let (first, more) = {
            let mut q = lock(&self.shared.queue);
            let n = max.min(q.items.len());
            let first = q.received - q.items.len() as u64 + 1;
            batch.extend(q.items.drain(..n));
            (first, !q.items.is_empty())
        };
        let mut now = None;
        for (reception, item) in (first..).zip(batch.drain(..)) {
            if !item.expired(&mut now) {
                let info = item.info(reception);
                out.push((item.payload, info));
            }
        }
        more
    }

    fn take_payloads(&self, max: usize, out: &mut Vec<Payload>) -> bool {
        // Without infos there is nothing to build: the payloads move straight out under the
        // lock, as fast as a batch can move (the clock is read once per batch, and only if a
        // message has a lifespan).
        let mut q = lock(&self.shared.queue);
        let n = max.min(q.items.len());
        let mut now = None;
        out.reserve(n);
        out.extend(
            q.items
                .drain(..n)
                .filter(|item| !item.expired(&mut now))
                .map(|item| item.payload),
        );
        !q.items.is_empty()
    }

    fn lost_count(&self) -> u64 {
        lock(&self.shared.queue).lost
    }

    fn publisher_count(&self) -> usize {
        lock(&self.shared.status).matched_current as usize
    }

    fn gid(&self) -> Gid {
        self.shared.gid
    }

    fn qos(&self) -> QoSProfile {
        self.shared.qos
    }

    fn close(&self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        let mut pending = Pending::new();
        {
            let mut endpoints = lock(&self.topic.endpoints);
            endpoints
                .subscriptions
                .retain(|s| !Arc::ptr_eq(s, &self.shared));
            for p in &endpoints.publishers {
                let removed = write(&p.matched).remove(&self.shared);
                if removed {
                    p.side().matched(false, &mut pending);
                    self.shared.side().matched(false, &mut pending);
                }
            }
        }
        fire(pending);
        self.domain.withdraw(self.shared.gid);
    }
}

impl Drop for IntraSubscription {
    fn drop(&mut self) {
        self.close();
    }
}
