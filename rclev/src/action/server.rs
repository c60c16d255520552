//! The action server.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::FutureExt;

use super::GoalUuid;
use super::{GoalEvent, GoalState};
use crate::clock::ClockType;
use crate::error::{panic_message, Error, Result};
use crate::executor::dispatch::{EntityDispatch, ExecContext, Executable, MAX_BATCH};
use crate::interfaces::action_msgs::msg::{GoalInfo, GoalStatus, GoalStatusArray};
use crate::interfaces::action_msgs::srv::{CancelGoal, CancelGoal_Request, CancelGoal_Response};
use crate::msg::{ActionType, GetResultRequest, SendGoalRequest, ServiceType};
use crate::node::service::unwrap_payload;
use crate::node::{Callback, WorkerCore};
use crate::qos::{IntoPrimitiveOptions, QoSProfile};
use crate::sync::lock;
use crate::timer::{create_timer, Timer, TimerCallback, TimerKind, TimerOptions};
use crate::transport::{Endpoint, PublisherPort, RequestId, ServicePort, TypeSupport};

/// The goal callback's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GoalResponse {
    /// Refuse the goal.
    Reject,
    /// Accept it and start executing at once.
    AcceptAndExecute,
    /// Accept it; the execute callback gets it in `Accepted` state and calls
    /// [`ServerGoalHandle::execute`] when it starts.
    AcceptAndDefer,
}

/// The cancel callback's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelResponse {
    /// Keep executing.
    Reject,
    /// Move the goal to `Canceling` and signal its execution.
    Accept,
}

/// How an async goal execution ended.
#[derive(Debug, Clone, PartialEq)]
pub enum GoalEnd<R> {
    /// Succeeded with a result.
    Succeeded(R),
    /// Aborted, with a (partial) result.
    Aborted(R),
    /// Canceled (after a cancel request was accepted), with a (partial) result.
    Canceled(R),
}

/// Server options.
#[derive(Debug, Clone)]
pub struct ActionServerOptions {
    /// How long a finished goal's result is kept for `get_result`. Default 15 minutes, as in
    /// rcl_action. A timeout beyond [`MAX_PERIOD`](crate::timer::MAX_PERIOD) (~292 years, e.g.
    /// `Duration::MAX`) keeps results for the server's life.
    pub result_timeout: Duration,
    /// The clock that times result expiry. Default: the node's ROS time (so it follows `/clock`
    /// under simulation time).
    pub clock: ClockType,
}

impl Default for ActionServerOptions {
    fn default() -> Self {
        Self {
            result_timeout: Duration::from_secs(15 * 60),
            clock: ClockType::RosTime,
        }
    }
}

#[derive(Default)]
struct CancelSignal {
    requested: AtomicBool,
    notify: tokio::sync::Notify,
}

struct GoalEntry<A: ActionType> {
    info: GoalInfo,
    goal: Arc<A::Goal>,
    state: GoalState,
    result: Option<A::Result>,
    /// `get_result` requests waiting for the goal to finish.
    waiting: Vec<RequestId>,
    cancel: Arc<CancelSignal>,
    /// Expires the result; held here so that dropping the server cancels it.
    _expiry: Option<Timer>,
}

type GoalFn<A> = Box<dyn FnMut(&GoalUuid, &<A as ActionType>::Goal) -> GoalResponse + Send>;
type CancelFn<A> = Box<dyn FnMut(&ServerGoalHandle<A>) -> CancelResponse + Send>;

type AsyncExecuteFn<A> = Box<
    dyn FnMut(ServerGoalHandle<A>) -> BoxFuture<'static, GoalEnd<<A as ActionType>::Result>> + Send,
>;

pub(crate) enum ExecuteFn<A: ActionType> {
    Sync(Box<dyn FnMut(ServerGoalHandle<A>) + Send>),
    Async(AsyncExecuteFn<A>),
}

/// A goal picked by a cancel request: its id, goal, cancel signal and state.
type CancelCandidate<A> = (
    GoalUuid,
    Arc<<A as ActionType>::Goal>,
    Arc<CancelSignal>,
    GoalState,
);

