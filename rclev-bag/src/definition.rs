//! The `ros2msg` schema of a message type, as rosbag2's MCAP storage writes it: the type's
//! `.msg` text, then each type it refers to (directly or not) once, each after a newline, a
//! line of 80 `=` and `MSG: pkg/Type`. `mcap-ros2-support`, Foxglove and rosbag2's readers
//! decode a bag's messages from this text alone.
//!
//! The text of a type comes from its type sources (the interface file rclev generated it
//! from); a type without one (a type learnt from a peer's `get_type_description` without
//! sources, or a message derived from a `.srv`/`.action` file) is written from its
//! description: one `type name` line per field, which decodes the same (constants and
//! comments, which the description does not keep, are left out).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;

use rclev::msg::{IndividualTypeDescription, TypeInfo};

/// The schema encoding rosbag2 gives `.msg` definitions.
pub const SCHEMA_ENCODING: &str = "ros2msg";

/// The line that separates two types' definitions.
const SEPARATOR: &str =
    "================================================================================";

/// The `ros2msg` schema text of `info`'s type: its `.msg` text, then each dependency's after
/// a separator line, as rosbag2 writes it. Dependencies come in rosbag2's order: depth first,
/// each type's own in name order, each right before the types it refers to in turn.
///
/// The walk keeps its own stack rather than recursing: a type learnt from a peer may nest as
/// deep as the peer likes, and must not overflow the thread's stack.
pub fn message_definition(info: &TypeInfo) -> String {
    let own = &info.description.type_description;
    let mut out = type_text(info, own);
    let by_name: HashMap<&str, &IndividualTypeDescription> = info
        .description
        .referenced_type_descriptions
        .iter()
        .map(|r| (r.type_name, r))
        .collect();
    let mut seen = HashSet::new();
    // Each entry: the nested types of one type still to write, in name order.
    let mut stack = vec![nested_names(own)];
    while let Some(pending) = stack.last_mut() {
        let Some(name) = pending.next() else {
            stack.pop();
            continue;
        };
        if !seen.insert(name) {
            continue;
        }
        let Some(referenced) = by_name.get(name) else {
            continue;
        };
        let _ = write!(out, "\n{SEPARATOR}\nMSG: {}\n", short_name(name));
        out.push_str(&type_text(info, referenced));
        stack.push(nested_names(referenced));
    }
    out
}

/// The names of the types `d`'s fields nest, each once, in name order.
fn nested_names(d: &IndividualTypeDescription) -> std::collections::btree_set::IntoIter<&str> {
    d.fields
        .iter()
        .filter(|f| f.type_id % CONTAINER_STRIDE == NESTED)
        .map(|f| f.nested_type_name)
        .collect::<BTreeSet<&str>>()
        .into_iter()
}

/// One type's text: its `.msg` source when `info` has it, else written from its fields.
fn type_text(info: &TypeInfo, d: &IndividualTypeDescription) -> String {
    match info
        .sources
        .iter()
        .find(|s| s.type_name == d.type_name && s.encoding == "msg")
    {
        Some(source) => source.raw_file_contents.to_string(),
        None => fields_text(d),
    }
}

/// `pkg/msg/Type` → `pkg/Type`, as a field names a nested type and rosbag2 names a section.
fn short_name(type_name: &str) -> String {
    match type_name.split('/').collect::<Vec<_>>()[..] {
        [pkg, _, name] => format!("{pkg}/{name}"),
        _ => type_name.to_string(),
    }
}

/// REP-2016 field type ids: the element type is `id % 48`, the container `id / 48`.
const NESTED: u8 = 1;
const CONTAINER_STRIDE: u8 = 48;

