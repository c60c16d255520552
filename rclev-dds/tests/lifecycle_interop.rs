//! Lifecycle (managed) nodes across rclev and rclpy (Jazzy, rmw_fastrtps_cpp), both ways, each
//! test in a network namespace of its own (see `common`):
//!
//! - an rclpy client (`peers/lifecycle_peer.py client`) drives an rclpy
//!   `rclpy.lifecycle.LifecycleNode` and then an rclev managed node with the same callbacks
//!   through every transition, by label with id 0, by id, by both, and refused ones; its two
//!   transcripts (every answer of the five services, every `~/transition_event`) must be equal,
//!   and the facts of lifecycle-nodes.md are pinned on rclev's;
//! - rclev's clients drive the rclpy node, checking its answers and events.

mod common;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{call_retrying, finish_while_spinning, in_netns, spin_until, Peer};
use rclev::interfaces::lifecycle_msgs::{msg, srv};
use rclev::interfaces::std_msgs::msg::String as StringMsg;
use rclev::lifecycle::{CallbackReturn, LifecycleNode, State};
use rclev::{Context, Executor, SpinOptions};
use rclev_dds::DdsTransport;

const LIMIT: Duration = Duration::from_secs(180);
const PEER_LIMIT: Duration = Duration::from_secs(90);

fn executor() -> Executor {
    Context::with_transport(Arc::new(DdsTransport::from_env().unwrap())).create_basic_executor()
}

/// The peer's `STEPS` (lifecycle_peer.py), with what each answers and the state after it.
const STEPS: [(u8, &str, bool, u8); 12] = [
    (0, "configure", true, 2),
    (3, "", false, 1), // on_activate fails with an error the first time: → unconfigured
    (0, "activate", false, 1),
    (1, "configure", true, 2),
    (3, "activate", true, 3),
    (0, "configure", false, 3),
    (4, "", true, 2),
    (0, "cleanup", true, 1),
    (0, "configure", true, 2),
    (0, "activate", true, 3),
    (0, "launch", false, 3),
    (0, "shutdown", true, 4),
];

/// The (start, goal) of every `~/transition_event` of `STEPS`: two per transition, three
/// through errorprocessing, none for a refusal.
const EVENTS: [(u8, u8); 19] = [
    (1, 10),
    (10, 2),
    (2, 13),
    (13, 15),
    (15, 1),
    (1, 10),
    (10, 2),
    (2, 13),
    (13, 3),
    (3, 14),
    (14, 2),
    (2, 11),
    (11, 1),
    (1, 10),
    (10, 2),
    (2, 13),
    (13, 3),
    (3, 12),
    (12, 4),
];

/// rclev's twin of the peer's `Managed` node: a managed talker on `lifecycle_chatter` whose
/// on_activate fails with an error the first time.
fn managed_talker(executor: &Executor, name: &str) -> LifecycleNode {
    let node = executor.create_lifecycle_node(name).unwrap();
    let publisher = node
        .create_lifecycle_publisher::<StringMsg>("lifecycle_chatter")
        .unwrap();
    let mut count = 0;
    let timer = node
        .create_lifecycle_timer_repeating(Duration::from_millis(100), move || {
            count += 1;
            publisher
                .publish(StringMsg {
                    data: format!("Lifecycle HelloWorld #{count}"),
                })
                .unwrap();
        })
        .unwrap();
    let activations = AtomicU32::new(0);
    node.on_activate(move |_| {
        let _keep = &timer;
        if activations.fetch_add(1, Ordering::SeqCst) == 0 {
            Err("first activation fails".to_string())
        } else {
            Ok(CallbackReturn::Success)
        }
    });
    node
}

