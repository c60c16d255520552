//! A message in process: its payload and its meta (publisher, sequence number, stamps,
//! lifespan end), and the message info a subscription reads from them.

use std::time::{Duration, SystemTime};

use crate::transport::{Gid, MessageInfo, Payload};

/// A message on its way from a publisher to the queues and its history.
#[derive(Clone)]
pub(super) struct Item {
    pub(super) payload: Payload,
    pub(super) meta: Meta,
}

/// What a message carries besides its payload. A subscription's queue keeps it only while
/// someone needs it (see `subscription.rs`): the common subscription, one that neither reads
/// message infos nor hears a publisher with a lifespan, queues bare 16-byte payloads, since
/// the queue's memory traffic under its lock is the cost of a publish.
#[derive(Clone, Copy)]
pub(super) struct Meta {
    /// The publisher's GID, by its [`Gid::local_counter`]: every in-process GID is local.
    pub(super) publisher: u64,
    pub(super) sequence: u64,
    /// Source timestamp, nanoseconds since the Unix epoch; 0 when nobody read it at publish.
    pub(super) source_ns: i64,
    /// When the publisher's lifespan ends it, in [`monotonic_ns`]; 0 without a lifespan.
    pub(super) expires_ns: u64,
}

/// [`monotonic_nanos`](crate::clock::monotonic_nanos), never 0: lifespans are measured on the
/// monotonic clock, never on the settable system clock.
pub(super) fn monotonic_ns() -> u64 {
    // Never negative; at least 1: 0 means "no lifespan".
    (crate::clock::monotonic_nanos() as u64).max(1)
}

impl Meta {
    /// For messages queued before their subscription began keeping metas: they came from
    /// publishers without a lifespan (a publisher with one turns keeping on before it matches).
    pub(super) const UNKNOWN: Meta = Meta {
        publisher: 0,
        sequence: 0,
        source_ns: 0,
        expires_ns: 0,
    };

    pub(super) fn expired(&self, now: &mut Option<u64>) -> bool {
        self.expires_ns != 0 && self.expires_ns <= *now.get_or_insert_with(monotonic_ns)
    }
}

/// The info a subscription gets with a message; `reception` is its number there. Without a
/// meta (the subscription does not read infos) only the reception number is known.
pub(super) fn message_info(meta: Option<&Meta>, reception: u64) -> MessageInfo {
    let meta = meta.unwrap_or(&Meta::UNKNOWN);
    // Delivery is synchronous: sent and received are the same moment.
    // Unstamped (nobody read info at publish): the epoch, without the division.
    let stamp = match meta.source_ns {
        0 => SystemTime::UNIX_EPOCH,
        ns => SystemTime::UNIX_EPOCH + Duration::from_nanos(ns.max(0) as u64),
    };
    MessageInfo {
        source_timestamp: stamp,
        received_timestamp: stamp,
        publisher_gid: match meta.publisher {
            0 => Gid::default(),
            local => Gid::local(local),
        },
        publication_sequence_number: meta.sequence,
        reception_sequence_number: reception,
        from_intra_process: true,
    }
}
