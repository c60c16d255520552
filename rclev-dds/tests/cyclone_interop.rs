//! rclev against a plain Eclipse Cyclone DDS 11 peer (the `cyclonedds` Python package from
//! PyPI) that speaks ROS 2 as rmw_cyclonedds does: `rt/chatter` both ways, and services with
//! rmw_cyclonedds's 16-byte request header, both ways.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{in_netns, spin_until, Peer};
use rclev::interfaces::example_interfaces::srv::{
    AddTwoInts, AddTwoInts_Request, AddTwoInts_Response,
};
use rclev::interfaces::std_msgs::msg::String as StringMsg;
use rclev::{Context, Executor, SpinOptions};
use rclev_dds::DdsTransport;

const LIMIT: Duration = Duration::from_secs(90);
const PEER_LIMIT: Duration = Duration::from_secs(40);

fn executor() -> Executor {
    Context::with_transport(Arc::new(DdsTransport::from_env().unwrap())).create_basic_executor()
}

#[test]
fn chatter_flows_both_ways_with_cyclone() {
    in_netns("chatter_flows_both_ways_with_cyclone", LIMIT, || {
        let executor = executor();
        let node = executor.create_node("chatter").unwrap();
        let heard = Arc::new(Mutex::new(Vec::new()));
        let h = heard.clone();
        let _sub = node
            .create_subscription::<StringMsg, _>("chatter", move |m| {
                if m.data.starts_with("hello from cyclone") {
                    h.lock().unwrap().push(m.data.clone())
                }
            })
            .unwrap();
        // Cyclone talks, rclev listens.
        let talker = Peer::start("cyclone_peer.py", &["talker", "5"]);
        assert!(spin_until(&executor, PEER_LIMIT, || heard
            .lock()
            .unwrap()
            .len()
            == 5));
        assert_eq!(
            *heard.lock().unwrap(),
            (0..5)
                .map(|i| format!("hello from cyclone {i}"))
                .collect::<Vec<_>>()
        );
        common::finish_while_spinning(&executor, talker, PEER_LIMIT);
        // rclev talks (a numbered stream, every 20 ms), Cyclone listens.
        let publisher = node.create_publisher::<StringMsg>("chatter").unwrap();
        let listener = Peer::start("cyclone_peer.py", &["listener", "5"]);
        let done = Arc::new(Mutex::new(None));
        let d = done.clone();
        std::thread::spawn(move || *d.lock().unwrap() = Some(listener.finish(PEER_LIMIT)));
        let mut i = 0;
        while done.lock().unwrap().is_none() {
            publisher
                .publish(StringMsg {
                    data: format!("hello from rclev {i}"),
                })
                .unwrap();
            i += 1;
            std::thread::sleep(Duration::from_millis(20));
            assert!(i < 5_000, "the Cyclone listener did not finish");
        }
        let out = done.lock().unwrap().take().unwrap();
        assert!(out.contains("listener: received"), "{out}");
    });
}

#[test]
fn a_cyclone_client_calls_an_rclev_service_with_the_request_header() {
    in_netns(
        "a_cyclone_client_calls_an_rclev_service_with_the_request_header",
        LIMIT,
        || {
            let executor = executor();
            let node = executor.create_node("adder").unwrap();
            let _service = node
                .create_service::<AddTwoInts, _>("add_two_ints", |r: AddTwoInts_Request| {
                    AddTwoInts_Response { sum: r.a + r.b }
                })
                .unwrap();
            let client = Peer::start("cyclone_peer.py", &["client", "5"]);
            let out = common::finish_while_spinning(&executor, client, PEER_LIMIT);
            assert!(out.contains("client: right answers 5/5"), "{out}");
        },
    );
}

#[test]
fn an_rclev_client_calls_a_cyclone_service_with_the_request_header() {
    in_netns(
        "an_rclev_client_calls_a_cyclone_service_with_the_request_header",
        LIMIT,
        || {
            let executor = executor();
            let node = executor.create_node("caller").unwrap();
            let client = node.create_client::<AddTwoInts>("add_two_ints").unwrap();
            let server = Peer::start("cyclone_peer.py", &["server", "5"]);
            let sums = Arc::new(Mutex::new(None));
            let s = sums.clone();
            let calls = async move {
                client.wait_for_service(Some(PEER_LIMIT)).await?;
                // A volatile Cyclone reader drops requests written before it matched the
                // request writer, which can be after the writer matched it (the moment
                // `wait_for_service` sees): rmw_cyclonedds clients share that race. A call
                // that times out is sent again.
                let call = |i: i64| {
                    let client = &client;
                    async move {
                        for _ in 0..5 {
                            match client
                                .call_with_timeout(
                                    AddTwoInts_Request { a: i, b: 100 },
                                    Duration::from_secs(2),
                                )
                                .await
                            {
                                Err(rclev::Error::Timeout { .. }) => continue,
                                other => return other,
                            }
                        }
                        Err(rclev::Error::Timeout {
                            what: format!("call {i}"),
                            after: Duration::from_secs(10),
                        })
                    }
                };
                let responses = futures::future::join_all((0..5).map(call)).await;
                *s.lock().unwrap() = Some(responses);
                Ok::<_, rclev::Error>(())
            };
            let errors = executor.spin(
                SpinOptions::default()
                    .until_promise_resolved(async move { calls.await.unwrap() })
                    .timeout(PEER_LIMIT),
            );
            assert!(errors.is_empty(), "{errors:?}");
            let sums: Vec<i64> = sums
                .lock()
                .unwrap()
                .take()
                .expect("the calls finished")
                .into_iter()
                .map(|r| r.unwrap().sum)
                .collect();
            assert_eq!(sums, (0..5).map(|i| i + 100).collect::<Vec<_>>());
            let out = server.finish(PEER_LIMIT);
            assert!(out.contains("server: served"), "{out}");
        },
    );
}
