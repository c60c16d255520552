//! BagWriter and BagReader together: round trips, splits, compression, a bag whose recorder
//! died, and malformed bags (errors, never panics).

use std::path::Path;
use std::time::Duration;

use rclev::interfaces::sensor_msgs::msg::Image;
use rclev::interfaces::std_msgs::msg::String as Text;
use rclev::QoSProfile;
use rclev_bag::{BagReader, BagTopic, BagWriter, Compression, Error, WriterOptions, METADATA_FILE};

const T0: u64 = 1_765_000_000_000_000_000;
const MS: u64 = 1_000_000;

fn image(i: u32, len: usize) -> Image {
    Image {
        height: 1,
        width: len as u32,
        encoding: "mono8".into(),
        step: len as u32,
        data: (0..len).map(|k| (k as u32 + i) as u8).collect(),
        ..Default::default()
    }
}

fn write_sample(dir: &Path, options: WriterOptions, n: u32) -> rclev_bag::BagMetadata {
    let mut bag = BagWriter::create(dir, options).unwrap();
    let chatter = bag
        .add_topic(BagTopic::of::<Text>("/chatter", QoSProfile::default()))
        .unwrap();
    let camera = bag
        .add_topic(BagTopic::of::<Image>("/camera", QoSProfile::sensor_data()))
        .unwrap();
    for i in 0..n {
        let t = T0 + u64::from(i) * 10 * MS;
        bag.write(
            chatter,
            t,
            &Text {
                data: format!("hello {i}"),
            },
        )
        .unwrap();
        bag.write(camera, t + MS, &image(i, 4096)).unwrap();
    }
    bag.finish().unwrap()
}

#[test]
fn typed_messages_round_trip_with_metadata() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("b");
    let written = write_sample(&dir, WriterOptions::default(), 50);
    assert_eq!(written.message_count, 100);
    assert_eq!(written.starting_time, T0);
    assert_eq!(written.duration, Duration::from_nanos(49 * 10 * MS + MS));
    assert!(dir.join(METADATA_FILE).is_file());
    assert!(dir.join("b_0.mcap").is_file());

    let bag = BagReader::open(&dir).unwrap();
    assert!(bag.has_metadata_file());
    assert!(bag.incomplete().is_empty());
    assert_eq!(bag.metadata(), &written);
    let chatter = bag.topic("/chatter").unwrap();
    assert_eq!(chatter.type_name, "std_msgs/msg/String");
    assert_eq!(chatter.offered_qos_profiles, vec![QoSProfile::default()]);
    assert!(chatter.type_description_hash.starts_with("RIHS01_"));
    let texts: Vec<_> = bag
        .messages_of::<Text>("/chatter")
        .unwrap()
        .map(|m| m.unwrap())
        .collect();
    assert_eq!(texts.len(), 50);
    for (i, m) in texts.iter().enumerate() {
        assert_eq!(m.message.data, format!("hello {i}"));
        assert_eq!(m.log_time, T0 + i as u64 * 10 * MS);
        assert_eq!(m.publish_time, m.log_time);
    }
    let images: Vec<_> = bag
        .messages_of::<Image>("/camera")
        .unwrap()
        .map(|m| m.unwrap().message)
        .collect();
    assert_eq!(images, (0..50).map(|i| image(i, 4096)).collect::<Vec<_>>());
    // Raw messages carry their schema.
    let first = bag.messages().next().unwrap().unwrap();
    let schema = first.channel.schema.as_ref().unwrap();
    assert_eq!(schema.encoding, "ros2msg");
    assert_eq!(schema.name, "std_msgs/msg/String");
    assert!(schema.data.contains("string data"), "{}", schema.data);
}

#[test]
fn the_same_bag_reads_without_its_metadata_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("b");
    let written = write_sample(&dir, WriterOptions::default(), 20);
    std::fs::remove_file(dir.join(METADATA_FILE)).unwrap();
    let bag = BagReader::open(&dir).unwrap();
    assert!(!bag.has_metadata_file());
    assert!(bag.incomplete().is_empty());
    let m = bag.metadata();
    assert_eq!(m.message_count, written.message_count);
    assert_eq!(m.duration, written.duration);
    assert_eq!(m.starting_time, written.starting_time);
    assert_eq!(m.topics, written.topics);
    // A single file opens too.
    let file = BagReader::open(dir.join("b_0.mcap")).unwrap();
    assert_eq!(file.metadata().message_count, 40);
}

