//! Matching an offered profile (a publisher's) with a requested one (a subscription's), and
//! resolving the policies a profile leaves open. DDS's request/offered rules, as ROS 2 applies
//! them: a mismatch is no error at creation, it is "no match" plus an incompatible-QoS event
//! on both endpoints.

use std::time::Duration;

use super::{Durability, History, Liveliness, QoSProfile, Reliability};

/// A QoS policy, as named in incompatible-QoS events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QosPolicyKind {
    /// [`Reliability`].
    Reliability,
    /// [`Durability`].
    Durability,
    /// The deadline.
    Deadline,
    /// [`Liveliness`] kind or lease.
    Liveliness,
    /// [`History`].
    History,
    /// The lifespan.
    Lifespan,
    /// A DDS policy ROS 2 has no name for (ownership, data representation, …), as a DDS peer
    /// may report it: ROS 2's `RMW_QOS_POLICY_INVALID`.
    Other,
}

/// Why an offered profile cannot serve a requested one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Incompatibility {
    /// The first policy that clashes.
    pub policy: QosPolicyKind,
    /// In words.
    pub reason: &'static str,
}

impl std::fmt::Display for Incompatibility {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.reason)
    }
}

/// Which side of a topic a profile is for: `SystemDefault` and `BestAvailable` resolve
/// differently for the two.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QosRole {
    /// A publisher (or a service's response writer, a client's request writer).
    Publisher,
    /// A subscription (or a service's request reader, a client's response reader).
    Subscription,
}

/// An unset duration is infinite: it offers nothing and requests nothing.
fn longer_than(offered: Option<Duration>, requested: Option<Duration>) -> bool {
    match (offered, requested) {
        (_, None) => false,
        (None, Some(_)) => true,
        (Some(o), Some(r)) => o > r,
    }
}

fn liveliness_rank(l: Liveliness) -> u8 {
    match l {
        Liveliness::Automatic | Liveliness::SystemDefault | Liveliness::BestAvailable => 0,
        Liveliness::ManualByTopic => 1,
    }
}

impl QoSProfile {
    /// `None` when a writer offering `offered` can serve a reader requesting `requested`
    /// (both resolved), else the first clash.
    pub fn incompatibility(offered: &Self, requested: &Self) -> Option<Incompatibility> {
        if offered.reliability == Reliability::BestEffort
            && requested.reliability == Reliability::Reliable
        {
            return Some(Incompatibility {
                policy: QosPolicyKind::Reliability,
                reason: "a best-effort publisher cannot serve a reliable subscription",
            });
        }
        if offered.durability == Durability::Volatile
            && requested.durability == Durability::TransientLocal
        {
            return Some(Incompatibility {
                policy: QosPolicyKind::Durability,
                reason: "a volatile publisher cannot serve a transient-local subscription",
            });
        }
        if longer_than(offered.deadline, requested.deadline) {
            return Some(Incompatibility {
                policy: QosPolicyKind::Deadline,
                reason: "the publisher's deadline is longer than the subscription's",
            });
        }
        if liveliness_rank(offered.liveliness) < liveliness_rank(requested.liveliness) {
            return Some(Incompatibility {
                policy: QosPolicyKind::Liveliness,
                reason:
                    "an automatic-liveliness publisher cannot serve a manual-by-topic subscription",
            });
        }
        if longer_than(
            offered.liveliness_lease_duration,
            requested.liveliness_lease_duration,
        ) {
            return Some(Incompatibility {
                policy: QosPolicyKind::Liveliness,
                reason: "the publisher's liveliness lease is longer than the subscription's",
            });
        }
        None
    }

