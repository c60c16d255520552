//! Lifecycle (managed) nodes: ROS 2's standard node state machine, as rclcpp_lifecycle and
//! rclpy.lifecycle offer it, on the wire and in code.
//!
//! A [`LifecycleNode`] is a node ([`Deref`](std::ops::Deref)s to [`NodeState`]) with a state
//! machine: it starts `unconfigured` and moves between the primary states `unconfigured`,
//! `inactive`, `active` and `finalized` through transitions (`configure`, `activate`,
//! `deactivate`, `cleanup`, `shutdown`), each of which passes through a transition state where
//! the node's callback for it runs (`on_configure` in `configuring`, …) and decides where it
//! ends. The graph is rcl's default one, ids and labels included ([`State`], [`Transition`]).
//!
//! # On the wire
//!
//! As rclcpp_lifecycle and rclpy do, the node serves `~/change_state`, `~/get_state`,
//! `~/get_available_states`, `~/get_available_transitions` and `~/get_transition_graph`
//! (`lifecycle_msgs`), and publishes every step on `~/transition_event`: two events per
//! transition (primary state → transition state, transition state → next state; three when it
//! went through `errorprocessing`), each with only its start and goal states filled in
//! (timestamp 0, an empty `transition`), as rcl fills them. `~/change_state` takes a transition
//! by id, or by label (a non-empty label wins: `{transition: {label: configure}}`, which
//! `ros2 service call` sends with id 0) and answers `success: true` when the callback
//! succeeded. So `ros2 lifecycle`, rclcpp's and rclpy's clients and Nav2's lifecycle manager
//! drive an rclev node; `rclev lifecycle` drives theirs.
//!
//! # Callbacks
//!
//! `on_configure`, `on_cleanup`, `on_activate`, `on_deactivate`, `on_shutdown` and `on_error`
//! get the state the transition started from and return a [`CallbackReturn`] (or a `Result`
//! whose `Err` is an error: [`IntoCallbackReturn`]); the `_async` variants take a closure
//! returning a future of that. `Success` goes on to the transition's goal, `Failure` back to
//! where it started (from `shuttingdown`: to `finalized`), and `Error` — also what a panic or
//! an `Err` counts as — to `errorprocessing`, whose `on_error` then decides: `Success` to
//! `unconfigured`, anything else to `finalized`. A callback not set succeeds.
//!
//! Transitions run one at a time: a request while one is in progress is refused
//! ([`Error::TransitionInProgress`]; `success: false` on the wire), and a transition that does
//! not start at the current state is refused with [`Error::TransitionUnavailable`]. From code,
//! [`trigger_transition`](LifecycleNodeState::trigger_transition) (and `configure()`,
//! `activate()`, …) runs the callbacks on the calling thread and returns the state reached;
//! [`trigger_transition_async`](LifecycleNodeState::trigger_transition_async) does the same as
//! a future. Requests through `~/change_state` run on the node's default worker (a sync
//! callback blocks that worker while it runs; an async one does not).
//!
//! # Managed entities
//!
//! [`create_lifecycle_publisher`](LifecycleNodeState::create_lifecycle_publisher) and
//! [`create_lifecycle_timer_repeating`](LifecycleNodeState::create_lifecycle_timer_repeating)
//! make entities that work only while the node is active: a managed publisher drops what is
//! published otherwise (a warning logged once per inactive period, as rclcpp's
//! `LifecyclePublisher` does), a managed timer is cancelled (no wake-ups) and restarted,
//! period from then, when the node becomes active again. They are switched on right before
//! `on_activate` runs, so the callback can already publish, and off right before any other
//! callback runs; at the end of a transition they are on exactly if the node is `active`.
//! Your own entities join through [`ManagedEntity`].
//!
//! ```
//! use std::time::Duration;
//! use rclev::interfaces::std_msgs::msg::String as StringMsg;
//! use rclev::lifecycle::{CallbackReturn, State};
//!
//! let executor = rclev::Context::default().create_basic_executor();
//! let node = executor.create_lifecycle_node("lc_talker")?;
//! let publisher = node.create_lifecycle_publisher::<StringMsg>("lifecycle_chatter")?;
//! let p = publisher.clone();
//! let _timer = node.create_lifecycle_timer_repeating(Duration::from_secs(1), move || {
//!     p.publish(StringMsg { data: "Lifecycle HelloWorld".into() }).unwrap();
//! })?;
//! node.on_configure(|previous| {
//!     assert_eq!(previous, State::Unconfigured);
//!     CallbackReturn::Success
//! });
//! node.on_activate(|_| Ok::<_, std::io::Error>(()));
//!
//! assert_eq!(node.current_state(), State::Unconfigured);
//! assert_eq!(node.configure()?, State::Inactive);
//! assert_eq!(node.activate()?, State::Active);
//! assert!(publisher.is_activated());
//! // Not available from `active`: a typed error, nothing happens.
//! assert!(matches!(node.configure(), Err(rclev::Error::TransitionUnavailable { .. })));
//! assert_eq!(node.shutdown()?, State::Finalized);
//! # Ok::<(), rclev::Error>(())
//! ```

