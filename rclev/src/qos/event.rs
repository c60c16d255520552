//! QoS events: what a transport tells a publisher or subscription about its peers — matches,
//! clashes, missed deadlines, lost liveliness or messages — as ROS 2's `rmw_event_type_t`.
//!
//! Statuses carry cumulative totals and the change since the endpoint last reported: two
//! events of a kind that arrive before the first was handled merge into one whose changes add
//! up (see [`QosEvent::merge`]), so nothing is lost when events are coalesced.
//!
//! A [`QosEventHandler`] is how an entity's creation options name the code that hears them.

use std::fmt;
use std::sync::{Arc, Mutex};

use super::QosPolicyKind;

/// Matched peers: `current_count` now, `total_count` ever.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MatchedStatus {
    /// Peers matched since the endpoint was created.
    pub total_count: u64,
    /// Change of `total_count` since the last report.
    pub total_count_change: u64,
    /// Peers matched now.
    pub current_count: u64,
    /// Change of `current_count` since the last report (negative: peers left).
    pub current_count_change: i64,
}

/// A counter of occurrences (deadlines missed, liveliness lost, messages lost, incompatible
/// types).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CountStatus {
    /// Occurrences since the endpoint was created.
    pub total_count: u64,
    /// New occurrences since the last report.
    pub total_count_change: u64,
}

/// Peers that could not be matched because of their QoS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IncompatibleQosStatus {
    /// Incompatible peers seen since the endpoint was created.
    pub total_count: u64,
    /// New ones since the last report.
    pub total_count_change: u64,
    /// The policy that clashed last.
    pub last_policy_kind: QosPolicyKind,
}

/// Publishers of a topic that are alive or no longer alive, as a subscription sees them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LivelinessChangedStatus {
    /// Matched publishers alive now.
    pub alive_count: u64,
    /// Matched publishers that lost their liveliness.
    pub not_alive_count: u64,
    /// Change of `alive_count` since the last report.
    pub alive_count_change: i64,
    /// Change of `not_alive_count` since the last report.
    pub not_alive_count_change: i64,
}

/// One QoS event. Publishers get the `Offered…`/`PublicationMatched`/`LivelinessLost` kinds,
/// subscriptions the `Requested…`/`SubscriptionMatched`/`LivelinessChanged`/`MessageLost`
/// kinds; both get `IncompatibleType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum QosEvent {
    /// A publisher matched or lost subscriptions.
    PublicationMatched(MatchedStatus),
    /// A subscription matched or lost publishers.
    SubscriptionMatched(MatchedStatus),
    /// A subscription on the topic requests what this publisher does not offer.
    OfferedIncompatibleQos(IncompatibleQosStatus),
    /// A publisher on the topic does not offer what this subscription requests.
    RequestedIncompatibleQos(IncompatibleQosStatus),
    /// This publisher let its offered deadline pass without publishing.
    OfferedDeadlineMissed(CountStatus),
    /// No message arrived within this subscription's requested deadline.
    RequestedDeadlineMissed(CountStatus),
    /// This publisher failed to assert its liveliness within its lease.
    LivelinessLost(CountStatus),
    /// A matched publisher became alive or not alive.
    LivelinessChanged(LivelinessChangedStatus),
    /// Messages the transport lost on the way (not those a KeepLast history replaced).
    MessageLost(CountStatus),
    /// An endpoint of another type (name or type hash) is on the topic; the two do not match.
    IncompatibleType(CountStatus),
}

/// The kind of a [`QosEvent`], to ask a transport whether it reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)] // Each names the `QosEvent` variant of the same name.
pub enum QosEventKind {
    PublicationMatched,
    SubscriptionMatched,
    OfferedIncompatibleQos,
    RequestedIncompatibleQos,
    OfferedDeadlineMissed,
    RequestedDeadlineMissed,
    LivelinessLost,
    LivelinessChanged,
    MessageLost,
    IncompatibleType,
}

impl QosEvent {
    /// The event's kind.
    pub fn kind(&self) -> QosEventKind {
        match self {
            QosEvent::PublicationMatched(_) => QosEventKind::PublicationMatched,
            QosEvent::SubscriptionMatched(_) => QosEventKind::SubscriptionMatched,
            QosEvent::OfferedIncompatibleQos(_) => QosEventKind::OfferedIncompatibleQos,
            QosEvent::RequestedIncompatibleQos(_) => QosEventKind::RequestedIncompatibleQos,
            QosEvent::OfferedDeadlineMissed(_) => QosEventKind::OfferedDeadlineMissed,
            QosEvent::RequestedDeadlineMissed(_) => QosEventKind::RequestedDeadlineMissed,
            QosEvent::LivelinessLost(_) => QosEventKind::LivelinessLost,
            QosEvent::LivelinessChanged(_) => QosEventKind::LivelinessChanged,
            QosEvent::MessageLost(_) => QosEventKind::MessageLost,
            QosEvent::IncompatibleType(_) => QosEventKind::IncompatibleType,
        }
    }

