//! Liveliness tokens: how an rmw_zenoh peer announces its nodes and endpoints, and so the
//! whole ROS graph.
//!
//! Every node and endpoint declares one Zenoh liveliness token whose key expression *is* the
//! announcement:
//!
//! ```text
//! @ros2_lv/<domain>/<zid>/<node id>/<entity id>/<kind>/<enclave>/<namespace>/<node name>
//!          [/<topic or service name>/<DDS type name>/<type hash>/<qos>]
//! ```
//!
//! - `<kind>` is `NN` (node: nine components, entity id = node id), `MP` (publisher), `MS`
//!   (subscription), `SS` (service server) or `SC` (service client); the last four add the
//!   four topic components (thirteen in all). No other kind exists: actions are announced as
//!   their services and topics.
//! - `<zid>` is the session's Zenoh id as Zenoh prints it: the 16 id bytes read as a
//!   little-endian `u128`, in lower-case hex without leading zeros ([`zid_to_string`]).
//! - `<node id>` and `<entity id>` are decimals from one per-session counter starting at 0.
//! - Names (enclave, namespace, node name, topic name) and the type and hash components are
//!   *mangled*: each `/` becomes `%` ([`mangle`]), so `/` → `%`, `/robot1` → `%robot1`,
//!   `/chatter` → `%chatter`. rcl never hands rmw_zenoh an empty enclave or namespace (the
//!   root is `/`), so no component is empty; a token with an empty component is refused.
//! - `<qos>` is the compact QoS string of [`WireQos`](super::WireQos).
//!
//! Peers query `@ros2_lv/<domain>/**` when they start, then subscribe to it
//! ([`graph_subscription_keyexpr`]).
//!
//! Sources: rmw_zenoh `rmw_zenoh_cpp/src/detail/liveliness_utils.cpp` (`Entity::Entity`,
//! `Entity::make(keyexpr)`, `mangle_name`, `zid_to_str`) at rolling `bfc065f` (Oct 2024) and
//! the 2025 version at `ros2/rmw_zenoh` whose `graph_cache.cpp` builds the zid with
//! `zenoh::Id::to_string()`; `rmw_context_impl_s.cpp` (`028bbe3`) for the id counter and the
//! `@ros2_lv/<domain>/**` query. Jazzy (0.2.x) and Kilted (0.6.x) write the same layout.

use rclev::transport::{EndpointInfo, EndpointKind, Gid, NodeName};

use super::keyexpr::WireTypeHash;
use super::qos::WireQos;
use super::{gid_of, parse_decimal, quote, WireError};

/// The first component of every ROS 2 liveliness token.
pub const ADMIN_SPACE: &str = "@ros2_lv";

/// Components of a node token.
const NODE_COMPONENTS: usize = 9;
/// Components of an endpoint token.
const ENDPOINT_COMPONENTS: usize = 13;

/// What a liveliness token announces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntityKind {
    /// `NN`: a node.
    Node,
    /// `MP`: a topic publisher.
    Publisher,
    /// `MS`: a topic subscription.
    Subscription,
    /// `SS`: a service server.
    Service,
    /// `SC`: a service client.
    Client,
}

impl EntityKind {
    /// The two letters written in the token.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Node => "NN",
            Self::Publisher => "MP",
            Self::Subscription => "MS",
            Self::Service => "SS",
            Self::Client => "SC",
        }
    }

    /// Parses the two letters; a typed error for anything else.
    pub fn parse(s: &str) -> Result<Self, WireError> {
        Ok(match s {
            "NN" => Self::Node,
            "MP" => Self::Publisher,
            "MS" => Self::Subscription,
            "SS" => Self::Service,
            "SC" => Self::Client,
            _ => return Err(WireError::UnknownEntityKind(quote(s))),
        })
    }

    /// The graph's kind of endpoint; `None` for a node.
    pub const fn endpoint_kind(self) -> Option<EndpointKind> {
        match self {
            Self::Node => None,
            Self::Publisher => Some(EndpointKind::Publisher),
            Self::Subscription => Some(EndpointKind::Subscription),
            Self::Service => Some(EndpointKind::Service),
            Self::Client => Some(EndpointKind::Client),
        }
    }
}

impl From<EndpointKind> for EntityKind {
    fn from(kind: EndpointKind) -> Self {
        match kind {
            EndpointKind::Publisher => Self::Publisher,
            EndpointKind::Subscription => Self::Subscription,
            EndpointKind::Service => Self::Service,
            EndpointKind::Client => Self::Client,
        }
    }
}

