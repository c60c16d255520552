//! The `rclev` binary: the benchmarks' machine-readable output and the demo.

use std::process::Command;

fn rclev() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rclev"))
}

fn rows(path: &std::path::Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).expect("the benchmark wrote its JSON");
    serde_json::from_str(&text).expect("valid JSON")
}

#[test]
fn bench_timers_writes_rows_and_a_plot() {
    let dir = std::env::temp_dir().join(format!("rclev-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (json, plot) = (dir.join("timers.json"), dir.join("timers.png"));
    let status = rclev()
        .args([
            "bench", "timers", "--rates", "500,2000", "--secs", "0.3", "--json",
        ])
        .arg(&json)
        .arg("--plot")
        .arg(&plot)
        .status()
        .unwrap();
    assert!(status.success());
    let rows = rows(&json);
    assert_eq!(rows.len(), 2 * 5);
    for variant in [
        "rclev",
        "reference",
        "per-task",
        "tokio-interval",
        "os-sleep",
    ] {
        assert!(
            rows.iter().any(|r| r["variant"] == variant),
            "no {variant} row"
        );
    }
    for r in &rows {
        for key in [
            "timers",
            "target_hz",
            "achieved_hz",
            "percent",
            "dropped",
            "late_p50_us",
            "late_p99_us",
            "cpu_cores",
        ] {
            assert!(r.get(key).is_some(), "row lacks {key}: {r}");
        }
        assert!(r["achieved_hz"].as_f64().unwrap() > 0.0, "{r}");
    }
    let png = std::fs::read(&plot).unwrap();
    assert_eq!(&png[1..4], b"PNG");
    std::fs::remove_dir_all(&dir).ok();
}

/// `--repeat` writes every repetition and a median row per cell with the range of `%`;
/// `--load` runs its hogs beside the measurement and says so in the rows.
#[test]
fn bench_timers_repeats_under_load() {
    let dir = std::env::temp_dir().join(format!("rclev-cli-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("timers.json");
    let status = rclev()
        .args([
            "bench",
            "timers",
            "--rates",
            "1000",
            "--secs",
            "0.3",
            "--variants",
            "rclev,os-sleep",
            "--repeat",
            "3",
            "--load",
            "1",
            "--verbose",
            "--plot",
        ])
        .arg(dir.join("timers.png"))
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(status.status.success());
    let rows = rows(&json);
    assert_eq!(rows.len(), 2 * 3 + 2, "every repetition, then the medians");
    for r in &rows {
        assert_eq!(r["load"], 1, "{r}");
        // Per-thread accounting: the measured process's threads, by name.
        let threads = r["threads"].as_array().expect("threads");
        assert!(
            threads
                .iter()
                .any(|t| t["cpu_cores"].as_f64().unwrap() > 0.0),
            "{r}"
        );
        // rclev's tick path: every tick handed over or dropped is accounted for.
        if r["variant"] == "rclev" {
            let path = &r["tick_path"];
            assert!(path["handed_over"].as_u64().unwrap() > 0, "{r}");
        } else {
            assert!(r["tick_path"].is_null(), "{r}");
        }
    }
    // --verbose prints the diagnosis per cell.
    let stderr = String::from_utf8_lossy(&status.stderr);
    assert!(
        stderr.contains("ticks:") && stderr.contains("waiting for a CPU"),
        "{stderr}"
    );
    // The plot with its three panels was written.
    assert!(std::fs::metadata(dir.join("timers.png")).unwrap().len() > 10_000);
    let medians: Vec<_> = rows.iter().filter(|r| r["rep"].is_null()).collect();
    assert_eq!(medians.len(), 2);
    for m in medians {
        let range = m["percent_range"]
            .as_array()
            .expect("a range on a median row");
        let (lo, hi) = (range[0].as_f64().unwrap(), range[1].as_f64().unwrap());
        let p = m["percent"].as_f64().unwrap();
        assert!(lo <= p && p <= hi, "{m}");
    }
    assert!(!rclev()
        .args(["bench", "timers", "--repeat", "0"])
        .status()
        .unwrap()
        .success());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bench_pubsub_writes_rows() {
    let json = std::env::temp_dir().join(format!("rclev-pubsub-{}.json", std::process::id()));
    let status = rclev()
        .args([
            "bench",
            "pubsub",
            "--messages",
            "20000",
            "--secs",
            "0.2",
            "--json",
        ])
        .arg(&json)
        .status()
        .unwrap();
    assert!(status.success());
    let rows = rows(&json);
    let variants: Vec<_> = rows
        .iter()
        .map(|r| r["variant"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(variants, ["rclev", "tokio-mpsc"]);
    for r in &rows {
        assert!(r["msgs_per_s"].as_f64().unwrap() > 0.0);
        assert!(r["p50_us"].as_f64().unwrap() > 0.0);
        assert!(r["p99_us"].as_f64().unwrap() >= r["p50_us"].as_f64().unwrap());
    }
    std::fs::remove_file(&json).ok();
}

#[test]
fn demo_talker_listener_hears_what_was_said() {
    let out = rclev()
        .args(["demo", "talker-listener", "--secs", "0.5", "--rate", "20"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("I heard: 'Hello World: 1'"), "{stdout}");
    let last = stdout.lines().last().unwrap();
    let nums: Vec<u64> = last
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|s| s.parse().ok())
        .collect();
    assert_eq!(nums.len(), 2, "{last}");
    assert_eq!(nums[0], nums[1], "sent and received differ: {last}");
}

#[test]
fn bad_arguments_are_errors_not_panics() {
    let out = rclev()
        .args(["bench", "timers", "--rates", "-5"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let out = rclev()
        .args(["bench", "timers", "--variants", "nope", "--secs", "0.1"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown variant"));
}

#[test]
fn bench_simtime_rows_match_the_schema() {
    let json = std::env::temp_dir().join(format!("rclev-simtime-{}.json", std::process::id()));
    let status = rclev()
        .args(["bench", "simtime", "--secs", "0.3", "--json"])
        .arg(&json)
        .status()
        .unwrap();
    assert!(status.success());
    let rows = rows(&json);
    assert_eq!(rows.len(), 10);
    for case in ["scale-0.5", "scale-1", "scale-2", "scale-10", "paused"] {
        for clock in ["sim", "wall"] {
            assert!(
                rows.iter()
                    .any(|r| r["case"] == case && r["clock"] == clock),
                "no {case}/{clock}"
            );
        }
    }
    let paused = rows
        .iter()
        .find(|r| r["case"] == "paused" && r["clock"] == "sim")
        .unwrap();
    assert_eq!(paused["achieved_fires"], 0);
    for r in &rows {
        assert!(
            r["scale"].is_f64() && r["expected_fires"].is_u64() && r["achieved_fires"].is_u64()
        );
    }
    std::fs::remove_file(&json).ok();
}

#[test]
fn clock_command_runs_and_pauses() {
    let out = rclev()
        .args([
            "clock",
            "--scale",
            "4",
            "--secs",
            "0.8",
            "--pause-after",
            "0.6",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    // 4× for 0.6 s, then paused: sim seconds 1, 2 (maybe more), never beyond 2.4 s.
    assert!(stdout.contains("sim time    1.000 s"), "{stdout}");
    assert!(
        !stdout.contains("sim time    3.000 s"),
        "the clock did not pause: {stdout}"
    );
}

#[test]
fn demo_fibonacci_prints_feedback_and_result() {
    let out = rclev()
        .args(["demo", "fibonacci", "--order", "6", "--step-ms", "1"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("[client] feedback: [0, 1, 1]"), "{stdout}");
    assert!(
        stdout.contains("[client] result (Succeeded): [0, 1, 1, 2, 3, 5, 8]"),
        "{stdout}"
    );
    let rejected = rclev()
        .args(["demo", "fibonacci", "--order", "99"])
        .output()
        .unwrap();
    assert!(!rejected.status.success());
    assert!(String::from_utf8_lossy(&rejected.stderr).contains("rejected"));
}

/// Ctrl-C while the CLI spins shuts the executor down: the command prints its summary and
/// exits successfully instead of dying on the signal.
#[test]
fn ctrl_c_ends_a_spinning_command_cleanly() {
    use std::io::{BufRead, BufReader};
    let mut child = rclev()
        .args(["demo", "talker-listener", "--secs", "60", "--rate", "50"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // Spinning: the listener has heard something.
    for line in lines.by_ref() {
        if line.unwrap().contains("I heard") {
            break;
        }
    }
    // SAFETY: sends SIGINT to our own child process, which is still running (it has not been
    // waited for).
    assert_eq!(
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) },
        0
    );
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(std::time::Instant::now() < deadline, "no exit after Ctrl-C");
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    assert!(status.success(), "{status:?}");
    let last = rest.last().expect("no summary after Ctrl-C");
    assert!(last.starts_with("sent "), "{last}");
}

/// `interface show` takes ros2's short form `pkg/Name` when only one kind has the name, and an
/// unknown name is one sentence offering the closest names rclev ships (issue 25).
#[test]
fn interface_show_takes_short_names_and_suggests_known_ones() {
    let out = rclev()
        .args(["interface", "show", "std_msgs/String"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).ends_with("string data\n"));
    let out = rclev()
        .args(["interface", "show", "std_msgs/msg/Strin"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.trim_end(),
        "error: message type 'std_msgs/msg/Strin' is not one rclev ships; did you mean \
         std_msgs/msg/String?"
    );
}
