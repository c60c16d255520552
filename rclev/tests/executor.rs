//! The executor: spin modes, workers, async callbacks, coalescing, idleness, panics, shutdown.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{count_to, spin_until};
use rclev::interfaces::example_interfaces::srv::AddTwoInts;
use rclev::interfaces::example_interfaces::srv::AddTwoInts_Request as AddTwoIntsRequest;
use rclev::interfaces::example_interfaces::srv::AddTwoInts_Response as AddTwoIntsResponse;
use rclev::interfaces::std_msgs::msg::Int64;
use rclev::{
    Context, Error, ExecutorOptions, IntoPrimitiveOptions, QoSProfile, RuntimeChoice, SpinOptions,
};
use tokio::sync::Semaphore;

fn add_service(node: &rclev::Node) -> rclev::Service<AddTwoInts> {
    node.create_service::<AddTwoInts, _>("add", |req| AddTwoIntsResponse { sum: req.a + req.b })
        .unwrap()
}

#[test]
fn concurrent_service_calls_all_answered() {
    let executor = Context::default().create_basic_executor();
    let server_node = executor.create_node("server").unwrap();
    let _service = add_service(&server_node);
    let client_node = executor.create_node("client").unwrap();
    let client = client_node.create_client::<AddTwoInts>("add").unwrap();
    assert!(client.service_is_ready());
    let calls: Vec<_> = (0..400)
        .map(|i| {
            let client = client.clone();
            async move { (i, client.call(AddTwoIntsRequest { a: i, b: 1000 }).await) }
        })
        .collect();
    let results = Arc::new(Mutex::new(Vec::new()));
    let r = results.clone();
    // Four concurrent tasks of 100 calls each, all in flight at once.
    let done = async move {
        let mut handles = Vec::new();
        let mut calls = calls.into_iter();
        for _ in 0..4 {
            let chunk: Vec<_> = calls.by_ref().take(100).collect();
            let r = r.clone();
            handles.push(tokio::spawn(async move {
                for (i, res) in futures::future::join_all(chunk).await {
                    r.lock().unwrap().push((i, res));
                }
            }));
        }
        for h in handles {
            h.await.unwrap();
        }
    };
    spin_until(&executor, done);
    let results = results.lock().unwrap();
    assert_eq!(results.len(), 400);
    for (i, res) in results.iter() {
        assert_eq!(res.as_ref().unwrap().sum, i + 1000);
    }
}

#[test]
fn client_errors_without_server_and_when_server_goes_away() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("n").unwrap();
    let client = node.create_client::<AddTwoInts>("nobody").unwrap();
    assert!(!client.service_is_ready());
    // On any transport a call without a server fails: at once when the transport knows there
    // is none (in process, always), by its timeout otherwise.
    let (tx, rx) = std::sync::mpsc::channel();
    let call = client.call_with_timeout(AddTwoIntsRequest { a: 1, b: 2 }, Duration::from_secs(1));
    let _ = executor.spin(
        SpinOptions::default()
            .until_promise_resolved(async move { tx.send(call.await).unwrap() })
            .timeout(Duration::from_secs(5)),
    );
    let res = rx.try_recv().unwrap();
    assert!(
        matches!(res, Err(Error::ServiceUnavailable(ref n)) if n == "/nobody")
            || matches!(res, Err(Error::Timeout { .. })),
        "{res:?}"
    );

    // Server exists but the executor does not spin: the request is queued; dropping the server
    // answers it with an error instead of leaving the caller hanging. A guarantee of the
    // in-process transport: a remote server can vanish silently (calls then need a timeout).
    let service = node
        .create_service::<AddTwoInts, _>("/late", |r| AddTwoIntsResponse { sum: r.a })
        .unwrap();
    let client = node.create_client::<AddTwoInts>("/late").unwrap();
    let pending = client.call(AddTwoIntsRequest { a: 1, b: 2 });
    drop(service);
    let (tx, rx) = std::sync::mpsc::channel();
    let _ = executor.spin(
        SpinOptions::default()
            .until_promise_resolved(async move { tx.send(pending.await).unwrap() })
            .timeout(Duration::from_secs(5)),
    );
    assert!(matches!(
        rx.try_recv().unwrap(),
        Err(Error::ServiceUnavailable(_))
    ));
    // Two servers for one name are refused.
    let _a = node
        .create_service::<AddTwoInts, _>("dup", |r| AddTwoIntsResponse { sum: r.a })
        .unwrap();
    assert!(matches!(
        node.create_service::<AddTwoInts, _>("dup", |r| AddTwoIntsResponse { sum: r.a }),
        Err(Error::ServiceAlreadyExists(_))
    ));
}

