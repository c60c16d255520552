//! A bag's `metadata.yaml` (`rosbag2_bagfile_information`, version 9): what the bag holds —
//! topics with their types, QoS and type hashes, message counts, time span, files — written
//! when a bag is closed and read by `ros2 bag info|play`, `rosbags` and rclev.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use rclev::QoSProfile;
use yaml_rust2::Yaml;

use crate::error::{Error, Result};
use crate::qos;

/// The `metadata.yaml` version rclev writes (rosbag2 in Jazzy).
pub const METADATA_VERSION: u32 = 9;

/// The file name of a bag's metadata.
pub const METADATA_FILE: &str = "metadata.yaml";

/// One topic of a bag: what rosbag2 calls its `topic_metadata`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicMetadata {
    /// Fully qualified topic name.
    pub name: String,
    /// `pkg/msg/Type`.
    pub type_name: String,
    /// How messages are serialized: `cdr`.
    pub serialization_format: String,
    /// The QoS profiles of the publishers the topic was recorded from.
    pub offered_qos_profiles: Vec<QoSProfile>,
    /// The type's RIHS01 hash (`RIHS01_…`), empty when unknown.
    pub type_description_hash: String,
}

/// A topic and how many of its messages the bag holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicInfo {
    /// The topic.
    pub metadata: TopicMetadata,
    /// Its messages in the bag.
    pub message_count: u64,
}

/// One storage file of a bag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileInfo {
    /// The file name, relative to the bag directory.
    pub path: String,
    /// The first message's log time, ns since the epoch (0 when empty).
    pub starting_time: u64,
    /// From the first message's log time to the last's.
    pub duration: Duration,
    /// Messages in the file.
    pub message_count: u64,
}

/// What `metadata.yaml` says about a bag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BagMetadata {
    /// The metadata version (rclev writes [`METADATA_VERSION`]).
    pub version: u32,
    /// The storage plugin: `mcap`.
    pub storage_identifier: String,
    /// From the first message's log time to the last's.
    pub duration: Duration,
    /// The first message's log time, ns since the epoch.
    pub starting_time: u64,
    /// Messages in the bag.
    pub message_count: u64,
    /// The topics, in the order they were added.
    pub topics: Vec<TopicInfo>,
    /// rosbag2's file-level compression (`zstd`), empty when none. rclev compresses MCAP
    /// chunks instead, which the storage does and the metadata does not name (as rosbag2's
    /// `zstd_*` storage presets).
    pub compression_format: String,
    /// `FILE` or `MESSAGE` with `compression_format`, empty when none.
    pub compression_mode: String,
    /// The storage files, relative to the bag directory.
    pub relative_file_paths: Vec<String>,
    /// The storage files with their message counts and time spans.
    pub files: Vec<FileInfo>,
    /// Free-form key/value pairs.
    pub custom_data: BTreeMap<String, String>,
    /// The ROS distribution the recorder was built for.
    pub ros_distro: String,
}

impl Default for BagMetadata {
    fn default() -> Self {
        Self {
            version: METADATA_VERSION,
            storage_identifier: "mcap".into(),
            duration: Duration::ZERO,
            starting_time: 0,
            message_count: 0,
            topics: Vec::new(),
            compression_format: String::new(),
            compression_mode: String::new(),
            relative_file_paths: Vec::new(),
            files: Vec::new(),
            custom_data: BTreeMap::new(),
            ros_distro: "jazzy".into(),
        }
    }
}

