//! The parsed form of interface definitions: what a `.msg`, `.srv` or `.action` file says,
//! before any cross-package resolution.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

/// Where an interface type lives: `pkg/msg/Name`, `pkg/srv/Name_Request`, ….
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TypeName {
    /// The ROS package, e.g. `std_msgs`.
    pub package: String,
    /// `msg`, `srv` or `action`: the interface kind the type was defined by.
    pub namespace: Namespace,
    /// The type's own name, e.g. `Header` or `AddTwoInts_Request`.
    pub name: String,
}

impl TypeName {
    /// A type in `package`'s `msg` namespace.
    pub fn msg(package: &str, name: &str) -> Self {
        Self {
            package: package.into(),
            namespace: Namespace::Msg,
            name: name.into(),
        }
    }
    /// The DDS type name ROS 2 uses on the wire, e.g. `std_msgs::msg::dds_::Header_`.
    pub fn dds_name(&self) -> String {
        format!("{}::{}::dds_::{}_", self.package, self.namespace, self.name)
    }
}

impl fmt::Display for TypeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.package, self.namespace, self.name)
    }
}

/// The interface kind a type belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Namespace {
    /// `.msg` files, and what they reference.
    Msg,
    /// `.srv` files: `Name_Request`, `Name_Response`, `Name_Event`.
    Srv,
    /// `.action` files: `Name_Goal` … `Name_FeedbackMessage`.
    Action,
}

impl fmt::Display for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Namespace::Msg => "msg",
            Namespace::Srv => "srv",
            Namespace::Action => "action",
        })
    }
}

/// A primitive (non-string) field type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Primitive {
    /// `bool`
    Bool,
    /// `byte` (IDL `octet`)
    Byte,
    /// `char` (IDL `uint8` in ROS 2)
    Char,
    /// `float32`
    Float32,
    /// `float64`
    Float64,
    /// `int8`
    Int8,
    /// `uint8`
    UInt8,
    /// `int16`
    Int16,
    /// `uint16`
    UInt16,
    /// `int32`
    Int32,
    /// `uint32`
    UInt32,
    /// `int64`
    Int64,
    /// `uint64`
    UInt64,
}

impl Primitive {
    /// The `.msg` spelling.
    pub fn from_msg(name: &str) -> Option<Self> {
        Some(match name {
            "bool" => Self::Bool,
            "byte" => Self::Byte,
            "char" => Self::Char,
            "float32" => Self::Float32,
            "float64" => Self::Float64,
            "int8" => Self::Int8,
            "uint8" => Self::UInt8,
            "int16" => Self::Int16,
            "uint16" => Self::UInt16,
            "int32" => Self::Int32,
            "uint32" => Self::UInt32,
            "int64" => Self::Int64,
            "uint64" => Self::UInt64,
            _ => return None,
        })
    }

    /// The Rust type.
    pub fn rust(self) -> &'static str {
        match self {
            Self::Bool => "bool",
            Self::Byte | Self::Char | Self::UInt8 => "u8",
            Self::Float32 => "f32",
            Self::Float64 => "f64",
            Self::Int8 => "i8",
            Self::Int16 => "i16",
            Self::UInt16 => "u16",
            Self::Int32 => "i32",
            Self::UInt32 => "u32",
            Self::Int64 => "i64",
            Self::UInt64 => "u64",
        }
    }

    /// The inclusive integer range, for integer-like types.
    pub fn int_range(self) -> Option<(i128, i128)> {
        Some(match self {
            Self::Byte | Self::Char | Self::UInt8 => (0, u8::MAX as i128),
            Self::Int8 => (i8::MIN as i128, i8::MAX as i128),
            Self::Int16 => (i16::MIN as i128, i16::MAX as i128),
            Self::UInt16 => (0, u16::MAX as i128),
            Self::Int32 => (i32::MIN as i128, i32::MAX as i128),
            Self::UInt32 => (0, u32::MAX as i128),
            Self::Int64 => (i64::MIN as i128, i64::MAX as i128),
            Self::UInt64 => (0, u64::MAX as i128),
            Self::Bool | Self::Float32 | Self::Float64 => return None,
        })
    }

    /// The REP-2016 `type_id` of the scalar type. `char` is `uint8` (3) in ROS 2's IDL
    /// mapping, `byte` is `octet` (16).
    pub fn type_id(self) -> u8 {
        match self {
            Self::Int8 => 2,
            Self::UInt8 | Self::Char => 3,
            Self::Int16 => 4,
            Self::UInt16 => 5,
            Self::Int32 => 6,
            Self::UInt32 => 7,
            Self::Int64 => 8,
            Self::UInt64 => 9,
            Self::Float32 => 10,
            Self::Float64 => 11,
            Self::Bool => 15,
            Self::Byte => 16,
        }
    }

    /// Whether the type is a float (no `Eq`/`Hash` for structs holding one).
    pub fn is_float(self) -> bool {
        matches!(self, Self::Float32 | Self::Float64)
    }
}

