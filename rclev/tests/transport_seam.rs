//! What the transport seam promises on any transport, checked on the in-process one: matching
//! by type name and hash (a mismatch is an event, not an error), QoS events, the graph, GIDs
//! and message info, decoding in the node layer with malformed messages reported, services
//! waited for and called with timeouts.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rclev::interfaces::example_interfaces::srv::{AddTwoInts, AddTwoInts_Response};
use rclev::interfaces::std_msgs::msg::{Int64, String as StringMsg};
use rclev::msg::{CdrError, CdrReader, CdrWriter, Message};
use rclev::qos::{MatchedStatus, QosEvent, QosEventKind, QosPolicyKind};
use rclev::transport::EndpointKind;
use rclev::{
    Context, Error, IntoPrimitiveOptions, QoSProfile, Reliability, SpinOptions, VirtualTimeExecutor,
};

/// `std_msgs/msg/Int64` as another crate might generate it: same interface, another Rust type.
#[derive(Debug, Clone, PartialEq)]
struct OtherInt64 {
    data: i64,
}

impl Message for OtherInt64 {
    const TYPE_NAME: &'static str = Int64::TYPE_NAME;
    const DDS_TYPE_NAME: &'static str = Int64::DDS_TYPE_NAME;
    const TYPE_HASH: rclev::msg::TypeHash = Int64::TYPE_HASH;
    const TYPE_DESCRIPTION: rclev::msg::TypeDescription = Int64::TYPE_DESCRIPTION;
    fn encode_cdr(&self, w: &mut CdrWriter<'_>) -> Result<(), CdrError> {
        w.write_i64(self.data);
        Ok(())
    }
    fn decode_cdr(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        Ok(Self {
            data: r.read_i64()?,
        })
    }
}

/// Claims to be `std_msgs/msg/Int64` but reads two of them: every real Int64 is malformed to it.
#[derive(Debug, Clone, PartialEq)]
struct GreedyInt64;

impl Message for GreedyInt64 {
    const TYPE_NAME: &'static str = Int64::TYPE_NAME;
    const DDS_TYPE_NAME: &'static str = Int64::DDS_TYPE_NAME;
    const TYPE_HASH: rclev::msg::TypeHash = Int64::TYPE_HASH;
    const TYPE_DESCRIPTION: rclev::msg::TypeDescription = Int64::TYPE_DESCRIPTION;
    fn encode_cdr(&self, w: &mut CdrWriter<'_>) -> Result<(), CdrError> {
        w.write_i64(0);
        w.write_i64(0);
        Ok(())
    }
    fn decode_cdr(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        r.read_i64()?;
        r.read_i64()?;
        Ok(Self)
    }
}

fn spin_briefly(executor: &rclev::Executor) {
    let _ = executor.spin(SpinOptions::default().timeout(Duration::from_millis(200)));
}

fn events_of(log: &Arc<Mutex<Vec<QosEvent>>>) -> impl FnMut(QosEvent) + Send + 'static {
    let log = log.clone();
    move |e| log.lock().unwrap().push(e)
}

#[test]
fn a_type_mismatch_is_no_match_and_an_event_on_both_sides() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("n").unwrap();
    let publisher = node.create_publisher::<Int64>("t").unwrap();
    let (pub_log, sub_log) = (Arc::default(), Arc::default());
    publisher.set_event_handler(events_of(&pub_log));
    let got = Arc::new(Mutex::new(0));
    let g = got.clone();
    let sub = node
        .create_subscription::<StringMsg, _>("t", move |_| *g.lock().unwrap() += 1)
        .unwrap();
    sub.set_event_handler(events_of(&sub_log));
    // The subscription's own event came before its handler was set: it was warned about and
    // kept for the handler. A second subscription of another type raises one more on the
    // publisher, whose handler was set in time.
    let late = node
        .create_subscription::<StringMsg, _>("t", |_| {})
        .unwrap();
    assert_eq!(publisher.get_subscription_count(), 0);
    assert_eq!(sub.get_publisher_count(), 0);
    publisher.publish(Int64 { data: 1 }).unwrap();
    spin_briefly(&executor);
    assert_eq!(*got.lock().unwrap(), 0);
    let pub_events = pub_log.lock().unwrap().clone();
    assert!(
        matches!(pub_events[..], [QosEvent::IncompatibleType(s)] if s.total_count == 2 && s.total_count_change == 2),
        "{pub_events:?}"
    );
    assert_eq!(
        *sub_log.lock().unwrap(),
        [QosEvent::IncompatibleType(rclev::qos::CountStatus {
            total_count: 1,
            total_count_change: 1,
        })]
    );
    drop(late);
    // Both types are listed on the topic, as `ros2 topic list -t` would show them.
    let topics = node.get_topic_names_and_types();
    let t = topics.iter().find(|(name, _)| name == "/t").unwrap();
    assert_eq!(t.1, vec!["std_msgs/msg/Int64", "std_msgs/msg/String"]);
}

