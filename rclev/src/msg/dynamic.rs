//! Messages known only at run time: decoded from and encoded to CDR by their
//! [`TypeDescription`], as tools do (`rclev topic echo`, `topic pub`) for a type they were
//! not compiled with.
//!
//! ```
//! use rclev::interfaces::std_msgs::msg::String as StringMsg;
//! use rclev::msg::{to_cdr, DynamicMessage, Message, Value};
//! let cdr = to_cdr(&StringMsg { data: "hi".into() }).unwrap();
//! let msg = DynamicMessage::decode(&StringMsg::TYPE_DESCRIPTION, &cdr).unwrap();
//! assert_eq!(msg.get("data"), Some(&Value::String("hi".into())));
//! assert_eq!(msg.encode(&StringMsg::TYPE_DESCRIPTION).unwrap(), cdr);
//! ```

use super::cdr::{CdrError, CdrReader, CdrWriter};
use super::description::{FieldDescription, IndividualTypeDescription, TypeDescription};
use super::limits::TypeLimits;
use super::type_graph::{over_limit, types_of, TypeGraph};
use crate::base::error::{Error, Result};

/// A field's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `bool`.
    Bool(bool),
    /// `int8` to `int64`.
    Int(i64),
    /// `uint8` to `uint64`, `byte`, `char`, `wchar`.
    UInt(u64),
    /// `float32`, `float64`.
    Float(f64),
    /// `string`, `wstring`, bounded or not.
    String(String),
    /// An array or sequence.
    Array(Vec<Value>),
    /// A nested message.
    Message(DynamicMessage),
}

/// A message as field names and values, in wire order.
#[derive(Debug, Clone, PartialEq)]
pub struct DynamicMessage {
    /// `pkg/msg/Name`.
    pub type_name: String,
    /// The fields, in the order of the type description.
    pub fields: Vec<(String, Value)>,
}

/// What a field holds, from its REP-2016 type id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scalar {
    Nested,
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F32,
    F64,
    Char,
    WChar,
    Bool,
    Byte,
    String,
    WString,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Container {
    Single,
    Array(usize),
    Sequence(Option<usize>),
}

fn invalid(what: String, reason: impl Into<String>) -> Error {
    Error::InvalidArgument {
        argument: what,
        reason: reason.into(),
    }
}

/// The scalar kind and container of a field.
fn field_kind(f: &FieldDescription) -> Result<(Scalar, Container)> {
    let (base, container) = match f.type_id {
        0..=48 => (f.type_id, Container::Single),
        49..=96 => (f.type_id - 48, Container::Array(f.capacity as usize)),
        97..=144 => (
            f.type_id - 96,
            Container::Sequence(Some(f.capacity as usize)),
        ),
        _ => (f.type_id - 144, Container::Sequence(None)),
    };
    let scalar = match base {
        1 => Scalar::Nested,
        2 => Scalar::I8,
        3 => Scalar::U8,
        4 => Scalar::I16,
        5 => Scalar::U16,
        6 => Scalar::I32,
        7 => Scalar::U32,
        8 => Scalar::I64,
        9 => Scalar::U64,
        10 => Scalar::F32,
        11 => Scalar::F64,
        13 => Scalar::Char,
        14 => Scalar::WChar,
        15 => Scalar::Bool,
        16 => Scalar::Byte,
        17 | 19 | 21 => Scalar::String,
        18 | 20 | 22 => Scalar::WString,
        other => {
            return Err(invalid(
                f.name.to_string(),
                format!("type id {other} (long double or unknown) is not supported"),
            ))
        }
    };
    Ok((scalar, container))
}

fn bound(capacity: u64) -> Option<usize> {
    (capacity > 0).then_some(capacity as usize)
}

