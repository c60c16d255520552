//! ROS QoS to DDS QoS and back, as rmw_fastrtps maps them, and DDS statuses to rclev's QoS
//! events.

use std::time::Duration;

use rclev::qos::{
    CountStatus, IncompatibleQosStatus, LivelinessChangedStatus, MatchedStatus, QosEvent,
    QosPolicyKind,
};
use rclev::{Durability, History, Liveliness, QoSProfile, Reliability};

use crate::ffi::bridge::{EndpointEvent, EndpointQos, EventKind};

fn nanos(d: Option<Duration>) -> i64 {
    match d {
        None => -1,
        Some(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
    }
}

fn duration(ns: i64) -> Option<Duration> {
    (ns >= 0).then(|| Duration::from_nanos(ns as u64))
}

/// The shim's QoS for a resolved profile (no `SystemDefault`/`BestAvailable` left).
pub(crate) fn to_dds(q: &QoSProfile) -> EndpointQos {
    let (keep_all, depth) = match q.history {
        History::KeepAll => (true, 0),
        History::KeepLast(n) => (false, u32::try_from(n).unwrap_or(u32::MAX).max(1)),
        History::SystemDefault => (false, 1),
    };
    EndpointQos {
        reliable: q.reliability != Reliability::BestEffort,
        transient_local: q.durability == Durability::TransientLocal,
        keep_all,
        depth,
        deadline_ns: nanos(q.deadline),
        lifespan_ns: nanos(q.lifespan),
        liveliness: match q.liveliness {
            Liveliness::ManualByTopic => 2,
            _ => 0,
        },
        lease_ns: nanos(q.liveliness_lease_duration),
    }
}

/// The ROS profile of a discovered endpoint (SEDP carries no history: rmw reports it as
/// unknown, here `SystemDefault`).
pub(crate) fn from_dds(q: &EndpointQos) -> QoSProfile {
    QoSProfile {
        history: History::SystemDefault,
        reliability: if q.reliable {
            Reliability::Reliable
        } else {
            Reliability::BestEffort
        },
        durability: if q.transient_local {
            Durability::TransientLocal
        } else {
            Durability::Volatile
        },
        deadline: duration(q.deadline_ns),
        lifespan: duration(q.lifespan_ns),
        liveliness: if q.liveliness == 0 {
            Liveliness::Automatic
        } else {
            Liveliness::ManualByTopic
        },
        liveliness_lease_duration: duration(q.lease_ns),
        avoid_ros_namespace_conventions: false,
    }
}

/// A DDS `QosPolicyId_t` as ROS 2 names it (rmw's `dds_qos_policy_to_rmw_qos_policy`).
pub(crate) fn policy_kind(id: u32) -> QosPolicyKind {
    match id {
        2 => QosPolicyKind::Durability,
        4 => QosPolicyKind::Deadline,
        8 => QosPolicyKind::Liveliness,
        11 => QosPolicyKind::Reliability,
        13 => QosPolicyKind::History,
        21 => QosPolicyKind::Lifespan,
        _ => QosPolicyKind::Other,
    }
}

fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

fn counts(e: &EndpointEvent) -> CountStatus {
    CountStatus {
        total_count: count(e.total_count),
        total_count_change: count(e.total_count_change),
    }
}

/// A writer's status change as a QoS event.
pub(crate) fn writer_event(e: &EndpointEvent) -> Option<QosEvent> {
    Some(match e.kind {
        EventKind::Matched => QosEvent::PublicationMatched(matched(e)),
        EventKind::IncompatibleQos => QosEvent::OfferedIncompatibleQos(incompatible(e)),
        EventKind::DeadlineMissed => QosEvent::OfferedDeadlineMissed(counts(e)),
        EventKind::Liveliness => QosEvent::LivelinessLost(counts(e)),
        _ => return None,
    })
}

/// A reader's status change as a QoS event.
pub(crate) fn reader_event(e: &EndpointEvent) -> Option<QosEvent> {
    Some(match e.kind {
        EventKind::Matched => QosEvent::SubscriptionMatched(matched(e)),
        EventKind::IncompatibleQos => QosEvent::RequestedIncompatibleQos(incompatible(e)),
        EventKind::DeadlineMissed => QosEvent::RequestedDeadlineMissed(counts(e)),
        EventKind::Liveliness => QosEvent::LivelinessChanged(LivelinessChangedStatus {
            alive_count: count(e.total_count),
            not_alive_count: count(e.total_count_change),
            alive_count_change: e.current_count,
            not_alive_count_change: e.current_count_change,
        }),
        EventKind::SampleLost => QosEvent::MessageLost(counts(e)),
        _ => return None,
    })
}

fn matched(e: &EndpointEvent) -> MatchedStatus {
    MatchedStatus {
        total_count: count(e.total_count),
        total_count_change: count(e.total_count_change),
        current_count: count(e.current_count),
        current_count_change: e.current_count_change,
    }
}

fn incompatible(e: &EndpointEvent) -> IncompatibleQosStatus {
    IncompatibleQosStatus {
        total_count: count(e.total_count),
        total_count_change: count(e.total_count_change),
        last_policy_kind: policy_kind(e.policy),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_map_to_dds_and_back() {
        let q = QoSProfile::default()
            .keep_last(7)
            .transient_local()
            .deadline(Duration::from_millis(100))
            .lifespan(Duration::from_secs(2))
            .liveliness(Liveliness::ManualByTopic, Some(Duration::from_secs(1)));
        let d = to_dds(&q);
        assert!(d.reliable && d.transient_local && !d.keep_all);
        assert_eq!(d.depth, 7);
        assert_eq!(d.deadline_ns, 100_000_000);
        assert_eq!(d.lifespan_ns, 2_000_000_000);
        assert_eq!((d.liveliness, d.lease_ns), (2, 1_000_000_000));
        let back = from_dds(&d);
        assert_eq!(back.reliability, Reliability::Reliable);
        assert_eq!(back.durability, Durability::TransientLocal);
        assert_eq!(back.deadline, q.deadline);
        assert_eq!(back.lifespan, q.lifespan);
        assert_eq!(back.liveliness, Liveliness::ManualByTopic);
        let plain = to_dds(&QoSProfile::sensor_data().keep_all());
        assert!(!plain.reliable && plain.keep_all);
        assert_eq!((plain.deadline_ns, plain.lease_ns), (-1, -1));
        assert_eq!(from_dds(&plain).deadline, None);
    }

    #[test]
    fn policy_ids_are_named_as_rmw_names_them() {
        assert_eq!(policy_kind(11), QosPolicyKind::Reliability);
        assert_eq!(policy_kind(2), QosPolicyKind::Durability);
        assert_eq!(policy_kind(23), QosPolicyKind::Other);
    }
}
