//! Checks a crate's layering from its source text, for the workspace's `tests/layers.rs`.
//!
//! A crate declares its layers as path prefixes below `src/` (`("timer/", 4)`): a folder is
//! given one layer as a whole, and a file at the top of `src/` (a leaf module, `lib.rs`) has
//! one of its own. [`check`] then reads every source file and reports
//!
//! - **upward imports**: a file naming a module of a higher layer;
//! - **file cycles**: files that import each other, directly or around a loop, in any layer;
//! - **split folders**: a layer given to a single file inside a folder (a folder is one layer).
//!
//! An import is any path a file names through `crate::`, `super::` or `self::` outside
//! comments and `#[cfg(test)]` modules (tests may reach anywhere), with `use` trees
//! (`crate::a::{b::C, d}`) expanded to each path; the file it names is the longest prefix of
//! the path that is a file (`a/b.rs`) or a folder's `mod.rs`. A `mod.rs` declaring and
//! re-exporting its own submodules by their bare names (`mod x; pub use x::Y;`) is the folder's
//! structure, not an import. Paths through `crate::Item` resolve through the crate root's
//! `pub use` lines to the file defining the item.

#![warn(missing_docs)]

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// A crate's layering as declared by its test: layer numbers by path prefix below `src/`.
pub struct Layers<'a> {
    /// The crate's `src/` directory.
    pub src: PathBuf,
    /// `(prefix, layer)`: a folder (`"timer/"`) or a top-level file (`"error.rs"`).
    pub layers: &'a [(&'a str, u8)],
    /// Files (paths below `src/`) left out of the check: test-only support modules, binaries.
    pub skip: &'a [&'a str],
}

/// What [`check`] found.
#[derive(Debug, Default)]
pub struct Report {
    /// Every checked file and the files it imports.
    pub imports: BTreeMap<String, BTreeSet<String>>,
    /// `(file, imported file)` where the imported file's layer is higher.
    pub upward: Vec<(String, String, u8, u8)>,
    /// Sets of files that import each other (each a strongly connected component).
    pub cycles: Vec<Vec<String>>,
    /// Layer entries that name a file inside a folder.
    pub split_folders: Vec<String>,
    /// Files no entry gives a layer.
    pub unlayered: Vec<String>,
}

impl Report {
    /// Whether nothing is wrong.
    pub fn is_clean(&self) -> bool {
        self.upward.is_empty()
            && self.cycles.is_empty()
            && self.split_folders.is_empty()
            && self.unlayered.is_empty()
    }

    /// Panics with a readable account of everything wrong.
    pub fn assert_clean(&self) {
        if self.is_clean() {
            return;
        }
        let mut msg = String::new();
        for f in &self.unlayered {
            let _ = writeln!(
                msg,
                "no layer for {f}: add its folder (or the file) to the layers"
            );
        }
        for f in &self.split_folders {
            let _ = writeln!(
                msg,
                "{f} is a file inside a folder: a folder is one layer, give the folder a layer"
            );
        }
        for (a, b, la, lb) in &self.upward {
            let _ = writeln!(msg, "upward import: {a} (layer {la}) -> {b} (layer {lb})");
        }
        for c in &self.cycles {
            let _ = writeln!(msg, "file cycle: {}", self.describe_cycle(c));
        }
        panic!("layering broken:\n{msg}");
    }

    /// The imports among a cycle's files, as `a -> b` lines joined.
    fn describe_cycle(&self, files: &[String]) -> String {
        let set: BTreeSet<&String> = files.iter().collect();
        let mut parts = Vec::new();
        for f in files {
            for t in &self.imports[f] {
                if set.contains(t) {
                    parts.push(format!("{f} -> {t}"));
                }
            }
        }
        parts.join(", ")
    }
}

/// Reads the crate at `layers.src` and reports its layering.
pub fn check(layers: &Layers<'_>) -> Report {
    let src = &layers.src;
    let mut files = Vec::new();
    collect(src, src, layers.skip, &mut files);
    files.sort();
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap_or_default();
    let mut report = Report::default();
    for (prefix, _) in layers.layers {
        if !prefix.ends_with('/') && prefix.contains('/') {
            report.split_folders.push(prefix.to_string());
        }
    }
    for file in &files {
        let text = std::fs::read_to_string(src.join(file)).expect("readable source");
        let found = imports(src, &lib, file, &strip(&text));
        report.imports.insert(file.clone(), found);
    }
    for (file, targets) in &report.imports {
        let Some(from) = layer_of(layers.layers, file) else {
            report.unlayered.push(file.clone());
            continue;
        };
        for t in targets {
            if let Some(to) = layer_of(layers.layers, t) {
                if to > from {
                    report.upward.push((file.clone(), t.clone(), from, to));
                }
            }
        }
    }
    report.cycles = strongly_connected(&report.imports)
        .into_iter()
        .filter(|c| c.len() > 1)
        .collect();
    report
}

