//! Payloads as the bytes the writers send, shared by publishers, services and clients.

use std::cell::RefCell;

use rclev::transport::{Payload, TypeSupport};
use rclev::{Error, Result};

thread_local! {
    /// Serialization scratch per publishing thread: no allocation per publish.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Serializes `payload` (or borrows its bytes) and hands them to `f`.
pub(crate) fn with_cdr<R>(
    payload: &Payload,
    type_support: &TypeSupport,
    f: impl FnOnce(&[u8]) -> Result<R>,
) -> Result<R> {
    SCRATCH.with(|scratch| {
        // A publish from inside `f` (never done) would find the scratch borrowed: use a
        // fresh buffer then rather than panic.
        match scratch.try_borrow_mut() {
            Ok(mut buf) => {
                let bytes = payload.cdr(type_support, &mut buf)?;
                f(bytes)
            }
            Err(_) => {
                let mut buf = Vec::new();
                let bytes = payload.cdr(type_support, &mut buf)?;
                f(bytes)
            }
        }
    })
}

/// Refuses serialized bytes too short to hold a CDR encapsulation header (`what` names the
/// topic or service in the error).
pub(crate) fn require_encapsulation(bytes: &[u8], what: &str) -> Result<()> {
    if bytes.len() < 4 {
        return Err(Error::MalformedMessage {
            topic: what.to_string(),
            reason: format!("{} bytes: no CDR encapsulation header", bytes.len()),
        });
    }
    Ok(())
}
