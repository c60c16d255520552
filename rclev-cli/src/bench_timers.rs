//! `rclev bench timers`: timer precision of rclev's shared scheduler, side by side with the
//! designs it replaces, in one run.
//!
//! Variants (each on a two-thread Tokio runtime, like the executor's default):
//! - `rclev`: `node.create_timer_repeating` on the shared scheduler, default precision.
//! - `reference`: the rclrs draft design rebuilt: one condvar thread with a deadline heap,
//!   coalescing hand-off (a pending flag per timer) to a Tokio-task worker over an mpsc channel;
//!   deadlines advance by one period; default timer slack, no busy-waiting.
//! - `per-task`: the design before it: one Tokio task per timer that sleeps with
//!   `tokio::time::sleep_until`, then waits for the worker to run the callback before it
//!   computes the next deadline.
//! - `tokio-interval`: a bare `tokio::time::interval` (missed ticks skipped) per timer, with the
//!   "callback" inline in its task: the ceiling of a Tokio-timer design.
//! - `os-sleep`: no hand-off at all: one OS thread per timer sleeps to each deadline with
//!   `clock_nanosleep(TIMER_ABSTIME)` and 1 ns timer slack and runs the "callback" inline,
//!   dropping late ticks. Every design whose tick path sleeps in the OS is bounded by it, so
//!   on this VM its `%` is the machine's ceiling (a tick path of two threads, like rclev's
//!   scheduler and worker, sits a little below).
//!
//! Every fire whose callback starts inside the measurement window counts; lateness is callback
//! start minus the tick's scheduled time. CPU is the process's user+system time over the
//! window; steal is read from `/proc/stat`.
//!
//! `--load N` runs N CPU hogs beside each measurement — separate processes (the binary's
//! hidden `bench-hog`), so the CPU column stays the measured process's own, each bounded by a
//! time limit and killed when its cell ends. `--repeat K` runs every cell K times, the variants
//! in reverse order every other repetition; the table then shows each column's median with the
//! range of `%`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use rclev::{Context, ExecutorOptions, SpinOptions, TimerInfo};

use crate::clock;
use crate::errors::Result;
use crate::report::{write_json, Window, WindowStats};

mod plot;
mod rows;

pub use rows::{Row, TickPath, VARIANTS};

const WARMUP: Duration = Duration::from_millis(300);

impl TickPath {
    fn between(a: &rclev::TimerStats, b: &rclev::TimerStats) -> Self {
        let mean = |ns: u64, n: u64| {
            if n == 0 {
                0.0
            } else {
                ns as f64 / n as f64 / 1000.0
            }
        };
        let worker_late = b.worker_late - a.worker_late;
        let worker_early = b.worker_early - a.worker_early;
        TickPath {
            handed_over: b.handed_over - a.handed_over,
            dropped_worker_busy: b.dropped_worker_busy - a.dropped_worker_busy,
            dropped_late: b.dropped_late - a.dropped_late,
            scheduler_overshoot_mean_us: mean(
                b.scheduler_overshoot_ns - a.scheduler_overshoot_ns,
                b.scheduler_timed_wakeups - a.scheduler_timed_wakeups,
            ),
            worker_late,
            worker_late_mean_us: mean(b.worker_late_ns - a.worker_late_ns, worker_late),
            worker_early,
            worker_wait_mean_us: mean(b.worker_early_ns - a.worker_early_ns, worker_early),
            worker_slept: b.worker_slept - a.worker_slept,
        }
    }
}

/// Counts fires and lateness inside the window.
struct Recorder {
    start: Instant,
    end: Instant,
    fires: AtomicU64,
    lateness: Mutex<Histogram<u64>>,
}

impl Recorder {
    fn new(secs: f64) -> Arc<Self> {
        let start = Instant::now() + WARMUP;
        Arc::new(Self {
            start,
            end: start + Duration::from_secs_f64(secs),
            fires: AtomicU64::new(0),
            lateness: Mutex::new(
                Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("static bounds are valid"),
            ),
        })
    }

    fn record(&self, late: Duration, now: Instant) {
        if now >= self.start && now < self.end {
            self.fires.fetch_add(1, Ordering::Relaxed);
            let _ = self
                .lateness
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .record((late.as_nanos() as u64).max(1));
        }
    }

    /// Measures CPU and steal over the window from a helper thread.
    fn watch(&self) -> std::thread::JoinHandle<WindowStats> {
        let (start, end) = (self.start, self.end);
        std::thread::spawn(move || {
            sleep_until(start);
            let w = Window::start();
            sleep_until(end);
            w.finish()
        })
    }

