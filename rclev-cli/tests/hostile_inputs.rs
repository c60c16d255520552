//! Types and files from outside, as an attacker would hand them to the tools: bags whose
//! schemas define types 10,000 and 100,000 deep, "diamonds" and cycles, and installed interface
//! packages of the same shapes, read by `rclev bag play` and `rclev topic echo|pub` over DDS
//! and Zenoh. Each must end with an error that names what is wrong (a limit of
//! `rclev::msg::TypeLimits`, a cycle), never abort, hang or grow without bound. Each test runs
//! in a network namespace of its own and is killed past [`LIMIT`] (built with
//! `--features dds,zenoh`).

#![cfg(all(feature = "dds", feature = "zenoh"))]

#[path = "../../rclev-dds/tests/common/mod.rs"]
mod common;
mod support;

use std::any::{Any, TypeId};
use std::collections::{BTreeMap, HashMap};
use std::io::{BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rclev::interfaces::type_description_interfaces::{msg as td, srv};
use rclev::msg::{
    from_cdr, to_cdr, IndividualTypeDescription, TypeDescription, TypeHash, TypeInfo,
};
use rclev::transport::{
    NodeName, Payload, ReadyHook, ServiceEndpoint, ServiceTypes, TopicEndpoint, TypeSupport,
};
use rclev::QoSProfile;

use common::in_netns;
use support::{interrupted_at, KilledOnDrop, Moment};

/// How long one command may take before it is killed (and the test fails).
const LIMIT: Duration = Duration::from_secs(60);

/// A fresh directory, removed when dropped (a failing test's too), for test `name` (a random name:
/// each test runs in a PID namespace of its own, where every test process has the same pid).
fn scratch(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("rclev-hostile-{name}-"))
        .tempdir()
        .unwrap()
}

/// Runs `rclev ARGS` with `env` to its end, killed past [`LIMIT`]; its output.
fn rclev(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rclev"));
    c.args(args)
        .env_remove("AMENT_PREFIX_PATH")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let deadline = Instant::now() + LIMIT;
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "rclev {args:?} did not end within {LIMIT:?}; stderr:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    eprintln!(
        "rclev {args:?}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).to_string()
}

/// The shapes a hostile type takes. Type `i` is `hostile_msgs/T{i}`; `T0` is the root.
#[derive(Clone, Copy, Debug)]
enum Shape {
    /// `T{i}` holds a `T{i+1}`, `n` types.
    Chain(usize),
    /// `T{i}` holds two `T{i+1}`, `n` types: 2^n paths.
    Diamond(usize),
    /// A chain of `n` whose last type holds `T0`.
    Cycle(usize),
}

impl Shape {
    fn len(self) -> usize {
        match self {
            Shape::Chain(n) | Shape::Diamond(n) | Shape::Cycle(n) => n,
        }
    }

    /// The `.msg` text of type `i`.
    fn text(self, i: usize) -> String {
        let n = self.len();
        let next = match self {
            Shape::Cycle(_) if i + 1 == n => Some(0),
            _ if i + 1 < n => Some(i + 1),
            _ => None,
        };
        match (self, next) {
            (Shape::Diamond(_), Some(j)) => format!("T{j} left\nT{j} right\n"),
            (_, Some(j)) => format!("T{j} next\nuint8 level\n"),
            (_, None) => "float64 leaf\n".to_string(),
        }
    }

    /// The type as a bag's `ros2msg` schema defines it.
    fn schema(self) -> String {
        let mut out = self.text(0);
        for i in 1..self.len() {
            out.push_str(&format!("\n{}\nMSG: hostile_msgs/T{i}\n", "=".repeat(80)));
            out.push_str(&self.text(i));
        }
        out
    }

