//! Log severities: a leaf, so that the level table and the console (lower layers than the
//! node's logger) can name them.

/// Log severity, with rcl's numeric levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum LogSeverity {
    /// Debug.
    Debug = 10,
    /// Info.
    Info = 20,
    /// Warning.
    Warn = 30,
    /// Error.
    Error = 40,
    /// Fatal.
    Fatal = 50,
}

impl LogSeverity {
    /// The label the ROS 2 console prints (`INFO`, `WARN`…).
    pub fn label(self) -> &'static str {
        match self {
            Self::Debug => "DEBUG",
            Self::Info => "INFO",
            Self::Warn => "WARN",
            Self::Error => "ERROR",
            Self::Fatal => "FATAL",
        }
    }
}
