//! Parsing `.msg`, `.srv` and `.action` text with ROS 2's rules (those of `rosidl_adapter`).
//!
//! The grammar is line based. Each line is a field (`type name [default]`), a constant
//! (`type NAME=value`), a comment, or — in `.srv`/`.action` — the section separator `---`.
//! Quirks kept on purpose, because they decide what a definition *means* on the wire:
//! - `#` starts a comment anywhere, even inside a quoted string constant or default;
//! - a member line holding `=` is a constant, whatever else it holds;
//! - an unqualified type name (`Point`) refers to the same package;
//! - lines split as Python splits them, a tab is a space, a member line may not be indented,
//!   and only a line that is exactly `---` separates `.srv`/`.action` sections;
//! - integers are Python `int()` literals (`+5`, `1_000`, `0x1f`, `0o17`, `0b101`);
//! - a string constant or single string default means what it means after rosidl's `.idl`
//!   round trip, where backslash escapes are interpreted (`"a\tb"` holds a tab).

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
    /// The text before any comment, with trailing whitespace removed; empty (or blank) for
    /// blank and comment-only lines.
    code: &'a str,
    /// The comment text after `#`, if any.
    comment: Option<&'a str>,
}

/// Splits text into lines the way Python's `str.splitlines()` does (rosidl's reader): at
/// `\n`, `\r`, `\r\n`, `\x0b`, `\x0c`, `\x1c`, `\x1d`, `\x1e`, `\u{85}`, `\u{2028}` and
/// `\u{2029}`.
pub(crate) fn python_lines(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let is_break = matches!(
            c,
            '\n' | '\r'
                | '\x0b'
                | '\x0c'
                | '\x1c'
                | '\x1d'
                | '\x1e'
                | '\u{85}'
                | '\u{2028}'
                | '\u{2029}'
        );
        if !is_break {
            continue;
        }
        out.push(&text[start..at]);
        let mut end = at + c.len_utf8();
        if c == '\r' {
            if let Some(&(_, '\n')) = chars.peek() {
                chars.next();
                end += 1;
            }
        }
        start = end;
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

fn lines(text: &str, first_line: usize) -> impl Iterator<Item = Line<'_>> {
    python_lines(text)
        .into_iter()
        .enumerate()
        .map(move |(i, raw)| {
            let (code, comment) = match raw.find('#') {
                Some(at) => (&raw[..at], Some(&raw[at + 1..])),
                None => (raw, None),
            };
            Line {
                number: first_line + i,
                code: code.trim_end(),
                comment,
            }
        })
}