    /// The concrete profile an endpoint of `role` is created with: `SystemDefault` policies
    /// take DDS's defaults, and on a subscription `BestAvailable` ones take the highest level
    /// every publisher in `publishers` (those on the topic now) offers.
    pub fn resolve(&self, role: QosRole, publishers: &[QoSProfile]) -> QoSProfile {
        let mut q = *self;
        if q.history == History::SystemDefault {
            q.history = History::KeepLast(1);
        }
        let all = |f: &dyn Fn(&QoSProfile) -> bool| publishers.iter().all(f);
        q.reliability = match (q.reliability, role) {
            (Reliability::SystemDefault, QosRole::Publisher) => Reliability::Reliable,
            (Reliability::SystemDefault, QosRole::Subscription) => Reliability::BestEffort,
            (Reliability::BestAvailable, QosRole::Publisher) => Reliability::Reliable,
            (Reliability::BestAvailable, QosRole::Subscription) => {
                if all(&|p| p.reliability == Reliability::Reliable) {
                    Reliability::Reliable
                } else {
                    Reliability::BestEffort
                }
            }
            (r, _) => r,
        };
        q.durability = match (q.durability, role) {
            (Durability::SystemDefault, _) => Durability::Volatile,
            (Durability::BestAvailable, QosRole::Publisher) => Durability::TransientLocal,
            (Durability::BestAvailable, QosRole::Subscription) => {
                if all(&|p| p.durability == Durability::TransientLocal) {
                    Durability::TransientLocal
                } else {
                    Durability::Volatile
                }
            }
            (d, _) => d,
        };
        q.liveliness = match (q.liveliness, role) {
            (Liveliness::SystemDefault, _) | (Liveliness::BestAvailable, QosRole::Publisher) => {
                Liveliness::Automatic
            }
            (Liveliness::BestAvailable, QosRole::Subscription) => {
                if all(&|p| p.liveliness == Liveliness::ManualByTopic) {
                    Liveliness::ManualByTopic
                } else {
                    Liveliness::Automatic
                }
            }
            (l, _) => l,
        };
        q
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_offered_rules() {
        let d = QoSProfile::default();
        assert_eq!(QoSProfile::incompatibility(&d, &d), None);
        let clash = |o: QoSProfile, r: QoSProfile| QoSProfile::incompatibility(&o, &r).unwrap();
        assert_eq!(clash(d.best_effort(), d).policy, QosPolicyKind::Reliability);
        assert_eq!(
            clash(d, d.transient_local()).policy,
            QosPolicyKind::Durability
        );
        let ms = Duration::from_millis;
        assert_eq!(clash(d, d.deadline(ms(10))).policy, QosPolicyKind::Deadline);
        assert_eq!(
            clash(d.deadline(ms(20)), d.deadline(ms(10))).policy,
            QosPolicyKind::Deadline
        );
        assert_eq!(
            QoSProfile::incompatibility(&d.deadline(ms(5)), &d.deadline(ms(10))),
            None
        );
        assert_eq!(
            clash(d, d.liveliness(Liveliness::ManualByTopic, None)).policy,
            QosPolicyKind::Liveliness
        );
        assert_eq!(
            QoSProfile::incompatibility(&d.transient_local(), &d.best_effort()),
            None
        );
    }

    #[test]
    fn best_available_takes_what_every_publisher_offers() {
        let sub = QoSProfile::best_available();
        let reliable_tl = QoSProfile::default().transient_local();
        let r = sub.resolve(QosRole::Subscription, &[reliable_tl, reliable_tl]);
        assert_eq!(
            (r.reliability, r.durability),
            (Reliability::Reliable, Durability::TransientLocal)
        );
        let r = sub.resolve(
            QosRole::Subscription,
            &[reliable_tl, QoSProfile::sensor_data()],
        );
        assert_eq!(
            (r.reliability, r.durability),
            (Reliability::BestEffort, Durability::Volatile)
        );
        for p in [reliable_tl, QoSProfile::sensor_data()] {
            assert_eq!(QoSProfile::incompatibility(&p, &r), None);
        }
        let p = sub.resolve(QosRole::Publisher, &[]);
        assert_eq!(
            (p.reliability, p.durability, p.liveliness),
            (
                Reliability::Reliable,
                Durability::TransientLocal,
                Liveliness::Automatic
            )
        );
    }

    #[test]
    fn system_default_takes_the_dds_defaults() {
        let s = QoSProfile::system_default();
        let sub = s.resolve(QosRole::Subscription, &[]);
        let publisher = s.resolve(QosRole::Publisher, &[]);
        assert_eq!(sub.history, History::KeepLast(1));
        assert_eq!(sub.reliability, Reliability::BestEffort);
        assert_eq!(publisher.reliability, Reliability::Reliable);
        assert_eq!(publisher.durability, Durability::Volatile);
        assert_eq!(QoSProfile::incompatibility(&publisher, &sub), None);
    }
}
