//! The ROS graph as this participant sees it: its own nodes and endpoints (recorded when
//! created) and every endpoint DDS discovery reports, turned into ROS names and types.
//!
//! Remote nodes, and the node of each remote endpoint, come from the peers'
//! `ros_discovery_info` (see `entities`); an endpoint no peer has claimed (yet) belongs to
//! rmw's `_NODE_NAME_UNKNOWN_` node, as rmw reports endpoints of bare DDS participants. Our own
//! nodes' DDS readers and writers are recorded here too, for our own `ros_discovery_info`.
//! Lock order: the graph's mutex is a leaf (nothing else is locked under it, and no hook is
//! called under it).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use rclev::throttle::ReportThrottle;

use rclev::msg::TypeHash;
use rclev::transport::{
    EndpointInfo, EndpointKind, Gid, GraphBudget, GraphFull, GraphLimits, GraphNotifier,
    GraphSnapshot, NodeName,
};
use rclev::QoSProfile;

use crate::entities::{NodeEntities, ParticipantEntities};
use crate::ffi::bridge::{DiscoveredEndpoint, DiscoveredParticipant};
use crate::ffi::GraphHandler;
use crate::names::{
    demangle_topic, demangle_type, id_text, parse_user_data, user_data_type_hash, RosTopic,
};
use crate::qos::from_dds;

/// The vendor ids at the start of GUID prefixes: Eclipse Cyclone DDS's and eProsima Fast
/// DDS's (rmw_fastrtps, and rclev itself).
const VENDOR_CYCLONE: [u8; 2] = [0x01, 0x10];
const VENDOR_EPROSIMA: [u8; 2] = [0x01, 0x0f];

/// A discovered endpoint that belongs to a ROS topic or service.
#[derive(Debug, Clone)]
pub(crate) struct RemoteEndpoint {
    /// Writer (true) or reader.
    pub writer: bool,
    /// The ROS entity behind its DDS topic.
    pub topic: RosTopic,
    /// ROS type name (`pkg/msg/Name`, `pkg/srv/Name`).
    pub type_name: String,
    pub type_hash: TypeHash,
    pub qos: QoSProfile,
    /// Its USER_DATA pairs (`clientid`, `serviceid`, `typehash`).
    pub user_data: HashMap<String, String>,
}

impl RemoteEndpoint {
    /// Whether this client or service needs rmw_cyclonedds's 16-byte request header before
    /// the CDR body: Cyclone DDS's endpoints do, and any other that names itself with
    /// `clientid=`/`serviceid=` — except Fast DDS ones, which are rmw_fastrtps's or rclev's
    /// (rclev names itself both ways but reads related sample identities, which rmw_fastrtps
    /// peers need).
    pub fn needs_cyclone_header(&self, gid: &Gid) -> bool {
        let vendor = [gid.0[0], gid.0[1]];
        vendor == VENDOR_CYCLONE
            || (vendor != VENDOR_EPROSIMA
                && (self.user_data.contains_key("clientid")
                    || self.user_data.contains_key("serviceid")))
    }
}

/// One of a local node's DDS readers or writers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DdsEntity {
    Reader(Gid),
    Writer(Gid),
}

/// A local endpoint: what the graph shows, and the DDS entities it is made of.
struct LocalEndpoint {
    info: EndpointInfo,
    node: u64,
    entities: Vec<DdsEntity>,
}

struct GraphState {
    /// Local nodes by registration id.
    nodes: HashMap<u64, NodeName>,
    next_node: u64,
    /// Local endpoints by their GID.
    local: HashMap<Gid, LocalEndpoint>,
    /// Discovered endpoints of other participants.
    remote: HashMap<Gid, RemoteEndpoint>,
    /// Participants discovered and alive, with their enclave.
    participants: HashMap<[u8; 16], String>,
    /// What each other participant last said on `ros_discovery_info`, by GUID prefix.
    remote_nodes: HashMap<[u8; 12], Vec<NodeEntities>>,
    /// Participants that have left (GUID prefixes are never reused): a sample of theirs still
    /// in flight must not bring their nodes back. The latest [`GONE_KEPT`] only: a sample in
    /// flight comes within seconds of its participant's end, not thousands of departures later.
    gone: Gone,
    /// What `remote`, `participants` and `remote_nodes` hold (peers' announcements), against
    /// the cache's limits.
    budget: GraphBudget,
}

