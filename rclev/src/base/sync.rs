//! The synchronisation primitives behind the subtle protocols (entity dispatch with the
//! mailbox's parking, the worker's spin gate and start fences, the timers' stop counter, and the
//! timer scheduler's sleep/wake handshake), from `std` normally and from `loom` when the crate is
//! built with `--cfg rclev_loom`, so the same code can be model-checked.
//!
//! A custom cfg name is used instead of `loom` because Tokio reacts to `cfg(loom)` itself.
//!
//! Besides the types, waiting goes through here too: loom explores a spin loop only if the
//! spinning thread tells it that it yields ([`spin_loop`], [`yield_now`], [`backoff_sleep`]),
//! and it sees a thread-local only if it is one of loom's ([`thread_local!`]), since loom runs
//! every modelled thread on one OS thread.

#[cfg(not(rclev_loom))]
pub(crate) use std::sync::{
    atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
    Condvar, Mutex, MutexGuard,
};

#[cfg(rclev_loom)]
pub(crate) use loom::sync::{atomic::Ordering, Condvar, Mutex, MutexGuard};

#[cfg(rclev_loom)]
pub(crate) use loom_atomic::{AtomicBool, AtomicU64, AtomicUsize};

/// Declares a thread-local with a `const` initialiser: `std`'s, or under loom loom's (one per
/// modelled thread; loom's macro takes no `const` block).
macro_rules! model_thread_local {
    ($(#[$attr:meta])* $vis:vis static $name:ident: $t:ty = const $init:block;) => {
        #[cfg(not(rclev_loom))]
        std::thread_local! { $(#[$attr])* $vis static $name: $t = const $init; }
        #[cfg(rclev_loom)]
        loom::thread_local! { $(#[$attr])* $vis static $name: $t = $init; }
    };
}
pub(crate) use model_thread_local as thread_local;

/// The async notification the spin gate's closing spin waits on: Tokio's, or under loom a
/// stand-in with the same `notify_waiters` contract (see `loom_notify`).
#[cfg(not(rclev_loom))]
pub(crate) use tokio::sync::Notify;

#[cfg(rclev_loom)]
pub(crate) use loom_notify::Notify;

/// One turn of a busy-wait.
#[inline]
pub(crate) fn spin_loop() {
    #[cfg(not(rclev_loom))]
    std::hint::spin_loop();
    #[cfg(rclev_loom)]
    loom::hint::spin_loop();
}

/// Lets another thread run.
#[inline]
pub(crate) fn yield_now() {
    #[cfg(not(rclev_loom))]
    std::thread::yield_now();
    #[cfg(rclev_loom)]
    loom::thread::yield_now();
}

/// Sleeps for `d` in a wait that has spun long enough; under loom a yield (loom has no time,
/// and a sleep would only stall the one OS thread every modelled thread runs on).
#[inline]
pub(crate) fn backoff_sleep(d: std::time::Duration) {
    #[cfg(not(rclev_loom))]
    std::thread::sleep(d);
    #[cfg(rclev_loom)]
    {
        let _ = d;
        loom::thread::yield_now();
    }
}

/// Locks a `std` mutex, ignoring poisoning: every critical section in rclev leaves its data
/// consistent even if a panic unwinds through it (user callbacks never run under these locks).
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// [`lock`] for the facade's (possibly loom) mutex.
pub(crate) fn model_lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A loom stand-in for `tokio::sync::Notify`, reduced to what rclev uses of it with loom-visible
/// state: `notified()`, `Notified::enable` and `notify_waiters()`.
///
/// It keeps Tokio's documented `notify_waiters` contract: a `Notified` future completes after
/// any `notify_waiters` call made after the future was *created*, polled or not (Tokio snapshots
/// a call counter at creation; this snapshots `calls`), and no permit is stored for futures
/// created later. Tokio's own state is made of `std` atomics, which loom cannot see, so the
/// models check the protocols built on it against this contract rather than Tokio's code.
#[cfg(rclev_loom)]
mod loom_notify {
    use std::future::Future;
    use std::pin::Pin;
    use std::task::{Context, Poll, Waker};

    use super::{model_lock as lock, Mutex};

    #[derive(Default)]
    struct State {
        /// `notify_waiters` calls so far.
        calls: u64,
        waiters: Vec<Waker>,
    }

    /// See the module docs.
    #[derive(Default)]
    pub(crate) struct Notify {
        state: Mutex<State>,
    }

    /// A wait for the next `notify_waiters` call after this was created.
    pub(crate) struct Notified<'a> {
        notify: &'a Notify,
        seen: u64,
    }

    impl Notify {
        pub(crate) fn notified(&self) -> Notified<'_> {
            Notified {
                notify: self,
                seen: lock(&self.state).calls,
            }
        }

        pub(crate) fn notify_waiters(&self) {
            let waiters = {
                let mut state = lock(&self.state);
                state.calls += 1;
                std::mem::take(&mut state.waiters)
            };
            for w in waiters {
                w.wake();
            }
        }
    }

    impl Notified<'_> {
        /// Tokio needs this for `notify_one`'s permit only; `notify_waiters` already counts
        /// from creation, so there is nothing to do.
        pub(crate) fn enable(self: Pin<&mut Self>) -> bool {
            true
        }
    }

    impl Future for Notified<'_> {
        type Output = ();
        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            let mut state = lock(&self.notify.state);
            if state.calls != self.seen {
                return Poll::Ready(());
            }
            if !state.waiters.iter().any(|w| w.will_wake(cx.waker())) {
                state.waiters.push(cx.waker().clone());
            }
            Poll::Pending
        }
    }
}

/// loom's atomics, with the initial value stored again with `SeqCst`.
///
/// loom treats `SeqCst` accesses as `AcqRel` except that a `SeqCst` load does not return a
/// `SeqCst` store older than another `SeqCst` store (tokio-rs/loom#180). The value an atomic is
/// created with counts as a plain `Release` store there, so a `SeqCst` load on another thread
/// could still return it after a `SeqCst` store it does not happen-after: Dekker's pattern
/// (the start fence, the call gate, the spin gate's `active`/`running` and `closers`/`running`
/// pairs) would then fail in the models although Rust forbids that outcome (the creation
/// happens-before every access, so it precedes each `SeqCst` store in the total order). The
/// extra `SeqCst` store of the same value puts the initial value in that order, as Rust has it.
#[cfg(rclev_loom)]
mod loom_atomic {
    use loom::sync::atomic::Ordering;

    macro_rules! seq_cst_initialised {
        ($name:ident, $t:ty) => {
            /// See the module docs; derefs to loom's atomic.
            #[derive(Debug)]
            pub(crate) struct $name(loom::sync::atomic::$name);

            impl $name {
                pub(crate) fn new(value: $t) -> Self {
                    let atomic = loom::sync::atomic::$name::new(value);
                    atomic.store(value, Ordering::SeqCst);
                    Self(atomic)
                }
            }

            impl Default for $name {
                fn default() -> Self {
                    Self::new(Default::default())
                }
            }

            impl std::ops::Deref for $name {
                type Target = loom::sync::atomic::$name;
                fn deref(&self) -> &Self::Target {
                    &self.0
                }
            }
        };
    }

    seq_cst_initialised!(AtomicBool, bool);
    seq_cst_initialised!(AtomicU64, u64);
    seq_cst_initialised!(AtomicUsize, usize);
}
