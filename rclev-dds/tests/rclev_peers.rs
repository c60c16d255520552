//! rclev ↔ rclev over DDS: two transports (two participants) in one process, and two
//! processes.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{dds_context, eventually, in_netns, reliable_keep_all, spin_until, Pair};
use rclev::interfaces::std_msgs::msg::String as StringMsg;
use rclev::{Context, SpinOptions};
use rclev_dds::DdsTransport;

#[test]
fn two_participants_exchange_messages() {
    in_netns(
        "two_participants_exchange_messages",
        Duration::from_secs(60),
        || {
            let pair = Pair::new();
            assert_eq!(
                pair.exchange("chatter", 5),
                (0..5).map(|i| format!("hello {i}")).collect::<Vec<_>>()
            );
        },
    );
}

/// Each participant lists the other's nodes (from its `ros_discovery_info`) with their
/// endpoints, and sees a node that goes, go.
#[test]
fn two_participants_list_each_others_nodes() {
    in_netns(
        "two_participants_list_each_others_nodes",
        Duration::from_secs(60),
        || {
            let pair = Pair::new();
            let (talker, listener) = (&pair.talker, &pair.listener);
            let _publisher = talker.create_publisher::<StringMsg>("chatter").unwrap();
            let extra = pair
                .a
                .create_node(rclev::NodeOptions::new("extra").namespace("/ns"))
                .unwrap();
            let seen = |who: &rclev::Node, name: &str, namespace: &str| {
                who.get_node_names_and_namespaces()
                    .contains(&(name.to_string(), namespace.to_string()))
            };
            assert!(eventually(Duration::from_secs(20), || {
                seen(listener, "extra", "/ns")
                    && seen(talker, listener.name(), "/")
                    && listener
                        .get_publishers_info_by_topic("/chatter")
                        .unwrap()
                        .iter()
                        .any(|p| p.node.name == talker.name())
            }));
            drop(extra);
            assert!(eventually(Duration::from_secs(20), || !seen(
                listener, "extra", "/ns"
            )));
            // A namespace longer than ros_discovery_info carries is refused, not announced
            // in a sample no peer could read.
            let long = format!("/{}", "a".repeat(300));
            assert!(matches!(
                pair.a
                    .create_node(rclev::NodeOptions::new("long").namespace(long)),
                Err(rclev::Error::InvalidArgument { .. })
            ));
            assert!(seen(listener, talker.name(), "/"));
        },
    );
}

/// A publisher encodes messages straight into Fast DDS's payload once it knows their size
/// (room for the last size plus an eighth): messages that grow past it, shrink, and grow
/// again all arrive intact, in order.
#[test]
fn messages_of_changing_sizes_arrive_intact() {
    in_netns(
        "messages_of_changing_sizes_arrive_intact",
        Duration::from_secs(60),
        || {
            let pair = Pair::new();
            let (talker, listener, b) = (&pair.talker, &pair.listener, &pair.b);
            let keep_all = reliable_keep_all();
            use rclev::IntoPrimitiveOptions;
            let publisher = talker
                .create_publisher::<StringMsg>("sizes".qos(keep_all))
                .unwrap();
            let heard = Arc::new(Mutex::new(Vec::new()));
            let h = heard.clone();
            let _sub = listener
                .create_subscription::<StringMsg, _>("sizes".qos(keep_all), move |m| {
                    h.lock().unwrap().push(m.data.clone())
                })
                .unwrap();
            assert!(eventually(Duration::from_secs(10), || publisher
                .get_subscription_count()
                == 1));
            let sizes = [
                1, 10, 11, 12, 100, 1_000, 1_100, 70_000, 5, 0, 300_000, 64, 300_001,
            ];
            let sent: Vec<String> = sizes
                .iter()
                .enumerate()
                .map(|(i, &n)| std::iter::repeat_n(char::from(b'a' + (i % 26) as u8), n).collect())
                .collect();
            for data in &sent {
                publisher.publish(StringMsg { data: data.clone() }).unwrap();
            }
            assert!(common::spin_until(b, Duration::from_secs(20), || heard
                .lock()
                .unwrap()
                .len()
                == sent.len()));
            assert!(*heard.lock().unwrap() == sent, "a message arrived changed");
        },
    );
}

