//! The receiving side of an in-process topic (its queue is in `queue.rs`): joining a topic (matching, transient-local replay),
//! taking, and leaving.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::item::{message_info, Meta};
use super::matching::{fire, mismatch, pair, Pairing, Pending};
use super::queue::{QueueState, SubscriptionShared};
use super::topic::{topic, write, Route, Topic};
use super::{Domain, IntraNode};
use crate::base::error::Result;
use crate::base::sync::lock;
use crate::qos::compat::QosRole;
use crate::qos::{Durability, QoSProfile};
use crate::transport::{
    EndpointInfo, EndpointKind, EventHook, Gid, MessageInfo, Payload, ReadyHook, SubscriptionPort,
    TopicEndpoint,
};

struct IntraSubscription {
    /// Scratch for takes that look at metas, kept to avoid an allocation per batch; only the
    /// taker locks it.
    batch: Mutex<Vec<(Payload, Option<Meta>)>>,
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
            queue: Mutex::new(QueueState {
                metas: endpoint.reads_message_info.then(VecDeque::new),
                ..QueueState::default()
            }),
            ready,
            status: Mutex::default(),
            events,
        });
        let late_joiner = qos.durability == Durability::TransientLocal;
        for p in &endpoints.publishers {
            let pairing = pair(p.party(), shared.party());
            let Pairing::Match { convert } = pairing else {
                mismatch(p.side(), shared.side(), &pairing, &mut pending);
                continue;
            };
            if p.qos.lifespan.is_some() {
                shared.keep_metas();
            }
            // The publisher's history lock held while replaying and joining: each of its
            // messages is seen exactly once, replayed or queued by a later publish.
            let history = p.history.as_ref().filter(|_| late_joiner).map(lock);
            if let Some(history) = &history {
                let mut now = None;
                let mut queue = lock(&shared.queue);
                for item in history.iter().filter(|i| !i.meta.expired(&mut now)) {
                    let mut item = item.clone();
                    if convert {
                        match item.payload.to_serialized(&p.type_support) {
                            Ok(bytes) => item.payload = bytes,
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
    node.domain.announce(EndpointInfo::new(
        node.name.clone(),
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
        let (payload, meta, reception) = lock(&self.shared.queue).pop(&mut None)?;
        Some((payload, message_info(meta.as_ref(), reception)))
    }

    fn take_batch(&self, max: usize, out: &mut Vec<(Payload, MessageInfo)>) -> bool {
        self.take_live(max, |payload, meta, reception| {
            out.push((payload, message_info(meta, reception)));
        })
    }

    fn take_payloads(&self, max: usize, out: &mut Vec<Payload>) -> bool {
        {
            let mut q = lock(&self.shared.queue);
            if q.metas.is_none() {
                // Nothing to look at: the batch moves straight out.
                let n = max.min(q.payloads.len());
                out.extend(q.payloads.drain(..n));
                return !q.payloads.is_empty();
            }
        }
        // Metas are never dropped once kept, so this finds them too.
        self.take_live(max, |payload, _, _| out.push(payload))
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

impl IntraSubscription {
    /// Hands up to `max` of the oldest messages whose lifespan has not ended to `emit`, each
    /// with its meta (if kept) and reception number; says whether more are queued.
    fn take_live(&self, max: usize, mut emit: impl FnMut(Payload, Option<&Meta>, u64)) -> bool {
        // Under the queue lock only move the messages out (measured: a second pass outside
        // the lock beats building the batch under it); lifespans and infos are looked at after.
        let mut batch = lock(&self.batch);
        let (first, more) = {
            let mut q = lock(&self.shared.queue);
            let n = max.min(q.payloads.len());
            let first = q.front_number();
            let QueueState {
                payloads, metas, ..
            } = &mut *q;
            match metas {
                Some(metas) => {
                    batch.extend(payloads.drain(..n).zip(metas.drain(..n).map(Some)));
                }
                None => batch.extend(payloads.drain(..n).map(|p| (p, None))),
            }
            (first, !q.payloads.is_empty())
        };
        let mut now = None;
        for (reception, (payload, meta)) in (first..).zip(batch.drain(..)) {
            if !meta.is_some_and(|m| m.expired(&mut now)) {
                emit(payload, meta.as_ref(), reception);
            }
        }
        more
    }
}

impl Drop for IntraSubscription {
    fn drop(&mut self) {
        self.close();
    }
}
