//! QoS events over Zenoh, as rmw_zenoh raises them: *matched* events from the graph (a
//! publisher's count of matching subscriptions and the reverse, where matching means the same
//! data key expression: name, DDS type name and type hash), and *message lost* from gaps in
//! each publisher's sequence numbers (the attachment's), as rmw_zenoh's subscription data
//! counts them. Zenoh has no QoS matching, deadlines or liveliness leases per endpoint, so the
//! other kinds never happen (rmw_zenoh raises none of them either).
//!
//! Lock order: the graph's token map, then the watchers' mutex ([`MatchWatchers`]), then an
//! endpoint's event hook (rclev's event sink: a leaf mutex and a wake-up). Hooks are called
//! with the watchers' mutex held, so that one endpoint's events are raised in the order its
//! counts changed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use rclev::qos::{CountStatus, MatchedStatus, QosEvent};
use rclev::transport::{EventHook, Gid};

use crate::wire::{EntityKind, Token, WireTypeHash};

/// One of our publishers or subscriptions, watching for the endpoints it matches.
struct Watcher {
    id: u64,
    name: String,
    dds_type_name: String,
    type_hash: WireTypeHash,
    /// The kind it matches: subscriptions for a publisher, publishers for a subscription.
    counterpart: EntityKind,
    hook: Arc<dyn EventHook>,
    total: u64,
    current: u64,
}

impl Watcher {
    fn matches(&self, token: &Token) -> bool {
        token.kind == self.counterpart
            && token.topic.as_ref().is_some_and(|topic| {
                topic.name == self.name
                    && topic.type_name == self.dds_type_name
                    && topic.type_hash == self.type_hash
            })
    }

    /// Raises the event for `by` more or (negative) fewer matched endpoints.
    fn changed(&mut self, by: i64) {
        if by == 0 {
            return;
        }
        let appeared = by.unsigned_abs();
        let total_change = if by > 0 { appeared } else { 0 };
        self.total += total_change;
        self.current = if by > 0 {
            self.current + appeared
        } else {
            self.current.saturating_sub(appeared)
        };
        let status = MatchedStatus {
            total_count: self.total,
            total_count_change: total_change,
            current_count: self.current,
            current_count_change: by,
        };
        self.hook.event(match self.counterpart {
            EntityKind::Subscription => QosEvent::PublicationMatched(status),
            _ => QosEvent::SubscriptionMatched(status),
        });
    }
}

/// The publishers and subscriptions of this session that watch for matches.
#[derive(Default)]
pub(crate) struct MatchWatchers {
    watchers: Mutex<Vec<Watcher>>,
    next_id: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for MatchWatchers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MatchWatchers")
            .field("watchers", &self.lock().len())
            .finish()
    }
}

impl MatchWatchers {
    fn lock(&self) -> MutexGuard<'_, Vec<Watcher>> {
        self.watchers.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds a watcher for endpoints of kind `counterpart` on the key expression of `name`,
    /// `dds_type_name` and `type_hash`, `already` of which are known now (raised at once as
    /// matched, as DDS reports the matches found at creation). Called with the graph's token
    /// map locked, so that no token is counted both here and by a later [`token`](Self::token).
    pub fn add(
        &self,
        name: &str,
        dds_type_name: &str,
        type_hash: WireTypeHash,
        counterpart: EntityKind,
        hook: Arc<dyn EventHook>,
        already: usize,
    ) -> u64 {
        let id = self
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut watcher = Watcher {
            id,
            name: name.to_owned(),
            dds_type_name: dds_type_name.to_owned(),
            type_hash,
            counterpart,
            hook,
            total: 0,
            current: 0,
        };
        watcher.changed(i64::try_from(already).unwrap_or(i64::MAX));
        self.lock().push(watcher);
        id
    }

    /// Removes the watcher `id` (its endpoint is going).
    pub fn remove(&self, id: u64) {
        self.lock().retain(|w| w.id != id);
    }

    /// `token` appeared (`appeared`) or went: every watcher it matches hears of it. Called
    /// with the graph's token map locked.
    pub fn token(&self, token: &Token, appeared: bool) {
        if token.topic.is_none() {
            return;
        }
        for watcher in self.lock().iter_mut().filter(|w| w.matches(token)) {
            watcher.changed(if appeared { 1 } else { -1 });
        }
    }
}

/// The most publishers whose sequence numbers a subscription follows: a hostile peer sending
/// from ever new GIDs grows nothing past this (samples from further publishers are not
/// checked for gaps). A publisher that comes back has a new GID (a new session's id, or the
/// next entity id), so entries are not forgotten, as in rmw_zenoh.
pub(crate) const MAX_FOLLOWED_PUBLISHERS: usize = 1024;