/// The `chatter` example (built by `cargo test` with the tests), started with `role`.
fn chatter(role: &str) -> std::process::Child {
    let exe = std::env::current_exe().unwrap();
    let example = exe.parent().unwrap().join("../examples/chatter");
    std::process::Command::new(&example)
        .arg(role)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "{}: {e} (cargo test builds the examples)",
                example.display()
            )
        })
}

#[test]
fn a_killed_peer_process_is_survived_and_its_restart_rediscovered() {
    use rclev::transport::Gid;
    in_netns(
        "a_killed_peer_process_is_survived_and_its_restart_rediscovered",
        Duration::from_secs(120),
        || {
            let executor = dds_context().create_basic_executor();
            let node = executor.create_node("listener").unwrap();
            let heard = Arc::new(Mutex::new(Vec::<(Gid, String)>::new()));
            let h = heard.clone();
            let sub = node
                .create_subscription_with_info::<StringMsg, _>("chatter", move |m, info| {
                    h.lock().unwrap().push((info.publisher_gid, m.data.clone()))
                })
                .unwrap();
            let spin_until = |done: &dyn Fn() -> bool| {
                let deadline = std::time::Instant::now() + Duration::from_secs(40);
                while !done() && std::time::Instant::now() < deadline {
                    let errors =
                        executor.spin(SpinOptions::default().timeout(Duration::from_millis(50)));
                    assert!(errors.is_empty(), "{errors:?}");
                }
                done()
            };
            let mut first = chatter("talker");
            assert!(spin_until(&|| heard.lock().unwrap().len() >= 3));
            let first_gid = heard.lock().unwrap()[0].0;
            // Killed mid-stream, without a goodbye.
            first.kill().unwrap();
            first.wait().unwrap();
            let before = heard.lock().unwrap().len();
            let mut second = chatter("talker");
            assert!(spin_until(&|| heard
                .lock()
                .unwrap()
                .iter()
                .skip(before)
                .any(|(gid, _)| *gid != first_gid)));
            let (gid, data) = heard.lock().unwrap().last().unwrap().clone();
            assert_ne!(gid, first_gid);
            assert!(data.starts_with("Hello World: "), "{data}");
            // The dead writer leaves the graph once its participant's lease runs out.
            assert!(spin_until(&|| sub.get_publisher_count() == 1));
            second.kill().unwrap();
            second.wait().unwrap();
        },
    );
}

mod malformed {
    use super::*;
    use rclev::interfaces::std_msgs::msg::Int64;
    use rclev::msg::{CdrError, CdrReader, CdrWriter, Message};
    use rclev::{Error, ExecutorOptions};

    /// Claims to be `std_msgs/msg/Int64` but holds two: a real Int64 does not decode as it.
    #[derive(Debug, Clone, PartialEq, Default)]
    struct Pair(i64, i64);

    impl Message for Pair {
        const TYPE_NAME: &'static str = Int64::TYPE_NAME;
        const DDS_TYPE_NAME: &'static str = Int64::DDS_TYPE_NAME;
        const TYPE_HASH: rclev::msg::TypeHash = Int64::TYPE_HASH;
        const TYPE_DESCRIPTION: rclev::msg::TypeDescription = Int64::TYPE_DESCRIPTION;
        fn encode_cdr(&self, w: &mut CdrWriter<'_>) -> Result<(), CdrError> {
            w.write_i64(self.0);
            w.write_i64(self.1);
            Ok(())
        }
        fn decode_cdr(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
            Ok(Self(r.read_i64()?, r.read_i64()?))
        }
    }

