//! The `Context`: one transport domain, from which executors are created (the `create_*`
//! methods are the executor's, in `executor/mod.rs`: a context knows nothing of executors).

use std::sync::Arc;

use crate::arguments::Arguments;
use crate::base::error::Result;
use crate::transport::{IntraProcess, Transport};

/// A ROS 2 context: the transport (domain) that nodes created from it share, and the ROS
/// arguments (`--ros-args …`) they are created with. Cheap to clone.
///
/// One way builds every context: [`Context::new`]`(transport, arguments)`. The in-process
/// transport has shorthands ([`from_args`](Self::from_args), [`from_env`](Self::from_env),
/// `default()`); a wire transport has its own (`rclev_dds::DdsTransport::context()` takes the
/// process's arguments). `Context::default()` takes no arguments: a program that is started
/// with `--ros-args` (by a launch file) should use [`from_env`](Self::from_env) or its
/// transport's equivalent, and `default()` warns once when the process has `--ros-args` it
/// ignores.
///
/// ```
/// use rclev::interfaces::std_msgs::msg::String as StringMsg;
/// use rclev::Context;
///
/// // A program's own arguments: here given, usually `Context::from_env()?` (in process) or
/// // `rclev_dds::DdsTransport::context()?` (over DDS).
/// let context = Context::from_args(["driver", "--ros-args", "-r", "__ns:=/robot"])?;
/// assert_eq!(context.arguments().non_ros_arguments(), ["driver"]);
/// // Executors of one context share its transport: their nodes hear each other.
/// let (one, two) = (context.create_basic_executor(), context.create_basic_executor());
/// let talker = one.create_node("talker")?;
/// let listener = two.create_node("listener")?;
/// assert_eq!(listener.fully_qualified_name(), "/robot/listener");
/// let chatter = listener.create_subscription_stream::<StringMsg>("chatter")?;
/// talker.create_publisher::<StringMsg>("chatter")?.publish(StringMsg { data: "hi".into() })?;
/// assert_eq!(chatter.try_recv().unwrap().0.data, "hi");
/// # Ok::<(), rclev::Error>(())
/// ```
#[derive(Clone)]
pub struct Context {
    transport: Arc<dyn Transport>,
    arguments: Arguments,
}

impl Default for Context {
    fn default() -> Self {
        static WARNED: std::sync::Once = std::sync::Once::new();
        if std::env::args_os().any(|a| a == "--ros-args") {
            WARNED.call_once(|| {
                crate::diagnostic!(WARN,
                    target: "rclev",
                    "Context::default() ignores the process's --ros-args; use \
                     Context::from_env() (or the transport's context()) to apply them"
                )
            });
        }
        Self::with_transport(Arc::new(IntraProcess::new()))
    }
}

impl Context {
    /// A context over `transport` whose nodes take `arguments`: remapping rules, parameter
    /// overrides and `--disable-rosout-logs` apply to every node created from it, and its
    /// `--log-level` and `--disable-stdout-logs` settings are applied (process-wide, as rcl
    /// applies them) now.
    pub fn new(transport: Arc<dyn Transport>, arguments: Arguments) -> Self {
        for (logger, level) in arguments.log_levels() {
            crate::log_setup::levels::set_logger_level(logger.as_deref().unwrap_or(""), *level);
        }
        if !arguments.stdout_logs() {
            crate::log_setup::console::set_stdout_logs(false);
        }
        // rcl's log file: asked for explicitly, it is not silently left out.
        if arguments.log_file_name().is_some() || arguments.external_lib_logs() == Some(true) {
            crate::diagnostic!(WARN,
                target: "rclev",
                "--log-file-name / --enable-external-lib-logs: rclev writes no log file (rcl's \
                 file logging); records go to the console, /rosout and `tracing`: install a \
                 tracing subscriber that writes files (e.g. tracing-appender) to keep them"
            );
        }
        Self {
            transport,
            arguments,
        }
    }

    /// A context over the given transport, without arguments.
    pub fn with_transport(transport: Arc<dyn Transport>) -> Self {
        Self::new(transport, Arguments::default())
    }

    /// An in-process context with command-line arguments (see [`Arguments`] for what is
    /// read); malformed or unknown ROS arguments are an [`Error::InvalidArgument`](crate::Error::InvalidArgument).
    ///
    /// ```
    /// use rclev::{Context, ParameterValue};
    /// let ctx = Context::from_args(["prog", "--ros-args", "-p", "rate:=50", "-r", "__ns:=/robot"]).unwrap();
    /// let node = ctx.create_basic_executor().create_node("n").unwrap();
    /// assert_eq!(node.declare_parameter("rate", 10).unwrap(), ParameterValue::Integer(50));
    /// assert_eq!(node.fully_qualified_name(), "/robot/n");
    /// ```
    pub fn from_args<S: AsRef<str>>(args: impl IntoIterator<Item = S>) -> Result<Self> {
        Ok(Self::new(
            Arc::new(IntraProcess::new()),
            Arguments::parse(args)?,
        ))
    }

    /// An in-process context with the process's arguments ([`Arguments::from_env`]): what a
    /// program started by `ros2 run` or a launch file uses, so that its `--ros-args` (`-r`,
    /// `-p use_sim_time:=true`, `--log-level` …) apply. Malformed or unknown ROS arguments are
    /// an [`Error::InvalidArgument`](crate::Error::InvalidArgument).
    pub fn from_env() -> Result<Self> {
        Ok(Self::new(
            Arc::new(IntraProcess::new()),
            Arguments::from_env()?,
        ))
    }

    /// The ROS arguments the context's nodes are created with.
    pub fn arguments(&self) -> &Arguments {
        &self.arguments
    }

    /// The transport.
    pub fn transport(&self) -> &Arc<dyn Transport> {
        &self.transport
    }
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context").finish_non_exhaustive()
    }
}
