//! Topics in process: the registry entry of a topic and the publishing side (matching a new publisher, stamping, fan-out, the transient-local history).
//! A message and its meta are in `item.rs`, a subscription's queue in `queue.rs`, the
//! receiving side in `subscription.rs`, pairing and its events in `matching.rs`.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::SystemTime;

use super::item::{monotonic_ns, Item, Meta};
use super::matching::{fire, mismatch, pair, Pairing, Party, Pending, Side, Status};
use super::queue::SubscriptionShared;
use super::{Domain, IntraNode};
use crate::base::error::{DeliveryError, Result};
use crate::base::sync::lock;
use crate::qos::compat::QosRole;
use crate::qos::{Durability, QoSProfile};
use crate::transport::{
    EndpointInfo, EndpointKind, EventHook, Gid, Payload, PublisherPort, TopicEndpoint, TypeSupport,
};

/// The endpoints of one topic name, of whatever types.
pub(super) struct Topic {
    /// Where the topic is listed, so it can unlist itself when its last endpoint goes.
    domain: Weak<Domain>,
    name: String,
    pub(super) endpoints: Mutex<TopicEndpoints>,
}

#[derive(Default)]
pub(super) struct TopicEndpoints {
    pub(super) publishers: Vec<Arc<PublisherShared>>,
    pub(super) subscriptions: Vec<Arc<SubscriptionShared>>,
}

pub(super) fn topic(domain: &Arc<Domain>, name: &str) -> Arc<Topic> {
    let mut reg = lock(&domain.registry);
    if let Some(topic) = reg.topics.get(name).and_then(Weak::upgrade) {
        return topic;
    }
    let topic = Arc::new(Topic {
        domain: Arc::downgrade(domain),
        name: name.to_string(),
        endpoints: Mutex::default(),
    });
    reg.topics.insert(name.to_string(), Arc::downgrade(&topic));
    topic
}

impl Drop for Topic {
    fn drop(&mut self) {
        let Some(domain) = self.domain.upgrade() else {
            return;
        };
        let mut reg = lock(&domain.registry);
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

/// Where a publisher delivers.
pub(super) struct Route {
    pub(super) subscription: Arc<SubscriptionShared>,
    pub(super) convert: bool,
}

/// A publisher's routes, with what a publish must do for them worked out when they change
/// rather than on every publish.
#[derive(Default)]
pub(super) struct Routes {
    list: Vec<Route>,
    /// A route reads message info: publishes are stamped with the source time.
    stamp: bool,
    /// A route takes another Rust type: publishes are serialized once for it.
    convert: bool,
}

impl Routes {
    pub(super) fn add(&mut self, route: Route) {
        self.stamp |= route.subscription.reads_info;
        self.convert |= route.convert;
        self.list.push(route);
    }

    /// Removes the route to `subscription`; says whether there was one.
    pub(super) fn remove(&mut self, subscription: &Arc<SubscriptionShared>) -> bool {
        let before = self.list.len();
        self.list
            .retain(|r| !Arc::ptr_eq(&r.subscription, subscription));
        let kept = std::mem::take(&mut self.list);
        *self = Routes::default();
        kept.into_iter().for_each(|r| self.add(r));
        self.list.len() < before
    }

    /// Removes every route, handing them out.
    pub(super) fn clear(&mut self) -> Vec<Route> {
        self.stamp = false;
        self.convert = false;
        std::mem::take(&mut self.list)
    }

    pub(super) fn len(&self) -> usize {
        self.list.len()
    }
}

pub(super) struct PublisherShared {
    gid: Gid,
    /// `gid`'s [`Gid::local_counter`], as queued items name their publisher.
    local_id: u64,
    pub(super) type_support: TypeSupport,
    pub(super) qos: QoSProfile,
    sequence: AtomicU64,
    /// The last `depth` messages, kept for late-joining transient-local subscriptions.
    pub(super) history: Option<Mutex<VecDeque<Item>>>,
    depth: Option<usize>,
    /// The subscriptions it matches. Written only under the topic lock.
    pub(super) matched: RwLock<Routes>,
    status: Mutex<Status>,
    events: Arc<dyn EventHook>,
}

impl PublisherShared {
    /// What matching reads of the publisher.
    pub(super) fn party(&self) -> Party<'_> {
        Party {
            type_support: &self.type_support,
            qos: &self.qos,
        }
    }

    pub(super) fn side(&self) -> Side<'_> {
        Side {
            role: QosRole::Publisher,
            status: &self.status,
            events: &self.events,
        }
    }
}

