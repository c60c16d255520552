//! `rclev bag play`: replays a rosbag2 MCAP bag's messages on their topics, timed as they were
//! recorded, like `ros2 bag play`.
//!
//! The messages go out as the CDR bytes the bag holds, through the transport
//! `RMW_IMPLEMENTATION` names (DDS or Zenoh), with the QoS rosbag2's player would offer
//! ([`qos`]). A topic's type is the one rclev knows (compiled in, or installed under
//! `AMENT_PREFIX_PATH`), else the one the bag's schema defines; a topic whose type is neither
//! is skipped with a warning.
//!
//! Timing: the playback thread sleeps to absolute deadlines ([`schedule::PlayClock`]), with
//! 1 ns timer slack, to [`SPIN_MARGIN`] before the deadline, then yields until it. The kernel
//! ends a sleep some tens of µs late on an idle host, and more on a busy one; the margin
//! absorbs that, at the cost of a short spin per message. A separate reader thread decodes
//! the bag ahead (MCAP chunks, zstd, in the reader's log-time order), so reading never delays
//! a message that is due.
//!
//! [`play_with`] is the whole playback, with the pause/step/rate [`Control`]s fed by a
//! channel and each publish reported with its lateness: the CLI drives it from the keyboard,
//! the bag benchmark and the tests without one.

mod qos;
mod schedule;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use rclev::msg::TypeInfo;
use rclev::transport::{NodePort, Payload, PublisherPort, TopicEndpoint};
use rclev::QoSProfile;
use rclev_bag::{BagMessage, BagReader, Schema, TopicMetadata};

use super::PlayArgs;
use crate::errors::Result;
use crate::wire::CliTransport;
use schedule::{valid_rate, PlayClock};

/// How long before a deadline the playback thread stops sleeping and starts yielding: above
/// the few tens of µs an idle kernel ends a timed sleep late, so that the publish is on time
/// to within a few µs; a busy host may still wake it later.
pub(crate) const SPIN_MARGIN: Duration = Duration::from_micros(200);

/// The longest the playback thread sleeps before looking at the keys and Ctrl-C again.
const SLICE: Duration = Duration::from_millis(50);

/// How much an arrow key changes the rate: rosbag2 adds or takes 0.1 ("10%" in its help).
const RATE_STEP: f64 = 0.1;

/// How long the publishers stay after the last message, so that reliable writers can still
/// resend what a subscriber missed (`ros2 topic pub` waits as long).
const LINGER: Duration = Duration::from_millis(500);

/// How many messages the reader thread decodes ahead of the playback.
const READ_AHEAD: usize = 256;

/// What playback does: `rclev bag play`'s options, checked.
#[derive(Debug, Clone)]
pub(crate) struct PlayOptions {
    /// The bag directory, or one of its MCAP files.
    pub bag: PathBuf,
    /// Playback speed (positive).
    pub rate: f64,
    /// How far into the bag playback starts.
    pub start_offset: Duration,
    /// Play again and again until Ctrl-C.
    pub looped: bool,
    /// The topics to play (absolute names); empty: all.
    pub topics: Vec<String>,
    /// `(old, new)` topic renames (absolute names); the first rule naming a topic applies.
    pub remaps: Vec<(String, String)>,
    /// QoS profiles by (recorded) topic name, replacing the adapted ones.
    pub qos_overrides: HashMap<String, QoSProfile>,
    /// Publish `/clock` at this rate (Hz).
    pub clock_hz: Option<f64>,
    /// The wait before each pass of the bag.
    pub delay: Duration,
    /// Start paused.
    pub start_paused: bool,
    /// Wait until every topic's publisher has this many matched subscriptions before playing.
    pub wait_for_subscribers: usize,
    /// Check each chunk against its CRC (`--no-crc-check` turns it off).
    pub check_crcs: bool,
    /// Print what happens, as `ros2 bag play` does (start, pause, rate, end).
    pub announce: bool,
    /// How long the publishers stay after the last message ([`LINGER`] for the CLI).
    pub linger: Duration,
}

