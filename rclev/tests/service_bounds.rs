//! An async service runs at most its QoS depth of requests at once: a flood of calls leaves the
//! rest in the transport's queue (bounded by the same depth on a wire) instead of a task per
//! call, and every call is still answered once the running ones finish.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rclev::interfaces::example_interfaces::srv::{
    AddTwoInts, AddTwoInts_Request as AddTwoIntsRequest, AddTwoInts_Response as AddTwoIntsResponse,
};
use rclev::{Context, IntoPrimitiveOptions, QoSProfile, SpinOptions};

#[test]
fn an_async_service_runs_at_most_its_depth_of_requests_at_once() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("bounded").unwrap();
    let running = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    // The running requests wait until the test lets them go: they finish only once the
    // service has had every chance to start more than its depth.
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let (r, m, g) = (running.clone(), most.clone(), gate.clone());
    let _service = node
        .create_async_service::<AddTwoInts, _, _>(
            "add".qos(QoSProfile::default().keep_last(3)),
            move |req| {
                let (r, m, g) = (r.clone(), m.clone(), g.clone());
                async move {
                    let now = r.fetch_add(1, Ordering::SeqCst) + 1;
                    m.fetch_max(now, Ordering::SeqCst);
                    g.acquire().await.unwrap().forget();
                    r.fetch_sub(1, Ordering::SeqCst);
                    AddTwoIntsResponse { sum: req.a + req.b }
                }
            },
        )
        .unwrap();
    let client = node.create_client::<AddTwoInts>("add").unwrap();
    let (r, g) = (running.clone(), gate.clone());
    let calls = async move {
        let calls: Vec<_> = (0..12)
            .map(|i| client.call(AddTwoIntsRequest { a: i, b: 1 }))
            .collect();
        // Three run; the other nine wait in the queue until one finishes.
        while r.load(Ordering::SeqCst) < 3 {
            tokio::task::yield_now().await;
        }
        g.add_permits(12);
        let sums: Vec<i64> = futures::future::join_all(calls)
            .await
            .into_iter()
            .map(|r| r.unwrap().sum)
            .collect();
        assert_eq!(sums, (1..=12).collect::<Vec<_>>());
    };
    let errors = executor.spin(
        SpinOptions::default()
            .until_promise_resolved(calls)
            .timeout(Duration::from_secs(60)),
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(
        most.load(Ordering::SeqCst),
        3,
        "more than the depth ran at once"
    );
}
