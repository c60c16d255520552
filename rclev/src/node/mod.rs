//! Nodes and the entities they create.

use std::sync::{Arc, Mutex, Weak};

// Crate-visible: callbacks belong to the executor-core layer, which timers use (tests/layers.rs).
mod creation;
pub(crate) mod entity;
pub(crate) mod events;
pub(crate) mod graph;
mod guard;
mod identity;
mod logger_services;
mod options;
mod parameter_services;
pub(crate) mod pubsub;
pub(crate) mod service;
mod type_description;
mod worker;
mod worker_core;

pub use guard::{GuardCondition, GuardConditionState};
pub use options::{IntoNodeOptions, NodeOptions};
pub use pubsub::{Publisher, PublisherState, Subscription, SubscriptionState, SubscriptionStream};
pub use service::{Client, ClientState, Service, ServiceState};
pub use worker::{Worker, WorkerState};

pub(crate) use crate::runtime::callback::Callback;
pub(crate) use identity::NodeIdentity;
pub(crate) use worker_core::WorkerCore;

use crate::arguments::remap;
use crate::arguments::Arguments;
use crate::base::error::Result;
use crate::base::sync::lock;
use crate::clock::{Clock, ClockType, Rate, RosTimeSource};
use crate::endpoint::IntoPrimitiveOptions;
use crate::executor::ExecutorShared;
use crate::logging::Logger;
use crate::parameter::{
    Parameter, ParameterDescriptor, ParameterValue, Parameters, SetCallbackHandle,
    SetParametersResult,
};
use crate::qos::QoSProfile;
use crate::runtime::adaptive::HazardNotingPort;
use crate::timer::IntoTimerCallback;

/// A ROS 2 node. Entities created through it run on its default worker; a
/// [`Worker`] created through it has the same `create_*` methods, with callbacks that get the
/// worker's payload.
///
/// Timer callbacks are `FnMut()` or `FnMut(TimerInfo)`:
///
/// ```
/// use rclev::{Context, SpinOptions};
/// use std::sync::{Arc, atomic::{AtomicU32, Ordering}};
/// use std::time::Duration;
///
/// let executor = Context::default().create_basic_executor();
/// let node = executor.create_node("ticker").unwrap();
/// let ticks = Arc::new(AtomicU32::new(0));
/// let t = ticks.clone();
/// let _timer = node
///     .create_timer_repeating(Duration::from_millis(5), move || { t.fetch_add(1, Ordering::Relaxed); })
///     .unwrap();
/// executor.spin(SpinOptions::default().timeout(Duration::from_millis(100)));
/// assert!(ticks.load(Ordering::Relaxed) >= 5);
/// ```
pub struct NodeState {
    identity: Arc<NodeIdentity>,
    pub(crate) core: Arc<WorkerCore>,
    parameters: Arc<Parameters>,
    logger: Logger,
    /// The `/clock` subscription while `use_sim_time` is on.
    clock_subscription: Mutex<Option<Subscription<crate::interfaces::rosgraph_msgs::msg::Clock>>>,
    /// `~/get_parameters` & co., unless turned off in the node's options.
    parameter_services: std::sync::OnceLock<parameter_services::ParameterServices>,
    /// `~/get_logger_levels` and `~/set_logger_levels`, if `enable_logger_service`.
    logger_services: std::sync::OnceLock<logger_services::LoggerServices>,
    /// `/parameter_events`' publisher (the store's observer holds it weakly), unless turned off.
    _parameter_events: Option<Publisher<crate::interfaces::rcl_interfaces::msg::ParameterEvent>>,
    /// `~/get_type_description`, unless `start_type_description_service` is false.
    type_description_service: std::sync::OnceLock<
        Service<crate::interfaces::type_description_interfaces::srv::GetTypeDescription>,
    >,
}

/// A shared handle to a node.
pub type Node = Arc<NodeState>;