fn layer_of(layers: &[(&str, u8)], file: &str) -> Option<u8> {
    layers
        .iter()
        .filter(|(prefix, _)| file.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, layer)| *layer)
}

fn collect(root: &Path, dir: &Path, skip: &[&str], out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).expect("readable src") {
        let path = entry.expect("readable entry").path();
        let rel = path
            .strip_prefix(root)
            .expect("below src")
            .to_string_lossy()
            .replace('\\', "/");
        if skip
            .iter()
            .any(|s| rel == *s || rel.starts_with(&format!("{s}/")))
        {
            continue;
        }
        if path.is_dir() {
            collect(root, &path, skip, out);
        } else if rel.ends_with(".rs") {
            out.push(rel);
        }
    }
}

/// The code without comments and `#[cfg(test)]` / `#[cfg(all(test …))]` modules.
fn strip(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let attr = line.trim_start();
        if attr.starts_with("#[cfg(test)]") || attr.starts_with("#[cfg(all(test") {
            match lines.peek() {
                Some(next)
                    if next.trim_start().starts_with("mod ") && next.trim_end().ends_with(';') =>
                {
                    lines.next();
                    continue;
                }
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
        let code = match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        };
        out.push_str(code);
        out.push('\n');
    }
    out
}

/// The file a module path (`["timer", "heap"]`) lives in: its longest prefix that is a file
/// or a folder with `mod.rs` (or `lib.rs` for the empty path).
fn file_of(src: &Path, module: &[String]) -> Option<String> {
    for n in (1..=module.len()).rev() {
        let joined = module[..n].join("/");
        if src.join(format!("{joined}.rs")).is_file() {
            return Some(format!("{joined}.rs"));
        }
        if src.join(&joined).join("mod.rs").is_file() {
            return Some(format!("{joined}/mod.rs"));
        }
    }
    None
}

/// The file defining a root item (`crate::EntityHandle`): a `pub use` of lib.rs naming it, or lib.rs
/// itself (its macros and items).
fn root_item(src: &Path, lib: &str, name: &str) -> Option<String> {
    for statement in lib.split(';') {
        let Some(at) = statement.find("pub use ") else {
            continue;
        };
        for path in use_paths(&statement[at + "pub use ".len()..]) {
            if path.last().map(String::as_str) == Some(name) && path.len() > 1 {
                let module: Vec<String> = path[..path.len() - 1]
                    .iter()
                    .filter(|s| s.as_str() != "crate" && s.as_str() != "self")
                    .cloned()
                    .collect();
                return file_of(src, &module);
            }
        }
    }
    Some("lib.rs".into())
}

/// The paths of a use tree (`a::{b::C, d::{E, F}}` → `a::b::C`, `a::d::E`, `a::d::F`), up
/// to the end of the tree; `as` renames are dropped.
fn use_paths(tree: &str) -> Vec<Vec<String>> {
    fn walk(prefix: &[String], tree: &str, out: &mut Vec<Vec<String>>) {
        let tree = tree.trim();
        let head_end = tree.find('{').unwrap_or(tree.len());
        let head: Vec<String> = tree[..head_end]
            .split("::")
            .map(|s| s.split_whitespace().next().unwrap_or("").to_string())
            .filter(|s| !s.is_empty())
            .collect();
        let mut path = prefix.to_vec();
        path.extend(head);
        if head_end == tree.len() {
            out.push(path);
            return;
        }
        // The braces' contents, split at top-level commas.
        let inner = &tree[head_end + 1..];
        let mut depth = 0;
        let mut start = 0;
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    walk(&path, &inner[start..i], out);
                    return;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    walk(&path, &inner[start..i], out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        walk(&path, &inner[start..], out);
    }
    let mut out = Vec::new();
    walk(&[], tree, &mut out);
    out.retain(|p| !p.is_empty() && p.last().map(String::as_str) != Some("self"));
    out
}

/// The text of the path (or use tree) starting at `at`: identifiers, `::`, and a balanced
/// brace group.
fn path_text(text: &str, at: usize) -> &str {
    let bytes = text.as_bytes();
    let mut i = at;
    let mut depth = 0usize;
    while i < bytes.len() {
        let c = bytes[i];
        match c {
            b'{' => depth += 1,
            b'}' if depth == 0 => break,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    i += 1;
                    break;
                }
            }
            b':' => {}
            _ if c.is_ascii_alphanumeric() || c == b'_' => {}
            _ if depth > 0 => {}
            _ => break,
        }
        i += 1;
    }
    &text[at..i]
}

