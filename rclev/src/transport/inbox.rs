//! The queue between a wire transport's receive thread and the worker that takes from it,
//! bounded as the endpoint's QoS promises ([rule 11](self) in `docs/transport.md`), and in
//! bytes: nothing a peer sends grows it past its bounds.
//!
//! - [`InboxHistory::KeepLast`]: at most `n` items, the oldest dropped (counted as lost), as a
//!   KeepLast history does; and at most its byte budget, the oldest dropped too (the newest is
//!   always kept).
//! - [`InboxHistory::KeepAll`]: at most `limit` items and its byte budget; beyond either the
//!   newest is refused (counted as lost: a transport that can push back on the sender, as DDS
//!   flow control does, leaves it with the sender instead, see [`Inbox::room`]). One item
//!   alone larger than the budget is still taken into an empty inbox.
//! - [`InboxHistory::OnDemand`]: items are pushed only when the worker asks for them
//!   ([`Inbox::push_within`]), so the taker bounds them.
//!
//! The byte budget is the endpoint's ([`TopicEndpoint::max_queue_bytes`], a subscription
//! option; [`DEFAULT_QUEUE_BYTES`] by default); an item's bytes are its length on the wire,
//! which the transport gives with it.
//!
//! Lock order: the queue's mutex is a leaf; the ready hook is rung after it is released.
//!
//! [`TopicEndpoint::max_queue_bytes`]: super::TopicEndpoint::max_queue_bytes

use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use super::ReadyHook;
use crate::base::throttle::ReportThrottle;
pub use crate::endpoint::DEFAULT_QUEUE_BYTES;

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

/// The items and their byte total, under the inbox's mutex.
struct Held<T> {
    /// Each item with its length in bytes.
    items: VecDeque<(T, usize)>,
    bytes: usize,
}

impl<T> Held<T> {
    fn pop(&mut self) -> Option<T> {
        let (item, bytes) = self.items.pop_front()?;
        self.bytes -= bytes;
        Some(item)
    }
}

/// A bounded queue of what an endpoint received, shared by the transport's receive side
/// (which pushes) and its port (which takes).
pub struct Inbox<T> {
    /// The endpoint's name, for reports.
    name: String,
    history: InboxHistory,
    max_bytes: usize,
    held: Mutex<Held<T>>,
    lost: AtomicU64,
    refused: AtomicU64,
    closed: AtomicBool,
    ready: Arc<dyn ReadyHook>,
}

impl<T> Inbox<T> {
    /// An empty inbox for the endpoint `name` holding at most [`DEFAULT_QUEUE_BYTES`] (see
    /// [`with_max_bytes`](Self::with_max_bytes)), ringing `ready` when something arrives.
    pub fn new(name: &str, history: InboxHistory, ready: Arc<dyn ReadyHook>) -> Self {
        Self {
            name: name.to_string(),
            history,
            max_bytes: DEFAULT_QUEUE_BYTES,
            held: Mutex::new(Held {
                items: VecDeque::new(),
                bytes: 0,
            }),
            lost: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            ready,
        }
    }

    /// The inbox, holding at most `max_bytes` (at least one item whatever its length).
    pub fn with_max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// The endpoint's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn held(&self) -> MutexGuard<'_, Held<T>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Queues an item of `bytes` bytes (its length on the wire), within the inbox's bounds
    /// (what falls out is counted as lost); whether the item itself was queued. Rings
    /// nothing: see [`received`](Self::received).
    pub fn push(&self, item: T, bytes: usize) -> bool {
        if self.is_closed() {
            return false;
        }
        let mut held = self.held();
        match self.history {
            InboxHistory::KeepLast(depth) => {
                held.items.push_back((item, bytes));
                held.bytes += bytes;
                while held.items.len() > depth.max(1)
                    || (held.bytes > self.max_bytes && held.items.len() > 1)
                {
                    held.pop();
                    self.lost.fetch_add(1, Ordering::Relaxed);
                }
                true
            }
            InboxHistory::KeepAll { limit }
                if held.items.len() >= limit.max(1)
                    || (!held.items.is_empty() && held.bytes + bytes > self.max_bytes) =>
            {
                self.lost.fetch_add(1, Ordering::Relaxed);
                false
            }
            InboxHistory::KeepAll { .. } | InboxHistory::OnDemand => {
                held.items.push_back((item, bytes));
                held.bytes += bytes;
                true
            }
        }
    }

    /// Queues an item if fewer than `limit` are queued, whatever the inbox's own bound;
    /// whether it did. Nothing is counted.
    pub fn push_within(&self, item: T, bytes: usize, limit: usize) -> bool {
        if self.is_closed() {
            return false;
        }
        let mut held = self.held();
        if held.items.len() >= limit {
            return false;
        }
        held.items.push_back((item, bytes));
        held.bytes += bytes;
        true
    }

    /// How many more items a [`KeepAll`](InboxHistory::KeepAll) inbox takes now: none once
    /// it holds its byte budget. A transport that can leave items with the sender (DDS: in
    /// its reader's history, which pushes back on a reliable writer) takes no more than this
    /// from it. `usize::MAX` for the other histories, which never refuse.
    pub fn room(&self) -> usize {
        match self.history {
            InboxHistory::KeepAll { limit } => {
                let held = self.held();
                if held.bytes >= self.max_bytes && !held.items.is_empty() {
                    0
                } else {
                    limit.max(1).saturating_sub(held.items.len())
                }
            }
            InboxHistory::KeepLast(_) | InboxHistory::OnDemand => usize::MAX,
        }
    }

