//! Which peers a writer or reader is matched with, kept from its listener's match events: the
//! counts `publisher_count`/`subscription_count` report, and the set a service waits on
//! before it answers a client whose reply reader it has only just discovered.

use std::any::Any;
use std::collections::HashSet;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rclev::transport::{EventHook, Gid};

use crate::ffi::bridge::{EndpointEvent, EventKind};
use crate::ffi::{ReaderHandler, Taken, WriterHandler};
use crate::graph::GraphCache;
use crate::qos::{reader_event, writer_event};

/// The peers an endpoint is matched with. Its mutex is a leaf lock.
#[derive(Default)]
pub(crate) struct Matched {
    peers: Mutex<HashSet<Gid>>,
    changed: Condvar,
}

impl Matched {
    fn peers(&self) -> MutexGuard<'_, HashSet<Gid>> {
        self.peers.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Applies a match event (`current_count_change` +1 or -1 for `peer`).
    pub fn apply(&self, event: &EndpointEvent) {
        if event.kind != EventKind::Matched {
            return;
        }
        let peer = Gid(event.peer);
        {
            let mut peers = self.peers();
            if event.current_count_change > 0 {
                peers.insert(peer);
            } else if event.current_count_change < 0 {
                peers.remove(&peer);
            }
        }
        self.changed.notify_all();
    }

    pub fn count(&self) -> usize {
        self.peers().len()
    }

    /// Every matched peer.
    pub fn all(&self) -> Vec<Gid> {
        self.peers().iter().copied().collect()
    }

    /// Waits until a peer for which `wanted` holds is matched, at most `timeout`; says whether
    /// one is.
    pub fn wait_for(&self, timeout: Duration, wanted: impl Fn(&Gid) -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        let mut peers = self.peers();
        loop {
            if peers.iter().any(&wanted) {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            peers = self
                .changed
                .wait_timeout(peers, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

/// A writer's listener: keeps its matches, tells the graph's waiters, forwards QoS events.
pub(crate) struct WriterEvents {
    pub matched: Arc<Matched>,
    pub graph: Arc<GraphCache>,
    pub hook: Arc<dyn EventHook>,
}

impl WriterHandler for WriterEvents {
    fn event(&self, event: &EndpointEvent) {
        self.matched.apply(event);
        if event.kind == EventKind::Matched {
            self.graph.changed();
        }
        if let Some(e) = writer_event(event) {
            self.hook.event(e);
        }
    }
}

/// What a reader does with what its listener reports.
pub(crate) trait SampleSink: Send + Sync {
    /// Decodes a sample's bytes (CDR with its encapsulation header) into a typed value while
    /// Fast DDS lends them (inside a take, the reader's lock held): that decode is then the
    /// only copy made of the sample. `None` (the default: readers of bytes, and bytes that
    /// do not decode) keeps a copy of the bytes instead, for [`sample`](Self::sample). Input
    /// from the network: it must not panic.
    fn decode(&self, data: &[u8]) -> Option<Arc<dyn Any + Send + Sync>> {
        let _ = data;
        None
    }
    /// A sample [`decode`](Self::decode) made a value of.
    fn decoded(&self, value: Arc<dyn Any + Send + Sync>, meta: &crate::ffi::bridge::SampleMeta) {
        let _ = (value, meta);
    }
    /// A sample taken (CDR with its encapsulation header), in a buffer it may keep.
    fn sample(&self, data: Vec<u8>, meta: &crate::ffi::bridge::SampleMeta);
    /// A sample of `len` bytes refused, longer than the reader's type can be. Only readers
    /// created with a bound see this.
    fn refused(&self, len: usize, meta: &crate::ffi::bridge::SampleMeta) {
        let _ = (len, meta);
    }
    /// How many samples a room-limited reader's queue takes now (see `ReaderMode`). Only
    /// room-limited readers are asked.
    fn room(&self) -> usize {
        usize::MAX
    }
    /// A room-limited reader took what it could: there are samples to take. Only
    /// room-limited readers see this.
    fn data_available(&self) {}
}

/// A reader's listener: samples go to `sink`; matches and QoS events as for writers.
pub(crate) struct ReaderEvents<S> {
    pub sink: Arc<S>,
    pub matched: Arc<Matched>,
    pub graph: Arc<GraphCache>,
    pub hook: Arc<dyn EventHook>,
}

impl<S: SampleSink + 'static> ReaderHandler for ReaderEvents<S> {
    fn keep(&self, data: &[u8]) -> Taken {
        match self.sink.decode(data) {
            Some(value) => Taken::Decoded(value),
            None => Taken::Bytes(data.to_vec()),
        }
    }

    fn sample(&self, taken: Taken, meta: &crate::ffi::bridge::SampleMeta) {
        match taken {
            Taken::Bytes(data) => self.sink.sample(data, meta),
            Taken::Decoded(value) => self.sink.decoded(value, meta),
            Taken::Lost => {}
        }
    }

    fn refused(&self, len: usize, meta: &crate::ffi::bridge::SampleMeta) {
        self.sink.refused(len, meta);
    }

    fn room(&self) -> usize {
        self.sink.room()
    }

    fn data_available(&self) {
        self.sink.data_available();
    }

    fn event(&self, event: &EndpointEvent) {
        self.matched.apply(event);
        if event.kind == EventKind::Matched {
            self.graph.changed();
        }
        if let Some(e) = reader_event(event) {
            self.hook.event(e);
        }
    }
}
