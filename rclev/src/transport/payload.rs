//! What moves through a transport: a message either as a shared Rust value (in process,
//! zero-copy) or as CDR bytes (on a wire), and the type support that converts between the two.

use std::any::{Any, TypeId};
use std::sync::Arc;

use crate::base::error::Result;
use crate::msg::{CdrReader, Message, TypeInfo};

/// A message on its way through a transport.
#[derive(Clone)]
#[non_exhaustive]
pub enum Payload {
    /// A Rust value shared with every in-process receiver: never copied, never serialized.
    /// Also what a wire transport hands over when it decodes received bytes itself, with the
    /// subscription's [`TypeSupport::deserialize`].
    Shared(Arc<dyn Any + Send + Sync>),
    /// CDR bytes with their 4-byte encapsulation header, as a wire transport receives them.
    /// The node layer decodes them once, with the receiver's [`TypeSupport`]. Boxed so that a
    /// `Payload` is two words: it moves through the in-process hot path in registers
    /// (measured in a one-thread publish-and-take loop: three words made it ~20% slower).
    Serialized(Box<Vec<u8>>),
}

impl Payload {
    /// The CDR bytes of the payload: borrowed when serialized already (refused when they do
    /// not start with a CDR encapsulation header: a wire transport never sends them), else
    /// written with `type_support` into `buf`.
    pub fn cdr<'a>(&'a self, type_support: &TypeSupport, buf: &'a mut Vec<u8>) -> Result<&'a [u8]> {
        match self {
            // Bytes from outside (a bag, a tool): a receiver that takes bytes without an
            // encapsulation header cannot decode them, and rclpy's stops taking.
            Payload::Serialized(bytes) => {
                CdrReader::from_encapsulated(bytes)?;
                Ok(bytes)
            }
            Payload::Shared(value) => {
                buf.clear();
                type_support.serialize(&**value, buf)?;
                Ok(buf)
            }
        }
    }

    /// The payload as CDR bytes: itself when serialized already, else encoded with
    /// `type_support` (for a receiver of another Rust type).
    pub fn to_serialized(&self, type_support: &TypeSupport) -> Result<Payload> {
        match self {
            Payload::Serialized(_) => Ok(self.clone()),
            Payload::Shared(value) => {
                let mut buf = Vec::new();
                type_support.serialize(&**value, &mut buf)?;
                Ok(Payload::Serialized(Box::new(buf)))
            }
        }
    }
}

impl std::fmt::Debug for Payload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Payload::Shared(_) => f.write_str("Payload::Shared(..)"),
            Payload::Serialized(b) => write!(f, "Payload::Serialized({} bytes)", b.len()),
        }
    }
}

/// What a transport needs to know about a message type.
///
/// Peers recognise a type by [`TypeInfo::type_name`] and [`TypeInfo::hash`] only, as ROS 2
/// does; [`rust_type`](Self::rust_type) tells an in-process transport whether it may hand a
/// publisher's value to a subscription as it is, or must convert it through CDR (two Rust
/// types generated from the same interface).
///
/// Made safely for every [`Message`] type ([`of`](Self::of)); a type known only at run time
/// (the CLI's dynamic messages) takes the `unsafe` [`from_raw_parts`](Self::from_raw_parts),
/// whose caller vouches for its encoders. Its functions are private, so no one can swap an
/// encoder in afterwards:
///
/// ```compile_fail
/// # fn swap(ts: rclev::transport::TypeSupport) -> rclev::transport::TypeSupport {
/// rclev::transport::TypeSupport { serialize_in_place: None, ..ts }
/// # }
/// ```
#[derive(Clone, Copy)]
pub struct TypeSupport {
    /// The type's ROS 2 and DDS names, REP-2016 hash and description.
    pub info: TypeInfo,
    rust_type: TypeId,
    serialize: SerializeFn,
    serialize_in_place: Option<EncodeInPlace>,
    encoded_len: Option<EncodedLenFn>,
    deserialize: Option<DeserializeFn>,
}

/// Appends the CDR encoding (with encapsulation header) of a [`Payload::Shared`] value to the
/// buffer.
pub type SerializeFn = fn(&(dyn Any + Send + Sync), &mut Vec<u8>) -> Result<()>;

