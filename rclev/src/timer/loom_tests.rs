//! loom models of the timers. Run with
//! `RUSTFLAGS="--cfg rclev_loom" cargo test --release --lib loom` (`.ci/run` does).
//!
//! - The scheduler's sleep/wake handshake: loom's `Condvar::wait_timeout` never times out, so
//!   a waiter that misses a wake-up it needs blocks forever and loom reports the deadlock: each
//!   of these models passes only if every interleaving of "register a timer" with "decide to
//!   sleep, then sleep" ends with the tick delivered.
//! - A timer's drop racing the worker firing it, on the real `TimerCore` run by the real worker
//!   loop; a mode change racing the worker running the old arming's tick while the real
//!   scheduler loop hands over the new arming's first one (a one-shot that was lost); a mode
//!   change racing the scheduler loop's early hand-off of an old tick (a one-shot that fired
//!   twice).
//! - Pacing: a worker's pull racing a re-arm, and racing the watchdog taking the timer back.
//! - The simulated-time lanes: a `/clock` advance racing a re-arm or a removal; a ROS-time
//!   timer's creation racing the switch to simulated time.

use std::time::{Duration, Instant};

use std::sync::Arc;

use super::entry::{Stamp, TimerTick};
use super::heap::{GridTime, SimTime};
use super::scheduler::SchedulerCore;
use super::{create_timer, IntoTimerCallback, IntoTimerOptions, TimerKind, TimerPrecision};
use crate::base::sync::{model_lock as lock, AtomicBool, Condvar, Mutex, Ordering};
use crate::executor::ExecutorShared;
use crate::loom_model::{check, idle_runtime, spawn_worker};
use crate::node::WorkerCore;
use crate::runtime::dispatch::EntityDispatch;
use crate::runtime::mailbox::{MailItem, Mailbox};
use loom::sync::atomic::AtomicI64;

fn tick() -> Arc<TimerTick> {
    let mailbox = Arc::new(Mailbox::default());
    Arc::new(TimerTick::new(EntityDispatch::unbound(mailbox)))
}

fn delivered(tick: &TimerTick) -> bool {
    tick.due.load(Ordering::Acquire) != Stamp::NONE
}

