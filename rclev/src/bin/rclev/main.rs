//! The `rclev` command line: demos and benchmarks.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

mod bench_pubsub;
mod demo;
mod report;

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
}

#[derive(Subcommand)]
enum BenchCommand {
    /// In-process publish→callback throughput and latency, against a bare tokio mpsc hand-off.
    Pubsub {
        /// Messages for the throughput phase.
        #[arg(long, default_value_t = 2_000_000)]
        messages: u64,
        /// Seconds for each latency phase.
        #[arg(long, default_value_t = 2.0)]
        secs: f64,
        /// Write the rows as JSON.
        #[arg(long)]
        json: Option<PathBuf>,
    },
}

fn main() -> anyhow_free::Result {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    match Cli::parse().command {
        Command::Demo(DemoCommand::TalkerListener { secs, rate }) => {
            demo::talker_listener(secs, rate)
        }
        Command::Bench(BenchCommand::Pubsub {
            messages,
            secs,
            json,
        }) => bench_pubsub::run(messages, secs, json.as_deref()),
    }
}

/// The CLI's error type: a message for the user.
mod anyhow_free {
    /// The CLI's result: any error prints as a message and exits 1.
    pub type Result<T = ()> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;
}