struct IntraPublisher {
    topic: Arc<Topic>,
    shared: Arc<PublisherShared>,
    domain: Arc<Domain>,
}

pub(super) fn create_publisher(
    node: &IntraNode,
    endpoint: &TopicEndpoint,
    events: Arc<dyn EventHook>,
) -> Result<Arc<dyn PublisherPort>> {
    endpoint.qos.validate()?;
    let qos = endpoint.qos.resolve(QosRole::Publisher, &[]);
    let depth = qos.depth()?;
    let topic = topic(&node.domain, &endpoint.name);
    let gid = Gid::next_local();
    let shared = Arc::new(PublisherShared {
        gid,
        local_id: gid.local_counter(),
        type_support: endpoint.type_support,
        qos,
        sequence: AtomicU64::new(0),
        history: (qos.durability == Durability::TransientLocal).then(Mutex::default),
        depth,
        matched: RwLock::default(),
        status: Mutex::default(),
        events,
    });
    let mut pending = Pending::new();
    {
        let mut endpoints = lock(&topic.endpoints);
        let mut routes = Routes::default();
        for s in &endpoints.subscriptions {
            let pairing = pair(shared.party(), s.party());
            if let Pairing::Match { convert } = pairing {
                if qos.lifespan.is_some() {
                    s.keep_metas();
                }
                routes.add(Route {
                    subscription: s.clone(),
                    convert,
                });
                shared.side().matched(true, &mut pending);
                s.side().matched(true, &mut pending);
            } else {
                mismatch(shared.side(), s.side(), &pairing, &mut pending);
            }
        }
        *write(&shared.matched) = routes;
        endpoints.publishers.push(shared.clone());
    }
    fire(pending);
    node.domain.announce(EndpointInfo::new(
        node.name.clone(),
        &endpoint.name,
        EndpointKind::Publisher,
        endpoint.type_support.info.type_name,
        endpoint.type_support.info.hash,
        shared.gid,
        qos,
    ));
    Ok(Arc::new(IntraPublisher {
        topic,
        shared,
        domain: node.domain.clone(),
    }))
}

fn read<T>(l: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|p| p.into_inner())
}

pub(super) fn write<T>(l: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|p| p.into_inner())
}

impl IntraPublisher {
    /// Delivers `item` to every matched subscription, then into `history` if there is one.
    /// The message itself goes to the history, or else to the last route that takes it as it
    /// is; the others get clones. (A clone is an atomic increment on a count the receiving
    /// thread writes too: the common single subscription gets none.)
    fn fan_out(
        &self,
        mut item: Item,
        history: Option<&mut VecDeque<Item>>,
    ) -> Result<(), DeliveryError<Payload>> {
        let routes = read(&self.shared.matched);
        // A clock read costs about as much as the rest of a publish: taken only when a
        // matched subscription reads message info, or a history keeps it for late joiners.
        if routes.stamp || history.is_some() {
            item.meta.source_ns = SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as i64);
        }
        // Serialized once, and only if a subscription of another Rust type needs it; before
        // anything is delivered, so a message that cannot be encoded reaches nobody.
        let converted = match routes.convert {
            true => match item.payload.to_serialized(&self.shared.type_support) {
                Ok(bytes) => Some(bytes),
                Err(error) => {
                    return Err(DeliveryError {
                        error,
                        value: item.payload,
                    })
                }
            },
            false => None,
        };
        let keeper = match history {
            Some(_) => None,
            None => routes.list.iter().rposition(|r| !r.convert),
        };
        for (i, route) in routes.list.iter().enumerate() {
            if Some(i) == keeper {
                continue;
            }
            let payload = match (&converted, route.convert) {
                (Some(bytes), true) => bytes.clone(),
                _ => item.payload.clone(),
            };
            route.subscription.push(Item {
                payload,
                meta: item.meta,
            });
        }
        match (keeper, history) {
            (Some(k), _) => routes.list[k].subscription.push(item),
            (None, Some(history)) => history.push_back(item),
            // Every route took the converted bytes: the message itself is not needed.
            (None, None) => {}
        }
        Ok(())
    }
}

