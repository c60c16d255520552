//! The process's ROS arguments: `--ros-args … [--]`, read as rcl reads them
//! (`rcl_parse_arguments`), so that a launch file can start an rclev program as it starts any
//! ROS 2 node.
//!
//! ```
//! use rclev::arguments::Arguments;
//! let args = Arguments::parse([
//!     "prog", "--ros-args", "-r", "__node:=left", "-r", "image:=image_raw",
//!     "-p", "rate:=30", "--log-level", "debug", "--", "--my-flag",
//! ]).unwrap();
//! assert_eq!(args.non_ros_arguments(), ["prog", "--my-flag"]);
//! ```
//!
//! What is read, with rcl's meaning:
//! - `-r`/`--remap [node:]from:=to`, `__node:=`/`__name:=`, `__ns:=` (`arguments/remap.rs`
//!   says how rules apply);
//! - `-p`/`--param [node:]name:=value` (a YAML value, typed as rcl types it) and
//!   `--params-file file.yaml` (rcl's format: `/**:`, `node:`, `/ns/node:`, `ns/*:` keys with
//!   `ros__parameters`), in one store in the order given: for a node, every key that matches
//!   its fully qualified name contributes, in the order the keys first appeared, a later value
//!   replacing an earlier one (as rclpy and rclcpp combine them);
//! - `--log-level [logger:=]level` (`debug`, `info`, `warn`, `error`, `fatal`, `unset`, any
//!   case): the default level, or one logger's;
//! - `-e`/`--enclave /name`: the security enclave a DDS participant announces (rclev has no
//!   DDS security: with `ROS_SECURITY_ENABLE=true` the DDS transport refuses to start);
//! - `--enable-`/`--disable-rosout-logs` (whether nodes publish on `/rosout`),
//!   `--enable-`/`--disable-stdout-logs` (whether records are printed on the console),
//!   `--enable-`/`--disable-external-lib-logs` and `--log-file-name prefix` (rcl's log file:
//!   rclev writes none: `--disable-external-lib-logs` is accepted as is, and asking for a file
//!   with the other two is accepted with a warning saying so).
//!
//! Refused, with [`Error::InvalidArgument`]: any other argument inside `--ros-args` (rclpy
//! and rclcpp refuse them as unknown ROS arguments), a flag without its value, a malformed
//! rule or value, an unreadable or malformed params file, and `--log-config-file` (rcl's
//! default logging backend refuses external configuration too). Outside `--ros-args`, a
//! bare `from:=to` is still a remapping rule, as in rcl (deprecated, with a warning); every
//! other argument is the program's own.

pub(crate) mod remap;

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::base::error::{Error, Result};
use crate::log_setup::levels::LogLevel;
use crate::parameter::ParameterValue;
use remap::RemapRule;

/// Longest argument text an error repeats; the rest is elided so that a huge argument does not
/// make a huge error message.
const MAX_ARGUMENT_IN_ERROR: usize = 200;

pub(crate) fn invalid_argument(flag: &str, value: &str, reason: impl Into<String>) -> Error {
    let mut end = value.len().min(MAX_ARGUMENT_IN_ERROR);
    while !value.is_char_boundary(end) {
        end -= 1;
    }
    let ellipsis = if end < value.len() { "…" } else { "" };
    let argument = if flag.is_empty() {
        format!("{}{ellipsis}", &value[..end])
    } else {
        format!("{flag} {}{ellipsis}", &value[..end])
    };
    Error::InvalidArgument {
        argument,
        reason: reason.into(),
    }
}

/// Parameter values by node key, in the order keys first appeared; a key's values in the
/// order names first appeared, a later value replacing an earlier one. Indexed, so that
/// reading many values stays linear.
#[derive(Debug, Default)]
struct NodeParameters {
    nodes: Vec<NodeValues>,
    index: std::collections::HashMap<String, usize>,
}

#[derive(Debug, Default)]
struct NodeValues {
    key: String,
    values: Vec<(String, ParameterValue)>,
    index: std::collections::HashMap<String, usize>,
}

