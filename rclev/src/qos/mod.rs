//! Quality-of-service profiles as ROS 2 defines them: the policies, the standard profiles, how
//! an offered profile matches a requested one (`compat.rs`), and the QoS events an endpoint
//! reports ([`event`]).
//!
//! A policy may be left to the transport (`SystemDefault`) or, on a subscription, adapt to the
//! publishers already on the topic (`BestAvailable`); [`QoSProfile::resolve`] turns such a
//! profile into the concrete one an endpoint is created with, the same way for every transport.

use std::time::Duration;

use crate::base::error::{Error, Result};

pub(crate) mod compat;
pub mod event;

pub use compat::{Incompatibility, QosPolicyKind, QosRole};
pub use event::{
    CountStatus, IncompatibleQosStatus, LivelinessChangedStatus, MatchedStatus, QosEvent,
    QosEventHandler, QosEventKind,
};

/// How many samples a reader or writer keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum History {
    /// Keep the newest `n` samples; older ones are dropped (and counted as lost by readers).
    KeepLast(usize),
    /// Keep everything until it is taken.
    KeepAll,
    /// Whatever the transport does by default (DDS: keep last 1).
    SystemDefault,
}

/// Whether delivery may drop samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reliability {
    /// Every sample is delivered (within the history limits).
    Reliable,
    /// Samples may be dropped.
    BestEffort,
    /// The transport's default (DDS: reliable writers, best-effort readers).
    SystemDefault,
    /// A subscription takes the highest level every publisher on the topic offers; a
    /// publisher offers reliable delivery.
    BestAvailable,
}

/// Whether late-joining readers get samples published before they existed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Only samples published after the reader exists.
    Volatile,
    /// The writer keeps its last `depth` samples for late joiners.
    TransientLocal,
    /// The transport's default (DDS: volatile).
    SystemDefault,
    /// A subscription asks for transient-local only if every publisher on the topic offers
    /// it; a publisher offers transient-local.
    BestAvailable,
}

/// How a writer shows it is alive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Liveliness {
    /// The transport asserts liveliness for the writer while its process runs.
    Automatic,
    /// The writer asserts it by publishing (or asserting explicitly) within the lease.
    ManualByTopic,
    /// The transport's default (DDS: automatic).
    SystemDefault,
    /// A subscription asks for manual-by-topic only if every publisher offers it; a publisher
    /// offers automatic.
    BestAvailable,
}

/// A QoS profile. The default matches ROS 2's `rmw_qos_profile_default`: keep last 10, reliable,
/// volatile, no deadline, no lifespan, automatic liveliness without a lease.
///
/// Durations are `None` for "unspecified", which ROS 2 treats as infinite.
///
/// ```
/// use rclev::{QoSProfile, History, Durability};
/// let latched = QoSProfile::default().keep_last(1).transient_local();
/// assert_eq!(latched.history, History::KeepLast(1));
/// assert_eq!(latched.durability, Durability::TransientLocal);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QoSProfile {
    /// History policy.
    pub history: History,
    /// Reliability policy.
    pub reliability: Reliability,
    /// Durability policy.
    pub durability: Durability,
    /// The longest a publisher leaves between two messages (offered), or a subscription
    /// accepts between two arrivals (requested), before a deadline-missed event.
    pub deadline: Option<Duration>,
    /// How long a published message stays valid; older ones are not delivered.
    pub lifespan: Option<Duration>,
    /// Liveliness policy.
    pub liveliness: Liveliness,
    /// How long a writer stays alive without asserting its liveliness.
    pub liveliness_lease_duration: Option<Duration>,
    /// Use the topic name as given on the wire, without ROS 2's `rt/`/`rq/`/`rr/` prefixes.
    pub avoid_ros_namespace_conventions: bool,
}

impl Default for QoSProfile {
    fn default() -> Self {
        Self {
            history: History::KeepLast(10),
            reliability: Reliability::Reliable,
            durability: Durability::Volatile,
            deadline: None,
            lifespan: None,
            liveliness: Liveliness::Automatic,
            liveliness_lease_duration: None,
            avoid_ros_namespace_conventions: false,
        }
    }
}

