//! The `rclev` command line: demos, benchmarks, (with the `dds` feature) the everyday ROS 2
//! tools over DDS: `node`, `topic`, `service`, `param`, `action`, and (with the `zenoh`
//! feature) a Zenoh router for rmw_zenoh: `zenoh router`.
//!
//! It is its own crate, `rclev-cli`, so that a crate depending on the `rclev` library builds
//! none of it (nor clap, plotters, hdrhistogram, serde_json, tracing-subscriber). From the
//! workspace root: `cargo run --release --bin rclev -- --help`.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[cfg(feature = "dds")]
mod action_goal;
#[cfg(feature = "dds")]
mod bag;
#[cfg(feature = "dds")]
mod bench_bag;
#[cfg(feature = "dds")]
mod bench_dds;
mod bench_pubsub;
mod bench_timers;
mod bundled;
mod clock;
mod demo;
mod errors;
#[cfg(feature = "dds")]
mod graph;
#[cfg(feature = "dds")]
mod installed_types;
mod interface;
#[cfg(feature = "dds")]
mod interrupt;
#[cfg(feature = "dds")]
mod lifecycle;
#[cfg(feature = "dds")]
mod param;
#[cfg(feature = "dds")]
mod remote_types;
mod report;
#[cfg(feature = "dds")]
mod service_call;
mod simtime;
#[cfg(feature = "dds")]
mod topic;
#[cfg(feature = "dds")]
mod topic_stats;
mod type_names;
#[cfg(feature = "dds")]
mod waiting_client;
#[cfg(feature = "dds")]
mod wire;
#[cfg(feature = "zenoh")]
mod zenoh_router;

/// What the CLI logs without `RUST_LOG`: warnings and errors from everything, rclev's own
/// information too. A directive's target is a prefix, so `rclev` covers this binary (whose
/// target is `rclev`) and every `rclev_*` crate.
const DEFAULT_LOG_FILTER: &str = "warn,rclev=info";

#[derive(Parser)]
#[command(
    name = "rclev",
    version,
    about = "rclev: an event-driven ROS 2 client library on Tokio"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a demo.
    #[command(subcommand)]
    Demo(DemoCommand),
    /// Run a benchmark.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// The interface definitions rclev knows: list, show.
    #[command(subcommand)]
    Interface(InterfaceCommand),
    /// Topics over DDS: list, info, echo, pub, hz, bw.
    #[cfg(feature = "dds")]
    #[command(subcommand)]
    Topic(TopicCommand),
    /// Nodes over DDS: list, info.
    #[cfg(feature = "dds")]
    #[command(subcommand)]
    Node(NodeCommand),
    /// Services over DDS: list, type, call.
    #[cfg(feature = "dds")]
    #[command(subcommand)]
    Service(ServiceCommand),
    /// A node's parameters over DDS: list, get, set, describe, dump.
    #[cfg(feature = "dds")]
    #[command(subcommand)]
    Param(ParamCommand),
    /// Actions over DDS: list, info, send_goal.
    #[cfg(feature = "dds")]
    #[command(subcommand)]
    Action(ActionCommand),
    /// Managed (lifecycle) nodes over DDS: nodes, list, get, set.
    #[cfg(feature = "dds")]
    #[command(subcommand)]
    Lifecycle(lifecycle::LifecycleCommand),
    /// Bags (rosbag2's MCAP format): record, play, info.
    #[cfg(feature = "dds")]
    #[command(subcommand)]
    Bag(bag::BagCommand),
    /// One process of `bench pubsub --transport dds`, which starts it.
    #[cfg(feature = "dds")]
    #[command(hide = true)]
    BenchDdsRole(bench_dds::RoleArgs),
    /// The publisher of `bench bag` (record and play parts), which starts it.
    #[cfg(feature = "dds")]
    #[command(hide = true)]
    BenchBagPublisher(bench_bag::PublisherArgs),
    /// The timing subscriber of `bench bag` (play part), which starts it.
    #[cfg(feature = "dds")]
    #[command(hide = true)]
    BenchBagSubscriber(bench_bag::SubscriberArgs),
    /// Zenoh for ROS 2 nodes on rmw_zenoh: router.
    #[cfg(feature = "zenoh")]
    #[command(subcommand)]
    Zenoh(ZenohCommand),
    /// Burns one core for a while: the CPU load `bench timers --load` runs beside it.
    #[command(hide = true)]
    BenchHog {
        /// Seconds to burn.
        #[arg(long)]
        secs: f64,
    },
    /// Publish a simulated /clock (in process) and show a sim-time timer following it.
    Clock {
        /// Simulated seconds per wall second.
        #[arg(long, default_value_t = 1.0)]
        scale: f64,
        /// Freeze the simulated clock after this many wall seconds.
        #[arg(long)]
        pause_after: Option<f64>,
        /// /clock messages per wall second.
        #[arg(long, default_value_t = 100.0)]
        rate: f64,
        /// How long to run (wall seconds).
        #[arg(long, default_value_t = 5.0)]
        secs: f64,
    },
}

