//! Clocks and time points.
//!
//! A [`Clock`] reads one of three time sources, as in rcl: steady (monotonic), system (wall)
//! and ROS time (the system clock, or simulation time from `/clock` once that is enabled).

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::base::error::Error;
use crate::interfaces::builtin_interfaces::msg::{Duration as DurationMsg, Time as TimeMsg};

/// Which time source a clock reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ClockType {
    /// Monotonic time, unaffected by wall-clock changes. The default for timers.
    SteadyTime,
    /// Wall-clock time.
    SystemTime,
    /// ROS time: the system clock unless simulation time is active.
    RosTime,
}

/// A point in time on a clock, in nanoseconds since that clock's epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Time {
    /// Nanoseconds since the clock's epoch (boot for steady, 1970 for system/ROS time).
    pub nanos: i64,
    /// The clock the time was read from.
    pub clock_type: ClockType,
}

impl Time {
    /// The time as a `builtin_interfaces/Time` message.
    pub fn to_msg(&self) -> TimeMsg {
        TimeMsg::from_nanos(self.nanos)
    }
    /// A ROS-time point from a message.
    pub fn from_msg(msg: &TimeMsg) -> Self {
        Self {
            nanos: msg.as_nanos(),
            clock_type: ClockType::RosTime,
        }
    }
    /// `self - earlier`, or `None` if `earlier` is later or on another clock.
    pub fn duration_since(&self, earlier: Time) -> Option<Duration> {
        if self.clock_type != earlier.clock_type || self.nanos < earlier.nanos {
            return None;
        }
        Some(Duration::from_nanos((self.nanos - earlier.nanos) as u64))
    }
}

mod sleep;
mod source;

pub use sleep::Rate;
pub use source::{ClockChange, JumpHandle, JumpThreshold, TimeJump};
pub(crate) use source::{Lifeline, RosTimeSource, SimTimeSink, TimeBaseFollower};

/// A clock: steady, system, or ROS time.
///
/// A ROS-time clock follows the system clock until simulation time is activated (the node's
/// `use_sim_time` parameter), then the latest `/clock` message. Clocks from a node
/// ([`NodeState::get_clock`](crate::NodeState::get_clock)) also end their sleeps when the
/// executor shuts down.
///
/// ```
/// use rclev::{Clock, ClockType};
/// let clock = Clock::steady();
/// let a = clock.now();
/// let b = clock.now();
/// assert!(b >= a);
/// assert_eq!(a.clock_type, ClockType::SteadyTime);
/// ```
#[derive(Clone)]
pub struct Clock {
    kind: ClockKind,
    life: Option<Arc<Lifeline>>,
}

#[derive(Clone)]
enum ClockKind {
    Steady,
    System,
    Ros(Arc<RosTimeSource>),
    /// A clock of a virtual-time executor (`VirtualTimeExecutor`): whatever its type, it
    /// reads the executor's virtual time, and its timers and sleeps follow it.
    Virtual(Arc<RosTimeSource>, ClockType),
}

impl PartialEq for Clock {
    fn eq(&self, other: &Self) -> bool {
        match (&self.kind, &other.kind) {
            (ClockKind::Steady, ClockKind::Steady) | (ClockKind::System, ClockKind::System) => true,
            (ClockKind::Ros(a), ClockKind::Ros(b)) => Arc::ptr_eq(a, b),
            (ClockKind::Virtual(a, t), ClockKind::Virtual(b, u)) => Arc::ptr_eq(a, b) && t == u,
            _ => false,
        }
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Clock")
            .field("type", &self.clock_type())
            .field("sim_time", &self.is_sim_time_active())
            .finish()
    }
}

impl Clock {
    /// A steady clock.
    pub fn steady() -> Self {
        Self {
            kind: ClockKind::Steady,
            life: None,
        }
    }
    /// A system clock.
    pub fn system() -> Self {
        Self {
            kind: ClockKind::System,
            life: None,
        }
    }
    /// A ROS-time clock of its own (not driven by any node's `/clock`).
    pub fn ros() -> Self {
        Self {
            kind: ClockKind::Ros(Arc::new(RosTimeSource::new(None))),
            life: None,
        }
    }

    pub(crate) fn with_life(mut self, life: Arc<Lifeline>) -> Self {
        self.life = Some(life);
        self
    }

    pub(crate) fn from_source(source: Arc<RosTimeSource>, life: Arc<Lifeline>) -> Self {
        Self {
            kind: ClockKind::Ros(source),
            life: Some(life),
        }
    }