#[test]
fn rclpy_drives_an_rclev_lifecycle_node_as_it_drives_an_rclpy_one() {
    in_netns(
        "rclpy_drives_an_rclev_lifecycle_node_as_it_drives_an_rclpy_one",
        LIMIT,
        || {
            // The oracle: rclpy's own managed node.
            let rclpy_node = Peer::start("lifecycle_peer.py", &["node", "rclpy_lc", "120"]);
            let theirs =
                Peer::start("lifecycle_peer.py", &["client", "/rclpy_lc"]).finish(PEER_LIMIT);
            let node_out = rclpy_node.interrupt(PEER_LIMIT);
            assert!(
                node_out.contains("node: done in state finalized"),
                "{node_out}"
            );

            let executor = executor();
            let lc = managed_talker(&executor, "rclev_lc");
            let client = Peer::start("lifecycle_peer.py", &["client", "/rclev_lc"]);
            let ours = finish_while_spinning(&executor, client, PEER_LIMIT);
            assert_eq!(lc.current_state(), State::Finalized);

            // Line for line what rclpy's node answered.
            let ours_lines: Vec<&str> = ours.lines().collect();
            let theirs_lines: Vec<&str> = theirs.lines().collect();
            assert_eq!(
                ours_lines, theirs_lines,
                "rclev's transcript:\n{ours}\nrclpy's:\n{theirs}"
            );

            // And the facts, pinned.
            let has = |line: &str| assert!(ours.contains(line), "{line:?} missing from:\n{ours}");
            has(
                "states: 11: 0 unknown, 1 unconfigured, 2 inactive, 3 active, 4 finalized, \
                 10 configuring, 11 cleaningup, 12 shuttingdown, 13 activating, \
                 14 deactivating, 15 errorprocessing\n",
            );
            has("graph: 25\n");
            has("graph: 7 shutdown: 3 active -> 12 shuttingdown\n");
            has("graph: 62 transition_error: 15 errorprocessing -> 4 finalized\n");
            has(
                "state: 1 unconfigured\navailable: 1 configure (unconfigured -> configuring), \
                 5 shutdown (unconfigured -> shuttingdown)\n",
            );
            has("available: 2 cleanup (inactive -> cleaningup), 3 activate (inactive -> activating), \
                 6 shutdown (inactive -> shuttingdown)\n");
            has("available: 4 deactivate (active -> deactivating), 7 shutdown (active -> shuttingdown)\n");
            has("state: 4 finalized\navailable: \n");
            for (id, label, success, _) in STEPS {
                let success = if success { "True" } else { "False" };
                has(&format!("change {id} '{label}': success={success}\n"));
            }
            let events: Vec<(u8, u8)> = ours
                .lines()
                .filter_map(|l| l.strip_prefix("event: "))
                .map(|l| {
                    // "1 unconfigured -> 10 configuring timestamp=0 transition=0 ''"
                    assert!(l.ends_with(" timestamp=0 transition=0 ''"), "{l}");
                    let words: Vec<&str> = l.split_whitespace().collect();
                    (words[0].parse().unwrap(), words[3].parse().unwrap())
                })
                .collect();
            assert_eq!(events, EVENTS);
            has("client: 19 events\n");
        },
    );
}

