//! What the CLI's integration tests share: children killed when a test fails, and Ctrl-C
//! sent to a command at a chosen moment of its run.

#![allow(dead_code)]

use std::process::{Command, Stdio};

/// A child process killed if the test fails before it is waited for: one left running would
/// hold the test's output open.
pub struct KilledOnDrop(pub Option<std::process::Child>);

impl Drop for KilledOnDrop {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// When [`interrupted_at`] sends SIGINT.
#[derive(Clone, Copy, Debug)]
pub enum Moment {
    /// As soon as the command has set its Ctrl-C handler (`SigCgt` in `/proc/<pid>/status`):
    /// during its DDS set-up or its wait for a publisher. (A SIGINT before that, while the
    /// process is still being loaded, takes the default action, as for any program.)
    AtOnce,
    /// After the `n`th line of its stdout (`false`) or stderr (`true`) that contains the text.
    After(bool, &'static str, usize),
    /// Once each of these texts was in a line of its stdout (`false`) or stderr (`true`).
    AfterEach(&'static [(bool, &'static str)]),
}

/// Whether process `pid` catches SIGINT (bit 1 of `SigCgt`: signal 2).
pub fn catches_sigint(pid: u32) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return false;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << (libc::SIGINT - 1)) != 0)
}

/// Runs `command` (whose arguments are `args`, for messages), sends it one SIGINT at
/// `moment`, and asserts that it ended cleanly (exit status 0, no error); returns its stdout
/// and its stderr.
pub fn interrupted_at(mut command: Command, args: &[&str], moment: Moment) -> (String, String) {
    use std::io::{BufRead, BufReader};
    let mut guard = KilledOnDrop(Some(
        command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    ));
    let child = guard.0.as_mut().unwrap();
    // Both streams, line by line, on one channel: (from stderr, line).
    let (tx, lines) = std::sync::mpsc::channel::<(bool, String)>();
    let readers: Vec<_> = [
        (
            false,
            Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
        ),
        (true, Box::new(child.stderr.take().unwrap())),
    ]
    .into_iter()
    .map(|(is_err, stream)| {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines() {
                let line = line.unwrap();
                // Shown as it comes (the harness keeps it for a failure): a wait that never
                // ends still shows what the command said.
                eprintln!("| {line}");
                let _ = tx.send((is_err, line));
            }
        })
    })
    .collect();
    drop(tx);
    let mut seen: Vec<(bool, String)> = Vec::new();
    let pid = child.id();
    match moment {
        Moment::AtOnce => {
            while !catches_sigint(pid) {
                assert!(
                    child.try_wait().unwrap().is_none(),
                    "rclev {args:?} ended before it was interrupted"
                );
                std::thread::yield_now();
            }
        }
        Moment::AfterEach(needles) => {
            let mut found = vec![false; needles.len()];
            while found.contains(&false) {
                let Ok(line) = lines.recv() else {
                    panic!("rclev {args:?} ended before it printed all of {needles:?}: {seen:?}");
                };
                for (i, (on_stderr, text)) in needles.iter().enumerate() {
                    found[i] |= line.0 == *on_stderr && line.1.contains(text);
                }
                seen.push(line);
            }
        }
        Moment::After(on_stderr, text, n) => {
            let mut count = 0;
            while count < n {
                let Ok(line) = lines.recv() else {
                    panic!("rclev {args:?} ended before its line {n} with {text:?}: {seen:?}");
                };
                count += usize::from(line.0 == on_stderr && line.1.contains(text));
                seen.push(line);
            }
        }
    }
    // SAFETY: kill(2) on a child we spawned and have not reaped yet.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    guard.0 = None;
    for r in readers {
        r.join().unwrap();
    }
    seen.extend(lines.iter());
    assert!(
        status.success(),
        "rclev {args:?} interrupted at {moment:?}: {status}; it printed {seen:?}"
    );
    assert!(
        !seen.iter().any(|(_, l)| l.contains("error")),
        "rclev {args:?} interrupted at {moment:?} printed {seen:?}"
    );
    let text = |stderr: bool| -> String {
        seen.iter()
            .filter(|(on_stderr, _)| *on_stderr == stderr)
            .map(|(_, l)| format!("{l}\n"))
            .collect()
    };
    (text(false), text(true))
}
