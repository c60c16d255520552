//! Data key expressions: the Zenoh key a topic's samples, or a service's queries, travel on.
//!
//! `<domain>/<name>/<DDS type name>/<type hash>`, where `<name>` is the fully qualified ROS
//! name with one leading and one trailing `/` removed and every inner `/` kept (so
//! `/robot1/chatter` on domain 0 is `0/robot1/chatter/…`). Topics use the message's DDS type
//! name (`std_msgs::msg::dds_::String_`); services use the request's DDS type name cut at
//! `Request_` (`example_interfaces::srv::dds_::AddTwoInts_`) and the *service* type's hash.
//! The hash is REP-2016's `RIHS01_<64 hex>`; a Humble peer, which has no type hashes, writes
//! `TypeHashNotSupported` there.
//!
//! Sources: rmw_zenoh `rmw_zenoh_cpp/src/detail/liveliness_utils.cpp` (`TopicInfo`'s
//! constructor and `strip_slashes`) at rolling `bfc065f` (Oct 2024), and
//! `rmw_client_data.cpp`/`rmw_service_data.cpp` (the `find("Request_")` cut), unchanged in
//! the 2025 Jazzy (0.2.x) and Kilted (0.6.x) lines.

use std::fmt;

use rclev::msg::{Message, TypeHash};
use rclev::transport::ServiceTypes;

use super::{quote, WireError};

/// What a Humble peer writes where Jazzy and later write a type hash.
pub const TYPE_HASH_NOT_SUPPORTED: &str = "TypeHashNotSupported";

/// The type-hash component of a data key expression or liveliness token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WireTypeHash {
    /// A REP-2016 hash, written `RIHS01_<64 lower-case hex digits>`.
    Rihs01(TypeHash),
    /// `TypeHashNotSupported`: the peer (Humble) has no type hashes.
    NotSupported,
}

impl WireTypeHash {
    /// Parses the component; a typed error for anything but the two forms peers write.
    pub fn parse(s: &str) -> Result<Self, WireError> {
        if s == TYPE_HASH_NOT_SUPPORTED {
            return Ok(Self::NotSupported);
        }
        TypeHash::parse(s)
            .map(Self::Rihs01)
            .ok_or_else(|| WireError::BadTypeHash(quote(s)))
    }

    /// The hash for rclev's graph: all zeros when the peer announced none.
    pub fn to_type_hash(self) -> TypeHash {
        match self {
            Self::Rihs01(hash) => hash,
            Self::NotSupported => TypeHash([0; 32]),
        }
    }
}

impl From<TypeHash> for WireTypeHash {
    fn from(hash: TypeHash) -> Self {
        Self::Rihs01(hash)
    }
}

impl fmt::Display for WireTypeHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Rihs01(hash) => fmt::Display::fmt(hash, f),
            Self::NotSupported => f.write_str(TYPE_HASH_NOT_SUPPORTED),
        }
    }
}

/// `name` without one leading and one trailing `/` (rmw_zenoh's `strip_slashes`); inner
/// slashes stay.
pub fn strip_slashes(name: &str) -> &str {
    let name = name.strip_prefix('/').unwrap_or(name);
    name.strip_suffix('/').unwrap_or(name)
}

/// The data key expression of a topic or service: `<domain>/<name>/<dds type>/<hash>`.
///
/// `name` is the fully qualified ROS name (`/chatter`); `dds_type_name` is the DDS form
/// (`std_msgs::msg::dds_::String_`; for services see [`service_type_name`]).
pub fn data_keyexpr(
    domain_id: usize,
    name: &str,
    dds_type_name: &str,
    type_hash: WireTypeHash,
) -> String {
    format!(
        "{domain_id}/{}/{dds_type_name}/{type_hash}",
        strip_slashes(name)
    )
}

/// The key expression topic `name` of message type `T` is published on.
pub fn topic_keyexpr<T: Message>(domain_id: usize, name: &str) -> String {
    data_keyexpr(domain_id, name, T::DDS_TYPE_NAME, T::TYPE_HASH.into())
}