    /// An installed package `hostile_msgs` under `prefix` (`share/hostile_msgs/msg/T*.msg`).
    fn install(self, prefix: &Path) {
        let dir = prefix.join("share/hostile_msgs");
        std::fs::create_dir_all(dir.join("msg")).unwrap();
        std::fs::write(
            dir.join("package.xml"),
            "<package format=\"3\"><name>hostile_msgs</name></package>",
        )
        .unwrap();
        for i in 0..self.len() {
            std::fs::write(dir.join(format!("msg/T{i}.msg")), self.text(i)).unwrap();
        }
    }
}

/// A one-file bag (`.mcap`) with topic `/hostile` of type `hostile_msgs/msg/T0` as `shape`
/// defines it, and `payloads` on it.
fn bag(dir: &Path, shape: Shape, payloads: &[Vec<u8>]) -> PathBuf {
    bag_with(dir, shape, payloads, &BTreeMap::new())
}

/// [`bag`], with `metadata` for the `/hostile` channel.
fn bag_with(
    dir: &Path,
    shape: Shape,
    payloads: &[Vec<u8>],
    metadata: &BTreeMap<String, String>,
) -> PathBuf {
    let path = dir.join(format!("{shape:?}.mcap").replace(['(', ')'], "_"));
    let mut w = mcap::WriteOptions::new()
        .profile("ros2")
        .create(BufWriter::new(std::fs::File::create(&path).unwrap()))
        .unwrap();
    let schema = w
        .add_schema("hostile_msgs/msg/T0", "ros2msg", shape.schema().as_bytes())
        .unwrap();
    let channel = w.add_channel(schema, "/hostile", "cdr", metadata).unwrap();
    // A topic of a type rclev ships beside it, with one message: what a skipped topic must
    // not keep from being played.
    let string = w
        .add_schema("std_msgs/msg/String", "ros2msg", b"string data\n")
        .unwrap();
    let chatter = w
        .add_channel(string, "/chatter", "cdr", &BTreeMap::new())
        .unwrap();
    w.write_to_known_channel(
        &mcap::records::MessageHeader {
            channel_id: chatter,
            sequence: 0,
            log_time: 1_765_000_000_000_000_000,
            publish_time: 1_765_000_000_000_000_000,
        },
        &cdr(&[3, 0, 0, 0, b'h', b'i', 0]),
    )
    .unwrap();
    for (i, payload) in payloads.iter().enumerate() {
        let t = 1_765_000_000_000_000_000 + i as u64 * 10_000_000;
        w.write_to_known_channel(
            &mcap::records::MessageHeader {
                channel_id: channel,
                sequence: i as u32,
                log_time: t,
                publish_time: t,
            },
            payload,
        )
        .unwrap();
    }
    w.finish().unwrap();
    w.into_inner().flush().unwrap();
    path
}

/// A CDR payload: the encapsulation header and `body`.
fn cdr(body: &[u8]) -> Vec<u8> {
    [&[0u8, 1, 0, 0][..], body].concat()
}