#[test]
fn dropping_a_service_while_its_callback_runs_withdraws_it_at_once() {
    let executor = Context::default().create_basic_executor();
    let server_node = executor.create_node("server").unwrap();
    let client_node = executor.create_node("client").unwrap();
    let (entered_tx, entered_rx) = std::sync::mpsc::channel();
    let (resume_tx, resume_rx) = std::sync::mpsc::channel::<()>();
    let resume_rx = Mutex::new(resume_rx);
    let service = server_node
        .create_service::<AddTwoInts, _>("busy", move |req| {
            entered_tx.send(()).unwrap();
            let _ = resume_rx
                .lock()
                .unwrap()
                .recv_timeout(Duration::from_secs(20));
            AddTwoIntsResponse { sum: req.a + req.b }
        })
        .unwrap();
    let client = client_node.create_client::<AddTwoInts>("busy").unwrap();
    let in_callback = client.call(AddTwoIntsRequest { a: 1, b: 2 });
    let queued = client.call(AddTwoIntsRequest { a: 3, b: 4 });
    // The last handle goes while the worker is inside the callback (and so still holds the
    // service): it must be gone at once, not when the callback returns.
    let c = client.clone();
    let dropper = std::thread::spawn(move || {
        entered_rx.recv_timeout(Duration::from_secs(20)).unwrap();
        drop(service);
        let ready_after_drop = c.service_is_ready();
        let new_call = futures::executor::block_on(c.call(AddTwoIntsRequest { a: 5, b: 6 }));
        resume_tx.send(()).unwrap();
        (ready_after_drop, new_call)
    });
    let results = Arc::new(Mutex::new(Vec::new()));
    let r = results.clone();
    spin_until(&executor, async move {
        let answers = futures::join!(in_callback, queued);
        r.lock().unwrap().extend([answers.0, answers.1]);
    });
    let (ready_after_drop, new_call) = dropper.join().unwrap();
    assert!(!ready_after_drop);
    assert!(matches!(new_call, Err(Error::ServiceUnavailable(_))));
    let results = results.lock().unwrap();
    assert!(
        results
            .iter()
            .all(|r| matches!(r, Err(Error::ServiceUnavailable(_)))),
        "{results:?}"
    );
}

#[test]
fn async_callbacks_and_async_services() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("n").unwrap();
    let sem = Arc::new(Semaphore::new(0));
    let s = sem.clone();
    // Awaiting inside a callback does not block the worker: all ten callbacks are in flight at
    // once, and the async service answers meanwhile, or nobody gets past this.
    let all_in_flight = Arc::new(tokio::sync::Barrier::new(11));
    let test_side = all_in_flight.clone();
    let _sub = node
        .create_async_subscription::<Int64, _, _>(
            "a".qos(QoSProfile::default().keep_all()),
            move |m| {
                let s = s.clone();
                let all_in_flight = all_in_flight.clone();
                async move {
                    all_in_flight.wait().await;
                    assert!(m.data < 10);
                    s.add_permits(1);
                }
            },
        )
        .unwrap();
    let _service = node
        .create_async_service::<AddTwoInts, _, _>("slow_add", |r| async move {
            tokio::time::sleep(Duration::from_millis(10)).await;
            AddTwoIntsResponse { sum: r.a + r.b }
        })
        .unwrap();
    let client = node.create_client::<AddTwoInts>("slow_add").unwrap();
    let publisher = node.create_publisher::<Int64>("a").unwrap();
    for i in 0..10 {
        publisher.publish(Int64 { data: i }).unwrap();
    }
    let answer = Arc::new(Mutex::new(None));
    let a = answer.clone();
    let wait = count_to(&sem, 10);
    spin_until(&executor, async move {
        *a.lock().unwrap() = Some(
            client
                .call(AddTwoIntsRequest { a: 2, b: 3 })
                .await
                .unwrap()
                .sum,
        );
        test_side.wait().await;
        wait.await;
    });
    assert_eq!(*answer.lock().unwrap(), Some(5));
}

