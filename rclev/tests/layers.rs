//! The library's layering, checked: each source file imports (`crate::…`, `super::…`) only
//! from its own layer or the layers above it (lower numbers).
//!
//! | layer | files |
//! | --- | --- |
//! | 0 | `sync`, `error`, `handle`, `throttle`, and leaf data modules that import nothing: `msg/cdr`, `action/state`, `lifecycle/state`, `logging/severity` |
//! | 1 | `msg`, `interfaces`, `qos`, `parameter`, `node/names`, `logging/levels` (the process's logger levels) |
//! | 2 | `clock`, `transport`, `arguments` (`--ros-args`), `logging/console` (how records print) |
//! | 3 | executor core: `executor/{core,dispatch,direct,mailbox,worker,fence,alarm}`, `node/callback` |
//! | 4 | `timer` |
//! | 5 | `context`, `executor/mod` (the `Executor`), `executor/shared` (`ExecutorShared`), `executor/sigint` (Ctrl-C during spins) |
//! | 6 | `node`, `logging` (the node's logger, `/rosout`) |
//! | 7 | `action`, `lifecycle` (managed nodes) |
//!
//! Imports that still break the rule are listed in `KNOWN`; the list may only shrink (an entry
//! that no longer occurs fails the test until it is removed). Since issue 11 it is empty.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Layers by path below `src/`; the longest matching prefix wins.
const LAYERS: &[(&str, u8)] = &[
    ("sync.rs", 0),
    ("error.rs", 0),
    ("handle.rs", 0),
    ("throttle.rs", 0),
    ("msg/cdr.rs", 0),
    ("action/state.rs", 0),
    ("lifecycle/state.rs", 0),
    ("logging/severity.rs", 0),
    ("msg/", 1),
    ("interfaces/", 1),
    ("qos/", 1),
    ("parameter/", 1),
    ("node/names.rs", 1),
    ("logging/levels.rs", 1),
    ("arguments/", 2),
    ("logging/console.rs", 2),
    ("clock/", 2),
    ("transport/", 2),
    ("executor/core.rs", 3),
    ("executor/dispatch.rs", 3),
    ("executor/direct.rs", 3),
    ("executor/mailbox.rs", 3),
    ("executor/worker.rs", 3),
    ("executor/fence.rs", 3),
    ("executor/alarm.rs", 3),
    ("node/callback.rs", 3),
    ("timer/", 4),
    ("context.rs", 5),
    ("executor/mod.rs", 5),
    ("executor/sigint.rs", 5),
    ("executor/shared.rs", 5),
    ("node/", 6),
    ("logging/", 6),
    ("action/", 7),
    ("lifecycle/", 7),
    ("lib.rs", 8),
];

/// Imports that break the layering today: (importing file, imported file). Empty since issue
/// 11; kept so a violation that has to land first can be recorded instead of hidden.
const KNOWN: &[(&str, &str)] = &[];

