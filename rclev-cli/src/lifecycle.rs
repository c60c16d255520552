//! `rclev lifecycle nodes|list|get|set`: managed nodes through their lifecycle services,
//! printed as `ros2 lifecycle` prints them.
//!
//! As ros2lifecycle does, a node is managed if it serves `<node>/get_state` of type
//! `lifecycle_msgs/srv/GetState`; `set` looks the transition up among those available from the
//! node's current state (by label, else by id) and sends it whole, id and label, to
//! `<node>/change_state`. One difference: a transition that fails (`Transitioning failed`)
//! ends `rclev` with status 1, where `ros2` exits 0.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::Subcommand;
use rclev::interfaces::lifecycle_msgs::{msg, srv};
use rclev::msg::ServiceType;
use rclev::transport::{GraphSnapshot, NodeName, Transport};
use rclev::{Context, Executor, Node, NodeOptions, SpinOptions};

use crate::errors::Result;
use crate::graph::{absolute_node, WaitArgs};

/// How long a command waits for a node's service, then for each answer of a query.
const WAIT: Duration = Duration::from_secs(10);
/// How much longer than discovery's own window a command about one node waits for it to appear
/// (without `--wait` or `--no-wait`).
const FIND_MORE: Duration = Duration::from_secs(7);
/// How long `set` waits for `change_state`'s answer: it comes when the transition's callbacks
/// have run, which may take a while.
const TRANSITION_WAIT: Duration = Duration::from_secs(60);

/// `rclev lifecycle …`: managed nodes over DDS.
#[derive(Subcommand)]
pub enum LifecycleCommand {
    /// Lists the managed nodes, like `ros2 lifecycle nodes`.
    Nodes {
        /// Show hidden nodes too.
        #[arg(short, long)]
        all: bool,
        /// Only print how many there are.
        #[arg(short, long)]
        count_nodes: bool,
        #[command(flatten)]
        wait: WaitArgs,
    },
    /// A node's transitions, like `ros2 lifecycle list`: those available from its current
    /// state, or with `--all` its whole transition graph.
    List {
        /// The node (`/ns/name`).
        node: String,
        /// The whole transition graph.
        #[arg(short, long)]
        all: bool,
        /// Consider hidden nodes as well.
        #[arg(long)]
        include_hidden_nodes: bool,
        #[command(flatten)]
        wait: WaitArgs,
    },
    /// The current state of a node, or of every managed node, like `ros2 lifecycle get`.
    Get {
        /// The node (`/ns/name`); every managed node when left out.
        node: Option<String>,
        /// Consider hidden nodes as well.
        #[arg(long)]
        include_hidden_nodes: bool,
        #[command(flatten)]
        wait: WaitArgs,
    },
    /// Triggers a transition, like `ros2 lifecycle set`: a label (`configure`, `activate`,
    /// `deactivate`, `cleanup`, `shutdown`) or an id, among those available from the node's
    /// current state.
    Set {
        /// The node (`/ns/name`).
        node: String,
        /// The transition's label or id.
        transition: String,
        /// Consider hidden nodes as well.
        #[arg(long)]
        include_hidden_nodes: bool,
        #[command(flatten)]
        wait: WaitArgs,
    },
}

/// Runs a `lifecycle` command.
pub fn run(command: LifecycleCommand) -> Result {
    match command {
        LifecycleCommand::Nodes {
            all,
            count_nodes,
            wait,
        } => nodes(all, count_nodes, wait),
        LifecycleCommand::List {
            node,
            all,
            include_hidden_nodes,
            wait,
        } => list(&node, all, include_hidden_nodes, wait),
        LifecycleCommand::Get {
            node,
            include_hidden_nodes,
            wait,
        } => get(node.as_deref(), include_hidden_nodes, wait),
        LifecycleCommand::Set {
            node,
            transition,
            include_hidden_nodes,
            wait,
        } => set(&node, &transition, include_hidden_nodes, wait),
    }
}

/// Whether a node or service name is hidden (a component starts with `_`).
fn hidden(name: &str) -> bool {
    name.split('/').any(|c| c.starts_with('_'))
}

