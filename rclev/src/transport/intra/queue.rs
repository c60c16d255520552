//! A subscription's shared state in process: its queue (history depth, lost count,
//! reception numbers, metas kept while needed) and its matching status. Publishers push into
//! it (`topic.rs`), the subscription takes from it (`subscription.rs`).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use super::item::{Item, Meta};
use super::matching::{Party, Side, Status};
use crate::base::sync::lock;
use crate::qos::compat::QosRole;
use crate::qos::QoSProfile;
use crate::transport::{EventHook, Gid, Payload, ReadyHook, TypeSupport};

pub(super) struct SubscriptionShared {
    pub(super) gid: Gid,
    /// Whether its owner reads message info: publishers stamp messages only then.
    pub(super) reads_info: bool,
    pub(super) type_support: TypeSupport,
    pub(super) qos: QoSProfile,
    pub(super) depth: Option<usize>,
    pub(super) queue: Mutex<QueueState>,
    pub(super) ready: Arc<dyn ReadyHook>,
    pub(super) status: Mutex<Status>,
    pub(super) events: Arc<dyn EventHook>,
}

/// A subscription's queue: the payloads, and their metas in step with them while kept.
///
/// Metas (publisher, sequence number, stamps) are kept from the start when the subscription
/// reads message infos, and from the moment a publisher with a lifespan matches (its messages
/// must expire); otherwise a queued message is its bare payload, and a batch leaves the queue
/// in one move — what a fast publisher and the worker contend on is this lock.
#[derive(Default)]
pub(super) struct QueueState {
    pub(super) payloads: VecDeque<Payload>,
    pub(super) metas: Option<VecDeque<Meta>>,
    /// Replaced by newer ones in a full KeepLast history.
    pub(super) lost: u64,
    /// Messages ever pushed; numbers them (reception sequence numbers).
    pub(super) received: u64,
}

impl QueueState {
    #[inline]
    pub(super) fn push(&mut self, item: Item, depth: Option<usize>) {
        self.received += 1;
        self.payloads.push_back(item.payload);
        if let Some(metas) = &mut self.metas {
            metas.push_back(item.meta);
        }
        if depth.is_some_and(|d| self.payloads.len() > d) {
            self.payloads.pop_front();
            if let Some(metas) = &mut self.metas {
                metas.pop_front();
            }
            self.lost += 1;
        }
    }

    /// The reception number of the front message: messages leave only from the front.
    pub(super) fn front_number(&self) -> u64 {
        self.received - self.payloads.len() as u64 + 1
    }

    /// The oldest message whose lifespan has not ended, with its meta (if kept) and reception
    /// number.
    pub(super) fn pop(&mut self, now: &mut Option<u64>) -> Option<(Payload, Option<Meta>, u64)> {
        loop {
            let reception = self.front_number();
            let payload = self.payloads.pop_front()?;
            let meta = self.metas.as_mut().and_then(VecDeque::pop_front);
            if !meta.is_some_and(|m| m.expired(now)) {
                return Some((payload, meta, reception));
            }
        }
    }
}

impl SubscriptionShared {
    /// What matching reads of the subscription.
    pub(super) fn party(&self) -> Party<'_> {
        Party {
            type_support: &self.type_support,
            qos: &self.qos,
        }
    }

    pub(super) fn side(&self) -> Side<'_> {
        Side {
            role: QosRole::Subscription,
            status: &self.status,
            events: &self.events,
        }
    }

    // Inlined into the publisher's fan-out (measured: not inlined by default).
    #[inline]
    pub(super) fn push(&self, item: Item) {
        lock(&self.queue).push(item, self.depth);
        self.ready.ready();
    }

    /// Keeps metas from now on (a publisher with a lifespan is matching). Messages queued
    /// before get [`Meta::UNKNOWN`]: they never expire, and came from publishers without one.
    pub(super) fn keep_metas(&self) {
        let mut q = lock(&self.queue);
        if q.metas.is_none() {
            let queued = q.payloads.len();
            q.metas = Some(std::iter::repeat_n(Meta::UNKNOWN, queued).collect());
        }
    }
}