impl GraphState {
    fn new(limits: GraphLimits) -> Self {
        Self {
            nodes: HashMap::new(),
            next_node: 0,
            local: HashMap::new(),
            remote: HashMap::new(),
            participants: HashMap::new(),
            remote_nodes: HashMap::new(),
            gone: Gone::default(),
            budget: GraphBudget::new(limits),
        }
    }
}

/// What an entry costs the graph cache, in bytes: its strings and a fixed overhead for the
/// entry itself (the same estimate for insertion and removal).
trait Cost {
    fn cost(&self) -> usize;
}

impl Cost for RemoteEndpoint {
    fn cost(&self) -> usize {
        let topic = match &self.topic {
            RosTopic::Topic(n) | RosTopic::Request(n) | RosTopic::Reply(n) => n.len(),
        };
        let user_data: usize = self
            .user_data
            .iter()
            .map(|(k, v)| k.len() + v.len() + 48)
            .sum();
        topic + self.type_name.len() + user_data + 256
    }
}

impl Cost for Vec<NodeEntities> {
    fn cost(&self) -> usize {
        self.iter()
            .map(|n| {
                n.node.name.len()
                    + n.node.namespace.len()
                    + 16 * (n.readers.len() + n.writers.len())
                    + 96
            })
            .sum::<usize>()
            + 64
    }
}

/// A participant's entry: its enclave.
fn participant_cost(enclave: &str) -> usize {
    enclave.len() + 64
}

/// How many departed participants the graph remembers.
const GONE_KEPT: usize = 4096;

/// The latest [`GONE_KEPT`] departed participants' GUID prefixes.
#[derive(Default)]
struct Gone {
    set: std::collections::HashSet<[u8; 12]>,
    order: std::collections::VecDeque<[u8; 12]>,
}

impl Gone {
    fn contains(&self, key: &[u8; 12]) -> bool {
        self.set.contains(key)
    }

    fn insert(&mut self, key: [u8; 12]) {
        if self.set.insert(key) {
            self.order.push_back(key);
            if self.order.len() > GONE_KEPT {
                if let Some(oldest) = self.order.pop_front() {
                    self.set.remove(&oldest);
                }
            }
        }
    }
}

fn prefix(gid: &Gid) -> [u8; 12] {
    let mut p = [0u8; 12];
    p.copy_from_slice(&gid.0[..12]);
    p
}

/// The graph cache of one participant, bounded by its [`GraphLimits`] (as the Zenoh
/// transport's is): a peer's endpoint, participant or node list beyond them is left out,
/// counted and reported (rate-limited).
pub(crate) struct GraphCache {
    /// This participant's GUID prefix (set once the participant exists): discovery also
    /// reports our own endpoints, which are recorded with their node when created instead.
    own_prefix: OnceLock<[u8; 12]>,
    state: Mutex<GraphState>,
    notifier: GraphNotifier,
    /// Announcements left out for the limits.
    refused: AtomicU64,
}

/// The node rmw names for endpoints whose node it does not know.
impl GraphState {
    /// The node a remote endpoint belongs to, as its participant announced it.
    fn node_of(&self, gid: &Gid) -> Option<NodeName> {
        self.remote_nodes
            .get(&prefix(gid))?
            .iter()
            .find(|n| n.readers.contains(gid) || n.writers.contains(gid))
            .map(|n| n.node.clone())
    }
}

fn unknown_node() -> NodeName {
    NodeName {
        name: "_NODE_NAME_UNKNOWN_".into(),
        namespace: "_NODE_NAMESPACE_UNKNOWN_".into(),
    }
}

