//! `rclev bag record`: subscribes to the topics selected (by name, `--all`, `--regex`), as
//! they appear, and writes every message that arrives to a bag until Ctrl-C, then closes it
//! (`metadata.yaml`) and says what it recorded and whether any message was lost.
//!
//! One thread does it all: readiness of any subscription queues its index on a channel (once
//! until drained), the loop drains that subscription into the bag, and looks at the graph for
//! new topics every polling interval. Types rclev does not know are asked of a publisher's
//! node by a bounded pool of askers ([`Learner`]), so that a slow or silent node never stalls
//! the recording of the other topics, and a peer announcing thousands of types cannot make
//! the recorder spawn or keep without bound.
//!
//! Loss is counted against the publishers' sequence numbers (the message info of each
//! sample): a gap between two samples of one publisher is messages that never reached the
//! bag, whatever dropped them.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rclev::msg::TypeInfo;
use rclev::qos::{Durability, History, Reliability};
use rclev::transport::{
    EndpointInfo, EndpointKind, Gid, MessageInfo, NodePort, Payload, ReadyHook, SubscriptionPort,
    TopicEndpoint, Transport,
};
use rclev::QoSProfile;
use rclev_bag::{BagTopic, BagWriter, TopicId, WriterOptions};

use super::learn::{Learner, Outcome};
use super::{types, RecordArgs};
use crate::errors::Result;
use crate::topic::{absolute, cli_node, type_support};
use crate::wire::CliTransport;

/// Which topics a recording takes.
pub(crate) struct Selection {
    explicit: HashSet<String>,
    all: bool,
    regex: Option<regex::Regex>,
    exclude_regex: Option<regex::Regex>,
    exclude: HashSet<String>,
    include_hidden: bool,
}

/// A topic name with a part starting with `_` (`/fibonacci/_action/feedback`): hidden, as
/// ROS 2's tools hide it.
fn is_hidden(topic: &str) -> bool {
    topic.split('/').any(|part| part.starts_with('_'))
}

impl Selection {
    pub(crate) fn new(args: &RecordArgs) -> Result<Self> {
        let regex = |r: &Option<String>, what: &str| -> Result<Option<regex::Regex>> {
            r.as_deref()
                .map(|r| regex::Regex::new(r).map_err(|e| format!("{what} '{r}': {e}").into()))
                .transpose()
        };
        let names = |topics: &[String]| -> Result<HashSet<String>> {
            topics.iter().map(|t| absolute(t)).collect()
        };
        let selection = Self {
            explicit: names(&args.topics)?,
            all: args.all,
            regex: regex(&args.regex, "--regex")?,
            exclude_regex: regex(&args.exclude_regex, "--exclude-regex")?,
            exclude: names(&args.exclude_topics)?,
            include_hidden: args.include_hidden_topics,
        };
        if selection.explicit.is_empty() && !selection.all && selection.regex.is_none() {
            return Err("nothing to record: name topics, or give --all or --regex".into());
        }
        Ok(selection)
    }

    /// Whether `topic` is recorded. A topic named is recorded even if hidden; `--all` and
    /// `--regex` take hidden topics only with `--include-hidden-topics`, and never a
    /// service's introspection events (`…/_service_event`), which rosbag2 records only on
    /// request.
    pub(crate) fn matches(&self, topic: &str) -> bool {
        if self.explicit.contains(topic) {
            return true;
        }
        if self.exclude.contains(topic)
            || self
                .exclude_regex
                .as_ref()
                .is_some_and(|r| r.is_match(topic))
            || topic.ends_with("/_service_event")
            || (is_hidden(topic) && !self.include_hidden)
        {
            return false;
        }
        self.all || self.regex.as_ref().is_some_and(|r| r.is_match(topic))
    }
}

