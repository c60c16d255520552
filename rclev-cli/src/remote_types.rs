//! Types learnt from the nodes that use them: a node's `~/get_type_description` service
//! (REP-2016) describes any type it uses, so the tools handle types rclev was not built with
//! and that are not installed — `bag record` records them, `topic echo|pub` and `service call`
//! decode and encode them — which `ros2` cannot do without the interface packages.
//!
//! A node's answer is hostile until checked: its description must hash to the type hash its
//! endpoint announced (else it is refused), and must be within rclev's `TypeLimits` (else the
//! type is refused for good: every node would describe it so). A checked answer stays owned
//! ([`Learnt`]) until the caller, which bounds how many types it learns, leaks it into a
//! `'static` [`TypeInfo`].
//!
//! The asking client is a plain typed one (`type_description_interfaces` ships with rclev),
//! so this sits below the dynamic tools that use it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rclev::interfaces::type_description_interfaces::{msg as td, srv};
use rclev::msg::{TypeHash, TypeInfo, TypeLimits};
use rclev::transport::{EndpointInfo, NodePort, Payload, ServiceEndpoint, ServiceTypes};
use rclev::QoSProfile;
use rclev_codegen::describe::{rihs01, Description, FieldDescription, IndividualDescription};

use crate::errors::Result;
use crate::installed_types;
use crate::type_names::Unknown;
use crate::waiting_client::WaitingClient;

/// A described type as rclev-codegen's describer holds it, whose RIHS01 hash it computes.
fn individual(d: &td::IndividualTypeDescription) -> IndividualDescription {
    IndividualDescription {
        type_name: d.type_name.clone(),
        fields: d
            .fields
            .iter()
            .map(|f| FieldDescription {
                name: f.name.clone(),
                type_id: f.r#type.type_id,
                capacity: f.r#type.capacity,
                string_capacity: f.r#type.string_capacity,
                nested_type_name: f.r#type.nested_type_name.clone(),
                default_value: f.default_value.clone(),
            })
            .collect(),
    }
}

/// `pkg/msg/Name` → `pkg::msg::dds_::Name_`.
fn dds_type_name(type_name: &str) -> Result<String> {
    match type_name.split('/').collect::<Vec<_>>()[..] {
        [pkg, kind, name] if !pkg.is_empty() && !name.is_empty() => {
            Ok(format!("{pkg}::{kind}::dds_::{name}_"))
        }
        _ => Err(format!("'{type_name}' is not a type name (pkg/msg/Name)").into()),
    }
}

/// A type a node described, checked: its description hashes to the hash its publisher
/// announced. Owned until [`Learnt::leak`], so that the recorder decides (and bounds) which
/// descriptions become `'static`.
#[derive(Debug)]
pub(crate) struct Learnt {
    type_name: String,
    hash: TypeHash,
    description: Description,
    /// `(type name, encoding, text)` of the type and each type it references.
    sources: Vec<(String, String, String)>,
}

impl Learnt {
    /// The type's RIHS01 hash.
    pub(crate) fn hash(&self) -> TypeHash {
        self.hash
    }

    /// The bytes of text it holds: what leaking it costs, give or take the slices.
    pub(crate) fn size(&self) -> usize {
        let text_of = |d: &IndividualDescription| {
            d.type_name.len()
                + d.fields
                    .iter()
                    .map(|f| {
                        std::mem::size_of::<FieldDescription>()
                            + f.name.len()
                            + f.nested_type_name.len()
                            + f.default_value.len()
                    })
                    .sum::<usize>()
        };
        self.type_name.len()
            + text_of(&self.description.type_description)
            + self
                .description
                .referenced_type_descriptions
                .iter()
                .map(text_of)
                .sum::<usize>()
            + self
                .sources
                .iter()
                .map(|(n, e, t)| n.len() + e.len() + t.len())
                .sum::<usize>()
    }

    /// The type as rclev uses it, leaked into `'static`.
    pub(crate) fn leak(&self) -> Result<TypeInfo> {
        Ok(installed_types::leaked_type_info(
            &self.type_name,
            &dds_type_name(&self.type_name)?,
            self.hash,
            &self.description,
            self.sources
                .iter()
                .map(|(n, e, t)| (n.as_str(), e.as_str(), t.as_str())),
        ))
    }
}

