//! rclev's Zenoh transport: rclev nodes as peers of ROS 2 nodes on `rmw_zenoh_cpp` (ROS 2's
//! tier-1 Zenoh middleware since Kilted), in pure Rust on the `zenoh` crate.
//!
//! The wire conventions it follows (key expressions, liveliness tokens, GIDs, attachments,
//! QoS) are in `docs/zenoh.md`, each with its source in rmw_zenoh.

#![warn(missing_docs)]

pub mod wire;