/// A subscription's view of each publisher's sequence numbers: a jump of more than one is
/// that many messages lost (rmw_zenoh's rule: the absolute difference minus one).
#[derive(Debug, Default)]
pub(crate) struct LossTracker {
    /// The publisher heard last and its last number: the common case (one publisher) needs
    /// no map lookup.
    last: Option<(Gid, i64)>,
    others: HashMap<Gid, i64>,
    total: u64,
}

impl LossTracker {
    /// Notes `sequence` from `publisher`; the loss event to raise, if it skipped some.
    pub fn note(&mut self, publisher: Gid, sequence: i64) -> Option<QosEvent> {
        let previous = match &mut self.last {
            Some((gid, last)) if *gid == publisher => Some(std::mem::replace(last, sequence)),
            _ => {
                if let Some((gid, last)) = self.last.take() {
                    if self.others.len() < MAX_FOLLOWED_PUBLISHERS || self.others.contains_key(&gid)
                    {
                        self.others.insert(gid, last);
                    }
                }
                self.last = Some((publisher, sequence));
                self.others.remove(&publisher)
            }
        };
        let jump = sequence.abs_diff(previous?);
        if jump <= 1 {
            return None;
        }
        let lost = jump - 1;
        self.total = self.total.saturating_add(lost);
        Some(QosEvent::MessageLost(CountStatus {
            total_count: self.total,
            total_count_change: lost,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gid(n: u8) -> Gid {
        Gid([n; 16])
    }

    #[test]
    fn gaps_in_a_publishers_numbers_are_messages_lost() {
        let mut t = LossTracker::default();
        assert_eq!(t.note(gid(1), 1), None);
        assert_eq!(t.note(gid(1), 2), None);
        let lost = t.note(gid(1), 5).expect("two lost");
        assert_eq!(
            lost,
            QosEvent::MessageLost(CountStatus {
                total_count: 2,
                total_count_change: 2
            })
        );
        // Another publisher's numbers are its own.
        assert_eq!(t.note(gid(2), 1), None);
        assert_eq!(t.note(gid(1), 6), None);
        assert_eq!(t.note(gid(2), 2), None);
        let lost = t.note(gid(2), 4).expect("one lost");
        assert_eq!(
            lost,
            QosEvent::MessageLost(CountStatus {
                total_count: 3,
                total_count_change: 1
            })
        );
    }

    #[test]
    fn followed_publishers_are_bounded() {
        let mut t = LossTracker::default();
        for n in 0..(MAX_FOLLOWED_PUBLISHERS as u32 + 100) {
            let mut bytes = [0u8; 16];
            bytes[..4].copy_from_slice(&n.to_le_bytes());
            t.note(Gid(bytes), 1);
        }
        assert!(t.others.len() <= MAX_FOLLOWED_PUBLISHERS);
    }

    struct Record(Mutex<Vec<QosEvent>>);
    impl EventHook for Record {
        fn event(&self, event: QosEvent) {
            self.0.lock().unwrap().push(event);
        }
    }

    #[test]
    fn watchers_count_matching_endpoints_up_and_down() {
        use crate::wire::{TopicInfo, WireQos};
        let token = |kind, name: &str| Token {
            domain_id: 0,
            zid: "1f".into(),
            node_id: 0,
            entity_id: 1,
            kind,
            enclave: "/".into(),
            namespace: "/".into(),
            node_name: "n".into(),
            topic: Some(TopicInfo {
                name: name.into(),
                type_name: "std_msgs::msg::dds_::String_".into(),
                type_hash: WireTypeHash::Rihs01(rclev::msg::TypeHash([7; 32])),
                qos: WireQos::DEFAULT,
            }),
        };
        let watchers = MatchWatchers::default();
        let record = Arc::new(Record(Mutex::new(Vec::new())));
        let id = watchers.add(
            "/chatter",
            "std_msgs::msg::dds_::String_",
            WireTypeHash::Rihs01(rclev::msg::TypeHash([7; 32])),
            EntityKind::Subscription,
            record.clone(),
            1,
        );
        watchers.token(&token(EntityKind::Subscription, "/chatter"), true);
        // Not a match: another topic, or a publisher.
        watchers.token(&token(EntityKind::Subscription, "/other"), true);
        watchers.token(&token(EntityKind::Publisher, "/chatter"), true);
        watchers.token(&token(EntityKind::Subscription, "/chatter"), false);
        watchers.remove(id);
        watchers.token(&token(EntityKind::Subscription, "/chatter"), true);
        let m = |total, total_change, current, current_change| {
            QosEvent::PublicationMatched(MatchedStatus {
                total_count: total,
                total_count_change: total_change,
                current_count: current,
                current_count_change: current_change,
            })
        };
        assert_eq!(
            *record.0.lock().unwrap(),
            [m(1, 1, 1, 1), m(2, 1, 2, 1), m(2, 0, 1, -1)]
        );
    }
}
