//! `--ros-args` against rclpy (Jazzy, from PyPI) as the oracle: for each argument vector of
//! the table below, an rclpy node and an rclev node called `probe`, with the same parameters
//! and endpoints (`tests/peers/args_peer.py` and [`Probe`]), are started with the vector as
//! their program's arguments, one at a time, on one domain. An rclev observer reads what the
//! graph says of each — the node's fully qualified name, every publisher, subscription,
//! service and client with its type — and asks the node's `~/get_parameters` for the probe's
//! parameters over the wire. The two readings must be equal, and a vector that rclpy refuses
//! must be refused by rclev too.

mod common;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use common::{call_retrying, in_netns, spin_until};
use rclev::interfaces::rcl_interfaces::srv::{GetParameters, GetParameters_Request};
use rclev::interfaces::std_msgs::msg::String as StringMsg;
use rclev::interfaces::std_srvs::srv::{Trigger, Trigger_Response};
use rclev::{
    ActionServerOptions, CancelResponse, Context, Executor, GoalEnd, GoalResponse, Node,
    ParameterDescriptor, ParameterValue, SpinOptions,
};
use rclev_dds::DdsTransport;
use rclev_oracle_tests::test_msgs::action::{Fibonacci, Fibonacci_Goal, Fibonacci_Result};

const LIMIT: Duration = Duration::from_secs(600);
const WAIT: Duration = Duration::from_secs(30);

/// How long a node that went away may stay on the graph ([`Observer::wait_empty`]).
const LEAVE_WAIT: Duration = Duration::from_secs(120);

/// The probe's parameters and their defaults (the peer's `PARAMS`).
fn params() -> Vec<(&'static str, ParameterValue)> {
    use ParameterValue as V;
    vec![
        ("rate", V::Integer(10)),
        ("gain", V::Double(0.5)),
        ("name", V::String("x".into())),
        ("flags", V::BoolArray(vec![true])),
        ("ids", V::IntegerArray(vec![1])),
        ("scales", V::DoubleArray(vec![1.0])),
        ("labels", V::StringArray(vec!["a".into()])),
        ("nested.value", V::Integer(0)),
    ]
}

/// Files the vectors name as `{dir}/…`.
const FILES: &[(&str, &str)] = &[
    (
        "all.yaml",
        "/**:\n  ros__parameters:\n    rate: 20\n    nested:\n      value: 3\n",
    ),
    (
        "order.yaml",
        "probe:\n  ros__parameters:\n    rate: 30\n/**:\n  ros__parameters:\n    rate: 40\n    gain: 2.5\n",
    ),
    (
        "robot.yaml",
        "/robot/probe:\n  ros__parameters:\n    rate: 50\n    labels: [x, 'y z']\n/probe:\n  ros__parameters:\n    rate: 51\n",
    ),
    (
        "wild.yaml",
        "/*/probe:\n  ros__parameters:\n    rate: 60\n/**/probe:\n  ros__parameters:\n    gain: 6.5\n    ids:\n      - 4\n      - 5\n",
    ),
    (
        "nested_ns.yaml",
        "robot:\n  probe:\n    ros__parameters:\n      name: nested\n      flags: [false, true]\n",
    ),
    (
        "types.yaml",
        "/**:\n  ros__parameters:\n    name: 'true'\n    gain: .inf\n    rate: 0x20\n    scales: [1.5, -2.0]\n",
    ),
    ("bad_mixed.yaml", "/**:\n  ros__parameters:\n    ids: [1, 2.5]\n"),
];