/// The defects: `bag play` of a type 100,000 deep aborted with a stack overflow, and of one
/// 10,000 deep grew to 6 GB over minutes, ignoring Ctrl-C; a cycle's error was one 89 KB line.
/// Each topic of such a type is now skipped with the limit it is over, and the rest played.
#[test]
fn bag_play_skips_types_over_the_limits_and_names_them() {
    in_netns(
        "bag_play_skips_types_over_the_limits_and_names_them",
        LIMIT * 4,
        || {
            let scratch = scratch("bag-play-types");
            let dir = scratch.path();
            for (shape, said) in [
                (Shape::Chain(100_000), "TypeLimits::max_types"),
                (Shape::Chain(10_000), "TypeLimits::max_types"),
                (Shape::Chain(100), "TypeLimits::max_depth"),
                (Shape::Cycle(5_000), "contains itself"),
            ] {
                let file = bag(dir, shape, &[cdr(&[0; 16])]);
                let out = rclev(&["bag", "play", file.to_str().unwrap()], &[]);
                let err = stderr(&out);
                assert!(out.status.success(), "{shape:?}: {err}");
                let warning = err
                    .lines()
                    .find(|l| l.contains("skipping topic /hostile"))
                    .unwrap_or_else(|| panic!("{shape:?}: no warning in {err}"));
                assert!(warning.contains(said), "{shape:?}: {warning}");
                assert!(warning.len() < 400, "{shape:?}: a long line: {warning}");
                let played = String::from_utf8_lossy(&out.stdout);
                assert!(
                    played.contains("Published 1 message"),
                    "{shape:?}: {played}"
                );
            }
            // A diamond is a type like any other: its size bound is computed once per type,
            // and its messages are played.
            let leaf = 0f64.to_le_bytes();
            let body: Vec<u8> = leaf.iter().copied().cycle().take(8 << 6).collect();
            let file = bag(dir, Shape::Diamond(6), &[cdr(&body), cdr(&body)]);
            let out = rclev(&["bag", "play", file.to_str().unwrap()], &[]);
            assert!(out.status.success(), "{}", stderr(&out));
            assert!(
                String::from_utf8_lossy(&out.stdout).contains("Published 3 messages"),
                "{}",
                String::from_utf8_lossy(&out.stdout)
            );
        },
    );
}

/// The defects: `topic echo|pub` of an installed type 100,000 deep aborted, a diamond's
/// `topic echo` hung computing its size path by path (Ctrl-C ignored), and its `topic pub`
/// built a default value of 2^depth leaves until an 8 GiB cap aborted it. Over both
/// transports.
#[test]
fn topic_echo_and_pub_refuse_installed_types_over_the_limits() {
    in_netns(
        "topic_echo_and_pub_refuse_installed_types_over_the_limits",
        LIMIT * 8,
        || {
            let scratch = scratch("installed");
            let dir = scratch.path();
            for rmw in ["rmw_fastrtps_cpp", "rmw_zenoh_cpp"] {
                let _router = (rmw == "rmw_zenoh_cpp").then(|| {
                    KilledOnDrop(Some(
                        Command::new(env!("CARGO_BIN_EXE_rclev"))
                            .args(["zenoh", "router"])
                            .stdout(Stdio::null())
                            .spawn()
                            .unwrap(),
                    ))
                });
                for (shape, said) in [
                    (Shape::Chain(100_000), "TypeLimits::max_types"),
                    (Shape::Chain(200), "TypeLimits::max_depth"),
                    (Shape::Cycle(3), "contains itself"),
                    // A diamond 41 deep is a 5 KB description: its default holds 2^42
                    // values.
                    (Shape::Diamond(41), "TypeLimits::max_values"),
                ] {
                    let prefix = dir.join(format!("{rmw}-{shape:?}"));
                    shape.install(&prefix);
                    let env = [
                        ("AMENT_PREFIX_PATH", prefix.to_str().unwrap()),
                        ("RMW_IMPLEMENTATION", rmw),
                        ("ZENOH_ROUTER_CHECK_ATTEMPTS", "30"),
                    ];
                    let publish = ["topic", "pub", "/hostile", "hostile_msgs/msg/T0", "--once"];
                    let mut verbs = vec![&publish[..]];
                    let echo = ["topic", "echo", "/hostile", "hostile_msgs/msg/T0"];
                    if !matches!(shape, Shape::Diamond(_)) {
                        verbs.push(&echo);
                    }
                    for args in verbs {
                        let out = rclev(args, &env);
                        assert!(!out.status.success(), "{rmw} {shape:?} {args:?}");
                        let err = stderr(&out);
                        assert!(err.contains(said), "{rmw} {shape:?} {args:?}: {err}");
                        assert!(err.len() < 1000, "{rmw} {shape:?} {args:?}: {err}");
                    }
                }
                // The diamond's echo subscribes (its size bound computed once per type),
                // reports a message that does not decode as the type (the bag's 16 bytes hold
                // 2 of its 2^41 float64 leaves), and ends cleanly on Ctrl-C.
                let shape = Shape::Diamond(41);
                let prefix = dir.join(format!("{rmw}-{shape:?}"));
                let file = bag(dir, shape, &[cdr(&[0; 16])]);
                let env = [
                    ("AMENT_PREFIX_PATH", prefix.to_str().unwrap()),
                    ("RMW_IMPLEMENTATION", rmw),
                    ("ZENOH_ROUTER_CHECK_ATTEMPTS", "30"),
                ];
                let mut play = KilledOnDrop(Some(
                    Command::new(env!("CARGO_BIN_EXE_rclev"))
                        .args(["bag", "play", file.to_str().unwrap()])
                        .args(["--topics", "/hostile", "--wait-for-subscribers", "1"])
                        .envs(env)
                        .stdout(Stdio::null())
                        .spawn()
                        .unwrap(),
                ));
                let echo = ["topic", "echo", "/hostile", "hostile_msgs/msg/T0"];
                let mut command = Command::new(env!("CARGO_BIN_EXE_rclev"));
                command.args(echo).envs(env);
                interrupted_at(command, &echo, Moment::After(true, "did not decode", 1));
                let status = play.0.take().unwrap().wait().unwrap();
                assert!(status.success(), "{rmw}: bag play: {status}");
            }
        },
    );
}

