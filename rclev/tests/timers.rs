//! Timers on the shared scheduler.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{count_to, spin_until, spin_until_state};
use rclev::{
    ClockType, Context, Error, IntoTimerOptions, SpinOptions, TimerInfo, VirtualTimeExecutor,
};
use tokio::sync::Semaphore;

/// A timer on `node` that counts its calls.
fn counting_timer(
    node: &rclev::Node,
    period: Duration,
    oneshot: bool,
) -> (rclev::Timer, Arc<AtomicU64>) {
    let count = Arc::new(AtomicU64::new(0));
    let c = count.clone();
    let tick = move || {
        c.fetch_add(1, Ordering::SeqCst);
    };
    let timer = if oneshot {
        node.create_timer_oneshot(period, tick)
    } else {
        node.create_timer_repeating(period, tick)
    };
    (timer.unwrap(), count)
}

fn spin_for(executor: &rclev::Executor, d: Duration) {
    let errors = executor.spin(SpinOptions::default().timeout(d));
    assert!(errors.is_empty(), "{errors:?}");
}

/// Spins until `count` exceeds `base`, for at most 5 s: a fast timer ticks within a few ms, but
/// a loaded VM can stall the process (or one of its threads) for tens of ms, so a fixed short
/// spin can legitimately see nothing. One continuous spin, so a wake-up lost on the worker's
/// side is not papered over by re-opening the spin gate. Returns whether it ticked.
fn spin_until_ticked(executor: &rclev::Executor, count: &Arc<AtomicU64>, base: u64) -> bool {
    let c = count.clone();
    let errors = executor.spin(
        SpinOptions::default()
            .until_promise_resolved(async move {
                while c.load(Ordering::SeqCst) <= base {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            })
            .timeout(Duration::from_secs(5)),
    );
    assert!(errors.is_empty(), "{errors:?}");
    count.load(Ordering::SeqCst) > base
}

#[test]
fn ticks_stay_on_the_grid_without_drift() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("grid").unwrap();
    let period = Duration::from_millis(2);
    let infos = Arc::new(Mutex::new(Vec::<TimerInfo>::new()));
    let sem = Arc::new(Semaphore::new(0));
    let (i, s) = (infos.clone(), sem.clone());
    let _timer = node
        .create_timer_repeating(period, move |info: TimerInfo| {
            i.lock().unwrap().push(info);
            s.add_permits(1);
        })
        .unwrap();
    spin_until(&executor, count_to(&sem, 100));
    let infos = infos.lock().unwrap();
    let first = infos[0].expected_call_time;
    assert_eq!(first.clock_type, ClockType::SteadyTime);
    for info in infos.iter() {
        let offset = info.expected_call_time.nanos - first.nanos;
        assert_eq!(
            offset % period.as_nanos() as i64,
            0,
            "tick off the grid by {offset} ns"
        );
        assert!(
            info.actual_call_time >= info.expected_call_time,
            "a callback started early"
        );
    }
    // Nothing was skipped on an idle machine unless reported as missed.
    let last = infos.last().unwrap().expected_call_time.nanos;
    let steps = (last - first.nanos) / period.as_nanos() as i64;
    // (The first call's count is of grid points before it.)
    let missed: u64 = infos[1..].iter().map(|i| i.missed_ticks).sum();
    assert_eq!(
        steps as u64 + 1,
        infos.len() as u64 + missed,
        "ticks vanished without a count"
    );
}

/// `(started, info, ended)` per call, in call order; `ended` on the steady clock, in ns.
type TimedCalls = Arc<Mutex<Vec<(Instant, TimerInfo, i64)>>>;