impl PlayOptions {
    /// The options the command line gives, checked: a bad rate, offset, delay, clock rate,
    /// remap rule, topic name or overrides file is an error that says so.
    pub(crate) fn from_args(args: &PlayArgs) -> Result<Self> {
        if !valid_rate(args.rate) {
            return Err(format!("--rate must be a positive number, not {}", args.rate).into());
        }
        let seconds = |what: &str, s: f64| -> Result<Duration> {
            Duration::try_from_secs_f64(s).map_err(|_| {
                format!("{what} must be a non-negative number of seconds, not {s}").into()
            })
        };
        let clock_hz = match args.clock {
            None => None,
            // 0 Hz is off, as rosbag2's `--clock 0`.
            Some(0.0) => None,
            Some(hz) if hz.is_finite() && hz > 0.0 => Some(hz),
            Some(hz) => {
                return Err(format!("--clock must be a positive rate in Hz, not {hz}").into())
            }
        };
        let qos_overrides = match &args.qos_profile_overrides_path {
            None => HashMap::new(),
            Some(path) => {
                let text = rclev_bag::yaml::read_file(path)
                    .map_err(|e| format!("--qos-profile-overrides-path {}: {e}", path.display()))?;
                qos::overrides_from_yaml(&text)
                    .map_err(|e| format!("--qos-profile-overrides-path {}: {e}", path.display()))?
            }
        };
        Ok(Self {
            bag: args.bag.clone(),
            rate: args.rate,
            start_offset: seconds("--start-offset", args.start_offset)?,
            looped: args.looped,
            topics: args
                .topics
                .iter()
                .map(|t| crate::topic::absolute(t))
                .collect::<Result<_>>()?,
            remaps: args
                .remap
                .iter()
                .map(|r| parse_remap(r))
                .collect::<Result<_>>()?,
            qos_overrides,
            clock_hz,
            delay: seconds("--delay", args.delay)?,
            start_paused: args.start_paused,
            wait_for_subscribers: args.wait_for_subscribers,
            check_crcs: !args.no_crc_check,
            announce: true,
            linger: LINGER,
        })
    }
}

/// A remap rule `old:=new`, both topic names (relative ones taken from `/`).
pub(crate) fn parse_remap(rule: &str) -> Result<(String, String)> {
    let bad = || format!("--remap '{rule}': a rule is old_topic:=new_topic");
    let (old, new) = rule.split_once(":=").ok_or_else(bad)?;
    if old.trim().is_empty() || new.trim().is_empty() || new.contains(":=") {
        return Err(bad().into());
    }
    let name =
        |n: &str| crate::topic::absolute(n.trim()).map_err(|e| format!("--remap '{rule}': {e}"));
    Ok((name(old)?, name(new)?))
}

/// The name topic `name` is played on.
fn remapped<'a>(remaps: &'a [(String, String)], name: &'a str) -> &'a str {
    remaps
        .iter()
        .find(|(old, _)| old == name)
        .map_or(name, |(_, new)| new.as_str())
}

/// What playback can be told while it runs: rosbag2's keyboard controls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Control {
    /// Pause, or resume.
    TogglePause,
    /// While paused: publish the next message now, and move bag time to it.
    PlayNext,
    /// Raise the rate by 0.1.
    Faster,
    /// Lower the rate by 0.1 (never to 0 or below).
    Slower,
}

/// One message published.
// The CLI's observer ignores it: its reader is `rclev bench bag`, which builds on this.
#[allow(dead_code)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct Published<'a> {
    /// The topic it went out on (after remapping).
    pub topic: &'a str,
    /// Its log time in the bag, ns since the epoch.
    pub log_time: u64,
    /// How late it went out, in ns, against its scheduled time (negative: early); `None` for a
    /// message stepped while paused, which has no schedule.
    pub lateness_ns: Option<i64>,
}