/// A type known only at run time, checked and indexed once: what [`DynamicMessage`]s of it
/// are decoded, encoded and built with.
///
/// Making one checks the description against [`TypeLimits`] (the defaults, or
/// [`with_limits`](Self::with_limits)): a type that names a reference it lacks, contains
/// itself or is over a limit is refused with [`Error::InvalidType`] or
/// [`Error::TypeOverLimit`]. After that, every operation is bounded: decoding does work
/// linear in the bytes given, encoding in the message given, and a default message holds at
/// most [`TypeLimits::max_values`] values. A tool that handles many messages of one type makes
/// it once:
///
/// ```
/// use rclev::interfaces::geometry_msgs::msg::PoseStamped;
/// use rclev::msg::{to_cdr, DynamicType, Message};
/// let pose = DynamicType::new(&PoseStamped::TYPE_DESCRIPTION).unwrap();
/// let cdr = to_cdr(&PoseStamped::default()).unwrap();
/// let msg = pose.decode(&cdr).unwrap();
/// assert_eq!(msg, pose.default_message().unwrap());
/// assert_eq!(pose.encode(&msg).unwrap(), cdr);
/// ```
#[derive(Debug, Clone)]
pub struct DynamicType {
    description: TypeDescription,
    graph: TypeGraph,
    /// Per type, how many values its default holds (saturating).
    default_values: Vec<u64>,
    limits: TypeLimits,
}

impl DynamicType {
    /// Checks `description` against [`TypeLimits::DEFAULT`] and indexes it.
    pub fn new(description: &TypeDescription) -> Result<Self> {
        Self::with_limits(description, TypeLimits::DEFAULT)
    }

    /// Checks `description` against `limits` and indexes it.
    pub fn with_limits(description: &TypeDescription, limits: TypeLimits) -> Result<Self> {
        let graph = TypeGraph::of_description(description, &limits)?;
        let types: Vec<&IndividualTypeDescription> = types_of(description).collect();
        let mut default_values = vec![0u64; types.len()];
        for &t in graph.order() {
            let t = t as usize;
            let mut sum = 1u64;
            for (i, f) in types[t].fields.iter().enumerate() {
                let element = graph.nested(t, i).map_or(1, |n| default_values[n]);
                let count = match field_kind(f)?.1 {
                    Container::Single => element,
                    Container::Array(n) => element.saturating_mul(n as u64).saturating_add(1),
                    Container::Sequence(_) => element
                        .saturating_mul(list_items(f.default_value).len() as u64)
                        .saturating_add(1),
                };
                sum = sum.saturating_add(count);
            }
            default_values[t] = sum;
        }
        Ok(Self {
            description: *description,
            graph,
            default_values,
            limits,
        })
    }

    /// The description it was made from.
    pub fn description(&self) -> &TypeDescription {
        &self.description
    }

    /// Type `t` of the description (0: the type itself).
    fn individual(&self, t: usize) -> &IndividualTypeDescription {
        match t {
            0 => &self.description.type_description,
            t => &self.description.referenced_type_descriptions[t - 1],
        }
    }

    /// Decodes CDR (with its encapsulation header).
    pub fn decode(&self, cdr: &[u8]) -> Result<DynamicMessage> {
        let mut r = CdrReader::from_encapsulated(cdr)?;
        self.decode_struct(0, &mut r)
    }

    /// Encodes `message` as CDR (little-endian, with encapsulation header). Every field must
    /// be present with a value of its kind.
    pub fn encode(&self, message: &DynamicMessage) -> Result<Vec<u8>> {
        let mut buf = vec![0x00, 0x01, 0x00, 0x00];
        let mut w = CdrWriter::new(&mut buf);
        self.encode_struct(0, message, &mut w)?;
        Ok(buf)
    }

    /// The message with every field at its default (the `.msg` default value if it has one,
    /// else zero, empty or `false`); refused if it would hold more than
    /// [`TypeLimits::max_values`] values.
    pub fn default_message(&self) -> Result<DynamicMessage> {
        self.check_values(0)?;
        self.default_struct(0)
    }

