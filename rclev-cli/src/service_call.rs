//! `rclev service call <service> <type> [values]`: one request built from YAML, its response
//! printed as YAML, for every service type rclev knows or finds installed, and the dynamic
//! client `action send_goal` uses too.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::wire::CliTransport;
use rclev::msg::{DynamicMessage, TypeHash, TypeInfo};
use rclev::transport::{EndpointKind, NodePort, Payload, ServiceEndpoint, ServiceTypes, Transport};
use rclev::QoSProfile;

use crate::errors::Result;
use crate::topic::{
    absolute, cli_node, from_yaml, known_type, to_flow_yaml, to_yaml, type_support,
};
use crate::type_names::{Unknown, Wanted};
use crate::waiting_client::WaitingClient;

/// How long to wait for a service, then for its answer.
pub const WAIT: Duration = Duration::from_secs(10);

/// A client of a service whose types are known by description only.
pub struct DynamicClient {
    client: WaitingClient,
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
        // DDS endpoints announce their messages' hashes; Zenoh's key expression carries the
        // service type's own.
        let hash = crate::installed_types::service_hash(type_name)?;
        Self::with_types(node, service, type_name, request, response, hash)
    }

    /// A client of `service` of type `type_name` whose request and response types, and the
    /// service type's hash, are given (learnt from a server's node, say).
    pub fn with_types(
        node: &Arc<dyn NodePort>,
        service: &str,
        type_name: &str,
        request: TypeInfo,
        response: TypeInfo,
        hash: TypeHash,
    ) -> Result<Self> {
        let client = WaitingClient::new(
            node,
            &ServiceEndpoint {
                name: service.to_string(),
                types: ServiceTypes {
                    // A tool makes a few clients: the name's leak is bounded.
                    type_name: Box::leak(type_name.to_string().into_boxed_str()),
                    type_hash: hash,
                    request: type_support(request),
                    response: type_support(response),
                },
                qos: QoSProfile::services_default(),
            },
        )?;
        Ok(Self {
            client,
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
        self.client.wait_ready_for(limit)
    }

    /// Sends `request` and returns its sequence number (see [`answer`](Self::answer)).
    pub fn send(&self, request: &DynamicMessage) -> Result<i64> {
        self.send_bytes(request.encode(&self.request.description)?)
    }

    /// Sends a request already encoded (CDR with its encapsulation header).
    pub fn send_bytes(&self, cdr: Vec<u8>) -> Result<i64> {
        self.client.send(Payload::Serialized(Box::new(cdr)))
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
        match self.client.answer(sequences, wait)? {
            None => Ok(None),
            Some(Payload::Serialized(bytes)) => Ok(Some(*bytes)),
            Some(_) => Err("the response came in another form than bytes".into()),
        }
    }

    /// Sends `request` and waits up to [`WAIT`] for its response (`None`: Ctrl-C came first).
    pub fn call(&self, request: &DynamicMessage) -> Result<Option<DynamicMessage>> {
        let sequence = self.send(request)?;
        match self.answer(sequence, WAIT)? {
            Some(response) => Ok(Some(response)),
            None if crate::interrupt::interrupted() => Ok(None),
            None => Err(format!("no response from {} within {WAIT:?}", self.client.name()).into()),
        }
    }
}

/// A client of `service` whose type `type_name` rclev does not know (`unknown` says so),
/// learnt from the node of a server of it: waits up to [`WAIT`] for one on the graph.
///
/// Only over Zenoh: a node describes a service type by the service type's hash, which
/// rmw_zenoh puts in the service's key expression; over DDS a server announces its request
/// message's hash instead (as rmw_fastrtps and rmw_cyclonedds do), which its node does not
/// describe, so nothing on the wire names what to ask for.
fn learnt_client(
    transport: &CliTransport,
    node: &Arc<dyn NodePort>,
    service: &str,
    type_name: &str,
    unknown: &Unknown,
) -> Result<DynamicClient> {
    if matches!(transport, CliTransport::Dds(_)) {
        // With close known names offered, a typo is likelier than a type to learn.
        if unknown.offers_names {
            return Err(unknown.message.clone().into());
        }
        return Err(format!(
            "{unknown}. Over DDS a server announces its request's type hash, not the service \
             type's by which its node describes it, so rclev cannot learn a service type from \
             it (over Zenoh it can). {}",
            crate::remote_types::HOW_TO_INSTALL
        )
        .into());
    }
    let deadline = Instant::now() + WAIT;
    let server = loop {
        let servers = transport
            .graph()
            .endpoints_of(service, EndpointKind::Service);
        if let Some(s) = servers.into_iter().find(|e| e.type_name == type_name) {
            break s;
        }
        if Instant::now() >= deadline || crate::interrupt::interrupted() {
            return Err(crate::remote_types::nothing_to_learn_from(
                unknown,
                &format!("no server of {service} with it came within {WAIT:?}"),
            )
            .into());
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let learnt = crate::remote_types::learn_service(node, &server, type_name)
        .map_err(|e| format!("{unknown}; {e}. {}", crate::remote_types::HOW_TO_INSTALL))?;
    eprintln!(
        "rclev: learnt type {type_name} from node {}",
        server.node.fully_qualified()
    );
    DynamicClient::with_types(
        node,
        service,
        type_name,
        learnt.request,
        learnt.response,
        learnt.hash,
    )
}

/// `rclev service call`.
pub fn call(service: &str, type_name: &str, values: &str) -> Result {
    let service = absolute(service)?;
    // `pkg/srv/Name` or `pkg/Name`, checked before anything goes on the network: a malformed
    // name fails at once; a well-formed one rclev does not know is learnt from a server.
    let wanted = crate::type_names::resolve_learnable(
        type_name,
        crate::type_names::Kind::Srv,
        crate::type_names::Sources::BundledAndInstalled,
    )?;
    let transport = CliTransport::from_env()?;
    let node = cli_node(&transport, "call")?;
    let client = match wanted {
        Wanted::Known(type_name) => DynamicClient::new(&node, &service, &type_name)?,
        Wanted::Learnable { name, unknown } => {
            learnt_client(&transport, &node, &service, &name, &unknown)?
        }
    };
    let request = from_yaml(&client.request, values)?;
    if !client.client.is_ready() {
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
