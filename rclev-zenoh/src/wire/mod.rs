//! rmw_zenoh's wire conventions, sans I/O: the strings and bytes an rmw_zenoh peer puts on the
//! network, built and parsed as plain values.
//!
//! Nothing here opens a session. The transport asks this module what key expression a topic
//! lives on ([`keyexpr`]), what liveliness token announces an entity ([`Token`]), how its QoS
//! is written into that token ([`WireQos`]), what GID it has ([`gid_of`]) and what attachment
//! rides with each sample, query and reply ([`Attachment`]). Keeping them pure makes every
//! convention testable against known vectors, and keeps hostile input — everything here may
//! come from the network — on paths that return a [`WireError`] instead of panicking.
//!
//! Each file states the rmw_zenoh source (file and commit) it follows; `docs/zenoh.md`
//! ("Wire conventions") collects them.

mod attachment;
mod gid;
pub mod keyexpr;
mod liveliness;
mod qos;

pub use attachment::{Attachment, AttachmentLayout, ATTACHMENT_LEN};
pub use gid::gid_of;
pub use keyexpr::WireTypeHash;
pub use liveliness::{
    dds_to_ros_type_name, demangle, graph_subscription_keyexpr, mangle, session_tokens_keyexpr,
    zid_to_string, EntityKind, Token, TopicInfo, ADMIN_SPACE,
};
pub use qos::{CongestionControl, RmwTime, WireQos};

/// Why a key expression, token, QoS string or attachment from a peer was refused.
///
/// Values that came off the network are quoted (escaped, cut to [`WireError::QUOTE_MAX`]
/// characters) so a log line stays readable whatever a peer sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The key expression does not start with `@ros2_lv`.
    #[error("not a ROS 2 liveliness token (no `@ros2_lv/` prefix): {0:?}")]
    NotLiveliness(String),
    /// A token has a number of `/`-separated components no rmw_zenoh peer writes.
    #[error("liveliness token has {found} components, expected 9 (node) or 13 (endpoint)")]
    ComponentCount {
        /// How many components it had.
        found: usize,
    },
    /// A component of a token or data key expression is empty.
    #[error("component {index} of the key expression is empty")]
    EmptyComponent {
        /// Its index, 0 for the first.
        index: usize,
    },
    /// The entity kind is not one of `NN`, `MP`, `MS`, `SS`, `SC`.
    #[error("unknown entity kind {0:?} (expected NN, MP, MS, SS or SC)")]
    UnknownEntityKind(String),
    /// A node token carries topic fields, or an endpoint token lacks them.
    #[error("a {kind} token must {expectation}")]
    KindMismatch {
        /// The token's kind.
        kind: &'static str,
        /// What was expected of it.
        expectation: &'static str,
    },
    /// A number (domain, node or entity id, QoS field) is not a canonical decimal that fits.
    #[error("{field}: {value:?} is not a valid number")]
    BadNumber {
        /// Which field.
        field: &'static str,
        /// What was there.
        value: String,
    },
    /// The Zenoh id is not 1 to 32 lower-case hex digits.
    #[error("bad Zenoh id {0:?} (expected 1 to 32 lower-case hex digits)")]
    BadZid(String),
    /// The type-hash component is neither `RIHS01_<64 hex>` nor `TypeHashNotSupported`.
    #[error("bad type hash {0:?}")]
    BadTypeHash(String),
    /// The QoS component does not have the `R:D:H,depth:dl,dl:ls,ls:L,lease,lease` shape.
    #[error("malformed QoS component {0:?}")]
    QosShape(String),
    /// A QoS policy number is outside `rmw/types.h`'s enum.
    #[error("QoS {policy} value {value} is not a known rmw enum value")]
    QosPolicy {
        /// Which policy.
        policy: &'static str,
        /// The number found.
        value: u64,
    },
    /// A service's request type name has no `Request_` in it.
    #[error("service request type {0:?} has no `Request_` suffix")]
    NotARequestType(String),
    /// An attachment does not have the 33-byte positional layout.
    #[error("attachment is {found} bytes, expected {ATTACHMENT_LEN}")]
    AttachmentLength {
        /// Its length.
        found: usize,
    },
    /// The GID's length prefix in an attachment is not 16.
    #[error("attachment GID length prefix is {0:#04x}, expected 0x10")]
    AttachmentGidLength(u8),
    /// The attachment is the keyed map rmw_zenoh wrote before April 2025 (rmw_zenoh#601),
    /// which this transport does not accept.
    #[error("attachment uses the pre-April-2025 keyed layout (rmw_zenoh < #601); peer too old")]
    LegacyKeyedAttachment,
}

impl WireError {
    /// The longest quote of peer input kept in an error.
    pub const QUOTE_MAX: usize = 120;
}

/// `s` for an error message or a log line: control and invisible characters escaped, cut
/// after [`WireError::QUOTE_MAX`] characters (`rclev::printable`).
pub(crate) fn quote(s: &str) -> String {
    rclev::printable(s, WireError::QUOTE_MAX).into_owned()
}

/// Parses a canonical unsigned decimal: digits only, no sign, no leading zero (except `0`).
///
/// rmw_zenoh writes every number with `std::to_string`, so anything else did not come from
/// it; refusing the rest keeps parse → write an exact round trip (the GID depends on it).
pub(crate) fn parse_decimal(field: &'static str, s: &str) -> Result<u64, WireError> {
    let canonical =
        !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && (s == "0" || !s.starts_with('0'));
    canonical
        .then(|| s.parse::<u64>().ok())
        .flatten()
        .ok_or_else(|| WireError::BadNumber {
            field,
            value: quote(s),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_are_canonical() {
        assert_eq!(parse_decimal("f", "0"), Ok(0));
        assert_eq!(parse_decimal("f", "18446744073709551615"), Ok(u64::MAX));
        for bad in [
            "",
            "01",
            "+1",
            "-1",
            " 1",
            "1 ",
            "18446744073709551616",
            "0x1",
            "1.0",
        ] {
            assert!(parse_decimal("f", bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn quotes_are_bounded() {
        let long = "é".repeat(200);
        let q = quote(&long);
        assert_eq!(q.chars().count(), WireError::QUOTE_MAX + 1);
        assert_eq!(quote("short"), "short");
        assert_eq!(quote("a\u{1b}[2J\n"), "a\\u{1b}[2J\\n");
    }
}
