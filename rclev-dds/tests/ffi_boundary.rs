//! The FFI boundary holds whatever safe code does: an in-place encoder that claims more bytes
//! than it wrote cannot make Fast DDS send memory past them, and a raw-engine reader dropped
//! from its own callback is deleted once that callback has returned (never under its own
//! listener). Each runs in a network namespace of its own, bounded in time.

mod common;

use std::any::{Any, TypeId};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{eventually, in_netns};
use rclev::interfaces::std_msgs::msg::String as StringMsg;
use rclev::msg::TypeInfo;
use rclev::transport::{NodeName, Payload, TopicEndpoint, Transport, TypeSupport};
use rclev::QoSProfile;
use rclev_dds::engine::Participant;
use rclev_dds::{DdsOptions, DdsTransport};

const TYPE: &str = "std_msgs::msg::dds_::String_";

fn encode(value: &(dyn Any + Send + Sync), buf: &mut Vec<u8>) -> rclev::Result<()> {
    let msg = value.downcast_ref::<StringMsg>().unwrap();
    rclev::msg::to_cdr_into(msg, buf)
}

/// Writes a real encoding; the first time, claims the whole buffer and 100 bytes more.
fn overclaiming(value: &(dyn Any + Send + Sync), out: &mut [u8]) -> rclev::Result<usize> {
    static LIED: AtomicBool = AtomicBool::new(false);
    let msg = value.downcast_ref::<StringMsg>().unwrap();
    let written = rclev::msg::to_cdr_in_slice(msg, out)?;
    if LIED.swap(true, Ordering::SeqCst) {
        Ok(written)
    } else {
        Ok(out.len() + 100)
    }
}

/// A publisher whose in-place encoder lies about its length: the transport refuses the
/// message (an error, the message handed back) instead of sending what lies beyond, and the
/// peer receives only the honest ones.
#[test]
fn an_encoder_claiming_more_than_it_wrote_sends_nothing() {
    in_netns(
        "an_encoder_claiming_more_than_it_wrote_sends_nothing",
        Duration::from_secs(60),
        || {
            // SAFETY: this breaks `from_raw_parts`'s contract on purpose (`overclaiming`
            // returns more than the buffer's length): the transport must still send only
            // bytes that were written.
            let lying = unsafe {
                TypeSupport::from_raw_parts(
                    TypeInfo::of::<StringMsg>(),
                    TypeId::of::<StringMsg>(),
                    encode,
                    Some(overclaiming),
                )
            };
            let transport = DdsTransport::from_env().unwrap();
            let node = transport
                .create_node(&NodeName {
                    name: "liar".into(),
                    namespace: "/".into(),
                })
                .unwrap();
            let publisher = node
                .create_publisher(
                    &TopicEndpoint {
                        name: "/lies".into(),
                        type_support: lying,
                        qos: QoSProfile::default().keep_all(),
                        reads_message_info: false,
                        max_queue_bytes: rclev::transport::DEFAULT_QUEUE_BYTES,
                    },
                    Arc::new(()),
                )
                .unwrap();
            let peer = Participant::new(&DdsOptions::from_env().unwrap()).unwrap();
            let received = Arc::new(Mutex::new(Vec::new()));
            let r = received.clone();
            let _reader = peer
                .create_reader(
                    "rt/lies",
                    TYPE,
                    &QoSProfile::default().keep_all(),
                    move |b| r.lock().unwrap().push(b.to_vec()),
                )
                .unwrap();
            assert!(eventually(Duration::from_secs(10), || publisher
                .subscription_count()
                == 1));
            let msg = |s: &str| Payload::Shared(Arc::new(StringMsg { data: s.into() }));
            // The first message of a publisher is serialized the plain way (it learns the size).
            publisher.publish(msg("honest")).unwrap();
            // From then on it is encoded in place: the lie is caught.
            let refused = publisher.publish(msg("lying")).unwrap_err();
            assert!(
                matches!(&refused.error, rclev::Error::Transport(m) if m.contains("claimed")),
                "{:?}",
                refused.error
            );
            assert!(
                matches!(refused.value, Payload::Shared(_)),
                "the message comes back"
            );
            // A message after it (encoded in place, honestly this time): the reliable writer
            // delivers in order, so once this one is in, anything the lie had sent would be in
            // before it.
            publisher.publish(msg("honest again")).unwrap();
            assert!(eventually(Duration::from_secs(10), || received
                .lock()
                .unwrap()
                .len()
                >= 2));
            // Decoded: DDS pads a payload to four bytes on the wire.
            let texts: Vec<String> = received
                .lock()
                .unwrap()
                .iter()
                .map(|b| rclev::msg::from_cdr::<StringMsg>(b).unwrap().data)
                .collect();
            assert_eq!(texts, ["honest", "honest again"]);
        },
    );
}

/// A raw-engine reader whose callback drops the reader itself (the last handle): the deletion
/// waits on the participant's drop queue until the callback has returned, instead of deleting
/// the reader under its own listener (a deadlock, or a use after free, with the bare handle the
/// engine kept before). Dropping the participant then joins that queue.
#[test]
fn an_engine_reader_dropped_from_its_own_callback_is_deleted_after_it() {
    in_netns(
        "an_engine_reader_dropped_from_its_own_callback_is_deleted_after_it",
        Duration::from_secs(60),
        || {
            let options = DdsOptions::from_env().unwrap();
            let writer_side = Participant::new(&options).unwrap();
            let reader_side = Participant::new(&options).unwrap();
            let slot = Arc::new(Mutex::new(None));
            let calls = Arc::new(AtomicUsize::new(0));
            let (s, c) = (slot.clone(), calls.clone());
            let reader = reader_side
                .create_reader("rt/self_drop", TYPE, &QoSProfile::default(), move |_| {
                    c.fetch_add(1, Ordering::SeqCst);
                    // The last handle of this very reader, dropped inside its callback.
                    let me = s.lock().unwrap().take();
                    drop(me);
                })
                .unwrap();
            *slot.lock().unwrap() = Some(reader);
            let writer = writer_side
                .create_writer("rt/self_drop", TYPE, &QoSProfile::default())
                .unwrap();
            assert!(eventually(Duration::from_secs(10), || writer.matched() == 1));
            let sample = rclev::msg::to_cdr(&StringMsg { data: "bye".into() }).unwrap();
            // Written until the reader has gone: it unmatches once its deletion ran.
            assert!(eventually(Duration::from_secs(20), || {
                let _ = writer.write(&sample);
                writer.matched() == 0
            }));
            assert!(slot.lock().unwrap().is_none());
            assert!(calls.load(Ordering::SeqCst) >= 1);
            // Joins the drop queue's thread (whose deletion has run) and deletes the participant.
            drop(reader_side);
            drop(writer);
            drop(writer_side);
        },
    );
}
