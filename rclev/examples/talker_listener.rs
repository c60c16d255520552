//! A talker and a listener on the in-process transport.
//!
//! Run with `cargo run --example talker_listener`.

use std::time::Duration;

use rclev::interfaces::std_msgs::msg::String as StringMsg;
use rclev::{Context, SpinOptions};

fn main() -> Result<(), rclev::Error> {
    // The process's --ros-args apply to its nodes (remaps, parameters, log levels).
    let executor = Context::from_env()?.create_basic_executor();
    let listener = executor.create_node("listener")?;
    let _subscription = listener.create_subscription::<StringMsg, _>("chatter", |msg| {
        println!("I heard: '{}'", msg.data);
    })?;

    let talker = executor.create_node("talker")?;
    let publisher = talker.create_publisher::<StringMsg>("chatter")?;
    let commands = executor.commands();
    std::thread::spawn(move || {
        for n in 1..=5 {
            publisher
                .publish(StringMsg {
                    data: format!("Hello World: {n}"),
                })
                .expect("in-process publishing does not fail");
            std::thread::sleep(Duration::from_millis(100));
        }
        commands.halt_spinning();
    });
    for error in executor.spin(SpinOptions::default().timeout(Duration::from_secs(10))) {
        eprintln!("{error}");
    }
    Ok(())
}
