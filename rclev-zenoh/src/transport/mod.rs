//! [`ZenohTransport`]: rclev's [`Transport`] over one Zenoh session, speaking rmw_zenoh's
//! wire ([`crate::wire`]): nodes and endpoints announced by liveliness tokens, the graph read
//! back from them (`graph`), topics as publishers and subscribers on data key expressions
//! (`topic`), services as queryables and queries (`service`).

mod events;
mod graph;
mod initial_graph;
mod service;
mod topic;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::watch;
use zenoh::sample::SampleKind;
use zenoh::Wait;

use rclev::qos::QosEventKind;
use rclev::transport::{
    ClientPort, EventHook, GraphLimits, GraphSnapshot, NodeName, NodePort, PublisherPort,
    ReadyHook, ServiceEndpoint, ServicePort, SubscriptionPort, TopicEndpoint, Transport,
};
use rclev::{Arguments, Context, Error, Result};

use crate::config::{domain_id_from_env, ZenohOptions};
use crate::session::ZenohSession;
use crate::wire::{graph_subscription_keyexpr, EntityKind, Token, TopicInfo};
use graph::GraphCache;

/// What every node and endpoint of one transport shares. Dropped after the last of them, so
/// the session outlives every declaration made on it.
pub(crate) struct Shared {
    /// The graph subscriber first (fields drop in order), then the session.
    graph_subscriber: Mutex<Option<zenoh::pubsub::Subscriber<()>>>,
    session: ZenohSession,
    domain_id: usize,
    zid: String,
    enclave: String,
    /// Node and entity ids, from 0, one sequence for both (as rmw_zenoh's context).
    next_id: AtomicU64,
    graph: Arc<GraphCache>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        let subscriber = self
            .graph_subscriber
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        drop(subscriber);
    }
}

/// A liveliness token of ours, declared on the session and listed in the graph; undeclared
/// and unlisted when dropped.
pub(crate) struct Announced {
    shared: Arc<Shared>,
    keyexpr: String,
    _token: zenoh::liveliness::LivelinessToken,
}

impl Drop for Announced {
    fn drop(&mut self) {
        self.shared.graph.delete(&self.keyexpr);
    }
}

/// Zenoh's error as rclev's.
pub(crate) fn zenoh_error(what: &str, error: impl std::fmt::Display) -> Error {
    Error::Transport(format!("zenoh: {what}: {error}"))
}

impl Shared {
    fn zenoh(&self) -> &zenoh::Session {
        self.session.zenoh()
    }

    fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Declares `token`'s liveliness token and lists it in the graph at once.
    fn announce(self: &Arc<Self>, token: &Token) -> Result<Announced> {
        let keyexpr = token.to_keyexpr();
        let declared = self
            .zenoh()
            .liveliness()
            .declare_token(keyexpr.clone())
            .wait()
            .map_err(|e| zenoh_error(&format!("declaring liveliness token {keyexpr}"), e))?;
        self.graph.put_own(token);
        Ok(Announced {
            shared: self.clone(),
            keyexpr,
            _token: declared,
        })
    }
}

/// rclev's Zenoh transport: rclev nodes as peers of ROS 2 nodes on `rmw_zenoh_cpp`.
///
/// One Zenoh session per transport, opened as rmw_zenoh opens its own (a peer dialling the
/// router on `tcp/localhost:7447`; [`ZenohOptions`]).
///
/// ```no_run
/// let _router = rclev_zenoh::Router::from_env()?; // only where no rmw_zenohd runs
/// let executor = rclev_zenoh::ZenohTransport::context()?.create_basic_executor();
/// let node = executor.create_node("talker")?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ZenohTransport {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for ZenohTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZenohTransport")
            .field("zid", &self.shared.zid)
            .field("domain_id", &self.shared.domain_id)
            .finish_non_exhaustive()
    }
}

