//! The attachment of every publication, query and reply: who sent it, when, and its number.
//!
//! Since rmw_zenoh#601/#605 (April 2025: Jazzy ≥ 0.2.5, every Kilted) it is three values in
//! the zenoh-ext serializer's format, positionally:
//!
//! | offset | bytes | value |
//! |---|---|---|
//! | 0 | 8 | sequence number, `i64` little-endian (per publisher or client, from 1) |
//! | 8 | 8 | source timestamp, `i64` little-endian, ns since the Unix epoch |
//! | 16 | 1 | `0x10`: the GID array's length, a LEB128 varint |
//! | 17 | 16 | the sender's GID |
//!
//! 33 bytes in all. A service reply echoes the request's sequence number and the client's
//! GID, so the client can match it.
//!
//! **The keyed form.** Before #601 (Jazzy 0.2.0–0.2.3) each value was preceded by its name
//! as a zenoh-ext string (`0x0f "sequence_number"`, `0x10 "source_timestamp"`,
//! `0x0a "source_gid"`): a fixed 77-byte layout. It is unambiguous (its length alone tells
//! it apart) and cheap to check byte for byte, so [`Attachment::decode`] accepts it, exactly,
//! and [`Attachment::decode_with_layout`] says which layout came; [`Attachment::encode`]
//! writes only the positional form. Such a peer cannot read what this transport sends, so
//! the exchange is one-way: the transport should warn once per peer.
//!
//! Sources: rmw_zenoh `rmw_zenoh_cpp/src/detail/attachment_helpers.cpp`, keyed at `038b5a4`
//! (zenoh-c), positional in the 2025 zenoh-cpp version (`AttachmentData::serialize_to_zbytes`:
//! `int64_t`, `int64_t`, `std::array<uint8_t, 16>`); the byte layout pinned against
//! `zenoh.ext.z_serialize` of PyPI `eclipse-zenoh` 1.10.2 (see the tests).

use rclev::transport::Gid;

use super::WireError;

/// The length of a positional attachment.
pub const ATTACHMENT_LEN: usize = 33;

/// The zenoh-ext encoding of a 16-element array's length (a LEB128 varint).
const GID_LEN_PREFIX: u8 = 0x10;

/// The keyed form's byte layout: (name as a zenoh-ext string, value length).
const KEYED: [(&[u8], usize); 3] = [
    (b"\x0fsequence_number", 8),
    (b"\x10source_timestamp", 8),
    (b"\x0asource_gid", 17),
];

/// The keyed form's length: 77 bytes.
const KEYED_LEN: usize = 16 + 8 + 17 + 8 + 11 + 17;

/// Which layout a decoded attachment had.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AttachmentLayout {
    /// The 33-byte positional form (rmw_zenoh ≥ #601).
    Positional,
    /// The 77-byte keyed form of rmw_zenoh before #601.
    LegacyKeyed,
}

/// One attachment's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Attachment {
    /// The sender's sequence number (from 1; a reply echoes the request's).
    pub sequence_number: i64,
    /// When it was sent: system time in ns since the Unix epoch.
    pub source_timestamp: i64,
    /// The sender's GID (a reply carries the client's).
    pub source_gid: Gid,
}

impl Attachment {
    /// The positional encoding (33 bytes).
    pub fn encode(&self) -> [u8; ATTACHMENT_LEN] {
        let mut out = [0u8; ATTACHMENT_LEN];
        out[..8].copy_from_slice(&self.sequence_number.to_le_bytes());
        out[8..16].copy_from_slice(&self.source_timestamp.to_le_bytes());
        out[16] = GID_LEN_PREFIX;
        out[17..].copy_from_slice(&self.source_gid.0);
        out
    }

    /// Decodes an attachment, positional or keyed; a typed error for anything else.
    pub fn decode(bytes: &[u8]) -> Result<Self, WireError> {
        Self::decode_with_layout(bytes).map(|(attachment, _)| attachment)
    }

    /// [`Attachment::decode`], also saying which layout it had.
    pub fn decode_with_layout(bytes: &[u8]) -> Result<(Self, AttachmentLayout), WireError> {
        if bytes.len() == KEYED_LEN && bytes.starts_with(KEYED[0].0) {
            return Self::decode_keyed(bytes).map(|a| (a, AttachmentLayout::LegacyKeyed));
        }
        if bytes.len() != ATTACHMENT_LEN {
            return Err(WireError::AttachmentLength { found: bytes.len() });
        }
        Ok((
            Self::from_fields(&bytes[..8], &bytes[8..16], &bytes[16..])?,
            AttachmentLayout::Positional,
        ))
    }

    fn decode_keyed(bytes: &[u8]) -> Result<Self, WireError> {
        let mut values: [&[u8]; 3] = [&[]; 3];
        let mut rest = bytes;
        for ((name, len), value) in KEYED.iter().zip(values.iter_mut()) {
            let after_name = rest
                .strip_prefix(*name)
                .ok_or(WireError::LegacyKeyedAttachment)?;
            if after_name.len() < *len {
                return Err(WireError::LegacyKeyedAttachment);
            }
            let (v, r) = after_name.split_at(*len);
            *value = v;
            rest = r;
        }
        if !rest.is_empty() {
            return Err(WireError::LegacyKeyedAttachment);
        }
        Self::from_fields(values[0], values[1], values[2])
    }

