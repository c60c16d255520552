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

/// Representation identifier of big-endian plain CDR (`CDR_BE`).
const CDR_BE: [u8; 2] = [0x00, 0x00];
/// Representation identifier of little-endian plain CDR (`CDR_LE`).
const CDR_LE: [u8; 2] = [0x00, 0x01];
/// The encapsulation header rclev writes: `CDR_LE`, options 0 (as Fast DDS does).
const CDR_LE_HEADER: [u8; 4] = [CDR_LE[0], CDR_LE[1], 0x00, 0x00];

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
///
/// The first two bytes name the representation: only plain CDR, `CDR_BE` (`00 00`) and
/// `CDR_LE` (`00 01`), is accepted, which is what ROS 2 peers send for every message. The
/// parameter-list forms (`PL_CDR_BE`/`_LE`, `00 02`/`00 03`), the XCDR2 ones (`00 06` to
/// `00 0b`) and anything else are refused with [`Error::Serialization`]. The two option bytes
/// are not checked: RTPS tells readers to ignore them, and XCDR2 writers put the count of
/// trailing padding bytes in their low bits, padding this reader never reads. Bytes after the
/// message are ignored for the same reason.
pub fn from_cdr<T: Message>(bytes: &[u8]) -> Result<T> {
    let Some((header, body)) = bytes.split_first_chunk::<4>() else {
        return Err(Error::Serialization(
            "buffer shorter than the CDR header".into(),
        ));
    };
    let decoded = match [header[0], header[1]] {
        CDR_LE => cdr_encoding::from_bytes::<T, byteorder::LittleEndian>(body),
        CDR_BE => cdr_encoding::from_bytes::<T, byteorder::BigEndian>(body),
        _ => {
            return Err(Error::Serialization(format!(
                "unsupported CDR encapsulation {:02x} {:02x} (options {:02x} {:02x}): \
                 only CDR_BE (00 00) and CDR_LE (00 01) are read",
                header[0], header[1], header[2], header[3]
            )))
        }
    };
    decoded
        .map(|(v, _)| v)
        .map_err(|e| Error::Serialization(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::msg::Int64;

    /// Defect 17: only byte 1 was checked, so `04 01`, `0d 01`, … were read as CDR_LE.
    #[test]
    fn only_plain_cdr_encapsulations_are_read() {
        let le = to_cdr(&Int64 { data: -5 }).unwrap();
        let body = &le[4..];
        let with = |header: [u8; 4], body: &[u8]| [&header[..], body].concat();
        for bad in [
            [0x04, 0x01, 0, 0],
            [0x0d, 0x01, 0, 0],
            [0x01, 0x00, 0, 0],
            [0xff, 0x01, 0, 0],
            [0x00, 0x02, 0, 0],
            [0x00, 0x03, 0, 0],
            [0x00, 0x07, 0, 0],
            [0x00, 0x0b, 0, 0],
        ] {
            match from_cdr::<Int64>(&with(bad, body)) {
                Err(Error::Serialization(m)) => assert!(
                    m.contains(&format!("{:02x} {:02x}", bad[0], bad[1])),
                    "{m:?} does not name the header"
                ),
                other => panic!("header {bad:02x?} gave {other:?}"),
            }
        }
        assert_eq!(from_cdr::<Int64>(&le).unwrap().data, -5);
        // Options are ignored (XCDR2 puts padding counts there).
        assert_eq!(
            from_cdr::<Int64>(&with([0x00, 0x01, 0x00, 0x03], body))
                .unwrap()
                .data,
            -5
        );
        let be_body = (-5i64).to_be_bytes();
        assert_eq!(
            from_cdr::<Int64>(&with([0x00, 0x00, 0x00, 0x00], &be_body))
                .unwrap()
                .data,
            -5
        );
    }
}
