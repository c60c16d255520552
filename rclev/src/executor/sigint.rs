//! Ctrl-C while spinning: as in rclcpp and rclpy, SIGINT shuts the spinning executors down, so
//! `spin` returns and the program's destructors run instead of the process dying mid-callback.
//!
//! The handler is installed only while at least one spin with
//! [`ExecutorOptions::handle_sigint`](super::ExecutorOptions::handle_sigint) runs, and the
//! previous disposition is restored when the last such spin returns: outside a spin, Ctrl-C does
//! what it did before (by default, end the process). A second Ctrl-C while the first is still
//! being handled (while the spins still wind down: a callback that will not return, say) restores
//! the default disposition and re-raises the signal, so a stuck program can always be
//! interrupted.
//!
//! A program that also works outside spins (a command-line tool's loop, say) has the handler
//! installed for the rest of the process with [`install_sigint_handler`], and polls
//! [`sigint_received`]: the process has one SIGINT handler, rclev's, whoever asks for it.
//!
//! The handler itself only does async-signal-safe things: an atomic flag and a `write` to a
//! pipe. A watcher thread, started with the first installation, reads the pipe and shuts the
//! registered executors down.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex, Weak};

use super::ExecutorShared;
use crate::base::sync::lock;

/// The executors spinning with SIGINT handling, and how many spins hold the handler.
struct Registry {
    spinning: Vec<Weak<ExecutorShared>>,
    holders: usize,
    /// Whether [`install_sigint_handler`] holds the handler (for good).
    for_good: bool,
    previous: Option<libc::sigaction>,
}

// SAFETY: `libc::sigaction` is plain data (a handler address, flags and a signal mask); it is
// only ever handed back to the kernel.
unsafe impl Send for Registry {}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    spinning: Vec::new(),
    holders: 0,
    for_good: false,
    previous: None,
});

/// Write end of the watcher's pipe (-1: no watcher yet).
static PIPE_WRITE: AtomicI32 = AtomicI32::new(-1);
/// Set by the handler; cleared when the last handling spin returns, so a second Ctrl-C while
/// a spin is still winding down (a callback that does not return) ends the process.
static PENDING: AtomicBool = AtomicBool::new(false);
/// Set by the handler, never cleared: what [`sigint_received`] reports.
static RECEIVED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_signal: libc::c_int) {
    if PENDING.swap(true, Ordering::SeqCst) {
        // Second Ctrl-C before the first was handled: give the signal its old meaning.
        // SAFETY: `sigaction` and `raise` are async-signal-safe. Reading `REGISTRY` here would
        // not be, so the default disposition is restored instead of the saved one.
        unsafe {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::raise(libc::SIGINT);
        }
        return;
    }
    RECEIVED.store(true, Ordering::SeqCst);
    let fd = PIPE_WRITE.load(Ordering::SeqCst);
    if fd >= 0 {
        let byte = 1u8;
        // SAFETY: `write` is async-signal-safe; `byte` outlives the call. A full pipe means a
        // wake-up is already pending, so the result is ignored.
        unsafe {
            libc::write(fd, (&byte as *const u8).cast(), 1);
        }
    }
}

/// Starts the watcher thread and its pipe once.
fn ensure_watcher() -> std::io::Result<()> {
    if PIPE_WRITE.load(Ordering::SeqCst) >= 0 {
        return Ok(());
    }
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `pipe2` writes two descriptors into the array we pass.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let read_fd = fds[0];
    std::thread::Builder::new()
        .name("rclev-sigint".into())
        .spawn(move || loop {
            let mut byte = 0u8;
            // SAFETY: reads at most one byte into `byte`, a valid buffer.
            let n = unsafe { libc::read(read_fd, (&mut byte as *mut u8).cast(), 1) };
            if n == 1 {
                // Upgrade, shut down and let go under the registry's lock. A spin that returns
                // meanwhile unregisters (`SigintGuard::drop`, before the spin lets go of its
                // own reference) only afterwards, so this thread never holds the last
                // reference to an executor: dropping it here would tear its transport down on
                // this thread, possibly while the main thread already runs `exit()` — a DDS
                // participant deleted then crashed the process (measured: 1–10 % of Ctrl-C'd
                // DDS runs). `shutdown` takes no lock of the registry's.
                let reg = lock(&REGISTRY);
                let executors: Vec<_> = reg.spinning.iter().filter_map(Weak::upgrade).collect();
                if !executors.is_empty() {
                    tracing::info!(target: "rclev", "SIGINT: shutting down");
                }
                for e in &executors {
                    e.shutdown();
                }
                drop(executors);
                drop(reg);
            } else if n < 0
                && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted
            {
                return;
            }
        })?;
    PIPE_WRITE.store(fds[1], Ordering::SeqCst);
    Ok(())
}

