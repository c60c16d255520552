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
}

impl Default for Context {
    fn default() -> Self {
        Self::with_transport(Arc::new(IntraProcess::new()))
    }
}

impl Context {
    /// A context over the given transport.
    pub fn with_transport(transport: Arc<dyn Transport>) -> Self {
        Self { transport }
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