/// The managed nodes of `graph`, sorted: those serving `<node>/get_state` as a
/// `lifecycle_msgs/srv/GetState`.
fn managed_nodes(graph: &GraphSnapshot, include_hidden: bool) -> Vec<String> {
    let services = graph.service_names_and_types();
    let mut names: Vec<String> = graph
        .node_names()
        .iter()
        .map(NodeName::fully_qualified)
        .filter(|n| include_hidden || !hidden(n))
        .filter(|n| {
            let get_state = format!("{n}/get_state");
            services.iter().any(|(name, types)| {
                *name == get_state && types.iter().any(|t| t == "lifecycle_msgs/srv/GetState")
            })
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

/// A participant that has caught up with discovery, with the managed nodes it found, and an
/// executor and node of the CLI's own on it for the service calls.
struct Session {
    executor: Executor,
    node: Node,
    managed: Vec<String>,
}

impl Session {
    /// Listens as `wait` says: about `wanted` (a node), until it is found among the managed
    /// nodes (and, by default, up to [`FIND_MORE`] past the window); about every managed node
    /// (`None`), the whole window.
    fn start(include_hidden: bool, wait: WaitArgs, wanted: Option<&str>) -> Result<Session> {
        let transport = match wanted {
            Some(node) => {
                let found =
                    |g: &GraphSnapshot| managed_nodes(g, include_hidden).iter().any(|n| n == node);
                let (transport, _) = crate::graph::discover_until(wait, found)?;
                if wait.is_default() {
                    wait_longer(&transport, found)?;
                }
                transport
            }
            None => crate::graph::discover(wait)?.0,
        };
        let managed = managed_nodes(&transport.graph(), include_hidden);
        let executor = Context::with_transport(Arc::new(transport)).create_basic_executor();
        let node = executor.create_node(
            NodeOptions::new(format!("rclev_lifecycle_{}", std::process::id()))
                .enable_rosout(false)
                .start_parameter_services(false)
                .start_parameter_event_publisher(false)
                .parameter_override("start_type_description_service", false),
        )?;
        Ok(Session {
            executor,
            node,
            managed,
        })
    }

    /// Looks `node` up among the managed nodes (`Node not found`, as ros2 says, if it is not
    /// one).
    fn find(&self, node: &str) -> Result<()> {
        if self.managed.iter().any(|n| n == node) {
            Ok(())
        } else {
            Err("Node not found".into())
        }
    }

    /// Calls `<node>/<service>` with `request`, waiting at most `answer` for the response.
    fn call<S: ServiceType>(
        &self,
        node: &str,
        service: &str,
        request: S::Request,
        answer: Duration,
    ) -> Result<S::Response> {
        let name = format!("{node}/{service}");
        let client = self.node.create_client::<S>(name.as_str())?;
        let out = Arc::new(Mutex::new(None));
        let o = out.clone();
        let work = async move {
            let result: Result<S::Response> = async {
                client.wait_for_service(Some(WAIT)).await?;
                Ok(client.call_with_timeout(request, answer).await?)
            }
            .await;
            *o.lock().unwrap_or_else(|e| e.into_inner()) = Some(result);
        };
        self.spin_until_done(work, WAIT + answer + WAIT);
        let result = out.lock().unwrap_or_else(|e| e.into_inner()).take();
        result.ok_or_else(|| format!("no answer from {name}"))?
    }

    fn spin_until_done(&self, work: impl Future<Output = ()> + Send + 'static, limit: Duration) {
        crate::errors::report_spin(
            self.executor.spin(
                SpinOptions::default()
                    .until_promise_resolved(work)
                    .timeout(limit),
            ),
        );
    }

    fn state(&self, node: &str) -> Result<msg::State> {
        Ok(self
            .call::<srv::GetState>(node, "get_state", Default::default(), WAIT)?
            .current_state)
    }

    fn transitions(&self, node: &str, service: &str) -> Result<Vec<msg::TransitionDescription>> {
        Ok(self
            .call::<srv::GetAvailableTransitions>(node, service, Default::default(), WAIT)?
            .available_transitions)
    }
}

/// After discovery has settled without finding what the command names, waits for it on the
/// graph's changes, up to [`FIND_MORE`]: on a busy host a peer's node, or its `get_state`
/// service, may be heard only after a later announcement.
fn wait_longer(
    transport: &crate::wire::CliTransport,
    found: impl Fn(&GraphSnapshot) -> bool,
) -> Result {
    let mut changes = transport.graph_changes();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?;
    runtime.block_on(async {
        let deadline = tokio::time::Instant::now() + FIND_MORE;
        loop {
            // Marked seen before looking: a change after the look wakes the wait.
            changes.borrow_and_update();
            if found(&transport.graph()) {
                return;
            }
            match tokio::time::timeout_at(deadline, changes.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) | Err(_) => return,
            }
        }
    });
    Ok(())
}

/// `rclev lifecycle nodes`.
pub fn nodes(all: bool, count_nodes: bool, wait: WaitArgs) -> Result {
    let (_transport, graph) = crate::graph::discover(wait)?;
    let managed = managed_nodes(&graph, all);
    if count_nodes {
        println!("{}", managed.len());
    } else {
        for n in managed {
            println!("{n}");
        }
    }
    Ok(())
}

/// How ros2 prints a transition in `list`.
fn transition_text(t: &msg::TransitionDescription) -> String {
    format!(
        "- {} [{}]\n\tStart: {}\n\tGoal: {}",
        t.transition.label, t.transition.id, t.start_state.label, t.goal_state.label
    )
}

/// `rclev lifecycle list <node> [--all]`.
pub fn list(node: &str, all: bool, include_hidden: bool, wait: WaitArgs) -> Result {
    let node = absolute_node(node);
    let session = Session::start(include_hidden, wait, Some(&node))?;
    session.find(&node)?;
    let service = if all {
        "get_transition_graph"
    } else {
        "get_available_transitions"
    };
    let transitions = session
        .transitions(&node, service)
        .map_err(|e| format!("Exception while calling service of node '{node}': {e}"))?;
    for t in &transitions {
        println!("{}", transition_text(t));
    }
    Ok(())
}

/// `rclev lifecycle get [node]`.
pub fn get(node: Option<&str>, include_hidden: bool, wait: WaitArgs) -> Result {
    let wanted = node.map(absolute_node);
    let session = Session::start(include_hidden, wait, wanted.as_deref())?;
    let (queried, prefixed) = match &wanted {
        Some(n) => {
            session.find(n)?;
            (vec![n.clone()], false)
        }
        None => (session.managed.clone(), true),
    };
    let mut failed = false;
    for n in &queried {
        match session.state(n) {
            Ok(state) => {
                let prefix = if prefixed {
                    format!("{n}: ")
                } else {
                    String::new()
                };
                println!("{prefix}{} [{}]", state.label, state.id);
            }
            Err(e) => {
                eprintln!("Exception while calling service of node '{n}': {e}");
                failed = true;
            }
        }
    }
    if failed && wanted.is_some() {
        return Err(format!("no state from {}", queried[0]).into());
    }
    Ok(())
}

/// The transition `requested` names among `available` (as ros2 picks it: by label first, then
/// by id).
fn pick<'a>(
    available: &'a [msg::TransitionDescription],
    requested: &str,
) -> Option<&'a msg::TransitionDescription> {
    available
        .iter()
        .find(|t| t.transition.label == requested)
        .or_else(|| {
            available
                .iter()
                .find(|t| t.transition.id.to_string() == requested)
        })
}

