//! `ros_discovery_info`: which node each DDS endpoint belongs to.
//!
//! DDS discovery tells every participant about every reader and writer, but nothing about ROS
//! nodes. ROS 2 adds them with one keyless topic, `ros_discovery_info`, on which each
//! participant publishes its whole state — its GUID and, per node, the name, the namespace and
//! the GIDs of the node's readers and writers (`rmw_dds_common/msg/ParticipantEntitiesInfo`) —
//! again after every change (rmw_dds_common's `context.cpp`). `ros2 node list` lists exactly
//! these nodes, and `ros2 topic info -v` / `ros2 param` find an endpoint's node through them.
//!
//! The `Gid` in that message is 16 bytes since Iron and 24 in Humble (the DDS GUID followed
//! by 8 zeros), under the same type name: the size cannot be negotiated, so it is an option
//! ([`GidSize`]) when publishing, and recognized from the sample's length when reading.

use rclev::msg::{CdrReader, CdrWriter, Message};
use rclev::transport::{Gid, NodeName};

/// The DDS topic (created without the `rt/` prefix, as rmw does).
pub(crate) const TOPIC: &str = "ros_discovery_info";

/// The length bound of the name and namespace strings in `NodeEntitiesInfo.msg`.
const NAME_BOUND: usize = 256;

/// How many bytes a GID takes in `ros_discovery_info` (`rmw_dds_common/msg/Gid`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GidSize {
    /// 16 bytes: Iron, Jazzy, Kilted, Rolling.
    #[default]
    Bytes16,
    /// 24 bytes: Humble (the 16-byte GUID, then 8 zeros).
    Bytes24,
}

impl GidSize {
    fn len(self) -> usize {
        match self {
            GidSize::Bytes16 => 16,
            GidSize::Bytes24 => 24,
        }
    }

    /// The USER_DATA of the graph endpoints: Jazzy's rmw announces the type hash of
    /// `ParticipantEntitiesInfo` there; Humble had no type hashes (and its type differs).
    pub(crate) fn user_data(self) -> Vec<u8> {
        use rclev::interfaces::rmw_dds_common::msg::ParticipantEntitiesInfo;
        match self {
            GidSize::Bytes16 => {
                crate::names::endpoint_user_data(None, &ParticipantEntitiesInfo::TYPE_HASH)
            }
            GidSize::Bytes24 => Vec::new(),
        }
    }
}

/// One node of a participant, with the GIDs of its DDS readers and writers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NodeEntities {
    pub node: NodeName,
    pub readers: Vec<Gid>,
    pub writers: Vec<Gid>,
}

/// A participant's whole `ros_discovery_info` state.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct ParticipantEntities {
    /// The participant's GUID.
    pub gid: Gid,
    pub nodes: Vec<NodeEntities>,
}

/// Why a `ros_discovery_info` sample could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EntitiesError(pub String);

impl std::fmt::Display for EntitiesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn cdr_error(e: rclev::msg::CdrError) -> EntitiesError {
    EntitiesError(e.to_string())
}

fn write_gid(w: &mut CdrWriter<'_>, gid: &Gid, size: GidSize) {
    w.write_array(&gid.0);
    if size == GidSize::Bytes24 {
        w.write_array(&[0u8; 8]);
    }
}

fn write_gids(w: &mut CdrWriter<'_>, gids: &[Gid], size: GidSize) -> Result<(), EntitiesError> {
    w.write_len(gids.len(), None).map_err(cdr_error)?;
    for gid in gids {
        write_gid(w, gid, size);
    }
    Ok(())
}

/// The sample (encapsulation header included) that announces `state` with GIDs of `size`.
/// Names longer than the message's 256-character bound are an error: peers would fail to
/// read the whole sample, and so lose every node of this participant.
pub(crate) fn encode(state: &ParticipantEntities, size: GidSize) -> Result<Vec<u8>, EntitiesError> {
    let mut buf = vec![0x00, 0x01, 0x00, 0x00]; // CDR_LE, no options
    let mut w = CdrWriter::new(&mut buf);
    write_gid(&mut w, &state.gid, size);
    w.write_len(state.nodes.len(), None).map_err(cdr_error)?;
    for n in &state.nodes {
        w.write_string(&n.node.namespace, Some(NAME_BOUND))
            .map_err(cdr_error)?;
        w.write_string(&n.node.name, Some(NAME_BOUND))
            .map_err(cdr_error)?;
        write_gids(&mut w, &n.readers, size)?;
        write_gids(&mut w, &n.writers, size)?;
    }
    Ok(buf)
}

fn read_gid(r: &mut CdrReader<'_>, size: GidSize) -> Result<Gid, rclev::msg::CdrError> {
    let gid = Gid(r.read_array::<u8, 16>()?);
    if size == GidSize::Bytes24 {
        r.read_array::<u8, 8>()?;
    }
    Ok(gid)
}

fn read_gids(r: &mut CdrReader<'_>, size: GidSize) -> Result<Vec<Gid>, rclev::msg::CdrError> {
    let len = r.read_len(None, size.len())?;
    (0..len).map(|_| read_gid(r, size)).collect()
}