#[test]
fn rclev_drives_an_rclpy_lifecycle_node() {
    in_netns("rclev_drives_an_rclpy_lifecycle_node", LIMIT, || {
        let peer = Peer::start("lifecycle_peer.py", &["node", "rclpy_lc", "120"]);
        let executor = executor();
        let node = executor.create_node("rclev_lifecycle_client").unwrap();
        // The event subscription first, then the clients (see the peer's `client`).
        let events = Arc::new(Mutex::new(Vec::<msg::TransitionEvent>::new()));
        let e = events.clone();
        let _events = node
            .create_subscription::<msg::TransitionEvent, _>(
                "/rclpy_lc/transition_event",
                move |m| e.lock().unwrap().push((*m).clone()),
            )
            .unwrap();
        let get_state = node
            .create_client::<srv::GetState>("/rclpy_lc/get_state")
            .unwrap();
        let states = node
            .create_client::<srv::GetAvailableStates>("/rclpy_lc/get_available_states")
            .unwrap();
        let graph = node
            .create_client::<srv::GetAvailableTransitions>("/rclpy_lc/get_transition_graph")
            .unwrap();
        let change = node
            .create_client::<srv::ChangeState>("/rclpy_lc/change_state")
            .unwrap();
        let answers = Arc::new(Mutex::new(None));
        let a = answers.clone();
        let each = Duration::from_secs(20);
        let warm = Duration::from_secs(5);
        let request = |id: u8, label: &str| srv::ChangeState_Request {
            transition: msg::Transition {
                id,
                label: label.into(),
            },
        };
        let warm_up = request(0, "warm_up");
        let steps: Vec<srv::ChangeState_Request> = STEPS
            .iter()
            .map(|(id, label, ..)| request(*id, label))
            .collect();
        let errors = executor.spin(
            SpinOptions::default()
                .until_promise_resolved(async move {
                    for ready in [
                        get_state.wait_for_service(Some(PEER_LIMIT)).await,
                        states.wait_for_service(Some(PEER_LIMIT)).await,
                        graph.wait_for_service(Some(PEER_LIMIT)).await,
                        change.wait_for_service(Some(PEER_LIMIT)).await,
                    ] {
                        ready.unwrap();
                    }
                    // Warm-up calls that change nothing, retried (a first reply may be lost).
                    let first = call_retrying(&get_state, Default::default(), warm, 4)
                        .await
                        .unwrap();
                    let all_states = call_retrying(&states, Default::default(), warm, 4)
                        .await
                        .unwrap();
                    let all_transitions = call_retrying(&graph, Default::default(), warm, 4)
                        .await
                        .unwrap();
                    let refused = call_retrying(&change, warm_up, warm, 4).await.unwrap();
                    let mut outcomes = Vec::new();
                    for step in steps {
                        let answer = change.call_with_timeout(step, each).await.unwrap();
                        let state = get_state
                            .call_with_timeout(Default::default(), each)
                            .await
                            .unwrap();
                        outcomes.push((answer.success, state.current_state.id));
                    }
                    *a.lock().unwrap() =
                        Some((first, all_states, all_transitions, refused, outcomes));
                })
                .timeout(PEER_LIMIT),
        );
        assert!(errors.is_empty(), "{errors:?}");
        let (first, all_states, all_transitions, refused, outcomes) =
            answers.lock().unwrap().take().expect("answers");
        assert_eq!(
            first.current_state,
            msg::State {
                id: 1,
                label: "unconfigured".into()
            }
        );
        // rclpy's states and graph are rclev's, in the same order.
        let theirs: Vec<(u8, String)> = all_states
            .available_states
            .iter()
            .map(|s| (s.id, s.label.clone()))
            .collect();
        let ours: Vec<(u8, String)> = State::ALL
            .iter()
            .map(|s| (s.id(), s.label().to_string()))
            .collect();
        assert_eq!(theirs, ours);
        let theirs: Vec<(u8, String, u8, u8)> = all_transitions
            .available_transitions
            .iter()
            .map(|d| {
                (
                    d.transition.id,
                    d.transition.label.clone(),
                    d.start_state.id,
                    d.goal_state.id,
                )
            })
            .collect();
        let ours: Vec<(u8, String, u8, u8)> = rclev::lifecycle::Transition::graph()
            .iter()
            .map(|t| (t.id, t.label.to_string(), t.start.id(), t.goal.id()))
            .collect();
        assert_eq!(theirs, ours);
        assert!(!refused.success);
        let expected: Vec<(bool, u8)> = STEPS.iter().map(|s| (s.2, s.3)).collect();
        assert_eq!(outcomes, expected);
        // Every event, in order: the last one is the one to finalized.
        let e = events.clone();
        assert!(spin_until(&executor, PEER_LIMIT, move || e
            .lock()
            .unwrap()
            .len()
            >= EVENTS.len()));
        let events = events.lock().unwrap().clone();
        for e in &events {
            assert_eq!(e.timestamp, 0, "{e:?}");
            assert_eq!(e.transition, msg::Transition::default(), "{e:?}");
        }
        let pairs: Vec<(u8, u8)> = events
            .iter()
            .map(|e| (e.start_state.id, e.goal_state.id))
            .collect();
        assert_eq!(pairs, EVENTS);
        let out = peer.interrupt(PEER_LIMIT);
        for line in [
            "node: on_configure from unconfigured\n",
            "node: on_activate from inactive\n",
            "node: on_error from inactive\n",
            "node: on_deactivate from active\n",
            "node: on_cleanup from inactive\n",
            "node: on_shutdown from active\n",
            "node: done in state finalized\n",
        ] {
            assert!(out.contains(line), "{line:?} missing from:\n{out}");
        }
    });
}
