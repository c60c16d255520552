//! Builds the C++ shim (cpp/shim.cc) with cxx and links eProsima Fast DDS.
//!
//! Which Fast DDS, in this order (docs/dds.md says why):
//! 1. `FASTDDS_PREFIX`: a prefix with `include/fastdds` and `lib/libfastrtps.so`;
//! 2. the user's ROS 2 installation: the first `AMENT_PREFIX_PATH` entry that has Fast DDS,
//!    else `/opt/ros/<distro>` (the newest distro found);
//! 3. the PyPI wheels of ROS 2 Jazzy (`ros-fastrtps` 2.14.5) in rclev's venv,
//!    `$RCLEV_ORACLE_VENV` or `<workspace>/target/oracle-venv`, which `bash .ci/oracles`
//!    installs.
//!
//! Where the libraries are at run time (docs/deploying.md, "Programs that use rclev-dds"):
//! - this crate's own examples, tests and benches get the library directories as their run path
//!   (DT_RPATH, so that libfastrtps's own vendored dependencies resolve too);
//! - other crates' binaries: `cargo:rustc-link-arg` does not reach dependents, so the libraries
//!   the binaries load (libfastrtps, libfastcdr and the non-system libraries they need, found
//!   by their DT_NEEDED entries) are symlinked into `$OUT_DIR/fastdds-lib`, the one directory
//!   given to the linker: cargo puts link-search directories that lie inside its target
//!   directory on `LD_LIBRARY_PATH` for `cargo run`, `cargo test` and build scripts, so
//!   `cargo run` works in any crate that depends on this one;
//! - binaries run without cargo (`cargo install`, a copy): dependents read
//!   `DEP_FASTRTPS_RPATH_ARG`, a linker argument putting the library directories on the run
//!   path (`println!("cargo:rustc-link-arg={}", std::env::var("DEP_FASTRTPS_RPATH_ARG")?)` in
//!   their build.rs), or `DEP_FASTRTPS_LIBDIRS`, the directories themselves.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use object::read::elf::FileHeader;
use object::{elf, Endianness, FileKind};

fn has_fastdds(prefix: &Path) -> bool {
    prefix
        .join("include/fastdds/dds/domain/DomainParticipant.hpp")
        .is_file()
        && (prefix.join("lib/libfastrtps.so").exists()
            || prefix.join("lib/x86_64-linux-gnu/libfastrtps.so").exists())
}

fn find_prefix() -> Result<(PathBuf, &'static str), String> {
    if let Some(p) = std::env::var_os("FASTDDS_PREFIX") {
        let p = PathBuf::from(p);
        return if has_fastdds(&p) {
            Ok((p, "FASTDDS_PREFIX"))
        } else {
            Err(format!(
                "FASTDDS_PREFIX={} has no include/fastdds and lib/libfastrtps.so",
                p.display()
            ))
        };
    }
    if let Some(paths) = std::env::var_os("AMENT_PREFIX_PATH") {
        if let Some(p) = std::env::split_paths(&paths).find(|p| has_fastdds(p)) {
            return Ok((p, "AMENT_PREFIX_PATH"));
        }
    }
    if let Ok(entries) = std::fs::read_dir("/opt/ros") {
        let mut distros: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        distros.sort();
        if let Some(p) = distros.into_iter().rev().find(|p| has_fastdds(p)) {
            return Ok((p, "/opt/ros"));
        }
    }
    let venv = std::env::var_os("RCLEV_ORACLE_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap())
                .join("../target/oracle-venv")
        });
    if has_fastdds(&venv) {
        return Ok((venv, "the ROS 2 Jazzy wheels in rclev's venv"));
    }
    Err(format!(
        "no Fast DDS found: set FASTDDS_PREFIX, source a ROS 2 installation (AMENT_PREFIX_PATH), \
         or run `bash .ci/oracles` in the rclev repository to install the ROS 2 Jazzy wheels \
         (Fast DDS 2.14.5 from PyPI) into {}",
        venv.display()
    ))
}

