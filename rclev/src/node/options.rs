//! How a node is created: [`NodeOptions`] and what converts into them.

use std::collections::BTreeMap;

use crate::parameter::ParameterValue;

/// How a node is created: its name and namespace.
///
/// ```
/// use rclev::NodeOptions;
/// let opts = NodeOptions::new("camera").namespace("/robot1");
/// # let _ = opts;
/// ```
#[derive(Debug, Clone)]
pub struct NodeOptions {
    /// The node name.
    pub name: String,
    /// The namespace (`/` by default; a relative one is made absolute).
    pub namespace: String,
    /// Parameter values that replace the defaults given at declaration. They win over
    /// `--ros-args -p` arguments of the context.
    pub parameter_overrides: BTreeMap<String, ParameterValue>,
    /// Publish every log record on `/rosout` (default `true`).
    pub enable_rosout: bool,
    /// Offer the six parameter services (`~/get_parameters` …; default `true`, as in rclcpp
    /// and rclpy): what `ros2 param` talks to.
    pub start_parameter_services: bool,
    /// Publish every parameter declaration, change and undeclaration on `/parameter_events`
    /// (default `true`).
    pub start_parameter_event_publisher: bool,
    /// ROS arguments of this node alone (`["--ros-args", "-r", "a:=b", …]`), as rclcpp's
    /// `NodeOptions::arguments` and rclpy's `cli_args`: its remapping rules apply before the
    /// context's, its parameter values after them. Parsed when the node is created.
    pub arguments: Vec<String>,
    /// Whether the context's arguments apply to this node too (default `true`).
    pub use_global_arguments: bool,
    /// Offer `~/get_logger_levels` and `~/set_logger_levels` (default `false`, as in rclcpp
    /// and rclpy): what `ros2 service call` or a tool sets logger levels at run time with.
    pub enable_logger_service: bool,
}

impl NodeOptions {
    /// Options for a node called `name` in the root namespace.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            namespace: "/".into(),
            parameter_overrides: BTreeMap::new(),
            enable_rosout: true,
            start_parameter_services: true,
            start_parameter_event_publisher: true,
            arguments: Vec::new(),
            use_global_arguments: true,
            enable_logger_service: false,
        }
    }
    /// Sets the namespace.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = namespace.into();
        self
    }
    /// Overrides a parameter's default.
    pub fn parameter_override(
        mut self,
        name: impl Into<String>,
        value: impl Into<ParameterValue>,
    ) -> Self {
        self.parameter_overrides.insert(name.into(), value.into());
        self
    }
    /// Turns `/rosout` publishing on or off.
    pub fn enable_rosout(mut self, enable: bool) -> Self {
        self.enable_rosout = enable;
        self
    }
    /// Turns the parameter services on or off.
    pub fn start_parameter_services(mut self, start: bool) -> Self {
        self.start_parameter_services = start;
        self
    }
    /// Sets this node's own ROS arguments (see [`NodeOptions::arguments`](#structfield.arguments)).
    pub fn arguments<S: Into<String>>(mut self, args: impl IntoIterator<Item = S>) -> Self {
        self.arguments = args.into_iter().map(Into::into).collect();
        self
    }
    /// Whether the context's arguments apply to this node too.
    pub fn use_global_arguments(mut self, use_them: bool) -> Self {
        self.use_global_arguments = use_them;
        self
    }
    /// Turns the logger level services on or off.
    pub fn enable_logger_service(mut self, enable: bool) -> Self {
        self.enable_logger_service = enable;
        self
    }
    /// Turns `/parameter_events` publishing on or off.
    pub fn start_parameter_event_publisher(mut self, start: bool) -> Self {
        self.start_parameter_event_publisher = start;
        self
    }
}

/// Conversion into [`NodeOptions`].
pub trait IntoNodeOptions {
    /// Converts.
    fn into_node_options(self) -> NodeOptions;
}
impl IntoNodeOptions for NodeOptions {
    fn into_node_options(self) -> NodeOptions {
        self
    }
}
impl IntoNodeOptions for &str {
    fn into_node_options(self) -> NodeOptions {
        NodeOptions::new(self)
    }
}
impl IntoNodeOptions for String {
    fn into_node_options(self) -> NodeOptions {
        NodeOptions::new(self)
    }
}
