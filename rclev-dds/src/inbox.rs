//! The queue between a reader's listener and the worker that takes from it, bounded as the
//! endpoint's QoS promises. Nothing a peer sends grows it past its bound:
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

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use cxx::UniquePtr;

use rclev::throttle::ReportThrottle;
use rclev::transport::ReadyHook;
use rclev::History;

use crate::ffi::bridge::{DdsReader, ReaderMode};
use crate::ffi::Guarded;

/// Samples refused for their length, logged per endpoint at most every 10 s.
static REFUSED: ReportThrottle = ReportThrottle::new(Duration::from_secs(10));

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

    /// The reader mode that goes with it: samples longer than `max_sample_len` refused.
    pub fn reader_mode(self, max_sample_len: Option<usize>) -> ReaderMode {
        ReaderMode {
            on_demand: self == Fill::OnDemand,
            max_sample_len: max_sample_len.unwrap_or(usize::MAX),
        }
    }
}

/// A bounded queue of what a reader received, shared by its listener (which pushes) and its
/// port (which takes).
pub(crate) struct Inbox<T> {
    /// The endpoint's name, for reports.
    name: String,
    fill: Fill,
    items: Mutex<VecDeque<T>>,
    lost: AtomicU64,
    refused: AtomicU64,
    closed: AtomicBool,
    ready: Arc<dyn ReadyHook>,
}

impl<T> Inbox<T> {
    pub fn new(name: &str, fill: Fill, ready: Arc<dyn ReadyHook>) -> Self {
        Self {
            name: name.to_string(),
            fill,
            items: Mutex::new(VecDeque::new()),
            lost: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            ready,
        }
    }

    /// The endpoint's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn items(&self) -> MutexGuard<'_, VecDeque<T>> {
        self.items.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Queues an item the listener (or an on-demand take) produced; with KeepLast, drops the
    /// oldest beyond the depth, counted as lost. Rings nothing: see [`received`](Self::received).
    pub fn push(&self, item: T) {
        if self.is_closed() {
            return;
        }
        let mut items = self.items();
        items.push_back(item);
        if let Fill::KeepLast(depth) = self.fill {
            while items.len() > depth {
                items.pop_front();
                self.lost.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Queues an item if fewer than `limit` are queued; whether it did.
    pub fn push_within(&self, item: T, limit: usize) -> bool {
        if self.is_closed() {
            return false;
        }
        let mut items = self.items();
        if items.len() >= limit {
            return false;
        }
        items.push_back(item);
        true
    }

    /// Says that something can be taken now, from Fast DDS's receive thread: after an eager
    /// push, or when an on-demand reader has data. An on-demand take (on the worker) pushes
    /// without this: the worker is already taking.
    pub fn received(&self, direct: bool) {
        if self.is_closed() {
            return;
        }
        if direct {
            self.ready.ready_on_receive_thread();
        } else {
            self.ready.ready();
        }
    }

    /// Counts a sample refused for its length (longer than its type can be) and reports it,
    /// rate-limited.
    pub fn refused(&self, len: usize, writer: &[u8; 16]) {
        self.refused.fetch_add(1, Ordering::Relaxed);
        if let Some(held_back) = REFUSED.note(&self.name) {
            tracing::warn!(
                target: "rclev_dds",
                "{}: a sample of {len} bytes from writer {} refused, longer than its type can be{held_back}",
                self.name,
                crate::names::id_text(writer),
            );
        }
    }

    /// Whether the worker must ask Fast DDS for samples.
    pub fn on_demand(&self) -> bool {
        self.fill == Fill::OnDemand
    }

    pub fn lost_count(&self) -> u64 {
        self.lost.load(Ordering::Relaxed)
    }

    pub fn refused_count(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// Stops queueing and forgets what is queued.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        let drained = std::mem::take(&mut *self.items());
        drop(drained);
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
            tracing::warn!(target: "rclev_dds", "{}: taking samples failed: {}", inbox.name, e.what());
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Quiet;
    impl ReadyHook for Quiet {
        fn ready(&self) {}
    }

    #[test]
    fn keep_last_holds_the_newest_depth_and_counts_the_rest_lost() {
        let inbox = Inbox::new("/t", Fill::KeepLast(3), Arc::new(Quiet));
        for i in 0..10 {
            inbox.push(i);
        }
        assert_eq!(inbox.items().iter().copied().collect::<Vec<_>>(), [7, 8, 9]);
        assert_eq!(inbox.lost_count(), 7);
        inbox.close();
        inbox.push(10);
        assert!(inbox.items().is_empty(), "nothing is queued once closed");
    }

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