#[test]
fn a_qos_mismatch_is_no_match_and_an_event_whatever_the_creation_order() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("n").unwrap();
    let best_effort = node
        .create_publisher::<Int64>("be".qos(QoSProfile::sensor_data()))
        .unwrap();
    let log = Arc::default();
    best_effort.set_event_handler(events_of(&log));
    let reliable = node
        .create_subscription::<Int64, _>("be".qos(QoSProfile::default().reliable()), |_| {})
        .unwrap();
    let tolerant = node
        .create_subscription::<Int64, _>("be".qos(QoSProfile::sensor_data()), |_| {})
        .unwrap();
    assert_eq!(best_effort.get_subscription_count(), 1);
    assert_eq!(reliable.get_publisher_count(), 0);
    assert_eq!(tolerant.get_publisher_count(), 1);
    spin_briefly(&executor);
    let events = log.lock().unwrap().clone();
    assert!(events.contains(&QosEvent::OfferedIncompatibleQos(
        rclev::qos::IncompatibleQosStatus {
            total_count: 1,
            total_count_change: 1,
            last_policy_kind: QosPolicyKind::Reliability,
        }
    )));
    assert!(events.iter().any(|e| matches!(
        e,
        QosEvent::PublicationMatched(MatchedStatus {
            current_count: 1,
            ..
        })
    )));

    // The other order: subscription first, then the publisher that cannot serve it.
    let _tl = node
        .create_subscription::<Int64, _>("tl".qos(QoSProfile::default().transient_local()), |_| {})
        .unwrap();
    let volatile = node
        .create_publisher::<Int64>("tl".qos(QoSProfile::default().volatile()))
        .unwrap();
    assert_eq!(volatile.get_subscription_count(), 0);
    // What no transport can honour is still refused at creation.
    assert!(matches!(
        node.create_publisher::<Int64>("zero".qos(QoSProfile::default().keep_last(0))),
        Err(Error::InvalidQos(_))
    ));
    assert!(matches!(
        node.create_publisher::<Int64>("zero".qos(QoSProfile::default().deadline(Duration::ZERO))),
        Err(Error::InvalidQos(_))
    ));
}

#[test]
fn matched_events_count_peers_coming_and_going() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("n").unwrap();
    let sub = node.create_subscription::<Int64, _>("m", |_| {}).unwrap();
    let log = Arc::default();
    sub.set_event_handler(events_of(&log));
    let p1 = node.create_publisher::<Int64>("m").unwrap();
    let p2 = node.create_publisher::<Int64>("m").unwrap();
    drop(p1);
    spin_briefly(&executor);
    // Delivered while the worker was not running: merged into one event per kind, with
    // every change kept.
    let events = log.lock().unwrap().clone();
    let matched = events
        .iter()
        .find_map(|e| match e {
            QosEvent::SubscriptionMatched(s) => Some(*s),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        matched,
        MatchedStatus {
            total_count: 2,
            total_count_change: 2,
            current_count: 1,
            current_count_change: 1,
        }
    );
    assert_eq!(sub.get_publisher_count(), 1);
    drop(p2);
}

#[test]
fn best_available_adapts_to_the_publishers_present() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("n").unwrap();
    let _sensor = node
        .create_publisher::<Int64>("s".qos(QoSProfile::sensor_data()))
        .unwrap();
    let sub = node
        .create_subscription::<Int64, _>("s".qos(QoSProfile::best_available()), |_| {})
        .unwrap();
    assert_eq!(sub.actual_qos().reliability, Reliability::BestEffort);
    assert_eq!(sub.get_publisher_count(), 1);
    let alone = node
        .create_subscription::<Int64, _>("empty".qos(QoSProfile::best_available()), |_| {})
        .unwrap();
    assert_eq!(alone.actual_qos().reliability, Reliability::Reliable);
    let system = node
        .create_publisher::<Int64>("sys".qos(QoSProfile::system_default()))
        .unwrap();
    assert_eq!(system.actual_qos().history, rclev::History::KeepLast(1));
}