    #[test]
    fn a_sample_that_does_not_decode_is_counted_reported_and_survived() {
        in_netns(
            "malformed::a_sample_that_does_not_decode_is_counted_reported_and_survived",
            Duration::from_secs(60),
            || {
                let errors = Arc::new(Mutex::new(Vec::new()));
                let e = errors.clone();
                let receiver = dds_context()
                    .create_executor(ExecutorOptions {
                        error_handler: Some(Arc::new(move |err: &Error| {
                            e.lock().unwrap().push(err.clone())
                        })),
                        ..Default::default()
                    })
                    .unwrap();
                let sender = dds_context().create_basic_executor();
                let node = receiver.create_node("reader").unwrap();
                let got = Arc::new(Mutex::new(Vec::new()));
                let g = got.clone();
                let sub = node
                    .create_subscription::<Pair, _>("numbers", move |m| {
                        g.lock().unwrap().push((*m).clone())
                    })
                    .unwrap();
                let writer = sender.create_node("writer").unwrap();
                let short = writer.create_publisher::<Int64>("numbers").unwrap();
                let pairs = writer.create_publisher::<Pair>("numbers").unwrap();
                assert!(eventually(Duration::from_secs(10), || {
                    short.get_subscription_count() == 1 && pairs.get_subscription_count() == 1
                }));
                short.publish(Int64 { data: 7 }).unwrap();
                pairs.publish(Pair(1, 2)).unwrap();
                let deadline = std::time::Instant::now() + Duration::from_secs(10);
                while got.lock().unwrap().is_empty() && std::time::Instant::now() < deadline {
                    let _ =
                        receiver.spin(SpinOptions::default().timeout(Duration::from_millis(50)));
                }
                assert_eq!(*got.lock().unwrap(), vec![Pair(1, 2)]);
                assert_eq!(sub.malformed_count(), 1);
                let errors = errors.lock().unwrap();
                assert!(
                    matches!(&errors[..], [Error::MalformedMessage { topic, .. }] if topic == "/numbers"),
                    "{errors:?}"
                );
            },
        );
    }
}

mod discovery {
    //! Discovery between two processes (in one process Fast DDS finds its participants
    //! without the network): this test process and the `chatter` example, each set up by
    //! the environment as ROS 2 reads it.

    use super::*;
    use rclev_dds::{DdsOptions, DiscoveryRangeOption, SharedMemory};

    /// The environment's options (the test's own domain), changed by `f`.
    fn options(f: impl FnOnce(&mut DdsOptions)) -> DdsOptions {
        let mut o = DdsOptions::from_env().unwrap();
        f(&mut o);
        o
    }

    /// Whether a `chatter talker` started with `env` matches a subscription made here with
    /// `ours` within `limit`.
    fn matches(ours: &DdsOptions, env: &[(&str, String)], limit: Duration) -> bool {
        let executor = Context::with_transport(Arc::new(DdsTransport::new(ours).unwrap()))
            .create_basic_executor();
        let node = executor.create_node("listener").unwrap();
        let sub = node
            .create_subscription::<StringMsg, _>("chatter", |_| {})
            .unwrap();
        let exe = std::env::current_exe().unwrap();
        let mut talker =
            std::process::Command::new(exe.parent().unwrap().join("../examples/chatter"))
                .arg("talker")
                .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap();
        let matched = eventually(limit, || sub.get_publisher_count() == 1);
        talker.kill().unwrap();
        talker.wait().unwrap();
        matched
    }

    fn domain() -> u32 {
        DdsOptions::from_env().unwrap().domain_id
    }

    #[test]
    fn domains_keep_participants_apart() {
        in_netns(
            "discovery::domains_keep_participants_apart",
            Duration::from_secs(60),
            || {
                let here = options(|_| {});
                // The control: the same domain matches.
                assert!(matches(&here, &[], Duration::from_secs(15)));
                let other = [("ROS_DOMAIN_ID", (domain() + 1).to_string())];
                assert!(!matches(&here, &other, Duration::from_secs(3)));
            },
        );
    }