/// A YAML scalar for `s`: plain when that reads back as the same string, else double-quoted.
fn scalar(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_/~.-".contains(c))
        && !s.starts_with(['-', '.', '~'])
        && !matches!(
            s,
            "true" | "false" | "null" | "True" | "False" | "Null" | "TRUE" | "FALSE" | "NULL"
        )
        && s.parse::<f64>().is_err();
    if plain {
        return s.to_string();
    }
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl BagMetadata {
    /// The metadata as `metadata.yaml` text, laid out as rosbag2 writes it.
    pub fn to_yaml(&self) -> String {
        let mut o = String::from("rosbag2_bagfile_information:\n");
        let _ = writeln!(o, "  version: {}", self.version);
        let _ = writeln!(
            o,
            "  storage_identifier: {}",
            scalar(&self.storage_identifier)
        );
        let _ = writeln!(o, "  duration:\n    nanoseconds: {}", nanos(self.duration));
        let _ = writeln!(
            o,
            "  starting_time:\n    nanoseconds_since_epoch: {}",
            self.starting_time
        );
        let _ = writeln!(o, "  message_count: {}", self.message_count);
        if self.topics.is_empty() {
            o.push_str("  topics_with_message_count: []\n");
        } else {
            o.push_str("  topics_with_message_count:\n");
        }
        for t in &self.topics {
            let m = &t.metadata;
            let _ = writeln!(o, "    - topic_metadata:");
            let _ = writeln!(o, "        name: {}", scalar(&m.name));
            let _ = writeln!(o, "        type: {}", scalar(&m.type_name));
            let _ = writeln!(
                o,
                "        serialization_format: {}",
                scalar(&m.serialization_format)
            );
            if m.offered_qos_profiles.is_empty() {
                o.push_str("        offered_qos_profiles: []\n");
            } else {
                o.push_str("        offered_qos_profiles:\n");
                qos::write_profiles(&mut o, "          ", &m.offered_qos_profiles);
            }
            let _ = writeln!(
                o,
                "        type_description_hash: {}",
                if m.type_description_hash.is_empty() {
                    "\"\"".to_string()
                } else {
                    scalar(&m.type_description_hash)
                }
            );
            let _ = writeln!(o, "      message_count: {}", t.message_count);
        }
        let quoted = |s: &str| {
            if s.is_empty() {
                "\"\"".to_string()
            } else {
                scalar(s)
            }
        };
        let _ = writeln!(
            o,
            "  compression_format: {}",
            quoted(&self.compression_format)
        );
        let _ = writeln!(o, "  compression_mode: {}", quoted(&self.compression_mode));
        o.push_str("  relative_file_paths:\n");
        for p in &self.relative_file_paths {
            let _ = writeln!(o, "    - {}", scalar(p));
        }
        o.push_str("  files:\n");
        for f in &self.files {
            let _ = writeln!(o, "    - path: {}", scalar(&f.path));
            let _ = writeln!(
                o,
                "      starting_time:\n        nanoseconds_since_epoch: {}",
                f.starting_time
            );
            let _ = writeln!(
                o,
                "      duration:\n        nanoseconds: {}",
                nanos(f.duration)
            );
            let _ = writeln!(o, "      message_count: {}", f.message_count);
        }
        if self.custom_data.is_empty() {
            o.push_str("  custom_data: ~\n");
        } else {
            o.push_str("  custom_data:\n");
            for (k, v) in &self.custom_data {
                let _ = writeln!(o, "    {}: {}", scalar(k), quoted(v));
            }
        }
        let _ = writeln!(o, "  ros_distro: {}", scalar(&self.ros_distro));
        o
    }

    /// The metadata as rosbag2 serializes it into an MCAP file's `rosbag2` metadata record:
    /// the map under `rosbag2_bagfile_information`, one level less indented.
    pub fn to_serialized(&self) -> String {
        let yaml = self.to_yaml();
        let mut out = String::with_capacity(yaml.len());
        for line in yaml.lines().skip(1) {
            out.push_str(line.strip_prefix("  ").unwrap_or(line));
            out.push('\n');
        }
        out
    }

    /// Reads `metadata.yaml` text; `path` names the file in errors.
    pub fn from_yaml(text: &str, path: &Path) -> Result<Self> {
        let bad = |reason: String| Error::Metadata {
            path: path.to_path_buf(),
            reason,
        };
        let docs = crate::yaml::load(text).map_err(|e| bad(e.to_string()))?;
        let doc = docs.first().ok_or_else(|| bad("empty".into()))?;
        let info = &doc["rosbag2_bagfile_information"];
        if info.is_badvalue() {
            return Err(bad("no rosbag2_bagfile_information".into()));
        }
        let count = |node: &Yaml, what: &str| -> Result<u64> {
            match node {
                Yaml::Integer(n) if *n >= 0 => Ok(*n as u64),
                Yaml::BadValue | Yaml::Null => Ok(0),
                other => Err(bad(format!(
                    "{what} is not a count: it is {}",
                    crate::yaml::kind(other)
                ))),
            }
        };
        let string = |node: &Yaml| -> String {
            match node {
                Yaml::String(s) | Yaml::Real(s) => s.clone(),
                Yaml::Integer(n) => n.to_string(),
                Yaml::Boolean(b) => b.to_string(),
                _ => String::new(),
            }
        };
        let version = count(&info["version"], "version")?;
        let version = u32::try_from(version).map_err(|_| bad("version out of range".into()))?;
        let mut topics = Vec::new();
        if let Yaml::Array(items) = &info["topics_with_message_count"] {
            for item in items {
                let m = &item["topic_metadata"];
                let name = string(&m["name"]);
                if name.is_empty() {
                    return Err(bad("a topic without a name".into()));
                }
                let offered_qos_profiles = qos::profiles_from_node(&m["offered_qos_profiles"])
                    .map_err(|e| bad(format!("topic {name}: {e}")))?;
                topics.push(TopicInfo {
                    metadata: TopicMetadata {
                        type_name: string(&m["type"]),
                        serialization_format: string(&m["serialization_format"]),
                        offered_qos_profiles,
                        type_description_hash: string(&m["type_description_hash"]),
                        name,
                    },
                    message_count: count(&item["message_count"], "message_count")?,
                });
            }
        }
        let mut files = Vec::new();
        if let Yaml::Array(items) = &info["files"] {
            for f in items {
                files.push(FileInfo {
                    path: string(&f["path"]),
                    starting_time: count(
                        &f["starting_time"]["nanoseconds_since_epoch"],
                        "starting_time",
                    )?,
                    duration: Duration::from_nanos(count(
                        &f["duration"]["nanoseconds"],
                        "duration",
                    )?),
                    message_count: count(&f["message_count"], "message_count")?,
                });
            }
        }
        let relative_file_paths = match &info["relative_file_paths"] {
            Yaml::Array(items) => items.iter().map(string).collect(),
            _ => Vec::new(),
        };
        let mut custom_data = BTreeMap::new();
        if let Yaml::Hash(h) = &info["custom_data"] {
            for (k, v) in h {
                custom_data.insert(string(k), string(v));
            }
        }
        Ok(Self {
            version,
            storage_identifier: string(&info["storage_identifier"]),
            duration: Duration::from_nanos(count(&info["duration"]["nanoseconds"], "duration")?),
            starting_time: count(
                &info["starting_time"]["nanoseconds_since_epoch"],
                "starting_time",
            )?,
            message_count: count(&info["message_count"], "message_count")?,
            topics,
            compression_format: string(&info["compression_format"]),
            compression_mode: string(&info["compression_mode"]),
            relative_file_paths,
            files,
            custom_data,
            ros_distro: string(&info["ros_distro"]),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> BagMetadata {
        BagMetadata {
            duration: Duration::from_nanos(1_500_000_000),
            starting_time: 1_765_000_000_123_456_789,
            message_count: 3,
            topics: vec![TopicInfo {
                metadata: TopicMetadata {
                    name: "/chatter".into(),
                    type_name: "std_msgs/msg/String".into(),
                    serialization_format: "cdr".into(),
                    offered_qos_profiles: vec![QoSProfile::default().transient_local()],
                    type_description_hash:
                        "RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18"
                            .into(),
                },
                message_count: 3,
            }],
            relative_file_paths: vec!["b_0.mcap".into()],
            files: vec![FileInfo {
                path: "b_0.mcap".into(),
                starting_time: 1_765_000_000_123_456_789,
                duration: Duration::from_nanos(1_500_000_000),
                message_count: 3,
            }],
            custom_data: [("who".to_string(), "a: b".to_string())].into(),
            ..BagMetadata::default()
        }
    }

    #[test]
    fn metadata_round_trips() {
        let m = sample();
        let text = m.to_yaml();
        assert_eq!(
            BagMetadata::from_yaml(&text, Path::new("m")).unwrap(),
            m,
            "{text}"
        );
    }

    #[test]
    fn the_serialized_form_is_the_map_without_its_root() {
        let m = sample();
        let text = format!(
            "rosbag2_bagfile_information:\n{}",
            m.to_serialized()
                .lines()
                .map(|l| format!("  {l}\n"))
                .collect::<String>()
        );
        assert_eq!(BagMetadata::from_yaml(&text, Path::new("m")).unwrap(), m);
    }

    #[test]
    fn odd_strings_are_quoted() {
        for s in ["", "true", "1.5", "a: b", "-x", "\"q\"\n"] {
            let text = format!("k: {}\n", scalar(s));
            let doc = &yaml_rust2::YamlLoader::load_from_str(&text).unwrap()[0];
            assert_eq!(doc["k"].as_str(), Some(s), "{text}");
        }
    }

    #[test]
    fn malformed_metadata_is_an_error() {
        for text in [
            "",
            "a: 1",
            "rosbag2_bagfile_information:\n  message_count: -1\n",
            "[: x",
        ] {
            assert!(
                BagMetadata::from_yaml(text, Path::new("m")).is_err(),
                "{text}"
            );
        }
    }
}