/// The topic (or service) part of an endpoint's token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicInfo {
    /// Fully qualified ROS name, demangled (`/chatter`).
    pub name: String,
    /// DDS type name (`std_msgs::msg::dds_::String_`; a service's is cut before `Request_`,
    /// see [`service_type_name`](super::keyexpr::service_type_name)).
    pub type_name: String,
    /// The type hash (for services, the service type's).
    pub type_hash: WireTypeHash,
    /// The endpoint's QoS as rmw_zenoh adapted it.
    pub qos: WireQos,
}

/// One liveliness token, parsed: a node or one of its endpoints.
///
/// [`Token::to_keyexpr`] writes canonical tokens (QoS defaults elided, numbers without
/// leading zeros), and [`Token::parse`] reads them back to the same value. Parsing refuses
/// non-canonical numbers but, like rmw_zenoh, accepts a QoS field spelled out at its default
/// value; such a token writes back in canonical form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// ROS domain id.
    pub domain_id: usize,
    /// The owning session's Zenoh id as written in the token ([`zid_to_string`]).
    pub zid: String,
    /// The node's id within its session.
    pub node_id: u64,
    /// The entity's id within its session (the node id for a node).
    pub entity_id: u64,
    /// What it is.
    pub kind: EntityKind,
    /// The node's enclave, demangled (`/` for none).
    pub enclave: String,
    /// The node's absolute namespace, demangled (`/`, `/robot1`).
    pub namespace: String,
    /// The node's name.
    pub node_name: String,
    /// The topic or service part: `Some` exactly when `kind` is not [`EntityKind::Node`].
    pub topic: Option<TopicInfo>,
}

impl Token {
    /// The token's key expression.
    ///
    /// An empty enclave or namespace (which rmw_zenoh never writes) is written `%`, as `/`
    /// is, so the key expression stays valid.
    pub fn to_keyexpr(&self) -> String {
        let mut out = format!(
            "{ADMIN_SPACE}/{}/{}/{}/{}/{}/{}/{}/{}",
            self.domain_id,
            self.zid,
            self.node_id,
            self.entity_id,
            self.kind.as_str(),
            mangle_nonempty(&self.enclave),
            mangle_nonempty(&self.namespace),
            mangle(&self.node_name),
        );
        if let Some(topic) = &self.topic {
            out.push('/');
            out.push_str(&mangle(&topic.name));
            out.push('/');
            out.push_str(&mangle(&topic.type_name));
            out.push('/');
            out.push_str(&mangle(&topic.type_hash.to_string()));
            out.push('/');
            out.push_str(&topic.qos.to_keyexpr());
        }
        out
    }

