//! Parsing `.msg`, `.srv` and `.action` text with ROS 2's rules (those of `rosidl_adapter`).
//!
//! The grammar is line based. Each line is a field (`type name [default]`), a constant
//! (`type NAME=value`), a comment, or — in `.srv`/`.action` — the section separator `---`.
//! Quirks kept on purpose, because they decide what a definition *means* on the wire:
//! - `#` starts a comment anywhere, even inside a quoted string constant or default;
//! - a member line holding `=` is a constant, whatever else it holds;
//! - an unqualified type name (`Point`) refers to the same package.

use std::path::Path;

use crate::error::{Error, Result};
use crate::model::{
    Action, BaseType, Constant, Container, Field, FieldType, Message, Namespace, Primitive,
    Service, TypeName, Value,
};

/// One line of a definition after comment stripping.
struct Line<'a> {
    /// 1-based line number in the file.
    number: usize,
    /// The text before any comment, trimmed; empty for blank and comment-only lines.
    code: &'a str,
    /// The comment text after `#`, if any.
    comment: Option<&'a str>,
}

fn lines(text: &str, first_line: usize) -> impl Iterator<Item = Line<'_>> {
    text.lines().enumerate().map(move |(i, raw)| {
        let (code, comment) = match raw.find('#') {
            Some(at) => (&raw[..at], Some(&raw[at + 1..])),
            None => (raw, None),
        };
        Line {
            number: first_line + i,
            code: code.trim(),
            comment,
        }
    })
}

/// Parses the text of a `.msg` file (or one section of a `.srv`/`.action`).
///
/// `first_line` is the file line the text starts on, so that errors point into the file.
pub fn parse_message(
    text: &str,
    name: TypeName,
    source: &Path,
    first_line: usize,
) -> Result<Message> {
    let mut message = Message {
        name,
        fields: Vec::new(),
        constants: Vec::new(),
        doc: Vec::new(),
        source: source.to_path_buf(),
    };
    // Comment lines not yet attached: they document the next member, or — when a blank line
    // follows them before any member — the message itself.
    let mut pending: Vec<String> = Vec::new();
    let mut seen_member = false;
    for line in lines(text, first_line) {
        if line.code.is_empty() {
            match line.comment {
                Some(c) => pending.push(clean_comment(c)),
                None => {
                    if !seen_member && !pending.is_empty() {
                        message.doc.append(&mut pending);
                    }
                    pending.clear();
                }
            }
            continue;
        }
        seen_member = true;
        let mut doc = std::mem::take(&mut pending);
        if let Some(c) = line.comment {
            doc.push(clean_comment(c));
        }
        parse_member(&mut message, line.code, line.number, doc)?;
    }
    if !seen_member {
        message.doc.append(&mut pending);
    }
    Ok(message)
}

fn clean_comment(c: &str) -> String {
    c.strip_prefix(' ').unwrap_or(c).trim_end().to_string()
}

fn parse_member(message: &mut Message, code: &str, line: usize, doc: Vec<String>) -> Result<()> {
    let source = message.source.clone();
    let err = |m: String| Error::at(&source, line, m);
    let (type_text, rest) = match code.find(char::is_whitespace) {
        Some(at) => (&code[..at], code[at..].trim_start()),
        None => (code, ""),
    };
    if rest.is_empty() {
        return Err(err(format!(
            "'{code}' has a type but no name: expected 'type name' or 'type NAME=value'"
        )));
    }
    if let Some(eq) = rest.find('=') {
        let name = rest[..eq].trim_end();
        let value_text = rest[eq + 1..].trim_start();
        check_constant_name(name).map_err(&err)?;
        let ty = parse_field_type(type_text, &message.name.package).map_err(&err)?;
        if ty.container != Container::Single {
            return Err(err(format!(
                "constant '{name}' has array type '{type_text}': constants must be primitives or strings"
            )));
        }
        match &ty.base {
            BaseType::Nested(_) => {
                return Err(err(format!(
                    "constant '{name}' has message type '{type_text}': constants must be primitives or strings"
                )))
            }
            BaseType::String(Some(_)) | BaseType::WString(Some(_)) => {
                return Err(err(format!(
                    "constant '{name}' has bounded string type '{type_text}': use 'string'"
                )))
            }
            _ => {}
        }
        if message.constants.iter().any(|c| c.name == name) {
            return Err(err(format!("constant '{name}' is defined twice")));
        }
        let value = parse_scalar(&ty.base, value_text)
            .map_err(|m| err(format!("constant '{name}': {m}")))?;
        message.constants.push(Constant {
            name: name.to_string(),
            ty: ty.base,
            value,
            doc,
        });
        return Ok(());
    }
    let (name, default_text) = match rest.find(char::is_whitespace) {
        Some(at) => (&rest[..at], Some(rest[at..].trim_start())),
        None => (rest, None),
    };
    check_field_name(name).map_err(&err)?;
    let ty = parse_field_type(type_text, &message.name.package).map_err(&err)?;
    if message.fields.iter().any(|f| f.name == name) {
        return Err(err(format!("field '{name}' is defined twice")));
    }
    let default = match default_text {
        Some(text) => {
            Some(parse_default(&ty, text).map_err(|m| err(format!("field '{name}': {m}")))?)
        }
        None => None,
    };
    message.fields.push(Field {
        name: name.to_string(),
        ty,
        default,
        doc,
        line,
    });
    Ok(())
}