/// The standard profiles, named as in `rmw/qos_profiles.h`.
impl QoSProfile {
    /// `rmw_qos_profile_sensor_data`: keep last 5, best effort, volatile.
    pub fn sensor_data() -> Self {
        Self::default().keep_last(5).best_effort()
    }
    /// `rmw_qos_profile_services_default`: keep last 10, reliable, volatile.
    pub fn services_default() -> Self {
        Self::default()
    }
    /// `rmw_qos_profile_parameters`: keep last 1000, reliable, volatile.
    pub fn parameters() -> Self {
        Self::default().keep_last(1000)
    }
    /// `rmw_qos_profile_parameter_events`: keep last 1000, reliable, volatile.
    pub fn parameter_events() -> Self {
        Self::default().keep_last(1000)
    }
    /// `rmw_qos_profile_system_default`: every policy left to the transport.
    pub fn system_default() -> Self {
        Self {
            history: History::SystemDefault,
            reliability: Reliability::SystemDefault,
            durability: Durability::SystemDefault,
            liveliness: Liveliness::SystemDefault,
            ..Self::default()
        }
    }
    /// `rmw_qos_profile_best_available`: keep last 10; reliability, durability and liveliness
    /// adapt to the publishers on the topic when a subscription is created.
    pub fn best_available() -> Self {
        Self {
            reliability: Reliability::BestAvailable,
            durability: Durability::BestAvailable,
            liveliness: Liveliness::BestAvailable,
            ..Self::default()
        }
    }
    /// The profile ROS 2 uses for `/clock`: keep last 1, best effort, volatile.
    pub fn clock() -> Self {
        Self::default().keep_last(1).best_effort()
    }
    /// The profile of `/rosout` publishers (rcl's `rcl_qos_profile_rosout_default`): keep last
    /// 1000, reliable, transient local, a lifespan of 10 s.
    pub fn rosout() -> Self {
        Self::default()
            .keep_last(1000)
            .transient_local()
            .lifespan(Duration::from_secs(10))
    }
}

/// Builders.
impl QoSProfile {
    /// Sets `KeepLast(depth)`.
    pub fn keep_last(mut self, depth: usize) -> Self {
        self.history = History::KeepLast(depth);
        self
    }
    /// Sets `KeepAll`.
    pub fn keep_all(mut self) -> Self {
        self.history = History::KeepAll;
        self
    }
    /// Sets reliable delivery.
    pub fn reliable(mut self) -> Self {
        self.reliability = Reliability::Reliable;
        self
    }
    /// Sets best-effort delivery.
    pub fn best_effort(mut self) -> Self {
        self.reliability = Reliability::BestEffort;
        self
    }
    /// Sets volatile durability.
    pub fn volatile(mut self) -> Self {
        self.durability = Durability::Volatile;
        self
    }
    /// Sets transient-local durability.
    pub fn transient_local(mut self) -> Self {
        self.durability = Durability::TransientLocal;
        self
    }
    /// Sets the deadline.
    pub fn deadline(mut self, period: Duration) -> Self {
        self.deadline = Some(period);
        self
    }
    /// Sets the lifespan.
    pub fn lifespan(mut self, lifespan: Duration) -> Self {
        self.lifespan = Some(lifespan);
        self
    }
    /// Sets the liveliness kind and its lease.
    pub fn liveliness(mut self, kind: Liveliness, lease: Option<Duration>) -> Self {
        self.liveliness = kind;
        self.liveliness_lease_duration = lease;
        self
    }

    /// The history depth, `None` for `KeepAll`. Rejects `KeepLast(0)` and an unresolved
    /// `SystemDefault` (see [`resolve`](Self::resolve)).
    pub fn depth(&self) -> Result<Option<usize>> {
        match self.history {
            History::KeepLast(0) => Err(Error::InvalidQos("KeepLast depth must be at least 1")),
            History::KeepLast(n) => Ok(Some(n)),
            History::KeepAll => Ok(None),
            History::SystemDefault => Err(Error::InvalidQos(
                "history SystemDefault must be resolved before use",
            )),
        }
    }

    /// Checks what no transport can honour: a zero depth, zero durations.
    pub fn validate(&self) -> Result<()> {
        if self.history == History::KeepLast(0) {
            return Err(Error::InvalidQos("KeepLast depth must be at least 1"));
        }
        let zero = |d: Option<Duration>| d.is_some_and(|d| d.is_zero());
        if zero(self.deadline) {
            return Err(Error::InvalidQos(
                "a zero deadline is unreachable; leave it unset for none",
            ));
        }
        if zero(self.lifespan) {
            return Err(Error::InvalidQos(
                "a zero lifespan drops every message; leave it unset for none",
            ));
        }
        if zero(self.liveliness_lease_duration) {
            return Err(Error::InvalidQos(
                "a zero liveliness lease expires at once; leave it unset for none",
            ));
        }
        Ok(())
    }
}
