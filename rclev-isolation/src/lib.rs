//! Running a program where its network traffic meets no one else's: in a fresh network
//! namespace with only loopback (`lo`) up, and a `/dev/shm` of its own.
//!
//! This is how the tests of rclev's wire transports run — rclev-dds's (DDS) and rclev-zenoh's
//! (Zenoh) — and `rclev bench pubsub --transport dds`; a test of your own node over either may
//! want it too. It knows nothing of any transport (std only), so any transport's tests can use
//! it. A network namespace alone keeps the traffic in, and peers on other hosts or in other
//! tests out: DDS's UDP discovery and data, and TCP ports such as the Zenoh router's 7447, which
//! each namespace has to itself, so tests side by side may each run a router on it. Fast DDS's
//! shared-memory transport, though, meets in `/dev/shm` whatever shares it (tests running side
//! by side, segments a killed process left behind), so the namespace also gets a private mount
//! namespace with an empty tmpfs there. Both are gone when the program and its children exit.
//!
//! It is made with util-linux's `unshare -n -m --propagation private --pid --mount-proc
//! --kill-child`, then `ip link set lo up` (iproute2) and `mount -t tmpfs` on `/dev/shm`, and
//! the program is `exec`ed in it as the first process of a PID namespace of its own, with its
//! own `/proc` (so the process ids it sees of its children are the ones `/proc` shows). The
//! process [`Isolated::spawn`] returns is `unshare`'s: when it ends (killed past a limit, or
//! by a Ctrl-C at the terminal), the program is killed, and with it every process it started
//! — a router, a peer — however it started them. That needs **root** (precisely:
//! `CAP_SYS_ADMIN` and `CAP_NET_ADMIN`). Before running the program, [`Isolated`] makes a
//! namespace the same way once, on its own, so that a failure to make one is told apart from
//! the program's own failure: it is [`IsolationError::Namespace`], carrying what the tools
//! said (typically `unshare: unshare failed: Operation not permitted` when not root), or
//! [`IsolationError::Unshare`] when `unshare` cannot be started at all.
//!
//! A test can run itself isolated: re-execute its own binary ([`std::env::current_exe`]) with
//! the test's name, `--exact`, and an environment variable that tells the child it is inside
//! (as rclev-dds's and rclev-zenoh's `tests/common/mod.rs` do):
//!
//! ```no_run
//! use std::time::Duration;
//! use rclev_isolation::Isolated;
//!
//! const INSIDE: &str = "MY_TEST_ISOLATED";
//!
//! #[test]
//! fn talker_and_listener_meet() {
//!     if std::env::var_os(INSIDE).is_none() {
//!         let mut run = Isolated::new(std::env::current_exe().unwrap());
//!         run.ros_domain(7)
//!             .command()
//!             .args(["talker_and_listener_meet", "--exact", "--nocapture"])
//!             .env(INSIDE, "1");
//!         let status = run.run_within(Duration::from_secs(60)).unwrap();
//!         assert!(status.success(), "failed in its namespace: {status}");
//!         return;
//!     }
//!     // Here: only `lo`, an empty /dev/shm, ROS_DOMAIN_ID=7. Make the nodes, talk.
//! }
//! ```

#![warn(missing_docs)]

use std::ffi::OsStr;
use std::fmt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// What runs in the new namespaces before the program (`$0`, with its arguments `$@`).
const SET_UP: &str = "ip link set lo up && mount -t tmpfs -o mode=1777 rclev-isolated-shm /dev/shm";

/// How often [`Isolated::run_within`] looks whether the program has exited.
const POLL: Duration = Duration::from_millis(20);

/// `unshare` making a network namespace, a private mount namespace and a PID namespace with
/// its own `/proc`, running `sh -c script` there as the PID namespace's first process. When
/// `unshare` dies, that process is killed (`--kill-child`), and with it, by the kernel, every
/// process of the namespace: nothing the program started outlives a run that is killed.
fn unshare(script: &str) -> Command {
    let mut command = Command::new("unshare");
    command.args([
        "-n",
        "-m",
        "--propagation",
        "private",
        "--pid",
        "--mount-proc",
        "--kill-child",
        "--",
        "sh",
        "-c",
        script,
    ]);
    command
}