    /// The values from an 8-byte, an 8-byte and a 17-byte (length-prefixed GID) field.
    fn from_fields(seq: &[u8], ts: &[u8], gid: &[u8]) -> Result<Self, WireError> {
        let int = |b: &[u8]| -> Result<i64, WireError> {
            let array: [u8; 8] = b
                .try_into()
                .map_err(|_| WireError::AttachmentLength { found: b.len() })?;
            Ok(i64::from_le_bytes(array))
        };
        let (&prefix, gid) = gid
            .split_first()
            .ok_or(WireError::AttachmentLength { found: 16 })?;
        if prefix != GID_LEN_PREFIX {
            return Err(WireError::AttachmentGidLength(prefix));
        }
        let source_gid: [u8; 16] = gid.try_into().map_err(|_| WireError::AttachmentLength {
            found: 17 + gid.len(),
        })?;
        Ok(Self {
            sequence_number: int(seq)?,
            source_timestamp: int(ts)?,
            source_gid: Gid(source_gid),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn gid_10_to_1f() -> Gid {
        Gid(std::array::from_fn(|i| 0x10 + i as u8))
    }

    /// `zenoh.ext.z_serialize((Int64(1), Int64(1700000000123456789), bytes(range(0x10, 0x20))))`
    /// with PyPI `eclipse-zenoh` 1.10.2; a tuple `(Int64(-2), Int64(-1), [UInt8…])` gives the
    /// second vector (a list of `UInt8` and `bytes` serialize alike).
    const POSITIONAL: [(i64, i64, &str); 2] = [
        (
            1,
            1_700_000_000_123_456_789,
            "010000000000000015cd853dfe9c971710101112131415161718191a1b1c1d1e1f",
        ),
        (
            -2,
            -1,
            "feffffffffffffffffffffffffffffff10101112131415161718191a1b1c1d1e1f",
        ),
    ];

    /// `z_serialize(("sequence_number", Int64(7), "source_timestamp",
    /// Int64(1700000000123456789), "source_gid", bytes(range(0x10, 0x20))))`, same package:
    /// the pre-#601 keyed layout.
    const KEYED_VECTOR: &str = "0f73657175656e63655f6e756d626572070000000000000010736f757263655f74696d657374616d7015cd853dfe9c97170a736f757263655f67696410101112131415161718191a1b1c1d1e1f";

    #[test]
    fn positional_matches_zenoh_ext() {
        for (seq, ts, hex) in POSITIONAL {
            let a = Attachment {
                sequence_number: seq,
                source_timestamp: ts,
                source_gid: gid_10_to_1f(),
            };
            assert_eq!(a.encode().to_vec(), unhex(hex));
            assert_eq!(
                Attachment::decode_with_layout(&unhex(hex)),
                Ok((a, AttachmentLayout::Positional))
            );
        }
    }

    #[test]
    fn keyed_form_is_accepted_exactly() {
        let bytes = unhex(KEYED_VECTOR);
        assert_eq!(bytes.len(), KEYED_LEN);
        let expected = Attachment {
            sequence_number: 7,
            source_timestamp: 1_700_000_000_123_456_789,
            source_gid: gid_10_to_1f(),
        };
        assert_eq!(
            Attachment::decode_with_layout(&bytes),
            Ok((expected, AttachmentLayout::LegacyKeyed))
        );
        // Any other key spelling, or a wrong GID length prefix, is refused.
        let mut renamed = bytes.clone();
        renamed[30] ^= 0x20;
        assert_eq!(
            Attachment::decode(&renamed),
            Err(WireError::LegacyKeyedAttachment)
        );
        let mut bad_len = bytes;
        bad_len[KEYED_LEN - 17] = 0x0f;
        assert_eq!(
            Attachment::decode(&bad_len),
            Err(WireError::AttachmentGidLength(0x0f))
        );
    }

    #[test]
    fn malformed_is_refused() {
        let good = unhex(POSITIONAL[0].2);
        assert_eq!(
            Attachment::decode(&[]),
            Err(WireError::AttachmentLength { found: 0 })
        );
        assert_eq!(
            Attachment::decode(&good[..32]),
            Err(WireError::AttachmentLength { found: 32 })
        );
        let mut longer = good.clone();
        longer.push(0);
        assert_eq!(
            Attachment::decode(&longer),
            Err(WireError::AttachmentLength { found: 34 })
        );
        let mut prefix = good;
        prefix[16] = 0x11;
        assert_eq!(
            Attachment::decode(&prefix),
            Err(WireError::AttachmentGidLength(0x11))
        );
    }

    proptest! {
        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..100)) {
            let _ = Attachment::decode(&bytes);
        }

        #[test]
        fn decode_never_panics_on_keyed_lookalikes(tail in proptest::collection::vec(any::<u8>(), 61)) {
            let mut bytes = KEYED[0].0.to_vec();
            bytes.extend(tail);
            let _ = Attachment::decode(&bytes);
        }

        #[test]
        fn round_trips(seq: i64, ts: i64, gid: [u8; 16]) {
            let a = Attachment { sequence_number: seq, source_timestamp: ts, source_gid: Gid(gid) };
            prop_assert_eq!(Attachment::decode(&a.encode()), Ok(a));
        }
    }
}