    /// What one element of field `field` of type `type_name` (the type itself or one it
    /// references) starts as: for an array or sequence, the default of a new element; for any
    /// other field, the field's default. Tools that build messages from text use it to know
    /// each element's kind.
    pub fn element_default(&self, type_name: &str, field: &str) -> Result<Value> {
        let t = (0..self.graph.len())
            .find(|&t| self.individual(t).type_name == type_name)
            .ok_or_else(|| {
                invalid(
                    type_name.to_string(),
                    "not among the type description's references",
                )
            })?;
        let (i, f) = self
            .individual(t)
            .fields
            .iter()
            .enumerate()
            .find(|(_, f)| f.name == field)
            .ok_or_else(|| invalid(format!("{type_name}.{field}"), "no such field"))?;
        let (scalar, _) = field_kind(f)?;
        if let Some(nested) = self.graph.nested(t, i) {
            self.check_values(nested)?;
        }
        self.default_scalar(t, i, scalar, "")
    }

    /// An upper bound of the length of the type's CDR encoding; see
    /// [`TypeDescription::max_serialized_size`].
    pub fn max_serialized_size(&self) -> Option<usize> {
        super::max_size::max_body_size(&self.description, &self.graph)?
            .checked_add(super::max_size::ENCAPSULATION + super::max_size::TRAILING_SLACK)
    }

    fn check_values(&self, t: usize) -> Result<()> {
        let values = self.default_values[t];
        if values > self.limits.max_values as u64 {
            return Err(over_limit(
                self.individual(t).type_name,
                "max_values",
                self.limits.max_values,
                format!("a default message of {values} values"),
            ));
        }
        Ok(())
    }

    // The walks below recurse once per level of nested messages: at most
    // `TypeLimits::max_depth` levels, which the graph checked.

    fn decode_struct(&self, t: usize, r: &mut CdrReader<'_>) -> Result<DynamicMessage> {
        let d = self.individual(t);
        let mut fields = Vec::with_capacity(d.fields.len());
        for (i, f) in d.fields.iter().enumerate() {
            let (scalar, container) = field_kind(f)?;
            let value = match container {
                Container::Single => self.decode_scalar(t, i, scalar, r)?,
                // Each element takes at least a byte (the graph refuses types that take
                // none), so a count the input cannot hold fails when the input runs out.
                Container::Array(n) => Value::Array(
                    (0..n)
                        .map(|_| self.decode_scalar(t, i, scalar, r))
                        .collect::<Result<_>>()?,
                ),
                Container::Sequence(bound) => {
                    let len = r.read_len(bound, min_size(scalar))?;
                    Value::Array(
                        (0..len)
                            .map(|_| self.decode_scalar(t, i, scalar, r))
                            .collect::<Result<_>>()?,
                    )
                }
            };
            fields.push((f.name.to_string(), value));
        }
        Ok(DynamicMessage {
            type_name: d.type_name.to_string(),
            fields,
        })
    }

    fn decode_scalar(
        &self,
        t: usize,
        field: usize,
        s: Scalar,
        r: &mut CdrReader<'_>,
    ) -> Result<Value> {
        let f = &self.individual(t).fields[field];
        Ok(match s {
            Scalar::Nested => Value::Message(self.decode_struct(self.nested(t, field)?, r)?),
            Scalar::I8 => Value::Int(r.read::<i8>()? as i64),
            Scalar::U8 | Scalar::Char | Scalar::Byte => Value::UInt(r.read::<u8>()? as u64),
            Scalar::I16 => Value::Int(r.read::<i16>()? as i64),
            Scalar::U16 | Scalar::WChar => Value::UInt(r.read::<u16>()? as u64),
            Scalar::I32 => Value::Int(r.read::<i32>()? as i64),
            Scalar::U32 => Value::UInt(r.read::<u32>()? as u64),
            Scalar::I64 => Value::Int(r.read::<i64>()?),
            Scalar::U64 => Value::UInt(r.read::<u64>()?),
            Scalar::F32 => Value::Float(r.read::<f32>()? as f64),
            Scalar::F64 => Value::Float(r.read::<f64>()?),
            Scalar::Bool => Value::Bool(r.read_bool()?),
            Scalar::String => Value::String(r.read_string(bound(f.string_capacity))?),
            Scalar::WString => Value::String(r.read_wstring(bound(f.string_capacity))?),
        })
    }

