//! Message types rclev does not ship, read at run time from the installed interface files —
//! `<prefix>/share/<pkg>/{msg,srv,action}` for each prefix of `AMENT_PREFIX_PATH`, as `ros2`
//! finds them — with rclev-codegen's parser and REP-2016 describer. So `topic echo|pub`,
//! `service call` and `action send_goal` work on any type of a sourced ROS 2 installation
//! (test_msgs, a robot's own packages), not only on rclev's generated ones.
//!
//! A type also comes from a bag: [`from_message_definition`] reads the `ros2msg` schema text
//! rosbag2 writes (the `.msg` text of the type and of each type it references) with the same
//! parser and describer, so a bag's types are known without any installation.
//!
//! A [`TypeInfo`] holds `'static` names, descriptions and source texts (generated code's are
//! constants): the few types a command uses are leaked once, and cached for the process.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Mutex, OnceLock};

use rclev::interfaces::type_description_interfaces::msg as td;
use rclev::msg::{
    FieldDescription, IndividualTypeDescription, TypeDescription, TypeHash, TypeInfo, TypeLimits,
    TypeSource,
};
use rclev_codegen::describe::{rihs01, Description, IndividualDescription};
use rclev_codegen::model::{BaseType, Message};
use rclev_codegen::{Package, TypeName, TypeSet};

use crate::errors::Result;

/// Packages every service or action refers to implicitly (event info, goal ids, stamps).
const IMPLICIT: &[&str] = &[
    "builtin_interfaces",
    "service_msgs",
    "unique_identifier_msgs",
    "action_msgs",
];

fn leak(s: &str) -> &'static str {
    Box::leak(s.to_string().into_boxed_str())
}

fn individual(d: &IndividualDescription) -> IndividualTypeDescription {
    let fields: Vec<FieldDescription> = d
        .fields
        .iter()
        .map(|f| FieldDescription {
            name: leak(&f.name),
            type_id: f.type_id,
            capacity: f.capacity,
            string_capacity: f.string_capacity,
            nested_type_name: leak(&f.nested_type_name),
            default_value: leak(&f.default_value),
        })
        .collect();
    IndividualTypeDescription {
        type_name: leak(&d.type_name),
        fields: Box::leak(fields.into_boxed_slice()),
    }
}

fn description(d: &Description) -> TypeDescription {
    let referenced: Vec<IndividualTypeDescription> = d
        .referenced_type_descriptions
        .iter()
        .map(individual)
        .collect();
    TypeDescription {
        type_description: individual(&d.type_description),
        referenced_type_descriptions: Box::leak(referenced.into_boxed_slice()),
    }
}

/// The [`TypeInfo`] of a type described by `d` with hash `hash`, whose sources are
/// `(type name, encoding, text)`: its names, description and texts are leaked into
/// `'static` — once per type a command uses, which is why a command that learns types from
/// peers bounds how many it learns.
pub(crate) fn leaked_type_info<'a>(
    type_name: &str,
    dds_type_name: &str,
    hash: TypeHash,
    d: &Description,
    sources: impl IntoIterator<Item = (&'a str, &'a str, &'a str)>,
) -> TypeInfo {
    let sources: Vec<TypeSource> = sources
        .into_iter()
        .map(|(type_name, encoding, text)| TypeSource {
            type_name: leak(type_name),
            encoding: leak(encoding),
            raw_file_contents: leak(text),
        })
        .collect();
    TypeInfo {
        type_name: leak(type_name),
        dds_type_name: leak(dds_type_name),
        hash,
        description: description(d),
        sources: Box::leak(sources.into_boxed_slice()),
    }
}

/// `d` as the `type_description_interfaces` message a peer would send: what
/// [`TypeLimits::check_message`] checks before anything is leaked.
pub(crate) fn description_message(d: &Description) -> td::TypeDescription {
    let individual = |d: &IndividualDescription| td::IndividualTypeDescription {
        type_name: d.type_name.clone(),
        fields: d
            .fields
            .iter()
            .map(|f| td::Field {
                name: f.name.clone(),
                r#type: td::FieldType {
                    type_id: f.type_id,
                    capacity: f.capacity,
                    string_capacity: f.string_capacity,
                    nested_type_name: f.nested_type_name.clone(),
                },
                default_value: f.default_value.clone(),
            })
            .collect(),
    };
    td::TypeDescription {
        type_description: individual(&d.type_description),
        referenced_type_descriptions: d
            .referenced_type_descriptions
            .iter()
            .map(individual)
            .collect(),
    }
}