#[test]
fn slow_callback_coalesces_and_reports_missed_ticks() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("slow").unwrap();
    let period = Duration::from_millis(2);
    let p = period.as_nanos() as i64;
    let slow = Arc::new(AtomicBool::new(true));
    let calls: TimedCalls = Arc::default();
    let (sl, c) = (slow.clone(), calls.clone());
    let steady = rclev::Clock::steady();
    let timer = node
        .create_timer_repeating(period, move |info: TimerInfo| {
            c.lock().unwrap().push((Instant::now(), info, 0));
            if sl.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(7));
            }
            c.lock().unwrap().last_mut().unwrap().2 = steady.now().nanos;
        })
        .unwrap();
    // Six slow calls, counted rather than timed: a stalled host only takes longer.
    let c = calls.clone();
    spin_until_state(&executor, move || c.lock().unwrap().len() >= 6);
    // Then fast calls: five that started after the switch.
    let switched = Instant::now();
    slow.store(false, Ordering::SeqCst);
    let c = calls.clone();
    spin_until_state(&executor, move || {
        c.lock()
            .unwrap()
            .iter()
            .filter(|(t, _, _)| *t > switched)
            .count()
            >= 5
    });
    let calls = calls.lock().unwrap();
    // A 7 ms call spans three or more 2 ms grid points: one tick waits for the next call, the
    // others are dropped and reported by the call after. Which one waits depends on who hands
    // it over (the worker pulling after the call, or the scheduler thread during it, as when
    // its watchdog takes back a timer whose worker is busy), so the counts per call vary; their
    // sum does not. The first five calls all slept (only the sixth may have seen the switch),
    // each ending 7 ms or more after it started, so with no backlog (checked below: the third
    // call after a call is for a grid point less than a period before that call's end) the
    // fifth call's grid point lies more than 12 ms after the first's: 7 periods or more for 4
    // calls, 3 ticks or more reported missed between them. (Were the ticks queued, none.)
    let missed_while_slow: u64 = calls[1..5].iter().map(|(_, i, _)| i.missed_ticks).sum();
    assert!(
        missed_while_slow >= 3,
        "missed ticks not reported: {:?}",
        &calls[..5]
    );
    // And none vanished uncounted: every grid point was either called or reported missed.
    let first = calls[0].1.expected_call_time.nanos;
    let last = calls.last().unwrap().1.expected_call_time.nanos;
    let grid_points = (last - first) / p + 1;
    for pair in calls.windows(2) {
        let gap = pair[1].1.expected_call_time.nanos - pair[0].1.expected_call_time.nanos;
        assert_eq!(
            gap,
            (pair[1].1.missed_ticks as i64 + 1) * p,
            "missed ticks do not match the gap: {pair:?}"
        );
    }
    let missed: u64 = calls[1..].iter().map(|(_, i, _)| i.missed_ticks).sum();
    assert_eq!(grid_points as u64, calls.len() as u64 + missed);
    assert!(timer.dropped_ticks() >= missed);
    // No backlog, however the host stalls the threads: a tick is handed over only into an empty
    // slot, and as the newest grid point when it was taken off the heap. So at most two ticks
    // due before a call ended run after it (the one waiting in the slot, and one the scheduler
    // thread took meanwhile and handed over late); the third call after it is for a grid point
    // less than a period before that end. (A time window cannot bound the calls after a stall:
    // a worker held up for a few periods catches up one late tick per grid point it passed.)
    for w in calls.windows(4) {
        assert!(
            w[3].1.expected_call_time.nanos > w[0].2 - p,
            "a backlog was replayed: {w:?}"
        );
    }
    for (_, info, _) in calls.iter() {
        assert_eq!((info.expected_call_time.nanos - first) % p, 0);
    }
}

#[test]
fn cancel_keeps_a_tombstone_that_reset_rearms() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("cancel").unwrap();
    let (timer, count) = counting_timer(&node, Duration::from_millis(1), false);
    assert_eq!(timer.period(), Duration::from_millis(1));
    assert!(timer.time_until_next_call().is_some());
    assert!(
        spin_until_ticked(&executor, &count, 0),
        "the timer never ticked"
    );

    timer.cancel();
    assert!(timer.is_canceled());
    assert_eq!(timer.time_until_next_call(), None);
    let at_cancel = count.load(Ordering::SeqCst);
    spin_for(&executor, Duration::from_millis(30));
    assert_eq!(
        count.load(Ordering::SeqCst),
        at_cancel,
        "a cancelled timer fired"
    );
    assert!(timer.time_since_last_call() >= Duration::from_millis(25));

    timer.reset();
    assert!(!timer.is_canceled());
    let next = timer.time_until_next_call().unwrap();
    assert!(next <= Duration::from_millis(1));
    assert!(
        spin_until_ticked(&executor, &count, at_cancel),
        "reset did not re-arm"
    );
}

