//! rclev's DDS transport: rclev nodes as peers of ROS 2 nodes (rclcpp, rclpy), over eProsima
//! Fast DDS — the engine behind ROS 2's default middleware, `rmw_fastrtps_cpp`.
//!
//! ```no_run
//! # fn main() -> rclev::Result<()> {
//! let context = rclev_dds::DdsTransport::context()?; // ROS_DOMAIN_ID & co. from the environment
//! let executor = context.create_basic_executor();
//! let node = executor.create_node("talker")?;
//! # Ok(()) }
//! ```
//!
//! The crate is a transport behind rclev's seam ([`rclev::transport::Transport`]); the
//! wire conventions it follows (names, type names, USER_DATA, QoS, both service mappings)
//! are in `docs/dds.md`. Layers, from the bottom:
//!
//! - `ffi` — the `cxx` bridge to the C++ shim (`cpp/shim.{h,cc}`): plumbing only;
//! - `config`, `names`, `qos` — the environment, ROS names on DDS, the QoS mapping;
//! - `entities`, `graph`, `matched` — what discovery, `ros_discovery_info` and match events
//!   report; `inbox` — the bounded queue between a reader's listener and its worker;
//! - `topic`, `service` — the ports;
//! - `transport` — [`DdsTransport`] and its nodes;
//! - [`engine`] — the same Fast DDS set-up without rclev's layers (raw CDR), for benchmarks.

#![warn(missing_docs)]

mod announcer;
mod config;
mod endpoints;
pub mod engine;
mod entities;
mod ffi;
mod graph;
mod inbox;
mod matched;
mod names;
mod qos;
mod service;
mod topic;
mod transport;

pub use config::{DdsOptions, DiscoveryRangeOption, SharedMemory};
pub use entities::GidSize;
pub use transport::DdsTransport;

/// What peers sent that this process refused, counted since it started (over all its
/// transports). Each was also reported, rate-limited (`rclev_dds` warnings); none stopped
/// anything else. Per endpoint, samples refused for their length are counted by the endpoint
/// (`Subscription::malformed_count`, `Service::refused_count`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct WireStats {
    /// Exceptions the C++ shim's listener bodies caught, each skipping one event (e.g.
    /// discovery data that could not be handed to Rust). Fast DDS's threads never see them.
    pub listener_failures: u64,
    /// Discovered endpoints left out of the graph: their topic or type name is not UTF-8.
    pub endpoints_ignored: u64,
    /// `ros_discovery_info` samples dropped: malformed, or speaking for another participant
    /// than their writer's.
    pub discovery_samples_dropped: u64,
}

/// The counts of [`WireStats`] now.
pub fn wire_stats() -> WireStats {
    WireStats {
        listener_failures: ffi::listener_failures(),
        endpoints_ignored: graph::ignored_endpoints(),
        discovery_samples_dropped: announcer::dropped_samples(),
    }
}

/// The Fast DDS release rclev-dds was built against (`2.14.5`).
pub fn engine_version() -> String {
    ffi::bridge::engine_version()
}