    /// A clock of `clock_type` on a virtual timeline (`source`, simulated from the start).
    pub(crate) fn virtual_of(
        source: Arc<RosTimeSource>,
        clock_type: ClockType,
        life: Arc<Lifeline>,
    ) -> Self {
        Self {
            kind: ClockKind::Virtual(source, clock_type),
            life: Some(life),
        }
    }

    /// The time source of a ROS-time or virtual clock.
    pub(crate) fn source(&self) -> Option<&Arc<RosTimeSource>> {
        match &self.kind {
            ClockKind::Ros(s) | ClockKind::Virtual(s, _) => Some(s),
            _ => None,
        }
    }

    /// The virtual timeline this clock reads, if it is a virtual-time executor's.
    pub(crate) fn virtual_source(&self) -> Option<&Arc<RosTimeSource>> {
        match &self.kind {
            ClockKind::Virtual(s, _) => Some(s),
            _ => None,
        }
    }

    pub(crate) fn life(&self) -> Option<&Arc<Lifeline>> {
        self.life.as_ref()
    }

    /// The clock's type.
    pub fn clock_type(&self) -> ClockType {
        match self.kind {
            ClockKind::Steady => ClockType::SteadyTime,
            ClockKind::System => ClockType::SystemTime,
            ClockKind::Ros(_) => ClockType::RosTime,
            ClockKind::Virtual(_, clock_type) => clock_type,
        }
    }

    /// Whether this is a ROS-time clock currently following `/clock`.
    pub fn is_sim_time_active(&self) -> bool {
        match &self.kind {
            ClockKind::Ros(s) => s.is_sim_active(),
            _ => false,
        }
    }

    /// The current time.
    pub fn now(&self) -> Time {
        let nanos = match &self.kind {
            ClockKind::Steady => monotonic_nanos(),
            ClockKind::System => system_nanos(),
            ClockKind::Ros(source) | ClockKind::Virtual(source, _) => source.now_nanos(),
        };
        Time {
            nanos,
            clock_type: self.clock_type(),
        }
    }

    /// Registers jump callbacks on a ROS-time clock: `pre` runs before and `post` after a time
    /// jump that crosses `threshold` (a `/clock` step, or simulation time being switched on or
    /// off). They stay registered while the returned handle lives.
    ///
    /// Jumps from `/clock` call them on the node's worker; switching simulation time on or off
    /// calls them on the thread that set `use_sim_time`. Time changes of one clock are
    /// serialised, so a callback cannot start another one: setting the node's `use_sim_time`
    /// from inside is refused with
    /// [`crate::ParameterError::Rejected`].
    ///
    /// ```
    /// use rclev::{ClockChange, JumpThreshold};
    /// use std::sync::mpsc;
    ///
    /// let executor = rclev::Context::default().create_basic_executor();
    /// let node = executor.create_node("follower")?;
    /// let (tx, rx) = mpsc::channel();
    /// let threshold = JumpThreshold { on_clock_change: true, ..JumpThreshold::default() };
    /// // Keep the handle: the callbacks are unregistered when it is dropped.
    /// let _jumps = node.get_clock().create_jump_callback(
    ///     threshold,
    ///     |_jump| {}, // before the clock changes
    ///     move |jump| tx.send(jump.clock_change).unwrap(),
    /// )?;
    /// // Switching simulation time on calls them on this thread.
    /// node.set_parameter("use_sim_time", true)?;
    /// assert_eq!(rx.try_recv(), Ok(ClockChange::RosTimeActivated));
    /// // Only ROS-time clocks jump.
    /// assert!(rclev::Clock::steady().create_jump_callback(threshold, |_| {}, |_| {}).is_err());
    /// # Ok::<(), rclev::Error>(())
    /// ```
    pub fn create_jump_callback(
        &self,
        threshold: JumpThreshold,
        pre: impl FnMut(&TimeJump) + Send + 'static,
        post: impl FnMut(&TimeJump) + Send + 'static,
    ) -> Result<JumpHandle, Error> {
        match &self.kind {
            ClockKind::Ros(source) | ClockKind::Virtual(source, ClockType::RosTime) => {
                Ok(source.add_jump_callback(threshold, Box::new(pre), Box::new(post)))
            }
            _ => Err(Error::InvalidClock("jump callbacks need a ROS-time clock")),
        }
    }
}

impl From<Duration> for DurationMsg {
    fn from(d: Duration) -> Self {
        let t = TimeMsg::from_nanos(saturating_nanos(d));
        DurationMsg {
            sec: t.sec,
            nanosec: t.nanosec,
        }
    }
}

