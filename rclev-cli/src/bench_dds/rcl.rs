//! The `rcl` variant's role program: `rclev-cli/bench/rcl_pubsub.c`, compiled at run time
//! against ROS 2 Jazzy's rcl from the PyPI wheels in rclev's venv (`RCLEV_ORACLE_VENV`, or
//! `target/oracle-venv`, which `bash .ci/oracles` installs), with `cc` from the `PATH`.
//!
//! The program is cached beside the `rclev` binary (`rclev-bench-rcl/rcl_pubsub-<hash>`, the
//! hash over the source, the venv and the compiler command), so only the first run after a
//! change compiles. Without a venv or a compiler the variant is skipped, with the reason: the
//! other variants do not need it.
//!
//! Before the variant runs, [`check_sample`] compares what rmw serializes for a message with
//! rclev's own encoding of the same message: the variants must put identical bytes on the
//! wire for the comparison to be about the code that moves them.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::errors::Result;

/// The program's source, carried in the binary so that a copy of `rclev` builds it too.
const SOURCE: &str = include_str!("../../bench/rcl_pubsub.c");

/// The venv with ROS 2 Jazzy's wheels: `$RCLEV_ORACLE_VENV` (at run time, then as it was at
/// build time), else the workspace's `target/oracle-venv`.
fn venv() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("RCLEV_ORACLE_VENV").map(PathBuf::from),
        option_env!("RCLEV_ORACLE_VENV").map(PathBuf::from),
        Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/oracle-venv")),
    ];
    candidates
        .into_iter()
        .flatten()
        .find(|v| v.join("lib/librcl.so").exists() && v.join("include/rcl/rcl/rcl.h").exists())
}

/// `cc` on the `PATH`.
fn compiler() -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join("cc"))
        .find(|p| p.is_file())
}

