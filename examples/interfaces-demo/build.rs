//! Generates the Rust types of `robot_msgs/` into `$OUT_DIR/rclev_interfaces.rs`, which
//! `rclev::include_interfaces!()` in `src/lib.rs` includes.

fn main() {
    if let Err(e) = rclev_codegen::Builder::new()
        .package_dir("robot_msgs")
        .generate()
    {
        // `e` reads `robot_msgs/msg/Telemetry.msg:12: unknown type …`: file, line, problem.
        panic!("generating robot_msgs failed: {e}");
    }
}