/// Why a program could not be run (or finish) isolated.
#[derive(Debug)]
#[non_exhaustive]
pub enum IsolationError {
    /// `unshare` (util-linux) could not be started: it is not installed, or not on `PATH`.
    Unshare(std::io::Error),
    /// The namespace could not be made: `unshare`, `ip link set lo up` or the mount of
    /// `/dev/shm` failed. Almost always for want of privilege: it needs root
    /// (`CAP_SYS_ADMIN` and `CAP_NET_ADMIN`).
    Namespace {
        /// How the set-up exited.
        status: ExitStatus,
        /// What it printed on stderr (`unshare: unshare failed: Operation not permitted`).
        stderr: String,
    },
    /// Starting the program, or waiting for it, failed.
    Io(std::io::Error),
    /// The program did not finish within `limit` ([`Isolated::run_within`]); it was killed.
    TimedOut {
        /// The limit it was given.
        limit: Duration,
    },
}

impl fmt::Display for IsolationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unshare(e) => write!(
                f,
                "could not run unshare (util-linux), which makes the network namespace: {e}"
            ),
            Self::Namespace { status, stderr } => write!(
                f,
                "could not make a network namespace ({status}): {}; it needs root \
                 (CAP_SYS_ADMIN and CAP_NET_ADMIN)",
                stderr.trim()
            ),
            Self::Io(e) => write!(f, "running the program in its network namespace: {e}"),
            Self::TimedOut { limit } => {
                write!(f, "did not finish within {limit:?}; it was killed")
            }
        }
    }
}

impl std::error::Error for IsolationError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Unshare(e) | Self::Io(e) => Some(e),
            _ => None,
        }
    }
}

/// Makes a fresh network namespace with `lo` up and a private `/dev/shm`, and lets it go at
/// once: whether this process may make them. [`Isolated`] does this before every run.
pub fn check() -> Result<(), IsolationError> {
    let output = unshare(SET_UP)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(IsolationError::Unshare)?;
    if output.status.success() {
        Ok(())
    } else {
        Err(IsolationError::Namespace {
            status: output.status,
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        })
    }
}

/// A program to run in a fresh network namespace with only `lo` up and a `/dev/shm` of its
/// own (see the [module](self)). Needs root.
#[derive(Debug)]
pub struct Isolated {
    command: Command,
}

impl Isolated {
    /// `program` (a path, or a name looked up on `PATH` inside), to be given arguments,
    /// environment and standard streams through [`command`](Self::command).
    pub fn new(program: impl AsRef<OsStr>) -> Self {
        let mut command = unshare(&format!("{SET_UP} && exec \"$0\" \"$@\""));
        command.arg(program);
        Self { command }
    }

    /// The command that runs the program: arguments added here go to the program; so do
    /// environment variables, the working directory and the standard streams.
    pub fn command(&mut self) -> &mut Command {
        &mut self.command
    }

    /// Points the program's ROS 2 nodes at domain `domain` with discovery on this host only
    /// (`ROS_DOMAIN_ID`, `ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST`), and drops
    /// `ROS_STATIC_PEERS` and `ROS_LOCALHOST_ONLY` from its environment: the namespace has no
    /// other host to reach. A domain of its own keeps concurrent runs apart a second way.
    pub fn ros_domain(&mut self, domain: u32) -> &mut Self {
        self.command
            .env("ROS_DOMAIN_ID", domain.to_string())
            .env("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
            .env_remove("ROS_STATIC_PEERS")
            .env_remove("ROS_LOCALHOST_ONLY");
        self
    }

    /// Starts the program isolated, once [`check`] has made a namespace: `unshare`'s
    /// process, which ends with the program's exit status, and which the caller waits for.
    /// Killing it kills the program and everything it started.
    pub fn spawn(&mut self) -> Result<Child, IsolationError> {
        check()?;
        self.command.spawn().map_err(IsolationError::Io)
    }

    /// Runs the program isolated and waits for it: its exit status (126 or 127, with a word
    /// from the shell on stderr, when it could not be executed).
    pub fn status(&mut self) -> Result<ExitStatus, IsolationError> {
        self.spawn()?.wait().map_err(IsolationError::Io)
    }

    /// [`status`](Self::status), within `limit` from its start: a program still running then
    /// is killed (SIGKILL), with every process it started, and the answer is
    /// [`IsolationError::TimedOut`].
    pub fn run_within(&mut self, limit: Duration) -> Result<ExitStatus, IsolationError> {
        let mut child = self.spawn()?;
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = child.try_wait().map_err(IsolationError::Io)? {
                return Ok(status);
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                return Err(IsolationError::TimedOut { limit });
            }
            std::thread::sleep(POLL);
        }
    }
}
