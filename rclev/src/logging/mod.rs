//! Node logging on top of `tracing`, with every record also published on `/rosout`
//! (`rcl_interfaces/msg/Log`, stamped with the node's clock) and visible to log captures.
//!
//! ```
//! use rclev::{Context, LogSeverity};
//! let executor = Context::default().create_basic_executor();
//! let node = executor.create_node("chatty").unwrap();
//! let capture = node.logger().capture();
//! rclev::log_info!(node, "hello {}", 42);
//! let records = capture.records();
//! assert_eq!(records[0].message, "hello 42");
//! assert_eq!(records[0].severity, LogSeverity::Info);
//! ```
//!
//! Records go to `tracing` (target `rclev::log`). Until the program installs a `tracing`
//! subscriber, they are also printed on stderr the way the ROS 2 console prints them
//! (`[INFO] [1700000000.000000000] [talker]: hello`), so node logs show by default; installing
//! a subscriber (e.g. `tracing_subscriber::fmt().init()`) hands them over to it.
//!
//! A capture belongs to one logger: it sees every record of that logger, from any thread,
//! and takes nothing away from `/rosout`, `tracing` or other captures, so captures in tests
//! running in parallel do not interfere.

pub use crate::base::severity::LogSeverity;
pub use crate::log_setup::levels::{effective_level, logger_level, set_logger_level, LogLevel};
use crate::log_setup::{console, levels};

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use crate::base::sync::lock;
use crate::clock::{monotonic_nanos, Clock, Time};
use crate::interfaces::rcl_interfaces::msg::Log;
use crate::node::pubsub::Publisher;

/// One log record.
#[derive(Debug, Clone, PartialEq)]
pub struct LogRecord {
    /// Severity.
    pub severity: LogSeverity,
    /// The logger's name.
    pub logger_name: String,
    /// The formatted message.
    pub message: String,
    /// The node clock's time when logged.
    pub stamp: Time,
    /// Source file.
    pub file: &'static str,
    /// Source line.
    pub line: u32,
}

#[derive(Default)]
struct CaptureShared {
    records: Mutex<Vec<LogRecord>>,
}

/// Collects the records of one logger while it lives (see the module docs).
pub struct LogCapture {
    shared: Arc<CaptureShared>,
}

impl LogCapture {
    /// The records so far.
    pub fn records(&self) -> Vec<LogRecord> {
        lock(&self.shared.records).clone()
    }
    /// Takes the records so far, leaving the capture empty.
    pub fn take(&self) -> Vec<LogRecord> {
        std::mem::take(&mut *lock(&self.shared.records))
    }
}

impl fmt::Debug for LogCapture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LogCapture")
            .field("records", &lock(&self.shared.records).len())
            .finish()
    }
}

struct LoggerShared {
    name: String,
    clock: Clock,
    rosout: Option<Publisher<Log>>,
    captures: Mutex<Vec<Weak<CaptureShared>>>,
    has_captures: AtomicBool,
    /// The effective level and the level table's generation it was computed at:
    /// `generation << 8 | level` (see `levels`).
    cached_level: AtomicU64,
}

/// A node's logger. Cheap to clone.
#[derive(Clone)]
pub struct Logger {
    shared: Arc<LoggerShared>,
}

impl fmt::Debug for Logger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Logger")
            .field("name", &self.shared.name)
            .finish()
    }
}

impl Logger {
    pub(crate) fn new(name: String, clock: Clock, rosout: Option<Publisher<Log>>) -> Self {
        Self {
            shared: Arc::new(LoggerShared {
                name,
                clock,
                rosout,
                captures: Mutex::new(Vec::new()),
                has_captures: AtomicBool::new(false),
                cached_level: AtomicU64::new(0),
            }),
        }
    }

    /// The logger's name (the node's name, with its namespace in dotted form, as in rcl).
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// Sets this logger's level: records below `severity` are discarded. Levels belong to
    /// logger names, process-wide, as in rcutils (see [`set_logger_level`]); a logger without
    /// one takes its dotted ancestors' level, else the default (info, or `--log-level`).
    pub fn set_level(&self, severity: LogSeverity) {
        set_logger_level(&self.shared.name, severity.into());
    }

    /// The level this logger's records are filtered at now.
    pub fn effective_level(&self) -> LogLevel {
        let generation = levels::generation();
        let cached = self.shared.cached_level.load(Ordering::Relaxed);
        if cached >> 8 == generation {
            return level_from_u8(cached as u8);
        }
        let level = effective_level(&self.shared.name);
        self.shared
            .cached_level
            .store(generation << 8 | level as u64, Ordering::Relaxed);
        level
    }

    /// Whether `/rosout` publishing is on for this logger.
    pub fn publishes_rosout(&self) -> bool {
        self.shared.rosout.is_some()
    }

    /// Starts capturing this logger's records.
    pub fn capture(&self) -> LogCapture {
        let shared = Arc::new(CaptureShared::default());
        let mut captures = lock(&self.shared.captures);
        captures.retain(|w| w.strong_count() > 0);
        captures.push(Arc::downgrade(&shared));
        self.shared.has_captures.store(true, Ordering::Release);
        LogCapture { shared }
    }