/// `^(?!.*__)(?!.*_$)[a-z][a-z0-9_]*$`: rosidl's rule for field and package names.
fn is_lower_snake(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some('a'..='z'))
        && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_'))
        && !name.contains("__")
        && !name.ends_with('_')
}

fn check_field_name(name: &str) -> Result<(), String> {
    if is_lower_snake(name) {
        Ok(())
    } else {
        Err(format!(
            "invalid field name '{name}': field names are lower snake case, start with a letter, \
             and have no '__' and no trailing '_'"
        ))
    }
}

/// `^[A-Z]([A-Z0-9_]?[A-Z0-9]+)*$`: upper case, single underscores, none at either end.
fn check_constant_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let ok = matches!(chars.next(), Some('A'..='Z'))
        && chars.all(|c| matches!(c, 'A'..='Z' | '0'..='9' | '_'))
        && !name.contains("__")
        && !name.ends_with('_');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "invalid constant name '{name}': constant names are upper case with single \
             underscores, starting with a letter"
        ))
    }
}

/// `^[A-Z][A-Za-z0-9]*$`: rosidl's rule for message, service and action names.
pub fn is_type_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some('A'..='Z')) && chars.all(|c| c.is_ascii_alphanumeric())
}

/// Whether `name` is a valid package name.
pub fn is_package_name(name: &str) -> bool {
    is_lower_snake(name)
}

fn parse_bound(text: &str, what: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(0) => Err(format!("{what} must be greater than zero")),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("{what} '{text}' is not a positive integer")),
    }
}

/// Parses a field type such as `float64[<=3]`, `string<=8[2]` or `geometry_msgs/Point[]`.
pub fn parse_field_type(text: &str, package: &str) -> Result<FieldType, String> {
    let (base_text, container) = if let Some(body) = text.strip_suffix(']') {
        let open = body
            .rfind('[')
            .ok_or_else(|| format!("invalid type '{text}': ']' without '['"))?;
        let inner = &body[open + 1..];
        let container = if inner.is_empty() {
            Container::Unbounded
        } else if let Some(bound) = inner.strip_prefix("<=") {
            Container::Bounded(parse_bound(bound, "sequence bound")?)
        } else {
            Container::Array(parse_bound(inner, "array size")?)
        };
        (&body[..open], container)
    } else {
        (text, Container::Single)
    };
    Ok(FieldType {
        base: parse_base_type(base_text, package)?,
        container,
    })
}