    #[test]
    fn range_off_reaches_no_other_participant() {
        in_netns(
            "discovery::range_off_reaches_no_other_participant",
            Duration::from_secs(60),
            || {
                let off = options(|o| o.range = DiscoveryRangeOption::Off);
                let env = [("ROS_AUTOMATIC_DISCOVERY_RANGE", "OFF".to_string())];
                assert!(!matches(&off, &env, Duration::from_secs(3)));
                // Within one participant (one context) a node still reaches itself.
                let executor = Context::with_transport(Arc::new(DdsTransport::new(&off).unwrap()))
                    .create_basic_executor();
                let node = executor.create_node("alone").unwrap();
                let publisher = node.create_publisher::<StringMsg>("self").unwrap();
                let _sub = node
                    .create_subscription::<StringMsg, _>("self", |_| {})
                    .unwrap();
                assert!(eventually(Duration::from_secs(10), || publisher
                    .get_subscription_count()
                    == 1));
            },
        );
    }

    #[test]
    fn static_peers_reach_the_other_process() {
        in_netns(
            "discovery::static_peers_reach_the_other_process",
            Duration::from_secs(60),
            || {
                // Only that the static peer set-up works: Fast DDS finds a same-host peer over
                // loopback even where the namespace's lo carries no multicast, so the peer list
                // cannot be shown to be the only way here.
                let peers = options(|o| {
                    o.range = DiscoveryRangeOption::Subnet;
                    o.shared_memory = SharedMemory::Off;
                    o.static_peers = vec!["127.0.0.1".into(), "localhost".into()];
                });
                let env = [
                    ("ROS_AUTOMATIC_DISCOVERY_RANGE", "SUBNET".to_string()),
                    ("RCLEV_DDS_SHM", "0".to_string()),
                    ("ROS_STATIC_PEERS", "127.0.0.1;localhost".to_string()),
                ];
                assert!(matches(&peers, &env, Duration::from_secs(15)));
            },
        );
    }

    #[test]
    fn subnet_discovery_uses_multicast() {
        in_netns(
            "discovery::subnet_discovery_uses_multicast",
            Duration::from_secs(60),
            || {
                let up = std::process::Command::new("ip")
                    .args(["link", "set", "lo", "multicast", "on"])
                    .status()
                    .unwrap();
                assert!(up.success());
                let subnet = options(|o| {
                    o.range = DiscoveryRangeOption::Subnet;
                    o.shared_memory = SharedMemory::Off;
                });
                let env = [
                    ("ROS_AUTOMATIC_DISCOVERY_RANGE", "SUBNET".to_string()),
                    ("RCLEV_DDS_SHM", "0".to_string()),
                ];
                assert!(matches(&subnet, &env, Duration::from_secs(15)));
            },
        );
    }
}

mod qos_over_dds {
    use super::*;
    use rclev::qos::QosEvent;
    use rclev::{IntoPrimitiveOptions, QoSProfile};