impl Default for GraphCache {
    fn default() -> Self {
        Self::new(GraphLimits::DEFAULT)
    }
}

/// Announcements left out of a graph cache for its limits, logged at most every 10 s.
static OVER_LIMIT: ReportThrottle = ReportThrottle::new(Duration::from_secs(10));

impl GraphCache {
    /// An empty cache bounded by `limits`.
    pub fn new(limits: GraphLimits) -> Self {
        Self {
            own_prefix: OnceLock::new(),
            state: Mutex::new(GraphState::new(limits)),
            notifier: GraphNotifier::default(),
            refused: AtomicU64::new(0),
        }
    }

    /// Announcements left out so far for the cache's limits.
    pub fn refused_count(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    fn over_limit(&self, what: &str, full: GraphFull) {
        self.refused.fetch_add(1, Ordering::Relaxed);
        if let Some(held_back) = OVER_LIMIT.note("graph") {
            rclev::diagnostic!(WARN, target: "rclev_dds", "{what} left out of the graph: {full}{held_back}");
        }
    }

    fn state(&self) -> MutexGuard<'_, GraphState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn set_own_prefix(&self, guid: &[u8; 16]) {
        let mut prefix = [0u8; 12];
        prefix.copy_from_slice(&guid[..12]);
        let _ = self.own_prefix.set(prefix);
    }

    /// Tells every waiter (`wait_for_service`, `wait_for_graph_change`) to look again.
    pub fn changed(&self) {
        self.notifier.changed();
    }

    pub fn notifier(&self) -> &GraphNotifier {
        &self.notifier
    }

    /// Registers a local node; returns its id for [`remove_node`](Self::remove_node).
    pub fn add_node(&self, node: NodeName) -> u64 {
        let id = {
            let mut s = self.state();
            s.next_node += 1;
            let id = s.next_node;
            s.nodes.insert(id, node);
            id
        };
        self.changed();
        id
    }

    pub fn remove_node(&self, id: u64) {
        self.state().nodes.remove(&id);
        self.changed();
    }

    /// Records a local endpoint of node `node` (an [`add_node`](Self::add_node) id), made of
    /// the DDS `entities`.
    pub fn add_local(&self, info: EndpointInfo, node: u64, entities: Vec<DdsEntity>) {
        self.state().local.insert(
            info.gid,
            LocalEndpoint {
                info,
                node,
                entities,
            },
        );
        self.changed();
    }

    pub fn remove_local(&self, gid: &Gid) {
        if self.state().local.remove(gid).is_some() {
            self.changed();
        }
    }

    /// A discovered endpoint, if it is known and alive.
    pub fn remote(&self, gid: &Gid) -> Option<RemoteEndpoint> {
        self.state().remote.get(gid).cloned()
    }

    /// The QoS every publisher of topic `name` offers (local and discovered), for resolving
    /// a subscription's `BestAvailable` policies.
    pub fn offers(&self, name: &str) -> Vec<QoSProfile> {
        let s = self.state();
        let topic = RosTopic::Topic(name.to_string());
        let local = s
            .local
            .values()
            .map(|e| &e.info)
            .filter(|e| e.kind == EndpointKind::Publisher && e.name == name)
            .map(|e| e.qos);
        let remote = s
            .remote
            .values()
            .filter(|e| e.writer && e.topic == topic)
            .map(|e| e.qos);
        local.chain(remote).collect()
    }

