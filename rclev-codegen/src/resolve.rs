//! Cross-package resolution: the derived types ROS 2 adds for services and actions, checking
//! that every referenced type exists, and the set of all types with their hashes.

use std::collections::{BTreeMap, BTreeSet};

use crate::describe::{self, Description};
use crate::error::{Error, Result};
use crate::model::{
    Action, BaseType, Container, Field, FieldType, Message, Namespace, Package, Primitive, Service,
    TypeName,
};

/// Every type of a set of packages, resolved: each nested reference names a type of the set,
/// and no type contains itself. Descriptions and hashes are computed when asked for, one type
/// at a time ([`description`](Self::description), [`hash`](Self::hash)): a type's description
/// holds every type it references, so describing all of a set at once costs the sum of all
/// their closures — quadratic for a long chain — while one type costs its own.
#[derive(Debug, Default)]
pub struct TypeSet {
    /// Message-like types by name: `.msg` types, service and action parts, and the types ROS 2
    /// derives (`_Event`, `_SendGoal_Request`, …). Also the descriptions of services and
    /// actions themselves (`pkg/srv/Name` with `request_message`, …), which are hashed but
    /// not generated as structs.
    pub types: BTreeMap<TypeName, Message>,
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
        Ok(set)
    }

    /// The REP-2016 description of `name`, with every type it references; linear in their
    /// number. `None` if the set has no such type.
    pub fn description(&self, name: &TypeName) -> Option<Description> {
        self.types
            .contains_key(name)
            .then(|| describe::describe(&self.types, name))
    }

    /// The RIHS01 hash of `name`.
    pub fn hash(&self, name: &TypeName) -> Option<[u8; 32]> {
        self.description(name).map(|d| describe::rihs01(&d))
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

    /// Depth-first with an explicit stack (a type may nest as deep as its text likes: no
    /// recursion on it) and three colours; a type met again while still open closes a cycle.
    fn check_acyclic(&self) -> Result<()> {
        #[derive(Clone, Copy, PartialEq)]
        enum Mark {
            Open,
            Done,
        }
        let mut marks: BTreeMap<&TypeName, Mark> = BTreeMap::new();
        for root in self.types.keys() {
            if marks.contains_key(root) {
                continue;
            }
            // (type, how many of its fields were looked at)
            let mut stack: Vec<(&TypeName, usize)> = vec![(root, 0)];
            marks.insert(root, Mark::Open);
            while let Some((name, next)) = stack.last_mut() {
                let fields = &self.types[*name].fields;
                let child = fields[*next..].iter().position(|f| match &f.ty.base {
                    BaseType::Nested(t) => marks.get(t) != Some(&Mark::Done),
                    _ => false,
                });
                let Some(offset) = child else {
                    marks.insert(*name, Mark::Done);
                    stack.pop();
                    continue;
                };
                let index = *next + offset;
                *next = index + 1;
                let BaseType::Nested(child) = &fields[index].ty.base else {
                    unreachable!("position() found a nested field")
                };
                if marks.get(child) == Some(&Mark::Open) {
                    let at = stack.iter().position(|(t, _)| *t == child).unwrap_or(0);
                    let chain: Vec<&TypeName> = stack[at..].iter().map(|(t, _)| *t).collect();
                    return Err(Error::in_file(
                        &self.types[child].source,
                        format!("{child} contains itself: {}", cycle_text(&chain, child)),
                    ));
                }
                marks.insert(child, Mark::Open);
                stack.push((child, 0));
            }
        }
        Ok(())
    }

    /// The RIHS01 string of a type, e.g. `RIHS01_df66…`.
    pub fn hash_string(&self, name: &TypeName) -> Option<String> {
        self.hash(name).as_ref().map(describe::hash_string)
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

/// A cycle `chain -> back` as text, at most the first three and the last two types with a
/// count between: a cycle through thousands of types is one short line.
fn cycle_text(chain: &[&TypeName], back: &TypeName) -> String {
    let names: Vec<String> = chain
        .iter()
        .map(|t| t.to_string())
        .chain([back.to_string()])
        .collect();
    if names.len() <= 6 {
        names.join(" -> ")
    } else {
        format!(
            "{} -> … {} more … -> {}",
            names[..3].join(" -> "),
            names.len() - 5,
            names[names.len() - 2..].join(" -> ")
        )
    }
}