/// A type of `shape` in package `package`, as a peer's `~/get_type_description` answers it
/// (its types in order, unsorted: the hash is over what is sent).
fn described(package: &str, shape: Shape) -> td::TypeDescription {
    let n = shape.len();
    let nested = |name: &str, j: usize| td::Field {
        name: name.into(),
        r#type: td::FieldType {
            type_id: 1,
            nested_type_name: format!("{package}/msg/T{j}"),
            ..Default::default()
        },
        ..Default::default()
    };
    let plain = |name: &str, type_id: u8| td::Field {
        name: name.into(),
        r#type: td::FieldType {
            type_id,
            ..Default::default()
        },
        ..Default::default()
    };
    let individual = |i: usize| td::IndividualTypeDescription {
        type_name: format!("{package}/msg/T{i}"),
        fields: match (shape, i + 1 < n) {
            (Shape::Diamond(_), true) => vec![nested("left", i + 1), nested("right", i + 1)],
            (_, true) => vec![nested("next", i + 1), plain("level", 3)],
            (Shape::Cycle(_), false) => vec![nested("next", 0), plain("level", 3)],
            (_, false) => vec![plain("leaf", 11)],
        },
    };
    td::TypeDescription {
        type_description: individual(0),
        referenced_type_descriptions: (1..n).map(individual).collect(),
    }
}

/// The RIHS01 hash of `d`, as the recorder computes it.
fn hash_of(d: &td::TypeDescription) -> TypeHash {
    use rclev_codegen::describe::{self, Description, FieldDescription, IndividualDescription};
    let individual = |d: &td::IndividualTypeDescription| IndividualDescription {
        type_name: d.type_name.clone(),
        fields: d
            .fields
            .iter()
            .map(|f| FieldDescription {
                name: f.name.clone(),
                type_id: f.r#type.type_id,
                capacity: f.r#type.capacity,
                string_capacity: f.r#type.string_capacity,
                nested_type_name: f.r#type.nested_type_name.clone(),
                default_value: f.default_value.clone(),
            })
            .collect(),
    };
    TypeHash(describe::rihs01(&Description {
        type_description: individual(&d.type_description),
        referenced_type_descriptions: d
            .referenced_type_descriptions
            .iter()
            .map(individual)
            .collect(),
    }))
}

