//! Type hashes and descriptions against the official ROS 2 Jazzy ones.
//!
//! The oracle is the set of `ros-jazzy-*` interface wheels from PyPI that `.ci/oracles`
//! installs into a venv: each ships `share/<pkg>/{msg,srv,action}/*.json` with the type
//! descriptions and RIHS01 hashes rosidl computed.

use std::collections::BTreeMap;
use std::path::PathBuf;

use rclev_codegen::{bundled_packages, load_package_dir, Package, TypeSet};
mod common;
use common::{field_summary, json_files, official_field_summary, venv};
use serde_json::Value;

/// Every interface package the venv has, by name.
fn official_packages() -> BTreeMap<String, PathBuf> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(venv().join("share")).unwrap() {
        let dir = entry.unwrap().path();
        if ["msg", "srv", "action"]
            .iter()
            .any(|k| dir.join(k).is_dir())
        {
            out.insert(dir.file_name().unwrap().to_string_lossy().into_owned(), dir);
        }
    }
    out
}

/// Compares every hash and description in the JSON files of `packages` with `set`.
/// Returns how many hashes were compared.
fn compare(set: &TypeSet, packages: &[&str], dirs: &BTreeMap<String, PathBuf>) -> usize {
    let mut compared = 0;
    let mut failures = Vec::new();
    for name in packages {
        let files = json_files(&dirs[*name]);
        assert!(!files.is_empty(), "{name}: no JSON files in the oracle");
        for file in files {
            let json: Value =
                serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
            for h in json["type_hashes"].as_array().unwrap() {
                let type_name = h["type_name"].as_str().unwrap();
                let Some(m) = set.get(type_name) else {
                    failures.push(format!("{type_name}: not generated"));
                    continue;
                };
                let ours = set.hash_string(&m.name).unwrap();
                if ours != h["hash_string"].as_str().unwrap() {
                    failures.push(format!(
                        "{type_name}: ours {ours}, official {}",
                        h["hash_string"]
                    ));
                }
                compared += 1;
            }
            let msg = &json["type_description_msg"];
            let mut all = vec![&msg["type_description"]];
            all.extend(msg["referenced_type_descriptions"].as_array().unwrap());
            for d in all {
                let type_name = d["type_name"].as_str().unwrap();
                let Some(m) = set.get(type_name) else {
                    continue;
                };
                let ours = &set.description(&m.name).unwrap().type_description;
                let (a, b) = (
                    field_summary(&ours.fields),
                    official_field_summary(&d["fields"]),
                );
                if a != b {
                    failures.push(format!(
                        "{type_name} description:\n  ours     {a:?}\n  official {b:?}"
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
    compared
}

/// Every type rclev ships has the official hash, and the official description (with
/// default values); every official file of a shipped package was compared.
#[test]
fn shipped_types_match_the_official_hashes() {
    let bundled = bundled_packages().unwrap();
    let refs: Vec<&Package> = bundled.iter().collect();
    let set = TypeSet::build(&refs).unwrap();
    let dirs = official_packages();
    let names: Vec<&str> = bundled
        .iter()
        .map(|p| p.name.as_str())
        .filter(|n| dirs.contains_key(*n))
        .collect();
    // example_interfaces and tf2_msgs have no wheels; tests/oracle_rosidl.rs covers them.
    let missing: Vec<&str> = bundled
        .iter()
        .map(|p| p.name.as_str())
        .filter(|n| !dirs.contains_key(*n))
        .collect();
    assert_eq!(missing, ["example_interfaces", "tf2_msgs"]);
    // Each shipped definition has its official JSON.
    for p in &bundled {
        let Some(dir) = dirs.get(&p.name) else {
            continue;
        };
        for (kind, names) in [
            (
                "msg",
                p.messages.iter().map(|m| &m.name.name).collect::<Vec<_>>(),
            ),
            ("srv", p.services.iter().map(|s| &s.name.name).collect()),
            ("action", p.actions.iter().map(|a| &a.name.name).collect()),
        ] {
            for n in names {
                assert!(
                    dir.join(kind).join(format!("{n}.json")).is_file(),
                    "{}/{kind}/{n}: no official JSON",
                    p.name
                );
            }
        }
        let official_count = ["msg", "srv", "action"]
            .iter()
            .filter_map(|k| std::fs::read_dir(dir.join(k)).ok())
            .flat_map(|rd| rd.filter_map(|e| e.ok()))
            .filter(|e| e.path().extension().and_then(|x| x.to_str()) == Some("json"))
            .count();
        assert_eq!(
            official_count,
            p.messages.len() + p.services.len() + p.actions.len(),
            "{}: the official package has types rclev does not ship",
            p.name
        );
    }
    let compared = compare(&set, &names, &dirs);
    eprintln!("compared {compared} hashes across {} packages", names.len());
    assert!(compared > 300, "only {compared} hashes compared");
}

/// Every definition in every official interface package in the venv (test_msgs,
/// test_interface_files, shape_msgs, … too) parses, resolves and hashes as rosidl does.
#[test]
fn every_official_definition_parses_and_hashes_alike() {
    let dirs = official_packages();
    let bundled = bundled_packages().unwrap();
    let bundled_names: Vec<String> = bundled.iter().map(|p| p.name.clone()).collect();
    let mut extra = Vec::new();
    for (name, dir) in &dirs {
        if bundled_names.contains(name) {
            // The official text parses too (comments and all).
            load_package_dir(dir).unwrap_or_else(|e| panic!("{e}"));
            continue;
        }
        extra.push(load_package_dir(dir).unwrap_or_else(|e| panic!("{e}")));
    }
    let mut refs: Vec<&Package> = bundled.iter().collect();
    refs.extend(extra.iter());
    let set = TypeSet::build(&refs).unwrap_or_else(|e| panic!("{e}"));
    // test_interface_files ships bare definitions, without JSON: parsing them is its test.
    let names: Vec<&str> = extra
        .iter()
        .map(|p| p.name.as_str())
        .filter(|n| !json_files(&dirs[*n]).is_empty())
        .collect();
    assert!(names.contains(&"test_msgs"), "{names:?}");
    let compared = compare(&set, &names, &dirs);
    eprintln!("compared {compared} hashes across {names:?}");
}
