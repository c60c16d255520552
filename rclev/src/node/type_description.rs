//! `~/get_type_description` (`type_description_interfaces/srv/GetTypeDescription`), as Jazzy
//! nodes offer it: the REP-2016 description of any type the node uses, by type hash, so that a
//! peer meeting an unknown type hash on the graph can learn the type.
//!
//! The node records the type of every endpoint it creates (messages of topics, service types)
//! in its [`TypeCache`]; the service answers from there. As in rcl, the service is on unless
//! the read-only parameter `start_type_description_service` is given as `false` (an override).
//! Unlike rcl, a type stays in the cache for the node's life after its last endpoint is gone.
//!
//! The cache keeps each type's sources beside its description (`Message::TYPE_SOURCES`, the
//! interface files the type and the types it references come from, in rosidl's order), and a
//! request with `include_type_sources` gets them, as rcl answers. The texts are the files byte
//! for byte; rcl's are rosidl's mangled copies (see [`crate::msg::TypeSource`]). A type whose
//! sources are not known (a hand-written `Message` implementation) is answered with none.

use std::sync::{Arc, Weak};

use super::identity::TypeCache;
use super::service::{create_service, ServiceCallback};
use super::{NodeState, Service};
use crate::base::error::Result;
use crate::interfaces::type_description_interfaces::{msg as td, srv};
use crate::msg::{IndividualTypeDescription, TypeDescription, TypeHash, TypeSource};

fn individual(d: &IndividualTypeDescription) -> td::IndividualTypeDescription {
    td::IndividualTypeDescription {
        type_name: d.type_name.to_string(),
        fields: d
            .fields
            .iter()
            .map(|f| td::Field {
                name: f.name.to_string(),
                r#type: td::FieldType {
                    type_id: f.type_id,
                    capacity: f.capacity,
                    string_capacity: f.string_capacity,
                    nested_type_name: f.nested_type_name.to_string(),
                },
                default_value: f.default_value.to_string(),
            })
            .collect(),
    }
}

/// A description as the `type_description_interfaces/msg/TypeDescription` message, which
/// `~/get_type_description` answers with.
impl From<&TypeDescription> for td::TypeDescription {
    fn from(d: &TypeDescription) -> Self {
        td::TypeDescription {
            type_description: individual(&d.type_description),
            referenced_type_descriptions: d
                .referenced_type_descriptions
                .iter()
                .map(individual)
                .collect(),
        }
    }
}

/// Sources as `type_description_interfaces/msg/TypeSource` messages.
fn sources_to_msg(sources: &[TypeSource]) -> Vec<td::TypeSource> {
    sources
        .iter()
        .map(|s| td::TypeSource {
            type_name: s.type_name.to_string(),
            encoding: s.encoding.to_string(),
            raw_file_contents: s.raw_file_contents.to_string(),
        })
        .collect()
}

/// The answer to `request` from `cache`, with rcl's failure reasons.
fn answer(
    cache: &TypeCache,
    request: &srv::GetTypeDescription_Request,
) -> srv::GetTypeDescription_Response {
    let failure = |reason: &str| srv::GetTypeDescription_Response {
        successful: false,
        failure_reason: reason.to_string(),
        ..Default::default()
    };
    let Some(hash) = TypeHash::parse(&request.type_hash) else {
        return failure("Failed to parse type hash");
    };
    let Some(cached) = cache.get(&hash) else {
        return failure("Type not currently in use by this node");
    };
    if cached.description.type_description.type_name != request.type_name {
        return failure(
            "Type name sent in request does not match the type name for the given hash",
        );
    }
    srv::GetTypeDescription_Response {
        successful: true,
        type_description: (&cached.description).into(),
        // Copied only when asked for: they are the bulk of an answer.
        type_sources: if request.include_type_sources {
            sources_to_msg(cached.sources)
        } else {
            Vec::new()
        },
        ..Default::default()
    }
}