/// `d` as the `'static` description a publisher's type support carries (leaked: a test's
/// few types).
fn leaked(d: &td::TypeDescription) -> TypeDescription {
    let text = |s: &str| -> &'static str { Box::leak(s.to_string().into_boxed_str()) };
    let individual = |d: &td::IndividualTypeDescription| IndividualTypeDescription {
        type_name: text(&d.type_name),
        fields: Box::leak(
            d.fields
                .iter()
                .map(|f| rclev::msg::FieldDescription {
                    name: text(&f.name),
                    type_id: f.r#type.type_id,
                    capacity: f.r#type.capacity,
                    string_capacity: f.r#type.string_capacity,
                    nested_type_name: text(&f.r#type.nested_type_name),
                    default_value: text(&f.default_value),
                })
                .collect::<Vec<_>>()
                .into_boxed_slice(),
        ),
    };
    TypeDescription {
        type_description: individual(&d.type_description),
        referenced_type_descriptions: Box::leak(
            d.referenced_type_descriptions
                .iter()
                .map(individual)
                .collect::<Vec<_>>()
                .into_boxed_slice(),
        ),
    }
}

/// A hostile node on Zenoh, in the test's process: it publishes one topic per shape (no
/// messages: the recorder only needs to see the publisher) and answers
/// `/hostile/get_type_description` with the shape's description, which hashes to what its
/// publisher announced.
struct HostilePeer {
    _publishers: Vec<Arc<dyn rclev::transport::PublisherPort>>,
    stop: Arc<AtomicBool>,
    server: Option<std::thread::JoinHandle<()>>,
}

struct Ring(std::sync::mpsc::SyncSender<()>);

impl ReadyHook for Ring {
    fn ready(&self) {
        let _ = self.0.try_send(());
    }
}

fn never_serialize(_: &(dyn Any + Send + Sync), _: &mut Vec<u8>) -> rclev::Result<()> {
    Err(rclev::Error::Transport(
        "the hostile peer publishes nothing".into(),
    ))
}

impl HostilePeer {
    fn start(topics: &[(&str, &str, Shape)]) -> Self {
        let transport = rclev_rmw::Rmw::Zenoh.transport().unwrap();
        let node = transport
            .create_node(&NodeName {
                name: "hostile".into(),
                namespace: "/".into(),
            })
            .unwrap();
        let mut answers: HashMap<(String, String), Vec<u8>> = HashMap::new();
        let mut publishers = Vec::new();
        for (topic, package, shape) in topics {
            let d = described(package, *shape);
            let hash = hash_of(&d);
            let type_name = d.type_description.type_name.clone();
            let info = TypeInfo {
                type_name: Box::leak(type_name.clone().into_boxed_str()),
                dds_type_name: Box::leak(format!("{package}::msg::dds_::T0_").into_boxed_str()),
                hash,
                description: leaked(&d),
                sources: &[],
            };
            // SAFETY: the serializer appends nothing and fails: no payload is ever encoded
            // with this type support (the peer publishes nothing).
            let type_support = unsafe {
                TypeSupport::from_raw_parts(info, TypeId::of::<()>(), never_serialize, None)
            };
            publishers.push(
                node.create_publisher(
                    &TopicEndpoint {
                        name: topic.to_string(),
                        type_support,
                        qos: QoSProfile::default(),
                        reads_message_info: false,
                        max_queue_bytes: rclev::transport::DEFAULT_QUEUE_BYTES,
                    },
                    Arc::new(()),
                )
                .unwrap(),
            );
            let answer = srv::GetTypeDescription_Response {
                successful: true,
                type_description: d,
                ..Default::default()
            };
            answers.insert((type_name, hash.to_string()), to_cdr(&answer).unwrap());
        }
        let (ring, rung) = std::sync::mpsc::sync_channel(1);
        let server = node
            .create_service(
                &ServiceEndpoint {
                    name: "/hostile/get_type_description".into(),
                    types: ServiceTypes::of::<srv::GetTypeDescription>(),
                    qos: QoSProfile::services_default(),
                },
                Arc::new(Ring(ring)),
            )
            .unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let server = std::thread::spawn(move || {
            let _node = node;
            while !stopped.load(Ordering::Relaxed) {
                let _ = rung.recv_timeout(Duration::from_millis(100));
                while let Some((id, request)) = server.take_request() {
                    let request: srv::GetTypeDescription_Request = match request {
                        Payload::Serialized(bytes) => from_cdr(&bytes).unwrap(),
                        Payload::Shared(value) => value
                            .downcast_ref::<srv::GetTypeDescription_Request>()
                            .unwrap()
                            .clone(),
                        _ => continue,
                    };
                    let answer = answers
                        .get(&(request.type_name, request.type_hash))
                        .cloned()
                        .unwrap_or_else(|| {
                            to_cdr(&srv::GetTypeDescription_Response::default()).unwrap()
                        });
                    let _ = server.send_response(id, Payload::Serialized(Box::new(answer)));
                }
            }
        });
        Self {
            _publishers: publishers,
            stop,
            server: Some(server),
        }
    }
}

impl Drop for HostilePeer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(server) = self.server.take() {
            let _ = server.join();
        }
    }
}

