//! The QoS component of a liveliness token, and the Zenoh settings rmw_zenoh derives from an
//! entity's QoS.
//!
//! ```text
//! <reliability>:<durability>:<history>,<depth>:<deadline s>,<deadline ns>:<lifespan s>,<lifespan ns>:<liveliness>,<lease s>,<lease ns>
//! ```
//!
//! Policies are `rmw/types.h` enum values in decimal, durations `rmw_time_t`'s seconds and
//! nanoseconds. Every field equal to rmw_zenoh's default is written **empty**, so the
//! default profile is `::,:,:,:,,`. The defaults: reliable (1), volatile (2), keep-last (1),
//! depth 42, infinite deadline and lifespan (`9223372036 s, 854775807 ns`), automatic
//! liveliness (1), infinite lease.
//!
//! Numbering (`rmw/types.h`, the same in Jazzy and Kilted):
//!
//! | policy | 0 | 1 | 2 | 3 | 4 | 5 |
//! |---|---|---|---|---|---|---|
//! | reliability | system default | reliable | best effort | unknown | best available | |
//! | durability | system default | transient local | volatile | unknown | best available | |
//! | history | system default | keep last | keep all | unknown | | |
//! | liveliness | system default | automatic | (manual by node) | manual by topic | unknown | best available |
//!
//! **Default durability changed.** rmw_zenoh's default durability was transient-local until
//! rmw_zenoh#521 (merged 2025-03-11, backported to Jazzy and Humble) made it volatile. A
//! peer from before #521 leaves durability empty for transient-local; this module reads an
//! empty durability as volatile, right for every peer that also writes the positional
//! attachment (#601, April 2025), the only ones this transport exchanges data with.
//!
//! Sources: rmw_zenoh `rmw_zenoh_cpp/src/detail/liveliness_utils.cpp` (`qos_to_keyexpr`,
//! `keyexpr_to_qos`) at rolling `bfc065f`; `qos.cpp` (defaults and `best_available_qos`) at
//! `bfc065f` (transient-local default) and at `5e10d47` (volatile default, 2025);
//! `rmw_publisher_data.cpp` at `bfc065f` (zenoh-c publication cache) and its 2025 zenoh-cpp
//! version (advanced publisher; found by code search, commit not recorded by the index) for
//! the congestion control, reliability, cache depth and sample-miss detection.

use std::time::Duration;

use rclev::qos::{Durability, History, Liveliness, QoSProfile, Reliability};

use super::{parse_decimal, quote, WireError};

/// An `rmw_time_t`: seconds and nanoseconds, each a `u64`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RmwTime {
    /// Seconds.
    pub sec: u64,
    /// Nanoseconds (not necessarily below one second).
    pub nsec: u64,
}

impl RmwTime {
    /// `RMW_DURATION_INFINITE`: `i64::MAX` nanoseconds as seconds and nanoseconds.
    pub const INFINITE: Self = Self {
        sec: 9_223_372_036,
        nsec: 854_775_807,
    };
    /// `RMW_DURATION_UNSPECIFIED` (`0, 0`), which rmw_zenoh adapts to infinite.
    pub const UNSPECIFIED: Self = Self { sec: 0, nsec: 0 };

    /// rclev's duration: `None` (unspecified, which ROS 2 treats as infinite) for infinite,
    /// for `0, 0`, and for a value too large for a `Duration`.
    pub fn to_duration(self) -> Option<Duration> {
        if self == Self::INFINITE || self == Self::UNSPECIFIED {
            return None;
        }
        Duration::from_secs(self.sec).checked_add(Duration::from_nanos(self.nsec))
    }

    /// The time rmw_zenoh announces for rclev's duration: infinite for `None` and for zero
    /// (both are "unspecified" in rmw and adapted to infinite).
    pub fn from_duration(duration: Option<Duration>) -> Self {
        match duration {
            Some(d) if !d.is_zero() => Self {
                sec: d.as_secs(),
                nsec: u64::from(d.subsec_nanos()),
            },
            _ => Self::INFINITE,
        }
    }
}

/// rmw_zenoh's congestion control for a publisher (and, the same rule, for replies).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CongestionControl {
    /// Wait for room: reliable + keep-all only.
    Block,
    /// Drop the sample when the link is congested: everything else.
    Drop,
}