use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock, Weak};

mod callbacks;
mod managed;
mod services;

pub use crate::base::lifecycle_state::{
    CallbackReturn, State, Transition, TransitionRequest, TRANSITION_ERROR, TRANSITION_FAILURE,
    TRANSITION_SUCCESS,
};
pub use callbacks::IntoCallbackReturn;
pub use managed::{LifecyclePublisher, LifecyclePublisherState, ManagedEntity};

use callbacks::{Hook, Hooks};
use managed::Activation;

use crate::base::error::{Error, Result};
use crate::base::handle::WeakEntityHandle;
use crate::base::sync::lock;
use crate::endpoint::IntoPrimitiveOptions;
use crate::interfaces::lifecycle_msgs::msg::TransitionEvent;
use crate::logging::{AsLogger, Logger};
use crate::msg::Message;
use crate::node::{IntoNodeOptions, Node, NodeState, Publisher};
use crate::timer::{IntoTimerCallback, IntoTimerOptions, Timer, TimerState};

/// Where the state machine is.
struct Machine {
    state: State,
    /// A transition is running (the state is a transition state then).
    busy: bool,
}

/// A managed node: a [`NodeState`] (which it derefs to) with rcl's lifecycle state machine, its
/// services and `~/transition_event` publisher, transition callbacks, and managed entities. See
/// the [module docs](self) for the whole picture.
///
/// ```
/// use rclev::lifecycle::{CallbackReturn, State};
///
/// let executor = rclev::Context::default().create_basic_executor();
/// let node = executor.create_lifecycle_node(rclev::NodeOptions::new("camera").namespace("/robot"))?;
/// assert_eq!(node.fully_qualified_name(), "/robot/camera"); // the node's own methods
/// node.on_configure(|_| CallbackReturn::Failure); // e.g. the device is not there
/// assert_eq!(node.configure()?, State::Unconfigured);
/// node.on_configure(|_| -> Result<CallbackReturn, String> { Err("no device".into()) });
/// // An error: errorprocessing, where the default on_error recovers to unconfigured.
/// assert_eq!(node.trigger_transition("configure")?, State::Unconfigured);
/// # Ok::<(), rclev::Error>(())
/// ```
pub struct LifecycleNodeState {
    node: Node,
    machine: Mutex<Machine>,
    hooks: Hooks,
    activation: Arc<Activation>,
    /// The user's managed entities, held weakly.
    entities: Mutex<Vec<Weak<dyn ManagedEntity>>>,
    /// Managed timers, cancelled and reset with the activation.
    timers: Mutex<Vec<WeakEntityHandle<TimerState>>>,
    events: Publisher<TransitionEvent>,
    services: OnceLock<services::LifecycleServices>,
    /// The executor's runtime, entered by blocking transitions called outside any runtime
    /// (async callbacks may use Tokio's timers and I/O).
    runtime: tokio::runtime::Handle,
}

