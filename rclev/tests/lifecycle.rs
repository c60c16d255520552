//! Lifecycle (managed) nodes in process: the state machine against rcl's default graph, the
//! five services and `~/transition_event` as rclcpp_lifecycle and rclpy answer them (the facts
//! in /work/shared/reference/lifecycle-nodes.md), callbacks plain and async, errors, refusals,
//! and managed publishers and timers.

mod common;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rclev::interfaces::lifecycle_msgs::{msg, srv};
use rclev::interfaces::std_msgs::msg::String as StringMsg;
use rclev::lifecycle::{
    CallbackReturn, LifecycleNode, ManagedEntity, State, Transition, TransitionRequest,
};
use rclev::msg::ServiceType;
use rclev::{Context, Error, Executor, LogSeverity, Node, SpinOptions};

const LIMIT: Duration = Duration::from_secs(60);

/// Runs `work` while spinning `executor` (at most [`LIMIT`]) and returns its output.
fn run<T: Send + 'static>(
    executor: &Executor,
    work: impl std::future::Future<Output = T> + Send + 'static,
) -> T {
    let out = Arc::new(Mutex::new(None));
    let o = out.clone();
    let errors = executor.spin(
        SpinOptions::default()
            .until_promise_resolved(async move {
                let value = work.await;
                *o.lock().unwrap() = Some(value);
            })
            .timeout(LIMIT),
    );
    assert!(errors.is_empty(), "errors while spinning: {errors:?}");
    let value = out.lock().unwrap().take();
    value.expect("the work did not finish in time")
}

/// Calls `/lc/<service>` once from `client_node`, spinning meanwhile.
fn call<S: ServiceType>(
    executor: &Executor,
    client_node: &Node,
    service: &str,
    request: S::Request,
) -> S::Response {
    let client = client_node.create_client::<S>(service).unwrap();
    run(executor, async move {
        client.wait_for_service(Some(LIMIT)).await.unwrap();
        client.call(request).await.unwrap()
    })
}

/// Everything a test needs: an executor, a managed node `/lc`, a plain node for clients, and
/// the `/lc/transition_event` messages heard.
struct Rig {
    executor: Executor,
    lc: LifecycleNode,
    client: Node,
    events: Arc<Mutex<Vec<msg::TransitionEvent>>>,
    _events_sub: rclev::Subscription<msg::TransitionEvent>,
}

impl Rig {
    fn new() -> Rig {
        let executor = Context::default().create_basic_executor();
        let lc = executor.create_lifecycle_node("lc").unwrap();
        let client = executor.create_node("lc_client").unwrap();
        let events = Arc::new(Mutex::new(Vec::new()));
        let e = events.clone();
        let sub = client
            .create_subscription::<msg::TransitionEvent, _>("/lc/transition_event", move |m| {
                e.lock().unwrap().push((*m).clone())
            })
            .unwrap();
        Rig {
            executor,
            lc,
            client,
            events,
            _events_sub: sub,
        }
    }

    fn get_state(&self) -> (u8, String) {
        let s = call::<srv::GetState>(
            &self.executor,
            &self.client,
            "/lc/get_state",
            Default::default(),
        )
        .current_state;
        (s.id, s.label)
    }

    fn available_transitions(&self) -> Vec<(u8, String)> {
        call::<srv::GetAvailableTransitions>(
            &self.executor,
            &self.client,
            "/lc/get_available_transitions",
            Default::default(),
        )
        .available_transitions
        .into_iter()
        .map(|d| (d.transition.id, d.transition.label))
        .collect()
    }

    /// `~/change_state` with a transition as `ros2 service call` or `ros2 lifecycle set` give it.
    fn change_state(&self, id: u8, label: &str) -> bool {
        call::<srv::ChangeState>(
            &self.executor,
            &self.client,
            "/lc/change_state",
            srv::ChangeState_Request {
                transition: msg::Transition {
                    id,
                    label: label.into(),
                },
            },
        )
        .success
    }

