//! Fast DDS version skew on one host, for real: rclev built against Debian's Fast DDS 2.9.1
//! meets rclev and a real rclpy on 2.14.5, both ways, with the default shared-memory policy
//! (`tests/shm/skew.sh`, which installs Debian's `libfastrtps-dev` and builds the 2.9.1
//! variant; measurements and the whole matrix in `tests/shm/RESULTS.md`). Each pair runs in
//! its own network, mount (private `/dev/shm`) and PID namespace; a crash, a hang, a silent
//! pair or a 2.9.1 process that maps shared memory fails it.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn a_peer_on_another_fast_dds_neither_crashes_nor_hangs_anyone() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let exe = std::env::current_exe().unwrap();
    // The 2.14.5 side is the `chatter` example `cargo test` built beside this test.
    let chatter = exe.parent().unwrap().join("../examples/chatter");
    let venv = std::env::var_os("RCLEV_ORACLE_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| dir.join("../target/oracle-venv"));
    // Its logs: removed when it passes, kept (and named) when it fails.
    let logs = tempfile::Builder::new()
        .prefix("skew-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let mut child = Command::new("bash")
        .arg(dir.join("tests/shm/skew.sh"))
        .env("SKEW_OUT", logs.path())
        .env("SKEW_BIN_214", &chatter)
        .env("SKEW_PYTHON", venv.join("bin/python"))
        .env("RCLEV_ORACLE_VENV", &venv)
        .spawn()
        .expect("bash runs tests/shm/skew.sh");
    let deadline = Instant::now() + Duration::from_secs(900);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let kept = logs.keep();
            panic!(
                "skew.sh did not finish within 15 minutes (logs in {})",
                kept.display()
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    if !status.success() {
        let kept = logs.keep();
        panic!(
            "skew.sh failed ({status}); {} says which pair",
            kept.join("summary.txt").display()
        );
    }
}
