//! Generates `test_msgs` (rosidl's test interfaces) from the ROS 2 Jazzy wheel installed in the
//! oracle venv, found as an ament prefix: the generator's `AMENT_PREFIX_PATH` path at work.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-env-changed=RCLEV_ORACLE_VENV");
    let venv = std::env::var_os("RCLEV_ORACLE_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/oracle-venv"));
    if !venv.join("share/test_msgs").is_dir() {
        panic!(
            "the ROS 2 oracle venv is missing at {}: run `bash .ci/oracles` first",
            venv.display()
        );
    }
    println!(
        "cargo:rustc-env=RCLEV_ORACLE_VENV_AT_BUILD={}",
        venv.display()
    );
    // Beside test_msgs, fixtures whose names are Rust keywords (packages `type` and `super`,
    // fields `self` and `crate`) and the unqualified-`Header` shorthand: they must compile.
    if let Err(e) = rclev_codegen::Builder::new()
        .ament_prefix(&venv)
        .ament_package("test_msgs")
        .package_dir("fixtures/type")
        .package_dir("fixtures/super")
        .package_dir("fixtures/shorthand_msgs")
        .generate()
    {
        panic!("generating test_msgs failed: {e}");
    }
}
