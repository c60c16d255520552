//! Embeds the interface definitions rclev ships (`interfaces/<pkg>/{msg,srv,action}/*`) into
//! the generator, so that user builds can hash and reference them without any file of ours
//! on disk.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("interfaces");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut entries = Vec::new();
    if root.is_dir() {
        for pkg in sorted_dirs(&root) {
            println!("cargo:rerun-if-changed={}", pkg.display());
            for kind in ["msg", "srv", "action"] {
                let dir = pkg.join(kind);
                if !dir.is_dir() {
                    continue;
                }
                println!("cargo:rerun-if-changed={}", dir.display());
                for file in sorted_files(&dir) {
                    if file.extension().and_then(|e| e.to_str()) == Some(kind) {
                        println!("cargo:rerun-if-changed={}", file.display());
                        entries.push(file);
                    }
                }
            }
        }
    }
    let mut out = String::from("/// The shipped definitions: (path below `interfaces/`, absolute path, text).\npub const BUNDLED: &[(&str, &str, &str)] = &[\n");
    for f in &entries {
        let rel = f
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let abs = f.to_string_lossy();
        writeln!(out, "    ({rel:?}, {abs:?}, include_str!({abs:?})),").unwrap();
    }
    out.push_str("];\n");
    let dest = Path::new(&std::env::var("OUT_DIR").unwrap()).join("bundled.rs");
    std::fs::write(dest, out).unwrap();
}

fn sorted_dirs(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    v.sort();
    v
}

fn sorted_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    v.sort();
    v
}
