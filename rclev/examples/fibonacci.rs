//! An action server and client for `example_interfaces/action/Fibonacci` in one process.
//!
//! Run with `cargo run --example fibonacci` (or `rclev demo fibonacci`).

use std::time::Duration;

use futures::StreamExt;
use rclev::interfaces::example_interfaces::action::Fibonacci;
use rclev::interfaces::example_interfaces::action::Fibonacci_Feedback as FibonacciFeedback;
use rclev::interfaces::example_interfaces::action::Fibonacci_Goal as FibonacciGoal;
use rclev::interfaces::example_interfaces::action::Fibonacci_Result as FibonacciResult;
use rclev::{
    ActionServerOptions, CancelResponse, Context, GoalEnd, GoalResponse, ServerGoalHandle,
    SpinOptions,
};

fn main() -> Result<(), rclev::Error> {
    // The process's --ros-args apply to its nodes (remaps, parameters, log levels).
    let executor = Context::from_env()?.create_basic_executor();
    let server_node = executor.create_node("fibonacci_server")?;
    let _server = server_node.create_action_server::<Fibonacci, _, _, _, _>(
        "fibonacci",
        ActionServerOptions::default(),
        |_id, goal: &FibonacciGoal| {
            if goal.order > 46 {
                GoalResponse::Reject // would overflow i32
            } else {
                GoalResponse::AcceptAndExecute
            }
        },
        |_goal: &ServerGoalHandle<Fibonacci>| CancelResponse::Accept,
        |goal: ServerGoalHandle<Fibonacci>| async move {
            let mut sequence = vec![0, 1];
            for i in 1..goal.goal().order as usize {
                if goal.is_cancel_requested() {
                    return GoalEnd::Canceled(FibonacciResult { sequence });
                }
                sequence.push(sequence[i] + sequence[i - 1]);
                let _ = goal.publish_feedback(FibonacciFeedback {
                    sequence: sequence.clone(),
                });
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            GoalEnd::Succeeded(FibonacciResult { sequence })
        },
    )?;

    let client_node = executor.create_node("fibonacci_client")?;
    let client = client_node.create_action_client::<Fibonacci>("fibonacci")?;
    let done = async move {
        let goal = client.send_goal(FibonacciGoal { order: 10 }).await?;
        println!("goal {} accepted", goal.goal_id());
        let mut feedback = goal.feedback()?;
        while let Some(f) = feedback.next().await {
            println!("feedback: {:?}", f.sequence);
        }
        let (state, result) = goal.result().await?;
        println!("result ({state:?}): {:?}", result.sequence);
        Ok::<_, rclev::Error>(())
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let errors = executor.spin(
        SpinOptions::default()
            .until_promise_resolved(async move {
                let _ = tx.send(done.await);
            })
            .timeout(Duration::from_secs(30)),
    );
    for e in errors {
        eprintln!("error while spinning: {e}");
    }
    rx.try_recv().unwrap_or(Err(rclev::Error::Shutdown))
}
