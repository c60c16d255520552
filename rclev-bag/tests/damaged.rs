//! Damaged and hostile bags, read: a chunk whose bytes do not match its CRC, a chunk index
//! pointing past the end of the file, a `metadata.yaml` listing one file 100,000 times or
//! made of YAML aliases. Each is a typed error naming what is wrong, or (the repeated file)
//! read once — never a panic, a bare system error, or a bag read many times over.

use std::collections::BTreeMap;
use std::io::{BufWriter, Write as _};
use std::path::{Path, PathBuf};

use rclev::interfaces::std_msgs::msg::String as Text;
use rclev::QoSProfile;
use rclev_bag::{BagReader, BagTopic, BagWriter, Error, WriterOptions, METADATA_FILE};

const T0: u64 = 1_765_000_000_000_000_000;

/// A marker no other bytes of the file hold, in the second message.
const MARKER: &[u8] = b"MARKER-OF-THE-SECOND-MESSAGE";

/// An MCAP file of three `/chatter` messages in one chunk, with chunk CRCs, no summary CRC
/// (so that a summary patched by a test is read as patched).
fn mcap_file(path: &Path, compression: Option<mcap::Compression>) {
    let mut w = mcap::WriteOptions::new()
        .profile("ros2")
        .compression(compression)
        .calculate_chunk_crcs(true)
        .calculate_summary_section_crc(false)
        .create(BufWriter::new(std::fs::File::create(path).unwrap()))
        .unwrap();
    let schema = w
        .add_schema("std_msgs/msg/String", "ros2msg", b"string data\n")
        .unwrap();
    let channel = w
        .add_channel(schema, "/chatter", "cdr", &BTreeMap::new())
        .unwrap();
    for (i, text) in [&b"first"[..], MARKER, b"third"].iter().enumerate() {
        let mut cdr = vec![0, 1, 0, 0];
        cdr.extend_from_slice(&(text.len() as u32 + 1).to_le_bytes());
        cdr.extend_from_slice(text);
        cdr.push(0);
        w.write_to_known_channel(
            &mcap::records::MessageHeader {
                channel_id: channel,
                sequence: i as u32,
                log_time: T0 + i as u64,
                publish_time: T0 + i as u64,
            },
            &cdr,
        )
        .unwrap();
    }
    w.finish().unwrap();
    w.into_inner().flush().unwrap();
}

fn texts(reader: &BagReader) -> Result<Vec<String>, Error> {
    reader
        .messages_of::<Text>("/chatter")?
        .map(|m| m.map(|m| m.message.data))
        .collect()
}

#[test]
fn a_chunk_that_fails_its_crc_is_refused_by_default_and_read_when_asked() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("crc.mcap");
    mcap_file(&path, None);
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bytes
        .windows(MARKER.len())
        .position(|w| w == MARKER)
        .unwrap();
    bytes[at] = b'm';
    std::fs::write(&path, &bytes).unwrap();

    let mut reader = BagReader::open(&path).unwrap();
    match texts(&reader) {
        Err(Error::CrcMismatch {
            chunk,
            stored,
            computed,
            ..
        }) => {
            assert!(chunk.starts_with("chunk 0 (at byte "), "{chunk}");
            assert_ne!(stored, computed);
        }
        other => panic!("a damaged chunk was read: {other:?}"),
    }
    reader.check_crcs(false);
    let read = texts(&reader).unwrap();
    assert_eq!(read[1], "mARKER-OF-THE-SECOND-MESSAGE");
}

#[test]
fn a_compressed_chunk_that_is_damaged_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("zstd.mcap");
    mcap_file(&path, Some(mcap::Compression::Zstd));
    let clean = std::fs::read(&path).unwrap();
    assert_eq!(texts(&BagReader::open(&path).unwrap()).unwrap().len(), 3);
    // Each byte of the compressed data in turn: every damage is an error of the bag's
    // (a CRC mismatch, a chunk that does not decompress, a record that does not parse),
    // never a panic, and never the wrong messages read as right.
    let summary_at = clean.len() - 8 - 20 - 9;
    let chunk_at = clean.windows(1).position(|w| w[0] == 0x06).unwrap();
    for at in chunk_at + 60..summary_at.min(chunk_at + 140) {
        let mut bytes = clean.clone();
        bytes[at] ^= 0x5a;
        std::fs::write(&path, &bytes).unwrap();
        let Ok(reader) = BagReader::open(&path) else {
            continue;
        };
        if let Ok(read) = texts(&reader) {
            assert_eq!(read.len(), 3, "byte {at}");
            assert_eq!(read[1].as_bytes(), MARKER, "byte {at}: damage read as data");
        }
    }
}