#[test]
fn the_graph_lists_nodes_and_endpoints_with_their_gids() {
    let executor = Context::default().create_basic_executor();
    let talker = executor
        .create_node(
            rclev::NodeOptions::new("talker")
                .namespace("/robot")
                .enable_rosout(false),
        )
        .unwrap();
    let listener = executor
        .create_node(rclev::NodeOptions::new("listener").enable_rosout(false))
        .unwrap();
    let publisher = talker.create_publisher::<Int64>("chatter").unwrap();
    let _sub = listener
        .create_subscription::<Int64, _>("/robot/chatter", |_| {})
        .unwrap();
    let _service = listener
        .create_service::<AddTwoInts, _>("add", |r| AddTwoInts_Response { sum: r.a + r.b })
        .unwrap();
    let names: Vec<String> = listener
        .get_node_names()
        .iter()
        .map(|n| n.fully_qualified())
        .collect();
    assert_eq!(names, vec!["/listener", "/robot/talker"]);
    assert_eq!(listener.count_publishers("/robot/chatter").unwrap(), 1);
    assert_eq!(talker.count_subscribers("chatter").unwrap(), 1);
    let info = listener
        .get_publishers_info_by_topic("/robot/chatter")
        .unwrap();
    assert_eq!(info.len(), 1);
    assert_eq!(info[0].gid, publisher.gid());
    assert_eq!(info[0].node.name, "talker");
    assert_eq!(info[0].type_hash, Int64::TYPE_HASH);
    assert_eq!(info[0].kind, EndpointKind::Publisher);
    let services = listener.get_service_names_and_types();
    let has = |name: &str, ty: &str| services.contains(&(name.to_string(), vec![ty.to_string()]));
    assert!(
        has("/add", "example_interfaces/srv/AddTwoInts"),
        "{services:?}"
    );
    // Every node's parameter services, on by default.
    for (node, service, ty) in [
        ("/listener", "get_parameters", "GetParameters"),
        ("/robot/talker", "get_parameter_types", "GetParameterTypes"),
        ("/listener", "set_parameters", "SetParameters"),
        (
            "/listener",
            "set_parameters_atomically",
            "SetParametersAtomically",
        ),
        ("/listener", "describe_parameters", "DescribeParameters"),
        ("/listener", "list_parameters", "ListParameters"),
    ] {
        assert!(
            has(
                &format!("{node}/{service}"),
                &format!("rcl_interfaces/srv/{ty}")
            ),
            "{services:?}"
        );
    }
    assert!(has(
        "/listener/get_type_description",
        "type_description_interfaces/srv/GetTypeDescription"
    ));
    assert_eq!(services.len(), 1 + 2 * 7, "{services:?}");
    drop(publisher);
    assert_eq!(listener.count_publishers("/robot/chatter").unwrap(), 0);
    drop(talker);
    let names = listener.get_node_names();
    assert_eq!(names.len(), 1);
    assert!(listener.supports_qos_event(QosEventKind::SubscriptionMatched));
    assert!(!listener.supports_qos_event(QosEventKind::RequestedDeadlineMissed));
}

#[test]
fn message_info_names_the_publisher_and_counts() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("n").unwrap();
    let infos = Arc::new(Mutex::new(Vec::new()));
    let i = infos.clone();
    let _sub = node
        .create_subscription_with_info::<Int64, _>(
            "i".qos(QoSProfile::default().keep_all()),
            move |m, info| i.lock().unwrap().push((m.data, info)),
        )
        .unwrap();
    let publisher = node.create_publisher::<Int64>("i").unwrap();
    let before = std::time::SystemTime::now();
    for data in 0..3 {
        publisher.publish(Int64 { data }).unwrap();
    }
    spin_briefly(&executor);
    let infos = infos.lock().unwrap();
    assert_eq!(infos.len(), 3);
    for (k, (data, info)) in infos.iter().enumerate() {
        assert_eq!(*data, k as i64);
        assert_eq!(info.publisher_gid, publisher.gid());
        assert_eq!(info.publication_sequence_number, k as u64 + 1);
        assert_eq!(info.reception_sequence_number, k as u64 + 1);
        assert!(info.source_timestamp >= before);
        assert!(info.received_timestamp >= info.source_timestamp);
        assert!(info.from_intra_process);
    }
}

#[test]
fn two_rust_types_of_one_interface_talk_through_cdr() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("n").unwrap();
    let stream = node.create_subscription_stream::<OtherInt64>("x").unwrap();
    let publisher = node.create_publisher::<Int64>("x").unwrap();
    assert_eq!(publisher.get_subscription_count(), 1);
    publisher.publish(Int64 { data: -42 }).unwrap();
    let (msg, info) = stream.try_recv().unwrap();
    assert_eq!(*msg, OtherInt64 { data: -42 });
    assert_eq!(info.publisher_gid, publisher.gid());
}