    /// Waits for `n` events in all, and returns them as (start, goal) pairs; each must have
    /// timestamp 0 and an empty transition, as rcl publishes them.
    fn events(&self, n: usize) -> Vec<(u8, u8)> {
        let events = self.events.clone();
        common::spin_until_state(&self.executor, move || events.lock().unwrap().len() >= n);
        let events = self.events.lock().unwrap();
        for e in events.iter() {
            assert_eq!(e.timestamp, 0, "{e:?}");
            assert_eq!(e.transition, msg::Transition::default(), "{e:?}");
            assert_eq!(
                State::from_id(e.start_state.id).unwrap().label(),
                e.start_state.label
            );
            assert_eq!(
                State::from_id(e.goal_state.id).unwrap().label(),
                e.goal_state.label
            );
        }
        events
            .iter()
            .map(|e| (e.start_state.id, e.goal_state.id))
            .collect()
    }
}

fn ids_and_labels(ts: &[(u8, &str)]) -> Vec<(u8, String)> {
    ts.iter().map(|(i, l)| (*i, l.to_string())).collect()
}

#[test]
fn a_new_node_is_unconfigured_with_rcls_states_and_graph() {
    let rig = Rig::new();
    assert_eq!(rig.get_state(), (1, "unconfigured".into()));
    assert_eq!(rig.lc.current_state(), State::Unconfigured);

    let states = call::<srv::GetAvailableStates>(
        &rig.executor,
        &rig.client,
        "/lc/get_available_states",
        Default::default(),
    )
    .available_states;
    let states: Vec<(u8, &str)> = states.iter().map(|s| (s.id, s.label.as_str())).collect();
    assert_eq!(
        states,
        [
            (0, "unknown"),
            (1, "unconfigured"),
            (2, "inactive"),
            (3, "active"),
            (4, "finalized"),
            (10, "configuring"),
            (11, "cleaningup"),
            (12, "shuttingdown"),
            (13, "activating"),
            (14, "deactivating"),
            (15, "errorprocessing"),
        ]
    );

    assert_eq!(
        rig.available_transitions(),
        ids_and_labels(&[(1, "configure"), (5, "shutdown")])
    );

    let graph = call::<srv::GetAvailableTransitions>(
        &rig.executor,
        &rig.client,
        "/lc/get_transition_graph",
        Default::default(),
    )
    .available_transitions;
    let graph: Vec<(u8, &str, u8, &str, u8, &str)> = graph
        .iter()
        .map(|d| {
            (
                d.transition.id,
                d.transition.label.as_str(),
                d.start_state.id,
                d.start_state.label.as_str(),
                d.goal_state.id,
                d.goal_state.label.as_str(),
            )
        })
        .collect();
    // rcl_lifecycle's default_state_machine.c, in its order.
    let (ok, fail, err) = (
        "transition_success",
        "transition_failure",
        "transition_error",
    );
    let expected = [
        (1, "configure", 1, "unconfigured", 10, "configuring"),
        (10, ok, 10, "configuring", 2, "inactive"),
        (11, fail, 10, "configuring", 1, "unconfigured"),
        (12, err, 10, "configuring", 15, "errorprocessing"),
        (2, "cleanup", 2, "inactive", 11, "cleaningup"),
        (20, ok, 11, "cleaningup", 1, "unconfigured"),
        (21, fail, 11, "cleaningup", 2, "inactive"),
        (22, err, 11, "cleaningup", 15, "errorprocessing"),
        (3, "activate", 2, "inactive", 13, "activating"),
        (30, ok, 13, "activating", 3, "active"),
        (31, fail, 13, "activating", 2, "inactive"),
        (32, err, 13, "activating", 15, "errorprocessing"),
        (4, "deactivate", 3, "active", 14, "deactivating"),
        (40, ok, 14, "deactivating", 2, "inactive"),
        (41, fail, 14, "deactivating", 3, "active"),
        (42, err, 14, "deactivating", 15, "errorprocessing"),
        (5, "shutdown", 1, "unconfigured", 12, "shuttingdown"),
        (6, "shutdown", 2, "inactive", 12, "shuttingdown"),
        (7, "shutdown", 3, "active", 12, "shuttingdown"),
        (50, ok, 12, "shuttingdown", 4, "finalized"),
        (51, fail, 12, "shuttingdown", 4, "finalized"),
        (52, err, 12, "shuttingdown", 15, "errorprocessing"),
        (60, ok, 15, "errorprocessing", 1, "unconfigured"),
        (61, fail, 15, "errorprocessing", 4, "finalized"),
        (62, err, 15, "errorprocessing", 4, "finalized"),
    ];
    assert_eq!(graph, expected);
    assert_eq!(rig.lc.transition_graph().len(), 25);
    assert_eq!(rig.lc.available_states().len(), 11);
    // The node's services, as `ros2 lifecycle nodes` finds them.
    let services = rig.client.get_service_names_and_types();
    for (name, ty) in [
        ("/lc/change_state", "lifecycle_msgs/srv/ChangeState"),
        ("/lc/get_state", "lifecycle_msgs/srv/GetState"),
        (
            "/lc/get_available_states",
            "lifecycle_msgs/srv/GetAvailableStates",
        ),
        (
            "/lc/get_available_transitions",
            "lifecycle_msgs/srv/GetAvailableTransitions",
        ),
        (
            "/lc/get_transition_graph",
            "lifecycle_msgs/srv/GetAvailableTransitions",
        ),
    ] {
        assert!(
            services
                .iter()
                .any(|(n, t)| n == name && t == &[ty.to_string()]),
            "{name} missing: {services:?}"
        );
    }
    rig.lc.shutdown().unwrap();
}