    /// Takes the oldest item.
    pub fn pop(&self) -> Option<T> {
        self.held().pop()
    }

    /// Moves up to `max` of the oldest items, converted by `f`, into `out`; whether more are
    /// left.
    pub fn take_into<U>(&self, max: usize, out: &mut Vec<U>, mut f: impl FnMut(T) -> U) -> bool {
        let mut held = self.held();
        for _ in 0..max {
            match held.pop() {
                Some(item) => out.push(f(item)),
                None => return false,
            }
        }
        !held.items.is_empty()
    }

    /// How many items are queued.
    pub fn len(&self) -> usize {
        self.held().items.len()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many bytes the queued items hold.
    pub fn bytes(&self) -> usize {
        self.held().bytes
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
            crate::diagnostic!(WARN,
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

    /// Items dropped or refused so far for the bounds.
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
        let drained = {
            let mut held = self.held();
            held.bytes = 0;
            std::mem::take(&mut held.items)
        };
        // Dropped outside the lock.
        drop(drained);
    }
}

impl<T> fmt::Debug for Inbox<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Inbox")
            .field("name", &self.name)
            .field("history", &self.history)
            .field("max_bytes", &self.max_bytes)
            .field("queued", &self.len())
            .field("bytes", &self.bytes())
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

    fn drain<T>(inbox: &Inbox<T>) -> Vec<T> {
        let mut out = Vec::new();
        inbox.take_into(usize::MAX, &mut out, |t| t);
        out
    }

    #[test]
    fn keep_last_holds_the_newest_depth_and_counts_the_rest_lost() {
        let inbox = Inbox::new("/t", InboxHistory::KeepLast(3), Arc::new(Quiet));
        for i in 0..10 {
            assert!(inbox.push(i, 1));
        }
        assert_eq!((inbox.len(), inbox.bytes()), (3, 3));
        assert_eq!(drain(&inbox), [7, 8, 9]);
        assert_eq!(inbox.lost_count(), 7);
        inbox.close();
        assert!(!inbox.push(10, 1));
        assert!(inbox.is_empty(), "nothing is queued once closed");
    }

    #[test]
    fn keep_all_refuses_beyond_its_limit_and_counts_it() {
        let inbox = Inbox::new("/t", InboxHistory::KeepAll { limit: 2 }, Arc::new(Quiet));
        assert!(inbox.push(1, 1));
        assert!(inbox.push(2, 1));
        assert_eq!(inbox.room(), 0);
        assert!(!inbox.push(3, 1));
        assert_eq!(inbox.lost_count(), 1);
        assert_eq!(inbox.pop(), Some(1));
        assert_eq!(inbox.room(), 1);
        assert!(inbox.push(4, 1), "room again once taken");
        assert_eq!(drain(&inbox), [2, 4]);
    }

    /// The defect: a Zenoh KeepAll subscription held up to 10,000 samples of any size, and
    /// with 1 MiB samples grew past 3.4 GB.
    #[test]
    fn both_histories_are_bounded_in_bytes_too() {
        const MIB: usize = 1 << 20;
        let all = Inbox::new(
            "/t",
            InboxHistory::KeepAll { limit: 10_000 },
            Arc::new(Quiet),
        )
        .with_max_bytes(8 * MIB);
        let taken = (0..100).filter(|i| all.push(*i, MIB)).count();
        assert_eq!((taken, all.len(), all.bytes()), (8, 8, 8 * MIB));
        assert_eq!((all.room(), all.lost_count()), (0, 92));
        // One item larger than the budget still goes into an empty inbox.
        let one = Inbox::new("/t", InboxHistory::KeepAll { limit: 10 }, Arc::new(Quiet))
            .with_max_bytes(MIB);
        assert!(one.push(0, 5 * MIB));
        assert!(!one.push(1, 1));

        let last =
            Inbox::new("/t", InboxHistory::KeepLast(1000), Arc::new(Quiet)).with_max_bytes(8 * MIB);
        for i in 0..100 {
            assert!(last.push(i, MIB));
        }
        assert_eq!(
            (last.len(), last.bytes(), last.lost_count()),
            (8, 8 * MIB, 92)
        );
        assert_eq!(drain(&last), (92..100).collect::<Vec<_>>());
        assert!(last.push(0, 50 * MIB), "the newest is always kept");
        assert_eq!(last.len(), 1);
    }

    #[test]
    fn refusals_are_counted() {
        let inbox: Inbox<u8> = Inbox::new("/t", InboxHistory::OnDemand, Arc::new(Quiet));
        inbox.refused(10, &"writer 1");
        assert_eq!(inbox.refused_count(), 1);
        assert!(inbox.on_demand());
        assert!(inbox.push_within(1, 1, 1));
        assert!(!inbox.push_within(2, 1, 1));
        assert_eq!(inbox.room(), usize::MAX);
    }
}
