//! The shipped interfaces carry what a wire transport needs, consistently: each type's
//! description hashes to its hash, names follow ROS 2's DDS conventions, and the action and
//! service types tie their parts together. (The hashes themselves are checked against the
//! official ROS 2 Jazzy ones in rclev-codegen's oracle tests.)

use std::collections::BTreeSet;
use std::path::Path;

use rclev::interfaces::{example_interfaces, std_msgs, MESSAGE_TYPES};
use rclev::msg::{ActionType, Message, ServiceType, TypeDescription, TypeHash, TypeSource};
use sha2::{Digest, Sha256};

fn rihs01(d: &TypeDescription) -> TypeHash {
    TypeHash(Sha256::digest(d.hash_input().as_bytes()).into())
}

#[test]
fn every_description_hashes_to_the_types_hash() {
    let mut names = BTreeSet::new();
    for t in MESSAGE_TYPES {
        assert!(names.insert(t.type_name), "{} listed twice", t.type_name);
        assert_eq!(rihs01(&t.description), t.hash, "{}", t.type_name);
        assert_eq!(t.description.type_description.type_name, t.type_name);
        // pkg/ns/Name -> pkg::ns::dds_::Name_
        let parts: Vec<&str> = t.type_name.split('/').collect();
        assert_eq!(
            t.dds_type_name,
            format!("{}::{}::dds_::{}_", parts[0], parts[1], parts[2])
        );
        // The referenced types are exactly the nested ones, transitively, sorted.
        let refs: Vec<&str> = t
            .description
            .referenced_type_descriptions
            .iter()
            .map(|r| r.type_name)
            .collect();
        let mut sorted = refs.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(refs, sorted, "{}", t.type_name);
        let mut nested = BTreeSet::new();
        for d in std::iter::once(&t.description.type_description)
            .chain(t.description.referenced_type_descriptions)
        {
            for f in d.fields {
                if !f.nested_type_name.is_empty() {
                    nested.insert(f.nested_type_name);
                }
            }
        }
        assert_eq!(nested, refs.iter().copied().collect(), "{}", t.type_name);
    }
    assert!(MESSAGE_TYPES.len() > 250, "{}", MESSAGE_TYPES.len());
}

#[test]
fn names_and_hashes_as_ros_2_has_them() {
    assert_eq!(std_msgs::msg::String::TYPE_NAME, "std_msgs/msg/String");
    assert_eq!(
        std_msgs::msg::String::TYPE_HASH.to_string(),
        "RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18"
    );
    assert_eq!(
        TypeHash::parse(&std_msgs::msg::String::TYPE_HASH.to_string()),
        Some(std_msgs::msg::String::TYPE_HASH)
    );
    assert_eq!(TypeHash::parse("RIHS01_00"), None);
    type AddTwoInts = example_interfaces::srv::AddTwoInts;
    assert_eq!(
        <AddTwoInts as ServiceType>::Request::DDS_TYPE_NAME,
        "example_interfaces::srv::dds_::AddTwoInts_Request_"
    );
    assert_eq!(
        rihs01(&<AddTwoInts as ServiceType>::TYPE_DESCRIPTION),
        <AddTwoInts as ServiceType>::TYPE_HASH
    );
    type Fibonacci = example_interfaces::action::Fibonacci;
    assert_eq!(
        <<Fibonacci as ActionType>::SendGoal as ServiceType>::Request::DDS_TYPE_NAME,
        "example_interfaces::action::dds_::Fibonacci_SendGoal_Request_"
    );
    assert_eq!(
        <Fibonacci as ActionType>::FeedbackMessage::DDS_TYPE_NAME,
        "example_interfaces::action::dds_::Fibonacci_FeedbackMessage_"
    );
    assert_eq!(
        rihs01(&<Fibonacci as ActionType>::TYPE_DESCRIPTION),
        <Fibonacci as ActionType>::TYPE_HASH
    );
    // An empty message is one byte on the wire, as ROS 2 peers expect.
    assert_eq!(
        rclev::msg::to_cdr(&std_msgs::msg::Empty {}).unwrap(),
        [0, 1, 0, 0, 0]
    );
}

#[test]
fn constants_and_keyword_fields() {
    use rclev::interfaces::visualization_msgs::msg::Marker;
    let m = Marker {
        r#type: Marker::SPHERE,
        ..Default::default()
    };
    assert_eq!(Marker::SPHERE, 2i32);
    assert_eq!(
        rclev::msg::from_cdr::<Marker>(&rclev::msg::to_cdr(&m).unwrap())
            .unwrap()
            .r#type,
        2
    );
    assert_eq!(
        rclev::interfaces::rcl_interfaces::msg::ParameterType::PARAMETER_STRING,
        4u8
    );
    // A float64[36] (more than std's 32-element Default) defaults to zeros.
    let p = rclev::interfaces::geometry_msgs::msg::PoseWithCovariance::default();
    assert_eq!(p.covariance, [0.0; 36]);
}