impl NodeParameters {
    fn set(&mut self, node: String, name: String, value: ParameterValue) {
        let n = match self.index.get(&node) {
            Some(&n) => n,
            None => {
                self.index.insert(node.clone(), self.nodes.len());
                self.nodes.push(NodeValues {
                    key: node,
                    ..NodeValues::default()
                });
                self.nodes.len() - 1
            }
        };
        let node = &mut self.nodes[n];
        match node.index.get(&name) {
            Some(&i) => node.values[i].1 = value,
            None => {
                node.index.insert(name.clone(), node.values.len());
                node.values.push((name, value));
            }
        }
    }
}

/// Parsed ROS arguments (see the [module docs](self)). Cheap to clone.
///
/// A context takes them for its nodes: [`Context::new`](crate::Context::new)`(transport,
/// arguments)`, or the shorthands that parse the process's own (`Context::from_env()`,
/// `rclev_dds::DdsTransport::context()`).
///
/// ```
/// use rclev::transport::IntraProcess;
/// use rclev::{Arguments, Context, ParameterValue};
/// use std::sync::Arc;
///
/// let arguments = Arguments::parse([
///     "talker", "--ros-args", "-r", "chatter:=news", "-p", "talker:rate:=5.0", "--", "--verbose",
/// ])?;
/// assert_eq!(arguments.non_ros_arguments(), ["talker", "--verbose"]);
/// let context = Context::new(Arc::new(IntraProcess::new()), arguments);
/// let node = context.create_basic_executor().create_node("talker")?;
/// assert_eq!(node.resolve_topic_name("chatter")?, "/news");
/// assert_eq!(node.declare_parameter("rate", 1.0)?, ParameterValue::Double(5.0));
/// # Ok::<(), rclev::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct Arguments {
    inner: Arc<Parsed>,
}

#[derive(Debug, Default)]
struct Parsed {
    remap_rules: Vec<RemapRule>,
    parameters: NodeParameters,
    params_files: Vec<String>,
    log_levels: Vec<(Option<String>, LogLevel)>,
    enclave: Option<String>,
    rosout_logs: Option<bool>,
    stdout_logs: Option<bool>,
    external_lib_logs: Option<bool>,
    log_file_name: Option<String>,
    non_ros: Vec<String>,
}

