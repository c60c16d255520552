//! The benchmark's child processes: started with piped stdin/stdout, read line by line with
//! deadlines (a peer that never matches must fail the run, not hang it), stopped on drop.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use super::roles::{Mark, MARK, QUIT};
use crate::errors::Result;

/// How long a role process may take to answer a mark or to exit after `quit`.
const ANSWER_LIMIT: Duration = Duration::from_secs(10);

/// A child process of the benchmark and the lines it printed.
pub struct Proc {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl Proc {
    /// Starts `cmd`; its stdout is read line by line on a thread of its own, its stderr goes
    /// to ours.
    pub fn spawn(mut cmd: Command, name: String) -> Result<Proc> {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("could not start {name}: {e}"))?;
        let stdin = child.stdin.take();
        let stdout = child
            .stdout
            .take()
            .ok_or("a child's stdout was not piped")?;
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Proc {
            name,
            child,
            stdin,
            lines,
        })
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The next line, waiting at most until `deadline`.
    pub fn next_line(&mut self, deadline: Instant) -> Result<String> {
        match self
            .lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            Ok(line) => Ok(line),
            Err(RecvTimeoutError::Timeout) => {
                Err(format!("{} did not answer in time", self.name).into())
            }
            Err(RecvTimeoutError::Disconnected) => {
                let status = self
                    .child
                    .wait()
                    .map(|s| s.to_string())
                    .unwrap_or_else(|e| e.to_string());
                Err(format!("{} ended early ({status})", self.name).into())
            }
        }
    }

    /// Reads lines until one for which `wanted` holds (returned), at most `limit`.
    pub fn wait_for(&mut self, limit: Duration, wanted: impl Fn(&str) -> bool) -> Result<String> {
        let deadline = Instant::now() + limit;
        loop {
            let line = self.next_line(deadline)?;
            if wanted(&line) {
                return Ok(line);
            }
        }
    }

    /// Every line printed so far and not read yet.
    pub fn drain(&mut self) -> Vec<String> {
        self.lines.try_iter().collect()
    }

    /// Asks a role process for its counters.
    pub fn mark(&mut self) -> Result<Mark> {
        self.send(MARK)?;
        let line = self.wait_for(ANSWER_LIMIT, |l| l.starts_with('{'))?;
        serde_json::from_str(&line)
            .map_err(|e| format!("{} answered {line:?}: {e}", self.name).into())
    }

    fn send(&mut self, line: &str) -> Result {
        let stdin = self.stdin.as_mut().ok_or("stdin already closed")?;
        writeln!(stdin, "{line}")?;
        stdin.flush()?;
        Ok(())
    }

    /// Tells a role process to quit and waits for it; an error if it failed.
    pub fn finish(mut self) -> Result {
        // A process that already went away has closed its stdin: its status says why.
        let _ = self.send(QUIT);
        self.wait_exit(ANSWER_LIMIT)
    }

    /// Closes the process's stdin and waits at most `limit` for it to exit; an error if it
    /// failed or is still running then (it is killed when dropped).
    pub fn wait_exit(mut self, limit: Duration) -> Result {
        self.stdin = None;
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait()? {
                return if status.success() {
                    Ok(())
                } else {
                    Err(format!("{} failed ({status})", self.name).into())
                };
            }
            if Instant::now() > deadline {
                return Err(format!("{} did not quit in time", self.name).into());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// CPU time (user + system) the process has used so far, from `/proc/<pid>/stat`, for
    /// processes that cannot report their own (ddsperf); 10 ms resolution.
    pub fn cpu_secs(&self) -> Result<f64> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid()))?;
        // The command name (field 2) may hold spaces; the fields after its ')' do not.
        let rest = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest)
            .ok_or("unreadable /proc/<pid>/stat")?;
        let fields: Vec<&str> = rest.split_whitespace().collect();
        // Fields 14 and 15 (utime, stime) are the 12th and 13th after the name.
        let ticks = |i: usize| -> Result<f64> {
            Ok(fields
                .get(i)
                .ok_or("short /proc/<pid>/stat")?
                .parse::<u64>()? as f64)
        };
        // SAFETY: sysconf only reads a configuration value.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
        Ok((ticks(11)? + ticks(12)?) / hz)
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        // Only a process that is still running after an error gets here running: stop it, so
        // that no benchmark process outlives the run.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
