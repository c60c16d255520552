//! rclev's own diagnostics — the library's and its transports' warnings and errors (a peer
//! refused, a setting ignored), not a node's logs — where a user sees them, as rcl's show on
//! the console by default: each is a `tracing` event of its target, and while the program has
//! installed no `tracing` subscriber it is also printed on the console the way node logs are
//! (`[WARN] [1700000000.000000000] [rclev_dds]: …`, rcutils' format and variables, see
//! `console.rs`), filtered by the logger level of its target's name (`--log-level rclev_dds:=error`,
//! or the default, info). A program that installs a subscriber gets them there instead, once.
//!
//! The `diagnostic!` macro (exported at the crate's root) is how the crates emit them; its
//! expansion reaches this module as `rclev::diagnostic` (a hidden re-export).

use std::fmt;

#[doc(hidden)]
pub use tracing;

use super::{console, levels};
use crate::base::severity::LogSeverity;
use crate::clock::{system_nanos, ClockType, Time};

/// The console half of `diagnostic!`: prints `message` for `target` at
/// `severity` when no `tracing` subscriber is installed and the target's logger level lets
/// it through. Not for direct use.
#[doc(hidden)]
pub fn console_fallback(
    severity: LogSeverity,
    target: &str,
    message: fmt::Arguments<'_>,
    file: &'static str,
    line: u32,
) {
    if tracing::dispatcher::has_been_set() {
        return;
    }
    let name = logger_name(target);
    if (severity as u8) < levels::effective_level(&name) as u8 {
        return;
    }
    console::print(&console::Line {
        severity,
        name: &name,
        message: &message.to_string(),
        stamp: Time {
            nanos: system_nanos(),
            clock_type: ClockType::SystemTime,
        },
        file,
        line,
    });
}

/// The logger name of a `tracing` target: its module path in rcutils' dotted form
/// (`rclev_dds::graph` → `rclev_dds.graph`), so `--log-level rclev_dds:=error` silences a
/// crate's diagnostics as it would a node's logs.
fn logger_name(target: &str) -> String {
    target.replace("::", ".")
}

/// Emits one of rclev's own warnings or errors — the library's and its transports'
/// diagnostics, not a node's logs: a `tracing` event of `target` at `level` (`ERROR`, `WARN`
/// or `INFO`), and, while the program has installed no `tracing` subscriber, the same line on
/// the console as node logs print (rcutils' format, `RCUTILS_CONSOLE_OUTPUT_FORMAT`, stderr or
/// `RCUTILS_LOGGING_USE_STDOUT`), unless the logger level of the target (in dotted form:
/// `rclev_dds::graph` is `rclev_dds.graph`) is above it. A program that installs a subscriber
/// gets each once, there.
///
/// ```
/// rclev::diagnostic!(WARN, target: "my_transport", "peer {} refused", 7);
/// ```
#[macro_export]
macro_rules! diagnostic {
    ($level:ident, target: $target:expr, $($arg:tt)+) => {{
        $crate::diagnostic::tracing::event!(
            target: $target,
            $crate::diagnostic::tracing::Level::$level,
            $($arg)+
        );
        $crate::diagnostic::console_fallback(
            $crate::diagnostic::severity_of(&$crate::diagnostic::tracing::Level::$level),
            $target,
            format_args!($($arg)+),
            file!(),
            line!(),
        );
    }};
}

/// The rcutils severity of a `tracing` level.
#[doc(hidden)]
pub fn severity_of(level: &tracing::Level) -> LogSeverity {
    match *level {
        tracing::Level::ERROR => LogSeverity::Error,
        tracing::Level::WARN => LogSeverity::Warn,
        tracing::Level::INFO => LogSeverity::Info,
        _ => LogSeverity::Debug,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_name_loggers_in_dotted_form() {
        assert_eq!(logger_name("rclev_dds::graph"), "rclev_dds.graph");
        assert_eq!(logger_name("rclev"), "rclev");
        assert_eq!(severity_of(&tracing::Level::WARN), LogSeverity::Warn);
    }
}