/// Zenoh, as rmw_zenoh uses it.
#[cfg(feature = "zenoh")]
#[derive(Subcommand)]
enum ZenohCommand {
    /// Runs a Zenoh router until Ctrl-C, like `ros2 run rmw_zenoh_cpp rmw_zenohd`: rmw_zenohd's
    /// default configuration (tcp/[::]:7447), ZENOH_ROUTER_CONFIG_URI and ZENOH_CONFIG_OVERRIDE
    /// honoured.
    Router,
}

/// Nodes on the ROS graph.
#[cfg(feature = "dds")]
#[derive(Subcommand)]
enum NodeCommand {
    /// Lists the nodes, like `ros2 node list`.
    List {
        #[command(flatten)]
        wait: graph::WaitArgs,
    },
    /// A node's publishers, subscribers, services and actions, like `ros2 node info`.
    Info {
        /// The node (`/ns/name`).
        node: String,
        /// Show hidden topics and services (names with a component starting with `_`).
        #[arg(long)]
        include_hidden: bool,
        #[command(flatten)]
        wait: graph::WaitArgs,
    },
}

/// Services on the ROS graph.
#[cfg(feature = "dds")]
#[derive(Subcommand)]
enum ServiceCommand {
    /// Lists the services, like `ros2 service list`.
    List {
        /// Show each service's type.
        #[arg(short = 't', long)]
        show_types: bool,
        /// Show hidden services (an action's `_action/…`).
        #[arg(long)]
        include_hidden_services: bool,
        #[command(flatten)]
        wait: graph::WaitArgs,
    },
    /// A service's type.
    Type {
        /// The service.
        service: String,
        #[command(flatten)]
        wait: graph::WaitArgs,
    },
    /// Calls a service once with a request given as YAML, like `ros2 service call`.
    Call {
        /// The service.
        service: String,
        /// The service type (`example_interfaces/srv/AddTwoInts`, or `example_interfaces/AddTwoInts`).
        #[arg(value_name = "TYPE")]
        type_name: String,
        /// The request as YAML (`"{a: 1, b: 2}"`); fields left out keep their defaults.
        #[arg(default_value = "{}")]
        values: String,
    },
}

/// A node's parameters, through its parameter services.
#[cfg(feature = "dds")]
#[derive(Subcommand)]
enum ParamCommand {
    /// Lists the node's parameters.
    List {
        /// The node (`/ns/name`).
        node: String,
    },
    /// Prints a parameter's value.
    Get {
        /// The node.
        node: String,
        /// The parameter.
        name: String,
    },
    /// Sets a parameter (the value is read as YAML: `true`, `5`, `2.5`, `text`, `[1, 2]`).
    Set {
        /// The node.
        node: String,
        /// The parameter.
        name: String,
        /// The value.
        value: String,
    },
    /// Prints a parameter's descriptor.
    Describe {
        /// The node.
        node: String,
        /// The parameter.
        name: String,
    },
    /// Prints every parameter as a parameters file would hold it.
    Dump {
        /// The node.
        node: String,
    },
}

