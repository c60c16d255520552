//! Generates the standard ROS 2 interfaces (`rclev::interfaces`) from the definitions that
//! ship in `rclev-codegen/interfaces`, with the same generator users call.

fn main() {
    if let Err(e) = rclev_codegen::Builder::new().rclev_itself().generate() {
        panic!("generating rclev's interfaces failed: {e}");
    }
}