/// How playback went.
#[derive(Debug, Clone, Default)]
pub(crate) struct PlaySummary {
    /// Messages published (over every pass).
    pub published: u64,
    /// The lateness of each scheduled message, in ns, in publish order (see
    /// [`Published::lateness_ns`]).
    pub lateness_ns: Vec<i64>,
    /// The topics played, as published (after remapping).
    pub topics: Vec<String>,
    /// The topics skipped, with why.
    pub skipped: Vec<(String, String)>,
    /// Messages skipped because their bytes are not CDR (a subscriber that took one could
    /// not decode it, and an rclpy one stops taking).
    pub not_cdr: u64,
    /// Whether Ctrl-C ended it.
    pub interrupted: bool,
}

/// `rclev bag play`.
pub fn play(args: PlayArgs) -> Result {
    let options = PlayOptions::from_args(&args)?;
    let (tx, controls) = mpsc::channel();
    let keyboard = if args.disable_keyboard_controls {
        None
    } else {
        super::keys::Keyboard::start(move |key| control_of(key).is_none_or(|c| tx.send(c).is_ok()))
    };
    if keyboard.is_some() {
        for (key, what) in [
            ("SPACE", "Pause/Resume"),
            ("CURSOR_RIGHT", "Play Next Message"),
            ("CURSOR_UP", "Increase Rate 10%"),
            ("CURSOR_DOWN", "Decrease Rate 10%"),
        ] {
            println!("Press {key} for {what}");
        }
    } else if options.start_paused {
        eprintln!(
            "rclev: warning: starting paused without keyboard controls: nothing will play \
             until Ctrl-C"
        );
    }
    let transport = CliTransport::from_env()?;
    // `keyboard` restores the terminal when it drops, on return and on error alike.
    let summary = play_with(&transport, &options, &controls, &mut |_| {})?;
    drop(keyboard);
    if summary.not_cdr > 0 {
        eprintln!(
            "rclev: warning: {} message{} of the bag {} not CDR and {} not published",
            summary.not_cdr,
            if summary.not_cdr == 1 { "" } else { "s" },
            if summary.not_cdr == 1 { "is" } else { "are" },
            if summary.not_cdr == 1 { "was" } else { "were" },
        );
    }
    println!(
        "Published {} message{} on {} topic{}.",
        summary.published,
        if summary.published == 1 { "" } else { "s" },
        summary.topics.len(),
        if summary.topics.len() == 1 { "" } else { "s" }
    );
    Ok(())
}

/// The control a key stands for (none for Ctrl-C: the keyboard turns it into the signal).
fn control_of(key: super::keys::Key) -> Option<Control> {
    use super::keys::Key;
    match key {
        Key::Space => Some(Control::TogglePause),
        Key::Right => Some(Control::PlayNext),
        Key::Up => Some(Control::Faster),
        Key::Down => Some(Control::Slower),
        Key::CtrlC => None,
    }
}

/// A topic being played.
struct Played {
    /// Its name on the wire (after remapping).
    name: String,
    publisher: Arc<dyn PublisherPort>,
}

