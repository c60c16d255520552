//! The action client.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use futures::{Stream, StreamExt};
use tokio::sync::{mpsc, oneshot, watch};

use super::wire::{action_service, action_topic, client_feedback_qos, status_qos};
use super::GoalState;
use super::GoalUuid;
use crate::base::error::{Error, Result};
use crate::base::sync::lock;
use crate::clock::Lifeline;
use crate::interfaces::action_msgs::msg::{GoalInfo, GoalStatusArray};
use crate::interfaces::action_msgs::srv::{CancelGoal, CancelGoal_Request, CancelGoal_Response};
use crate::msg::{ActionType, GetResultResponse, Message, SendGoalResponse};
use crate::node::entity::{bind_entity, decode, decode_owned, report_malformed};
use crate::node::events::WarningHook;
use crate::node::graph::wait_on_graph;
use crate::node::WorkerCore;
use crate::runtime::adaptive::note_receive_thread_hazard;
use crate::runtime::dispatch::EntityDispatch;
use crate::runtime::executable::{ExecContext, Executable, MAX_BATCH};
use crate::transport::{ClientPort, Payload, ReadyHook, SubscriptionPort};

type Waiters<T> = Mutex<HashMap<i64, oneshot::Sender<Result<T>>>>;

struct ClientGoal<A: ActionType> {
    feedback: mpsc::UnboundedSender<A::Feedback>,
    status: watch::Sender<GoalState>,
}

struct ClientInner<A: ActionType> {
    name: String,
    send_goal: Arc<dyn ClientPort>,
    cancel_goal: Arc<dyn ClientPort>,
    get_result: Arc<dyn ClientPort>,
    feedback: Arc<dyn SubscriptionPort>,
    status: Arc<dyn SubscriptionPort>,
    dispatch: Arc<EntityDispatch>,
    goal_responses: Waiters<SendGoalResponse<A>>,
    cancel_responses: Waiters<CancelGoal_Response>,
    result_responses: Waiters<GetResultResponse<A>>,
    goals: Mutex<HashMap<GoalUuid, ClientGoal<A>>>,
    /// Ends the client's futures and feedback streams when the executor shuts down.
    life: Arc<Lifeline>,
    /// The node's steady clock, which `wait_for_server`'s timeout runs on.
    steady: crate::clock::Clock,
    /// Bumped by the transport on every graph change.
    graph: watch::Receiver<u64>,
    /// Where malformed messages are reported.
    host: Arc<crate::runtime::core::WorkerHost>,
}

/// An action client. Responses, feedback and status are taken by its worker, so the executor
/// must be spinning for its futures to resolve.
///
/// ```
/// use rclev::interfaces::example_interfaces::action::Fibonacci;
/// use rclev::SpinOptions;
/// use std::time::Duration;
///
/// let executor = rclev::Context::default().create_basic_executor();
/// let node = executor.create_node("navigator")?;
/// let client = node.create_action_client::<Fibonacci>("fibonacci")?;
/// assert_eq!(client.action_name(), "/fibonacci");
/// let (tx, rx) = std::sync::mpsc::channel();
/// let errors = executor.spin(
///     SpinOptions::default()
///         .until_promise_resolved(async move {
///             // No server: `Some(limit)` gives up with `Error::Timeout` (`None` waits on).
///             tx.send(client.wait_for_server(Some(Duration::from_millis(10))).await).unwrap();
///         })
///         .timeout(Duration::from_secs(5)),
/// );
/// assert!(errors.is_empty());
/// assert!(matches!(rx.try_recv().unwrap(), Err(rclev::Error::Timeout { .. })));
/// # Ok::<(), rclev::Error>(())
/// ```
pub struct ActionClientState<A: ActionType> {
    inner: Arc<ClientInner<A>>,
}

/// A shared handle to an action client.
pub type ActionClient<A> = crate::EntityHandle<ActionClientState<A>>;

