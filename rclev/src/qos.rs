//! Quality-of-service profiles, with the subset of DDS policies the in-process transport honours.

use crate::error::{Error, Result};

/// How many samples a reader or writer keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum History {
    /// Keep the newest `n` samples; older ones are dropped (and counted as lost by readers).
    KeepLast(usize),
    /// Keep everything until it is taken.
    KeepAll,
}

/// Whether delivery may drop samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reliability {
    /// Every sample is delivered (within the history limits).
    Reliable,
    /// Samples may be dropped.
    BestEffort,
}

/// Whether late-joining readers get samples published before they existed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Only samples published after the reader exists.
    Volatile,
    /// The writer keeps its last `depth` samples for late joiners.
    TransientLocal,
}

/// A QoS profile. The default matches ROS 2's `rmw_qos_profile_default`: keep last 10, reliable,
/// volatile.
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
}

impl Default for QoSProfile {
    fn default() -> Self {
        Self {
            history: History::KeepLast(10),
            reliability: Reliability::Reliable,
            durability: Durability::Volatile,
        }
    }
}

impl QoSProfile {
    /// The profile ROS 2 uses for `/clock`: keep last 1, best effort, volatile.
    pub fn clock() -> Self {
        Self {
            history: History::KeepLast(1),
            reliability: Reliability::BestEffort,
            durability: Durability::Volatile,
        }
    }
    /// The sensor-data profile: keep last 5, best effort.
    pub fn sensor_data() -> Self {
        Self {
            history: History::KeepLast(5),
            reliability: Reliability::BestEffort,
            durability: Durability::Volatile,
        }
    }
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

    /// The history depth, `None` for `KeepAll`. Rejects `KeepLast(0)`.
    pub(crate) fn depth(&self) -> Result<Option<usize>> {
        match self.history {
            History::KeepLast(0) => Err(Error::InvalidQos("KeepLast depth must be at least 1")),
            History::KeepLast(n) => Ok(Some(n)),
            History::KeepAll => Ok(None),
        }
    }

    /// DDS request/offered matching: `None` when a writer with `offered` can serve a reader
    /// with `requested`, else the reason.
    pub(crate) fn incompatibility(offered: &Self, requested: &Self) -> Option<String> {
        if offered.reliability == Reliability::BestEffort
            && requested.reliability == Reliability::Reliable
        {
            return Some("a best-effort publisher cannot serve a reliable subscription".into());
        }
        if offered.durability == Durability::Volatile
            && requested.durability == Durability::TransientLocal
        {
            return Some("a volatile publisher cannot serve a transient-local subscription".into());
        }
        None
    }
}

/// Options for a publisher, subscription, service or client: the name plus QoS.
///
/// A plain `&str` converts into options with the default QoS; chain [`IntoPrimitiveOptions::qos`]
/// to choose another: `node.create_publisher::<Int64>("count".qos(QoSProfile::sensor_data()))`.
#[derive(Debug, Clone)]
pub struct PrimitiveOptions {
    /// Topic or service name, relative, private (`~/…`) or absolute.
    pub name: String,
    /// QoS profile.
    pub qos: QoSProfile,
}

/// Conversion into [`PrimitiveOptions`], implemented for names and options.
pub trait IntoPrimitiveOptions: Sized {
    /// Converts.
    fn into_primitive_options(self) -> PrimitiveOptions;
    /// Replaces the QoS profile.
    fn qos(self, qos: QoSProfile) -> PrimitiveOptions {
        let mut o = self.into_primitive_options();
        o.qos = qos;
        o
    }
}

impl IntoPrimitiveOptions for PrimitiveOptions {
    fn into_primitive_options(self) -> PrimitiveOptions {
        self
    }
}

impl IntoPrimitiveOptions for &str {
    fn into_primitive_options(self) -> PrimitiveOptions {
        PrimitiveOptions {
            name: self.to_string(),
            qos: QoSProfile::default(),
        }
    }
}

impl IntoPrimitiveOptions for String {
    fn into_primitive_options(self) -> PrimitiveOptions {
        PrimitiveOptions {
            name: self,
            qos: QoSProfile::default(),
        }
    }
}