/// The type of a `get_type_description` answer for `type_name`, checked against the hash
/// `expected` its publisher announced.
pub(crate) fn from_answer(
    type_name: &str,
    expected: TypeHash,
    answer: srv::GetTypeDescription_Response,
) -> Result<Learnt> {
    if !answer.successful {
        return Err(format!("the node refused: {}", answer.failure_reason).into());
    }
    dds_type_name(type_name)?;
    let d = &answer.type_description;
    if d.type_description.type_name != type_name {
        return Err(format!(
            "the node described {}, not {type_name}",
            d.type_description.type_name
        )
        .into());
    }
    let description = Description {
        type_description: individual(&d.type_description),
        referenced_type_descriptions: d
            .referenced_type_descriptions
            .iter()
            .map(individual)
            .collect(),
    };
    // Hashing is linear in the description's size (the answer's bytes bound it).
    let hash = TypeHash(rihs01(&description));
    if hash != expected {
        return Err(
            format!("its description hashes to {hash}, not to the announced {expected}").into(),
        );
    }
    // The description is the type's own (it hashes right), so a type over rclev's limits is
    // refused as the type it is, whichever node describes it: see `refused_for_good`.
    TypeLimits::DEFAULT.check_message(d)?;
    let sources = answer
        .type_sources
        .into_iter()
        .map(|mut s| {
            // rosidl hands rcl the text with its last line break cut and a NUL in its place.
            let text = s.raw_file_contents.trim_end_matches('\0').len();
            s.raw_file_contents.truncate(text);
            (s.type_name, s.encoding, s.raw_file_contents)
        })
        .collect();
    Ok(Learnt {
        type_name: type_name.to_string(),
        hash,
        description,
        sources,
    })
}

