//! `rclev bench pubsub`: in-process publish→callback throughput and latency, side by side with a
//! bare `tokio::sync::mpsc` hand-off between the same kind of threads.
//!
//! - Throughput: one thread publishes `messages` small messages as fast as it can; the time is
//!   from the first publish to the last callback.
//! - Latency: one thread publishes at a paced rate (busy-waiting to each send time, so the pacing
//!   itself adds no jitter); each message carries its send time and the callback records
//!   `now - sent`. Two rates: 20 kHz (a stream; the worker's adaptive spin keeps it awake) and
//!   1 kHz (sparse; every message wakes a parked worker).

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use rclev::interfaces::std_msgs::msg::Int64;
use rclev::{Context, IntoPrimitiveOptions, QoSProfile, SpinOptions};
use serde::Serialize;

use crate::errors::Result;
use crate::report::{write_json, Window};

#[derive(Serialize)]
struct Row {
    variant: &'static str,
    msgs_per_s: f64,
    p50_us: f64,
    p99_us: f64,
    sparse_p50_us: f64,
    sparse_p99_us: f64,
    messages: u64,
    /// CPU cores the process used during the throughput phase.
    cpu_cores: f64,
}

const STREAM_HZ: f64 = 20_000.0;
const SPARSE_HZ: f64 = 1_000.0;

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 10_000_000_000, 3).expect("static histogram bounds are valid")
}

/// Publishes `count` stamps at `hz` through `send`, busy-waiting between sends.
fn paced(base: Instant, hz: f64, secs: f64, mut send: impl FnMut(i64)) {
    let period = Duration::from_secs_f64(1.0 / hz);
    let count = (hz * secs) as u32;
    let start = Instant::now();
    for k in 0..count {
        let due = start + period * k;
        while Instant::now() < due {
            std::hint::spin_loop();
        }
        send(base.elapsed().as_nanos() as i64);
    }
}

fn rclev_variant(messages: u64, secs: f64) -> Result<Row> {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("bench")?;
    let qos = QoSProfile::default().keep_all();

    // Throughput.
    let received = Arc::new(AtomicU64::new(0));
    let done = Arc::new(tokio::sync::Notify::new());
    let (r, d) = (received.clone(), done.clone());
    let _sub = node.create_subscription::<Int64, _>("throughput".qos(qos), move |_m| {
        if r.fetch_add(1, Ordering::Relaxed) + 1 == messages {
            d.notify_one();
        }
    })?;
    let publisher = node.create_publisher::<Int64>("throughput".qos(qos))?;
    let window = Window::start();
    let start = Instant::now();
    let producer = std::thread::spawn(move || {
        for i in 0..messages as i64 {
            let _ = publisher.publish(Int64 { data: i });
        }
    });
    crate::errors::report_spin(
        executor.spin(
            SpinOptions::default()
                .until_promise_resolved(async move { done.notified().await })
                .timeout(Duration::from_secs(120)),
        ),
    );
    let elapsed = start.elapsed().as_secs_f64();
    let cpu_cores = window.finish().cpu_cores;
    producer.join().map_err(|_| "publisher thread panicked")?;
    let got = received.load(Ordering::Relaxed);
    if got != messages {
        return Err(format!("rclev delivered {got} of {messages} messages").into());
    }

    // Latency, at two rates.
    let base = Instant::now();
    let worker = node.create_worker(histogram())?;
    let _lat = worker.create_subscription::<Int64, _>(
        "latency".qos(qos),
        move |h: &mut Histogram<u64>, m| {
            let now = base.elapsed().as_nanos() as i64;
            let _ = h.record((now - m.data).max(1) as u64);
        },
    )?;
    let publisher = node.create_publisher::<Int64>("latency".qos(qos))?;
    let latency = |hz: f64| -> Result<Histogram<u64>> {
        let p = publisher.clone();
        let sender = std::thread::spawn(move || {
            paced(base, hz, secs, |t| {
                let _ = p.publish(Int64 { data: t });
            })
        });
        let w = worker.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        crate::errors::report_spin(
            executor.spin(
                SpinOptions::default()
                    .until_promise_resolved(async move {
                        let _ = tokio::task::spawn_blocking(move || sender.join()).await;
                        // Let the last message land, then swap the histogram out.
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        let h = w
                            .run(|h: &mut Histogram<u64>| std::mem::replace(h, histogram()))
                            .await;
                        let _ = tx.send(h);
                    })
                    .timeout(Duration::from_secs_f64(secs + 30.0)),
            ),
        );
        Ok(rx.recv()??)
    };
    let stream = latency(STREAM_HZ)?;
    let sparse = latency(SPARSE_HZ)?;
    Ok(row("rclev", messages, elapsed, cpu_cores, &stream, &sparse))
}

