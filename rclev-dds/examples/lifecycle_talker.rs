//! ROS 2's lifecycle demo (`ros2 run lifecycle lifecycle_talker`) in rclev: a managed node
//! `lc_talker` that publishes `std_msgs/String` on `lifecycle_chatter` only while it is active.
//! Drive it from another terminal with `rclev lifecycle` (or `ros2 lifecycle`, or ROS 2's
//! `lifecycle_service_client`):
//!
//! ```sh
//! cargo run -p rclev-dds --example lifecycle_talker            # terminal 1
//! rclev lifecycle set /lc_talker configure                      # terminal 2
//! rclev lifecycle set /lc_talker activate                       # publishes from here on
//! rclev topic echo /lifecycle_chatter                           # or ros2 topic echo
//! rclev lifecycle set /lc_talker deactivate
//! rclev lifecycle set /lc_talker shutdown
//! ```
//!
//! As in the demo, a timer ticks every second whatever the state and hands a message to the
//! managed publisher, which publishes it only while the node is active (while inactive it
//! drops it, with one warning per inactive period); `on_activate` takes two seconds, here
//! without blocking the node (an async callback: `get_state` answers `activating` meanwhile).
//! `ROS_DOMAIN_ID`, `ROS_AUTOMATIC_DISCOVERY_RANGE` and `ROS_STATIC_PEERS` apply as in ROS 2.

use std::time::Duration;

use rclev::interfaces::std_msgs::msg::String as StringMsg;
use rclev::lifecycle::CallbackReturn;
use rclev::{log_info, SpinOptions};

fn main() -> Result<(), rclev::Error> {
    let executor = rclev_dds::DdsTransport::context()?.create_basic_executor();
    let node = executor.create_lifecycle_node("lc_talker")?;
    let publisher = node.create_lifecycle_publisher::<StringMsg>("lifecycle_chatter")?;

    let (logger, mut count) = (node.logger().clone(), 0);
    let _timer = node.create_timer_repeating(Duration::from_secs(1), move || {
        count += 1;
        let data = format!("Lifecycle HelloWorld #{count}");
        if publisher.is_activated() {
            log_info!(
                logger,
                "Lifecycle publisher is active. Publishing: [{data}]"
            );
        } else {
            log_info!(
                logger,
                "Lifecycle publisher is currently inactive. Messages are not published."
            );
        }
        // Dropped unless active.
        publisher.publish(StringMsg { data }).unwrap();
    })?;

    let logger = node.logger().clone();
    node.on_configure(move |previous| {
        log_info!(logger, "on_configure() is called (from {previous}).");
        CallbackReturn::Success
    });
    let logger = node.logger().clone();
    node.on_activate_async(move |_| {
        let logger = logger.clone();
        async move {
            log_info!(logger, "on_activate() is called.");
            // Emulates bringing up a device; the node's services keep answering meanwhile.
            tokio::time::sleep(Duration::from_secs(2)).await;
            CallbackReturn::Success
        }
    });
    let logger = node.logger().clone();
    node.on_deactivate(move |_| {
        log_info!(logger, "on_deactivate() is called.");
        CallbackReturn::Success
    });
    let logger = node.logger().clone();
    node.on_cleanup(move |_| {
        log_info!(logger, "on cleanup is called.");
        CallbackReturn::Success
    });
    let logger = node.logger().clone();
    node.on_shutdown(move |previous| {
        log_info!(logger, "on shutdown is called from state {previous}.");
        CallbackReturn::Success
    });

    // Until Ctrl-C.
    for e in executor.spin(SpinOptions::default()) {
        eprintln!("{e}");
    }
    Ok(())
}