#[test]
fn a_malformed_message_is_counted_and_reported_not_delivered() {
    let errors = Arc::new(Mutex::new(Vec::new()));
    let e = errors.clone();
    let executor = Context::default()
        .create_executor(rclev::ExecutorOptions {
            error_handler: Some(Arc::new(move |err: &Error| {
                e.lock().unwrap().push(err.clone())
            })),
            ..Default::default()
        })
        .unwrap();
    let node = executor.create_node("n").unwrap();
    let got = Arc::new(Mutex::new(Vec::new()));
    let g = got.clone();
    let greedy = node
        .create_subscription::<GreedyInt64, _>("g", move |_| g.lock().unwrap().push(()))
        .unwrap();
    let fine = node.create_subscription_stream::<Int64>("g").unwrap();
    let publisher = node.create_publisher::<Int64>("g").unwrap();
    publisher.publish(Int64 { data: 5 }).unwrap();
    spin_briefly(&executor);
    assert!(got.lock().unwrap().is_empty());
    assert_eq!(greedy.malformed_count(), 1);
    let errors = errors.lock().unwrap();
    assert!(
        matches!(&errors[..], [Error::MalformedMessage { topic, .. }] if topic == "/g"),
        "{errors:?}"
    );
    // The same message reached the subscription that can read it.
    assert_eq!(fine.try_recv().unwrap().0.data, 5);
}

#[test]
fn wait_for_service_is_woken_by_the_graph_and_calls_time_out() {
    // On virtual time, so each timeout is checked to the nanosecond on any host.
    let test = VirtualTimeExecutor::new().unwrap();
    let node = test.create_node("n").unwrap();
    let client = node.create_client::<AddTwoInts>("add").unwrap();
    let n = node.clone();
    let (none_yet, call) = test
        .run_until(async move {
            let none_yet = client
                .wait_for_service(Some(Duration::from_millis(20)))
                .await;
            // A server appears while the client waits: the graph wakes the wait at once.
            let waiting = client.wait_for_service(Some(Duration::from_secs(10)));
            let appear = async {
                tokio::task::yield_now().await;
                n.create_async_service::<AddTwoInts, _, _>("add", |_| async {
                    // Never answers, like a server that vanished mid-call.
                    std::future::pending::<AddTwoInts_Response>().await
                })
                .unwrap()
            };
            let (waited, service) = tokio::join!(waiting, appear);
            waited.unwrap();
            let call = client
                .call_with_timeout(Default::default(), Duration::from_millis(50))
                .await;
            drop(service);
            (none_yet, call)
        })
        .unwrap();
    assert!(
        matches!(none_yet, Err(Error::Timeout { .. })),
        "{none_yet:?}"
    );
    assert!(matches!(call, Err(Error::Timeout { .. })), "{call:?}");
    // 20 ms for the first wait, none for the second (woken by the graph), 50 ms for the call.
    assert_eq!(test.elapsed(), Duration::from_millis(70));
}

#[test]
fn a_publish_after_shutdown_hands_the_message_back() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("n").unwrap();
    let publisher = node.create_publisher::<StringMsg>("p").unwrap();
    executor.commands().shutdown();
    let err = publisher
        .publish(StringMsg {
            data: "kept".into(),
        })
        .unwrap_err();
    assert_eq!(err.error, Error::Shutdown);
    assert_eq!(err.into_inner().data, "kept");
}

/// The events a handler has seen.
type EventLog = Arc<Mutex<Vec<QosEvent>>>;

/// A handler, the events it has seen, and a permit per event to wait on.
fn counted_events() -> (
    EventLog,
    Arc<tokio::sync::Semaphore>,
    impl FnMut(QosEvent) + Send + 'static,
) {
    let log: EventLog = Arc::default();
    let arrived = Arc::new(tokio::sync::Semaphore::new(0));
    let (l, a) = (Arc::clone(&log), Arc::clone(&arrived));
    let handler = move |e| {
        l.lock().unwrap().push(e);
        a.add_permits(1);
    };
    (log, arrived, handler)
}

fn incompatible_reliability() -> rclev::qos::IncompatibleQosStatus {
    rclev::qos::IncompatibleQosStatus {
        total_count: 1,
        total_count_change: 1,
        last_policy_kind: QosPolicyKind::Reliability,
    }
}