/// The [`TypeInfo`] of message type `type_name` (`pkg/kind/Name`) of a resolved set, with
/// the sources of the type and of each type it references, in the order of its description
/// (as generated code has them). The description is checked against rclev's
/// [`TypeLimits`] before anything is leaked.
fn type_info(set: &TypeSet, type_name: &str) -> Result<TypeInfo> {
    let message = set.get(type_name).ok_or_else(|| {
        format!("message type '{type_name}' is not one rclev knows or finds installed")
    })?;
    let name: &TypeName = &message.name;
    let d = set.description(name).ok_or("no description")?;
    TypeLimits::DEFAULT.check_message(&description_message(&d))?;
    let mut sources = Vec::new();
    for described in std::iter::once(&d.type_description).chain(&d.referenced_type_descriptions) {
        let name = described.type_name.as_str();
        let m = set
            .get(name)
            .ok_or_else(|| format!("no definition of {name}, which the type references"))?;
        sources.push((
            name,
            m.source_encoding(),
            m.source_text.as_deref().unwrap_or_default(),
        ));
    }
    Ok(leaked_type_info(
        type_name,
        &name.dds_name(),
        TypeHash(rihs01(&d)),
        &d,
        sources,
    ))
}

/// The packages a package's definitions refer to.
fn references(package: &Package) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut scan = |m: &Message| {
        for f in &m.fields {
            if let BaseType::Nested(t) = &f.ty.base {
                out.insert(t.package.clone());
            }
        }
    };
    package.messages.iter().for_each(&mut scan);
    for s in &package.services {
        scan(&s.request);
        scan(&s.response);
    }
    for a in &package.actions {
        scan(&a.goal);
        scan(&a.result);
        scan(&a.feedback);
    }
    if !package.services.is_empty() || !package.actions.is_empty() {
        out.extend(IMPLICIT.iter().map(|p| p.to_string()));
    }
    out.remove(&package.name);
    out
}

/// Every type of `package` and of the packages it needs: rclev's bundled definitions where
/// they have the package, the installed ones otherwise.
fn type_set(package: &str) -> Result<TypeSet> {
    let bundled: BTreeMap<String, Package> = rclev_codegen::bundled_packages()?
        .into_iter()
        .map(|p| (p.name.clone(), p))
        .collect();
    let mut loaded: BTreeMap<String, Package> = BTreeMap::new();
    let mut wanted = vec![package.to_string()];
    while let Some(name) = wanted.pop() {
        if loaded.contains_key(&name) {
            continue;
        }
        let p = match bundled.get(&name) {
            Some(p) => p.clone(),
            None => {
                let dir = rclev_codegen::find_in_prefixes(&name, &[]).ok_or_else(|| {
                    format!(
                        "interface package '{name}' is neither one rclev ships nor installed \
                         under AMENT_PREFIX_PATH (<prefix>/share/{name}/msg, srv or action)"
                    )
                })?;
                rclev_codegen::load_package_dir(&dir)?
            }
        };
        wanted.extend(references(&p));
        loaded.insert(name, p);
    }
    let refs: Vec<&Package> = loaded.values().collect();
    Ok(TypeSet::build(&refs)?)
}

/// The RIHS01 hash of the service type `pkg/srv/Name` (or of an action's service,
/// `pkg/action/Name_SendGoal`, …): over Zenoh it is part of the service's key expression.
pub fn service_hash(type_name: &str) -> Result<TypeHash> {
    let package = type_name.split('/').next().unwrap_or_default();
    let set = type_set(package)?;
    let service = set.get(type_name).ok_or_else(|| {
        format!("service type '{type_name}' is not one rclev knows or finds installed")
    })?;
    let d = set.description(&service.name).ok_or("no description")?;
    TypeLimits::DEFAULT.check_message(&description_message(&d))?;
    Ok(TypeHash(rihs01(&d)))
}

