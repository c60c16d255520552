//! loom models of the scheduler's sleep/wake handshake. Run with
//! `RUSTFLAGS="--cfg rclev_loom" cargo test --release --lib loom` (`.ci/run` does).
//!
//! loom's `Condvar::wait_timeout` never times out, so a waiter that misses a wake-up it needs
//! blocks forever and loom reports the deadlock: each model passes only if every interleaving
//! of "register a timer" with "decide to sleep, then sleep" ends with the tick delivered.

use std::time::{Duration, Instant};

use std::sync::Arc;

use super::scheduler::{SchedulerCore, TimerTick};
use super::TimerPrecision;
use crate::executor::dispatch::EntityDispatch;
use crate::executor::mailbox::Mailbox;
use crate::sync::Ordering;

fn tick() -> Arc<TimerTick> {
    let mailbox = Arc::new(Mailbox::default());
    Arc::new(TimerTick::new(EntityDispatch::unbound(mailbox)))
}

fn delivered(tick: &TimerTick) -> bool {
    tick.due.load(Ordering::Acquire) != 0
}

/// The waiter starts with an empty heap (it will wait "forever") while a due timer is
/// registered concurrently.
#[test]
fn loom_registration_racing_with_an_idle_waiter() {
    loom::model(|| {
        let core = Arc::new(SchedulerCore::new(TimerPrecision::low_cpu()));
        let c = core.clone();
        let waiter = loom::thread::spawn(move || c.run_while(|delivered| delivered == 0));
        let t = tick();
        core.insert(t.clone(), Some(Instant::now()), Duration::ZERO);
        waiter.join().unwrap();
        assert!(delivered(&t));
    });
}

/// The waiter is going to sleep until a far deadline while an earlier timer is registered:
/// the earlier registration must cut the sleep short.
#[test]
fn loom_earlier_registration_racing_with_a_timed_wait() {
    loom::model(|| {
        let core = Arc::new(SchedulerCore::new(TimerPrecision::low_cpu()));
        let far = tick();
        core.insert(
            far.clone(),
            Some(Instant::now() + Duration::from_secs(3600)),
            Duration::ZERO,
        );
        let c = core.clone();
        let waiter = loom::thread::spawn(move || c.run_while(|delivered| delivered == 0));
        let near = tick();
        core.insert(near.clone(), Some(Instant::now()), Duration::ZERO);
        waiter.join().unwrap();
        assert!(delivered(&near));
        assert!(!delivered(&far));
    });
}

/// A cancelled head plus a re-armed timer: the re-arm must be seen even though the cancel did
/// not signal.
#[test]
fn loom_cancel_then_rearm_racing_with_the_waiter() {
    loom::model(|| {
        let core = Arc::new(SchedulerCore::new(TimerPrecision::low_cpu()));
        let t = tick();
        let id = core.insert(
            t.clone(),
            Some(Instant::now() + Duration::from_secs(3600)),
            Duration::ZERO,
        );
        let c = core.clone();
        let waiter = loom::thread::spawn(move || c.run_while(|delivered| delivered == 0));
        core.arm(id, None, None);
        core.arm(id, Some(Instant::now()), None);
        waiter.join().unwrap();
        assert!(delivered(&t));
    });
}

/// Whether `t` holds a tick of its current schedule, which the worker would run.
fn holds_current(t: &TimerTick) -> bool {
    let due = t.due.load(Ordering::Acquire);
    due != 0 && t.is_current(due)
}

/// A re-arm (`reset()`, a mode change) racing with the delivery of a tick already popped
/// under the old schedule. The old tick must never count as current once the re-arm has
/// returned, and it must not block the new schedule's tick: the waiter runs until the victim
/// holds a current tick, so a stale tick that made the new one drop would leave it waiting
/// forever, which loom reports.
#[test]
fn loom_rearm_racing_with_an_in_flight_tick() {
    loom::model(|| {
        let core = Arc::new(SchedulerCore::new(TimerPrecision::low_cpu()));
        let old = Instant::now();
        let mut new = Instant::now();
        while new <= old {
            new = Instant::now();
        }
        let new_stamp = new.duration_since(core.epoch).as_nanos() as u64 + 1;
        let victim = tick();
        let id = core.insert(victim.clone(), Some(old), Duration::ZERO);
        let v = victim.clone();
        let c = core.clone();
        let waiter = loom::thread::spawn(move || {
            c.run_while(|_| !(holds_current(&v) && v.due.load(Ordering::Acquire) >= new_stamp))
        });
        core.arm(id, Some(new), None);
        let due = victim.due.load(Ordering::Acquire);
        assert!(
            due >= new_stamp || !victim.is_current(due),
            "the old tick is current after the re-arm"
        );
        waiter.join().unwrap();
        assert_eq!(victim.due.load(Ordering::Acquire), new_stamp);
        assert!(holds_current(&victim));
        assert_eq!(
            victim.dropped_total.load(Ordering::Relaxed),
            0,
            "the new tick was dropped"
        );
    });
}

/// Shutdown racing with the waiter going to sleep ends the thread.
#[test]
fn loom_shutdown_racing_with_the_waiter() {
    loom::model(|| {
        let core = Arc::new(SchedulerCore::new(TimerPrecision::low_cpu()));
        let c = core.clone();
        let waiter = loom::thread::spawn(move || c.run_while(|_| true));
        core.shutdown();
        waiter.join().unwrap();
    });
}
