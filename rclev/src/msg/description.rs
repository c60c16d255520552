//! What a wire transport needs to know about a type at run time: its REP-2016 type hash,
//! type description and type sources, as static tables the code generator writes.

use std::fmt;

/// A REP-2016 type hash, version 1 (`RIHS01`): SHA-256 over the type's description.
///
/// `Display` gives the string form ROS 2 puts in discovery data, `RIHS01_<64 hex digits>`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TypeHash(pub [u8; 32]);

impl TypeHash {
    /// Parses `RIHS01_<64 lower-case hex digits>`; `None` for anything else.
    pub fn parse(s: &str) -> Option<Self> {
        let hex = s.strip_prefix("RIHS01_")?;
        if hex.len() != 64 || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, byte) in out.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
        }
        Some(Self(out))
    }
}

impl fmt::Display for TypeHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RIHS01_")?;
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl fmt::Debug for TypeHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// One field of a type description (`type_description_interfaces/msg/Field`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldDescription {
    /// The field's name.
    pub name: &'static str,
    /// REP-2016 type id: the element's id, plus 48 for `T[N]`, 96 for `T[<=N]`, 144 for `T[]`.
    pub type_id: u8,
    /// The array size or sequence bound; 0 otherwise.
    pub capacity: u64,
    /// The string bound; 0 otherwise.
    pub string_capacity: u64,
    /// For nested types, `pkg/msg/Name`; empty otherwise.
    pub nested_type_name: &'static str,
    /// The default value as ROS 2 writes it (Python's `str()` of the value); empty if none.
    pub default_value: &'static str,
}

/// One type's own fields (`type_description_interfaces/msg/IndividualTypeDescription`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndividualTypeDescription {
    /// `pkg/msg/Name`, `pkg/srv/Name_Request`, ….
    pub type_name: &'static str,
    /// The fields in wire order. A struct without members has ROS 2's placeholder
    /// `structure_needs_at_least_one_member: uint8`.
    pub fields: &'static [FieldDescription],
}

/// A type with every type it references (`type_description_interfaces/msg/TypeDescription`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TypeDescription {
    /// The type itself.
    pub type_description: IndividualTypeDescription,
    /// Each type referenced directly or indirectly, once, sorted by name.
    pub referenced_type_descriptions: &'static [IndividualTypeDescription],
}

impl TypeDescription {
    /// The exact JSON text REP-2016 hashes (default values left out): the SHA-256 of these
    /// bytes is the type's [`TypeHash`].
    pub fn hash_input(&self) -> String {
        let mut out = String::from("{\"type_description\": ");
        individual_json(&mut out, &self.type_description);
        out.push_str(", \"referenced_type_descriptions\": [");
        for (i, r) in self.referenced_type_descriptions.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            individual_json(&mut out, r);
        }
        out.push_str("]}");
        out
    }
}

/// Names in descriptions are ROS identifiers (ASCII letters, digits, `_`, `/`), so they need
/// no JSON escaping.
fn individual_json(out: &mut String, d: &IndividualTypeDescription) {
    use std::fmt::Write as _;
    let _ = write!(out, "{{\"type_name\": \"{}\", \"fields\": [", d.type_name);
    for (i, f) in d.fields.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(
            out,
            "{{\"name\": \"{}\", \"type\": {{\"type_id\": {}, \"capacity\": {}, \"string_capacity\": {}, \"nested_type_name\": \"{}\"}}}}",
            f.name, f.type_id, f.capacity, f.string_capacity, f.nested_type_name
        );
    }
    out.push_str("]}");
}

/// One interface file a type comes from (`type_description_interfaces/msg/TypeSource`): what
/// `get_type_description` answers when asked for sources, and what a rosbag2 writer puts in a
/// bag's `ros2msg` schema.
///
/// As rosidl (Jazzy) generates them, a `.msg` type's source is its `.msg` file (encoding
/// `msg`), a service type's (`pkg/srv/Name`) its `.srv` file (`srv`), an action type's
/// (`pkg/action/Name`) its `.action` file (`action`). The types ROS 2 derives from a `.srv` or
/// `.action` (`Name_Request`, `Name_Event`, `Name_Goal`, `Name_SendGoal`,
/// `Name_FeedbackMessage`, …) have encoding `implicit` and no text: their text is in the
/// service's or action's own source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TypeSource {
    /// The type the source defines: `pkg/msg/Name`, `pkg/srv/Name`, `pkg/srv/Name_Request`, ….
    pub type_name: &'static str,
    /// The format of [`raw_file_contents`](Self::raw_file_contents): `msg`, `srv`, `action`
    /// (the file's extension), or `implicit` for a type derived from a `.srv` or `.action`.
    pub encoding: &'static str,
    /// The interface file's text, byte for byte (comments and blank lines included); empty
    /// for `implicit` sources.
    ///
    /// rosidl's generated C hands rcl a mangled copy: the last line break cut while the
    /// length still counts it (so the text ends in a NUL), and non-ASCII bytes, tabs,
    /// backslashes and some quotes written as Python escapes. This is the file as it is, which
    /// is also what rosbag2 writes into a bag.
    pub raw_file_contents: &'static str,
}