/// By label with id 0 (what `ros2 service call … "{transition: {label: configure}}"` sends), by
/// id, and by id and label (what `ros2 lifecycle set` sends): two events per transition, only
/// their states filled in.
#[test]
fn change_state_takes_a_label_with_id_zero_or_an_id() {
    let rig = Rig::new();
    assert!(rig.change_state(0, "configure"));
    assert_eq!(rig.get_state(), (2, "inactive".into()));
    assert!(rig.change_state(3, ""));
    assert_eq!(rig.get_state(), (3, "active".into()));
    assert_eq!(rig.events(4), [(1, 10), (10, 2), (2, 13), (13, 3)]);
    // The label wins over the id: `shutdown` from active is 7, whatever id comes with it.
    assert!(rig.change_state(5, "shutdown"));
    assert_eq!(rig.get_state(), (4, "finalized".into()));
    assert_eq!(rig.events(6)[4..], [(3, 12), (12, 4)]);
    assert!(rig.available_transitions().is_empty());
}

/// Every primary transition through `~/change_state`, the transitions available from each state,
/// and the events of each step.
#[test]
fn every_transition_and_the_transitions_available_from_each_state() {
    let rig = Rig::new();
    let seen = Arc::new(Mutex::new(Vec::new()));
    for (name, hook) in [
        ("configure", 0),
        ("cleanup", 1),
        ("activate", 2),
        ("deactivate", 3),
        ("shutdown", 4),
    ] {
        let s = seen.clone();
        let record = move |previous: State| {
            s.lock().unwrap().push((name, previous));
            CallbackReturn::Success
        };
        match hook {
            0 => rig.lc.on_configure(record),
            1 => rig.lc.on_cleanup(record),
            2 => rig.lc.on_activate(record),
            3 => rig.lc.on_deactivate(record),
            _ => rig.lc.on_shutdown(record),
        }
    }
    let unconfigured = ids_and_labels(&[(1, "configure"), (5, "shutdown")]);
    let inactive = ids_and_labels(&[(2, "cleanup"), (3, "activate"), (6, "shutdown")]);
    let active = ids_and_labels(&[(4, "deactivate"), (7, "shutdown")]);
    assert_eq!(rig.available_transitions(), unconfigured);
    for (id, label, state, available) in [
        (1, "configure", (2, "inactive"), &inactive),
        (2, "", (1, "unconfigured"), &unconfigured),
        (0, "configure", (2, "inactive"), &inactive),
        (3, "", (3, "active"), &active),
        (4, "", (2, "inactive"), &inactive),
        (0, "activate", (3, "active"), &active),
        (7, "", (4, "finalized"), &Vec::new()),
    ] {
        assert!(rig.change_state(id, label), "{id} {label}");
        assert_eq!(rig.get_state(), (state.0, state.1.to_string()));
        assert_eq!(&rig.available_transitions(), available);
    }
    assert_eq!(
        rig.events(14),
        [
            (1, 10),
            (10, 2),
            (2, 11),
            (11, 1),
            (1, 10),
            (10, 2),
            (2, 13),
            (13, 3),
            (3, 14),
            (14, 2),
            (2, 13),
            (13, 3),
            (3, 12),
            (12, 4),
        ]
    );
    assert_eq!(
        *seen.lock().unwrap(),
        [
            ("configure", State::Unconfigured),
            ("cleanup", State::Inactive),
            ("configure", State::Unconfigured),
            ("activate", State::Inactive),
            ("deactivate", State::Active),
            ("activate", State::Inactive),
            ("shutdown", State::Active),
        ]
    );
    // Nothing leaves finalized.
    assert!(!rig.change_state(0, "configure"));
    assert!(!rig.change_state(1, ""));

    // shutdown from unconfigured (5) and from inactive (6), from code this time.
    let rig = Rig::new();
    assert_eq!(rig.lc.trigger_transition(5u8).unwrap(), State::Finalized);
    let rig2 = Rig::new();
    rig2.lc.configure().unwrap();
    assert_eq!(
        rig2.lc
            .trigger_transition(Transition::INACTIVE_SHUTDOWN)
            .unwrap(),
        State::Finalized
    );
    assert_eq!(rig.events(2), [(1, 12), (12, 4)]);
    assert_eq!(rig2.events(4), [(1, 10), (10, 2), (2, 12), (12, 4)]);
}