/// Resetting (here every 10 ms) keeps pushing the deadline away: a call never starts less than a
/// period after the start of the last reset (or the creation) that had returned before the
/// call started. That is what a reset guarantees, whatever the host's load; on an idle host it
/// means that the timer does not fire while the resets go on. Once they stop, it fires.
#[test]
fn reset_restarts_the_period() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("reset").unwrap();
    let period = Duration::from_millis(200);
    let starts = Arc::new(Mutex::new(Vec::<Instant>::new()));
    let s = starts.clone();
    // (begin, end) of the creation and of each reset.
    let armings = Arc::new(Mutex::new(Vec::<(Instant, Instant)>::new()));
    let begin = Instant::now();
    let timer = node
        .create_timer_repeating(period, move || s.lock().unwrap().push(Instant::now()))
        .unwrap();
    armings.lock().unwrap().push((begin, Instant::now()));
    let (t, a) = (timer.clone(), armings.clone());
    let resetter = std::thread::spawn(move || {
        for _ in 0..10 {
            std::thread::sleep(Duration::from_millis(10));
            let begin = Instant::now();
            t.reset();
            a.lock().unwrap().push((begin, Instant::now()));
        }
    });
    let (s, a) = (starts.clone(), armings.clone());
    spin_until_state(&executor, move || {
        a.lock().unwrap().len() == 11 && !s.lock().unwrap().is_empty()
    });
    resetter.join().unwrap();
    let armings = armings.lock().unwrap();
    for &start in starts.lock().unwrap().iter() {
        let (last_begin, _) = armings
            .iter()
            .rev()
            .find(|(_, end)| *end < start)
            .expect("the creation returned before any call");
        assert!(
            start >= *last_begin + period,
            "a call started {:?} after a reset of a {period:?} timer",
            start - *last_begin
        );
    }
}

#[test]
fn dropping_a_timer_with_a_pending_tick_delivers_nothing() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("drop").unwrap();
    let (timer, count) = counting_timer(&node, Duration::from_millis(1), false);
    // Not spinning: ticks are handed over and coalesce in the worker's mailbox.
    let deadline = Instant::now() + Duration::from_secs(20);
    while timer.dropped_ticks() == 0 {
        assert!(Instant::now() < deadline, "no tick was pending");
        std::thread::sleep(Duration::from_millis(1));
    }
    drop(timer);
    spin_for(&executor, Duration::from_millis(30));
    assert_eq!(
        count.load(Ordering::SeqCst),
        0,
        "a dropped timer's tick was delivered"
    );
}

#[test]
fn one_shot_fires_once_until_reset() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("oneshot").unwrap();
    let (timer, count) = counting_timer(&node, Duration::from_millis(5), true);
    assert!(timer.is_oneshot());
    assert!(
        spin_until_ticked(&executor, &count, 0),
        "the one-shot never fired"
    );
    // Spent: nothing armed any more. (A second call would be a bug at any time; the spin only
    // gives one the chance to show.)
    assert_eq!(timer.time_until_next_call(), None);
    spin_for(&executor, Duration::from_millis(30));
    assert_eq!(count.load(Ordering::SeqCst), 1);
    timer.reset();
    assert!(
        spin_until_ticked(&executor, &count, 1),
        "reset did not re-arm"
    );
    assert_eq!(timer.time_until_next_call(), None);
    spin_for(&executor, Duration::from_millis(30));
    assert_eq!(count.load(Ordering::SeqCst), 2);
}

#[test]
fn ten_thousand_timers_fire_in_deadline_order() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("many").unwrap();
    let order = Arc::new(Mutex::new(Vec::with_capacity(10_000)));
    let sem = Arc::new(Semaphore::new(0));
    let n = 10_000u64;
    // Deadlines 20 ms + k·5 µs, created in a scrambled order.
    let timers: Vec<_> = (0..n)
        .map(|i| {
            let k = (i * 7919) % n;
            let (o, s) = (order.clone(), sem.clone());
            node.create_timer_oneshot(
                Duration::from_millis(20) + Duration::from_micros(5 * k),
                move |info: TimerInfo| {
                    o.lock().unwrap().push(info.expected_call_time.nanos);
                    s.add_permits(1);
                },
            )
            .unwrap()
        })
        .collect();
    spin_until(&executor, count_to(&sem, n as u32));
    let order = order.lock().unwrap();
    assert_eq!(order.len(), n as usize);
    let inversions = order.windows(2).filter(|w| w[0] > w[1]).count();
    assert_eq!(inversions, 0, "timers fired out of deadline order");
    drop(timers);
}

