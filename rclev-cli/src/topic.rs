//! `rclev topic echo` and `rclev topic pub` over DDS, for every message type rclev knows
//! (`rclev::interfaces::MESSAGE_TYPES`): messages are decoded and encoded by their type
//! description ([`DynamicMessage`]), printed and read as YAML like `ros2 topic echo/pub`.
//!
//! The commands use the transport directly (a node and one endpoint, no executor): a tool
//! that prints what arrives needs no callbacks.

use std::any::{Any, TypeId};
use std::collections::{HashMap, HashSet};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::wire::CliTransport;
use rclev::msg::{DynamicMessage, DynamicType, TypeInfo, Value};
use rclev::transport::{
    EndpointInfo, EndpointKind, Gid, NodeName, NodePort, Payload, ReadyHook, TopicEndpoint,
    Transport, TypeSupport,
};
use rclev::{Error, QoSProfile};

use crate::errors::Result;
use crate::type_names::{Kind, Sources, Unknown, Wanted};

/// The type `pkg/msg/Name` among those rclev ships, or else installed (`AMENT_PREFIX_PATH`).
/// A name that is neither is reported as [`type_names`](crate::type_names) reports it (one
/// sentence, with the closest known names); a known one that fails to load, with the reason.
pub(crate) fn known_type(name: &str) -> Result<TypeInfo> {
    if let Some(info) = rclev::interfaces::MESSAGE_TYPES
        .iter()
        .find(|t| t.type_name == name)
    {
        return Ok(*info);
    }
    crate::installed_types::lookup(name).map_err(|e| {
        match crate::type_names::resolve(name, Kind::Msg, Sources::BundledAndInstalled) {
            Err(unknown) => unknown.into(),
            Ok(_) => format!("message type '{name}' could not be loaded: {e}").into(),
        }
    })
}

/// A message type a user gave (`pkg/msg/Name` or `pkg/Name`).
pub(crate) enum Given {
    /// One rclev ships or finds installed.
    Known(TypeInfo),
    /// A well-formed name rclev does not know: a node that uses it may describe it
    /// ([`learn_topic_type`]). `unknown` says why it is not known (with the closest names).
    Learnable { name: String, unknown: Unknown },
}

/// The message type a user gave, checked before anything goes on the network: a malformed
/// name fails at once; a well-formed unknown one is left to learn.
pub(crate) fn given_type(given: &str) -> Result<Given> {
    Ok(
        match crate::type_names::resolve_learnable(given, Kind::Msg, Sources::BundledAndInstalled)?
        {
            Wanted::Known(name) => Given::Known(known_type(&name)?),
            Wanted::Learnable { name, unknown } => Given::Learnable { name, unknown },
        },
    )
}

