//! # rclev — an event-driven ROS 2 client library on Tokio
//!
//! Entities (subscriptions, services, clients, guard conditions, timers) push their readiness
//! to the worker that owns them; nothing polls. Workers are Tokio tasks with a payload and a
//! mailbox; callbacks may be plain closures or async. The in-process transport is the default
//! and moves messages as `Arc`s.
//!
//! ```
//! use rclev::{Context, SpinOptions, interfaces::std_msgs::msg::String as StringMsg};
//! use std::time::Duration;
//!
//! let executor = Context::default().create_basic_executor();
//! let node = executor.create_node("listener").unwrap();
//! let (tx, rx) = std::sync::mpsc::channel();
//! let _sub = node
//!     .create_subscription::<StringMsg, _>("chatter", move |msg| tx.send(msg.data.clone()).unwrap())
//!     .unwrap();
//! let publisher = node.create_publisher::<StringMsg>("chatter").unwrap();
//! publisher.publish(StringMsg { data: "hello".into() }).unwrap();
//! executor.spin(SpinOptions::spin_once().timeout(Duration::from_secs(5)));
//! assert_eq!(rx.recv().unwrap(), "hello");
//! ```

#![warn(missing_docs)]

// The folders are the layers (see docs/architecture.md, "Layers"): each imports only from its
// own layer and the ones before it, and no files import each other around a loop
// (tests/layers.rs checks both).
// Layer 0: plain data and primitives that import nothing else of the crate.
mod base;
// Layer 1: messages, interfaces, QoS, endpoint options (name, QoS, delivery), parameters, names.
mod endpoint;
pub mod interfaces;
pub mod msg;
mod names;
pub mod parameter;
pub mod qos;
// Layer 2: clocks, the transport seam, `--ros-args`, the process's logging setup.
pub mod arguments;
pub mod clock;
mod log_setup;
pub mod transport;
// Layer 3: the runtime core (mailboxes, dispatch, the worker loop, fences, alarms).
mod runtime;
// Layer 4: timers and their scheduler.
pub mod timer;
// Layer 5: the context and the executor.
pub mod executor;
// Layer 6: nodes and their loggers.
pub mod logging;
mod node;
// Layer 7: actions and managed (lifecycle) nodes.
pub mod action;
pub mod lifecycle;
#[cfg(all(test, rclev_loom))]
mod loom_model;

pub use base::text::printable;
pub use base::throttle;

pub use arguments::Arguments;
pub use base::error::{DeliveryError, Error, NameKind, Result};
pub use base::handle::{EntityHandle, WeakEntityHandle};
pub use clock::{Clock, ClockChange, ClockType, JumpHandle, JumpThreshold, Rate, Time, TimeJump};
pub use endpoint::{AdaptiveDeliveryState, Delivery, IntoPrimitiveOptions, PrimitiveOptions};
pub use executor::context::Context;
pub use executor::{
    ErrorHandler, Executor, ExecutorCommands, ExecutorDiagnostics, ExecutorOptions, RuntimeChoice,
    SpinOptions, VirtualTimeExecutor,
};
pub use logging::{LogCapture, LogLevel, LogRecord, LogSeverity, Logger};
pub use names::expand_topic_name;
pub use node::{
    Client, ClientState, GuardCondition, GuardConditionState, IntoNodeOptions, Node, NodeOptions,
    NodeState, Publisher, PublisherState, Service, ServiceState, Subscription, SubscriptionState,
    SubscriptionStream, Worker, WorkerState,
};
pub use parameter::{
    Parameter, ParameterBuilder, ParameterChange, ParameterDescriptor, ParameterError,
    ParameterType, ParameterValue, SetCallbackHandle, TypedParameter,
};
pub use qos::{
    Durability, History, Liveliness, QoSProfile, QosEvent, QosEventHandler, Reliability,
};
pub use timer::{
    IntoTimerCallback, IntoTimerOptions, Timer, TimerCallback, TimerInfo, TimerOptions,
    TimerPrecision, TimerState, TimerStats,
};

/// What [`diagnostic!`] expands to (the module shares the macro's name); not part of the API.
#[doc(hidden)]
pub use log_setup::diagnostic;

/// The README's examples, compiled and run as doc tests.
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
pub use action::{
    ActionClient, ActionServer, ActionServerOptions, CancelResponse, ClientGoalHandle, GoalEnd,
    GoalResponse, GoalState, ServerGoalHandle,
};

/// Includes the interface types a `build.rs` generated with `rclev_codegen::Builder`.
///
/// Expands to `include!(concat!(env!("OUT_DIR"), "/rclev_interfaces.rs"))`: one module per
/// generated package, each with `msg`, `srv` and `action` submodules. Types they reference
/// from the standard packages are [`interfaces`]' own.
///
/// ```ignore
/// rclev::include_interfaces!();
/// use my_robot_msgs::msg::Telemetry;
/// ```
#[macro_export]
macro_rules! include_interfaces {
    () => {
        include!(concat!(env!("OUT_DIR"), "/rclev_interfaces.rs"));
    };
}
