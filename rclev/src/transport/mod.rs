//! The boundary between rclev's executor and whatever moves messages.
//!
//! The executor never looks inside a transport: an endpoint gets a [`ReadyHook`] that the
//! transport calls when something arrives, and the entity later calls `take_*` from its worker.
//! Payloads are type-erased `Arc`s so the in-process transport can hand the publisher's `Arc`
//! straight to every subscriber; a wire transport serializes through the [`TypeSupport`] it is
//! given at creation.

use std::any::{Any, TypeId};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::msg::Message;
use crate::qos::QoSProfile;

pub(crate) mod intra;
pub use intra::IntraProcess;

/// A type-erased message.
pub type Payload = Arc<dyn Any + Send + Sync>;

/// Called by a transport when an endpoint has something to take. Must be cheap and must not
/// block: it runs on the publishing thread.
pub trait ReadyHook: Send + Sync {
    /// Something became ready.
    fn ready(&self);
}

/// What a transport needs to know about a message type.
#[derive(Clone, Copy)]
pub struct TypeSupport {
    /// The type's ROS 2 and DDS names, REP-2016 hash (which peers compare before matching)
    /// and description.
    pub info: crate::msg::TypeInfo,
    /// Rust type, to refuse a mismatched in-process endpoint.
    pub type_id: TypeId,
    /// CDR serializer for wire transports.
    pub serialize: fn(&(dyn Any + Send + Sync)) -> Result<Vec<u8>>,
    /// CDR deserializer for wire transports.
    pub deserialize: fn(&[u8]) -> Result<Payload>,
}

impl std::fmt::Debug for TypeSupport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.info.type_name)
    }
}

impl TypeSupport {
    /// The type support of message type `T`.
    pub fn of<T: Message>() -> Self {
        fn ser<T: Message>(v: &(dyn Any + Send + Sync)) -> Result<Vec<u8>> {
            match v.downcast_ref::<T>() {
                Some(m) => crate::msg::to_cdr(m),
                None => Err(Error::TopicTypeMismatch {
                    topic: "(payload to serialize)".into(),
                    existing: "another Rust type".into(),
                    requested: T::TYPE_NAME.into(),
                }),
            }
        }
        fn de<T: Message>(b: &[u8]) -> Result<Payload> {
            Ok(Arc::new(crate::msg::from_cdr::<T>(b)?))
        }
        Self {
            info: crate::msg::TypeInfo::of::<T>(),
            type_id: TypeId::of::<T>(),
            serialize: ser::<T>,
            deserialize: de::<T>,
        }
    }
}

/// A topic or service endpoint to create.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// Fully qualified name.
    pub name: String,
    /// The message type (for services, the request type).
    pub type_support: TypeSupport,
    /// For services and clients, the response type.
    pub response_type: Option<TypeSupport>,
    /// QoS.
    pub qos: QoSProfile,
}

/// Metadata of a received message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageInfo {
    /// Identifies the publisher within the transport.
    pub publisher_gid: u64,
    /// 1-based sequence number of the message at its publisher.
    pub publication_sequence_number: u64,
}

/// Identifies a request so its response finds the client that sent it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RequestId {
    /// The client.
    pub client_gid: u64,
    /// The client's sequence number for the request.
    pub sequence_number: i64,
}

/// The publishing side of a topic.
pub trait PublisherPort: Send + Sync {
    /// Publishes one message.
    fn publish(&self, msg: Payload) -> Result<()>;
    /// Number of subscriptions currently matched.
    fn subscription_count(&self) -> usize;
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
    /// Messages dropped so far because the history was full (KeepLast).
    fn lost_count(&self) -> u64;
    /// Unsubscribes now, even while the port itself is still referenced (by a callback in
    /// flight): publishers stop counting it and queue nothing more for it. Idempotent;
    /// dropping the port closes it too.
    fn close(&self);
}

/// A service server's side.
pub trait ServicePort: Send + Sync {
    /// Takes the oldest request, if any.
    fn take_request(&self) -> Option<(RequestId, Payload)>;
    /// Sends the response to a request.
    fn send_response(&self, id: RequestId, response: Payload) -> Result<()>;
    /// Gives up on a request (its handler failed): the client gets an error instead of waiting.
    fn abandon_request(&self, id: RequestId);
    /// Withdraws the service now, even while the port itself is still referenced (by a callback
    /// in flight): clients stop seeing it, requests not answered yet fail with
    /// [`Error::ServiceUnavailable`], and new ones are
    /// refused. Idempotent; dropping the port closes it too.
    fn close(&self);
}

/// A service client's side.
pub trait ClientPort: Send + Sync {
    /// Sends a request and returns its sequence number.
    fn send_request(&self, request: Payload) -> Result<i64>;
    /// Takes the oldest response, if any; `Err` when the server went away without answering.
    fn take_response(&self) -> Option<(i64, Result<Payload>)>;
    /// Whether a server exists.
    fn service_is_ready(&self) -> bool;
}

/// A transport: creates endpoints. Implemented by [`IntraProcess`]; a DDS transport implements
/// the same trait.
pub trait Transport: Send + Sync + 'static {
    /// Creates a publisher.
    fn create_publisher(&self, endpoint: &Endpoint) -> Result<Arc<dyn PublisherPort>>;
    /// Creates a subscription that calls `hook` whenever a message can be taken.
    fn create_subscription(
        &self,
        endpoint: &Endpoint,
        hook: Arc<dyn ReadyHook>,
    ) -> Result<Arc<dyn SubscriptionPort>>;
    /// Creates a service server that calls `hook` whenever a request can be taken.
    fn create_service(
        &self,
        endpoint: &Endpoint,
        hook: Arc<dyn ReadyHook>,
    ) -> Result<Arc<dyn ServicePort>>;
    /// Creates a client that calls `hook` whenever a response can be taken.
    fn create_client(
        &self,
        endpoint: &Endpoint,
        hook: Arc<dyn ReadyHook>,
    ) -> Result<Arc<dyn ClientPort>>;
}
