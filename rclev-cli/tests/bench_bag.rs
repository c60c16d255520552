//! `rclev bench bag` with tiny settings: every part runs (the DDS ones in a network namespace
//! the benchmark makes itself, so as root) and writes JSON rows that make sense. No timing is
//! checked: the figures depend on the machine.

#![cfg(feature = "dds")]

use std::process::Command;
use std::time::Duration;

/// The whole run: writer cases, two recordings, four play runs, each process starting DDS.
const LIMIT: Duration = Duration::from_secs(180);

#[test]
fn the_bag_benchmark_writes_sane_rows() {
    let json = std::env::temp_dir().join(format!("rclev-bench-bag-{}.json", std::process::id()));
    let mut child = Command::new(env!("CARGO_BIN_EXE_rclev"))
        .args([
            "bench",
            "bag",
            "--secs",
            "0.2",
            "--play-secs",
            "0.3",
            "--sizes",
            "16,65536",
            "--repeat",
            "1",
            "--json",
        ])
        .arg(&json)
        .spawn()
        .unwrap();
    let id = child.id();
    let killer = std::thread::spawn(move || {
        std::thread::sleep(LIMIT);
        // SAFETY: kill(2) on a pid we spawned; if it already exited the call fails harmlessly
        // (the pid cannot be reused before `wait` below reaps it).
        unsafe { libc::kill(id as i32, libc::SIGKILL) };
    });
    let status = child.wait().unwrap();
    drop(killer);
    assert!(status.success(), "the benchmark failed: {status}");
    let rows: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&json);
    let of = |part: &str| -> Vec<&serde_json::Value> {
        rows.iter().filter(|r| r["part"] == part).collect()
    };
    let f = |r: &serde_json::Value, k: &str| r[k].as_f64().unwrap_or_else(|| panic!("{k} in {r}"));

    // 2 sizes × 2 compressions × 2 writers, a run and a median each.
    let writer = of("writer");
    assert_eq!(writer.len(), 16, "{writer:#?}");
    for r in &writer {
        assert!(f(r, "messages") > 0.0 && f(r, "msgs_per_s") > 0.0, "{r}");
        assert!(f(r, "mb_per_s") > 0.0 && f(r, "file_mb") > 0.0, "{r}");
        assert!(f(r, "cpu_us_per_msg") >= 0.0, "{r}");
    }

    // Two scenarios, a recording and a median each.
    let record = of("record");
    assert_eq!(record.len(), 4, "{record:#?}");
    for r in &record {
        assert!(f(r, "published") > 0.0, "{r}");
        assert!(
            f(r, "in_bag") > 0.0 && f(r, "in_bag") <= f(r, "published"),
            "{r}"
        );
        assert_eq!(f(r, "lost"), f(r, "published") - f(r, "in_bag"), "{r}");
        assert!(f(r, "mcap_cpu_us_per_msg") >= 0.0, "{r}");
    }

    // Two scenarios × (rclev-play, publisher), a run and a median each.
    let play = of("play");
    assert_eq!(play.len(), 8, "{play:#?}");
    for r in &play {
        assert!(
            f(r, "received") > 0.0 && f(r, "received") <= f(r, "expected"),
            "{r}"
        );
        assert!(
            0.0 <= f(r, "dev_p50_us")
                && f(r, "dev_p50_us") <= f(r, "dev_p99_us")
                && f(r, "dev_p99_us") <= f(r, "dev_max_us"),
            "{r}"
        );
    }
}