/// A service's type name as rmw_zenoh writes it: the request's DDS type name cut just before
/// its first `Request_` (`pkg::srv::dds_::Name_Request_` → `pkg::srv::dds_::Name_`).
///
/// rmw_zenoh refuses to create a client or service whose request type has no `Request_`;
/// so does this.
pub fn service_type_name(request_dds_type_name: &str) -> Result<&str, WireError> {
    request_dds_type_name
        .find("Request_")
        .map(|at| &request_dds_type_name[..at])
        .ok_or_else(|| WireError::NotARequestType(quote(request_dds_type_name)))
}

/// The key expression a service `name` of the given types is served (and queried) on; it
/// carries the service type's hash.
pub fn service_keyexpr(
    domain_id: usize,
    name: &str,
    types: &ServiceTypes,
) -> Result<String, WireError> {
    let type_name = service_type_name(types.request.info.dds_type_name)?;
    Ok(data_keyexpr(
        domain_id,
        name,
        type_name,
        types.type_hash.into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rclev::interfaces::std_msgs;

    const STRING_HASH: &str =
        "RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18";

    #[test]
    fn chatter_matches_rmw_zenoh() {
        // The key expression rmw_zenoh's own tests and design.md give for /chatter.
        let expected = format!("0/chatter/std_msgs::msg::dds_::String_/{STRING_HASH}");
        assert_eq!(
            topic_keyexpr::<std_msgs::msg::String>(0, "/chatter"),
            expected
        );
        let hash = WireTypeHash::parse(STRING_HASH).unwrap();
        assert_eq!(
            data_keyexpr(0, "/chatter", "std_msgs::msg::dds_::String_", hash),
            expected
        );
    }

    #[test]
    fn inner_slashes_are_kept_outer_ones_stripped() {
        let h = WireTypeHash::NotSupported;
        assert_eq!(
            data_keyexpr(7, "/robot1/chatter", "T", h),
            "7/robot1/chatter/T/TypeHashNotSupported"
        );
        assert_eq!(strip_slashes("/a/b/"), "a/b");
        assert_eq!(strip_slashes("a"), "a");
        assert_eq!(strip_slashes("/"), "");
        assert_eq!(strip_slashes("//a//"), "/a/");
    }

    #[test]
    fn service_type_cuts_at_request() {
        assert_eq!(
            service_type_name("example_interfaces::srv::dds_::AddTwoInts_Request_"),
            Ok("example_interfaces::srv::dds_::AddTwoInts_")
        );
        assert!(matches!(
            service_type_name("example_interfaces::srv::dds_::AddTwoInts_Response_"),
            Err(WireError::NotARequestType(_))
        ));
    }

    #[test]
    fn service_keyexpr_uses_the_service_type_and_hash() {
        use rclev::interfaces::example_interfaces::srv::AddTwoInts;
        use rclev::msg::ServiceType;
        let types = ServiceTypes::of::<AddTwoInts>();
        let expected = format!(
            "0/add_two_ints/example_interfaces::srv::dds_::AddTwoInts_/{}",
            AddTwoInts::TYPE_HASH
        );
        assert_eq!(service_keyexpr(0, "/add_two_ints", &types), Ok(expected));
    }

    #[test]
    fn type_hash_forms() {
        let parsed = WireTypeHash::parse(STRING_HASH).unwrap();
        assert_eq!(parsed.to_string(), STRING_HASH);
        assert_eq!(
            WireTypeHash::parse("TypeHashNotSupported"),
            Ok(WireTypeHash::NotSupported)
        );
        assert_eq!(WireTypeHash::NotSupported.to_type_hash(), TypeHash([0; 32]));
        for bad in ["", "RIHS01_", "RIHS02_00", &STRING_HASH.to_uppercase()] {
            assert!(
                matches!(WireTypeHash::parse(bad), Err(WireError::BadTypeHash(_))),
                "{bad}"
            );
        }
    }
}
