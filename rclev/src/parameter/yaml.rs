//! Parameter values written in YAML, typed as rcl's parser types them: `-p name:=value`
//! values and `--params-file` files.
//!
//! rcl reads both with libyaml, event by event, and decides a scalar's type from its text,
//! its quoting and its tag (`rcl_yaml_param_parser/src/parse.c`, `get_value`): a quoted
//! scalar or one tagged `!!str` is a string; otherwise `y|yes|true|on` (and their `Y`/`Yes`/
//! `YES`… spellings) are `true`, `n|no|false|off` are `false`, what C's `strtoll(s, 0)` reads
//! whole (decimal, `0x` hex, `0` octal) is an integer, what `strtod` reads whole (and `.inf`,
//! `.nan`) is a double, and anything else a string. A sequence holds scalars of one type.
//! Here the same events come from `yaml-rust2`, and the same rules apply, so `-p x:=010` is 8
//! and `-p x:=yes` is `true` in rclev as in rclpy.
//!
//! Nothing recurses: the parser is a state machine, and the walks below keep their nesting
//! in plain vectors.

use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

use crate::parameter::ParameterValue;

/// Why a YAML value or params file was refused; the message says where.
pub(crate) type YamlError = String;

/// The key under a node's name that holds its parameters.
const PARAMS_KEY: &str = "ros__parameters";

/// One scalar's type and value, by rcl's rules (see the module docs).
pub(crate) fn scalar(text: &str, style: TScalarStyle, is_str_tag: bool) -> ParameterValue {
    let plain = matches!(style, TScalarStyle::Plain);
    if is_str_tag || !plain {
        return ParameterValue::String(text.to_string());
    }
    match text {
        "Y" | "y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            return ParameterValue::Bool(true)
        }
        "N" | "n" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            return ParameterValue::Bool(false)
        }
        _ => {}
    }
    if let Some(i) = c_integer(text) {
        return ParameterValue::Integer(i);
    }
    if let Some(d) = c_double(text) {
        return ParameterValue::Double(d);
    }
    ParameterValue::String(text.to_string())
}

/// What `strtoll(text, &end, 0)` reads when it consumes all of `text` without overflow.
fn c_integer(text: &str) -> Option<i64> {
    let t = text.trim_start();
    let (negative, digits) = match t.as_bytes().first()? {
        b'-' => (true, &t[1..]),
        b'+' => (false, &t[1..]),
        _ => (false, t),
    };
    let (radix, digits) = if let Some(hex) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        (16, hex)
    } else if digits.len() > 1 && digits.starts_with('0') {
        (8, &digits[1..])
    } else {
        (10, digits)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    // Through i128 so that i64::MIN (whose magnitude is not an i64) reads as strtoll reads it.
    let magnitude = i128::from_str_radix(digits, radix).ok()?;
    i64::try_from(if negative { -magnitude } else { magnitude }).ok()
}

