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
}

impl PartialEq for Clock {
    fn eq(&self, other: &Self) -> bool {
        match (&self.kind, &other.kind) {
            (ClockKind::Steady, ClockKind::Steady) | (ClockKind::System, ClockKind::System) => true,
            (ClockKind::Ros(a), ClockKind::Ros(b)) => Arc::ptr_eq(a, b),
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

    pub(crate) fn source(&self) -> Option<&Arc<RosTimeSource>> {
        match &self.kind {
            ClockKind::Ros(s) => Some(s),
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
        }
    }

    /// Whether this is a ROS-time clock currently following `/clock`.
    pub fn is_sim_time_active(&self) -> bool {
        self.source().is_some_and(|s| s.is_sim_active())
    }

    /// The current time.
    pub fn now(&self) -> Time {
        let nanos = match &self.kind {
            ClockKind::Steady => monotonic_nanos(),
            ClockKind::System => system_nanos(),
            ClockKind::Ros(source) => source.now_nanos(),
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
            ClockKind::Ros(source) => {
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
