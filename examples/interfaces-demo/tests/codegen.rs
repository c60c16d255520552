//! The generator as a user meets it: `robot_msgs` found through `AMENT_PREFIX_PATH` as in a
//! sourced ROS 2 workspace, and mistakes in a definition reported as `file:line: message`.
//!
//! `AMENT_PREFIX_PATH` is process-wide and the test harness runs tests on parallel threads,
//! so every test here that runs the generator holds `ENV`.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rclev_codegen::Builder;

static ENV: Mutex<()> = Mutex::new(());

fn package_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("robot_msgs")
}

/// A fresh directory under Cargo's scratch space for integration tests.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Copies `robot_msgs/{package.xml,msg,srv,action}` to `to`.
fn copy_package(to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    std::fs::copy(package_dir().join("package.xml"), to.join("package.xml")).unwrap();
    for kind in ["msg", "srv", "action"] {
        std::fs::create_dir_all(to.join(kind)).unwrap();
        for entry in std::fs::read_dir(package_dir().join(kind)).unwrap() {
            let path = entry.unwrap().path();
            std::fs::copy(&path, to.join(kind).join(path.file_name().unwrap())).unwrap();
        }
    }
}

#[test]
fn ament_package_is_found_through_ament_prefix_path() {
    let _env = ENV.lock().unwrap_or_else(|e| e.into_inner());
    let root = scratch("ament");
    // An installed package: <prefix>/share/robot_msgs/{msg,srv,action}, behind a prefix
    // without it, as in an overlay on top of an underlay.
    let prefix = root.join("install");
    copy_package(&prefix.join("share/robot_msgs"));
    let empty_prefix = root.join("underlay");
    std::fs::create_dir_all(empty_prefix.join("share")).unwrap();
    let output = root.join("rclev_interfaces.rs");

    let saved = std::env::var_os("AMENT_PREFIX_PATH");
    std::env::set_var(
        "AMENT_PREFIX_PATH",
        std::env::join_paths([&empty_prefix, &prefix]).unwrap(),
    );
    let from_ament = Builder::new()
        .ament_package("robot_msgs")
        .output(&output)
        .generate();
    // A package no prefix holds is an error that says where it looked.
    let missing = Builder::new()
        .ament_package("no_such_msgs")
        .generate_string();
    match saved {
        Some(v) => std::env::set_var("AMENT_PREFIX_PATH", v),
        None => std::env::remove_var("AMENT_PREFIX_PATH"),
    }

    let from_ament = from_ament.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(from_ament.packages, ["robot_msgs"]);
    assert!(from_ament
        .sources
        .iter()
        .all(|s| s.starts_with(prefix.join("share/robot_msgs"))));
    let written = std::fs::read_to_string(&output).unwrap();
    assert!(written.contains("pub mod robot_msgs {"));
    let from_dir = Builder::new()
        .package_dir(package_dir())
        .generate_string()
        .unwrap();
    assert_eq!(written, from_dir.code, "the same package, the same code");
    // And the code this crate was built with (build.rs) is the same too.
    let built =
        std::fs::read_to_string(Path::new(env!("OUT_DIR")).join(rclev_codegen::OUTPUT_FILE))
            .unwrap();
    assert_eq!(written, built);

    let e = missing.unwrap_err();
    assert!(
        e.to_string().contains("no_such_msgs") && e.message.contains("AMENT_PREFIX_PATH"),
        "{e}"
    );
}

#[test]
fn definition_errors_name_file_and_line() {
    let _env = ENV.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch("broken").join("robot_msgs");
    copy_package(&dir);
    let cell = dir.join("msg/Cell.msg");
    let text = std::fs::read_to_string(&cell).unwrap();
    // Line 4 (`float32 voltage`) now refers to a type nobody defines.
    assert_eq!(text.lines().nth(3), Some("float32 voltage  # volts"));
    std::fs::write(&cell, text.replace("float32 voltage", "Volts voltage")).unwrap();

    let e = Builder::new()
        .package_dir(&dir)
        .search_ament_prefix_path(false)
        .generate_string()
        .unwrap_err();
    assert_eq!((e.file.as_path(), e.line), (cell.as_path(), Some(4)));
    let shown = e.to_string();
    assert!(
        shown.starts_with(&format!("{}:4: ", cell.display())),
        "{shown}"
    );
    assert!(shown.contains("Volts"), "{shown}");
}

/// The docs show defaults and constants as Rust would write them (`false`, `"rover"`,
/// `[0.1, …]`), not as the type description's Python text (`False`, `rover`, `(0.1, …)`).
#[test]
fn docs_show_values_in_rust_notation() {
    let code = std::fs::read_to_string(Path::new(env!("OUT_DIR")).join(rclev_codegen::OUTPUT_FILE))
        .unwrap();
    for doc in [
        r#"" `bool`, default `false`""#,
        r#"" `string`, default `\"rover\"`""#,
        r#"" `float64[4]`, default `[0.1, 0.1, 0.125, 0.125]`""#,
        r#"" `FRAME = \"base_link\"`""#,
        r#"" `ERROR_REFUSED = -1`""#,
    ] {
        assert!(code.contains(doc), "no {doc} in the generated docs");
    }
}
