//! `rclev node|topic|service|action list|info` and `service type`: the ROS graph over DDS,
//! printed as the `ros2` CLI prints it.
//!
//! There is no daemon: each command starts a participant, listens (see [`discover`]) and
//! prints from that snapshot. Names with a component starting with `_` (an action's
//! `_action/…` topics and services) are hidden unless `--include-hidden` is given, as in
//! `ros2`.
//!
//! # How long to listen
//!
//! A fresh participant cannot know when it has heard everyone: nothing in DDS discovery says
//! how many participants a domain has. What is known is how often each one speaks. A Fast DDS
//! participant (rclev's, rmw_fastrtps's) announces itself 5 times 100 ms apart when it starts,
//! then every [`ANNOUNCEMENT_PERIOD`] to the locators it announces to (the localhost ports or
//! the multicast group every participant listens on). Usually a peer hears this participant's
//! first announcements and answers at once; sometimes it does not, and is heard only at its
//! next periodic announcement (measured against an rclpy peer: in 11 of 104 fresh runs on an
//! idle host, 42 of 104 on a loaded one, heard 0.7-2.9 s after the start). Stopping at the
//! first settled graph then answered without that peer (with two rclpy processes on the
//! graph, 13 of 104 answers missed one of them). So by default the verbs listen a whole
//! period and a margin ([`DEFAULT_WINDOW`]), then until what was heard has settled (every
//! participant's nodes known with every endpoint they listed).
//!
//! A verb about one named thing whose answer cannot grow once found (`node info`, `service
//! type`, the lifecycle verbs given a node) answers as soon as it has found it and the graph
//! has settled, but not before [`EARLIEST_ANSWER`]. `--no-wait` answers as these verbs did before ([`QUICK_WINDOW`], then from
//! whoever was heard), `--wait <seconds>` listens that long instead of the default.
//!
//! Over Zenoh there is no such guess: the transport asks its router which peers there are,
//! meets each and queries every liveliness token, so its graph settles holding everyone
//! there was at the start, within a known bound (`ZenohTransport::GRAPH_SETTLED_WITHIN`).
//! The verbs answer as soon as it has (5,000 nodes of one peer: listed in 1.6–2.3 s, see
//! docs/cli.md), after `--wait`'s window if one is given; `--no-wait` answers within
//! [`QUICK_LIMIT`] whatever it has by then.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::wire::CliTransport;
use rclev::transport::{EndpointInfo, EndpointKind, GraphSnapshot, NodeName, Transport};
use rclev::{Durability, History, Liveliness, QoSProfile, Reliability};

use crate::errors::Result;

/// Fast DDS's participant announcement period (`leaseDuration_announcementperiod`), which
/// rclev-dds leaves at Fast DDS's default as rmw_fastrtps does (an XML profile named by
/// `FASTRTPS_DEFAULT_PROFILES_FILE` may change it: then give `--wait`).
const ANNOUNCEMENT_PERIOD: Duration = Duration::from_secs(3);
/// How long the verbs listen by default: a whole [`ANNOUNCEMENT_PERIOD`], so that every peer
/// has announced itself once, and the time to hear its endpoints and nodes after that.
pub const DEFAULT_WINDOW: Duration =
    ANNOUNCEMENT_PERIOD.saturating_add(Duration::from_millis(1500));
/// `--no-wait`: the initial announcements (5 × 100 ms) and their answers.
pub const QUICK_WINDOW: Duration = Duration::from_secs(1);
/// `--no-wait`: with nobody heard after its window, how long to wait for a first peer.
const QUICK_LIMIT: Duration = Duration::from_secs(3);
/// Never an answer before this, even a certain one: rclev-dds's `graph_settled` does not yet
/// look at a participant whose `ros_discovery_info` came before discovery reported the
/// participant itself, so in that moment a node is known without its endpoints (seen once: a
/// `node info` at 0.37 s listing none). By 1 s (the verbs' minimum before) discovery has
/// reported it.
const EARLIEST_ANSWER: Duration = Duration::from_secs(1);
/// How much longer than its window a verb waits for what was heard to settle: a bare DDS
/// participant never says which endpoints it has, so the graph may never settle.
const SETTLE_GRACE: Duration = Duration::from_secs(2);

