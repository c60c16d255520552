//! Shared helpers for the benchmarks: tables, JSON, CPU accounting.

use std::path::Path;
use std::time::Instant;

use crate::anyhow_free::Result;

/// Writes rows as a JSON list.
pub fn write_json<T: serde::Serialize>(path: &Path, rows: &[T]) -> Result {
    std::fs::write(path, serde_json::to_string_pretty(rows)?)?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

/// Process CPU time (user + system) in seconds, from `getrusage`.
pub fn process_cpu_secs() -> f64 {
    // SAFETY: `getrusage` only writes the struct we pass, which is plain old data that is valid
    // when zeroed.
    let usage = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut u);
        u
    };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// CPU steal and total jiffies from `/proc/stat` (zeros when unavailable).
pub fn steal_jiffies() -> (u64, u64) {
    let Ok(stat) = std::fs::read_to_string("/proc/stat") else {
        return (0, 0);
    };
    let Some(line) = stat.lines().next() else {
        return (0, 0);
    };
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|f| f.parse().ok())
        .collect();
    let steal = fields.get(7).copied().unwrap_or(0);
    (steal, fields.iter().sum())
}

/// Measures wall time, process CPU and steal over a window.
pub struct Window {
    start: Instant,
    cpu: f64,
    steal: (u64, u64),
}

/// What a [`Window`] saw.
pub struct WindowStats {
    pub cpu_cores: f64,
    pub steal_percent: f64,
}

impl Window {
    pub fn start() -> Self {
        Self {
            start: Instant::now(),
            cpu: process_cpu_secs(),
            steal: steal_jiffies(),
        }
    }
    pub fn finish(&self) -> WindowStats {
        let wall_secs = self.start.elapsed().as_secs_f64();
        let cpu = process_cpu_secs() - self.cpu;
        let (steal, total) = steal_jiffies();
        let (ds, dt) = (steal - self.steal.0, total - self.steal.1);
        WindowStats {
            cpu_cores: cpu / wall_secs,
            steal_percent: if dt > 0 {
                100.0 * ds as f64 / dt as f64
            } else {
                0.0
            },
        }
    }
}
