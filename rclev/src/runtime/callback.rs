//! User callbacks as entities store them: plain closures get the worker's payload (ignored on a
//! node's default worker); async ones return a future that runs on the worker's task.

use std::any::Any;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;

use crate::runtime::core::WorkerHost;
use crate::runtime::executable::{ExecContext, Refused};
use crate::runtime::fence::CallGate;
use crate::runtime::worker::guard_async;

type SyncFn<A> = Box<dyn FnMut(&mut (dyn Any + Send), A) + Send>;
type AsyncFn<A> = Box<dyn FnMut(A) -> BoxFuture<'static, ()> + Send>;

pub(crate) enum Callback<A> {
    Sync(SyncFn<A>),
    Async(AsyncFn<A>),
}

/// Downcasts a worker's payload. The payload type of a worker is fixed when the worker is
/// created and every callback registered through `Worker<P>` is typed with that same `P`.
pub(crate) fn payload_of<P: 'static>(payload: &mut (dyn Any + Send)) -> &mut P {
    payload
        .downcast_mut::<P>()
        .expect("a worker only runs callbacks registered for its own payload type")
}

impl<A: 'static> Callback<A> {
    /// A closure that ignores the payload.
    pub(crate) fn plain(mut f: impl FnMut(A) + Send + 'static) -> Self {
        Self::Sync(Box::new(move |_, a| f(a)))
    }

    /// A closure that receives the worker's payload.
    pub(crate) fn with_payload<P: 'static>(mut f: impl FnMut(&mut P, A) + Send + 'static) -> Self {
        Self::Sync(Box::new(move |p, a| f(payload_of::<P>(p), a)))
    }

    /// An async callback.
    pub(crate) fn asynchronous<Fut>(mut f: impl FnMut(A) -> Fut + Send + 'static) -> Self
    where
        Fut: Future<Output = ()> + Send + 'static,
    {
        Self::Async(Box::new(move |a| Box::pin(f(a))))
    }

    /// Invokes the callback, catching panics (reported with `label`), unless the executor has
    /// shut down or `still_wanted` says no at the last moment (see `ExecContext::start`):
    /// then it returns [`Refused`] and the callback does not start.
    pub(crate) fn call(
        &mut self,
        cx: &mut ExecContext<'_>,
        label: &str,
        exec: &Arc<WorkerHost>,
        arg: A,
        gate: Option<&CallGate>,
        still_wanted: impl FnOnce() -> bool,
    ) -> Result<(), Refused> {
        match self {
            Self::Sync(f) => {
                cx.start_gated(gate, label, still_wanted, |p| f(p, arg))?;
            }
            Self::Async(f) => {
                if let Some(fut) = cx.start_gated(gate, label, still_wanted, |_| f(arg))? {
                    cx.spawn(guard_async(label.to_string(), exec.clone(), fut));
                }
            }
        }
        Ok(())
    }
}
