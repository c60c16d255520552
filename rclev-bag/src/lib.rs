//! rosbag2-compatible bags for rclev: record and replay ROS 2 data in the MCAP storage format
//! `ros2 bag` writes, without a ROS installation.
//!
//! A bag is a directory: MCAP files (`<bag>_0.mcap`, `<bag>_1.mcap` when split) of profile
//! `ros2` — one schema per type (`ros2msg`: the `.msg` text and its dependencies'), one
//! channel per topic (`cdr`, with the publishers' QoS and the type hash), the messages' CDR
//! bytes with their receive and publish times — and `metadata.yaml` (rosbag2 version 9).
//! Bags written here are read by `ros2 bag`, `rosbags`, `mcap-ros2-support` and Foxglove;
//! bags they write are read here.
//!
//! - [`BagWriter`] writes: topics added from a [`rclev::msg::Message`] type or any
//!   [`TypeInfo`](rclev::msg::TypeInfo), messages as values or as CDR bytes, split by size or
//!   duration, chunks optionally zstd-compressed.
//! - [`BagReader`] reads: the metadata, every message as bytes with its schema, or a topic's
//!   messages decoded as their type. A bag its recorder never closed is read up to its last
//!   complete chunk.
//!
//! `rclev bag record|play|info` (the rclev CLI) are built on these.

mod definition;
mod error;
mod metadata;
mod qos;
mod reader;
mod writer;
pub mod yaml;

pub use definition::{message_definition, SCHEMA_ENCODING};
pub use error::{Error, Result};
pub use metadata::{
    BagMetadata, FileInfo, TopicInfo, TopicMetadata, METADATA_FILE, METADATA_VERSION,
};
pub use qos::{profiles_from_yaml, profiles_to_yaml};
pub use reader::{BagMessage, BagReader, Channel, Incomplete, Messages, Schema, Stamped};
pub use writer::{BagTopic, BagWriter, Compression, TopicId, WriterOptions, DEFAULT_CHUNK_SIZE};
