//! The queue between a wire transport's receive thread and the worker that takes from it,
//! bounded as the endpoint's QoS promises ([rule 11](self) in `docs/transport.md`): nothing a
//! peer sends grows it past its bound.
//!
//! - [`InboxHistory::KeepLast`]: at most `n`, the oldest dropped (counted as lost), as a
//!   KeepLast history does.
//! - [`InboxHistory::KeepAll`]: at most `limit`; beyond it the newest is refused (counted as
//!   lost), for a transport whose engine has no history of its own to hold the rest.
//! - [`InboxHistory::OnDemand`]: the transport's engine keeps the history and the worker takes
//!   from it when it wants (rclev-dds's KeepAll readers); at most one batch passes through
//!   here, so the taker bounds it.
//!
//! Lock order: the queue's mutex is a leaf; the ready hook is rung after it is released.

use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use super::ReadyHook;
use crate::base::throttle::ReportThrottle;

/// Items refused for their length, logged per endpoint at most every 10 s.
static REFUSED: ReportThrottle = ReportThrottle::new(Duration::from_secs(10));

/// How an [`Inbox`] bounds what it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InboxHistory {
    /// Keeps the newest `n` (at least 1), dropping the oldest.
    KeepLast(usize),
    /// Keeps up to `limit` (at least 1), refusing newer items while full.
    KeepAll {
        /// The most items held at once.
        limit: usize,
    },
    /// Items are pushed only when the worker asks for them; the taker bounds them.
    OnDemand,
}

/// A bounded queue of what an endpoint received, shared by the transport's receive side
/// (which pushes) and its port (which takes).
pub struct Inbox<T> {
    /// The endpoint's name, for reports.
    name: String,
    history: InboxHistory,
    items: Mutex<VecDeque<T>>,
    lost: AtomicU64,
    refused: AtomicU64,
    closed: AtomicBool,
    ready: Arc<dyn ReadyHook>,
}

impl<T> Inbox<T> {
    /// An empty inbox for the endpoint `name`, ringing `ready` when something arrives.
    pub fn new(name: &str, history: InboxHistory, ready: Arc<dyn ReadyHook>) -> Self {
        Self {
            name: name.to_string(),
            history,
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

    /// The queue, locked (a leaf lock: call no hook while holding it).
    pub fn items(&self) -> MutexGuard<'_, VecDeque<T>> {
        self.items.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Queues an item, within the inbox's bound (what falls out is counted as lost); whether
    /// the item itself was queued. Rings nothing: see [`received`](Self::received).
    pub fn push(&self, item: T) -> bool {
        if self.is_closed() {
            return false;
        }
        let mut items = self.items();
        match self.history {
            InboxHistory::KeepLast(depth) => {
                items.push_back(item);
                while items.len() > depth.max(1) {
                    items.pop_front();
                    self.lost.fetch_add(1, Ordering::Relaxed);
                }
                true
            }
            InboxHistory::KeepAll { limit } if items.len() >= limit.max(1) => {
                self.lost.fetch_add(1, Ordering::Relaxed);
                false
            }
            InboxHistory::KeepAll { .. } | InboxHistory::OnDemand => {
                items.push_back(item);
                true
            }
        }
    }

    /// Queues an item if fewer than `limit` are queued, whatever the inbox's own bound;
    /// whether it did. Nothing is counted.
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

    /// Says that something can be taken now. `direct` when this is the transport's own
    /// receive thread, which may lend itself to the entity's work
    /// ([`ReadyHook::ready_on_receive_thread`]).
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

    /// Counts an item refused for its length (longer than its type can be) and reports it,
    /// rate-limited; `sender` names who sent it.
    pub fn refused(&self, len: usize, sender: &dyn fmt::Display) {
        self.refused.fetch_add(1, Ordering::Relaxed);
        if let Some(held_back) = REFUSED.note(&self.name) {
            tracing::warn!(
                target: "rclev::transport",
                "{}: {len} bytes from {sender} refused, longer than its type can be{held_back}",
                self.name,
            );
        }
    }

    /// Whether items come only when the worker asks ([`InboxHistory::OnDemand`]).
    pub fn on_demand(&self) -> bool {
        self.history == InboxHistory::OnDemand
    }

    /// Items dropped or refused so far for the bound.
    pub fn lost_count(&self) -> u64 {
        self.lost.load(Ordering::Relaxed)
    }

    /// Items refused so far for their length.
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

impl<T> fmt::Debug for Inbox<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Inbox")
            .field("name", &self.name)
            .field("history", &self.history)
            .field("queued", &self.items().len())
            .field("lost", &self.lost_count())
            .finish()
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
        let inbox = Inbox::new("/t", InboxHistory::KeepLast(3), Arc::new(Quiet));
        for i in 0..10 {
            assert!(inbox.push(i));
        }
        assert_eq!(inbox.items().iter().copied().collect::<Vec<_>>(), [7, 8, 9]);
        assert_eq!(inbox.lost_count(), 7);
        inbox.close();
        assert!(!inbox.push(10));
        assert!(inbox.items().is_empty(), "nothing is queued once closed");
    }

    #[test]
    fn keep_all_refuses_beyond_its_limit_and_counts_it() {
        let inbox = Inbox::new("/t", InboxHistory::KeepAll { limit: 2 }, Arc::new(Quiet));
        assert!(inbox.push(1));
        assert!(inbox.push(2));
        assert!(!inbox.push(3));
        assert_eq!(inbox.items().iter().copied().collect::<Vec<_>>(), [1, 2]);
        assert_eq!(inbox.lost_count(), 1);
        inbox.items().pop_front();
        assert!(inbox.push(4), "room again once taken");
    }

    #[test]
    fn refusals_are_counted() {
        let inbox: Inbox<u8> = Inbox::new("/t", InboxHistory::OnDemand, Arc::new(Quiet));
        inbox.refused(10, &"writer 1");
        assert_eq!(inbox.refused_count(), 1);
        assert!(inbox.on_demand());
        assert!(inbox.push_within(1, 1));
        assert!(!inbox.push_within(2, 1));
    }
}