impl DurationMsg {
    /// The duration, or `None` if negative.
    pub fn to_duration(&self) -> Option<Duration> {
        let ns = self.sec as i64 * 1_000_000_000 + self.nanosec as i64;
        (ns >= 0).then(|| Duration::from_nanos(ns as u64))
    }
}

/// `d` in nanoseconds as ROS time stores them (`i64`), saturated: a duration beyond ~292 years
/// means "later than any representable time", never a wrapped, negative one.
pub(crate) fn saturating_nanos(d: Duration) -> i64 {
    i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)
}

/// The one place rclev converts between `Instant`s and `CLOCK_MONOTONIC` nanoseconds (the
/// [`Time::nanos`] of a steady clock, and what a timerfd is armed with): one reading of both,
/// taken together, that every conversion goes through. Both count the same clock, so the
/// offset between them is fixed; going through one epoch keeps grid points exact multiples of
/// a period apart.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MonotonicEpoch {
    instant: std::time::Instant,
    nanos: i64,
}

impl MonotonicEpoch {
    /// An epoch read now.
    pub(crate) fn now() -> Self {
        Self {
            instant: std::time::Instant::now(),
            nanos: monotonic_nanos(),
        }
    }

    /// How long after the epoch `at` is (zero for an instant before it).
    pub(crate) fn since(&self, at: std::time::Instant) -> Duration {
        at.saturating_duration_since(self.instant)
    }

    /// The instant `d` after the epoch.
    pub(crate) fn instant_after(&self, d: Duration) -> std::time::Instant {
        self.instant + d
    }

    /// `CLOCK_MONOTONIC` nanoseconds at `at` (before the epoch too).
    pub(crate) fn nanos_at(&self, at: std::time::Instant) -> i64 {
        if at >= self.instant {
            self.nanos
                .saturating_add(saturating_nanos(at.duration_since(self.instant)))
        } else {
            self.nanos
                .saturating_sub(saturating_nanos(self.instant.duration_since(at)))
        }
    }
}

/// Nanoseconds on `CLOCK_MONOTONIC` now: the source `std::time::Instant` reads on Linux, and
/// the one a [steady](ClockType::SteadyTime) [`Clock`] reads (its [`Time::nanos`] are this).
/// It counts from boot, never jumps, and stops while the system is suspended. Unlike an
/// `Instant`, the number means the same in every process of the machine, so it can stamp times
/// that another process compares with its own readings.
pub fn monotonic_nanos() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `clock_gettime` writes only the `timespec` we pass; CLOCK_MONOTONIC always exists
    // on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

pub(crate) fn system_nanos() -> i64 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => saturating_nanos(d),
        Err(e) => -saturating_nanos(e.duration()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_epoch_converts_both_ways_exactly() {
        let epoch = MonotonicEpoch::now();
        let d = Duration::from_nanos(1_234_567);
        let later = epoch.instant_after(d);
        assert_eq!(epoch.since(later), d);
        assert_eq!(
            epoch.nanos_at(later) - epoch.nanos_at(epoch.instant),
            1_234_567
        );
        // Before the epoch: `since` saturates, `nanos_at` does not.
        let earlier = MonotonicEpoch {
            instant: later,
            nanos: epoch.nanos_at(later),
        };
        assert_eq!(earlier.since(epoch.instant), Duration::ZERO);
        assert_eq!(earlier.nanos_at(epoch.instant), epoch.nanos);
    }

    #[test]
    fn steady_matches_instant_rate() {
        let (i0, s0) = (std::time::Instant::now(), monotonic_nanos());
        std::thread::sleep(Duration::from_millis(20));
        let (di, ds) = (i0.elapsed().as_nanos() as i64, monotonic_nanos() - s0);
        assert!((di - ds).abs() < 2_000_000, "{di} vs {ds}");
    }

    #[test]
    fn time_message_round_trip() {
        let t = Clock::ros().now();
        assert_eq!(Time::from_msg(&t.to_msg()), t);
        let later = Time {
            nanos: t.nanos + 5,
            ..t
        };
        assert_eq!(later.duration_since(t), Some(Duration::from_nanos(5)));
        assert_eq!(t.duration_since(later), None);
        assert_eq!(Clock::steady().now().duration_since(t), None);
        let d = Duration::from_millis(1500);
        assert_eq!(DurationMsg::from(d).to_duration(), Some(d));
    }
}