    /// The nested type of field `field` of type `t`.
    fn nested(&self, t: usize, field: usize) -> Result<usize> {
        self.graph.nested(t, field).ok_or_else(|| {
            let d = self.individual(t);
            invalid(
                format!("{}.{}", d.type_name, d.fields[field].name),
                "names no nested type",
            )
        })
    }

    fn encode_struct(&self, t: usize, m: &DynamicMessage, w: &mut CdrWriter<'_>) -> Result<()> {
        let d = self.individual(t);
        for (i, f) in d.fields.iter().enumerate() {
            let (scalar, container) = field_kind(f)?;
            let path = || format!("{}.{}", d.type_name, f.name);
            let value = m.get(f.name).ok_or_else(|| invalid(path(), "missing"))?;
            match container {
                Container::Single => self.encode_scalar(t, i, scalar, value, w, &path)?,
                Container::Array(_) | Container::Sequence(_) => {
                    let Value::Array(items) = value else {
                        return Err(invalid(path(), "an array or sequence is expected"));
                    };
                    match container {
                        Container::Array(len) if items.len() != len => {
                            return Err(invalid(
                                path(),
                                format!("the array has {len} elements, {} given", items.len()),
                            ))
                        }
                        Container::Sequence(bound) => w.write_len(items.len(), bound)?,
                        _ => {}
                    }
                    for item in items {
                        self.encode_scalar(t, i, scalar, item, w, &path)?;
                    }
                }
            }
        }
        Ok(())
    }

    fn encode_scalar(
        &self,
        t: usize,
        field: usize,
        s: Scalar,
        v: &Value,
        w: &mut CdrWriter<'_>,
        path: &dyn Fn() -> String,
    ) -> Result<()> {
        let f = &self.individual(t).fields[field];
        let int = |v: &Value| -> Result<i128> {
            match v {
                Value::Int(i) => Ok(*i as i128),
                Value::UInt(u) => Ok(*u as i128),
                Value::Bool(b) => Ok(*b as i128),
                _ => Err(invalid(
                    path(),
                    format!("an integer is expected, not {}", v.kind()),
                )),
            }
        };
        macro_rules! put_int {
            ($t:ty) => {{
                let i = int(v)?;
                let x = <$t>::try_from(i)
                    .map_err(|_| invalid(path(), format!("{i} does not fit {}", stringify!($t))))?;
                w.write::<$t>(x);
            }};
        }
        let float = |v: &Value| -> Result<f64> {
            match v {
                Value::Float(x) => Ok(*x),
                Value::Int(i) => Ok(*i as f64),
                Value::UInt(u) => Ok(*u as f64),
                _ => Err(invalid(
                    path(),
                    format!("a number is expected, not {}", v.kind()),
                )),
            }
        };
        match s {
            Scalar::Nested => {
                let Value::Message(m) = v else {
                    return Err(invalid(
                        path(),
                        format!("a message is expected, not {}", v.kind()),
                    ));
                };
                self.encode_struct(self.nested(t, field)?, m, w)?;
            }
            Scalar::I8 => put_int!(i8),
            Scalar::U8 | Scalar::Char | Scalar::Byte => put_int!(u8),
            Scalar::I16 => put_int!(i16),
            Scalar::U16 | Scalar::WChar => put_int!(u16),
            Scalar::I32 => put_int!(i32),
            Scalar::U32 => put_int!(u32),
            Scalar::I64 => put_int!(i64),
            Scalar::U64 => put_int!(u64),
            Scalar::F32 => w.write::<f32>(float(v)? as f32),
            Scalar::F64 => w.write::<f64>(float(v)?),
            Scalar::Bool => match v {
                Value::Bool(b) => w.write_bool(*b),
                _ => {
                    return Err(invalid(
                        path(),
                        format!("true or false is expected, not {}", v.kind()),
                    ))
                }
            },
            Scalar::String | Scalar::WString => {
                let Value::String(text) = v else {
                    return Err(invalid(
                        path(),
                        format!("a string is expected, not {}", v.kind()),
                    ));
                };
                let result: std::result::Result<(), CdrError> = if s == Scalar::String {
                    w.write_string(text, bound(f.string_capacity))
                } else {
                    w.write_wstring(text, bound(f.string_capacity))
                };
                result?;
            }
        }
        Ok(())
    }