/// Actions on the ROS graph.
#[cfg(feature = "dds")]
#[derive(Subcommand)]
enum ActionCommand {
    /// Lists the actions, like `ros2 action list`.
    List {
        /// Show each action's type.
        #[arg(short = 't', long)]
        show_types: bool,
        #[command(flatten)]
        wait: graph::WaitArgs,
    },
    /// An action's servers and clients.
    Info {
        /// The action.
        action: String,
        #[command(flatten)]
        wait: graph::WaitArgs,
    },
    /// Sends a goal given as YAML and prints the result, like `ros2 action send_goal`.
    #[command(name = "send_goal")]
    SendGoal {
        /// The action.
        action: String,
        /// The action type (`example_interfaces/action/Fibonacci`, or `example_interfaces/Fibonacci`).
        #[arg(value_name = "TYPE")]
        type_name: String,
        /// The goal as YAML (`"{order: 5}"`); fields left out keep their defaults.
        #[arg(default_value = "{}")]
        values: String,
        /// Print the goal's feedback as it comes.
        #[arg(short, long)]
        feedback: bool,
    },
}

/// Topics over DDS (ROS_DOMAIN_ID, ROS_AUTOMATIC_DISCOVERY_RANGE and ROS_STATIC_PEERS apply).
#[cfg(feature = "dds")]
#[derive(Subcommand)]
enum TopicCommand {
    /// Lists the topics, like `ros2 topic list`.
    List {
        /// Show each topic's type.
        #[arg(short = 't', long)]
        show_types: bool,
        /// Show hidden topics (an action's `_action/…`).
        #[arg(long)]
        include_hidden_topics: bool,
        #[command(flatten)]
        wait: graph::WaitArgs,
    },
    /// A topic's type and how many publishers and subscriptions it has, like `ros2 topic info`.
    Info {
        /// The topic.
        topic: String,
        /// Each endpoint with its node, type hash, GID and QoS.
        #[arg(short, long)]
        verbose: bool,
        #[command(flatten)]
        wait: graph::WaitArgs,
    },
    /// The rate of a topic's messages, every second until Ctrl-C, like `ros2 topic hz`.
    Hz {
        /// The topic.
        topic: String,
        /// Messages in the rolling window.
        #[arg(short, long, default_value_t = 10_000)]
        window: usize,
        /// Exit after this many reports.
        #[arg(long)]
        reports: Option<u64>,
    },
    /// The bandwidth a topic's messages take, every second until Ctrl-C, like `ros2 topic bw`.
    Bw {
        /// The topic.
        topic: String,
        /// Messages in the rolling window.
        #[arg(short, long, default_value_t = 100)]
        window: usize,
        /// Exit after this many reports.
        #[arg(long)]
        reports: Option<u64>,
    },
    /// Prints the messages on a topic as YAML, like `ros2 topic echo`.
    Echo {
        /// The topic (`/chatter`, or relative to `/`).
        topic: String,
        /// The message type (`std_msgs/msg/String`, or `std_msgs/String`); found from the
        /// topic's publishers when left out. Publishers of another type are warned about (they
        /// are never heard), and the echo keeps waiting.
        #[arg(value_name = "TYPE")]
        type_name: Option<String>,
        /// Print one message and exit.
        #[arg(long)]
        once: bool,
        /// Exit after this many messages.
        #[arg(long)]
        count: Option<u64>,
    },
    /// Publishes a message given as YAML, like `ros2 topic pub`.
    Pub {
        /// The topic.
        topic: String,
        /// The message type (`std_msgs/msg/String`, or `std_msgs/String`).
        #[arg(value_name = "TYPE")]
        type_name: String,
        /// The message as YAML (`"{data: hello}"`); fields left out keep their defaults.
        #[arg(default_value = "{}")]
        values: String,
        /// Messages per second.
        #[arg(short, long, default_value_t = 1.0)]
        rate: f64,
        /// Publish one message and exit.
        #[arg(short = '1', long)]
        once: bool,
        /// Publish this many messages and exit.
        #[arg(short, long)]
        times: Option<u64>,
        /// Wait for this many matching subscriptions first (default: 1 with --once or
        /// --times, else 0).
        #[arg(short, long)]
        wait_matching_subscriptions: Option<usize>,
    },
}