#[test]
fn failure_returns_to_the_start_and_error_goes_through_errorprocessing() {
    let rig = Rig::new();
    rig.lc.on_configure(|_| CallbackReturn::Failure);
    assert!(!rig.change_state(1, ""));
    assert_eq!(rig.get_state(), (1, "unconfigured".into()));
    assert_eq!(rig.events(2), [(1, 10), (10, 1)]);

    // An error: errorprocessing, where on_error (it gets the transition's start state) decides.
    let on_error_saw = Arc::new(Mutex::new(Vec::new()));
    let o = on_error_saw.clone();
    rig.lc.on_configure(|_| CallbackReturn::Error);
    rig.lc.on_error(move |previous| {
        o.lock().unwrap().push(previous);
        CallbackReturn::Success
    });
    assert!(!rig.change_state(0, "configure"));
    assert_eq!(rig.get_state(), (1, "unconfigured".into()));
    assert_eq!(rig.events(5)[2..], [(1, 10), (10, 15), (15, 1)]);

    // An `Err` is an error; on_error failing finalizes.
    rig.lc.on_configure(|_| CallbackReturn::Success);
    rig.lc.configure().unwrap();
    rig.lc
        .on_activate(|_| -> Result<CallbackReturn, String> { Err("camera unplugged".into()) });
    rig.lc.on_error(|_| CallbackReturn::Failure);
    let capture = rig.lc.logger().capture();
    assert_eq!(rig.lc.activate().unwrap(), State::Finalized);
    assert_eq!(
        rig.events(10)[5..],
        [(1, 10), (10, 2), (2, 13), (13, 15), (15, 4)]
    );
    assert_eq!(*on_error_saw.lock().unwrap(), [State::Unconfigured]);
    let logged = capture.records();
    assert!(
        logged.iter().any(|r| r.severity == LogSeverity::Error
            && r.message.contains("on_activate failed: camera unplugged")),
        "{logged:?}"
    );
}