/// The installed message type `pkg/kind/Name` (a `.msg` type, or a part ROS 2 derives from a
/// service or action: `pkg/srv/Name_Request`, `pkg/action/Name_SendGoal_Request`, …).
pub fn lookup(type_name: &str) -> Result<TypeInfo> {
    static CACHE: OnceLock<Mutex<HashMap<String, TypeInfo>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(info) = cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(type_name)
    {
        return Ok(*info);
    }
    let package = type_name.split('/').next().unwrap_or_default();
    let info = type_info(&type_set(package)?, type_name)?;
    cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(type_name.to_string(), info);
    Ok(info)
}

/// The line rosbag2 writes between two types' texts in a `ros2msg` schema (80 `=`).
const SEPARATOR: &str =
    "================================================================================";

/// What starts the line after a [`SEPARATOR`]: the name of the type whose text follows.
const SECTION_PREFIX: &str = "MSG: ";

/// `pkg/Name` or `pkg/msg/Name` → (`pkg`, `Name`); `None` for anything else.
fn msg_type_name(text: &str) -> Option<(&str, &str)> {
    match text.split('/').collect::<Vec<_>>()[..] {
        [pkg, name] | [pkg, "msg", name] if !pkg.is_empty() && !name.is_empty() => {
            Some((pkg, name))
        }
        _ => None,
    }
}

/// A `ros2msg` schema taken apart: the first type's text, then each section's type name (as
/// written after `MSG: `) and text.
struct Schema<'a> {
    root: &'a str,
    sections: Vec<(&'a str, &'a str)>,
}

/// Splits a `ros2msg` schema at its separators. A text is what the writer put between them,
/// less the line break it adds before a separator, so it is the `.msg` file byte for byte.
fn split_definition(definition: &str) -> Result<Schema<'_>> {
    let mut texts = Vec::new();
    let mut names = Vec::new();
    let mut start = 0;
    for (at, _) in definition.match_indices(SEPARATOR) {
        let line_start = at == 0 || definition.as_bytes()[at - 1] == b'\n';
        let rest = &definition[at + SEPARATOR.len()..];
        // A longer run of `=`, or `=` inside a line, is text (a valid `.msg` line holding one
        // is a constant's value or a comment).
        let newline_len = if rest.starts_with('\n') {
            1
        } else if rest.starts_with("\r\n") {
            2
        } else if rest.is_empty() {
            0
        } else {
            continue;
        };
        if !line_start || at < start {
            continue;
        }
        let text = &definition[start..at];
        let text = text.strip_suffix('\n').unwrap_or(text);
        texts.push(text.strip_suffix('\r').unwrap_or(text));
        let header_start = at + SEPARATOR.len() + newline_len;
        let after = &definition[header_start..];
        let (header, text_start) = match after.find('\n') {
            Some(end) => (&after[..end], header_start + end + 1),
            None => (after, definition.len()),
        };
        let header = header.strip_suffix('\r').unwrap_or(header);
        let Some(name) = header.strip_prefix(SECTION_PREFIX) else {
            return Err(format!(
                "the line after a separator is '{header}', not '{SECTION_PREFIX}pkg/Type': \
                 not a ros2msg definition (.msg texts)"
            )
            .into());
        };
        names.push(name.trim());
        start = text_start;
    }
    texts.push(&definition[start..]);
    let root = texts.remove(0);
    Ok(Schema {
        root,
        sections: names.into_iter().zip(texts).collect(),
    })
}

