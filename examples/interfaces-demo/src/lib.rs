//! A user crate with its own ROS 2 interfaces.
//!
//! `build.rs` runs `rclev-codegen` on the `robot_msgs/` package next to this crate, and the
//! macro below includes what it wrote: a `robot_msgs` module with `msg`, `srv` and `action`
//! submodules. The types `robot_msgs` references from the standard packages (`std_msgs`,
//! `geometry_msgs`, `builtin_interfaces`) are rclev's own, [`rclev::interfaces`].
//!
//! `src/main.rs` runs a node with them; `tests/demo.rs` checks them.

#![warn(missing_docs)]

rclev::include_interfaces!();
