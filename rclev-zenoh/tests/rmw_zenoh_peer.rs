//! rclev-zenoh against an rmw_zenoh node emulated byte for byte in Python
//! (`peers/rmw_zenoh_peer.py`, written from rmw_zenoh's design doc on `eclipse-zenoh`), through
//! the embedded router in a loopback-only namespace: what rclev puts on the wire (liveliness
//! tokens, data key expressions, CDR payloads, attachments, GIDs, replies) is what an rmw_zenoh
//! peer expects, and what such a peer sends reaches rclev's graph, subscriptions and services.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rclev::interfaces::std_msgs::msg::String as StringMsg;
use rclev::interfaces::std_srvs::srv::{SetBool, SetBool_Request, SetBool_Response};
use rclev::msg::{Message, ServiceType};
use rclev::transport::{EndpointKind, Gid};
use rclev_zenoh::wire::{gid_of, Attachment};
use rclev_zenoh::{Router, ZenohOptions};

use common::{executor, in_netns, spin_until, PeerProcess};

const LIMIT: Duration = Duration::from_secs(180);
const WAIT: Duration = Duration::from_secs(60);

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

/// rclev publishes; the emulated rmw_zenoh listener sees rclev's tokens as rmw_zenoh writes
/// them and samples on the right key expression, with CDR payloads and attachments whose GID
/// is the XXH3 of the publisher's token.
#[test]
fn an_rmw_zenoh_listener_reads_what_rclev_publishes() {
    in_netns(
        "an_rmw_zenoh_listener_reads_what_rclev_publishes",
        &[],
        LIMIT,
        || {
            let _router = Router::start(&ZenohOptions::default()).expect("a router");
            let (transport, executor) = executor();
            let node = executor.create_node("talker").unwrap();
            let publisher = node.create_publisher::<StringMsg>("/chatter").unwrap();
            let hash = StringMsg::TYPE_HASH.to_string();
            let mut peer = PeerProcess::python("rmw_zenoh_peer.py", &["listener", &hash, "3"]);
            let zid = transport.zid().to_string();
            let mut tokens = Vec::new();
            loop {
                let line = peer.line("", WAIT);
                if line == "ready" {
                    break;
                }
                if let Some(token) = line.strip_prefix("token: ") {
                    tokens.push(token.to_string());
                }
            }
            let node_token = format!("@ros2_lv/0/{zid}/0/0/NN/%/%/talker");
            assert!(tokens.contains(&node_token), "{tokens:#?}");
            let publisher_token = tokens
                .iter()
                .find(|t| t.contains("/MP/%/%/talker/%chatter/"))
                .unwrap_or_else(|| panic!("no publisher token in {tokens:#?}"))
                .clone();
            assert!(
                publisher_token.starts_with(&format!("@ros2_lv/0/{zid}/0/")),
                "{publisher_token}"
            );
            // rclev's default publisher QoS (reliable, volatile, keep last 10) in rmw_zenoh's
            // compact form.
            assert!(
                publisher_token.ends_with(&format!(
                    "/MP/%/%/talker/%chatter/std_msgs::msg::dds_::String_/{hash}/::,10:,:,:,,"
                )),
                "{publisher_token}"
            );
            assert_eq!(publisher.gid(), gid_of(&publisher_token));

            // The peer's subscriber is matched once its MS token is in our graph.
            assert!(spin_until(&executor, WAIT, || publisher
                .get_subscription_count()
                == 1));
            for i in 0..3 {
                publisher
                    .publish(StringMsg {
                        data: format!("rclev {i}"),
                    })
                    .unwrap();
            }
            for i in 0..3 {
                let sample = peer.line("sample: ", WAIT);
                let parts: Vec<&str> = sample.split(' ').collect();
                assert_eq!(
                    parts[0],
                    format!("0/chatter/std_msgs::msg::dds_::String_/{hash}")
                );
                let expected = rclev::msg::to_cdr(&StringMsg {
                    data: format!("rclev {i}"),
                })
                .unwrap();
                assert_eq!(hex(parts[1]), expected);
                let attachment = Attachment::decode(&hex(parts[2])).expect("an attachment");
                assert_eq!(attachment.sequence_number, i + 1);
                assert_eq!(attachment.source_gid, publisher.gid());
                assert!(attachment.source_timestamp > 0);
            }
        },
    );
}