    #[test]
    fn missed_deadlines_are_reported_on_both_sides() {
        in_netns(
            "qos_over_dds::missed_deadlines_are_reported_on_both_sides",
            Duration::from_secs(60),
            || {
                let a = dds_context().create_basic_executor();
                let b = dds_context().create_basic_executor();
                let qos = QoSProfile::default().deadline(Duration::from_millis(100));
                let publisher = a
                    .create_node("p")
                    .unwrap()
                    .create_publisher::<StringMsg>("beat".qos(qos))
                    .unwrap();
                let offered = Arc::new(Mutex::new(Vec::new()));
                let o = offered.clone();
                publisher.set_event_handler(move |e| o.lock().unwrap().push(e));
                let node = b.create_node("s").unwrap();
                let sub = node
                    .create_subscription::<StringMsg, _>("beat".qos(qos), |_| {})
                    .unwrap();
                let requested = Arc::new(Mutex::new(Vec::new()));
                let r = requested.clone();
                sub.set_event_handler(move |e| r.lock().unwrap().push(e));
                assert!(eventually(Duration::from_secs(10), || publisher
                    .get_subscription_count()
                    == 1));
                publisher
                    .publish(StringMsg {
                        data: "once".into(),
                    })
                    .unwrap();
                // Then silence: both sides see their deadline pass.
                let missed = |log: &Arc<Mutex<Vec<QosEvent>>>| {
                    log.lock().unwrap().iter().any(|e| {
                    matches!(
                        e,
                        QosEvent::OfferedDeadlineMissed(s) | QosEvent::RequestedDeadlineMissed(s) if s.total_count > 0
                    )
                })
                };
                let deadline = std::time::Instant::now() + Duration::from_secs(10);
                while !(missed(&offered) && missed(&requested))
                    && std::time::Instant::now() < deadline
                {
                    let _ = a.spin(SpinOptions::default().timeout(Duration::from_millis(20)));
                    let _ = b.spin(SpinOptions::default().timeout(Duration::from_millis(20)));
                }
                assert!(missed(&offered), "{:?}", offered.lock().unwrap());
                assert!(missed(&requested), "{:?}", requested.lock().unwrap());
            },
        );
    }

    /// A clash that exists when a publisher is created (a reliable subscription already on
    /// the topic, in the same participant: Fast DDS matches it inside the creation) reaches
    /// the handler given in the publisher's options, and the subscription's handler set after
    /// its creation gets its side too.
    #[test]
    fn a_clash_found_at_creation_reaches_the_handlers() {
        in_netns(
            "qos_over_dds::a_clash_found_at_creation_reaches_the_handlers",
            Duration::from_secs(60),
            || {
                let executor = dds_context().create_basic_executor();
                let node = executor.create_node("clash").unwrap();
                let sub = node
                    .create_subscription::<StringMsg, _>("clash".qos(QoSProfile::default()), |_| {})
                    .unwrap();
                let offered = Arc::new(Mutex::new(Vec::new()));
                let o = offered.clone();
                let _publisher = node
                    .create_publisher::<StringMsg>(
                        "clash"
                            .qos(QoSProfile::default().best_effort())
                            .event_handler(move |e| o.lock().unwrap().push(e)),
                    )
                    .unwrap();
                let requested = Arc::new(Mutex::new(Vec::new()));
                let r = requested.clone();
                sub.set_event_handler(move |e| r.lock().unwrap().push(e));
                let clash = |log: &Arc<Mutex<Vec<QosEvent>>>| {
                    log.lock().unwrap().iter().any(|e| {
                        matches!(
                            e,
                            QosEvent::OfferedIncompatibleQos(_)
                                | QosEvent::RequestedIncompatibleQos(_)
                        )
                    })
                };
                assert!(spin_until(&executor, Duration::from_secs(10), || clash(
                    &offered
                )
                    && clash(&requested)));
            },
        );
    }