/// The table: argument vectors (after the program's name) that both must accept, then ones
/// that both must refuse.
fn vectors() -> Vec<Vec<&'static str>> {
    let v = |s: &'static str| s.split_whitespace().collect::<Vec<_>>();
    vec![
        v(""),
        v("--ros-args -r __node:=renamed"),
        v("--ros-args -r __name:=renamed_by_name"),
        v("--ros-args -r __ns:=/robot1"),
        v("--ros-args -r __ns:=/a/b -r __node:=deep"),
        v("--ros-args -r __ns:=/"),
        v("--ros-args -r chatter:=talk"),
        v("--ros-args -r chatter:=/abs/talk"),
        v("--ros-args -r /chatter:=matched_absolute"),
        v("--ros-args -r __ns:=/robot -r chatter:=talk"),
        v("--ros-args -r __ns:=/robot -r /robot/chatter:=/other"),
        v("--ros-args -r probe:chatter:=only_me"),
        v("--ros-args -r other:chatter:=not_me"),
        v("--ros-args -r probe:__node:=by_prefix"),
        v("--ros-args -r other:__node:=ignored"),
        v("--ros-args -r __node:=renamed -r renamed:__ns:=/after_rename"),
        v("--ros-args -r __node:=renamed -r probe:__ns:=/not_applied"),
        v("--ros-args -r __node:=renamed -r renamed:chatter:=renamed_only"),
        v("--ros-args -r ~/state:=~/state2"),
        v("--ros-args -r ~/state:=/global_state"),
        v("--ros-args -r probe/status:=st"),
        v("--ros-args -r rostopic://reset:=reset_topic"),
        v("--ros-args -r rosservice://reset:=reset_srv"),
        v("--ros-args -r reset:=reset_both"),
        // An action's topics and services one by one (Jazzy's rcl remaps nothing else of an
        // action; an action's own name, `-r fib:=fibonacci`, is remapped as Kilted's rcl does
        // it: rclev/tests/arguments.rs).
        v("--ros-args -r /fib/_action/send_goal:=/moved_send_goal -r /fib/_action/status:=/moved_status"),
        v("--ros-args -r image:=image_raw -r image:=second"),
        v("--ros-args -r __node:=first -r __node:=second"),
        v("--ros-args -r chatter:=x -r x:=y"),
        v("--ros-args -r /abs/topic:=~/relative_target"),
        v("chatter:=legacy_form"),
        v("--ros-args -r chatter:=one -- --ros-args -r image:=two"),
        v("--ros-args -p rate:=50"),
        v("--ros-args -p rate:=0x10 -p gain:=1e3 -p name:=yes"),
        v("--ros-args -p flags:=[true,false] -p ids:=[1,2,3] -p scales:=[1.5,2.5] -p labels:=[a,'b']"),
        v("--ros-args -p probe:rate:=7 -p other:rate:=8"),
        v("--ros-args -p name:='42' -p nested.value:=010 -p gain:=-.inf"),
        v("--ros-args --params-file {dir}/all.yaml"),
        v("--ros-args --params-file {dir}/order.yaml"),
        v("--ros-args -r __ns:=/robot --params-file {dir}/robot.yaml"),
        v("--ros-args --params-file {dir}/robot.yaml"),
        v("--ros-args -r __ns:=/x --params-file {dir}/wild.yaml"),
        v("--ros-args --params-file {dir}/wild.yaml"),
        v("--ros-args -r __ns:=/robot --params-file {dir}/nested_ns.yaml"),
        v("--ros-args --params-file {dir}/types.yaml"),
        v("--ros-args --params-file {dir}/all.yaml -p rate:=99"),
        v("--ros-args -p rate:=99 --params-file {dir}/all.yaml"),
        v("--ros-args -r __node:=renamed -p renamed:rate:=5 -p probe:rate:=6"),
        v("--ros-args --log-level debug --log-level probe:=warn -p rate:=3"),
        v("--ros-args --disable-stdout-logs --enable-rosout-logs -r __node:=flags_ok"),
        v("--ros-args -e /enclave1 -r __node:=enclaved"),
        v("--ros-args --disable-rosout-logs --disable-external-lib-logs"),
        // Refused by both.
        v("--ros-args --no-such-flag"),
        v("--ros-args -r __ns:=relative"),
        v("--ros-args -r a/*:=b"),
        v("--ros-args -p x:=[1,2.5]"),
        v("--ros-args -r"),
        v("--ros-args --params-file {dir}/bad_mixed.yaml"),
        v("--ros-args --params-file {dir}/missing.yaml"),
        v("--ros-args --log-level loud"),
    ]
}

/// The rclev probe: the peer's node, endpoint for endpoint.
struct Probe {
    _node: Node,
    _keep: Vec<Box<dyn std::any::Any>>,
}

