//! rclev-bag against the Python oracles (`tests/oracle.py`, run in the venv `.ci/oracles`
//! installs): a bag rclev writes is read by `rosbags` and by `mcap-ros2-support` with every
//! message equal, and a bag `rosbags` writes is read by rclev with every message equal.

use std::path::{Path, PathBuf};
use std::process::Command;

use rclev::interfaces::builtin_interfaces::msg::Time;
use rclev::interfaces::geometry_msgs::msg::{Point, Pose, PoseStamped, Quaternion};
use rclev::interfaces::sensor_msgs::msg::Image;
use rclev::interfaces::std_msgs::msg::{Header, String as Text};
use rclev::msg::Message;
use rclev::QoSProfile;
use rclev_bag::{BagReader, BagTopic, BagWriter, Compression, WriterOptions};
use serde_json::Value;

const T0: u64 = 1_765_000_000_000_000_000;
const MS: u64 = 1_000_000;

fn python() -> PathBuf {
    let venv = std::env::var_os("RCLEV_ORACLE_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/oracle-venv"));
    let python = venv.join("bin/python");
    assert!(
        python.exists(),
        "no oracle venv at {} (run `bash .ci/oracles`)",
        venv.display()
    );
    python
}

fn oracle(mode: &str, bag: &Path) -> String {
    let out = Command::new(python())
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oracle.py"))
        .arg(mode)
        .arg(bag)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "oracle.py {mode} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn pose(i: u32) -> PoseStamped {
    PoseStamped {
        header: Header {
            stamp: Time {
                sec: i as i32,
                nanosec: 5,
            },
            frame_id: "map".into(),
        },
        pose: Pose {
            position: Point {
                x: f64::from(i),
                y: -0.5,
                z: 1e-9,
            },
            orientation: Quaternion {
                x: 0.0,
                y: 0.0,
                z: 0.0,
                w: 1.0,
            },
        },
    }
}

fn image(i: u32) -> Image {
    Image {
        height: 2,
        width: 3,
        encoding: "rgb8".into(),
        step: 9,
        data: (0..18).map(|k| (k + i) as u8).collect(),
        ..Default::default()
    }
}

fn check_read_by_oracles(compression: Compression) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("rclev_bag");
    let mut bag = BagWriter::create(
        &dir,
        WriterOptions {
            compression,
            chunk_size: 4096,
            ..Default::default()
        },
    )
    .unwrap();
    let chatter = bag
        .add_topic(BagTopic::of::<Text>("/chatter", QoSProfile::default()))
        .unwrap();
    let poses = bag
        .add_topic(BagTopic::of::<PoseStamped>(
            "/pose",
            QoSProfile::default().transient_local(),
        ))
        .unwrap();
    let camera = bag
        .add_topic(BagTopic::of::<Image>("/camera", QoSProfile::sensor_data()))
        .unwrap();
    const N: u32 = 30;
    for i in 0..N {
        let t = T0 + u64::from(i) * 20 * MS;
        bag.write(
            chatter,
            t,
            &Text {
                data: format!("hello {i} ünï"),
            },
        )
        .unwrap();
        bag.write(poses, t + MS, &pose(i)).unwrap();
        bag.write(camera, t + 2 * MS, &image(i)).unwrap();
    }
    bag.finish().unwrap();

    let out = oracle("read", &dir);
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for via in ["rosbags", "mcap"] {
        let of = |topic: &str| -> Vec<&Value> {
            lines
                .iter()
                .filter(|l| l["via"] == via && l["topic"] == topic)
                .collect()
        };
        let (texts, poses, images) = (of("/chatter"), of("/pose"), of("/camera"));
        assert_eq!(
            (texts.len(), poses.len(), images.len()),
            (N as usize, N as usize, N as usize),
            "{via}: {out}"
        );
        for i in 0..N as usize {
            let t = T0 + i as u64 * 20 * MS;
            assert_eq!(texts[i]["t"], t, "{via}");
            assert_eq!(texts[i]["msg"]["data"], format!("hello {i} ünï"), "{via}");
            assert_eq!(texts[i]["type"], "std_msgs/msg/String");
            let p = &poses[i]["msg"];
            let want = pose(i as u32);
            assert_eq!(p["header"]["frame_id"], "map", "{via}");
            assert_eq!(p["header"]["stamp"]["sec"], i, "{via}");
            assert_eq!(p["header"]["stamp"]["nanosec"], 5, "{via}");
            assert_eq!(p["pose"]["position"]["x"], want.pose.position.x, "{via}");
            assert_eq!(p["pose"]["position"]["y"], -0.5, "{via}");
            assert_eq!(p["pose"]["position"]["z"], 1e-9, "{via}");
            assert_eq!(p["pose"]["orientation"]["w"], 1.0, "{via}");
            let m = &images[i]["msg"];
            let data: Vec<u8> = m["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap() as u8)
                .collect();
            assert_eq!(data, image(i as u32).data, "{via}");
            assert_eq!(m["encoding"], "rgb8", "{via}");
            assert_eq!(m["width"], 3, "{via}");
        }
    }
}

#[test]
fn rosbags_and_mcap_ros2_read_what_rclev_writes() {
    check_read_by_oracles(Compression::None);
}

#[test]
fn rosbags_and_mcap_ros2_read_zstd_chunks() {
    check_read_by_oracles(Compression::Zstd);
}

#[test]
fn rclev_reads_what_rosbags_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("rosbags_bag");
    oracle("write", &dir);
    let bag = BagReader::open(&dir).unwrap();
    assert!(bag.has_metadata_file());
    let m = bag.metadata();
    assert_eq!(m.message_count, 40);
    assert_eq!(m.starting_time, T0);
    let topic = bag.topic("/camera").unwrap();
    assert_eq!(topic.type_name, "sensor_msgs/msg/Image");
    assert_eq!(
        topic.type_description_hash,
        rclev::interfaces::sensor_msgs::msg::Image::TYPE_HASH.to_string()
    );
    let texts: Vec<_> = bag
        .messages_of::<Text>("/chatter")
        .unwrap()
        .map(|m| m.unwrap())
        .collect();
    assert_eq!(texts.len(), 20);
    let images: Vec<_> = bag
        .messages_of::<Image>("/camera")
        .unwrap()
        .map(|m| m.unwrap())
        .collect();
    for i in 0..20u32 {
        let t = T0 + u64::from(i) * 50 * MS;
        assert_eq!(texts[i as usize].message.data, format!("hello {i}"));
        assert_eq!(texts[i as usize].log_time, t);
        let img = &images[i as usize];
        assert_eq!(img.log_time, t + 10 * MS);
        assert_eq!(img.message.header.frame_id, "cam");
        assert_eq!(img.message.header.stamp.sec, i as i32);
        assert_eq!(
            img.message.data,
            (0..18).map(|k| (k + i) as u8).collect::<Vec<_>>()
        );
    }
    // Its schemas are rosbags' own definitions, which rclev reads as text.
    let first = bag.messages().next().unwrap().unwrap();
    assert_eq!(first.channel.schema.as_ref().unwrap().encoding, "ros2msg");
}