impl Arguments {
    /// Parses a program's arguments (the program's name first, as in `std::env::args()`).
    pub fn parse<S: AsRef<str>>(args: impl IntoIterator<Item = S>) -> Result<Self> {
        let args: Vec<String> = args.into_iter().map(|a| a.as_ref().to_string()).collect();
        let mut p = Parsed::default();
        let mut in_ros_args = false;
        let mut unknown = Vec::new();
        let mut i = 0;
        while i < args.len() {
            let arg = args[i].as_str();
            i += 1;
            if !in_ros_args {
                if arg == "--ros-args" {
                    in_ros_args = true;
                } else if let Some(rule) = arg
                    .contains(":=")
                    .then(|| RemapRule::parse(arg).ok())
                    .flatten()
                {
                    crate::diagnostic!(WARN,
                        target: "rclev",
                        "Found remap rule '{arg}'. This syntax is deprecated. Use '--ros-args --remap {arg}' instead."
                    );
                    p.remap_rules.push(rule);
                } else {
                    p.non_ros.push(arg.to_string());
                }
                continue;
            }
            let mut value = |what: &str| -> Result<&str> {
                let v = args
                    .get(i)
                    .map(String::as_str)
                    .ok_or_else(|| Error::InvalidArgument {
                        argument: arg.to_string(),
                        reason: format!("no {what} follows"),
                    })?;
                i += 1;
                Ok(v)
            };
            match arg {
                "--ros-args" => {}
                "--" => in_ros_args = false,
                "-r" | "--remap" => {
                    let rule = value("remapping rule")?;
                    let parsed =
                        RemapRule::parse(rule).map_err(|e| invalid_argument(arg, rule, e))?;
                    p.remap_rules.push(parsed);
                }
                "-p" | "--param" => {
                    let rule = value("parameter override rule")?;
                    let (node, name, v) =
                        parameter_rule(rule).map_err(|e| invalid_argument(arg, rule, e))?;
                    p.parameters.set(node, name, v);
                }
                "--params-file" => {
                    let path = value("params file")?;
                    let text = std::fs::read_to_string(path).map_err(|e| {
                        invalid_argument(arg, path, format!("cannot read the file: {e}"))
                    })?;
                    let nodes = crate::parameter::yaml::parse_params_file(&text)
                        .map_err(|e| invalid_argument(arg, path, e))?;
                    for (node, params) in nodes {
                        for (name, v) in params {
                            p.parameters.set(node.clone(), name, v);
                        }
                    }
                    p.params_files.push(path.to_string());
                }
                "--log-level" => {
                    let rule = value("log level")?;
                    let level = log_level_rule(rule).map_err(|e| invalid_argument(arg, rule, e))?;
                    p.log_levels.push(level);
                }
                "-e" | "--enclave" => {
                    let enclave = value("enclave")?;
                    if !enclave.starts_with('/') {
                        return Err(invalid_argument(
                            arg,
                            enclave,
                            "an enclave is a fully qualified name (starts with '/')",
                        ));
                    }
                    p.enclave = Some(enclave.to_string());
                }
                "--log-file-name" => p.log_file_name = Some(value("log file name")?.to_string()),
                "--log-config-file" => {
                    let file = value("log configuration file")?;
                    return Err(invalid_argument(
                        arg,
                        file,
                        "rclev logs through `tracing`: configure it with a tracing subscriber \
                         (rcl's default backend refuses external configuration too)",
                    ));
                }
                _ => match logging_flag(arg) {
                    Some((LoggingFlag::Rosout, on)) => p.rosout_logs = Some(on),
                    Some((LoggingFlag::Stdout, on)) => p.stdout_logs = Some(on),
                    Some((LoggingFlag::ExternalLib, on)) => p.external_lib_logs = Some(on),
                    None => unknown.push(arg.to_string()),
                },
            }
        }
        if !unknown.is_empty() {
            return Err(invalid_argument(
                "",
                // Quoted, so that an empty or blank argument is visible.
                &unknown
                    .iter()
                    .map(|a| format!("'{a}'"))
                    .collect::<Vec<_>>()
                    .join(" "),
                "unknown ROS arguments (inside --ros-args; end them with --)",
            ));
        }
        Ok(Self { inner: Arc::new(p) })
    }

    /// The process's own arguments ([`std::env::args`]), parsed. Arguments that are not
    /// UTF-8 are refused.
    pub fn from_env() -> Result<Self> {
        let args: std::result::Result<Vec<String>, _> =
            std::env::args_os().map(|a| a.into_string()).collect();
        let args = args.map_err(|bad| Error::InvalidArgument {
            argument: bad.to_string_lossy().into_owned(),
            reason: "not UTF-8".into(),
        })?;
        Self::parse(args)
    }

    /// The arguments that are not ROS arguments, in order (the program's name first): what
    /// the program itself should read (rclpy's `remove_ros_args`).
    pub fn non_ros_arguments(&self) -> &[String] {
        &self.inner.non_ros
    }

    /// The params files given with `--params-file`, in order.
    pub fn params_files(&self) -> &[String] {
        &self.inner.params_files
    }

    /// The enclave given with `--enclave`, if any.
    pub fn enclave(&self) -> Option<&str> {
        self.inner.enclave.as_deref()
    }

    /// The `--log-level` settings in order: `(None, level)` for the default level,
    /// `(Some(logger), level)` for one logger.
    pub fn log_levels(&self) -> &[(Option<String>, LogLevel)] {
        &self.inner.log_levels
    }

    /// Whether nodes publish their logs on `/rosout` (`--disable-rosout-logs` turns it off;
    /// default on).
    pub fn rosout_logs(&self) -> bool {
        self.inner.rosout_logs.unwrap_or(true)
    }

    /// Whether log records are printed on the console (`--disable-stdout-logs` turns it off;
    /// default on).
    pub fn stdout_logs(&self) -> bool {
        self.inner.stdout_logs.unwrap_or(true)
    }

    /// `--enable-`/`--disable-external-lib-logs` as given (rcl's log file; rclev writes none).
    pub fn external_lib_logs(&self) -> Option<bool> {
        self.inner.external_lib_logs
    }