fn probe(executor: &Executor) -> rclev::Result<Probe> {
    let node = executor.create_node("probe")?;
    for (name, default) in params() {
        let dynamic = ParameterDescriptor {
            dynamic_typing: true,
            ..ParameterDescriptor::default()
        };
        node.declare_parameter_with(name, default, dynamic)?;
    }
    let keep: Vec<Box<dyn std::any::Any>> = vec![
        Box::new(node.create_publisher::<StringMsg>("chatter")?),
        Box::new(node.create_publisher::<StringMsg>("~/state")?),
        Box::new(node.create_publisher::<StringMsg>("{node}/status")?),
        Box::new(node.create_subscription::<StringMsg, _>("image", |_| {})?),
        Box::new(node.create_subscription::<StringMsg, _>("/abs/topic", |_| {})?),
        Box::new(node.create_service::<Trigger, _>("reset", |_| Trigger_Response::default())?),
        Box::new(
            node.create_service::<Trigger, _>("~/private_srv", |_| Trigger_Response::default())?,
        ),
        Box::new(node.create_publisher::<StringMsg>("reset")?),
        Box::new(node.create_action_server::<Fibonacci, _, _, _, _>(
            "fib",
            ActionServerOptions::default(),
            |_id, _goal: &Fibonacci_Goal| GoalResponse::Reject,
            |_goal: &rclev::ServerGoalHandle<Fibonacci>| CancelResponse::Reject,
            |_goal: rclev::ServerGoalHandle<Fibonacci>| async move {
                GoalEnd::Aborted(Fibonacci_Result::default())
            },
        )?),
    ];
    Ok(Probe {
        _node: node,
        _keep: keep,
    })
}

/// What the observer reads of the one other node on the domain.
#[derive(Debug, PartialEq)]
struct Reading {
    fqn: String,
    endpoints: BTreeSet<String>,
    parameters: Vec<String>,
}

struct Observer {
    transport: Arc<DdsTransport>,
    executor: Executor,
    node: Node,
}

impl Observer {
    fn new() -> Self {
        let transport = Arc::new(DdsTransport::from_env().unwrap());
        let executor = Context::with_transport(transport.clone()).create_basic_executor();
        let node = executor.create_node("oracle_observer").unwrap();
        Observer {
            transport,
            executor,
            node,
        }
    }

    fn others(&self) -> Vec<rclev::transport::NodeName> {
        self.node
            .graph()
            .node_names()
            .into_iter()
            .filter(|n| n.name != "oracle_observer")
            .collect()
    }

    /// Waits until discovery has settled with exactly one other node, then reads it.
    fn read(&self, what: &str) -> Reading {
        let settled = || self.transport.graph_settled() && self.others().len() == 1;
        assert!(
            spin_until(&self.executor, WAIT, settled),
            "{what}: the graph did not settle on one node: {:?}",
            self.others()
        );
        let graph = self.node.graph();
        let node = self.others().remove(0);
        let endpoints = graph
            .endpoints
            .iter()
            .filter(|e| e.node == node)
            .map(|e| format!("{:?} {} {}", e.kind, e.name, e.type_name))
            .collect();
        let fqn = node.fully_qualified();
        let client = self
            .node
            .create_client::<GetParameters>(format!("{fqn}/get_parameters").as_str())
            .unwrap();
        let names = params().iter().map(|(n, _)| n.to_string()).collect();
        let answer = Arc::new(std::sync::Mutex::new(None));
        let a = answer.clone();
        let errors = self.executor.spin(
            SpinOptions::default()
                .until_promise_resolved(async move {
                    let got = async {
                        client.wait_for_service(Some(WAIT)).await?;
                        call_retrying(
                            &client,
                            GetParameters_Request { names },
                            Duration::from_secs(5),
                            4,
                        )
                        .await
                    };
                    *a.lock().unwrap() = Some(got.await);
                })
                .timeout(WAIT * 2),
        );
        assert!(errors.is_empty(), "{what}: {errors:?}");
        let values = answer
            .lock()
            .unwrap()
            .take()
            .unwrap_or_else(|| panic!("{what}: get_parameters did not answer"))
            .unwrap_or_else(|e| panic!("{what}: get_parameters failed: {e}"));
        let parameters = values
            .values
            .iter()
            .map(|v| format!("{:?}", ParameterValue::from_msg(v)))
            .collect();
        Reading {
            fqn,
            endpoints,
            parameters,
        }
    }