/// Whether an error of [`from_answer`] refuses the type itself (a description that hashes
/// right but is over rclev's [`TypeLimits`], or malformed): asking another node for the same
/// type and hash would give the same description.
pub(crate) fn refused_for_good(e: &(dyn std::error::Error + 'static)) -> bool {
    matches!(
        e.downcast_ref::<rclev::Error>(),
        Some(rclev::Error::TypeOverLimit { .. } | rclev::Error::InvalidType { .. })
    )
}

/// How long one node gets to be ready, and then to answer.
pub(crate) const ASK_WAIT: Duration = Duration::from_secs(5);

/// When a request not answered is first sent again.
const RESEND_FIRST: Duration = Duration::from_millis(250);

/// Asks node `node_fqn` (`/ns/name`) for type `type_name` with hash `hash`.
pub(crate) fn ask(
    node: &Arc<dyn NodePort>,
    node_fqn: &str,
    type_name: &str,
    hash: TypeHash,
) -> Result<Learnt> {
    let service = format!("{}/get_type_description", node_fqn.trim_end_matches('/'));
    let client = WaitingClient::new(
        node,
        &ServiceEndpoint {
            name: service.clone(),
            types: ServiceTypes::of::<srv::GetTypeDescription>(),
            qos: QoSProfile::services_default(),
        },
    )?;
    if !client.wait_ready_for(ASK_WAIT) {
        return Err(format!("{service} is not offered").into());
    }
    let request = srv::GetTypeDescription_Request {
        type_name: type_name.to_string(),
        type_hash: hash.to_string(),
        include_type_sources: true,
    };
    // A server answers only a client whose response reader it has matched already; that
    // match can trail the request's on a busy host (rmw_fastrtps drops the response after
    // 100 ms), so the request is sent again, at growing intervals, until one is answered.
    let request = Arc::new(request);
    let deadline = Instant::now() + ASK_WAIT;
    let mut sent = Vec::new();
    let mut resend_after = RESEND_FIRST;
    let answer = loop {
        sent.push(client.send(Payload::Shared(request.clone()))?);
        let left = deadline.saturating_duration_since(Instant::now());
        if let Some(answer) = client.answer(&sent, resend_after.min(left))? {
            break answer;
        }
        if left <= resend_after || crate::interrupt::interrupted() {
            return Err(format!(
                "no answer from {service} within {ASK_WAIT:?} ({} requests)",
                sent.len()
            )
            .into());
        }
        resend_after *= 2;
    };
    let answer: srv::GetTypeDescription_Response = match answer {
        Payload::Serialized(bytes) => rclev::msg::from_cdr(&bytes)?,
        Payload::Shared(value) => value
            .downcast_ref::<srv::GetTypeDescription_Response>()
            .ok_or("the answer came as another type")?
            .clone(),
        _ => return Err("the answer came in a form rclev does not read".into()),
    };
    from_answer(type_name, hash, answer)
}

/// Whether the graph knows which node endpoint `e` belongs to (over DDS that comes with the
/// node's `ros_discovery_info`, which can trail its endpoints; rmw names an endpoint of an
/// unknown node `_NODE_NAME_UNKNOWN_`).
pub(crate) fn node_known(e: &EndpointInfo) -> bool {
    !e.node.name.is_empty() && e.node.name != "_NODE_NAME_UNKNOWN_"
}

/// How many nodes one learning asks, one after the other, before giving up: a topic with many
/// silent endpoints costs at most this many waits of [`ASK_WAIT`].
pub(crate) const NODES_PER_ASK: usize = 3;

/// What asking the nodes that use a type gave.
pub(crate) enum Asked {
    /// The type, and the node that described it.
    Learnt(Learnt, String),
    /// A node described the type (its description hashes right) as one rclev does not
    /// accept: no node will describe it otherwise.
    Refused(String),
    /// No node described it, for these reasons.
    Failed(String),
}

/// Asks the nodes of `endpoints` that use message type `type_name` in turn (each node once,
/// at most [`NODES_PER_ASK`]) until one describes it, checked, or `stopped()` (Ctrl-C, the
/// end of a recording: `why_stopped` says which).
pub(crate) fn ask_nodes(
    node: &Arc<dyn NodePort>,
    endpoints: &[EndpointInfo],
    type_name: &str,
    stopped: &dyn Fn() -> bool,
    why_stopped: &str,
) -> Asked {
    let mut reasons = Vec::new();
    let mut asked: Vec<String> = Vec::new();
    for e in endpoints.iter().filter(|e| e.type_name == type_name) {
        if stopped() {
            return Asked::Failed(why_stopped.to_string());
        }
        if !node_known(e) {
            reasons.push("a node that uses it is not known yet".to_string());
            continue;
        }
        let fqn = e.node.fully_qualified();
        if asked.contains(&fqn) {
            continue;
        }
        if asked.len() == NODES_PER_ASK {
            reasons.push(format!("asked {NODES_PER_ASK} nodes, the most per try"));
            break;
        }
        asked.push(fqn.clone());
        match ask(node, &fqn, type_name, e.type_hash) {
            Ok(learnt) => return Asked::Learnt(learnt, fqn),
            Err(e) if refused_for_good(e.as_ref()) => {
                return Asked::Refused(format!("{fqn} described it: {e}"))
            }
            Err(e) => reasons.push(format!("{fqn}: {e}")),
        }
    }
    if reasons.is_empty() {
        reasons.push("no node that uses it is on the graph".to_string());
    }
    Asked::Failed(reasons.join("; "))
}

/// Learns message type `type_name` from the nodes of `endpoints` that use it
/// ([`ask_nodes`], until Ctrl-C) and leaks it. Returns the type and the node that described
/// it.
pub(crate) fn learn_message(
    node: &Arc<dyn NodePort>,
    endpoints: &[EndpointInfo],
    type_name: &str,
) -> Result<(TypeInfo, String)> {
    match ask_nodes(
        node,
        endpoints,
        type_name,
        &crate::interrupt::interrupted,
        "interrupted",
    ) {
        Asked::Learnt(learnt, from) => Ok((learnt.leak()?, from)),
        Asked::Refused(why) | Asked::Failed(why) => Err(why.into()),
    }
}

/// A service type learnt from a node that serves it: its request and response types (leaked)
/// and the service type's hash.
pub(crate) struct LearntService {
    /// `pkg/srv/Name_Request`.
    pub request: TypeInfo,
    /// `pkg/srv/Name_Response`.
    pub response: TypeInfo,
    /// The service type's RIHS01 hash (what Zenoh's key expression carries).
    pub hash: TypeHash,
}

/// Learns service type `type_name` (`pkg/srv/Name`) from the node of `server` (a server of it
/// on the graph): the service's description names its request and response, whose own
/// descriptions (each with the types it references) and hashes are derived from it as rosidl
/// derives them.
pub(crate) fn learn_service(
    node: &Arc<dyn NodePort>,
    server: &EndpointInfo,
    type_name: &str,
) -> Result<LearntService> {
    let fqn = server.node.fully_qualified();
    let learnt = ask(node, &fqn, type_name, server.type_hash)
        .map_err(|e| format!("{fqn} did not describe {type_name}: {e}"))?;
    let part = |suffix: &str| -> Result<TypeInfo> {
        let name = format!("{type_name}_{suffix}");
        let d = closure_of(&learnt.description, &name)
            .ok_or_else(|| format!("the description of {type_name} has no {name}"))?;
        Ok(installed_types::leaked_type_info(
            &name,
            &dds_type_name(&name)?,
            TypeHash(rihs01(&d)),
            &d,
            std::iter::empty(),
        ))
    };
    Ok(LearntService {
        request: part("Request")?,
        response: part("Response")?,
        hash: learnt.hash,
    })
}

/// The description of `name`, one of the types `d` describes, with every type it references
/// (sorted by name, as REP-2016 has them): walked with a stack, each type once.
fn closure_of(d: &Description, name: &str) -> Option<Description> {
    let all: std::collections::HashMap<&str, &IndividualDescription> =
        std::iter::once(&d.type_description)
            .chain(&d.referenced_type_descriptions)
            .map(|t| (t.type_name.as_str(), t))
            .collect();
    let root = *all.get(name)?;
    let mut seen = std::collections::BTreeSet::new();
    let mut stack = vec![root];
    while let Some(t) = stack.pop() {
        for f in &t.fields {
            if !f.nested_type_name.is_empty() && seen.insert(f.nested_type_name.as_str()) {
                stack.push(all.get(f.nested_type_name.as_str())?);
            }
        }
    }
    Some(Description {
        type_description: root.clone(),
        // A BTreeSet of names: sorted as REP-2016 sorts them.
        referenced_type_descriptions: seen.iter().map(|n| all[n].clone()).collect(),
    })
}

/// What to tell a user whose type rclev neither knows nor could learn: where rclev looks for
/// interface files, and how to point it at theirs.
pub(crate) const HOW_TO_INSTALL: &str = "rclev reads interface files from \
     <prefix>/share/<package>/{msg,srv,action}/ for each prefix of AMENT_PREFIX_PATH: put your \
     package's .msg/.srv/.action files there, or point AMENT_PREFIX_PATH at an install prefix \
     that has them (e.g. `export AMENT_PREFIX_PATH=$HOME/ws/install/my_msgs:$AMENT_PREFIX_PATH`)";

/// The error for a type rclev does not know (`unknown`) when nothing on the graph could
/// describe it (`nothing`, a clause: "nothing on /x uses it"): the name's close known names
/// alone if `unknown` offers some (a typo is likelier), else where to install the type.
pub(crate) fn nothing_to_learn_from(unknown: &Unknown, nothing: &str) -> String {
    if unknown.offers_names {
        unknown.message.clone()
    } else {
        format!("{unknown}, and {nothing}, to learn it from. {HOW_TO_INSTALL}")
    }
}

/// A node's answer describing `d`, as rcl would send it.
#[cfg(test)]
pub(crate) fn answer_describing(
    d: &rclev::msg::TypeDescription,
) -> srv::GetTypeDescription_Response {
    srv::GetTypeDescription_Response {
        successful: true,
        type_description: d.into(),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rclev::interfaces::sensor_msgs::msg::Image;
    use rclev::msg::Message;

    fn answer_for_image() -> srv::GetTypeDescription_Response {
        answer_describing(&Image::TYPE_DESCRIPTION)
    }

    #[test]
    fn an_answer_that_hashes_right_is_the_type() {
        let learnt = from_answer(
            "sensor_msgs/msg/Image",
            Image::TYPE_HASH,
            answer_for_image(),
        )
        .unwrap();
        assert!(learnt.size() > 0);
        let info = learnt.leak().unwrap();
        assert_eq!(info.hash, Image::TYPE_HASH);
        assert_eq!(info.dds_type_name, Image::DDS_TYPE_NAME);
        assert_eq!(info.description, Image::TYPE_DESCRIPTION);
    }

    #[test]
    fn a_wrong_or_lying_answer_is_refused() {
        let mut lying = answer_for_image();
        lying.type_description.type_description.fields[0].name = "other".into();
        assert!(from_answer("sensor_msgs/msg/Image", Image::TYPE_HASH, lying).is_err());
        assert!(from_answer(
            "sensor_msgs/msg/Other",
            Image::TYPE_HASH,
            answer_for_image()
        )
        .is_err());
        let refused = srv::GetTypeDescription_Response {
            successful: false,
            failure_reason: "Type not currently in use by this node".into(),
            ..Default::default()
        };
        let e = from_answer("sensor_msgs/msg/Image", Image::TYPE_HASH, refused).unwrap_err();
        assert!(e.to_string().contains("not currently in use"), "{e}");
    }
}
