//! Opening and closing the Zenoh session a process's nodes share, and the router check
//! `rmw_zenoh_cpp` makes before a node starts.
//!
//! A ROS 2 node on rmw_zenoh opens one Zenoh session (a peer), then looks whether a router is
//! connected to it, `ZENOH_ROUTER_CHECK_ATTEMPTS` times a second apart: without a router, peers
//! never learn of each other (multicast scouting is off). rmw_zenoh then logs a warning and
//! carries on (since rmw_zenoh#445, 2025); [`ZenohSession::open`] returns
//! [`SessionError::NoRouter`] instead, which names the endpoint dialled and the variables to
//! set. A negative `ZENOH_ROUTER_CHECK_ATTEMPTS` skips the check, as in rmw_zenoh.
//!
//! How the blocking calls stay clear of Tokio's current-thread runtimes: [`ZenohSession`].

use std::fmt;
use std::time::Duration;

use zenoh::Wait;

use crate::config::{
    json_at, ConfigError, RouterCheck, ZenohOptions, CONFIG_OVERRIDE, ROUTER_CHECK_ATTEMPTS,
};

/// Why a session or router could not be opened, or closed.
#[derive(Debug)]
#[non_exhaustive]
pub enum SessionError {
    /// Its configuration could not be made (a file, an override, an attempts value).
    Config(ConfigError),
    /// Zenoh could not open it: typically an endpoint it must listen on is taken (a router
    /// already on 7447) or malformed.
    Open {
        /// `session` or `router`.
        what: &'static str,
        /// Its `listen/endpoints`, as JSON.
        listen: String,
        /// What Zenoh said.
        reason: String,
    },
    /// No router was connected after every look of the router check.
    NoRouter {
        /// How many times it looked.
        attempts: u64,
        /// How long it waited between two looks.
        interval: Duration,
        /// Where the session dials (its `connect/endpoints`, as JSON).
        connect: String,
    },
    /// Zenoh reported an error while closing it.
    Close {
        /// What Zenoh said.
        reason: String,
    },
}

impl fmt::Display for SessionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Config(e) => write!(f, "{e}"),
            Self::Open {
                what,
                listen,
                reason,
            } => write!(
                f,
                "could not open the Zenoh {what} (listening on {listen}): {reason}"
            ),
            Self::NoRouter {
                attempts,
                interval,
                connect,
            } => write!(
                f,
                "no Zenoh router connected after {attempts} look(s), {interval:?} apart; the \
                 session dials {connect}. Start one (`rclev zenoh router`, or `ros2 run \
                 rmw_zenoh_cpp rmw_zenohd`), or point connect/endpoints at one with \
                 {CONFIG_OVERRIDE}; set {ROUTER_CHECK_ATTEMPTS} to look longer (0: until one \
                 is found) or to -1 to start without one"
            ),
            Self::Close { reason } => write!(f, "closing the Zenoh session: {reason}"),
        }
    }
}

impl std::error::Error for SessionError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Config(e) => Some(e),
            _ => None,
        }
    }
}

impl From<ConfigError> for SessionError {
    fn from(e: ConfigError) -> Self {
        SessionError::Config(e)
    }
}

/// Runs `f` where Zenoh's blocking calls may run: here, unless this thread drives a
/// current-thread Tokio runtime, where Zenoh's `block_in_place` would panic; then on a plain
/// thread of its own, waited for.
pub(crate) fn off_current_thread_runtime<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    let on_current_thread_runtime = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread);
    if !on_current_thread_runtime {
        return f();
    }
    std::thread::scope(|scope| match scope.spawn(f).join() {
        Ok(r) => r,
        // A panic in Zenoh's code goes on as this thread's.
        Err(panic) => std::panic::resume_unwind(panic),
    })
}

/// Opens a Zenoh session (any mode) from `config`; `what` names it in errors.
pub(crate) fn open_zenoh(
    config: zenoh::Config,
    what: &'static str,
) -> Result<zenoh::Session, SessionError> {
    let listen = json_at(&config, "listen/endpoints");
    off_current_thread_runtime(move || zenoh::open(config).wait()).map_err(|e| SessionError::Open {
        what,
        listen,
        reason: e.to_string(),
    })
}