    /// Waits until the domain has no node but the observer. A participant that is deleted
    /// says so best-effort; when that word is lost, it leaves once its lease (Fast DDS's 20 s)
    /// has run out, and on a loaded host the lease check runs late: [`LEAVE_WAIT`] is a bound
    /// for a hang, not an expected time (30 s was too short beside a CI build and two CPU hogs,
    /// in 2 of 10 stress rounds).
    fn wait_empty(&self, what: &str) {
        assert!(
            spin_until(&self.executor, LEAVE_WAIT, || self.others().is_empty()),
            "{what}: {:?} did not leave the graph ({} other participants; endpoints {:?})",
            self.others(),
            self.transport.participant_count(),
            self.node
                .graph()
                .endpoints
                .iter()
                .filter(|e| !e.node.name.starts_with("oracle"))
                .map(|e| format!("{} {:?}", e.name, e.node))
                .collect::<Vec<_>>()
        );
    }
}

/// A line of the peer's: `{"i": n, "fqn": …}` or `{"i": n, "error": …}`, read without a JSON
/// crate: the fields the test needs are plain strings.
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let start = line.find(&format!("\"{key}\": \""))? + key.len() + 5;
    let end = line[start..].find('"')? + start;
    Some(&line[start..end])
}

/// How long the rclpy peer may take to tear a vector's node and context down (well under a
/// second when it works). Past it, its threads' stacks are dumped into the test's output and
/// it is replaced (the vector's rclpy reading was taken before): in a stress round one
/// teardown never ended, its participant alive 120 s later.
const TEARDOWN_WAIT: Duration = Duration::from_secs(30);

/// The rclpy side (`tests/peers/args_peer.py`) and its lines.
struct RclpyPeer {
    child: std::process::Child,
    to_peer: std::process::ChildStdin,
    lines: mpsc::Receiver<String>,
}

impl RclpyPeer {
    /// Starts the peer on the vectors in `vectors_file`, from vector `first` on.
    fn start(vectors_file: &std::path::Path, first: usize) -> Self {
        let mut child = Command::new(common::python())
            .arg("-u")
            .arg(
                std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                    .join("tests/peers/args_peer.py"),
            )
            .arg(vectors_file)
            .arg(first.to_string())
            .env("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the oracle venv's python (bash .ci/oracles)");
        let to_peer = child.stdin.take().unwrap();
        let (lines_tx, lines) = mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                if lines_tx.send(line.unwrap_or_default()).is_err() {
                    break;
                }
            }
        });
        RclpyPeer {
            child,
            to_peer,
            lines,
        }
    }

    fn say(&mut self, word: &str) {
        if let Err(e) = writeln!(self.to_peer, "{word}") {
            let status = self.child.wait();
            panic!("the rclpy peer is gone ({e}; {status:?})");
        }
    }

    /// Tells the peer to tear the vector's node down and waits until it says it has; `false`
    /// if it did not within [`TEARDOWN_WAIT`] (its stacks are dumped, and it is killed). A
    /// peer that exits instead (an exception in rclpy's teardown) fails the test.
    fn tear_down(&mut self, what: &str) -> bool {
        self.say("next");
        match self.lines.recv_timeout(TEARDOWN_WAIT) {
            Ok(line) if line.contains("\"gone\"") => true,
            Ok(line) => panic!("{what}: the rclpy peer said {line:?}, not that it was gone"),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let status = self.child.wait();
                panic!("{what}: the rclpy peer exited in its teardown ({status:?})")
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                println!("{what}: rclpy's teardown did not end; its threads:");
                // The peer registered faulthandler for SIGUSR1: the stacks go to its stderr.
                // SAFETY: kill has no memory preconditions; the pid is our own child's, not
                // yet waited for.
                unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGUSR1) };
                std::thread::sleep(Duration::from_secs(1));
                let _ = self.child.kill();
                let _ = self.child.wait();
                false
            }
        }
    }
}

