//! The message types of a recording: a type rclev compiles in or finds installed
//! (`AMENT_PREFIX_PATH`) is used as is; any other is asked of a node that publishes it, by its
//! `~/get_type_description` service (REP-2016), so that a bag records types rclev was not
//! built with — which `ros2 bag record` cannot do.
//!
//! A node's answer is hostile until checked: its description must hash to the type hash its
//! publisher announced (else it is refused), and the names it holds are leaked into `'static`
//! [`TypeInfo`]s once per type (a recording has a bounded set of types).

use std::sync::Arc;
use std::time::Duration;

use rclev::interfaces::type_description_interfaces::{msg as td, srv};
use rclev::msg::{
    FieldDescription, IndividualTypeDescription, TypeDescription, TypeHash, TypeInfo, TypeSource,
};
use rclev::transport::NodePort;
use sha2::{Digest, Sha256};

use crate::errors::Result;
use crate::service_call::DynamicClient;

/// The type `type_name` if rclev compiles it in or finds it installed.
pub(crate) fn local(type_name: &str) -> Option<TypeInfo> {
    if let Some(info) = rclev::interfaces::MESSAGE_TYPES
        .iter()
        .find(|t| t.type_name == type_name)
    {
        return Some(*info);
    }
    crate::installed_types::lookup(type_name).ok()
}

fn leak(s: &str) -> &'static str {
    Box::leak(s.to_string().into_boxed_str())
}

fn individual(d: &td::IndividualTypeDescription) -> IndividualTypeDescription {
    let fields: Vec<FieldDescription> = d
        .fields
        .iter()
        .map(|f| FieldDescription {
            name: leak(&f.name),
            type_id: f.r#type.type_id,
            capacity: f.r#type.capacity,
            string_capacity: f.r#type.string_capacity,
            nested_type_name: leak(&f.r#type.nested_type_name),
            default_value: leak(&f.default_value),
        })
        .collect();
    IndividualTypeDescription {
        type_name: leak(&d.type_name),
        fields: Box::leak(fields.into_boxed_slice()),
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

/// The [`TypeInfo`] of a `get_type_description` answer for `type_name`, checked against the
/// hash `expected` its publisher announced.
pub(crate) fn from_answer(
    type_name: &str,
    expected: TypeHash,
    answer: &srv::GetTypeDescription_Response,
) -> Result<TypeInfo> {
    if !answer.successful {
        return Err(format!("the node refused: {}", answer.failure_reason).into());
    }
    let d = &answer.type_description;
    if d.type_description.type_name != type_name {
        return Err(format!(
            "the node described {}, not {type_name}",
            d.type_description.type_name
        )
        .into());
    }
    let referenced: Vec<IndividualTypeDescription> = d
        .referenced_type_descriptions
        .iter()
        .map(individual)
        .collect();
    let description = TypeDescription {
        type_description: individual(&d.type_description),
        referenced_type_descriptions: Box::leak(referenced.into_boxed_slice()),
    };
    let hash = TypeHash(Sha256::digest(description.hash_input().as_bytes()).into());
    if hash != expected {
        return Err(
            format!("its description hashes to {hash}, not to the announced {expected}").into(),
        );
    }
    let sources: Vec<TypeSource> = answer
        .type_sources
        .iter()
        .map(|s| TypeSource {
            type_name: leak(&s.type_name),
            encoding: leak(&s.encoding),
            // rosidl hands rcl the text with its last line break cut and a NUL in its place.
            raw_file_contents: leak(s.raw_file_contents.trim_end_matches('\0')),
        })
        .collect();
    Ok(TypeInfo {
        type_name: leak(type_name),
        dds_type_name: leak(&dds_type_name(type_name)?),
        hash,
        description,
        sources: Box::leak(sources.into_boxed_slice()),
    })
}

/// How long one node gets to answer.
const ASK_WAIT: Duration = Duration::from_secs(5);

/// Asks node `node_fqn` (`/ns/name`) for type `type_name` with hash `hash`.
pub(crate) fn ask(
    node: &Arc<dyn NodePort>,
    node_fqn: &str,
    type_name: &str,
    hash: TypeHash,
) -> Result<TypeInfo> {
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
    let sequence = client.send_bytes(rclev::msg::to_cdr(&request)?)?;
    let bytes = client
        .answer_bytes(sequence, ASK_WAIT)?
        .ok_or_else(|| format!("no answer from {service} within {ASK_WAIT:?}"))?;
    let answer: srv::GetTypeDescription_Response = rclev::msg::from_cdr(&bytes)?;
    from_answer(type_name, hash, &answer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rclev::interfaces::sensor_msgs::msg::Image;
    use rclev::msg::Message;

    fn answer_for_image() -> srv::GetTypeDescription_Response {
        let d = Image::TYPE_DESCRIPTION;
        let individual = |i: &IndividualTypeDescription| td::IndividualTypeDescription {
            type_name: i.type_name.into(),
            fields: i
                .fields
                .iter()
                .map(|f| td::Field {
                    name: f.name.into(),
                    r#type: td::FieldType {
                        type_id: f.type_id,
                        capacity: f.capacity,
                        string_capacity: f.string_capacity,
                        nested_type_name: f.nested_type_name.into(),
                    },
                    default_value: f.default_value.into(),
                })
                .collect(),
        };
        srv::GetTypeDescription_Response {
            successful: true,
            type_description: td::TypeDescription {
                type_description: individual(&d.type_description),
                referenced_type_descriptions: d
                    .referenced_type_descriptions
                    .iter()
                    .map(individual)
                    .collect(),
            },
            ..Default::default()
        }
    }

    #[test]
    fn an_answer_that_hashes_right_is_the_type() {
        let info = from_answer(
            "sensor_msgs/msg/Image",
            Image::TYPE_HASH,
            &answer_for_image(),
        )
        .unwrap();
        assert_eq!(info.hash, Image::TYPE_HASH);
        assert_eq!(info.dds_type_name, Image::DDS_TYPE_NAME);
        assert_eq!(info.description, Image::TYPE_DESCRIPTION);
    }

    #[test]
    fn a_wrong_or_lying_answer_is_refused() {
        let mut lying = answer_for_image();
        lying.type_description.type_description.fields[0].name = "other".into();
        assert!(from_answer("sensor_msgs/msg/Image", Image::TYPE_HASH, &lying).is_err());
        assert!(from_answer(
            "sensor_msgs/msg/Other",
            Image::TYPE_HASH,
            &answer_for_image()
        )
        .is_err());
        let refused = srv::GetTypeDescription_Response {
            successful: false,
            failure_reason: "Type not currently in use by this node".into(),
            ..Default::default()
        };
        let e = from_answer("sensor_msgs/msg/Image", Image::TYPE_HASH, &refused).unwrap_err();
        assert!(e.to_string().contains("not currently in use"), "{e}");
    }
}
