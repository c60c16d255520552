//! The start fence: how "once `drop`, `cancel()`, `set_inert()` or `shutdown()` has returned,
//! no callback starts" holds without those calls waiting for callbacks that already run (they
//! may be called from those very callbacks, or while one blocks for seconds).
//!
//! # Protocol
//!
//! Each worker owns one fence. A worker about to start a user callback
//!
//! 1. raises `starting` (`SeqCst` store),
//! 2. reads the stop conditions: the executor's shutdown flag and the entity's own (closed,
//!    cancelled, schedule changed) with `SeqCst` loads,
//! 3. if none is set, lowers `starting` as the last thing before calling into user code;
//!    otherwise lowers it and skips the callback.
//!
//! A canceller stores its stop condition (`SeqCst`), then waits while `starting` is raised
//! ([`StartFence::wait_out`]). It is Dekker's pattern on two locations: in the single total
//! order of `SeqCst` operations either the worker's read comes after the canceller's store (it
//! sees the condition and skips), or the canceller's read of `starting` comes after the
//! worker's raise — then it waits until the worker has either skipped or entered user code,
//! i.e. the callback started *before* the canceller returned. The window it waits out holds no
//! user code and no lock, so the wait is a few hundred nanoseconds unless the worker thread is
//! preempted inside it.

// The waits go through the facade too: under loom they must tell the model that they yield.
use crate::base::sync::{backoff_sleep, spin_loop, yield_now, AtomicBool, Ordering};

/// One worker's start fence. See the module docs.
#[derive(Default)]
pub(crate) struct StartFence {
    starting: AtomicBool,
}

impl StartFence {
    /// Worker side, step 1: a callback may be about to start.
    pub(crate) fn enter(&self) {
        self.starting.store(true, Ordering::SeqCst);
    }

    /// Worker side, step 3: the decision is made (user code starts next, or not at all).
    pub(crate) fn leave(&self) {
        self.starting.store(false, Ordering::SeqCst);
    }

    /// Canceller side: after storing a stop condition with `SeqCst`, waits until the worker is
    /// not between [`enter`](Self::enter) and [`leave`](Self::leave). Never called by the
    /// fence's own worker inside that window (no user code runs there).
    pub(crate) fn wait_out(&self) {
        let mut spins = 0u32;
        while self.starting.load(Ordering::SeqCst) {
            if spins < 128 {
                spin_loop();
                spins += 1;
            } else {
                // Preempted inside the window: let it run.
                yield_now();
            }
        }
    }
}

/// An entity's call gate: raised by its worker from just before the stop conditions are read
/// until the callback has *returned*. Dropping or stopping the entity from any other thread
/// waits it out, so once that returns, the callback is neither starting nor running, and an
/// observer on that thread can never see it begin afterwards. From inside the callback itself
/// (the worker's own thread, in a section of the entity's worker) nothing is waited for: the
/// running call is the caller.
///
/// Like joining a thread, this waits for a callback that runs when the stop is called; a
/// callback that blocks until the stopping thread proceeds would deadlock with it.
#[derive(Default)]
pub(crate) struct CallGate {
    calling: AtomicBool,
}

impl CallGate {
    /// Worker side: a call of this entity's callback may start.
    pub(crate) fn enter(&self) {
        self.calling.store(true, Ordering::SeqCst);
    }

    /// Worker side: the call was refused or has returned.
    pub(crate) fn leave(&self) {
        self.calling.store(false, Ordering::SeqCst);
    }

    /// Canceller side, after storing its stop condition with `SeqCst`: waits until no call is
    /// deciding to start or running, unless `on_own_worker` (the caller is that worker).
    pub(crate) fn wait_out(&self, on_own_worker: bool) {
        if on_own_worker {
            return;
        }
        let mut backoff = 0u32;
        while self.calling.load(Ordering::SeqCst) {
            match backoff {
                0..=127 => spin_loop(),
                128..=255 => yield_now(),
                // A callback that runs for a while: don't burn a core waiting.
                _ => backoff_sleep(std::time::Duration::from_micros(
                    50u64 << (backoff - 256).min(5),
                )),
            }
            backoff = backoff.saturating_add(1);
        }
    }
}
