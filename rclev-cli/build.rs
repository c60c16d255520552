//! With the `dds` feature, the binary finds the Fast DDS libraries rclev-dds linked at run
//! time: rclev-dds (`links = "fastrtps"`) hands their directories over as DEP_FASTRTPS_LIBDIRS.
//!
//! `rclev interface show` prints the interface files rclev's types are generated from
//! (`rclev-codegen/interfaces`): they are embedded here as a table of `(pkg/kind/Name, text)`.

use std::path::Path;

fn main() {
    println!("cargo:rerun-if-env-changed=DEP_FASTRTPS_LIBDIRS");
    // The rcl benchmark variant looks for the ROS 2 venv where it was at build time too.
    println!("cargo:rerun-if-env-changed=RCLEV_ORACLE_VENV");
    if let Ok(dirs) = std::env::var("DEP_FASTRTPS_LIBDIRS") {
        for dir in dirs.split(':').filter(|d| !d.is_empty()) {
            // RPATH rather than RUNPATH: it also serves libfastrtps's own dependencies.
            println!("cargo:rustc-link-arg=-Wl,--disable-new-dtags,-rpath,{dir}");
        }
    }
    embed_interface_sources();
}

fn embed_interface_sources() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../rclev-codegen/interfaces");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut entries = Vec::new();
    let mut packages: Vec<_> = std::fs::read_dir(&root)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    packages.sort();
    for package in packages.iter().filter(|p| p.is_dir()) {
        for kind in ["msg", "srv", "action"] {
            let Ok(files) = std::fs::read_dir(package.join(kind)) else {
                continue;
            };
            let mut files: Vec<_> = files.flatten().map(|e| e.path()).collect();
            files.sort();
            for file in files {
                let (Some(stem), Some(ext)) = (file.file_stem(), file.extension()) else {
                    continue;
                };
                if ext != kind {
                    continue;
                }
                let name = format!(
                    "{}/{kind}/{}",
                    package.file_name().unwrap().to_string_lossy(),
                    stem.to_string_lossy()
                );
                let path = file.canonicalize().unwrap();
                entries.push(format!(
                    "    ({name:?}, include_str!({:?})),\n",
                    path.display().to_string()
                ));
            }
        }
    }
    let out = Path::new(&std::env::var("OUT_DIR").unwrap()).join("interface_sources.rs");
    let text = format!(
        "/// Every interface file rclev knows, by `pkg/kind/Name`, sorted.\npub const SOURCES: &[(&str, &str)] = &[\n{}];\n",
        entries.concat()
    );
    std::fs::write(out, text).unwrap();
}
