//! Command-line parameter values and the `--ros-args` scanner.
//!
//! Arguments are untrusted input, so nothing here recurses or rescans: a value is read in one
//! left-to-right pass, and `parse_ros_args` looks at each argument once. A ROS 2 parameter holds
//! a scalar or a flat array of one type, so the accepted syntax is the YAML subset that can
//! express those: a scalar, or a flow sequence (`[1, 2]`) of scalars. Whatever else starts
//! like a sequence (a nested sequence, mixed item types, a missing `]`, an unclosed quote
//! inside the brackets) is refused with a [`ValueParseError`], as rcl refuses it.

use std::collections::BTreeMap;

use super::ParameterValue;
use crate::error::{Error, Result};

/// Why a command-line value is not a parameter value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueParseError {
    /// A sequence inside a sequence (`[[1]]`): parameter arrays are flat.
    #[error("nested sequences are not parameter values")]
    NestedSequence,
    /// Items of different types in one sequence (`[1, a]`).
    #[error("sequence items must share one type, found {first} and {other}")]
    MixedTypes {
        /// The type of the first item.
        first: &'static str,
        /// The first type that does not fit with it.
        other: &'static str,
    },
    /// Text that is not a flow sequence although it starts like one.
    #[error("malformed sequence: {0}")]
    Malformed(&'static str),
}

impl ParameterValue {
    /// Parses a command-line value the way `ros2 run … -p name:=value` does (YAML scalars and
    /// flow sequences): `true`, `3`, `2.5`, `[1, 2]`, `['a', 'b']`, anything else a string.
    ///
    /// Refuses what no parameter can hold: nested sequences, items of different types (an
    /// integer among doubles is widened to a double, unlike rcl), and text starting with `[`
    /// that is not a well-formed sequence. Quoted items keep their escapes as written.
    ///
    /// ```
    /// use rclev::parameter::{ParameterValue, ValueParseError};
    /// assert_eq!(ParameterValue::try_parse("[1, 2]"), Ok(ParameterValue::IntegerArray(vec![1, 2])));
    /// assert_eq!(ParameterValue::try_parse("[[1]]"), Err(ValueParseError::NestedSequence));
    /// ```
    pub fn try_parse(text: &str) -> Result<Self, ValueParseError> {
        let t = text.trim();
        match t.strip_prefix('[') {
            Some(rest) => match rest.strip_suffix(']') {
                Some(inner) => sequence(inner),
                None => Err(ValueParseError::Malformed("no closing ']'")),
            },
            None => Ok(scalar(t)),
        }
    }

    /// The lenient form of [`try_parse`](Self::try_parse): text it refuses is taken as a
    /// string, as written (trimmed), which is what this function returned for such text before
    /// `try_parse` existed.
    pub fn parse(text: &str) -> Self {
        Self::try_parse(text).unwrap_or_else(|_| Self::String(text.trim().to_string()))
    }
}

/// A plain or quoted scalar: bool, integer, double, else a string (outer quotes removed).
fn scalar(t: &str) -> ParameterValue {
    match t {
        "true" | "True" | "TRUE" => return ParameterValue::Bool(true),
        "false" | "False" | "FALSE" => return ParameterValue::Bool(false),
        _ => {}
    }
    if let Ok(i) = t.parse::<i64>() {
        return ParameterValue::Integer(i);
    }
    if let Ok(f) = t.parse::<f64>() {
        return ParameterValue::Double(f);
    }
    let unquoted = t
        .strip_prefix('\'')
        .and_then(|r| r.strip_suffix('\''))
        .or_else(|| t.strip_prefix('"').and_then(|r| r.strip_suffix('"')))
        .unwrap_or(t);
    ParameterValue::String(unquoted.to_string())
}

/// The items between a flow sequence's brackets, in one pass. Empty items (`[1,,2]`, `[]`) are
/// skipped, as before this parser was strict.
fn sequence(inner: &str) -> Result<ParameterValue, ValueParseError> {
    let mut items = Vec::new();
    let mut rest = inner.trim_start();
    while !rest.is_empty() {
        let after = match rest.as_bytes()[0] {
            quote @ (b'\'' | b'"') => {
                let end = closing_quote(rest, quote)?;
                items.push(ParameterValue::String(rest[1..end].to_string()));
                let after = rest[end + 1..].trim_start();
                if !(after.is_empty() || after.starts_with(',')) {
                    return Err(ValueParseError::Malformed("text after a quoted item"));
                }
                after
            }
            _ => {
                let end = rest.find([',', '[', ']', '{', '}']).unwrap_or(rest.len());
                match rest.as_bytes().get(end) {
                    Some(b'[') => return Err(ValueParseError::NestedSequence),
                    Some(b']') => return Err(ValueParseError::Malformed("unbalanced ']'")),
                    Some(b'{' | b'}') => {
                        return Err(ValueParseError::Malformed(
                            "mappings are not parameter values",
                        ))
                    }
                    _ => {}
                }
                let item = rest[..end].trim();
                if !item.is_empty() {
                    items.push(scalar(item));
                }
                &rest[end..]
            }
        };
        rest = after.strip_prefix(',').unwrap_or(after).trim_start();
    }
    array_of(items)
}