/// The shipped definition file of `pkg/kind/Name` when there is one (`pkg/kind/Name.kind`),
/// read as bytes: the sources must be the files exactly.
fn shipped_file(type_name: &str) -> Option<Vec<u8>> {
    let [pkg, kind, name] = type_name.split('/').collect::<Vec<_>>()[..] else {
        panic!("{type_name} is not pkg/kind/Name");
    };
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../rclev-codegen/interfaces")
        .join(pkg)
        .join(kind)
        .join(format!("{name}.{kind}"));
    std::fs::read(path).ok()
}

/// Each source as rosidl (Jazzy) makes it: a type with a file of its own (`.msg`, a service's
/// `.srv`, an action's `.action`) has that file's text with its extension as encoding; a type
/// derived from a `.srv`/`.action` is `implicit`, without text.
fn check_source(owner: &str, s: &TypeSource) {
    match shipped_file(s.type_name) {
        Some(bytes) => {
            let kind = s.type_name.split('/').nth(1).unwrap();
            assert_eq!(s.encoding, kind, "{owner}: {}", s.type_name);
            assert_eq!(
                s.raw_file_contents.as_bytes(),
                &bytes[..],
                "{owner}: {} is not its file byte for byte",
                s.type_name
            );
        }
        None => {
            assert!(!s.type_name.contains("/msg/"), "{owner}: {}", s.type_name);
            assert_eq!(
                (s.encoding, s.raw_file_contents),
                ("implicit", ""),
                "{owner}: {}",
                s.type_name
            );
        }
    }
}

/// A type's sources are its own, then its referenced types' in the description's order.
fn check_sources(type_name: &str, description: &TypeDescription, sources: &[TypeSource]) {
    let names: Vec<&str> = sources.iter().map(|s| s.type_name).collect();
    let expected: Vec<&str> = std::iter::once(type_name)
        .chain(
            description
                .referenced_type_descriptions
                .iter()
                .map(|r| r.type_name),
        )
        .collect();
    assert_eq!(names, expected, "{type_name}");
    for s in sources {
        check_source(type_name, s);
    }
}

#[test]
fn every_type_carries_its_sources() {
    let mut plain = 0;
    for t in MESSAGE_TYPES {
        check_sources(t.type_name, &t.description, t.sources);
        if t.type_name.contains("/msg/") {
            plain += 1;
            assert_eq!(t.sources[0].encoding, "msg", "{}", t.type_name);
        }
    }
    assert!(plain > 150, "{plain} .msg types");

    type AddTwoInts = example_interfaces::srv::AddTwoInts;
    let service = <AddTwoInts as ServiceType>::TYPE_SOURCES;
    check_sources(
        AddTwoInts::TYPE_NAME,
        &<AddTwoInts as ServiceType>::TYPE_DESCRIPTION,
        service,
    );
    assert_eq!(service[0].encoding, "srv");
    assert_eq!(
        <AddTwoInts as ServiceType>::Request::TYPE_SOURCES[0].encoding,
        "implicit"
    );

    type Fibonacci = example_interfaces::action::Fibonacci;
    let action = <Fibonacci as ActionType>::TYPE_SOURCES;
    check_sources(
        Fibonacci::TYPE_NAME,
        &<Fibonacci as ActionType>::TYPE_DESCRIPTION,
        action,
    );
    assert_eq!(action[0].encoding, "action");
    // Everything derived from the .action is implicit, the send-goal service included.
    let implicit: Vec<&str> = action
        .iter()
        .filter(|s| s.encoding == "implicit")
        .map(|s| s.type_name)
        .collect();
    assert!(implicit.contains(&"example_interfaces/action/Fibonacci_SendGoal"));
    assert!(implicit.contains(&"example_interfaces/action/Fibonacci_FeedbackMessage"));
    assert_eq!(
        <Fibonacci as ActionType>::FeedbackMessage::TYPE_SOURCES
            .iter()
            .map(|s| (s.type_name, s.encoding))
            .collect::<Vec<_>>(),
        [
            (
                "example_interfaces/action/Fibonacci_FeedbackMessage",
                "implicit"
            ),
            ("example_interfaces/action/Fibonacci_Feedback", "implicit"),
            ("unique_identifier_msgs/msg/UUID", "msg"),
        ][..]
    );
}
