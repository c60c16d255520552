//! The scheduler's data structure: timer slots plus a min-heap of `(deadline, id, generation)`.
//! No locks, no clocks, no wakers: the scheduler owns it behind its mutex.
//!
//! Cancelling or re-arming a timer does not search the heap: it bumps the slot's generation,
//! which turns the old heap key into a tombstone that `pop_due` skips. Each slot has at most
//! one live key, so the heap holds at most `live timers + tombstones` keys; tombstones are
//! dropped as they reach the top, and [`TimerHeap::compact`] rebuilds when they dominate.
//!
//! A repeating timer can be *paced* by its worker, which pulls each next tick itself
//! ([`TimerHeap::pull`]) right after running one, and then sleeps to its deadline. The slot
//! still holds the true next deadline (the grid stays here, in the one heap), but its key is
//! that deadline plus a watchdog interval: the scheduler thread is not woken for every tick of
//! a paced timer, only once per watchdog interval to see that the worker keeps pulling (a
//! worker that stopped pulling hands the timer back to the scheduler at that point).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A point on the time axis a heap is keyed by: `Instant` for wall/steady timers, [`SimTime`]
/// for timers paced by a simulated clock.
pub(crate) trait GridTime: Copy + Ord + std::fmt::Debug {
    /// `self + d`, or `None` past the end of the time axis.
    fn checked_plus(self, d: Duration) -> Option<Self>;
    /// `self - earlier`, zero if `earlier` is later.
    fn since(self, earlier: Self) -> Duration;
}

impl GridTime for Instant {
    fn checked_plus(self, d: Duration) -> Option<Self> {
        self.checked_add(d)
    }
    fn since(self, earlier: Self) -> Duration {
        self.saturating_duration_since(earlier)
    }
}

/// Simulated time in nanoseconds (from `/clock`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct SimTime(pub(crate) i64);

impl GridTime for SimTime {
    fn checked_plus(self, d: Duration) -> Option<Self> {
        i64::try_from(d.as_nanos())
            .ok()
            .and_then(|ns| self.0.checked_add(ns))
            .map(SimTime)
    }
    fn since(self, earlier: Self) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0).max(0) as u64)
    }
}

/// Index of a timer's slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct TimerId(pub(crate) usize);

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Key<K> {
    deadline: K,
    id: TimerId,
    generation: u64,
}

pub(crate) struct Slot<T, K> {
    pub(crate) target: Arc<T>,
    /// Next deadline; `None` while cancelled (the tombstone state) or after a one-shot fired.
    pub(crate) deadline: Option<K>,
    /// Zero for a one-shot timer.
    pub(crate) period: Duration,
    generation: u64,
    /// `Some(watchdog)` while the worker pulls the ticks: the key is `deadline + watchdog`.
    paced: Option<Duration>,
}

/// One expiry taken off the heap.
pub(crate) struct Expiry<T, K = Instant> {
    pub(crate) target: Arc<T>,
    /// The grid point this call stands for (the newest one not after `now`).
    pub(crate) deadline: K,
    /// Grid points skipped because the scheduler was late by more than a period.
    pub(crate) skipped: u64,
}

pub(crate) struct TimerHeap<T, K = Instant> {
    slots: Vec<Option<Slot<T, K>>>,
    /// The last generation each slot index handed out. Kept across a slot's reuse: a removed
    /// timer's keys may still sit in the heap, and a new timer in the same slot must not
    /// restart the count, or its first key would match the dead timer's.
    generations: Vec<u64>,
    free: Vec<usize>,
    keys: BinaryHeap<Reverse<Key<K>>>,
    live: usize,
}

impl<T, K: GridTime> Default for TimerHeap<T, K> {
    fn default() -> Self {
        Self {
            slots: Vec::new(),
            generations: Vec::new(),
            free: Vec::new(),
            keys: BinaryHeap::new(),
            live: 0,
        }
    }
}

impl<T, K: GridTime> TimerHeap<T, K> {
    /// Adds a timer, armed for `deadline` unless `None`.
    pub(crate) fn insert(
        &mut self,
        target: Arc<T>,
        deadline: Option<K>,
        period: Duration,
    ) -> TimerId {
        let id = match self.free.pop() {
            Some(i) => TimerId(i),
            None => {
                self.slots.push(None);
                self.generations.push(0);
                TimerId(self.slots.len() - 1)
            }
        };
        self.slots[id.0] = Some(Slot {
            target,
            deadline: None,
            period,
            generation: self.generations[id.0],
            paced: None,
        });
        self.live += 1;
        self.arm(id, deadline);
        id
    }

