//! What a wire transport needs to know about a type at run time: its REP-2016 type hash and
//! type description, as static tables the code generator writes.

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
}

impl TypeInfo {
    /// The identity of message type `T`.
    pub const fn of<T: super::Message>() -> Self {
        Self {
            type_name: T::TYPE_NAME,
            dds_type_name: T::DDS_TYPE_NAME,
            hash: T::TYPE_HASH,
            description: T::TYPE_DESCRIPTION,
        }
    }
}