#[test]
fn splits_by_size_and_duration_keep_every_message_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let by_size = tmp.path().join("size");
    let options = WriterOptions {
        max_file_size: Some(64 * 1024),
        chunk_size: 16 * 1024,
        ..Default::default()
    };
    let m = write_sample(&by_size, options, 60);
    assert!(m.files.len() >= 3, "{:?}", m.files);
    assert_eq!(m.files.iter().map(|f| f.message_count).sum::<u64>(), 120);
    assert_eq!(m.relative_file_paths[1], "size_1.mcap");
    let bag = BagReader::open(&by_size).unwrap();
    let times: Vec<u64> = bag.messages().map(|m| m.unwrap().log_time).collect();
    assert_eq!(times.len(), 120);
    assert!(times.windows(2).all(|w| w[0] <= w[1]));
    // Every file carries every topic's channel, as rosbag2 writes them.
    for f in bag.files() {
        let one = BagReader::open(f).unwrap();
        assert!(one.metadata().message_count > 0);
    }

    let by_time = tmp.path().join("time");
    let options = WriterOptions {
        max_file_duration: Some(Duration::from_millis(100)),
        ..Default::default()
    };
    let m = write_sample(&by_time, options, 30);
    // 30 × 10 ms of messages in files of 100 ms.
    assert_eq!(m.files.len(), 3, "{:?}", m.files);
    assert!(m
        .files
        .iter()
        .all(|f| f.duration < Duration::from_millis(100)));
}

#[test]
fn zstd_chunks_read_back_and_are_smaller() {
    let tmp = tempfile::tempdir().unwrap();
    let plain = tmp.path().join("plain");
    let packed = tmp.path().join("packed");
    write_sample(&plain, WriterOptions::default(), 40);
    let options = WriterOptions {
        compression: Compression::Zstd,
        ..Default::default()
    };
    write_sample(&packed, options, 40);
    let size = |p: &Path| std::fs::metadata(p).unwrap().len();
    assert!(size(&packed.join("packed_0.mcap")) < size(&plain.join("plain_0.mcap")) / 2);
    let bag = BagReader::open(&packed).unwrap();
    let images: Vec<_> = bag
        .messages_of::<Image>("/camera")
        .unwrap()
        .map(|m| m.unwrap().message)
        .collect();
    assert_eq!(images, (0..40).map(|i| image(i, 4096)).collect::<Vec<_>>());
}

#[test]
fn a_bag_cut_short_reads_up_to_its_last_complete_chunk() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cut");
    let options = WriterOptions {
        chunk_size: 8 * 1024,
        ..Default::default()
    };
    write_sample(&dir, options, 40);
    // What a recorder killed mid-write leaves: no metadata.yaml, a file cut mid-chunk.
    std::fs::remove_file(dir.join(METADATA_FILE)).unwrap();
    let file = dir.join("cut_0.mcap");
    let len = std::fs::metadata(&file).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
    f.set_len(len / 2).unwrap();
    drop(f);

    let bag = BagReader::open(&dir).unwrap();
    let incomplete = bag.incomplete();
    assert_eq!(incomplete.len(), 1);
    let read = incomplete[0].messages;
    assert!(read > 0 && read < 80, "{read}");
    assert_eq!(bag.metadata().message_count, read);
    let texts: Vec<_> = bag
        .messages_of::<Text>("/chatter")
        .unwrap()
        .map(|m| m.unwrap().message.data)
        .collect();
    // A prefix of what was written, in order.
    for (i, t) in texts.iter().enumerate() {
        assert_eq!(t, &format!("hello {i}"));
    }
    assert_eq!(bag.messages().count() as u64, read);
}

#[test]
fn a_writer_dropped_unfinished_still_closes_its_bag() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("dropped");
    {
        let mut bag = BagWriter::create(&dir, WriterOptions::default()).unwrap();
        let t = bag
            .add_topic(BagTopic::of::<Text>("/t", QoSProfile::default()))
            .unwrap();
        bag.write(t, T0, &Text { data: "x".into() }).unwrap();
    }
    let bag = BagReader::open(&dir).unwrap();
    assert!(bag.has_metadata_file());
    assert_eq!(bag.metadata().message_count, 1);
}