impl NodeState {
    pub(crate) fn create(exec: &Arc<ExecutorShared>, options: NodeOptions) -> Result<Node> {
        crate::names::validate_node_name(&options.name)?;
        crate::names::normalize_namespace(&options.namespace)?;
        exec.check_running()?;
        // Before anything is started: malformed node arguments fail the creation, as in rcl.
        let local = Arguments::parse(&options.arguments)?;
        let global = options
            .use_global_arguments
            .then(|| exec.context().arguments().clone());
        let remap_rules: Vec<_> = local
            .remap_rules()
            .iter()
            .chain(global.iter().flat_map(|g| g.remap_rules()))
            .cloned()
            .collect();
        // As rcl: the name first (rules for the name as created), then the namespace (rules for
        // the name as renamed).
        let name = remap::node_name(&remap_rules, &options.name).unwrap_or(options.name.clone());
        let namespace = crate::names::normalize_namespace(
            &remap::namespace(&remap_rules, &name).unwrap_or(options.namespace.clone()),
        )?;
        let fqn = if namespace == "/" {
            format!("/{name}")
        } else {
            format!("{namespace}/{name}")
        };
        let mut overrides = global
            .as_ref()
            .map(|g| g.parameter_overrides_for(&fqn))
            .unwrap_or_default();
        overrides.extend(local.parameter_overrides_for(&fqn));
        overrides.extend(options.parameter_overrides);
        let enable_rosout = options.enable_rosout
            && local.rosout_logs()
            && global.as_ref().is_none_or(|g| g.rosout_logs());
        let sim_sink: std::sync::Weak<dyn crate::clock::SimTimeSink> =
            Arc::downgrade(&exec.timers().core) as _;
        // Under a virtual-time executor every node's clocks read its one virtual timeline.
        let source = match exec.virtual_time() {
            Some(timeline) => timeline.clone(),
            None => Arc::new(RosTimeSource::new(Some(sim_sink))),
        };
        let weak_exec = Arc::downgrade(exec);
        source.set_reporter(Box::new(move |e| match weak_exec.upgrade() {
            Some(exec) => exec.report(e),
            None => crate::diagnostic!(ERROR, target: "rclev", "{e}"),
        }));
        exec.life().watch(&source);
        let port = exec
            .context()
            .transport()
            .create_node(&crate::transport::NodeName {
                name: name.clone(),
                namespace: namespace.clone(),
            })?;
        let identity = Arc::new(NodeIdentity {
            port: Arc::new(HazardNotingPort(port)),
            clock: match exec.virtual_time() {
                Some(_) => Clock::virtual_of(source, ClockType::RosTime, exec.life().clone()),
                None => Clock::from_source(source, exec.life().clone()),
            },
            life: exec.life().clone(),
            name,
            namespace,
            types: identity::TypeCache::default(),
            remap_rules,
        });
        let core = WorkerCore::spawn(exec, identity.clone(), Box::new(()))?;
        let rosout = if enable_rosout {
            Some(PublisherState::create(
                &core,
                "/rosout".qos(QoSProfile::rosout()),
            )?)
        } else {
            None
        };
        let logger_name = if identity.namespace == "/" {
            identity.name.clone()
        } else {
            format!(
                "{}.{}",
                identity.namespace[1..].replace('/', "."),
                identity.name
            )
        };
        let parameters = Arc::new(Parameters::with_overrides(overrides));
        let parameter_events = if options.start_parameter_event_publisher {
            let events = PublisherState::create(
                &core,
                "/parameter_events".qos(QoSProfile::parameter_events()),
            )?;
            parameter_services::publish_events(
                &parameters,
                &events,
                identity.fully_qualified_name(),
                identity.clock.clone(),
            );
            Some(events)
        } else {
            None
        };
        let node = Arc::new(Self {
            logger: Logger::new(logger_name, identity.clock.clone(), rosout),
            identity,
            core,
            parameters,
            clock_subscription: Mutex::new(None),
            parameter_services: std::sync::OnceLock::new(),
            logger_services: std::sync::OnceLock::new(),
            type_description_service: std::sync::OnceLock::new(),
            _parameter_events: parameter_events,
        });
        if options.start_parameter_services {
            let services = parameter_services::ParameterServices::start(&node)?;
            let _ = node.parameter_services.set(services);
        }
        if options.enable_logger_service {
            let services = logger_services::LoggerServices::start(&node)?;
            let _ = node.logger_services.set(services);
        }
        let use_sim_time = node.parameters.declare(
            "use_sim_time",
            false,
            ParameterDescriptor {
                description: "Follow /clock instead of the system clock for ROS time".into(),
                ..ParameterDescriptor::default()
            },
        )?;
        let source = node.identity.clock.source().cloned();
        node.parameters.add_guard(move |changes| {
            let switching = changes.iter().any(|p| p.name == "use_sim_time");
            match &source {
                Some(s) if switching && s.changing_here() => Err(
                    "use_sim_time cannot be switched from a jump callback of the node's own clock"
                        .into(),
                ),
                _ => Ok(()),
            }
        });
        let weak: Weak<NodeState> = Arc::downgrade(&node);
        node.parameters.on_change("use_sim_time", move |p| {
            if let (Some(node), ParameterValue::Bool(on)) = (weak.upgrade(), &p.value) {
                node.apply_use_sim_time(*on);
            }
        });
        if use_sim_time == ParameterValue::Bool(true) {
            node.apply_use_sim_time(true);
        }
        // As in rcl (Jazzy): a read-only parameter, given `false` as an override to turn the
        // service off.
        let start_type_description = node.parameters.declare(
            "start_type_description_service",
            true,
            ParameterDescriptor {
                description: "Offer ~/get_type_description".into(),
                ..ParameterDescriptor::read_only()
            },
        )?;
        if start_type_description == ParameterValue::Bool(true) {
            let service = type_description::start(&node)?;
            let _ = node.type_description_service.set(service);
        }
        Ok(node)
    }

