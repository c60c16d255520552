//! What the Zenoh tests share: each runs in a network namespace of its own (only `lo`, made by
//! the test with `rclev_isolation`), so that the router each one starts has port 7447 to
//! itself and nothing leaves the machine; bounded in time (killed past the limit). Needs root,
//! as the DDS tests do. Python peers come from the oracle venv (`bash .ci/oracles`).

#![allow(dead_code)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use rclev_isolation::{Isolated, IsolationError};

/// Set inside the namespace, for the re-executed test.
const INSIDE: &str = "RCLEV_ZENOH_TEST_NETNS";

/// The Zenoh variables a test's environment must not bring in: each test sets its own.
const ZENOH_VARIABLES: [&str; 4] = [
    "ZENOH_SESSION_CONFIG_URI",
    "ZENOH_ROUTER_CONFIG_URI",
    "ZENOH_CONFIG_OVERRIDE",
    "ZENOH_ROUTER_CHECK_ATTEMPTS",
];

/// Runs `body` in a fresh network namespace: the test binary re-executes itself there, running
/// only `test` (its full name), with `env` set and no other Zenoh variable, within `limit`.
pub fn in_netns(test: &str, env: &[(&str, &str)], limit: Duration, body: impl FnOnce()) {
    if std::env::var_os(INSIDE).is_some() {
        body();
        return;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut run = Isolated::new(exe);
    let command = run.command();
    command
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(INSIDE, "1");
    for v in ZENOH_VARIABLES {
        command.env_remove(v);
    }
    command.envs(env.iter().copied());
    match run.run_within(limit) {
        Ok(status) => assert!(status.success(), "{test} failed in its namespace: {status}"),
        Err(IsolationError::TimedOut { .. }) => panic!("{test} did not finish within {limit:?}"),
        Err(e) => panic!("{test} could not run in a network namespace of its own: {e}"),
    }
}

/// Tries `f` until it gives something, at most `limit` (each try may itself wait).
pub fn eventually<T>(limit: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(t) = f() {
            return Some(t);
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The oracle venv (`RCLEV_ORACLE_VENV`, else `<workspace>/target/oracle-venv`), as the DDS
/// tests find it.
pub fn venv() -> PathBuf {
    std::env::var_os("RCLEV_ORACLE_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/oracle-venv"))
}

/// The venv's Python, if it has zenoh; else why not.
pub fn python_with_zenoh() -> Result<std::path::PathBuf, String> {
    let python = venv().join("bin/python");
    let has = std::process::Command::new(&python)
        .args(["-c", "import zenoh"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("{} cannot run: {e}", python.display()))?;
    if has.success() {
        Ok(python)
    } else {
        Err(format!(
            "{} has no zenoh module (eclipse-zenoh: `bash .ci/oracles`)",
            python.display()
        ))
    }
}

/// A peer in a process of its own (a Python script from `tests/peers/`, or a program such as
/// the Zenoh router or hiroz-peer); its stdout lines are read on a thread so that every wait for one is
/// bounded. Killed when dropped.
pub struct PeerProcess {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
    /// Every line read so far, for failure messages.
    pub seen: Vec<String>,
}

impl PeerProcess {
    /// Starts `peers/<script>` with `args` on the venv's Python; panics if the venv has no
    /// zenoh (`bash .ci/oracles` installs it).
    pub fn python(script: &str, args: &[&str]) -> Self {
        let python = python_with_zenoh().unwrap_or_else(|why| panic!("{why}"));
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/peers")
            .join(script);
        let mut command = std::process::Command::new(python);
        command.arg("-u").arg(path).args(args);
        Self::spawn(command)
    }

    /// Starts `program` (from [`zenoh_peers`]) with `args`.
    pub fn program(program: &str, args: &[&str]) -> Self {
        let path = zenoh_peers()
            .unwrap_or_else(|why| panic!("{why}"))
            .join(program);
        let mut command = std::process::Command::new(path);
        command.args(args);
        Self::spawn(command)
    }

    /// Starts `command` with its stdout read line by line and its stderr inherited.
    pub fn spawn(mut command: std::process::Command) -> Self {
        use std::io::BufRead;
        let mut child = command
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {command:?}: {e}"));
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// The next line that starts with `prefix` (the rest of it), waiting at most `limit`.
    pub fn line(&mut self, prefix: &str, limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if let Some(rest) = line.strip_prefix(prefix) {
                        return rest.to_string();
                    }
                }
                Err(_) => panic!(
                    "no {prefix:?} line from the peer within {limit:?}; it printed {:#?}",
                    self.seen
                ),
            }
        }
    }

    /// Waits at most `limit` for the process to exit; whether it exited successfully.
    pub fn wait_success(&mut self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return status.success(),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                _ => return false,
            }
        }
    }
}

/// Where `.ci/zenoh-peers` (run by `.ci/oracles`) put hiroz-peer (`RCLEV_ZENOH_PEERS`, else
/// `<workspace>/target/zenoh-peers/bin`); else why not.
pub fn zenoh_peers() -> Result<PathBuf, String> {
    let dir = std::env::var_os("RCLEV_ZENOH_PEERS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/zenoh-peers/bin")
        });
    let program = dir.join("hiroz-peer");
    if !program.is_file() {
        return Err(format!(
            "{} is missing: `bash .ci/oracles` builds it",
            program.display()
        ));
    }
    Ok(dir)
}

impl Drop for PeerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A Zenoh transport whose session dials the router on `tcp/localhost:7447` (which the test
/// started; looked for up to a minute), on domain 0, and an executor over it.
pub fn executor() -> (std::sync::Arc<rclev_zenoh::ZenohTransport>, rclev::Executor) {
    let options = rclev_zenoh::ZenohOptions {
        router_check: rclev_zenoh::RouterCheck::Attempts(std::num::NonZeroU64::new(60).unwrap()),
        ..rclev_zenoh::ZenohOptions::default()
    };
    let transport = std::sync::Arc::new(
        rclev_zenoh::ZenohTransport::new(&options, 0, "/").expect("a transport"),
    );
    let context = rclev::Context::new(transport.clone(), rclev::Arguments::default());
    (transport, context.create_basic_executor())
}

/// Spins `executor` until `done` holds, at most `limit`; whether it held.
pub fn spin_until(executor: &rclev::Executor, limit: Duration, done: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while !done() && Instant::now() < deadline {
        let errors =
            executor.spin(rclev::SpinOptions::default().timeout(Duration::from_millis(50)));
        assert!(errors.is_empty(), "errors while spinning: {errors:?}");
    }
    done()
}
