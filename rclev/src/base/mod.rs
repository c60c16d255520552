//! Layer 0: plain data and primitives that import nothing else of the crate — the error type,
//! the lock and atomic aliases the loom models swap, handles, throttling, CDR, and the state
//! machines (goal, lifecycle) and log severities that [`error::Error`] names.

pub mod cdr;
pub(crate) mod error;
pub(crate) mod goal_state;
pub(crate) mod handle;
pub(crate) mod lifecycle_state;
pub(crate) mod severity;
pub(crate) mod sync;
pub(crate) mod text;
pub mod throttle;
