//! `rclev node|topic|service|action list|info` and `service type`: the ROS graph over DDS,
//! printed as the `ros2` CLI prints it.
//!
//! There is no daemon: each command starts a participant, waits until discovery has settled
//! (see [`discover`]) and prints from that snapshot. Names with a component starting with `_`
//! (an action's `_action/…` topics and services) are hidden unless `--include-hidden` is given,
//! as in `ros2`.

use std::collections::BTreeMap;
use std::time::Duration;

use rclev::transport::{EndpointInfo, EndpointKind, GraphSnapshot, NodeName, Transport};
use rclev::{Durability, History, Liveliness, QoSProfile, Reliability};
use rclev_dds::DdsTransport;

use crate::anyhow_free::Result;

/// Never less than this: the first peers are heard within ~100 ms on a host.
const SETTLE_MIN: Duration = Duration::from_millis(1000);
/// Never more than this: a bare DDS participant never says which endpoints it has, and a peer
/// that missed this participant's first announcements is only heard at its next periodic one
/// (Fast DDS announces every 3 s; measured: most runs settle at 1 s, some at ~2.9 s).
const SETTLE_MAX: Duration = Duration::from_secs(3);

/// Starts a participant and returns it with the graph once discovery has caught up with what
/// the peers announced ([`DdsTransport::graph_settled`]: every peer's nodes known, with every
/// endpoint they listed), after at least [`SETTLE_MIN`] and at most [`SETTLE_MAX`]. Waits on
/// the transport's change notifications (no polling).
pub fn discover() -> Result<(DdsTransport, GraphSnapshot)> {
    discover_until(|_| true)
}

/// [`discover`], also waiting (within [`SETTLE_MAX`]) until `found` holds of the graph: a
/// command about one named node, topic, service or action waits for it to appear, as a peer
/// may be heard only at its next announcement.
pub fn discover_until(
    found: impl Fn(&GraphSnapshot) -> bool,
) -> Result<(DdsTransport, GraphSnapshot)> {
    let transport = DdsTransport::from_env()?;
    let mut changes = transport.graph_changes();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?;
    runtime.block_on(async {
        let start = tokio::time::Instant::now();
        let _ = tokio::time::timeout_at(start + SETTLE_MIN, std::future::pending::<()>()).await;
        loop {
            // Marked seen before looking: a change after the look wakes the wait.
            changes.borrow_and_update();
            // With no peer found yet, there may still be some: wait for one, up to the limit.
            if transport.participant_count() > 0
                && transport.graph_settled()
                && found(&transport.graph())
            {
                break;
            }
            match tokio::time::timeout_at(start + SETTLE_MAX, changes.changed()).await {
                Ok(Ok(())) => {}
                // Out of time, or the transport is gone: print what is known.
                Ok(Err(_)) | Err(_) => break,
            }
        }
    });
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
pub fn node_list() -> Result {
    let (_t, graph) = discover()?;
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
pub fn node_info(node: &str, include_hidden: bool) -> Result {
    let node = absolute_node(node);
    let has_node = |g: &GraphSnapshot| g.node_names().iter().any(|n| n.fully_qualified() == node);
    let (_t, graph) = discover_until(has_node)?;
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
pub fn topic_list(show_types: bool, include_hidden: bool) -> Result {
    let (_t, graph) = discover()?;
    print_names_and_types(graph.topic_names_and_types(), show_types, include_hidden);
    Ok(())
}

/// `rclev service list`.
pub fn service_list(show_types: bool, include_hidden: bool) -> Result {
    let (_t, graph) = discover()?;
    print_names_and_types(graph.service_names_and_types(), show_types, include_hidden);
    Ok(())
}

/// `rclev service type <service>`.
pub fn service_type(service: &str) -> Result {
    let service = absolute_node(service);
    let (_t, graph) = discover_until(|g| {
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
pub fn action_list(show_types: bool) -> Result {
    let (_t, graph) = discover()?;
    print_names_and_types(actions(&graph).into_iter().collect(), show_types, true);
    Ok(())
}

/// `rclev action info <action>`.
pub fn action_info(action: &str) -> Result {
    let action = absolute_node(action);
    let goal_service = format!("{action}/_action/send_goal");
    let (_t, graph) = discover_until(|g| {
        g.endpoints
            .iter()
            .any(|e| e.name == goal_service && e.kind == EndpointKind::Service)
    })?;
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
pub fn topic_info(topic: &str, verbose: bool) -> Result {
    let topic = absolute_node(topic);
    let (_t, graph) = discover_until(|g| {
        g.topic_names_and_types()
            .iter()
            .any(|(name, _)| *name == topic)
    })?;
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
        let e = EndpointInfo {
            node: NodeName {
                name: "n".into(),
                namespace: "/".into(),
            },
            name: "/fib/_action/send_goal".into(),
            kind: EndpointKind::Service,
            type_name: "example_interfaces/action/Fibonacci_SendGoal".into(),
            type_hash: rclev::msg::TypeHash([0; 32]),
            gid: rclev::transport::Gid([0; 16]),
            qos: QoSProfile::default(),
        };
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