    /// Parses a token's key expression as a Jazzy or Kilted rmw_zenoh peer writes it.
    ///
    /// Refuses, with a typed error and never a panic, anything else: another admin space,
    /// a component count other than 9 (node) or 13 (endpoint), an empty component, an
    /// unknown kind, a non-canonical number, a zid that is not 1–32 lower-case hex digits,
    /// an unknown hash form or a malformed QoS string.
    pub fn parse(keyexpr: &str) -> Result<Self, WireError> {
        let parts: Vec<&str> = keyexpr.split('/').collect();
        if parts[0] != ADMIN_SPACE {
            return Err(WireError::NotLiveliness(quote(keyexpr)));
        }
        if parts.len() != NODE_COMPONENTS && parts.len() != ENDPOINT_COMPONENTS {
            return Err(WireError::ComponentCount { found: parts.len() });
        }
        if let Some(index) = parts.iter().position(|p| p.is_empty()) {
            return Err(WireError::EmptyComponent { index });
        }
        let domain_id = parse_decimal("domain id", parts[1])?;
        let domain_id = usize::try_from(domain_id).map_err(|_| WireError::BadNumber {
            field: "domain id",
            value: quote(parts[1]),
        })?;
        let zid = parts[2];
        if zid.len() > 32 || !zid.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(WireError::BadZid(quote(zid)));
        }
        let node_id = parse_decimal("node id", parts[3])?;
        let entity_id = parse_decimal("entity id", parts[4])?;
        let kind = EntityKind::parse(parts[5])?;
        let topic = match (kind, parts.len()) {
            (EntityKind::Node, NODE_COMPONENTS) => None,
            (EntityKind::Node, _) => {
                return Err(WireError::KindMismatch {
                    kind: "node (NN)",
                    expectation: "have no topic components",
                })
            }
            (_, NODE_COMPONENTS) => {
                return Err(WireError::KindMismatch {
                    kind: "endpoint",
                    expectation: "have topic, type, hash and QoS components",
                })
            }
            _ => Some(TopicInfo {
                name: demangle(parts[9]),
                type_name: demangle(parts[10]),
                type_hash: WireTypeHash::parse(&demangle(parts[11]))?,
                qos: WireQos::parse(parts[12])?,
            }),
        };
        if kind == EntityKind::Node && entity_id != node_id {
            return Err(WireError::KindMismatch {
                kind: "node (NN)",
                expectation: "have its entity id equal to its node id",
            });
        }
        Ok(Self {
            domain_id,
            zid: zid.to_owned(),
            node_id,
            entity_id,
            kind,
            enclave: demangle(parts[6]),
            namespace: demangle(parts[7]),
            node_name: demangle(parts[8]),
            topic,
        })
    }

    /// The entity's GID: XXH3-128 of [`Token::to_keyexpr`] (see [`gid_of`]).
    ///
    /// For a token received from a peer this is the GID the peer uses whenever its key
    /// expression was canonical (every rmw_zenoh since #521 writes canonical tokens); a
    /// peer that spelled a QoS default out computed its GID from its own spelling, which
    /// `gid_of(received)` reproduces.
    pub fn gid(&self) -> Gid {
        gid_of(&self.to_keyexpr())
    }

    /// The node this token belongs to, as rclev's graph names it.
    pub fn node(&self) -> NodeName {
        NodeName {
            name: self.node_name.clone(),
            namespace: self.namespace.clone(),
        }
    }

    /// The graph entry of an endpoint token; `None` for a node token.
    ///
    /// The type name is given in ROS form ([`dds_to_ros_type_name`]); a Humble peer's missing
    /// hash becomes all zeros; the QoS is [`WireQos::to_profile`].
    pub fn endpoint_info(&self) -> Option<EndpointInfo> {
        let kind = self.kind.endpoint_kind()?;
        let topic = self.topic.as_ref()?;
        Some(EndpointInfo::new(
            self.node(),
            topic.name.clone(),
            kind,
            dds_to_ros_type_name(&topic.type_name),
            topic.type_hash.to_type_hash(),
            self.gid(),
            topic.qos.to_profile(),
        ))
    }
}

/// The key expression that matches every liveliness token of a domain, `@ros2_lv/<domain>/**`:
/// what a peer queries at start and then subscribes to.
pub fn graph_subscription_keyexpr(domain_id: usize) -> String {
    format!("{ADMIN_SPACE}/{domain_id}/**")
}

/// The key expression that matches the liveliness tokens of one session (Zenoh id `zid`, as
/// [`zid_to_string`] writes it) in a domain, `@ros2_lv/<domain>/<zid>/**`.
pub fn session_tokens_keyexpr(domain_id: usize, zid: &str) -> String {
    format!("{ADMIN_SPACE}/{domain_id}/{zid}/**")
}

/// A Zenoh id as Zenoh prints it (and so as rmw_zenoh writes it in tokens): the 16 bytes
/// read as a little-endian `u128`, lower-case hex, no leading zeros.
pub fn zid_to_string(zid_le_bytes: [u8; 16]) -> String {
    format!("{:x}", u128::from_le_bytes(zid_le_bytes))
}

/// rmw_zenoh's `mangle_name`: every `/` becomes `%`.
pub fn mangle(name: &str) -> String {
    name.replace('/', "%")
}

/// rmw_zenoh's `demangle_name`: every `%` becomes `/`.
pub fn demangle(component: &str) -> String {
    component.replace('%', "/")
}

fn mangle_nonempty(name: &str) -> String {
    if name.is_empty() {
        "%".to_owned()
    } else {
        mangle(name)
    }
}