#[test]
fn scheduler_thread_exits_with_the_executor() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("exit").unwrap();
    let _timer = node
        .create_timer_repeating(Duration::from_millis(1), || {})
        .unwrap();
    spin_for(&executor, Duration::from_millis(10));
    assert!(!executor.diagnostics().timer_thread_exited);
    executor.shutdown();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !executor.diagnostics().timer_thread_exited {
        assert!(
            Instant::now() < deadline,
            "the timer thread outlived shutdown"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    // Dropping joins the (already finished) thread without hanging.
    drop(executor);
}

#[test]
fn idle_scheduler_sleeps_with_cancelled_and_no_timers() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("idle").unwrap();
    let timer = node
        .create_timer_repeating(Duration::from_millis(1), || {})
        .unwrap();
    spin_for(&executor, Duration::from_millis(10));
    timer.cancel();
    // Counted from the cancel's return, not after a pause that a busy host may stretch: the
    // timer thread may still be waiting for the timer (its next tick, or the pacing
    // watchdog). The cancel, having disarmed the last timer, ends that wait, and the thread
    // then waits with no deadline: one wake-up at most, however long the spin.
    let before = executor.diagnostics();
    spin_for(&executor, Duration::from_millis(300));
    let after = executor.diagnostics();
    assert!(
        after.timer_thread_wakeups - before.timer_thread_wakeups <= 1,
        "the timer thread kept waking: {before:?} → {after:?}"
    );
    // The spin itself may wake the worker as the gate opens (and run the cancelled timer's
    // tick left on its alarm, to nothing) and as it closes.
    assert!(
        after.worker_wakeups - before.worker_wakeups <= 2,
        "{before:?} → {after:?}"
    );
}

#[test]
fn timers_on_workers_with_payload_and_async_callbacks() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("payload").unwrap();
    let worker = node.create_worker(Vec::<u64>::new()).unwrap();
    let _t = worker
        .create_timer_repeating(
            Duration::from_millis(1),
            |ticks: &mut Vec<u64>, info: TimerInfo| {
                ticks.push(info.missed_ticks);
            },
        )
        .unwrap();
    let sem = Arc::new(Semaphore::new(0));
    let s = sem.clone();
    let _async_timer = node
        .create_async_timer_repeating(Duration::from_millis(2), move |_info| {
            let s = s.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(1)).await;
                s.add_permits(1);
            }
        })
        .unwrap();
    let seen = Arc::new(AtomicU64::new(0));
    let sn = seen.clone();
    let w = worker.clone();
    let done = count_to(&sem, 5);
    spin_until(&executor, async move {
        done.await;
        // The payload timer runs on a worker of its own, which a busy host may have held up
        // while the async timer ticked: asked until it has ticked five times too.
        loop {
            let n = w.run(|ticks: &mut Vec<u64>| ticks.len()).await.unwrap();
            sn.store(n as u64, Ordering::SeqCst);
            if n >= 5 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    });
    assert!(seen.load(Ordering::SeqCst) >= 5);
}

#[test]
fn timer_modes_clocks_and_invalid_periods() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("modes").unwrap();
    assert!(matches!(
        node.create_timer_repeating(Duration::ZERO, || {}),
        Err(Error::InvalidPeriod(_))
    ));
    let count = Arc::new(AtomicU64::new(0));
    let timer = node
        .create_timer_inert(Duration::from_millis(1).system_time())
        .unwrap();
    assert!(timer.is_inert());
    assert_eq!(timer.clock().clock_type(), ClockType::SystemTime);
    spin_for(&executor, Duration::from_millis(20));
    let c = count.clone();
    timer.set_repeating(move |info: TimerInfo| {
        assert_eq!(info.expected_call_time.clock_type, ClockType::SystemTime);
        c.fetch_add(1, Ordering::SeqCst);
    });
    let c = count.clone();
    spin_until_state(&executor, move || c.load(Ordering::SeqCst) >= 2);
    // No callback runs between spins: this is the repeating callback's last count.
    let repeating = count.load(Ordering::SeqCst);
    let c = count.clone();
    timer.set_oneshot(move || {
        c.fetch_add(1000, Ordering::SeqCst);
    });
    let c = count.clone();
    spin_until_state(&executor, move || {
        c.load(Ordering::SeqCst) >= repeating + 1000
    });
    // Room for a second call of the one-shot, or one of the old callback, to show.
    spin_for(&executor, Duration::from_millis(30));
    let after = count.load(Ordering::SeqCst);
    assert_eq!(
        after - repeating,
        1000,
        "one-shot fired {} times",
        (after - repeating) / 1000
    );
    let ros = node
        .create_timer_repeating(Duration::from_millis(1).node_time(), || {})
        .unwrap();
    assert_eq!(ros.clock().clock_type(), ClockType::RosTime);
}