impl ZenohTransport {
    /// A transport on a session opened as the environment says (`ZENOH_*`, see
    /// [`ZenohOptions::from_env`]), on the domain of `ROS_DOMAIN_ID`.
    pub fn from_env() -> Result<Self> {
        let options = ZenohOptions::from_env().map_err(|e| Error::Transport(e.to_string()))?;
        let domain_id = domain_id_from_env().map_err(|e| Error::Transport(e.to_string()))?;
        Self::new(&options, domain_id, "/")
    }

    /// A transport on a session opened with `options`, on ROS domain `domain_id`, its nodes
    /// in `enclave` (`/` for none).
    pub fn new(options: &ZenohOptions, domain_id: usize, enclave: &str) -> Result<Self> {
        let session = ZenohSession::open(options).map_err(|e| Error::Transport(e.to_string()))?;
        Self::with_session(session, domain_id, enclave)
    }

    /// A transport on an open session.
    pub fn with_session(session: ZenohSession, domain_id: usize, enclave: &str) -> Result<Self> {
        let zid = session.zid().to_string();
        let graph = Arc::new(GraphCache::new(GraphLimits::from_env()?));
        let shared = Arc::new(Shared {
            graph_subscriber: Mutex::new(None),
            session,
            domain_id,
            zid,
            enclave: enclave.to_owned(),
            next_id: AtomicU64::new(0),
            graph: graph.clone(),
        });
        // And once, as rmw_zenoh at start, a query for every token there now, once the
        // session has met the peers its routers know (see initial_graph): when it ends, the
        // graph holds every reachable peer's entities. Started first: it asks the routers
        // before the subscriber below brings their tokens.
        initial_graph::spawn(&shared)
            .map_err(|e| Error::Transport(format!("starting the graph's first look: {e}")))?;
        // Every token of the domain, those already there (history) and those to come.
        let subscriber = shared
            .zenoh()
            .liveliness()
            .declare_subscriber(graph_subscription_keyexpr(domain_id))
            .history(true)
            .callback(move |sample| match sample.kind() {
                SampleKind::Put => graph.put(sample.key_expr().as_str()),
                SampleKind::Delete => graph.delete(sample.key_expr().as_str()),
            })
            .wait()
            .map_err(|e| zenoh_error("subscribing to the liveliness tokens", e))?;
        *shared
            .graph_subscriber
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(subscriber);
        Ok(Self { shared })
    }

    /// A [`Context`] for a ROS 2 program on Zenoh: a transport made [`from_env`](Self::from_env)
    /// and the process's `--ros-args`.
    pub fn context() -> Result<Context> {
        Self::context_from(Arguments::from_env()?)
    }

    /// A [`Context`] over a transport made from the environment, whose nodes take
    /// `arguments` (its `--enclave` is the enclave the tokens carry).
    pub fn context_from(arguments: Arguments) -> Result<Context> {
        let options = ZenohOptions::from_env().map_err(|e| Error::Transport(e.to_string()))?;
        let domain_id = domain_id_from_env().map_err(|e| Error::Transport(e.to_string()))?;
        let enclave = arguments.enclave().unwrap_or("/").to_owned();
        let transport = Self::new(&options, domain_id, &enclave)?;
        Ok(Context::new(Arc::new(transport), arguments))
    }

    /// The session's Zenoh id, as the tokens write it.
    pub fn zid(&self) -> &str {
        &self.shared.zid
    }

    /// The ROS domain.
    pub fn domain_id(&self) -> usize {
        self.shared.domain_id
    }

    /// The longest after the transport was made before [`graph_settled`](Self::graph_settled)
    /// holds, whatever the peers do (85 s).
    pub const GRAPH_SETTLED_WITHIN: std::time::Duration = initial_graph::LONGEST;

    /// Whether the graph has caught up with the peers reachable when the transport was made
    /// (the session met the peers its routers named, and its initial liveliness query ended;
    /// at most [`GRAPH_SETTLED_WITHIN`](Self::GRAPH_SETTLED_WITHIN) after the start): tools
    /// wait for it (on [`Transport::graph_changes`]) before printing the graph.
    pub fn graph_settled(&self) -> bool {
        self.shared.graph.settled()
    }