/// A shared handle to a managed node.
pub type LifecycleNode = Arc<LifecycleNodeState>;

/// Managed-node creation belongs to the lifecycle layer; the method sits on the `Executor`, as
/// `create_node` does.
impl crate::executor::Executor {
    /// Creates a managed node, `unconfigured`, with its lifecycle services and
    /// `~/transition_event` publisher. Accepts a name (`"lc_talker"`) or
    /// [`NodeOptions`](crate::NodeOptions).
    ///
    /// ```
    /// use rclev::lifecycle::{CallbackReturn, State};
    ///
    /// let executor = rclev::Context::default().create_basic_executor();
    /// let node = executor.create_lifecycle_node("lc_camera")?;
    /// assert_eq!(node.current_state(), State::Unconfigured);
    /// node.on_configure(|_previous| CallbackReturn::Success); // open the device …
    /// assert_eq!(node.configure()?, State::Inactive);
    /// # Ok::<(), rclev::Error>(())
    /// ```
    pub fn create_lifecycle_node(&self, options: impl IntoNodeOptions) -> Result<LifecycleNode> {
        LifecycleNodeState::create(self.create_node(options)?, self.runtime_handle().clone())
    }
}

impl LifecycleNodeState {
    fn create(node: Node, runtime: tokio::runtime::Handle) -> Result<LifecycleNode> {
        let events = node.create_publisher::<TransitionEvent>("~/transition_event")?;
        let lifecycle = Arc::new(Self {
            node,
            machine: Mutex::new(Machine {
                state: State::Unconfigured,
                busy: false,
            }),
            hooks: Hooks::default(),
            activation: Arc::default(),
            entities: Mutex::default(),
            timers: Mutex::default(),
            events,
            services: OnceLock::new(),
            runtime,
        });
        let services = services::LifecycleServices::start(&lifecycle)?;
        let _ = lifecycle.services.set(services);
        Ok(lifecycle)
    }

    /// The node underneath (for APIs that take a [`Node`]).
    pub fn node(&self) -> &Node {
        &self.node
    }

    /// The current state: a primary state, or the transition state of a transition in
    /// progress.
    pub fn current_state(&self) -> State {
        lock(&self.machine).state
    }

