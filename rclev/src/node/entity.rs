//! What every entity of the node layer shares: the one path by which an entity is created
//! and bound to its worker, the endpoints handed to the transport, and decoding a received
//! payload into the entity's message type.

use std::sync::Arc;

use super::worker_core::WorkerCore;
use crate::base::error::{Error, Result};
use crate::endpoint::IntoPrimitiveOptions;
use crate::msg::Message;
use crate::runtime::core::WorkerHost;
use crate::runtime::dispatch::EntityDispatch;
use crate::runtime::executable::Executable;
use crate::transport::{Payload, ServiceEndpoint, ServiceTypes, TopicEndpoint, TypeSupport};

/// Creates an entity on `core`'s worker: `make` gets the entity's dispatch (its transport
/// ready hook) and builds the entity, which is then bound so readiness reaches it.
/// `deliver_now`: whether readiness that arrived before the binding (a transient-local
/// replay) runs the entity at once.
pub(crate) fn bind_entity<E: Executable>(
    core: &WorkerCore,
    deliver_now: bool,
    make: impl FnOnce(Arc<EntityDispatch>) -> Result<Arc<E>>,
) -> Result<Arc<E>> {
    core.exec.check_running()?;
    let dispatch = EntityDispatch::unbound(core.mailbox.clone());
    let entity = make(dispatch.clone())?;
    let executable: Arc<dyn Executable> = entity.clone();
    dispatch.bind(Arc::downgrade(&executable), deliver_now);
    Ok(entity)
}

/// A topic endpoint of message type `T`, its name expanded as the node would. The options'
/// event handler is the caller's to take out first (it goes to the entity's event sink).
pub(crate) fn topic_endpoint<T: Message>(
    core: &WorkerCore,
    options: impl IntoPrimitiveOptions,
) -> Result<TopicEndpoint> {
    core.exec.check_running()?;
    let options = options.into_primitive_options();
    core.node
        .types
        .register(T::TYPE_HASH, T::TYPE_DESCRIPTION, T::TYPE_SOURCES);
    Ok(TopicEndpoint {
        name: core.node.expand(&options.name)?,
        type_support: TypeSupport::of::<T>(),
        qos: options.qos,
        reads_message_info: false,
        max_queue_bytes: options.max_queue_bytes,
    })
}

/// A service endpoint of service type `S`. Services and clients raise no QoS events (the seam
/// gives them no event hook, as rmw has none for them), so a handler given for one is refused
/// rather than never called.
pub(crate) fn service_endpoint<S: crate::msg::ServiceType>(
    core: &WorkerCore,
    options: impl IntoPrimitiveOptions,
) -> Result<ServiceEndpoint> {
    core.exec.check_running()?;
    let options = options.into_primitive_options();
    if options.event_handler.is_some() {
        return Err(Error::InvalidQos(
            "services and clients have no QoS events to give an event handler",
        ));
    }
    core.node
        .types
        .register(S::TYPE_HASH, S::TYPE_DESCRIPTION, S::TYPE_SOURCES);
    Ok(ServiceEndpoint {
        name: core.node.expand_service(&options.name)?,
        types: ServiceTypes::of::<S>(),
        qos: options.qos,
    })
}

/// The message in a payload: the shared value itself in process, decoded once from CDR
/// otherwise. `Err` says why it is malformed.
pub(crate) fn decode<T: Message>(payload: Payload) -> std::result::Result<Arc<T>, String> {
    match payload {
        Payload::Shared(value) => value.downcast::<T>().map_err(|_| {
            format!(
                "the transport delivered another Rust type than {}",
                T::TYPE_NAME
            )
        }),
        Payload::Serialized(bytes) => crate::msg::from_cdr::<T>(&bytes)
            .map(Arc::new)
            .map_err(|e| e.to_string()),
        #[allow(unreachable_patterns)] // `Payload` is non-exhaustive: loans will come.
        _ => Err("a payload kind this version cannot read".into()),
    }
}

/// [`decode`], then out of the `Arc` without copying when this is the only reference (always,
/// for in-process requests and responses).
pub(crate) fn decode_owned<T: Message>(payload: Payload) -> std::result::Result<T, String> {
    decode::<T>(payload).map(|arc| Arc::try_unwrap(arc).unwrap_or_else(|shared| (*shared).clone()))
}

/// Reports a message on `name` that could not be decoded to the executor's error handler, and
/// returns the error for whoever waited for the message.
pub(crate) fn report_malformed(host: &WorkerHost, name: &str, reason: String) -> Error {
    let error = Error::MalformedMessage {
        topic: name.to_string(),
        reason,
    };
    host.report(error.clone());
    error
}