/// The endpoints on `topic` of type `type_name` (publishers first), waiting up to `limit` for
/// one whose node is known (over DDS a node's name can trail its endpoints), less on Ctrl-C;
/// what there is when the wait ends.
pub(crate) fn endpoints_of_type(
    transport: &CliTransport,
    topic: &str,
    type_name: &str,
    limit: Duration,
) -> Vec<EndpointInfo> {
    let deadline = Instant::now() + limit;
    loop {
        let graph = transport.graph();
        let mut found = graph.endpoints_of(topic, EndpointKind::Publisher);
        found.extend(graph.endpoints_of(topic, EndpointKind::Subscription));
        found.retain(|e| e.type_name == type_name);
        if found.iter().any(crate::remote_types::node_known)
            || Instant::now() >= deadline
            || crate::interrupt::interrupted()
        {
            return found;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Message type `type_name` of `topic`, learnt from the nodes of the endpoints that use it
/// there (see `remote_types`); `unknown` is why rclev does not know it, for the error.
pub(crate) fn learn_topic_type(
    transport: &CliTransport,
    node: &Arc<dyn NodePort>,
    topic: &str,
    type_name: &str,
    unknown: &Unknown,
) -> Result<TypeInfo> {
    let endpoints = endpoints_of_type(transport, topic, type_name, DISCOVERY_WAIT);
    if endpoints.is_empty() {
        return Err(crate::remote_types::nothing_to_learn_from(
            unknown,
            &format!("nothing on {topic} uses it"),
        )
        .into());
    }
    match crate::remote_types::learn_message(node, &endpoints, type_name) {
        Ok((info, from)) => {
            eprintln!("rclev: learnt type {type_name} from node {from}");
            Ok(info)
        }
        Err(e) => Err(format!(
            "{unknown}, and the nodes that use it on {topic} did not describe it ({e}). {}",
            crate::remote_types::HOW_TO_INSTALL
        )
        .into()),
    }
}

/// The type of `topic` found on the graph: one rclev knows, or else learnt from the nodes
/// that use it.
pub(crate) fn topic_type(
    transport: &CliTransport,
    node: &Arc<dyn NodePort>,
    topic: &str,
    type_name: &str,
) -> Result<TypeInfo> {
    match known_type(type_name) {
        Ok(info) => Ok(info),
        // Named by the graph, not typed by a user: no close names to offer.
        Err(unknown) => {
            let unknown = Unknown {
                message: unknown.to_string(),
                offers_names: false,
            };
            learn_topic_type(transport, node, topic, type_name, &unknown)
        }
    }
}

/// Encodes a [`DynamicMessage`] payload (looked up by its type name).
fn serialize_dynamic(value: &(dyn Any + Send + Sync), buf: &mut Vec<u8>) -> rclev::Result<()> {
    let msg = value
        .downcast_ref::<DynamicMessage>()
        .ok_or_else(|| Error::Transport("not a DynamicMessage".into()))?;
    let info = known_type(&msg.type_name).map_err(|e| Error::Transport(e.to_string()))?;
    buf.extend_from_slice(&msg.encode(&info.description)?);
    Ok(())
}

/// The type support of a type the CLI knows by its description only (it decodes what it
/// receives itself, with the description).
pub(crate) fn type_support(info: TypeInfo) -> TypeSupport {
    // SAFETY: `serialize_dynamic` appends one CDR encoding, with encapsulation header, of a
    // `DynamicMessage` of the type its name gives: `DynamicMessage::encode` with the
    // description of that very type, which rclev knows (`known_type`), and an error
    // otherwise. No in-place encoder is given.
    unsafe {
        TypeSupport::from_raw_parts(
            info,
            TypeId::of::<DynamicMessage>(),
            serialize_dynamic,
            None,
        )
    }
}

/// `chatter` → `/chatter` (the CLI's node lives in `/`), checked by ROS 2's naming rules.
pub(crate) fn absolute(topic: &str) -> Result<String> {
    Ok(rclev::expand_topic_name(topic, "/", "rclev")?)
}

pub(crate) fn cli_node(transport: &CliTransport, what: &str) -> Result<Arc<dyn NodePort>> {
    Ok(transport.create_node(&NodeName {
        name: format!("rclev_{what}_{}", std::process::id()),
        namespace: "/".into(),
    })?)
}

/// How long to look for a publisher's type before saying there is none yet.
pub(crate) const DISCOVERY_WAIT: Duration = Duration::from_secs(5);

/// How [`discover_type`] ended without a type.
pub(crate) enum NoType {
    /// Ctrl-C (the command ends cleanly).
    Interrupted,
    /// No publisher within the limit given.
    TimedOut,
}

/// Waits for a publisher on `topic` and returns its type: up to `limit`, or (`None`) until
/// one comes, saying on stderr once [`DISCOVERY_WAIT`] passed without one, as `ros2 topic hz`
/// does. Ctrl-C ends the wait.
pub(crate) fn discover_type(
    transport: &CliTransport,
    topic: &str,
    limit: Option<Duration>,
) -> std::result::Result<String, NoType> {
    let start = Instant::now();
    let mut warned = false;
    loop {
        let graph = transport.graph();
        if let Some(t) = graph
            .topic_names_and_types()
            .into_iter()
            .find(|(name, _)| name == topic)
            .and_then(|(_, types)| types.into_iter().next())
        {
            return Ok(t);
        }
        if crate::interrupt::interrupted() {
            return Err(NoType::Interrupted);
        }
        match limit {
            Some(limit) if start.elapsed() >= limit => return Err(NoType::TimedOut),
            None if !warned && start.elapsed() >= DISCOVERY_WAIT => {
                warned = true;
                eprintln!("WARNING: topic [{topic}] does not appear to be published yet");
            }
            _ => {}
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A subscription of the tools (bytes only, decoded by description) and the channel its
/// readiness rings.
pub(crate) fn subscribe(
    node: &Arc<dyn NodePort>,
    topic: &str,
    info: TypeInfo,
    qos: QoSProfile,
    reads_message_info: bool,
) -> Result<(
    Arc<dyn rclev::transport::SubscriptionPort>,
    mpsc::Receiver<()>,
)> {
    let (tx, rx) = mpsc::sync_channel(1);
    let sub = node.create_subscription(
        &TopicEndpoint {
            name: topic.to_string(),
            type_support: type_support(info),
            qos,
            reads_message_info,
            max_queue_bytes: rclev::transport::DEFAULT_QUEUE_BYTES,
        },
        Arc::new(Wake(tx)),
        Arc::new(()),
    )?;
    Ok((sub, rx))
}

/// Wakes the echo loop.
pub(crate) struct Wake(pub(crate) mpsc::SyncSender<()>);

impl ReadyHook for Wake {
    fn ready(&self) {
        let _ = self.0.try_send(());
    }
}

/// Warns about publishers on a topic whose type differs from the one subscribed: DDS matches
/// endpoints by type name, so they are never matched and the echo would otherwise wait in
/// silence. rclpy's default incompatible-type handler warns the same way (`ros2 topic echo`
/// shows it on middlewares that report the event; Fast DDS does not, so `ros2` stays silent
/// there), and, like `ros2`, the echo keeps waiting: a publisher of the right type may still
/// come.
pub(crate) struct TypeMismatch {
    changes: tokio::sync::watch::Receiver<u64>,
    warned: HashSet<Gid>,
    /// Publishers of another type whose node is not known yet, with when they were first
    /// seen: a peer's endpoints are often discovered before its `ros_discovery_info` names
    /// their node, and the warning should say which node it is.
    pending: HashMap<Gid, Instant>,
}

/// How long a publisher of another type whose node stays unknown is held back before it is
/// warned about as "a publisher": a bare DDS program never names its nodes (and keeps the
/// graph unsettled), while a ROS peer's `ros_discovery_info` comes within a moment.
const NODE_NAME_GRACE: Duration = Duration::from_secs(5);

impl TypeMismatch {
    pub(crate) fn new(transport: &CliTransport) -> Self {
        let mut changes = transport.graph_changes();
        // The first look is due at once.
        changes.mark_changed();
        Self {
            changes,
            warned: HashSet::new(),
            pending: HashMap::new(),
        }
    }

    /// Looks at the graph if it changed since the last look (or a publisher is held back);
    /// warns once per publisher offering another type than `type_name`, naming its node once
    /// its participant has (or after [`NODE_NAME_GRACE`], or once the graph is settled
    /// without it).
    pub(crate) fn check(&mut self, transport: &CliTransport, topic: &str, type_name: &str) {
        if !self.changes.has_changed().unwrap_or(false) && self.pending.is_empty() {
            return;
        }
        // Marked seen before looking: a change after the look is seen at the next check.
        self.changes.borrow_and_update();
        let now = Instant::now();
        let settled = transport.graph_settled();
        let publishers = transport
            .graph()
            .endpoints_of(topic, EndpointKind::Publisher);
        // One that left before it was warned about is forgotten.
        self.pending
            .retain(|gid, _| publishers.iter().any(|e| e.gid == *gid));
        for e in publishers {
            if e.type_name == type_name || self.warned.contains(&e.gid) {
                continue;
            }
            let unnamed = !crate::remote_types::node_known(&e);
            let first_seen = *self.pending.entry(e.gid).or_insert(now);
            if unnamed && !settled && now.duration_since(first_seen) < NODE_NAME_GRACE {
                continue;
            }
            self.pending.remove(&e.gid);
            self.warned.insert(e.gid);
            eprintln!("rclev: warning: {}", mismatch_text(topic, type_name, &e));
        }
    }
}

/// The warning about publisher `e` of another type than `type_name`.
fn mismatch_text(topic: &str, type_name: &str, e: &rclev::transport::EndpointInfo) -> String {
    let who = if !crate::remote_types::node_known(e) {
        "a publisher".to_string()
    } else {
        format!("the publisher of node {}", e.node.fully_qualified())
    };
    format!(
        "Incompatible type on topic '{topic}': {who} offers {}, not {type_name}; no messages \
         will be received from it (still waiting for a {type_name} publisher; Ctrl-C to stop)",
        e.type_name
    )
}

/// `rclev topic echo`.
pub fn echo(topic: &str, type_name: Option<&str>, once: bool, count: Option<u64>) -> Result {
    let topic = absolute(topic)?;
    // A type given is checked before anything goes on the network: a malformed name fails at
    // once; one rclev does not know is learnt from the nodes that use it on the topic.
    let given = type_name.map(given_type).transpose()?;
    let transport = CliTransport::from_env()?;
    let node = cli_node(&transport, "echo")?;
    let known = match given {
        Some(Given::Learnable { name, unknown }) => {
            let info = match learn_topic_type(&transport, &node, &topic, &name, &unknown) {
                Err(_) if crate::interrupt::interrupted() => return Ok(()),
                learnt => learnt?,
            };
            return echo_as(
                &transport,
                &node,
                &topic,
                info,
                QoSProfile::best_available(),
                once,
                count,
            );
        }
        Some(Given::Known(info)) => Some(info),
        None => None,
    };
    // Wait for a publisher first, as `ros2 topic echo` does: its type, and its QoS to adapt
    // to. Without one (the type given), subscribe with the default QoS.
    let limit = if known.is_some() {
        Duration::from_secs(2)
    } else {
        DISCOVERY_WAIT
    };
    let (info, qos) = match (known, discover_type(&transport, &topic, Some(limit))) {
        (_, Err(NoType::Interrupted)) => return Ok(()),
        (Some(info), Ok(_)) => (info, QoSProfile::best_available()),
        (None, Ok(found)) => (
            topic_type(&transport, &node, &topic, &found)?,
            QoSProfile::best_available(),
        ),
        (Some(info), Err(NoType::TimedOut)) => (info, QoSProfile::default()),
        (None, Err(NoType::TimedOut)) => {
            return Err(format!(
                "no publisher on {topic} within {limit:?}: give the type (rclev topic echo \
                 {topic} pkg/msg/Type)"
            )
            .into())
        }
    };
    echo_as(&transport, &node, &topic, info, qos, once, count)
}

/// `topic echo` once the type is settled: subscribes with `qos` and prints what arrives.
fn echo_as(
    transport: &CliTransport,
    node: &Arc<dyn NodePort>,
    topic: &str,
    info: TypeInfo,
    qos: QoSProfile,
    once: bool,
    count: Option<u64>,
) -> Result {
    // With a publisher present: whatever it offers, as `ros2 topic echo` does.
    let dynamic = DynamicType::new(&info.description)?;
    let (sub, rx) = subscribe(node, topic, info, qos, false)?;
    let mut mismatch = TypeMismatch::new(transport);
    let limit = if once { Some(1) } else { count };
    let mut printed = 0u64;
    let mut batch = Vec::new();
    while !crate::interrupt::interrupted() {
        mismatch.check(transport, topic, info.type_name);
        let _ = rx.recv_timeout(Duration::from_millis(500));
        loop {
            let more = sub.take_payloads(16, &mut batch);
            for payload in batch.drain(..) {
                let Payload::Serialized(bytes) = payload else {
                    continue;
                };
                match dynamic.decode(&bytes) {
                    Ok(msg) => {
                        println!("{}---", to_yaml(&msg));
                        printed += 1;
                    }
                    Err(e) => eprintln!("rclev: a message on {topic} did not decode: {e}"),
                }
                if limit.is_some_and(|l| printed >= l) {
                    return Ok(());
                }
            }
            if !more {
                break;
            }
        }
    }
    Ok(())
}

/// Options of `rclev topic pub`.
pub struct PubOptions<'a> {
    /// Fully qualified or relative topic.
    pub topic: &'a str,
    /// `pkg/msg/Name`.
    pub type_name: &'a str,
    /// The message, as YAML (`"{data: hello}"`); fields left out keep their defaults.
    pub values: &'a str,
    /// Messages per second.
    pub rate: f64,
    /// How many to publish (`None`: until interrupted).
    pub times: Option<u64>,
    /// Subscriptions to wait for before the first message.
    pub wait_matching: usize,
}

/// `rclev topic pub`.
pub fn publish(o: PubOptions<'_>) -> Result {
    let topic = absolute(o.topic)?;
    let given = given_type(o.type_name)?;
    // A known type's values are checked before anything goes on the network.
    let checked = match &given {
        Given::Known(info) => Some(from_yaml(info, o.values)?),
        Given::Learnable { .. } => None,
    };
    let transport = CliTransport::from_env()?;
    let node = cli_node(&transport, "pub")?;
    let info = match given {
        Given::Known(info) => info,
        Given::Learnable { name, unknown } => {
            match learn_topic_type(&transport, &node, &topic, &name, &unknown) {
                Err(_) if crate::interrupt::interrupted() => return Ok(()),
                learnt => learnt?,
            }
        }
    };
    let msg = match checked {
        Some(msg) => msg,
        None => from_yaml(&info, o.values)?,
    };
    let cdr = DynamicType::new(&info.description)?.encode(&msg)?;
    let publisher = node.create_publisher(
        &TopicEndpoint {
            name: topic.clone(),
            type_support: type_support(info),
            qos: QoSProfile::default(),
            reads_message_info: false,
            max_queue_bytes: rclev::transport::DEFAULT_QUEUE_BYTES,
        },
        Arc::new(()),
    )?;
    if o.wait_matching > 0 {
        println!(
            "Waiting for at least {} matching subscription(s)...",
            o.wait_matching
        );
        while publisher.subscription_count() < o.wait_matching {
            if crate::interrupt::interrupted() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    println!("publisher: beginning loop");
    let period = Duration::from_secs_f64(1.0 / o.rate.max(1e-3));
    let mut next = Instant::now();
    let mut n = 0u64;
    while o.times.is_none_or(|t| n < t) && !crate::interrupt::interrupted() {
        n += 1;
        publisher
            .publish(Payload::Serialized(Box::new(cdr.clone())))
            .map_err(|e| e.error)?;
        println!("publishing #{n}: {}", to_flow_yaml(&msg));
        next += period;
        if o.times.is_some_and(|t| n >= t) {
            break;
        }
        // In slices, so that Ctrl-C is seen soon at low rates.
        while Instant::now() < next && !crate::interrupt::interrupted() {
            std::thread::sleep(
                next.saturating_duration_since(Instant::now())
                    .min(Duration::from_millis(100)),
            );
        }
    }
    // Reliable delivery of the last message needs the writer a moment longer.
    std::thread::sleep(Duration::from_millis(500));
    Ok(())
}

/// Builds a message from YAML: a mapping of field names to values (nested mappings for
/// nested messages, lists for arrays); fields left out keep their defaults.
pub fn from_yaml(info: &TypeInfo, text: &str) -> Result<DynamicMessage> {
    let docs = rclev_bag::yaml::load(text)?;
    let ty = DynamicType::new(&info.description)?;
    let mut msg = ty.default_message()?;
    match docs.first() {
        None | Some(yaml_rust2::Yaml::Null) => {}
        Some(yaml) => fill(&ty, &mut msg, yaml, "")?,
    }
    Ok(msg)
}

// `fill` and `convert` recurse once per nested message of the YAML that matches a nested
// message of the type: at most `TypeLimits::max_depth` levels, which `DynamicType` checked.
fn fill(ty: &DynamicType, msg: &mut DynamicMessage, yaml: &yaml_rust2::Yaml, path: &str) -> Result {
    let yaml_rust2::Yaml::Hash(map) = yaml else {
        return Err(format!("{}: a mapping of field names is expected", or_root(path)).into());
    };
    for (key, value) in map {
        let name = key
            .as_str()
            .ok_or_else(|| format!("{}: field names are strings", or_root(path)))?;
        let field_path = format!("{path}{}{name}", if path.is_empty() { "" } else { "." });
        let type_name = msg.type_name.clone();
        let slot = msg
            .get_mut(name)
            .ok_or_else(|| format!("{type_name} has no field '{name}'"))?;
        *slot = convert(ty, &type_name, name, slot, value, &field_path)?;
    }
    Ok(())
}

fn or_root(path: &str) -> &str {
    if path.is_empty() {
        "the message"
    } else {
        path
    }
}

/// A YAML value as the kind `template` has.
fn convert(
    ty: &DynamicType,
    type_name: &str,
    field: &str,
    template: &Value,
    yaml: &yaml_rust2::Yaml,
    path: &str,
) -> Result<Value> {
    use yaml_rust2::Yaml;
    let wrong = |what: &str| -> Box<dyn std::error::Error + Send + Sync> {
        format!(
            "{path}: {what} expected, not {}",
            rclev_bag::yaml::shown(yaml)
        )
        .into()
    };
    Ok(match template {
        Value::Bool(_) => Value::Bool(yaml.as_bool().ok_or_else(|| wrong("true or false"))?),
        Value::Int(_) => Value::Int(yaml.as_i64().ok_or_else(|| wrong("an integer"))?),
        Value::UInt(_) => Value::UInt(
            yaml.as_i64()
                .and_then(|i| u64::try_from(i).ok())
                .ok_or_else(|| wrong("a non-negative integer"))?,
        ),
        Value::Float(_) => Value::Float(match yaml {
            Yaml::Real(_) => yaml.as_f64().ok_or_else(|| wrong("a number"))?,
            Yaml::Integer(i) => *i as f64,
            _ => return Err(wrong("a number")),
        }),
        Value::String(_) => Value::String(match yaml {
            Yaml::String(s) => s.clone(),
            Yaml::Integer(i) => i.to_string(),
            Yaml::Real(r) => r.clone(),
            Yaml::Boolean(b) => b.to_string(),
            _ => return Err(wrong("a string")),
        }),
        Value::Message(m) => {
            let mut m = m.clone();
            fill(ty, &mut m, yaml, path)?;
            Value::Message(m)
        }
        Value::Array(_) => {
            let Yaml::Array(items) = yaml else {
                return Err(wrong("a list"));
            };
            let element = ty.element_default(type_name, field)?;
            Value::Array(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| {
                        convert(
                            ty,
                            type_name,
                            field,
                            &element,
                            item,
                            &format!("{path}[{i}]"),
                        )
                    })
                    .collect::<Result<_>>()?,
            )
        }
    })
}

/// A message as `ros2 topic echo` prints it (block YAML).
pub fn to_yaml(msg: &DynamicMessage) -> String {
    let mut out = String::new();
    write_fields(&mut out, msg, 0);
    out
}

fn write_fields(out: &mut String, msg: &DynamicMessage, indent: usize) {
    for (name, value) in &msg.fields {
        out.push_str(&" ".repeat(indent));
        out.push_str(name);
        out.push(':');
        write_value(out, value, indent);
    }
}

/// Writes a value after `key:` (scalars on the line, the rest on the lines below).
fn write_value(out: &mut String, value: &Value, indent: usize) {
    match value {
        Value::Message(m) => {
            out.push('\n');
            write_fields(out, m, indent + 2);
        }
        Value::Array(items) if items.is_empty() => out.push_str(" []\n"),
        Value::Array(items) => {
            out.push('\n');
            for item in items {
                out.push_str(&" ".repeat(indent));
                out.push('-');
                match item {
                    Value::Message(m) => {
                        // The first field on the dash's line, the rest under it.
                        let mut inner = String::new();
                        write_fields(&mut inner, m, indent + 2);
                        out.push(' ');
                        out.push_str(inner.trim_start());
                    }
                    Value::Array(_) => write_value(out, item, indent + 2),
                    scalar => {
                        out.push(' ');
                        out.push_str(&scalar_text(scalar));
                        out.push('\n');
                    }
                }
            }
        }
        scalar => {
            out.push(' ');
            out.push_str(&scalar_text(scalar));
            out.push('\n');
        }
    }
}

fn scalar_text(v: &Value) -> String {
    match v {
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => u.to_string(),
        Value::Float(f) => format!("{f:?}"),
        Value::String(s) => quote(s),
        Value::Array(_) | Value::Message(_) => to_flow_value(v),
    }
}

/// A YAML string, quoted when plain text would read as something else.
/// Whether `s` prints as itself (nothing [`rclev::printable`] would escape).
fn printable(s: &str) -> bool {
    matches!(
        rclev::printable(s, usize::MAX),
        std::borrow::Cow::Borrowed(_)
    )
}

fn quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.trim() == s
        && !s.starts_with([
            '-', '?', '!', '&', '*', '#', '|', '>', '@', '`', '%', '\'', '"', '[', '{',
        ])
        && !s.contains(": ")
        && !s.contains(" #")
        && !s.chars().any(|c| matches!(c, '{' | '}' | '[' | ']' | ','))
        && printable(s)
        && s.parse::<f64>().is_err()
        && !matches!(
            s.to_ascii_lowercase().as_str(),
            "true" | "false" | "yes" | "no" | "on" | "off" | "null" | "~"
        );
    if plain {
        s.to_string()
    } else if !printable(s) {
        // Escaped (Rust's escapes, which cover the invisible characters too): a control
        // character or a right-to-left override from a peer's message must not act on the
        // terminal.
        format!("{s:?}")
    } else {
        format!("'{}'", s.replace('\'', "''"))
    }
}

/// A message on one line (`{data: hello}`), for `topic pub`'s log.
pub(crate) fn to_flow_yaml(msg: &DynamicMessage) -> String {
    to_flow_value(&Value::Message(msg.clone()))
}

fn to_flow_value(v: &Value) -> String {
    match v {
        Value::Message(m) => {
            let fields: Vec<String> = m
                .fields
                .iter()
                .map(|(n, v)| format!("{n}: {}", to_flow_value(v)))
                .collect();
            format!("{{{}}}", fields.join(", "))
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(to_flow_value).collect();
            format!("[{}]", items.join(", "))
        }
        scalar => scalar_text(scalar),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rclev::interfaces::geometry_msgs::msg::PoseStamped;
    use rclev::interfaces::std_msgs::msg::{Float64MultiArray, String as StringMsg};
    use rclev::msg::{from_cdr, Message};

    #[test]
    fn yaml_in_and_out_like_ros2() {
        let info = TypeInfo::of::<StringMsg>();
        let msg = from_yaml(&info, "{data: hello}").unwrap();
        assert_eq!(to_yaml(&msg), "data: hello\n");
        let info = TypeInfo::of::<PoseStamped>();
        let msg = from_yaml(
            &info,
            "{header: {frame_id: map}, pose: {position: {x: 1, y: 2.5}}}",
        )
        .unwrap();
        let decoded: PoseStamped = from_cdr(&msg.encode(&info.description).unwrap()).unwrap();
        assert_eq!(decoded.header.frame_id, "map");
        assert_eq!(
            (decoded.pose.position.x, decoded.pose.position.y),
            (1.0, 2.5)
        );
        let text = to_yaml(&msg);
        assert!(
            text.starts_with(
                "header:\n  stamp:\n    sec: 0\n    nanosec: 0\n  frame_id: map\npose:\n"
            ),
            "{text}"
        );
        let info = TypeInfo::of::<Float64MultiArray>();
        let msg = from_yaml(
            &info,
            "{layout: {dim: [{label: x, size: 2, stride: 2}]}, data: [1, 2.5]}",
        )
        .unwrap();
        assert_eq!(
            to_yaml(&msg),
            "layout:\n  dim:\n  - label: x\n    size: 2\n    stride: 2\n  data_offset: 0\ndata:\n- 1.0\n- 2.5\n"
        );
        assert_eq!(Float64MultiArray::TYPE_NAME, info.type_name);
    }

    #[test]
    fn bad_yaml_is_an_error_that_names_the_field() {
        let info = TypeInfo::of::<PoseStamped>();
        let e = from_yaml(&info, "{pose: {position: {x: abc}}}")
            .unwrap_err()
            .to_string();
        assert!(e.contains("pose.position.x"), "{e}");
        let e = from_yaml(&info, "{nope: 1}").unwrap_err().to_string();
        assert!(e.contains("no field 'nope'"), "{e}");
        assert!(from_yaml(&info, "{pose: [").is_err());
        assert_eq!(quote(""), "''");
        assert_eq!(quote("1.5"), "'1.5'");
        assert_eq!(quote("it's: here"), "'it''s: here'");
    }
}