    /// The graph now. Services count once per server or client: by their request reader
    /// (server) or request writer (client), as rmw lists them.
    pub fn snapshot(&self) -> GraphSnapshot {
        let s = self.state();
        let mut endpoints: Vec<EndpointInfo> = s.local.values().map(|e| e.info.clone()).collect();
        for (gid, e) in &s.remote {
            let (name, kind) = match (&e.topic, e.writer) {
                (RosTopic::Topic(n), true) => (n, EndpointKind::Publisher),
                (RosTopic::Topic(n), false) => (n, EndpointKind::Subscription),
                (RosTopic::Request(n), false) => (n, EndpointKind::Service),
                (RosTopic::Request(n), true) => (n, EndpointKind::Client),
                (RosTopic::Reply(_), _) => continue,
            };
            endpoints.push(EndpointInfo::new(
                s.node_of(gid).unwrap_or_else(unknown_node),
                name.clone(),
                kind,
                e.type_name.clone(),
                e.type_hash,
                *gid,
                e.qos,
            ));
        }
        endpoints.sort_by(|a, b| (&a.name, a.gid).cmp(&(&b.name, b.gid)));
        let remote_nodes = s.remote_nodes.values().flatten().map(|n| n.node.clone());
        let mut nodes: Vec<NodeName> = s.nodes.values().cloned().chain(remote_nodes).collect();
        nodes.sort();
        GraphSnapshot { nodes, endpoints }
    }

    /// This participant's `ros_discovery_info` state: every local node, in the order they were
    /// created, with its endpoints' DDS readers and writers.
    pub fn local_entities(&self, participant: Gid) -> ParticipantEntities {
        let s = self.state();
        let mut ids: Vec<u64> = s.nodes.keys().copied().collect();
        ids.sort_unstable();
        let mut nodes: Vec<NodeEntities> = ids
            .iter()
            .map(|id| NodeEntities {
                node: s.nodes[id].clone(),
                readers: Vec::new(),
                writers: Vec::new(),
            })
            .collect();
        let mut endpoints: Vec<&LocalEndpoint> = s.local.values().collect();
        endpoints.sort_by_key(|e| e.info.gid);
        for e in endpoints {
            let Ok(at) = ids.binary_search(&e.node) else {
                continue;
            };
            for entity in &e.entities {
                match *entity {
                    DdsEntity::Reader(gid) => nodes[at].readers.push(gid),
                    DdsEntity::Writer(gid) => nodes[at].writers.push(gid),
                }
            }
        }
        ParticipantEntities {
            gid: participant,
            nodes,
        }
    }

    /// A peer's `ros_discovery_info` sample: its nodes replace what it said before.
    pub fn remote_entities(&self, entities: ParticipantEntities) {
        if self.is_own(&entities.gid.0) {
            return;
        }
        let changed = {
            let mut s = self.state();
            let key = prefix(&entities.gid);
            // Kept even before discovery reports the participant (its listener may run
            // later than the reader's): the writer keeps only the latest sample, and would
            // not send it again. Not after the participant has left, though.
            let old = s.remote_nodes.get(&key);
            if s.gone.contains(&key) || old == Some(&entities.nodes) {
                false
            } else {
                let new_cost = entities.nodes.cost();
                let admitted = match old.map(Cost::cost) {
                    Some(old_cost) => s.budget.resize(old_cost, new_cost),
                    None => s.budget.admit(new_cost),
                };
                match admitted {
                    Ok(()) => {
                        s.remote_nodes.insert(key, entities.nodes);
                        true
                    }
                    Err(full) => {
                        drop(s);
                        self.over_limit("a participant's node list", full);
                        false
                    }
                }
            }
        };
        if changed {
            self.changed();
        }
    }

    /// Whether the participant of endpoint `gid` is this one or one discovery reports alive.
    pub fn participant_alive(&self, gid: &Gid) -> bool {
        self.is_own(&gid.0)
            || self
                .state()
                .participants
                .keys()
                .any(|p| p[..12] == gid.0[..12])
    }

    /// How many other participants are alive.
    pub fn participant_count(&self) -> usize {
        self.state().participants.len()
    }

