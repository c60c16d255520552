//! The seam between rclev's executor and whatever moves messages: in process
//! ([`IntraProcess`], the default) or over a wire (DDS).
//!
//! A transport registers nodes ([`Transport::create_node`]) and creates their endpoints
//! ([`NodePort`]); it reports the graph ([`Transport::graph`], [`Transport::graph_changes`]).
//! The executor never looks inside it: an endpoint gets a [`ReadyHook`] that the transport
//! calls when something arrives and an [`EventHook`] for QoS events, and the entity later
//! calls `take_*` from its worker. Messages travel as a [`Payload`]: a shared Rust value in
//! process, CDR bytes on a wire; the node layer decodes bytes once, with the entity's
//! [`TypeSupport`]. A wire transport may decode them itself, with the same type support,
//! straight from its engine's buffer, and hand over shared values (one copy fewer).
//!
//! `docs/transport.md` in the repository is the guide for implementers: what each call must
//! guarantee, and what the in-process transport guarantees beyond that.

use std::sync::Arc;

use tokio::sync::watch;

use crate::base::error::{DeliveryError, Result};
use crate::msg::{ServiceType, TypeHash};
use crate::qos::{QoSProfile, QosEvent, QosEventKind};

mod graph;
mod graph_limits;
mod ids;
mod inbox;
pub(crate) mod intra;
mod payload;

pub use graph::{EndpointInfo, EndpointKind, GraphNotifier, GraphSnapshot, NodeName};
pub use graph_limits::{
    GraphBudget, GraphFull, GraphLimits, GRAPH_CACHE_BYTES_VAR, GRAPH_CACHE_ENTRIES_VAR,
};
pub use ids::{Gid, MessageInfo, RequestId};
pub use inbox::{Inbox, InboxHistory, DEFAULT_QUEUE_BYTES};
pub use intra::IntraProcess;
pub use payload::{DeserializeFn, EncodeInPlace, EncodedLenFn, Payload, SerializeFn, TypeSupport};

/// Called by a transport when an endpoint has something to take. Must be cheap and must not
/// block: it runs on the publishing thread (or the transport's receive thread).
pub trait ReadyHook: Send + Sync {
    /// Something became ready.
    fn ready(&self);

    /// Something became ready, pushed from the transport's own receive thread, which is not
    /// the publisher's and may lend itself to run the entity's work right there (see
    /// [`Delivery::Direct`](crate::Delivery::Direct)); then this returns once that work
    /// has run. The transport must hold none of its own locks while calling this. By default
    /// the same as [`ready`](Self::ready).
    fn ready_on_receive_thread(&self) {
        self.ready();
    }
}

/// Called by a transport with a QoS event for an endpoint. Same rules as [`ReadyHook`].
pub trait EventHook: Send + Sync {
    /// The event happened.
    fn event(&self, event: QosEvent);
}

/// Ignores every event (for endpoints whose owner does not listen).
impl EventHook for () {
    fn event(&self, _: QosEvent) {}
}

/// A service's names and types, as the graph and the wire show them.
#[derive(Debug, Clone, Copy)]
pub struct ServiceTypes {
    /// `pkg/srv/Name`.
    pub type_name: &'static str,
    /// The service type's hash.
    pub type_hash: TypeHash,
    /// The request message.
    pub request: TypeSupport,
    /// The response message.
    pub response: TypeSupport,
}

impl ServiceTypes {
    /// The types of service `S`.
    pub fn of<S: ServiceType>() -> Self {
        Self {
            type_name: S::TYPE_NAME,
            type_hash: S::TYPE_HASH,
            request: TypeSupport::of::<S::Request>(),
            response: TypeSupport::of::<S::Response>(),
        }
    }
}

/// A topic endpoint to create.
#[derive(Debug, Clone)]
pub struct TopicEndpoint {
    /// Fully qualified topic name.
    pub name: String,
    /// The message type.
    pub type_support: TypeSupport,
    /// QoS as the user asked; the transport resolves `SystemDefault`/`BestAvailable`
    /// policies with [`QoSProfile::resolve`].
    pub qos: QoSProfile,
    /// For a subscription: whether its owner reads [`MessageInfo`]s. A transport for which
    /// an info has a cost (the in-process one: a clock read per publish, and a meta per
    /// queued message) may leave the infos of a subscription that does not partial: then
    /// only the reception sequence number is sure to be set.
    pub reads_message_info: bool,
    /// For a subscription on a wire transport: the most bytes (received messages' lengths
    /// on the wire) its queue holds ([`DEFAULT_QUEUE_BYTES`] by default), beside its QoS
    /// history's bound. Ignored by publishers and by the in-process transport, whose queues
    /// hold shared values, not copies.
    pub max_queue_bytes: usize,
}

/// A service endpoint (server or client) to create.
#[derive(Debug, Clone)]
pub struct ServiceEndpoint {
    /// Fully qualified service name.
    pub name: String,
    /// The service's types.
    pub types: ServiceTypes,
    /// QoS of both directions.
    pub qos: QoSProfile,
}

/// The publishing side of a topic.
pub trait PublisherPort: Send + Sync {
    /// Publishes one message. A wire transport serializes a [`Payload::Shared`] with the
    /// endpoint's type support. A message that could not be published comes back in the
    /// error (it is moved in, so the caller keeps no clone of it on the hot path).
    fn publish(&self, msg: Payload) -> Result<(), DeliveryError<Payload>>;
    /// Number of subscriptions currently matched.
    fn subscription_count(&self) -> usize;
    /// The publisher's GID.
    fn gid(&self) -> Gid;
    /// The QoS the publisher was created with, resolved.
    fn qos(&self) -> QoSProfile;
    /// Whether the transport can lend message buffers to fill in place (zero-copy
    /// publishing; none does yet). A loan API will hang off this trait.
    fn can_loan_messages(&self) -> bool {
        false
    }
}