impl PublisherPort for IntraPublisher {
    fn publish(&self, payload: Payload) -> Result<(), DeliveryError<Payload>> {
        let item = Item {
            payload,
            meta: Meta {
                publisher: self.shared.local_id,
                sequence: self.shared.sequence.fetch_add(1, Ordering::Relaxed) + 1,
                // Stamped in `fan_out`, when someone reads it.
                source_ns: 0,
                expires_ns: match self.shared.qos.lifespan {
                    Some(l) => monotonic_ns().saturating_add(l.as_nanos() as u64),
                    None => 0,
                },
            },
        };
        match &self.shared.history {
            // Held across the fan-out so a late joiner sees each message exactly once: either
            // in the replayed history or through its queue.
            Some(history) => {
                let mut history = lock(history);
                self.fan_out(item, Some(&mut history))?;
                if let Some(depth) = self.shared.depth {
                    while history.len() > depth {
                        history.pop_front();
                    }
                }
                Ok(())
            }
            None => self.fan_out(item, None),
        }
    }

    fn subscription_count(&self) -> usize {
        read(&self.shared.matched).len()
    }

    fn gid(&self) -> Gid {
        self.shared.gid
    }

    fn qos(&self) -> QoSProfile {
        self.shared.qos
    }
}

impl Drop for IntraPublisher {
    fn drop(&mut self) {
        let mut pending = Pending::new();
        {
            let mut endpoints = lock(&self.topic.endpoints);
            endpoints
                .publishers
                .retain(|p| !Arc::ptr_eq(p, &self.shared));
            for route in write(&self.shared.matched).clear() {
                self.shared.side().matched(false, &mut pending);
                route.subscription.side().matched(false, &mut pending);
            }
        }
        fire(pending);
        self.domain.withdraw(self.shared.gid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interfaces::std_msgs::msg::Int64;
    use crate::transport::{IntraProcess, NodeName, NodePort, ReadyHook, Transport};
    use std::time::Duration;

    struct Quiet;
    impl ReadyHook for Quiet {
        fn ready(&self) {}
    }

    fn node(transport: &IntraProcess) -> Arc<dyn NodePort> {
        transport
            .create_node(&NodeName {
                name: "n".into(),
                namespace: "/".into(),
            })
            .unwrap()
    }

    fn endpoint(name: &str, qos: QoSProfile) -> TopicEndpoint {
        TopicEndpoint {
            name: name.into(),
            type_support: TypeSupport::of::<Int64>(),
            qos,
            reads_message_info: false,
            max_queue_bytes: crate::transport::DEFAULT_QUEUE_BYTES,
        }
    }

    fn publisher(node: &Arc<dyn NodePort>, name: &str, qos: QoSProfile) -> Arc<dyn PublisherPort> {
        node.create_publisher(&endpoint(name, qos), Arc::new(()))
            .unwrap()
    }

    fn subscription(
        node: &Arc<dyn NodePort>,
        name: &str,
        qos: QoSProfile,
    ) -> Arc<dyn crate::transport::SubscriptionPort> {
        node.create_subscription(&endpoint(name, qos), Arc::new(Quiet), Arc::new(()))
            .unwrap()
    }

    fn int(data: i64) -> Payload {
        Payload::Shared(Arc::new(Int64 { data }))
    }

    #[test]
    fn queued_messages_stay_small() {
        // What most queues hold per message; a meta besides it only when needed.
        assert_eq!(std::mem::size_of::<Payload>(), 16);
        assert!(std::mem::size_of::<Meta>() <= 32);
    }

    #[test]
    fn dead_topics_are_forgotten() {
        let transport = IntraProcess::new();
        let node = node(&transport);
        for i in 0..1000 {
            let publisher = node
                .create_publisher(
                    &endpoint(&format!("/t{i}"), QoSProfile::default()),
                    Arc::new(()),
                )
                .unwrap();
            drop(publisher);
        }
        let _kept = node
            .create_publisher(&endpoint("/kept", QoSProfile::default()), Arc::new(()))
            .unwrap();
        assert_eq!(lock(&transport.domain.registry).topics.len(), 1);
        assert_eq!(transport.graph().endpoints.len(), 1);
    }

    #[test]
    fn expired_messages_are_not_delivered_nor_replayed() {
        let transport = IntraProcess::new();
        let node = node(&transport);
        let qos = QoSProfile::default()
            .transient_local()
            .lifespan(Duration::from_millis(1000));
        let publisher = publisher(&node, "/l", qos);
        let early = subscription(&node, "/l", qos);
        publisher.publish(int(1)).unwrap();
        std::thread::sleep(Duration::from_millis(1100));
        publisher.publish(int(2)).unwrap();
        let late = subscription(&node, "/l", qos);
        for sub in [&early, &late] {
            let (payload, info) = sub.take().unwrap();
            let Payload::Shared(value) = payload else {
                panic!("in-process payloads of one Rust type are shared");
            };
            assert_eq!(value.downcast_ref::<Int64>().unwrap().data, 2);
            assert_eq!(info.publication_sequence_number, 2);
            assert!(sub.take().is_none());
        }
    }

    #[test]
    fn a_lifespan_publisher_joining_later_expires_its_messages_only() {
        let transport = IntraProcess::new();
        let node = node(&transport);
        let (plain, short) = (
            QoSProfile::default().keep_all(),
            QoSProfile::default()
                .keep_all()
                .lifespan(Duration::from_millis(200)),
        );
        // Neither reads infos nor has a lifespan yet: bare payloads are queued.
        let sub = subscription(&node, "/j", plain);
        let lasting = publisher(&node, "/j", plain);
        lasting.publish(int(1)).unwrap();
        let expiring = publisher(&node, "/j", short);
        expiring.publish(int(2)).unwrap();
        lasting.publish(int(3)).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let mut payloads = Vec::new();
        assert!(!sub.take_payloads(16, &mut payloads));
        let data: Vec<i64> = payloads.into_iter().map(value).collect();
        assert_eq!(data, [1, 3]);
    }

    fn value(payload: Payload) -> i64 {
        match payload {
            Payload::Shared(v) => v.downcast_ref::<Int64>().unwrap().data,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn payloads_alone_skip_expired_messages_and_keep_the_count() {
        let transport = IntraProcess::new();
        let node = node(&transport);
        let qos = QoSProfile::default().lifespan(Duration::from_millis(300));
        let publisher = publisher(&node, "/p", qos);
        let sub = subscription(&node, "/p", qos);
        publisher.publish(int(1)).unwrap();
        std::thread::sleep(Duration::from_millis(400));
        publisher.publish(int(2)).unwrap();
        publisher.publish(int(3)).unwrap();
        let mut payloads = Vec::new();
        assert!(sub.take_payloads(1, &mut payloads), "one more is queued");
        assert!(!sub.take_payloads(10, &mut payloads));
        let data: Vec<i64> = payloads.into_iter().map(value).collect();
        // The first expired before it was taken: the batch of one came back empty.
        assert_eq!(data, [2, 3]);
        publisher.publish(int(4)).unwrap();
        let (_, info) = sub.take().unwrap();
        assert_eq!(info.reception_sequence_number, 4);
        assert_eq!(info.publication_sequence_number, 4);
        assert_eq!(info.publisher_gid, publisher.gid());
    }
}