/// Interface definitions.
#[derive(Subcommand)]
enum InterfaceCommand {
    /// Every interface rclev knows (`pkg/msg/Name`, `pkg/srv/Name`, `pkg/action/Name`).
    List,
    /// An interface's definition with its nested types expanded, like `ros2 interface show`.
    Show {
        /// `pkg/msg/Name`, `pkg/srv/Name` or `pkg/action/Name` (or `pkg/Name`, when only one
        /// kind has that name).
        name: String,
    },
}

#[derive(Subcommand)]
enum DemoCommand {
    /// A talker and a listener in one process.
    TalkerListener {
        /// How long to run, in seconds.
        #[arg(long, default_value_t = 3.0)]
        secs: f64,
        /// Messages per second.
        #[arg(long, default_value_t = 10.0)]
        rate: f64,
    },
    /// An action server and client (example_interfaces/action/Fibonacci) in one process.
    Fibonacci {
        /// The goal's order.
        #[arg(long, default_value_t = 10)]
        order: i32,
        /// Milliseconds between feedback steps.
        #[arg(long, default_value_t = 100)]
        step_ms: u64,
    },
}

/// Where `bench pubsub` moves its messages.
#[derive(clap::ValueEnum, Clone, Copy, PartialEq, Eq)]
enum PubsubTransport {
    Inproc,
    Dds,
    Zenoh,
}

