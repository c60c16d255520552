//! Ctrl-C for the long-running commands (`topic echo|pub|hz|bw`, `action send_goal`): the
//! first SIGINT asks them to finish cleanly (exit status 0, after their last output; every
//! wait of theirs looks at [`interrupted`] at least every half second); a second one ends the
//! process at once, with the status a shell reports for a SIGINT (130).
//!
//! The handler is installed by `main` as soon as the command line is parsed, before any DDS
//! work. A SIGINT that comes earlier still, while the process is being loaded (its first
//! milliseconds, before any code of ours runs), takes the default action as it would for any
//! program: that window cannot be closed from inside the process. Tests that interrupt "at
//! once" wait for the handler first (`SigCgt` in `/proc/<pid>/status`).

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
    // SAFETY: a zeroed `sigaction` is a valid "no handler, no flags, empty mask" value, filled
    // in below; `on_sigint` is an `extern "C" fn(c_int)` that only does async-signal-safe
    // work. SA_RESTART: a system call the signal lands in (a read in Fast DDS, a write of
    // ours) resumes instead of failing with EINTR. This replaces the disposition of SIGINT
    // for the whole process, which is what a command-line tool wants.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_sigint as extern "C" fn(libc::c_int) as usize;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGINT, &action, std::ptr::null_mut());
    }
}

/// Whether Ctrl-C was pressed.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}