/// The emulated rmw_zenoh talker publishes; rclev's graph lists its node and publisher (GID
/// from its token), and rclev's subscription gets its messages with the attachment's GID and
/// sequence numbers in the message info.
#[test]
fn rclev_hears_an_rmw_zenoh_talker() {
    in_netns("rclev_hears_an_rmw_zenoh_talker", &[], LIMIT, || {
        let _router = Router::start(&ZenohOptions::default()).expect("a router");
        let (_transport, executor) = executor();
        let node = executor.create_node("listener").unwrap();
        let heard = Arc::new(Mutex::new(Vec::new()));
        let h = heard.clone();
        let _subscription = node
            .create_subscription_with_info::<StringMsg, _>(
                "/chatter",
                move |m: Arc<StringMsg>, info: rclev::transport::MessageInfo| {
                    h.lock().unwrap().push((m.data.clone(), info))
                },
            )
            .unwrap();
        let hash = StringMsg::TYPE_HASH.to_string();
        let mut peer = PeerProcess::python("rmw_zenoh_peer.py", &["talker", &hash, "4"]);
        let gid = hex(&peer.line("gid: ", WAIT));
        assert!(spin_until(&executor, WAIT, || heard.lock().unwrap().len() == 4));
        let publishers = node.get_publishers_info_by_topic("/chatter").unwrap();
        let talker = publishers
            .iter()
            .find(|p| p.node.name == "py_talker")
            .unwrap_or_else(|| panic!("no py_talker in {publishers:#?}"));
        assert_eq!(talker.kind, EndpointKind::Publisher);
        assert_eq!(talker.type_name, "std_msgs/msg/String");
        assert_eq!(talker.type_hash, StringMsg::TYPE_HASH);
        assert_eq!(talker.qos.history, rclev::History::KeepLast(10));
        assert!(node
            .get_node_names_and_namespaces()
            .contains(&("py_talker".to_string(), "/".to_string())));
        for (i, (data, info)) in heard.lock().unwrap().iter().enumerate() {
            assert_eq!(data, &format!("py {i}"));
            assert_eq!(info.publisher_gid, Gid(gid.clone().try_into().unwrap()));
            assert_eq!(info.publication_sequence_number, i as u64 + 1);
        }
        assert_eq!(peer.line("sent: ", WAIT), "4");
    });
}

/// The emulated rmw_zenoh client calls an rclev service: each reply carries the CDR response
/// and an attachment echoing the request's sequence number and the client's GID.
#[test]
fn an_rmw_zenoh_client_calls_an_rclev_service() {
    in_netns(
        "an_rmw_zenoh_client_calls_an_rclev_service",
        &[],
        LIMIT,
        || {
            let _router = Router::start(&ZenohOptions::default()).expect("a router");
            let (_transport, executor) = executor();
            let node = executor.create_node("server").unwrap();
            let _service = node
                .create_service::<SetBool, _>("/flip", |req: SetBool_Request| SetBool_Response {
                    success: !req.data,
                    message: "flipped".into(),
                })
                .unwrap();
            let hash = SetBool::TYPE_HASH.to_string();
            let mut peer = PeerProcess::python("rmw_zenoh_peer.py", &["client", &hash, "2"]);
            let replies = Arc::new(Mutex::new(Vec::new()));
            let r = replies.clone();
            let reader = std::thread::spawn(move || {
                let gid = hex(&peer.line("gid: ", WAIT));
                for _ in 0..2 {
                    let reply = peer.line("reply: ", WAIT);
                    r.lock().unwrap().push(reply);
                }
                gid
            });
            assert!(spin_until(&executor, WAIT, || replies
                .lock()
                .unwrap()
                .len()
                == 2
                || reader.is_finished()));
            let gid = reader.join().expect("the peer's replies");
            let expected = rclev::msg::to_cdr(&SetBool_Response {
                success: false,
                message: "flipped".into(),
            })
            .unwrap();
            for (i, reply) in replies.lock().unwrap().iter().enumerate() {
                let (payload, attachment) = reply.split_once(' ').unwrap();
                assert_eq!(hex(payload), expected);
                let attachment = Attachment::decode(&hex(attachment)).expect("an attachment");
                assert_eq!(attachment.sequence_number, i as i64 + 1);
                assert_eq!(attachment.source_gid.0.to_vec(), gid);
            }
        },
    );
}