struct Handlers<A: ActionType> {
    goal: GoalFn<A>,
    cancel: CancelFn<A>,
    execute: ExecuteFn<A>,
}

struct ServerInner<A: ActionType> {
    name: String,
    send_goal: Arc<dyn ServicePort>,
    cancel_goal: Arc<dyn ServicePort>,
    get_result: Arc<dyn ServicePort>,
    feedback: Arc<dyn PublisherPort>,
    status: Arc<dyn PublisherPort>,
    dispatch: Arc<EntityDispatch>,
    goals: Mutex<HashMap<GoalUuid, GoalEntry<A>>>,
    /// Set by [`ServerInner::close`] while it holds `goals`, so no goal is added after the
    /// server was closed. Checked by everything that would act on the server's behalf: the
    /// worker and goal handles may still hold it for a moment after the user dropped it.
    closed: AtomicBool,
    handlers: Mutex<Handlers<A>>,
    options: ActionServerOptions,
    worker: Arc<WorkerCore>,
    me: Weak<ServerInner<A>>,
}

/// An action server. Dropping it removes its endpoints: clients waiting for results get
/// [`Error::ServiceUnavailable`], and goal handles still held by executions become inert.
pub struct ActionServerState<A: ActionType> {
    inner: Arc<ServerInner<A>>,
}

/// A shared handle to an action server.
pub type ActionServer<A> = crate::Handle<ActionServerState<A>>;

/// An endpoint of action `name`: `<name>/_action/<suffix>`.
pub(crate) fn endpoint<T: crate::msg::Message>(
    core: &WorkerCore,
    name: &str,
    suffix: &str,
    qos: QoSProfile,
    response: Option<TypeSupport>,
) -> Result<Endpoint> {
    core.endpoint(
        format!("{name}/_action/{suffix}").qos(qos),
        TypeSupport::of::<T>(),
        response,
    )
}

/// One of the three services' endpoints (`send_goal`, `cancel_goal`, `get_result`), on the
/// default QoS.
pub(crate) fn service_endpoint<S: ServiceType>(
    core: &WorkerCore,
    name: &str,
    suffix: &str,
) -> Result<Endpoint> {
    endpoint::<S::Request>(
        core,
        name,
        suffix,
        QoSProfile::default(),
        Some(TypeSupport::of::<S::Response>()),
    )
}

/// The five endpoints' QoS: services default, feedback default, status transient-local.
pub(crate) fn status_qos() -> QoSProfile {
    QoSProfile::default().keep_last(1).transient_local()
}

pub(crate) fn create_action_server<A: ActionType>(
    core: &Arc<WorkerCore>,
    name: &str,
    options: ActionServerOptions,
    goal: GoalFn<A>,
    cancel: CancelFn<A>,
    execute: ExecuteFn<A>,
) -> Result<ActionServer<A>> {
    let full = core.node.expand(name)?;
    let transport = core.exec.context.transport().clone();
    let dispatch = EntityDispatch::unbound(core.mailbox.clone());
    let d = || dispatch.clone() as Arc<dyn crate::transport::ReadyHook>;
    let qos = QoSProfile::default();
    let send_goal = transport.create_service(
        &service_endpoint::<A::SendGoal>(core, &full, "send_goal")?,
        d(),
    )?;
    let cancel_goal = transport.create_service(
        &service_endpoint::<CancelGoal>(core, &full, "cancel_goal")?,
        d(),
    )?;
    let get_result = transport.create_service(
        &service_endpoint::<A::GetResult>(core, &full, "get_result")?,
        d(),
    )?;
    let feedback = transport.create_publisher(&endpoint::<A::FeedbackMessage>(
        core, &full, "feedback", qos, None,
    )?)?;
    let status = transport.create_publisher(&endpoint::<GoalStatusArray>(
        core,
        &full,
        "status",
        status_qos(),
        None,
    )?)?;
    let inner = Arc::new_cyclic(|me| ServerInner {
        name: full,
        send_goal,
        cancel_goal,
        get_result,
        feedback,
        status,
        dispatch: dispatch.clone(),
        goals: Mutex::new(HashMap::new()),
        closed: AtomicBool::new(false),
        handlers: Mutex::new(Handlers {
            goal,
            cancel,
            execute,
        }),
        options,
        worker: core.clone(),
        me: me.clone(),
    });
    let entity: Arc<dyn Executable> = inner.clone();
    dispatch.bind(Arc::downgrade(&entity), true);
    inner.publish_status();
    Ok(crate::Handle::new(ActionServerState { inner }))
}

