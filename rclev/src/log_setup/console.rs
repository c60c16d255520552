//! The console line a record prints when no `tracing` subscriber is installed, formatted as
//! rcutils formats it: `RCUTILS_CONSOLE_OUTPUT_FORMAT` (default
//! `[{severity}] [{time}] [{name}]: {message}`; also `{time_as_nanoseconds}`, `{file_name}`,
//! `{line_number}`, `{function_name}` (empty: Rust has no function name at hand)), on stderr,
//! or stdout with `RCUTILS_LOGGING_USE_STDOUT=1`; `--disable-stdout-logs` turns it off.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use crate::base::severity::LogSeverity;
use crate::clock::Time;

const DEFAULT_FORMAT: &str = "[{severity}] [{time}] [{name}]: {message}";

static STDOUT_LOGS: AtomicBool = AtomicBool::new(true);

/// `--enable-`/`--disable-stdout-logs`: whether records are printed on the console.
pub(crate) fn set_stdout_logs(on: bool) {
    STDOUT_LOGS.store(on, Ordering::Relaxed);
}

struct Settings {
    format: String,
    stdout: bool,
}

fn settings() -> &'static Settings {
    static SETTINGS: OnceLock<Settings> = OnceLock::new();
    SETTINGS.get_or_init(|| Settings {
        format: std::env::var("RCUTILS_CONSOLE_OUTPUT_FORMAT")
            .ok()
            .filter(|f| !f.is_empty())
            .unwrap_or_else(|| DEFAULT_FORMAT.to_string()),
        stdout: std::env::var("RCUTILS_LOGGING_USE_STDOUT").as_deref() == Ok("1"),
    })
}

/// One record to print.
pub(crate) struct Line<'a> {
    pub(crate) severity: LogSeverity,
    pub(crate) name: &'a str,
    pub(crate) message: &'a str,
    pub(crate) stamp: Time,
    pub(crate) file: &'a str,
    pub(crate) line: u32,
}

/// `format` with the record's fields in place of its `{tokens}`; unknown tokens are kept as
/// written, as rcutils keeps them.
fn render(format: &str, l: &Line<'_>) -> String {
    let mut out = String::with_capacity(format.len() + l.message.len() + 32);
    let mut rest = format;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open..];
        let Some(close) = after.find('}') else {
            out.push_str(after);
            return out;
        };
        let token = &after[1..close];
        let secs = l.stamp.nanos.div_euclid(1_000_000_000);
        let frac = l.stamp.nanos.rem_euclid(1_000_000_000);
        match token {
            "severity" => out.push_str(l.severity.label()),
            "name" => out.push_str(l.name),
            "message" => out.push_str(l.message),
            "time" => out.push_str(&format!("{secs}.{frac:09}")),
            "time_as_nanoseconds" => out.push_str(&l.stamp.nanos.to_string()),
            "file_name" => out.push_str(l.file),
            "line_number" => out.push_str(&l.line.to_string()),
            "function_name" => {}
            _ => out.push_str(&after[..=close]),
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    out
}

pub(crate) fn print(line: &Line<'_>) {
    if !STDOUT_LOGS.load(Ordering::Relaxed) {
        return;
    }
    let s = settings();
    let text = render(&s.format, line);
    // A closed console must not take the program down: write errors are dropped.
    if s.stdout {
        let _ = writeln!(std::io::stdout().lock(), "{text}");
    } else {
        let _ = writeln!(std::io::stderr().lock(), "{text}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_rcutils() {
        let l = Line {
            severity: LogSeverity::Warn,
            name: "ns.node",
            message: "hi",
            stamp: Time {
                nanos: 1_500_000_001,
                clock_type: crate::ClockType::SystemTime,
            },
            file: "a.rs",
            line: 7,
        };
        assert_eq!(
            render(DEFAULT_FORMAT, &l),
            "[WARN] [1.500000001] [ns.node]: hi"
        );
        assert_eq!(
            render(
                "{file_name}:{line_number} {time_as_nanoseconds} {other} {",
                &l
            ),
            "a.rs:7 1500000001 {other} {"
        );
    }
}