/// Closes `session` (all its clones, undeclaring what was declared on it).
pub(crate) fn close_zenoh(session: zenoh::Session) -> Result<(), SessionError> {
    off_current_thread_runtime(move || {
        let closed = session.close().wait();
        // Dropping the last handle would close again; it is a no-op on a closed session,
        // but it too must happen off a current-thread runtime.
        drop(session);
        closed
    })
    .map_err(|e| SessionError::Close {
        reason: e.to_string(),
    })
}

/// Whether a router is connected to `session` now.
fn router_connected(session: &zenoh::Session) -> bool {
    off_current_thread_runtime(|| session.info().routers_zid().wait().next().is_some())
}

/// A process's Zenoh session, set up as an rmw_zenoh node's: opened from [`ZenohOptions`]
/// (rclev's default: a peer dialling `tcp/localhost:7447`), router-checked, closed when
/// dropped (or by [`close`](Self::close), which reports errors).
///
/// # Blocking, and Tokio
///
/// The calls here block (Zenoh's `Wait` API): opening and closing are one-off, and the router
/// check sleeps between looks. Zenoh runs its own Tokio runtimes and blocks on them with
/// `tokio::task::block_in_place`, which **panics** on a thread that runs a current-thread Tokio
/// runtime — as rclev's dedicated workers do — and opening, the check (`routers_zid`) and
/// closing (also on drop) all block that way, even when awaited (seen with Zenoh 1.10.2). So every blocking call here first looks where it
/// runs, and on a current-thread runtime does its work on a short-lived plain thread and waits
/// for it: nothing panics, wherever a session is opened or dropped. Code that uses the
/// session's [`zenoh`](Self::zenoh) handle directly owes the same care; it should
/// borrow the handle rather than keep clones, since the last clone dropped closes the session
/// wherever that happens.
pub struct ZenohSession {
    /// `None` only once closed.
    session: Option<zenoh::Session>,
}

impl fmt::Debug for ZenohSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("ZenohSession");
        if let Some(s) = &self.session {
            d.field("zid", &s.zid());
        }
        d.finish_non_exhaustive()
    }
}

impl ZenohSession {
    /// Opens a session with `options`'s session configuration, then makes the router check
    /// its [`router_check`](ZenohOptions::router_check) asks for. Blocks for the check: up to
    /// `attempts - 1` intervals (1 s by default) when no router comes, forever with
    /// [`RouterCheck::Forever`].
    pub fn open(options: &ZenohOptions) -> Result<Self, SessionError> {
        Self::open_with(
            options.session_zenoh_config()?,
            options.router_check,
            options.router_check_interval,
        )
    }

    /// Reads [`ZenohOptions::from_env`] and [`open`](Self::open)s.
    pub fn from_env() -> Result<Self, SessionError> {
        Self::open(&ZenohOptions::from_env()?)
    }

    /// Opens a session with `config` as it is, then checks for a router as `check` says, one
    /// look every `interval`.
    pub fn open_with(
        config: zenoh::Config,
        check: RouterCheck,
        interval: Duration,
    ) -> Result<Self, SessionError> {
        let connect = json_at(&config, "connect/endpoints");
        let session = ZenohSession {
            session: Some(open_zenoh(config, "session")?),
        };
        let attempts = match check {
            RouterCheck::Skip => return Ok(session),
            RouterCheck::Attempts(n) => n.get(),
            RouterCheck::Forever => u64::MAX,
        };
        // As rmw_zenoh: look, and sleep only when another look follows.
        let mut looked = 0u64;
        loop {
            if router_connected(session.zenoh()) {
                tracing::debug!(
                    target: "rclev_zenoh",
                    "a Zenoh router is connected (after {} look(s))",
                    looked + 1
                );
                return Ok(session);
            }
            looked += 1;
            rclev::diagnostic!(WARN,
                target: "rclev_zenoh",
                "no Zenoh router connected yet (look {looked}); the session dials {connect}"
            );
            if looked >= attempts {
                // `session` closes as it drops.
                return Err(SessionError::NoRouter {
                    attempts,
                    interval,
                    connect,
                });
            }
            std::thread::sleep(interval);
        }
    }