/// The files `file` imports.
fn imports(src: &Path, lib: &str, file: &str, text: &str) -> BTreeSet<String> {
    let mut own: Vec<String> = file
        .trim_end_matches(".rs")
        .split('/')
        .map(String::from)
        .collect();
    // The module's own path: `a/mod.rs` and `a.rs` are module `a`; lib.rs is the root.
    if own.last().map(String::as_str) == Some("mod") || file == "lib.rs" {
        own.pop();
    }
    let bytes = text.as_bytes();
    let mut out = BTreeSet::new();
    for keyword in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(found) = text[from..].find(keyword) {
            let start = from + found;
            from = start + keyword.len();
            if start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_') {
                continue;
            }
            // `super::super::x` and `self::super::x` are read from the first keyword.
            if start >= 2 && &text[start - 2..start] == "::" {
                continue;
            }
            let mut base = own.clone();
            let mut rest = &text[from..];
            match keyword {
                "crate::" => base.clear(),
                "super::" => {
                    base.pop();
                    while let Some(r) = rest.strip_prefix("super::") {
                        base.pop();
                        rest = r;
                    }
                }
                _ => {}
            }
            let rest_at = text.len() - rest.len();
            for path in use_paths(path_text(text, rest_at)) {
                let mut module = base.clone();
                let mut item = None;
                for seg in &path {
                    if seg.chars().next().is_some_and(|c| c.is_ascii_lowercase()) {
                        module.push(seg.clone());
                    } else {
                        item = Some(seg.clone());
                        break;
                    }
                }
                let target = if module.is_empty() {
                    item.and_then(|i| root_item(src, lib, &i))
                } else {
                    file_of(src, &module)
                };
                if let Some(t) = target {
                    if t != file {
                        out.insert(t);
                    }
                }
            }
        }
    }
    out
}

/// Tarjan's strongly connected components of the import graph.
fn strongly_connected(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'g> {
        graph: &'g BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on_stack: BTreeSet<&'g str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'g>(s: &mut State<'g>, v: &'g str) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.graph.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.graph.contains_key(w) {
                continue;
            }
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                comp.push(w.to_string());
                if w == v {
                    break;
                }
            }
            comp.sort();
            s.out.push(comp);
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(p: &[&str]) -> Vec<String> {
        p.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn use_trees_expand_to_each_path() {
        assert_eq!(
            use_paths("a::{b::C, d::{E, F as G}, self}"),
            vec![
                strings(&["a", "b", "C"]),
                strings(&["a", "d", "E"]),
                strings(&["a", "d", "F"])
            ]
        );
        assert_eq!(use_paths("x::Y"), vec![strings(&["x", "Y"])]);
    }

    #[test]
    fn a_path_ends_at_its_tree() {
        let t = "use crate::a::{b, c::D}; let x = 1;";
        assert_eq!(path_text(t, 11), "a::{b, c::D}");
        assert_eq!(path_text("crate::a::b::C::new()", 7), "a::b::C::new");
    }

    #[test]
    fn a_two_file_cycle_is_one_component() {
        let mut g = BTreeMap::new();
        g.insert("a.rs".to_string(), BTreeSet::from(["b.rs".to_string()]));
        g.insert("b.rs".to_string(), BTreeSet::from(["a.rs".to_string()]));
        g.insert("c.rs".to_string(), BTreeSet::from(["a.rs".to_string()]));
        let comps: Vec<_> = strongly_connected(&g)
            .into_iter()
            .filter(|c| c.len() > 1)
            .collect();
        assert_eq!(comps, vec![strings(&["a.rs", "b.rs"])]);
    }

    /// The checker on a small crate written to a temporary folder: an upward import, a cycle
    /// and a split folder are each found.
    #[test]
    fn a_broken_crate_is_reported() {
        let dir = std::env::temp_dir().join(format!("rclev-layers-{}", std::process::id()));
        let src = dir.join("src");
        std::fs::create_dir_all(src.join("low")).unwrap();
        std::fs::write(
            src.join("lib.rs"),
            "mod low; mod high;\npub use high::Top;\n",
        )
        .unwrap();
        std::fs::write(src.join("low/mod.rs"), "mod a; mod b;\n").unwrap();
        std::fs::write(src.join("low/a.rs"), "use super::b::B; use crate::Top;\n").unwrap();
        std::fs::write(
            src.join("low/b.rs"),
            "pub struct B(super::a::A);\n#[cfg(test)]\nmod tests {\n    use crate::high::X;\n}\n",
        )
        .unwrap();
        std::fs::write(src.join("high.rs"), "pub struct Top(crate::low::b::B);\n").unwrap();
        let report = check(&Layers {
            src: src.clone(),
            layers: &[("low/", 0), ("high.rs", 1), ("lib.rs", 2), ("low/b.rs", 0)],
            skip: &[],
        });
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(
            report.upward,
            vec![("low/a.rs".to_string(), "high.rs".to_string(), 0, 1)]
        );
        assert_eq!(
            report.cycles,
            vec![strings(&["high.rs", "low/a.rs", "low/b.rs"])]
        );
        assert_eq!(report.split_folders, strings(&["low/b.rs"]));
        assert!(!report.is_clean());
    }
}
