//! Services and clients.

use std::any::Any;
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::FutureExt;
use tokio::sync::oneshot;

use super::entity::{bind_entity, decode_owned, report_malformed, service_endpoint};
use super::graph::wait_on_graph;
use super::worker_core::WorkerCore;
use crate::base::error::{panic_message, Error, Result};
use crate::base::sync::lock;
use crate::endpoint::IntoPrimitiveOptions;
use crate::msg::ServiceType;
use crate::qos::History;
use crate::runtime::adaptive::note_receive_thread_hazard;
use crate::runtime::callback::payload_of;
use crate::runtime::dispatch::EntityDispatch;
use crate::runtime::executable::{ExecContext, Executable, MAX_BATCH};
use crate::transport::{ClientPort, Payload, ServicePort};

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
    /// A handler that ignores the worker's payload.
    pub(crate) fn plain(mut f: impl FnMut(S::Request) -> S::Response + Send + 'static) -> Self {
        Self::Sync(Box::new(move |_, req| f(req)))
    }

    /// A handler that gets the worker's payload.
    pub(crate) fn with_payload<P: 'static>(
        mut f: impl FnMut(&mut P, S::Request) -> S::Response + Send + 'static,
    ) -> Self {
        Self::Sync(Box::new(move |p, req| f(payload_of::<P>(p), req)))
    }

    pub(crate) fn asynchronous<F, Fut>(mut f: F) -> Self
    where
        F: FnMut(S::Request) -> Fut + Send + 'static,
        Fut: Future<Output = S::Response> + Send + 'static,
    {
        Self::Async(Box::new(move |req| f(req).boxed()))
    }
}

/// A service server. Dropping it (the last [`Service`] handle) withdraws the service at once,
/// even while one of its callbacks is still running: clients stop seeing it and requests not
/// answered yet fail with [`Error::ServiceUnavailable`].
///
/// ```
/// use rclev::interfaces::std_srvs::srv::{Trigger, Trigger_Response};
///
/// let executor = rclev::Context::default().create_basic_executor();
/// let node = executor.create_node("driver")?;
/// let service = node.create_service::<Trigger, _>("~/reset", |_request| Trigger_Response {
///     success: true,
///     message: "reset".into(),
/// })?;
/// assert_eq!(service.service_name(), "/driver/reset");
/// let client = node.create_client::<Trigger>("/driver/reset")?;
/// assert!(client.service_is_ready());
/// drop(service); // the last handle: the service is withdrawn
/// assert!(!client.service_is_ready());
/// # Ok::<(), rclev::Error>(())
/// ```
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
    /// Async requests running now; at most `max_in_flight`. Past that, requests are left in
    /// the transport's queue, which keeps the service's QoS depth: a flood of calls to an
    /// async service holds `2 × depth` requests, not a task per call.
    in_flight: Arc<AtomicUsize>,
    max_in_flight: usize,
}

/// Async requests a KeepAll service runs at once (its transport's queue is bounded by the
/// wire's own limits instead of a depth).
const KEEP_ALL_IN_FLIGHT: usize = 1000;

/// A shared handle to a service; dropping the last one removes the service.
pub type Service<S> = crate::EntityHandle<ServiceState<S>>;

pub(crate) fn create_service<S: ServiceType>(
    core: &Arc<WorkerCore>,
    options: impl IntoPrimitiveOptions,
    callback: ServiceCallback<S>,
) -> Result<Service<S>> {
    let endpoint = service_endpoint::<S>(core, options)?;
    let max_in_flight = match endpoint.qos.history {
        History::KeepLast(depth) => depth.max(1),
        History::KeepAll => KEEP_ALL_IN_FLIGHT,
        History::SystemDefault => 1,
    };
    let service = bind_entity(core, true, |dispatch| {
        let port = core.node.port.create_service(&endpoint, dispatch.clone())?;
        Ok(Arc::new(ServiceEntity {
            port,
            dispatch,
            callback: Mutex::new(callback),
            label: format!("service {}", endpoint.name),
            name: endpoint.name.clone(),
            worker: core.clone(),
            in_flight: Arc::new(AtomicUsize::new(0)),
            max_in_flight,
        }))
    })?;
    Ok(crate::EntityHandle::new(ServiceState { entity: service }))
}

impl<S: ServiceType> ServiceState<S> {
    /// The fully qualified service name.
    pub fn service_name(&self) -> &str {
        &self.entity.name
    }

    /// Requests dropped unanswered because more arrived than the service's QoS depth holds
    /// before its callback took them (KeepLast: the oldest go, as with rmw's request
    /// history). Their clients get no response.
    pub fn lost_count(&self) -> u64 {
        self.entity.port.lost_count()
    }