/// The byte index of the quote that closes the quoted item at the start of `s`. A doubled
/// single quote (`''`) and a backslash escape inside double quotes do not close it.
fn closing_quote(s: &str, quote: u8) -> Result<usize, ValueParseError> {
    let bytes = s.as_bytes();
    let mut i = 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if quote == b'"' => i += 2,
            b'\'' if quote == b'\'' && bytes.get(i + 1) == Some(&b'\'') => i += 2,
            b if b == quote => return Ok(i),
            _ => i += 1,
        }
    }
    Err(ValueParseError::Malformed("unclosed quote"))
}

/// One array from scalars of one type; integers among doubles are widened.
fn array_of(items: Vec<ParameterValue>) -> Result<ParameterValue, ValueParseError> {
    use ParameterValue as V;
    let numeric = |v: &V| matches!(v, V::Integer(_) | V::Double(_));
    let Some(first) = items.first() else {
        return Ok(V::IntegerArray(Vec::new()));
    };
    if let Some(other) = items.iter().find(|v| match first {
        V::Integer(_) | V::Double(_) => !numeric(v),
        _ => !v.same_type(first),
    }) {
        return Err(ValueParseError::MixedTypes {
            first: first.type_name(),
            other: other.type_name(),
        });
    }
    // Every item now has the first one's type, or is a number among numbers.
    Ok(match first {
        V::Bool(_) => V::BoolArray(
            items
                .into_iter()
                .filter_map(|v| if let V::Bool(b) = v { Some(b) } else { None })
                .collect(),
        ),
        V::String(_) => V::StringArray(
            items
                .into_iter()
                .filter_map(|v| if let V::String(s) = v { Some(s) } else { None })
                .collect(),
        ),
        _ if items.iter().all(|v| matches!(v, V::Integer(_))) => V::IntegerArray(
            items
                .into_iter()
                .filter_map(|v| if let V::Integer(i) = v { Some(i) } else { None })
                .collect(),
        ),
        _ => V::DoubleArray(
            items
                .into_iter()
                .filter_map(|v| match v {
                    V::Integer(i) => Some(i as f64),
                    V::Double(d) => Some(d),
                    _ => None,
                })
                .collect(),
        ),
    })
}

/// Longest argument text an error repeats; the rest is elided so that a huge argument does not
/// make a huge error message.
const MAX_ARGUMENT_IN_ERROR: usize = 200;

fn invalid_argument(flag: &str, rule: &str, reason: String) -> Error {
    let mut end = rule.len().min(MAX_ARGUMENT_IN_ERROR);
    while !rule.is_char_boundary(end) {
        end -= 1;
    }
    let ellipsis = if end < rule.len() { "…" } else { "" };
    Error::InvalidArgument {
        argument: format!("{flag} {}{ellipsis}", &rule[..end]),
        reason,
    }
}