    fn total_run(&self) -> Duration {
        self.end.saturating_duration_since(Instant::now()) + Duration::from_millis(50)
    }

    fn row(&self, variant: &'static str, timers: usize, rate: f64, stats: WindowStats) -> Row {
        let fires = self.fires.load(Ordering::Relaxed);
        let window = (self.end - self.start).as_secs_f64();
        let target_hz = rate * timers as f64;
        let achieved_hz = fires as f64 / window;
        let h = self.lateness.lock().unwrap_or_else(|p| p.into_inner());
        let us = |q: f64| {
            if h.is_empty() {
                f64::NAN
            } else {
                h.value_at_quantile(q) as f64 / 1000.0
            }
        };
        Row {
            variant,
            rep: Some(0),
            load: 0,
            percent_range: None,
            timers,
            target_hz,
            achieved_hz,
            percent: 100.0 * achieved_hz / target_hz,
            dropped: (target_hz * window - fires as f64).max(0.0).round() as u64,
            late_p50_us: us(0.5),
            late_p99_us: us(0.99),
            cpu_cores: stats.cpu_cores,
            steal_percent: stats.steal_percent,
            window_secs: window,
            threads: stats.threads,
            tick_path: None,
        }
    }
}

fn sleep_until(t: Instant) {
    let now = Instant::now();
    if t > now {
        std::thread::sleep(t - now);
    }
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}

fn run_rclev(timers: usize, rate: f64, secs: f64, options: &ExecutorOptions) -> Result<Row> {
    let executor = Context::default().create_executor(options.clone())?;
    let node = executor.create_node("bench_timers")?;
    let rec = Recorder::new(secs);
    let period = Duration::from_secs_f64(1.0 / rate);
    let handles = (0..timers)
        .map(|_| {
            let r = rec.clone();
            node.create_timer_repeating(period, move |info: TimerInfo| {
                r.record(info.lateness(), Instant::now())
            })
        })
        .collect::<rclev::Result<Vec<_>>>()?;
    let (stats, path) = std::thread::scope(|s| {
        let watch = s.spawn(|| {
            sleep_until(rec.start);
            let (w, before) = (Window::start(), executor.diagnostics().timers);
            sleep_until(rec.end);
            let stats = w.finish();
            (
                stats,
                TickPath::between(&before, &executor.diagnostics().timers),
            )
        });
        crate::errors::report_spin(executor.spin(SpinOptions::default().timeout(rec.total_run())));
        watch.join()
    })
    .map_err(|_| "window thread panicked")?;
    drop(handles);
    let mut row = rec.row("rclev", timers, rate, stats);
    row.tick_path = Some(path);
    Ok(row)
}

fn run_reference(timers: usize, rate: f64, secs: f64) -> Result<Row> {
    let rt = runtime()?;
    let rec = Recorder::new(secs);
    let period = Duration::from_secs_f64(1.0 / rate);
    let pending: Arc<Vec<AtomicBool>> =
        Arc::new((0..timers).map(|_| AtomicBool::new(false)).collect());
    let expected: Arc<Vec<AtomicU64>> = Arc::new((0..timers).map(|_| AtomicU64::new(0)).collect());
    let epoch = Instant::now();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<usize>();
    let (r, p, e) = (rec.clone(), pending.clone(), expected.clone());
    rt.spawn(async move {
        while let Some(i) = rx.recv().await {
            p[i].store(false, Ordering::Release);
            let now = Instant::now();
            let due = epoch + Duration::from_nanos(e[i].load(Ordering::Acquire));
            r.record(now.saturating_duration_since(due), now);
        }
    });
    let stop = Arc::new((Mutex::new(false), Condvar::new()));
    let s = stop.clone();
    let scheduler = std::thread::spawn(move || {
        let (lock, cv) = &*s;
        let start = Instant::now();
        let mut heap: BinaryHeap<Reverse<(Instant, usize)>> =
            (0..timers).map(|i| Reverse((start + period, i))).collect();
        let mut stopped = lock.lock().unwrap_or_else(|p| p.into_inner());
        while !*stopped {
            let Some(&Reverse((due, i))) = heap.peek() else {
                break;
            };
            let now = Instant::now();
            if due > now {
                stopped = cv
                    .wait_timeout(stopped, due - now)
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
                continue;
            }
            heap.pop();
            if !pending[i].swap(true, Ordering::AcqRel) {
                expected[i].store((due - epoch).as_nanos() as u64, Ordering::Release);
                let _ = tx.send(i);
            }
            heap.push(Reverse((due + period, i)));
        }
    });
    let watch = rec.watch();
    std::thread::sleep(rec.total_run());
    *stop.0.lock().unwrap_or_else(|p| p.into_inner()) = true;
    stop.1.notify_all();
    scheduler
        .join()
        .map_err(|_| "reference scheduler panicked")?;
    let stats = watch.join().map_err(|_| "window thread panicked")?;
    rt.shutdown_background();
    Ok(rec.row("reference", timers, rate, stats))
}