    /// `--log-file-name` as given (rcl's log file prefix; rclev writes no log file).
    pub fn log_file_name(&self) -> Option<&str> {
        self.inner.log_file_name.as_deref()
    }

    /// Whether any remapping rule was given.
    pub fn has_remap_rules(&self) -> bool {
        !self.inner.remap_rules.is_empty()
    }

    pub(crate) fn remap_rules(&self) -> &[RemapRule] {
        &self.inner.remap_rules
    }

    /// The parameter values these arguments give the node whose fully qualified name is
    /// `node_fqn` (`/ns/name`), as rclpy combines them: every node key that matches, in the
    /// order the keys first appeared, a later value replacing an earlier one.
    ///
    /// ```
    /// use rclev::{arguments::Arguments, ParameterValue};
    /// let args = Arguments::parse(["p", "--ros-args", "-p", "a:=1", "-p", "cam:a:=2"]).unwrap();
    /// assert_eq!(args.parameter_overrides_for("/cam")["a"], ParameterValue::Integer(2));
    /// assert_eq!(args.parameter_overrides_for("/ns/cam")["a"], ParameterValue::Integer(1));
    /// ```
    pub fn parameter_overrides_for(&self, node_fqn: &str) -> BTreeMap<String, ParameterValue> {
        let mut out = BTreeMap::new();
        for node in &self.inner.parameters.nodes {
            if node_key_matches(&node.key, node_fqn) {
                for (name, value) in &node.values {
                    out.insert(name.clone(), value.clone());
                }
            }
        }
        out
    }
}

/// Whether a params-file node key (`/**`, `talker`, `/ns/*`, `/**/cam`) names the node
/// `/ns/name`: as rclpy matches it, a key without a leading `/` gets one, `*` stands for one
/// name token and `**` for any number of them.
fn node_key_matches(key: &str, node_fqn: &str) -> bool {
    let key = if key.starts_with('/') {
        key.to_string()
    } else {
        format!("/{key}")
    };
    let pattern: Vec<&str> = key[1..].split('/').collect();
    let name: Vec<&str> = node_fqn.trim_start_matches('/').split('/').collect();
    // reachable[j]: the pattern so far can match the first j name tokens.
    let mut reachable = vec![false; name.len() + 1];
    reachable[0] = true;
    for segment in pattern {
        let mut next = vec![false; name.len() + 1];
        for j in 0..=name.len() {
            if !reachable[j] {
                continue;
            }
            match segment {
                "**" => next[j..].iter_mut().for_each(|r| *r = true),
                "*" if j < name.len() => next[j + 1] = true,
                literal if j < name.len() && literal == name[j] => next[j + 1] = true,
                _ => {}
            }
        }
        reachable = next;
    }
    reachable[name.len()]
}

/// `[node:]name:=value` of `-p`: node and parameter names as rcl's lexer reads them.
fn parameter_rule(rule: &str) -> std::result::Result<(String, String, ParameterValue), String> {
    let (lhs, value) = rule.split_once(":=").ok_or("expected [node:]name:=value")?;
    let (node, name) = match lhs.split_once(':') {
        Some((node, name)) => {
            if node.is_empty() || remap::token_len(node) != node.len() {
                return Err(format!("{node:?} is not a node name"));
            }
            (node.to_string(), name)
        }
        None => ("/**".to_string(), lhs),
    };
    let valid_part = |part: &str| {
        !part.is_empty()
            && part
                .split('/')
                .all(|t| t.is_empty() || remap::token_len(t) == t.len())
    };
    if name.is_empty() || !name.split('.').all(valid_part) {
        return Err(format!(
            "{name:?} is not a parameter name (tokens of letters, digits and single '_', \
             separated by '.' or '/')"
        ));
    }
    let value = crate::parameter::yaml::parse_value(value)?;
    Ok((node, name.to_string(), value))
}