/// Keeps SIGINT handling installed for one spin of `exec`; restores the previous disposition
/// when the last such guard drops.
pub(crate) struct SigintGuard {
    exec: Weak<ExecutorShared>,
}

impl SigintGuard {
    /// Installs (or joins) SIGINT handling for a spin of `exec`. `None` if it cannot be
    /// installed (then Ctrl-C keeps its previous meaning; the spin itself works on).
    pub(crate) fn install(exec: &Arc<ExecutorShared>) -> Option<Self> {
        let mut reg = lock(&REGISTRY);
        if let Err(e) = hold(&mut reg) {
            crate::diagnostic!(WARN, target: "rclev", "cannot handle Ctrl-C: {e}");
            return None;
        }
        reg.spinning.retain(|w| w.strong_count() > 0);
        reg.spinning.push(Arc::downgrade(exec));
        Some(Self {
            exec: Arc::downgrade(exec),
        })
    }
}

/// Installs the handler unless it is installed, and counts one more holder of it.
fn hold(reg: &mut Registry) -> std::io::Result<()> {
    ensure_watcher()?;
    if reg.holders == 0 {
        // SAFETY: a zeroed `sigaction` is a valid "no handler, no flags, empty mask" value,
        // filled in below; `on_sigint` has the required `extern "C" fn(c_int)` signature and
        // only does async-signal-safe work.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_sigint as extern "C" fn(libc::c_int) as usize;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            let mut previous: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGINT, &action, &mut previous) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            reg.previous = Some(previous);
        }
    }
    reg.holders += 1;
    Ok(())
}

/// Installs rclev's Ctrl-C (SIGINT) handler for the rest of the process's life, as
/// `rclcpp::init` does; without this call it is installed only while a spin with
/// [`ExecutorOptions::handle_sigint`](super::ExecutorOptions::handle_sigint) runs.
///
/// The first Ctrl-C then shuts down the executors spinning with `handle_sigint` (as during any
/// spin) and makes [`sigint_received`] true, which a program that works outside spins polls to
/// wind down. Any later Ctrl-C ends the process by SIGINT's default action (a shell reports
/// status 130), so a program that does not wind down can still be interrupted. Calling it
/// again does nothing. An error means the handler could not be installed: Ctrl-C keeps its
/// previous meaning. The handler replaces SIGINT's previous disposition for the whole
/// process; do not combine it with another SIGINT handler (`tokio::signal::ctrl_c`, say).
pub fn install_sigint_handler() -> std::io::Result<()> {
    let mut reg = lock(&REGISTRY);
    if !reg.for_good {
        // A holder that never lets go: the disposition is never restored.
        hold(&mut reg)?;
        reg.for_good = true;
    }
    Ok(())
}

/// Whether rclev's SIGINT handler (see [`install_sigint_handler`]) has caught a Ctrl-C in this
/// process. It stays true once set.
pub fn sigint_received() -> bool {
    RECEIVED.load(Ordering::SeqCst)
}

impl Drop for SigintGuard {
    fn drop(&mut self) {
        let mut reg = lock(&REGISTRY);
        if let Some(i) = reg.spinning.iter().position(|w| w.ptr_eq(&self.exec)) {
            reg.spinning.swap_remove(i);
        }
        reg.holders -= 1;
        if reg.holders == 0 {
            PENDING.store(false, Ordering::SeqCst);
            if let Some(previous) = reg.previous.take() {
                // SAFETY: restores the disposition `sigaction` reported when we installed ours.
                unsafe {
                    libc::sigaction(libc::SIGINT, &previous, std::ptr::null_mut());
                }
            }
        }
    }
}
