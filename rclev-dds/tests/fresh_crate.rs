//! A user's crate, outside this workspace, depending on rclev-dds by path (docs/deploying.md,
//! "Programs that use rclev-dds"): `cargo run` and `cargo test` work with no set-up (cargo puts
//! rclev-dds's `$OUT_DIR/fastdds-lib` on `LD_LIBRARY_PATH`), the bare binary needs
//! `LD_LIBRARY_PATH` set to the Fast DDS directories, and with the one-line build.rs
//! (`DEP_FASTRTPS_RPATH_ARG`) a `cargo install`ed or copied binary runs from anywhere with
//! nothing set. The program makes a DDS context, a node, a publisher and a subscription on
//! one topic, and exits 0 once it has heard itself.
//!
//! Everything runs in a network namespace with only loopback (`common::in_netns`); the nested
//! cargo is `--offline`, with the workspace's `Cargo.lock` (the crates the outer build already
//! fetched) and a target directory of its own beside the outer one (`<target>/fresh-crate`, a
//! fixed place so that reruns are incremental). The two cargos do not wait for each other: the
//! outer one has released its target directory's lock and the package cache's before it runs
//! tests; the separate directory keeps the nested build's settings (no debug info, the fresh
//! crate's lock) out of the outer build's artifacts. The crate itself lives in the system's
//! temporary directory, outside the workspace. First run about 30 s on 2 cores (it builds
//! rclev, rclev-dds and their dependencies), later runs about 3 s.

mod common;

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::in_netns;

const MAIN_RS: &str = r#"use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rclev::interfaces::std_msgs::msg::String as StringMsg;
use rclev::SpinOptions;

/// One node publishes on a topic it also subscribes to, over DDS, until it hears itself.
fn hears_itself() -> Result<bool, rclev::Error> {
    let executor = rclev_dds::DdsTransport::context()?.create_basic_executor();
    let node = executor.create_node("fresh")?;
    let publisher = node.create_publisher::<StringMsg>("fresh_chatter")?;
    let heard = Arc::new(AtomicBool::new(false));
    let h = heard.clone();
    let _sub = node.create_subscription::<StringMsg, _>("fresh_chatter", move |m| {
        if m.data == "hello me" {
            h.store(true, Ordering::SeqCst);
        }
    })?;
    let deadline = Instant::now() + Duration::from_secs(20);
    while !heard.load(Ordering::SeqCst) && Instant::now() < deadline {
        publisher.publish(StringMsg { data: "hello me".into() })?;
        for e in executor.spin(SpinOptions::default().timeout(Duration::from_millis(100))) {
            eprintln!("{e}");
        }
    }
    Ok(heard.load(Ordering::SeqCst))
}

fn main() -> Result<(), rclev::Error> {
    if hears_itself()? {
        println!("heard myself over DDS");
        Ok(())
    } else {
        eprintln!("did not hear myself within 20 s");
        std::process::exit(1);
    }
}

#[test]
fn hears_itself_over_dds() {
    assert!(hears_itself().unwrap());
}
"#;

/// The README's build.rs, verbatim.
const BUILD_RS: &str = r#"fn main() {
    // Fast DDS's libraries on the binaries' run path, where rclev-dds found them: for binaries
    // run without cargo (`cargo install`, a copy on this host).
    println!("cargo:rustc-link-arg={}", std::env::var("DEP_FASTRTPS_RPATH_ARG").unwrap());
}
"#;

/// Runs `command` in a process group of its own, killed whole after `limit`; its output.
fn run(what: &str, command: &mut Command, logs: &Path, limit: Duration) -> Output {
    let (out, err) = (logs.join("stdout"), logs.join("stderr"));
    let mut child = command
        .stdin(Stdio::null())
        .stdout(File::create(&out).unwrap())
        .stderr(File::create(&err).unwrap())
        // So that a timeout ends cargo's rustc and linker processes too.
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            let group = libc::pid_t::try_from(child.id()).unwrap();
            // SAFETY: signals the process group led by our own unreaped child.
            unsafe { libc::kill(-group, libc::SIGKILL) };
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let output = Output {
        status: status.unwrap_or_default(),
        stdout: std::fs::read(&out).unwrap(),
        stderr: std::fs::read(&err).unwrap(),
    };
    let Some(status) = status else {
        panic!("{what} did not finish within {limit:?}\n{}", shown(&output));
    };
    eprintln!("fresh crate: {what}: {status}");
    output
}

fn shown(output: &Output) -> String {
    format!(
        "--- stdout\n{}\n--- stderr\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn succeeded(what: &str, output: &Output, says: &str) {
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains(says),
        "{what}: {}, expected {says:?} on stdout\n{}",
        output.status,
        shown(output)
    );
}

/// Removes the crate's temporary directory, however the test ends.
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn a_fresh_crate_runs_tests_and_installs() {
    in_netns(
        "a_fresh_crate_runs_tests_and_installs",
        Duration::from_secs(900),
        fresh_crate,
    );
}

