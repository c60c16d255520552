//! Services and clients.

use std::any::Any;
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use futures::FutureExt;
use tokio::sync::oneshot;

use super::worker::WorkerCore;
use crate::error::{panic_message, Error, Result};
use crate::executor::dispatch::{EntityDispatch, ExecContext, Executable, MAX_BATCH};
use crate::msg::{Message, ServiceType};
use crate::qos::IntoPrimitiveOptions;
use crate::sync::lock;
use crate::transport::{ClientPort, Payload, ServicePort, TypeSupport};

type SyncHandler<S> = Box<
    dyn FnMut(&mut (dyn Any + Send), <S as ServiceType>::Request) -> <S as ServiceType>::Response
        + Send,
>;
type AsyncHandler<S> = Box<
    dyn FnMut(<S as ServiceType>::Request) -> BoxFuture<'static, <S as ServiceType>::Response>
        + Send,
>;

pub(crate) enum ServiceCallback<S: ServiceType> {
    Sync(SyncHandler<S>),
    Async(AsyncHandler<S>),
}

impl<S: ServiceType> ServiceCallback<S> {
    pub(crate) fn asynchronous<F, Fut>(mut f: F) -> Self
    where
        F: FnMut(S::Request) -> Fut + Send + 'static,
        Fut: Future<Output = S::Response> + Send + 'static,
    {
        Self::Async(Box::new(move |req| f(req).boxed()))
    }
}

/// Takes a message out of its `Arc` without copying when this is the only reference (always, for
/// in-process requests and responses).
pub(crate) fn unwrap_payload<T: Message>(payload: Payload) -> T {
    let arc = payload
        .downcast::<T>()
        .unwrap_or_else(|_| unreachable!("the transport refuses endpoints of another type"));
    Arc::try_unwrap(arc).unwrap_or_else(|shared| (*shared).clone())
}

/// A service server. Dropping it (the last [`Service`] handle) withdraws the service at once,
/// even while one of its callbacks is still running: clients stop seeing it and requests not
/// answered yet fail with [`Error::ServiceUnavailable`].
pub struct ServiceState<S: ServiceType> {
    entity: Arc<ServiceEntity<S>>,
}

/// What the worker runs; referenced by the worker only while it executes.
struct ServiceEntity<S: ServiceType> {
    port: Arc<dyn ServicePort>,
    dispatch: Arc<EntityDispatch>,
    callback: Mutex<ServiceCallback<S>>,
    label: String,
    name: String,
    worker: Arc<WorkerCore>,
}

/// A shared handle to a service; dropping the last one removes the service.
pub type Service<S> = crate::Handle<ServiceState<S>>;

pub(crate) fn create_service<S: ServiceType>(
    core: &Arc<WorkerCore>,
    options: impl IntoPrimitiveOptions,
    callback: ServiceCallback<S>,
) -> Result<Service<S>> {
    let endpoint = core.endpoint(
        options,
        TypeSupport::of::<S::Request>(),
        Some(TypeSupport::of::<S::Response>()),
    )?;
    let dispatch = EntityDispatch::unbound(core.mailbox.clone());
    let port = core
        .exec
        .context
        .transport()
        .create_service(&endpoint, dispatch.clone())?;
    let service = Arc::new(ServiceEntity {
        port,
        dispatch: dispatch.clone(),
        callback: Mutex::new(callback),
        label: format!("service {}", endpoint.name),
        name: endpoint.name,
        worker: core.clone(),
    });
    let entity: Arc<dyn Executable> = service.clone();
    dispatch.bind(Arc::downgrade(&entity), true);
    Ok(crate::Handle::new(ServiceState { entity: service }))
}

impl<S: ServiceType> ServiceState<S> {
    /// The fully qualified service name.
    pub fn service_name(&self) -> &str {
        &self.entity.name
    }
}

impl<S: ServiceType> Drop for ServiceState<S> {
    fn drop(&mut self) {
        self.entity.port.close();
    }
}

