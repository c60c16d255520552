//! Generated code in a private module of a crate with strict lints compiles without a
//! warning (under `cargo clippy --all-targets -- -D warnings` too): an including crate uses
//! only some of the types, and its lint levels must not reach into generated code.

#![deny(
    warnings,
    unreachable_pub,
    unused_qualifications,
    clippy::pedantic,
    clippy::nursery
)]

mod generated {
    rclev::include_interfaces!();
}

#[test]
fn included_in_a_private_module() {
    let cell = generated::robot_msgs::msg::Cell::default();
    assert!((cell.temperature - 25.0).abs() < f32::EPSILON);
}