/// `rclev lifecycle set <node> <transition>`.
pub fn set(node: &str, transition: &str, include_hidden: bool, wait: WaitArgs) -> Result {
    let node = absolute_node(node);
    let session = Session::start(include_hidden, wait, Some(&node))?;
    session.find(&node)?;
    let available = session
        .transitions(&node, "get_available_transitions")
        .map_err(|e| format!("Exception while calling service of node '{node}': {e}"))?;
    let Some(chosen) = pick(&available, transition) else {
        let listed: String = available
            .iter()
            .map(|t| format!("\n- {} [{}]", t.transition.label, t.transition.id))
            .collect();
        return Err(format!("Unknown transition requested, available ones are:{listed}").into());
    };
    let answer = session
        .call::<srv::ChangeState>(
            &node,
            "change_state",
            srv::ChangeState_Request {
                transition: chosen.transition.clone(),
            },
            TRANSITION_WAIT,
        )
        .map_err(|e| format!("Exception while calling service of node '{node}': {e}"))?;
    if answer.success {
        println!("Transitioning successful");
        Ok(())
    } else {
        Err("Transitioning failed".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn description(id: u8, label: &str, start: &str, goal: &str) -> msg::TransitionDescription {
        let state = |label: &str| msg::State {
            id: 0,
            label: label.into(),
        };
        msg::TransitionDescription {
            transition: msg::Transition {
                id,
                label: label.into(),
            },
            start_state: state(start),
            goal_state: state(goal),
        }
    }

    #[test]
    fn transitions_are_picked_and_printed_as_ros2_does() {
        let available = [
            description(2, "cleanup", "inactive", "cleaningup"),
            description(3, "activate", "inactive", "activating"),
            description(6, "shutdown", "inactive", "shuttingdown"),
        ];
        assert_eq!(pick(&available, "activate").unwrap().transition.id, 3);
        assert_eq!(pick(&available, "6").unwrap().transition.label, "shutdown");
        assert!(pick(&available, "configure").is_none());
        assert!(pick(&available, "1").is_none());
        assert_eq!(
            transition_text(&available[1]),
            "- activate [3]\n\tStart: inactive\n\tGoal: activating"
        );
        assert!(hidden("/_private/node") && !hidden("/robot/lc_talker"));
    }
}
