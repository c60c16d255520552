//! `rclev service call <service> <type> [values]`: one request built from YAML, its response
//! printed as YAML, for every service type rclev knows (their request and response messages
//! are among `rclev::interfaces::MESSAGE_TYPES`).

use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use rclev::msg::{DynamicMessage, TypeHash};
use rclev::transport::{Payload, ServiceEndpoint, ServiceTypes};
use rclev::QoSProfile;
use rclev_dds::DdsTransport;

use crate::anyhow_free::Result;
use crate::topic::{
    absolute, cli_node, from_yaml, known_type, to_flow_yaml, to_yaml, type_support, Wake,
};

/// How long to wait for the service, then for its answer.
const WAIT: Duration = Duration::from_secs(10);

/// `rclev service call`.
pub fn call(service: &str, type_name: &str, values: &str) -> Result {
    let service = absolute(service)?;
    let (request_type, response_type) = (
        known_type(&format!("{type_name}_Request"))
            .map_err(|_| format!("service type '{type_name}' is not one rclev knows"))?,
        known_type(&format!("{type_name}_Response"))?,
    );
    let request = from_yaml(&request_type, values)?;
    let cdr = request.encode(&request_type.description)?;
    let transport = DdsTransport::from_env()?;
    let node = cli_node(&transport, "call")?;
    let (tx, rx) = mpsc::sync_channel(1);
    let client = node.create_client(
        &ServiceEndpoint {
            name: service.clone(),
            types: ServiceTypes {
                // The tool lives for one call: the name's leak is bounded.
                type_name: Box::leak(type_name.to_string().into_boxed_str()),
                // Only the graph shows a service type's own hash; the endpoints announce
                // their messages' hashes, which are known.
                type_hash: TypeHash([0; 32]),
                request: type_support(request_type),
                response: type_support(response_type),
            },
            qos: QoSProfile::services_default(),
        },
        Arc::new(Wake(tx)),
    )?;
    let deadline = Instant::now() + WAIT;
    let mut said_waiting = false;
    while !client.service_is_ready() {
        if Instant::now() > deadline {
            return Err(format!("service {service} not available within {WAIT:?}").into());
        }
        if !said_waiting {
            println!("waiting for service to become available...");
            said_waiting = true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    println!("requester: making request: {}\n", to_flow_yaml(&request));
    let sequence = client.send_request(Payload::Serialized(Box::new(cdr)))?;
    let deadline = Instant::now() + WAIT;
    loop {
        while let Some((seq, answer)) = client.take_response() {
            if seq != sequence {
                continue;
            }
            let Payload::Serialized(bytes) = answer? else {
                return Err("the response came in another form than bytes".into());
            };
            let response = DynamicMessage::decode(&response_type.description, &bytes)?;
            print!("response:\n{}", to_yaml(&response));
            return Ok(());
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!("no response from {service} within {WAIT:?}").into());
        }
        let _ = rx.recv_timeout(left.min(Duration::from_millis(500)));
    }
}
