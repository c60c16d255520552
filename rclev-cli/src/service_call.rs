//! `rclev service call <service> <type> [values]`: one request built from YAML, its response
//! printed as YAML, for every service type rclev knows or finds installed, and the dynamic
//! client `action send_goal` uses too.

use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use crate::wire::CliTransport;
use rclev::msg::{DynamicMessage, TypeInfo};
use rclev::transport::{ClientPort, NodePort, Payload, ServiceEndpoint, ServiceTypes};
use rclev::QoSProfile;

use crate::errors::Result;
use crate::topic::{
    absolute, cli_node, from_yaml, known_type, to_flow_yaml, to_yaml, type_support, Wake,
};

/// How long to wait for a service, then for its answer.
pub const WAIT: Duration = Duration::from_secs(10);

/// A client of a service whose types are known by description only.
pub struct DynamicClient {
    port: Arc<dyn ClientPort>,
    wake: mpsc::Receiver<()>,
    name: String,
    /// The request type.
    pub request: TypeInfo,
    /// The response type.
    pub response: TypeInfo,
}

impl DynamicClient {
    /// A client of `service` (absolute) of type `pkg/srv/Name` (or an action's
    /// `pkg/action/Name_SendGoal`…), a full name already checked
    /// ([`type_names::resolve`](crate::type_names::resolve)): its request and response are
    /// `<type>_Request` and `<type>_Response`.
    pub fn new(node: &Arc<dyn NodePort>, service: &str, type_name: &str) -> Result<Self> {
        let request = known_type(&format!("{type_name}_Request"))?;
        let response = known_type(&format!("{type_name}_Response"))?;
        let (tx, wake) = mpsc::sync_channel(1);
        let port = node.create_client(
            &ServiceEndpoint {
                name: service.to_string(),
                types: ServiceTypes {
                    // A tool makes a few clients: the name's leak is bounded.
                    type_name: Box::leak(type_name.to_string().into_boxed_str()),
                    // DDS endpoints announce their messages' hashes; Zenoh's key expression
                    // carries the service type's own.
                    type_hash: crate::installed_types::service_hash(type_name)?,
                    request: type_support(request),
                    response: type_support(response),
                },
                qos: QoSProfile::services_default(),
            },
            Arc::new(Wake(tx)),
        )?;
        Ok(Self {
            port,
            wake,
            name: service.to_string(),
            request,
            response,
        })
    }

    /// Waits up to [`WAIT`] for a server; `false` if none came, or on Ctrl-C (in a command
    /// that [handles it](crate::interrupt)).
    pub fn wait_ready(&self) -> bool {
        self.wait_ready_for(WAIT)
    }

    /// Waits up to `limit` for a server; `false` if none came, or on Ctrl-C.
    pub fn wait_ready_for(&self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while !self.port.service_is_ready() {
            if Instant::now() > deadline || crate::interrupt::interrupted() {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        true
    }

    /// Sends `request` and returns its sequence number (see [`answer`](Self::answer)).
    pub fn send(&self, request: &DynamicMessage) -> Result<i64> {
        self.send_bytes(request.encode(&self.request.description)?)
    }

    /// Sends a request already encoded (CDR with its encapsulation header).
    pub fn send_bytes(&self, cdr: Vec<u8>) -> Result<i64> {
        Ok(self.port.send_request(Payload::Serialized(Box::new(cdr)))?)
    }

    /// The response to request `sequence`, if it has come; waits at most `wait` for it, and
    /// no longer once Ctrl-C was pressed (in a command that [handles it](crate::interrupt)).
    pub fn answer(&self, sequence: i64, wait: Duration) -> Result<Option<DynamicMessage>> {
        self.answer_bytes(&[sequence], wait)?
            .map(|bytes| Ok(DynamicMessage::decode(&self.response.description, &bytes)?))
            .transpose()
    }

    /// The response to any of requests `sequences` as its CDR bytes, if one has come (see
    /// [`answer`](Self::answer)); responses to other requests are dropped.
    pub fn answer_bytes(&self, sequences: &[i64], wait: Duration) -> Result<Option<Vec<u8>>> {
        let deadline = Instant::now() + wait;
        loop {
            while let Some((seq, answer)) = self.port.take_response() {
                if !sequences.contains(&seq) {
                    continue;
                }
                let Payload::Serialized(bytes) = answer? else {
                    return Err("the response came in another form than bytes".into());
                };
                return Ok(Some(*bytes));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || crate::interrupt::interrupted() {
                return Ok(None);
            }
            let _ = self.wake.recv_timeout(left.min(Duration::from_millis(100)));
        }
    }

    /// Sends `request` and waits up to [`WAIT`] for its response (`None`: Ctrl-C came first).
    pub fn call(&self, request: &DynamicMessage) -> Result<Option<DynamicMessage>> {
        let sequence = self.send(request)?;
        match self.answer(sequence, WAIT)? {
            Some(response) => Ok(Some(response)),
            None if crate::interrupt::interrupted() => Ok(None),
            None => Err(format!("no response from {} within {WAIT:?}", self.name).into()),
        }
    }
}

/// `rclev service call`.
pub fn call(service: &str, type_name: &str, values: &str) -> Result {
    let service = absolute(service)?;
    // `pkg/srv/Name` or `pkg/Name`, checked before anything goes on the network.
    let type_name = crate::type_names::resolve(
        type_name,
        crate::type_names::Kind::Srv,
        crate::type_names::Sources::BundledAndInstalled,
    )?;
    let transport = CliTransport::from_env()?;
    let node = cli_node(&transport, "call")?;
    let client = DynamicClient::new(&node, &service, &type_name)?;
    let request = from_yaml(&client.request, values)?;
    if !client.port.service_is_ready() {
        println!("waiting for service to become available...");
        if !client.wait_ready() {
            return Err(format!("service {service} not available within {WAIT:?}").into());
        }
    }
    println!("requester: making request: {}\n", to_flow_yaml(&request));
    // `service call` keeps Ctrl-C's default meaning (it ends the process), so a response
    // always comes here or the call fails.
    let Some(response) = client.call(&request)? else {
        return Ok(());
    };
    print!("response:\n{}", to_yaml(&response));
    Ok(())
}
