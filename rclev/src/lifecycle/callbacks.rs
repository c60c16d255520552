//! The transition callbacks (`on_configure` … `on_error`): what they may return, how they are
//! stored, and how one is run so that a panic or an `Err` becomes [`CallbackReturn::Error`].

use std::future::Future;
use std::panic::AssertUnwindSafe;

use futures::future::BoxFuture;
use futures::FutureExt;

use crate::base::error::panic_message;
use crate::base::lifecycle_state::{CallbackReturn, State};
use crate::base::sync::lock;

/// What a transition callback may return: a [`CallbackReturn`], or a `Result` whose `Err` is
/// an error (rclcpp's exception in a callback): it is logged and counts as
/// [`CallbackReturn::Error`]. `Ok(())` is success.
///
/// ```
/// use rclev::lifecycle::{CallbackReturn, IntoCallbackReturn};
/// assert_eq!(CallbackReturn::Failure.into_callback_return(), Ok(CallbackReturn::Failure));
/// let failed: Result<(), std::io::Error> = Err(std::io::Error::other("no device"));
/// assert_eq!(failed.into_callback_return(), Err("no device".to_string()));
/// ```
pub trait IntoCallbackReturn {
    /// The callback's decision, or the error it raised, as text.
    fn into_callback_return(self) -> Result<CallbackReturn, String>;
}

impl IntoCallbackReturn for CallbackReturn {
    fn into_callback_return(self) -> Result<CallbackReturn, String> {
        Ok(self)
    }
}

impl<E: std::fmt::Display> IntoCallbackReturn for Result<CallbackReturn, E> {
    fn into_callback_return(self) -> Result<CallbackReturn, String> {
        self.map_err(|e| e.to_string())
    }
}

impl<E: std::fmt::Display> IntoCallbackReturn for Result<(), E> {
    fn into_callback_return(self) -> Result<CallbackReturn, String> {
        self.map(|()| CallbackReturn::Success)
            .map_err(|e| e.to_string())
    }
}

/// A stored callback: given the state the transition started from, a future of its decision.
/// A plain callback has run when it returns (its future is ready).
pub(super) type HookFn =
    Box<dyn FnMut(State) -> BoxFuture<'static, Result<CallbackReturn, String>> + Send>;

pub(super) fn plain<R: IntoCallbackReturn>(
    mut f: impl FnMut(State) -> R + Send + 'static,
) -> HookFn {
    Box::new(move |state| futures::future::ready(f(state).into_callback_return()).boxed())
}

pub(super) fn asynchronous<F, Fut>(mut f: F) -> HookFn
where
    F: FnMut(State) -> Fut + Send + 'static,
    Fut: Future + Send + 'static,
    Fut::Output: IntoCallbackReturn,
{
    Box::new(move |state| {
        f(state)
            .map(IntoCallbackReturn::into_callback_return)
            .boxed()
    })
}

/// Which callback: one per transition state, which is where it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Hook {
    Configure,
    Cleanup,
    Shutdown,
    Activate,
    Deactivate,
    Error,
}

impl Hook {
    /// The callback that runs in `state` (a transition state).
    pub(super) fn of(state: State) -> Option<Hook> {
        Some(match state {
            State::Configuring => Hook::Configure,
            State::CleaningUp => Hook::Cleanup,
            State::ShuttingDown => Hook::Shutdown,
            State::Activating => Hook::Activate,
            State::Deactivating => Hook::Deactivate,
            State::ErrorProcessing => Hook::Error,
            _ => return None,
        })
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            Hook::Configure => "on_configure",
            Hook::Cleanup => "on_cleanup",
            Hook::Shutdown => "on_shutdown",
            Hook::Activate => "on_activate",
            Hook::Deactivate => "on_deactivate",
            Hook::Error => "on_error",
        }
    }
}

/// The six callbacks; an empty slot succeeds (as rclcpp's and rclpy's defaults do).
#[derive(Default)]
pub(super) struct Hooks {
    slots: [std::sync::Mutex<Option<HookFn>>; 6],
}

impl Hooks {
    fn slot(&self, hook: Hook) -> &std::sync::Mutex<Option<HookFn>> {
        &self.slots[hook as usize]
    }

    pub(super) fn set(&self, hook: Hook, f: HookFn) {
        *lock(self.slot(hook)) = Some(f);
    }

    /// Runs `hook` with the transition's start state. A panic (in the call or in its future)
    /// and an `Err` are reported through `report` and count as [`CallbackReturn::Error`].
    ///
    /// The callback is taken out of its slot while it is called, so that it may replace any
    /// callback, itself included, without a deadlock; only one transition runs at a time, so
    /// no other call can find the slot empty meanwhile.
    pub(super) async fn run(
        &self,
        hook: Hook,
        previous: State,
        report: impl Fn(String),
    ) -> CallbackReturn {
        let Some(mut f) = lock(self.slot(hook)).take() else {
            return CallbackReturn::Success;
        };
        let called = std::panic::catch_unwind(AssertUnwindSafe(|| f(previous)));
        {
            let mut slot = lock(self.slot(hook));
            // Unless the callback registered a successor meanwhile.
            if slot.is_none() {
                *slot = Some(f);
            }
        }
        let outcome = match called {
            Ok(future) => AssertUnwindSafe(future).catch_unwind().await,
            Err(panic) => Err(panic),
        };
        match outcome {
            Ok(Ok(code)) => code,
            Ok(Err(reason)) => {
                report(format!("{} failed: {reason}", hook.name()));
                CallbackReturn::Error
            }
            Err(panic) => {
                report(format!(
                    "{} panicked: {}",
                    hook.name(),
                    panic_message(&*panic)
                ));
                CallbackReturn::Error
            }
        }
    }
}