/// The SONAME and the DT_NEEDED entries of an ELF shared library (32- or 64-bit, either byte
/// order, read from its `SHT_DYNAMIC` section); `None` for anything else (e.g. a linker script
/// named `.so`).
fn elf_dynamic(path: &Path) -> Option<(Option<String>, Vec<String>)> {
    fn read<Elf: FileHeader<Endian = Endianness>>(
        data: &[u8],
    ) -> Option<(Option<String>, Vec<String>)> {
        let header = Elf::parse(data).ok()?;
        let endian = header.endian().ok()?;
        let sections = header.sections(endian, data).ok()?;
        let table = sections.dynamic_table(endian, data).ok()?;
        if table.is_empty() {
            return None;
        }
        let (mut soname, mut needed) = (None, Vec::new());
        for entry in &table {
            let string = || {
                let bytes = table.string(entry).ok()?;
                String::from_utf8(bytes.to_vec()).ok()
            };
            match entry.tag {
                elf::DT_NEEDED => needed.push(string()?),
                elf::DT_SONAME => soname = Some(string()?),
                _ => {}
            }
        }
        Some((soname, needed))
    }
    let data = std::fs::read(path).ok()?;
    match FileKind::parse(&*data).ok()? {
        FileKind::Elf32 => read::<elf::FileHeader32<Endianness>>(&data),
        FileKind::Elf64 => read::<elf::FileHeader64<Endianness>>(&data),
        _ => None,
    }
}

/// Makes `dir` a directory of symlinks to what a binary linking `-lfastrtps -lfastcdr` loads
/// from `lib_dirs`: the two link names, their SONAMEs, and the closure of their DT_NEEDED
/// entries that `lib_dirs` hold (the rest are the system's). `Err` with what went wrong.
fn stage_runtime_libs(lib_dirs: &[PathBuf], dir: &Path) -> Result<(), String> {
    let find = |name: &str| lib_dirs.iter().map(|d| d.join(name)).find(|p| p.exists());
    // Afresh each time: a previous run may have linked another Fast DDS.
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut staged = BTreeSet::new();
    let mut stage = |name: &str, target: &Path| -> Result<(), String> {
        if staged.insert(name.to_string()) {
            std::os::unix::fs::symlink(target, dir.join(name))
                .map_err(|e| format!("symlink {}: {e}", dir.join(name).display()))?;
        }
        Ok(())
    };
    let mut queue = Vec::new();
    for link_name in ["libfastrtps.so", "libfastcdr.so"] {
        let path = find(link_name).ok_or_else(|| format!("no {link_name} in {lib_dirs:?}"))?;
        stage(link_name, &path)?;
        let (soname, needed) = elf_dynamic(&path)
            .ok_or_else(|| format!("{} is not an ELF shared library", path.display()))?;
        if let Some(soname) = soname {
            stage(&soname, &path)?;
        }
        queue.extend(needed);
    }
    let mut seen = BTreeSet::new();
    while let Some(name) = queue.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        let Some(path) = find(&name) else {
            continue; // a system library: the loader finds it by itself
        };
        stage(&name, &path)?;
        let (_, needed) = elf_dynamic(&path)
            .ok_or_else(|| format!("{} is not an ELF shared library", path.display()))?;
        queue.extend(needed);
    }
    Ok(())
}