/// The offset of the first chunk index record's `chunk_start_offset` in an MCAP file: the
/// footer names the summary section, whose records are `[opcode][u64 length][body]`.
fn chunk_index_start_field(bytes: &[u8]) -> usize {
    let footer = bytes.len() - 8 - (1 + 8 + 20);
    let summary_start =
        u64::from_le_bytes(bytes[footer + 9..footer + 17].try_into().unwrap()) as usize;
    let mut at = summary_start;
    loop {
        let op = bytes[at];
        let len = u64::from_le_bytes(bytes[at + 1..at + 9].try_into().unwrap()) as usize;
        if op == 0x08 {
            // message_start_time, message_end_time, then chunk_start_offset.
            return at + 9 + 16;
        }
        at += 9 + len;
    }
}

#[test]
fn a_chunk_index_past_the_end_of_the_file_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("index.mcap");
    mcap_file(&path, None);
    let mut bytes = std::fs::read(&path).unwrap();
    let field = chunk_index_start_field(&bytes);
    let past = bytes.len() as u64 + 1_000_000;
    bytes[field..field + 8].copy_from_slice(&past.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let reader = BagReader::open(&path).unwrap();
    match texts(&reader) {
        Err(Error::Corrupt { reason, .. }) => {
            assert!(reason.contains("chunk 0 of the index"), "{reason}");
            assert!(reason.contains("past the end of the file"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

/// A closed bag of two messages, whose metadata.yaml is then rewritten by `edit`.
fn bag_with_metadata(dir: &Path, edit: impl FnOnce(String) -> String) -> PathBuf {
    let bag = dir.join("bag");
    let mut w = BagWriter::create(&bag, WriterOptions::default()).unwrap();
    let t = w
        .add_topic(BagTopic::of::<Text>("/chatter", QoSProfile::default()))
        .unwrap();
    for i in 0..2 {
        w.write(t, T0 + i, &Text { data: "x".into() }).unwrap();
    }
    w.finish().unwrap();
    let metadata = bag.join(METADATA_FILE);
    let text = std::fs::read_to_string(&metadata).unwrap();
    std::fs::write(&metadata, edit(text)).unwrap();
    bag
}

/// The defect: a metadata.yaml listing the same file 100,000 times made `bag play` publish a
/// 5-message bag 100,000 times over.
#[test]
fn a_file_listed_many_times_is_read_once() {
    let tmp = tempfile::tempdir().unwrap();
    let bag = bag_with_metadata(tmp.path(), |text| {
        let (head, tail) = text.split_once("  relative_file_paths:\n").unwrap();
        let (file_line, rest) = tail.split_once('\n').unwrap();
        let repeated = format!("{file_line}\n").repeat(100_000);
        format!("{head}  relative_file_paths:\n{repeated}{rest}")
    });
    let reader = BagReader::open(&bag).unwrap();
    assert_eq!(reader.files().len(), 1);
    assert_eq!(texts(&reader).unwrap().len(), 2);
}

/// The defect: YAML aliases in metadata.yaml ("billion laughs") grew the reader to its
/// address-space cap.
#[test]
fn yaml_aliases_in_metadata_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let bag = bag_with_metadata(tmp.path(), |text| {
        let mut bomb = String::from("x0: &x0 [lol]\n");
        for i in 1..=9 {
            let uses = vec![format!("*x{}", i - 1); 10].join(", ");
            bomb.push_str(&format!("x{i}: &x{i} [{uses}]\n"));
        }
        format!("{bomb}{text}")
    });
    match BagReader::open(&bag) {
        Err(Error::Metadata { reason, .. }) => assert!(reason.contains("anchor"), "{reason}"),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("a metadata.yaml of aliases was read"),
    }
}