/// A DDS type name in ROS form, as rmw_zenoh's graph cache reports it:
/// `pkg::msg::dds_::Name_` → `pkg/msg/Name` (and `pkg::srv::dds_::Name_` → `pkg/srv/Name`).
/// Anything not of that shape is returned unchanged.
pub fn dds_to_ros_type_name(dds: &str) -> String {
    let parts: Vec<&str> = dds.split("::").collect();
    match parts.as_slice() {
        [pkg, kind, "dds_", name]
            if !pkg.is_empty() && !kind.is_empty() && name.len() > 1 && name.ends_with('_') =>
        {
            format!("{pkg}/{kind}/{}", &name[..name.len() - 1])
        }
        _ => dds.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::RmwTime;
    use proptest::prelude::*;
    use rclev::msg::TypeHash;

    const HASH: &str = "RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18";

    fn talker_pub() -> String {
        format!(
            "@ros2_lv/0/8f4b3c2a1d0e9f8a7b6c5d4e3f2a1b0c/0/10/MP/%/%/talker/%chatter/std_msgs::msg::dds_::String_/{HASH}/::,7:,:,:,,"
        )
    }

    #[test]
    fn node_token_round_trips() {
        let key = "@ros2_lv/0/1a2b/3/3/NN/%/%robot1/talker";
        let token = Token::parse(key).unwrap();
        assert_eq!(token.kind, EntityKind::Node);
        assert_eq!(token.zid, "1a2b");
        assert_eq!(token.enclave, "/");
        assert_eq!(token.namespace, "/robot1");
        assert_eq!(token.node_name, "talker");
        assert_eq!(token.topic, None);
        assert_eq!(token.to_keyexpr(), key);
        assert_eq!(token.endpoint_info(), None);
        assert_eq!(token.node().fully_qualified(), "/robot1/talker");
    }

    #[test]
    fn publisher_token_round_trips_and_converts() {
        let key = talker_pub();
        let token = Token::parse(&key).unwrap();
        assert_eq!(token.to_keyexpr(), key);
        let topic = token.topic.as_ref().unwrap();
        assert_eq!(topic.name, "/chatter");
        assert_eq!(topic.qos.depth, 7);
        let info = token.endpoint_info().unwrap();
        assert_eq!(info.kind, EndpointKind::Publisher);
        assert_eq!(info.name, "/chatter");
        assert_eq!(info.type_name, "std_msgs/msg/String");
        assert_eq!(info.type_hash, TypeHash::parse(HASH).unwrap());
        assert_eq!(info.node.fully_qualified(), "/talker");
        assert_eq!(info.gid, gid_of(&key));
        assert_eq!(info.qos.history, rclev::qos::History::KeepLast(7));
    }

    #[test]
    fn service_and_humble_tokens() {
        let key = "@ros2_lv/5/ab/1/2/SS/%/%/server/%add_two_ints/example_interfaces::srv::dds_::AddTwoInts_/TypeHashNotSupported/::,:,:,:,,";
        let token = Token::parse(key).unwrap();
        assert_eq!(token.domain_id, 5);
        let info = token.endpoint_info().unwrap();
        assert_eq!(info.kind, EndpointKind::Service);
        assert_eq!(info.type_name, "example_interfaces/srv/AddTwoInts");
        assert_eq!(info.type_hash, TypeHash([0; 32]));
        assert_eq!(token.to_keyexpr(), key);
    }

    #[test]
    fn hostile_tokens_are_refused() {
        let pub_key = talker_pub();
        type Check = fn(&WireError) -> bool;
        let cases: Vec<(String, Check)> = vec![
            ("".into(), |e| matches!(e, WireError::NotLiveliness(_))),
            ("@ros2_lv".into(), |e| {
                matches!(e, WireError::ComponentCount { found: 1 })
            }),
            ("@ros2_lv/0/ab/1/1/NN/%/%".into(), |e| {
                matches!(e, WireError::ComponentCount { .. })
            }),
            ("@ros2_lv/0/ab/1/1/NN/%//n".into(), |e| {
                matches!(e, WireError::EmptyComponent { index: 7 })
            }),
            ("@ros2_lv/0/ab/1/1/XX/%/%/n".into(), |e| {
                matches!(e, WireError::UnknownEntityKind(_))
            }),
            ("@ros2_lv/0/AB/1/1/NN/%/%/n".into(), |e| {
                matches!(e, WireError::BadZid(_))
            }),
            (format!("@ros2_lv/0/{}/1/1/NN/%/%/n", "a".repeat(33)), |e| {
                matches!(e, WireError::BadZid(_))
            }),
            ("@ros2_lv/-1/ab/1/1/NN/%/%/n".into(), |e| {
                matches!(e, WireError::BadNumber { .. })
            }),
            ("@ros2_lv/0/ab/01/1/NN/%/%/n".into(), |e| {
                matches!(e, WireError::BadNumber { .. })
            }),
            ("@ros2_lv/0/ab/1/2/NN/%/%/n".into(), |e| {
                matches!(e, WireError::KindMismatch { .. })
            }),
            ("@ros2_lv/0/ab/1/2/MP/%/%/n".into(), |e| {
                matches!(e, WireError::KindMismatch { .. })
            }),
            (pub_key.replace("/MP/", "/NN/"), |e| {
                matches!(e, WireError::KindMismatch { .. })
            }),
            (pub_key.replace("RIHS01_df", "RIHS01_zz"), |e| {
                matches!(e, WireError::BadTypeHash(_))
            }),
            (pub_key.replace("::,7:", "::7:"), |e| {
                matches!(e, WireError::QosShape(_))
            }),
            (format!("{pub_key}/extra"), |e| {
                matches!(e, WireError::ComponentCount { found: 14 })
            }),
        ];
        for (key, expected) in cases {
            let err = Token::parse(&key).unwrap_err();
            assert!(expected(&err), "{key:?} gave {err:?}");
        }
    }

    #[test]
    fn zid_is_zenohs_u128_hex() {
        let mut bytes = [0u8; 16];
        bytes[0] = 0x0c;
        bytes[1] = 0x05;
        bytes[2] = 0xa1;
        // Little-endian u128 0xa1050c: high byte first, inner bytes zero-padded.
        assert_eq!(zid_to_string(bytes), "a1050c");
        assert_eq!(zid_to_string([0xff; 16]), "f".repeat(32));
    }

    #[test]
    fn ros_type_names() {
        assert_eq!(
            dds_to_ros_type_name("std_msgs::msg::dds_::String_"),
            "std_msgs/msg/String"
        );
        assert_eq!(dds_to_ros_type_name("a::srv::dds_::B_"), "a/srv/B");
        assert_eq!(dds_to_ros_type_name("custom_type"), "custom_type");
        assert_eq!(dds_to_ros_type_name("a::msg::dds_::_"), "a::msg::dds_::_");
    }

    fn name() -> impl Strategy<Value = String> {
        "[a-z_][a-z0-9_]{0,8}"
    }

    fn qos() -> impl Strategy<Value = WireQos> {
        let time = (any::<u64>(), any::<u64>()).prop_map(|(sec, nsec)| RmwTime { sec, nsec });
        (
            0u8..=4,
            0u8..=4,
            0u8..=3,
            any::<u64>(),
            time.clone(),
            time.clone(),
            0u8..=5,
            time,
        )
            .prop_map(|(r, d, h, depth, deadline, lifespan, l, lease)| WireQos {
                reliability: r,
                durability: d,
                history: h,
                depth,
                deadline,
                lifespan,
                liveliness: l,
                liveliness_lease_duration: lease,
            })
    }

    fn token() -> impl Strategy<Value = Token> {
        let kind = prop_oneof![
            Just(EntityKind::Node),
            Just(EntityKind::Publisher),
            Just(EntityKind::Subscription),
            Just(EntityKind::Service),
            Just(EntityKind::Client),
        ];
        fn ns() -> impl Strategy<Value = String> {
            proptest::collection::vec(name(), 0..3).prop_map(|v| format!("/{}", v.join("/")))
        }
        let hash = prop_oneof![
            Just(WireTypeHash::NotSupported),
            any::<[u8; 32]>().prop_map(|b| WireTypeHash::Rihs01(TypeHash(b))),
        ];
        let topic = (ns(), name(), hash, qos()).prop_map(|(n, t, type_hash, qos)| TopicInfo {
            name: format!("{n}/t"),
            type_name: format!("pkg::msg::dds_::{t}_"),
            type_hash,
            qos,
        });
        (
            0usize..300,
            any::<[u8; 16]>(),
            any::<u64>(),
            any::<u64>(),
            kind,
            ns(),
            ns(),
            name(),
            topic,
        )
            .prop_map(
                |(domain_id, zid, node_id, id, kind, enclave, namespace, node_name, topic)| {
                    let node = kind == EntityKind::Node;
                    Token {
                        domain_id,
                        zid: zid_to_string(zid),
                        node_id,
                        entity_id: if node { node_id } else { id },
                        kind,
                        enclave,
                        namespace,
                        node_name,
                        topic: (!node).then_some(topic),
                    }
                },
            )
    }

    proptest! {
        #[test]
        fn parse_never_panics(s in "\\PC{0,200}") {
            let _ = Token::parse(&s);
        }

        #[test]
        fn parse_never_panics_on_near_tokens(
            parts in proptest::collection::vec("[%/:,0-9a-zA-Z_@]{0,6}", 0..16)
        ) {
            let _ = Token::parse(&format!("@ros2_lv/{}", parts.join("/")));
        }

        #[test]
        fn valid_tokens_round_trip(token in token()) {
            let key = token.to_keyexpr();
            let parsed = Token::parse(&key).unwrap();
            prop_assert_eq!(&parsed, &token);
            prop_assert_eq!(parsed.to_keyexpr(), key);
        }
    }
}
