//! The ROS graph as liveliness tokens show it: every token under `@ros2_lv/<domain>/**`
//! (this session's own, put here as they are declared, and every peer's, from the liveliness
//! subscriber), parsed, and the queries the transport answers from them.
//!
//! Tokens come from the network: a malformed one is refused and counted (the graph never
//! shows half of it), and the cache holds at most its [`GraphLimits`] of tokens and bytes
//! (more are refused and counted, as the DDS transport's graph cache does), so no peer can
//! grow it without bound. Lock order: the token map's mutex, then the match watchers'
//! (`events.rs`, which call endpoints' event hooks); the notifier is bumped after both are
//! released.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::watch;

use rclev::throttle::ReportThrottle;
use rclev::transport::{
    EndpointKind, EventHook, GraphBudget, GraphLimits, GraphNotifier, GraphSnapshot,
};
use rclev::QoSProfile;

use super::events::MatchWatchers;
use crate::wire::{EntityKind, Token};

/// Refused tokens, logged at most every 10 s.
static REFUSED: ReportThrottle = ReportThrottle::new(Duration::from_secs(10));

/// The tokens known now, by key expression, and the notifier of their changes.
#[derive(Debug)]
pub(crate) struct GraphCache {
    tokens: Mutex<Tokens>,
    refused: AtomicU64,
    /// Whether the initial liveliness query (every token there before this session came)
    /// has ended.
    settled: AtomicBool,
    notifier: GraphNotifier,
    /// Our publishers and subscriptions, told of every matching token that comes or goes.
    watchers: MatchWatchers,
}

/// Which endpoints of a topic or service count as matched with one of ours: the same name,
/// DDS type name and type hash (the data key expression), of the given kind.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MatchKey<'a> {
    pub name: &'a str,
    pub dds_type_name: &'a str,
    pub type_hash: &'a crate::wire::WireTypeHash,
    pub kind: EntityKind,
}

/// The token map, what it holds against its limits, and how many tokens each session has
/// (kept as tokens come and go: the tools ask for the sessions at every graph change, and a
/// pass over every token each time made 5,000 tokens cost 25 million looks under the lock,
/// stalling the receive thread that delivers them).
#[derive(Debug)]
struct Tokens {
    by_keyexpr: HashMap<String, Token>,
    budget: GraphBudget,
    per_zid: HashMap<String, usize>,
}

impl Tokens {
    fn insert(&mut self, keyexpr: String, token: Token) -> bool {
        let zid = token.zid.clone();
        let inserted = self.by_keyexpr.insert(keyexpr, token).is_none();
        if inserted {
            *self.per_zid.entry(zid).or_default() += 1;
        }
        inserted
    }

    fn remove(&mut self, keyexpr: &str) -> Option<Token> {
        let token = self.by_keyexpr.remove(keyexpr)?;
        if let Some(n) = self.per_zid.get_mut(&token.zid) {
            *n -= 1;
            if *n == 0 {
                self.per_zid.remove(&token.zid);
            }
        }
        Some(token)
    }
}

impl std::ops::Deref for Tokens {
    type Target = HashMap<String, Token>;
    fn deref(&self) -> &Self::Target {
        &self.by_keyexpr
    }
}

/// What a token costs the cache: its key expression, the parsed token's strings (about as
/// long), and the entry's own overhead.
fn cost(keyexpr: &str) -> usize {
    2 * keyexpr.len() + 128
}

impl Default for GraphCache {
    fn default() -> Self {
        Self::new(GraphLimits::DEFAULT)
    }
}

impl GraphCache {
    /// An empty cache, bounded by `limits`.
    pub fn new(limits: GraphLimits) -> Self {
        Self {
            tokens: Mutex::new(Tokens {
                by_keyexpr: HashMap::new(),
                budget: GraphBudget::new(limits),
                per_zid: HashMap::new(),
            }),
            refused: AtomicU64::new(0),
            settled: AtomicBool::new(false),
            notifier: GraphNotifier::default(),
            watchers: MatchWatchers::default(),
        }
    }

