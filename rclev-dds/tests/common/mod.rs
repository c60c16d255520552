//! What the DDS tests share: each runs in a network namespace of its own (only `lo`, made by
//! the test with [`rclev_dds::isolation`]: `unshare -n`, `ip link set lo up`) with a
//! `/dev/shm` of its own (a network namespace does not separate Fast DDS's shared-memory
//! segments and ports: tests running side by side, or segments a killed process left behind,
//! would meet there), with a domain id of its own, bounded in time; rclpy peers come from the
//! oracle venv (`bash .ci/oracles`).

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rclev_dds::isolation::{Isolated, IsolationError};

/// Set inside the namespace, for the re-executed test.
const INSIDE: &str = "RCLEV_DDS_TEST_NETNS";

/// Runs `body` in a fresh network namespace: the test binary re-executes itself there
/// ([`rclev_dds::isolation`]), running only `test` (its full name), within `limit` (killed
/// then).
pub fn in_netns(test: &str, limit: Duration, body: impl FnOnce()) {
    if std::env::var_os(INSIDE).is_some() {
        body();
        return;
    }
    let mut run = Isolated::new(std::env::current_exe().unwrap());
    run.ros_domain(domain_for(test))
        .command()
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(INSIDE, "1");
    match run.run_within(limit) {
        Ok(status) => assert!(status.success(), "{test} failed in its namespace: {status}"),
        Err(IsolationError::TimedOut { .. }) => panic!("{test} did not finish within {limit:?}"),
        Err(e) => panic!("{test} could not run in a network namespace of its own: {e}"),
    }
}

/// A domain id per test name: a second separation, beside the namespace's own network and
/// `/dev/shm`.
fn domain_for(test: &str) -> u32 {
    let h = test
        .bytes()
        .fold(2166136261u32, |h, b| (h ^ b as u32).wrapping_mul(16777619));
    1 + h % 200
}

/// The oracle venv's Python (rclpy on rmw_fastrtps_cpp, Fast DDS 2.14.5).
pub fn python() -> PathBuf {
    let venv = std::env::var_os("RCLEV_ORACLE_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/oracle-venv"));
    venv.join("bin/python")
}

/// A Python peer script from `tests/peers/`, started with `args`; its stdout is piped.
pub struct Peer {
    child: Child,
    name: String,
}

impl Peer {
    pub fn start(script: &str, args: &[&str]) -> Peer {
        // From rclev-dds's tests and from rclev-cli's (which include this file).
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../rclev-dds/tests/peers")
            .join(script);
        let child = Command::new(python())
            .arg("-u")
            .arg(path)
            .args(args)
            .env("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the oracle venv's python (bash .ci/oracles)");
        Peer {
            child,
            name: script.to_string(),
        }
    }

