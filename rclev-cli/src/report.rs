//! Shared helpers for the benchmarks: tables, JSON, CPU accounting.

use std::path::Path;
use std::time::Instant;

use crate::errors::Result;

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

/// One thread's scheduler accounting, from `/proc/self/task/<tid>/{comm,schedstat,status}`.
#[derive(Clone, Default)]
struct ThreadSample {
    tid: u64,
    name: String,
    /// On-CPU time (ns).
    cpu_ns: u64,
    /// Time spent runnable, waiting for a CPU (ns).
    wait_ns: u64,
    voluntary: u64,
    involuntary: u64,
}

fn thread_samples() -> Vec<ThreadSample> {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| {
            let tid = e.file_name().to_str()?.parse().ok()?;
            let path = e.path();
            let name = std::fs::read_to_string(path.join("comm")).ok()?;
            let sched = std::fs::read_to_string(path.join("schedstat")).ok()?;
            let mut sched = sched.split_whitespace().map(|f| f.parse::<u64>().ok());
            let status = std::fs::read_to_string(path.join("status")).unwrap_or_default();
            let switches = |key: &str| {
                status
                    .lines()
                    .find_map(|l| l.strip_prefix(key))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0)
            };
            Some(ThreadSample {
                tid,
                name: name.trim().to_string(),
                cpu_ns: sched.next()??,
                wait_ns: sched.next()??,
                voluntary: switches("voluntary_ctxt_switches:"),
                involuntary: switches("nonvoluntary_ctxt_switches:"),
            })
        })
        .collect()
}

/// What the threads of one name did over a window, per second of it.
#[derive(serde::Serialize, Clone, Debug, Default)]
pub struct ThreadStats {
    /// The thread name (threads sharing a name are summed).
    pub name: String,
    pub threads: usize,
    /// Cores used.
    pub cpu_cores: f64,
    /// Time runnable but waiting for a CPU, per second (a busy host shows here).
    pub runqueue_wait: f64,
    /// Context switches per second: sleeps (voluntary) and preemptions (involuntary).
    pub voluntary_per_s: f64,
    pub involuntary_per_s: f64,
}

/// Measures wall time, process CPU, steal and per-thread accounting over a window.
pub struct Window {
    start: Instant,
    cpu: f64,
    steal: (u64, u64),
    threads: Vec<ThreadSample>,
}

/// What a [`Window`] saw.
pub struct WindowStats {
    pub cpu_cores: f64,
    pub steal_percent: f64,
    /// Per thread name, busiest first.
    pub threads: Vec<ThreadStats>,
}

/// Per-name differences between two samplings, per second of `wall_secs`. A thread started
/// inside the window counts from zero; one that ended inside it is missing (its time is in
/// the process CPU column still).
fn thread_deltas(
    before: &[ThreadSample],
    after: &[ThreadSample],
    wall_secs: f64,
) -> Vec<ThreadStats> {
    let mut out: Vec<ThreadStats> = Vec::new();
    for a in after {
        let b = before
            .iter()
            .find(|b| b.tid == a.tid)
            .cloned()
            .unwrap_or_default();
        let entry = match out.iter_mut().position(|t| t.name == a.name) {
            Some(i) => &mut out[i],
            None => {
                out.push(ThreadStats {
                    name: a.name.clone(),
                    ..ThreadStats::default()
                });
                out.last_mut().expect("just pushed")
            }
        };
        let per_s = |x: u64, y: u64| x.saturating_sub(y) as f64 / wall_secs;
        entry.threads += 1;
        entry.cpu_cores += per_s(a.cpu_ns, b.cpu_ns) / 1e9;
        entry.runqueue_wait += per_s(a.wait_ns, b.wait_ns) / 1e9;
        entry.voluntary_per_s += per_s(a.voluntary, b.voluntary);
        entry.involuntary_per_s += per_s(a.involuntary, b.involuntary);
    }
    out.sort_by(|x, y| y.cpu_cores.total_cmp(&x.cpu_cores));
    out
}

impl Window {
    pub fn start() -> Self {
        Self {
            start: Instant::now(),
            cpu: process_cpu_secs(),
            steal: steal_jiffies(),
            threads: thread_samples(),
        }
    }
    pub fn finish(&self) -> WindowStats {
        let wall_secs = self.start.elapsed().as_secs_f64();
        let cpu = process_cpu_secs() - self.cpu;
        let (steal, total) = steal_jiffies();
        let (ds, dt) = (steal - self.steal.0, total - self.steal.1);
        WindowStats {
            threads: thread_deltas(&self.threads, &thread_samples(), wall_secs),
            cpu_cores: cpu / wall_secs,
            steal_percent: if dt > 0 {
                100.0 * ds as f64 / dt as f64
            } else {
                0.0
            },
        }
    }
}
