//! Two processes talking over DDS, or one talking with any ROS 2 node:
//!
//! ```sh
//! cargo run -p rclev-dds --example chatter -- talker     # terminal 1
//! cargo run -p rclev-dds --example chatter -- listener   # terminal 2
//! ros2 topic echo /chatter                              # or a real ROS 2 node
//! ```
//!
//! It takes ROS arguments like any ROS 2 program (a launch file's `ros_arguments`):
//!
//! ```sh
//! cargo run -p rclev-dds --example chatter -- talker --ros-args \
//!     -r chatter:=talk -r __ns:=/robot1 -r __node:=left --log-level debug
//! # a node /robot1/left publishing /robot1/talk
//! cargo run -p rclev-dds --example chatter -- talker --ros-args -p message:=Hi
//! cargo run -p rclev-dds --example chatter -- talker --ros-args --params-file talker.yaml
//! ```
//!
//! `ROS_DOMAIN_ID`, `ROS_AUTOMATIC_DISCOVERY_RANGE` and `ROS_STATIC_PEERS` apply as in ROS 2.

use std::time::Duration;

use rclev::interfaces::std_msgs::msg::String as StringMsg;
use rclev::SpinOptions;

fn main() -> Result<(), rclev::Error> {
    let arguments = rclev::Arguments::from_env()?;
    // The program's own arguments are what is left around the ROS arguments.
    let role = arguments
        .non_ros_arguments()
        .get(1)
        .cloned()
        .unwrap_or_else(|| "talker".into());
    let executor = rclev_dds::DdsTransport::context_from(arguments)?.create_basic_executor();
    match role.as_str() {
        "talker" => {
            let node = executor.create_node("talker")?;
            let publisher = node.create_publisher::<StringMsg>("chatter")?;
            // What it says, a parameter: `-p message:=Hi` or a params file sets it, and
            // `rclev param set` changes it while it runs.
            let message = node
                .declare_typed_parameter::<String>("message")
                .default("Hello World".into())
                .description("the text published, before the count")
                .declare()?;
            let mut count = 0;
            let _timer = node.create_timer_repeating(Duration::from_millis(100), move || {
                count += 1;
                let data = format!("{}: {count}", message.get());
                println!("Publishing: '{data}'");
                publisher.publish(StringMsg { data }).unwrap();
            })?;
            for e in executor.spin(SpinOptions::default()) {
                eprintln!("{e}");
            }
        }
        "listener" => {
            let node = executor.create_node("listener")?;
            let _sub = node.create_subscription::<StringMsg, _>("chatter", |msg| {
                println!("I heard: '{}'", msg.data);
            })?;
            for e in executor.spin(SpinOptions::default()) {
                eprintln!("{e}");
            }
        }
        other => eprintln!("unknown role {other:?}: talker or listener"),
    }
    Ok(())
}