    #[test]
    fn a_late_joiner_gets_only_what_has_not_outlived_its_lifespan() {
        in_netns(
            "qos_over_dds::a_late_joiner_gets_only_what_has_not_outlived_its_lifespan",
            Duration::from_secs(60),
            || {
                let a = dds_context().create_basic_executor();
                let talker = a.create_node("p").unwrap();
                let latched = QoSProfile::default().keep_last(5).transient_local();
                let short = talker
                    .create_publisher::<StringMsg>(
                        "short".qos(latched.lifespan(Duration::from_millis(200))),
                    )
                    .unwrap();
                let long = talker
                    .create_publisher::<StringMsg>("long".qos(latched))
                    .unwrap();
                short
                    .publish(StringMsg {
                        data: "stale".into(),
                    })
                    .unwrap();
                long.publish(StringMsg {
                    data: "kept".into(),
                })
                .unwrap();
                std::thread::sleep(Duration::from_millis(600));
                let b = dds_context().create_basic_executor();
                let node = b.create_node("late").unwrap();
                let heard = Arc::new(Mutex::new(Vec::new()));
                let (h1, h2) = (heard.clone(), heard.clone());
                let _s = node
                    .create_subscription::<StringMsg, _>("short".qos(latched), move |m| {
                        h1.lock().unwrap().push(m.data.clone())
                    })
                    .unwrap();
                let _l = node
                    .create_subscription::<StringMsg, _>("long".qos(latched), move |m| {
                        h2.lock().unwrap().push(m.data.clone())
                    })
                    .unwrap();
                let deadline = std::time::Instant::now() + Duration::from_secs(10);
                while heard.lock().unwrap().is_empty() && std::time::Instant::now() < deadline {
                    let _ = b.spin(SpinOptions::default().timeout(Duration::from_millis(20)));
                }
                // A little longer, for the stale one to show up if it (wrongly) would.
                let _ = b.spin(SpinOptions::default().timeout(Duration::from_millis(300)));
                assert_eq!(*heard.lock().unwrap(), vec!["kept".to_string()]);
            },
        );
    }
}

#[test]
fn an_unresolvable_static_peer_is_an_error() {
    in_netns(
        "an_unresolvable_static_peer_is_an_error",
        Duration::from_secs(60),
        || {
            let mut options = rclev_dds::DdsOptions::from_env().unwrap();
            options.static_peers = vec!["no-such-host.invalid".into()];
            match DdsTransport::new(&options) {
                Err(rclev::Error::Transport(reason)) => {
                    assert!(reason.contains("no-such-host.invalid"), "{reason}")
                }
                Err(other) => panic!("{other:?}"),
                Ok(_) => panic!("an unresolvable peer was accepted"),
            }
        },
    );
}

#[test]
fn the_raw_engine_moves_bytes_and_talks_to_rclev() {
    use rclev::msg::Message;
    in_netns(
        "the_raw_engine_moves_bytes_and_talks_to_rclev",
        Duration::from_secs(60),
        || {
            let options = rclev_dds::DdsOptions::from_env().unwrap();
            let engine = rclev_dds::engine::Participant::new(&options).unwrap();
            let got = Arc::new(Mutex::new(Vec::<Vec<u8>>::new()));
            let g = got.clone();
            let qos = rclev::QoSProfile::default();
            let reader = engine
                .create_reader("rt/chatter", StringMsg::DDS_TYPE_NAME, &qos, move |b| {
                    g.lock().unwrap().push(b.to_vec())
                })
                .unwrap();
            // An rclev publisher in another participant: the engine reads its CDR as it is.
            let executor = dds_context().create_basic_executor();
            let publisher = executor
                .create_node("talker")
                .unwrap()
                .create_publisher::<StringMsg>("chatter")
                .unwrap();
            let writer = engine
                .create_writer("rt/chatter", StringMsg::DDS_TYPE_NAME, &qos)
                .unwrap();
            assert!(eventually(Duration::from_secs(10), || {
                publisher.get_subscription_count() == 1
                    && reader.matched() >= 1
                    && writer.matched() >= 1
            }));
            let msg = StringMsg { data: "raw".into() };
            publisher.publish(msg.clone()).unwrap();
            assert!(eventually(Duration::from_secs(10), || !got
                .lock()
                .unwrap()
                .is_empty()));
            assert_eq!(got.lock().unwrap()[0], rclev::msg::to_cdr(&msg).unwrap());
            writer.write(&rclev::msg::to_cdr(&msg).unwrap()).unwrap();
            assert!(eventually(Duration::from_secs(10), || got
                .lock()
                .unwrap()
                .len()
                == 2));
        },
    );
}

