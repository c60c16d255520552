//! The standard ROS 2 interfaces, generated when rclev builds.
//!
//! `rclev-codegen` generates them from the ROS 2 Jazzy definitions in
//! `rclev-codegen/interfaces`: builtin_interfaces, std_msgs, std_srvs, geometry_msgs,
//! sensor_msgs, nav_msgs, diagnostic_msgs, visualization_msgs, tf2_msgs, rosgraph_msgs,
//! rcl_interfaces, action_msgs, unique_identifier_msgs, example_interfaces, lifecycle_msgs,
//! type_description_interfaces, service_msgs and rmw_dds_common. Each package is a module
//! with `msg`, `srv` and `action` submodules, named as in ROS 2:
//!
//! ```
//! use rclev::interfaces::{geometry_msgs::msg::Point, std_msgs::msg::Header};
//! use rclev::msg::Message;
//! let p = Point { x: 1.0, ..Default::default() };
//! assert_eq!(Header::DDS_TYPE_NAME, "std_msgs::msg::dds_::Header_");
//! assert_eq!(p.y, 0.0);
//! ```
//!
//! Types generated for user packages refer to these, so `std_msgs::msg::Header` is one type
//! across every crate of a program.

include!(concat!(env!("OUT_DIR"), "/rclev_interfaces.rs"));

mod ext;