/// The directories of `dir` whose names pass `keep`, sorted (the compiler command, and so the
/// cache key, must not depend on the order `read_dir` happens to give).
fn subdirs(dir: &Path, keep: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .filter(|e| e.path().is_dir() && keep(&e.file_name().to_string_lossy()))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// Where libpython lives and its version (`3.11`), as the venv's interpreter says. The wheels'
/// `*__rosidl_generator_py.so`, which librcl needs, refer to libpython's symbols without
/// linking it: the program must.
fn libpython(venv: &Path) -> Result<(PathBuf, String)> {
    let out = Command::new(venv.join("bin/python3"))
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_config_var('LIBDIR')); \
             print(sysconfig.get_config_var('LDVERSION'))",
        ])
        .output()
        .map_err(|e| format!("{}/bin/python3: {e}", venv.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    match (lines.next(), lines.next()) {
        (Some(dir), Some(version)) if out.status.success() => {
            Ok((PathBuf::from(dir.trim()), version.trim().to_string()))
        }
        _ => Err(format!(
            "the venv's python did not say where libpython is ({})",
            out.status
        )
        .into()),
    }
}

/// The compiler's arguments, after the source and before `-o`.
fn cc_args(venv: &Path) -> Result<Vec<String>> {
    let lib = venv.join("lib");
    let mut args: Vec<String> = ["-O2", "-std=c11", "-Wall", "-Wextra", "-pthread"]
        .map(String::from)
        .to_vec();
    // The wheels install each package's headers as include/<pkg>/<pkg>/… (ROS 2's layout
    // since Humble): one -I per package.
    for dir in subdirs(&venv.join("include"), |_| true) {
        args.push(format!("-I{}", dir.display()));
    }
    let (py_dir, py_version) = libpython(venv)?;
    // The wheels' own vendored libraries (tinyxml2, OpenSSL, lttng…), beside site-packages.
    let mut run_dirs = vec![lib.clone(), py_dir.clone()];
    for python in subdirs(&lib, |n| n.starts_with("python")) {
        run_dirs.extend(subdirs(&python.join("site-packages"), |n| {
            n.starts_with("ros_") && n.ends_with(".libs")
        }));
    }
    args.push(format!("-L{}", lib.display()));
    args.push(format!("-L{}", py_dir.display()));
    for l in [
        "rcl",
        "rmw",
        // rmw_serialize: the wheels' rmw is the interface only, their rcl links this rmw.
        "rmw_fastrtps_cpp",
        "rcutils",
        "rosidl_runtime_c",
        "std_msgs__rosidl_generator_c",
        "std_msgs__rosidl_typesupport_c",
    ] {
        args.push(format!("-l{l}"));
    }
    // Kept even where the toolchain links --as-needed: nothing in the program refers to
    // libpython, the libraries it loads do.
    args.push("-Wl,--no-as-needed".into());
    args.push(format!("-lpython{py_version}"));
    args.push("-Wl,--as-needed".into());
    args.push("-lm".into());
    // DT_RPATH, not DT_RUNPATH: it serves the libraries' own dependencies too (librcl's run
    // path points where the wheel was built, not where its libraries are now).
    args.push("-Wl,--disable-new-dtags".into());
    for dir in run_dirs {
        args.push(format!("-Wl,-rpath,{}", dir.display()));
    }
    Ok(args)
}

/// FNV-1a, 64 bits: a cache key that stays the same from one Rust release to the next.
fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in *part {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        // A separator, so that moving bytes between parts changes the key.
        h ^= 0xff;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Where compiled programs are kept: beside the running binary (in cargo's target directory
/// for a built `rclev`), else in the temporary directory.
fn cache_dir() -> PathBuf {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("rclev-bench-rcl")));
    match beside {
        Some(dir) if std::fs::create_dir_all(&dir).is_ok() => dir,
        _ => std::env::temp_dir().join("rclev-bench-rcl"),
    }
}

/// The compiled role program, and the venv's libraries it runs with.
#[derive(Clone, Debug)]
pub struct Program {
    /// The executable.
    pub path: PathBuf,
    /// The venv's `lib`: where rosidl's run-time dispatch finds the type support libraries.
    lib_dir: PathBuf,
}

/// The compiled role program, built now if no cached one matches. `Err` says why the variant
/// cannot run (no venv, no compiler, a failed build).
pub fn program() -> Result<Program> {
    let venv = venv().ok_or(
        "no ROS 2 Jazzy venv with rcl (set RCLEV_ORACLE_VENV, or run `bash .ci/oracles`, which \
         installs target/oracle-venv)",
    )?;
    let cc = compiler().ok_or("no C compiler (`cc`) on the PATH")?;
    let args = cc_args(&venv)?;
    let key = fnv1a(&[
        SOURCE.as_bytes(),
        cc.to_string_lossy().as_bytes(),
        args.join("\n").as_bytes(),
    ]);
    let dir = cache_dir();
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let program = Program {
        path: dir.join(format!("rcl_pubsub-{key:016x}")),
        lib_dir: venv.join("lib"),
    };
    if program.path.is_file() {
        return Ok(program);
    }
    // Built under names of this run's own, then renamed into place: concurrent runs (tests)
    // never see or run a half-written program. Not the pid alone: the benchmark runs in a PID
    // namespace of its own, where every run has the same one.
    let run = format!(
        "{}.{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    );
    let source = dir.join(format!("rcl_pubsub-{key:016x}.{run}.c"));
    let partial = dir.join(format!("rcl_pubsub-{key:016x}.{run}.tmp"));
    std::fs::write(&source, SOURCE)?;
    eprintln!(
        "building the rcl variant's program against {} (once; cached as {})",
        venv.display(),
        program.path.display()
    );
    let out = Command::new(&cc)
        .arg(&source)
        .args(&args)
        .arg("-o")
        .arg(&partial)
        .output()
        .map_err(|e| format!("{}: {e}", cc.display()))?;
    let _ = std::fs::remove_file(&source);
    if !out.status.success() {
        let _ = std::fs::remove_file(&partial);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = stderr.lines().collect();
        let tail = &lines[lines.len().saturating_sub(15)..];
        return Err(format!("cc failed ({}):\n{}", out.status, tail.join("\n")).into());
    }
    std::fs::rename(&partial, &program.path)?;
    Ok(program)
}

/// A command running the program, with the environment every variant shares plus what a
/// sourced ROS 2 installation would give it: the rmw (the wheels' rcl links
/// rmw_fastrtps_cpp, and checks `RMW_IMPLEMENTATION` against it) and `LD_LIBRARY_PATH`, on
/// which rosidl's type support dispatch looks its libraries up.
pub fn command(program: &Program) -> Command {
    let mut cmd = Command::new(&program.path);
    let mut paths = vec![program.lib_dir.clone()];
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH") {
        paths.extend(std::env::split_paths(&old));
    }
    cmd.env("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp");
    if let Ok(joined) = std::env::join_paths(paths) {
        cmd.env("LD_LIBRARY_PATH", joined);
    }
    cmd
}

/// Checks that rmw serializes a `ByteMultiArray` of `size` bytes (filled with
/// [`super::roles::check_pattern`]) exactly as rclev encodes it.
pub fn check_sample(program: &Program, size: usize) -> Result {
    let out = command(program)
        .args(["--dump-sample", &size.to_string()])
        .output()
        .map_err(|e| format!("{}: {e}", program.path.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} --dump-sample failed ({}): {}",
            program.path.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )
        .into());
    }
    let ours = super::roles::pattern_sample(size)?;
    if out.stdout != ours {
        let at = out
            .stdout
            .iter()
            .zip(&ours)
            .position(|(a, b)| a != b)
            .unwrap_or(out.stdout.len().min(ours.len()));
        return Err(format!(
            "rmw's sample of {size} B differs from rclev's at byte {at} ({} vs {} bytes long)",
            out.stdout.len(),
            ours.len()
        )
        .into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_key_separates_parts() {
        assert_ne!(fnv1a(&[b"ab", b"c"]), fnv1a(&[b"a", b"bc"]));
        assert_eq!(fnv1a(&[b"x"]), fnv1a(&[b"x"]));
    }
}