#[test]
fn ctrl_c_ends_dds_processes_cleanly() {
    // Two bugs made Ctrl-C'd DDS processes crash or hang at exit now and then (the SIGINT
    // watcher dropping the last executor during exit(); Fast DDS's set_listener(nullptr)
    // spinning against its discovery thread): ten talker/listener pairs must all exit 0.
    in_netns(
        "ctrl_c_ends_dds_processes_cleanly",
        Duration::from_secs(120),
        || {
            for round in 0..10 {
                let pair = [chatter("talker"), chatter("listener")];
                std::thread::sleep(Duration::from_millis(800));
                for mut child in pair {
                    // SAFETY: signals our own child, not yet waited for.
                    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
                    let deadline = std::time::Instant::now() + Duration::from_secs(10);
                    let status = loop {
                        if let Some(status) = child.try_wait().unwrap() {
                            break status;
                        }
                        if std::time::Instant::now() > deadline {
                            let _ = child.kill();
                            panic!("round {round}: a process hung after Ctrl-C");
                        }
                        std::thread::sleep(Duration::from_millis(10));
                    };
                    assert!(status.success(), "round {round}: {status}");
                }
            }
        },
    );
}

/// A server and a client on two participants: `calls` concurrent calls with `qos` on both
/// sides, each answered.
fn serve_and_call(qos: rclev::QoSProfile, count: i64) {
    use rclev::interfaces::example_interfaces::srv::{
        AddTwoInts, AddTwoInts_Request, AddTwoInts_Response,
    };
    use rclev::IntoPrimitiveOptions;
    let server_side = dds_context().create_basic_executor();
    // Entities work while their node lives: keep both nodes.
    let adder = server_side.create_node("adder").unwrap();
    let _service = adder
        .create_service::<AddTwoInts, _>("add".qos(qos), |r: AddTwoInts_Request| {
            AddTwoInts_Response { sum: r.a + r.b }
        })
        .unwrap();
    let server_commands = server_side.commands();
    let server_thread = std::thread::spawn(move || {
        let errors = server_side.spin(SpinOptions::default().timeout(Duration::from_secs(40)));
        drop(adder);
        errors
    });
    let client_side = dds_context().create_basic_executor();
    let caller = client_side.create_node("caller").unwrap();
    let client = caller.create_client::<AddTwoInts>("add".qos(qos)).unwrap();
    let sums = Arc::new(Mutex::new(Vec::new()));
    let s = sums.clone();
    let commands = client_side.commands();
    let calls = async move {
        client
            .wait_for_service(Some(Duration::from_secs(10)))
            .await
            .unwrap();
        let answers = futures::future::join_all((0..count).map(|i| {
            client.call_with_timeout(AddTwoInts_Request { a: i, b: 10 }, Duration::from_secs(10))
        }))
        .await;
        *s.lock().unwrap() = answers.into_iter().map(|a| a.unwrap().sum).collect();
    };
    let errors = client_side.spin(
        SpinOptions::default()
            .until_promise_resolved(calls)
            .timeout(Duration::from_secs(30)),
    );
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(*sums.lock().unwrap(), (10..10 + count).collect::<Vec<_>>());
    drop(commands);
    server_commands.halt_spinning();
    assert!(server_thread.join().unwrap().is_empty());
}

#[test]
fn services_work_between_two_rclev_participants() {
    in_netns(
        "services_work_between_two_rclev_participants",
        Duration::from_secs(60),
        || serve_and_call(rclev::QoSProfile::default(), 4),
    );
}

/// A KeepAll service leaves requests in Fast DDS's history and its worker takes them on
/// demand: 200 concurrent calls (twenty times the default depth) are all answered.
#[test]
fn a_keep_all_service_answers_every_call() {
    in_netns(
        "a_keep_all_service_answers_every_call",
        Duration::from_secs(90),
        || serve_and_call(rclev::QoSProfile::default().keep_all(), 200),
    );
}