#[test]
fn panicking_timer_callback_keeps_the_timer_running() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("panicky").unwrap();
    let sem = Arc::new(Semaphore::new(0));
    let count = Arc::new(AtomicU64::new(0));
    let (c, s) = (count.clone(), sem.clone());
    let _timer = node
        .create_timer_repeating(Duration::from_millis(1), move || {
            // Counted before the permit, so the count is complete when the waiter wakes.
            let calls_before = c.fetch_add(1, Ordering::SeqCst);
            s.add_permits(1);
            if calls_before == 0 {
                panic!("first tick fails");
            }
        })
        .unwrap();
    let done = count_to(&sem, 3);
    let errors = executor.spin(
        SpinOptions::default()
            .until_promise_resolved(done)
            .timeout(Duration::from_secs(20)),
    );
    assert!(
        matches!(errors.first(), Some(Error::CallbackPanicked { .. })),
        "{errors:?}"
    );
    assert!(count.load(Ordering::SeqCst) >= 3);
}

/// Mode changes and resets race with ticks the scheduler has already handed over: a one-shot
/// installed while a fast repeating timer is running fires exactly once, every time.
#[test]
fn mode_changes_racing_with_ticks_never_double_fire_a_oneshot() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("mode_race").unwrap();
    let period = Duration::from_micros(200);
    let timer = node.create_timer_inert(period).unwrap();
    let fires = Arc::new(AtomicU64::new(0));
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    std::thread::scope(|s| {
        s.spawn(|| {
            let errors = executor.spin(SpinOptions::default().until_promise_resolved(async {
                let _ = stop_rx.await;
            }));
            assert!(errors.is_empty(), "{errors:?}");
        });
        for round in 1..=100u64 {
            timer.set_repeating(|| {});
            std::thread::sleep(Duration::from_millis(1));
            if round % 2 == 0 {
                timer.reset();
            }
            let f = fires.clone();
            timer.set_oneshot(move || {
                f.fetch_add(1, Ordering::SeqCst);
            });
            let deadline = Instant::now() + Duration::from_secs(10);
            while fires.load(Ordering::SeqCst) < round && Instant::now() < deadline {
                std::thread::sleep(Duration::from_micros(100));
            }
            // Several periods more: a second call of the same one-shot would come by now.
            std::thread::sleep(period * 5);
            assert_eq!(fires.load(Ordering::SeqCst), round, "round {round}");
        }
        let _ = stop_tx.send(());
    });
}

/// A callback may change its own timer's mode (here: repeating → one-shot) from inside.
#[test]
fn a_callback_can_change_its_own_timer() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("self_change").unwrap();
    let sem = Arc::new(Semaphore::new(0));
    let repeats = Arc::new(AtomicU64::new(0));
    let oneshots = Arc::new(AtomicU64::new(0));
    let slot: Arc<std::sync::OnceLock<rclev::WeakEntityHandle<rclev::TimerState>>> =
        Default::default();
    let (r, o, sl, sm) = (repeats.clone(), oneshots.clone(), slot.clone(), sem.clone());
    let timer = node
        .create_timer_repeating(Duration::from_millis(1), move || {
            if r.fetch_add(1, Ordering::SeqCst) + 1 == 3 {
                let me = sl.get().and_then(rclev::WeakEntityHandle::upgrade).unwrap();
                let (o, sm) = (o.clone(), sm.clone());
                me.set_oneshot(move || {
                    o.fetch_add(1, Ordering::SeqCst);
                    sm.add_permits(1);
                });
            }
        })
        .unwrap();
    slot.set(rclev::EntityHandle::downgrade(&timer)).unwrap();
    spin_until(&executor, count_to(&sem, 1));
    spin_for(&executor, Duration::from_millis(20));
    assert_eq!(repeats.load(Ordering::SeqCst), 3);
    assert_eq!(oneshots.load(Ordering::SeqCst), 1);
    assert!(timer.time_until_next_call().is_none());
}

/// `(expected call time, missed ticks)` per call, in call order.
type Calls = Arc<Mutex<Vec<(i64, u64)>>>;

/// A repeating timer recording its calls.
fn recording_timer(node: &rclev::Node, period: Duration) -> (rclev::Timer, Calls) {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let c = calls.clone();
    let timer = node
        .create_timer_repeating(period, move |info: TimerInfo| {
            c.lock()
                .unwrap()
                .push((info.expected_call_time.nanos, info.missed_ticks));
        })
        .unwrap();
    (timer, calls)
}