/// The `.msg` spelling of a field's type.
fn field_type(f: &rclev::msg::FieldDescription) -> String {
    let element = f.type_id % CONTAINER_STRIDE;
    let base = match element {
        NESTED => short_name(f.nested_type_name),
        2 => "int8".into(),
        3 => "uint8".into(),
        4 => "int16".into(),
        5 => "uint16".into(),
        6 => "int32".into(),
        7 => "uint32".into(),
        8 => "int64".into(),
        9 => "uint64".into(),
        10 => "float32".into(),
        11 => "float64".into(),
        12 => "float128".into(),
        13 => "char".into(),
        14 => "wchar".into(),
        15 => "bool".into(),
        16 => "byte".into(),
        17 | 19 => "string".into(),
        18 | 20 => "wstring".into(),
        21 => format!("string<={}", f.string_capacity),
        22 => format!("wstring<={}", f.string_capacity),
        other => format!("<unknown field type {other}>"),
    };
    match f.type_id / CONTAINER_STRIDE {
        0 => base,
        1 => format!("{base}[{}]", f.capacity),
        2 => format!("{base}[<={}]", f.capacity),
        _ => format!("{base}[]"),
    }
}

/// A type's definition written from its description, one field per line.
fn fields_text(d: &IndividualTypeDescription) -> String {
    let mut out = String::new();
    for f in d.fields {
        let _ = writeln!(out, "{} {}", field_type(f), f.name);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rclev::interfaces::sensor_msgs::msg::Image;
    use rclev::msg::Message;

    /// A chain of types each nesting the next, as deep as a hostile peer may describe: every
    /// type is written once, in order, with no stack overflow.
    #[test]
    fn a_deep_chain_of_nested_types_is_written_without_recursing() {
        use rclev::msg::{FieldDescription, TypeDescription, TypeHash};
        const DEPTH: usize = 200_000;
        let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
        let link = |i: usize| -> IndividualTypeDescription {
            let fields: &'static [FieldDescription] = Box::leak(Box::new([FieldDescription {
                name: "next",
                type_id: NESTED,
                capacity: 0,
                string_capacity: 0,
                nested_type_name: leak(format!("deep/msg/T{}", i + 1)),
                default_value: "",
            }]));
            IndividualTypeDescription {
                type_name: leak(format!("deep/msg/T{i}")),
                fields: if i < DEPTH { fields } else { &[] },
            }
        };
        let referenced: Vec<IndividualTypeDescription> = (1..=DEPTH).map(link).collect();
        let info = TypeInfo {
            type_name: "deep/msg/T0",
            dds_type_name: "deep::msg::dds_::T0_",
            hash: TypeHash([0; 32]),
            description: TypeDescription {
                type_description: link(0),
                referenced_type_descriptions: Box::leak(referenced.into_boxed_slice()),
            },
            sources: &[],
        };
        let text = message_definition(&info);
        let sections: Vec<&str> = text.split(&format!("\n{SEPARATOR}\n")).collect();
        assert_eq!(sections.len(), DEPTH + 1);
        assert!(sections[1].starts_with("MSG: deep/T1\n"), "{}", sections[1]);
        assert!(
            sections[DEPTH].starts_with(&format!("MSG: deep/T{DEPTH}\n")),
            "{}",
            sections[DEPTH]
        );
    }

    #[test]
    fn image_holds_its_dependencies_after_separators() {
        let text = message_definition(&TypeInfo::of::<Image>());
        let sections: Vec<&str> = text.split(&format!("\n{SEPARATOR}\n")).collect();
        assert_eq!(sections.len(), 3, "{text}");
        assert!(sections[0].contains("uint32 height"), "{text}");
        // Depth first, as rosbag2 writes it: Header, then the Time it refers to.
        assert!(sections[1].starts_with("MSG: std_msgs/Header\n"), "{text}");
        assert!(
            sections[1].contains("builtin_interfaces/Time stamp"),
            "{text}"
        );
        assert!(
            sections[2].starts_with("MSG: builtin_interfaces/Time\n"),
            "{text}"
        );
    }

    #[test]
    fn a_type_without_sources_is_written_from_its_fields() {
        let mut info = TypeInfo::of::<Image>();
        info.sources = &[];
        let text = message_definition(&info);
        assert!(
            text.starts_with("std_msgs/Header header\nuint32 height\n"),
            "{text}"
        );
        assert!(text.contains("uint8[] data\n"), "{text}");
        assert_eq!(Image::TYPE_NAME, "sensor_msgs/msg/Image");
    }
}
