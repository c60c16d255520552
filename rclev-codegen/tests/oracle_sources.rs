//! REP-2016 type sources against the ones rosidl (ROS 2 Jazzy) generates: for every type of
//! every official interface package in the oracle venv that has its generated C library, the
//! sources rclev gives a type (its own, then its referenced types', each with the text and
//! encoding [`Message::source_text`] and [`Message::source_encoding`] say) are the ones that
//! library's `get_type_description_sources` returns to rcl: the same types in the same order
//! with the same encodings, and the same texts up to rosidl's known mangling.
//!
//! rosidl's generated C writes a source's text line by line, drops the last line break but
//! keeps the length of the file (so the text ends in its NUL terminator), and writes
//! non-ASCII bytes, tabs, backslashes and a line's quotes when it holds both kinds as
//! Python escapes. rclev keeps the file byte for byte, so texts are compared where the
//! mangling is only the last byte: files of plain ASCII lines ending in a line break.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use rclev_codegen::model::Message;
use rclev_codegen::{load_package_dir, Package, TypeSet};
mod common;
use common::{python, venv};
use serde_json::{json, Value};

/// The official interface packages that have rosidl's generated C library, by name.
fn packages_with_c_libraries() -> BTreeMap<String, PathBuf> {
    let lib = venv().join("lib");
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(venv().join("share")).unwrap() {
        let dir = entry.unwrap().path();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let has_interfaces = ["msg", "srv", "action"]
            .iter()
            .any(|k| dir.join(k).is_dir());
        let library = lib.join(format!("lib{name}__rosidl_generator_c.so"));
        if has_interfaces && library.is_file() {
            out.insert(name, dir);
        }
    }
    out
}

/// What `rosidl_sources.py` reports for `types`: each type's sources, or null.
fn rosidl_sources(types: &[String]) -> Value {
    let lib = venv().join("lib");
    let mut child = Command::new(python())
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rosidl_sources.py"))
        // The generated libraries load rosidl's runtime from beside them.
        .env("LD_LIBRARY_PATH", &lib)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the oracle venv's python");
    let request = json!({"lib_dir": lib, "types": types});
    child
        .stdin
        .take()
        .unwrap()
        .write_all(request.to_string().as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "rosidl_sources.py failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice::<Value>(&output.stdout).unwrap()["types"].clone()
}

/// Whether rosidl's copy of `text` differs from it only in the last byte: ASCII lines
/// without tabs, backslashes or both kinds of quote, ending in `\n`.
fn plain(text: &str) -> bool {
    text.ends_with('\n')
        && text.lines().all(|l| {
            l.bytes().all(|b| (b' '..=b'~').contains(&b) && b != b'\\')
                && !(l.contains('\'') && l.contains('"'))
        })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn sources_are_rosidls() {
    let dirs = packages_with_c_libraries();
    assert!(dirs.contains_key("test_msgs"), "{:?}", dirs.keys());
    let packages: Vec<Package> = dirs
        .values()
        .map(|dir| load_package_dir(dir).unwrap_or_else(|e| panic!("{e}")))
        .collect();
    let set = TypeSet::build(&packages.iter().collect::<Vec<_>>()).unwrap();
    let names: Vec<String> = set.types.keys().map(|t| t.to_string()).collect();
    let official = rosidl_sources(&names);

    let source = |name: &str| -> (&'static str, String) {
        let m: &Message = set.get(name).unwrap();
        let text = m.source_text.as_deref().unwrap_or_default().to_string();
        (m.source_encoding(), text)
    };
    let (mut types, mut texts) = (0, 0);
    let mut failures = Vec::new();
    for name in &names {
        let Some(theirs) = official[name].as_array() else {
            failures.push(format!("{name}: the library has no sources function"));
            continue;
        };
        types += 1;
        let d = &set.description(&set.get(name).unwrap().name).unwrap();
        let ours: Vec<&str> = std::iter::once(&d.type_description)
            .chain(&d.referenced_type_descriptions)
            .map(|i| i.type_name.as_str())
            .collect();
        let their_names: Vec<&str> = theirs
            .iter()
            .map(|s| s["type_name"].as_str().unwrap())
            .collect();
        if ours != their_names {
            failures.push(format!("{name}: ours {ours:?}, rosidl's {their_names:?}"));
            continue;
        }
        for (s, type_name) in theirs.iter().zip(ours) {
            let (encoding, text) = source(type_name);
            if encoding != s["encoding"] {
                failures.push(format!(
                    "{name}: {type_name} is {encoding}, rosidl says {}",
                    s["encoding"]
                ));
            }
            let raw = s["raw_hex"].as_str().unwrap();
            if encoding == "implicit" || text.is_empty() {
                if !raw.is_empty() {
                    failures.push(format!("{name}: {type_name} has text in rosidl's"));
                }
            } else if plain(&text) {
                let mangled = [&text.as_bytes()[..text.len() - 1], b"\0"].concat();
                if raw != hex(&mangled) {
                    failures.push(format!("{name}: {type_name}'s text is not rosidl's"));
                }
                texts += 1;
            } else if raw.is_empty() {
                failures.push(format!("{name}: {type_name} has no text in rosidl's"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} differences:\n{}",
        failures.len(),
        failures.join("\n")
    );
    eprintln!("compared the sources of {types} types ({texts} texts)");
    assert!(types > 250 && texts > 900, "{types} types, {texts} texts");
}
