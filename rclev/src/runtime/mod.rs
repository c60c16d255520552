//! Layer 3: the runtime core every entity runs on — a worker's mailbox and loop, the
//! coalescing dispatch an entity pushes its readiness through, the start fence, the worker's
//! alarm, direct (lent) and adaptive delivery, and the callback wrapper. Timers (layer 4) and
//! the executor (layer 5) are built on it; it knows neither.

pub(crate) mod adaptive;
pub(crate) mod alarm;
pub(crate) mod callback;
pub(crate) mod core;
pub(crate) mod direct;
pub(crate) mod dispatch;
pub(crate) mod executable;
pub(crate) mod fence;
pub(crate) mod mailbox;
pub(crate) mod policy;
pub(crate) mod worker;