/// The QoS to record a topic with, from its publishers' (rosbag2's rule): reliable only if
/// every publisher is, transient local only if every publisher is (else a publisher of the
/// other kind would not match), and a history deep enough to ride out a stall of the disk.
pub(crate) fn subscription_qos(publishers: &[QoSProfile]) -> QoSProfile {
    let all = |f: &dyn Fn(&QoSProfile) -> bool| !publishers.is_empty() && publishers.iter().all(f);
    let reliable = all(&|q| q.reliability == Reliability::Reliable);
    let transient = all(&|q| q.durability == Durability::TransientLocal);
    let depth = publishers
        .iter()
        .filter_map(|q| match q.history {
            History::KeepLast(n) => Some(n),
            _ => None,
        })
        .max()
        .unwrap_or(0)
        .max(RECORD_DEPTH);
    let mut qos = QoSProfile::default().keep_last(depth);
    qos = if reliable {
        qos.reliable()
    } else {
        qos.best_effort()
    };
    if transient {
        qos = qos.transient_local();
    }
    qos
}

/// The least history the recorder keeps per topic: at 10,000 msg/s, a tenth of a second.
const RECORD_DEPTH: usize = 1000;

/// Rings the recorder's loop when a subscription has data: its index goes on the channel
/// once until the loop drains it.
struct Ready {
    index: usize,
    queued: Arc<AtomicBool>,
    tx: mpsc::Sender<usize>,
}

impl ReadyHook for Ready {
    fn ready(&self) {
        if !self.queued.swap(true, Ordering::AcqRel) {
            let _ = self.tx.send(self.index);
        }
    }
}

struct Recorded {
    id: TopicId,
    sub: Arc<dyn SubscriptionPort>,
    queued: Arc<AtomicBool>,
}

/// How often what was recorded is pushed to the file as a complete chunk, so that a crash
/// loses at most this much (or one chunk, whichever is less) — at the cost of smaller chunks
/// at low rates.
const FLUSH_EVERY: Duration = Duration::from_secs(1);

/// How long a topic whose type could not be learnt waits before it is tried again.
const RETRY: Duration = Duration::from_secs(5);

