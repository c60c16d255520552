//! The `Context`: one transport domain, from which executors are created.

use std::sync::Arc;

use crate::error::Result;
use crate::executor::{Executor, ExecutorOptions};
use crate::transport::{IntraProcess, Transport};

/// A ROS 2 context: the transport (domain) that nodes created from it share. Cheap to clone.
///
/// `Context::default()` uses the in-process transport: every node of every executor created
/// from this context (or its clones) can talk to each other.
#[derive(Clone)]
pub struct Context {
    transport: Arc<dyn Transport>,
    arguments: Arc<Vec<String>>,
}

impl Default for Context {
    fn default() -> Self {
        Self::with_transport(Arc::new(IntraProcess::new()))
    }
}

impl Context {
    /// A context over the given transport.
    pub fn with_transport(transport: Arc<dyn Transport>) -> Self {
        Self {
            transport,
            arguments: Arc::new(Vec::new()),
        }
    }

    /// An in-process context with command-line arguments: `--ros-args -p name:=value` (or
    /// `-p node:name:=value`) become parameter overrides of the nodes created from it.
    ///
    /// ```
    /// use rclev::{Context, ParameterValue};
    /// let ctx = Context::from_args(["prog", "--ros-args", "-p", "rate:=50"]);
    /// let node = ctx.create_basic_executor().create_node("n").unwrap();
    /// assert_eq!(node.declare_parameter("rate", 10).unwrap(), ParameterValue::Integer(50));
    /// ```
    pub fn from_args<S: Into<String>>(args: impl IntoIterator<Item = S>) -> Self {
        Self {
            arguments: Arc::new(args.into_iter().map(Into::into).collect()),
            ..Self::default()
        }
    }

    /// [`from_args`](Self::from_args) with the process's arguments.
    pub fn from_env() -> Self {
        Self::from_args(std::env::args())
    }

    /// The command-line arguments.
    pub fn arguments(&self) -> &[String] {
        &self.arguments
    }

    /// The transport.
    pub fn transport(&self) -> &Arc<dyn Transport> {
        &self.transport
    }

    /// An executor with default options: it adopts the current Tokio runtime when created
    /// inside one, and otherwise owns a two-thread runtime.
    ///
    /// # Panics
    /// Only if the operating system refuses to create the runtime's threads; use
    /// [`create_executor`](Self::create_executor) to get that as an error instead.
    pub fn create_basic_executor(&self) -> Executor {
        self.create_executor(ExecutorOptions::default())
            .expect("the operating system refused to start the executor's threads")
    }

    /// An executor with the given options.
    pub fn create_executor(&self, options: ExecutorOptions) -> Result<Executor> {
        Executor::new(self.clone(), options)
    }
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context").finish_non_exhaustive()
    }
}