#[test]
fn a_panicking_callback_is_an_error() {
    let rig = Rig::new();
    rig.lc
        .on_configure(|_| -> CallbackReturn { panic!("driver bug") });
    let capture = rig.lc.logger().capture();
    // The default on_error recovers to unconfigured.
    assert_eq!(rig.lc.configure().unwrap(), State::Unconfigured);
    assert!(capture
        .records()
        .iter()
        .any(|r| r.message.contains("on_configure panicked: driver bug")));
    // An async callback panicking, and on_error panicking too: finalized.
    rig.lc.on_configure_async(|_| async {
        panic!("async driver bug");
        #[allow(unreachable_code)]
        CallbackReturn::Success
    });
    rig.lc
        .on_error(|_| -> CallbackReturn { panic!("no recovery") });
    assert!(!rig.change_state(1, ""));
    assert_eq!(rig.lc.current_state(), State::Finalized);
    assert_eq!(
        rig.events(6),
        [(1, 10), (10, 15), (15, 1), (1, 10), (10, 15), (15, 4)]
    );
}

#[test]
fn transitions_not_available_are_typed_errors_and_change_nothing() {
    let rig = Rig::new();
    assert_eq!(
        rig.lc.activate(),
        Err(Error::TransitionUnavailable {
            transition: TransitionRequest::Id(3),
            state: State::Unconfigured,
        })
    );
    assert_eq!(
        rig.lc.trigger_transition("launch"),
        Err(Error::TransitionUnavailable {
            transition: TransitionRequest::Label("launch".into()),
            state: State::Unconfigured,
        })
    );
    // A callback-result transition is the machine's own, never available from a primary state.
    assert!(matches!(
        rig.lc.trigger_transition(10u8),
        Err(Error::TransitionUnavailable { .. })
    ));
    assert!(!rig.change_state(42, ""));
    assert!(!rig.change_state(0, "activate"));
    assert!(!rig.change_state(0, ""));
    assert_eq!(rig.get_state(), (1, "unconfigured".into()));
    // The first event heard is the next transition's: the refusals published none.
    rig.lc.configure().unwrap();
    assert_eq!(rig.events(2), [(1, 10), (10, 2)]);
    assert_eq!(
        rig.lc.configure().unwrap_err().to_string(),
        "transition 1 is not available in lifecycle state inactive"
    );
}

