//! One rclev node on the DDS transport, spinning, with no endpoints of its own: what an idle
//! rclev DDS process costs in wake-ups (../../IDLE.md). `ROS_DOMAIN_ID` and
//! `ROS_AUTOMATIC_DISCOVERY_RANGE` apply as in ROS 2; Ctrl-C ends it.
//!
//! `rclev-idle-node context` creates the transport and an executor and spins with no node.

use rclev::SpinOptions;

fn main() -> Result<(), rclev::Error> {
    let with_node = std::env::args().nth(1).as_deref() != Some("context");
    let executor = rclev_dds::DdsTransport::context()?.create_basic_executor();
    let _node = if with_node { Some(executor.create_node("idle")?) } else { None };
    eprintln!("idle: Fast DDS {}, node: {with_node}", rclev_dds::engine_version());
    for e in executor.spin(SpinOptions::default()) {
        eprintln!("{e}");
    }
    Ok(())
}