    /// The Zenoh session, to declare publishers, subscribers, queryables and liveliness
    /// tokens on (see [`ZenohSession`] on blocking calls and on keeping clones).
    pub fn zenoh(&self) -> &zenoh::Session {
        // Only `close` (which takes `self`) and `drop` empty it.
        self.session
            .as_ref()
            .expect("a ZenohSession holds its session until closed")
    }

    /// The session's Zenoh id (the `<zid>` of rmw_zenoh's liveliness tokens).
    pub fn zid(&self) -> zenoh::session::ZenohId {
        self.zenoh().zid()
    }

    /// The Zenoh ids of the routers connected to the session now.
    pub fn routers(&self) -> Vec<zenoh::session::ZenohId> {
        let session = self.zenoh();
        off_current_thread_runtime(|| session.info().routers_zid().wait().collect())
    }

    /// The Zenoh ids of the peers connected to the session directly now.
    pub fn peers(&self) -> Vec<zenoh::session::ZenohId> {
        let session = self.zenoh();
        off_current_thread_runtime(|| session.info().peers_zid().wait().collect())
    }

    /// Closes the session now, and says whether Zenoh reported an error doing it.
    pub fn close(mut self) -> Result<(), SessionError> {
        match self.session.take() {
            Some(session) => close_zenoh(session),
            None => Ok(()),
        }
    }
}

impl Drop for ZenohSession {
    fn drop(&mut self) {
        if let Some(session) = self.session.take() {
            if let Err(e) = close_zenoh(session) {
                rclev::diagnostic!(WARN, target: "rclev_zenoh", "{e}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_no_router_error_names_the_endpoint_and_the_variables() {
        let e = SessionError::NoRouter {
            attempts: 2,
            interval: Duration::from_secs(1),
            connect: r#"["tcp/localhost:7447"]"#.into(),
        };
        let text = e.to_string();
        for part in [
            "tcp/localhost:7447",
            "ZENOH_ROUTER_CHECK_ATTEMPTS",
            "ZENOH_CONFIG_OVERRIDE",
            "2 look(s)",
        ] {
            assert!(text.contains(part), "{part} missing: {text}");
        }
    }

    #[test]
    fn blocking_work_moves_off_a_current_thread_runtime_only() {
        let here = std::thread::current().id();
        assert_eq!(
            off_current_thread_runtime(|| std::thread::current().id()),
            here
        );
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let elsewhere = rt.block_on(async {
            off_current_thread_runtime(|| {
                (
                    std::thread::current().id(),
                    tokio::runtime::Handle::try_current().is_err(),
                )
            })
        });
        assert_ne!(elsewhere.0, here);
        assert!(elsewhere.1, "the helper thread has no runtime context");
    }

    /// No network: a peer that listens on nothing and dials nothing.
    fn alone() -> zenoh::Config {
        let mut config = zenoh::Config::default();
        for (k, v) in [
            ("listen/endpoints", "[]"),
            ("connect/endpoints", "[]"),
            ("scouting/multicast/enabled", "false"),
        ] {
            config.insert_json5(k, v).unwrap();
        }
        config
    }

    #[test]
    fn without_a_router_and_without_a_check_a_session_opens_alone() {
        let config = alone();
        let session = ZenohSession::open_with(config.clone(), RouterCheck::Skip, Duration::ZERO)
            .expect("opens");
        assert!(session.routers().is_empty());
        session.close().unwrap();
        let err = ZenohSession::open_with(
            config,
            RouterCheck::Attempts(std::num::NonZeroU64::new(2).unwrap()),
            Duration::from_millis(10),
        )
        .unwrap_err();
        assert!(
            matches!(err, SessionError::NoRouter { attempts: 2, .. }),
            "{err}"
        );
    }

    #[test]
    fn a_session_opens_and_drops_inside_a_current_thread_runtime() {
        let config = alone();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let session =
                ZenohSession::open_with(config, RouterCheck::Skip, Duration::ZERO).unwrap();
            assert!(session.routers().is_empty());
            drop(session);
        });
    }
}