    fn default_struct(&self, t: usize) -> Result<DynamicMessage> {
        let d = self.individual(t);
        let mut fields = Vec::with_capacity(d.fields.len());
        for (i, f) in d.fields.iter().enumerate() {
            let (scalar, container) = field_kind(f)?;
            let value = match container {
                Container::Single => self.default_scalar(t, i, scalar, f.default_value)?,
                Container::Array(n) => {
                    let given = list_items(f.default_value);
                    Value::Array(
                        (0..n)
                            .map(|k| {
                                let text = given.get(k).copied().unwrap_or("");
                                self.default_scalar(t, i, scalar, text)
                            })
                            .collect::<Result<_>>()?,
                    )
                }
                Container::Sequence(_) => Value::Array(
                    list_items(f.default_value)
                        .into_iter()
                        .map(|item| self.default_scalar(t, i, scalar, item))
                        .collect::<Result<_>>()?,
                ),
            };
            fields.push((f.name.to_string(), value));
        }
        Ok(DynamicMessage {
            type_name: d.type_name.to_string(),
            fields,
        })
    }

    /// A scalar from its `.msg` default text (Python's `str()` of the value); zero when
    /// empty.
    fn default_scalar(&self, t: usize, field: usize, s: Scalar, text: &str) -> Result<Value> {
        let text = text.trim();
        Ok(match s {
            Scalar::Nested => Value::Message(self.default_struct(self.nested(t, field)?)?),
            Scalar::Bool => Value::Bool(text.eq_ignore_ascii_case("true")),
            Scalar::I8 | Scalar::I16 | Scalar::I32 | Scalar::I64 => {
                Value::Int(text.parse().unwrap_or(0))
            }
            Scalar::U8
            | Scalar::U16
            | Scalar::U32
            | Scalar::U64
            | Scalar::Char
            | Scalar::WChar
            | Scalar::Byte => Value::UInt(text.parse().unwrap_or(0)),
            Scalar::F32 | Scalar::F64 => Value::Float(text.parse().unwrap_or(0.0)),
            Scalar::String | Scalar::WString => {
                let unquoted = text
                    .strip_prefix('\'')
                    .and_then(|t| t.strip_suffix('\''))
                    .or_else(|| text.strip_prefix('"').and_then(|t| t.strip_suffix('"')))
                    .unwrap_or(text);
                Value::String(unquoted.to_string())
            }
        })
    }
}

impl DynamicMessage {
    /// Decodes CDR (with its encapsulation header) as the type `description` describes: a
    /// [`DynamicType::new`] and [`DynamicType::decode`] in one (make the [`DynamicType`]
    /// once to decode many messages).
    pub fn decode(description: &TypeDescription, cdr: &[u8]) -> Result<Self> {
        DynamicType::new(description)?.decode(cdr)
    }

    /// Encodes the message as CDR (little-endian, with encapsulation header) as the type
    /// `description` describes (see [`DynamicType::encode`]).
    pub fn encode(&self, description: &TypeDescription) -> Result<Vec<u8>> {
        DynamicType::new(description)?.encode(self)
    }

    /// The message with every field at its default (see [`DynamicType::default_message`]).
    pub fn default_of(description: &TypeDescription) -> Result<Self> {
        DynamicType::new(description)?.default_message()
    }

    /// What one element of a field starts as (see [`DynamicType::element_default`]).
    pub fn element_default(
        description: &TypeDescription,
        type_name: &str,
        field: &str,
    ) -> Result<Value> {
        DynamicType::new(description)?.element_default(type_name, field)
    }

    /// A field's value.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.fields.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// A field's value, to change it.
    pub fn get_mut(&mut self, name: &str) -> Option<&mut Value> {
        self.fields
            .iter_mut()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
    }
}

