//! `rclev demo talker-listener`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rclev::msg::StringMsg;
use rclev::{Context, SpinOptions};

use crate::anyhow_free::Result;

pub fn talker_listener(secs: f64, rate: f64) -> Result {
    if !(secs.is_finite() && secs > 0.0 && rate.is_finite() && rate > 0.0) {
        return Err("--secs and --rate must be positive".into());
    }
    let executor = Context::default().create_basic_executor();
    let talker = executor.create_node("talker")?;
    let listener = executor.create_node("listener")?;
    let received = Arc::new(AtomicU64::new(0));
    let r = received.clone();
    let _sub = listener.create_subscription::<StringMsg, _>("chatter", move |msg| {
        r.fetch_add(1, Ordering::Relaxed);
        println!("[listener] I heard: '{}'", msg.data);
    })?;
    let publisher = talker.create_publisher::<StringMsg>("chatter")?;
    let commands = executor.commands();
    let c = commands.clone();
    let sent = Arc::new(AtomicU64::new(0));
    let s = sent.clone();
    // The talker is a plain thread here; `rclev bench timers` shows timer-driven publishing.
    let talker_thread = std::thread::spawn(move || {
        let period = Duration::from_secs_f64(1.0 / rate);
        let end = std::time::Instant::now() + Duration::from_secs_f64(secs);
        let mut n = 0u64;
        while std::time::Instant::now() < end && !c.is_shut_down() {
            n += 1;
            let data = format!("Hello World: {n}");
            println!("[talker] Publishing: '{data}'");
            if publisher.publish(StringMsg { data }).is_err() {
                break;
            }
            s.store(n, Ordering::Relaxed);
            std::thread::sleep(period);
        }
        c.halt_spinning();
    });
    let ctrl_c = executor.commands();
    executor.runtime_handle().spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            ctrl_c.shutdown();
        }
    });
    let errors = executor.spin(SpinOptions::default());
    let _ = talker_thread.join();
    // Take what was published just before the halt.
    executor.spin(SpinOptions::spin_once().timeout(Duration::from_secs(1)));
    println!(
        "sent {}, received {}",
        sent.load(Ordering::Relaxed),
        received.load(Ordering::Relaxed)
    );
    for e in errors {
        eprintln!("error: {e}");
    }
    Ok(())
}