/// The defects: `bag record` over Zenoh learnt a type 100,000 deep from a hostile peer without
/// trouble, and playing back the bag it wrote aborted; a learnt diamond left the recorder
/// computing its size path by path, never subscribing and ignoring Ctrl-C (the bag left
/// unclosed and empty). Types over the limits are now refused as they are learnt, for good
/// (naming the limit), the diamond is recorded, and Ctrl-C leaves a readable bag.
#[test]
fn bag_record_over_zenoh_refuses_a_hostile_peers_types_and_records_the_rest() {
    in_netns(
        "bag_record_over_zenoh_refuses_a_hostile_peers_types_and_records_the_rest",
        LIMIT * 3,
        || {
            let _router = KilledOnDrop(Some(
                Command::new(env!("CARGO_BIN_EXE_rclev"))
                    .args(["zenoh", "router"])
                    .stdout(Stdio::null())
                    .spawn()
                    .unwrap(),
            ));
            std::env::set_var("RMW_IMPLEMENTATION", "rmw_zenoh_cpp");
            std::env::set_var("ZENOH_ROUTER_CHECK_ATTEMPTS", "30");
            let _peer = HostilePeer::start(&[
                ("/deep", "deep_msgs", Shape::Chain(100_000)),
                ("/cycle", "cycle_msgs", Shape::Cycle(5)),
                ("/diamond", "diamond_msgs", Shape::Diamond(41)),
            ]);
            let scratch = scratch("record");
            let dir = scratch.path();
            let bag = dir.join("bag");
            let args = [
                "bag",
                "record",
                "-o",
                bag.to_str().unwrap(),
                "/deep",
                "/cycle",
                "/diamond",
            ];
            let mut command = Command::new(env!("CARGO_BIN_EXE_rclev"));
            command.args(args);
            let (stdout, stderr) = interrupted_at(
                command,
                &args,
                Moment::AfterEach(&[
                    (false, "Learnt type diamond_msgs/msg/T0 from /hostile"),
                    (false, "Subscribed to topic '/diamond'"),
                    (true, "not recording /deep"),
                    (true, "not recording /cycle"),
                ]),
            );
            let line = |needle: &str| {
                stderr
                    .lines()
                    .find(|l| l.contains(needle))
                    .unwrap_or_default()
                    .to_string()
            };
            let deep = line("not recording /deep");
            assert!(deep.contains("TypeLimits::max_types"), "{deep}");
            assert!(!deep.contains("trying again"), "refused for good: {deep}");
            let cycle = line("not recording /cycle");
            assert!(cycle.contains("contains itself"), "{cycle}");
            assert!(
                stdout.contains("Subscribed to topic '/diamond'"),
                "{stdout}"
            );
            // The bag is closed and readable, with the diamond's topic in it.
            let info = rclev(&["bag", "info", bag.to_str().unwrap()], &[]);
            let info_text = String::from_utf8_lossy(&info.stdout);
            assert!(info.status.success(), "{info_text}");
            assert!(info_text.contains("/diamond"), "{info_text}");
            assert!(info_text.contains("diamond_msgs/msg/T0"), "{info_text}");
        },
    );
}

