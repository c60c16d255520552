//! How a reader's [`Inbox`] (rclev's bounded queue between a receive thread and the worker)
//! is filled. Nothing a peer sends grows it past its bound:
//!
//! - **KeepLast(n)** (eager): the listener takes every sample on the receive thread at once
//!   and queues it here; the queue holds at most `n`, dropping the oldest (counted as lost),
//!   as a DDS KeepLast history does. Fast DDS's own history (depth `n`) is emptied at once.
//! - **KeepAll** (on demand): samples stay in Fast DDS's reader history until the worker takes
//!   them ([`DdsReader::take`], at most one batch at a time passes through this queue). That
//!   history is bounded by Fast DDS's resource limits (5000 samples by default, as with
//!   rmw_fastrtps); once it is full a reliable writer is pushed back by DDS flow control (its
//!   writes block, then time out) and a best-effort one loses samples. Memory stays bounded
//!   whatever the writer does.
//!
//! Lock order: the queue's mutex is a leaf; the ready hook is rung after it is released.

use std::sync::Mutex;

use cxx::UniquePtr;

pub(crate) use rclev::transport::Inbox;
use rclev::transport::InboxHistory;
use rclev::History;

use crate::ffi::bridge::{DdsReader, ReaderMode};
use crate::ffi::Guarded;

/// How an inbox is filled; from the endpoint's history QoS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fill {
    /// The listener queues every sample, keeping the newest `depth`.
    KeepLast(usize),
    /// The worker takes samples from Fast DDS's history when it wants them.
    OnDemand,
}

impl Fill {
    /// The fill for a resolved history policy (`SystemDefault` is rmw's depth 1).
    pub fn of(history: History) -> Self {
        match history {
            History::KeepAll => Fill::OnDemand,
            History::KeepLast(n) => Fill::KeepLast(n.max(1)),
            History::SystemDefault => Fill::KeepLast(1),
        }
    }

    /// The inbox history that goes with it.
    pub fn history(self) -> InboxHistory {
        match self {
            Fill::KeepLast(n) => InboxHistory::KeepLast(n),
            Fill::OnDemand => InboxHistory::OnDemand,
        }
    }

    /// The reader mode that goes with it: samples longer than `max_sample_len` refused.
    pub fn reader_mode(self, max_sample_len: Option<usize>) -> ReaderMode {
        ReaderMode {
            on_demand: self == Fill::OnDemand,
            max_sample_len: max_sample_len.unwrap_or(usize::MAX),
        }
    }
}

/// A reader whose inbox may need filling on demand: the port's side of it. `None` once closed.
pub(crate) type ReaderSlot = Mutex<Option<Guarded<UniquePtr<DdsReader>>>>;

/// Takes up to `max` samples from Fast DDS's history into `inbox` if it is filled on demand
/// and holds fewer than `max`; whether Fast DDS may hold more (it gave all it was asked for).
pub(crate) fn fill_on_demand<T>(inbox: &Inbox<T>, reader: &ReaderSlot, max: usize) -> bool {
    if !inbox.on_demand() || max == 0 {
        return false;
    }
    let want = max.saturating_sub(inbox.items().len());
    if want == 0 {
        return true;
    }
    let reader = reader.lock().unwrap_or_else(|e| e.into_inner());
    let Some(reader) = reader.as_ref() else {
        return false;
    };
    match reader.take(want) {
        Ok(taken) => taken == want,
        Err(e) => {
            tracing::warn!(target: "rclev_dds", "{}: taking samples failed: {}", inbox.name(), e.what());
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histories_map_to_fills() {
        assert_eq!(Fill::of(History::KeepAll), Fill::OnDemand);
        assert_eq!(Fill::of(History::KeepLast(0)), Fill::KeepLast(1));
        assert_eq!(Fill::of(History::SystemDefault), Fill::KeepLast(1));
        let mode = Fill::OnDemand.reader_mode(Some(20));
        assert!(mode.on_demand);
        assert_eq!(mode.max_sample_len, 20);
        assert_eq!(
            Fill::KeepLast(2).reader_mode(None).max_sample_len,
            usize::MAX
        );
    }
}
