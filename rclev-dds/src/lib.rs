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
//! are in `docs/dds.md`.
//!
//! # Layers
//!
//! Each file uses only files of lower layers: the `crate::` paths it names outside its tests
//! and comments lead only there (and `lib.rs` re-exports from `config`, `entities` and
//! `transport`). Layer 0 uses nothing of the crate. No file reaches up or sideways, so no two
//! files depend on each other.
//!
//! | layer | files |
//! |-------|-------|
//! | 0 | `ffi.rs` (the `cxx` bridge to the C++ shim `cpp/shim.{h,cc}`: plumbing only), `error.rs` (Fast DDS's exceptions as rclev errors), `names.rs` (ROS names on DDS), `cdr.rs` (payloads as the bytes written) |
//! | 1 | `qos.rs` (the QoS mapping), `entities.rs` (`ros_discovery_info`'s messages), `inbox.rs` (the bounded queue between a reader's listener and its worker) |
//! | 2 | `config.rs` (the environment: domain, discovery, shared memory), `graph.rs` (what discovery and `ros_discovery_info` report) |
//! | 3 | `matched.rs` (match events, QoS events, where samples go) |
//! | 4 | `endpoints.rs` (a participant and the writers and readers made from it) |
//! | 5 | `announcer.rs` (the participant's `ros_discovery_info`), `engine.rs` ([`engine`]: the same Fast DDS set-up without rclev's layers, raw CDR, for benchmarks) |
//! | 6 | `node.rs` (a node: its writers, readers and graph entries) |
//! | 7 | `topic.rs`, `service.rs` (the ports: publishers, subscriptions, services, clients) |
//! | 8 | `transport.rs` ([`DdsTransport`] and its nodes' [`NodePort`](rclev::transport::NodePort)) |
//! | 9 | `lib.rs` (this root: what the crate exports; [`isolation`] re-exports the `rclev-isolation` crate, running a program in a network namespace of its own, for tests) |

#![warn(missing_docs)]

mod announcer;
mod cdr;
mod config;
mod endpoints;
pub mod engine;
mod entities;
mod error;
mod ffi;
mod graph;
mod inbox;
mod matched;
mod names;
mod node;
mod qos;
mod service;
mod topic;
mod transport;

pub use config::{DdsOptions, DiscoveryRangeOption, SharedMemory};
pub use entities::GidSize;
pub use transport::DdsTransport;

/// Running a program in a fresh network namespace with only loopback up and a `/dev/shm` of its
/// own, as rclev-dds's tests and `rclev bench pubsub --transport dds` do: the `rclev-isolation`
/// crate, kept at this path for the code that names it here (it serves rclev-zenoh's tests too).
pub use rclev_isolation as isolation;

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
        listener_failures: crate::ffi::listener_failures(),
        endpoints_ignored: crate::graph::ignored_endpoints(),
        discovery_samples_dropped: crate::announcer::dropped_samples(),
    }
}

/// The Fast DDS release rclev-dds was built against (`2.14.5`).
pub fn engine_version() -> String {
    crate::ffi::bridge::engine_version()
}
