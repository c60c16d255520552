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
//! The library directories go into the binaries' run path (DT_RPATH, so that libfastrtps's own
//! vendored dependencies resolve too) and to dependents as `DEP_FASTRTPS_LIBDIRS`.

use std::path::{Path, PathBuf};

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

    for dir in &lib_dirs {
        println!("cargo:rustc-link-search=native={}", dir.display());
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
