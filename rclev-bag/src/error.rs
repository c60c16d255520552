//! What can go wrong with a bag.

use std::path::{Path, PathBuf};

/// An error reading or writing a bag.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file of the bag could not be read, written or created.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The MCAP container is malformed, or the MCAP library refused an operation.
    #[error("{path}: MCAP: {source}")]
    Mcap {
        /// The MCAP file.
        path: PathBuf,
        /// What the MCAP library said.
        source: mcap::McapError,
    },
    /// `metadata.yaml` (or a channel's metadata) is not what rosbag2 writes.
    #[error("{path}: {reason}")]
    Metadata {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The bag directory already exists (a recording never overwrites one).
    #[error("{0}: the bag directory already exists")]
    Exists(PathBuf),
    /// A path that is neither a bag directory nor an MCAP file.
    #[error("{0}: not a bag (no metadata.yaml and no .mcap file)")]
    NotABag(PathBuf),
    /// A topic the bag does not hold, or that was not added to the writer.
    #[error("unknown topic {0}")]
    UnknownTopic(String),
    /// A topic asked for as one type holds another.
    #[error("topic {topic} holds {found}, not {expected}")]
    TypeMismatch {
        /// The topic.
        topic: String,
        /// The type asked for.
        expected: String,
        /// The type the bag records.
        found: String,
    },
    /// A topic added twice with different types, or an invalid argument.
    #[error("{0}")]
    Invalid(String),
    /// A message's CDR bytes do not decode as its type (or a message did not encode).
    #[error("{topic}: {source}")]
    Cdr {
        /// The topic.
        topic: String,
        /// What the decoder said.
        source: rclev::Error,
    },
    /// A storage file is damaged: an index that points past the end of the file, a chunk
    /// that does not decompress. Nothing of the damaged part is read.
    #[error("{path}: {reason}")]
    Corrupt {
        /// The MCAP file.
        path: PathBuf,
        /// Which record, and what is wrong with it.
        reason: String,
    },
    /// A chunk's data does not match the CRC its writer stored: it is damaged, and none of
    /// it is read (see [`BagReader::check_crcs`](crate::BagReader::check_crcs)).
    #[error("{path}: {chunk} fails its CRC check (stored {stored:08x}, computed {computed:08x}): its data is damaged")]
    CrcMismatch {
        /// The MCAP file.
        path: PathBuf,
        /// Which chunk: `chunk 3 (at byte 1234)` when the file's index says, else `a chunk`.
        chunk: String,
        /// The CRC the writer stored.
        stored: u32,
        /// The CRC of the data as read.
        computed: u32,
    },
    /// The writer hit an error before and is no longer usable.
    #[error("the bag writer failed earlier and is closed")]
    Poisoned,
}

/// A bag result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

// The two below borrow the path and copy it only when there is an error: the writer calls
// `mcap` once per message, and a path copied up front was a heap allocation and free per
// message, which made BagWriter 0.67× the mcap crate's throughput at 16 B (`rclev bench bag`).

pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

pub(crate) fn mcap(path: &Path) -> impl FnOnce(mcap::McapError) -> Error + '_ {
    move |source| match source {
        // The linear reader's own check of a chunk (a file read without its index).
        mcap::McapError::BadChunkCrc { saved, calculated } => Error::CrcMismatch {
            path: path.to_path_buf(),
            chunk: "a chunk".into(),
            stored: saved,
            computed: calculated,
        },
        source => Error::Mcap {
            path: path.to_path_buf(),
            source,
        },
    }
}