/// After a graph change, the verbs look again once no other change came for this long...
const CHANGE_QUIET: Duration = Duration::from_millis(20);
/// ...or this long after the first change, whichever is sooner (a peer announcing entities
/// without pause is looked at five times a second).
const SETTLE_BURST: Duration = Duration::from_millis(200);

/// How a verb listens before it answers.
struct Listening {
    /// Never an answer before this, even a certain one.
    earliest: Duration,
    /// Never less than this, unless the answer is certain earlier.
    window: Duration,
    /// Never more than this.
    limit: Duration,
    /// Whether an answer from nobody waits (up to `limit`) for somebody.
    want_a_peer: bool,
}

/// How long a graph verb listens: `--no-wait`, `--wait <seconds>`, or (neither) the default.
#[derive(clap::Args, Clone, Copy, Debug, Default)]
pub struct WaitArgs {
    /// Answer quickly: after discovery's first exchanges (1 s; up to 3 s while nobody is
    /// heard), from the participants heard by then. One that missed those exchanges is left
    /// out (it is heard at its next announcement, up to ~3 s later). Over Zenoh the verbs
    /// answer as soon as the graph is complete anyway.
    #[arg(long, conflicts_with = "wait")]
    pub no_wait: bool,
    /// Listen this many seconds before answering (default 4.5 over DDS: Fast DDS's 3 s
    /// participant announcement period and a margin; 0 over Zenoh), then until what was
    /// heard has settled.
    #[arg(long, value_name = "SECONDS", value_parser = seconds)]
    pub wait: Option<Duration>,
}

impl WaitArgs {
    /// How to listen. Over DDS (`settles_within` `None`): `--no-wait` as these verbs always
    /// did before (1 s, then until the first peers heard have settled, up to 3 s for somebody
    /// to be heard); otherwise a window and then until settled, up to [`SETTLE_GRACE`] more.
    /// Over Zenoh, whose graph settles with everyone there was at the start, certainly within
    /// `settles_within`: until settled, after `--wait`'s window if one is given; with
    /// `--no-wait`, what there is when settled or after [`QUICK_LIMIT`], whichever is first.
    fn listening(&self, settles_within: Option<Duration>) -> Listening {
        if let Some(within) = settles_within {
            let window = self.wait.unwrap_or(Duration::ZERO);
            return Listening {
                earliest: Duration::ZERO,
                window,
                limit: if self.no_wait {
                    QUICK_LIMIT
                } else {
                    window.saturating_add(within)
                },
                want_a_peer: false,
            };
        }
        let window = match (self.no_wait, self.wait) {
            (true, _) => QUICK_WINDOW,
            (false, Some(w)) => w,
            (false, None) => DEFAULT_WINDOW,
        };
        Listening {
            earliest: EARLIEST_ANSWER,
            window,
            limit: if self.no_wait {
                QUICK_LIMIT
            } else {
                window.saturating_add(SETTLE_GRACE)
            },
            want_a_peer: self.no_wait,
        }
    }

    /// Whether neither flag was given.
    pub fn is_default(&self) -> bool {
        !self.no_wait && self.wait.is_none()
    }
}

/// `--wait`'s value: seconds, fractions allowed.
fn seconds(text: &str) -> std::result::Result<Duration, String> {
    let s: f64 = text
        .parse()
        .map_err(|_| format!("'{text}' is not a number of seconds"))?;
    Duration::try_from_secs_f64(s).map_err(|_| format!("'{text}' is not a number of seconds"))
}

/// Starts a participant and returns it with the graph after listening for `wait`'s window
/// and then until the graph has settled ([`CliTransport::graph_settled`]: every peer's nodes
/// known, with every endpoint they listed), at most [`SETTLE_GRACE`] longer (see
/// [`WaitArgs`]). For the verbs whose answer is a list: anyone not heard yet would be missing
/// from it.
pub fn discover(wait: WaitArgs) -> Result<(CliTransport, GraphSnapshot)> {
    listen(wait, |_| false)
}

/// [`discover`], ending as soon as `answered` holds of a settled graph: for a verb about one
/// named thing (a node, a service's type) whose answer cannot grow once it is found.
pub fn discover_until(
    wait: WaitArgs,
    answered: impl Fn(&GraphSnapshot) -> bool,
) -> Result<(CliTransport, GraphSnapshot)> {
    listen(wait, answered)
}

