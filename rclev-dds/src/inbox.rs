//! How a reader's [`Inbox`] (rclev's bounded queue between a receive thread and the worker)
//! is filled. Nothing a peer sends grows it past its bounds — its history's count and its byte
//! budget (`TopicEndpoint::max_queue_bytes`, the same policy as over Zenoh):
//!
//! - **KeepLast(n)** (eager): the listener takes every sample on the receive thread at once
//!   and queues it here; the queue holds at most `n`, and at most its byte budget, dropping
//!   the oldest (counted as lost), as a DDS KeepLast history does. Fast DDS's own history
//!   (depth `n`) is emptied at once.
//! - **KeepAll** (room-limited): the listener takes samples as long as the queue has room for
//!   them ([`KEEP_ALL_LIMIT`] messages, and the byte budget); the rest stay in Fast DDS's
//!   reader history, which holds only [`KEEP_ALL_READER_SAMPLES`] (its resource limits), so
//!   that once both are full a reliable writer is pushed back by DDS flow control (its writes
//!   block, then time out) and a best-effort one loses samples. The worker takes from Fast
//!   DDS as it makes room ([`refill`]). Memory stays bounded in bytes whatever the writer
//!   does: the budget, and a few samples in Fast DDS. The price: what Fast DDS refused while
//!   full is sent again only at the writer's next heartbeat (3 s by default, or one riding on
//!   new data), so a reader that falls behind catches up in rounds — measured with
//!   1 MiB samples and a 100 ms callback (`tests/hostile.rs`): ~9 a second on an idle host,
//!   ~1 a second beside two busy loops under the sanitizers. rmw_fastrtps's KeepAll reader
//!   holds 5,000 samples instead, whatever their size.
//!
//! Lock order: the queue's mutex is a leaf; the ready hook is rung after it is released.

use std::sync::Mutex;

use cxx::UniquePtr;

pub(crate) use rclev::transport::Inbox;
use rclev::transport::InboxHistory;
use rclev::History;

use crate::ffi::bridge::{DdsReader, ReaderMode};
use crate::ffi::Guarded;

/// The most messages a KeepAll reader queues (rmw_fastrtps's KeepAll resource limit, which
/// Fast DDS's history held before it held only [`KEEP_ALL_READER_SAMPLES`]).
pub(crate) const KEEP_ALL_LIMIT: usize = 5000;

/// The samples a KeepAll reader's Fast DDS history holds beside rclev's queue (its resource
/// limits, which the shim sets from [`ReaderMode::history_samples`]): when rclev's queue is
/// full these fill, and the writer is pushed back. Few, since their bytes are not bounded by
/// the queue's budget.
pub(crate) const KEEP_ALL_READER_SAMPLES: u32 = 4;

/// How an inbox is filled; from the endpoint's history QoS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fill {
    /// The listener queues every sample, keeping the newest `depth`.
    KeepLast(usize),
    /// The listener queues what the inbox has room for; the worker takes the rest from Fast
    /// DDS's history as it makes room.
    RoomLimited,
}

impl Fill {
    /// The fill for a resolved history policy (`SystemDefault` is rmw's depth 1).
    pub fn of(history: History) -> Self {
        match history {
            History::KeepAll => Fill::RoomLimited,
            History::KeepLast(n) => Fill::KeepLast(n.max(1)),
            History::SystemDefault => Fill::KeepLast(1),
        }
    }

    /// The inbox history that goes with it.
    pub fn history(self) -> InboxHistory {
        match self {
            Fill::KeepLast(n) => InboxHistory::KeepLast(n),
            Fill::RoomLimited => InboxHistory::KeepAll {
                limit: KEEP_ALL_LIMIT,
            },
        }
    }

    /// The reader mode that goes with it: samples longer than `max_sample_len` refused.
    pub fn reader_mode(self, max_sample_len: Option<usize>) -> ReaderMode {
        ReaderMode {
            room_limited: self == Fill::RoomLimited,
            history_samples: KEEP_ALL_READER_SAMPLES,
            max_sample_len: max_sample_len.unwrap_or(usize::MAX),
        }
    }
}

/// A reader whose inbox may need filling from Fast DDS's history: the port's side of it.
/// `None` once closed.
pub(crate) type ReaderSlot = Mutex<Option<Guarded<UniquePtr<DdsReader>>>>;

/// Takes from Fast DDS's history into a room-limited `inbox` as many samples as it has room
/// for, up to what the worker wants (`max` queued); whether Fast DDS may hold more (it gave
/// all it was asked for, or there was no room to ask).
pub(crate) fn refill<T>(fill: Fill, inbox: &Inbox<T>, reader: &ReaderSlot, max: usize) -> bool {
    if fill != Fill::RoomLimited || max == 0 {
        return false;
    }
    let want = max.saturating_sub(inbox.len()).min(inbox.room());
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
            rclev::diagnostic!(WARN, target: "rclev_dds", "{}: taking samples failed: {}", inbox.name(), e.what());
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histories_map_to_fills() {
        assert_eq!(Fill::of(History::KeepAll), Fill::RoomLimited);
        assert_eq!(Fill::of(History::KeepLast(0)), Fill::KeepLast(1));
        assert_eq!(Fill::of(History::SystemDefault), Fill::KeepLast(1));
        let mode = Fill::RoomLimited.reader_mode(Some(20));
        assert!(mode.room_limited);
        assert_eq!(mode.max_sample_len, 20);
        assert_eq!(
            Fill::KeepLast(2).reader_mode(None).max_sample_len,
            usize::MAX
        );
        assert_eq!(
            Fill::RoomLimited.history(),
            InboxHistory::KeepAll {
                limit: KEEP_ALL_LIMIT
            }
        );
    }
}