/// Fast timers (500 Hz and up) are paced by their worker: it pulls each next tick itself and
/// sleeps to it, and the scheduler thread only checks on it now and then. The grid and the
/// missed-tick accounting are those of any timer.
#[test]
fn fast_timers_are_paced_by_their_worker() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("paced").unwrap();
    let period = Duration::from_micros(500);
    let (timer, calls) = recording_timer(&node, period);
    let before = executor.diagnostics();
    // 200 calls (0.1 s at this rate), counted rather than timed.
    let c = calls.clone();
    spin_until_state(&executor, move || c.lock().unwrap().len() >= 200);
    let after = executor.diagnostics();
    drop(timer);
    let calls = calls.lock().unwrap();
    // On the grid, and every grid point between the first and the last call either called or
    // counted as missed.
    let p = period.as_nanos() as i64;
    let (first, last) = (calls[0].0, calls[calls.len() - 1].0);
    for (t, _) in calls.iter() {
        assert_eq!((t - first) % p, 0, "off the grid");
    }
    let accounted: u64 = calls[1..].iter().map(|(_, missed)| 1 + missed).sum();
    assert_eq!(accounted, ((last - first) / p) as u64);
    // The worker slept to the ticks on its alarm; the scheduler thread woke for the first
    // tick and the watchdog (every 100 ms), not for every tick.
    let ticks = after.timers.handed_over - before.timers.handed_over;
    assert!(after.timers.worker_slept > before.timers.worker_slept);
    let scheduler = after.timer_thread_wakeups - before.timer_thread_wakeups;
    assert!(
        scheduler * 4 < ticks,
        "{scheduler} scheduler wake-ups for {ticks} ticks"
    );
}

/// Paced timers sharing a worker run the ticks it holds in deadline order, whichever way they
/// came (its alarm, the scheduler thread), as timers the scheduler hands over do. That is the
/// guarantee, and it is checked where it is certain to apply: a callback on the same worker
/// blocks it for 5 ms, so that each timer's next tick (pulled before the block, on the alarm)
/// is waiting when it ends; the first call of each timer after the block must come in deadline
/// order, 30 times over.
///
/// Between two calls in the steady state the order is only as good as the host: a tick pulled
/// after a late call can be due at once, after a later tick already queued to run, and it then
/// follows that one (by up to how late the call was); the test does not time that.
#[test]
fn paced_timers_on_one_worker_run_in_deadline_order() {
    const BLOCKS: usize = 30;
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("paced_order").unwrap();
    // Each entry: the timer's index and its tick's deadline, or `None` for a block's end.
    let log = Arc::new(Mutex::new(Vec::<Option<(usize, i64)>>::new()));
    let timers: Vec<_> = [500u64, 700, 900]
        .into_iter()
        .enumerate()
        .map(|(i, us)| {
            let l = log.clone();
            node.create_timer_repeating(Duration::from_micros(us), move |info: TimerInfo| {
                l.lock()
                    .unwrap()
                    .push(Some((i, info.expected_call_time.nanos)));
            })
            .unwrap()
        })
        .collect();
    let l = log.clone();
    let blocker = node
        .create_guard_condition(move || {
            std::thread::sleep(Duration::from_millis(5));
            l.lock().unwrap().push(None);
        })
        .unwrap();
    // A timer's first ticks come from the scheduler thread; it is paced (pulls on its worker)
    // once it has run.
    let calls_of = |log: &[Option<(usize, i64)>], timer: usize| {
        log.iter()
            .filter(|e| matches!(e, Some((i, _)) if *i == timer))
            .count()
    };
    let l = log.clone();
    spin_until_state(&executor, move || {
        let log = l.lock().unwrap();
        (0..3).all(|i| calls_of(&log, i) >= 3)
    });
    for block in 1..=BLOCKS {
        blocker.trigger();
        // Until every timer has run once after this block.
        let l = log.clone();
        spin_until_state(&executor, move || {
            let log = l.lock().unwrap();
            let Some(end) = log.iter().rposition(Option::is_none) else {
                return false;
            };
            log.iter().filter(|e| e.is_none()).count() == block
                && (0..3).all(|i| calls_of(&log[end..], i) >= 1)
        });
    }
    drop(timers);
    let log = log.lock().unwrap();
    let mut ends = log.iter().enumerate().filter(|(_, e)| e.is_none());
    for (n, (end, _)) in (&mut ends).enumerate() {
        // The calls after the block's end up to the first repeat of a timer: the ticks the
        // timers held when it ended.
        let mut seen = [false; 3];
        let held: Vec<(usize, i64)> = log[end + 1..]
            .iter()
            .map_while(|e| *e)
            .take_while(|&(i, _)| !std::mem::replace(&mut seen[i], true))
            .collect();
        assert!(
            held.windows(2).all(|w| w[0].1 <= w[1].1),
            "block {}: held ticks ran out of deadline order: {held:?}",
            n + 1
        );
    }
}