fn parse_base_type(text: &str, package: &str) -> Result<BaseType, String> {
    if let Some(p) = Primitive::from_msg(text) {
        return Ok(BaseType::Primitive(p));
    }
    for (prefix, wide) in [("wstring", true), ("string", false)] {
        if let Some(rest) = text.strip_prefix(prefix) {
            let bound = if rest.is_empty() {
                None
            } else if let Some(b) = rest.strip_prefix("<=") {
                Some(parse_bound(b, "string bound")?)
            } else {
                continue;
            };
            return Ok(if wide {
                BaseType::WString(bound)
            } else {
                BaseType::String(bound)
            });
        }
    }
    if text == "time" || text == "duration" {
        return Err(format!(
            "'{text}' is a ROS 1 type: use builtin_interfaces/{} instead",
            if text == "time" { "Time" } else { "Duration" }
        ));
    }
    let parts: Vec<&str> = text.split('/').collect();
    let (pkg, name) = match parts.as_slice() {
        [name] => (package, *name),
        [pkg, name] | [pkg, "msg", name] => (*pkg, *name),
        _ => return Err(format!("invalid type '{text}'")),
    };
    if text.is_empty() {
        return Err("missing type".into());
    }
    if !is_package_name(pkg) {
        return Err(format!(
            "invalid type '{text}': '{pkg}' is not a valid package name"
        ));
    }
    if !is_type_name(name) {
        return Err(format!(
            "unknown type '{text}': not a primitive, string or message name \
             (message names are CamelCase)"
        ));
    }
    Ok(BaseType::Nested(TypeName::msg(pkg, name)))
}

/// Parses a default value for a field of type `ty`.
fn parse_default(ty: &FieldType, text: &str) -> Result<Value, String> {
    if let BaseType::Nested(_) = ty.base {
        return Err("fields of message type cannot have default values".into());
    }
    if ty.container == Container::Single {
        return parse_scalar(&ty.base, text);
    }
    let inner = text
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .ok_or_else(|| format!("array default '{text}' must be written as [a, b, …]"))?;
    let items = split_array_items(
        inner,
        matches!(ty.base, BaseType::String(_) | BaseType::WString(_)),
    )?;
    match ty.container {
        Container::Array(n) if items.len() as u64 != n => {
            return Err(format!(
                "array of size {n} needs exactly {n} default values, got {}",
                items.len()
            ))
        }
        Container::Bounded(n) if items.len() as u64 > n => {
            return Err(format!(
                "sequence bounded to {n} has {} default values",
                items.len()
            ))
        }
        _ => {}
    }
    let values = items
        .iter()
        .map(|item| parse_scalar(&ty.base, item))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Value::Array(values))
}

/// Splits the inside of `[…]` at commas; for strings, commas inside quotes don't split.
fn split_array_items(inner: &str, strings: bool) -> Result<Vec<String>, String> {
    if inner.trim().is_empty() {
        return Ok(Vec::new());
    }
    if !strings {
        return Ok(inner.split(',').map(|s| s.trim().to_string()).collect());
    }
    let mut items = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in inner.chars() {
        match quote {
            Some(q) => {
                current.push(c);
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                }
            }
            None if c == ',' => items.push(std::mem::take(&mut current).trim().to_string()),
            None => {
                if (c == '"' || c == '\'') && current.trim().is_empty() {
                    quote = Some(c);
                }
                current.push(c);
            }
        }
    }
    if quote.is_some() {
        return Err(format!("unterminated quote in '[{inner}]'"));
    }
    items.push(current.trim().to_string());
    Ok(items)
}

/// Parses one value of a primitive or string type (a constant, or one default element).
fn parse_scalar(base: &BaseType, text: &str) -> Result<Value, String> {
    match base {
        BaseType::Primitive(Primitive::Bool) => match text.to_ascii_lowercase().as_str() {
            "true" | "1" => Ok(Value::Bool(true)),
            "false" | "0" => Ok(Value::Bool(false)),
            _ => Err(format!("'{text}' is not a bool (true, false, 1 or 0)")),
        },
        BaseType::Primitive(p) if p.is_float() => parse_float(text)
            .map(Value::Float)
            .ok_or_else(|| format!("'{text}' is not a number")),
        BaseType::Primitive(p) => {
            let (min, max) = p.int_range().expect("integer type");
            let v = parse_int(text).ok_or_else(|| format!("'{text}' is not an integer"))?;
            if v < min || v > max {
                return Err(format!(
                    "{v} is out of range for {} [{min}, {max}]",
                    p.rust()
                ));
            }
            Ok(Value::Int(v))
        }
        BaseType::String(bound) | BaseType::WString(bound) => {
            let s = unquote(text)?;
            let len = match base {
                BaseType::WString(_) => s.encode_utf16().count(),
                _ => s.len(),
            };
            if let Some(b) = bound {
                if len as u64 > *b {
                    return Err(format!("string \"{s}\" is longer than its bound {b}"));
                }
            }
            Ok(Value::String(s))
        }
        BaseType::Nested(_) => Err("message types have no literal values".into()),
    }
}