    fn tokens(&self) -> MutexGuard<'_, Tokens> {
        self.tokens.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A token appeared (a peer's, from the liveliness subscriber, or one of ours).
    pub fn put(&self, keyexpr: &str) {
        let token = match Token::parse(keyexpr) {
            Ok(token) => token,
            Err(error) => return self.refuse(keyexpr, &error.to_string()),
        };
        let inserted = {
            let mut tokens = self.tokens();
            if tokens.contains_key(keyexpr) {
                false
            } else if let Err(full) = tokens.budget.admit(cost(keyexpr)) {
                drop(tokens);
                return self.refuse(keyexpr, &full.to_string());
            } else {
                self.watchers.token(&token, true);
                tokens.insert(keyexpr.to_owned(), token);
                true
            }
        };
        if inserted {
            self.notifier.changed();
        }
    }

    /// A token of ours, known before the subscriber reports it: always in, counted against
    /// what peers may add.
    pub fn put_own(&self, token: &Token) {
        let keyexpr = token.to_keyexpr();
        let inserted = {
            let mut tokens = self.tokens();
            let bytes = cost(&keyexpr);
            let inserted = tokens.insert(keyexpr, token.clone());
            if inserted {
                tokens.budget.admit_own(bytes);
                self.watchers.token(token, true);
            }
            inserted
        };
        if inserted {
            self.notifier.changed();
        }
    }

    /// A token disappeared (undeclared, or its session is gone).
    pub fn delete(&self, keyexpr: &str) {
        let removed = {
            let mut tokens = self.tokens();
            let removed = tokens.remove(keyexpr);
            if let Some(token) = &removed {
                tokens.budget.release(cost(keyexpr));
                self.watchers.token(token, false);
            }
            removed.is_some()
        };
        if removed {
            self.notifier.changed();
        }
    }

    fn refuse(&self, keyexpr: &str, reason: &str) {
        self.refused.fetch_add(1, Ordering::Relaxed);
        if let Some(held_back) = REFUSED.note("liveliness") {
            rclev::diagnostic!(WARN,
                target: "rclev_zenoh",
                "liveliness token {} refused: {reason}{held_back}",
                crate::wire::quote(keyexpr),
            );
        }
    }

    /// The initial liveliness query has ended: the tokens of every peer reachable then are
    /// in.
    pub fn set_settled(&self) {
        self.settled.store(true, Ordering::Release);
        self.notifier.changed();
    }

    /// Whether [`set_settled`](Self::set_settled) was called.
    pub fn settled(&self) -> bool {
        self.settled.load(Ordering::Acquire)
    }

    /// Tokens refused so far (malformed, or beyond the cache's limits).
    pub fn refused_count(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// The graph now: every node token's node, every endpoint token's endpoint.
    pub fn snapshot(&self) -> GraphSnapshot {
        let tokens = self.tokens();
        let mut graph = GraphSnapshot::default();
        for token in tokens.values() {
            match token.endpoint_info() {
                Some(endpoint) => graph.endpoints.push(endpoint),
                None => graph.nodes.push(token.node()),
            }
        }
        graph
    }

    /// How many endpoints match `key`.
    pub fn count(&self, key: MatchKey<'_>) -> usize {
        Self::matching(&self.tokens(), key)
    }

    fn matching(tokens: &HashMap<String, Token>, key: MatchKey<'_>) -> usize {
        tokens
            .values()
            .filter(|t| {
                t.kind == key.kind
                    && t.topic.as_ref().is_some_and(|topic| {
                        topic.name == key.name
                            && topic.type_name == key.dds_type_name
                            && topic.type_hash == *key.type_hash
                    })
            })
            .count()
    }

    /// Raises matched events on `hook` for the endpoints that match `key`: those there now at
    /// once, and every later one that comes or goes, until [`unwatch`](Self::unwatch).
    pub fn watch(&self, key: MatchKey<'_>, hook: Arc<dyn EventHook>) -> u64 {
        // Under the token map's lock: no token is counted both now and as it comes.
        let tokens = self.tokens();
        let already = Self::matching(&tokens, key);
        self.watchers.add(
            key.name,
            key.dds_type_name,
            *key.type_hash,
            key.kind,
            hook,
            already,
        )
    }

    /// Stops the matched events of a [`watch`](Self::watch).
    pub fn unwatch(&self, id: u64) {
        self.watchers.remove(id);
    }

    /// The QoS profiles the publishers on `name` offer (for a subscription's `BestAvailable`).
    pub fn offers(&self, name: &str) -> Vec<QoSProfile> {
        self.tokens()
            .values()
            .filter(|t| t.kind == EntityKind::Publisher)
            .filter_map(|t| t.endpoint_info())
            .filter(|e| e.name == name && e.kind == EndpointKind::Publisher)
            .map(|e| e.qos)
            .collect()
    }

    /// The Zenoh ids of the sessions that have tokens now.
    pub fn zids(&self) -> std::collections::BTreeSet<String> {
        self.tokens().per_zid.keys().cloned().collect()
    }

    /// A receiver of every later change.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.notifier.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{TopicInfo, WireQos, WireTypeHash};
    use rclev::msg::TypeHash;

    fn token(kind: EntityKind, id: u64) -> Token {
        Token {
            domain_id: 0,
            zid: "1f".into(),
            node_id: 0,
            entity_id: id,
            kind,
            enclave: "/".into(),
            namespace: "/".into(),
            node_name: "talker".into(),
            topic: (kind != EntityKind::Node).then(|| TopicInfo {
                name: "/chatter".into(),
                type_name: "std_msgs::msg::dds_::String_".into(),
                type_hash: WireTypeHash::Rihs01(TypeHash([7; 32])),
                qos: WireQos::DEFAULT,
            }),
        }
    }

    #[test]
    fn tokens_make_the_graph_and_malformed_ones_are_refused() {
        let graph = GraphCache::default();
        let changes = graph.subscribe();
        graph.put(&token(EntityKind::Node, 0).to_keyexpr());
        graph.put(&token(EntityKind::Publisher, 1).to_keyexpr());
        graph.put_own(&token(EntityKind::Publisher, 1));
        graph.put("@ros2_lv/0/zz/0/0/NN/%/%/x");
        graph.put("@ros2_lv/0/1f/0/2/XX/%/%/x");
        let snapshot = graph.snapshot();
        assert_eq!(snapshot.node_names().len(), 1);
        assert_eq!(snapshot.count("/chatter", EndpointKind::Publisher), 1);
        assert_eq!(graph.refused_count(), 2);
        assert!(changes.has_changed().unwrap());
        let hash = WireTypeHash::Rihs01(TypeHash([7; 32]));
        let key = MatchKey {
            name: "/chatter",
            dds_type_name: "std_msgs::msg::dds_::String_",
            type_hash: &hash,
            kind: EntityKind::Publisher,
        };
        assert_eq!(graph.count(key), 1);
        let other = WireTypeHash::Rihs01(TypeHash([8; 32]));
        assert_eq!(
            graph.count(MatchKey {
                type_hash: &other,
                ..key
            }),
            0
        );
        graph.delete(&token(EntityKind::Publisher, 1).to_keyexpr());
        assert_eq!(graph.count(key), 0);
        assert_eq!(graph.offers("/chatter").len(), 0);
    }

    #[test]
    fn the_cache_is_bounded_in_tokens() {
        let graph = GraphCache::new(GraphLimits {
            max_entries: 1000,
            ..GraphLimits::DEFAULT
        });
        for id in 0..1005 {
            let mut t = token(EntityKind::Node, id);
            t.node_id = id;
            graph.put(&t.to_keyexpr());
        }
        assert_eq!(graph.snapshot().nodes.len(), 1000);
        assert_eq!(graph.refused_count(), 5);
    }

    /// The defect: the cache held 100,000 tokens whatever their size, and a key expression
    /// may be ~60 KB: gigabytes.
    #[test]
    fn the_cache_is_bounded_in_bytes() {
        let graph = GraphCache::new(GraphLimits {
            max_entries: 100_000,
            max_bytes: 1 << 20,
        });
        let long = "n".repeat(60_000);
        let mut kept = 0;
        for id in 0..100 {
            let mut t = token(EntityKind::Node, id);
            t.node_id = id;
            t.node_name = format!("{long}{id}");
            graph.put(&t.to_keyexpr());
            kept = graph.snapshot().nodes.len();
        }
        // Each costs ~120 KB: 8 fit in 1 MiB.
        assert_eq!(kept, 8);
        assert_eq!(graph.refused_count(), 92);
        // One that goes makes room for another.
        let mut gone = token(EntityKind::Node, 0);
        gone.node_name = format!("{long}0");
        graph.delete(&gone.to_keyexpr());
        let mut t = token(EntityKind::Node, 500);
        t.node_id = 500;
        t.node_name = format!("{long}500");
        graph.put(&t.to_keyexpr());
        assert_eq!(graph.snapshot().nodes.len(), 8);
    }
}