    /// How many other Zenoh sessions (processes, usually) announce ROS entities now.
    pub fn peer_count(&self) -> usize {
        let graph = self.shared.graph.zids();
        graph.iter().filter(|zid| **zid != self.shared.zid).count()
    }

    /// Liveliness tokens refused so far: malformed, or beyond the graph cache's limits
    /// ([`GraphLimits`](rclev::transport::GraphLimits), from `RCLEV_GRAPH_CACHE_ENTRIES` and
    /// `RCLEV_GRAPH_CACHE_BYTES`).
    pub fn refused_token_count(&self) -> u64 {
        self.shared.graph.refused_count()
    }
}

/// A node: its token, and what its endpoints need.
pub(crate) struct ZenohNode {
    shared: Arc<Shared>,
    name: NodeName,
    node_id: u64,
    _announced: Announced,
}

impl ZenohNode {
    /// The token of a new endpoint of this node.
    fn endpoint_token(&self, kind: EntityKind, topic: TopicInfo) -> Token {
        Token {
            domain_id: self.shared.domain_id,
            zid: self.shared.zid.clone(),
            node_id: self.node_id,
            entity_id: self.shared.next_id(),
            kind,
            enclave: self.shared.enclave.clone(),
            namespace: self.name.namespace.clone(),
            node_name: self.name.name.clone(),
            topic: Some(topic),
        }
    }
}

impl Transport for ZenohTransport {
    fn create_node(&self, node: &NodeName) -> Result<Arc<dyn NodePort>> {
        let node_id = self.shared.next_id();
        let token = Token {
            domain_id: self.shared.domain_id,
            zid: self.shared.zid.clone(),
            node_id,
            entity_id: node_id,
            kind: EntityKind::Node,
            enclave: self.shared.enclave.clone(),
            namespace: node.namespace.clone(),
            node_name: node.name.clone(),
            topic: None,
        };
        let announced = self.shared.announce(&token)?;
        Ok(Arc::new(ZenohNode {
            shared: self.shared.clone(),
            name: node.clone(),
            node_id,
            _announced: announced,
        }))
    }

    fn graph(&self) -> GraphSnapshot {
        self.shared.graph.snapshot()
    }

    fn graph_changes(&self) -> watch::Receiver<u64> {
        self.shared.graph.subscribe()
    }

    fn supports_event(&self, kind: QosEventKind) -> bool {
        // What rmw_zenoh raises (events.rs): matches from the graph, losses from sequence
        // numbers. Zenoh has no QoS matching, deadlines or liveliness leases per endpoint.
        matches!(
            kind,
            QosEventKind::PublicationMatched
                | QosEventKind::SubscriptionMatched
                | QosEventKind::MessageLost
        )
    }
}

impl NodePort for ZenohNode {
    fn create_publisher(
        &self,
        endpoint: &TopicEndpoint,
        events: Arc<dyn EventHook>,
    ) -> Result<Arc<dyn PublisherPort>> {
        Ok(Arc::new(topic::ZenohPublisher::new(
            self, endpoint, events,
        )?))
    }

    fn create_subscription(
        &self,
        endpoint: &TopicEndpoint,
        ready: Arc<dyn ReadyHook>,
        events: Arc<dyn EventHook>,
    ) -> Result<Arc<dyn SubscriptionPort>> {
        Ok(topic::ZenohSubscription::new(
            self, endpoint, ready, events,
        )?)
    }

    fn create_service(
        &self,
        endpoint: &ServiceEndpoint,
        ready: Arc<dyn ReadyHook>,
    ) -> Result<Arc<dyn ServicePort>> {
        Ok(service::ZenohService::new(self, endpoint, ready)?)
    }

    fn create_client(
        &self,
        endpoint: &ServiceEndpoint,
        ready: Arc<dyn ReadyHook>,
    ) -> Result<Arc<dyn ClientPort>> {
        Ok(service::ZenohClient::new(self, endpoint, ready)?)
    }
}