/// Python `int()` semantics for the forms definition files use: optional sign, decimal
/// digits, `_` between digits.
fn parse_int(text: &str) -> Option<i128> {
    let t = text.trim();
    let (negative, digits) = match t.as_bytes().first()? {
        b'-' => (true, &t[1..]),
        b'+' => (false, &t[1..]),
        _ => (false, t),
    };
    if digits.is_empty()
        || digits.starts_with('_')
        || digits.ends_with('_')
        || digits.contains("__")
    {
        return None;
    }
    let clean: String = digits.chars().filter(|&c| c != '_').collect();
    if !clean.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let v: i128 = clean.parse().ok()?;
    Some(if negative { -v } else { v })
}

/// Python `float()` semantics: decimal and exponent forms, `inf`, `nan`.
fn parse_float(text: &str) -> Option<f64> {
    let t = text.trim();
    if t.is_empty() || t.contains("__") {
        return None;
    }
    let clean: String = t.chars().filter(|&c| c != '_').collect();
    clean.parse::<f64>().ok()
}

/// Strips one pair of matching outer quotes and unescapes that quote, as rosidl does.
/// Unquoted text is taken as is.
fn unquote(text: &str) -> Result<String, String> {
    for q in ['"', '\''] {
        if text.len() >= 2 && text.starts_with(q) && text.ends_with(q) {
            let inner = &text[1..text.len() - 1];
            let mut out = String::with_capacity(inner.len());
            let mut chars = inner.chars().peekable();
            while let Some(c) = chars.next() {
                if c == '\\' && chars.peek() == Some(&q) {
                    out.push(q);
                    chars.next();
                } else if c == q {
                    return Err(format!("unescaped {q} inside the string {text}"));
                } else {
                    out.push(c);
                }
            }
            return Ok(out);
        }
    }
    Ok(text.to_string())
}

/// Splits a `.srv`/`.action` file at its `---` lines into sections, each with the file line
/// it starts on.
fn sections(text: &str, source: &Path, expected: usize) -> Result<Vec<(String, usize)>> {
    let mut out = vec![(String::new(), 1)];
    for (i, line) in text.lines().enumerate() {
        if line.trim() == "---" {
            out.push((String::new(), i + 2));
        } else {
            let last = out.last_mut().expect("non-empty");
            last.0.push_str(line);
            last.0.push('\n');
        }
    }
    if out.len() != expected {
        return Err(Error::in_file(
            source,
            format!(
                "expected {} '---' separator line{}, found {}",
                expected - 1,
                if expected == 2 { "" } else { "s" },
                out.len() - 1
            ),
        ));
    }
    Ok(out)
}

fn named(package: &str, namespace: Namespace, name: String) -> TypeName {
    TypeName {
        package: package.into(),
        namespace,
        name,
    }
}

/// Parses a `.srv` file: request, `---`, response.
pub fn parse_service(text: &str, package: &str, name: &str, source: &Path) -> Result<Service> {
    let parts = sections(text, source, 2)?;
    let part = |i: usize, suffix: &str| {
        parse_message(
            &parts[i].0,
            named(package, Namespace::Srv, format!("{name}_{suffix}")),
            source,
            parts[i].1,
        )
    };
    let mut request = part(0, "Request")?;
    let doc = std::mem::take(&mut request.doc);
    Ok(Service {
        name: named(package, Namespace::Srv, name.into()),
        request,
        response: part(1, "Response")?,
        doc,
    })
}

