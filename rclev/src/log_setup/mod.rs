//! Layer 2: the process's logging setup — logger levels (set by `--log-level`, the
//! `set_logger_levels` service or code) and how a record prints on the console. Node loggers
//! (layer 6, [`crate::logging`]) use both.

pub(crate) mod console;
pub mod diagnostic;
pub(crate) mod levels;