#[test]
fn misuse_and_malformed_bags_are_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("b");
    write_sample(&dir, WriterOptions::default(), 3);
    // Never overwrite a bag.
    assert!(matches!(
        BagWriter::create(&dir, WriterOptions::default()),
        Err(Error::Exists(_))
    ));
    let bag = BagReader::open(&dir).unwrap();
    assert!(matches!(
        bag.messages_of::<Image>("/chatter"),
        Err(Error::TypeMismatch { .. })
    ));
    assert!(matches!(
        bag.messages_of::<Text>("/nothing"),
        Err(Error::UnknownTopic(_))
    ));

    // A topic re-added with another type; a message of the wrong type.
    let mut w = BagWriter::create(tmp.path().join("w"), WriterOptions::default()).unwrap();
    let t = w
        .add_topic(BagTopic::of::<Text>("/t", QoSProfile::default()))
        .unwrap();
    assert!(w
        .add_topic(BagTopic::of::<Image>("/t", QoSProfile::default()))
        .is_err());
    assert!(matches!(
        w.write(t, T0, &image(0, 1)),
        Err(Error::TypeMismatch { .. })
    ));
    w.finish().unwrap();

    // Garbage where the bag should be.
    let junk = tmp.path().join("junk");
    std::fs::create_dir(&junk).unwrap();
    assert!(matches!(BagReader::open(&junk), Err(Error::NotABag(_))));
    std::fs::write(junk.join("junk_0.mcap"), b"not an mcap file at all").unwrap();
    let r = BagReader::open(&junk).unwrap();
    assert_eq!(r.metadata().message_count, 0);
    assert_eq!(r.incomplete().len(), 1);
    std::fs::write(junk.join(METADATA_FILE), "rosbag2_bagfile_information: [").unwrap();
    assert!(matches!(
        BagReader::open(&junk),
        Err(Error::Metadata { .. })
    ));
    std::fs::write(
        junk.join(METADATA_FILE),
        "rosbag2_bagfile_information:\n  version: 9\n  storage_identifier: mcap\n  \
         relative_file_paths:\n    - ../../etc/passwd\n",
    )
    .unwrap();
    assert!(matches!(
        BagReader::open(&junk),
        Err(Error::Metadata { .. })
    ));
    // A message whose bytes are not its type's encoding.
    let bad = tmp.path().join("bad");
    let mut w = BagWriter::create(&bad, WriterOptions::default()).unwrap();
    let t = w
        .add_topic(BagTopic::of::<Image>("/i", QoSProfile::default()))
        .unwrap();
    w.write_raw(t, T0, T0, &[0, 1, 0, 0, 0xff, 0xff, 0xff, 0x7f])
        .unwrap();
    w.finish().unwrap();
    let r = BagReader::open(&bad).unwrap();
    let decoded: Vec<_> = r.messages_of::<Image>("/i").unwrap().collect();
    assert!(matches!(decoded[..], [Err(Error::Cdr { .. })]));
}

/// A recorder drains topic after topic, so a file's messages are not in log-time order; a
/// closed file is read in log-time order (from its index), as rosbag2 reads it.
#[test]
fn messages_come_in_log_time_order() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("order");
    let mut bag = BagWriter::create(&dir, WriterOptions::default()).unwrap();
    let a = bag
        .add_topic(BagTopic::of::<Text>("/a", QoSProfile::default()))
        .unwrap();
    let b = bag
        .add_topic(BagTopic::of::<Text>("/b", QoSProfile::default()))
        .unwrap();
    for (topic, t) in [(a, 10), (a, 20), (b, 5), (b, 15)] {
        bag.write(
            topic,
            T0 + t,
            &Text {
                data: t.to_string(),
            },
        )
        .unwrap();
    }
    bag.finish().unwrap();
    let times: Vec<u64> = BagReader::open(&dir)
        .unwrap()
        .messages()
        .map(|m| m.unwrap().log_time - T0)
        .collect();
    assert_eq!(times, [5, 10, 15, 20]);
}
