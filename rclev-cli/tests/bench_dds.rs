//! `rclev bench pubsub --transport dds` with tiny settings: it runs its processes (in a
//! network namespace it makes itself, so as root) and writes JSON rows that make sense. No
//! timing is checked: the figures depend on the machine.

#![cfg(feature = "dds")]

use std::process::Command;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(120);

#[test]
fn the_dds_benchmark_writes_sane_rows() {
    let json = std::env::temp_dir().join(format!("rclev-bench-dds-{}.json", std::process::id()));
    let mut c = Command::new(env!("CARGO_BIN_EXE_rclev"));
    c.args([
        "bench",
        "pubsub",
        "--transport",
        "dds",
        "--secs",
        "0.5",
        "--warmup",
        "0.2",
        "--sizes",
        "16",
        "--repeat",
        "1",
        // ddsperf is an optional system package: not needed here.
        "--variants",
        "rclev,raw",
        "--json",
    ])
    .arg(&json);
    let child = c.spawn().unwrap();
    let id = child.id();
    let killer = std::thread::spawn(move || {
        std::thread::sleep(LIMIT);
        // SAFETY: kill(2) on a pid we spawned; if it already exited the call fails harmlessly
        // (the pid cannot be reused before `wait_with_output` below reaps it).
        unsafe { libc::kill(id as i32, libc::SIGKILL) };
    });
    let out = child.wait_with_output().unwrap();
    drop(killer);
    assert!(out.status.success(), "the benchmark failed: {}", out.status);

    let rows: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&json);
    // One run and one median row per variant.
    assert_eq!(rows.len(), 4, "{rows:#?}");
    for variant in ["rclev", "raw"] {
        let of_variant: Vec<_> = rows.iter().filter(|r| r["variant"] == variant).collect();
        assert_eq!(of_variant.len(), 2, "{variant}: {rows:#?}");
        assert!(of_variant.iter().any(|r| r["rep"].is_null()));
        for r in of_variant {
            let f = |k: &str| r[k].as_f64().unwrap_or_else(|| panic!("{k} in {r}"));
            assert_eq!(r["size"], 16);
            assert!(f("msgs_per_s") > 0.0, "{r}");
            assert!(
                (f("mb_per_s") - f("msgs_per_s") * 16.0 / 1e6).abs() < 1e-6,
                "{r}"
            );
            assert!(f("sent_per_s") > 0.0, "{r}");
            assert!((0.0..=100.0).contains(&f("lost_percent")), "{r}");
            assert!(f("cpu_us_per_msg") > 0.0, "{r}");
            assert!(
                f("rtt_p50_us") > 0.0 && f("rtt_p99_us") >= f("rtt_p50_us"),
                "{r}"
            );
            assert!(f("rtt_samples") > 0.0, "{r}");
        }
    }
}