fn row(
    variant: &'static str,
    messages: u64,
    elapsed: f64,
    cpu_cores: f64,
    stream: &Histogram<u64>,
    sparse: &Histogram<u64>,
) -> Row {
    let us = |h: &Histogram<u64>, q: f64| h.value_at_quantile(q) as f64 / 1000.0;
    Row {
        variant,
        msgs_per_s: messages as f64 / elapsed,
        p50_us: us(stream, 0.5),
        p99_us: us(stream, 0.99),
        sparse_p50_us: us(sparse, 0.5),
        sparse_p99_us: us(sparse, 0.99),
        messages,
        cpu_cores,
    }
}

fn mpsc_variant(messages: u64, secs: f64) -> Result<Row> {
    // Same shape as the executor's default runtime: two worker threads.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Arc<Int64>>();
    let window = Window::start();
    let start = Instant::now();
    let consumer = rt.spawn(async move {
        let mut n = 0;
        while n < messages && rx.recv().await.is_some() {
            n += 1;
        }
        n
    });
    let producer = std::thread::spawn(move || {
        for i in 0..messages as i64 {
            let _ = tx.send(Arc::new(Int64 { data: i }));
        }
    });
    let got = rt.block_on(consumer)?;
    let elapsed = start.elapsed().as_secs_f64();
    let cpu_cores = window.finish().cpu_cores;
    producer.join().map_err(|_| "sender thread panicked")?;
    if got != messages {
        return Err(format!("mpsc delivered {got} of {messages}").into());
    }

    let base = Instant::now();
    let latency = |hz: f64| -> Result<Histogram<u64>> {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Arc<Int64>>();
        let consumer = rt.spawn(async move {
            let mut h = histogram();
            while let Some(m) = rx.recv().await {
                let now = base.elapsed().as_nanos() as i64;
                let _ = h.record((now - m.data).max(1) as u64);
            }
            h
        });
        paced(base, hz, secs, |t| {
            let _ = tx.send(Arc::new(Int64 { data: t }));
        });
        drop(tx);
        Ok(rt.block_on(consumer)?)
    };
    let stream = latency(STREAM_HZ)?;
    let sparse = latency(SPARSE_HZ)?;
    Ok(row(
        "tokio-mpsc",
        messages,
        elapsed,
        cpu_cores,
        &stream,
        &sparse,
    ))
}

pub fn run(messages: u64, secs: f64, json: Option<&Path>) -> Result {
    if messages == 0 || !(secs.is_finite() && secs > 0.0) {
        return Err("--messages and --secs must be positive".into());
    }
    eprintln!(
        "rclev: {messages} messages, then {secs} s paced at {STREAM_HZ} Hz and {SPARSE_HZ} Hz…"
    );
    let ours = rclev_variant(messages, secs)?;
    eprintln!("tokio-mpsc baseline…");
    let base = mpsc_variant(messages, secs)?;
    println!(
        "{:<11} {:>12} {:>9} {:>9} {:>11} {:>11} {:>6}",
        "variant", "msgs/s", "p50 µs", "p99 µs", "1kHz p50", "1kHz p99", "cores"
    );
    for r in [&ours, &base] {
        println!(
            "{:<11} {:>12.0} {:>9.1} {:>9.1} {:>11.1} {:>11.1} {:>6.2}",
            r.variant,
            r.msgs_per_s,
            r.p50_us,
            r.p99_us,
            r.sparse_p50_us,
            r.sparse_p99_us,
            r.cpu_cores
        );
    }
    println!(
        "ratio rclev/tokio-mpsc: throughput {:.2}, p50 latency {:.2} (20 kHz), {:.2} (1 kHz)",
        ours.msgs_per_s / base.msgs_per_s,
        ours.p50_us / base.p50_us,
        ours.sparse_p50_us / base.sparse_p50_us
    );
    if let Some(path) = json {
        write_json(path, &[ours, base])?;
    }
    Ok(())
}
