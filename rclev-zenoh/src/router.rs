//! A Zenoh router in this process, set up as `rmw_zenohd` sets up its own: what ROS 2 nodes on
//! rmw_zenoh (and rclev-zenoh sessions) need on their host to find each other.
//!
//! rmw_zenohd opens a Zenoh session in router mode from `DEFAULT_RMW_ZENOH_ROUTER_CONFIG.json5`
//! (or `ZENOH_ROUTER_CONFIG_URI`'s file), with `ZENOH_CONFIG_OVERRIDE` applied, and keeps it
//! until Ctrl-C. [`Router::start`] does the same with rclev-zenoh's router default (listening
//! on `tcp/[::]:7447`, see [`crate::config`]); the handle stops the router when dropped. It
//! serves tests (a router per network namespace) and the `rclev zenoh router` verb. It has no
//! Zenoh plugins (REST, storages), as rmw_zenohd has none loaded by default.

use std::fmt;

use crate::config::{json_at, ZenohOptions};
use crate::session::{close_zenoh, open_zenoh, SessionError};

/// A running in-process Zenoh router; dropping it (or [`stop`](Self::stop)) stops it, closing
/// its links to every session.
pub struct Router {
    /// `None` only once stopped.
    session: Option<zenoh::Session>,
    /// Its configured `listen/endpoints`, as JSON.
    listen: String,
}

impl fmt::Debug for Router {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Router")
            .field("listen", &self.listen)
            .finish_non_exhaustive()
    }
}

impl Router {
    /// Starts a router with `options`'s router configuration (the default, or
    /// `ZENOH_ROUTER_CONFIG_URI`'s file, with the overrides). Fails with
    /// [`SessionError::Open`] when it cannot listen where it is told to (typically: another
    /// router already has port 7447).
    pub fn start(options: &ZenohOptions) -> Result<Router, SessionError> {
        Self::start_with(options.router_zenoh_config()?)
    }

    /// Reads [`ZenohOptions::from_env`] and [`start`](Self::start)s: rmw_zenohd's behaviour.
    pub fn from_env() -> Result<Router, SessionError> {
        Self::start(&ZenohOptions::from_env()?)
    }

    /// Starts a router with `config` as it is (its `mode` should be `"router"`).
    pub fn start_with(config: zenoh::Config) -> Result<Router, SessionError> {
        let listen = json_at(&config, "listen/endpoints");
        let session = open_zenoh(config, "router")?;
        tracing::debug!(target: "rclev_zenoh", "Zenoh router {} listening on {listen}", session.zid());
        Ok(Router {
            session: Some(session),
            listen,
        })
    }

    /// Where it was configured to listen (`listen/endpoints` as JSON: `["tcp/[::]:7447"]`).
    pub fn listen_endpoints(&self) -> &str {
        &self.listen
    }

    /// The router's Zenoh id.
    pub fn zid(&self) -> zenoh::session::ZenohId {
        self.zenoh().zid()
    }

    /// The router's own Zenoh session (in router mode).
    pub fn zenoh(&self) -> &zenoh::Session {
        // Only `stop` (which takes `self`) and `drop` empty it.
        self.session
            .as_ref()
            .expect("a Router holds its session until stopped")
    }

    /// Stops the router now, and says whether Zenoh reported an error doing it.
    pub fn stop(mut self) -> Result<(), SessionError> {
        match self.session.take() {
            Some(session) => close_zenoh(session),
            None => Ok(()),
        }
    }
}

impl Drop for Router {
    fn drop(&mut self) {
        if let Some(session) = self.session.take() {
            if let Err(e) = close_zenoh(session) {
                rclev::diagnostic!(WARN, target: "rclev_zenoh", "stopping the Zenoh router: {e}");
            }
        }
    }
}