/// Parses an `.action` file: goal, `---`, result, `---`, feedback.
pub fn parse_action(text: &str, package: &str, name: &str, source: &Path) -> Result<Action> {
    let parts = sections(text, source, 3)?;
    let part = |i: usize, suffix: &str| {
        parse_message(
            &parts[i].0,
            named(package, Namespace::Action, format!("{name}_{suffix}")),
            source,
            parts[i].1,
        )
    };
    let mut goal = part(0, "Goal")?;
    let doc = std::mem::take(&mut goal.doc);
    Ok(Action {
        name: named(package, Namespace::Action, name.into()),
        goal,
        result: part(1, "Result")?,
        feedback: part(2, "Feedback")?,
        doc,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(text: &str) -> Result<Message> {
        parse_message(text, TypeName::msg("pkg", "M"), Path::new("msg/M.msg"), 1)
    }

    #[test]
    fn fields_constants_defaults() {
        let m = msg("# The doc\n\n\
             int32 X=5 # five\n\
             string S=hi # there\n\
             string Q=\"a # b\"\n\
             float64[<=3] v [1.5, 2, -3e2]\n\
             string<=4[2] names [\"a,b\", 'c']\n\
             Header h\n\
             geometry_msgs/Point p\n\
             bool flag True\n")
        .unwrap();
        assert_eq!(m.doc, vec!["The doc"]);
        assert_eq!(m.constants[0].value, Value::Int(5));
        assert_eq!(m.constants[0].doc, vec!["five"]);
        assert_eq!(m.constants[1].value, Value::String("hi".into()));
        // '#' starts a comment even inside quotes; the quote is then unbalanced and kept.
        assert_eq!(m.constants[2].value, Value::String("\"a".into()));
        assert_eq!(
            m.fields[0].default,
            Some(Value::Array(vec![
                Value::Float(1.5),
                Value::Float(2.0),
                Value::Float(-300.0)
            ]))
        );
        assert_eq!(m.fields[0].ty.container, Container::Bounded(3));
        assert_eq!(
            m.fields[1].default,
            Some(Value::Array(vec![
                Value::String("a,b".into()),
                Value::String("c".into())
            ]))
        );
        assert_eq!(
            m.fields[2].ty.base,
            BaseType::Nested(TypeName::msg("pkg", "Header"))
        );
        assert_eq!(
            m.fields[3].ty.base,
            BaseType::Nested(TypeName::msg("geometry_msgs", "Point"))
        );
        assert_eq!(m.fields[4].default, Some(Value::Bool(true)));
    }

    #[test]
    fn errors_are_located() {
        let e = msg("int32 a\nuint8 X=300\n").unwrap_err();
        assert_eq!(e.line, Some(2));
        assert!(e.to_string().contains("out of range"), "{e}");
        for (bad, needle) in [
            ("int32 Bad_name", "invalid field name"),
            ("int32 a__b", "invalid field name"),
            ("int32 a_", "invalid field name"),
            ("int32 lower=1", "invalid constant name"),
            ("int32", "no name"),
            ("time t", "ROS 1 type"),
            ("foo x", "unknown type"),
            ("int32[0] x", "greater than zero"),
            ("int32[<=x] x", "not a positive integer"),
            ("int32[2] x [1]", "exactly 2"),
            ("int32[<=1] x [1, 2]", "bounded to 1"),
            ("string<=2 s \"abc\"", "longer than its bound"),
            ("bool b maybe", "not a bool"),
            ("int32 a\nint32 a", "defined twice"),
            ("int32[] A=1", "array type"),
            ("Foo f 3", "message type cannot have default"),
        ] {
            let e = msg(bad).unwrap_err();
            assert!(e.to_string().contains(needle), "{bad}: {e}");
            assert!(e.line.is_some());
        }
    }

    #[test]
    fn services_and_actions_split() {
        let s = parse_service("int64 a\n---\nint64 sum\n", "p", "Add", Path::new("A.srv")).unwrap();
        assert_eq!(s.request.name.to_string(), "p/srv/Add_Request");
        assert_eq!(s.response.fields[0].line, 3);
        assert!(parse_service("int64 a\n", "p", "Add", Path::new("A.srv")).is_err());
        let a = parse_action(
            "int32 o\n---\n---\nint32 f\n",
            "p",
            "F",
            Path::new("F.action"),
        )
        .unwrap();
        assert_eq!(a.result.fields.len(), 0);
        assert_eq!(a.feedback.name.to_string(), "p/action/F_Feedback");
    }
}
