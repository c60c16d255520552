//! Where playback is in the bag's time, and when (on `CLOCK_MONOTONIC`) a message of a given
//! bag time is due: rosbag2's player clock (`TimeControllerClock`), as pure arithmetic.
//!
//! The mapping is anchored at one point (a monotonic instant and the bag time it plays) and
//! scaled by the rate; pausing, resuming, a rate change and a jump only move the anchor. A
//! message's deadline is computed from the anchor each time, never by adding up the gaps
//! between messages, so lateness does not accumulate over a long bag.

/// Playback time: bag time (ns since the epoch, as the bag's log times) against monotonic time
/// (ns, [`rclev::clock::monotonic_nanos`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PlayClock {
    /// The monotonic time of the anchor.
    anchor_steady: i64,
    /// The bag time played at `anchor_steady`.
    anchor_bag: i64,
    /// Bag nanoseconds per monotonic nanosecond.
    rate: f64,
    /// Bag time stands still while paused.
    paused: bool,
}

impl PlayClock {
    /// A clock playing bag time `bag` at monotonic time `steady`, at `rate` (which must be
    /// positive and finite: [`valid_rate`]), paused or not.
    pub(crate) fn new(bag: i64, steady: i64, rate: f64, paused: bool) -> Self {
        Self {
            anchor_steady: steady,
            anchor_bag: bag,
            rate,
            paused,
        }
    }

    /// The bag time played at monotonic time `steady` (not before the anchor).
    pub(crate) fn now(&self, steady: i64) -> i64 {
        if self.paused {
            return self.anchor_bag;
        }
        let elapsed = steady.saturating_sub(self.anchor_steady).max(0);
        self.anchor_bag
            .saturating_add((elapsed as f64 * self.rate).round() as i64)
    }

    /// When bag time `bag` is played (monotonic ns); `None` while paused. A time before the
    /// anchor (a message recorded out of order) is due before now, so at once.
    pub(crate) fn due(&self, bag: i64) -> Option<i64> {
        if self.paused {
            return None;
        }
        let offset = (bag.saturating_sub(self.anchor_bag) as f64 / self.rate).round() as i64;
        Some(self.anchor_steady.saturating_add(offset))
    }

    /// Whether bag time stands still.
    pub(crate) fn is_paused(&self) -> bool {
        self.paused
    }

    /// The rate.
    pub(crate) fn rate(&self) -> f64 {
        self.rate
    }

    /// Stops bag time at what it is at `steady`.
    pub(crate) fn pause(&mut self, steady: i64) {
        if !self.paused {
            self.anchor_bag = self.now(steady);
            self.anchor_steady = steady;
            self.paused = true;
        }
    }

    /// Lets bag time run again from where it stopped, from `steady` on.
    pub(crate) fn resume(&mut self, steady: i64) {
        if self.paused {
            self.anchor_steady = steady;
            self.paused = false;
        }
    }

    /// Changes the rate from `steady` on (bag time is continuous across the change). A rate
    /// that is not positive and finite is refused (`false`), as rosbag2 refuses it.
    pub(crate) fn set_rate(&mut self, rate: f64, steady: i64) -> bool {
        if !valid_rate(rate) {
            return false;
        }
        self.anchor_bag = self.now(steady);
        self.anchor_steady = steady;
        self.rate = rate;
        true
    }

    /// Plays bag time `bag` at `steady` (the start of a pass, or a step while paused).
    pub(crate) fn jump(&mut self, bag: i64, steady: i64) {
        self.anchor_bag = bag;
        self.anchor_steady = steady;
    }
}

/// Whether `rate` can scale playback: positive and finite.
pub(crate) fn valid_rate(rate: f64) -> bool {
    rate.is_finite() && rate > 0.0
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;
    const MS: i64 = 1_000_000;
    /// A bag start far from zero, as real epoch stamps are.
    const T0: i64 = 1_765_000_000 * S;

    #[test]
    fn deadlines_scale_with_the_rate_from_the_anchor() {
        let c = PlayClock::new(T0, 100 * S, 2.0, false);
        assert_eq!(c.due(T0), Some(100 * S));
        assert_eq!(c.due(T0 + 3 * S), Some(100 * S + 1500 * MS));
        assert_eq!(c.now(100 * S + 1500 * MS), T0 + 3 * S);
        // Out of order: due before the anchor, so at once.
        assert!(c.due(T0 - S).unwrap() < 100 * S);
        // Deadlines come from the anchor: the 10 000th message of a 1 ms bag is due exactly
        // 10 s (at rate 1) after the start, whatever came before.
        let c = PlayClock::new(T0, 0, 1.0, false);
        assert_eq!(c.due(T0 + 10_000 * MS), Some(10 * S));
    }

    #[test]
    fn pause_stops_bag_time_and_resume_continues_it() {
        let mut c = PlayClock::new(T0, 0, 1.0, false);
        c.pause(2 * S);
        assert!(c.is_paused());
        assert_eq!(c.due(T0 + 3 * S), None);
        assert_eq!(c.now(60 * S), T0 + 2 * S);
        // Paused for 8 s: a message 3 s into the bag comes 1 s after the resume.
        c.resume(10 * S);
        assert_eq!(c.due(T0 + 3 * S), Some(11 * S));
        assert_eq!(c.now(10 * S), T0 + 2 * S);
    }

    #[test]
    fn a_rate_change_keeps_bag_time_continuous() {
        let mut c = PlayClock::new(T0, 0, 1.0, false);
        assert!(c.set_rate(2.0, 4 * S));
        assert_eq!(c.now(4 * S), T0 + 4 * S);
        assert_eq!(c.due(T0 + 6 * S), Some(5 * S));
        assert!(!c.set_rate(0.0, 5 * S));
        assert!(!c.set_rate(-1.0, 5 * S));
        assert!(!c.set_rate(f64::NAN, 5 * S));
        assert_eq!(c.rate(), 2.0);
        // While paused too: bag time stays, the new rate applies after the resume.
        c.pause(5 * S);
        assert!(c.set_rate(0.5, 7 * S));
        assert_eq!(c.now(9 * S), T0 + 6 * S);
        c.resume(9 * S);
        assert_eq!(c.due(T0 + 7 * S), Some(11 * S));
    }

    #[test]
    fn a_jump_replays_from_the_time_given() {
        let mut c = PlayClock::new(T0, 0, 1.0, true);
        c.jump(T0 + 5 * S, 3 * S);
        assert_eq!(c.now(4 * S), T0 + 5 * S);
        c.resume(4 * S);
        assert_eq!(c.due(T0 + 6 * S), Some(5 * S));
    }
}
