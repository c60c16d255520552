//! Cross-package resolution: the derived types ROS 2 adds for services and actions, checking
//! that every referenced type exists, and the set of all types with their hashes.

use std::collections::{BTreeMap, BTreeSet};

use crate::describe::{self, Description};
use crate::error::{Error, Result};
use crate::model::{
    Action, BaseType, Container, Field, FieldType, Message, Namespace, Package, Primitive, Service,
    TypeName,
};

/// Every type of a set of packages, resolved, with descriptions and hashes.
#[derive(Debug, Default)]
pub struct TypeSet {
    /// Message-like types by name: `.msg` types, service and action parts, and the types ROS 2
    /// derives (`_Event`, `_SendGoal_Request`, …). Also the descriptions of services and
    /// actions themselves (`pkg/srv/Name` with `request_message`, …), which are hashed but
    /// not generated as structs.
    pub types: BTreeMap<TypeName, Message>,
    /// The hash of each type in `types`.
    pub hashes: BTreeMap<TypeName, [u8; 32]>,
    /// The description of each type in `types`.
    pub descriptions: BTreeMap<TypeName, Description>,
}

fn nested(t: &TypeName) -> FieldType {
    FieldType {
        base: BaseType::Nested(t.clone()),
        container: Container::Single,
    }
}

fn field(name: &str, ty: FieldType) -> Field {
    Field {
        name: name.into(),
        ty,
        default: None,
        doc: Vec::new(),
        line: 0,
    }
}

/// A type ROS 2 derives, with no source text of its own (REP-2016 `implicit`).
fn synthetic(name: TypeName, fields: Vec<Field>, source: &std::path::Path) -> Message {
    Message {
        name,
        fields,
        constants: Vec::new(),
        doc: Vec::new(),
        source: source.to_path_buf(),
        source_text: None,
    }
}

fn sibling(t: &TypeName, suffix: &str) -> TypeName {
    TypeName {
        package: t.package.clone(),
        namespace: t.namespace,
        name: format!("{}_{suffix}", t.name),
    }
}

/// `service_msgs/msg/ServiceEventInfo`, the header of every service event.
pub fn service_event_info() -> TypeName {
    TypeName::msg("service_msgs", "ServiceEventInfo")
}
/// `unique_identifier_msgs/msg/UUID`, an action goal's id.
pub fn uuid() -> TypeName {
    TypeName::msg("unique_identifier_msgs", "UUID")
}
/// `builtin_interfaces/msg/Time`.
pub fn time() -> TypeName {
    TypeName::msg("builtin_interfaces", "Time")
}

/// The messages a service consists of, in the order ROS 2 lists them: request, response,
/// event, and the service's own description, whose type source is `source_text` (the `.srv`
/// file's text; `None` for the services of an action, which rosidl derives, `implicit`).
pub fn service_types(
    service: &TypeName,
    request: Message,
    response: Message,
    source: &std::path::Path,
    source_text: Option<std::sync::Arc<str>>,
) -> Vec<Message> {
    let event_name = sibling(service, "Event");
    let one = |t: &TypeName| FieldType {
        base: BaseType::Nested(t.clone()),
        container: Container::Bounded(1),
    };
    let event = synthetic(
        event_name.clone(),
        vec![
            field("info", nested(&service_event_info())),
            field("request", one(&request.name)),
            field("response", one(&response.name)),
        ],
        source,
    );
    let mut description = synthetic(
        service.clone(),
        vec![
            field("request_message", nested(&request.name)),
            field("response_message", nested(&response.name)),
            field("event_message", nested(&event_name)),
        ],
        source,
    );
    description.source_text = source_text;
    vec![request, response, event, description]
}

/// The messages of an action: its three parts, the two services' types, the feedback
/// message, and the action's own description.
pub fn action_types(action: &Action) -> Vec<Message> {
    let a = &action.name;
    let src = &action.goal.source;
    let prim = |p| FieldType {
        base: BaseType::Primitive(p),
        container: Container::Single,
    };
    let send_goal = sibling(a, "SendGoal");
    let get_result = sibling(a, "GetResult");
    let feedback_message = synthetic(
        sibling(a, "FeedbackMessage"),
        vec![
            field("goal_id", nested(&uuid())),
            field("feedback", nested(&action.feedback.name)),
        ],
        src,
    );
    let mut out = vec![
        action.goal.clone(),
        action.result.clone(),
        action.feedback.clone(),
    ];
    out.extend(service_types(
        &send_goal,
        synthetic(
            sibling(&send_goal, "Request"),
            vec![
                field("goal_id", nested(&uuid())),
                field("goal", nested(&action.goal.name)),
            ],
            src,
        ),
        synthetic(
            sibling(&send_goal, "Response"),
            vec![
                field("accepted", prim(Primitive::Bool)),
                field("stamp", nested(&time())),
            ],
            src,
        ),
        src,
        None,
    ));
    out.extend(service_types(
        &get_result,
        synthetic(
            sibling(&get_result, "Request"),
            vec![field("goal_id", nested(&uuid()))],
            src,
        ),
        synthetic(
            sibling(&get_result, "Response"),
            vec![
                field("status", prim(Primitive::Int8)),
                field("result", nested(&action.result.name)),
            ],
            src,
        ),
        src,
        None,
    ));
    out.push(feedback_message.clone());
    let mut description = synthetic(
        a.clone(),
        vec![
            field("goal", nested(&action.goal.name)),
            field("result", nested(&action.result.name)),
            field("feedback", nested(&action.feedback.name)),
            field("send_goal_service", nested(&send_goal)),
            field("get_result_service", nested(&get_result)),
            field("feedback_message", nested(&feedback_message.name)),
        ],
        src,
    );
    description.source_text = Some(action.source_text.clone());
    out.push(description);
    out
}

