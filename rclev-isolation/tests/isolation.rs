//! `rclev_isolation`: a program runs with only `lo`, up, and an empty `/dev/shm`; its exit
//! status comes back; past its limit it is killed; and without privilege the answer is
//! `IsolationError::Namespace` (the test re-executes itself with every capability dropped).
//! Needs root, as the transports' tests do.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rclev_isolation::{check, Isolated, IsolationError};

/// Set in the copy of this binary that runs with no capabilities.
const UNPRIVILEGED: &str = "RCLEV_ISOLATION_TEST_UNPRIVILEGED";

#[test]
fn a_program_sees_only_loopback_up_and_an_empty_dev_shm() {
    let marker = format!("/dev/shm/rclev-isolation-test-{}", std::process::id());
    std::fs::write(&marker, b"outside").unwrap();
    let mut run = Isolated::new("sh");
    run.command()
        .args([
            "-c",
            "ip -o link show; echo ---; ls -A /dev/shm; echo ---; env",
        ])
        .stdout(Stdio::piped());
    run.ros_domain(42);
    let output = run.spawn().unwrap().wait_with_output().unwrap();
    let _ = std::fs::remove_file(&marker);
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    let parts: Vec<&str> = text.split("---\n").collect();
    let links: Vec<&str> = parts[0].lines().collect();
    assert_eq!(links.len(), 1, "{text}");
    assert!(
        links[0].contains(" lo: ") && links[0].contains(",UP"),
        "{text}"
    );
    assert_eq!(parts[1], "", "/dev/shm is not empty: {text}");
    assert!(parts[2].lines().any(|l| l == "ROS_DOMAIN_ID=42"), "{text}");
    assert!(
        parts[2]
            .lines()
            .any(|l| l == "ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST"),
        "{text}"
    );
}

#[test]
fn the_exit_status_is_the_programs() {
    let mut run = Isolated::new("sh");
    run.command().args(["-c", "exit 3"]);
    assert_eq!(run.status().unwrap().code(), Some(3));
    let status = Isolated::new("true")
        .run_within(Duration::from_secs(30))
        .unwrap();
    assert!(status.success());
}

#[test]
fn a_program_past_its_limit_is_killed() {
    let started = Instant::now();
    let mut run = Isolated::new("sleep");
    run.command().arg("30");
    let limit = Duration::from_millis(300);
    match run.run_within(limit) {
        Err(IsolationError::TimedOut { limit: l }) => assert_eq!(l, limit),
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// The defect: a test killed past its limit left the router it had started running, an
/// orphan, for as long as the machine ran.
#[test]
fn what_a_program_started_dies_with_it_when_it_is_killed() {
    let pidfile =
        std::env::temp_dir().join(format!("rclev-isolation-grandchild-{}", std::process::id()));
    let mut run = Isolated::new("sh");
    // A grandchild that would outlive its parent (in the background, in a session of its
    // own), which the test finds by its command line: `sleep` with a duration of its own.
    let tag = format!("600.{}", std::process::id());
    run.command().args([
        "-c",
        &format!(
            "setsid sleep {tag} & echo started > {}; sleep 600",
            pidfile.display()
        ),
    ]);
    match run.run_within(Duration::from_secs(2)) {
        Err(IsolationError::TimedOut { .. }) => {}
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert!(pidfile.exists(), "the grandchild was never started");
    let _ = std::fs::remove_file(&pidfile);
    // The kernel kills the namespace's processes when its first one dies, which --kill-child
    // makes it do when unshare is killed: no process with the tag is left (the kill is
    // immediate, but reaping is the kernel's: look until it is gone).
    let alive = || {
        std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            std::fs::read(e.path().join("cmdline"))
                .is_ok_and(|c| c.split(|&b| b == 0).any(|arg| arg == tag.as_bytes()))
        })
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while alive() {
        assert!(
            Instant::now() < deadline,
            "the grandchild outlived its killed parent"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn without_privilege_it_is_a_typed_error() {
    if std::env::var_os(UNPRIVILEGED).is_some() {
        // Here: root without a single capability, as good as any other user for namespaces.
        let err = check().unwrap_err();
        assert!(
            matches!(err, IsolationError::Namespace { .. }),
            "expected a Namespace error, got {err:?}"
        );
        let text = err.to_string();
        assert!(text.contains("needs root"), "{text}");
        assert!(matches!(
            Isolated::new("true").status(),
            Err(IsolationError::Namespace { .. })
        ));
        return;
    }
    check().expect("this test runs as root, as the transports' tests do");
    let status = Command::new("setpriv")
        .args(["--inh-caps=-all", "--bounding-set=-all", "--"])
        .arg(std::env::current_exe().unwrap())
        .args([
            "without_privilege_it_is_a_typed_error",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(UNPRIVILEGED, "1")
        .status()
        .expect("setpriv (util-linux) drops the capabilities");
    assert!(status.success(), "the unprivileged run failed: {status}");
}
