//! Async callbacks inside `#[tokio::main]`: a subscription whose callback awaits, an async
//! service, and a client awaited from an ordinary Tokio task.
//!
//! Run with `cargo run --example async_callback`.

use std::time::Duration;

use rclev::interfaces::example_interfaces::srv::AddTwoInts;
use rclev::interfaces::example_interfaces::srv::AddTwoInts_Request as AddTwoIntsRequest;
use rclev::interfaces::example_interfaces::srv::AddTwoInts_Response as AddTwoIntsResponse;
use rclev::interfaces::std_msgs::msg::String as StringMsg;
use rclev::{Context, SpinOptions};

#[tokio::main]
async fn main() -> Result<(), rclev::Error> {
    // Created inside a runtime, the executor adopts it.
    // The process's --ros-args apply to its nodes (remaps, parameters, log levels).
    let executor = Context::from_env()?.create_basic_executor();
    let node = executor.create_node("async_demo")?;

    let _subscription =
        node.create_async_subscription::<StringMsg, _, _>("greetings", |msg| async move {
            // Awaiting here does not block the worker's other callbacks.
            tokio::time::sleep(Duration::from_millis(10)).await;
            println!("processed '{}'", msg.data);
        })?;
    let _service = node.create_async_service::<AddTwoInts, _, _>("add", |req| async move {
        AddTwoIntsResponse { sum: req.a + req.b }
    })?;

    let publisher = node.create_publisher::<StringMsg>("greetings")?;
    let client = node.create_client::<AddTwoInts>("add")?;
    let commands = executor.commands();
    let user_task = tokio::spawn(async move {
        for word in ["hello", "async", "world"] {
            publisher.publish(StringMsg { data: word.into() })?;
        }
        let sum = client.call(AddTwoIntsRequest { a: 40, b: 2 }).await?.sum;
        println!("40 + 2 = {sum}");
        tokio::time::sleep(Duration::from_millis(50)).await;
        commands.halt_spinning();
        Ok::<_, rclev::Error>(sum)
    });
    let errors = executor
        .spin_async(SpinOptions::default().timeout(Duration::from_secs(10)))
        .await;
    for e in errors {
        eprintln!("error while spinning: {e}");
    }
    let sum = user_task.await.expect("the user task does not panic")?;
    assert_eq!(sum, 42);
    Ok(())
}