/// Offers `~/get_type_description` for `node`.
pub(crate) fn start(node: &Arc<NodeState>) -> Result<Service<srv::GetTypeDescription>> {
    let weak: Weak<NodeState> = Arc::downgrade(node);
    create_service::<srv::GetTypeDescription>(
        &node.core,
        "~/get_type_description",
        ServiceCallback::plain(move |request| match weak.upgrade() {
            Some(node) => answer(&node.identity.types, &request),
            None => srv::GetTypeDescription_Response::default(),
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interfaces::std_msgs::msg::Header;
    use crate::msg::Message;

    #[test]
    fn answers_by_hash_with_rcls_reasons() {
        let cache = TypeCache::default();
        cache.register(
            Header::TYPE_HASH,
            Header::TYPE_DESCRIPTION,
            Header::TYPE_SOURCES,
        );
        let ask = |name: &str, hash: &str| {
            answer(
                &cache,
                &srv::GetTypeDescription_Request {
                    type_name: name.into(),
                    type_hash: hash.into(),
                    include_type_sources: false,
                },
            )
        };
        let ok = ask("std_msgs/msg/Header", &Header::TYPE_HASH.to_string());
        assert!(ok.successful);
        assert!(ok.type_sources.is_empty(), "sources only when asked for");
        assert_eq!(
            ok.type_description.type_description.type_name,
            "std_msgs/msg/Header"
        );
        assert_eq!(
            ok.type_description.referenced_type_descriptions[0].type_name,
            "builtin_interfaces/msg/Time"
        );
        assert_eq!(ok.type_description.type_description.fields[0].name, "stamp");
        let wrong_name = ask("std_msgs/msg/String", &Header::TYPE_HASH.to_string());
        assert!(!wrong_name.successful && wrong_name.failure_reason.contains("does not match"));
        let unknown = ask(
            "std_msgs/msg/Header",
            "RIHS01_0000000000000000000000000000000000000000000000000000000000000000",
        );
        assert!(!unknown.successful && unknown.failure_reason.contains("not currently in use"));
        assert!(!ask("std_msgs/msg/Header", "junk").successful);
    }

    fn ask_with_sources(
        cache: &TypeCache,
        name: &str,
        hash: TypeHash,
    ) -> srv::GetTypeDescription_Response {
        answer(
            cache,
            &srv::GetTypeDescription_Request {
                type_name: name.into(),
                type_hash: hash.to_string(),
                include_type_sources: true,
            },
        )
    }

    #[test]
    fn answers_sources_when_asked_for_them() {
        use crate::interfaces::example_interfaces::srv::AddTwoInts;
        use crate::msg::ServiceType;
        let cache = TypeCache::default();
        cache.register(
            Header::TYPE_HASH,
            Header::TYPE_DESCRIPTION,
            Header::TYPE_SOURCES,
        );
        cache.register(
            AddTwoInts::TYPE_HASH,
            AddTwoInts::TYPE_DESCRIPTION,
            AddTwoInts::TYPE_SOURCES,
        );
        let header = ask_with_sources(&cache, "std_msgs/msg/Header", Header::TYPE_HASH);
        assert!(header.successful);
        let names: Vec<(&str, &str)> = header
            .type_sources
            .iter()
            .map(|s| (s.type_name.as_str(), s.encoding.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("std_msgs/msg/Header", "msg"),
                ("builtin_interfaces/msg/Time", "msg")
            ]
        );
        assert_eq!(
            header.type_sources[0].raw_file_contents,
            Header::TYPE_SOURCES[0].raw_file_contents
        );
        assert!(header.type_sources[0]
            .raw_file_contents
            .contains("\nstring frame_id\n"));

        // A service type: its .srv text, and the parts rosidl derives from it as `implicit`.
        let service = ask_with_sources(
            &cache,
            "example_interfaces/srv/AddTwoInts",
            AddTwoInts::TYPE_HASH,
        );
        assert!(service.successful);
        let own = &service.type_sources[0];
        assert_eq!(
            (own.type_name.as_str(), own.encoding.as_str()),
            ("example_interfaces/srv/AddTwoInts", "srv")
        );
        assert!(own.raw_file_contents.contains("\n---\n"));
        let request = service
            .type_sources
            .iter()
            .find(|s| s.type_name == "example_interfaces/srv/AddTwoInts_Request")
            .unwrap();
        assert_eq!(
            (
                request.encoding.as_str(),
                request.raw_file_contents.as_str()
            ),
            ("implicit", "")
        );
        assert_eq!(
            service.type_sources.len(),
            1 + service.type_description.referenced_type_descriptions.len()
        );

        // A type registered without sources (a hand-written implementation) has none.
        let bare = TypeCache::default();
        bare.register(Header::TYPE_HASH, Header::TYPE_DESCRIPTION, &[]);
        let answer = ask_with_sources(&bare, "std_msgs/msg/Header", Header::TYPE_HASH);
        assert!(answer.successful && answer.type_sources.is_empty());
    }
}