#[derive(Subcommand)]
enum BenchCommand {
    /// Bags: rclev-bag's writer against the mcap crate writing the same bytes directly;
    /// `rclev bag record` fed over DDS (loss, CPU per message and per MB beside the mcap
    /// crate's for the same messages); `rclev bag play`'s deviation from the bag's schedule at
    /// a subscriber, beside a clock_nanosleep publisher. The DDS parts run in a network
    /// namespace of their own (so as root).
    #[cfg(feature = "dds")]
    Bag {
        /// Parts to run, comma-separated: writer, record, play.
        #[arg(
            long,
            value_enum,
            value_delimiter = ',',
            default_value = "writer,record,play"
        )]
        parts: Vec<bench_bag::Part>,
        /// writer: the longest one run writes (it stops at 256 MiB or 2 000 000 messages
        /// before); record: seconds of publishing per recording.
        #[arg(long, default_value_t = 5.0)]
        secs: f64,
        /// play: the played bags' duration, seconds.
        #[arg(long, default_value_t = 3.0)]
        play_secs: f64,
        /// writer: payload sizes in bytes, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "16,1024,65536,1048576")]
        sizes: Vec<usize>,
        /// Runs of every case, interleaved; the tables show medians.
        #[arg(long, default_value_t = 3)]
        repeat: usize,
        /// Write the rows as JSON.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Sim-time timer fidelity: expected vs achieved fires at /clock scales 0.5, 1, 2, 10 and
    /// paused, with a wall timer running beside it.
    Simtime {
        /// Wall seconds per case.
        #[arg(long, default_value_t = 2.0)]
        secs: f64,
        /// /clock messages per wall second (at 1 kHz a 10× clock steps exactly one period of
        /// the 100 Hz timer per message).
        #[arg(long, default_value_t = 1000.0)]
        clock_hz: f64,
        /// Write the rows as JSON.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Publish→callback throughput and latency: in process against a bare tokio mpsc
    /// hand-off, or (`--transport dds`) between two processes over Fast DDS against the bare
    /// engine, ROS 2 Jazzy's rcl and Cyclone DDS's ddsperf.
    ///
    /// With `--transport dds --scenario many`: one process publishing on 10 topics at
    /// `--ping-hz` each (16 B by default), the other with 5 subscriptions per topic (50 on one
    /// node, default delivery); CPU per received message and send → callback latency, rclev
    /// against the bare engine (variants rclev, rclev-worker, rclev-direct, raw).
    ///
    /// Large messages are measured with e.g. `--sizes 1048576,4194304` (not in the default:
    /// they take long).
    Pubsub {
        /// Messages for the throughput phase (inproc).
        #[arg(long, default_value_t = 2_000_000)]
        messages: u64,
        /// Seconds for each latency phase (inproc); for each measurement window (dds).
        #[arg(long, default_value_t = 2.0)]
        secs: f64,
        /// Write the rows as JSON.
        #[arg(long)]
        json: Option<PathBuf>,
        /// `inproc`, `dds` (needs the `dds` feature; runs in a network namespace of its own,
        /// so as root), or `zenoh`: the dds benchmark with the Zenoh variants (rclev-zenoh and
        /// a bare Zenoh session, peer to peer and through a router, and rclev on DDS beside
        /// them; needs the `dds` and `zenoh` features).
        #[arg(long, value_enum, default_value_t = PubsubTransport::Inproc)]
        transport: PubsubTransport,
        /// dds: what to measure: `pair` (throughput and round trip of one stream) or `many`
        /// (10 topics × 5 subscriptions on one node).
        #[cfg(feature = "dds")]
        #[arg(long, value_enum, default_value_t = bench_dds::Scenario::Pair)]
        scenario: bench_dds::Scenario,
        /// dds: payload sizes in bytes, comma-separated [default: 16,65536; many: 16].
        #[arg(long, value_delimiter = ',')]
        sizes: Option<Vec<usize>>,
        /// dds: runs of every case, interleaved; the table shows medians.
        #[arg(long, default_value_t = 3)]
        repeat: usize,
        /// dds: seconds of traffic before each window.
        #[arg(long, default_value_t = 1.0)]
        warmup: f64,
        /// dds: variants, comma-separated: rclev (default delivery), rclev-worker, rclev-direct,
        /// raw, rcl (needs rclev's ROS 2 venv and a C compiler), ddsperf (needs
        /// cyclonedds-tools); a variant that cannot run is skipped with a note [default:
        /// rclev,rclev-worker,raw,rcl,ddsperf; many: rclev,raw].
        #[arg(long, value_delimiter = ',')]
        variants: Option<Vec<String>>,
        /// dds: pings per second in the round-trip phase; with `--scenario many`, messages per
        /// second on each topic.
        #[arg(long, default_value_t = 1000.0)]
        ping_hz: f64,
    },
    /// Timer precision: rclev's shared scheduler against the reference design, the per-task
    /// design and a bare tokio interval, side by side.
    Timers {
        /// Timer rates in Hz, comma-separated.
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "1000,5000,10000,16000,18000,20000,50000"
        )]
        rates: Vec<f64>,
        /// Seconds of measurement per variant and rate.
        #[arg(long, default_value_t = 5.0)]
        secs: f64,
        /// Timers per variant (each at the given rate).
        #[arg(long, default_value_t = 1)]
        timers: usize,
        /// Variants to run, comma-separated.
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "rclev,reference,per-task,tokio-interval,os-sleep"
        )]
        variants: Vec<String>,
        /// Write the rows as JSON.
        #[arg(long)]
        json: Option<PathBuf>,
        /// Draw achieved % vs rate as a PNG.
        #[arg(long)]
        plot: Option<PathBuf>,
        /// rclev hands ticks to the worker at most this early (µs; default: the library
        /// default; 0 = no busy-waiting).
        #[arg(long)]
        handoff_lead_us: Option<u64>,
        /// rclev workers spin this long before parking when work arrives often (µs).
        #[arg(long)]
        worker_spin_us: Option<u64>,
        /// Run rclev's workers as tasks on a shared Tokio runtime with this many threads
        /// instead of the default (a thread per worker).
        #[arg(long)]
        runtime_threads: Option<usize>,
        /// Runs of every cell (interleaved); the table shows medians and the range of %.
        #[arg(long, default_value_t = 1)]
        repeat: usize,
        /// CPU hogs (processes of their own) running beside each measurement.
        #[arg(long, default_value_t = 0)]
        load: usize,
        /// After each cell, print per-thread CPU, run-queue wait and context switches, and
        /// where rclev's ticks went (dropped where, each thread's lateness).
        #[arg(long)]
        verbose: bool,
    },
}

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

/// Whether `command` runs until Ctrl-C and then ends cleanly (see [`interrupt`]).
#[cfg(feature = "dds")]
fn ends_on_ctrl_c(command: &Command) -> bool {
    matches!(
        command,
        Command::Topic(
            TopicCommand::Echo { .. }
                | TopicCommand::Pub { .. }
                | TopicCommand::Hz { .. }
                | TopicCommand::Bw { .. }
        ) | Command::Action(ActionCommand::SendGoal { .. })
            | Command::Bag(bag::BagCommand::Record(_) | bag::BagCommand::Play(_))
    )
}