/// Issue 24: the clash a publisher finds while it is created (with subscriptions that were
/// there first) is raised before `create_publisher` returns, so before any handler could be set.
#[test]
fn a_clash_found_while_a_publisher_is_created_reaches_the_handler_in_its_options() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("n").unwrap();
    let _reliable = node
        .create_subscription::<Int64, _>("clash".qos(QoSProfile::default().reliable()), |_| {})
        .unwrap();
    let (log, arrived, handler) = counted_events();
    let _publisher = node
        .create_publisher::<Int64>(
            "clash"
                .qos(QoSProfile::sensor_data())
                .event_handler(handler),
        )
        .unwrap();
    common::spin_until(&executor, common::count_to(&arrived, 1));
    assert_eq!(
        *log.lock().unwrap(),
        [QosEvent::OfferedIncompatibleQos(incompatible_reliability())]
    );
}

/// The same for a subscription (and a subscription stream) created after a publisher that
/// cannot serve it.
#[test]
fn events_raised_while_a_subscription_is_created_reach_the_handler_in_its_options() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("n").unwrap();
    let _best_effort = node
        .create_publisher::<Int64>("clash".qos(QoSProfile::sensor_data()))
        .unwrap();
    let (log, arrived, handler) = counted_events();
    let _sub = node
        .create_subscription::<Int64, _>(
            "clash"
                .qos(QoSProfile::default().reliable())
                .event_handler(handler),
            |_| {},
        )
        .unwrap();
    let (stream_log, stream_arrived, stream_handler) = counted_events();
    let _stream = node
        .create_subscription_stream::<Int64>(
            "clash"
                .qos(QoSProfile::default().reliable())
                .event_handler(stream_handler),
        )
        .unwrap();
    common::spin_until(&executor, common::count_to(&arrived, 1));
    common::spin_until(&executor, common::count_to(&stream_arrived, 1));
    for log in [log, stream_log] {
        assert_eq!(
            *log.lock().unwrap(),
            [QosEvent::RequestedIncompatibleQos(
                incompatible_reliability()
            )]
        );
    }
    // Services and clients have no QoS events: a handler for one is refused, not ignored.
    assert!(matches!(
        node.create_client::<AddTwoInts>("add".event_handler(|_| {})),
        Err(Error::InvalidQos(_))
    ));
}

#[test]
fn a_clash_found_while_a_publisher_is_created_reaches_a_handler_set_later() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("n").unwrap();
    let _reliable = node
        .create_subscription::<Int64, _>("clash".qos(QoSProfile::default().reliable()), |_| {})
        .unwrap();
    let publisher = node
        .create_publisher::<Int64>("clash".qos(QoSProfile::sensor_data()))
        .unwrap();
    let (log, arrived, handler) = counted_events();
    publisher.set_event_handler(handler);
    common::spin_until(&executor, common::count_to(&arrived, 1));
    assert_eq!(
        *log.lock().unwrap(),
        [QosEvent::OfferedIncompatibleQos(incompatible_reliability())]
    );
}

/// A handler runs taken out of its entity, so it may replace itself (it used to wait for its
/// own lock).
#[test]
fn a_handler_may_replace_itself() {
    let executor = Context::default().create_basic_executor();
    let node = executor.create_node("n").unwrap();
    let reliable = || "clash".qos(QoSProfile::default().reliable());
    let _first_clash = node
        .create_subscription::<Int64, _>(reliable(), |_| {})
        .unwrap();
    let publisher = node
        .create_publisher::<Int64>("clash".qos(QoSProfile::sensor_data()))
        .unwrap();
    let (first_log, first_arrived, mut first) = counted_events();
    let (second_log, second_arrived, second) = counted_events();
    let me = rclev::EntityHandle::downgrade(&publisher);
    let mut second = Some(second);
    publisher.set_event_handler(move |event| {
        first(event);
        if let (Some(publisher), Some(second)) = (me.upgrade(), second.take()) {
            publisher.set_event_handler(second);
        }
    });
    common::spin_until(&executor, common::count_to(&first_arrived, 1));
    let _second_clash = node
        .create_subscription::<Int64, _>(reliable(), |_| {})
        .unwrap();
    common::spin_until(&executor, common::count_to(&second_arrived, 1));
    assert_eq!(first_log.lock().unwrap().len(), 1);
    assert!(matches!(
        second_log.lock().unwrap()[..],
        [QosEvent::OfferedIncompatibleQos(s)] if s.total_count == 2
    ));
}
