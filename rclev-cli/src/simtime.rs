//! `rclev clock` (publish a simulated `/clock`) and `rclev bench simtime` (sim-timer fidelity).

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use rclev::interfaces::builtin_interfaces::msg::Time as TimeMsg;
use rclev::interfaces::rosgraph_msgs::msg::Clock as ClockMsg;
use rclev::{
    Context, Executor, IntoTimerOptions, Node, NodeOptions, SpinOptions, Timer, TimerInfo,
};
use serde::Serialize;

use crate::errors::Result;
use crate::report::{write_json, Window};

/// Sim time the clock starts at (seconds), so nothing depends on the rcl "0 until /clock" rule.
const SIM_START_NS: i64 = 1_000_000_000_000;

/// Drives `/clock` from a wall timer: sim = start + scale × wall elapsed, frozen after
/// `pause_after` (if given). Returns the timer (dropping it stops the clock).
fn clock_driver(
    node: &Node,
    scale: f64,
    rate_hz: f64,
    pause_after: Option<Duration>,
) -> Result<(Timer, Arc<AtomicU64>)> {
    let publisher = node.create_publisher::<ClockMsg>("/clock")?;
    let started = Instant::now();
    let published = Arc::new(AtomicU64::new(SIM_START_NS as u64));
    let p = published.clone();
    let timer = node.create_timer_repeating(Duration::from_secs_f64(1.0 / rate_hz), move || {
        let mut wall = started.elapsed();
        if let Some(pause) = pause_after {
            wall = wall.min(pause);
        }
        let sim = SIM_START_NS + (wall.as_nanos() as f64 * scale) as i64;
        p.store(sim as u64, Ordering::Relaxed);
        let _ = publisher.publish(ClockMsg {
            clock: TimeMsg::from_nanos(sim),
        });
    })?;
    Ok((timer, published))
}

fn sim_node(executor: &Executor, name: &str) -> Result<Node> {
    Ok(executor.create_node(NodeOptions::new(name).parameter_override("use_sim_time", true))?)
}

/// Publishes the first `/clock` value and spins until `node` has taken it.
fn prime(executor: &Executor, node: &Node, driver: &Node) -> Result {
    let publisher = driver.create_publisher::<ClockMsg>("/clock")?;
    publisher.publish(ClockMsg {
        clock: TimeMsg::from_nanos(SIM_START_NS),
    })?;
    let deadline = Instant::now() + Duration::from_secs(5);
    while node.get_clock().now().nanos != SIM_START_NS {
        if Instant::now() > deadline {
            return Err("the first /clock message was not received".into());
        }
        crate::errors::report_spin(
            executor.spin(SpinOptions::spin_once().timeout(Duration::from_millis(5))),
        );
    }
    Ok(())
}

pub fn run_clock(scale: f64, rate: f64, secs: f64, pause_after: Option<f64>) -> Result {
    if !(scale.is_finite() && scale >= 0.0 && rate.is_finite() && rate > 0.0 && secs > 0.0) {
        return Err("--scale must be ≥ 0, --rate and --secs positive".into());
    }
    let executor = Context::default().create_basic_executor();
    let driver = executor.create_node("sim_clock")?;
    let listener = sim_node(&executor, "sim_listener")?;
    prime(&executor, &listener, &driver)?;
    let (_clock, _) = clock_driver(
        &driver,
        scale,
        rate,
        pause_after.map(Duration::from_secs_f64),
    )?;
    let wall_start = Instant::now();
    let _tick = listener.create_timer_repeating(
        Duration::from_secs(1).node_time(),
        move |i: TimerInfo| {
            println!(
                "sim time {:>8.3} s (called at {:.3} s, missed {}), wall {:>6.3} s",
                (i.expected_call_time.nanos - SIM_START_NS) as f64 * 1e-9,
                (i.actual_call_time.nanos - SIM_START_NS) as f64 * 1e-9,
                i.missed_ticks,
                wall_start.elapsed().as_secs_f64()
            );
        },
    )?;
    println!(
        "publishing /clock at {rate} Hz, {scale}× wall time{}",
        match pause_after {
            Some(p) => format!(", pausing after {p} s"),
            None => String::new(),
        }
    );
    // Ctrl-C shuts the executor down while it spins (ExecutorOptions::handle_sigint).
    crate::errors::report_spin(
        executor.spin(SpinOptions::default().timeout(Duration::from_secs_f64(secs))),
    );
    Ok(())
}

#[derive(Serialize)]
struct Row {
    case: String,
    scale: f64,
    clock: &'static str,
    expected_fires: u64,
    achieved_fires: u64,
    /// Ticks the timer reported as missed (dropped, never bursted).
    missed_fires: u64,
    /// Achieved minus expected, in % of expected (0 when nothing was expected).
    error_percent: f64,
    /// Wall timer only: median lateness.
    late_p50_us: Option<f64>,
    /// CPU time the hypervisor stole during the case, in % (from `/proc/stat`).
    steal_percent: f64,
}

const SIM_PERIOD: Duration = Duration::from_millis(10);
const WALL_PERIOD: Duration = Duration::from_millis(1);