fn guard_counter(
    executor: &rclev::Executor,
) -> (rclev::GuardCondition, Arc<AtomicUsize>, rclev::Node) {
    let node = executor.create_node("g").unwrap();
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    let guard = node
        .create_guard_condition(move || {
            c.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    (guard, count, node)
}

#[test]
fn spin_outside_any_runtime() {
    let executor = Context::default().create_basic_executor();
    let (guard, count, _node) = guard_counter(&executor);
    guard.trigger();
    let _ = executor.spin(SpinOptions::spin_once().timeout(Duration::from_secs(5)));
    assert_eq!(count.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocking_spin_inside_multi_thread_runtime() {
    let executor = Context::default().create_basic_executor();
    let (guard, count, _node) = guard_counter(&executor);
    guard.trigger();
    let errors = executor.spin(SpinOptions::spin_once().timeout(Duration::from_secs(5)));
    assert!(errors.is_empty());
    assert_eq!(count.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spin_async_inside_tokio_main() {
    let executor = Context::default().create_basic_executor();
    let (guard, count, _node) = guard_counter(&executor);
    guard.trigger();
    let errors = executor
        .spin_async(SpinOptions::spin_once().timeout(Duration::from_secs(5)))
        .await;
    assert!(errors.is_empty());
    assert_eq!(count.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "current_thread")]
async fn current_thread_runtime_spin_async_works_and_blocking_spin_is_refused() {
    let executor = Context::default().create_basic_executor();
    let (guard, count, _node) = guard_counter(&executor);
    guard.trigger();
    assert_eq!(
        executor.spin(SpinOptions::spin_once()),
        vec![Error::BlockingSpinInsideRuntime]
    );
    let _ = executor
        .spin_async(SpinOptions::spin_once().timeout(Duration::from_secs(5)))
        .await;
    assert_eq!(count.load(Ordering::SeqCst), 1);

    // An executor that owns its runtime can be spun blocking even from here.
    let own = Context::default()
        .create_executor(ExecutorOptions {
            runtime: RuntimeChoice::Own { worker_threads: 1 },
            ..Default::default()
        })
        .unwrap();
    let (guard, count, _node) = guard_counter(&own);
    guard.trigger();
    assert!(own
        .spin(SpinOptions::spin_once().timeout(Duration::from_secs(5)))
        .is_empty());
    assert_eq!(count.load(Ordering::SeqCst), 1);
}

#[test]
fn callbacks_run_only_while_spinning_and_not_after_shutdown() {
    let executor = Context::default().create_basic_executor();
    let (guard, count, _node) = guard_counter(&executor);
    guard.trigger();
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(count.load(Ordering::SeqCst), 0, "ran without spinning");
    let _ = executor.spin(SpinOptions::spin_once().timeout(Duration::from_secs(5)));
    assert_eq!(count.load(Ordering::SeqCst), 1);

    let commands = executor.commands();
    guard.trigger();
    commands.shutdown();
    let started = Instant::now();
    let errors = executor.spin(SpinOptions::default());
    assert!(errors.is_empty());
    assert!(started.elapsed() < Duration::from_secs(1));
    guard.trigger();
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        count.load(Ordering::SeqCst),
        1,
        "a callback ran after shutdown"
    );
    assert!(commands.is_shut_down());
}

#[test]
fn halt_spinning_from_a_callback() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("n").unwrap();
    let commands = executor.commands();
    let guard = node
        .create_guard_condition(move || commands.halt_spinning())
        .unwrap();
    guard.trigger();
    let started = Instant::now();
    let _ = executor.spin(SpinOptions::default().timeout(Duration::from_secs(10)));
    assert!(started.elapsed() < Duration::from_secs(5));
}

type Intervals = Arc<Mutex<Vec<(Instant, Instant)>>>;

/// A guard whose callback logs its interval. With `meet`, the callback waits (at most 20 s)
/// until every callback sharing `meet` has started, which only callbacks running in parallel
/// can do: they then overlap however late the host lets each start. Without, it takes 150 ms.
fn slow_guard<P: Send + 'static>(
    worker: &rclev::Worker<P>,
    log: &Intervals,
    sem: &Arc<Semaphore>,
    meet: Option<Arc<AtomicUsize>>,
) -> rclev::GuardCondition {
    let (log, sem) = (log.clone(), sem.clone());
    worker
        .create_guard_condition(move |_payload: &mut P| {
            let start = Instant::now();
            match &meet {
                Some(started) => {
                    started.fetch_add(1, Ordering::SeqCst);
                    while started.load(Ordering::SeqCst) < 2
                        && start.elapsed() < Duration::from_secs(20)
                    {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
                None => std::thread::sleep(Duration::from_millis(150)),
            }
            log.lock().unwrap().push((start, Instant::now()));
            sem.add_permits(1);
        })
        .unwrap()
}

fn overlapped(log: &Intervals) -> bool {
    let l = log.lock().unwrap();
    let (a, b) = (l[0], l[1]);
    a.0 < b.1 && b.0 < a.1
}

#[test]
fn workers_run_in_parallel_but_one_worker_is_serial() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("n").unwrap();
    let (w1, w2) = (
        node.create_worker(()).unwrap(),
        node.create_worker(()).unwrap(),
    );

    let log: Intervals = Arc::default();
    let sem = Arc::new(Semaphore::new(0));
    let meet = Arc::new(AtomicUsize::new(0));
    let (g1, g2) = (
        slow_guard(&w1, &log, &sem, Some(meet.clone())),
        slow_guard(&w2, &log, &sem, Some(meet)),
    );
    g1.trigger();
    g2.trigger();
    spin_until(&executor, count_to(&sem, 2));
    assert!(
        overlapped(&log),
        "callbacks of different workers did not overlap"
    );

    let log: Intervals = Arc::default();
    let (g1, g2) = (
        slow_guard(&w1, &log, &sem, None),
        slow_guard(&w1, &log, &sem, None),
    );
    g1.trigger();
    g2.trigger();
    spin_until(&executor, count_to(&sem, 2));
    assert!(!overlapped(&log), "callbacks of one worker overlapped");
}

/// A worker has the node's `create_*` methods (one definition for both): its message-info
/// subscription, guard condition and timers get the payload; async callbacks, publishers,
/// clients and streams work from it as from the node.
#[test]
fn worker_creates_every_entity_a_node_does() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("n").unwrap();
    let worker = node.create_worker(Vec::<String>::new()).unwrap();
    let publisher = worker.create_publisher::<Int64>("w").unwrap();
    let _info = worker
        .create_subscription_with_info::<Int64, _>("w", |log: &mut Vec<String>, m, info| {
            log.push(format!(
                "info {} #{}",
                m.data, info.publication_sequence_number
            ));
        })
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let _async_sub = worker
        .create_async_subscription::<Int64, _, _>("w", move |m| {
            let tx = tx.clone();
            async move { tx.send(m.data).unwrap() }
        })
        .unwrap();
    let stream = worker.create_subscription_stream::<Int64>("w").unwrap();
    let guard = worker
        .create_guard_condition(|log: &mut Vec<String>| log.push("guard".into()))
        .unwrap();
    let _oneshot = worker
        .create_timer_oneshot(Duration::from_millis(1), |log: &mut Vec<String>, _| {
            log.push("oneshot".into())
        })
        .unwrap();
    let _service = worker
        .create_async_service::<AddTwoInts, _, _>("sum", |req| async move {
            AddTwoIntsResponse { sum: req.a + req.b }
        })
        .unwrap();
    let client = worker.create_client::<AddTwoInts>("sum").unwrap();
    publisher.publish(Int64 { data: 7 }).unwrap();
    guard.trigger();
    let out = Arc::new(Mutex::new(None));
    let (o, w) = (out.clone(), worker.clone());
    spin_until(&executor, async move {
        // The one-shot timer is due after 1 ms, and the host may be slow to run it: the payload
        // is read until its entry is there (with the other two, queued before the spin).
        let log = loop {
            let log = w.run(|log: &mut Vec<String>| log.clone()).await.unwrap();
            if log.len() >= 3 {
                break log;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        };
        let sum = client
            .call(AddTwoIntsRequest { a: 2, b: 3 })
            .await
            .unwrap()
            .sum;
        *o.lock().unwrap() = Some((sum, log));
    });
    let (sum, mut log) = out.lock().unwrap().take().unwrap();
    log.sort();
    assert_eq!(sum, 5);
    assert_eq!(log, ["guard", "info 7 #1", "oneshot"]);
    assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), 7);
    assert_eq!(stream.try_recv().unwrap().0.data, 7);
    assert!(stream.try_recv().is_none());
}

#[test]
fn worker_payload_is_shared_by_its_callbacks() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("n").unwrap();
    let worker = node.create_worker(Vec::<i64>::new()).unwrap();
    let _sub = worker
        .create_subscription::<Int64, _>(
            "p".qos(QoSProfile::default().keep_all()),
            |v: &mut Vec<i64>, m| v.push(m.data),
        )
        .unwrap();
    let _service = worker
        .create_service::<AddTwoInts, _>("len", |v: &mut Vec<i64>, _req| AddTwoIntsResponse {
            sum: v.len() as i64,
        })
        .unwrap();
    let publisher = node.create_publisher::<Int64>("p").unwrap();
    for i in 0..100 {
        publisher.publish(Int64 { data: i }).unwrap();
    }
    let _ = executor.spin(SpinOptions::spin_once().timeout(Duration::from_secs(5)));
    let client = node.create_client::<AddTwoInts>("len").unwrap();
    let contents = worker.run(|v: &mut Vec<i64>| v.clone());
    let out = Arc::new(Mutex::new(None));
    let o = out.clone();
    spin_until(&executor, async move {
        let len = client.call(AddTwoIntsRequest::default()).await.unwrap().sum;
        *o.lock().unwrap() = Some((len, contents.await.unwrap()));
    });
    let (len, contents) = out.lock().unwrap().take().unwrap();
    assert_eq!(len, 100);
    assert_eq!(contents, (0..100).collect::<Vec<_>>());
}

#[test]
fn many_triggers_coalesce_into_one_run_and_none_is_lost() {
    let executor = Context::default().create_basic_executor();
    let (guard, count, _node) = guard_counter(&executor);
    for _ in 0..10_000 {
        guard.trigger();
    }
    let _ = executor.spin(SpinOptions::spin_once().timeout(Duration::from_secs(5)));
    assert_eq!(count.load(Ordering::SeqCst), 1);

    // Triggers racing with the callback: every trigger is followed by at least one run that
    // started after it (the last trigger is never lost).
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (g, s) = (guard.clone(), stop.clone());
    let trigger_thread = std::thread::spawn(move || {
        while !s.load(Ordering::SeqCst) {
            g.trigger();
        }
        g.trigger();
    });
    let _ = executor.spin(SpinOptions::default().timeout(Duration::from_millis(200)));
    stop.store(true, Ordering::SeqCst);
    trigger_thread.join().unwrap();
    let before = count.load(Ordering::SeqCst);
    let _ = executor.spin(SpinOptions::spin_once().timeout(Duration::from_secs(5)));
    assert!(
        count.load(Ordering::SeqCst) > before,
        "the final trigger was lost: {before} {:?}",
        guard
    );
}

#[test]
fn a_flooded_subscription_does_not_starve_its_neighbours() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("n").unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let (o1, o2) = (order.clone(), order.clone());
    let keep_all = QoSProfile::default().keep_all();
    let _flood = node
        .create_subscription::<Int64, _>("flood".qos(keep_all), move |m| {
            o1.lock().unwrap().push(m.data)
        })
        .unwrap();
    let _quiet = node
        .create_subscription::<Int64, _>("quiet".qos(keep_all), move |_| {
            o2.lock().unwrap().push(-1)
        })
        .unwrap();
    let flood = node.create_publisher::<Int64>("flood").unwrap();
    let quiet = node.create_publisher::<Int64>("quiet").unwrap();
    for i in 0..10_000 {
        flood.publish(Int64 { data: i }).unwrap();
    }
    quiet.publish(Int64 { data: 0 }).unwrap();
    let _ = executor.spin(SpinOptions::spin_once().timeout(Duration::from_secs(10)));
    let order = order.lock().unwrap();
    assert_eq!(order.len(), 10_001);
    let quiet_at = order.iter().position(|&d| d == -1).unwrap();
    assert!(
        quiet_at <= 64,
        "the quiet subscription waited behind {quiet_at} flood messages"
    );
}