    fn apply_use_sim_time(&self, on: bool) {
        if self.identity.clock.virtual_source().is_some() {
            // A virtual-time executor's test drives every clock; `/clock` is not listened to.
            tracing::debug!(target: "rclev", "use_sim_time ignored under virtual time");
            return;
        }
        let Some(source) = self.identity.clock.source().cloned() else {
            return;
        };
        let mut sub = lock(&self.clock_subscription);
        if on && sub.is_none() {
            let s = source.clone();
            let created = pubsub::create_subscription(
                &self.core,
                "/clock".qos(QoSProfile::clock()),
                pubsub::SubscriptionCallback::Message(Callback::plain(
                    move |m: Arc<crate::interfaces::rosgraph_msgs::msg::Clock>| {
                        s.set_sim_time(m.clock.as_nanos())
                    },
                )),
            );
            match created {
                Ok(created) => *sub = Some(created),
                Err(e) => {
                    crate::diagnostic!(ERROR, target: "rclev", "cannot subscribe to /clock: {e}");
                    return;
                }
            }
        }
        if !on {
            *sub = None;
        }
        drop(sub);
        source.set_sim_active(on);
    }

    /// The node's ROS-time clock: system time, or `/clock` while `use_sim_time` is true.
    pub fn get_clock(&self) -> Clock {
        self.identity.clock.clone()
    }

    /// A clock of the given type bound to this node's executor (its sleeps end on shutdown).
    pub fn clock_of(&self, clock_type: ClockType) -> Clock {
        self.identity.clock_of(clock_type)
    }

    /// A [`Rate`] on the node's ROS-time clock (so under `use_sim_time` it runs on `/clock`).
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> rclev::Result<()> {
    /// let executor = rclev::Context::default().create_basic_executor();
    /// let node = executor.create_node("poller")?;
    /// let mut rate = node.create_rate(Duration::from_millis(2));
    /// for _ in 0..3 {
    ///     // … one iteration of the loop …
    ///     // `false`: the sleep was cut short (executor shut down, simulation time switched).
    ///     assert!(rate.sleep().await);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn create_rate(&self, period: std::time::Duration) -> Rate {
        Rate::new(self.get_clock(), period)
    }

    /// The node's logger (see [`logging`](crate::logging)).
    pub fn logger(&self) -> &Logger {
        &self.logger
    }

    /// The node's parameters.
    pub fn parameters(&self) -> &Parameters {
        &self.parameters
    }

    /// Declares a parameter with a default (an override replaces it) and returns the value in
    /// effect.
    pub fn declare_parameter(
        &self,
        name: &str,
        default: impl Into<ParameterValue>,
    ) -> Result<ParameterValue> {
        Ok(self
            .parameters
            .declare(name, default, ParameterDescriptor::default())?)
    }

    /// Declares a parameter of Rust type `T` through a builder, and returns a typed handle:
    ///
    /// ```
    /// let executor = rclev::Context::default().create_basic_executor();
    /// let node = executor.create_node("robot").unwrap();
    /// let gain = node
    ///     .declare_typed_parameter::<f64>("gain")
    ///     .default(0.5)
    ///     .range(0.0, 1.0, 0.0)
    ///     .description("loop gain")
    ///     .declare()
    ///     .unwrap();
    /// assert_eq!(gain.get(), 0.5);
    /// gain.set(0.75).unwrap();
    /// assert!(gain.set(2.0).is_err());
    /// ```
    pub fn declare_typed_parameter<T: crate::parameter::ParameterType>(
        &self,
        name: &str,
    ) -> crate::parameter::ParameterBuilder<T> {
        crate::parameter::ParameterBuilder::new(self.parameters.clone(), name)
    }

    /// Declares a parameter with a descriptor (read-only, ranges, dynamic typing).
    pub fn declare_parameter_with(
        &self,
        name: &str,
        default: impl Into<ParameterValue>,
        descriptor: ParameterDescriptor,
    ) -> Result<ParameterValue> {
        Ok(self.parameters.declare(name, default, descriptor)?)
    }

    /// A declared parameter's value.
    pub fn get_parameter(&self, name: &str) -> Option<ParameterValue> {
        self.parameters.get(name)
    }