    /// Whether discovery has caught up with what the peers announced: every other participant
    /// alive has sent its `ros_discovery_info`, every reader and writer listed there has been
    /// discovered, and every one discovered is listed. (A participant that never sends one — a bare DDS program — keeps this
    /// false.) Tools wait on it before printing the graph.
    pub fn settled(&self) -> bool {
        let s = self.state();
        s.participants.keys().all(|p| {
            let key = prefix(&Gid(*p));
            let Some(nodes) = s.remote_nodes.get(&key) else {
                return false;
            };
            let listed = || {
                nodes
                    .iter()
                    .flat_map(|n| n.readers.iter().chain(&n.writers))
            };
            // Both views agree: every endpoint listed is discovered, and every endpoint
            // discovered of this participant is listed (its newest sample may lag its newest
            // endpoints).
            listed().all(|gid| s.remote.contains_key(gid))
                && s.remote
                    .keys()
                    .filter(|gid| prefix(gid) == key)
                    .all(|gid| listed().any(|l| l == gid))
        })
    }

    fn is_own(&self, guid: &[u8; 16]) -> bool {
        self.own_prefix.get().is_some_and(|p| guid[..12] == p[..])
    }
}

/// Discovered endpoints left out of the graph for names that are not UTF-8, logged per
/// participant at most every 10 s.
static IGNORED: ReportThrottle = ReportThrottle::new(Duration::from_secs(10));

fn ignored_endpoint(gid: &Gid, topic: &[u8], type_name: &[u8]) {
    let participant = id_text(&gid.0)[..35].to_string();
    if let Some(held_back) = IGNORED.note(&participant) {
        rclev::diagnostic!(WARN,
            target: "rclev_dds",
            "an endpoint of participant {participant} is left out of the graph: its topic '{}' or type '{}' is not UTF-8{held_back}",
            rclev::printable(&String::from_utf8_lossy(topic), 120),
            rclev::printable(&String::from_utf8_lossy(type_name), 120),
        );
    }
}

/// How many discovered endpoints this process left out of the graph for names that are not
/// UTF-8.
pub(crate) fn ignored_endpoints() -> u64 {
    IGNORED.total()
}

impl GraphHandler for GraphCache {
    fn endpoint(&self, e: &DiscoveredEndpoint) {
        if self.is_own(&e.guid) {
            return;
        }
        let gid = Gid(e.guid);
        // Names are the peer's bytes. ROS names are ASCII: one that is not even UTF-8 names
        // nothing rclev could match or show (counted, reported rate-limited, left out).
        let names = std::str::from_utf8(&e.topic)
            .and_then(|topic| Ok((topic, std::str::from_utf8(&e.type_name)?)));
        let names = match names {
            Ok(names) => Some(names),
            Err(_) => {
                if e.alive {
                    ignored_endpoint(&gid, &e.topic, &e.type_name);
                }
                None
            }
        };
        let changed = {
            let mut s = self.state();
            match names.and_then(|(topic, type_name)| Some((demangle_topic(topic)?, type_name))) {
                Some((topic, type_name)) if e.alive => {
                    let user_data = parse_user_data(&e.user_data);
                    let endpoint = RemoteEndpoint {
                        writer: e.writer,
                        topic,
                        type_name: demangle_type(type_name),
                        type_hash: user_data_type_hash(&user_data),
                        qos: from_dds(&e.qos),
                        user_data,
                    };
                    let new_cost = endpoint.cost();
                    let admitted = match s.remote.get(&gid).map(Cost::cost) {
                        Some(old_cost) => s.budget.resize(old_cost, new_cost),
                        None => s.budget.admit(new_cost),
                    };
                    match admitted {
                        Ok(()) => {
                            s.remote.insert(gid, endpoint);
                            true
                        }
                        Err(full) => {
                            drop(s);
                            self.over_limit("a discovered endpoint", full);
                            false
                        }
                    }
                }
                _ => match s.remote.remove(&gid) {
                    Some(gone) => {
                        s.budget.release(gone.cost());
                        true
                    }
                    None => false,
                },
            }
        };
        if changed {
            self.changed();
        }
    }