fn decode_as(bytes: &[u8], size: GidSize) -> Result<ParticipantEntities, rclev::msg::CdrError> {
    let mut r = CdrReader::from_encapsulated(bytes)?;
    let gid = read_gid(&mut r, size)?;
    // Every node takes at least 16 bytes (two string lengths, two sequence lengths).
    let count = r.read_len(None, 16)?;
    let mut nodes = Vec::with_capacity(count);
    for _ in 0..count {
        let namespace = r.read_string(Some(NAME_BOUND))?;
        let name = r.read_string(Some(NAME_BOUND))?;
        nodes.push(NodeEntities {
            node: NodeName { name, namespace },
            readers: read_gids(&mut r, size)?,
            writers: read_gids(&mut r, size)?,
        });
    }
    // A sample is padded to a multiple of 4 at most; more left over means another layout.
    if r.remaining() >= 4 {
        return Err(rclev::msg::CdrError::Encapsulation {
            detail: format!("{} bytes left over", r.remaining()),
        });
    }
    Ok(ParticipantEntities { gid, nodes })
}

/// Reads a peer's sample, with 16-byte GIDs (Iron and later) or 24-byte ones (Humble): the
/// one that accounts for the whole sample. A Humble GID read as 16 bytes leaves its 8 zero
/// bytes to be read as the node count (0) and then too much left over; a 16-byte one read
/// as 24 swallows the node count.
pub(crate) fn decode(bytes: &[u8]) -> Result<ParticipantEntities, EntitiesError> {
    decode_as(bytes, GidSize::Bytes16)
        .or_else(|first| decode_as(bytes, GidSize::Bytes24).map_err(|_| first))
        .map_err(|e| EntitiesError(format!("not a ros_discovery_info sample: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rclev::interfaces::rmw_dds_common::msg as rmw;

    fn state() -> ParticipantEntities {
        ParticipantEntities {
            gid: Gid([7; 16]),
            nodes: vec![
                NodeEntities {
                    node: NodeName {
                        name: "talker".into(),
                        namespace: "/".into(),
                    },
                    readers: vec![Gid([1; 16])],
                    writers: vec![Gid([2; 16]), Gid([3; 16])],
                },
                NodeEntities {
                    node: NodeName {
                        name: "n".into(),
                        namespace: "/robot1".into(),
                    },
                    readers: vec![],
                    writers: vec![],
                },
            ],
        }
    }

    #[test]
    fn sixteen_byte_samples_are_what_the_generated_jazzy_type_encodes() {
        let s = state();
        let generated = rmw::ParticipantEntitiesInfo {
            gid: rmw::Gid { data: s.gid.0 },
            node_entities_info_seq: s
                .nodes
                .iter()
                .map(|n| rmw::NodeEntitiesInfo {
                    node_namespace: n.node.namespace.clone(),
                    node_name: n.node.name.clone(),
                    reader_gid_seq: n.readers.iter().map(|g| rmw::Gid { data: g.0 }).collect(),
                    writer_gid_seq: n.writers.iter().map(|g| rmw::Gid { data: g.0 }).collect(),
                })
                .collect(),
        };
        let bytes = encode(&s, GidSize::Bytes16).unwrap();
        assert_eq!(bytes, rclev::msg::to_cdr(&generated).unwrap());
        assert_eq!(decode(&bytes).unwrap(), s);
        // The hash Jazzy's rmw puts in the graph endpoints' USER_DATA.
        assert_eq!(
            rmw::ParticipantEntitiesInfo::TYPE_HASH.to_string(),
            "RIHS01_91a0593bacdcc50ea9bdcf849a938b128412cc1ea821245c663bcd26f83c295e"
        );
    }

    #[test]
    fn humble_samples_are_recognized_by_their_length() {
        let s = state();
        let humble = encode(&s, GidSize::Bytes24).unwrap();
        // The participant GID and the node's three: 8 more bytes each.
        assert_eq!(
            humble.len(),
            encode(&s, GidSize::Bytes16).unwrap().len() + 8 * 4
        );
        assert_eq!(&humble[4 + 16..4 + 24], &[0; 8]);
        assert_eq!(decode(&humble).unwrap(), s);
        let empty = ParticipantEntities::default();
        assert_eq!(
            decode(&encode(&empty, GidSize::Bytes24).unwrap()).unwrap(),
            empty
        );
        assert_eq!(
            decode(&encode(&empty, GidSize::Bytes16).unwrap()).unwrap(),
            empty
        );
    }

    #[test]
    fn garbage_and_overlong_names_are_errors_not_panics() {
        let bytes = encode(&state(), GidSize::Bytes16).unwrap();
        for cut in 0..bytes.len() - 3 {
            assert!(decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut lying = bytes.clone();
        lying[4 + 16..4 + 20].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode(&lying).is_err());
        let mut long = state();
        long.nodes[0].node.name = "x".repeat(257);
        assert!(encode(&long, GidSize::Bytes16).is_err());
    }
}