fn nanos(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// `rosbag2_YYYY_MM_DD-HH_MM_SS`, in local time, as rosbag2 names a bag.
fn default_bag_name() -> String {
    let now = libc_now();
    format!(
        "rosbag2_{:04}_{:02}_{:02}-{:02}_{:02}_{:02}",
        now.tm_year + 1900,
        now.tm_mon + 1,
        now.tm_mday,
        now.tm_hour,
        now.tm_min,
        now.tm_sec
    )
}

fn libc_now() -> libc::tm {
    // SAFETY: time(NULL) only returns the time; localtime_r writes the broken-down time into
    // the zeroed `tm` we own (all-zero is a valid `tm`) and reads only the `time_t` we pass.
    unsafe {
        let t = libc::time(std::ptr::null_mut());
        let mut tm: libc::tm = std::mem::zeroed();
        libc::localtime_r(&t, &mut tm);
        tm
    }
}

struct Recorder {
    /// First, so that it is dropped first: its askers hold `node`, and are waited for.
    learner: Learner,
    transport: CliTransport,
    node: Arc<dyn NodePort>,
    bag: BagWriter,
    selection: Selection,
    recorded: Vec<Recorded>,
    /// Topics subscribed, being resolved, or failed (with when to retry).
    known: HashSet<String>,
    failed: HashMap<String, Instant>,
    ready_tx: mpsc::Sender<usize>,
    ready_rx: mpsc::Receiver<usize>,
    /// Some topic waits for room in the learner's queue, or for its publishers' node to be
    /// known: look at the graph again.
    deferred: bool,
    /// Topics of unknown types whose publishers' node is not known, since when, and whether
    /// that was said.
    nodeless: HashMap<String, (Instant, bool)>,
    /// The last sequence number of each publisher, per subscription.
    last_sequence: HashMap<(usize, Gid), u64>,
    lost: u64,
    messages: u64,
    batch: Vec<(Payload, MessageInfo)>,
}

impl Recorder {
    /// Subscribes to the selected topics the graph shows with publishers, not yet recorded.
    fn discover(&mut self) -> Result {
        let graph = self.transport.graph();
        let now = Instant::now();
        self.failed.retain(|_, retry| *retry > now);
        self.deferred = false;
        for (topic, _) in graph.topic_names_and_types() {
            if self.known.contains(&topic)
                || self.failed.contains_key(&topic)
                || !self.selection.matches(&topic)
            {
                continue;
            }
            let publishers = graph.endpoints_of(&topic, EndpointKind::Publisher);
            let Some(first) = publishers.first() else {
                continue;
            };
            let type_name = first.type_name.clone();
            if publishers.iter().any(|p| p.type_name != type_name) {
                eprintln!(
                    "rclev: warning: topic {topic} has publishers of more than one type; \
                     recording {type_name}"
                );
            }
            let info =
                types::local(&type_name).or_else(|| self.learner.known(&type_name, &publishers));
            match info {
                Some(info) => {
                    self.nodeless.remove(&topic);
                    self.known.insert(topic.clone());
                    self.subscribe(&topic, info, &publishers)?
                }
                // No node to ask yet: looked at again at the next look, not in RETRY; said
                // once, if it lasts.
                None if !publishers
                    .iter()
                    .any(|p| p.type_name == type_name && crate::remote_types::node_known(p)) =>
                {
                    self.deferred = true;
                    let (since, said) = self.nodeless.entry(topic.clone()).or_insert((now, false));
                    if !*said && now.duration_since(*since) >= RETRY {
                        *said = true;
                        eprintln!(
                            "rclev: warning: not recording {topic} yet: its type {type_name} is \
                             neither known nor installed, and no ROS node is known for its \
                             publishers to describe it (a DDS writer outside ROS 2?)"
                        );
                    }
                }
                None => {
                    if self.learner.ask(topic.clone(), type_name, publishers) {
                        self.nodeless.remove(&topic);
                        self.known.insert(topic);
                    } else {
                        self.deferred = true;
                    }
                }
            }
        }
        Ok(())
    }

    fn subscribe(&mut self, topic: &str, info: TypeInfo, publishers: &[EndpointInfo]) -> Result {
        let offered: Vec<QoSProfile> = publishers.iter().map(|p| p.qos).collect();
        let id = self
            .bag
            .add_topic(BagTopic::new(topic, &info, offered.clone()))?;
        let index = self.recorded.len();
        let queued = Arc::new(AtomicBool::new(false));
        let sub = self.node.create_subscription(
            &TopicEndpoint {
                name: topic.to_string(),
                type_support: type_support(info),
                qos: subscription_qos(&offered),
                reads_message_info: true,
                max_queue_bytes: rclev::transport::DEFAULT_QUEUE_BYTES,
            },
            Arc::new(Ready {
                index,
                queued: queued.clone(),
                tx: self.ready_tx.clone(),
            }),
            Arc::new(()),
        )?;
        self.recorded.push(Recorded { id, sub, queued });
        println!("Subscribed to topic '{topic}' ({})", info.type_name);
        // What arrived before the hook was in place rings no bell: look once.
        self.drain(index)
    }

    /// Subscribes to `topic` if its type was learnt; else says why not.
    fn on_learnt(&mut self, topic: String, type_name: String, outcome: Outcome) -> Result {
        match outcome {
            Outcome::Learnt { info, from } => {
                if let Some(node) = from {
                    println!("Learnt type {type_name} from {node}");
                }
                let publishers = self
                    .transport
                    .graph()
                    .endpoints_of(&topic, EndpointKind::Publisher);
                self.subscribe(&topic, info, &publishers)
            }
            Outcome::Failed(e) => {
                eprintln!(
                    "rclev: warning: not recording {topic}: its type {type_name} is neither \
                     known nor installed, and no publisher described it ({e}); trying again \
                     in {RETRY:?}"
                );
                self.known.remove(&topic);
                self.failed.insert(topic, Instant::now() + RETRY);
                Ok(())
            }
            Outcome::Refused(e) => {
                // Left in `known`: never asked again.
                eprintln!(
                    "rclev: warning: not recording {topic}: its type {type_name} is neither \
                     known nor installed, and {e}"
                );
                Ok(())
            }
        }
    }

    /// Writes what subscription `index` holds to the bag.
    fn drain(&mut self, index: usize) -> Result {
        let Recorded {
            id, sub, queued, ..
        } = &self.recorded[index];
        let (id, sub) = (*id, sub.clone());
        // Cleared before taking: a sample arriving after the take rings again.
        queued.store(false, Ordering::Release);
        let mut batch = std::mem::take(&mut self.batch);
        loop {
            let more = sub.take_batch(256, &mut batch);
            for (payload, info) in batch.drain(..) {
                let Payload::Serialized(bytes) = payload else {
                    continue;
                };
                let received = match nanos(info.received_timestamp) {
                    0 => nanos(SystemTime::now()),
                    t => t,
                };
                let published = match nanos(info.source_timestamp) {
                    0 => received,
                    t => t,
                };
                self.bag.write_raw(id, received, published, &bytes)?;
                self.messages += 1;
                self.count_gap(index, &info);
            }
            if !more {
                break;
            }
        }
        self.batch = batch;
        Ok(())
    }

    fn count_gap(&mut self, index: usize, info: &MessageInfo) {
        let sequence = info.publication_sequence_number;
        if sequence == 0 || info.from_intra_process {
            return;
        }
        match self
            .last_sequence
            .insert((index, info.publisher_gid), sequence)
        {
            Some(last) if sequence > last + 1 => self.lost += sequence - last - 1,
            Some(last) if sequence <= last => {
                // Out of order (or a publisher restarted with the same GID): keep the
                // highest seen.
                self.last_sequence
                    .insert((index, info.publisher_gid), last.max(sequence));
            }
            _ => {}
        }
    }

    fn drain_all(&mut self) -> Result {
        for i in 0..self.recorded.len() {
            self.drain(i)?;
        }
        Ok(())
    }
}

/// `rclev bag record`.
pub fn record(args: RecordArgs) -> Result {
    let selection = Selection::new(&args)?;
    let mut options = WriterOptions::preset(&args.storage_preset_profile)?;
    options.max_file_size = (args.max_bag_size > 0).then_some(args.max_bag_size);
    options.max_file_duration =
        (args.max_bag_duration > 0).then(|| Duration::from_secs(args.max_bag_duration));
    let dir: PathBuf = args
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from(default_bag_name()));
    let transport = CliTransport::from_env()?;
    let node = cli_node(&transport, "bag_record")?;
    let bag = BagWriter::create(&dir, options)?;
    let (ready_tx, ready_rx) = mpsc::channel();
    let learner = Learner::new(&node);
    let mut r = Recorder {
        transport,
        node,
        bag,
        selection,
        recorded: Vec::new(),
        known: HashSet::new(),
        failed: HashMap::new(),
        ready_tx,
        ready_rx,
        learner,
        deferred: false,
        nodeless: HashMap::new(),
        last_sequence: HashMap::new(),
        lost: 0,
        messages: 0,
        batch: Vec::new(),
    };
    println!("Recording to '{}'...", dir.display());
    let poll = Duration::from_millis(args.polling_interval.max(1));
    let mut changes = r.transport.graph_changes();
    let mut next_look = Instant::now();
    let mut next_flush = Instant::now() + FLUSH_EVERY;
    let mut written_at_flush = 0;
    let outcome = (|| -> Result {
        while !crate::interrupt::interrupted() {
            let now = Instant::now();
            if now >= next_look {
                // The graph is looked at when it changed, and while some topic waits for a
                // retry.
                if changes.has_changed().unwrap_or(false)
                    || !r.failed.is_empty()
                    || r.deferred
                    || r.known.is_empty()
                {
                    changes.borrow_and_update();
                    r.discover()?;
                }
                next_look = now + poll;
            }
            if now >= next_flush {
                if r.messages != written_at_flush {
                    r.bag.flush()?;
                    written_at_flush = r.messages;
                }
                next_flush = now + FLUSH_EVERY;
            }
            while let Some((topic, type_name, outcome)) = r.learner.next_answer() {
                r.on_learnt(topic, type_name, outcome)?;
            }
            let wait = next_look
                .min(next_flush)
                .saturating_duration_since(Instant::now());
            if let Ok(index) = r
                .ready_rx
                .recv_timeout(wait.min(Duration::from_millis(100)))
            {
                r.drain(index)?;
                while let Ok(index) = r.ready_rx.try_recv() {
                    r.drain(index)?;
                }
            }
        }
        r.drain_all()
    })();
    // The bag is closed whatever happened: what was recorded stays readable.
    let lost_by_transport: u64 = r.recorded.iter().map(|t| t.sub.lost_count()).sum();
    let topics = r.recorded.len();
    let (messages, lost) = (r.messages, r.lost);
    let finished = r.bag.finish();
    outcome?;
    let metadata = finished?;
    println!(
        "Recorded {messages} messages on {topics} topics to '{}' ({} files, {:.3} s); \
         lost: {lost} (gaps in the publishers' sequence numbers; the transport counted \
         {lost_by_transport})",
        dir.display(),
        metadata.files.len(),
        metadata.duration.as_secs_f64()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(f: impl FnOnce(&mut RecordArgs)) -> RecordArgs {
        let mut a = RecordArgs {
            topics: vec![],
            all: false,
            regex: None,
            exclude_regex: None,
            exclude_topics: vec![],
            include_hidden_topics: false,
            output: None,
            max_bag_size: 0,
            max_bag_duration: 0,
            storage_preset_profile: "none".into(),
            polling_interval: 100,
        };
        f(&mut a);
        a
    }

    #[test]
    fn selection_follows_rosbag2() {
        assert!(Selection::new(&args(|_| {})).is_err());
        assert!(Selection::new(&args(|a| a.regex = Some("(".into()))).is_err());
        let all = Selection::new(&args(|a| {
            a.all = true;
            a.exclude_topics = vec!["rosout".into()];
        }))
        .unwrap();
        assert!(all.matches("/chatter"));
        assert!(!all.matches("/rosout"));
        assert!(!all.matches("/fib/_action/feedback"));
        assert!(!all.matches("/add/_service_event"));
        let named = Selection::new(&args(|a| {
            a.topics = vec!["fib/_action/status".into(), "chatter".into()];
        }))
        .unwrap();
        assert!(named.matches("/fib/_action/status"));
        assert!(named.matches("/chatter"));
        assert!(!named.matches("/other"));
        let re = Selection::new(&args(|a| {
            a.regex = Some("^/cam".into());
            a.exclude_regex = Some("raw$".into());
        }))
        .unwrap();
        assert!(re.matches("/camera/image"));
        assert!(!re.matches("/camera/raw"));
        assert!(!re.matches("/chatter"));
    }

    #[test]
    fn qos_adapts_to_every_publisher() {
        let reliable = QoSProfile::default();
        let latched = QoSProfile::default().transient_local();
        let lossy = QoSProfile::sensor_data();
        let q = subscription_qos(&[reliable, latched]);
        assert_eq!(
            (q.reliability, q.durability),
            (Reliability::Reliable, Durability::Volatile)
        );
        let q = subscription_qos(&[latched, latched.keep_last(5000)]);
        assert_eq!(q.durability, Durability::TransientLocal);
        assert_eq!(q.history, History::KeepLast(5000));
        let q = subscription_qos(&[reliable, lossy]);
        assert_eq!(q.reliability, Reliability::BestEffort);
        assert_eq!(q.history, History::KeepLast(RECORD_DEPTH));
    }
}
