//! `rclev demo talker-listener`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use rclev::interfaces::example_interfaces::action::Fibonacci;
use rclev::interfaces::example_interfaces::action::Fibonacci_Feedback as FibonacciFeedback;
use rclev::interfaces::example_interfaces::action::Fibonacci_Goal as FibonacciGoal;
use rclev::interfaces::example_interfaces::action::Fibonacci_Result as FibonacciResult;
use rclev::interfaces::std_msgs::msg::String as StringMsg;
use rclev::{
    ActionServerOptions, CancelResponse, Context, GoalEnd, GoalResponse, ServerGoalHandle,
    SpinOptions,
};

use crate::errors::Result;

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
    // Ctrl-C shuts the executor down (ExecutorOptions::handle_sigint): the spin returns, the
    // talker sees it, and the summary below is still printed.
    let errors = executor.spin(SpinOptions::default());
    let _ = talker_thread.join();
    // Take what was published just before the halt.
    crate::errors::report_spin(
        executor.spin(SpinOptions::spin_once().timeout(Duration::from_secs(1))),
    );
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

pub fn fibonacci(order: i32, step_ms: u64) -> Result {
    let executor = Context::default().create_basic_executor();
    let server_node = executor.create_node("fibonacci_server")?;
    let step = Duration::from_millis(step_ms);
    let _server = server_node.create_action_server::<Fibonacci, _, _, _, _>(
        "fibonacci",
        ActionServerOptions::default(),
        |id, goal: &FibonacciGoal| {
            if !(0..=46).contains(&goal.order) {
                println!("[server] rejecting goal {id} (order {})", goal.order);
                GoalResponse::Reject
            } else {
                println!("[server] accepting goal {id} (order {})", goal.order);
                GoalResponse::AcceptAndExecute
            }
        },
        |_goal: &ServerGoalHandle<Fibonacci>| CancelResponse::Accept,
        move |goal: ServerGoalHandle<Fibonacci>| async move {
            let mut sequence = vec![0, 1];
            for i in 1..goal.goal().order.max(1) as usize {
                if goal.is_cancel_requested() {
                    return GoalEnd::Canceled(FibonacciResult { sequence });
                }
                sequence.push(sequence[i] + sequence[i - 1]);
                let _ = goal.publish_feedback(FibonacciFeedback {
                    sequence: sequence.clone(),
                });
                tokio::time::sleep(step).await;
            }
            GoalEnd::Succeeded(FibonacciResult { sequence })
        },
    )?;
    let client_node = executor.create_node("fibonacci_client")?;
    let client = client_node.create_action_client::<Fibonacci>("fibonacci")?;
    let done = async move {
        let goal = client.send_goal(FibonacciGoal { order }).await?;
        let mut feedback = goal.feedback()?;
        while let Some(f) = feedback.next().await {
            println!("[client] feedback: {:?}", f.sequence);
        }
        let (state, result) = goal.result().await?;
        println!("[client] result ({state:?}): {:?}", result.sequence);
        Ok::<_, rclev::Error>(())
    };
    let (tx, rx) = std::sync::mpsc::channel();
    // Ctrl-C shuts the executor down while it spins (ExecutorOptions::handle_sigint).
    crate::errors::report_spin(executor.spin(SpinOptions::default().until_promise_resolved(
        async move {
            let _ = tx.send(done.await);
        },
    )));
    match rx.try_recv() {
        Ok(outcome) => Ok(outcome?),
        Err(_) => Err("interrupted".into()),
    }
}