pub(crate) fn create_action_client<A: ActionType>(
    core: &Arc<WorkerCore>,
    name: &str,
) -> Result<ActionClient<A>> {
    let full = core.node.expand(name)?;
    let port = &core.node.port;
    let inner = bind_entity(core, true, |dispatch| {
        let hook = || dispatch.clone() as Arc<dyn ReadyHook>;
        let send_goal = port.create_client(
            &action_service::<A::SendGoal>(core, &full, "send_goal")?,
            hook(),
        )?;
        let cancel_goal = port.create_client(
            &action_service::<CancelGoal>(core, &full, "cancel_goal")?,
            hook(),
        )?;
        let get_result = port.create_client(
            &action_service::<A::GetResult>(core, &full, "get_result")?,
            hook(),
        )?;
        let feedback = port.create_subscription(
            &action_topic::<A::FeedbackMessage>(core, &full, "feedback", client_feedback_qos())?,
            hook(),
            Arc::new(WarningHook(format!("action client {full}"))),
        )?;
        let status = port.create_subscription(
            &action_topic::<GoalStatusArray>(core, &full, "status", status_qos())?,
            hook(),
            Arc::new(WarningHook(format!("action client {full}"))),
        )?;
        Ok(Arc::new(ClientInner {
            name: full.clone(),
            send_goal,
            cancel_goal,
            get_result,
            feedback,
            status,
            dispatch,
            goal_responses: Mutex::default(),
            cancel_responses: Mutex::default(),
            result_responses: Mutex::default(),
            goals: Mutex::default(),
            life: core.exec.life().clone(),
            steady: core.node.clock_of(crate::clock::ClockType::SteadyTime),
            graph: core.exec.context().transport().graph_changes(),
            host: core.exec.host().clone(),
        }))
    })?;
    Ok(crate::EntityHandle::new(ActionClientState { inner }))
}

/// Sends a request and registers its waiter under the waiters' lock, which the response path
/// also takes, so even an instant response finds it.
fn call<Req: Message, Resp>(
    life: &Lifeline,
    port: &dyn ClientPort,
    waiters: &Waiters<Resp>,
    request: Req,
) -> Result<oneshot::Receiver<Result<Resp>>> {
    if life.is_ended() {
        return Err(Error::Shutdown);
    }
    let (tx, rx) = oneshot::channel();
    let mut w = lock(waiters);
    // A callback that sends a request may wait for its reply: never on a receive thread.
    note_receive_thread_hazard();
    let seq = port.send_request(Payload::Shared(Arc::new(request)))?;
    w.insert(seq, tx);
    Ok(rx)
}

/// The response, [`Error::ServiceUnavailable`] if the server dropped the request, or
/// [`Error::Shutdown`] once the executor has shut down.
async fn answered<T>(life: &Lifeline, rx: oneshot::Receiver<Result<T>>, name: String) -> Result<T> {
    life.unless_ended(async { rx.await.map_err(|_| Error::ServiceUnavailable(name))? })
        .await
}

impl<A: ActionType> ActionClientState<A> {
    /// The fully qualified action name.
    pub fn action_name(&self) -> &str {
        &self.inner.name
    }

    /// Whether an action server for this name is matched, by rcl_action's rule: all three of
    /// its services, and a publisher on each of the feedback and status topics (else the
    /// first feedback or status of a goal sent now could miss the client).
    pub fn server_is_available(&self) -> bool {
        let i = &self.inner;
        i.send_goal.service_is_ready()
            && i.cancel_goal.service_is_ready()
            && i.get_result.service_is_ready()
            && i.feedback.publisher_count() > 0
            && i.status.publisher_count() > 0
    }

    /// Waits until an action server is available, at most `timeout` ([`Error::Timeout`]
    /// then; `None` waits without limit). Woken by graph changes, not polling.
    /// [`Error::Shutdown`] if the executor shuts down first. Needs a Tokio runtime when a
    /// timeout is given.
    pub async fn wait_for_server(&self, timeout: Option<std::time::Duration>) -> Result<()> {
        let inner = &self.inner;
        let what = || format!("waiting for action server {:?}", inner.name);
        let ready = || self.server_is_available();
        wait_on_graph(
            inner.graph.clone(),
            &inner.life,
            &inner.steady,
            what,
            timeout,
            ready,
        )
        .await
    }

