#![allow(dead_code)]
use std::future::Future;
use std::time::Duration;

use rclev::{Executor, SpinOptions};

/// Spins until `done` resolves, failing the test after 20 s instead of hanging.
pub fn spin_until(executor: &Executor, done: impl Future<Output = ()> + Send + 'static) {
    let (tx, rx) = std::sync::mpsc::channel();
    let errors = executor.spin(
        SpinOptions::default()
            .until_promise_resolved(async move {
                done.await;
                let _ = tx.send(());
            })
            .timeout(Duration::from_secs(20)),
    );
    assert!(errors.is_empty(), "errors while spinning: {errors:?}");
    rx.try_recv()
        .expect("timed out waiting for the test condition");
}

/// A future that resolves once `n` permits were added to the semaphore.
pub fn count_to(
    sem: &std::sync::Arc<tokio::sync::Semaphore>,
    n: u32,
) -> impl Future<Output = ()> + Send + 'static {
    let sem = sem.clone();
    async move {
        sem.acquire_many(n).await.unwrap().forget();
    }
}

/// Spins until `reached()` holds (checked every millisecond), failing the test after 20 s
/// instead of hanging: how tests wait for observable state (a count, a flag) rather than for a
/// time, which a busy host may stretch arbitrarily.
pub fn spin_until_state(executor: &Executor, reached: impl Fn() -> bool + Send + 'static) {
    spin_until(executor, async move {
        while !reached() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    });
}

/// Waits (at most 20 s, without spinning) until `reached()` holds, failing with `what`.
pub fn wait_until(what: &str, reached: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !reached() {
        assert!(std::time::Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}