/// Encodes a shared value, CDR-encapsulated, into the start of a fixed buffer; its length.
pub type EncodeInPlace = fn(&(dyn Any + Send + Sync), &mut [u8]) -> Result<usize>;

/// The length of a shared value's CDR encoding (with encapsulation header), found without
/// encoding it.
pub type EncodedLenFn = fn(&(dyn Any + Send + Sync)) -> Result<usize>;

/// Decodes CDR bytes (with encapsulation header) into a value for [`Payload::Shared`].
pub type DeserializeFn = fn(&[u8]) -> Result<Arc<dyn Any + Send + Sync>>;

impl std::fmt::Debug for TypeSupport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.info.type_name)
    }
}

impl TypeSupport {
    /// The type support of message type `T`.
    pub fn of<T: Message>() -> Self {
        fn message<T: Message>(v: &(dyn Any + Send + Sync)) -> Result<&T> {
            v.downcast_ref::<T>().ok_or_else(|| {
                crate::base::error::Error::Transport(format!(
                    "a payload to serialize as {} holds another Rust type",
                    T::TYPE_NAME
                ))
            })
        }
        fn ser<T: Message>(v: &(dyn Any + Send + Sync), buf: &mut Vec<u8>) -> Result<()> {
            crate::msg::to_cdr_into(message::<T>(v)?, buf)
        }
        fn ser_in_place<T: Message>(v: &(dyn Any + Send + Sync), buf: &mut [u8]) -> Result<usize> {
            crate::msg::to_cdr_in_slice(message::<T>(v)?, buf)
        }
        fn len<T: Message>(v: &(dyn Any + Send + Sync)) -> Result<usize> {
            crate::msg::cdr_len(message::<T>(v)?)
        }
        fn de<T: Message>(bytes: &[u8]) -> Result<Arc<dyn Any + Send + Sync>> {
            Ok(Arc::new(crate::msg::from_cdr::<T>(bytes)?))
        }
        Self {
            info: TypeInfo::of::<T>(),
            rust_type: TypeId::of::<T>(),
            serialize: ser::<T>,
            serialize_in_place: Some(ser_in_place::<T>),
            encoded_len: Some(len::<T>),
            deserialize: Some(de::<T>),
        }
    }

    /// The type support of a type rclev's code generator did not make: its identity `info`,
    /// the Rust type behind its [`Payload::Shared`] values, and its encoders.
    ///
    /// # Safety
    ///
    /// The caller vouches that
    /// - `serialize` appends to the buffer one CDR encoding of the value, with its
    ///   encapsulation header, of the type `info` describes (peers decode it as that type);
    /// - `serialize_in_place`, if given, writes such an encoding into the start of the buffer
    ///   and returns how many bytes it wrote: never more than the buffer's length, and every
    ///   byte up to it written by this call (a wire transport sends exactly those bytes);
    /// - values of `rust_type` are what both accept.
    ///
    /// rclev's transports check the lengths they are given against their buffers as well,
    /// so a wrong encoder corrupts messages, never memory; the contract is what they and the
    /// peers rely on for the messages to be right.
    ///
    /// Such a type has no [`encoded_len`](Self::encoded_len) and no
    /// [`deserialize`](Self::deserialize): a wire transport hands its subscriptions the bytes
    /// as received ([`Payload::Serialized`]), which the caller decodes itself.
    pub unsafe fn from_raw_parts(
        info: TypeInfo,
        rust_type: TypeId,
        serialize: SerializeFn,
        serialize_in_place: Option<EncodeInPlace>,
    ) -> Self {
        Self {
            info,
            rust_type,
            serialize,
            serialize_in_place,
            encoded_len: None,
            deserialize: None,
        }
    }

    /// The Rust type behind [`Payload::Shared`] values of this type; in-process use only.
    pub fn rust_type(&self) -> TypeId {
        self.rust_type
    }

    /// Appends the CDR encoding (with encapsulation header) of a [`Payload::Shared`] value of
    /// this type to `buf`.
    pub fn serialize(&self, value: &(dyn Any + Send + Sync), buf: &mut Vec<u8>) -> Result<()> {
        (self.serialize)(value, buf)
    }