fn run() -> errors::Result {
    let cli = Cli::parse();
    // First thing: a Ctrl-C during the DDS set-up must end the command cleanly too.
    #[cfg(feature = "dds")]
    if ends_on_ctrl_c(&cli.command) {
        interrupt::install();
    }
    // RUST_LOG, or: rclev's own messages from info up, its dependencies' (Zenoh's "Using
    // ZID…", "Zenoh can be reached at…") from warnings up, as `ros2` on rmw_zenoh shows none
    // of theirs. Colour only on a terminal: piped, the lines are plain text.
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(DEFAULT_LOG_FILTER)),
        )
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .init();
    match cli.command {
        #[cfg(feature = "dds")]
        Command::Bag(command) => bag::run(command),
        Command::Demo(DemoCommand::TalkerListener { secs, rate }) => {
            demo::talker_listener(secs, rate)
        }
        Command::Demo(DemoCommand::Fibonacci { order, step_ms }) => demo::fibonacci(order, step_ms),
        Command::Interface(InterfaceCommand::List) => interface::list(),
        Command::BenchHog { secs } => bench_timers::hog(secs),
        #[cfg(feature = "zenoh")]
        Command::Zenoh(ZenohCommand::Router) => zenoh_router::run(),
        Command::Interface(InterfaceCommand::Show { name }) => interface::show(&name),
        #[cfg(feature = "dds")]
        Command::Topic(TopicCommand::Echo {
            topic,
            type_name,
            once,
            count,
        }) => topic::echo(&topic, type_name.as_deref(), once, count),
        #[cfg(feature = "dds")]
        Command::Topic(TopicCommand::Pub {
            topic,
            type_name,
            values,
            rate,
            once,
            times,
            wait_matching_subscriptions,
        }) => {
            let times = if once { Some(1) } else { times };
            topic::publish(topic::PubOptions {
                topic: &topic,
                type_name: &type_name,
                values: &values,
                rate,
                times,
                wait_matching: wait_matching_subscriptions.unwrap_or(if times.is_some() {
                    1
                } else {
                    0
                }),
            })
        }
        #[cfg(feature = "dds")]
        Command::Topic(TopicCommand::List {
            show_types,
            include_hidden_topics,
            wait,
        }) => graph::topic_list(show_types, include_hidden_topics, wait),
        #[cfg(feature = "dds")]
        Command::Topic(TopicCommand::Info {
            topic,
            verbose,
            wait,
        }) => graph::topic_info(&topic, verbose, wait),
        #[cfg(feature = "dds")]
        Command::Topic(TopicCommand::Hz {
            topic,
            window,
            reports,
        }) => topic_stats::run(&topic, topic_stats::Stat::Rate, window, reports),
        #[cfg(feature = "dds")]
        Command::Topic(TopicCommand::Bw {
            topic,
            window,
            reports,
        }) => topic_stats::run(&topic, topic_stats::Stat::Bandwidth, window, reports),
        #[cfg(feature = "dds")]
        Command::Node(NodeCommand::List { wait }) => graph::node_list(wait),
        #[cfg(feature = "dds")]
        Command::Node(NodeCommand::Info {
            node,
            include_hidden,
            wait,
        }) => graph::node_info(&node, include_hidden, wait),
        #[cfg(feature = "dds")]
        Command::Service(ServiceCommand::List {
            show_types,
            include_hidden_services,
            wait,
        }) => graph::service_list(show_types, include_hidden_services, wait),
        #[cfg(feature = "dds")]
        Command::Service(ServiceCommand::Type { service, wait }) => {
            graph::service_type(&service, wait)
        }
        #[cfg(feature = "dds")]
        Command::Service(ServiceCommand::Call {
            service,
            type_name,
            values,
        }) => service_call::call(&service, &type_name, &values),
        #[cfg(feature = "dds")]
        Command::Param(ParamCommand::List { node }) => param::list(&node),
        #[cfg(feature = "dds")]
        Command::Param(ParamCommand::Get { node, name }) => param::get(&node, &name),
        #[cfg(feature = "dds")]
        Command::Param(ParamCommand::Set { node, name, value }) => param::set(&node, &name, &value),
        #[cfg(feature = "dds")]
        Command::Param(ParamCommand::Describe { node, name }) => param::describe(&node, &name),
        #[cfg(feature = "dds")]
        Command::Param(ParamCommand::Dump { node }) => param::dump(&node),
        #[cfg(feature = "dds")]
        Command::Lifecycle(command) => lifecycle::run(command),
        #[cfg(feature = "dds")]
        Command::Action(ActionCommand::List { show_types, wait }) => {
            graph::action_list(show_types, wait)
        }
        #[cfg(feature = "dds")]
        Command::Action(ActionCommand::Info { action, wait }) => graph::action_info(&action, wait),
        #[cfg(feature = "dds")]
        Command::Action(ActionCommand::SendGoal {
            action,
            type_name,
            values,
            feedback,
        }) => action_goal::send_goal(&action, &type_name, &values, feedback),
        #[cfg(feature = "dds")]
        Command::BenchDdsRole(args) => bench_dds::role(args),
        #[cfg(feature = "dds")]
        Command::BenchBagPublisher(args) => bench_bag::publisher(args),
        #[cfg(feature = "dds")]
        Command::BenchBagSubscriber(args) => bench_bag::subscriber(args),
        #[cfg(feature = "dds")]
        Command::Bench(BenchCommand::Bag {
            parts,
            secs,
            play_secs,
            sizes,
            repeat,
            json,
        }) => bench_bag::run(bench_bag::Options {
            parts,
            secs,
            play_secs,
            sizes,
            repeat,
            json: json.as_deref(),
        }),
        Command::Bench(BenchCommand::Pubsub {
            transport: PubsubTransport::Inproc,
            messages,
            secs,
            json,
            ..
        }) => bench_pubsub::run(messages, secs, json.as_deref()),
        #[cfg(feature = "dds")]
        Command::Bench(BenchCommand::Pubsub {
            transport: transport @ (PubsubTransport::Dds | PubsubTransport::Zenoh),
            secs,
            json,
            scenario,
            sizes,
            repeat,
            warmup,
            variants,
            ping_hz,
            ..
        }) => bench_dds::run(bench_dds::Options {
            scenario,
            secs,
            warmup,
            sizes: sizes.unwrap_or_else(|| scenario.default_sizes()),
            repeat,
            variants: variants.unwrap_or_else(|| match transport {
                PubsubTransport::Zenoh => bench_dds::ZENOH_VARIANTS
                    .iter()
                    .map(|v| v.to_string())
                    .collect(),
                _ => scenario.default_variants(),
            }),
            ping_hz,
            json: json.as_deref(),
        }),
        #[cfg(not(feature = "dds"))]
        Command::Bench(BenchCommand::Pubsub {
            transport: PubsubTransport::Dds | PubsubTransport::Zenoh,
            ..
        }) => Err(
            "rclev was built without DDS: cargo build --release -p rclev-cli --features dds".into(),
        ),
        Command::Clock {
            scale,
            pause_after,
            rate,
            secs,
        } => simtime::run_clock(scale, rate, secs, pause_after),
        Command::Bench(BenchCommand::Simtime {
            secs,
            clock_hz,
            json,
        }) => simtime::bench_simtime(secs, clock_hz, json.as_deref()),
        Command::Bench(BenchCommand::Timers {
            rates,
            secs,
            timers,
            variants,
            json,
            plot,
            handoff_lead_us,
            worker_spin_us,
            runtime_threads,
            repeat,
            load,
            verbose,
        }) => {
            let mut executor = rclev::ExecutorOptions::default();
            if let Some(worker_threads) = runtime_threads {
                executor.runtime = rclev::RuntimeChoice::Own { worker_threads };
            }
            let us = std::time::Duration::from_micros;
            if let Some(v) = handoff_lead_us {
                executor.timer_precision.handoff_lead = us(v);
            }
            if let Some(v) = worker_spin_us {
                executor.worker_spin = us(v);
            }
            bench_timers::run(bench_timers::Options {
                rates,
                secs,
                timers,
                variants,
                json: json.as_deref(),
                plot: plot.as_deref(),
                executor,
                repeat,
                load,
                verbose,
            })
        }
    }
}