    /// Requests a wire transport refused before decoding them: longer than any encoding of the
    /// request type can be. Their clients get no response.
    pub fn refused_count(&self) -> u64 {
        self.entity.port.refused_count()
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
            if matches!(&*callback, ServiceCallback::Async(_))
                && self.in_flight.load(Ordering::Acquire) >= self.max_in_flight
            {
                // Taken up again when one of them finishes (below).
                return;
            }
            let Some((id, payload)) = self.port.take_request() else {
                return;
            };
            let request = match decode_owned::<S::Request>(payload) {
                Ok(request) => request,
                Err(reason) => {
                    self.port.abandon_request(id);
                    report_malformed(self.worker.exec.host(), &self.name, reason);
                    continue;
                }
            };
            match &mut *callback {
                ServiceCallback::Sync(f) => match cx.guarded(&self.label, |p| f(p, request)) {
                    Some(response) => {
                        let _ = self
                            .port
                            .send_response(id, Payload::Shared(Arc::new(response)));
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
                    let (in_flight, max, dispatch) = (
                        self.in_flight.clone(),
                        self.max_in_flight,
                        self.dispatch.clone(),
                    );
                    in_flight.fetch_add(1, Ordering::AcqRel);
                    cx.spawn(Box::pin(async move {
                        match std::panic::AssertUnwindSafe(fut).catch_unwind().await {
                            Ok(response) => {
                                let _ = port.send_response(id, Payload::Shared(Arc::new(response)));
                            }
                            Err(p) => {
                                port.abandon_request(id);
                                exec.report(Error::CallbackPanicked {
                                    entity: label,
                                    message: panic_message(&*p),
                                });
                            }
                        }
                        // The service stopped taking requests at the limit: take them again.
                        if in_flight.fetch_sub(1, Ordering::AcqRel) == max {
                            dispatch.notify();
                        }
                    }));
                }
            }
        }
        self.dispatch.notify();
    }

    fn dispatch(&self) -> &dyn crate::runtime::executable::Coalescing {
        &*self.dispatch
    }
}

type Pending<S> = Arc<Mutex<HashMap<i64, oneshot::Sender<Result<<S as ServiceType>::Response>>>>>;

/// A service client: [`call`](Self::call) sends a request and resolves when the response
/// has been taken by the client's worker (so the executor must be spinning).
///
/// Across processes a server can vanish without a word: give calls a timeout
/// ([`call_with_timeout`](Self::call_with_timeout)), and wait for a server before the first
/// call ([`wait_for_service`](Self::wait_for_service)).
///
/// ```
/// use rclev::interfaces::example_interfaces::srv::AddTwoInts;
/// use rclev::SpinOptions;
/// use std::time::Duration;
///
/// let executor = rclev::Context::default().create_basic_executor();
/// let node = executor.create_node("caller")?;
/// let client = node.create_client::<AddTwoInts>("add_two_ints")?;
/// assert_eq!(client.service_name(), "/add_two_ints");
/// let (tx, rx) = std::sync::mpsc::channel();
/// let errors = executor.spin(
///     SpinOptions::default()
///         .until_promise_resolved(async move {
///             // No server: `Some(limit)` gives up with `Error::Timeout` (`None` waits on).
///             tx.send(client.wait_for_service(Some(Duration::from_millis(10))).await).unwrap();
///         })
///         .timeout(Duration::from_secs(5)),
/// );
/// assert!(errors.is_empty());
/// assert!(matches!(rx.try_recv().unwrap(), Err(rclev::Error::Timeout { .. })));
/// # Ok::<(), rclev::Error>(())
/// ```
pub struct ClientState<S: ServiceType> {
    port: Arc<dyn ClientPort>,
    dispatch: Arc<EntityDispatch>,
    /// Calls waiting for their response, by sequence number.
    pending: Pending<S>,
    name: String,
    /// Ends calls that the executor's shutdown leaves unanswered.
    life: Arc<crate::clock::Lifeline>,
    /// The node's steady clock, which call and wait timeouts run on.
    steady: crate::clock::Clock,
    /// Bumped by the transport on every graph change.
    graph: tokio::sync::watch::Receiver<u64>,
    /// Where malformed responses are reported.
    host: Arc<crate::runtime::core::WorkerHost>,
}

/// A shared handle to a client.
pub type Client<S> = crate::EntityHandle<ClientState<S>>;

