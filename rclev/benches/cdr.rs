//! CDR encode and decode: rclev's generated (de)serializers against the path they replaced.
//!
//! Two messages: a `sensor_msgs/PointCloud2` carrying 1 MiB of `data` (large: one `uint8[]`)
//! and a `nav_msgs/Path` of 1,000 poses (deep: a sequence of nested structs with a string
//! each). The **baseline** is rclev's old path, rebuilt here as it was: serde-derived structs
//! mirroring the same ROS types (plain `Vec<u8>` fields, so `uint8[]` goes through serde one
//! element at a time), `cdr_encoding::to_vec::<_, LittleEndian>` behind a copied 4-byte
//! header, and `cdr_encoding::from_bytes` after the header. Before anything is timed, both
//! paths must write the same bytes for the same values and read them back to equal values.
//!
//! Run with `cargo bench -p rclev --bench cdr`. It prints divan's tables (per operation, with
//! throughput), then a ratio table measured interleaved: each round times the baseline and
//! rclev back to back, alternating which goes first, so noise on a shared machine hits both;
//! the medians over the rounds and their ratio are printed. `RCLEV_CDR_BENCH=ratios` runs
//! only the ratio table, `RCLEV_CDR_BENCH=divan` only divan.

use std::hint::black_box;
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use divan::counter::BytesCount;
use divan::Bencher;
use rclev::interfaces::builtin_interfaces::msg::Time;
use rclev::interfaces::geometry_msgs::msg::{Point, Pose, PoseStamped, Quaternion};
use rclev::interfaces::nav_msgs::msg::Path;
use rclev::interfaces::sensor_msgs::msg::{PointCloud2, PointField};
use rclev::interfaces::std_msgs::msg::Header;
use rclev::msg::{from_cdr, to_cdr, to_cdr_into};

/// The old path: serde mirrors of the benchmarked types and rclev's old `to_cdr`/`from_cdr`.
mod baseline {
    use serde::{de::DeserializeOwned, Deserialize, Serialize};

    const CDR_LE_HEADER: [u8; 4] = [0x00, 0x01, 0x00, 0x00];

    /// rclev's old `to_cdr`: the header, then the body serialized on its own and appended.
    pub fn to_cdr<T: Serialize>(msg: &T) -> Result<Vec<u8>, String> {
        let mut out = CDR_LE_HEADER.to_vec();
        let body =
            cdr_encoding::to_vec::<T, byteorder::LittleEndian>(msg).map_err(|e| e.to_string())?;
        out.extend_from_slice(&body);
        Ok(out)
    }