fn run_per_task(timers: usize, rate: f64, secs: f64) -> Result<Row> {
    let rt = runtime()?;
    let rec = Recorder::new(secs);
    let period = Duration::from_secs_f64(1.0 / rate);
    type Job = (Instant, tokio::sync::oneshot::Sender<()>);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Job>();
    let r = rec.clone();
    rt.spawn(async move {
        while let Some((due, done)) = rx.recv().await {
            let now = Instant::now();
            r.record(now.saturating_duration_since(due), now);
            let _ = done.send(());
        }
    });
    let end = rec.end;
    for _ in 0..timers {
        let tx = tx.clone();
        rt.spawn(async move {
            let mut next = Instant::now() + period;
            while next < end {
                tokio::time::sleep_until(next.into()).await;
                let (done_tx, done_rx) = tokio::sync::oneshot::channel();
                if tx.send((next, done_tx)).is_err() || done_rx.await.is_err() {
                    return;
                }
                // Next grid point after now, as an rcl timer computes it.
                let now = Instant::now();
                next += period;
                if next <= now {
                    let behind = (now - next).as_nanos() / period.as_nanos() + 1;
                    next += Duration::from_nanos((period.as_nanos() * behind) as u64);
                }
            }
        });
    }
    let watch = rec.watch();
    std::thread::sleep(rec.total_run());
    let stats = watch.join().map_err(|_| "window thread panicked")?;
    rt.shutdown_background();
    Ok(rec.row("per-task", timers, rate, stats))
}

/// Sleeps until `t` on `CLOCK_MONOTONIC` (the clock `Instant` reads) with an absolute
/// deadline, `epoch`/`epoch_ns` being one instant on both clocks.
fn sleep_until_abs(t: Instant, epoch: Instant, epoch_ns: u64) {
    clock::sleep_until_ns(epoch_ns + t.saturating_duration_since(epoch).as_nanos() as u64);
}

fn run_os_sleep(timers: usize, rate: f64, secs: f64) -> Result<Row> {
    let rec = Recorder::new(secs);
    let period = Duration::from_secs_f64(1.0 / rate);
    let threads: Vec<_> = (0..timers)
        .map(|_| {
            let r = rec.clone();
            std::thread::spawn(move || {
                rclev::timer::set_thread_timer_slack(Duration::from_nanos(1));
                let (epoch, epoch_ns) = (Instant::now(), rclev::clock::monotonic_nanos() as u64);
                let mut next = Instant::now() + period;
                while next < r.end {
                    sleep_until_abs(next, epoch, epoch_ns);
                    let now = Instant::now();
                    r.record(now.saturating_duration_since(next), now);
                    next += period;
                    if next <= now {
                        // Late: skip to the next grid point ahead, as rclev does.
                        let behind = (now - next).as_nanos() / period.as_nanos() + 1;
                        next += Duration::from_nanos((period.as_nanos() * behind) as u64);
                    }
                }
            })
        })
        .collect();
    let watch = rec.watch();
    for t in threads {
        t.join().map_err(|_| "os-sleep thread panicked")?;
    }
    let stats = watch.join().map_err(|_| "window thread panicked")?;
    Ok(rec.row("os-sleep", timers, rate, stats))
}

fn run_tokio_interval(timers: usize, rate: f64, secs: f64) -> Result<Row> {
    let rt = runtime()?;
    let rec = Recorder::new(secs);
    let period = Duration::from_secs_f64(1.0 / rate);
    let end = rec.end;
    for _ in 0..timers {
        let r = rec.clone();
        rt.spawn(async move {
            let mut interval = tokio::time::interval(period);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                let due = interval.tick().await.into_std();
                let now = Instant::now();
                if now >= end {
                    return;
                }
                r.record(now.saturating_duration_since(due), now);
            }
        });
    }
    let watch = rec.watch();
    std::thread::sleep(rec.total_run());
    let stats = watch.join().map_err(|_| "window thread panicked")?;
    rt.shutdown_background();
    Ok(rec.row("tokio-interval", timers, rate, stats))
}