/// The receiving side of a topic.
pub trait SubscriptionPort: Send + Sync {
    /// Takes the oldest message, if any.
    fn take(&self) -> Option<(Payload, MessageInfo)>;
    /// Moves up to `max` of the oldest messages into `out` and says whether more are left.
    /// Transports override it to take a batch under one lock.
    fn take_batch(&self, max: usize, out: &mut Vec<(Payload, MessageInfo)>) -> bool {
        for _ in 0..max {
            match self.take() {
                Some(m) => out.push(m),
                None => return false,
            }
        }
        true
    }
    /// [`take_batch`](Self::take_batch) without the infos, for a subscription that never
    /// reads them (its endpoint's `reads_message_info` is false): a transport can then skip
    /// building them.
    fn take_payloads(&self, max: usize, out: &mut Vec<Payload>) -> bool {
        for _ in 0..max {
            match self.take() {
                Some((payload, _)) => out.push(payload),
                None => return false,
            }
        }
        true
    }
    /// Messages dropped so far because the history was full (KeepLast).
    fn lost_count(&self) -> u64;
    /// Messages a wire transport refused before they could be decoded: longer than any
    /// encoding of the type can be. The node layer counts them as malformed.
    fn refused_count(&self) -> u64 {
        0
    }
    /// Number of publishers currently matched.
    fn publisher_count(&self) -> usize;
    /// The subscription's GID.
    fn gid(&self) -> Gid;
    /// The QoS the subscription was created with, resolved (`BestAvailable` decided).
    fn qos(&self) -> QoSProfile;
    /// Unsubscribes now, even while the port itself is still referenced (by a callback in
    /// flight): publishers stop counting it and queue nothing more for it. Idempotent;
    /// dropping the port closes it too.
    fn close(&self);
}

/// A service server's side.
pub trait ServicePort: Send + Sync {
    /// Takes the oldest request, if any.
    fn take_request(&self) -> Option<(RequestId, Payload)>;
    /// Sends the response to a request. Over a wire this is best effort: the client may be gone.
    fn send_response(&self, id: RequestId, response: Payload) -> Result<()>;
    /// Gives up on a request (its handler failed). A transport that can tell the client does
    /// (the in-process one fails the call with [`Error::ServiceFailed`](crate::Error)); over
    /// DDS the client's call runs into its timeout.
    fn abandon_request(&self, id: RequestId);
    /// Withdraws the service now, even while the port itself is still referenced (by a callback
    /// in flight): clients stop seeing it and new requests do not reach it. Idempotent;
    /// dropping the port closes it too.
    fn close(&self);
    /// Requests dropped so far because the service's queue was full (its QoS depth, KeepLast).
    fn lost_count(&self) -> u64 {
        0
    }
    /// Requests a wire transport refused before they could be decoded: longer than any
    /// encoding of the request type can be.
    fn refused_count(&self) -> u64 {
        0
    }
}

/// A service client's side.
pub trait ClientPort: Send + Sync {
    /// Sends a request and returns its sequence number. A transport that knows no server can
    /// receive it fails with [`Error::ServiceUnavailable`](crate::Error) rather than drop it.
    fn send_request(&self, request: Payload) -> Result<i64>;
    /// Takes the oldest response, if any; `Err` when the transport learnt that the server
    /// will not answer (best effort: a remote server may vanish silently).
    fn take_response(&self) -> Option<(i64, Result<Payload>)>;
    /// Whether a server is matched and can answer.
    fn service_is_ready(&self) -> bool;
    /// The client's GID (the `writer_guid` of its request ids).
    fn gid(&self) -> Gid;
}

/// A node as a transport knows it; its endpoints are created through it. Dropping the last
/// reference removes the node from the graph (its endpoints may outlive it).
pub trait NodePort: Send + Sync {
    /// Creates a publisher.
    fn create_publisher(
        &self,
        endpoint: &TopicEndpoint,
        events: Arc<dyn EventHook>,
    ) -> Result<Arc<dyn PublisherPort>>;
    /// Creates a subscription that calls `ready` whenever a message can be taken.
    fn create_subscription(
        &self,
        endpoint: &TopicEndpoint,
        ready: Arc<dyn ReadyHook>,
        events: Arc<dyn EventHook>,
    ) -> Result<Arc<dyn SubscriptionPort>>;
    /// Creates a service server that calls `ready` whenever a request can be taken.
    fn create_service(
        &self,
        endpoint: &ServiceEndpoint,
        ready: Arc<dyn ReadyHook>,
    ) -> Result<Arc<dyn ServicePort>>;
    /// Creates a client that calls `ready` whenever a response can be taken.
    fn create_client(
        &self,
        endpoint: &ServiceEndpoint,
        ready: Arc<dyn ReadyHook>,
    ) -> Result<Arc<dyn ClientPort>>;
}

/// A transport. Implemented by [`IntraProcess`]; a DDS transport implements the same trait.
pub trait Transport: Send + Sync + 'static {
    /// Registers a node on the graph.
    fn create_node(&self, node: &NodeName) -> Result<Arc<dyn NodePort>>;
    /// The graph as the transport knows it now.
    fn graph(&self) -> GraphSnapshot;
    /// A receiver that sees every later graph change (`changed().await`).
    fn graph_changes(&self) -> watch::Receiver<u64>;
    /// Whether the transport ever reports events of `kind`; users ask through
    /// `Node::supports_qos_event` before relying on one.
    fn supports_event(&self, kind: QosEventKind) -> bool;
}