/// Nine levels of ten aliases each: 10^9 nodes once expanded, from 300 bytes.
fn billion_laughs() -> String {
    let mut text = String::from("x0: &x0 [lol]\n");
    for i in 1..=9 {
        let uses = vec![format!("*x{}", i - 1); 10].join(", ");
        text.push_str(&format!("x{i}: &x{i} [{uses}]\n"));
    }
    text
}

/// The defect: YAML aliases ("billion laughs") in a bag's `metadata.yaml`, in an MCAP
/// channel's `offered_qos_profiles` (one `.mcap` file is enough) or in `bag play
/// --qos-profile-overrides-path` grew rclev to its address-space cap until it aborted. Each is
/// now refused at once, naming the alias or anchor; so is a document nested 100,000 deep.
#[test]
fn yaml_alias_bombs_are_refused_wherever_yaml_is_read() {
    in_netns(
        "yaml_alias_bombs_are_refused_wherever_yaml_is_read",
        LIMIT * 4,
        || {
            let scratch = scratch("yaml");
            let dir = scratch.path();
            let bomb = billion_laughs();
            let deep = "- ".repeat(100_000) + "x\n";
            let ok = cdr(&0f64.to_le_bytes());
            for (name, text) in [("bomb", &bomb), ("deep", &deep)] {
                let refused = |out: &Output, what: &str| {
                    let err = stderr(out);
                    assert!(!out.status.success(), "{name} in {what}: {err}");
                    let said = if name == "bomb" {
                        "anchor"
                    } else {
                        "deeper than 64"
                    };
                    assert!(err.contains(said), "{name} in {what}: {err}");
                    assert!(err.len() < 1000, "{name} in {what}: {err}");
                };
                // A channel's offered_qos_profiles.
                let metadata =
                    BTreeMap::from([("offered_qos_profiles".to_string(), text.to_string())]);
                let sub = dir.join(name);
                std::fs::create_dir_all(&sub).unwrap();
                let file = bag_with(&sub, Shape::Chain(1), std::slice::from_ref(&ok), &metadata);
                refused(
                    &rclev(&["bag", "play", file.to_str().unwrap()], &[]),
                    "a channel",
                );
                refused(
                    &rclev(&["bag", "info", file.to_str().unwrap()], &[]),
                    "a channel",
                );
                // A QoS override file.
                let clean = bag(&sub, Shape::Chain(2), std::slice::from_ref(&ok));
                let overrides = sub.join("overrides.yaml");
                std::fs::write(&overrides, text).unwrap();
                refused(
                    &rclev(
                        &[
                            "bag",
                            "play",
                            clean.to_str().unwrap(),
                            "--qos-profile-overrides-path",
                            overrides.to_str().unwrap(),
                        ],
                        &[],
                    ),
                    "an override file",
                );
                // A bag directory's metadata.yaml.
                let bag_dir = sub.join("bag");
                std::fs::create_dir_all(&bag_dir).unwrap();
                std::fs::copy(&clean, bag_dir.join("bag_0.mcap")).unwrap();
                std::fs::write(bag_dir.join("metadata.yaml"), text).unwrap();
                refused(
                    &rclev(&["bag", "play", bag_dir.to_str().unwrap()], &[]),
                    "metadata",
                );
                refused(
                    &rclev(&["bag", "info", bag_dir.to_str().unwrap()], &[]),
                    "metadata",
                );
                // A value on the command line.
                let value = if name == "deep" {
                    "[".repeat(100) + &"]".repeat(100)
                } else {
                    text.to_string()
                };
                let publish = [
                    "topic",
                    "pub",
                    "/x",
                    "std_msgs/msg/String",
                    &value,
                    "--once",
                ];
                refused(&rclev(&publish, &[]), "topic pub");
            }
        },
    );
}
