//! The message types of a recording: a type rclev compiles in or finds installed
//! (`AMENT_PREFIX_PATH`) is used as is; any other is asked of a node that publishes it, by its
//! `~/get_type_description` service (REP-2016), so that a bag records types rclev was not
//! built with — which `ros2 bag record` cannot do.
//!
//! A node's answer is hostile until checked: its description must hash to the type hash its
//! publisher announced (else it is refused). A checked answer stays owned ([`Learnt`]) until
//! the recorder, which bounds how many types it learns, leaks it into a `'static`
//! [`TypeInfo`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use rclev::interfaces::type_description_interfaces::{msg as td, srv};
use rclev::msg::{TypeHash, TypeInfo, TypeLimits};
use rclev::transport::NodePort;
use rclev_codegen::describe::{rihs01, Description, FieldDescription, IndividualDescription};

use crate::errors::Result;
use crate::installed_types;
use crate::service_call::DynamicClient;

/// The type `type_name` if rclev compiles it in or finds it installed.
pub(crate) fn local(type_name: &str) -> Option<TypeInfo> {
    if let Some(info) = rclev::interfaces::MESSAGE_TYPES
        .iter()
        .find(|t| t.type_name == type_name)
    {
        return Some(*info);
    }
    installed_types::lookup(type_name).ok()
}

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
    let client = DynamicClient::new(
        node,
        &service,
        "type_description_interfaces/srv/GetTypeDescription",
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
    let request = rclev::msg::to_cdr(&request)?;
    let deadline = Instant::now() + ASK_WAIT;
    let mut sent = Vec::new();
    let mut resend_after = RESEND_FIRST;
    let bytes = loop {
        sent.push(client.send_bytes(request.clone())?);
        let left = deadline.saturating_duration_since(Instant::now());
        if let Some(bytes) = client.answer_bytes(&sent, resend_after.min(left))? {
            break bytes;
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
    let answer: srv::GetTypeDescription_Response = rclev::msg::from_cdr(&bytes)?;
    from_answer(type_name, hash, answer)
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