    /// Every state of the machine, in rcl's order (11, `unknown` included).
    pub fn available_states(&self) -> &'static [State] {
        &State::ALL
    }

    /// The transitions that start at the current state, in rcl's order.
    pub fn available_transitions(&self) -> Vec<Transition> {
        self.current_state().transitions().copied().collect()
    }

    /// The whole transition graph (25 transitions), in rcl's order.
    pub fn transition_graph(&self) -> &'static [Transition] {
        Transition::graph()
    }

    /// Runs `transition` (an id, a label, or a [`Transition`]) from the current state, with its
    /// callbacks on this thread, and returns the state it ends in: its goal on success, the
    /// state it started from on failure, and `unconfigured` or `finalized` after an error.
    ///
    /// Async callbacks are driven to completion here (inside the executor's runtime, so they
    /// may use Tokio's timers); do not call this from one of the executor's callbacks when an
    /// async transition callback waits for that executor's work (a service response, say): use
    /// [`trigger_transition_async`](Self::trigger_transition_async) there.
    ///
    /// Errors: [`Error::TransitionUnavailable`] if the transition does not start at the
    /// current state, [`Error::TransitionInProgress`] while another transition runs; nothing
    /// happens then.
    pub fn trigger_transition(&self, transition: impl Into<TransitionRequest>) -> Result<State> {
        // Started here, not in the future: a request refused (one from a transition callback,
        // say) returns at once, without nesting a blocking wait in the one running.
        let first = self.begin(&transition.into())?;
        let run = self.complete(first);
        let (state, _) = match tokio::runtime::Handle::try_current() {
            Ok(_) => futures::executor::block_on(run),
            Err(_) => {
                let _inside = self.runtime.enter();
                futures::executor::block_on(run)
            }
        };
        Ok(state)
    }

    /// [`trigger_transition`](Self::trigger_transition) as a future: the callbacks run where it
    /// is polled. Run it to the end: dropped before its callback has finished, the transition
    /// ends as if that callback and `on_error` had both failed with an error — the node is
    /// `finalized` (logged).
    pub async fn trigger_transition_async(
        &self,
        transition: impl Into<TransitionRequest>,
    ) -> Result<State> {
        self.run_transition(transition.into())
            .await
            .map(|(state, _)| state)
    }

    /// `configure` (unconfigured → inactive); see [`trigger_transition`](Self::trigger_transition).
    pub fn configure(&self) -> Result<State> {
        self.trigger_transition(Transition::CONFIGURE)
    }

    /// `cleanup` (inactive → unconfigured); see [`trigger_transition`](Self::trigger_transition).
    pub fn cleanup(&self) -> Result<State> {
        self.trigger_transition(Transition::CLEANUP)
    }

    /// `activate` (inactive → active); see [`trigger_transition`](Self::trigger_transition).
    pub fn activate(&self) -> Result<State> {
        self.trigger_transition(Transition::ACTIVATE)
    }

    /// `deactivate` (active → inactive); see [`trigger_transition`](Self::trigger_transition).
    pub fn deactivate(&self) -> Result<State> {
        self.trigger_transition(Transition::DEACTIVATE)
    }

    /// `shutdown` from whichever primary state the node is in (5, 6 or 7: → finalized); see
    /// [`trigger_transition`](Self::trigger_transition).
    pub fn shutdown(&self) -> Result<State> {
        self.trigger_transition("shutdown")
    }

    /// Runs a transition; the state it ended in and what its own callback returned (what
    /// `~/change_state` answers with).
    pub(crate) async fn run_transition(
        &self,
        request: TransitionRequest,
    ) -> Result<(State, CallbackReturn)> {
        let first = self.begin(&request)?;
        Ok(self.complete(first).await)
    }

    /// Runs a transition [`begin`](Self::begin) started, to its end.
    async fn complete(&self, first: &'static Transition) -> (State, CallbackReturn) {
        let mut running = Running {
            node: self,
            done: false,
        };
        let previous = first.start;
        self.switch_entities(first.goal == State::Activating);
        let code = self.run_hook(first.goal, previous).await;
        let mut end = self.step(code);
        if end == State::ErrorProcessing {
            let recovery = self.run_hook(State::ErrorProcessing, previous).await;
            end = self.step(recovery);
        }
        running.done = true;
        (end, code)
    }

    /// Starts `request`'s transition: the machine is marked busy and enters the transition
    /// state (first event published).
    fn begin(&self, request: &TransitionRequest) -> Result<&'static Transition> {
        let refused = {
            let mut m = lock(&self.machine);
            if m.busy {
                Error::TransitionInProgress(m.state)
            } else if let Some(t) = request.resolve(m.state) {
                m.busy = true;
                m.state = t.goal;
                // Under the lock: the events of one node are published in order.
                let _ = self.events.publish(services::event(t.start, t.goal));
                return Ok(t);
            } else {
                Error::TransitionUnavailable {
                    transition: request.clone(),
                    state: m.state,
                }
            }
        };
        crate::log_warn!(self.node, "{refused}");
        Err(refused)
    }

    /// Leaves the current transition state through the transition `code` chooses; returns
    /// where it led. Managed entities are switched before the new state shows.
    fn step(&self, code: CallbackReturn) -> State {
        let current = self.current_state();
        let Some(t) = current.transitions().find(|t| t.label == code.label()) else {
            // Not reached: every transition state has the three results. Never stay busy.
            lock(&self.machine).busy = false;
            return current;
        };
        self.switch_entities(t.goal == State::Active);
        let mut m = lock(&self.machine);
        m.state = t.goal;
        m.busy = !t.goal.is_primary();
        let _ = self.events.publish(services::event(t.start, t.goal));
        t.goal
    }

    async fn run_hook(&self, state: State, previous: State) -> CallbackReturn {
        let Some(hook) = Hook::of(state) else {
            return CallbackReturn::Success;
        };
        self.hooks
            .run(hook, previous, |e| {
                crate::log_error!(self.node, "{e} (taken as CallbackReturn::Error)")
            })
            .await
    }

    /// Switches every managed entity on or off (nothing if they already are).
    fn switch_entities(&self, on: bool) {
        if !self.activation.set(on) {
            return;
        }
        let timers: Vec<Timer> = {
            let mut timers = lock(&self.timers);
            timers.retain(|t| t.upgrade().is_some());
            timers
                .iter()
                .filter_map(WeakEntityHandle::upgrade)
                .collect()
        };
        for timer in timers {
            if on {
                timer.reset();
            } else {
                timer.cancel();
            }
        }
        let entities: Vec<Arc<dyn ManagedEntity>> = {
            let mut entities = lock(&self.entities);
            entities.retain(|e| e.strong_count() > 0);
            entities.iter().filter_map(Weak::upgrade).collect()
        };
        for entity in entities {
            if on {
                entity.on_activate();
            } else {
                entity.on_deactivate();
            }
        }
    }

    /// A publisher that publishes only while the node is active (see [`LifecyclePublisherState`]).
    ///
    /// ```
    /// use rclev::interfaces::std_msgs::msg::String as StringMsg;
    /// use rclev::SpinOptions;
    /// use std::time::Duration;
    ///
    /// let executor = rclev::Context::default().create_basic_executor();
    /// let node = executor.create_lifecycle_node("lc_talker")?;
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// let _listener = node.create_subscription::<StringMsg, _>("lifecycle_chatter", move |msg| {
    ///     tx.send(msg.data.clone()).unwrap();
    /// })?;
    /// let publisher = node.create_lifecycle_publisher::<StringMsg>("lifecycle_chatter")?;
    /// publisher.publish(StringMsg { data: "not active: dropped".into() })?;
    /// node.configure()?;
    /// node.activate()?;
    /// publisher.publish(StringMsg { data: "active: sent".into() })?;
    /// let errors = executor.spin(SpinOptions::spin_once().timeout(Duration::from_secs(5)));
    /// assert!(errors.is_empty());
    /// assert_eq!(rx.try_iter().collect::<Vec<_>>(), ["active: sent"]);
    /// # Ok::<(), rclev::Error>(())
    /// ```
    pub fn create_lifecycle_publisher<T: Message>(
        &self,
        options: impl IntoPrimitiveOptions,
    ) -> Result<LifecyclePublisher<T>> {
        let publisher = self.node.create_publisher::<T>(options)?;
        Ok(LifecyclePublisherState::new(
            publisher,
            self.activation.clone(),
            self.node.logger().clone(),
        ))
    }

    /// A repeating timer whose callback runs on the node's default worker only while the node is
    /// active: created cancelled unless the node is active, restarted (a period from then) on
    /// each activation, cancelled on leaving `active`. A tick already on its way when the node
    /// left `active` is dropped.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let executor = rclev::Context::default().create_basic_executor();
    /// let node = executor.create_lifecycle_node("lc_sampler")?;
    /// let timer = node.create_lifecycle_timer_repeating(Duration::from_millis(100), || {
    ///     println!("sample");
    /// })?;
    /// assert!(timer.is_canceled()); // not active yet
    /// node.configure()?;
    /// node.activate()?;
    /// assert!(!timer.is_canceled()); // restarted: the first tick a period from now
    /// node.deactivate()?;
    /// assert!(timer.is_canceled());
    /// # Ok::<(), rclev::Error>(())
    /// ```
    pub fn create_lifecycle_timer_repeating<Args>(
        &self,
        options: impl IntoTimerOptions,
        callback: impl IntoTimerCallback<Args>,
    ) -> Result<Timer> {
        let gated = self.activation.gate(callback.into_timer_callback());
        let timer = crate::timer::create_timer(
            &self.node.core,
            options,
            crate::timer::TimerKind::Repeating(gated),
        )?;
        // Registered first, then matched to the activation: a switch in between is not lost
        // (it either finds the timer, or happens before the check below).
        lock(&self.timers).push(Timer::downgrade(&timer));
        if !self.activation.is_active() {
            timer.cancel();
        }
        Ok(timer)
    }

    /// Registers `entity` to be switched with the node's managed entities (held weakly: it
    /// leaves when dropped). It is told at once if they are on now.
    pub fn add_managed_entity<E: ManagedEntity + 'static>(&self, entity: &Arc<E>) {
        let weak: Weak<dyn ManagedEntity> = Arc::downgrade(entity) as Weak<dyn ManagedEntity>;
        lock(&self.entities).push(weak);
        if self.activation.is_active() {
            entity.on_activate();
        }
    }
}