/// What `strtod` reads when it consumes all of `text` without a range error, plus YAML's
/// `.inf`/`.nan` spellings. (C's hexadecimal floats, `0x1p3`, are left out: they read as
/// strings here.)
fn c_double(text: &str) -> Option<f64> {
    match text {
        ".nan" | ".NaN" | ".NAN" => return Some(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => return Some(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => return Some(f64::NEG_INFINITY),
        _ => {}
    }
    let t = text.trim_start();
    let value: f64 = t.parse().ok()?;
    let spelled_infinite = t.trim_start_matches(['+', '-']).to_ascii_lowercase();
    let literal_inf = spelled_infinite == "inf" || spelled_infinite == "infinity";
    if value.is_infinite() && !literal_inf {
        return None; // overflow: ERANGE
    }
    let mantissa_nonzero = t
        .split(['e', 'E'])
        .next()
        .is_some_and(|m| m.chars().any(|c| c.is_ascii_digit() && c != '0'));
    if value == 0.0 && mantissa_nonzero {
        return None; // underflow: ERANGE
    }
    Some(value)
}

/// Collects a sequence's items, all of one type as rcl requires.
#[derive(Default)]
struct SequenceBuilder {
    items: Vec<ParameterValue>,
}

impl SequenceBuilder {
    fn push(&mut self, item: ParameterValue, at: &str) -> Result<(), YamlError> {
        if let Some(first) = self.items.first() {
            if std::mem::discriminant(first) != std::mem::discriminant(&item) {
                return Err(format!(
                    "sequence items must share one type: {} among {}s{at}",
                    item.type_name(),
                    first.type_name()
                ));
            }
        }
        self.items.push(item);
        Ok(())
    }

    fn finish(self, at: &str) -> Result<ParameterValue, YamlError> {
        use ParameterValue as V;
        let mut items = self.items.into_iter().peekable();
        Ok(match items.peek() {
            None => {
                return Err(format!(
                    "an empty sequence has no type a parameter could take{at}"
                ))
            }
            Some(V::Bool(_)) => V::BoolArray(
                items
                    .filter_map(|v| if let V::Bool(b) = v { Some(b) } else { None })
                    .collect(),
            ),
            Some(V::Integer(_)) => V::IntegerArray(
                items
                    .filter_map(|v| if let V::Integer(i) = v { Some(i) } else { None })
                    .collect(),
            ),
            Some(V::Double(_)) => V::DoubleArray(
                items
                    .filter_map(|v| if let V::Double(d) = v { Some(d) } else { None })
                    .collect(),
            ),
            Some(_) => V::StringArray(
                items
                    .filter_map(|v| if let V::String(s) = v { Some(s) } else { None })
                    .collect(),
            ),
        })
    }
}

fn is_str_tag(tag: &Option<yaml_rust2::parser::Tag>) -> bool {
    tag.as_ref()
        .is_some_and(|t| t.suffix == "str" && (t.handle == "!!" || t.handle.contains("yaml.org")))
}

fn line(mark: &Marker) -> String {
    format!(" (line {})", mark.line())
}

fn next_event<'a>(parser: &mut Parser<std::str::Chars<'a>>) -> Result<(Event, Marker), YamlError> {
    parser.next_token().map_err(|e| format!("not YAML: {e}"))
}

/// A `-p name:=value` value: one scalar, or one flat sequence of scalars of one type.
pub(crate) fn parse_value(text: &str) -> Result<ParameterValue, YamlError> {
    if text.is_empty() {
        return Err("no value after ':='".into());
    }
    let mut parser = Parser::new_from_str(text);
    let mut value = None;
    let mut sequence: Option<SequenceBuilder> = None;
    loop {
        let (event, mark) = next_event(&mut parser)?;
        let at = line(&mark);
        match event {
            Event::StreamEnd => break,
            Event::StreamStart | Event::DocumentStart | Event::DocumentEnd | Event::Nothing => {}
            Event::Scalar(text, style, _, tag) => {
                if matches!(style, TScalarStyle::Plain) && text.is_empty() {
                    return Err(format!("an empty value{at}"));
                }
                let item = scalar(&text, style, is_str_tag(&tag));
                match sequence.as_mut() {
                    Some(seq) => seq.push(item, "")?,
                    None if value.is_none() => value = Some(item),
                    None => return Err("more than one value".into()),
                }
            }
            Event::SequenceStart(..) => {
                if sequence.is_some() {
                    return Err("nested sequences are not parameter values".into());
                }
                if value.is_some() {
                    return Err("more than one value".into());
                }
                sequence = Some(SequenceBuilder::default());
            }
            Event::SequenceEnd => {
                let seq = sequence.take().expect("the parser balances sequences");
                value = Some(seq.finish("")?);
            }
            Event::MappingStart(..) | Event::MappingEnd => {
                return Err("mappings are not parameter values".into())
            }
            Event::Alias(_) => return Err("YAML aliases are not supported (as in rcl)".into()),
        }
    }
    value.ok_or_else(|| "no value after ':='".into())
}

/// A node key of a params file and the parameters it gives, in the file's order.
pub(crate) type NodeParameters = (String, Vec<(String, ParameterValue)>);

/// The parameters a params file gives, by node key (`/**`, `talker`, `/ns/talker`, `ns/*`…),
/// in the order the file names them (a key appears once per `ros__parameters` section; a
/// name again for a later value): the format rcl reads (`node: {ros__parameters: {…}}`,
/// node keys nested as namespaces, parameters nested as dotted names).
/// The most mappings a params file nests (node namespaces, the node, `ros__parameters`, and
/// the dotted parts of parameter names): far more than real files use.
const MAX_NESTING: usize = 64;

pub(crate) fn parse_params_file(text: &str) -> Result<Vec<NodeParameters>, YamlError> {
    let mut out: Vec<NodeParameters> = Vec::new();
    let mut parser = Parser::new_from_str(text);
    // Keys of the mappings we are in, outermost first; `params_at` is the depth of the
    // `ros__parameters` mapping once inside one.
    let mut path: Vec<Option<String>> = Vec::new();
    let mut pending_key: Option<String> = None;
    let mut params_at: Option<usize> = None;
    let mut sequence: Option<(String, SequenceBuilder)> = None;
    loop {
        let (event, mark) = next_event(&mut parser)?;
        let at = line(&mark);
        match event {
            Event::StreamEnd => break,
            Event::StreamStart | Event::DocumentStart | Event::DocumentEnd | Event::Nothing => {}
            Event::Alias(_) => return Err(format!("YAML aliases are not supported{at}")),
            Event::MappingStart(..) => {
                if sequence.is_some() {
                    return Err(format!("a mapping inside a sequence{at}"));
                }
                let key = pending_key.take();
                if !path.is_empty() && key.is_none() {
                    return Err(format!("a mapping as a key{at}"));
                }
                // Each parameter's name joins the keys above it: a file nesting thousands of
                // mappings would cost quadratic time in names alone.
                if path.len() == MAX_NESTING {
                    return Err(format!("mappings nested deeper than {MAX_NESTING}{at}"));
                }
                path.push(key);
            }
            Event::MappingEnd => {
                if params_at == Some(path.len()) {
                    params_at = None;
                }
                path.pop();
                pending_key = None;
            }
            Event::SequenceStart(..) => {
                let Some(key) = pending_key.take() else {
                    return Err(format!("a sequence as a key{at}"));
                };
                if params_at.is_none() {
                    return Err(format!(
                        "a value before {PARAMS_KEY} (node names are mappings){at}"
                    ));
                }
                if sequence.is_some() {
                    return Err(format!("nested sequences are not parameter values{at}"));
                }
                sequence = Some((key, SequenceBuilder::default()));
            }
            Event::SequenceEnd => {
                let (key, seq) = sequence.take().expect("the parser balances sequences");
                let value = seq.finish(&at)?;
                set(&mut out, parameter_name(&path, params_at, &key), value);
            }
            Event::Scalar(text, style, _, tag) => {
                if let Some((_, seq)) = sequence.as_mut() {
                    if matches!(style, TScalarStyle::Plain) && text.is_empty() {
                        return Err(format!("an empty sequence item{at}"));
                    }
                    seq.push(scalar(&text, style, is_str_tag(&tag)), &at)?;
                    continue;
                }
                match pending_key.take() {
                    None => {
                        if text.is_empty() {
                            return Err(format!("an empty key{at}"));
                        }
                        if path.is_empty() {
                            return Err(format!("a params file is a mapping of node names{at}"));
                        }
                        if params_at.is_none() && text.starts_with(PARAMS_KEY) {
                            // `ros__parameters` closes a node name: the keys above it.
                            let node: Vec<&str> =
                                path.iter().flatten().map(String::as_str).collect();
                            if node.is_empty() {
                                return Err(format!("no node name before {PARAMS_KEY}{at}"));
                            }
                            let node = node.join("/");
                            out.push((node, Vec::new()));
                            params_at = Some(path.len() + 1);
                        }
                        pending_key = Some(text);
                    }
                    Some(key) => {
                        if params_at.is_none() {
                            return Err(format!(
                                "a value before {PARAMS_KEY} (node names are mappings){at}"
                            ));
                        }
                        if matches!(style, TScalarStyle::Plain) && text.is_empty() {
                            return Err(format!("parameter {key:?} has no value{at}"));
                        }
                        let value = scalar(&text, style, is_str_tag(&tag));
                        set(&mut out, parameter_name(&path, params_at, &key), value);
                    }
                }
            }
        }
    }
    Ok(out)
}

/// `(node key, dotted parameter name)` of `key` in the mapping at the end of `path`.
fn parameter_name(
    path: &[Option<String>],
    params_at: Option<usize>,
    key: &str,
) -> (String, String) {
    let params_at = params_at.expect("values are refused outside ros__parameters");
    let node: Vec<&str> = path[..params_at - 1]
        .iter()
        .flatten()
        .map(String::as_str)
        .collect();
    let mut name: Vec<&str> = path[params_at..]
        .iter()
        .flatten()
        .map(String::as_str)
        .collect();
    name.push(key);
    (node.join("/"), name.join("."))
}

/// Appends a value to its node's list (a later value for the same name is appended too:
/// [`Arguments`](crate::arguments::Arguments) keeps the last). Node keys are few; a linear search is enough.
fn set(
    out: &mut [(String, Vec<(String, ParameterValue)>)],
    (node, name): (String, String),
    value: ParameterValue,
) {
    if let Some((_, params)) = out.iter_mut().rev().find(|(n, _)| *n == node) {
        params.push((name, value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ParameterValue as V;

    #[test]
    fn scalars_are_typed_as_rcl_types_them() {
        let v = |t: &str| parse_value(t).unwrap();
        assert_eq!(v("true"), V::Bool(true));
        assert_eq!(v("yes"), V::Bool(true));
        assert_eq!(v("Off"), V::Bool(false));
        assert_eq!(v("42"), V::Integer(42));
        assert_eq!(v("-7"), V::Integer(-7));
        assert_eq!(v("0x1F"), V::Integer(31));
        assert_eq!(v("010"), V::Integer(8));
        assert_eq!(v("09"), V::Double(9.0));
        assert_eq!(v("-9223372036854775808"), V::Integer(i64::MIN));
        assert_eq!(v("9223372036854775808"), V::Double(9223372036854775808.0));
        assert_eq!(v("2.5"), V::Double(2.5));
        assert_eq!(v("1e3"), V::Double(1000.0));
        assert_eq!(v(".inf"), V::Double(f64::INFINITY));
        assert_eq!(v("1e999"), V::String("1e999".into()));
        assert_eq!(v("'42'"), V::String("42".into()));
        assert_eq!(v("\"true\""), V::String("true".into()));
        assert_eq!(v("!!str 5"), V::String("5".into()));
        assert_eq!(v("hello world"), V::String("hello world".into()));
        assert_eq!(v("'it''s'"), V::String("it's".into()));
        assert_eq!(v("[1, 2]"), V::IntegerArray(vec![1, 2]));
        assert_eq!(v("[a, 'b']"), V::StringArray(vec!["a".into(), "b".into()]));
        assert_eq!(v("[true, no]"), V::BoolArray(vec![true, false]));
        assert_eq!(v("[1.5, 2.0]"), V::DoubleArray(vec![1.5, 2.0]));
        for bad in [
            "", "[1, 2.5]", "[1, a]", "[[1]]", "{a: 1}", "[]", "[1", "a: b",
        ] {
            assert!(parse_value(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn a_params_file_nesting_thousands_of_mappings_is_refused_at_once() {
        let mut file = String::from("/**:\n  ros__parameters:\n");
        for level in 0..5_000 {
            let indent = " ".repeat(4 + 2 * level);
            file.push_str(&format!("{indent}p{level}: 1\n{indent}n{level}:\n"));
        }
        let e = parse_params_file(&file).unwrap_err();
        assert!(e.contains("nested deeper than 64"), "{e}");
    }

    #[test]
    fn params_files_nest_names() {
        let file = "\
/**:
  ros__parameters:
    rate: 10
    nested:
      gain: 0.5
      names: [a, b]
talker:
  ros__parameters:
    rate: 20
robot:
  cam:
    ros__parameters:
      list:
        - 1
        - 2
";
        let nodes = parse_params_file(file).unwrap();
        assert_eq!(
            nodes,
            vec![
                (
                    "/**".to_string(),
                    vec![
                        ("rate".to_string(), V::Integer(10)),
                        ("nested.gain".to_string(), V::Double(0.5)),
                        (
                            "nested.names".to_string(),
                            V::StringArray(vec!["a".into(), "b".into()])
                        ),
                    ]
                ),
                (
                    "talker".to_string(),
                    vec![("rate".to_string(), V::Integer(20))]
                ),
                (
                    "robot/cam".to_string(),
                    vec![("list".to_string(), V::IntegerArray(vec![1, 2]))]
                ),
            ]
        );
        for bad in [
            "x: 1",
            "ros__parameters: {a: 1}",
            "n:\n  ros__parameters:\n    a: [1, a]",
            "n:\n  ros__parameters:\n    a: &x 1\n    b: *x",
            "n:\n  ros__parameters:\n    a:",
            "- 1",
            "n: [",
        ] {
            assert!(parse_params_file(bad).is_err(), "{bad:?} accepted");
        }
    }
}