fn fresh_crate() {
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .unwrap();
    // <target>/<profile>/deps/fresh_crate-<hash>: the outer target directory, wherever
    // CARGO_TARGET_DIR put it.
    let exe = std::env::current_exe().unwrap();
    let target = exe.ancestors().nth(3).unwrap().join("fresh-crate");
    // One directory per checkout (a fixed name, so that the nested build is incremental).
    let tag = workspace
        .to_string_lossy()
        .bytes()
        .fold(2166136261u32, |h, b| (h ^ b as u32).wrapping_mul(16777619));
    let root = std::env::temp_dir()
        .canonicalize()
        .unwrap()
        .join(format!("rclev-fresh-crate-{tag:08x}"));
    assert!(
        !root.starts_with(&workspace),
        "the temporary directory {} is inside the workspace: the crate must be outside it",
        root.display()
    );
    let _ = std::fs::remove_dir_all(&root);
    let _cleanup = RemoveOnDrop(root.clone());
    let krate = root.join("fresh-dds");
    let elsewhere = root.join("elsewhere");
    let logs = root.join("logs");
    for dir in [krate.join("src"), elsewhere.clone(), logs.clone()] {
        std::fs::create_dir_all(dir).unwrap();
    }
    let path_of = |name: &str| workspace.join(name).display().to_string();
    std::fs::write(
        krate.join("Cargo.toml"),
        format!(
            "[package]\nname = \"fresh-dds\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
             [dependencies]\nrclev = {{ path = {:?} }}\nrclev-dds = {{ path = {:?} }}\n\n\
             # Not part of any workspace above the temporary directory.\n[workspace]\n",
            path_of("rclev"),
            path_of("rclev-dds"),
        ),
    )
    .unwrap();
    std::fs::write(krate.join("src/main.rs"), MAIN_RS).unwrap();
    // The versions the outer build fetched: the nested one is offline.
    std::fs::copy(workspace.join("Cargo.lock"), krate.join("Cargo.lock")).unwrap();

    let cargo = |args: &[&str]| {
        let mut command = Command::new(env!("CARGO"));
        command
            .args(args)
            .arg("--offline")
            .current_dir(&krate)
            .env("CARGO_TARGET_DIR", &target)
            // What the outer cargo set for this test (rclev-dds's own fastdds-lib among
            // them) must not make the nested runs pass; nor its sanitizer build.
            .env_remove("LD_LIBRARY_PATH")
            .env_remove("LD_PRELOAD")
            .env_remove("RCLEV_DDS_SANITIZE")
            // Less to write and keep (about 250 MB instead of 700): debug info and incremental
            // caches do not matter to where the libraries are found.
            .env("CARGO_PROFILE_DEV_DEBUG", "0")
            .env("CARGO_INCREMENTAL", "0");
        command
    };
    let build_limit = Duration::from_secs(600);
    let run_limit = Duration::from_secs(60);

    // 1. `cargo run` and `cargo test`, no build.rs, nothing set.
    let output = run("cargo run", &mut cargo(&["run"]), &logs, build_limit);
    succeeded("cargo run", &output, "heard myself over DDS");
    let output = run("cargo test", &mut cargo(&["test"]), &logs, build_limit);
    succeeded("cargo test", &output, "test hears_itself_over_dds ... ok");

    // 2. That binary copied elsewhere: no run path, so it needs LD_LIBRARY_PATH (what
    //    `cargo run` set for it), the directories rclev-dds reports (DEP_FASTRTPS_LIBDIRS).
    let copied = elsewhere.join("fresh-dds-plain");
    std::fs::copy(target.join("debug/fresh-dds"), &copied).unwrap();
    let bare = || {
        let mut command = Command::new(&copied);
        command
            .current_dir(&elsewhere)
            .env_remove("LD_LIBRARY_PATH");
        command
    };
    let output = run("the copied binary, bare", &mut bare(), &logs, run_limit);
    assert!(
        !output.status.success() && String::from_utf8_lossy(&output.stderr).contains("libfastrtps"),
        "without a run path or LD_LIBRARY_PATH the binary should not find libfastrtps\n{}",
        shown(&output)
    );
    let dirs = env!("RCLEV_DDS_FASTDDS_LIBDIRS");
    let output = run(
        "the copied binary with LD_LIBRARY_PATH",
        bare().env("LD_LIBRARY_PATH", dirs),
        &logs,
        run_limit,
    );
    succeeded(
        "the copied binary with LD_LIBRARY_PATH",
        &output,
        "heard myself over DDS",
    );

    // 3. With the README's build.rs: `cargo install` (--debug, the same target directory and
    //    --locked only to reuse the build above: without --locked, install resolves versions
    //    afresh, ignoring Cargo.lock), then the installed binary and a copy of it, run from
    //    another directory with nothing set.
    std::fs::write(krate.join("build.rs"), BUILD_RS).unwrap();
    let install_root = root.join("installed");
    let target_arg = target.display().to_string();
    let root_arg = install_root.display().to_string();
    let output = run(
        "cargo install",
        &mut cargo(&[
            "install",
            "--locked",
            "--debug",
            "--path",
            ".",
            "--root",
            &root_arg,
            "--target-dir",
            &target_arg,
        ]),
        &logs,
        build_limit,
    );
    assert!(output.status.success(), "cargo install\n{}", shown(&output));
    let installed = install_root.join("bin/fresh-dds");
    let copied = elsewhere.join("fresh-dds-installed-copy");
    std::fs::copy(&installed, &copied).unwrap();
    for binary in [&installed, &copied] {
        let what = format!("{} (from {})", binary.display(), elsewhere.display());
        let output = run(
            &what,
            Command::new(binary)
                .current_dir(&elsewhere)
                .env_remove("LD_LIBRARY_PATH"),
            &logs,
            run_limit,
        );
        succeeded(&what, &output, "heard myself over DDS");
    }
}