/// An `rmw_qos_profile_t` as it travels in a liveliness token: raw `rmw/types.h` policy
/// numbers (see the module doc) and `rmw_time_t` durations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WireQos {
    /// Reliability policy number (0–4).
    pub reliability: u8,
    /// Durability policy number (0–4).
    pub durability: u8,
    /// History policy number (0–3).
    pub history: u8,
    /// History depth.
    pub depth: u64,
    /// Deadline.
    pub deadline: RmwTime,
    /// Lifespan.
    pub lifespan: RmwTime,
    /// Liveliness policy number (0–5).
    pub liveliness: u8,
    /// Liveliness lease duration.
    pub liveliness_lease_duration: RmwTime,
}

/// `rmw/types.h` values this module names.
impl WireQos {
    /// `RMW_QOS_POLICY_*_SYSTEM_DEFAULT` (every policy).
    pub const SYSTEM_DEFAULT: u8 = 0;
    /// `RMW_QOS_POLICY_RELIABILITY_RELIABLE`.
    pub const RELIABLE: u8 = 1;
    /// `RMW_QOS_POLICY_RELIABILITY_BEST_EFFORT`.
    pub const BEST_EFFORT: u8 = 2;
    /// `RMW_QOS_POLICY_RELIABILITY_BEST_AVAILABLE` and `..._DURABILITY_BEST_AVAILABLE`.
    pub const BEST_AVAILABLE: u8 = 4;
    /// `RMW_QOS_POLICY_DURABILITY_TRANSIENT_LOCAL`.
    pub const TRANSIENT_LOCAL: u8 = 1;
    /// `RMW_QOS_POLICY_DURABILITY_VOLATILE`.
    pub const VOLATILE: u8 = 2;
    /// `RMW_QOS_POLICY_HISTORY_KEEP_LAST`.
    pub const KEEP_LAST: u8 = 1;
    /// `RMW_QOS_POLICY_HISTORY_KEEP_ALL`.
    pub const KEEP_ALL: u8 = 2;
    /// `RMW_QOS_POLICY_LIVELINESS_AUTOMATIC`.
    pub const AUTOMATIC: u8 = 1;
    /// `RMW_QOS_POLICY_LIVELINESS_MANUAL_BY_TOPIC`.
    pub const MANUAL_BY_TOPIC: u8 = 3;
    /// `RMW_QOS_POLICY_LIVELINESS_BEST_AVAILABLE`.
    pub const LIVELINESS_BEST_AVAILABLE: u8 = 5;
    /// rmw_zenoh's depth for a profile whose depth is 0.
    pub const DEFAULT_DEPTH: u64 = 42;

    /// rmw_zenoh's default profile (since rmw_zenoh#521): the values written as empty fields.
    pub const DEFAULT: Self = Self {
        reliability: Self::RELIABLE,
        durability: Self::VOLATILE,
        history: Self::KEEP_LAST,
        depth: Self::DEFAULT_DEPTH,
        deadline: RmwTime::INFINITE,
        lifespan: RmwTime::INFINITE,
        liveliness: Self::AUTOMATIC,
        liveliness_lease_duration: RmwTime::INFINITE,
    };
}

impl Default for WireQos {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl WireQos {
    /// The QoS component: each field equal to [`WireQos::DEFAULT`]'s left empty.
    pub fn to_keyexpr(&self) -> String {
        fn field<T: PartialEq + ToString>(value: T, default: T) -> String {
            if value == default {
                String::new()
            } else {
                value.to_string()
            }
        }
        let d = Self::DEFAULT;
        format!(
            "{}:{}:{},{}:{},{}:{},{}:{},{},{}",
            field(self.reliability, d.reliability),
            field(self.durability, d.durability),
            field(self.history, d.history),
            field(self.depth, d.depth),
            field(self.deadline.sec, d.deadline.sec),
            field(self.deadline.nsec, d.deadline.nsec),
            field(self.lifespan.sec, d.lifespan.sec),
            field(self.lifespan.nsec, d.lifespan.nsec),
            field(self.liveliness, d.liveliness),
            field(
                self.liveliness_lease_duration.sec,
                d.liveliness_lease_duration.sec
            ),
            field(
                self.liveliness_lease_duration.nsec,
                d.liveliness_lease_duration.nsec
            ),
        )
    }