impl<A: ActionType> Drop for ActionServerState<A> {
    fn drop(&mut self) {
        self.inner.close();
    }
}

impl<A: ActionType> ActionServerState<A> {
    /// The fully qualified action name.
    pub fn action_name(&self) -> &str {
        &self.inner.name
    }

    /// The goals the server knows (including finished ones until their results expire).
    pub fn goal_states(&self) -> Vec<(GoalUuid, GoalState)> {
        lock(&self.inner.goals)
            .iter()
            .map(|(id, g)| (*id, g.state))
            .collect()
    }
}

impl<A: ActionType> ServerInner<A> {
    fn label(&self) -> String {
        format!("action server {}", self.name)
    }

    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Withdraws the server at once: its services disappear (clients waiting for a response or
    /// a result get [`Error::ServiceUnavailable`]), its goals and their expiry timers are
    /// dropped, and goal handles become inert.
    fn close(&self) {
        let goals = {
            let mut goals = lock(&self.goals);
            self.closed.store(true, Ordering::Release);
            std::mem::take(&mut *goals)
        };
        self.send_goal.close();
        self.cancel_goal.close();
        self.get_result.close();
        // Outside the lock: dropping an expiry timer takes the scheduler's lock.
        drop(goals);
    }

    fn publish_status(&self) {
        if self.is_closed() {
            return;
        }
        let status_list = lock(&self.goals)
            .values()
            .map(|g| GoalStatus {
                goal_info: g.info,
                status: g.state as i8,
            })
            .collect();
        let _ = self
            .status
            .publish(Arc::new(GoalStatusArray { status_list }));
    }

    fn respond_result(&self, rid: RequestId, status: GoalState, result: A::Result) {
        let _ = self
            .get_result
            .send_response(rid, Arc::new(A::get_result_response(status as i8, result)));
    }

    fn transition(
        &self,
        id: &GoalUuid,
        event: GoalEvent,
        result: Option<A::Result>,
    ) -> Result<GoalState> {
        let (next, waiting, result) = {
            let mut goals = lock(&self.goals);
            let entry = goals
                .get_mut(id)
                .ok_or_else(|| Error::GoalUnknown(id.to_string()))?;
            let next = entry
                .state
                .after(event)
                .ok_or(Error::InvalidGoalTransition {
                    goal: id.to_string(),
                    from: entry.state,
                    event,
                })?;
            entry.state = next;
            if next.is_terminal() {
                entry.result = Some(result.unwrap_or_default());
                (
                    next,
                    std::mem::take(&mut entry.waiting),
                    entry.result.clone(),
                )
            } else {
                (next, Vec::new(), None)
            }
        };
        // Status first: a client that has the result can count on the status array showing
        // the terminal state already.
        self.publish_status();
        if next.is_terminal() {
            let result = result.unwrap_or_default();
            for rid in waiting {
                self.respond_result(rid, next, result.clone());
            }
            self.schedule_expiry(*id);
        }
        Ok(next)
    }

    /// Arms a one-shot timer on the shared scheduler that forgets the goal after the result
    /// timeout. The timer holds the server weakly.
    fn schedule_expiry(&self, id: GoalUuid) {
        if self.options.result_timeout > crate::timer::MAX_PERIOD {
            // Longer than any clock can count: the result is kept for the server's life.
            return;
        }
        let weak = self.me.clone();
        let expire = TimerCallback(Callback::plain(move |_| {
            if let Some(server) = weak.upgrade() {
                let removed = lock(&server.goals).remove(&id);
                if removed.is_some() {
                    server.publish_status();
                }
            }
        }));
        let options = TimerOptions {
            period: self.options.result_timeout,
            clock: self.options.clock,
        };
        match create_timer(&self.worker, options, TimerKind::OneShot(expire)) {
            Ok(timer) => {
                if let Some(entry) = lock(&self.goals).get_mut(&id) {
                    entry._expiry = Some(timer);
                }
            }
            Err(e) => tracing::error!(target: "rclev", "cannot schedule result expiry: {e}"),
        }
    }

    fn handle(
        &self,
        id: GoalUuid,
        goal: Arc<A::Goal>,
        cancel: Arc<CancelSignal>,
    ) -> ServerGoalHandle<A> {
        ServerGoalHandle {
            id,
            goal,
            server: self.me.clone(),
            cancel,
        }
    }

    fn on_send_goal(&self, cx: &mut ExecContext<'_>, rid: RequestId, request: SendGoalRequest<A>) {
        let label = self.label();
        let mut handlers = lock(&self.handlers);
        let (id, goal) = A::split_send_goal_request(request);
        let verdict = cx
            .guarded(&label, |_| (handlers.goal)(&id, &goal))
            .unwrap_or(GoalResponse::Reject);
        let duplicate = lock(&self.goals).contains_key(&id);
        let stamp = self.worker.node.clock.now().to_msg();
        if verdict == GoalResponse::Reject || duplicate {
            let _ = self
                .send_goal
                .send_response(rid, Arc::new(A::send_goal_response(false, stamp)));
            return;
        }
        let cancel = Arc::new(CancelSignal::default());
        let goal = Arc::new(goal);
        let mut goals = lock(&self.goals);
        if self.is_closed() {
            // The client was already told the server is gone.
            return;
        }
        goals.insert(
            id,
            GoalEntry {
                info: GoalInfo { goal_id: id, stamp },
                goal: goal.clone(),
                state: GoalState::Accepted,
                result: None,
                waiting: Vec::new(),
                cancel: cancel.clone(),
                _expiry: None,
            },
        );
        drop(goals);
        let _ = self
            .send_goal
            .send_response(rid, Arc::new(A::send_goal_response(true, stamp)));
        if verdict == GoalResponse::AcceptAndExecute {
            let _ = self.transition(&id, GoalEvent::Execute, None);
        } else {
            self.publish_status();
        }
        let handle = self.handle(id, goal, cancel);
        match &mut handlers.execute {
            ExecuteFn::Sync(f) => {
                if cx.guarded(&label, |_| f(handle.clone())).is_none() {
                    let _ = handle.abort(A::Result::default());
                }
            }
            ExecuteFn::Async(f) => {
                let Some(fut) = cx.guarded(&label, |_| f(handle.clone())) else {
                    let _ = handle.abort(A::Result::default());
                    return;
                };
                let exec = self.worker.exec.clone();
                cx.spawn(Box::pin(async move {
                    match std::panic::AssertUnwindSafe(fut).catch_unwind().await {
                        Ok(end) => {
                            if let Err(e) = handle.finish(end) {
                                tracing::warn!(target: "rclev", "goal {}: {e}", handle.goal_id());
                            }
                        }
                        Err(p) => {
                            let _ = handle.abort(A::Result::default());
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

    fn on_cancel(&self, cx: &mut ExecContext<'_>, rid: RequestId, request: CancelGoal_Request) {
        let target = request.goal_info.goal_id;
        let before = request.goal_info.stamp.as_nanos();
        // ROS 2 semantics: a zero id with a zero stamp cancels every goal; a stamp also cancels
        // every goal accepted at or before it.
        let candidates: Vec<CancelCandidate<A>> = {
            let goals = lock(&self.goals);
            goals
                .iter()
                .filter(|(id, g)| {
                    (target.is_zero() && before == 0)
                        || **id == target
                        || (before != 0 && g.info.stamp.as_nanos() <= before)
                })
                .map(|(id, g)| (*id, g.goal.clone(), g.cancel.clone(), g.state))
                .collect()
        };
        let mut canceling = Vec::new();
        let mut terminated = false;
        let label = self.label();
        for (id, goal, signal, state) in candidates {
            if state.is_terminal() {
                terminated = true;
                continue;
            }
            let handle = self.handle(id, goal, signal.clone());
            let verdict = {
                let mut handlers = lock(&self.handlers);
                cx.guarded(&label, |_| (handlers.cancel)(&handle))
                    .unwrap_or(CancelResponse::Reject)
            };
            if verdict == CancelResponse::Accept
                && self.transition(&id, GoalEvent::CancelGoal, None).is_ok()
            {
                signal.requested.store(true, Ordering::Release);
                signal.notify.notify_waiters();
                if let Some(g) = lock(&self.goals).get(&id) {
                    canceling.push(g.info);
                }
            }
        }
        let return_code = if !canceling.is_empty() {
            0
        } else if terminated {
            3
        } else if !target.is_zero() && !lock(&self.goals).contains_key(&target) {
            2
        } else {
            1
        };
        let _ = self.cancel_goal.send_response(
            rid,
            Arc::new(CancelGoal_Response {
                return_code,
                goals_canceling: canceling,
            }),
        );
    }

    fn on_get_result(&self, rid: RequestId, request: GetResultRequest<A>) {
        let goal_id = A::get_result_request_goal_id(&request);
        let ready = {
            let mut goals = lock(&self.goals);
            match goals.get_mut(&goal_id) {
                None => Some((GoalState::Unknown, A::Result::default())),
                Some(g) if g.state.is_terminal() => {
                    Some((g.state, g.result.clone().unwrap_or_default()))
                }
                Some(g) => {
                    g.waiting.push(rid);
                    None
                }
            }
        };
        if let Some((state, result)) = ready {
            self.respond_result(rid, state, result);
        }
    }
}

impl<A: ActionType> Executable for ServerInner<A> {
    fn execute(&self, cx: &mut ExecContext<'_>) {
        if self.is_closed() {
            return;
        }
        let mut more = false;
        for i in 0..MAX_BATCH {
            let Some((rid, p)) = self.send_goal.take_request() else {
                break;
            };
            self.on_send_goal(cx, rid, unwrap_payload(p));
            more |= i + 1 == MAX_BATCH;
        }
        for i in 0..MAX_BATCH {
            let Some((rid, p)) = self.cancel_goal.take_request() else {
                break;
            };
            self.on_cancel(cx, rid, unwrap_payload(p));
            more |= i + 1 == MAX_BATCH;
        }
        for i in 0..MAX_BATCH {
            let Some((rid, p)) = self.get_result.take_request() else {
                break;
            };
            self.on_get_result(rid, unwrap_payload(p));
            more |= i + 1 == MAX_BATCH;
        }
        if more {
            self.dispatch.notify();
        }
    }

    fn dispatch(&self) -> &EntityDispatch {
        &self.dispatch
    }
}

/// The server's handle on one goal, given to the execute callback. Cloneable; it holds the
/// server weakly, so after the server is dropped every method returns
/// [`Error::GoalUnknown`].
pub struct ServerGoalHandle<A: ActionType> {
    id: GoalUuid,
    goal: Arc<A::Goal>,
    server: Weak<ServerInner<A>>,
    cancel: Arc<CancelSignal>,
}

impl<A: ActionType> Clone for ServerGoalHandle<A> {
    fn clone(&self) -> Self {
        Self {
            id: self.id,
            goal: self.goal.clone(),
            server: self.server.clone(),
            cancel: self.cancel.clone(),
        }
    }
}

impl<A: ActionType> std::fmt::Debug for ServerGoalHandle<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerGoalHandle")
            .field("goal_id", &self.id.to_string())
            .finish()
    }
}

impl<A: ActionType> ServerGoalHandle<A> {
    /// The goal's id.
    pub fn goal_id(&self) -> GoalUuid {
        self.id
    }

    /// The goal.
    pub fn goal(&self) -> &A::Goal {
        &self.goal
    }

    fn server(&self) -> Result<Arc<ServerInner<A>>> {
        self.server
            .upgrade()
            .filter(|s| !s.is_closed())
            .ok_or_else(|| Error::GoalUnknown(self.id.to_string()))
    }

    /// The goal's current state (`Unknown` once the server or the goal is gone).
    pub fn state(&self) -> GoalState {
        self.server()
            .ok()
            .and_then(|s| lock(&s.goals).get(&self.id).map(|g| g.state))
            .unwrap_or(GoalState::Unknown)
    }

    /// Starts executing a goal accepted with [`GoalResponse::AcceptAndDefer`].
    pub fn execute(&self) -> Result<()> {
        self.server()?
            .transition(&self.id, GoalEvent::Execute, None)
            .map(drop)
    }

    /// Publishes feedback for this goal.
    pub fn publish_feedback(&self, feedback: A::Feedback) -> Result<()> {
        let server = self.server()?;
        if self.state().is_terminal() || self.state() == GoalState::Unknown {
            return Err(Error::GoalUnknown(self.id.to_string()));
        }
        server
            .feedback
            .publish(Arc::new(A::feedback_message(self.id, feedback)))
    }

    /// Whether a cancel request for this goal was accepted.
    pub fn is_cancel_requested(&self) -> bool {
        self.cancel.requested.load(Ordering::Acquire)
    }

    /// Resolves when a cancel request for this goal is accepted (at once if one was).
    pub async fn cancel_requested(&self) {
        loop {
            let notified = self.cancel.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_cancel_requested() {
                return;
            }
            notified.await;
        }
    }

    /// Finishes the goal successfully.
    pub fn succeed(&self, result: A::Result) -> Result<()> {
        self.server()?
            .transition(&self.id, GoalEvent::Succeed, Some(result))
            .map(drop)
    }

    /// Finishes the goal unsuccessfully.
    pub fn abort(&self, result: A::Result) -> Result<()> {
        self.server()?
            .transition(&self.id, GoalEvent::Abort, Some(result))
            .map(drop)
    }

    /// Finishes a canceling goal as canceled.
    pub fn canceled(&self, result: A::Result) -> Result<()> {
        self.server()?
            .transition(&self.id, GoalEvent::Canceled, Some(result))
            .map(drop)
    }

    pub(crate) fn finish(&self, end: GoalEnd<A::Result>) -> Result<()> {
        match end {
            GoalEnd::Succeeded(r) => self.succeed(r),
            GoalEnd::Aborted(r) => self.abort(r),
            GoalEnd::Canceled(r) => self.canceled(r),
        }
    }
}

/// The closures an action server needs, converted for storage.
pub(crate) fn handlers<A: ActionType>(
    goal: impl FnMut(&GoalUuid, &A::Goal) -> GoalResponse + Send + 'static,
    cancel: impl FnMut(&ServerGoalHandle<A>) -> CancelResponse + Send + 'static,
) -> (GoalFn<A>, CancelFn<A>) {
    (Box::new(goal), Box::new(cancel))
}

/// An async execute callback, converted for storage.
pub(crate) fn async_execute<A: ActionType, F, Fut>(mut f: F) -> ExecuteFn<A>
where
    F: FnMut(ServerGoalHandle<A>) -> Fut + Send + 'static,
    Fut: Future<Output = GoalEnd<A::Result>> + Send + 'static,
{
    ExecuteFn::Async(Box::new(move |h| f(h).boxed()))
}

/// A plain execute callback, converted for storage.
pub(crate) fn sync_execute<A: ActionType>(
    f: impl FnMut(ServerGoalHandle<A>) + Send + 'static,
) -> ExecuteFn<A> {
    ExecuteFn::Sync(Box::new(f))
}

impl<A: ActionType> std::fmt::Debug for ActionServerState<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActionServer")
            .field("name", &self.inner.name)
            .finish()
    }
}