impl<S: ServiceType> Executable for ServiceEntity<S> {
    fn execute(&self, cx: &mut ExecContext<'_>) {
        let mut callback = lock(&self.callback);
        for _ in 0..MAX_BATCH {
            let Some((id, payload)) = self.port.take_request() else {
                return;
            };
            let request = unwrap_payload::<S::Request>(payload);
            match &mut *callback {
                ServiceCallback::Sync(f) => match cx.guarded(&self.label, |p| f(p, request)) {
                    Some(response) => {
                        let _ = self.port.send_response(id, Arc::new(response));
                    }
                    None => self.port.abandon_request(id),
                },
                ServiceCallback::Async(f) => {
                    let Some(fut) = cx.guarded(&self.label, |_| f(request)) else {
                        self.port.abandon_request(id);
                        continue;
                    };
                    let port = self.port.clone();
                    let exec = self.worker.exec.clone();
                    let label = self.label.clone();
                    cx.spawn(Box::pin(async move {
                        match std::panic::AssertUnwindSafe(fut).catch_unwind().await {
                            Ok(response) => {
                                let _ = port.send_response(id, Arc::new(response));
                            }
                            Err(p) => {
                                port.abandon_request(id);
                                exec.report(Error::CallbackPanicked {
                                    entity: label,
                                    message: panic_message(&*p),
                                });
                            }
                        }
                    }));
                }
            }
        }
        self.dispatch.notify();
    }

    fn dispatch(&self) -> &EntityDispatch {
        &self.dispatch
    }
}

type Pending<S> = HashMap<i64, oneshot::Sender<Result<<S as ServiceType>::Response>>>;

/// A service client: [`call`](Self::call) sends a request and resolves when the response
/// has been taken by the client's worker (so the executor must be spinning).
pub struct ClientState<S: ServiceType> {
    port: Arc<dyn ClientPort>,
    dispatch: Arc<EntityDispatch>,
    pending: Mutex<Pending<S>>,
    name: String,
    /// Ends calls that the executor's shutdown leaves unanswered.
    life: Arc<crate::clock::Lifeline>,
}

/// A shared handle to a client.
pub type Client<S> = crate::Handle<ClientState<S>>;

pub(crate) fn create_client<S: ServiceType>(
    core: &Arc<WorkerCore>,
    options: impl IntoPrimitiveOptions,
) -> Result<Client<S>> {
    let endpoint = core.endpoint(
        options,
        TypeSupport::of::<S::Request>(),
        Some(TypeSupport::of::<S::Response>()),
    )?;
    let dispatch = EntityDispatch::unbound(core.mailbox.clone());
    let port = core
        .exec
        .context
        .transport()
        .create_client(&endpoint, dispatch.clone())?;
    let client = Arc::new(ClientState {
        port,
        dispatch: dispatch.clone(),
        pending: Mutex::new(HashMap::new()),
        name: endpoint.name,
        life: core.exec.life.clone(),
    });
    let entity: Arc<dyn Executable> = client.clone();
    dispatch.bind(Arc::downgrade(&entity), false);
    Ok(crate::Handle::from_arc(client))
}

impl<S: ServiceType> ClientState<S> {
    /// Sends `request`; the future resolves to the response, to
    /// [`Error::ServiceUnavailable`] if there is no server or it went away without answering,
    /// or to [`Error::Shutdown`] once the executor has shut down (nothing would take the
    /// response then).
    pub fn call(
        &self,
        request: S::Request,
    ) -> impl Future<Output = Result<S::Response>> + Send + 'static {
        let (tx, rx) = oneshot::channel();
        let life = self.life.clone();
        let sent = if life.is_ended() {
            Err(Error::Shutdown)
        } else {
            // Registered before sending, under the lock the response path takes, so even an
            // instant response finds its waiter.
            let mut pending = lock(&self.pending);
            self.port.send_request(Arc::new(request)).map(|seq| {
                pending.insert(seq, tx);
            })
        };
        let name = self.name.clone();
        async move {
            sent?;
            life.unless_ended(async { rx.await.map_err(|_| Error::ServiceUnavailable(name))? })
                .await
        }
    }

    /// Whether a server for this service exists.
    pub fn service_is_ready(&self) -> bool {
        self.port.service_is_ready()
    }

    /// The fully qualified service name.
    pub fn service_name(&self) -> &str {
        &self.name
    }
}

impl<S: ServiceType> Executable for ClientState<S> {
    fn execute(&self, _cx: &mut ExecContext<'_>) {
        for _ in 0..MAX_BATCH {
            let Some((seq, response)) = self.port.take_response() else {
                return;
            };
            if let Some(tx) = lock(&self.pending).remove(&seq) {
                let _ = tx.send(response.map(unwrap_payload::<S::Response>));
            }
        }
        self.dispatch.notify();
    }

    fn dispatch(&self) -> &EntityDispatch {
        &self.dispatch
    }
}

impl<S: ServiceType> std::fmt::Debug for ServiceState<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service")
            .field("name", &self.entity.name)
            .field("type", &S::TYPE_NAME)
            .finish()
    }
}

impl<S: ServiceType> std::fmt::Debug for ClientState<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("name", &self.name)
            .field("type", &S::TYPE_NAME)
            .finish()
    }
}
