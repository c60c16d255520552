//! Identities on the wire: endpoint GIDs, request ids, and what a subscription learns about
//! each message it takes.

use std::fmt;
use std::time::SystemTime;

/// A 16-byte global identifier of an endpoint, as ROS 2 gives every publisher, subscription,
/// service and client (`rmw_gid_t`; over DDS, the endpoint's GUID).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Gid(pub [u8; 16]);

impl Gid {
    /// A GID from a per-process random prefix (8 bytes, fixed for the process) and a counter,
    /// for transports that have no identities of their own: unique within the process, and
    /// unlikely to collide with another process's.
    pub fn next_local() -> Gid {
        use std::sync::atomic::{AtomicU64, Ordering};
        static COUNTER: AtomicU64 = AtomicU64::new(1);
        Gid::local(COUNTER.fetch_add(1, Ordering::Relaxed))
    }

    /// The local GID numbered `counter` (see [`Gid::next_local`]).
    pub(crate) fn local(counter: u64) -> Gid {
        use std::sync::OnceLock;
        static PREFIX: OnceLock<[u8; 8]> = OnceLock::new();
        let prefix = PREFIX.get_or_init(|| {
            let random = uuid::Uuid::new_v4();
            let mut p = [0u8; 8];
            p.copy_from_slice(&random.as_bytes()[..8]);
            p
        });
        let mut gid = [0u8; 16];
        gid[..8].copy_from_slice(prefix);
        gid[8..].copy_from_slice(&counter.to_be_bytes());
        Gid(gid)
    }

    /// The counter of a GID made by [`Gid::next_local`]: with [`Gid::local`], 8 bytes stand
    /// for the 16 (the prefix is the same for the whole process).
    pub(crate) fn local_counter(&self) -> u64 {
        let mut counter = [0u8; 8];
        counter.copy_from_slice(&self.0[8..]);
        u64::from_be_bytes(counter)
    }
}

impl fmt::Display for Gid {
    /// Dot-separated hex bytes, as `ros2 topic info -v` prints GIDs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, b) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(".")?;
            }
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Gid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Gid({self})")
    }
}

/// Identifies a request so its response finds the client that sent it (`rmw_request_id_t`):
/// the client's GID and its sequence number for the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RequestId {
    /// The client (over DDS, the GUID of its request writer).
    pub writer_guid: Gid,
    /// The client's sequence number for the request, from 1.
    pub sequence_number: i64,
}

/// What a subscription learns about a message it takes (rclcpp's `MessageInfo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageInfo {
    /// When the publisher published it (its clock).
    pub source_timestamp: SystemTime,
    /// When it reached this subscription.
    pub received_timestamp: SystemTime,
    /// The publisher.
    pub publisher_gid: Gid,
    /// 1-based sequence number of the message at its publisher.
    pub publication_sequence_number: u64,
    /// 1-based sequence number of the message at this subscription (0 if the transport does
    /// not count).
    pub reception_sequence_number: u64,
    /// Whether it came from a publisher in the same process, without serialization.
    pub from_intra_process: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_gids_are_unique_and_print_like_ros() {
        let (a, b) = (Gid::next_local(), Gid::next_local());
        assert_ne!(a, b);
        assert_eq!(a.0[..8], b.0[..8]);
        assert_eq!(a.to_string().len(), 16 * 3 - 1);
        assert_eq!(Gid::local(a.local_counter()), a);
    }
}