/// Parses `--ros-args -p name:=value … [--]` into overrides. Arguments outside `--ros-args`
/// sections are ignored; `-p` for another node (`node:name:=value`) is kept only for `node`.
///
/// Like rcl, a malformed rule is an error whichever node it names: a `-p` with no rule after
/// it, a rule without `:=` or with an empty name, or a value that
/// [`ParameterValue::try_parse`] refuses. The error is [`Error::InvalidArgument`] and repeats
/// the rule (its first 200 bytes).
pub fn parse_ros_args<S: AsRef<str>>(
    args: &[S],
    node: &str,
) -> Result<BTreeMap<String, ParameterValue>> {
    let mut out = BTreeMap::new();
    let mut in_ros_args = false;
    let mut iter = args.iter().map(AsRef::as_ref);
    while let Some(arg) = iter.next() {
        match arg {
            "--ros-args" => in_ros_args = true,
            "--" => in_ros_args = false,
            "-p" | "--param" if in_ros_args => {
                let Some(rule) = iter.next() else {
                    return Err(Error::InvalidArgument {
                        argument: arg.to_string(),
                        reason: "no parameter override rule follows".into(),
                    });
                };
                let bad = |reason: String| invalid_argument(arg, rule, reason);
                let Some((lhs, value)) = rule.split_once(":=") else {
                    return Err(bad("expected [node:]name:=value".into()));
                };
                let (target, name) = match lhs.split_once(':') {
                    Some((target, name)) => (Some(target), name),
                    None => (None, lhs),
                };
                if name.is_empty() || target == Some("") {
                    return Err(bad("empty node or parameter name".into()));
                }
                let value = ParameterValue::try_parse(value).map_err(|e| bad(e.to_string()))?;
                if target.is_none_or(|t| t == node) {
                    out.insert(name.to_string(), value);
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_command_line_values() {
        assert_eq!(ParameterValue::parse("true"), ParameterValue::Bool(true));
        assert_eq!(ParameterValue::parse("42"), ParameterValue::Integer(42));
        assert_eq!(ParameterValue::parse("2.5"), ParameterValue::Double(2.5));
        assert_eq!(
            ParameterValue::parse("'hi'"),
            ParameterValue::String("hi".into())
        );
        assert_eq!(
            ParameterValue::parse("[1, 2]"),
            ParameterValue::IntegerArray(vec![1, 2])
        );
        assert_eq!(
            ParameterValue::parse("[1, 2.5]"),
            ParameterValue::DoubleArray(vec![1.0, 2.5])
        );
        assert_eq!(
            ParameterValue::parse("[a, 'b']"),
            ParameterValue::StringArray(vec!["a".into(), "b".into()])
        );
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
    }

    #[test]
    fn sequences_are_flat_and_of_one_type() {
        use ParameterValue as V;
        let ok = |t: &str| V::try_parse(t).unwrap();
        assert_eq!(ok("[]"), V::IntegerArray(vec![]));
        assert_eq!(ok(" [true, False] "), V::BoolArray(vec![true, false]));
        assert_eq!(ok("[1,,2,]"), V::IntegerArray(vec![1, 2]));
        assert_eq!(ok("[2.5, 1]"), V::DoubleArray(vec![2.5, 1.0]));
        // Commas and brackets inside quotes are text.
        assert_eq!(
            ok(r#"['a,b', "[c]", 'it''s', "q\"x"]"#),
            V::StringArray(vec![
                "a,b".into(),
                "[c]".into(),
                "it''s".into(),
                r#"q\"x"#.into()
            ])
        );
        // A quote inside a plain item is an ordinary character.
        assert_eq!(
            ok("[it's, fine]"),
            V::StringArray(vec!["it's".into(), "fine".into()])
        );
        // Brackets that do not open the value are text.
        assert_eq!(ok("a[1]"), V::String("a[1]".into()));

        use ValueParseError as E;
        let err = |t: &str| V::try_parse(t).unwrap_err();
        assert_eq!(err("[[1]]"), E::NestedSequence);
        assert_eq!(err("[1, [2]]"), E::NestedSequence);
        assert_eq!(
            err("[1, a]"),
            E::MixedTypes {
                first: "integer",
                other: "string"
            }
        );
        assert_eq!(
            err("[true, 1]"),
            E::MixedTypes {
                first: "bool",
                other: "integer"
            }
        );
        assert!(matches!(err("[1, 2"), E::Malformed(_)));
        assert!(matches!(err("[1]]"), E::Malformed(_)));
        assert!(matches!(err("['a, b]"), E::Malformed(_)));
        assert!(matches!(err("['a' b]"), E::Malformed(_)));
        assert!(matches!(err("[{a: 1}]"), E::Malformed(_)));
        // The lenient form keeps what it cannot parse as text, as before.
        assert_eq!(V::parse(" [1, a] "), V::String("[1, a]".into()));
    }

    /// Defect 9: `[[[…]]]` 30,000 deep recursed once per bracket and overflowed the stack.
    #[test]
    fn deeply_nested_value_is_refused_without_recursion() {
        let deep = format!("{}1{}", "[".repeat(30_000), "]".repeat(30_000));
        assert_eq!(
            ParameterValue::try_parse(&deep),
            Err(ValueParseError::NestedSequence)
        );
        let rule = format!("x:={deep}");
        let err = parse_ros_args(&["--ros-args", "-p", &rule], "n").unwrap_err();
        match err {
            Error::InvalidArgument { argument, reason } => {
                assert!(argument.starts_with("-p x:=[[[") && argument.ends_with('…'));
                assert!(argument.len() < 300, "the error repeats the whole argument");
                assert!(reason.contains("nested"), "{reason}");
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
        // Outside --ros-args nothing is read.
        assert!(parse_ros_args(&["-p", "x:=[[1]]"], "me")
            .unwrap()
            .is_empty());
    }
}
