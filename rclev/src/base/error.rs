//! One crate error type, plus small per-operation errors where a failed call hands a value back.

use std::fmt;

/// What kind of ROS 2 name failed validation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameKind {
    /// A node's name (`talker`).
    Node,
    /// A node's namespace (`/robot1`).
    Namespace,
    /// A topic or service name (`chatter`, `~/status`, `/tf`).
    Topic,
}

impl fmt::Display for NameKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NameKind::Node => "node",
            NameKind::Namespace => "namespace",
            NameKind::Topic => "topic",
        })
    }
}

/// Every error rclev reports. New kinds may be added: match with a `_` arm.
///
/// Its `Debug` form is its message and the chain of its sources, as anyhow's is, so that a
/// `main` returning `Result<(), rclev::Error>` ends with a sentence, not a struct
/// (`Error: invalid argument "-p rate=5": …`); match the variants to inspect one.
#[derive(Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A node, namespace or topic name that ROS 2 naming rules reject.
    #[error("invalid {kind} name {name:?}: {reason}")]
    InvalidName {
        /// Which kind of name.
        kind: NameKind,
        /// The name as given.
        name: String,
        /// The rule it breaks.
        reason: &'static str,
    },
    /// A QoS profile that cannot be honoured (e.g. `KeepLast(0)`).
    #[error("invalid QoS: {0}")]
    InvalidQos(&'static str),
    /// A second server for a service name that already has one.
    #[error("service {0:?} already has a server")]
    ServiceAlreadyExists(String),
    /// The service has no server, or its server went away before answering (as far as the
    /// transport can tell: a remote server may also vanish silently, see [`Error::Timeout`]).
    #[error("service {0:?} is not available")]
    ServiceUnavailable(String),
    /// A wait ended before what it waited for: a service call's response, a server to
    /// appear, a graph change.
    #[error("{what} timed out after {after:?}")]
    Timeout {
        /// What was waited for.
        what: String,
        /// The timeout.
        after: std::time::Duration,
    },
    /// A [`VirtualTimeExecutor`](crate::VirtualTimeExecutor) was asked to run until a future
    /// resolves, but every worker is idle and nothing is scheduled on its timeline (no timer,
    /// no sleep): the future would wait forever.
    #[error("virtual time stalled after {elapsed:?}: the awaited future is pending, every worker is idle and no timer or sleep is scheduled")]
    VirtualTimeStalled {
        /// Virtual time elapsed since the executor was created.
        elapsed: std::time::Duration,
    },
    /// The transport failed (a wire transport's engine refused an operation, a payload held
    /// another type than its endpoint's).
    #[error("transport: {0}")]
    Transport(String),
    /// A received message could not be decoded; it was dropped, counted and reported to the
    /// executor's error handler.
    #[error("malformed message on {topic:?}: {reason}")]
    MalformedMessage {
        /// Fully qualified topic (or service) name.
        topic: String,
        /// Why it could not be decoded.
        reason: String,
    },
    /// The service's handler failed (panicked) instead of answering this request.
    #[error("service {0:?} failed to answer the request")]
    ServiceFailed(String),
    /// The Tokio runtime or a thread could not be started.
    #[error("cannot start the executor: {0}")]
    Runtime(String),
    /// A callback panicked; the entity keeps working.
    #[error("callback of {entity} panicked: {message}")]
    CallbackPanicked {
        /// Which entity's callback.
        entity: String,
        /// The panic message.
        message: String,
    },
    /// The executor was shut down.
    #[error("the executor has shut down")]
    Shutdown,
    /// `spin()` was called on the thread of the current-thread runtime that runs the workers.
    #[error("spin() would block the current-thread Tokio runtime its workers run on; use spin_async().await")]
    BlockingSpinInsideRuntime,
    /// `spin()` or `spin_async()` was called from one of the executor's own callbacks: a spin
    /// returns only once no callback runs, so it would wait for itself.
    #[error("spin() was called from a callback of the same executor; halt or shut down the executor instead, or spawn a task")]
    SpinInsideCallback,
    /// A message could not be (de)serialized.
    #[error("CDR (de)serialization failed: {0}")]
    Serialization(crate::base::cdr::CdrError),
    /// An operation the clock's type does not support.
    #[error("invalid clock: {0}")]
    InvalidClock(&'static str),
    /// A parameter operation failed.
    #[error(transparent)]
    Parameter(#[from] ParameterError),
    /// The action server rejected the goal.
    #[error("the action server rejected the goal")]
    GoalRejected,
    /// A goal state transition the action state machine does not allow.
    #[error("goal {goal}: {event:?} is not allowed in state {from:?}")]
    InvalidGoalTransition {
        /// The goal id.
        goal: String,
        /// Its state.
        from: crate::base::goal_state::GoalState,
        /// The refused event.
        event: crate::base::goal_state::GoalEvent,
    },
    /// The goal is not (or no longer) known to the server, or the server is gone.
    #[error("goal {0} is unknown")]
    GoalUnknown(String),
    /// A one-time value (e.g. a goal's result or feedback stream) was already taken.
    #[error("{0} was already taken")]
    AlreadyTaken(&'static str),
    /// A command-line argument that cannot be used, such as a malformed `--ros-args -p` rule.
    /// Like rcl, rclev refuses to create a node from such arguments rather than ignore them.
    #[error("invalid argument {argument:?}: {reason}")]
    InvalidArgument {
        /// The flag and its rule as given (only the first 200 bytes of a long rule).
        argument: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A type description rclev cannot use: it names a type it does not describe, describes
    /// one twice, has a type that contains itself, a type with no fields, an array of no
    /// elements or a type id REP-2016 does not define. Nothing was made of it.
    #[error("type {type_name}: {reason}")]
    InvalidType {
        /// The described type (escaped and shortened, as it may come from outside).
        type_name: String,
        /// What is wrong.
        reason: String,
    },
    /// A type description over one of the bounds of `rclev::msg::TypeLimits`, which rclev
    /// applies to every type from outside the program (a peer, a bag, an installed file).
    #[error("type {type_name} is over TypeLimits::{limit} ({max}): {what}")]
    TypeOverLimit {
        /// The described type (escaped and shortened, as it may come from outside).
        type_name: String,
        /// The limit's field in `TypeLimits`: `max_depth`, `max_types`, `max_fields`,
        /// `max_bytes` or `max_values`.
        limit: &'static str,
        /// The limit's value.
        max: usize,
        /// What the type has.
        what: String,
    },
    /// A timer period that cannot be scheduled (zero or negative for a repeating timer).
    #[error("invalid timer period {0:?}")]
    InvalidPeriod(std::time::Duration),
    /// A lifecycle transition that does not start at the managed node's current state (or
    /// that no transition has: an unknown id or label). Nothing happened.
    #[error("transition {transition} is not available in lifecycle state {state}")]
    TransitionUnavailable {
        /// The transition as asked for.
        transition: crate::base::lifecycle_state::TransitionRequest,
        /// The node's state.
        state: crate::base::lifecycle_state::State,
    },
    /// A lifecycle transition was asked for while another one was in progress (in the given
    /// transition state); it was not started, as rcl refuses it too.
    #[error("a lifecycle transition is in progress (state {0}); no other can start")]
    TransitionInProgress(crate::base::lifecycle_state::State),
}

/// A value that could not be delivered, handed back with the reason (like crossbeam's
/// `SendError`): a message published after shutdown is not lost to the caller.
#[derive(Clone, PartialEq, thiserror::Error)]
#[error("{error}")]
pub struct DeliveryError<T> {
    /// Why it was not delivered.
    pub error: Error,
    /// The value, as given.
    pub value: T,
}

impl<T> DeliveryError<T> {
    /// The value that was not delivered.
    pub fn into_inner(self) -> T {
        self.value
    }
}

impl<T> fmt::Debug for DeliveryError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeliveryError")
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

impl<T> From<DeliveryError<T>> for Error {
    fn from(e: DeliveryError<T>) -> Self {
        e.error
    }
}

/// `Result` with rclev's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Turns a caught panic payload into a readable message.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}

/// Writes `error`'s message, then each of its sources on a line of its own (anyhow's
/// `Debug` layout): what `main` prints when it returns the error.
fn message_and_sources(error: &dyn std::error::Error, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    write!(f, "{error}")?;
    let mut source = error.source();
    if source.is_some() {
        f.write_str("\n\nCaused by:")?;
    }
    let mut n = 0;
    while let Some(s) = source {
        write!(f, "\n    {n}: {s}")?;
        source = s.source();
        n += 1;
    }
    Ok(())
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        message_and_sources(self, f)
    }
}

impl fmt::Debug for ParameterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        message_and_sources(self, f)
    }
}

/// Why a parameter operation failed. Its `Debug` form is its message, as [`Error`]'s is.
#[derive(Clone, PartialEq, thiserror::Error)]
pub enum ParameterError {
    /// `declare_parameter` for a name that is already declared.
    #[error("parameter {0:?} is already declared")]
    AlreadyDeclared(String),
    /// `set_parameter` for a name never declared.
    #[error("parameter {0:?} is not declared")]
    NotDeclared(String),
    /// The parameter is read-only.
    #[error("parameter {0:?} is read-only")]
    ReadOnly(String),
    /// The value has another type than the declared one.
    #[error("parameter {name:?} is {expected}, not {got}")]
    WrongType {
        /// The parameter.
        name: String,
        /// Its declared type.
        expected: &'static str,
        /// The type given.
        got: &'static str,
    },
    /// The value is outside the descriptor's range.
    #[error("parameter {name:?}: {reason}")]
    OutOfRange {
        /// The parameter.
        name: String,
        /// Which bound it breaks.
        reason: String,
    },
    /// A set-callback rejected the change.
    #[error("parameter change rejected: {0}")]
    Rejected(String),
    /// The parameter was undeclared and declared again while a set of it was in its
    /// set-callbacks: the set was checked against the earlier declaration, so nothing was set.
    #[error(
        "parameter {0:?} was declared again while the change was being checked; nothing was set"
    )]
    Redeclared(String),
    /// A set-callback tried to set parameters of its own node: that would change what it is
    /// judging (rclcpp refuses it too, with `ParameterModifiedInCallbackException`).
    #[error("parameters cannot be set from a set-callback of the same node")]
    SetInSetCallback,
    /// Undeclaring a parameter that is not dynamically typed (rclcpp refuses it too: its
    /// type is part of the node's interface).
    #[error("parameter {0:?} is statically typed and cannot be undeclared")]
    StaticallyTyped(String),
    /// An override given for the parameter cannot be used with its declaration.
    #[error("override for {name:?} is invalid: {reason}")]
    InvalidOverride {
        /// The parameter.
        name: String,
        /// Why.
        reason: String,
    },
    /// The descriptor given at declaration cannot be used: a negative integer step
    /// (`IntegerRange.step` is unsigned), NaN in a floating-point range, or `from > to`.
    #[error("descriptor of {name:?} is invalid: {reason}")]
    InvalidDescriptor {
        /// The parameter.
        name: String,
        /// Why.
        reason: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The defect: `main` returning an rclev error printed `Error: InvalidArgument {
    /// argument: "-p rate=5", reason: "…" }` and `Error: Parameter(InvalidOverride { … })`.
    #[test]
    fn debug_reads_as_the_message() {
        let e = Error::InvalidArgument {
            argument: "-p rate=5".into(),
            reason: "expected name:=value".into(),
        };
        assert_eq!(
            format!("{e:?}"),
            "invalid argument \"-p rate=5\": expected name:=value"
        );
        let p = Error::Parameter(ParameterError::InvalidOverride {
            name: "rate".into(),
            reason: "not an integer".into(),
        });
        assert_eq!(
            format!("{p:?}"),
            "override for \"rate\" is invalid: not an integer"
        );
        assert_eq!(
            format!("{:?}", ParameterError::ReadOnly("x".into())),
            "parameter \"x\" is read-only"
        );
    }
}
