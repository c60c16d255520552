//! `rclev param list|get|set|describe|dump`: a node's parameters through its parameter
//! services, printed as `ros2 param` prints them.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::wire::CliTransport;
use rclev::interfaces::rcl_interfaces::msg::{Parameter as ParameterMsg, ParameterDescriptor};
use rclev::interfaces::rcl_interfaces::srv::*;
use rclev::msg::ServiceType;
use rclev::{Context, Executor, Node, NodeOptions, ParameterValue, SpinOptions};
use yaml_rust2::Yaml;

use crate::errors::Result;

/// How long a command waits for the node's services, then for each answer.
const WAIT: Duration = Duration::from_secs(5);

/// An executor and a node of the CLI's own (no services or publishers of its own).
fn cli() -> Result<(Executor, Node)> {
    let context = Context::with_transport(CliTransport::from_env()?.shared());
    let executor = context.create_basic_executor();
    let node = executor.create_node(
        NodeOptions::new(format!("rclev_param_{}", std::process::id()))
            .enable_rosout(false)
            .start_parameter_services(false)
            .start_parameter_event_publisher(false)
            .parameter_override("start_type_description_service", false),
    )?;
    Ok((executor, node))
}

/// Calls `node`'s `~/<service>` with `request`, spinning `executor` meanwhile.
fn call<S: ServiceType>(
    executor: &Executor,
    cli_node: &Node,
    target: &str,
    service: &str,
    request: S::Request,
) -> Result<S::Response> {
    let client = cli_node.create_client::<S>(format!("{target}/{service}").as_str())?;
    let answer = Arc::new(Mutex::new(None));
    let a = answer.clone();
    let target_name = target.to_string();
    let work = async move {
        let result: Result<S::Response> = async {
            client
                .wait_for_service(Some(WAIT))
                .await
                .map_err(|_| format!("Node not found: {target_name} (no parameter services)"))?;
            Ok(client.call_with_timeout(request, WAIT).await?)
        }
        .await;
        *a.lock().unwrap_or_else(|e| e.into_inner()) = Some(result);
    };
    spin_until_done(executor, work);
    let result = answer
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
        .ok_or_else(|| format!("no answer from {target} within {:?}", WAIT * 3))?;
    result
}

fn spin_until_done(executor: &Executor, work: impl Future<Output = ()> + Send + 'static) {
    crate::errors::report_spin(
        executor.spin(
            SpinOptions::default()
                .until_promise_resolved(work)
                .timeout(WAIT * 3),
        ),
    );
}

use crate::graph::absolute_node as absolute;

/// Every parameter name of `node`, sorted.
fn names(executor: &Executor, cli: &Node, node: &str) -> Result<Vec<String>> {
    let answer = call::<ListParameters>(
        executor,
        cli,
        node,
        "list_parameters",
        ListParameters_Request {
            prefixes: vec![],
            depth: ListParameters_Request::DEPTH_RECURSIVE,
        },
    )?;
    let mut names = answer.result.names;
    names.sort();
    Ok(names)
}

/// `rclev param list <node>`.
pub fn list(node: &str) -> Result {
    let node = absolute(node);
    let (executor, cli) = cli()?;
    for n in names(&executor, &cli, &node)? {
        println!("  {n}");
    }
    Ok(())
}

/// The value as `ros2 param get` prints it (`Integer value is: 5`).
fn value_text(v: &ParameterValue) -> String {
    fn list<T: std::fmt::Display>(v: &[T]) -> String {
        let items: Vec<String> = v.iter().map(|x| x.to_string()).collect();
        format!("[{}]", items.join(", "))
    }
    match v {
        ParameterValue::Bool(b) => {
            format!("Boolean value is: {}", if *b { "True" } else { "False" })
        }
        ParameterValue::Integer(i) => format!("Integer value is: {i}"),
        ParameterValue::Double(d) => format!("Double value is: {d:?}"),
        ParameterValue::String(s) => format!("String value is: {s}"),
        ParameterValue::ByteArray(b) => format!("Byte values are: {}", list(b)),
        ParameterValue::BoolArray(b) => format!("Boolean values are: {}", list(b)),
        ParameterValue::IntegerArray(i) => format!("Integer values are: {}", list(i)),
        ParameterValue::DoubleArray(d) => format!("Double values are: {d:?}"),
        ParameterValue::StringArray(s) => format!("String values are: {s:?}"),
    }
}