fn listen(
    wait: WaitArgs,
    answered: impl Fn(&GraphSnapshot) -> bool,
) -> Result<(CliTransport, GraphSnapshot)> {
    let transport = CliTransport::from_env()?;
    let mut changes = transport.graph_changes();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?;
    let Listening {
        earliest,
        window,
        limit,
        want_a_peer,
    } = wait.listening(transport.graph_settles_within());
    let ended = runtime.block_on(async {
        let start = tokio::time::Instant::now();
        let mut heard = 0;
        loop {
            // Marked seen before looking: a change after the look wakes the wait.
            changes.borrow_and_update();
            let elapsed = start.elapsed();
            let settled = transport.graph_settled();
            if transport.peer_count() != heard {
                heard = transport.peer_count();
                tracing::debug!("{heard} participants heard after {elapsed:?}");
            }
            let why = if settled && elapsed >= earliest && answered(&transport.graph()) {
                Some("answered")
            } else if elapsed >= window && settled && (heard > 0 || !want_a_peer) {
                Some("settled")
            } else if elapsed >= limit {
                Some("out of time")
            } else {
                None
            };
            if let Some(why) = why {
                return (why, elapsed);
            }
            let next = start
                + [earliest, window, limit]
                    .into_iter()
                    .filter(|t| *t > elapsed)
                    .min()
                    .unwrap_or(limit);
            match tokio::time::timeout_at(next, changes.changed()).await {
                // A change: let a burst of them (a peer's thousands of entities arriving)
                // pass before looking again, so the graph is looked at a bounded number of
                // times per second, not once per entity.
                Ok(Ok(())) => {
                    let quiet_by = (tokio::time::Instant::now() + SETTLE_BURST).min(next);
                    while let Ok(Ok(())) =
                        tokio::time::timeout(CHANGE_QUIET, changes.changed()).await
                    {
                        if tokio::time::Instant::now() >= quiet_by {
                            break;
                        }
                    }
                }
                // The time to look again.
                Err(_) => {}
                // The transport is gone: print what is known.
                Ok(Err(_)) => return ("closed", start.elapsed()),
            }
        }
    });
    tracing::debug!(
        "graph {} after {:?} (window {window:?}) with {} participants",
        ended.0,
        ended.1,
        transport.peer_count()
    );
    let graph = transport.graph();
    Ok((transport, graph))
}

/// Whether `name` is hidden (a component starts with `_`).
fn hidden(name: &str) -> bool {
    name.split('/').any(|c| c.starts_with('_'))
}

/// `talker` → `/talker`; `/ns/x` stays (node, service and action names given to the tools).
pub(crate) fn absolute_node(name: &str) -> String {
    if name.starts_with('/') {
        name.to_string()
    } else {
        format!("/{name}")
    }
}

/// An action among the graph's services: `/x/_action/send_goal` of `pkg/action/Name_SendGoal`
/// is action `/x` of `pkg/action/Name`.
fn action_of(e: &EndpointInfo) -> Option<(String, String)> {
    let name = e.name.strip_suffix("/_action/send_goal")?;
    let type_name = e.type_name.strip_suffix("_SendGoal")?;
    Some((name.to_string(), type_name.to_string()))
}

/// `rclev node list`.
pub fn node_list(wait: WaitArgs) -> Result {
    let (_t, graph) = discover(wait)?;
    let mut names: Vec<String> = graph
        .node_names()
        .iter()
        .map(NodeName::fully_qualified)
        .collect();
    names.sort();
    names.dedup();
    for n in names {
        println!("{n}");
    }
    Ok(())
}

fn print_section(title: &str, items: &BTreeMap<String, Vec<String>>) {
    println!("  {title}:");
    for (name, types) in items {
        println!("    {name}: {}", types.join(", "));
    }
}

