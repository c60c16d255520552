//! `rclev bag record|play|info`: rosbag2-compatible bags (MCAP storage, `metadata.yaml`
//! version 9) over whichever transport `RMW_IMPLEMENTATION` names, built on the `rclev-bag`
//! crate. Bags move freely between rclev and ROS 2's tools (`ros2 bag`, `rosbags`,
//! Foxglove).

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::errors::Result;

mod info;
mod keys;
mod learn;
mod play;
mod record;
mod types;

/// `rclev bag …`.
#[derive(Subcommand)]
pub enum BagCommand {
    /// Records topics into a bag until Ctrl-C, like `ros2 bag record`.
    Record(RecordArgs),
    /// Replays a bag's messages on their topics, like `ros2 bag play`.
    Play(PlayArgs),
    /// What a bag holds, like `ros2 bag info`.
    Info {
        /// The bag directory (or one of its `.mcap` files).
        bag: PathBuf,
    },
}

/// `rclev bag record`'s options (named as `ros2 bag record`'s).
#[derive(Args)]
pub struct RecordArgs {
    /// Topics to record (besides those `--all` or `--regex` select).
    pub topics: Vec<String>,
    /// Record every topic (hidden ones only with `--include-hidden-topics`).
    #[arg(short = 'a', long)]
    pub all: bool,
    /// Record the topics whose name matches this regular expression.
    #[arg(short = 'e', long)]
    pub regex: Option<String>,
    /// Leave out the topics whose name matches this regular expression.
    #[arg(short = 'x', long)]
    pub exclude_regex: Option<String>,
    /// Leave out these topics.
    #[arg(long, num_args = 1..)]
    pub exclude_topics: Vec<String>,
    /// Record hidden topics too (a name part starting with `_`, as an action's `_action/…`).
    #[arg(long)]
    pub include_hidden_topics: bool,
    /// The bag directory to create (default: `rosbag2_YYYY_MM_DD-HH_MM_SS`).
    #[arg(short = 'o', long)]
    pub output: Option<PathBuf>,
    /// Start a new file once the current one reaches this many bytes (0: never).
    #[arg(short = 'b', long, default_value_t = 0)]
    pub max_bag_size: u64,
    /// Start a new file once the current one spans this many seconds (0: never).
    #[arg(short = 'd', long, default_value_t = 0)]
    pub max_bag_duration: u64,
    /// MCAP storage preset: `none` (rosbag2's default), `fastwrite` (no chunk index work
    /// beyond the default), `zstd_fast` or `zstd_small` (zstd-compressed chunks).
    #[arg(long, default_value = "none")]
    pub storage_preset_profile: String,
    /// How often to look for new topics, in ms.
    #[arg(short = 'p', long, default_value_t = 100)]
    pub polling_interval: u64,
}

/// `rclev bag play`'s options (named as `ros2 bag play`'s).
#[derive(Args)]
pub struct PlayArgs {
    /// The bag directory (or one of its `.mcap` files).
    pub bag: PathBuf,
    /// Playback speed: 2 plays twice as fast.
    #[arg(short = 'r', long, default_value_t = 1.0)]
    pub rate: f64,
    /// Start this many seconds into the bag.
    #[arg(long, default_value_t = 0.0)]
    pub start_offset: f64,
    /// Play the bag again and again until Ctrl-C.
    #[arg(short = 'l', long = "loop")]
    pub looped: bool,
    /// Play only these topics.
    #[arg(long, num_args = 1..)]
    pub topics: Vec<String>,
    /// Rename topics: `old:=new`.
    #[arg(short = 'm', long, num_args = 1..)]
    pub remap: Vec<String>,
    /// A YAML file of QoS profiles by topic, replacing the recorded ones.
    #[arg(long)]
    pub qos_profile_overrides_path: Option<PathBuf>,
    /// Publish `/clock` from the bag's time, at this rate (Hz; 40 when given alone).
    #[arg(long, num_args = 0..=1, default_missing_value = "40")]
    pub clock: Option<f64>,
    /// Wait this many seconds after creating the publishers before playing.
    #[arg(short = 'd', long, default_value_t = 0.0)]
    pub delay: f64,
    /// Start paused (space resumes, on a terminal).
    #[arg(long)]
    pub start_paused: bool,
    /// No keyboard controls even on a terminal.
    #[arg(long)]
    pub disable_keyboard_controls: bool,
    /// Before playing, wait until every topic's publisher has this many matched
    /// subscriptions (rclev's, like `ros2 topic pub -w`).
    #[arg(long, default_value_t = 0)]
    pub wait_for_subscribers: usize,
    /// Play chunks whose data fails its CRC check, as far as they decode (by default a
    /// damaged chunk ends playback with an error that names it).
    #[arg(long)]
    pub no_crc_check: bool,
}

/// Runs a `bag` command.
pub fn run(command: BagCommand) -> Result {
    match command {
        BagCommand::Record(args) => record::record(args),
        BagCommand::Play(args) => play::play(args),
        BagCommand::Info { bag } => info::info(&bag),
    }
}