/// Registration of the six callbacks, each as a plain closure or an async one.
macro_rules! hook_setters {
    ($($hook:ident: $plain:ident, $asynchronous:ident, $what:literal;)*) => {$(
        #[doc = concat!("Sets the callback that runs ", $what, ", replacing any earlier one. It")]
        /// gets the state the transition started from and returns a [`CallbackReturn`] or a
        /// `Result` (an `Err` is an error); a panic is an error too.
        pub fn $plain<R: IntoCallbackReturn>(
            &self,
            callback: impl FnMut(State) -> R + Send + 'static,
        ) {
            self.hooks.set(Hook::$hook, callbacks::plain(callback));
        }

        #[doc = concat!("Sets an async callback that runs ", $what, ": the transition ends")]
        /// when its future does (and `~/change_state` answers then). Replaces any earlier one.
        pub fn $asynchronous<F, Fut>(&self, callback: F)
        where
            F: FnMut(State) -> Fut + Send + 'static,
            Fut: Future + Send + 'static,
            Fut::Output: IntoCallbackReturn,
        {
            self.hooks.set(Hook::$hook, callbacks::asynchronous(callback));
        }
    )*};
}

impl LifecycleNodeState {
    hook_setters! {
        Configure: on_configure, on_configure_async,
            "in `configuring` (success → inactive, failure → unconfigured)";
        Cleanup: on_cleanup, on_cleanup_async,
            "in `cleaningup` (success → unconfigured, failure → inactive)";
        Activate: on_activate, on_activate_async,
            "in `activating` (success → active, failure → inactive)";
        Deactivate: on_deactivate, on_deactivate_async,
            "in `deactivating` (success → inactive, failure → active)";
        Shutdown: on_shutdown, on_shutdown_async,
            "in `shuttingdown` (success or failure → finalized)";
        Error: on_error, on_error_async,
            "in `errorprocessing`, after another callback's error (success → unconfigured, else → finalized)";
    }
}