/// An async on_configure that waits: meanwhile the node is `configuring`, the other services
/// answer, and every other request is refused (from code and through the service); the first
/// request's answer comes when the transition has ended.
#[test]
fn requests_during_a_transition_are_refused_and_change_state_answers_at_its_end() {
    let rig = Rig::new();
    let proceed = Arc::new(tokio::sync::Notify::new());
    let p = proceed.clone();
    rig.lc.on_configure_async(move |_| {
        let p = p.clone();
        async move {
            p.notified().await;
            CallbackReturn::Success
        }
    });
    let change = rig
        .client
        .create_client::<srv::ChangeState>("/lc/change_state")
        .unwrap();
    let get_state = rig
        .client
        .create_client::<srv::GetState>("/lc/get_state")
        .unwrap();
    let available = rig
        .client
        .create_client::<srv::GetAvailableTransitions>("/lc/get_available_transitions")
        .unwrap();
    let lc = rig.lc.clone();
    let request = |label: &str| srv::ChangeState_Request {
        transition: msg::Transition {
            id: 0,
            label: label.into(),
        },
    };
    let (configure, again) = (request("configure"), request("configure"));
    let outcome = run(&rig.executor, async move {
        change.wait_for_service(Some(LIMIT)).await.unwrap();
        let first = tokio::spawn(change.call(configure));
        while lc.current_state() != State::Configuring {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let state = get_state.call(Default::default()).await.unwrap();
        let transitions = available.call(Default::default()).await.unwrap();
        let second = change.call(again).await.unwrap();
        let from_code = lc.trigger_transition_async(Transition::CONFIGURE).await;
        let blocking = lc.shutdown();
        proceed.notify_one();
        let first = first.await.unwrap().unwrap();
        (state, transitions, second, from_code, blocking, first)
    });
    let (state, transitions, second, from_code, blocking, first) = outcome;
    assert_eq!(
        (state.current_state.id, state.current_state.label.as_str()),
        (10, "configuring")
    );
    let transitions: Vec<(u8, &str)> = transitions
        .available_transitions
        .iter()
        .map(|d| (d.transition.id, d.transition.label.as_str()))
        .collect();
    assert_eq!(
        transitions,
        [
            (10, "transition_success"),
            (11, "transition_failure"),
            (12, "transition_error")
        ]
    );
    assert!(!second.success);
    assert_eq!(
        from_code,
        Err(Error::TransitionInProgress(State::Configuring))
    );
    assert_eq!(
        blocking,
        Err(Error::TransitionInProgress(State::Configuring))
    );
    assert!(first.success);
    assert_eq!(rig.lc.current_state(), State::Inactive);
    assert_eq!(rig.events(2), [(1, 10), (10, 2)]);
}

/// A transition asked for from inside a transition callback is refused (not a deadlock).
#[test]
fn a_transition_from_a_callback_is_refused() {
    let rig = Rig::new();
    let weak = Arc::downgrade(&rig.lc);
    let answer = Arc::new(Mutex::new(None));
    let a = answer.clone();
    rig.lc.on_configure(move |_| {
        *a.lock().unwrap() = Some(weak.upgrade().unwrap().activate());
        // Replacing callbacks from a callback is fine too.
        weak.upgrade()
            .unwrap()
            .on_configure(|_| CallbackReturn::Failure);
        CallbackReturn::Success
    });
    assert_eq!(rig.lc.configure().unwrap(), State::Inactive);
    assert_eq!(
        answer.lock().unwrap().take(),
        Some(Err(Error::TransitionInProgress(State::Configuring)))
    );
    rig.lc.cleanup().unwrap();
    // The replacement took effect.
    assert_eq!(rig.lc.configure().unwrap(), State::Unconfigured);
}

/// An async transition future dropped before its callback finished: taken as an error whose
/// on_error could not run either, so the node ends finalized and is never stuck in a
/// transition state.
#[test]
fn an_abandoned_transition_ends_finalized() {
    use futures::FutureExt;
    let rig = Rig::new();
    rig.lc
        .on_configure_async(|_| futures::future::pending::<CallbackReturn>());
    assert!(rig
        .lc
        .trigger_transition_async(Transition::CONFIGURE)
        .now_or_never()
        .is_none());
    assert_eq!(rig.lc.current_state(), State::Finalized);
    assert_eq!(rig.events(3), [(1, 10), (10, 15), (15, 4)]);
}

/// Async callbacks may await Tokio's timers from a blocking `configure()` called outside any
/// runtime (it runs inside the executor's runtime).
#[test]
fn async_callbacks_run_from_blocking_calls() {
    let rig = Rig::new();
    rig.lc.on_configure_async(|previous| async move {
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert_eq!(previous, State::Unconfigured);
        Ok::<_, String>(CallbackReturn::Success)
    });
    assert_eq!(rig.lc.configure().unwrap(), State::Inactive);
    rig.lc.on_activate_async(|_| async { Ok::<(), String>(()) });
    assert_eq!(rig.lc.activate().unwrap(), State::Active);
}

/// A managed publisher publishes only while active; what it is given otherwise is dropped with
/// one warning per inactive period. Checked by order, not by waiting: each drop is followed
/// by a marker sent through the same publisher underneath, and the subscription must hear the
/// marker without the dropped message before it.
#[test]
fn managed_publishers_publish_only_while_active() {
    let rig = Rig::new();
    let publisher = rig
        .lc
        .create_lifecycle_publisher::<StringMsg>("lifecycle_chatter")
        .unwrap();
    assert_eq!(publisher.topic_name(), "/lifecycle_chatter");
    let heard = Arc::new(Mutex::new(Vec::new()));
    let h = heard.clone();
    let _sub = rig
        .client
        .create_subscription::<StringMsg, _>("/lifecycle_chatter", move |m| {
            h.lock().unwrap().push(m.data.clone())
        })
        .unwrap();
    let capture = rig.lc.logger().capture();
    let say = |text: &str| StringMsg { data: text.into() };
    let hear = |upto: usize| {
        let h = heard.clone();
        common::spin_until_state(&rig.executor, move || h.lock().unwrap().len() >= upto);
        heard.lock().unwrap().clone()
    };

    publisher.publish(say("unconfigured 1")).unwrap();
    publisher.publish(say("unconfigured 2")).unwrap();
    publisher.publisher().publish(say("marker 1")).unwrap();
    assert_eq!(hear(1), ["marker 1"]);

    // The callback may publish already: the entities are on while on_activate runs.
    let p = publisher.clone();
    rig.lc.on_activate(move |_| {
        p.publish(StringMsg {
            data: "from on_activate".into(),
        })
        .unwrap();
        CallbackReturn::Success
    });
    rig.lc.configure().unwrap();
    publisher.publish(say("inactive 1")).unwrap();
    rig.lc.activate().unwrap();
    assert!(publisher.is_activated());
    publisher.publish(say("active 1")).unwrap();
    assert_eq!(hear(3), ["marker 1", "from on_activate", "active 1"]);

    rig.lc.deactivate().unwrap();
    assert!(!publisher.is_activated());
    publisher.publish_arc(Arc::new(say("inactive 2"))).unwrap();
    publisher.publisher().publish(say("marker 2")).unwrap();
    assert_eq!(
        hear(4),
        ["marker 1", "from on_activate", "active 1", "marker 2"]
    );

    // An on_activate that fails leaves them off.
    rig.lc.on_activate(|_| CallbackReturn::Failure);
    assert_eq!(rig.lc.activate().unwrap(), State::Inactive);
    assert!(!publisher.is_activated());

    // One warning per inactive period: the first (unconfigured → inactive) and the second.
    let warnings: Vec<String> = capture
        .records()
        .into_iter()
        .filter(|r| r.severity == LogSeverity::Warn && r.message.contains("not activated"))
        .map(|r| r.message)
        .collect();
    assert_eq!(
        warnings,
        [
            "Trying to publish message on the topic '/lifecycle_chatter', but the publisher is not activated";
            2
        ]
    );
}

/// A managed timer ticks only while the node is active: cancelled otherwise, restarted on
/// activation. Every tick records the state it saw; none may see a state where the entities
/// are off. While the node is inactive, an unmanaged timer of the same period ticking five
/// times gives the managed one the chance to misbehave (a wait for a condition, not a pause).
#[test]
fn managed_timers_tick_only_while_active() {
    let rig = Rig::new();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (s, lc) = (seen.clone(), Arc::downgrade(&rig.lc));
    let timer = rig
        .lc
        .create_lifecycle_timer_repeating(Duration::from_millis(2), move || {
            s.lock()
                .unwrap()
                .push(lc.upgrade().map(|n| n.current_state()));
        })
        .unwrap();
    assert!(timer.is_canceled());
    let reference = Arc::new(AtomicU32::new(0));
    let r = reference.clone();
    let _reference = rig
        .lc
        .create_timer_repeating(Duration::from_millis(2), move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    let wait_reference = |n: u32| {
        let start = reference.load(Ordering::SeqCst);
        let r = reference.clone();
        common::spin_until_state(&rig.executor, move || r.load(Ordering::SeqCst) >= start + n);
    };
    wait_reference(5);
    assert!(seen.lock().unwrap().is_empty());

    rig.lc.configure().unwrap();
    wait_reference(5);
    assert!(seen.lock().unwrap().is_empty());
    rig.lc.activate().unwrap();
    assert!(!timer.is_canceled());
    let s = seen.clone();
    common::spin_until_state(&rig.executor, move || s.lock().unwrap().len() >= 5);

    rig.lc.deactivate().unwrap();
    assert!(timer.is_canceled());
    let ticks = seen.lock().unwrap().len();
    wait_reference(5);
    assert_eq!(seen.lock().unwrap().len(), ticks);
    rig.lc.activate().unwrap();
    let s = seen.clone();
    common::spin_until_state(&rig.executor, move || s.lock().unwrap().len() >= ticks + 5);
    rig.lc.shutdown().unwrap();
    assert!(timer.is_canceled());
    for state in seen.lock().unwrap().iter() {
        assert!(
            matches!(
                state,
                Some(State::Activating | State::Active | State::Deactivating | State::ShuttingDown)
            ),
            "a tick saw {state:?}"
        );
    }
}

/// The user's own managed entities are told about each switch (held weakly).
#[test]
fn user_managed_entities_follow_the_node() {
    #[derive(Default)]
    struct Lidar {
        switches: Mutex<Vec<bool>>,
    }
    impl ManagedEntity for Lidar {
        fn on_activate(&self) {
            self.switches.lock().unwrap().push(true);
        }
        fn on_deactivate(&self) {
            self.switches.lock().unwrap().push(false);
        }
    }
    let rig = Rig::new();
    let lidar = Arc::new(Lidar::default());
    rig.lc.add_managed_entity(&lidar);
    rig.lc.configure().unwrap();
    rig.lc.activate().unwrap();
    rig.lc.deactivate().unwrap();
    rig.lc.activate().unwrap();
    rig.lc.shutdown().unwrap();
    assert_eq!(*lidar.switches.lock().unwrap(), [true, false, true, false]);
    // Added while active: told at once.
    let rig = Rig::new();
    rig.lc.configure().unwrap();
    rig.lc.activate().unwrap();
    let late = Arc::new(Lidar::default());
    rig.lc.add_managed_entity(&late);
    assert_eq!(*late.switches.lock().unwrap(), [true]);
    drop(late);
    rig.lc.deactivate().unwrap();
    rig.lc.shutdown().unwrap();
}

/// The node underneath: names, namespace, parameters; and a second managed node of the same
/// name in another namespace has services of its own.
#[test]
fn a_lifecycle_node_is_a_node() {
    let executor = Context::default().create_basic_executor();
    let lc = executor
        .create_lifecycle_node(rclev::NodeOptions::new("camera").namespace("/robot"))
        .unwrap();
    assert_eq!(lc.fully_qualified_name(), "/robot/camera");
    assert_eq!(lc.node().name(), "camera");
    lc.declare_parameter("fps", 30).unwrap();
    rclev::log_info!(lc, "logs through the node's logger");
    let client = executor.create_node("client").unwrap();
    let state = call::<srv::GetState>(
        &executor,
        &client,
        "/robot/camera/get_state",
        Default::default(),
    );
    assert_eq!(state.current_state.label, "unconfigured");
    assert!(matches!(
        executor.create_lifecycle_node("bad name"),
        Err(Error::InvalidName { .. })
    ));
    lc.shutdown().unwrap();
}
