//! The first set of standard ROS 2 interfaces. Field names and order follow the `.msg` files so
//! that the CDR layout matches other ROS 2 implementations.

use serde::{Deserialize, Serialize};

use super::{Message, ServiceType};

macro_rules! message {
    ($(#[$doc:meta])* $name:ident = $ros:literal { $($(#[$fdoc:meta])* $field:ident : $ty:ty),* $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        pub struct $name { $($(#[$fdoc])* pub $field: $ty),* }
        impl Message for $name { const TYPE_NAME: &'static str = $ros; }
    };
}

message!(
    /// `std_msgs/msg/String`.
    StringMsg = "std_msgs/msg/String" { /// The text.
        data: String }
);
message!(
    /// `std_msgs/msg/Int64`.
    Int64 = "std_msgs/msg/Int64" { /// The value.
        data: i64 }
);
message!(
    /// `std_msgs/msg/Int32`.
    Int32 = "std_msgs/msg/Int32" { /// The value.
        data: i32 }
);
message!(
    /// `std_msgs/msg/UInt64`.
    UInt64 = "std_msgs/msg/UInt64" { /// The value.
        data: u64 }
);
message!(
    /// `std_msgs/msg/Float64`.
    Float64 = "std_msgs/msg/Float64" { /// The value.
        data: f64 }
);
message!(
    /// `std_msgs/msg/Bool`.
    Bool = "std_msgs/msg/Bool" { /// The value.
        data: bool }
);
message!(
    /// `std_msgs/msg/Empty`. CDR encodes an empty struct as one padding byte.
    Empty = "std_msgs/msg/Empty" { /// Padding byte required by the IDL mapping of empty structs.
        structure_needs_at_least_one_member: u8 }
);
message!(
    /// `builtin_interfaces/msg/Time`.
    TimeMsg = "builtin_interfaces/msg/Time" { /// Seconds.
        sec: i32, /// Nanoseconds within the second.
        nanosec: u32 }
);
message!(
    /// `builtin_interfaces/msg/Duration`.
    DurationMsg = "builtin_interfaces/msg/Duration" { /// Seconds.
        sec: i32, /// Nanoseconds within the second.
        nanosec: u32 }
);
message!(
    /// `std_msgs/msg/Header`.
    Header = "std_msgs/msg/Header" { /// Acquisition time.
        stamp: TimeMsg, /// Coordinate frame.
        frame_id: String }
);
message!(
    /// `rosgraph_msgs/msg/Clock`, the simulation time on `/clock`.
    Clock = "rosgraph_msgs/msg/Clock" { /// The simulated now.
        clock: TimeMsg }
);
message!(
    /// `rcl_interfaces/msg/Log`, what nodes publish on `/rosout`.
    Log = "rcl_interfaces/msg/Log" { /// When the record was made, on the node's clock.
        stamp: TimeMsg, /// Severity: 10 debug, 20 info, 30 warn, 40 error, 50 fatal.
        level: u8, /// The logger's name.
        name: String, /// The message.
        msg: String, /// Source file.
        file: String, /// Function (module path in Rust).
        function: String, /// Source line.
        line: u32 }
);
message!(
    /// `example_interfaces/srv/AddTwoInts` request.
    AddTwoIntsRequest = "example_interfaces/srv/AddTwoInts_Request" { /// First addend.
        a: i64, /// Second addend.
        b: i64 }
);
message!(
    /// `example_interfaces/srv/AddTwoInts` response.
    AddTwoIntsResponse = "example_interfaces/srv/AddTwoInts_Response" { /// The sum.
        sum: i64 }
);

/// `example_interfaces/srv/AddTwoInts`.
pub struct AddTwoInts;
impl ServiceType for AddTwoInts {
    type Request = AddTwoIntsRequest;
    type Response = AddTwoIntsResponse;
    const TYPE_NAME: &'static str = "example_interfaces/srv/AddTwoInts";
}

impl TimeMsg {
    /// Nanoseconds since the epoch of the clock the stamp came from.
    pub fn as_nanos(&self) -> i64 {
        self.sec as i64 * 1_000_000_000 + self.nanosec as i64
    }
    /// A stamp from nanoseconds (negative values floor to the previous second).
    pub fn from_nanos(ns: i64) -> Self {
        Self {
            sec: ns.div_euclid(1_000_000_000) as i32,
            nanosec: ns.rem_euclid(1_000_000_000) as u32,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::msg::{from_cdr, to_cdr};

    #[test]
    fn cdr_layout_matches_dds() {
        // std_msgs/String "hi": u32 length 3 (including NUL), 'h' 'i' NUL.
        let bytes = to_cdr(&StringMsg { data: "hi".into() }).unwrap();
        assert_eq!(bytes, [0, 1, 0, 0, 3, 0, 0, 0, b'h', b'i', 0]);
        let back: StringMsg = from_cdr(&bytes).unwrap();
        assert_eq!(back.data, "hi");
        let clock = Clock {
            clock: TimeMsg::from_nanos(1_500_000_000),
        };
        assert_eq!(from_cdr::<Clock>(&to_cdr(&clock).unwrap()).unwrap(), clock);
        assert!(from_cdr::<Int64>(&[0, 1]).is_err());
    }

    #[test]
    fn time_nanos_round_trip() {
        for ns in [0, 1, 999_999_999, 1_000_000_000, -1, -1_500_000_000] {
            assert_eq!(TimeMsg::from_nanos(ns).as_nanos(), ns);
        }
    }
}