/// `rclev node info <node>`.
pub fn node_info(node: &str, include_hidden: bool, wait: WaitArgs) -> Result {
    let node = absolute_node(node);
    let has_node = |g: &GraphSnapshot| g.node_names().iter().any(|n| n.fully_qualified() == node);
    // Found with its endpoints in a settled graph: its participant has listed them all. (A node
    // known without any is not answered early: see EARLIEST_ANSWER; one that truly has none is
    // answered at the window's end.)
    let whole = |g: &GraphSnapshot| {
        has_node(g) && g.endpoints.iter().any(|e| e.node.fully_qualified() == node)
    };
    let (_t, graph) = discover_until(wait, whole)?;
    if !has_node(&graph) {
        return Err(format!("Unable to find node '{node}'").into());
    }
    let mut sections: [BTreeMap<String, Vec<String>>; 6] = Default::default();
    for e in graph
        .endpoints
        .iter()
        .filter(|e| e.node.fully_qualified() == node)
    {
        let action = action_of(e);
        let at = match e.kind {
            EndpointKind::Subscription => 0,
            EndpointKind::Publisher => 1,
            EndpointKind::Service => 2,
            EndpointKind::Client => 3,
        };
        if let (Some((name, ty)), EndpointKind::Service | EndpointKind::Client) = (&action, e.kind)
        {
            let slot = if e.kind == EndpointKind::Service {
                4
            } else {
                5
            };
            sections[slot]
                .entry(name.clone())
                .or_default()
                .push(ty.clone());
        }
        if !include_hidden && hidden(&e.name) {
            continue;
        }
        let types = sections[at].entry(e.name.clone()).or_default();
        if !types.contains(&e.type_name) {
            types.push(e.type_name.clone());
        }
    }
    println!("{node}");
    let titles = [
        "Subscribers",
        "Publishers",
        "Service Servers",
        "Service Clients",
        "Action Servers",
        "Action Clients",
    ];
    for (title, items) in titles.iter().zip(&sections) {
        print_section(title, items);
    }
    Ok(())
}

fn print_names_and_types(list: Vec<(String, Vec<String>)>, show_types: bool, include_hidden: bool) {
    for (name, types) in list {
        if !include_hidden && hidden(&name) {
            continue;
        }
        if show_types {
            println!("{name} [{}]", types.join(", "));
        } else {
            println!("{name}");
        }
    }
}

/// `rclev topic list`.
pub fn topic_list(show_types: bool, include_hidden: bool, wait: WaitArgs) -> Result {
    let (_t, graph) = discover(wait)?;
    print_names_and_types(graph.topic_names_and_types(), show_types, include_hidden);
    Ok(())
}

/// `rclev service list`.
pub fn service_list(show_types: bool, include_hidden: bool, wait: WaitArgs) -> Result {
    let (_t, graph) = discover(wait)?;
    print_names_and_types(graph.service_names_and_types(), show_types, include_hidden);
    Ok(())
}

/// `rclev service type <service>`.
pub fn service_type(service: &str, wait: WaitArgs) -> Result {
    let service = absolute_node(service);
    let (_t, graph) = discover_until(wait, |g| {
        g.service_names_and_types()
            .iter()
            .any(|(name, _)| *name == service)
    })?;
    let (_, types) = graph
        .service_names_and_types()
        .into_iter()
        .find(|(name, _)| *name == service)
        .ok_or_else(|| format!("Unknown service '{service}'"))?;
    for t in types {
        println!("{t}");
    }
    Ok(())
}

/// Every action on the graph with its types, from its servers and clients.
fn actions(graph: &GraphSnapshot) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, ty) in graph.endpoints.iter().filter_map(action_of) {
        let types = out.entry(name).or_default();
        if !types.contains(&ty) {
            types.push(ty);
        }
    }
    out
}

/// `rclev action list`.
pub fn action_list(show_types: bool, wait: WaitArgs) -> Result {
    let (_t, graph) = discover(wait)?;
    print_names_and_types(actions(&graph).into_iter().collect(), show_types, true);
    Ok(())
}

/// `rclev action info <action>`.
pub fn action_info(action: &str, wait: WaitArgs) -> Result {
    let action = absolute_node(action);
    let goal_service = format!("{action}/_action/send_goal");
    // Its clients and servers may be in participants not heard yet: the whole window.
    let (_t, graph) = discover(wait)?;
    let nodes = |kind| -> Vec<String> {
        let mut v: Vec<String> = graph
            .endpoints
            .iter()
            .filter(|e| e.kind == kind && e.name == goal_service)
            .map(|e| e.node.fully_qualified())
            .collect();
        v.sort();
        v
    };
    let (clients, servers) = (nodes(EndpointKind::Client), nodes(EndpointKind::Service));
    if clients.is_empty() && servers.is_empty() {
        return Err(format!("Unknown action '{action}'").into());
    }
    println!("Action: {action}");
    println!("Action clients: {}", clients.len());
    for c in clients {
        println!("    {c}");
    }
    println!("Action servers: {}", servers.len());
    for s in servers {
        println!("    {s}");
    }
    Ok(())
}