pub(crate) fn create_client<S: ServiceType>(
    core: &Arc<WorkerCore>,
    options: impl IntoPrimitiveOptions,
) -> Result<Client<S>> {
    let endpoint = service_endpoint::<S>(core, options)?;
    let client = bind_entity(core, false, |dispatch| {
        let port = core.node.port.create_client(&endpoint, dispatch.clone())?;
        Ok(Arc::new(ClientState {
            port,
            dispatch,
            pending: Arc::default(),
            name: endpoint.name.clone(),
            life: core.exec.life().clone(),
            steady: core.node.clock_of(crate::clock::ClockType::SteadyTime),
            graph: core.exec.context().transport().graph_changes(),
            host: core.exec.host().clone(),
        }))
    })?;
    Ok(crate::EntityHandle::from_arc(client))
}

impl<S: ServiceType> ClientState<S> {
    /// Sends `request`; the future resolves to the response, to
    /// [`Error::ServiceUnavailable`] if the transport knows there is no server or that it
    /// went away without answering, or to [`Error::Shutdown`] once the executor has shut
    /// down (nothing would take the response then). Over a wire a lost server may go
    /// unnoticed: prefer [`call_with_timeout`](Self::call_with_timeout) there.
    pub fn call(
        &self,
        request: S::Request,
    ) -> impl Future<Output = Result<S::Response>> + Send + 'static {
        self.call_inner(request, None)
    }

    /// [`call`](Self::call) that gives up after `timeout` with [`Error::Timeout`]; a response
    /// that arrives later is dropped. Needs a Tokio runtime for the timer.
    pub fn call_with_timeout(
        &self,
        request: S::Request,
        timeout: Duration,
    ) -> impl Future<Output = Result<S::Response>> + Send + 'static {
        self.call_inner(request, Some(timeout))
    }

    fn call_inner(
        &self,
        request: S::Request,
        timeout: Option<Duration>,
    ) -> impl Future<Output = Result<S::Response>> + Send + 'static {
        let (tx, rx) = oneshot::channel();
        let life = self.life.clone();
        let sent = if life.is_ended() {
            Err(Error::Shutdown)
        } else {
            // Registered before sending, under the lock the response path takes, so even an
            // instant response finds its waiter.
            let mut pending = lock(&self.pending);
            // A callback that sends a request may wait for its reply: never on a receive thread.
            note_receive_thread_hazard();
            self.port
                .send_request(Payload::Shared(Arc::new(request)))
                .inspect(|&seq| {
                    pending.insert(seq, tx);
                })
        };
        let name = self.name.clone();
        let pending = Arc::downgrade(&self.pending);
        let steady = self.steady.clone();
        async move {
            let seq = sent?;
            let response = async {
                rx.await
                    .map_err(|_| Error::ServiceUnavailable(name.clone()))?
            };
            let Some(after) = timeout else {
                return life.unless_ended(response).await;
            };
            let timed = async {
                match steady.timeout(after, response).await {
                    Some(r) => r,
                    None => {
                        // Nobody waits any more: a late response is dropped, not kept.
                        if let Some(pending) = pending.upgrade() {
                            lock(&pending).remove(&seq);
                        }
                        Err(Error::Timeout {
                            what: format!("call to service {name:?}"),
                            after,
                        })
                    }
                }
            };
            life.unless_ended(timed).await
        }
    }

    /// Whether a server for this service is matched and can answer.
    pub fn service_is_ready(&self) -> bool {
        self.port.service_is_ready()
    }

    /// Waits until a server is matched, at most `timeout` ([`Error::Timeout`] then; `None`
    /// waits without limit). Woken by graph changes, not polling. [`Error::Shutdown`] if the
    /// executor shuts down first. Needs a Tokio runtime when a timeout is given.
    pub async fn wait_for_service(&self, timeout: Option<Duration>) -> Result<()> {
        let what = || format!("waiting for service {:?}", self.name);
        let ready = || self.port.service_is_ready();
        wait_on_graph(
            self.graph.clone(),
            &self.life,
            &self.steady,
            what,
            timeout,
            ready,
        )
        .await
    }

    /// The fully qualified service name.
    pub fn service_name(&self) -> &str {
        &self.name
    }

    /// The client's GID (the `writer_guid` of its requests' ids).
    pub fn gid(&self) -> crate::transport::Gid {
        self.port.gid()
    }
}

impl<S: ServiceType> Executable for ClientState<S> {
    fn execute(&self, _cx: &mut ExecContext<'_>) {
        for _ in 0..MAX_BATCH {
            let Some((seq, response)) = self.port.take_response() else {
                return;
            };
            let response = response.and_then(|payload| {
                decode_owned::<S::Response>(payload)
                    .map_err(|reason| report_malformed(&self.host, &self.name, reason))
            });
            if let Some(tx) = lock(&self.pending).remove(&seq) {
                let _ = tx.send(response);
            }
        }
        self.dispatch.notify();
    }

    fn dispatch(&self) -> &dyn crate::runtime::executable::Coalescing {
        &*self.dispatch
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
