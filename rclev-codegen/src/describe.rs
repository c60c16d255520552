//! REP-2016 type descriptions and the RIHS01 type hash.
//!
//! A type's description is its own field list plus the field lists of every type it
//! references, directly or not, sorted by name. The hash is SHA-256 over that description
//! written as JSON exactly as Python's `json.dumps` writes it (one line, `", "` and `": "`
//! separators, ASCII only), with the default values left out.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use sha2::{Digest, Sha256};

use crate::model::{BaseType, Container, Message, TypeName, Value};

/// The name ROS 2 gives the one member of a struct that has none.
pub const EMPTY_STRUCT_MEMBER: &str = "structure_needs_at_least_one_member";

/// One field as REP-2016 describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldDescription {
    /// The field name.
    pub name: String,
    /// The REP-2016 type id (element id, +48 array, +96 bounded, +144 unbounded sequence).
    pub type_id: u8,
    /// Array size or sequence bound; 0 otherwise.
    pub capacity: u64,
    /// String bound; 0 otherwise.
    pub string_capacity: u64,
    /// `pkg/ns/Name` for nested types; empty otherwise.
    pub nested_type_name: String,
    /// The default value as ROS 2 writes it in a type description; empty if none.
    pub default_value: String,
}

/// One type's own fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndividualDescription {
    /// `pkg/ns/Name`.
    pub type_name: String,
    /// The fields in order (a struct without members gets ROS 2's placeholder member).
    pub fields: Vec<FieldDescription>,
}

/// A type and everything it references.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Description {
    /// The type itself.
    pub type_description: IndividualDescription,
    /// Every referenced type, once, sorted by name.
    pub referenced_type_descriptions: Vec<IndividualDescription>,
}

fn individual(message: &Message) -> IndividualDescription {
    let mut fields: Vec<FieldDescription> = message
        .fields
        .iter()
        .map(|f| {
            let (element_id, string_capacity, nested) = match &f.ty.base {
                BaseType::Primitive(p) => (p.type_id(), 0, String::new()),
                BaseType::String(None) => (17, 0, String::new()),
                BaseType::WString(None) => (18, 0, String::new()),
                BaseType::String(Some(b)) => (21, *b, String::new()),
                BaseType::WString(Some(b)) => (22, *b, String::new()),
                BaseType::Nested(t) => (1, 0, t.to_string()),
            };
            let (offset, capacity) = match f.ty.container {
                Container::Single => (0, 0),
                Container::Array(n) => (48, n),
                Container::Bounded(n) => (96, n),
                Container::Unbounded => (144, 0),
            };
            FieldDescription {
                name: f.name.clone(),
                type_id: element_id + offset,
                capacity,
                string_capacity,
                nested_type_name: nested,
                default_value: f.default.as_ref().map(default_text).unwrap_or_default(),
            }
        })
        .collect();
    if fields.is_empty() {
        fields.push(FieldDescription {
            name: EMPTY_STRUCT_MEMBER.into(),
            type_id: 3,
            capacity: 0,
            string_capacity: 0,
            nested_type_name: String::new(),
            default_value: String::new(),
        });
    }
    IndividualDescription {
        type_name: message.name.to_string(),
        fields,
    }
}

/// A default value the way rosidl writes it into `default_value`: Python's `str()` of the
/// parsed value, so scalars are bare (`True`, `1.5`, `hello`) and arrays are tuples of reprs
/// (`(1, 2)`, `('a', 'b')`, `(0,)`).
pub fn default_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(python_repr).collect();
            let tuple = match inner.len() {
                1 => format!("({},)", inner[0]),
                _ => format!("({})", inner.join(", ")),
            };
            // The tuple reaches the description through an IDL string literal, which
            // rosidl_parser unescapes once more.
            drop_quoting_backslashes(&tuple)
        }
        // rosidl_parser reads `-inf` in the .idl as the name `inf` and drops the minus.
        Value::Float(f) if *f == f64::NEG_INFINITY => "inf".into(),
        other => python_repr(other),
    }
}

/// The last step of rosidl_parser's reading of an IDL string literal: a backslash before `"`
/// or `\\` is dropped (and the character after it kept as is).
pub(crate) fn drop_quoting_backslashes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('\\', Some(&next @ ('"' | '\\'))) => {
                out.push(next);
                chars.next();
            }
            _ => out.push(c),
        }
    }
    out
}