/// A message type's identity and description, as a value: what a registry of types holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TypeInfo {
    /// `pkg/msg/Name`.
    pub type_name: &'static str,
    /// `pkg::msg::dds_::Name_`.
    pub dds_type_name: &'static str,
    /// The RIHS01 hash.
    pub hash: TypeHash,
    /// The type description.
    pub description: TypeDescription,
    /// The type's sources: its own first, then one for each of
    /// [`description.referenced_type_descriptions`](TypeDescription::referenced_type_descriptions),
    /// in that order (rosidl's order). Empty when the type's sources are not known (a
    /// hand-written [`Message`](super::Message) implementation, a type learnt from a
    /// description alone).
    pub sources: &'static [TypeSource],
}

impl TypeInfo {
    /// The identity of message type `T`.
    pub const fn of<T: super::Message>() -> Self {
        Self {
            type_name: T::TYPE_NAME,
            dds_type_name: T::DDS_TYPE_NAME,
            hash: T::TYPE_HASH,
            description: T::TYPE_DESCRIPTION,
            sources: T::TYPE_SOURCES,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::interfaces::{example_interfaces, geometry_msgs, std_msgs};
    use crate::msg::{to_cdr, Message, TypeInfo};

    #[test]
    fn bounded_types_have_a_maximum_size_that_their_encodings_keep() {
        type Add = example_interfaces::srv::AddTwoInts_Request;
        let max = TypeInfo::of::<Add>().max_serialized_size().unwrap();
        let biggest = to_cdr(&Add { a: i64::MAX, b: -1 }).unwrap();
        assert!(biggest.len() <= max, "{} > {max}", biggest.len());
        assert!(max < 64, "a bound near the real size ({max})");
        let pose = TypeInfo::of::<geometry_msgs::msg::Pose>()
            .max_serialized_size()
            .unwrap();
        assert!(to_cdr(&geometry_msgs::msg::Pose::default()).unwrap().len() <= pose);
    }

    #[test]
    fn bounded_strings_and_sequences_count_their_bounds() {
        use super::{FieldDescription, IndividualTypeDescription, TypeDescription};
        const fn field(type_id: u8, capacity: u64, string_capacity: u64) -> FieldDescription {
            FieldDescription {
                name: "f",
                type_id,
                capacity,
                string_capacity,
                nested_type_name: "",
                default_value: "",
            }
        }
        // Descriptions hold 'static tables, as generated code has them.
        let with = |fields: Vec<FieldDescription>| TypeDescription {
            type_description: IndividualTypeDescription {
                type_name: "p/msg/T",
                fields: Box::leak(fields.into_boxed_slice()),
            },
            referenced_type_descriptions: &[],
        };
        // string<=10: length, 10 bytes, NUL, padding; plus header and slack.
        assert_eq!(
            with(vec![field(21, 0, 10)]).max_serialized_size(),
            Some(4 + 11 + 7 + 12)
        );
        // int32[<=3]: length and padding, three padded elements.
        assert_eq!(
            with(vec![field(96 + 6, 3, 0)]).max_serialized_size(),
            Some(11 + 3 * 11 + 12)
        );
        assert_eq!(with(vec![field(144 + 6, 0, 0)]).max_serialized_size(), None);
        assert_eq!(with(vec![field(17, 0, 0)]).max_serialized_size(), None);
        // A nested type its description does not carry is not bounded.
        let mut nested = field(1, 0, 0);
        nested.nested_type_name = "p/msg/Missing";
        assert_eq!(with(vec![nested]).max_serialized_size(), None);
    }

    #[test]
    fn unbounded_types_have_none() {
        assert_eq!(
            TypeInfo::of::<std_msgs::msg::String>().max_serialized_size(),
            None
        );
        assert_eq!(
            TypeInfo::of::<std_msgs::msg::Header>().max_serialized_size(),
            None
        );
        assert!(std_msgs::msg::Header::TYPE_DESCRIPTION
            .referenced_type_descriptions
            .iter()
            .any(|r| r.type_name == "builtin_interfaces/msg/Time"));
    }
}