fn duration_text(d: Option<Duration>) -> String {
    match d {
        None => "Infinite".into(),
        Some(d) => format!("{} nanoseconds", d.as_nanos()),
    }
}

/// A QoS profile as `ros2 topic info -v` prints it.
fn qos_text(q: &QoSProfile) -> String {
    let reliability = match q.reliability {
        Reliability::Reliable => "RELIABLE",
        Reliability::BestEffort => "BEST_EFFORT",
        Reliability::SystemDefault => "SYSTEM_DEFAULT",
        Reliability::BestAvailable => "BEST_AVAILABLE",
    };
    let history = match q.history {
        History::KeepLast(n) => format!("KEEP_LAST ({n})"),
        History::KeepAll => "KEEP_ALL".into(),
        History::SystemDefault => "SYSTEM_DEFAULT".into(),
    };
    let durability = match q.durability {
        Durability::Volatile => "VOLATILE",
        Durability::TransientLocal => "TRANSIENT_LOCAL",
        Durability::SystemDefault => "SYSTEM_DEFAULT",
        Durability::BestAvailable => "BEST_AVAILABLE",
    };
    let liveliness = match q.liveliness {
        Liveliness::Automatic => "AUTOMATIC",
        Liveliness::ManualByTopic => "MANUAL_BY_TOPIC",
        Liveliness::SystemDefault => "SYSTEM_DEFAULT",
        Liveliness::BestAvailable => "BEST_AVAILABLE",
    };
    format!(
        "  Reliability: {reliability}\n  History (Depth): {history}\n  Durability: {durability}\n  \
         Lifespan: {}\n  Deadline: {}\n  Liveliness: {liveliness}\n  Liveliness lease duration: {}",
        duration_text(q.lifespan),
        duration_text(q.deadline),
        duration_text(q.liveliness_lease_duration),
    )
}

/// `rclev topic info <topic> [-v]`.
pub fn topic_info(topic: &str, verbose: bool, wait: WaitArgs) -> Result {
    let topic = absolute_node(topic);
    // Its publishers and subscriptions may be in participants not heard yet: the whole
    // window.
    let (_t, graph) = discover(wait)?;
    let (_, types) = graph
        .topic_names_and_types()
        .into_iter()
        .find(|(name, _)| *name == topic)
        .ok_or_else(|| format!("Unknown topic '{topic}'"))?;
    println!("Type: {}", types.join(", "));
    for (kind, title, endpoint) in [
        (EndpointKind::Publisher, "Publisher count", "PUBLISHER"),
        (
            EndpointKind::Subscription,
            "Subscription count",
            "SUBSCRIPTION",
        ),
    ] {
        let endpoints = graph.endpoints_of(&topic, kind);
        if verbose {
            println!();
        }
        println!("{title}: {}", endpoints.len());
        if verbose {
            for e in endpoints {
                println!();
                println!("Node name: {}", e.node.name);
                println!("Node namespace: {}", e.node.namespace);
                println!("Topic type: {}", e.type_name);
                println!("Topic type hash: {}", e.type_hash);
                println!("Endpoint type: {endpoint}");
                println!("GID: {}", e.gid);
                println!("QoS profile:\n{}", qos_text(&e.qos));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_names_and_actions_are_recognized() {
        assert!(hidden("/fib/_action/feedback"));
        assert!(!hidden("/chatter"));
        let e = EndpointInfo::new(
            NodeName {
                name: "n".into(),
                namespace: "/".into(),
            },
            "/fib/_action/send_goal",
            EndpointKind::Service,
            "example_interfaces/action/Fibonacci_SendGoal",
            rclev::msg::TypeHash([0; 32]),
            rclev::transport::Gid([0; 16]),
            QoSProfile::default(),
        );
        assert_eq!(
            action_of(&e),
            Some((
                "/fib".to_string(),
                "example_interfaces/action/Fibonacci".to_string()
            ))
        );
        assert!(qos_text(&QoSProfile::default()).contains("History (Depth): KEEP_LAST (10)"));
    }
}