/// Parses the text of a `.msg` file (or one section of a `.srv`/`.action`).
///
/// `first_line` is the file line the text starts on, so that errors point into the file. The
/// message has no [`source_text`](Message::source_text): the caller, who knows whether the
/// text is a whole file, sets it.
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
        source_text: None,
    };
    // Comment lines not yet attached: they document the next member, or — when a blank line
    // follows them before any member — the message itself.
    let mut pending: Vec<String> = Vec::new();
    let mut seen_member = false;
    // rosidl reads a tab as a space.
    let text = text.replace('\t', " ");
    for line in lines(&text, first_line) {
        if line.code.trim_start().is_empty() {
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
        if line.code.starts_with(' ') {
            return Err(Error::at(
                source,
                line.number,
                format!(
                    "'{}' is indented: ROS 2 (rosidl) rejects member lines that start with whitespace",
                    line.code.trim_start()
                ),
            ));
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
    // rosidl splits at the first space (tabs are spaces by now), not at other whitespace.
    let (type_text, rest) = match code.find(' ') {
        Some(at) => (&code[..at], code[at + 1..].trim_start()),
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
            .and_then(through_idl)
            .map_err(|m| err(format!("constant '{name}': {m}")))?;
        message.constants.push(Constant {
            name: name.to_string(),
            ty: ty.base,
            value,
            doc,
        });
        return Ok(());
    }
    let (name, default_text) = match rest.find(' ') {
        Some(at) => (&rest[..at], Some(rest[at + 1..].trim_start())),
        None => (rest, None),
    };
    let default_text = default_text.filter(|t| !t.is_empty());
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
    // Python `int(text)`, as rosidl reads sizes and bounds.
    match parse_decimal(text) {
        Some(n) if n <= 0 => Err(format!("{what} must be greater than zero")),
        Some(n) => u64::try_from(n).map_err(|_| format!("{what} '{text}' is too large")),
        None => Err(format!("{what} '{text}' is not a positive integer")),
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
        [pkg, name] => (*pkg, *name),
        // rosidl refuses `pkg/msg/Name` in a field type; so does rclev, so that what builds
        // here builds with ROS 2.
        [pkg, "msg", name] => {
            return Err(format!(
                "invalid type '{text}': write '{pkg}/{name}' (field types name the package and the message only)"
            ))
        }
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
        return parse_scalar(&ty.base, text).and_then(through_idl);
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
    // rosidl_adapter writes an array default into the .idl as a Python tuple repr in
    // ISO-8859-1, and rosidl_parser reads the file as UTF-8: non-ASCII text cannot pass.
    if values
        .iter()
        .any(|v| matches!(v, Value::String(s) if !s.is_ascii()))
    {
        return Err(format!(
            "array default '{text}' has non-ASCII text, which ROS 2's rosidl cannot generate"
        ));
    }
    Ok(Value::Array(values))
}

/// Splits the inside of `[…]` into elements as rosidl does: at commas; for strings, commas
/// inside quotes don't split (rosidl's `parse_string_array_value_string`, quirks included).
fn split_array_items(inner: &str, strings: bool) -> Result<Vec<String>, String> {
    if inner.is_empty() {
        return Ok(Vec::new());
    }
    if !strings {
        return Ok(inner.split(',').map(|s| s.trim().to_string()).collect());
    }
    let bad = || format!("cannot split '[{inner}]' into strings");
    let mut items = Vec::new();
    let mut rest = inner;
    while !rest.is_empty() {
        rest = rest.trim_start_matches(' ');
        if rest.is_empty() || rest.starts_with(',') {
            return Err(bad());
        }
        let mut quoted = false;
        for q in ['"', '\''] {
            if rest.starts_with(q) {
                quoted = true;
                let end = matching_end_quote(rest, q)
                    .ok_or_else(|| format!("string [{rest}] is not closed by an unescaped {q}"))?;
                items.push(rest[1..end + 1].replace(&format!("\\{q}"), &q.to_string()));
                rest = rest.get(end + 2..).unwrap_or("");
            }
        }
        if !quoted {
            match rest.find(',') {
                None => {
                    items.push(rest.to_string());
                    rest = "";
                }
                Some(at) => {
                    items.push(rest[..at].to_string());
                    rest = &rest[at..];
                }
            }
        }
        rest = rest.trim_start_matches(' ');
        if let Some(r) = rest.strip_prefix(',') {
            rest = r;
        }
    }
    Ok(items.into_iter().map(|s| s.trim().to_string()).collect())
}

/// rosidl's `find_matching_end_quote`, bug for bug: the index (in `s`, minus one) of the quote
/// that closes the quoted string `s` starts with.
fn matching_end_quote(s: &str, q: char) -> Option<usize> {
    let escaped = format!("\\{q}");
    let mut string = s;
    let mut last = 0;
    while !string.is_empty() {
        let tail = string.get(1..)?;
        let ending = tail.find(q)?;
        if string.get(ending..ending + 2) != Some(escaped.as_str()) {
            return Some(last + ending);
        }
        string = string.get(ending + 2..).unwrap_or("");
        // rosidl sets (does not add) the offset here.
        last = ending + 2;
    }
    None
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
            let v = parse_decimal(text)
                .or_else(|| parse_prefixed(text))
                .ok_or_else(|| format!("'{text}' is not an integer"))?;
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
            // rosidl counts characters (code points), for string and wstring alike.
            let len = s.chars().count();
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

/// Digits with single `_` between them, as Python's number literals allow.
fn python_digits(digits: &str, radix: u32) -> Option<String> {
    if digits.is_empty()
        || digits.starts_with('_')
        || digits.ends_with('_')
        || digits.contains("__")
    {
        return None;
    }
    let clean: String = digits.chars().filter(|&c| c != '_').collect();
    clean.chars().all(|c| c.is_digit(radix)).then_some(clean)
}

fn sign(text: &str) -> Option<(bool, &str)> {
    let t = text.trim();
    Some(match t.as_bytes().first()? {
        b'-' => (true, &t[1..]),
        b'+' => (false, &t[1..]),
        _ => (false, t),
    })
}

/// Python `int(text)`: optional sign, decimal digits (leading zeros allowed), `_` between
/// digits. (Python also takes non-ASCII decimal digits; rclev does not.)
fn parse_decimal(text: &str) -> Option<i128> {
    let (negative, digits) = sign(text)?;
    let v: i128 = python_digits(digits, 10)?.parse().ok()?;
    Some(if negative { -v } else { v })
}

/// Python `int(text, 0)` for the prefixed forms: `0x1f`, `0o17`, `0b101` (any case, an
/// optional `_` after the prefix), with an optional sign. rosidl falls back to it for integers.
fn parse_prefixed(text: &str) -> Option<i128> {
    let (negative, t) = sign(text)?;
    let radix = match t.get(..2)?.to_ascii_lowercase().as_str() {
        "0x" => 16,
        "0o" => 8,
        "0b" => 2,
        _ => return None,
    };
    let digits = &t[2..];
    let digits = digits.strip_prefix('_').unwrap_or(digits);
    let v = i128::from_str_radix(&python_digits(digits, radix)?, radix).ok()?;
    Some(if negative { -v } else { v })
}

/// Python `float()` semantics: decimal and exponent forms, `inf`, `infinity`, `nan`, `_`
/// only between digits.
fn parse_float(text: &str) -> Option<f64> {
    let t = text.trim();
    let b = t.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        if c == b'_'
            && !(i > 0
                && b[i - 1].is_ascii_digit()
                && b.get(i + 1).is_some_and(|n| n.is_ascii_digit()))
        {
            return None;
        }
    }
    let clean: String = t.chars().filter(|&c| c != '_').collect();
    clean.parse::<f64>().ok()
}

/// Strips one pair of matching outer quotes and unescapes that quote, as rosidl does.
/// Unquoted text is taken as is.
fn unquote(text: &str) -> Result<String, String> {
    for q in ['"', '\''] {
        if text.starts_with(q) && text.ends_with(q) {
            // A lone `"` counts as opened and closed, as in rosidl.
            let inner = text.get(1..text.len() - 1).unwrap_or("");
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

/// What a string constant or single string default means in ROS 2, where the value reaches
/// the generated code through the `.idl` file: `rosidl_adapter` writes it into an IDL string
/// literal after Python's `unicode_escape` codec (so `\t` becomes a tab, `\x41` an `A`), and
/// `rosidl_parser` reads the literal back with the IDL escapes. Values the real pipeline
/// cannot carry (a `\n` escape, a malformed `\x`, a code point it cannot write) are errors.
/// Array defaults are not affected: rosidl stores them as a Python tuple repr.
fn through_idl(value: Value) -> Result<Value, String> {
    let Value::String(s) = value else {
        return Ok(value);
    };
    if !s.contains('\\') {
        return Ok(Value::String(s));
    }
    let cannot = |why: &str| format!("string {s:?}: {why} (ROS 2's rosidl cannot generate it)");
    // 1. Python `s.encode().decode('unicode_escape')`, written out as ISO-8859-1 and read
    //    back as UTF-8: on bytes, each escape becomes the byte of its code point.
    let b = s.as_bytes();
    let mut bytes = Vec::with_capacity(b.len());
    let mut i = 0;
    let hex = |at: usize, n: usize| -> Option<u32> {
        let digits = b.get(at..at + n)?;
        if !digits.iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        u32::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
    };
    while i < b.len() {
        if b[i] != b'\\' {
            bytes.push(b[i]);
            i += 1;
            continue;
        }
        let Some(&c) = b.get(i + 1) else {
            return Err(cannot("it ends with a backslash"));
        };
        let (code, len) = match c {
            b'\\' | b'\'' | b'"' => (c as u32, 2),
            b'a' => (7, 2),
            b'b' => (8, 2),
            b'f' => (0xc, 2),
            b'n' => (0xa, 2),
            b'r' => (0xd, 2),
            b't' => (9, 2),
            b'v' => (0xb, 2),
            b'0'..=b'7' => {
                let n = b[i + 1..]
                    .iter()
                    .take(3)
                    .take_while(|d| matches!(d, b'0'..=b'7'))
                    .count();
                let digits = std::str::from_utf8(&b[i + 1..i + 1 + n]).expect("ASCII");
                (u32::from_str_radix(digits, 8).expect("octal"), 1 + n)
            }
            b'x' | b'u' | b'U' => {
                let n = match c {
                    b'x' => 2,
                    b'u' => 4,
                    _ => 8,
                };
                let v = hex(i + 2, n)
                    .ok_or_else(|| cannot(&format!("truncated \\{} escape", c as char)))?;
                (v, 2 + n)
            }
            b'N' => return Err(cannot("\\N{…} escapes are not supported")),
            // Unknown escapes stay as they are.
            _ => {
                bytes.push(b'\\');
                i += 1;
                continue;
            }
        };
        let byte =
            u8::try_from(code).map_err(|_| cannot("an escape gives a code point above U+00FF"))?;
        bytes.push(byte);
        i += len;
    }
    let s1 = String::from_utf8(bytes)
        .map_err(|_| cannot("its escapes give bytes that are not UTF-8"))?;
    // 2. The IDL string literal: one line, every `"` escaped.
    if s1.contains(['\n', '\r']) {
        return Err(cannot("it holds a line break"));
    }
    let literal = s1.replace('"', "\\\"");
    let mut run = 0;
    for c in literal.chars() {
        if c == '"' && run % 2 == 0 {
            return Err(cannot("a backslash escapes the IDL literal's quote"));
        }
        run = if c == '\\' { run + 1 } else { 0 };
    }
    if run % 2 == 1 {
        return Err(cannot(
            "a backslash escapes the IDL literal's closing quote",
        ));
    }
    // 3. rosidl_parser's decoding of the literal: IDL escapes, then `\"` and `\\` once more.
    let c: Vec<char> = literal.chars().collect();
    let mut decoded = Vec::with_capacity(c.len());
    let mut i = 0;
    while i < c.len() {
        if c[i] != '\\' || i + 1 == c.len() {
            decoded.push(c[i]);
            i += 1;
            continue;
        }
        let next = c[i + 1];
        let simple = match next {
            'n' => Some('\n'),
            't' => Some('\t'),
            'v' => Some('\x0b'),
            'b' => Some('\x08'),
            'r' => Some('\r'),
            'f' => Some('\x0c'),
            'a' => Some('\x07'),
            '\\' | '\'' | '"' => Some(next),
            _ => None,
        };
        if let Some(ch) = simple {
            decoded.push(ch);
            i += 2;
        } else if next == '?' {
            // Python's codec keeps the unknown escape `\?`.
            decoded.extend(['\\', '?']);
            i += 2;
        } else if next.is_digit(8) {
            let n = c[i + 1..]
                .iter()
                .take(3)
                .take_while(|d| d.is_digit(8))
                .count();
            let v = c[i + 1..i + 1 + n]
                .iter()
                .fold(0, |v, d| v * 8 + d.to_digit(8).expect("octal"));
            decoded.push(char::from_u32(v).expect("at most 0o777"));
            i += 1 + n;
        } else if next == 'x' && c.get(i + 2).is_some_and(|d| d.is_ascii_hexdigit()) {
            let n = c[i + 2..]
                .iter()
                .take(2)
                .take_while(|d| d.is_ascii_hexdigit())
                .count();
            if n < 2 {
                return Err(cannot("truncated \\x escape"));
            }
            let v = c[i + 2..i + 4]
                .iter()
                .fold(0, |v, d| v * 16 + d.to_digit(16).expect("hex"));
            decoded.push(char::from_u32(v).expect("a byte"));
            i += 4;
        } else {
            decoded.push('\\');
            i += 1;
        }
    }
    let decoded: String = decoded.into_iter().collect();
    Ok(Value::String(crate::describe::drop_quoting_backslashes(
        &decoded,
    )))
}

/// Splits a `.srv`/`.action` file at its `---` lines into sections, each with the file line
/// it starts on.
fn sections(text: &str, source: &Path, expected: usize) -> Result<Vec<(String, usize)>> {
    let mut out = vec![(String::new(), 1)];
    let lines = python_lines(text);
    for (i, line) in lines.iter().enumerate() {
        // Only a line that is exactly `---` separates, as in rosidl.
        if *line == "---" {
            if out.len() == expected {
                return Err(Error::at(
                    source,
                    i + 1,
                    format!(
                        "one '---' separator line too many: expected {}",
                        expected - 1
                    ),
                ));
            }
            out.push((String::new(), i + 2));
        } else {
            let last = out.last_mut().expect("non-empty");
            last.0.push_str(line);
            last.0.push('\n');
        }
    }
    if out.len() != expected {
        return Err(Error::at(
            source,
            lines.len().max(1),
            format!(
                "expected {} '---' separator line{} (a line that is exactly '---'), found {} by the end of the file",
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
        source_text: text.into(),
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
        source_text: text.into(),
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
