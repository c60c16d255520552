//! Logger levels, process-wide and by name, with rcutils' hierarchy: a logger without a
//! level of its own takes its nearest dotted ancestor's (`robot.cam` → `robot`), and then the
//! default level. `--log-level` sets them when a context is made from arguments, and the
//! `~/set_logger_levels` service at run time; loggers pick a change up at their next record.
//!
//! One mutex guards the table; a generation counter, bumped after every change, lets a
//! logger keep its effective level cached and look the table up only after a change.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::base::severity::LogSeverity;
use crate::base::sync::lock;

/// A logger's level as rcutils stores it: a severity, or unset (take the ancestors').
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum LogLevel {
    /// No level of its own.
    Unset = 0,
    /// Debug and above.
    Debug = 10,
    /// Info and above.
    Info = 20,
    /// Warnings and above.
    Warn = 30,
    /// Errors and above.
    Error = 40,
    /// Fatal only.
    Fatal = 50,
}

impl LogLevel {
    /// The level named `name` (`debug`, `INFO`, `warn`/`warning`, `error`, `fatal`,
    /// `unset`; any case), as `--log-level` takes it.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name.to_ascii_lowercase().as_str() {
            "unset" => Self::Unset,
            "debug" => Self::Debug,
            "info" => Self::Info,
            "warn" | "warning" => Self::Warn,
            "error" => Self::Error,
            "fatal" => Self::Fatal,
            _ => return None,
        })
    }

    /// The level with rcutils' number (`rcl_interfaces/msg/LoggerLevel`): 0, 10, 20, 30,
    /// 40 or 50; `None` for any other number.
    pub fn from_number(level: u32) -> Option<Self> {
        Some(match level {
            0 => Self::Unset,
            10 => Self::Debug,
            20 => Self::Info,
            30 => Self::Warn,
            40 => Self::Error,
            50 => Self::Fatal,
            _ => return None,
        })
    }
}

impl From<LogSeverity> for LogLevel {
    fn from(s: LogSeverity) -> Self {
        match s {
            LogSeverity::Debug => Self::Debug,
            LogSeverity::Info => Self::Info,
            LogSeverity::Warn => Self::Warn,
            LogSeverity::Error => Self::Error,
            LogSeverity::Fatal => Self::Fatal,
        }
    }
}

struct Table {
    default: LogLevel,
    by_name: HashMap<String, LogLevel>,
}

fn table() -> &'static Mutex<Table> {
    static TABLE: OnceLock<Mutex<Table>> = OnceLock::new();
    TABLE.get_or_init(|| {
        Mutex::new(Table {
            default: LogLevel::Info,
            by_name: HashMap::new(),
        })
    })
}

/// Bumped (after the table changed, under its lock) on every change.
static GENERATION: AtomicU64 = AtomicU64::new(1);

pub(crate) fn generation() -> u64 {
    GENERATION.load(Ordering::Acquire)
}

/// Sets a logger's level; the empty name sets the default level (which cannot be unset:
/// unsetting it restores info).
pub fn set_logger_level(name: &str, level: LogLevel) {
    let mut t = lock(table());
    if name.is_empty() {
        t.default = if level == LogLevel::Unset {
            LogLevel::Info
        } else {
            level
        };
    } else if level == LogLevel::Unset {
        t.by_name.remove(name);
    } else {
        t.by_name.insert(name.to_string(), level);
    }
    GENERATION.fetch_add(1, Ordering::Release);
}

/// A logger's own level ([`LogLevel::Unset`] when it has none); the empty name gives the
/// default level. What `~/get_logger_levels` answers.
pub fn logger_level(name: &str) -> LogLevel {
    let t = lock(table());
    if name.is_empty() {
        return t.default;
    }
    t.by_name.get(name).copied().unwrap_or(LogLevel::Unset)
}

/// The level a logger's records are filtered at: its own, else its nearest ancestor's, else
/// the default.
pub fn effective_level(name: &str) -> LogLevel {
    let t = lock(table());
    let mut n = name;
    loop {
        if let Some(level) = t.by_name.get(n) {
            return *level;
        }
        match n.rfind('.') {
            Some(dot) => n = &n[..dot],
            None => return t.default,
        }
    }
}
