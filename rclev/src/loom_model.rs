//! What the loom models share: how a model is run and measured, the Tokio handle the
//! executor's state needs (nothing ever runs on it), and a worker on a loom thread.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crate::executor::ExecutorShared;
use crate::runtime::mailbox::Mailbox;
use crate::runtime::worker::{run_worker, SpinPolicy};

/// Runs `f` under loom as `name`, exploring every interleaving within `preemption_bound`
/// preemptions (`None`: all of them; `LOOM_MAX_PREEMPTIONS` overrides either), and prints how
/// many interleavings it explored and how long that took (`-- --nocapture` shows it). Set
/// `LOOM_LOG=info` (or `trace`) for loom's own log, as with `loom::model`.
pub(crate) fn check(
    name: &str,
    preemption_bound: Option<usize>,
    f: impl Fn() + Sync + Send + 'static,
) {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = preemption_bound;
    }
    let bound = builder.preemption_bound;
    // Counted by the model itself: loom reports the figure only in its log.
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let started = Instant::now();
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_env("LOOM_LOG"))
        .with_test_writer()
        .without_time()
        .finish();
    tracing::subscriber::with_default(subscriber, || {
        builder.check(move || {
            counted.fetch_add(1, Ordering::Relaxed);
            f();
        })
    });
    eprintln!(
        "loom model {name}: {} interleavings (preemption bound {}) in {:.2?}",
        runs.load(Ordering::Relaxed),
        bound.map_or("none".to_string(), |b| b.to_string()),
        started.elapsed(),
    );
}

/// A handle of a current-thread runtime that is never driven: `ExecutorShared` needs one, and
/// the models run its workers on loom threads instead.
pub(crate) fn idle_runtime() -> tokio::runtime::Handle {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_current_thread()
                .build()
                .expect("a current-thread runtime without drivers")
        })
        .handle()
        .clone()
}

/// Runs the real worker loop (`run_worker`) for `mailbox` on a loom thread, until the mailbox
/// closes or the executor shuts down.
pub(crate) fn spawn_worker(
    exec: &Arc<ExecutorShared>,
    mailbox: &Arc<Mailbox>,
) -> loom::thread::JoinHandle<()> {
    let (exec, mailbox) = (exec.clone(), mailbox.clone());
    loom::thread::spawn(move || {
        // No spinning before parking: that decision reads the wall clock, which loom cannot
        // explore, and it changes only when the worker parks, not whether it is woken.
        loom::future::block_on(run_worker(
            mailbox,
            exec.host().clone(),
            Box::new(()),
            SpinPolicy::new(Duration::ZERO),
            // No alarm: timers in the models are handed over by the scheduler only.
            crate::runtime::alarm::WorkerAlarm::new(false, false),
        ))
    })
}