/// `[logger:=]level` of `--log-level`.
fn log_level_rule(rule: &str) -> std::result::Result<(Option<String>, LogLevel), String> {
    let (logger, level) = match rule.rsplit_once(":=") {
        Some((logger, level)) if !logger.is_empty() => (Some(logger.to_string()), level),
        Some(_) => return Err("empty logger name".into()),
        None => (None, rule),
    };
    let level = LogLevel::from_name(level).ok_or_else(|| {
        format!("{level:?} is not a log level (debug, info, warn, error, fatal or unset)")
    })?;
    Ok((logger, level))
}

enum LoggingFlag {
    Rosout,
    Stdout,
    ExternalLib,
}

/// `--enable-X`/`--disable-X` for the three logging outputs.
fn logging_flag(arg: &str) -> Option<(LoggingFlag, bool)> {
    let (on, what) = if let Some(w) = arg.strip_prefix("--enable-") {
        (true, w)
    } else {
        (false, arg.strip_prefix("--disable-")?)
    };
    let flag = match what {
        "rosout-logs" => LoggingFlag::Rosout,
        "stdout-logs" => LoggingFlag::Stdout,
        "external-lib-logs" => LoggingFlag::ExternalLib,
        _ => return None,
    };
    Some((flag, on))
}

/// The parameter overrides `args` give a node called `node` in the root namespace (see
/// [`Arguments::parameter_overrides_for`] for a node anywhere). Like rcl, malformed ROS
/// arguments are an [`Error::InvalidArgument`] whichever node
/// they name.
pub fn parse_ros_args<S: AsRef<str>>(
    args: &[S],
    node: &str,
) -> Result<BTreeMap<String, ParameterValue>> {
    let parsed = Arguments::parse(args)?;
    Ok(parsed.parameter_overrides_for(&format!("/{node}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ParameterValue as V;

    #[test]
    fn node_keys_match_like_rclpy() {
        let m = node_key_matches;
        assert!(m("/**", "/a") && m("/**", "/x/y/a") && m("**", "/a"));
        assert!(m("a", "/a") && !m("a", "/ns/a"));
        assert!(m("/ns/a", "/ns/a") && m("ns/a", "/ns/a"));
        assert!(m("/ns/*", "/ns/a") && !m("/ns/*", "/ns/x/a") && !m("/ns/*", "/a"));
        assert!(m("/**/a", "/a") && m("/**/a", "/x/y/a") && !m("/**/a", "/x/b"));
        assert!(m("/*/a", "/x/a") && !m("/*/a", "/a"));
    }

    #[test]
    fn ros_args_are_read_and_unknown_ones_refused() {
        let args = Arguments::parse([
            "prog",
            "own",
            "--ros-args",
            "-r",
            "a:=b",
            "-p",
            "x:=1",
            "--param",
            "n:y:=[1, 2]",
            "--log-level",
            "DEBUG",
            "--log-level",
            "n.sub:=warn",
            "-e",
            "/enc",
            "--disable-rosout-logs",
            "--",
            "--flag",
            "--ros-args",
            "--enable-stdout-logs",
        ])
        .unwrap();
        assert_eq!(args.non_ros_arguments(), ["prog", "own", "--flag"]);
        assert_eq!(args.remap_rules().len(), 1);
        assert_eq!(args.enclave(), Some("/enc"));
        assert!(!args.rosout_logs() && args.stdout_logs());
        assert_eq!(
            args.log_levels(),
            [
                (None, LogLevel::Debug),
                (Some("n.sub".to_string()), LogLevel::Warn)
            ]
        );
        let n = args.parameter_overrides_for("/n");
        assert_eq!(n["x"], V::Integer(1));
        assert_eq!(n["y"], V::IntegerArray(vec![1, 2]));
        assert!(!args.parameter_overrides_for("/m").contains_key("y"));

        for bad in [
            &["--ros-args", "--unknown"][..],
            &["--ros-args", "-r"],
            &["--ros-args", "-r", "a"],
            &["--ros-args", "-p", "x"],
            &["--ros-args", "-p", "x:="],
            &["--ros-args", "-p", "1x:=1"],
            &["--ros-args", "-p", "a-b:=1"],
            &["--ros-args", "-p", ":x:=1"],
            &["--ros-args", "-p", "x:=[1, 2.0]"],
            &["--ros-args", "--log-level", "loud"],
            &["--ros-args", "--log-level", ":=info"],
            &["--ros-args", "--params-file", "/nonexistent/rclev.yaml"],
            &["--ros-args", "--log-config-file", "x.conf"],
            &["--ros-args", "-e", "relative"],
        ] {
            assert!(
                matches!(Arguments::parse(bad), Err(Error::InvalidArgument { .. })),
                "{bad:?} accepted"
            );
        }
        // Outside --ros-args a remapping rule is still read (deprecated), nothing else is.
        let args = Arguments::parse(["prog", "a:=b", "-p", "x:=[[1]]"]).unwrap();
        assert_eq!(args.remap_rules().len(), 1);
        assert_eq!(args.non_ros_arguments(), ["prog", "-p", "x:=[[1]]"]);
    }

    #[test]
    fn later_values_replace_earlier_in_key_order() {
        let dir = std::env::temp_dir().join(format!("rclev-args-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("p.yaml");
        std::fs::write(
            &file,
            "/**:\n  ros__parameters:\n    a: 1\n/n:\n  ros__parameters:\n    a: 2\n",
        )
        .unwrap();
        let file = file.to_str().unwrap();
        // `-p a:=3` goes to the `/**` key, which comes before `/n`: `/n`'s 2 wins, as in rclpy.
        let args =
            Arguments::parse(["p", "--ros-args", "--params-file", file, "-p", "a:=3"]).unwrap();
        assert_eq!(args.parameter_overrides_for("/n")["a"], V::Integer(2));
        assert_eq!(args.parameter_overrides_for("/m")["a"], V::Integer(3));
        std::fs::remove_dir_all(dir).unwrap();
    }

    // parse_ros_args, the one-node shortcut.

    #[test]
    fn overrides_for_one_node() {
        let args = [
            "prog",
            "--ros-args",
            "-p",
            "rate:=10",
            "-p",
            "other:x:=1",
            "-p",
            "me:name:=bob",
            "--",
            "-p",
            "no:=1",
        ];
        let o = parse_ros_args(&args, "me").unwrap();
        assert_eq!(o.get("rate"), Some(&ParameterValue::Integer(10)));
        assert_eq!(o.get("name"), Some(&ParameterValue::String("bob".into())));
        assert!(!o.contains_key("x") && !o.contains_key("no"));
        assert_eq!(
            ParameterValue::parse(" [1, a] "),
            ParameterValue::String("[1, a]".into())
        );
    }

    /// Defect 9: `[[[…]]]` 30,000 deep recursed once per bracket and overflowed the stack.
    #[test]
    fn deeply_nested_value_is_refused_without_recursion() {
        let deep = format!("{}1{}", "[".repeat(30_000), "]".repeat(30_000));
        assert!(ParameterValue::try_parse(&deep).is_err());
        let rule = format!("x:={deep}");
        let err = parse_ros_args(&["--ros-args", "-p", &rule], "n").unwrap_err();
        match err {
            Error::InvalidArgument { argument, reason } => {
                assert!(argument.starts_with("-p x:=[[[") && argument.ends_with('…'));
                assert!(argument.len() < 300, "the error repeats the whole argument");
                assert!(reason.contains("recursion limit"), "{reason}");
            }
            other => panic!("unexpected error {other:?}"),
        }
    }

    #[test]
    fn malformed_rules_are_errors_whichever_node_they_name() {
        for args in [
            &["--ros-args", "-p"][..],
            &["--ros-args", "-p", "no_assignment"],
            &["--ros-args", "-p", ":=1"],
            &["--ros-args", "-p", "other::=1"],
            &["--ros-args", "-p", ":x:=1"],
            &["--ros-args", "--param", "other:x:=[1, a]"],
        ] {
            assert!(
                matches!(
                    parse_ros_args(args, "me"),
                    Err(Error::InvalidArgument { .. })
                ),
                "{args:?} accepted"
            );
        }
        // Outside --ros-args nothing but (deprecated) remapping rules is read.
        assert!(parse_ros_args(&["-p", "x:=[[1]]"], "me")
            .unwrap()
            .is_empty());
    }
}
