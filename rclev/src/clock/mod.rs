//! Clocks and time points.
//!
//! A [`Clock`] reads one of three time sources, as in rcl: steady (monotonic), system (wall)
//! and ROS time (the system clock, or simulation time from `/clock` once that is enabled).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::msg::TimeMsg;

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

/// A clock.
///
/// ```
/// use rclev::{Clock, ClockType};
/// let clock = Clock::steady();
/// let a = clock.now();
/// let b = clock.now();
/// assert!(b >= a);
/// assert_eq!(a.clock_type, ClockType::SteadyTime);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clock {
    clock_type: ClockType,
}

impl Clock {
    /// A steady clock.
    pub fn steady() -> Self {
        Self {
            clock_type: ClockType::SteadyTime,
        }
    }
    /// A system clock.
    pub fn system() -> Self {
        Self {
            clock_type: ClockType::SystemTime,
        }
    }
    /// A ROS-time clock.
    pub fn ros() -> Self {
        Self {
            clock_type: ClockType::RosTime,
        }
    }
    /// A clock of the given type.
    pub fn from_type(clock_type: ClockType) -> Self {
        Self { clock_type }
    }
    /// The clock's type.
    pub fn clock_type(&self) -> ClockType {
        self.clock_type
    }
    /// The current time.
    pub fn now(&self) -> Time {
        let nanos = match self.clock_type {
            ClockType::SteadyTime => steady_nanos(),
            ClockType::SystemTime | ClockType::RosTime => system_nanos(),
        };
        Time {
            nanos,
            clock_type: self.clock_type,
        }
    }
}

/// `CLOCK_MONOTONIC` in nanoseconds, the same source `std::time::Instant` reads on Linux.
pub(crate) fn steady_nanos() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `clock_gettime` writes only the `timespec` we pass; CLOCK_MONOTONIC always exists
    // on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

fn system_nanos() -> i64 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i64,
        Err(e) => -(e.duration().as_nanos() as i64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steady_matches_instant_rate() {
        let (i0, s0) = (std::time::Instant::now(), steady_nanos());
        std::thread::sleep(Duration::from_millis(20));
        let (di, ds) = (i0.elapsed().as_nanos() as i64, steady_nanos() - s0);
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
    }
}