#[test]
fn rclev_resolves_ros_arguments_as_rclpy_does() {
    in_netns("rclev_resolves_ros_arguments_as_rclpy_does", LIMIT, || {
        let scratch = tempfile::Builder::new()
            .prefix("rclev-args-oracle-")
            .tempdir()
            .unwrap();
        let dir = scratch.path().to_path_buf();
        for (name, text) in FILES {
            std::fs::write(dir.join(name), text).unwrap();
        }
        let dir_text = dir.to_str().unwrap().to_string();
        let table: Vec<Vec<String>> = vectors()
            .into_iter()
            .map(|v| v.iter().map(|a| a.replace("{dir}", &dir_text)).collect())
            .collect();
        let json = format!(
            "[{}]",
            table
                .iter()
                .map(|v| format!(
                    "[{}]",
                    v.iter()
                        .map(|a| format!("{a:?}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let vectors_file = dir.join("vectors.json");
        std::fs::write(&vectors_file, json).unwrap();

        let observer = Observer::new();
        let mut peer = RclpyPeer::start(&vectors_file, 0);

        let mut mismatches = Vec::new();
        let mut restarts = 0;
        let mut accepted = 0;
        let mut refused = 0;
        for (i, args) in table.iter().enumerate() {
            let what = format!("vector {i} {args:?}");
            peer.say("go");
            let line = peer
                .lines
                .recv_timeout(WAIT * 2)
                .unwrap_or_else(|_| panic!("{what}: the rclpy peer said nothing"));
            let rclpy = match field(&line, "error") {
                Some(error) => Err(error.to_string()),
                None => Ok(observer.read(&format!("{what} (rclpy)"))),
            };
            if !peer.tear_down(&what) {
                // Its participant leaves when its lease runs out (wait_empty); a new peer
                // takes the next vectors. More than twice in one run is not bad luck.
                restarts += 1;
                assert!(restarts <= 2, "rclpy's teardown hung {restarts} times");
                peer = RclpyPeer::start(&vectors_file, i + 1);
            }
            observer.wait_empty(&format!("{what} (after rclpy)"));

            let program: Vec<String> = std::iter::once("probe_prog".to_string())
                .chain(args.iter().cloned())
                .collect();
            let rclev = match DdsTransport::context_from_args(&program) {
                Err(e) => Err(e.to_string()),
                Ok(context) => {
                    let executor = Arc::new(context.create_basic_executor());
                    match probe(&executor) {
                        Err(e) => Err(e.to_string()),
                        Ok(probe) => {
                            // The probe answers get_parameters from a thread of its own.
                            let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
                            let spinning = {
                                let executor = executor.clone();
                                std::thread::spawn(move || {
                                    executor.spin(SpinOptions::default().until_promise_resolved(
                                        async {
                                            let _ = stopped.await;
                                        },
                                    ))
                                })
                            };
                            let reading = observer.read(&format!("{what} (rclev)"));
                            stop.send(()).unwrap();
                            let errors = spinning.join().unwrap();
                            assert!(errors.is_empty(), "{what}: the probe: {errors:?}");
                            drop(probe);
                            drop(executor);
                            observer.wait_empty(&format!("{what} (after rclev)"));
                            Ok(reading)
                        }
                    }
                }
            };
            match (&rclpy, &rclev) {
                (Ok(a), Ok(b)) if a == b => accepted += 1,
                (Err(_), Err(_)) => refused += 1,
                _ => mismatches.push(format!("{what}:\n  rclpy {rclpy:#?}\n  rclev {rclev:#?}")),
            }
        }
        drop(peer.to_peer);
        let _ = peer.child.wait();
        std::fs::remove_dir_all(&dir).unwrap();
        println!(
            "{accepted} vectors read alike, {refused} refused by both; rclpy's teardown hung {restarts} times"
        );
        assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
        assert!(accepted >= 30, "only {accepted} accepted vectors");
    });
}