    /// Removes a timer entirely; its key becomes a tombstone.
    pub(crate) fn remove(&mut self, id: TimerId) -> Option<Arc<T>> {
        let slot = self.slots.get_mut(id.0)?.take()?;
        self.free.push(id.0);
        self.live -= 1;
        Some(slot.target)
    }

    /// Re-arms (`Some`) or disarms (`None`, a tombstone that keeps the slot) a timer. The
    /// scheduler paces it again (a worker pulling ticks resumes with [`Self::pull`]).
    pub(crate) fn arm(&mut self, id: TimerId, deadline: Option<K>) {
        self.set_key(id, deadline, None);
    }

    /// Sets the slot's deadline and pacing and pushes its one live key.
    fn set_key(&mut self, id: TimerId, deadline: Option<K>, paced: Option<Duration>) {
        let Some(Some(slot)) = self.slots.get_mut(id.0) else {
            return;
        };
        slot.generation += 1;
        self.generations[id.0] = slot.generation;
        slot.deadline = deadline;
        slot.paced = paced;
        let key = match paced {
            // Past the end of the time axis the watchdog is never needed: no key.
            Some(watchdog) => deadline.and_then(|d| d.checked_plus(watchdog)),
            None => deadline,
        };
        if let Some(deadline) = key {
            self.keys.push(Reverse(Key {
                deadline,
                id,
                generation: slot.generation,
            }));
        }
        if self.keys.len() > 64 && self.keys.len() > 4 * self.live {
            self.compact();
        }
    }

    pub(crate) fn set_period(&mut self, id: TimerId, period: Duration) {
        if let Some(Some(slot)) = self.slots.get_mut(id.0) {
            slot.period = period;
        }
    }

    pub(crate) fn slot(&self, id: TimerId) -> Option<&Slot<T, K>> {
        self.slots.get(id.0)?.as_ref()
    }

    fn is_live(&self, key: &Key<K>) -> bool {
        matches!(self.slots.get(key.id.0), Some(Some(s)) if s.generation == key.generation)
    }

    /// The earliest live deadline, dropping tombstones on the way.
    pub(crate) fn next_deadline(&mut self) -> Option<K> {
        while let Some(Reverse(key)) = self.keys.peek() {
            if self.is_live(key) {
                return Some(key.deadline);
            }
            self.keys.pop();
        }
        None
    }

    /// Takes the earliest timer if its deadline is at or before `horizon`, advancing a
    /// repeating timer to its next grid point after `now` (deadline + k·period: no drift, and no
    /// burst after a stall).
    ///
    /// A paced timer's key coming up means its watchdog interval passed: if its worker kept
    /// pulling (the true deadline is still ahead of `now`: the worker holds the tick before
    /// it, and pulls this one when that has run), the key moves on by another interval and
    /// nothing is taken; otherwise the worker stopped pulling, and the timer is the
    /// scheduler's again, taken as any other. Ahead of `now`, not of `horizon`: a tick the
    /// scheduler took back from a pacing worker reaches the worker's mailbox behind the ticks
    /// on its alarm, and could run after a later one of another timer.
    pub(crate) fn pop_due(&mut self, horizon: K, now: K) -> Option<Expiry<T, K>> {
        loop {
            let key_deadline = self.next_deadline()?;
            if key_deadline > horizon {
                return None;
            }
            let Reverse(key) = self.keys.pop()?;
            let slot = self.slots[key.id.0].as_mut()?;
            let Some(deadline) = slot.deadline else {
                continue;
            };
            if let Some(watchdog) = slot.paced {
                if deadline > now {
                    self.set_key(key.id, Some(deadline), Some(watchdog));
                    continue;
                }
            }
            return Some(self.take(key.id, deadline, now, None));
        }
    }

    /// The worker's pull: if the paced (or to-be-paced) repeating timer `id` has a deadline at
    /// or before `horizon`, takes it as [`Self::pop_due`] would and keeps the timer paced, its
    /// key `watchdog` after the new deadline. `None` if it has none that soon; then a paced
    /// timer goes back to the scheduler, keyed at its deadline, which is returned in `Err`
    /// so the caller can wake the scheduler thread for it.
    pub(crate) fn pull(
        &mut self,
        id: TimerId,
        horizon: K,
        now: K,
        watchdog: Duration,
    ) -> Result<Expiry<T, K>, Option<K>> {
        let Some(slot) = self.slots.get(id.0).and_then(Option::as_ref) else {
            return Err(None);
        };
        let (Some(deadline), false) = (slot.deadline, slot.period.is_zero()) else {
            return Err(None);
        };
        if deadline > horizon {
            if slot.paced.is_some() {
                self.arm(id, Some(deadline));
                return Err(Some(deadline));
            }
            return Err(None);
        }
        Ok(self.take(id, deadline, now, Some(watchdog)))
    }

