//! Ctrl-C for the long-running commands (`topic echo|pub|hz|bw`): the first SIGINT asks them
//! to finish cleanly (they check between messages, at least every half second); a second one
//! ends the process at once, as the default action would.

use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    // Only async-signal-safe work here: an atomic swap, and `_exit` on the second signal.
    if INTERRUPTED.swap(true, Ordering::SeqCst) {
        // SAFETY: `_exit` is async-signal-safe.
        unsafe { libc::_exit(130) };
    }
}

/// Installs the handler (idempotent).
pub fn install() {
    // SAFETY: `on_sigint` is an `extern "C" fn(c_int)` that only does async-signal-safe work;
    // `signal` replaces the disposition of SIGINT for the whole process, which is what a
    // command-line tool wants.
    unsafe {
        libc::signal(libc::SIGINT, on_sigint as *const () as libc::sighandler_t);
    }
}

/// Whether Ctrl-C was pressed.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}