/// `rclev param get <node> <name>`.
pub fn get(node: &str, name: &str) -> Result {
    let node = absolute(node);
    let (executor, cli) = cli()?;
    let answer = call::<GetParameters>(
        &executor,
        &cli,
        &node,
        "get_parameters",
        GetParameters_Request {
            names: vec![name.to_string()],
        },
    )?;
    let value = answer
        .values
        .first()
        .map(ParameterValue::from_msg)
        .transpose()?
        .flatten();
    match value {
        Some(v) => println!("{}", value_text(&v)),
        None => return Err("Parameter not set.".into()),
    }
    Ok(())
}

/// A value given on the command line, read as YAML as `ros2 param set` reads it: `true`, `5`,
/// `2.5`, `text`, `[1, 2]`.
pub fn parse_value(text: &str) -> Result<ParameterValue> {
    let docs = rclev_bag::yaml::load(text)?;
    let yaml = docs
        .into_iter()
        .next()
        .unwrap_or(Yaml::String(String::new()));
    let scalar = |y: &Yaml| -> Option<ParameterValue> {
        Some(match y {
            Yaml::Boolean(b) => ParameterValue::Bool(*b),
            Yaml::Integer(i) => ParameterValue::Integer(*i),
            Yaml::Real(r) => ParameterValue::Double(r.parse().ok()?),
            Yaml::String(s) => ParameterValue::String(s.clone()),
            _ => return None,
        })
    };
    match &yaml {
        Yaml::Array(items) => {
            let values: Vec<ParameterValue> = items
                .iter()
                .map(|i| scalar(i).ok_or_else(|| format!("'{text}': a list of scalars only")))
                .collect::<std::result::Result<_, _>>()?;
            let all = |f: fn(&ParameterValue) -> bool| values.iter().all(f);
            Ok(if all(|v| matches!(v, ParameterValue::Bool(_))) {
                ParameterValue::BoolArray(
                    values
                        .iter()
                        .map(|v| matches!(v, ParameterValue::Bool(true)))
                        .collect(),
                )
            } else if all(|v| matches!(v, ParameterValue::Integer(_))) {
                ParameterValue::IntegerArray(
                    values
                        .iter()
                        .filter_map(|v| match v {
                            ParameterValue::Integer(i) => Some(*i),
                            _ => None,
                        })
                        .collect(),
                )
            } else if all(|v| matches!(v, ParameterValue::Double(_) | ParameterValue::Integer(_))) {
                ParameterValue::DoubleArray(
                    values
                        .iter()
                        .filter_map(|v| match v {
                            ParameterValue::Double(d) => Some(*d),
                            ParameterValue::Integer(i) => Some(*i as f64),
                            _ => None,
                        })
                        .collect(),
                )
            } else if all(|v| matches!(v, ParameterValue::String(_))) {
                ParameterValue::StringArray(values.iter().map(|v| v.to_string()).collect())
            } else {
                return Err(format!("'{text}': the items of a list must be of one type").into());
            })
        }
        Yaml::Null => Ok(ParameterValue::String(text.to_string())),
        other => scalar(other).ok_or_else(|| format!("'{text}' is not a parameter value").into()),
    }
}

/// `rclev param set <node> <name> <value>`.
pub fn set(node: &str, name: &str, value: &str) -> Result {
    let node = absolute(node);
    let value = parse_value(value)?;
    let (executor, cli) = cli()?;
    let answer = call::<SetParameters>(
        &executor,
        &cli,
        &node,
        "set_parameters",
        SetParameters_Request {
            parameters: vec![ParameterMsg {
                name: name.to_string(),
                value: value.to_msg(),
            }],
        },
    )?;
    match answer.results.first() {
        Some(r) if r.successful => {
            println!("Set parameter successful");
            Ok(())
        }
        Some(r) => Err(format!("Setting parameter failed: {}", r.reason).into()),
        None => Err("Setting parameter failed: no answer".into()),
    }
}

fn type_text(type_id: u8) -> &'static str {
    use rclev::interfaces::rcl_interfaces::msg::ParameterType as T;
    match type_id {
        T::PARAMETER_BOOL => "boolean",
        T::PARAMETER_INTEGER => "integer",
        T::PARAMETER_DOUBLE => "double",
        T::PARAMETER_STRING => "string",
        T::PARAMETER_BYTE_ARRAY => "byte array",
        T::PARAMETER_BOOL_ARRAY => "boolean array",
        T::PARAMETER_INTEGER_ARRAY => "integer array",
        T::PARAMETER_DOUBLE_ARRAY => "double array",
        T::PARAMETER_STRING_ARRAY => "string array",
        _ => "not set",
    }
}

