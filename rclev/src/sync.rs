//! The synchronisation primitives behind the subtle protocols (entity dispatch with the
//! mailbox's parking, and the timer scheduler's sleep/wake handshake), from `std` normally and from `loom` when the crate is built
//! with `--cfg rclev_loom`, so the same code can be model-checked.
//!
//! A custom cfg name is used instead of `loom` because Tokio reacts to `cfg(loom)` itself.

#[cfg(not(rclev_loom))]
pub(crate) use std::sync::{
    atomic::{AtomicBool, AtomicU64, Ordering},
    Condvar, Mutex, MutexGuard,
};

#[cfg(rclev_loom)]
pub(crate) use loom::sync::{
    atomic::{AtomicBool, AtomicU64, Ordering},
    Condvar, Mutex, MutexGuard,
};

/// Locks a `std` mutex, ignoring poisoning: every critical section in rclev leaves its data
/// consistent even if a panic unwinds through it (user callbacks never run under these locks).
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// [`lock`] for the facade's (possibly loom) mutex.
pub(crate) fn model_lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