    /// Waits for the peer to exit (at most `limit`) and returns its stdout; panics if it
    /// failed.
    pub fn finish(mut self, limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                let mut out = String::new();
                use std::io::Read;
                self.child
                    .stdout
                    .take()
                    .unwrap()
                    .read_to_string(&mut out)
                    .unwrap();
                assert!(
                    status.success(),
                    "peer {} failed ({status}); it printed:\n{out}",
                    self.name
                );
                return out;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                let mut out = String::new();
                use std::io::Read;
                let _ = self.child.stdout.take().unwrap().read_to_string(&mut out);
                panic!(
                    "peer {} did not finish within {limit:?}; it printed:\n{out}",
                    self.name
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Peer {
    /// Interrupts the peer (SIGINT, as Ctrl-C would: rclpy then shuts down cleanly and its
    /// participant says goodbye at once) and returns its stdout (see [`finish`](Self::finish)).
    pub fn interrupt(self, limit: Duration) -> String {
        let pid = libc::pid_t::try_from(self.child.id()).expect("a pid");
        // SAFETY: sending a signal to our own child process, which has not been reaped yet
        // (`self` still owns it), so the pid cannot have been reused.
        unsafe { libc::kill(pid, libc::SIGINT) };
        self.finish(limit)
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Spins `executor` until `done` holds (checked every 50 ms), at most `limit`; an error
/// raised while spinning fails the test.
pub fn spin_until(executor: &rclev::Executor, limit: Duration, done: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while !done() && Instant::now() < deadline {
        let errors =
            executor.spin(rclev::SpinOptions::default().timeout(Duration::from_millis(50)));
        assert!(errors.is_empty(), "errors while spinning: {errors:?}");
    }
    done()
}

/// Waits for `peer` to finish (on another thread) while `executor` spins; its stdout.
pub fn finish_while_spinning(executor: &rclev::Executor, peer: Peer, limit: Duration) -> String {
    let done = std::sync::Arc::new(std::sync::Mutex::new(None));
    let d = done.clone();
    std::thread::spawn(move || *d.lock().unwrap() = Some(peer.finish(limit)));
    assert!(spin_until(executor, limit, || done
        .lock()
        .unwrap()
        .is_some()));
    let out = done.lock().unwrap().take().unwrap();
    out
}

/// Polls `f` until it holds, at most `limit`.
pub fn eventually(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    f()
}

/// A context on a DDS transport of its own (one participant), set up from the environment.
pub fn dds_context() -> rclev::Context {
    rclev::Context::with_transport(std::sync::Arc::new(
        rclev_dds::DdsTransport::from_env().unwrap(),
    ))
}

/// Reliable and keep-all: nothing published is dropped on the way.
pub fn reliable_keep_all() -> rclev::QoSProfile {
    rclev::QoSProfile {
        history: rclev::History::KeepAll,
        ..rclev::QoSProfile::default()
    }
}

/// Two participants of one process with a node each: `talker` on `a`, `listener` on `b`.
/// Fields drop in order: the nodes before their executors.
pub struct Pair {
    pub talker: rclev::Node,
    pub listener: rclev::Node,
    pub a: rclev::Executor,
    pub b: rclev::Executor,
}

impl Pair {
    /// The talker publishes `hello 0` … `hello {count - 1}` on `topic` once the listener's
    /// subscription is matched; what the listener heard, in order, once it has heard as many
    /// (or after 10 s).
    pub fn exchange(&self, topic: &str, count: usize) -> Vec<String> {
        use rclev::interfaces::std_msgs::msg::String as StringMsg;
        let publisher = self.talker.create_publisher::<StringMsg>(topic).unwrap();
        let heard = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let h = heard.clone();
        let _sub = self
            .listener
            .create_subscription::<StringMsg, _>(topic, move |m| {
                h.lock().unwrap().push(m.data.clone())
            })
            .unwrap();
        assert!(eventually(Duration::from_secs(10), || publisher
            .get_subscription_count()
            == 1));
        for i in 0..count {
            publisher
                .publish(StringMsg {
                    data: format!("hello {i}"),
                })
                .unwrap();
        }
        spin_until(&self.b, Duration::from_secs(10), || {
            heard.lock().unwrap().len() >= count
        });
        let heard = heard.lock().unwrap().clone();
        heard
    }

    pub fn new() -> Pair {
        let a = dds_context().create_basic_executor();
        let b = dds_context().create_basic_executor();
        Pair {
            talker: a.create_node("talker").unwrap(),
            listener: b.create_node("listener").unwrap(),
            a,
            b,
        }
    }
}

/// Calls `request` with a timeout of `each`, up to `attempts` times. The first call to a
/// server just discovered may be lost, as between any two ROS 2 nodes: the server answers
/// before it has matched the client's reply reader and the volatile reply reaches nobody
/// (rmw_fastrtps waits for that match a short while only; a busy host makes it likelier).
pub async fn call_retrying<S: rclev::msg::ServiceType>(
    client: &rclev::Client<S>,
    request: S::Request,
    each: Duration,
    attempts: u32,
) -> rclev::Result<S::Response>
where
    S::Request: Clone,
{
    let mut last = None;
    for _ in 0..attempts.max(1) {
        match client.call_with_timeout(request.clone(), each).await {
            Err(rclev::Error::Timeout { what, after }) => {
                last = Some(rclev::Error::Timeout { what, after })
            }
            answer => return answer,
        }
    }
    Err(last.expect("at least one attempt"))
}