/// The waiter starts with an empty heap (it will wait "forever") while a due timer is
/// registered concurrently.
#[test]
fn loom_registration_racing_with_an_idle_waiter() {
    check("scheduler: registration vs idle waiter", None, || {
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
    check(
        "scheduler: earlier registration vs timed wait",
        None,
        || {
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
        },
    );
}

/// A cancelled head plus a re-armed timer: the re-arm must be seen even though the cancel did
/// not signal.
#[test]
fn loom_cancel_then_rearm_racing_with_the_waiter() {
    check("scheduler: cancel + re-arm vs waiter", None, || {
        let core = Arc::new(SchedulerCore::new(TimerPrecision::low_cpu()));
        let t = tick();
        let id = core.insert(
            t.clone(),
            Some(Instant::now() + Duration::from_secs(3600)),
            Duration::ZERO,
        );
        let c = core.clone();
        let waiter = loom::thread::spawn(move || c.run_while(|delivered| delivered == 0));
        core.arm(id, || None, None);
        core.arm(id, || Some(Instant::now()), None);
        waiter.join().unwrap();
        assert!(delivered(&t));
    });
}

/// Whether `t` holds a tick of its current schedule, which the worker would run.
fn holds_current(t: &TimerTick) -> bool {
    let due = t.due.load(Ordering::Acquire);
    due != Stamp::NONE && t.is_current(due)
}

/// Two due instants, `old` before `new`, and `new`'s stamp on `core`: the first deadlines of
/// an arming and of the re-arming that races with it.
fn old_and_new_deadlines(core: &SchedulerCore) -> (Instant, Instant, Stamp) {
    let old = Instant::now();
    let mut new = Instant::now();
    while new <= old {
        new = Instant::now();
    }
    (old, new, Stamp::wall(core.epoch.since(new)))
}

/// After a re-arm to the deadline stamped `new_stamp` returned: no tick of the old arming is
/// current in `victim`.
fn assert_no_old_tick_current(victim: &TimerTick, new_stamp: Stamp) {
    let due = victim.due.load(Ordering::Acquire);
    assert!(
        due >= new_stamp || !victim.is_current(due),
        "the old tick is current after the re-arm"
    );
}

/// Once the new arming's tick was handed over: it is the one waiting, and none was dropped.
fn assert_new_tick_waits(victim: &TimerTick, new_stamp: Stamp) {
    assert_eq!(victim.due.load(Ordering::Acquire), new_stamp);
    assert!(holds_current(victim));
    assert_eq!(
        victim.dropped_total.load(Ordering::Relaxed),
        0,
        "the new tick was dropped"
    );
}

/// A re-arm (`reset()`, a mode change) racing with the scheduler thread popping and handing
/// over a tick of the old schedule. The old tick must never count as current once the re-arm
/// has returned, and it must not block the new schedule's tick: the waiter runs until the
/// victim holds a current tick, so a stale tick that made the new one drop would leave it
/// waiting forever, which loom reports (as it does if the re-arm does not empty `due`).
#[test]
fn loom_rearm_racing_with_an_in_flight_tick() {
    check("scheduler: re-arm vs in-flight tick", None, || {
        let core = Arc::new(SchedulerCore::new(TimerPrecision::low_cpu()));
        let (old, new, new_stamp) = old_and_new_deadlines(&core);
        let victim = tick();
        let id = core.insert(victim.clone(), Some(old), Duration::ZERO);
        let v = victim.clone();
        let c = core.clone();
        let waiter = loom::thread::spawn(move || {
            c.run_while(|_| !(holds_current(&v) && v.due.load(Ordering::Acquire) >= new_stamp))
        });
        core.arm(id, || Some(new), None);
        assert_no_old_tick_current(&victim, new_stamp);
        waiter.join().unwrap();
        assert_new_tick_waits(&victim, new_stamp);
    });
}

/// Shutdown racing with the waiter going to sleep ends the thread.
#[test]
fn loom_shutdown_racing_with_the_waiter() {
    check("scheduler: shutdown vs waiter", None, || {
        let core = Arc::new(SchedulerCore::new(TimerPrecision::low_cpu()));
        let c = core.clone();
        let waiter = loom::thread::spawn(move || c.run_while(|_| true));
        core.shutdown();
        waiter.join().unwrap();
    });
}

/// Defect 6, on the real code: a worker firing a timer (the real worker loop running the real
/// `TimerCore::execute`, hence `start_gated`, the `CallGate` and the `stops` check) races the
/// user dropping the timer's last handle and then setting an "after" flag. The callback must
/// never see the flag: once the drop has returned, the callback is neither running nor starts.
/// The tick is handed over (the real scheduler's delivery) before the threads start.
///
/// The case that needs the removal to drop the waiting tick (it empties `due` and raises the
/// floor; without both, this fails): a worker that upgraded the timer's `Weak` before the drop
/// and notes `stops` only after the drop bumped it.
#[test]
fn loom_no_timer_callback_starts_after_the_drop_returned() {
    let handle = idle_runtime();
    check("timer drop vs fire (real TimerCore)", None, move || {
        let exec = ExecutorShared::for_model(handle.clone());
        let worker = WorkerCore::for_model(&exec);
        let after = Arc::new(AtomicBool::new(false));
        let late = Arc::new(AtomicBool::new(false));
        let (a, l) = (after.clone(), late.clone());
        // A callback's panic is caught and reported by the worker, so it records instead.
        let callback = move || {
            if a.load(Ordering::SeqCst) {
                l.store(true, Ordering::SeqCst);
            }
        };
        // Due at once: its tick is handed over without the worker busy-waiting for it.
        let timer = create_timer(
            &worker,
            Duration::ZERO,
            TimerKind::OneShot(callback.into_timer_callback()),
        )
        .unwrap();
        exec.timers().core.run_while(|delivered| delivered == 0);

        let running = spawn_worker(&exec, &worker.mailbox);
        // The user thread runs a job on the worker before it drops the timer. Besides being
        // ordinary, this gives loom's search an object both threads touch before the drop (the
        // mailbox lock): whether the worker's upgrade of the timer's `Weak` beats the drop is
        // decided by `std::sync::Arc`'s count, which loom cannot see, so without it loom only
        // ever runs the drop first and never a worker holding the timer through it.
        worker.mailbox.push(MailItem::Job(Box::new(
            |_: &mut (dyn std::any::Any + Send)| {},
        )));
        drop(timer);
        after.store(true, Ordering::SeqCst);
        worker.mailbox.close();
        running.join().unwrap();
        assert!(
            !late.load(Ordering::SeqCst),
            "the callback started after the drop returned"
        );
    });
}

const LANE: u64 = 7;

/// What a worker would accept from `t` now: a tick of the current arming (as `take_tick`
/// decides), taken.
fn take_current(t: &TimerTick) -> Option<Stamp> {
    let stamp = t.due.swap(Stamp::NONE, Ordering::AcqRel);
    (stamp != Stamp::NONE && t.is_current(stamp)).then_some(stamp)
}

const PERIOD: Duration = Duration::from_nanos(10);

/// A `/clock` message racing a re-arm (`reset()`) of a simulated-time timer in the same lane,
/// as the real callers do it: the `/clock` thread stores the new time and then advances the
/// lane (`set_sim_time`); `reset()` reads the time and arms one period later (`arm_in`). At
/// simulated time 15 the timer (period 10) is due at 20, and the message moves the clock by
/// `step`. The advance may pop the old arming's tick just before the re-arm (it once handed it
/// over outside the lock, possibly after the re-arm). A worker that starts taking ticks after
/// the re-arm returned
/// must never accept a tick of the old arming (one off the new grid), and the new arming's
/// first tick is delivered as current once `/clock` reaches it (neither lost nor dropped behind
/// a stale tick).
fn sim_advance_racing_a_rearm(name: &str, step: i64) {
    check(name, None, move || {
        let core = Arc::new(SchedulerCore::new(TimerPrecision::low_cpu()));
        let t = tick();
        let id = core.sim_insert(LANE, t.clone(), Some(SimTime(20)), PERIOD);
        let sim_now = Arc::new(AtomicI64::new(15));
        // The new arming's first deadline, published before `rearmed`.
        let first = Arc::new(AtomicI64::new(0));
        let rearmed = Arc::new(AtomicBool::new(false));
        let on_new_grid = |stamp: Stamp, first: i64| {
            let ns = stamp.nanos() as i64;
            ns >= first && (ns - first) % 10 == 0
        };

        let (c, n) = (core.clone(), sim_now.clone());
        let clock = loom::thread::spawn(move || {
            n.store(15 + step, Ordering::Release);
            c.sim_advance(LANE, SimTime(15 + step));
        });
        let (v, f, r) = (t.clone(), first.clone(), rearmed.clone());
        let taker = loom::thread::spawn(move || {
            if r.load(Ordering::SeqCst) {
                if let Some(stamp) = take_current(&v) {
                    assert!(
                        on_new_grid(stamp, f.load(Ordering::SeqCst)),
                        "a tick of the old arming was taken after the re-arm"
                    );
                    return Some(stamp);
                }
            }
            None
        });
        // As `TimerCore::arm_in` does: the time is read under the scheduler lock.
        let n = sim_now.clone();
        let deadline = core
            .sim_arm(
                LANE,
                id,
                || Some(SimTime(n.load(Ordering::Acquire) + 10)),
                None,
            )
            .unwrap()
            .0;
        first.store(deadline, Ordering::SeqCst);
        rearmed.store(true, Ordering::SeqCst);
        clock.join().unwrap();
        let mut taken = taker.join().unwrap();
        if let Some(stamp) = take_current(&t) {
            assert!(
                on_new_grid(stamp, deadline),
                "a tick of the old arming is current after the re-arm"
            );
            taken = taken.or(Some(stamp));
        }

        // `/clock` reaches the new deadline: its tick was taken above or is waiting now.
        core.sim_advance(LANE, SimTime(deadline));
        let taken = taken.or_else(|| take_current(&t));
        assert!(
            taken.is_some_and(|stamp| on_new_grid(stamp, deadline)),
            "the new arming's tick was lost"
        );
        // Grid points of the old arming the step skipped count as dropped when its tick was
        // handed over before the re-arm (then current); none otherwise.
        let skipped_by_step = ((15 + step - 20) / 10).max(0) as u64;
        assert!(t.dropped_total.load(Ordering::Relaxed) <= skipped_by_step);
    });
}

/// [`sim_advance_racing_a_rearm`] with `/clock` steps shorter than the period (the floor rule's
/// premise: an old tick popped by the step lies before any deadline a re-arm computes).
#[test]
fn loom_sim_advance_racing_a_rearm() {
    sim_advance_racing_a_rearm("sim lane: advance vs re-arm", 7);
}

/// A `/clock` advance racing the removal of a simulated-time timer (its drop, or its move to
/// the wall lane): once `sim_remove` has returned, the timer holds no tick a worker would run,
/// even when the advance popped its tick before the removal and hands it over after.
#[test]
fn loom_sim_advance_racing_a_removal() {
    check("sim lane: advance vs remove", None, || {
        let core = Arc::new(SchedulerCore::new(TimerPrecision::low_cpu()));
        let t = tick();
        let id = core.sim_insert(LANE, t.clone(), Some(SimTime(10)), Duration::from_nanos(10));

        let c = core.clone();
        let clock = loom::thread::spawn(move || c.sim_advance(LANE, SimTime(10)));
        core.sim_remove(LANE, id);
        clock.join().unwrap();
        assert_eq!(
            take_current(&t),
            None,
            "a removed timer holds a tick a worker would run"
        );
        // Later `/clock` messages find nothing of it.
        core.sim_advance(LANE, SimTime(100));
        assert_eq!(t.due.load(Ordering::Acquire), Stamp::NONE);
    });
}

/// Two advances of one lane racing: `/clock` (to 30) and the immediate hand-over `arm_in`
/// makes for an arming that is already due (to 20), e.g. a mode change or a lane switch while a
/// `/clock` message is being processed. Both pop and hand over under the scheduler lock and
/// announce outside it; every grid point popped is left in `due` or counted as dropped, never
/// lost.
#[test]
fn loom_sim_advances_racing_lose_no_tick() {
    check("sim lane: advance vs advance", None, || {
        let core = Arc::new(SchedulerCore::new(TimerPrecision::low_cpu()));
        let t = tick();
        let id = core.sim_insert(LANE, t.clone(), Some(SimTime(10)), PERIOD);

        let c = core.clone();
        let clock = loom::thread::spawn(move || c.sim_advance(LANE, SimTime(30)));
        core.sim_advance(LANE, SimTime(20));
        clock.join().unwrap();
        let due = t.due.load(Ordering::Acquire);
        assert!(
            due != Stamp::NONE && t.is_current(due),
            "no tick is waiting"
        );
        // The grid points 10, 20, … before the next deadline were all popped.
        let next = core
            .sim_deadline(LANE, id)
            .expect("a repeating timer stays armed");
        let popped = ((next.0 - 10) / 10) as u64;
        let dropped = t.dropped_total.load(Ordering::Relaxed);
        assert_eq!(1 + dropped, popped, "a tick was lost");
    });
}

/// [`sim_advance_racing_a_rearm`] with a `/clock` step longer than the period: the step pops the
/// old arming's grid point 30. When `reset()` read the time before taking the scheduler lock it
/// could read 15 (before the step) and arm for 25, below the old tick, which then counted as
/// current; reading it under the lock (`sim_arm`'s `when`) makes this pass.
#[test]
fn loom_sim_long_step_racing_a_rearm() {
    sim_advance_racing_a_rearm("sim lane: long step vs re-arm", 15);
}

/// A worker pulling its paced timer's next tick (`SchedulerCore::pull`: popped and handed over
/// under the lock) racing the user re-arming the timer (`reset()`): once the re-arm has
/// returned, no tick of the old arming is current, and the new arming's first tick is handed
/// over (by the scheduler, or by a pull after the re-arm) and not dropped behind a stale one.
#[test]
fn loom_worker_pull_racing_a_rearm() {
    check("pacing: worker pull vs re-arm", None, || {
        let core = Arc::new(SchedulerCore::new(TimerPrecision::low_cpu()));
        let (old, new, new_stamp) = old_and_new_deadlines(&core);
        let victim = tick();
        // Repeating, with a period so long that only the first grid point of an arming is due.
        let id = core.insert(victim.clone(), Some(old), Duration::from_secs(3600));
        let c = core.clone();
        let worker = loom::thread::spawn(move || {
            c.pull(id, Instant::now());
        });
        core.arm(id, || Some(new), None);
        assert_no_old_tick_current(&victim, new_stamp);
        worker.join().unwrap();
        let v = victim.clone();
        core.run_while(|_| !(holds_current(&v) && v.due.load(Ordering::Acquire) >= new_stamp));
        assert_new_tick_waits(&victim, new_stamp);
    });
}

/// Issue 24, "a one-shot timer can be lost", on the real code: a mode change (`set_oneshot`)
/// races the real worker loop running the real `TimerCore::execute` for a tick of the previous
/// arming, and the real scheduler loop handing over the new arming's first tick. The new
/// one-shot must fire exactly once: the main thread waits for its call (a call that never comes
/// leaves every thread blocked, which loom reports as a deadlock).
///
/// It failed while the worker noted `stops` before taking the callback lock and `change` bumped
/// it after releasing that lock: a worker that noted the count before the change, then took
/// the new arming's tick (handed over between the change's re-arm and its bump) with the new
/// callback, saw the bump afterwards and dropped the call, and the spent one-shot never came
/// back.
#[test]
fn loom_a_mode_change_racing_a_tick_never_loses_the_new_oneshot() {
    let handle = idle_runtime();
    check(
        "timer mode change vs tick (real TimerCore)",
        Some(3),
        move || {
            let exec = ExecutorShared::for_model(handle.clone());
            let worker = WorkerCore::for_model(&exec);
            let sched = exec.timers().core.clone();
            // The first arming: a one-shot due at once, its tick handed over before the threads
            // start, so the worker runs it while the mode changes.
            let timer = create_timer(
                &worker,
                Duration::ZERO,
                TimerKind::OneShot((|| {}).into_timer_callback()),
            )
            .unwrap();
            sched.run_while(|delivered| delivered == 0);
            // The new arming's deadline must lie after the old tick's (a re-arm at the very same
            // instant keeps that tick current, and then it is the new arming's).
            let old = sched.wall_deadline(timer.core.tick.due.load(Ordering::Acquire));
            while Instant::now() <= old {
                std::hint::spin_loop();
            }

            let running = spawn_worker(&exec, &worker.mailbox);
            let s = sched.clone();
            let scheduler = loom::thread::spawn(move || s.run_while(|delivered| delivered == 0));
            let fired = Arc::new((Mutex::new(0u64), Condvar::new()));
            let f = fired.clone();
            timer.set_oneshot(move || {
                *lock(&f.0) += 1;
                f.1.notify_all();
            });
            scheduler.join().unwrap();
            {
                let mut calls = lock(&fired.0);
                while *calls == 0 {
                    calls = fired.1.wait(calls).unwrap();
                }
            }
            worker.mailbox.close();
            running.join().unwrap();
            assert_eq!(*lock(&fired.0), 1, "the one-shot fired twice");
            drop(timer);
        },
    );
}

/// Issue 24 (and defect 11 before it): a ROS-time timer created while another thread switches
/// simulation time on must end up on simulated time, on the real code: `create_timer` on a
/// worker whose node clock has a time source, racing `RosTimeSource::set_sim_active(true)`.
/// The timer either exists (registered) before the switch looks at its timers, and is moved,
/// or is created after it, on the simulated lane. It failed with the timer choosing its lane
/// and registering outside the source's `change` lock (`hold_time_base`): created between
/// the switch's look at its timers and its flip of the time base, the timer stayed on the
/// wall, moved by neither side.
#[test]
fn loom_a_timer_created_during_a_switch_to_sim_time_follows_it() {
    let handle = idle_runtime();
    check("timer creation vs sim-time switch", None, move || {
        let exec = ExecutorShared::for_model(handle.clone());
        let sched = exec.timers().core.clone();
        let sink: std::sync::Weak<dyn crate::clock::SimTimeSink> = Arc::downgrade(&sched) as _;
        let source = Arc::new(crate::clock::RosTimeSource::new(Some(sink)));
        let clock = crate::clock::Clock::from_source(source.clone(), exec.life().clone());
        let worker = WorkerCore::for_model_with_clock(&exec, clock);
        let s = source.clone();
        let switcher = loom::thread::spawn(move || s.set_sim_active(true));
        let timer = create_timer(
            &worker,
            Duration::from_millis(2).node_time(),
            TimerKind::Repeating((|| {}).into_timer_callback()),
        )
        .unwrap();
        switcher.join().unwrap();
        assert!(source.is_sim_active());
        assert!(
            matches!(*lock(&timer.core.lane), super::core::Lane::Sim(_)),
            "a timer created during the switch stayed on the wall"
        );
        drop(timer);
    });
}

/// Issue 24, "a one-shot fired twice" (`mode_changes_racing_with_ticks_never_double_fire_a_oneshot`
/// under load, always in a round with `reset()`, whose arming the scheduler thread hands over),
/// on the real code: the real scheduler loop pops a tick of a repeating arming ahead of its
/// deadline (early hand-off) while `set_oneshot` re-arms the timer, and the real worker loop
/// runs whatever is handed over. The new one-shot must run once, and never for the tick popped
/// under the old mode.
///
/// The timer's tick `w` (due 0.6 periods ago) waits in `due`, handed over and not yet run; its
/// next grid point `s` lies 0.4 periods ahead, within the hand-off lead (half the period), so
/// the scheduler thread pops `s` at once. The change sees `w` waiting and keeps the timer's
/// next deadline, `w`, which has passed: the one-shot is armed for now, before `s`.
///
/// It failed while ticks were stored in `due` after the scheduler lock was dropped: `s`,
/// popped before the change and stored after it, lay above the new arming's floor and counted
/// as its tick, so the one-shot ran for `s` (within 3 preemptions), and then once more for its
/// own deadline when the worker had taken `s` before that was handed over (4 preemptions).
#[test]
fn loom_a_mode_change_never_runs_a_tick_popped_under_the_old_mode() {
    // The model reads the real clock (the scheduler loop and the change do): every execution
    // must take the same branches, so `s` must stay ahead of now (0.4 periods) and within the
    // lead however slow an execution is. With 20 ms (8 ms of margin), a busy host's stalls
    // made executions diverge ("Reached unexpected exploration state") in a fresh-clone CI
    // run; 10 s leaves 4 s. (A paced timer would need 500 Hz; this one is not paced.)
    const WALL_PERIOD: Duration = Duration::from_secs(10);
    let handle = idle_runtime();
    check(
        "timer mode change vs early tick (real TimerCore)",
        Some(4),
        move || {
            let precision = TimerPrecision {
                handoff_lead: WALL_PERIOD / 2,
                ..TimerPrecision::default()
            };
            let exec = ExecutorShared::for_model_with_precision(handle.clone(), precision);
            let worker = WorkerCore::for_model(&exec);
            let sched = exec.timers().core.clone();
            let timer = create_timer(
                &worker,
                WALL_PERIOD,
                TimerKind::Repeating((|| {}).into_timer_callback()),
            )
            .unwrap();
            let super::core::Lane::Wall(id) = *lock(&timer.core.lane) else {
                unreachable!("a steady timer is on the wall");
            };
            let w = Instant::now() - WALL_PERIOD * 3 / 5;
            let s = w + WALL_PERIOD;
            // `w` is handed over alone: the hand-off lead adapts to how early workers arrive,
            // and one that arrived far too early takes it down to nothing (so `s`, ahead, is not
            // popped with `w`); one that arrived late takes it back up to its cap.
            let cap = (WALL_PERIOD / 2).as_nanos() as i64;
            sched.worker_arrived(16 * cap + 2_000);
            sched.arm(id, || Some(w), None);
            sched.run_while(|delivered| delivered == 0);
            assert_eq!(sched.deadline(id), Some(s), "`s` was popped with `w`");
            sched.worker_arrived(-cap);
            assert!(sched.lead_is_capped());

            let sc = sched.clone();
            let scheduler = loom::thread::spawn(move || sc.run_while(|_| true));
            // The expected call time of every call of the one-shot.
            let calls = Arc::new((Mutex::new(Vec::<i64>::new()), Condvar::new()));
            let c = calls.clone();
            timer.set_oneshot(move |info: super::TimerInfo| {
                lock(&c.0).push(info.expected_call_time.nanos);
                c.1.notify_all();
            });
            // Started after the change, so that `w` still waits when the change looks.
            let running = spawn_worker(&exec, &worker.mailbox);
            {
                let mut seen = lock(&calls.0);
                while seen.is_empty() {
                    seen = calls.1.wait(seen).unwrap();
                }
            }
            sched.shutdown();
            scheduler.join().unwrap();
            worker.mailbox.close();
            running.join().unwrap();
            let calls = lock(&calls.0).clone();
            let s_time = sched.epoch.nanos_at(s);
            assert!(
                !calls.contains(&s_time),
                "the new one-shot ran the tick popped under the old mode: {calls:?}"
            );
            assert_eq!(calls.len(), 1, "the one-shot fired {} times", calls.len());
            drop(timer);
        },
    );
}

/// The scheduler's watchdog taking a paced timer back (its worker stopped pulling for a
/// watchdog interval) racing the worker resuming and pulling the timer's next tick: the ticks
/// a worker takes from one arming come in deadline order. It failed while the scheduler
/// handed its tick over after dropping its lock: popped by the watchdog, then held up, that
/// tick reached `due` after the worker had pulled and taken the next one, and a worker would
/// have run it after a later one, with a missed count computed backwards. (The timer's first
/// deadline lies before the scheduler's epoch; its stamp saturates there, which changes no
/// order.)
#[test]
fn loom_a_watchdog_take_back_racing_a_pull_keeps_ticks_in_order() {
    check("pacing: watchdog vs pull", None, || {
        let core = Arc::new(SchedulerCore::new(TimerPrecision::low_cpu()));
        let victim = tick();
        // Paced a second ago (the worker pulled its tick at `t0` and ran it), and not pulled
        // since: the watchdog, a pacing interval after the next deadline, is long due.
        let t0 = Instant::now() - Duration::from_secs(1);
        let id = core.insert(victim.clone(), Some(t0), Duration::from_millis(1));
        assert!(core.pull(id, t0).is_some());
        assert!(take_current(&victim).is_some());

        let c = core.clone();
        let scheduler = loom::thread::spawn(move || c.run_while(|delivered| delivered == 0));
        let (c, v) = (core.clone(), victim.clone());
        let worker = loom::thread::spawn(move || {
            c.pull(id, Instant::now());
            take_current(&v)
        });
        let first = worker.join().unwrap();
        // A pull first leaves the timer paced, with its watchdog a pacing interval away.
        core.shutdown();
        scheduler.join().unwrap();
        if let (Some(first), Some(then)) = (first, take_current(&victim)) {
            assert!(
                then > first,
                "a tick ({then:?}) came after a later one ({first:?}) of the same arming"
            );
        }
    });
}

/// The race of `loom_a_mode_change_never_runs_a_tick_popped_under_the_old_mode` on a
/// simulated-time lane, where the old tick's stamp is not ahead of the new arming's first
/// deadline but equal to it: `/clock` has just reached the timer's deadline (20) and its
/// advance pops that tick while `set_oneshot` re-arms the timer at its next deadline, which is
/// now. Done as `TimerCore::change` and `arm_in` do it: read the time until the next call,
/// re-arm (the clock read under the lock), hand over at once as the deadline has come. The
/// one-shot's arming must yield one tick to take, not two. It failed while ticks were stored
/// after the lock: the old tick, stored after the re-arm with the stamp of the new arming's
/// first deadline, counted as the new arming's, and so did that deadline's own tick once the
/// first had been taken.
#[test]
fn loom_a_mode_change_on_sim_time_racing_an_advance_yields_one_tick() {
    check("sim lane: advance vs mode change", None, || {
        let core = Arc::new(SchedulerCore::new(TimerPrecision::low_cpu()));
        let t = tick();
        let id = core.sim_insert(LANE, t.clone(), Some(SimTime(20)), PERIOD);
        let now = SimTime(20);
        let rearmed = Arc::new(AtomicBool::new(false));

        let c = core.clone();
        let clock = loom::thread::spawn(move || c.sim_advance(LANE, now));
        let (v, r) = (t.clone(), rearmed.clone());
        let taker =
            loom::thread::spawn(move || r.load(Ordering::SeqCst) && take_current(&v).is_some());
        let delay = core.sim_deadline(LANE, id).map(|d| d.since(now));
        let deadline = core.sim_arm(
            LANE,
            id,
            || delay.map(|d| now.checked_plus(d).expect("near")),
            Some(Duration::ZERO),
        );
        if deadline.is_some_and(|d| d <= now) {
            core.sim_advance(LANE, now);
        }
        rearmed.store(true, Ordering::SeqCst);
        clock.join().unwrap();
        let mut taken = u32::from(taker.join().unwrap());
        taken += u32::from(take_current(&t).is_some());
        // The change came after the advance popped 20: the one-shot is due at 30.
        core.sim_advance(LANE, SimTime(30));
        taken += u32::from(take_current(&t).is_some());
        assert_eq!(taken, 1, "the one-shot's arming yielded {taken} ticks");
    });
}