fn describe_text(d: &ParameterDescriptor) -> String {
    let mut out = format!(
        "Parameter name: {}\n  Type: {}\n",
        d.name,
        type_text(d.r#type)
    );
    if !d.description.is_empty() {
        out += &format!("  Description: {}\n", d.description);
    }
    out += "  Constraints:\n";
    if d.read_only {
        out += "    Read only: true\n";
    }
    if d.dynamic_typing {
        out += "    Dynamic typing: true\n";
    }
    for r in &d.integer_range {
        out += &format!(
            "    Min value: {}\n    Max value: {}\n    Step: {}\n",
            r.from_value, r.to_value, r.step
        );
    }
    for r in &d.floating_point_range {
        out += &format!(
            "    Min value: {:?}\n    Max value: {:?}\n    Step: {:?}\n",
            r.from_value, r.to_value, r.step
        );
    }
    out
}

/// `rclev param describe <node> <name>`.
pub fn describe(node: &str, name: &str) -> Result {
    let node = absolute(node);
    let (executor, cli) = cli()?;
    let answer = call::<DescribeParameters>(
        &executor,
        &cli,
        &node,
        "describe_parameters",
        DescribeParameters_Request {
            names: vec![name.to_string()],
        },
    )?;
    match answer.descriptors.first() {
        Some(d) if !d.name.is_empty() => print!("{}", describe_text(d)),
        _ => return Err(format!("Parameter not found: {name}").into()),
    }
    Ok(())
}

/// A value as YAML in `ros2 param dump`'s output.
fn yaml_value(v: &ParameterValue) -> String {
    fn quoted(s: &str) -> String {
        format!("'{}'", s.replace('\'', "''"))
    }
    fn list<T>(items: &[T], f: impl Fn(&T) -> String) -> String {
        format!("[{}]", items.iter().map(f).collect::<Vec<_>>().join(", "))
    }
    match v {
        ParameterValue::Bool(b) => b.to_string(),
        ParameterValue::Integer(i) => i.to_string(),
        ParameterValue::Double(d) => format!("{d:?}"),
        ParameterValue::String(s) => quoted(s),
        ParameterValue::ByteArray(b) => list(b, |x| x.to_string()),
        ParameterValue::BoolArray(b) => list(b, |x| x.to_string()),
        ParameterValue::IntegerArray(i) => list(i, |x| x.to_string()),
        ParameterValue::DoubleArray(d) => list(d, |x| format!("{x:?}")),
        ParameterValue::StringArray(s) => list(s, |x| quoted(x)),
    }
}

/// `rclev param dump <node>`: every parameter as a parameters file (`--params-file`) would
/// hold it.
pub fn dump(node: &str) -> Result {
    let node = absolute(node);
    let (executor, cli) = cli()?;
    let names = names(&executor, &cli, &node)?;
    let got = call::<GetParameters>(
        &executor,
        &cli,
        &node,
        "get_parameters",
        GetParameters_Request {
            names: names.clone(),
        },
    )?;
    // rclcpp answers with no values at all when one name is no longer declared.
    if got.values.len() != names.len() {
        return Err(format!(
            "{node} answered {} values for {} parameters (one undeclared meanwhile?)",
            got.values.len(),
            names.len()
        )
        .into());
    }
    println!("{node}:\n  ros__parameters:");
    for (name, value) in names.iter().zip(&got.values) {
        if let Some(v) = ParameterValue::from_msg(value)? {
            println!("    {name}: {}", yaml_value(&v));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_read_as_ros2_param_set_reads_them() {
        assert_eq!(parse_value("true").unwrap(), ParameterValue::Bool(true));
        assert_eq!(parse_value("5").unwrap(), ParameterValue::Integer(5));
        assert_eq!(parse_value("2.5").unwrap(), ParameterValue::Double(2.5));
        assert_eq!(
            parse_value("hi").unwrap(),
            ParameterValue::String("hi".into())
        );
        assert_eq!(
            parse_value("[1, 2]").unwrap(),
            ParameterValue::IntegerArray(vec![1, 2])
        );
        assert_eq!(
            parse_value("[1, 2.5]").unwrap(),
            ParameterValue::DoubleArray(vec![1.0, 2.5])
        );
        assert_eq!(
            parse_value("[a, b]").unwrap(),
            ParameterValue::StringArray(vec!["a".into(), "b".into()])
        );
        assert!(parse_value("[a, 1]").is_err());
        assert!(parse_value("{a: 1}").is_err());
        assert_eq!(
            value_text(&ParameterValue::Double(1.0)),
            "Double value is: 1.0"
        );
        assert_eq!(
            yaml_value(&ParameterValue::String("it's".into())),
            "'it''s'"
        );
    }
}