fn run_case(name: &str, scale: f64, secs: f64, clock_hz: f64) -> Result<[Row; 2]> {
    let executor = Context::default().create_basic_executor();
    let driver = executor.create_node("sim_clock")?;
    let node = sim_node(&executor, "bench_simtime")?;
    prime(&executor, &node, &driver)?;
    let pause = (scale == 0.0).then_some(Duration::ZERO);
    let sim_fires = Arc::new(AtomicU64::new(0));
    let sim_missed = Arc::new(AtomicU64::new(0));
    let (s, m) = (sim_fires.clone(), sim_missed.clone());
    let sim_timer = node.create_timer_repeating(SIM_PERIOD.node_time(), move |i: TimerInfo| {
        s.fetch_add(1, Ordering::Relaxed);
        m.fetch_add(i.missed_ticks, Ordering::Relaxed);
    })?;
    let lateness = Arc::new(Mutex::new(Histogram::<u64>::new(3)?));
    let wall_fires = Arc::new(AtomicU64::new(0));
    let wall_missed = Arc::new(AtomicU64::new(0));
    let (w, wm, l) = (wall_fires.clone(), wall_missed.clone(), lateness.clone());
    let wall_timer = node.create_timer_repeating(WALL_PERIOD, move |i: TimerInfo| {
        w.fetch_add(1, Ordering::Relaxed);
        wm.fetch_add(i.missed_ticks, Ordering::Relaxed);
        let _ = l
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .record(i.lateness().as_nanos() as u64 + 1);
    })?;
    let sim_start = node.get_clock().now().nanos;
    let wall_start = Instant::now();
    let window = Window::start();
    let (clock_timer, _) = clock_driver(
        &driver,
        if scale == 0.0 { 1.0 } else { scale },
        clock_hz,
        pause,
    )?;
    crate::errors::report_spin(
        executor.spin(SpinOptions::default().timeout(Duration::from_secs_f64(secs))),
    );
    drop(clock_timer);
    wall_timer.cancel();
    let steal_percent = window.finish().steal_percent;
    let wall_secs = wall_start.elapsed().as_secs_f64();
    // Let the ticks the last /clock released run.
    crate::errors::report_spin(
        executor.spin(SpinOptions::default().timeout(Duration::from_millis(50))),
    );
    sim_timer.cancel();
    let sim_end = node.get_clock().now().nanos;
    let period = SIM_PERIOD.as_nanos() as i64;
    let expected_sim = (sim_end.div_euclid(period) - sim_start.div_euclid(period)) as u64;
    let expected_wall = (wall_secs / WALL_PERIOD.as_secs_f64()).floor() as u64;
    let err = |achieved: u64, expected: u64| {
        if expected == 0 {
            0.0
        } else {
            100.0 * (achieved as f64 - expected as f64) / expected as f64
        }
    };
    let sim = sim_fires.load(Ordering::Relaxed);
    let wall = wall_fires.load(Ordering::Relaxed);
    let p50 = lateness
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .value_at_quantile(0.5) as f64
        / 1000.0;
    Ok([
        Row {
            case: name.to_string(),
            scale,
            clock: "sim",
            expected_fires: expected_sim,
            achieved_fires: sim,
            missed_fires: sim_missed.load(Ordering::Relaxed),
            error_percent: err(sim, expected_sim),
            late_p50_us: None,
            steal_percent,
        },
        Row {
            case: name.to_string(),
            scale,
            clock: "wall",
            expected_fires: expected_wall,
            achieved_fires: wall,
            missed_fires: wall_missed.load(Ordering::Relaxed),
            error_percent: err(wall, expected_wall),
            late_p50_us: Some(p50),
            steal_percent,
        },
    ])
}

pub fn bench_simtime(secs: f64, clock_hz: f64, json: Option<&Path>) -> Result {
    if !(secs.is_finite() && secs > 0.0 && clock_hz.is_finite() && clock_hz > 0.0) {
        return Err("--secs and --clock-hz must be positive".into());
    }
    let cases = [
        ("scale-0.5", 0.5),
        ("scale-1", 1.0),
        ("scale-2", 2.0),
        ("scale-10", 10.0),
        ("paused", 0.0),
    ];
    let mut rows = Vec::new();
    for (i, (name, scale)) in cases.iter().enumerate() {
        eprintln!(
            "[{}/{}] {name}: 100 Hz sim timer + 1 kHz wall timer for {secs} s, /clock at {clock_hz} Hz…",
            i + 1,
            cases.len()
        );
        rows.extend(run_case(name, *scale, secs, clock_hz)?);
    }
    println!(
        "{:<10} {:>6} {:>6} {:>10} {:>10} {:>8} {:>8} {:>10} {:>7}",
        "case", "scale", "clock", "expected", "achieved", "missed", "err %", "p50 µs", "steal%"
    );
    for r in &rows {
        println!(
            "{:<10} {:>6} {:>6} {:>10} {:>10} {:>8} {:>8.2} {:>10} {:>7.2}",
            r.case,
            r.scale,
            r.clock,
            r.expected_fires,
            r.achieved_fires,
            r.missed_fires,
            r.error_percent,
            r.late_p50_us.map_or("-".to_string(), |v| format!("{v:.1}")),
            r.steal_percent
        );
    }
    if let Some(path) = json {
        write_json(path, &rows)?;
    }
    Ok(())
}
