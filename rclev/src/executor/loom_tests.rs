//! loom model of the readiness path: a producer making items takeable and calling
//! `EntityDispatch::notify`, racing with a worker that takes mailbox entries, calls `begin`,
//! drains, and parks through the mailbox's waker when it finds nothing. Run with
//! `RUSTFLAGS="--cfg rclev_loom" cargo test --release --lib loom` (`.ci/run` does).
//!
//! The worker stops only after it has consumed every item, and while parked it blocks until its
//! waker runs: a lost readiness (an item left with no entry queued and no wake-up) leaves it
//! blocked forever, which loom reports as a deadlock. The model also checks the coalescing
//! bound: never more than one entry queued for the entity.

use std::sync::Arc;

use futures::task::{waker, ArcWake};

use super::dispatch::{EntityDispatch, ExecContext, Executable};
use super::mailbox::{MailItem, Mailbox, Take};
use crate::sync::{model_lock as lock, AtomicU64, Condvar, Mutex, Ordering};

/// The entity: its "queue" is a count of takeable items.
struct Counter {
    dispatch: Arc<EntityDispatch>,
    takeable: AtomicU64,
}

impl Executable for Counter {
    fn execute(&self, _cx: &mut ExecContext<'_>) {}
    fn dispatch(&self) -> &EntityDispatch {
        &self.dispatch
    }
}

/// The worker's parking spot: the waker sets `woken` and signals.
#[derive(Default)]
struct Parker {
    woken: Mutex<bool>,
    signal: Condvar,
}

impl ArcWake for Parker {
    fn wake_by_ref(arc_self: &Arc<Self>) {
        *lock(&arc_self.woken) = true;
        arc_self.signal.notify_one();
    }
}

impl Parker {
    fn park(&self) {
        let mut woken = lock(&self.woken);
        while !*woken {
            woken = self.signal.wait(woken).unwrap();
        }
        *woken = false;
    }
}

#[test]
fn loom_readiness_is_never_lost_and_entries_coalesce() {
    const ITEMS: u64 = 2;
    loom::model(|| {
        let mailbox = Arc::new(Mailbox::default());
        let dispatch = EntityDispatch::unbound(mailbox.clone());
        let counter = Arc::new(Counter {
            dispatch: dispatch.clone(),
            takeable: AtomicU64::new(0),
        });
        let entity: Arc<dyn Executable> = counter.clone();
        dispatch.bind(Arc::downgrade(&entity), false);

        let c = counter.clone();
        let producer = loom::thread::spawn(move || {
            for _ in 0..ITEMS {
                // Make the item takeable first, then push readiness (the protocol's order).
                c.takeable.fetch_add(1, Ordering::Release);
                c.dispatch.notify();
            }
        });

        let parker = Arc::new(Parker::default());
        let park = waker(parker.clone());
        let mut consumed = 0;
        let mut out = Vec::new();
        loop {
            out.clear();
            match mailbox.take(&mut out, Some(&park)) {
                Take::Items => {
                    assert_eq!(out.len(), 1, "more than one entry queued for one entity");
                    for item in out.drain(..) {
                        let MailItem::Entity(weak) = item else {
                            panic!("unexpected job")
                        };
                        let entity = weak.upgrade().expect("the entity is alive");
                        entity.dispatch().begin();
                        consumed += counter.takeable.swap(0, Ordering::AcqRel);
                    }
                }
                Take::Empty if consumed == ITEMS => break,
                Take::Empty => {
                    // Parked: only a push that found the registered waker lets it go on.
                    parker.park();
                }
                Take::Closed => unreachable!("nobody closes the mailbox"),
            }
        }
        producer.join().unwrap();
        assert_eq!(counter.takeable.load(Ordering::Acquire), 0);
    });
}