    /// Takes timer `id`'s tick due at `deadline` (at or before `now`: the newest grid point
    /// not after `now`, the ones before it skipped), re-keying it at the next grid point
    /// (`paced`: plus the watchdog interval).
    fn take(&mut self, id: TimerId, deadline: K, now: K, paced: Option<Duration>) -> Expiry<T, K> {
        let slot = self.slots[id.0].as_ref().expect("taken from a live key");
        // A next grid point past the end of the time axis ends the timer: it can never come.
        let (fire_at, skipped, next) = if slot.period.is_zero() {
            (deadline, 0, None)
        } else if deadline >= now {
            (deadline, 0, deadline.checked_plus(slot.period))
        } else {
            let late = now.since(deadline).as_nanos();
            let k = u64::try_from(late / slot.period.as_nanos()).unwrap_or(u64::MAX);
            // Not past `now`, so on the axis.
            let fire_at = deadline
                .checked_plus(mul(slot.period, k))
                .unwrap_or(deadline);
            (fire_at, k, fire_at.checked_plus(slot.period))
        };
        let target = slot.target.clone();
        match (paced, slot.paced) {
            // Still paced: the key (the watchdog) stays, only the true deadline moves.
            (Some(_), Some(_)) if next.is_some() => {
                self.slots[id.0].as_mut().expect("live").deadline = next;
            }
            _ => self.set_key(id, next, paced),
        }
        Expiry {
            target,
            deadline: fire_at,
            skipped,
        }
    }

    /// Every armed timer: `(id, deadline, period)` (for re-arming after a clock jump).
    pub(crate) fn armed(&self) -> Vec<(TimerId, K, Duration)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                let s = s.as_ref()?;
                Some((TimerId(i), s.deadline?, s.period))
            })
            .collect()
    }

    /// Rebuilds the heap without tombstones.
    fn compact(&mut self) {
        let keys = std::mem::take(&mut self.keys);
        self.keys = keys
            .into_iter()
            .filter(|Reverse(k)| self.is_live(k))
            .collect();
    }

    #[cfg(test)]
    pub(crate) fn key_count(&self) -> usize {
        self.keys.len()
    }
}