/// The element type of a field, before any array/sequence.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum BaseType {
    /// A number, `bool`, `byte` or `char`.
    Primitive(Primitive),
    /// `string` or `string<=N` (bound in bytes).
    String(Option<u64>),
    /// `wstring` or `wstring<=N` (bound in UTF-16 units).
    WString(Option<u64>),
    /// Another message.
    Nested(TypeName),
}

/// Whether and how a field repeats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Container {
    /// A single value.
    Single,
    /// `T[N]`.
    Array(u64),
    /// `T[<=N]`.
    Bounded(u64),
    /// `T[]`.
    Unbounded,
}

/// A field's full type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FieldType {
    /// The element type.
    pub base: BaseType,
    /// Single, array or sequence.
    pub container: Container,
}

/// A literal from a definition file: a default value or a constant.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `true`/`false` (also `True`, `1`, …).
    Bool(bool),
    /// An integer, range-checked for its type.
    Int(i128),
    /// A float.
    Float(f64),
    /// A string (quotes removed).
    String(String),
    /// An array default, `[1, 2, 3]`.
    Array(Vec<Value>),
}

/// One field of a message.
#[derive(Debug, Clone)]
pub struct Field {
    /// The name as written (`snake_case`).
    pub name: String,
    /// The type.
    pub ty: FieldType,
    /// The default value, if the definition gives one.
    pub default: Option<Value>,
    /// The comment lines that document the field.
    pub doc: Vec<String>,
    /// 1-based line in the definition file (0 for synthesized fields).
    pub line: usize,
}

/// One constant of a message.
#[derive(Debug, Clone)]
pub struct Constant {
    /// The name (`UPPER_CASE`).
    pub name: String,
    /// A primitive or (unbounded) string type.
    pub ty: BaseType,
    /// The value.
    pub value: Value,
    /// The comment lines that document the constant.
    pub doc: Vec<String>,
}

/// A message: a `.msg` file, or a part of a `.srv`/`.action`, or a type ROS 2 derives from
/// one (`_Event`, `_SendGoal_Request`, …).
#[derive(Debug, Clone)]
pub struct Message {
    /// The full type name.
    pub name: TypeName,
    /// The fields in wire order.
    pub fields: Vec<Field>,
    /// The constants.
    pub constants: Vec<Constant>,
    /// The comment at the top of the definition.
    pub doc: Vec<String>,
    /// The definition file (for error messages and `rerun-if-changed`).
    pub source: PathBuf,
    /// The REP-2016 type source: the text of the file that defines this type on its own, byte
    /// for byte — a `.msg` file for a message, the `.srv` or `.action` file for the
    /// description of a service or action (`pkg/srv/Name`, `pkg/action/Name`). `None` for
    /// the types ROS 2 derives from a `.srv` or `.action` (`Name_Request`, `Name_Goal`,
    /// `Name_SendGoal`, …), whose source rosidl gives as `implicit`, without text.
    pub source_text: Option<Arc<str>>,
}

impl Message {
    /// The REP-2016 encoding of the type's source, as rosidl names it: the defining file's
    /// extension (`msg`, `srv`, `action`), or `implicit` for a derived type (see
    /// [`source_text`](Self::source_text)).
    pub fn source_encoding(&self) -> &'static str {
        match (&self.source_text, self.name.namespace) {
            (None, _) => "implicit",
            (Some(_), Namespace::Msg) => "msg",
            (Some(_), Namespace::Srv) => "srv",
            (Some(_), Namespace::Action) => "action",
        }
    }
}

/// A service: `pkg/srv/Name`.
#[derive(Debug, Clone)]
pub struct Service {
    /// `pkg/srv/Name`.
    pub name: TypeName,
    /// `Name_Request`.
    pub request: Message,
    /// `Name_Response`.
    pub response: Message,
    /// The comment at the top of the definition.
    pub doc: Vec<String>,
    /// The `.srv` file's text, byte for byte: the service type's REP-2016 type source.
    pub source_text: Arc<str>,
}

/// An action: `pkg/action/Name`.
#[derive(Debug, Clone)]
pub struct Action {
    /// `pkg/action/Name`.
    pub name: TypeName,
    /// `Name_Goal`.
    pub goal: Message,
    /// `Name_Result`.
    pub result: Message,
    /// `Name_Feedback`.
    pub feedback: Message,
    /// The comment at the top of the definition.
    pub doc: Vec<String>,
    /// The `.action` file's text, byte for byte: the action type's REP-2016 type source.
    pub source_text: Arc<str>,
}

/// Everything one interface package defines.
#[derive(Debug, Clone, Default)]
pub struct Package {
    /// The package name.
    pub name: String,
    /// `.msg` files.
    pub messages: Vec<Message>,
    /// `.srv` files.
    pub services: Vec<Service>,
    /// `.action` files.
    pub actions: Vec<Action>,
}