    /// Sets a declared parameter, subject to its descriptor and the set-callbacks.
    pub fn set_parameter(&self, name: &str, value: impl Into<ParameterValue>) -> Result<()> {
        Ok(self.parameters.set(name, value)?)
    }

    /// Sets several parameters atomically.
    pub fn set_parameters(&self, changes: &[Parameter]) -> Result<()> {
        Ok(self.parameters.set_all(changes)?)
    }

    /// Registers a callback that may reject parameter changes with a reason.
    pub fn add_on_set_parameters_callback(
        &self,
        callback: impl Fn(&[Parameter]) -> SetParametersResult + Send + Sync + 'static,
    ) -> SetCallbackHandle {
        self.parameters.add_on_set_callback(callback)
    }

    /// The node's name.
    pub fn name(&self) -> &str {
        &self.identity.name
    }

    /// The node's namespace.
    pub fn namespace(&self) -> &str {
        &self.identity.namespace
    }

    /// `namespace/name`.
    pub fn fully_qualified_name(&self) -> String {
        self.identity.fully_qualified_name()
    }

    /// A topic (or action) name as this node uses it: expanded (`~/x` → `/ns/node/x`), then
    /// remapped by the node's and the context's rules.
    pub fn resolve_topic_name(&self, name: &str) -> Result<String> {
        self.identity.expand(name)
    }

    /// A service name as this node uses it: expanded, then remapped.
    pub fn resolve_service_name(&self, name: &str) -> Result<String> {
        self.identity.expand_service(name)
    }

    creation::entity_creation_methods! {
        bound: [],
        param: [],
        arg: [],
        wrap: plain,
        timer: [Args] impl IntoTimerCallback<Args> => |callback| callback.into_timer_callback(),
        runs: "on the node's default worker",
        examples: node,
    }

    /// A new worker with `payload`, for callbacks that share mutable state. Fails only if
    /// the worker's thread cannot be started.
    ///
    /// The callbacks of one worker run one at a time, each with `&mut` the payload, and in
    /// parallel with other workers' (see [`WorkerState`] for one that is read back):
    ///
    /// ```
    /// use rclev::interfaces::std_msgs::msg::String as StringMsg;
    /// use rclev::TimerInfo;
    /// use std::time::Duration;
    ///
    /// let executor = rclev::Context::default().create_basic_executor();
    /// let node = executor.create_node("logger")?;
    /// let worker = node.create_worker(Vec::<String>::new())?;
    /// let _chatter = worker.create_subscription::<StringMsg, _>("chatter", |lines: &mut Vec<String>, msg| {
    ///     lines.push(msg.data.clone());
    /// })?;
    /// // Another callback of the same worker: never at the same time as the one above.
    /// let _flush = worker.create_timer_repeating(Duration::from_secs(1), |lines: &mut Vec<String>, _: TimerInfo| {
    ///     for line in lines.drain(..) {
    ///         println!("{line}");
    ///     }
    /// })?;
    /// assert!(std::sync::Arc::ptr_eq(worker.node(), &node));
    /// # Ok::<(), rclev::Error>(())
    /// ```
    pub fn create_worker<P: Send + 'static>(self: &Arc<Self>, payload: P) -> Result<Worker<P>> {
        WorkerState::create(self, payload)
    }
}

/// Node creation belongs to the node layer; the method sits on the `Executor` a layer above,
/// as users expect it there.
impl crate::executor::Executor {
    /// Creates a node. Accepts a name (`"talker"`) or [`NodeOptions`]. The context's ROS
    /// arguments apply to it (remapping, `-p` parameter values), then the options' own.
    ///
    /// ```
    /// use rclev::{NodeOptions, ParameterValue};
    ///
    /// let executor = rclev::Context::default().create_basic_executor();
    /// let talker = executor.create_node("talker")?;
    /// assert_eq!(talker.fully_qualified_name(), "/talker");
    /// let camera = executor.create_node(
    ///     NodeOptions::new("camera").namespace("/robot1").parameter_override("fps", 30),
    /// )?;
    /// assert_eq!(camera.fully_qualified_name(), "/robot1/camera");
    /// assert_eq!(camera.declare_parameter("fps", 10)?, ParameterValue::Integer(30));
    /// assert!(matches!(executor.create_node("no spaces"), Err(rclev::Error::InvalidName { .. })));
    /// # Ok::<(), rclev::Error>(())
    /// ```
    pub fn create_node(&self, options: impl IntoNodeOptions) -> Result<Node> {
        NodeState::create(self.shared(), options.into_node_options())
    }
}

impl crate::logging::AsLogger for NodeState {
    fn as_logger(&self) -> &Logger {
        self.logger()
    }
}

impl std::fmt::Debug for NodeState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("name", &self.fully_qualified_name())
            .finish()
    }
}