impl Service {
    /// Request, response, event and the service description.
    pub fn all_types(&self) -> Vec<Message> {
        service_types(
            &self.name,
            self.request.clone(),
            self.response.clone(),
            &self.request.source,
            Some(self.source_text.clone()),
        )
    }
}

impl TypeSet {
    /// Collects, resolves and hashes every type of `packages`.
    ///
    /// Errors: a reference to a type no package defines, a cycle of references.
    pub fn build(packages: &[&Package]) -> Result<TypeSet> {
        let mut set = TypeSet::default();
        let known_packages: BTreeSet<&str> = packages.iter().map(|p| p.name.as_str()).collect();
        let insert = |m: Message, set: &mut TypeSet| -> Result<()> {
            if let Some(old) = set.types.get(&m.name) {
                return Err(Error::in_file(
                    &m.source,
                    format!(
                        "type {} is defined twice (also in {})",
                        m.name,
                        old.source.display()
                    ),
                ));
            }
            set.types.insert(m.name.clone(), m);
            Ok(())
        };
        for package in packages {
            for m in &package.messages {
                insert(m.clone(), &mut set)?;
            }
            for s in &package.services {
                for m in s.all_types() {
                    insert(m, &mut set)?;
                }
            }
            for a in &package.actions {
                for m in action_types(a) {
                    insert(m, &mut set)?;
                }
            }
        }
        set.resolve_references(&known_packages)?;
        set.check_acyclic()?;
        let names: Vec<TypeName> = set.types.keys().cloned().collect();
        for name in names {
            let description = describe::describe(&set.types, &name);
            set.hashes
                .insert(name.clone(), describe::rihs01(&description));
            set.descriptions.insert(name, description);
        }
        Ok(set)
    }

    /// Checks every nested reference; the `Header` shorthand falls back to `std_msgs/Header`
    /// when the referencing package has no `Header` of its own.
    fn resolve_references(&mut self, known_packages: &BTreeSet<&str>) -> Result<()> {
        let header = TypeName::msg("std_msgs", "Header");
        let existing: BTreeSet<TypeName> = self.types.keys().cloned().collect();
        for message in self.types.values_mut() {
            for f in &mut message.fields {
                let BaseType::Nested(target) = &mut f.ty.base else {
                    continue;
                };
                if existing.contains(target) {
                    continue;
                }
                if target.name == "Header"
                    && target.package == message.name.package
                    && existing.contains(&header)
                {
                    *target = header.clone();
                    continue;
                }
                let why = if known_packages.contains(target.package.as_str()) {
                    format!(
                        "package '{}' has no message '{}'",
                        target.package, target.name
                    )
                } else {
                    format!(
                        "package '{}' is unknown: add it with Builder::package_dir, or make it \
                         findable through AMENT_PREFIX_PATH",
                        target.package
                    )
                };
                let target_text = format!("{}/{}", target.package, target.name);
                return Err(Error {
                    file: message.source.clone(),
                    line: (f.line > 0).then_some(f.line),
                    message: format!("field '{}': unknown type '{target_text}': {why}", f.name),
                });
            }
        }
        Ok(())
    }

    fn check_acyclic(&self) -> Result<()> {
        // Depth-first search with three colours; a grey node met again closes a cycle.
        #[derive(Clone, Copy, PartialEq)]
        enum Mark {
            Grey,
            Black,
        }
        fn visit(
            set: &TypeSet,
            name: &TypeName,
            marks: &mut BTreeMap<TypeName, Mark>,
            path: &mut Vec<TypeName>,
        ) -> Result<()> {
            match marks.get(name) {
                Some(Mark::Black) => return Ok(()),
                Some(Mark::Grey) => {
                    let chain: Vec<String> = path.iter().map(|t| t.to_string()).collect();
                    let m = &set.types[name];
                    return Err(Error::in_file(
                        &m.source,
                        format!("{name} contains itself: {} -> {name}", chain.join(" -> ")),
                    ));
                }
                None => {}
            }
            marks.insert(name.clone(), Mark::Grey);
            path.push(name.clone());
            for f in &set.types[name].fields {
                if let BaseType::Nested(t) = &f.ty.base {
                    visit(set, t, marks, path)?;
                }
            }
            path.pop();
            marks.insert(name.clone(), Mark::Black);
            Ok(())
        }
        let mut marks = BTreeMap::new();
        for name in self.types.keys() {
            visit(self, name, &mut marks, &mut Vec::new())?;
        }
        Ok(())
    }

    /// The RIHS01 string of a type, e.g. `RIHS01_df66…`.
    pub fn hash_string(&self, name: &TypeName) -> Option<String> {
        self.hashes.get(name).map(describe::hash_string)
    }

    /// Looks a type up by its full name `pkg/ns/Name`.
    pub fn get(&self, full_name: &str) -> Option<&Message> {
        let mut parts = full_name.split('/');
        let (Some(package), Some(ns), Some(name), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return None;
        };
        let namespace = match ns {
            "msg" => Namespace::Msg,
            "srv" => Namespace::Srv,
            "action" => Namespace::Action,
            _ => return None,
        };
        self.types.get(&TypeName {
            package: package.into(),
            namespace,
            name: name.into(),
        })
    }
}