/// A paced timer stops at `cancel` (its pulled tick waiting on the alarm included), comes back
/// with `reset`, and stops for good when dropped; after the cancel the scheduler thread sleeps.
#[test]
fn a_paced_timer_cancels_resets_and_drops() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("paced_cancel").unwrap();
    let (timer, calls) = recording_timer(&node, Duration::from_micros(500));
    // Paced from its second tick on: a few calls make sure a tick waits on the alarm.
    let c = calls.clone();
    spin_until_state(&executor, move || c.lock().unwrap().len() >= 5);
    timer.cancel();
    let n = calls.lock().unwrap().len();
    // From the cancel's return: the scheduler thread may be waiting for the timer's watchdog;
    // the cancel ends that wait, and the thread then sleeps with no deadline: one wake-up at
    // most (see `idle_scheduler_sleeps_with_cancelled_and_no_timers`).
    let before = executor.diagnostics();
    spin_for(&executor, Duration::from_millis(50));
    assert_eq!(calls.lock().unwrap().len(), n, "called after cancel");
    let woke = executor.diagnostics().timer_thread_wakeups - before.timer_thread_wakeups;
    assert!(
        woke <= 1,
        "the scheduler thread woke {woke} times for a cancelled timer"
    );
    timer.reset();
    let c = calls.clone();
    spin_until_state(&executor, move || c.lock().unwrap().len() >= n + 2);
    let n = calls.lock().unwrap().len();
    drop(timer);
    spin_for(&executor, Duration::from_millis(30));
    assert_eq!(calls.lock().unwrap().len(), n, "called after the drop");
}

/// A paced timer changes mode while its worker may hold the next tick, pulled early: the old
/// callback stops (the call in flight aside), the new one keeps the pace, and an inert spell
/// between them keeps the timer on its grid without a call.
#[test]
fn a_paced_timer_changes_mode_and_goes_inert_in_step() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("paced_modes").unwrap();
    let log = Arc::new(Mutex::new(Vec::<char>::new()));
    let c_calls = Arc::new(Semaphore::new(0));
    let labelled = |label: char| {
        let log = log.clone();
        let c_calls = c_calls.clone();
        move || {
            log.lock().unwrap().push(label);
            if label == 'c' {
                c_calls.add_permits(1);
            }
        }
    };
    let timer = node
        .create_timer_repeating(Duration::from_micros(500), labelled('a'))
        .unwrap();
    let count = |label: char| log.lock().unwrap().iter().filter(|&&l| l == label).count();
    // Waits (bounded) until `label` has been called `n` times, while the main thread spins.
    let wait_for = |label: char, n: usize| {
        let until = Instant::now() + Duration::from_secs(5);
        while count(label) < n && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(1));
        }
    };
    std::thread::scope(|s| {
        s.spawn(|| {
            wait_for('a', 5);
            timer.set_repeating(labelled('b'));
            log.lock().unwrap().push('B');
            wait_for('b', 5);
            timer.set_inert();
            log.lock().unwrap().push('I');
            std::thread::sleep(Duration::from_millis(20));
            assert!(timer.is_inert());
            timer.set_repeating(labelled('c'));
            log.lock().unwrap().push('C');
        });
        spin_until(&executor, count_to(&c_calls, 20));
    });
    let log = log.lock().unwrap().clone();
    let count = |label: char| log.iter().filter(|&&l| l == label).count();
    let after = |marker: char, label: char| {
        let at = log.iter().position(|&l| l == marker).unwrap();
        log[at..].iter().filter(|&&l| l == label).count()
    };
    assert!(count('a') >= 5 && count('b') >= 5, "{log:?}");
    assert!(after('B', 'a') <= 1, "the old callback ran on: {log:?}");
    assert!(after('I', 'b') <= 1, "an inert timer was called: {log:?}");
    assert_eq!(after('I', 'a'), 0, "{log:?}");
    // The labels come in order: no callback runs after its successor has.
    let calls: Vec<char> = log
        .iter()
        .copied()
        .filter(char::is_ascii_lowercase)
        .collect();
    assert!(calls.windows(2).all(|w| w[0] <= w[1]), "{calls:?}");
}

