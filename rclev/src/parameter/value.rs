//! Parameter values: the ROS 2 parameter types, their names as tools print them, and the
//! conversions from Rust values.

use std::fmt;

/// A parameter's value.
#[derive(Debug, Clone, PartialEq)]
pub enum ParameterValue {
    /// `bool`.
    Bool(bool),
    /// `int64`.
    Integer(i64),
    /// `double`.
    Double(f64),
    /// `string`.
    String(String),
    /// `byte[]`.
    ByteArray(Vec<u8>),
    /// `bool[]`.
    BoolArray(Vec<bool>),
    /// `int64[]`.
    IntegerArray(Vec<i64>),
    /// `double[]`.
    DoubleArray(Vec<f64>),
    /// `string[]`.
    StringArray(Vec<String>),
}

impl ParameterValue {
    /// The type's name, as ROS 2 tools print it.
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::Bool(_) => "bool",
            Self::Integer(_) => "integer",
            Self::Double(_) => "double",
            Self::String(_) => "string",
            Self::ByteArray(_) => "byte_array",
            Self::BoolArray(_) => "bool_array",
            Self::IntegerArray(_) => "integer_array",
            Self::DoubleArray(_) => "double_array",
            Self::StringArray(_) => "string_array",
        }
    }

    /// Whether both values are of the same type; a parameter without dynamic typing only takes
    /// values of its declared type.
    pub(super) fn same_type(&self, other: &Self) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
    }
}

impl fmt::Display for ParameterValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Bool(v) => write!(f, "{v}"),
            Self::Integer(v) => write!(f, "{v}"),
            Self::Double(v) => write!(f, "{v}"),
            Self::String(v) => write!(f, "{v}"),
            other => write!(f, "{other:?}"),
        }
    }
}

macro_rules! from_value {
    ($($t:ty => $variant:ident),*) => {$(
        impl From<$t> for ParameterValue {
            fn from(v: $t) -> Self { Self::$variant(v.into()) }
        }
    )*};
}
from_value!(bool => Bool, i64 => Integer, f64 => Double, String => String, &str => String,
    Vec<u8> => ByteArray, Vec<bool> => BoolArray, Vec<i64> => IntegerArray,
    Vec<f64> => DoubleArray, Vec<String> => StringArray);

impl From<i32> for ParameterValue {
    fn from(v: i32) -> Self {
        Self::Integer(v.into())
    }
}

/// A named value.
#[derive(Debug, Clone, PartialEq)]
pub struct Parameter {
    /// The name.
    pub name: String,
    /// The value.
    pub value: ParameterValue,
}

/// An integer override for a double parameter is taken as the double (`-p rate:=10`).
pub(super) fn coerce(value: &ParameterValue, like: &ParameterValue) -> ParameterValue {
    match (value, like) {
        (ParameterValue::Integer(i), ParameterValue::Double(_)) => {
            ParameterValue::Double(*i as f64)
        }
        (ParameterValue::IntegerArray(v), ParameterValue::DoubleArray(_)) => {
            ParameterValue::DoubleArray(v.iter().map(|i| *i as f64).collect())
        }
        _ => value.clone(),
    }
}