fn layer_of(file: &str) -> u8 {
    LAYERS
        .iter()
        .filter(|(prefix, _)| file.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .unwrap_or_else(|| panic!("{file} has no layer: add it to LAYERS"))
        .1
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Library source files below `src/` (the CLI binary and loom-only support excluded).
fn library_files(dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let rel = path
            .strip_prefix(src())
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if path.is_dir() {
            if rel != "bin" {
                library_files(&path, out);
            }
        } else if rel.ends_with(".rs") && rel != "loom_model.rs" && !rel.ends_with("loom_tests.rs")
        {
            out.push(rel);
        }
    }
}

/// The file a module path (`executor::dispatch`, `msg`) lives in.
fn file_of(module: &[&str]) -> Option<String> {
    let root = src();
    // The longest prefix of the path that is a file or a directory with mod.rs.
    for n in (1..=module.len()).rev() {
        let joined = module[..n].join("/");
        if root.join(format!("{joined}.rs")).is_file() {
            return Some(format!("{joined}.rs"));
        }
        if root.join(&joined).join("mod.rs").is_file() {
            return Some(format!("{joined}/mod.rs"));
        }
    }
    None
}

/// Items re-exported at the crate root (`pub use module::{A, B};` in lib.rs), by the file
/// that defines them; macros defined in lib.rs count as lib.rs.
fn root_item(name: &str) -> Option<String> {
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    if lib.contains(&format!("macro_rules! {name}")) {
        return Some("lib.rs".into());
    }
    for statement in lib.split(';') {
        let Some(at) = statement.find("pub use ") else {
            continue;
        };
        let body = &statement[at + "pub use ".len()..];
        let (module, items) = match body.split_once("::{") {
            Some((module, items)) => (
                module,
                items.trim_end_matches(|c: char| c == '}' || c.is_whitespace()),
            ),
            None => match body.rsplit_once("::") {
                Some((module, item)) => (module, item),
                None => continue,
            },
        };
        if items.split(',').any(|i| i.trim() == name) {
            let path: Vec<&str> = module.trim().split("::").collect();
            return file_of(&path);
        }
    }
    None
}

/// The source code without comments and `#[cfg(test)]` modules (tests may reach anywhere).
fn without_tests(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let attr = line.trim_start();
        if attr.starts_with("#[cfg(test)]") || attr.starts_with("#[cfg(all(test") {
            match lines.peek() {
                // `mod tests;` in another file: that file is excluded on its own.
                Some(next)
                    if next.trim_start().starts_with("mod ") && next.trim_end().ends_with(';') =>
                {
                    lines.next();
                    continue;
                }
                // An inline test module: skip to its closing brace (same indentation).
                Some(next) if next.trim_start().starts_with("mod ") => {
                    let indent = &next[..next.len() - next.trim_start().len()];
                    let close = format!("{indent}}}");
                    for inner in lines.by_ref() {
                        if inner.trim_end() == close {
                            break;
                        }
                    }
                    continue;
                }
                _ => {}
            }
        }
        // Comments (docs' intra-doc links included) are not imports.
        let code = match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        };
        out.push_str(code);
        out.push('\n');
    }
    out
}

/// Every module path a file names through `crate::` or `super::`, as files.
fn imports(file: &str, text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let own_dir: Vec<&str> = {
        let mut parts: Vec<&str> = file.trim_end_matches(".rs").split('/').collect();
        if parts.last() == Some(&"mod") {
            parts.pop();
        }
        parts.pop(); // the module's parent, which `super` names
        parts
    };
    let bytes = text.as_bytes();
    // In a file at the crate root, `super::` can only come from an inline module and names
    // the file itself.
    let mut prefixes = vec![("crate::", Vec::new())];
    if !own_dir.is_empty() || file.ends_with("mod.rs") {
        prefixes.push(("super::", own_dir));
    }
    for (prefix, base) in prefixes {
        let mut from = 0;
        while let Some(at) = text[from..].find(prefix) {
            let start = from + at;
            from = start + prefix.len();
            if start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_') {
                continue;
            }
            let rest = &text[from..];
            let path: Vec<&str> = rest
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                .next()
                .unwrap_or("")
                .split("::")
                .filter(|s| !s.is_empty())
                .collect();
            let mut module: Vec<&str> = base.clone();
            for seg in &path {
                if seg.chars().next().is_some_and(|c| c.is_ascii_lowercase()) {
                    module.push(seg);
                } else {
                    break;
                }
            }
            let target = if module.is_empty() {
                path.first().and_then(|item| root_item(item))
            } else {
                file_of(&module)
            };
            match target {
                Some(t) if t != file => {
                    out.insert(t);
                }
                Some(_) => {}
                None if module.is_empty() => {
                    panic!(
                        "{file}: `{prefix}{}` names a root item this test does not know",
                        path.join("::")
                    )
                }
                None => {}
            }
        }
    }
    out
}

#[test]
fn no_module_imports_from_a_layer_below_it() {
    let mut files = Vec::new();
    library_files(&src(), &mut files);
    files.sort();
    let mut violations = BTreeSet::new();
    for file in &files {
        let text = without_tests(&std::fs::read_to_string(src().join(file)).unwrap());
        for target in imports(file, &text) {
            if layer_of(&target) > layer_of(file) {
                violations.insert((file.clone(), target));
            }
        }
    }
    let known: BTreeSet<(String, String)> = KNOWN
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    let new: Vec<_> = violations.difference(&known).collect();
    let gone: Vec<_> = known.difference(&violations).collect();
    assert!(
        new.is_empty(),
        "imports from a lower layer (file -> imported file, layers {:?}):\n{new:#?}",
        LAYERS
    );
    assert!(gone.is_empty(), "fixed, remove from KNOWN: {gone:#?}");
    println!(
        "{} known layering violations left: {:#?}",
        known.len(),
        KNOWN
    );
}