pub struct Options<'a> {
    pub rates: Vec<f64>,
    pub secs: f64,
    pub timers: usize,
    pub variants: Vec<String>,
    pub json: Option<&'a Path>,
    pub plot: Option<&'a Path>,
    /// rclev's executor options (precision knobs).
    pub executor: ExecutorOptions,
    /// Runs of every cell.
    pub repeat: usize,
    /// CPU hogs beside each measurement.
    pub load: usize,
    /// Print each cell's per-thread accounting and rclev's tick path.
    pub verbose: bool,
}

/// CPU hogs in processes of their own, killed on drop (and each bounded by `limit` anyway, so
/// none outlives a benchmark that died).
struct Load(Vec<std::process::Child>);

impl Load {
    fn start(n: usize, limit: Duration) -> Result<Load> {
        let exe = std::env::current_exe()?;
        let children = (0..n)
            .map(|_| {
                std::process::Command::new(&exe)
                    .args([
                        "bench-hog",
                        "--secs",
                        &format!("{:.3}", limit.as_secs_f64()),
                    ])
                    .spawn()
            })
            .collect::<std::io::Result<Vec<_>>>()?;
        Ok(Load(children))
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// `rclev bench-hog --secs S` (hidden): burns one core for `secs` seconds.
pub fn hog(secs: f64) -> Result {
    let end = Instant::now() + Duration::from_secs_f64(secs.clamp(0.0, 3600.0));
    let mut x = 0u64;
    while Instant::now() < end {
        for i in 0..10_000u64 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
        }
    }
    std::hint::black_box(x);
    Ok(())
}

/// The median of `v` (not empty).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// One row per variant and rate: each column's median over the repetitions, with the range of
/// `percent` (the per-thread and tick-path details are the first repetition's).
fn median_rows(rows: &[Row]) -> Vec<Row> {
    let mut out: Vec<Row> = Vec::new();
    for r in rows {
        if out
            .iter()
            .any(|m| m.variant == r.variant && m.target_hz == r.target_hz)
        {
            continue;
        }
        let same: Vec<&Row> = rows
            .iter()
            .filter(|x| x.variant == r.variant && x.target_hz == r.target_hz)
            .collect();
        let m = |f: fn(&Row) -> f64| median(same.iter().map(|x| f(x)).collect());
        let percents = same.iter().map(|x| x.percent);
        let range = (
            percents.clone().fold(f64::INFINITY, f64::min),
            percents.fold(f64::NEG_INFINITY, f64::max),
        );
        out.push(Row {
            rep: None,
            percent_range: Some(range),
            achieved_hz: m(|x| x.achieved_hz),
            percent: m(|x| x.percent),
            dropped: m(|x| x.dropped as f64).round() as u64,
            late_p50_us: m(|x| x.late_p50_us),
            late_p99_us: m(|x| x.late_p99_us),
            cpu_cores: m(|x| x.cpu_cores),
            steal_percent: m(|x| x.steal_percent),
            ..r.clone()
        });
    }
    out
}

pub fn run(opts: Options<'_>) -> Result {
    if opts.rates.is_empty() || opts.rates.iter().any(|r| !(r.is_finite() && *r > 0.0)) {
        return Err("--rates must be positive numbers".into());
    }
    if !(opts.secs.is_finite() && opts.secs > 0.0) || opts.timers == 0 {
        return Err("--secs and --timers must be positive".into());
    }
    for v in &opts.variants {
        if !VARIANTS.contains(&v.as_str()) {
            return Err(format!("unknown variant {v:?}; choose from {VARIANTS:?}").into());
        }
    }
    if opts.repeat == 0 {
        return Err("--repeat must be at least 1".into());
    }
    let total = opts.rates.len() * opts.variants.len() * opts.repeat;
    let mut rows = Vec::new();
    for rep in 0..opts.repeat {
        for &rate in &opts.rates {
            // Reversed every other repetition, so that a noisy spell hits all variants.
            let variants: Vec<&String> = if rep % 2 == 0 {
                opts.variants.iter().collect()
            } else {
                opts.variants.iter().rev().collect()
            };
            for variant in variants {
                eprintln!(
                    "[{}/{total}] {variant}: {} timer(s) × {rate} Hz for {} s, load {}…",
                    rows.len() + 1,
                    opts.timers,
                    opts.secs,
                    opts.load
                );
                let load = Load::start(
                    opts.load,
                    Duration::from_secs_f64(opts.secs) + WARMUP + Duration::from_secs(5),
                )?;
                let mut row = match variant.as_str() {
                    "rclev" => run_rclev(opts.timers, rate, opts.secs, &opts.executor)?,
                    "reference" => run_reference(opts.timers, rate, opts.secs)?,
                    "per-task" => run_per_task(opts.timers, rate, opts.secs)?,
                    "tokio-interval" => run_tokio_interval(opts.timers, rate, opts.secs)?,
                    _ => run_os_sleep(opts.timers, rate, opts.secs)?,
                };
                drop(load);
                row.rep = Some(rep);
                row.load = opts.load;
                eprintln!(
                    "        {:.1}% of target, p50 {:.1} µs, {:.3} cores, steal {:.2}%",
                    row.percent, row.late_p50_us, row.cpu_cores, row.steal_percent
                );
                if opts.verbose {
                    print_diagnosis(&row);
                }
                rows.push(row);
            }
        }
    }
    let shown = if opts.repeat > 1 {
        median_rows(&rows)
    } else {
        rows.clone()
    };
    print_table(&shown);
    if let Some(path) = opts.json {
        let mut all = rows;
        if opts.repeat > 1 {
            all.extend(shown.iter().cloned());
        }
        write_json(path, &all)?;
    }
    if let Some(path) = opts.plot {
        plot::percent_vs_rate(path, &shown)?;
    }
    Ok(())
}

/// Per-thread CPU, run-queue wait and context switches, and where rclev's ticks went.
fn print_diagnosis(row: &Row) {
    for t in row.threads.iter().filter(|t| t.cpu_cores >= 0.001) {
        eprintln!(
            "          thread {:<16} ×{} {:.3} cores, waiting for a CPU {:.3} s/s, {:.0} sleeps/s, {:.0} preemptions/s",
            t.name, t.threads, t.cpu_cores, t.runqueue_wait, t.voluntary_per_s, t.involuntary_per_s
        );
    }
    if let Some(p) = &row.tick_path {
        eprintln!(
            "          ticks: {} handed over, dropped {} (worker busy) + {} (late); scheduler overshoot {:.1} µs; worker late {} × {:.1} µs, early {} × {:.1} µs ({} slept)",
            p.handed_over,
            p.dropped_worker_busy,
            p.dropped_late,
            p.scheduler_overshoot_mean_us,
            p.worker_late,
            p.worker_late_mean_us,
            p.worker_early,
            p.worker_wait_mean_us,
            p.worker_slept
        );
    }
}

fn print_table(rows: &[Row]) {
    println!(
        "{:<15} {:>6} {:>10} {:>12} {:>8} {:>15} {:>9} {:>9} {:>10} {:>6} {:>9} {:>6}",
        "variant",
        "timers",
        "target/s",
        "achieved/s",
        "%",
        "% range",
        "dropped",
        "p50 µs",
        "p99 µs",
        "cores",
        "µs/tick",
        "steal%"
    );
    for r in rows {
        let range = r
            .percent_range
            .map_or(String::new(), |(lo, hi)| format!("{lo:.2}–{hi:.2}"));
        println!(
            "{:<15} {:>6} {:>10.0} {:>12.0} {:>8.2} {:>15} {:>9} {:>9.1} {:>10.1} {:>6.3} {:>9.1} {:>6.2}",
            r.variant,
            r.timers,
            r.target_hz,
            r.achieved_hz,
            r.percent,
            range,
            r.dropped,
            r.late_p50_us,
            r.late_p99_us,
            r.cpu_cores,
            1e6 * r.cpu_cores / r.achieved_hz.max(f64::MIN_POSITIVE),
            r.steal_percent
        );
    }
    let find = |v: &str, hz: f64| rows.iter().find(|r| r.variant == v && r.target_hz == hz);
    let mut printed_header = false;
    for ours in rows.iter().filter(|r| r.variant == "rclev") {
        for base in VARIANTS.iter().skip(1) {
            if let Some(b) = find(base, ours.target_hz) {
                if !printed_header {
                    println!("\nrclev / baseline, achieved fires:");
                    printed_header = true;
                }
                println!(
                    "  {:>8.0}/s  vs {:<15} {:>6.3}×",
                    ours.target_hz,
                    base,
                    ours.achieved_hz / b.achieved_hz.max(f64::MIN_POSITIVE)
                );
            }
        }
    }
}