    /// Sends a goal. Resolves to a handle when the server accepts it, to
    /// [`Error::GoalRejected`] when it refuses, and to [`Error::ServiceUnavailable`] if there is
    /// no server or it goes away.
    pub fn send_goal(
        &self,
        goal: A::Goal,
    ) -> impl Future<Output = Result<ClientGoalHandle<A>>> + Send + 'static {
        let inner = self.inner.clone();
        let id = GoalUuid::random();
        let (feedback_tx, feedback_rx) = mpsc::unbounded_channel();
        let (status_tx, status_rx) = watch::channel(GoalState::Unknown);
        lock(&inner.goals).insert(
            id,
            ClientGoal {
                feedback: feedback_tx,
                status: status_tx,
            },
        );
        let sent = call(
            &inner.life,
            &*inner.send_goal,
            &inner.goal_responses,
            A::send_goal_request(id, goal),
        );
        async move {
            let forget = |inner: &ClientInner<A>| {
                lock(&inner.goals).remove(&id);
            };
            let response = match sent {
                Ok(rx) => answered(&inner.life, rx, inner.name.clone()).await,
                Err(e) => Err(e),
            };
            let response = match response {
                Ok(r) => r,
                Err(e) => {
                    forget(&inner);
                    return Err(e);
                }
            };
            if !A::split_send_goal_response(&response).0 {
                forget(&inner);
                return Err(Error::GoalRejected);
            }
            if let Some(g) = lock(&inner.goals).get(&id) {
                g.status.send_if_modified(|s| {
                    let changed = *s == GoalState::Unknown;
                    if changed {
                        *s = GoalState::Accepted;
                    }
                    changed
                });
            }
            // Ask for the result at once, so it cannot expire on the server unseen.
            let result = call(
                &inner.life,
                &*inner.get_result,
                &inner.result_responses,
                A::get_result_request(id),
            );
            Ok(ClientGoalHandle {
                id,
                inner,
                feedback: Mutex::new(Some(feedback_rx)),
                status: status_rx,
                result: Mutex::new(Some(result)),
            })
        }
    }
}

impl<A: ActionType> ClientInner<A> {
    fn finish_goal(&self, id: &GoalUuid, state: GoalState) {
        if let Some(g) = lock(&self.goals).remove(id) {
            let _ = g.status.send(state);
        }
    }

    /// Reports a message that could not be decoded; returns the error for its waiter.
    fn malformed(&self, reason: String) -> Error {
        report_malformed(&self.host, &self.name, reason)
    }

    fn take_responses<T: Message>(&self, port: &dyn ClientPort, waiters: &Waiters<T>) -> bool {
        for _ in 0..MAX_BATCH {
            let Some((seq, response)) = port.take_response() else {
                return false;
            };
            let response = response
                .and_then(|p| decode_owned::<T>(p).map_err(|reason| self.malformed(reason)));
            if let Some(tx) = lock(waiters).remove(&seq) {
                let _ = tx.send(response);
            }
        }
        true
    }
}

impl<A: ActionType> Executable for ClientInner<A> {
    fn execute(&self, _cx: &mut ExecContext<'_>) {
        let mut more = self.take_responses(&*self.send_goal, &self.goal_responses);
        more |= self.take_responses(&*self.cancel_goal, &self.cancel_responses);
        more |= self.take_responses(&*self.get_result, &self.result_responses);
        let mut feedback_left = false;
        for i in 0..MAX_BATCH {
            let Some((p, _)) = self.feedback.take() else {
                break;
            };
            feedback_left |= i + 1 == MAX_BATCH;
            let msg: Arc<A::FeedbackMessage> = match decode(p) {
                Ok(msg) => msg,
                Err(reason) => {
                    self.malformed(reason);
                    continue;
                }
            };
            let (goal_id, feedback) = A::feedback_message_parts(&msg);
            if let Some(g) = lock(&self.goals).get(goal_id) {
                let _ = g.feedback.send(feedback.clone());
            }
        }
        // Status is looked at only once the feedback queue is drained: the server publishes a
        // goal's feedback before its terminal status, and a terminal status ends the goal's
        // feedback stream.
        if !feedback_left {
            while let Some((p, _)) = self.status.take() {
                let array: Arc<GoalStatusArray> = match decode(p) {
                    Ok(array) => array,
                    Err(reason) => {
                        self.malformed(reason);
                        continue;
                    }
                };
                let mut goals = lock(&self.goals);
                for s in &array.status_list {
                    let state = GoalState::from_i8(s.status);
                    if let Some(g) = goals.get(&s.goal_info.goal_id) {
                        g.status.send_if_modified(|cur| {
                            let changed = *cur != state && !cur.is_terminal();
                            if changed {
                                *cur = state;
                            }
                            changed
                        });
                    }
                    if state.is_terminal() {
                        goals.remove(&s.goal_info.goal_id);
                    }
                }
            }
        }
        more |= feedback_left;
        if more {
            self.dispatch.notify();
        }
    }