    /// rclev's old `from_cdr`: split off the header, pick the byte order, deserialize.
    pub fn from_cdr<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
        let Some((header, body)) = bytes.split_first_chunk::<4>() else {
            return Err("buffer shorter than the CDR header".into());
        };
        let decoded = match [header[0], header[1]] {
            [0x00, 0x01] => cdr_encoding::from_bytes::<T, byteorder::LittleEndian>(body),
            [0x00, 0x00] => cdr_encoding::from_bytes::<T, byteorder::BigEndian>(body),
            _ => return Err("unsupported CDR encapsulation".into()),
        };
        decoded.map(|(v, _)| v).map_err(|e| e.to_string())
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct Time {
        pub sec: i32,
        pub nanosec: u32,
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct Header {
        pub stamp: Time,
        pub frame_id: String,
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct PointField {
        pub name: String,
        pub offset: u32,
        pub datatype: u8,
        pub count: u32,
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct PointCloud2 {
        pub header: Header,
        pub height: u32,
        pub width: u32,
        pub fields: Vec<PointField>,
        pub is_bigendian: bool,
        pub point_step: u32,
        pub row_step: u32,
        /// Plain `Vec<u8>`, as rclev had it: serde writes and reads it byte by byte.
        pub data: Vec<u8>,
        pub is_dense: bool,
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct Point {
        pub x: f64,
        pub y: f64,
        pub z: f64,
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct Quaternion {
        pub x: f64,
        pub y: f64,
        pub z: f64,
        pub w: f64,
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct Pose {
        pub position: Point,
        pub orientation: Quaternion,
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct PoseStamped {
        pub header: Header,
        pub pose: Pose,
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    pub struct Path {
        pub header: Header,
        pub poses: Vec<PoseStamped>,
    }
}

// The same values in both representations.

impl From<&Time> for baseline::Time {
    fn from(t: &Time) -> Self {
        Self {
            sec: t.sec,
            nanosec: t.nanosec,
        }
    }
}

impl From<&Header> for baseline::Header {
    fn from(h: &Header) -> Self {
        Self {
            stamp: (&h.stamp).into(),
            frame_id: h.frame_id.clone(),
        }
    }
}

impl From<&PointCloud2> for baseline::PointCloud2 {
    fn from(m: &PointCloud2) -> Self {
        Self {
            header: (&m.header).into(),
            height: m.height,
            width: m.width,
            fields: m
                .fields
                .iter()
                .map(|f| baseline::PointField {
                    name: f.name.clone(),
                    offset: f.offset,
                    datatype: f.datatype,
                    count: f.count,
                })
                .collect(),
            is_bigendian: m.is_bigendian,
            point_step: m.point_step,
            row_step: m.row_step,
            data: m.data.clone(),
            is_dense: m.is_dense,
        }
    }
}

impl From<&Path> for baseline::Path {
    fn from(m: &Path) -> Self {
        Self {
            header: (&m.header).into(),
            poses: m
                .poses
                .iter()
                .map(|p| baseline::PoseStamped {
                    header: (&p.header).into(),
                    pose: baseline::Pose {
                        position: baseline::Point {
                            x: p.pose.position.x,
                            y: p.pose.position.y,
                            z: p.pose.position.z,
                        },
                        orientation: baseline::Quaternion {
                            x: p.pose.orientation.x,
                            y: p.pose.orientation.y,
                            z: p.pose.orientation.z,
                            w: p.pose.orientation.w,
                        },
                    },
                })
                .collect(),
        }
    }
}

/// Points in the cloud: 65,536 × 16 bytes = 1 MiB of `data`.
const CLOUD_POINTS: u32 = 65_536;
/// Poses in the path.
const PATH_POSES: usize = 1_000;

/// An XYZI cloud (four `FLOAT32` fields) with 1 MiB of patterned, non-zero data.
fn point_cloud() -> PointCloud2 {
    let field = |name: &str, offset| PointField {
        name: name.into(),
        offset,
        datatype: PointField::FLOAT32,
        count: 1,
    };
    let point_step = 16;
    PointCloud2 {
        header: Header {
            stamp: Time {
                sec: 1_700_000_000,
                nanosec: 123_456_789,
            },
            frame_id: "lidar".into(),
        },
        height: 1,
        width: CLOUD_POINTS,
        fields: vec![
            field("x", 0),
            field("y", 4),
            field("z", 8),
            field("intensity", 12),
        ],
        is_bigendian: false,
        point_step,
        row_step: point_step * CLOUD_POINTS,
        data: (0..point_step * CLOUD_POINTS)
            .map(|i| (i.wrapping_mul(31) ^ (i >> 8)) as u8)
            .collect(),
        is_dense: true,
    }
}

/// A path of 1,000 stamped poses along a curve, each with its own header.
fn path() -> Path {
    let header = |i: usize| Header {
        stamp: Time {
            sec: 1_700_000_000 + i as i32,
            nanosec: (i as u32) * 1_000,
        },
        frame_id: "map".into(),
    };
    Path {
        header: header(0),
        poses: (0..PATH_POSES)
            .map(|i| {
                let t = i as f64 * 0.01;
                let yaw = t.sin();
                PoseStamped {
                    header: header(i),
                    pose: Pose {
                        position: Point {
                            x: t,
                            y: t.cos(),
                            z: 0.5,
                        },
                        orientation: Quaternion {
                            x: 0.0,
                            y: 0.0,
                            z: (yaw / 2.0).sin(),
                            w: (yaw / 2.0).cos(),
                        },
                    },
                }
            })
            .collect(),
    }
}

/// One benchmarked message in both representations, and its encoding.
struct Case<M, B> {
    msg: M,
    mirror: B,
    bytes: Vec<u8>,
}

impl<M, B> Case<M, B>
where
    M: rclev::msg::Message + PartialEq,
    B: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
    for<'a> B: From<&'a M>,
{
    /// Builds the case and checks that the baseline mirrors rclev: same bytes, and each side
    /// reads those bytes back to the value it started from.
    fn new(msg: M) -> Self {
        let mirror = B::from(&msg);
        let bytes = to_cdr(&msg).expect("rclev encodes");
        let old = baseline::to_cdr(&mirror).expect("baseline encodes");
        assert!(bytes == old, "the baseline writes different bytes");
        assert!(from_cdr::<M>(&bytes).expect("rclev decodes") == msg);
        assert_eq!(
            baseline::from_cdr::<B>(&bytes).expect("baseline decodes"),
            mirror
        );
        Case { msg, mirror, bytes }
    }

    fn bytes(&self) -> BytesCount {
        BytesCount::of_slice(&self.bytes)
    }
}

static CLOUD: LazyLock<Case<PointCloud2, baseline::PointCloud2>> =
    LazyLock::new(|| Case::new(point_cloud()));
static PATH: LazyLock<Case<Path, baseline::Path>> = LazyLock::new(|| Case::new(path()));

/// The divan benchmarks for one case: a module per message.
macro_rules! benches {
    ($module:ident, $case:ident, $msg:ty, $mirror:ty) => {
        mod $module {
            use super::*;

            #[divan::bench]
            fn encode_baseline(b: Bencher) {
                let case = &*$case;
                b.counter(case.bytes())
                    .bench(|| baseline::to_cdr(black_box(&case.mirror)).unwrap());
            }

            #[divan::bench]
            fn encode_rclev(b: Bencher) {
                let case = &*$case;
                b.counter(case.bytes())
                    .bench(|| to_cdr(black_box(&case.msg)).unwrap());
            }

            /// What a transport does: one buffer per writer, reused for every message.
            #[divan::bench]
            fn encode_rclev_into(b: Bencher) {
                let case = &*$case;
                let mut buf = Vec::new();
                b.counter(case.bytes()).bench_local(|| {
                    buf.clear();
                    to_cdr_into(black_box(&case.msg), &mut buf).unwrap();
                    black_box(&buf);
                });
            }

            #[divan::bench]
            fn decode_baseline(b: Bencher) {
                let case = &*$case;
                b.counter(case.bytes())
                    .bench(|| baseline::from_cdr::<$mirror>(black_box(&case.bytes)).unwrap());
            }

            #[divan::bench]
            fn decode_rclev(b: Bencher) {
                let case = &*$case;
                b.counter(case.bytes())
                    .bench(|| from_cdr::<$msg>(black_box(&case.bytes)).unwrap());
            }
        }
    };
}

benches!(point_cloud2_1mib, CLOUD, PointCloud2, baseline::PointCloud2);
benches!(path_1000_poses, PATH, Path, baseline::Path);

/// Rounds of the interleaved comparison (odd, so the median is one round).
const ROUNDS: usize = 101;
/// Each timed batch runs long enough for the clock's resolution not to matter.
const MIN_BATCH: Duration = Duration::from_micros(200);

/// Times `f` over `n` calls; what it returns is dropped inside the timing.
fn time_batch<T>(n: u32, f: &mut impl FnMut() -> T) -> Duration {
    let start = Instant::now();
    for _ in 0..n {
        black_box(f());
    }
    start.elapsed()
}

/// Median nanoseconds per call of `baseline` and of `rclev`, measured in alternating
/// batches (ABBA order) so that a stall of the machine lands on both about equally.
fn interleaved<A, B>(mut baseline: impl FnMut() -> A, mut rclev: impl FnMut() -> B) -> (f64, f64) {
    // Warm up both, then size the batch on the faster of the two.
    let once = time_batch(3, &mut baseline).min(time_batch(3, &mut rclev)) / 3;
    let n = (MIN_BATCH.as_nanos() / once.as_nanos().max(1)).clamp(1, 10_000) as u32;
    let mut a = Vec::with_capacity(ROUNDS);
    let mut b = Vec::with_capacity(ROUNDS);
    for round in 0..ROUNDS {
        if round % 2 == 0 {
            a.push(time_batch(n, &mut baseline));
            b.push(time_batch(n, &mut rclev));
        } else {
            b.push(time_batch(n, &mut rclev));
            a.push(time_batch(n, &mut baseline));
        }
    }
    let median = |v: &mut Vec<Duration>| {
        v.sort_unstable();
        v[v.len() / 2].as_nanos() as f64 / f64::from(n)
    };
    (median(&mut a), median(&mut b))
}

/// Prints one row of the ratio table.
fn row(name: &str, bytes: usize, (base, rclev): (f64, f64)) {
    let mib_s = |ns: f64| bytes as f64 / ns * 1e9 / (1024.0 * 1024.0);
    println!(
        "{name:<30} {base:>12.0} {rclev:>12.0} {:>8.2} {:>11.0} {:>11.0}",
        base / rclev,
        mib_s(base),
        mib_s(rclev),
    );
}

/// The ratio table: baseline and rclev measured interleaved in this run.
fn ratios() {
    println!();
    println!("interleaved: {ROUNDS} rounds, baseline and rclev alternating; median ns per call");
    println!(
        "encoded sizes: PointCloud2 {} B, Path {} B",
        CLOUD.bytes.len(),
        PATH.bytes.len()
    );
    println!(
        "{:<30} {:>12} {:>12} {:>8} {:>11} {:>11}",
        "case", "baseline ns", "rclev ns", "ratio", "base MiB/s", "rclev MiB/s"
    );
    let (cloud, path) = (&*CLOUD, &*PATH);
    // For `to_cdr_into`: one buffer, cleared and refilled, as a transport's writer does.
    let mut buf = Vec::new();
    row(
        "PointCloud2 1 MiB  encode",
        cloud.bytes.len(),
        interleaved(
            || baseline::to_cdr(black_box(&cloud.mirror)).unwrap(),
            || to_cdr(black_box(&cloud.msg)).unwrap(),
        ),
    );
    row(
        "PointCloud2 1 MiB  encode_into",
        cloud.bytes.len(),
        interleaved(
            || baseline::to_cdr(black_box(&cloud.mirror)).unwrap(),
            || {
                buf.clear();
                to_cdr_into(black_box(&cloud.msg), &mut buf).unwrap();
                buf.len()
            },
        ),
    );
    row(
        "PointCloud2 1 MiB  decode",
        cloud.bytes.len(),
        interleaved(
            || baseline::from_cdr::<baseline::PointCloud2>(black_box(&cloud.bytes)).unwrap(),
            || from_cdr::<PointCloud2>(black_box(&cloud.bytes)).unwrap(),
        ),
    );
    row(
        "Path 1000 poses    encode",
        path.bytes.len(),
        interleaved(
            || baseline::to_cdr(black_box(&path.mirror)).unwrap(),
            || to_cdr(black_box(&path.msg)).unwrap(),
        ),
    );
    row(
        "Path 1000 poses    encode_into",
        path.bytes.len(),
        interleaved(
            || baseline::to_cdr(black_box(&path.mirror)).unwrap(),
            || {
                buf.clear();
                to_cdr_into(black_box(&path.msg), &mut buf).unwrap();
                buf.len()
            },
        ),
    );
    row(
        "Path 1000 poses    decode",
        path.bytes.len(),
        interleaved(
            || baseline::from_cdr::<baseline::Path>(black_box(&path.bytes)).unwrap(),
            || from_cdr::<Path>(black_box(&path.bytes)).unwrap(),
        ),
    );
    println!("ratio = baseline / rclev (above 1: rclev is faster)");
}

fn main() {
    // The faithfulness checks run first, in every mode (`cargo test --benches` included).
    LazyLock::force(&CLOUD);
    LazyLock::force(&PATH);
    let mode = std::env::var("RCLEV_CDR_BENCH").unwrap_or_default();
    if mode != "ratios" {
        divan::main();
    }
    // `cargo bench` passes `--bench`; test runs of the bench target skip the long table.
    if mode != "divan" && std::env::args().any(|a| a == "--bench") {
        ratios();
    }
}