    /// Parses a QoS component; an empty field takes [`WireQos::DEFAULT`]'s value.
    ///
    /// Exactly six `:`-separated groups of 1, 1, 2, 2, 2 and 3 `,`-separated fields; numbers
    /// canonical decimals; policies within `rmw/types.h`'s enums. Anything else is a typed
    /// error.
    pub fn parse(s: &str) -> Result<Self, WireError> {
        let shape = || WireError::QosShape(quote(s));
        let groups: Vec<&str> = s.split(':').collect();
        let [r, d, h, dl, ls, lv] = groups.as_slice() else {
            return Err(shape());
        };
        let split = |group: &str, n: usize| -> Result<Vec<String>, WireError> {
            let fields: Vec<String> = group.split(',').map(str::to_owned).collect();
            if fields.len() == n {
                Ok(fields)
            } else {
                Err(shape())
            }
        };
        let (h, dl, ls, lv) = (split(h, 2)?, split(dl, 2)?, split(ls, 2)?, split(lv, 3)?);
        if r.contains(',') || d.contains(',') {
            return Err(shape());
        }
        let def = Self::DEFAULT;
        let num = |field: &'static str, s: &str, default: u64| -> Result<u64, WireError> {
            if s.is_empty() {
                Ok(default)
            } else {
                parse_decimal(field, s)
            }
        };
        let policy = |name: &'static str, s: &str, default: u8, max: u8| -> Result<u8, WireError> {
            let value = num(name, s, u64::from(default))?;
            match u8::try_from(value) {
                Ok(v) if v <= max => Ok(v),
                _ => Err(WireError::QosPolicy {
                    policy: name,
                    value,
                }),
            }
        };
        Ok(Self {
            reliability: policy("reliability", r, def.reliability, 4)?,
            durability: policy("durability", d, def.durability, 4)?,
            history: policy("history", &h[0], def.history, 3)?,
            depth: num("depth", &h[1], def.depth)?,
            deadline: RmwTime {
                sec: num("deadline sec", &dl[0], def.deadline.sec)?,
                nsec: num("deadline nsec", &dl[1], def.deadline.nsec)?,
            },
            lifespan: RmwTime {
                sec: num("lifespan sec", &ls[0], def.lifespan.sec)?,
                nsec: num("lifespan nsec", &ls[1], def.lifespan.nsec)?,
            },
            liveliness: policy("liveliness", &lv[0], def.liveliness, 5)?,
            liveliness_lease_duration: RmwTime {
                sec: num("lease sec", &lv[1], def.liveliness_lease_duration.sec)?,
                nsec: num("lease nsec", &lv[2], def.liveliness_lease_duration.nsec)?,
            },
        })
    }

    /// What rmw_zenoh announces for an entity created with `profile`: its
    /// `best_available_qos` adaptation, where system defaults become rmw_zenoh's defaults,
    /// depth 0 becomes 42 and unspecified durations become infinite.
    ///
    /// rclev's `KeepAll` carries no depth; it is announced with depth 42 (what rmw_zenoh
    /// announces for keep-all with the usual depth 0). Best-available policies are kept as
    /// such, as rmw_zenoh does.
    pub fn from_profile(profile: &QoSProfile) -> Self {
        let (history, depth) = match profile.history {
            History::KeepLast(0) | History::SystemDefault => (Self::KEEP_LAST, Self::DEFAULT_DEPTH),
            History::KeepLast(n) => (Self::KEEP_LAST, n as u64),
            History::KeepAll => (Self::KEEP_ALL, Self::DEFAULT_DEPTH),
        };
        Self {
            reliability: match profile.reliability {
                Reliability::Reliable | Reliability::SystemDefault => Self::RELIABLE,
                Reliability::BestEffort => Self::BEST_EFFORT,
                Reliability::BestAvailable => Self::BEST_AVAILABLE,
            },
            durability: match profile.durability {
                Durability::TransientLocal => Self::TRANSIENT_LOCAL,
                Durability::Volatile | Durability::SystemDefault => Self::VOLATILE,
                Durability::BestAvailable => Self::BEST_AVAILABLE,
            },
            history,
            depth,
            deadline: RmwTime::from_duration(profile.deadline),
            lifespan: RmwTime::from_duration(profile.lifespan),
            liveliness: match profile.liveliness {
                Liveliness::Automatic | Liveliness::SystemDefault => Self::AUTOMATIC,
                Liveliness::ManualByTopic => Self::MANUAL_BY_TOPIC,
                Liveliness::BestAvailable => Self::LIVELINESS_BEST_AVAILABLE,
            },
            liveliness_lease_duration: RmwTime::from_duration(profile.liveliness_lease_duration),
        }
    }

    /// The profile rclev's graph reports for a peer's endpoint.
    ///
    /// Lossy where rclev has no equivalent: `unknown` (and the deprecated manual-by-node
    /// liveliness) become `SystemDefault`; a depth beyond `usize` saturates; infinite
    /// durations become `None`.
    pub fn to_profile(&self) -> QoSProfile {
        QoSProfile {
            history: match self.history {
                Self::KEEP_LAST => {
                    History::KeepLast(usize::try_from(self.depth).unwrap_or(usize::MAX))
                }
                Self::KEEP_ALL => History::KeepAll,
                _ => History::SystemDefault,
            },
            reliability: match self.reliability {
                Self::RELIABLE => Reliability::Reliable,
                Self::BEST_EFFORT => Reliability::BestEffort,
                Self::BEST_AVAILABLE => Reliability::BestAvailable,
                _ => Reliability::SystemDefault,
            },
            durability: match self.durability {
                Self::TRANSIENT_LOCAL => Durability::TransientLocal,
                Self::VOLATILE => Durability::Volatile,
                Self::BEST_AVAILABLE => Durability::BestAvailable,
                _ => Durability::SystemDefault,
            },
            deadline: self.deadline.to_duration(),
            lifespan: self.lifespan.to_duration(),
            liveliness: match self.liveliness {
                Self::AUTOMATIC => Liveliness::Automatic,
                Self::MANUAL_BY_TOPIC => Liveliness::ManualByTopic,
                Self::LIVELINESS_BEST_AVAILABLE => Liveliness::BestAvailable,
                _ => Liveliness::SystemDefault,
            },
            liveliness_lease_duration: self.liveliness_lease_duration.to_duration(),
            avoid_ros_namespace_conventions: false,
        }
    }

    /// The publisher's congestion control: [`CongestionControl::Block`] only for reliable
    /// keep-all, [`CongestionControl::Drop`] otherwise.
    pub fn congestion_control(&self) -> CongestionControl {
        if self.reliability == Self::RELIABLE && self.history == Self::KEEP_ALL {
            CongestionControl::Block
        } else {
            CongestionControl::Drop
        }
    }

    /// Whether the Zenoh publisher is declared reliable: only for rmw's reliable (best
    /// effort and best available get Zenoh's best effort).
    pub fn zenoh_reliable(&self) -> bool {
        self.reliability == Self::RELIABLE
    }

    /// Whether a transient-local publisher also turns on sample-miss detection (with a
    /// sporadic heartbeat), so late or lossy subscribers recover from its cache: only when it
    /// is also reliable.
    pub fn sample_miss_detection(&self) -> bool {
        self.durability == Self::TRANSIENT_LOCAL && self.reliability == Self::RELIABLE
    }

    /// How many samples a publisher keeps for late joiners: `Some(depth)` for transient-local,
    /// `None` (no cache) otherwise.
    pub fn publisher_cache_depth(&self) -> Option<u64> {
        (self.durability == Self::TRANSIENT_LOCAL).then_some(self.depth)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn default_is_all_empty() {
        assert_eq!(WireQos::DEFAULT.to_keyexpr(), "::,:,:,:,,");
        assert_eq!(WireQos::parse("::,:,:,:,,"), Ok(WireQos::DEFAULT));
        assert_eq!(
            WireQos::from_profile(&QoSProfile::system_default()),
            WireQos::DEFAULT
        );
    }

    #[test]
    fn rclev_default_profile_writes_only_its_depth() {
        let wire = WireQos::from_profile(&QoSProfile::default());
        assert_eq!(wire.to_keyexpr(), "::,10:,:,:,,");
        assert_eq!(wire.to_profile(), QoSProfile::default());
    }

    #[test]
    fn every_field_elided_and_reread() {
        // Each field alone set to a non-default value, written, then read back.
        let d = WireQos::DEFAULT;
        let t = RmwTime { sec: 1, nsec: 500 };
        let cases = [
            (
                WireQos {
                    reliability: 2,
                    ..d
                },
                "2::,:,:,:,,",
            ),
            (WireQos { durability: 1, ..d }, ":1:,:,:,:,,"),
            (WireQos { history: 2, ..d }, "::2,:,:,:,,"),
            (WireQos { depth: 0, ..d }, "::,0:,:,:,,"),
            (WireQos { deadline: t, ..d }, "::,:1,500:,:,,"),
            (WireQos { lifespan: t, ..d }, "::,:,:1,500:,,"),
            (WireQos { liveliness: 3, ..d }, "::,:,:,:3,,"),
            (
                WireQos {
                    liveliness_lease_duration: t,
                    ..d
                },
                "::,:,:,:,1,500",
            ),
            (
                WireQos {
                    deadline: RmwTime {
                        sec: 9_223_372_036,
                        nsec: 0,
                    },
                    ..d
                },
                "::,:,0:,:,,",
            ),
        ];
        for (qos, text) in cases {
            assert_eq!(qos.to_keyexpr(), text);
            assert_eq!(WireQos::parse(text), Ok(qos), "{text}");
        }
    }

    #[test]
    fn spelled_out_defaults_are_read() {
        // A pre-#521 peer (transient-local default) spells volatile out as `2`.
        let q = WireQos::parse("1:2:1,42:9223372036,854775807:,:1,,").unwrap();
        assert_eq!(q, WireQos::DEFAULT);
        assert_eq!(q.to_keyexpr(), "::,:,:,:,,");
    }

    #[test]
    fn profiles_convert() {
        let latched = QoSProfile::default().keep_last(1).transient_local();
        let wire = WireQos::from_profile(&latched);
        assert_eq!(wire.to_keyexpr(), ":1:,1:,:,:,,");
        assert_eq!(wire.publisher_cache_depth(), Some(1));
        assert_eq!(wire.to_profile(), latched);

        let sensor = WireQos::from_profile(&QoSProfile::sensor_data());
        assert_eq!(sensor.to_keyexpr(), "2::,5:,:,:,,");
        assert_eq!(sensor.publisher_cache_depth(), None);
        assert!(!sensor.zenoh_reliable());
        assert!(wire.zenoh_reliable() && wire.sample_miss_detection());
        assert!(!WireQos::DEFAULT.sample_miss_detection());

        let p = QoSProfile {
            history: History::KeepLast(0),
            deadline: Some(Duration::ZERO),
            lifespan: Some(Duration::from_millis(1500)),
            ..QoSProfile::default()
        };
        let wire = WireQos::from_profile(&p);
        assert_eq!(wire.depth, 42);
        assert_eq!(wire.deadline, RmwTime::INFINITE);
        assert_eq!(
            wire.lifespan,
            RmwTime {
                sec: 1,
                nsec: 500_000_000
            }
        );
    }

    #[test]
    fn congestion_control_blocks_only_reliable_keep_all() {
        let d = WireQos::DEFAULT;
        assert_eq!(
            WireQos { history: 2, ..d }.congestion_control(),
            CongestionControl::Block
        );
        assert_eq!(d.congestion_control(), CongestionControl::Drop);
        assert_eq!(
            WireQos {
                history: 2,
                reliability: 2,
                ..d
            }
            .congestion_control(),
            CongestionControl::Drop
        );
    }

    #[test]
    fn times_never_panic() {
        assert_eq!(
            RmwTime {
                sec: u64::MAX,
                nsec: u64::MAX
            }
            .to_duration(),
            None
        );
        assert_eq!(
            RmwTime {
                sec: 0,
                nsec: 2_000_000_000
            }
            .to_duration(),
            Some(Duration::from_secs(2))
        );
    }

    #[test]
    fn malformed_is_refused() {
        for bad in [
            "",
            "::,:,:,:,",
            "::,:,:,:,,:",
            ":::,:,:,,",
            "5::,:,:,:,,",
            "::4,:,:,:,,",
            "::,:,:,:6,,",
            "::,-1:,:,:,,",
            "::,01:,:,:,,",
            "1,1::,:,:,:,,",
            "::,:,:,:,,,",
        ] {
            assert!(WireQos::parse(bad).is_err(), "{bad:?}");
        }
        assert!(matches!(
            WireQos::parse("9::,:,:,:,,"),
            Err(WireError::QosPolicy { value: 9, .. })
        ));
        assert!(matches!(
            WireQos::parse("300::,:,:,:,,"),
            Err(WireError::QosPolicy { value: 300, .. })
        ));
    }

    proptest! {
        #[test]
        fn parse_never_panics(s in "\\PC{0,80}") {
            let _ = WireQos::parse(&s);
        }

        #[test]
        fn parse_never_panics_on_near_qos(s in "[0-9:,]{0,40}") {
            if let Ok(q) = WireQos::parse(&s) {
                prop_assert_eq!(WireQos::parse(&q.to_keyexpr()), Ok(q));
            }
        }

        #[test]
        fn round_trips(r in 0u8..=4, d in 0u8..=4, h in 0u8..=3, depth: u64, l in 0u8..=5,
                       t in proptest::array::uniform6(any::<u64>())) {
            let q = WireQos {
                reliability: r, durability: d, history: h, depth,
                deadline: RmwTime { sec: t[0], nsec: t[1] },
                lifespan: RmwTime { sec: t[2], nsec: t[3] },
                liveliness: l,
                liveliness_lease_duration: RmwTime { sec: t[4], nsec: t[5] },
            };
            prop_assert_eq!(WireQos::parse(&q.to_keyexpr()), Ok(q));
        }
    }
}
