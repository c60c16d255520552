//! A worker's scheduling policies, without I/O: given the time (and what the worker saw), they
//! say what to do next, and the worker loop (`worker.rs`) reads the clock and does it. So they
//! are tested exactly, on made-up instants, below.
//!
//! - [`SpinPolicy`]: whether an idle worker spins before parking, and until when.
//! - [`PollBudget`]: when a busy worker yields its runtime thread.

use std::time::{Duration, Instant};

/// Decides whether an idle worker spins briefly before parking.
///
/// Parking and being woken costs ~15 µs of latency and more of CPU here; if work has lately been
/// arriving sooner than `window` after the worker went idle, spinning for up to `window` is
/// cheaper than parking. The gap is tracked as an exponential moving average (1/8 weight), so a
/// 1 kHz timer (1 ms gaps) never spins while a 50 kHz one (20 µs gaps) always does.
pub(crate) struct SpinPolicy {
    window: Duration,
    gap_ewma_ns: f64,
}

impl SpinPolicy {
    pub(crate) fn new(window: Duration) -> Self {
        Self {
            window,
            gap_ewma_ns: f64::INFINITY,
        }
    }

    fn should_spin(&self) -> bool {
        !self.window.is_zero() && self.gap_ewma_ns < self.window.as_nanos() as f64
    }

    /// Until when a worker idle since `since` spins before parking (`None`: park at once).
    /// Never past its alarm's next wake-up (`alarm`): that is when it has work again.
    pub(crate) fn spin_until(&self, since: Instant, alarm: Option<Instant>) -> Option<Instant> {
        if !self.should_spin() {
            return None;
        }
        let end = since + self.window;
        Some(alarm.map_or(end, |t| t.min(end)))
    }

    /// The work that ended an idle period did not need the worker awake (a timer tick handed
    /// over early enough): counts as a long gap.
    pub(crate) fn record_no_spin_needed(&mut self) {
        self.record_gap(self.window * 2);
    }

    /// Work arrived `gap` after the worker went idle.
    pub(crate) fn record_gap(&mut self, gap: Duration) {
        let g = gap.as_nanos() as f64;
        self.gap_ewma_ns = if self.gap_ewma_ns.is_finite() {
            self.gap_ewma_ns + (g - self.gap_ewma_ns) / 8.0
        } else {
            g
        };
    }
}

/// How long one poll of a worker may keep running mailbox rounds before the task yields to the
/// runtime, so a busy worker cannot hog a runtime thread that other tasks (other workers, user
/// tasks, its own async callbacks) also need.
pub(crate) const POLL_BUDGET: Duration = Duration::from_millis(2);

/// Rounds between two looks at the clock: reading it costs ~20 ns, a round can be less.
const ROUNDS_PER_CHECK: u32 = 64;

/// One poll's budget: yield once [`POLL_BUDGET`] has passed, looked at every
/// [`ROUNDS_PER_CHECK`] rounds.
pub(crate) struct PollBudget {
    started: Instant,
    rounds: u32,
}

impl PollBudget {
    /// The budget of a poll that started at `now`.
    pub(crate) fn start(now: Instant) -> Self {
        Self {
            started: now,
            rounds: 0,
        }
    }

    /// Counts a round; whether the poll should yield now. `now` is read only every
    /// [`ROUNDS_PER_CHECK`] rounds.
    pub(crate) fn round_done(&mut self, now: impl FnOnce() -> Instant) -> bool {
        self.rounds = self.rounds.wrapping_add(1);
        self.rounds.is_multiple_of(ROUNDS_PER_CHECK)
            && now().saturating_duration_since(self.started) >= POLL_BUDGET
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: Duration = Duration::from_micros(1);

    #[test]
    fn a_worker_spins_only_once_work_comes_sooner_than_its_window() {
        let t0 = Instant::now();
        let mut spin = SpinPolicy::new(60 * US);
        // Nothing learned yet: park.
        assert_eq!(spin.spin_until(t0, None), None);
        // Work 20 µs after going idle (a 50 kHz timer): spin for the window.
        spin.record_gap(20 * US);
        assert_eq!(spin.spin_until(t0, None), Some(t0 + 60 * US));
        // Capped by the alarm: the worker has work again then.
        assert_eq!(spin.spin_until(t0, Some(t0 + 25 * US)), Some(t0 + 25 * US));
        assert_eq!(spin.spin_until(t0, Some(t0 + 90 * US)), Some(t0 + 60 * US));
    }

    #[test]
    fn the_gap_average_moves_an_eighth_of_the_way() {
        let t0 = Instant::now();
        let mut spin = SpinPolicy::new(60 * US);
        spin.record_gap(20 * US);
        // 1 ms gaps (a 1 kHz timer) pull the average past the window after a few: 20 µs +
        // (1000 − 20)/8 = 142.5 µs already.
        spin.record_gap(1000 * US);
        assert_eq!(spin.spin_until(t0, None), None);
        // Back down: 142.5 → 127.2 → 113.8 → 102.1 → 91.8 → 82.8 → 75.0 → 68.1 → 62.1 → 56.8.
        for _ in 0..8 {
            spin.record_gap(20 * US);
            assert_eq!(spin.spin_until(t0, None), None);
        }
        spin.record_gap(20 * US);
        assert_eq!(spin.spin_until(t0, None), Some(t0 + 60 * US));
        // A tick that needed no spinning counts as a gap of twice the window.
        for _ in 0..3 {
            spin.record_no_spin_needed();
        }
        assert_eq!(spin.spin_until(t0, None), None);
    }

    #[test]
    fn a_zero_window_never_spins() {
        let mut spin = SpinPolicy::new(Duration::ZERO);
        spin.record_gap(Duration::ZERO);
        assert_eq!(spin.spin_until(Instant::now(), None), None);
    }

    #[test]
    fn a_poll_yields_after_its_budget_looking_every_64_rounds() {
        let t0 = Instant::now();
        let mut budget = PollBudget::start(t0);
        let mut looks = 0;
        // Within the budget: never yields, and reads the clock once per 64 rounds.
        for _ in 0..640 {
            assert!(!budget.round_done(|| {
                looks += 1;
                t0 + POLL_BUDGET / 2
            }));
        }
        assert_eq!(looks, 10);
        // Past it: yields at the next look, not before.
        for _ in 0..63 {
            assert!(!budget.round_done(|| unreachable!("looked between checks")));
        }
        assert!(budget.round_done(|| t0 + POLL_BUDGET));
    }
}