/// Python's `repr()` of a scalar value.
fn python_repr(v: &Value) -> String {
    match v {
        Value::Bool(b) => if *b { "True" } else { "False" }.into(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => python_float(*f),
        Value::String(s) => python_repr_str(s),
        Value::Array(_) => default_text(v),
    }
}

/// Python's `repr(str)`: single quotes unless the text has `'` and no `"`.
fn python_repr_str(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::new();
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// Python's `repr(float)`: shortest round-trip digits, `.0` for integral values, exponent
/// form outside `1e-4 <= |x| < 1e16`.
pub fn python_float(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    let abs = f.abs();
    if (1e-4..1e16).contains(&abs) {
        let s = format!("{f:?}");
        if s.contains('e') {
            // Rust's Debug switches to exponent form at other thresholds; spell it out.
            return format!("{f}");
        }
        s
    } else {
        // Rust writes `1e16`, Python `1e+16`; both use the shortest digits.
        let s = format!("{f:e}");
        let (mantissa, exp) = s.split_once('e').expect("exponent form");
        let exp: i32 = exp.parse().expect("integer exponent");
        format!(
            "{mantissa}e{}{:02}",
            if exp < 0 { '-' } else { '+' },
            exp.abs()
        )
    }
}

/// The description of `name`, with the closure of what it references.
pub fn describe(types: &BTreeMap<TypeName, Message>, name: &TypeName) -> Description {
    let mut seen = BTreeSet::new();
    let mut stack = vec![name.clone()];
    while let Some(t) = stack.pop() {
        for f in &types[&t].fields {
            if let BaseType::Nested(n) = &f.ty.base {
                if seen.insert(n.clone()) {
                    stack.push(n.clone());
                }
            }
        }
    }
    let mut referenced: Vec<IndividualDescription> =
        seen.iter().map(|t| individual(&types[t])).collect();
    // Python sorts by the `pkg/ns/Name` string, which is not TypeName's derived order.
    referenced.sort_by(|a, b| a.type_name.cmp(&b.type_name));
    Description {
        type_description: individual(&types[name]),
        referenced_type_descriptions: referenced,
    }
}

fn json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{u:04x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn json_individual(out: &mut String, d: &IndividualDescription) {
    out.push_str("{\"type_name\": ");
    json_string(out, &d.type_name);
    out.push_str(", \"fields\": [");
    for (i, f) in d.fields.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str("{\"name\": ");
        json_string(out, &f.name);
        let _ = write!(
            out,
            ", \"type\": {{\"type_id\": {}, \"capacity\": {}, \"string_capacity\": {}, \"nested_type_name\": ",
            f.type_id, f.capacity, f.string_capacity
        );
        json_string(out, &f.nested_type_name);
        out.push_str("}}");
    }
    out.push_str("]}");
}

/// The exact text REP-2016 hashes.
pub fn hash_input(d: &Description) -> String {
    let mut out = String::from("{\"type_description\": ");
    json_individual(&mut out, &d.type_description);
    out.push_str(", \"referenced_type_descriptions\": [");
    for (i, r) in d.referenced_type_descriptions.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        json_individual(&mut out, r);
    }
    out.push_str("]}");
    out
}

/// The RIHS01 hash (version 1: SHA-256 of [`hash_input`]).
pub fn rihs01(d: &Description) -> [u8; 32] {
    Sha256::digest(hash_input(d).as_bytes()).into()
}

/// `RIHS01_` and the hash in lower-case hex.
pub fn hash_string(hash: &[u8; 32]) -> String {
    let mut s = String::from("RIHS01_");
    for b in hash {
        let _ = write!(s, "{b:02x}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_message;
    use std::path::Path;

    #[test]
    fn std_msgs_string_hash_matches_rep_2016_example() {
        let m = parse_message(
            "string data\n",
            TypeName::msg("std_msgs", "String"),
            Path::new("String.msg"),
            1,
        )
        .unwrap();
        let types = BTreeMap::from([(m.name.clone(), m.clone())]);
        let d = describe(&types, &m.name);
        assert_eq!(
            hash_input(&d),
            "{\"type_description\": {\"type_name\": \"std_msgs/msg/String\", \"fields\": [{\"name\": \"data\", \"type\": {\"type_id\": 17, \"capacity\": 0, \"string_capacity\": 0, \"nested_type_name\": \"\"}}]}, \"referenced_type_descriptions\": []}"
        );
        let h = hash_string(&rihs01(&d));
        assert!(h.starts_with("RIHS01_df668c74"), "{h}");
        assert!(h.ends_with("1a18"), "{h}");
    }

    #[test]
    fn python_float_repr() {
        for (f, s) in [
            (1.5, "1.5"),
            (2.0, "2.0"),
            (-300.0, "-300.0"),
            (1e16, "1e+16"),
            (1.25e-5, "1.25e-05"),
            (0.0001, "0.0001"),
            (123456789012345.0, "123456789012345.0"),
            (0.1, "0.1"),
        ] {
            assert_eq!(python_float(f), s);
        }
    }
}
