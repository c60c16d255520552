//! Message and service types: the [`Message`] trait and the first standard interfaces.
//!
//! Messages are plain Rust structs with serde derives. In process they travel as `Arc<T>`
//! (zero copies); a wire transport serializes them with [`to_cdr`] / [`from_cdr`], the
//! little-endian CDR encapsulation DDS uses.

use serde::{de::DeserializeOwned, Serialize};

use crate::error::{Error, Result};

pub mod action;
mod standard;
pub use action::{
    ActionType, Fibonacci, FibonacciFeedback, FibonacciGoal, FibonacciResult, GoalUuid,
};
pub use standard::*;

/// A ROS 2 message type.
pub trait Message:
    Serialize + DeserializeOwned + Clone + std::fmt::Debug + Send + Sync + 'static
{
    /// The ROS 2 type name, e.g. `std_msgs/msg/String`.
    const TYPE_NAME: &'static str;
}

/// A ROS 2 service type: a request and a response message.
pub trait ServiceType: Send + Sync + 'static {
    /// The request message.
    type Request: Message;
    /// The response message.
    type Response: Message;
    /// The ROS 2 type name, e.g. `example_interfaces/srv/AddTwoInts`.
    const TYPE_NAME: &'static str;
}

/// CDR little-endian encapsulation header (`CDR_LE`, options 0).
const CDR_LE_HEADER: [u8; 4] = [0x00, 0x01, 0x00, 0x00];

/// Serializes a message into a CDR-encapsulated buffer, as a DDS transport sends it.
///
/// ```
/// use rclev::msg::{to_cdr, from_cdr, Int64};
/// let bytes = to_cdr(&Int64 { data: -5 }).unwrap();
/// assert_eq!(from_cdr::<Int64>(&bytes).unwrap(), Int64 { data: -5 });
/// ```
pub fn to_cdr<T: Message>(msg: &T) -> Result<Vec<u8>> {
    let mut out = CDR_LE_HEADER.to_vec();
    let body = cdr_encoding::to_vec::<T, byteorder::LittleEndian>(msg)
        .map_err(|e| Error::Serialization(e.to_string()))?;
    out.extend_from_slice(&body);
    Ok(out)
}

/// Deserializes a CDR-encapsulated buffer (little- or big-endian).
pub fn from_cdr<T: Message>(bytes: &[u8]) -> Result<T> {
    if bytes.len() < 4 {
        return Err(Error::Serialization(
            "buffer shorter than the CDR header".into(),
        ));
    }
    let body = &bytes[4..];
    let decoded = match bytes[1] {
        0x01 => cdr_encoding::from_bytes::<T, byteorder::LittleEndian>(body),
        0x00 => cdr_encoding::from_bytes::<T, byteorder::BigEndian>(body),
        other => {
            return Err(Error::Serialization(format!(
                "unsupported CDR representation 0x{other:02x}"
            )))
        }
    };
    decoded
        .map(|(v, _)| v)
        .map_err(|e| Error::Serialization(e.to_string()))
}
