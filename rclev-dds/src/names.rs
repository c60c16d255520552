//! ROS 2 names on DDS: topic-name prefixes (`rt/`, `rq/…Request`, `rr/…Reply`), DDS type
//! names back to ROS type names, and the `key=value;` USER_DATA of participants and endpoints
//! (`enclave=`, `typehash=`, `clientid=`, `serviceid=`).

use std::collections::HashMap;

use rclev::msg::TypeHash;

/// The DDS topic of ROS topic `name` (`/chatter` → `rt/chatter`).
pub(crate) fn topic_topic(name: &str, avoid_ros_namespace_conventions: bool) -> String {
    if avoid_ros_namespace_conventions {
        name.to_string()
    } else {
        format!("rt{name}")
    }
}

/// The request and reply DDS topics of ROS service `name`.
pub(crate) fn service_topics(
    name: &str,
    avoid_ros_namespace_conventions: bool,
) -> (String, String) {
    if avoid_ros_namespace_conventions {
        (format!("{name}Request"), format!("{name}Reply"))
    } else {
        (format!("rq{name}Request"), format!("rr{name}Reply"))
    }
}

/// What a DDS topic is to ROS 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RosTopic {
    /// `rt/<name>`: a topic.
    Topic(String),
    /// `rq/<name>Request`: the request side of a service.
    Request(String),
    /// `rr/<name>Reply`: the reply side of a service.
    Reply(String),
}

/// The ROS entity behind a DDS topic name, or `None` for a topic that is not ROS's (a bare
/// DDS topic, or one of ROS's own without prefix such as `ros_discovery_info`).
pub(crate) fn demangle_topic(dds: &str) -> Option<RosTopic> {
    if let Some(rest) = dds.strip_prefix("rt/") {
        return Some(RosTopic::Topic(format!("/{rest}")));
    }
    if let Some(rest) = dds
        .strip_prefix("rq/")
        .and_then(|r| r.strip_suffix("Request"))
    {
        return Some(RosTopic::Request(format!("/{rest}")));
    }
    if let Some(rest) = dds
        .strip_prefix("rr/")
        .and_then(|r| r.strip_suffix("Reply"))
    {
        return Some(RosTopic::Reply(format!("/{rest}")));
    }
    None
}

/// The ROS type name behind a DDS type name: `std_msgs::msg::dds_::String_` →
/// `std_msgs/msg/String`; a service's request or response type gives the service type
/// (`example_interfaces::srv::dds_::AddTwoInts_Request_` → `example_interfaces/srv/AddTwoInts`).
/// A name that does not follow the convention is returned as it is.
pub(crate) fn demangle_type(dds: &str) -> String {
    let Some((namespace, name)) = dds.rsplit_once("::dds_::") else {
        return dds.to_string();
    };
    let name = name.strip_suffix('_').unwrap_or(name);
    let name = name
        .strip_suffix("_Request")
        .or_else(|| name.strip_suffix("_Response"))
        .unwrap_or(name);
    format!("{}/{}", namespace.replace("::", "/"), name)
}

/// Endpoint USER_DATA as rmw writes it: `[clientid=<id>;|serviceid=<id>;]typehash=<RIHS01>;`.
pub(crate) fn endpoint_user_data(id: Option<(&str, &str)>, hash: &TypeHash) -> Vec<u8> {
    let mut out = String::new();
    if let Some((key, value)) = id {
        out.push_str(&format!("{key}={value};"));
    }
    out.push_str(&format!("typehash={hash};"));
    out.into_bytes()
}

/// The `key=value;` pairs of USER_DATA; anything unparsable is skipped.
pub(crate) fn parse_user_data(bytes: &[u8]) -> HashMap<String, String> {
    let text = String::from_utf8_lossy(bytes);
    text.split(';')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

/// The type hash announced in USER_DATA; all zeros when absent or malformed (what rmw reports
/// for endpoints of older peers).
pub(crate) fn user_data_type_hash(pairs: &HashMap<String, String>) -> TypeHash {
    pairs
        .get("typehash")
        .and_then(|h| TypeHash::parse(h))
        .unwrap_or(TypeHash([0; 32]))
}

/// The 16-byte id rmw_cyclonedds gives a client or service (`clientid=`/`serviceid=`): the
/// first 12 bytes of the participant GUID and a big-endian counter.
pub(crate) fn cyclone_service_id(participant_guid: &[u8; 16], counter: u32) -> [u8; 16] {
    let mut bytes = [0u8; 16];
    bytes[..12].copy_from_slice(&participant_guid[..12]);
    bytes[12..].copy_from_slice(&counter.to_be_bytes());
    bytes
}

/// Such an id as USER_DATA writes it: dot-separated hex bytes.
pub(crate) fn id_text(bytes: &[u8; 16]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(".")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_and_service_names_get_rmws_prefixes() {
        assert_eq!(topic_topic("/chatter", false), "rt/chatter");
        assert_eq!(
            topic_topic("ros_discovery_info", true),
            "ros_discovery_info"
        );
        assert_eq!(
            service_topics("/ns/add_two_ints", false),
            (
                "rq/ns/add_two_intsRequest".into(),
                "rr/ns/add_two_intsReply".into()
            )
        );
        assert_eq!(
            service_topics("/fib/_action/send_goal", false).0,
            "rq/fib/_action/send_goalRequest"
        );
    }

    #[test]
    fn dds_names_demangle_to_ros_names() {
        assert_eq!(
            demangle_topic("rt/ns/chatter"),
            Some(RosTopic::Topic("/ns/chatter".into()))
        );
        assert_eq!(
            demangle_topic("rq/addRequest"),
            Some(RosTopic::Request("/add".into()))
        );
        assert_eq!(
            demangle_topic("rr/addReply"),
            Some(RosTopic::Reply("/add".into()))
        );
        assert_eq!(demangle_topic("rq/addReply"), None);
        assert_eq!(demangle_topic("ros_discovery_info"), None);
        assert_eq!(
            demangle_type("std_msgs::msg::dds_::String_"),
            "std_msgs/msg/String"
        );
        assert_eq!(
            demangle_type("example_interfaces::srv::dds_::AddTwoInts_Request_"),
            "example_interfaces/srv/AddTwoInts"
        );
        assert_eq!(
            demangle_type("example_interfaces::action::dds_::Fibonacci_SendGoal_Response_"),
            "example_interfaces/action/Fibonacci_SendGoal"
        );
        assert_eq!(demangle_type("Plain"), "Plain");
    }

    #[test]
    fn user_data_round_trips() {
        let hash = TypeHash([0xab; 32]);
        let bytes = endpoint_user_data(Some(("clientid", "01.02")), &hash);
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert_eq!(text, format!("clientid=01.02;typehash={hash};"));
        let pairs = parse_user_data(&bytes);
        assert_eq!(pairs["clientid"], "01.02");
        assert_eq!(user_data_type_hash(&pairs), hash);
        assert_eq!(
            user_data_type_hash(&parse_user_data(b"typehash=junk;")),
            TypeHash([0; 32])
        );
        assert!(parse_user_data(b"\xff\xfe").is_empty());
    }

    #[test]
    fn cyclone_ids_look_like_rmw_cyclonedds_ones() {
        let guid = [1u8, 16, 0xab, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0, 0, 1, 0xc1];
        assert_eq!(
            id_text(&cyclone_service_id(&guid, 7)),
            "01.10.ab.03.04.05.06.07.08.09.0a.0b.00.00.00.07"
        );
    }
}
