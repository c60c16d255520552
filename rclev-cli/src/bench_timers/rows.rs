//! What the timer benchmark measures per run ([`Row`]) and its variants, for the report, the
//! JSON file and the plot.

use serde::Serialize;

use crate::report::ThreadStats;

#[derive(Serialize, Clone)]
pub struct Row {
    pub variant: &'static str,
    /// The repetition, from 0; `None` on the median rows of `--repeat`.
    pub rep: Option<usize>,
    /// CPU hogs running beside the measurement.
    pub load: usize,
    /// With `--repeat`: the lowest and highest `percent` of the repetitions.
    pub percent_range: Option<(f64, f64)>,
    pub timers: usize,
    pub target_hz: f64,
    pub achieved_hz: f64,
    pub percent: f64,
    pub dropped: u64,
    pub late_p50_us: f64,
    pub late_p99_us: f64,
    pub cpu_cores: f64,
    pub steal_percent: f64,
    pub window_secs: f64,
    /// CPU, run-queue wait and context switches of the process's threads, by name.
    pub threads: Vec<ThreadStats>,
    /// rclev only: where the window's ticks went.
    pub tick_path: Option<TickPath>,
}

/// rclev's tick path over the window, from `Executor::diagnostics().timers`.
#[derive(Serialize, Clone, Debug, Default)]
pub struct TickPath {
    pub handed_over: u64,
    /// Dropped at hand-over: the worker had not taken the previous tick.
    pub dropped_worker_busy: u64,
    /// Skipped: the tick path (scheduler, or a worker pulling) came more than a period late.
    pub dropped_late: u64,
    /// Mean of how late the scheduler thread woke after its planned hand-off time (µs).
    pub scheduler_overshoot_mean_us: f64,
    /// Ticks the worker took after their deadline, and their mean lateness then (µs).
    pub worker_late: u64,
    pub worker_late_mean_us: f64,
    /// Ticks the worker took early, and how long it then waited for the deadline (mean µs).
    pub worker_early: u64,
    pub worker_wait_mean_us: f64,
    /// Of those waits, the ones spent in a kernel sleep.
    pub worker_slept: u64,
}

/// The variants, in report order.
pub const VARIANTS: [&str; 5] = [
    "rclev",
    "reference",
    "per-task",
    "tokio-interval",
    "os-sleep",
];