    /// Logs a record. Use the `log_*!` macros, which fill in the file and line.
    pub fn log(
        &self,
        severity: LogSeverity,
        message: fmt::Arguments<'_>,
        file: &'static str,
        line: u32,
    ) {
        if (severity as u8) < self.effective_level() as u8 {
            return;
        }
        let message = message.to_string();
        let name = self.shared.name.as_str();
        match severity {
            LogSeverity::Debug => tracing::debug!(target: "rclev::log", logger = name, "{message}"),
            LogSeverity::Info => tracing::info!(target: "rclev::log", logger = name, "{message}"),
            LogSeverity::Warn => tracing::warn!(target: "rclev::log", logger = name, "{message}"),
            LogSeverity::Error | LogSeverity::Fatal => {
                tracing::error!(target: "rclev::log", logger = name, fatal = severity == LogSeverity::Fatal, "{message}")
            }
        }
        let stamp = self.shared.clock.now();
        if !tracing::dispatcher::has_been_set() {
            // Nobody installed a `tracing` subscriber: print as the ROS 2 console does, so node
            // logs show by default. A program's own subscriber takes over from this.
            console::print(&console::Line {
                severity,
                name,
                message: &message,
                stamp,
                file,
                line,
            });
        }
        if let Some(rosout) = &self.shared.rosout {
            let _ = rosout.publish(Log {
                stamp: stamp.to_msg(),
                level: severity as u8,
                name: name.to_string(),
                msg: message.clone(),
                file: file.to_string(),
                function: String::new(),
                line,
            });
        }
        if self.shared.has_captures.load(Ordering::Acquire) {
            let record = LogRecord {
                severity,
                logger_name: name.to_string(),
                message,
                stamp,
                file,
                line,
            };
            let captures: Vec<_> = lock(&self.shared.captures)
                .iter()
                .filter_map(Weak::upgrade)
                .collect();
            for c in captures {
                lock(&c.records).push(record.clone());
            }
        }
    }
}

fn level_from_u8(level: u8) -> LogLevel {
    LogLevel::from_number(level.into()).unwrap_or(LogLevel::Info)
}

/// Things the `log_*!` macros accept: a [`Logger`] or a node.
pub trait AsLogger {
    /// The logger.
    fn as_logger(&self) -> &Logger;
}

impl AsLogger for Logger {
    fn as_logger(&self) -> &Logger {
        self
    }
}

impl<T: AsLogger + ?Sized> AsLogger for Arc<T> {
    fn as_logger(&self) -> &Logger {
        (**self).as_logger()
    }
}

impl<T: AsLogger + ?Sized> AsLogger for &T {
    fn as_logger(&self) -> &Logger {
        (**self).as_logger()
    }
}

/// For `log_*_throttle!`: whether at least `period` of steady time passed since the call site
/// last logged (and, if so, marks it as logging now).
#[doc(hidden)]
pub fn throttle_allows(last: &AtomicI64, period: Duration) -> bool {
    let now = monotonic_nanos();
    let prev = last.load(Ordering::Relaxed);
    if prev != i64::MIN && now.saturating_sub(prev) < crate::clock::saturating_nanos(period) {
        return false;
    }
    last.compare_exchange(prev, now, Ordering::Relaxed, Ordering::Relaxed)
        .is_ok()
}

/// Logs at a severity: `rclev::log!(node, LogSeverity::Warn, "x = {}", x)`.
#[macro_export]
macro_rules! log {
    ($logger:expr, $severity:expr, $($arg:tt)+) => {
        $crate::logging::AsLogger::as_logger(&$logger).log($severity, format_args!($($arg)+), file!(), line!())
    };
}

/// Logs once per call site: `rclev::log_once!(node, LogSeverity::Info, "started")`.
#[macro_export]
macro_rules! log_once {
    ($logger:expr, $severity:expr, $($arg:tt)+) => {{
        static ONCE: ::std::sync::atomic::AtomicBool = ::std::sync::atomic::AtomicBool::new(false);
        if !ONCE.swap(true, ::std::sync::atomic::Ordering::Relaxed) {
            $crate::log!($logger, $severity, $($arg)+);
        }
    }};
}

/// Logs at most once per `period` per call site:
/// `rclev::log_throttle!(node, LogSeverity::Warn, Duration::from_secs(1), "lagging")`.
#[macro_export]
macro_rules! log_throttle {
    ($logger:expr, $severity:expr, $period:expr, $($arg:tt)+) => {{
        static LAST: ::std::sync::atomic::AtomicI64 = ::std::sync::atomic::AtomicI64::new(i64::MIN);
        if $crate::logging::throttle_allows(&LAST, $period) {
            $crate::log!($logger, $severity, $($arg)+);
        }
    }};
}

/// `rclev::log_debug!(node, "...")`.
#[macro_export]
macro_rules! log_debug { ($logger:expr, $($arg:tt)+) => { $crate::log!($logger, $crate::LogSeverity::Debug, $($arg)+) }; }
/// `rclev::log_info!(node, "...")`.
#[macro_export]
macro_rules! log_info { ($logger:expr, $($arg:tt)+) => { $crate::log!($logger, $crate::LogSeverity::Info, $($arg)+) }; }
/// `rclev::log_warn!(node, "...")`.
#[macro_export]
macro_rules! log_warn { ($logger:expr, $($arg:tt)+) => { $crate::log!($logger, $crate::LogSeverity::Warn, $($arg)+) }; }
/// `rclev::log_error!(node, "...")`.
#[macro_export]
macro_rules! log_error { ($logger:expr, $($arg:tt)+) => { $crate::log!($logger, $crate::LogSeverity::Error, $($arg)+) }; }
/// `rclev::log_fatal!(node, "...")`.
#[macro_export]
macro_rules! log_fatal { ($logger:expr, $($arg:tt)+) => { $crate::log!($logger, $crate::LogSeverity::Fatal, $($arg)+) }; }