/// `period * k` for large `k` without overflowing `Duration * u32`.
pub(crate) fn mul(period: Duration, k: u64) -> Duration {
    let ns = u64::try_from(period.as_nanos()).unwrap_or(u64::MAX);
    Duration::from_nanos(ns.saturating_mul(k))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn repeating_deadlines_stay_on_the_grid() {
        let t0 = Instant::now();
        let mut heap: TimerHeap<_> = TimerHeap::default();
        let id = heap.insert(Arc::new(()), Some(t0 + ms(10)), ms(10));
        for k in 1..=1000u64 {
            let e = heap
                .pop_due(t0 + mul(ms(10), k), t0 + mul(ms(10), k))
                .unwrap();
            assert_eq!(e.deadline, t0 + mul(ms(10), k), "tick {k} drifted");
            assert_eq!(e.skipped, 0);
        }
        assert_eq!(
            heap.slot(id).unwrap().deadline,
            Some(t0 + mul(ms(10), 1001))
        );
    }

    #[test]
    fn a_stall_skips_to_the_grid_instead_of_bursting() {
        let t0 = Instant::now();
        let mut heap: TimerHeap<_> = TimerHeap::default();
        heap.insert(Arc::new(()), Some(t0 + ms(10)), ms(10));
        let now = t0 + ms(55);
        let e = heap.pop_due(now, now).unwrap();
        assert_eq!(e.deadline, t0 + ms(50));
        assert_eq!(e.skipped, 4);
        assert!(heap.pop_due(now, now).is_none(), "burst after a stall");
        assert_eq!(heap.next_deadline(), Some(t0 + ms(60)));
    }

    #[test]
    fn cancel_leaves_a_tombstone_and_rearm_works() {
        let t0 = Instant::now();
        let mut heap: TimerHeap<_> = TimerHeap::default();
        let a = heap.insert(Arc::new('a'), Some(t0 + ms(1)), ms(10));
        let b = heap.insert(Arc::new('b'), Some(t0 + ms(2)), ms(10));
        heap.arm(a, None);
        assert_eq!(
            heap.next_deadline(),
            Some(t0 + ms(2)),
            "cancelled head blocks the rest"
        );
        assert!(heap.slot(a).is_some(), "tombstone lost the slot");
        heap.arm(a, Some(t0 + ms(3)));
        let order: Vec<char> =
            std::iter::from_fn(|| heap.pop_due(t0 + ms(5), t0 + ms(5)).map(|e| *e.target))
                .collect();
        assert_eq!(order, vec!['b', 'a']);
        assert!(heap.remove(b).is_some());
        assert!(heap.remove(b).is_none());
    }

    #[test]
    fn a_reused_slot_ignores_the_dead_timers_keys() {
        let t0 = Instant::now();
        let mut heap: TimerHeap<_> = TimerHeap::default();
        let dead = heap.insert(Arc::new('d'), Some(t0 + ms(30)), ms(100));
        heap.remove(dead);
        let new = heap.insert(Arc::new('n'), Some(t0 + ms(100)), ms(100));
        assert_eq!(new, dead, "the slot is reused");
        assert_eq!(
            heap.next_deadline(),
            Some(t0 + ms(100)),
            "dead key taken as live"
        );
        assert!(heap.pop_due(t0 + ms(50), t0 + ms(50)).is_none());
        let e = heap.pop_due(t0 + ms(100), t0 + ms(100)).unwrap();
        assert_eq!((*e.target, e.deadline), ('n', t0 + ms(100)));
    }

    #[test]
    fn one_shot_fires_once() {
        let t0 = Instant::now();
        let mut heap: TimerHeap<_> = TimerHeap::default();
        let id = heap.insert(Arc::new(()), Some(t0), Duration::ZERO);
        assert!(heap.pop_due(t0, t0).is_some());
        assert!(heap.pop_due(t0 + ms(100), t0 + ms(100)).is_none());
        assert_eq!(heap.slot(id).unwrap().deadline, None);
    }

    #[test]
    fn ten_thousand_timers_fire_in_deadline_order() {
        let t0 = Instant::now();
        let mut heap: TimerHeap<_> = TimerHeap::default();
        // Deadlines in a scrambled order.
        for i in 0..10_000u64 {
            let d = (i * 7919) % 10_000;
            heap.insert(
                Arc::new(d),
                Some(t0 + Duration::from_micros(d)),
                Duration::ZERO,
            );
        }
        let end = t0 + ms(20);
        let fired: Vec<u64> =
            std::iter::from_fn(|| heap.pop_due(end, end).map(|e| *e.target)).collect();
        assert_eq!(fired, (0..10_000).collect::<Vec<_>>());
    }

    const WATCHDOG: Duration = Duration::from_millis(100);

    #[test]
    fn a_pulled_timer_stays_on_the_grid_and_out_of_the_schedulers_way() {
        let t0 = Instant::now();
        let mut heap: TimerHeap<_> = TimerHeap::default();
        let id = heap.insert(Arc::new(()), Some(t0 + ms(1)), ms(1));
        // The worker pulls each tick as the previous one runs, up to 2 ms ahead.
        for k in 1..=500u64 {
            let now = t0 + mul(ms(1), k - 1);
            let e = heap.pull(id, now + ms(2), now, WATCHDOG).ok().unwrap();
            assert_eq!(e.deadline, t0 + mul(ms(1), k), "tick {k} drifted");
            assert_eq!(e.skipped, 0);
            // Until the watchdog interval passes, the scheduler (handing over up to a lead of
            // at most half a period early) finds nothing to do.
            let horizon = now + Duration::from_micros(500);
            assert!(heap.pop_due(horizon, now).is_none(), "tick {k} popped");
        }
        assert_eq!(heap.slot(id).unwrap().deadline, Some(t0 + ms(501)));
        assert!(heap.key_count() <= 65, "{} keys", heap.key_count());
    }

    #[test]
    fn the_watchdog_moves_on_while_the_worker_keeps_pulling() {
        let t0 = Instant::now();
        let mut heap: TimerHeap<_> = TimerHeap::default();
        let id = heap.insert(Arc::new(()), Some(t0 + ms(1)), ms(1));
        assert!(heap.pull(id, t0 + ms(2), t0, WATCHDOG).is_ok());
        // The key sits a watchdog interval after the next deadline (2 ms).
        assert_eq!(heap.next_deadline(), Some(t0 + ms(2) + WATCHDOG));
        // The worker pulled up to 102 ms meanwhile; the watchdog finds the deadline ahead
        // and moves on, even with that deadline inside the scheduler's hand-off horizon (the
        // worker holds the tick before it).
        for k in 2..=102u64 {
            let now = t0 + mul(ms(1), k - 1);
            assert!(heap.pull(id, now + ms(2), now, WATCHDOG).is_ok());
        }
        let now = t0 + ms(102);
        assert!(heap.pop_due(now + ms(2), now).is_none());
        assert_eq!(heap.next_deadline(), Some(t0 + ms(103) + WATCHDOG));
    }

    #[test]
    fn a_timer_whose_worker_stopped_pulling_goes_back_to_the_scheduler() {
        let t0 = Instant::now();
        let mut heap: TimerHeap<_> = TimerHeap::default();
        let id = heap.insert(Arc::new(()), Some(t0 + ms(1)), ms(1));
        assert!(heap.pull(id, t0 + ms(2), t0, WATCHDOG).is_ok());
        // No pull for a whole watchdog interval: the scheduler takes the newest grid point
        // and counts the ones before it as skipped, as after any stall.
        let now = t0 + ms(2) + WATCHDOG;
        let e = heap.pop_due(now, now).unwrap();
        assert_eq!(e.deadline, now);
        assert_eq!(e.skipped, 100);
        // Unpaced: keyed at its deadline again.
        assert_eq!(heap.next_deadline(), Some(now + ms(1)));
    }

    #[test]
    fn a_pull_beyond_the_horizon_hands_the_timer_back() {
        let t0 = Instant::now();
        let mut heap: TimerHeap<_> = TimerHeap::default();
        let id = heap.insert(Arc::new(()), Some(t0 + ms(1)), ms(1));
        assert!(heap.pull(id, t0 + ms(2), t0, WATCHDOG).is_ok());
        // The next deadline (2 ms) lies beyond a horizon of 1.5 ms: not pulled, and the
        // timer is keyed at its deadline for the scheduler, which must be told.
        assert_eq!(
            heap.pull(id, t0 + Duration::from_micros(1500), t0, WATCHDOG)
                .err(),
            Some(Some(t0 + ms(2)))
        );
        assert_eq!(heap.next_deadline(), Some(t0 + ms(2)));
        // An unpaced timer out of reach: nothing to tell.
        assert_eq!(heap.pull(id, t0, t0, WATCHDOG).err(), Some(None));
        // One-shots are never pulled.
        let once = heap.insert(Arc::new(()), Some(t0), Duration::ZERO);
        assert_eq!(heap.pull(once, t0 + ms(2), t0, WATCHDOG).err(), Some(None));
    }

    #[test]
    fn a_late_pull_skips_to_the_grid() {
        let t0 = Instant::now();
        let mut heap: TimerHeap<_> = TimerHeap::default();
        let id = heap.insert(Arc::new(()), Some(t0 + ms(1)), ms(1));
        let now = t0 + Duration::from_micros(4500);
        let e = heap.pull(id, now + ms(2), now, WATCHDOG).ok().unwrap();
        assert_eq!((e.deadline, e.skipped), (t0 + ms(4), 3));
        assert_eq!(heap.slot(id).unwrap().deadline, Some(t0 + ms(5)));
    }

    #[test]
    fn re_arming_a_paced_timer_ends_its_pacing() {
        let t0 = Instant::now();
        let mut heap: TimerHeap<_> = TimerHeap::default();
        let id = heap.insert(Arc::new(()), Some(t0 + ms(1)), ms(1));
        assert!(heap.pull(id, t0 + ms(2), t0, WATCHDOG).is_ok());
        heap.arm(id, Some(t0 + ms(10)));
        assert_eq!(heap.next_deadline(), Some(t0 + ms(10)));
        let e = heap.pop_due(t0 + ms(10), t0 + ms(10)).unwrap();
        assert_eq!(e.deadline, t0 + ms(10));
    }

    #[test]
    fn tombstones_are_compacted() {
        let t0 = Instant::now();
        let mut heap: TimerHeap<_> = TimerHeap::default();
        let id = heap.insert(Arc::new(()), Some(t0 + ms(1000)), ms(1));
        for i in 0..10_000 {
            heap.arm(id, Some(t0 + ms(1000 + i)));
        }
        assert!(
            heap.key_count() <= 65,
            "{} keys for one timer",
            heap.key_count()
        );
    }
}