    /// Encodes a [`Payload::Shared`] value of this type (with encapsulation header) into the
    /// start of a fixed buffer and returns its length, at most the buffer's;
    /// [`CdrError::NoRoom`] if it does not fit. A wire transport encodes straight into its own
    /// send buffer with it. `None`: only [`serialize`](Self::serialize) is available.
    ///
    /// [`CdrError::NoRoom`]: crate::msg::CdrError::NoRoom
    pub fn serialize_in_place(&self) -> Option<EncodeInPlace> {
        self.serialize_in_place
    }

    /// The length of a [`Payload::Shared`] value's CDR encoding (with encapsulation header),
    /// found by a pass over the value that writes nothing: a wire transport reserves exactly
    /// that much in its own send buffer and encodes into it once with
    /// [`serialize_in_place`](Self::serialize_in_place). `None` for types made with
    /// [`from_raw_parts`](Self::from_raw_parts).
    pub fn encoded_len(&self) -> Option<EncodedLenFn> {
        self.encoded_len
    }

    /// Decodes CDR bytes (with encapsulation header) into the value a [`Payload::Shared`] of
    /// this type holds (of [`rust_type`](Self::rust_type)). A wire transport may decode what
    /// it receives with it while its engine still lends it the bytes, and hand the
    /// subscription `Payload::Shared` (no copy of the bytes of its own); bytes that do not
    /// decode it hands over as [`Payload::Serialized`], for the node layer to report as
    /// malformed. `None` for types made with [`from_raw_parts`](Self::from_raw_parts), whose
    /// subscribers read the bytes themselves.
    pub fn deserialize(&self) -> Option<DeserializeFn> {
        self.deserialize
    }

    /// Whether endpoints of the two types may be matched: same ROS 2 type name and hash.
    pub fn same_interface(&self, other: &TypeSupport) -> bool {
        self.info.type_name == other.info.type_name && self.info.hash == other.info.hash
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interfaces::std_msgs::msg::Int64;

    #[test]
    fn typed_supports_size_and_decode_what_they_encode() {
        let ts = TypeSupport::of::<Int64>();
        let value = Int64 { data: -9 };
        let mut cdr = Vec::new();
        ts.serialize(&value, &mut cdr).unwrap();
        assert_eq!((ts.encoded_len().unwrap())(&value).unwrap(), cdr.len());
        let decoded = (ts.deserialize().unwrap())(&cdr).unwrap();
        assert_eq!(decoded.downcast_ref::<Int64>(), Some(&value));
        assert!((ts.deserialize().unwrap())(&cdr[..6]).is_err());
        assert!((ts.encoded_len().unwrap())(&"another type").is_err());
    }

    #[test]
    fn serialized_payloads_serialize_to_themselves() {
        let ts = TypeSupport::of::<Int64>();
        let shared = Payload::Shared(Arc::new(Int64 { data: 7 }));
        let Payload::Serialized(once) = shared.to_serialized(&ts).unwrap() else {
            panic!("a shared payload serializes to bytes");
        };
        assert!(!once.is_empty());
        let again = Payload::Serialized(once.clone())
            .to_serialized(&ts)
            .unwrap();
        let Payload::Serialized(again) = again else {
            panic!("bytes stay bytes");
        };
        assert_eq!(again, once);
    }

    /// The defect: bytes without an encapsulation header (an empty payload from a bag) were
    /// sent, and rclpy's subscriber stopped taking after it.
    #[test]
    fn serialized_payloads_without_a_cdr_header_are_refused() {
        let ts = TypeSupport::of::<Int64>();
        let mut buf = Vec::new();
        for bad in [&[][..], &[0, 1], &[0x7f, 0x7f, 0, 0, 1, 2, 3, 4]] {
            let e = Payload::Serialized(Box::new(bad.to_vec()))
                .cdr(&ts, &mut buf)
                .unwrap_err();
            assert!(
                matches!(
                    e,
                    crate::Error::Serialization(crate::msg::CdrError::Encapsulation { .. })
                ),
                "{e}"
            );
        }
        let good = crate::msg::to_cdr(&Int64 { data: 1 }).unwrap();
        let payload = Payload::Serialized(Box::new(good.clone()));
        assert_eq!(payload.cdr(&ts, &mut buf).unwrap(), &good[..]);
    }
}