fn main() {
    for var in ["FASTDDS_PREFIX", "AMENT_PREFIX_PATH", "RCLEV_ORACLE_VENV"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    println!("cargo:rerun-if-changed=cpp/shim.h");
    println!("cargo:rerun-if-changed=cpp/shim.cc");
    println!("cargo:rerun-if-changed=src/ffi.rs");

    let (prefix, how) = find_prefix().unwrap_or_else(|e| panic!("rclev-dds: {e}"));
    let prefix = prefix.canonicalize().unwrap_or(prefix);
    println!(
        "cargo:warning=rclev-dds: Fast DDS from {how}: {}",
        prefix.display()
    );

    let mut lib_dirs = vec![prefix.join("lib")];
    let multiarch = prefix.join("lib/x86_64-linux-gnu");
    if multiarch.join("libfastrtps.so").exists() {
        lib_dirs.push(multiarch);
    }
    // The PyPI wheel vendors tinyxml2 and OpenSSL beside site-packages (auditwheel).
    if let Ok(entries) = std::fs::read_dir(prefix.join("lib")) {
        for python in entries.flatten() {
            let libs = python.path().join("site-packages/ros_fastrtps.libs");
            if libs.is_dir() {
                lib_dirs.push(libs);
            }
        }
    }

    let mut shim = cxx_build::bridge("src/ffi.rs");
    shim.file("cpp/shim.cc")
        .include(prefix.join("include"))
        .std("c++17")
        .flag_if_supported("-Wno-deprecated-declarations")
        .flag_if_supported("-Wno-unused-parameter");
    // RCLEV_DDS_SANITIZE=1: the shim (and cxx's glue) built with AddressSanitizer and
    // UndefinedBehaviorSanitizer, any finding fatal; the binaries link gcc's runtimes, which
    // must be preloaded to come first (`.ci/sanitize` does it all).
    println!("cargo:rerun-if-env-changed=RCLEV_DDS_SANITIZE");
    let sanitize = std::env::var_os("RCLEV_DDS_SANITIZE").is_some_and(|v| v == "1");
    if sanitize {
        shim.flag("-fsanitize=address,undefined")
            .flag("-fno-sanitize-recover=all")
            .flag("-fno-omit-frame-pointer")
            .flag("-g");
    }
    shim.compile("rclev_dds_shim");
    if sanitize {
        println!("cargo:rustc-link-lib=dylib=asan");
        println!("cargo:rustc-link-lib=dylib=ubsan");
    }

    // The one link-search directory, inside OUT_DIR: cargo puts it on LD_LIBRARY_PATH when it
    // runs a dependent's binaries and tests (see the top of this file). It holds only what the
    // binaries load, so dependents' links do not search a whole ROS prefix for their own -l.
    let run_dir = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("fastdds-lib");
    match stage_runtime_libs(&lib_dirs, &run_dir) {
        Ok(()) => println!("cargo:rustc-link-search=native={}", run_dir.display()),
        Err(e) => {
            println!(
                "cargo:warning=rclev-dds: {e}; `cargo run` of crates depending on rclev-dds \
                 will need LD_LIBRARY_PATH (README, \"Deploying\")"
            );
            for dir in &lib_dirs {
                println!("cargo:rustc-link-search=native={}", dir.display());
            }
        }
    }
    for dir in &lib_dirs {
        // RPATH rather than RUNPATH: it also serves libfastrtps's own dependencies.
        println!(
            "cargo:rustc-link-arg=-Wl,--disable-new-dtags,-rpath,{}",
            dir.display()
        );
        println!("cargo:rustc-link-arg=-Wl,-rpath-link,{}", dir.display());
    }
    println!("cargo:rustc-link-lib=dylib=fastrtps");
    println!("cargo:rustc-link-lib=dylib=fastcdr");
    let dirs: Vec<String> = lib_dirs.iter().map(|d| d.display().to_string()).collect();
    println!("cargo:libdirs={}", dirs.join(":"));
    // For dependents' build scripts (DEP_FASTRTPS_RPATH_ARG): one `cargo:rustc-link-arg` puts
    // the libraries on their binaries' run path, for binaries run without cargo (`cargo
    // install`, a copy on the same host). The directories, not `run_dir`: `cargo install`
    // deletes its target directory. RPATH rather than RUNPATH, as above; ld.so splits the
    // colon-separated list.
    println!(
        "cargo:rpath_arg=-Wl,--disable-new-dtags,-rpath,{}",
        dirs.join(":")
    );
    // For the tests that build C++ peers against the same Fast DDS (tests/hostile.rs).
    println!(
        "cargo:rustc-env=RCLEV_DDS_FASTDDS_INCLUDE={}",
        prefix.join("include").display()
    );
    println!(
        "cargo:rustc-env=RCLEV_DDS_FASTDDS_LIBDIRS={}",
        dirs.join(":")
    );
}
