//! What the oracle tests share: where the oracle venv is, and how descriptions are compared
//! with the official JSON.

#![allow(dead_code)] // each test file uses a part

use std::path::{Path, PathBuf};

use rclev_codegen::describe::FieldDescription;
use serde_json::Value;

/// The oracle venv (`.ci/oracles`): `$RCLEV_ORACLE_VENV`, or `<workspace>/target/oracle-venv`.
pub fn venv() -> PathBuf {
    let path = std::env::var_os("RCLEV_ORACLE_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/oracle-venv"));
    assert!(
        path.join("share").is_dir() && path.join("bin/python").exists(),
        "the ROS 2 oracle venv is missing at {}: run `bash .ci/oracles` first",
        path.display()
    );
    path
}

/// The venv's interpreter.
pub fn python() -> PathBuf {
    venv().join("bin/python")
}

/// The `.json` type descriptions under `dir/{msg,srv,action}`, sorted.
pub fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for kind in ["msg", "srv", "action"] {
        let Ok(entries) = std::fs::read_dir(dir.join(kind)) else {
            continue;
        };
        for e in entries {
            let p = e.unwrap().path();
            if p.extension().and_then(|e| e.to_str()) == Some("json") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Our fields, one comparable line each.
pub fn field_summary(fields: &[FieldDescription]) -> Vec<String> {
    fields
        .iter()
        .map(|f| {
            summary_line(
                &f.name,
                f.type_id.into(),
                f.capacity,
                f.string_capacity,
                &f.nested_type_name,
                &f.default_value,
            )
        })
        .collect()
}

/// The official JSON's fields, in the same form.
pub fn official_field_summary(fields: &Value) -> Vec<String> {
    fields
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let t = &f["type"];
            summary_line(
                f["name"].as_str().unwrap(),
                t["type_id"].as_u64().unwrap(),
                t["capacity"].as_u64().unwrap(),
                t["string_capacity"].as_u64().unwrap(),
                t["nested_type_name"].as_str().unwrap(),
                f["default_value"].as_str().unwrap(),
            )
        })
        .collect()
}

fn summary_line(
    name: &str,
    type_id: u64,
    capacity: u64,
    string_capacity: u64,
    nested: &str,
    default: &str,
) -> String {
    format!("{name} id={type_id} cap={capacity} scap={string_capacity} nested={nested} default={default:?}")
}
