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

use std::fmt::Write as _;

use rclev::msg::{IndividualTypeDescription, TypeInfo};

/// The schema encoding rosbag2 gives `.msg` definitions.
pub const SCHEMA_ENCODING: &str = "ros2msg";

/// The line that separates two types' definitions.
const SEPARATOR: &str =
    "================================================================================";

/// The `ros2msg` schema text of `info`'s type (its `.msg` text, then each dependency's after a separator line, as rosbag2 writes it). Dependencies
/// come in rosbag2's order: depth first, each type's own in name order, each right before the
/// types it refers to in turn.
pub fn message_definition(info: &TypeInfo) -> String {
    let own = &info.description.type_description;
    let mut out = type_text(info, own);
    let mut seen = std::collections::HashSet::new();
    append_dependencies(info, own, &mut seen, &mut out);
    out
}

fn append_dependencies<'a>(
    info: &'a TypeInfo,
    d: &'a IndividualTypeDescription,
    seen: &mut std::collections::HashSet<&'a str>,
    out: &mut String,
) {
    let nested: std::collections::BTreeSet<&str> = d
        .fields
        .iter()
        .filter(|f| f.type_id % CONTAINER_STRIDE == NESTED)
        .map(|f| f.nested_type_name)
        .collect();
    for name in nested {
        if !seen.insert(name) {
            continue;
        }
        let Some(referenced) = info
            .description
            .referenced_type_descriptions
            .iter()
            .find(|r| r.type_name == name)
        else {
            continue;
        };
        let _ = write!(out, "\n{SEPARATOR}\nMSG: {}\n", short_name(name));
        out.push_str(&type_text(info, referenced));
        append_dependencies(info, referenced, seen, out);
    }
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