/// The message type `type_name` (`pkg/msg/Name`) as a `ros2msg` schema defines it: the text
/// rosbag2's MCAP storage writes for a topic's type (rclev-bag's writer writes the same), the
/// type's `.msg` text, then for each type it references, directly or not, a line break, a line
/// of 80 `=`, `MSG: pkg/Type` (or `MSG: pkg/msg/Type`, as other writers name it) on a line,
/// and that type's `.msg` text.
///
/// The types are parsed, resolved and hashed as rclev's build does, from the text alone: the
/// result's description and RIHS01 hash are what a ROS 2 node with these definitions
/// announces, and its sources are the texts, byte for byte. Errors (never panics) on a text
/// that is not such a schema: a separator not followed by `MSG: pkg/Type`, a type defined
/// twice, a definition that does not parse, a referenced type the text lacks.
pub(crate) fn from_message_definition(type_name: &str, definition: &str) -> Result<TypeInfo> {
    let root = msg_type_name(type_name)
        .ok_or_else(|| format!("'{type_name}' is not a message type name (pkg/msg/Name)"))?;
    let mut schema = split_definition(definition)?;
    // A writer that gives the first type a section of its own (as rosbag2 does for its IDL
    // fallback) leaves nothing before the first separator.
    if schema.root.trim().is_empty()
        && schema
            .sections
            .first()
            .and_then(|(name, _)| msg_type_name(name))
            == Some(root)
    {
        schema.root = schema.sections.remove(0).1;
    }
    let mut types = vec![(root, schema.root)];
    for (name, text) in schema.sections {
        let named = msg_type_name(name).ok_or_else(|| {
            format!("section 'MSG: {name}' does not name a message type (pkg/Type)")
        })?;
        types.push((named, text));
    }
    let mut files: BTreeMap<&str, Vec<(std::path::PathBuf, &str)>> = BTreeMap::new();
    for ((package, name), text) in types {
        // The parser takes a type's package and name from its file's path; the path names
        // the type in errors too.
        let path = std::path::PathBuf::from(format!("{package}/msg/{name}.msg"));
        files.entry(package).or_default().push((path, text));
    }
    let packages = files
        .iter()
        .map(|(package, files)| {
            rclev_codegen::parse_package(package, files.iter().map(|(p, t)| (p.as_path(), *t)))
        })
        .collect::<rclev_codegen::Result<Vec<Package>>>()
        .map_err(|e| format!("the definition of {type_name}: {e}"))?;
    let set = TypeSet::build(&packages.iter().collect::<Vec<_>>())
        .map_err(|e| format!("the definition of {type_name}: {e}"))?;
    type_info(&set, &format!("{}/msg/{}", root.0, root.1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rclev::interfaces::sensor_msgs::msg::Image;
    use rclev::msg::Message;

    const IMAGE: &str = include_str!("../../rclev-codegen/interfaces/sensor_msgs/msg/Image.msg");
    const HEADER: &str = include_str!("../../rclev-codegen/interfaces/std_msgs/msg/Header.msg");
    const TIME: &str =
        include_str!("../../rclev-codegen/interfaces/builtin_interfaces/msg/Time.msg");

    /// `text`, then each `(name, text)` section, as rosbag2 writes them.
    fn schema(text: &str, sections: &[(&str, &str)]) -> String {
        let mut out = text.to_string();
        for (name, text) in sections {
            out.push_str(&format!("\n{SEPARATOR}\nMSG: {name}\n{text}"));
        }
        out
    }

    #[test]
    fn image_round_trips_through_its_ros2msg_schema() {
        // rosbag2's order: depth first, each type once.
        let text = schema(
            IMAGE,
            &[
                ("std_msgs/Header", HEADER),
                ("builtin_interfaces/Time", TIME),
            ],
        );
        let info = from_message_definition("sensor_msgs/msg/Image", &text).unwrap();
        assert_eq!(info.hash, Image::TYPE_HASH);
        assert_eq!(info.type_name, "sensor_msgs/msg/Image");
        assert_eq!(info.dds_type_name, Image::DDS_TYPE_NAME);
        assert_eq!(info.description, Image::TYPE_DESCRIPTION);
        // The texts come back byte for byte, in the generated code's order.
        assert_eq!(info.sources, Image::TYPE_SOURCES);
        assert_eq!(info.sources[0].raw_file_contents, IMAGE);

        // Other writers name sections pkg/msg/Type, and some end lines with CR LF.
        let text = schema(
            IMAGE,
            &[
                ("builtin_interfaces/msg/Time", TIME),
                ("std_msgs/msg/Header", HEADER),
            ],
        );
        let info = from_message_definition("sensor_msgs/msg/Image", &text).unwrap();
        assert_eq!(info.hash, Image::TYPE_HASH);
        let crlf = text.replace('\n', "\r\n");
        let info = from_message_definition("sensor_msgs/msg/Image", &crlf).unwrap();
        assert_eq!(info.hash, Image::TYPE_HASH);
        assert_eq!(
            info.sources[0].raw_file_contents,
            IMAGE.replace('\n', "\r\n")
        );
    }

    #[test]
    fn every_shipped_message_round_trips_through_its_sources() {
        let mut checked = 0;
        for t in rclev::interfaces::MESSAGE_TYPES {
            // A ros2msg schema names .msg types only.
            if t.sources.iter().any(|s| !s.type_name.contains("/msg/")) {
                continue;
            }
            let sections: Vec<(&str, &str)> = t.sources[1..]
                .iter()
                .map(|s| (s.type_name, s.raw_file_contents))
                .collect();
            let text = schema(t.sources[0].raw_file_contents, &sections);
            let info = from_message_definition(t.type_name, &text)
                .unwrap_or_else(|e| panic!("{}: {e}", t.type_name));
            assert_eq!(info.hash, t.hash, "{}", t.type_name);
            assert_eq!(info.description, t.description, "{}", t.type_name);
            assert_eq!(info.sources, t.sources, "{}", t.type_name);
            checked += 1;
        }
        assert!(checked > 150, "{checked}");
    }

    #[test]
    fn a_schema_that_names_the_first_type_in_a_section_is_read() {
        let text = schema(
            "",
            &[
                ("std_msgs/msg/Header", HEADER),
                ("builtin_interfaces/msg/Time", TIME),
            ],
        );
        let info = from_message_definition("std_msgs/msg/Header", &text).unwrap();
        assert_eq!(
            info.hash,
            rclev::interfaces::std_msgs::msg::Header::TYPE_HASH
        );
    }

    #[test]
    fn malformed_schemas_are_errors() {
        let fails = |type_name: &str, text: &str| {
            from_message_definition(type_name, text)
                .map(|_| ())
                .expect_err(text)
                .to_string()
        };
        let image = "sensor_msgs/msg/Image";
        let missing = fails(image, &schema(IMAGE, &[("std_msgs/Header", HEADER)]));
        assert!(missing.contains("builtin_interfaces"), "{missing}");
        let idl = fails(
            image,
            &format!("{IMAGE}\n{SEPARATOR}\nIDL: std_msgs/msg/Header\n"),
        );
        assert!(idl.contains("IDL: std_msgs/msg/Header"), "{idl}");
        let bad_section = fails(image, &schema(IMAGE, &[("Header", HEADER)]));
        assert!(bad_section.contains("'MSG: Header'"), "{bad_section}");
        let garbage = fails("pkg/msg/T", "this is not a field line at all\n");
        assert!(garbage.contains("pkg/msg/T.msg"), "{garbage}");
        let twice = fails(
            "std_msgs/msg/Header",
            &schema(
                HEADER,
                &[
                    ("builtin_interfaces/Time", TIME),
                    ("builtin_interfaces/Time", TIME),
                ],
            ),
        );
        assert!(twice.contains("twice"), "{twice}");
        assert!(fails("Image", IMAGE).contains("not a message type name"));
        assert!(fails("sensor_msgs/srv/Image", IMAGE).contains("not a message type name"));
        // A separator with nothing after it.
        assert!(!fails(image, &format!("{IMAGE}\n{SEPARATOR}")).is_empty());
    }

    #[test]
    fn installed_types_carry_their_sources() {
        // std_msgs ships with rclev, so no installation is needed to read it this way.
        let info = lookup("std_msgs/msg/Header").unwrap();
        assert_eq!(
            info.sources,
            rclev::interfaces::std_msgs::msg::Header::TYPE_SOURCES
        );
        let request = lookup("example_interfaces/srv/AddTwoInts_Request").unwrap();
        assert_eq!(request.sources.len(), 1);
        assert_eq!(
            (
                request.sources[0].encoding,
                request.sources[0].raw_file_contents
            ),
            ("implicit", "")
        );
    }
}
