//! rclev's Zenoh transport: rclev nodes as peers of ROS 2 nodes on `rmw_zenoh_cpp` (ROS 2's
//! tier-1 Zenoh middleware since Kilted), in pure Rust on the `zenoh` crate.
//!
//! The wire conventions it follows (key expressions, liveliness tokens, GIDs, attachments,
//! QoS) are in `docs/zenoh.md`, each with its source in rmw_zenoh, and in code in [`wire`].
//!
//! [`ZenohTransport`] is the transport: a [`Context`](rclev::Context) over it
//! ([`ZenohTransport::context`]) gives nodes whose topics, services, parameters, actions and
//! graph are rmw_zenoh's.
//!
//! Set-up, as rmw_zenoh's: a process opens one [`ZenohSession`] (a peer dialling the router
//! on `tcp/localhost:7447`) from [`ZenohOptions`] (`ZENOH_SESSION_CONFIG_URI`,
//! `ZENOH_CONFIG_OVERRIDE`, `ZENOH_ROUTER_CHECK_ATTEMPTS`: [`config`]), and a [`Router`] in
//! process stands in for `rmw_zenohd` where one is wanted (tests, `rclev zenoh router`).
//!
//! ```no_run
//! # fn main() -> Result<(), rclev_zenoh::SessionError> {
//! let _router = rclev_zenoh::Router::from_env()?; // only if no rmw_zenohd runs on this host
//! let session = rclev_zenoh::ZenohSession::from_env()?;
//! println!("session {} connected to routers {:?}", session.zid(), session.routers());
//! # Ok(()) }
//! ```
//!
//! # Layers
//!
//! | layer | files |
//! |-------|-------|
//! | 0 | `config.rs` ([`config`]: the default configurations, the environment variables), `wire/` ([`wire`]: rmw_zenoh's conventions, sans I/O) |
//! | 1 | `session.rs` ([`ZenohSession`], the router check, blocking calls kept off current-thread runtimes) |
//! | 2 | `router.rs` ([`Router`]: rmw_zenohd in process), `transport/` ([`ZenohTransport`]: `graph.rs`, then `topic.rs` and `service.rs`, then `mod.rs`) |
//! | 3 | `lib.rs` (this root) |

#![warn(missing_docs)]

pub mod config;
mod router;
mod session;
mod transport;
pub mod wire;

pub use config::{ConfigError, ConfigOverride, ConfigSource, RouterCheck, ZenohOptions};
pub use router::Router;
pub use session::{SessionError, ZenohSession};
pub use transport::ZenohTransport;