    /// Whether the event is worth a warning when nobody handles it (what rclcpp logs by
    /// default): an incompatible QoS or type means two endpoints silently do not talk.
    pub fn is_warning(&self) -> bool {
        matches!(
            self,
            QosEvent::OfferedIncompatibleQos(_)
                | QosEvent::RequestedIncompatibleQos(_)
                | QosEvent::IncompatibleType(_)
        )
    }

    /// Folds `later`, a newer event of the same kind, into `self`: totals and current values
    /// are the later ones, changes add up. Returns `later` back if the kinds differ.
    pub fn merge(&mut self, later: QosEvent) -> Result<(), QosEvent> {
        use QosEvent::*;
        fn counts(a: &mut CountStatus, b: CountStatus) {
            a.total_count_change += b.total_count_change;
            a.total_count = b.total_count;
        }
        match (self, later) {
            (PublicationMatched(a), PublicationMatched(b))
            | (SubscriptionMatched(a), SubscriptionMatched(b)) => {
                a.total_count_change += b.total_count_change;
                a.current_count_change += b.current_count_change;
                a.total_count = b.total_count;
                a.current_count = b.current_count;
            }
            (OfferedIncompatibleQos(a), OfferedIncompatibleQos(b))
            | (RequestedIncompatibleQos(a), RequestedIncompatibleQos(b)) => {
                a.total_count_change += b.total_count_change;
                a.total_count = b.total_count;
                a.last_policy_kind = b.last_policy_kind;
            }
            (OfferedDeadlineMissed(a), OfferedDeadlineMissed(b))
            | (RequestedDeadlineMissed(a), RequestedDeadlineMissed(b))
            | (LivelinessLost(a), LivelinessLost(b))
            | (MessageLost(a), MessageLost(b))
            | (IncompatibleType(a), IncompatibleType(b)) => counts(a, b),
            (LivelinessChanged(a), LivelinessChanged(b)) => {
                a.alive_count_change += b.alive_count_change;
                a.not_alive_count_change += b.not_alive_count_change;
                a.alive_count = b.alive_count;
                a.not_alive_count = b.not_alive_count;
            }
            (_, later) => return Err(later),
        }
        Ok(())
    }
}

/// A QoS event handler given in an entity's options: it runs on the entity's worker for each
/// event, from the ones its creation raised on (a clash with endpoints that were there first).
///
/// Cloning it, or the options that hold it, shares the one handler: every entity created from
/// the clones calls it, one call at a time.
#[derive(Clone)]
pub struct QosEventHandler(Arc<Mutex<dyn FnMut(QosEvent) + Send>>);

impl QosEventHandler {
    /// Wraps `handler`.
    pub fn new(handler: impl FnMut(QosEvent) + Send + 'static) -> Self {
        Self(Arc::new(Mutex::new(handler)))
    }

    /// Calls the handler. A panic in an earlier call leaves it usable: the state it mutates is
    /// the user's, and the panic was reported where it happened.
    pub(crate) fn call(&self, event: QosEvent) {
        let mut handler = self.0.lock().unwrap_or_else(|p| p.into_inner());
        (*handler)(event)
    }
}

impl fmt::Debug for QosEventHandler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("QosEventHandler(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_events_keep_every_change() {
        let mut first = QosEvent::SubscriptionMatched(MatchedStatus {
            total_count: 1,
            total_count_change: 1,
            current_count: 1,
            current_count_change: 1,
        });
        let later = QosEvent::SubscriptionMatched(MatchedStatus {
            total_count: 1,
            total_count_change: 0,
            current_count: 0,
            current_count_change: -1,
        });
        first.merge(later).unwrap();
        assert_eq!(
            first,
            QosEvent::SubscriptionMatched(MatchedStatus {
                total_count: 1,
                total_count_change: 1,
                current_count: 0,
                current_count_change: 0,
            })
        );
        let other = QosEvent::MessageLost(CountStatus::default());
        assert_eq!(first.merge(other), Err(other));
    }
}
