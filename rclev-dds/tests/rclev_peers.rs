//! rclev ↔ rclev over DDS: two transports (two participants) in one process, and two
//! processes.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{eventually, in_netns};
use rclev::interfaces::std_msgs::msg::String as StringMsg;
use rclev::{Context, SpinOptions};
use rclev_dds::DdsTransport;

fn dds_context() -> Context {
    Context::with_transport(Arc::new(DdsTransport::from_env().unwrap()))
}

#[test]
fn two_participants_exchange_messages() {
    in_netns(
        "two_participants_exchange_messages",
        Duration::from_secs(60),
        || {
            let a = dds_context().create_basic_executor();
            let b = dds_context().create_basic_executor();
            let talker = a.create_node("talker").unwrap();
            let listener = b.create_node("listener").unwrap();
            let publisher = talker.create_publisher::<StringMsg>("chatter").unwrap();
            let heard = Arc::new(Mutex::new(Vec::new()));
            let h = heard.clone();
            let _sub = listener
                .create_subscription::<StringMsg, _>("chatter", move |m| {
                    h.lock().unwrap().push(m.data.clone())
                })
                .unwrap();
            assert!(eventually(Duration::from_secs(10), || publisher
                .get_subscription_count()
                == 1));
            for i in 0..5 {
                publisher
                    .publish(StringMsg {
                        data: format!("hello {i}"),
                    })
                    .unwrap();
            }
            let _ = b.spin(SpinOptions::default().timeout(Duration::from_millis(500)));
            let heard = heard.lock().unwrap().clone();
            assert_eq!(
                heard,
                (0..5).map(|i| format!("hello {i}")).collect::<Vec<_>>()
            );
        },
    );
}