/// Ends a transition whose future was dropped before it finished (see
/// [`LifecycleNodeState::trigger_transition_async`]).
struct Running<'a> {
    node: &'a LifecycleNodeState,
    done: bool,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let node = self.node;
        let state = node.current_state();
        crate::log_error!(
            node.node,
            "a lifecycle transition was abandoned in state {state} before its callback finished; \
             taken as an error, and the node is finalized"
        );
        let mut at = state;
        while !at.is_primary() {
            at = node.step(CallbackReturn::Error);
        }
    }
}

impl std::ops::Deref for LifecycleNodeState {
    type Target = NodeState;
    fn deref(&self) -> &NodeState {
        &self.node
    }
}

impl AsLogger for LifecycleNodeState {
    fn as_logger(&self) -> &Logger {
        self.node.logger()
    }
}

impl Drop for LifecycleNodeState {
    fn drop(&mut self) {
        let state = lock(&self.machine).state;
        if state != State::Finalized {
            // As rclcpp_lifecycle warns: devices may be left in an unknown state.
            crate::log_warn!(
                self.node,
                "LifecycleNode is not shut down: Node still in state({}) in destructor",
                state.id()
            );
        }
    }
}

impl std::fmt::Debug for LifecycleNodeState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LifecycleNode")
            .field("name", &self.node.fully_qualified_name())
            .field("state", &self.current_state())
            .finish()
    }
}