#[test]
fn idle_executor_makes_no_wakeups() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("idle").unwrap();
    let _sub = node
        .create_subscription::<Int64, _>("nothing", |_| {})
        .unwrap();
    let _service = add_service(&node);
    let worker = node.create_worker(0u8).unwrap();
    let (guard, count, _n) = guard_counter(&executor);
    // One guard on each of the executor's workers (the nodes' and the extra one): once all three
    // callbacks have run during the spin, every worker has been woken by the spin's start, has
    // run its work and parks; from then on the executor is idle (observed, not waited for).
    let ran = Arc::new(AtomicUsize::new(0));
    let (r1, r2) = (ran.clone(), ran.clone());
    let idle_guard = node
        .create_guard_condition(move || {
            r1.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let worker_guard = worker
        .create_guard_condition(move |_: &mut u8| {
            r2.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let exec = &executor;
    let (before, after) = std::thread::scope(|scope| {
        let sampler = scope.spawn(|| {
            guard.trigger();
            idle_guard.trigger();
            worker_guard.trigger();
            let deadline = Instant::now() + Duration::from_secs(20);
            while count.load(Ordering::SeqCst) < 1 || ran.load(Ordering::SeqCst) < 2 {
                assert!(Instant::now() < deadline, "the guards' callbacks never ran");
                std::thread::sleep(Duration::from_millis(1));
            }
            let before = exec.diagnostics();
            std::thread::sleep(Duration::from_millis(500));
            let after = exec.diagnostics();
            exec.commands().halt_spinning();
            (before, after)
        });
        let _ = exec.spin(SpinOptions::default().timeout(Duration::from_secs(30)));
        sampler.join().unwrap()
    });
    assert_eq!(count.load(Ordering::SeqCst), 1);
    assert!(before.worker_wakeups > 0, "the counter does not count");
    assert_eq!(before, after, "an idle executor woke up");
}

#[test]
fn panicking_callback_is_isolated_and_reported() {
    let reported = Arc::new(AtomicUsize::new(0));
    let r = reported.clone();
    let executor = Context::default()
        .create_executor(ExecutorOptions {
            error_handler: Some(Arc::new(move |e: &Error| {
                assert!(matches!(e, Error::CallbackPanicked { .. }));
                r.fetch_add(1, Ordering::SeqCst);
            })),
            ..Default::default()
        })
        .unwrap();
    let node = executor.create_node("n").unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let _sub = node
        .create_subscription::<Int64, _>("p", move |m| {
            if m.data == 1 {
                panic!("bad message {}", m.data);
            }
            s.lock().unwrap().push(m.data);
        })
        .unwrap();
    let (guard, count, _n) = guard_counter(&executor);
    let _bad_service = node
        .create_service::<AddTwoInts, _>("boom", |_| panic!("service exploded"))
        .unwrap();
    let client = node.create_client::<AddTwoInts>("boom").unwrap();
    let publisher = node.create_publisher::<Int64>("p").unwrap();
    for i in 0..3 {
        publisher.publish(Int64 { data: i }).unwrap();
    }
    guard.trigger();
    let (tx, rx) = std::sync::mpsc::channel();
    let call = client.call(AddTwoIntsRequest::default());
    let errors = executor.spin(
        SpinOptions::default()
            .until_promise_resolved(async move { tx.send(call.await).unwrap() })
            .timeout(Duration::from_secs(5)),
    );
    let _ = executor.spin(SpinOptions::spin_once().timeout(Duration::from_secs(5)));
    assert_eq!(*seen.lock().unwrap(), vec![0, 2]);
    assert_eq!(count.load(Ordering::SeqCst), 1);
    assert!(matches!(rx.recv().unwrap(), Err(Error::ServiceFailed(_))));
    assert_eq!(reported.load(Ordering::SeqCst), 2);
    assert!(errors.iter().any(
        |e| matches!(e, Error::CallbackPanicked { message, .. } if message == "bad message 1")
    ));
    // Still working afterwards.
    publisher.publish(Int64 { data: 3 }).unwrap();
    let _ = executor.spin(SpinOptions::spin_once().timeout(Duration::from_secs(5)));
    assert_eq!(*seen.lock().unwrap(), vec![0, 2, 3]);
}

/// Two async callbacks woken at once: while the first one's poll runs, `shutdown()` returns;
/// the second must not resume afterwards (every poll of an async callback passes the worker's
/// start fence, not only the first of a round).
#[test]
fn no_async_callback_resumes_after_shutdown_returned() {
    use std::sync::atomic::AtomicBool;
    let executor = Arc::new(Context::default().create_basic_executor());
    let node = executor.create_node("probe").unwrap();
    let down = Arc::new(AtomicBool::new(false));
    let late = Arc::new(AtomicUsize::new(0));
    let first_polls = Arc::new(AtomicUsize::new(0));
    let resumed = Arc::new(AtomicUsize::new(0));
    let (go_tx, go_rx) = tokio::sync::watch::channel(false);
    let (d, l, p, r) = (
        down.clone(),
        late.clone(),
        first_polls.clone(),
        resumed.clone(),
    );
    let _sub = node
        .create_async_subscription::<Int64, _, _>(
            "probe".qos(QoSProfile::default().keep_all()),
            move |_m| {
                let (d, l, p, r) = (d.clone(), l.clone(), p.clone(), r.clone());
                let mut rx = go_rx.clone();
                async move {
                    p.fetch_add(1, Ordering::SeqCst);
                    let _ = rx.wait_for(|go| *go).await;
                    // Resumed: user code runs again.
                    r.fetch_add(1, Ordering::SeqCst);
                    if d.load(Ordering::SeqCst) {
                        l.fetch_add(1, Ordering::SeqCst);
                    }
                    // A long poll, during which shutdown() returns.
                    std::thread::sleep(Duration::from_millis(300));
                }
            },
        )
        .unwrap();
    let publisher = node.create_publisher::<Int64>("probe").unwrap();
    let e = executor.clone();
    let spinner = std::thread::spawn(move || e.spin(SpinOptions::default()));
    publisher.publish(Int64 { data: 0 }).unwrap();
    publisher.publish(Int64 { data: 1 }).unwrap();
    let started = Instant::now();
    while first_polls.load(Ordering::SeqCst) < 2 {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the callbacks never started"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    go_tx.send(true).unwrap();
    // Shut down while the first resumed poll runs (its 300 ms), the second one woken too.
    let started = Instant::now();
    while resumed.load(Ordering::SeqCst) < 1 {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no callback resumed"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    executor.shutdown();
    down.store(true, Ordering::SeqCst);
    let _ = spinner.join();
    assert_eq!(
        late.load(Ordering::SeqCst),
        0,
        "an async callback resumed after shutdown() returned"
    );
}