    fn dispatch(&self) -> &dyn crate::runtime::executable::Coalescing {
        &*self.dispatch
    }
}

type ResultWaiter<A> = Result<oneshot::Receiver<Result<GetResultResponse<A>>>>;

/// The client's handle on an accepted goal.
pub struct ClientGoalHandle<A: ActionType> {
    id: GoalUuid,
    inner: Arc<ClientInner<A>>,
    feedback: Mutex<Option<mpsc::UnboundedReceiver<A::Feedback>>>,
    status: watch::Receiver<GoalState>,
    result: Mutex<Option<ResultWaiter<A>>>,
}

impl<A: ActionType> std::fmt::Debug for ClientGoalHandle<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientGoalHandle")
            .field("goal_id", &self.id.to_string())
            .field("status", &*self.status.borrow())
            .finish()
    }
}

impl<A: ActionType> ClientGoalHandle<A> {
    /// The goal's id.
    pub fn goal_id(&self) -> GoalUuid {
        self.id
    }

    /// The goal's latest known state (from the server's status topic and the result).
    pub fn status(&self) -> GoalState {
        *self.status.borrow()
    }

    /// The goal's feedback as a `Stream`; it ends when the goal finishes or the executor shuts
    /// down. Can be taken once.
    pub fn feedback(&self) -> Result<FeedbackStream<A::Feedback>> {
        let rx = lock(&self.feedback)
            .take()
            .ok_or(Error::AlreadyTaken("the feedback stream"))?;
        let life = self.inner.life.clone();
        let items =
            futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|f| (f, rx)) });
        Ok(FeedbackStream {
            items: items.take_until(async move { life.ended().await }).boxed(),
        })
    }

    /// The final state and result. Can be awaited once; fails with
    /// [`Error::ServiceUnavailable`] if the server goes away before the goal finishes.
    pub fn result(&self) -> impl Future<Output = Result<(GoalState, A::Result)>> + Send + 'static {
        let waiter = lock(&self.result).take();
        let inner = self.inner.clone();
        let id = self.id;
        async move {
            let rx = waiter.ok_or(Error::AlreadyTaken("the goal's result"))??;
            let outcome = answered(&inner.life, rx, inner.name.clone()).await;
            match outcome {
                Ok(r) => {
                    let (status, result) = A::split_get_result_response(r);
                    let state = GoalState::from_i8(status);
                    inner.finish_goal(&id, state);
                    Ok((state, result))
                }
                Err(e) => {
                    inner.finish_goal(&id, GoalState::Unknown);
                    Err(e)
                }
            }
        }
    }

    /// Asks the server to cancel this goal; resolves to its answer (`return_code` 0 when the
    /// goal is now canceling).
    pub fn cancel(&self) -> impl Future<Output = Result<CancelGoal_Response>> + Send + 'static {
        let request = CancelGoal_Request {
            goal_info: GoalInfo {
                goal_id: self.id,
                stamp: Default::default(),
            },
        };
        let sent = call(
            &self.inner.life,
            &*self.inner.cancel_goal,
            &self.inner.cancel_responses,
            request,
        );
        let name = self.inner.name.clone();
        let inner = self.inner.clone();
        async move { answered(&inner.life, sent?, name).await }
    }
}

/// A goal's feedback, as a `Stream` (also `recv().await`).
pub struct FeedbackStream<F> {
    items: futures::stream::BoxStream<'static, F>,
}

impl<F> FeedbackStream<F> {
    /// The next feedback, or `None` once the goal has finished or the executor shut down.
    pub async fn recv(&mut self) -> Option<F> {
        self.items.next().await
    }
}

impl<F> Stream for FeedbackStream<F> {
    type Item = F;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<F>> {
        self.items.poll_next_unpin(cx)
    }
}

impl<F> std::fmt::Debug for FeedbackStream<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FeedbackStream")
    }
}

impl<A: ActionType> std::fmt::Debug for ActionClientState<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActionClient")
            .field("name", &self.inner.name)
            .finish()
    }
}
