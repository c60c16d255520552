//! How a publisher and a subscription pair up (type, then QoS), and the QoS events that
//! pairing raises on both: counters per endpoint, events collected under the topic lock and
//! fired after it.

use std::sync::{Arc, Mutex};

use crate::base::sync::lock;
use crate::qos::compat::QosRole;
use crate::qos::{
    CountStatus, IncompatibleQosStatus, LivelinessChangedStatus, MatchedStatus, QoSProfile,
    QosEvent, QosPolicyKind,
};
use crate::transport::{EventHook, TypeSupport};

/// Counters behind an endpoint's QoS events.
#[derive(Default)]
pub(super) struct Status {
    matched_total: u64,
    pub(super) matched_current: u64,
    incompatible_qos: u64,
    incompatible_type: u64,
}

/// Events raised under the topic lock, fired once it is released.
pub(super) type Pending = Vec<(Arc<dyn EventHook>, QosEvent)>;

/// One side of a pairing, for its events.
pub(super) struct Side<'a> {
    pub(super) role: QosRole,
    pub(super) status: &'a Mutex<Status>,
    pub(super) events: &'a Arc<dyn EventHook>,
}

impl Side<'_> {
    pub(super) fn matched(&self, joined: bool, out: &mut Pending) {
        let mut s = lock(self.status);
        if joined {
            s.matched_total += 1;
            s.matched_current += 1;
        } else {
            s.matched_current -= 1;
        }
        let status = MatchedStatus {
            total_count: s.matched_total,
            total_count_change: u64::from(joined),
            current_count: s.matched_current,
            current_count_change: if joined { 1 } else { -1 },
        };
        let (matched, alive) = (s.matched_current, if joined { 1 } else { -1 });
        drop(s);
        match self.role {
            QosRole::Publisher => {
                out.push((self.events.clone(), QosEvent::PublicationMatched(status)))
            }
            QosRole::Subscription => {
                out.push((self.events.clone(), QosEvent::SubscriptionMatched(status)));
                // In process a matched publisher is alive for as long as it is matched.
                out.push((
                    self.events.clone(),
                    QosEvent::LivelinessChanged(LivelinessChangedStatus {
                        alive_count: matched,
                        not_alive_count: 0,
                        alive_count_change: alive,
                        not_alive_count_change: 0,
                    }),
                ));
            }
        }
    }

    pub(super) fn incompatible_qos(&self, policy: QosPolicyKind, out: &mut Pending) {
        let mut s = lock(self.status);
        s.incompatible_qos += 1;
        let status = IncompatibleQosStatus {
            total_count: s.incompatible_qos,
            total_count_change: 1,
            last_policy_kind: policy,
        };
        let event = match self.role {
            QosRole::Publisher => QosEvent::OfferedIncompatibleQos(status),
            QosRole::Subscription => QosEvent::RequestedIncompatibleQos(status),
        };
        out.push((self.events.clone(), event));
    }

    pub(super) fn incompatible_type(&self, out: &mut Pending) {
        let mut s = lock(self.status);
        s.incompatible_type += 1;
        let status = CountStatus {
            total_count: s.incompatible_type,
            total_count_change: 1,
        };
        out.push((self.events.clone(), QosEvent::IncompatibleType(status)));
    }
}

pub(super) fn fire(pending: Pending) {
    for (hook, event) in pending {
        hook.event(event);
    }
}

/// How a publisher and a subscription on one topic pair up.
pub(super) enum Pairing {
    /// They match; `convert` when their Rust types differ and messages go through CDR.
    Match {
        convert: bool,
    },
    IncompatibleType,
    IncompatibleQos(QosPolicyKind),
}

/// What pairing reads of a publisher or a subscription.
pub(super) struct Party<'a> {
    pub(super) type_support: &'a TypeSupport,
    pub(super) qos: &'a QoSProfile,
}

/// How publisher `p` and subscription `s` pair up.
pub(super) fn pair(p: Party<'_>, s: Party<'_>) -> Pairing {
    if !p.type_support.same_interface(s.type_support) {
        return Pairing::IncompatibleType;
    }
    if let Some(clash) = QoSProfile::incompatibility(p.qos, s.qos) {
        return Pairing::IncompatibleQos(clash.policy);
    }
    Pairing::Match {
        convert: p.type_support.rust_type() != s.type_support.rust_type(),
    }
}

/// Raises the events of a pairing that did not match.
pub(super) fn mismatch(p: Side<'_>, s: Side<'_>, pairing: &Pairing, out: &mut Pending) {
    match pairing {
        Pairing::Match { .. } => {}
        Pairing::IncompatibleType => {
            p.incompatible_type(out);
            s.incompatible_type(out);
        }
        Pairing::IncompatibleQos(policy) => {
            p.incompatible_qos(*policy, out);
            s.incompatible_qos(*policy, out);
        }
    }
}