// On virtual time (`VirtualTimeExecutor`): the timers' semantics checked exactly, to the
// nanosecond, where the tests above can only bound them on real time.

#[test]
fn timers_fire_exactly_on_their_grid_in_deadline_order() {
    let test = VirtualTimeExecutor::new().unwrap();
    let node = test.create_node("timers").unwrap();
    let calls = Arc::new(Mutex::new(Vec::new()));
    let start = test.now().nanos;
    let mut timers = Vec::new();
    for (name, period_ms, clock) in [
        ("steady 300 ms", 300, ClockType::SteadyTime),
        ("ros 500 ms", 500, ClockType::RosTime),
        ("system 700 ms", 700, ClockType::SystemTime),
    ] {
        let c = calls.clone();
        let options = rclev::TimerOptions {
            clock,
            ..rclev::TimerOptions::new(Duration::from_millis(period_ms))
        };
        timers.push(
            node.create_timer_repeating(options, move |info: TimerInfo| {
                // Exactly on time: the deadline is the time the callback starts at.
                assert_eq!(info.expected_call_time, info.actual_call_time);
                assert_eq!(info.missed_ticks, 0);
                let ms = (info.expected_call_time.nanos - start) / 1_000_000;
                c.lock().unwrap().push((ms, name));
            })
            .unwrap(),
        );
    }
    let once = calls.clone();
    let _oneshot = node
        .create_timer_oneshot(Duration::from_millis(1000), move |info: TimerInfo| {
            let ms = (info.expected_call_time.nanos - start) / 1_000_000;
            once.lock().unwrap().push((ms, "one-shot"));
        })
        .unwrap();
    assert!(test.advance(Duration::from_millis(1500)).is_empty());
    let calls = calls.lock().unwrap();
    let expected = [
        (300, "steady 300 ms"),
        (500, "ros 500 ms"),
        (600, "steady 300 ms"),
        (700, "system 700 ms"),
        (900, "steady 300 ms"),
        (1000, "ros 500 ms"),
        (1000, "one-shot"),
        (1200, "steady 300 ms"),
        (1400, "system 700 ms"),
        (1500, "steady 300 ms"),
        (1500, "ros 500 ms"),
    ];
    // In deadline order; timers due at the same instant may run in either order.
    assert!(calls.windows(2).all(|w| w[0].0 <= w[1].0), "{calls:?}");
    let mut got = calls.clone();
    got.sort();
    let mut want = expected.to_vec();
    want.sort();
    assert_eq!(got, want);
}

#[test]
fn reset_cancel_and_oneshot_follow_virtual_time() {
    let test = VirtualTimeExecutor::new().unwrap();
    let node = test.create_node("modes").unwrap();
    let fired = Arc::new(AtomicU64::new(0));
    let f = fired.clone();
    let timer = node
        .create_timer_repeating(Duration::from_secs(10), move || {
            f.fetch_add(1, Ordering::Relaxed);
        })
        .unwrap();
    assert!(test.advance(Duration::from_secs(9)).is_empty());
    assert_eq!(timer.time_until_next_call(), Some(Duration::from_secs(1)));
    // A reset at 9 s restarts the period: the next call is at 19 s, not 10 s.
    timer.reset();
    assert!(test.advance(Duration::from_secs(9)).is_empty());
    assert_eq!(fired.load(Ordering::Relaxed), 0);
    assert!(test.advance(Duration::from_secs(1)).is_empty());
    assert_eq!(fired.load(Ordering::Relaxed), 1);
    timer.cancel();
    assert!(test.advance(Duration::from_secs(3600)).is_empty());
    assert_eq!(fired.load(Ordering::Relaxed), 1);
    let f = fired.clone();
    timer.set_oneshot(move || {
        f.fetch_add(100, Ordering::Relaxed);
    });
    timer.reset();
    assert!(test.advance(Duration::from_secs(100)).is_empty());
    assert_eq!(fired.load(Ordering::Relaxed), 101, "a one-shot fires once");
    assert_eq!(test.elapsed(), Duration::from_secs(3719));
}