/// Plays the bag `options` names over `transport` until its end (every pass of a `--loop`)
/// or Ctrl-C, taking `controls` as they come, and calling `observer` after each publish.
pub(crate) fn play_with(
    transport: &CliTransport,
    options: &PlayOptions,
    controls: &mpsc::Receiver<Control>,
    observer: &mut dyn FnMut(&Published<'_>),
) -> Result<PlaySummary> {
    let mut reader = BagReader::open(&options.bag)?;
    reader.check_crcs(options.check_crcs);
    for i in reader.incomplete() {
        eprintln!(
            "rclev: warning: {} was not closed by its recorder: playing its first {} messages \
             ({})",
            i.path.display(),
            i.messages,
            i.reason
        );
    }
    let metadata = reader.metadata();
    for t in &options.topics {
        if reader.topic(t).is_none() {
            eprintln!("rclev: warning: the bag has no topic {t}");
        }
    }
    let selected: Vec<&TopicMetadata> = metadata
        .topics
        .iter()
        .map(|t| &t.metadata)
        .filter(|t| options.topics.is_empty() || options.topics.contains(&t.name))
        .collect();
    let types = resolve_types(&reader, &selected)?;
    let node = crate::topic::cli_node(transport, "bag_player")?;
    let mut summary = PlaySummary::default();
    let mut played: HashMap<String, Played> = HashMap::new();
    for topic in &selected {
        let info = match &types[&topic.name] {
            Ok(info) => *info,
            Err(reason) => {
                eprintln!("rclev: warning: skipping topic {}: {reason}", topic.name);
                summary.skipped.push((topic.name.clone(), reason.clone()));
                continue;
            }
        };
        let qos = match options.qos_overrides.get(&topic.name) {
            Some(q) => {
                if options.announce {
                    println!("Overriding QoS profile for topic {}", topic.name);
                }
                *q
            }
            None => {
                let (q, warning) = qos::adapt_offer(&topic.name, &topic.offered_qos_profiles);
                if let Some(w) = warning {
                    eprintln!("rclev: warning: {w}");
                }
                q
            }
        };
        let name = remapped(&options.remaps, &topic.name).to_string();
        let publisher = create_publisher(&node, &name, info, qos)?;
        summary.topics.push(name.clone());
        played.insert(topic.name.clone(), Played { name, publisher });
    }
    if played.is_empty() {
        return Err(if selected.is_empty() {
            "nothing to play: the bag has none of the topics asked for".into()
        } else {
            "nothing to play: no topic of the bag has a type rclev can publish".into()
        });
    }
    let clock = match options.clock_hz {
        None => None,
        Some(hz) => Some(ClockTicks {
            publisher: create_publisher(
                &node,
                "/clock",
                TypeInfo::of::<rclev::interfaces::rosgraph_msgs::msg::Clock>(),
                QoSProfile::clock(),
            )?,
            period_ns: (1e9 / hz).round().max(1.0) as i64,
            next: i64::MIN,
        }),
    };
    if options.wait_for_subscribers > 0 && !wait_for_subscribers(options, &played) {
        summary.interrupted = true;
        return Ok(summary);
    }
    let start = metadata
        .starting_time
        .saturating_add(u64::try_from(options.start_offset.as_nanos()).unwrap_or(u64::MAX));
    if options.announce {
        println!(
            "Playing {} ({} message{}, {:.3} s) at rate {}{}",
            options.bag.display(),
            metadata.message_count,
            if metadata.message_count == 1 { "" } else { "s" },
            metadata.duration.as_secs_f64(),
            options.rate,
            if options.looped { ", looping" } else { "" }
        );
    }
    // The publishing thread's sleeps end as close to their deadlines as the kernel can: the
    // default 50 µs of slack would add to every message's lateness.
    rclev::timer::set_thread_timer_slack(Duration::from_nanos(1));
    let names: Vec<String> = played.keys().cloned().collect();
    let mut player = Player {
        clock: PlayClock::new(
            as_i64(start),
            rclev::clock::monotonic_nanos(),
            options.rate,
            options.start_paused,
        ),
        ticks: clock,
        end: as_i64(
            metadata
                .starting_time
                .saturating_add(u64::try_from(metadata.duration.as_nanos()).unwrap_or(u64::MAX)),
        ),
        controls,
        step: false,
        announce: options.announce,
    };
    std::thread::scope(|scope| -> Result {
        let (tx, rx) = mpsc::sync_channel::<Read>(READ_AHEAD);
        let reader = &reader;
        let looped = options.looped;
        scope.spawn(move || read_ahead(reader, &names, looped, &tx));
        let delay = i64::try_from(options.delay.as_nanos()).unwrap_or(i64::MAX);
        player.clock.jump(
            as_i64(start),
            rclev::clock::monotonic_nanos().saturating_add(delay),
        );
        // Dropping `rx` on the way out (Ctrl-C, an error) ends the reader thread at its next
        // send.
        for item in rx {
            let m = match item {
                Read::Message(m) => m,
                Read::EndOfPass => {
                    let now = rclev::clock::monotonic_nanos();
                    player.clock.jump(as_i64(start), now.saturating_add(delay));
                    continue;
                }
                Read::Error(e) => return Err(e.into()),
            };
            if m.log_time < start {
                continue;
            }
            let Some(p) = played.get(&m.channel.topic.name) else {
                continue;
            };
            if let Err(e) = rclev::msg::CdrReader::from_encapsulated(&m.data) {
                summary.not_cdr += 1;
                if summary.not_cdr <= NOT_CDR_WARNINGS {
                    eprintln!(
                        "rclev: warning: skipping message {} of {} (log time {}): not CDR: {e}{}",
                        summary.published + summary.not_cdr,
                        m.channel.topic.name,
                        m.log_time,
                        if summary.not_cdr == NOT_CDR_WARNINGS {
                            "; further ones are only counted"
                        } else {
                            ""
                        }
                    );
                }
                continue;
            }
            let lateness_ns = match player.wait_for(as_i64(m.log_time))? {
                Wait::Due(late) => Some(late),
                Wait::Stepped => None,
                Wait::Interrupted => {
                    summary.interrupted = true;
                    break;
                }
            };
            if summary.published == 0 && options.announce {
                // Once, at the first message: what matched by the time playback began.
                say_matched(&played);
            }
            p.publisher
                .publish(Payload::Serialized(Box::new(m.data)))
                .map_err(|e| format!("publishing on {}: {}", p.name, e.error))?;
            summary.published += 1;
            summary.lateness_ns.extend(lateness_ns);
            observer(&Published {
                topic: &p.name,
                log_time: m.log_time,
                lateness_ns,
            });
        }
        Ok(())
    })?;
    if summary.interrupted && options.announce {
        println!("Stopping playback.");
    }
    if summary.published > 0 && !summary.interrupted {
        linger(options.linger);
    }
    Ok(summary)
}

/// How many messages that are not CDR are named one by one; the rest are counted.
const NOT_CDR_WARNINGS: u64 = 10;

/// A message of the bag, read ahead, or the end of one pass over it.
enum Read {
    Message(BagMessage),
    EndOfPass,
    Error(String),
}

/// Reads the topics `names` of the bag into `out`, once or (`looped`) again and again, until
/// the playback stops taking them.
fn read_ahead(reader: &BagReader, names: &[String], looped: bool, out: &mpsc::SyncSender<Read>) {
    loop {
        for m in reader.messages_on(names.iter().cloned()) {
            let item = match m {
                Ok(m) => Read::Message(m),
                Err(e @ rclev_bag::Error::CrcMismatch { .. }) => Read::Error(format!(
                    "{e} (--no-crc-check plays a damaged chunk as far as it decodes)"
                )),
                Err(e) => Read::Error(e.to_string()),
            };
            let failed = matches!(item, Read::Error(_));
            if out.send(item).is_err() || failed {
                return;
            }
        }
        if !looped || out.send(Read::EndOfPass).is_err() {
            return;
        }
    }
}

fn as_i64(t: u64) -> i64 {
    i64::try_from(t).unwrap_or(i64::MAX)
}

/// A publisher of already-serialized messages of type `info`.
fn create_publisher(
    node: &Arc<dyn NodePort>,
    name: &str,
    info: TypeInfo,
    qos: QoSProfile,
) -> Result<Arc<dyn PublisherPort>> {
    node.create_publisher(
        &TopicEndpoint {
            name: name.to_string(),
            type_support: crate::topic::type_support(info),
            qos,
            reads_message_info: false,
            max_queue_bytes: rclev::transport::DEFAULT_QUEUE_BYTES,
        },
        Arc::new(()),
    )
    .map_err(|e| format!("cannot publish on {name}: {e}").into())
}

/// Waits until every publisher has the subscriptions asked for; `false` on Ctrl-C.
fn wait_for_subscribers(options: &PlayOptions, played: &HashMap<String, Played>) -> bool {
    let n = options.wait_for_subscribers;
    if options.announce {
        println!(
            "Waiting for {n} matching subscription{} on each of {} topic{}...",
            if n == 1 { "" } else { "s" },
            played.len(),
            if played.len() == 1 { "" } else { "s" }
        );
    }
    while played
        .values()
        .any(|p| p.publisher.subscription_count() < n)
    {
        if crate::interrupt::interrupted() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

/// Says how many of the played topics had a subscription matched when the first message went
/// out, and warns when none had: what a publisher sends before a subscription matches it is
/// lost to that subscription (DDS discovery takes tens of milliseconds; a bag's first
/// messages go out at once).
fn say_matched(played: &HashMap<String, Played>) {
    let matched = played
        .values()
        .filter(|p| p.publisher.subscription_count() > 0)
        .count();
    let subscriptions: usize = played
        .values()
        .map(|p| p.publisher.subscription_count())
        .sum();
    println!(
        "{matched} of {} topic{} had a subscription matched when playback started ({subscriptions} subscription{} in all)",
        played.len(),
        if played.len() == 1 { "" } else { "s" },
        if subscriptions == 1 { "" } else { "s" },
    );
    if matched == 0 {
        eprintln!(
            "rclev: warning: no subscription had matched any topic when playback started: \
             messages published before one matches are lost to it (--wait-for-subscribers N \
             waits for N on every topic; --delay S waits S seconds)"
        );
    }
}

/// Lets the publishers stay `d` (or until Ctrl-C).
fn linger(d: Duration) {
    let end = std::time::Instant::now() + d;
    while std::time::Instant::now() < end && !crate::interrupt::interrupted() {
        std::thread::sleep(Duration::from_millis(20).min(end - std::time::Instant::now()));
    }
}

/// The type of each topic of `topics` (by name), or why it has none: the type rclev knows,
/// else the bag's schema. Schemas come with messages: the bag is read for the first message
/// of each topic whose type rclev does not know, and no further than that.
fn resolve_types(
    reader: &BagReader,
    topics: &[&TopicMetadata],
) -> Result<HashMap<String, std::result::Result<TypeInfo, String>>> {
    let mut out = HashMap::new();
    let mut unknown: HashMap<String, String> = HashMap::new();
    for t in topics {
        if t.serialization_format != "cdr" {
            out.insert(
                t.name.clone(),
                Err(format!(
                    "serialization format '{}' (rclev plays cdr)",
                    t.serialization_format
                )),
            );
            continue;
        }
        match crate::topic::known_type(&t.type_name) {
            Ok(info) => {
                out.insert(t.name.clone(), Ok(info));
            }
            Err(e) => {
                unknown.insert(t.name.clone(), e.to_string());
            }
        }
    }
    if !unknown.is_empty() {
        for m in reader.messages_on(unknown.keys().cloned().collect::<Vec<_>>()) {
            let m = m?;
            let Some(why_unknown) = unknown.remove(&m.channel.topic.name) else {
                continue;
            };
            // The bag's own definition, when it has one, is what the topic is played with:
            // its error is the one that matters.
            let found = match m.channel.schema.as_ref().filter(|s| !s.data.is_empty()) {
                Some(schema) => schema_type(&m.channel.topic.type_name, schema),
                None => Err(format!(
                    "{why_unknown}, and the bag has no definition of it"
                )),
            };
            out.insert(m.channel.topic.name.clone(), found);
            if unknown.is_empty() {
                break;
            }
        }
        // Topics without a message: nothing to play, and no schema to read.
        for (name, why) in unknown {
            out.insert(name, Err(why));
        }
    }
    Ok(out)
}

/// Type `type_name` as the bag's schema defines it.
fn schema_type(type_name: &str, schema: &Schema) -> std::result::Result<TypeInfo, String> {
    if schema.encoding != rclev_bag::SCHEMA_ENCODING {
        return Err(format!(
            "the bag defines it as '{}', which rclev does not read (it reads {})",
            schema.encoding,
            rclev_bag::SCHEMA_ENCODING
        ));
    }
    crate::installed_types::from_message_definition(type_name, &schema.data)
        .map_err(|e| format!("the bag's definition of it does not read: {e}"))
}

/// `/clock`'s publisher and its next tick.
struct ClockTicks {
    publisher: Arc<dyn PublisherPort>,
    period_ns: i64,
    /// When the next tick is due (monotonic ns); `i64::MIN`: at once.
    next: i64,
}

/// How the wait for a message ended.
enum Wait {
    /// Its time came; this many ns ago.
    Due(i64),
    /// It was stepped to while paused.
    Stepped,
    /// Ctrl-C.
    Interrupted,
}

/// The playback's state between messages: its clock, the controls, `/clock`.
struct Player<'a> {
    clock: PlayClock,
    ticks: Option<ClockTicks>,
    /// The bag's last log time: `/clock` never reads later (a tick that comes late on a busy
    /// host, or while the publishers linger, would otherwise show a time the bag never had).
    end: i64,
    controls: &'a mpsc::Receiver<Control>,
    /// A [`Control::PlayNext`] is pending.
    step: bool,
    announce: bool,
}

impl Player<'_> {
    /// Waits until bag time `bag` is due, publishing `/clock` on its ticks and acting on the
    /// controls meanwhile.
    fn wait_for(&mut self, bag: i64) -> Result<Wait> {
        loop {
            if crate::interrupt::interrupted() {
                return Ok(Wait::Interrupted);
            }
            let now = rclev::clock::monotonic_nanos();
            while let Ok(c) = self.controls.try_recv() {
                let said = apply(&mut self.clock, &mut self.step, c, now);
                if self.announce {
                    println!("{said}");
                }
            }
            self.tick(now)?;
            if self.clock.is_paused() && self.step {
                self.step = false;
                self.clock.jump(bag, now);
                return Ok(Wait::Stepped);
            }
            let next_tick = self.ticks.as_ref().map_or(i64::MAX, |t| t.next);
            let slice_end = now.saturating_add(SLICE.as_nanos() as i64);
            match self.clock.due(bag) {
                Some(due) if now >= due => return Ok(Wait::Due(now - due)),
                Some(due) if due <= next_tick.min(slice_end) => {
                    // Then round again: a control or Ctrl-C that came during the sleep is
                    // seen before the publish, which is due by then.
                    precise_sleep_until(due);
                }
                _ => crate::clock::sleep_until_ns(next_tick.min(slice_end).max(0) as u64),
            }
        }
    }

    /// Publishes `/clock` if its tick is due at `now` (bag time at `now`).
    fn tick(&mut self, now: i64) -> Result {
        let Some(t) = &mut self.ticks else {
            return Ok(());
        };
        if now < t.next {
            return Ok(());
        }
        let bag = self.clock.now(now).clamp(0, self.end.max(0));
        let msg = rclev::interfaces::rosgraph_msgs::msg::Clock {
            clock: rclev::interfaces::builtin_interfaces::msg::Time {
                sec: i32::try_from(bag / 1_000_000_000).unwrap_or(i32::MAX),
                nanosec: (bag % 1_000_000_000) as u32,
            },
        };
        t.publisher
            .publish(Payload::Serialized(Box::new(rclev::msg::to_cdr(&msg)?)))
            .map_err(|e| format!("publishing on /clock: {}", e.error))?;
        // The next tick on the period's grid; after a stall (a busy host, a long sleep
        // elsewhere) from now, rather than a burst of missed ticks.
        t.next = if t.next == i64::MIN || now - t.next >= t.period_ns {
            now + t.period_ns
        } else {
            t.next + t.period_ns
        };
        Ok(())
    }
}

/// Sleeps until monotonic time `deadline`: a timed sleep to [`SPIN_MARGIN`] before it, then
/// yields until it.
fn precise_sleep_until(deadline: i64) {
    let margin = SPIN_MARGIN.as_nanos() as i64;
    if deadline - rclev::clock::monotonic_nanos() > margin {
        crate::clock::sleep_until_ns((deadline - margin).max(0) as u64);
    }
    while rclev::clock::monotonic_nanos() < deadline {
        std::thread::yield_now();
    }
}

/// Applies control `c` at monotonic time `now`; what it did, in rosbag2's words.
fn apply(clock: &mut PlayClock, step: &mut bool, c: Control, now: i64) -> String {
    match c {
        Control::TogglePause if clock.is_paused() => {
            clock.resume(now);
            "Resuming play.".into()
        }
        Control::TogglePause => {
            clock.pause(now);
            "Pausing play.".into()
        }
        Control::PlayNext if clock.is_paused() => {
            *step = true;
            "Playing the next message.".into()
        }
        Control::PlayNext => "Called play next, but not in paused state.".into(),
        Control::Faster | Control::Slower => {
            let delta = if c == Control::Faster {
                RATE_STEP
            } else {
                -RATE_STEP
            };
            // Rounded so that 1.0 + 0.1 shows as 1.1, and 0.1 - 0.1 is 0 (refused).
            let rate = ((clock.rate() + delta) * 1e6).round() / 1e6;
            if clock.set_rate(rate, now) {
                format!("Set rate to {rate}")
            } else {
                format!("Failed to set rate to invalid value {rate}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;

    #[test]
    fn remap_rules_parse_or_say_why_not() {
        assert_eq!(
            parse_remap("/chatter:=/talk").unwrap(),
            ("/chatter".to_string(), "/talk".to_string())
        );
        assert_eq!(
            parse_remap("chatter:=ns/talk").unwrap(),
            ("/chatter".to_string(), "/ns/talk".to_string())
        );
        for bad in [
            "chatter",
            ":=/x",
            "/x:=",
            "/a:=/b:=/c",
            "/a b:=/c",
            "/a:=/1x",
        ] {
            let e = parse_remap(bad).unwrap_err().to_string();
            assert!(e.contains(&format!("'{bad}'")), "{bad}: {e}");
        }
        let rules = [
            ("/a".to_string(), "/b".to_string()),
            ("/a".to_string(), "/c".to_string()),
        ];
        assert_eq!(remapped(&rules, "/a"), "/b");
        assert_eq!(remapped(&rules, "/z"), "/z");
    }

    #[test]
    fn controls_pause_step_and_change_the_rate() {
        let t0 = 1_765_000_000 * S;
        let mut clock = PlayClock::new(t0, 0, 1.0, false);
        let mut step = false;
        assert_eq!(
            apply(&mut clock, &mut step, Control::PlayNext, 0),
            "Called play next, but not in paused state."
        );
        assert!(!step);
        assert_eq!(
            apply(&mut clock, &mut step, Control::TogglePause, S),
            "Pausing play."
        );
        assert_eq!(clock.due(t0 + 2 * S), None);
        apply(&mut clock, &mut step, Control::PlayNext, S);
        assert!(step);
        assert_eq!(
            apply(&mut clock, &mut step, Control::Faster, 2 * S),
            "Set rate to 1.1"
        );
        assert_eq!(
            apply(&mut clock, &mut step, Control::TogglePause, 3 * S),
            "Resuming play."
        );
        // 1 s of bag played before the pause; the next second takes 1/1.1 s.
        assert_eq!(clock.due(t0 + 2 * S), Some(3 * S + 909_090_909));
        for _ in 0..10 {
            apply(&mut clock, &mut step, Control::Slower, 4 * S);
        }
        assert_eq!(clock.rate(), 0.1);
        assert_eq!(
            apply(&mut clock, &mut step, Control::Slower, 4 * S),
            "Failed to set rate to invalid value 0"
        );
        assert_eq!(clock.rate(), 0.1);
    }
}