    fn participant(&self, p: &DiscoveredParticipant) {
        if self.is_own(&p.guid) {
            return;
        }
        {
            let mut s = self.state();
            if p.alive {
                let enclave = parse_user_data(&p.user_data)
                    .remove("enclave")
                    .unwrap_or_default();
                let new_cost = participant_cost(&enclave);
                let admitted = match s.participants.get(&p.guid).map(|e| participant_cost(e)) {
                    Some(old_cost) => s.budget.resize(old_cost, new_cost),
                    None => s.budget.admit(new_cost),
                };
                match admitted {
                    Ok(()) => {
                        s.participants.insert(p.guid, enclave);
                    }
                    Err(full) => {
                        drop(s);
                        return self.over_limit("a discovered participant", full);
                    }
                }
            } else {
                let state = &mut *s;
                if let Some(enclave) = state.participants.remove(&p.guid) {
                    state.budget.release(participant_cost(&enclave));
                }
                let key = prefix(&Gid(p.guid));
                if let Some(nodes) = state.remote_nodes.remove(&key) {
                    state.budget.release(nodes.cost());
                }
                state.gone.insert(key);
                // Its endpoints go with it (Fast DDS reports them removed too, but a
                // participant that timed out may not have said goodbye for each).
                let budget = &mut state.budget;
                state.remote.retain(|gid, e| {
                    let keep = gid.0[..12] != p.guid[..12];
                    if !keep {
                        budget.release(e.cost());
                    }
                    keep
                });
            }
        }
        self.changed();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ffi::bridge::EndpointQos;

    fn discovered(guid: u8, writer: bool, topic: &str, alive: bool) -> DiscoveredEndpoint {
        let mut g = [guid; 16];
        g[15] = if writer { 3 } else { 4 };
        DiscoveredEndpoint {
            alive,
            writer,
            guid: g,
            topic: topic.as_bytes().to_vec(),
            type_name: b"std_msgs::msg::dds_::String_".to_vec(),
            user_data:
                b"typehash=RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18;"
                    .to_vec(),
            qos: EndpointQos {
                reliable: true,
                transient_local: false,
                keep_all: false,
                depth: 0,
                deadline_ns: -1,
                lifespan_ns: -1,
                liveliness: 0,
                lease_ns: -1,
            },
        }
    }

    /// The defect class: the cache mirrored every endpoint a peer announced, whatever their
    /// number and size. A flood beyond the limits is left out and counted; what leaves makes
    /// room.
    #[test]
    fn the_cache_is_bounded_in_entries_and_bytes() {
        let g = GraphCache::new(GraphLimits {
            max_entries: 100_000,
            max_bytes: 64 * 1024,
        });
        let long = format!("rt/{}", "x".repeat(8000));
        for id in 0..20u8 {
            g.endpoint(&discovered(id, true, &long, true));
        }
        let kept = g.snapshot().endpoints.len();
        // Each costs ~8.3 KB: 7 fit in 64 KiB.
        assert_eq!(kept, 7, "{kept}");
        assert_eq!(g.refused_count(), 13);
        g.endpoint(&discovered(0, true, &long, false));
        g.endpoint(&discovered(100, true, &long, true));
        assert_eq!(g.snapshot().endpoints.len(), 7);
        assert_eq!(g.refused_count(), 13);

        let few = GraphCache::new(GraphLimits {
            max_entries: 3,
            max_bytes: usize::MAX,
        });
        for id in 0..10u8 {
            few.endpoint(&discovered(id, false, "rt/chatter", true));
        }
        assert_eq!(few.snapshot().endpoints.len(), 3);
        assert_eq!(few.refused_count(), 7);
    }

    #[test]
    fn discovered_endpoints_show_as_ros_entities() {
        let g = GraphCache::default();
        g.set_own_prefix(&[9; 16]);
        g.endpoint(&discovered(1, true, "rt/chatter", true));
        g.endpoint(&discovered(2, false, "rq/addRequest", true));
        g.endpoint(&discovered(2, true, "rr/addReply", true));
        g.endpoint(&discovered(3, true, "DCPSSomething", true));
        g.endpoint(&discovered(9, true, "rt/mine", true));
        let snap = g.snapshot();
        assert_eq!(snap.count("/chatter", EndpointKind::Publisher), 1);
        assert_eq!(snap.count("/add", EndpointKind::Service), 1);
        assert_eq!(snap.endpoints.len(), 2, "{snap:?}");
        let chatter = &snap.endpoints_of("/chatter", EndpointKind::Publisher)[0];
        assert_eq!(chatter.type_name, "std_msgs/msg/String");
        assert_eq!(chatter.node.name, "_NODE_NAME_UNKNOWN_");
        assert_eq!(
            chatter.type_hash.to_string(),
            "RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18"
        );
        assert_eq!(g.offers("/chatter").len(), 1);
        g.endpoint(&discovered(1, true, "rt/chatter", false));
        assert_eq!(g.snapshot().count("/chatter", EndpointKind::Publisher), 0);
    }

    #[test]
    fn the_request_header_is_for_cyclone_and_unknown_named_peers_only() {
        let mut service = discovered(1, false, "rq/addRequest", true);
        service.user_data = b"serviceid=01.02;typehash=x;".to_vec();
        let remote = |d: &DiscoveredEndpoint| RemoteEndpoint {
            writer: d.writer,
            topic: RosTopic::Request("/add".into()),
            type_name: String::new(),
            type_hash: TypeHash([0; 32]),
            qos: QoSProfile::default(),
            user_data: parse_user_data(&d.user_data),
        };
        let mut gid = Gid(service.guid);
        gid.0[..2].copy_from_slice(&VENDOR_CYCLONE);
        assert!(remote(&service).needs_cyclone_header(&gid));
        gid.0[..2].copy_from_slice(&VENDOR_EPROSIMA);
        assert!(!remote(&service).needs_cyclone_header(&gid), "rclev's own");
        gid.0[..2].copy_from_slice(&[0x01, 0x12]);
        assert!(remote(&service).needs_cyclone_header(&gid));
        service.user_data = b"typehash=x;".to_vec();
        assert!(!remote(&service).needs_cyclone_header(&gid));
    }

    fn participant(guid: u8, alive: bool) -> DiscoveredParticipant {
        DiscoveredParticipant {
            alive,
            guid: [guid; 16],
            user_data: b"enclave=/;".to_vec(),
        }
    }

    fn node(name: &str, namespace: &str) -> NodeName {
        NodeName {
            name: name.into(),
            namespace: namespace.into(),
        }
    }

    #[test]
    fn peers_discovery_info_names_their_nodes_and_endpoints() {
        let g = GraphCache::default();
        g.set_own_prefix(&[9; 16]);
        let talker = discovered(1, true, "rt/chatter", true);
        let stranger = discovered(1, false, "rt/chatter", true);
        g.endpoint(&talker);
        g.endpoint(&stranger);
        let info = ParticipantEntities {
            gid: Gid([1; 16]),
            nodes: vec![NodeEntities {
                node: node("talker", "/robot"),
                readers: vec![],
                writers: vec![Gid(talker.guid)],
            }],
        };
        g.participant(&participant(1, true));
        assert!(!g.settled(), "no ros_discovery_info from participant 1 yet");
        let mut rx = g.notifier().subscribe();
        // Even before discovery reports its participant, a sample is kept.
        g.remote_entities(info.clone());
        assert!(rx.has_changed().unwrap());
        rx.mark_unchanged();
        // The same state again is no change.
        g.remote_entities(info.clone());
        assert!(!rx.has_changed().unwrap());
        assert!(
            !g.settled(),
            "a discovered reader that no node of participant 1 lists"
        );
        let snap = g.snapshot();
        assert_eq!(snap.nodes, [node("talker", "/robot")]);
        let publisher = &snap.endpoints_of("/chatter", EndpointKind::Publisher)[0];
        assert_eq!(publisher.node, node("talker", "/robot"));
        let unclaimed = &snap.endpoints_of("/chatter", EndpointKind::Subscription)[0];
        assert_eq!(unclaimed.node, unknown_node());
        // Our own sample (read back through a peer) is ignored.
        g.remote_entities(ParticipantEntities {
            gid: Gid([9; 16]),
            nodes: vec![NodeEntities {
                node: node("me", "/"),
                readers: vec![],
                writers: vec![],
            }],
        });
        assert_eq!(g.snapshot().nodes.len(), 1);
        // A node listing a reader discovery has not reported yet: not settled.
        let mut pending = Gid([1; 16]);
        pending.0[15] = 0x07;
        g.remote_entities(ParticipantEntities {
            gid: Gid([1; 16]),
            nodes: vec![NodeEntities {
                node: node("talker", "/robot"),
                readers: vec![pending],
                writers: vec![Gid(talker.guid)],
            }],
        });
        assert!(!g.settled());
        // Both views agree: settled.
        g.remote_entities(ParticipantEntities {
            gid: Gid([1; 16]),
            nodes: vec![NodeEntities {
                node: node("talker", "/robot"),
                readers: vec![Gid(stranger.guid)],
                writers: vec![Gid(talker.guid)],
            }],
        });
        assert!(g.settled());
        g.participant(&participant(1, false));
        assert!(g.snapshot().nodes.is_empty());
        assert!(g.settled());
        // A sample of a participant that has left, still in flight: ignored.
        g.remote_entities(info);
        assert!(g.snapshot().nodes.is_empty());
        // A participant's sample may come before discovery reports the participant.
        g.remote_entities(ParticipantEntities {
            gid: Gid([2; 16]),
            nodes: vec![NodeEntities {
                node: node("early", "/"),
                readers: vec![],
                writers: vec![],
            }],
        });
        assert_eq!(g.snapshot().nodes, [node("early", "/")]);
    }

    #[test]
    fn local_entities_list_each_nodes_readers_and_writers() {
        let g = GraphCache::default();
        let a = g.add_node(node("a", "/"));
        let b = g.add_node(node("b", "/ns"));
        let info = |gid: u8, kind| {
            EndpointInfo::new(
                node("a", "/"),
                "/x",
                kind,
                "std_msgs/msg/String",
                TypeHash([0; 32]),
                Gid([gid; 16]),
                QoSProfile::default(),
            )
        };
        g.add_local(
            info(1, EndpointKind::Publisher),
            a,
            vec![DdsEntity::Writer(Gid([1; 16]))],
        );
        g.add_local(
            info(2, EndpointKind::Service),
            b,
            vec![
                DdsEntity::Reader(Gid([2; 16])),
                DdsEntity::Writer(Gid([3; 16])),
            ],
        );
        let state = g.local_entities(Gid([9; 16]));
        assert_eq!(state.gid, Gid([9; 16]));
        assert_eq!(
            state.nodes,
            [
                NodeEntities {
                    node: node("a", "/"),
                    readers: vec![],
                    writers: vec![Gid([1; 16])],
                },
                NodeEntities {
                    node: node("b", "/ns"),
                    readers: vec![Gid([2; 16])],
                    writers: vec![Gid([3; 16])],
                },
            ]
        );
        g.remove_local(&Gid([2; 16]));
        g.remove_node(a);
        let state = g.local_entities(Gid([9; 16]));
        assert_eq!(state.nodes.len(), 1);
        assert!(state.nodes[0].readers.is_empty());
    }

    #[test]
    fn a_participant_that_leaves_takes_its_endpoints_along() {
        let g = GraphCache::default();
        let mut rx = g.notifier().subscribe();
        g.endpoint(&discovered(1, true, "rt/chatter", true));
        g.participant(&DiscoveredParticipant {
            alive: false,
            guid: [1; 16],
            user_data: Vec::new(),
        });
        assert!(g.snapshot().endpoints.is_empty());
        assert!(rx.has_changed().unwrap());
        rx.mark_unchanged();
    }
}