impl Value {
    /// What kind of value this is, for messages: `an integer`, `a string`, ….
    fn kind(&self) -> &'static str {
        match self {
            Value::Bool(_) => "a bool",
            Value::Int(_) | Value::UInt(_) => "an integer",
            Value::Float(_) => "a number",
            Value::String(_) => "a string",
            Value::Array(_) => "an array",
            Value::Message(_) => "a message",
        }
    }
}

/// The fewest bytes one element takes on the wire (checks sequence lengths before allocating).
fn min_size(s: Scalar) -> usize {
    match s {
        Scalar::I16 | Scalar::U16 | Scalar::WChar => 2,
        Scalar::I32 | Scalar::U32 | Scalar::F32 | Scalar::String | Scalar::WString => 4,
        Scalar::I64 | Scalar::U64 | Scalar::F64 => 8,
        _ => 1,
    }
}

/// The items of a default list as ROS 2 writes it (`[1, 2, 3]`); empty for none.
fn list_items(text: &str) -> Vec<&str> {
    let inner = text
        .trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .trim();
    if inner.is_empty() {
        Vec::new()
    } else {
        inner.split(',').map(str::trim).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interfaces::geometry_msgs::msg::{Polygon, PoseStamped};
    use crate::interfaces::std_msgs::msg::{
        ByteMultiArray, Float64MultiArray, MultiArrayDimension,
    };
    use crate::msg::{from_cdr, to_cdr, Message};

    fn round_trip<T: Message + PartialEq + std::fmt::Debug>(msg: &T) -> DynamicMessage {
        let cdr = to_cdr(msg).unwrap();
        let dynamic = DynamicMessage::decode(&T::TYPE_DESCRIPTION, &cdr).unwrap();
        let again = dynamic.encode(&T::TYPE_DESCRIPTION).unwrap();
        assert_eq!(again, cdr, "{dynamic:?}");
        assert_eq!(&from_cdr::<T>(&again).unwrap(), msg);
        dynamic
    }

    #[test]
    fn nested_messages_arrays_and_sequences_round_trip() {
        let mut pose = PoseStamped::default();
        pose.header.frame_id = "map".into();
        pose.header.stamp.sec = 7;
        pose.pose.position.x = 1.5;
        pose.pose.orientation.w = 1.0;
        let d = round_trip(&pose);
        let Some(Value::Message(header)) = d.get("header") else {
            panic!("{d:?}")
        };
        assert_eq!(header.get("frame_id"), Some(&Value::String("map".into())));
        let mut arr = Float64MultiArray {
            data: vec![1.0, -2.5],
            ..Default::default()
        };
        arr.layout.dim.push(MultiArrayDimension {
            label: "x".into(),
            size: 2,
            stride: 2,
        });
        round_trip(&arr);
        round_trip(&ByteMultiArray {
            data: vec![1, 2, 255],
            ..Default::default()
        });
        round_trip(&Polygon::default());
    }

    #[test]
    fn defaults_and_bad_values_are_handled() {
        let d = DynamicMessage::default_of(&PoseStamped::TYPE_DESCRIPTION).unwrap();
        let cdr = d.encode(&PoseStamped::TYPE_DESCRIPTION).unwrap();
        assert_eq!(
            from_cdr::<PoseStamped>(&cdr).unwrap(),
            PoseStamped::default()
        );
        let mut bad = d.clone();
        *bad.get_mut("header").unwrap() = Value::Int(3);
        assert!(matches!(
            bad.encode(&PoseStamped::TYPE_DESCRIPTION),
            Err(Error::InvalidArgument { .. })
        ));
        let element = DynamicMessage::element_default(
            &Float64MultiArray::TYPE_DESCRIPTION,
            "std_msgs/msg/MultiArrayLayout",
            "dim",
        )
        .unwrap();
        assert!(
            matches!(element, Value::Message(ref m) if m.type_name == "std_msgs/msg/MultiArrayDimension")
        );
        // Truncated input is a CDR error, not a panic.
        assert!(DynamicMessage::decode(&PoseStamped::TYPE_DESCRIPTION, &cdr[..10]).is_err());
    }
}
