//! Definitions whose names collide with Rust's generate code that compiles and works:
//! packages named `type` and `super`, fields named `self` and `crate`; and the unqualified
//! `Header` shorthand resolves to the shipped `std_msgs/Header`.

use rclev::interfaces::std_msgs::msg::Header;
use rclev::msg::{from_cdr, to_cdr, Message};
use rclev_oracle_tests::{r#type, shorthand_msgs, super_};

#[test]
fn keyword_packages_and_fields_compile_and_round_trip() {
    let value = super_::msg::Loop {
        pair: r#type::msg::Pair {
            first: r#type::msg::Match { value: 7 },
            second: r#type::msg::Match2 {
                self_: 1.5,
                crate_: "c".into(),
            },
        },
        many: [r#type::msg::Match { value: 3 }; 40],
    };
    assert_eq!(
        from_cdr::<super_::msg::Loop>(&to_cdr(&value).unwrap()).unwrap(),
        value
    );
    assert_eq!(super_::msg::Loop::TYPE_NAME, "super/msg/Loop");
    assert_eq!(super_::msg::Loop::DDS_TYPE_NAME, "super::msg::dds_::Loop_");
}

#[test]
fn unqualified_header_is_the_shipped_header() {
    let stamped = shorthand_msgs::msg::Stamped {
        header: Header {
            frame_id: "map".into(),
            ..Default::default()
        },
        value: 1,
    };
    let header: &Header = &stamped.header;
    assert_eq!(header.frame_id, "map");
    let nested: Vec<&str> = shorthand_msgs::msg::Stamped::TYPE_DESCRIPTION
        .referenced_type_descriptions
        .iter()
        .map(|d| d.type_name)
        .collect();
    assert_eq!(
        nested,
        ["builtin_interfaces/msg/Time", "std_msgs/msg/Header"]
    );
}
