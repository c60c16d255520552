//! Writing Rust: one module per package with `msg`, `srv` and `action` submodules, a struct
//! per message with its CDR code, constants, type name, hash, description and sources.
//!
//! Code is written as text (no syn/quote) to keep this build dependency cheap. Everything
//! generated names std items by absolute path, because ROS packages define messages called
//! `String`, `Bool` or `Empty` that would shadow the prelude.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::describe::{self, Description, IndividualDescription};
use crate::model::{BaseType, Container, Field, Message, Namespace, Primitive, TypeName, Value};
use crate::resolve;
use crate::resolve::TypeSet;

/// How generated code refers to things outside itself.
#[derive(Debug, Clone)]
pub struct Paths {
    /// The rclev `msg` module: `::rclev::msg`, or `crate::msg` inside rclev.
    pub runtime: String,
    /// Packages generated elsewhere, by name, with the path of their module
    /// (`::rclev::interfaces::std_msgs`).
    pub external: BTreeMap<String, String>,
}

/// What kind of item a type name stands for in the generated code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A struct implementing `Message`.
    Struct,
    /// A unit struct implementing `ServiceType`.
    Service,
    /// A unit struct implementing `ActionType`.
    Action,
}

/// The generator's view of a type set and of which packages to write.
pub struct Emitter<'a> {
    set: &'a TypeSet,
    paths: &'a Paths,
    kinds: BTreeMap<TypeName, Kind>,
    /// Per struct: (can derive `Copy`, can derive `Eq`/`Hash`/`Ord`).
    derivable: BTreeMap<TypeName, (bool, bool)>,
}

/// Lints generated code opts out of: ROS names (`AddTwoInts_Request`), items a program
/// doesn't use, and style lints a user crate may deny that generated code cannot follow.
const LINTS_ALLOWED: &str = "non_camel_case_types, non_snake_case, dead_code, unreachable_pub, unused_qualifications, clippy::all, clippy::pedantic, clippy::nursery, clippy::restriction, rustdoc::all";

const RUST_KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "dyn", "else", "enum", "extern", "false",
    "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref",
    "return", "static", "struct", "trait", "true", "type", "unsafe", "use", "where", "while",
    "abstract", "become", "box", "do", "final", "gen", "macro", "override", "priv", "try",
    "typeof", "unsized", "virtual", "yield",
];

/// A field or package name as a Rust identifier: keywords become raw identifiers (`r#type`);
/// `self`, `super` and `crate`, which cannot be raw, get a trailing underscore.
pub fn field_ident(name: &str) -> String {
    match name {
        "self" | "super" | "crate" => format!("{name}_"),
        n if RUST_KEYWORDS.contains(&n) => format!("r#{n}"),
        n => n.to_string(),
    }
}

fn doc_attr(out: &mut String, indent: &str, lines: &[String]) {
    for l in lines {
        let _ = writeln!(out, "{indent}#[doc = {:?}]", format!(" {l}"));
    }
}

/// A value as the docs show it, in Rust's notation: `false`, `"rover"`, `[0.1, 0.125]`
/// (the type description's text is Python's: `False`, `rover`, `(0.1, 0.125)`).
fn doc_value(v: &Value) -> String {
    match v {
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => format!("{f:?}"),
        Value::String(s) => format!("{s:?}"),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(doc_value).collect();
            format!("[{}]", items.join(", "))
        }
    }
}

fn bound(b: Option<u64>) -> String {
    match b {
        Some(n) => format!("::core::option::Option::Some({n})"),
        None => "::core::option::Option::None".into(),
    }
}

impl<'a> Emitter<'a> {
    /// Prepares to emit types of `set`, referring to other packages through `paths`.
    pub fn new(
        set: &'a TypeSet,
        paths: &'a Paths,
        services: &[TypeName],
        actions: &[TypeName],
    ) -> Self {
        let mut kinds: BTreeMap<TypeName, Kind> = set
            .types
            .keys()
            .map(|t| (t.clone(), Kind::Struct))
            .collect();
        for s in services {
            kinds.insert(s.clone(), Kind::Service);
        }
        for a in actions {
            kinds.insert(a.clone(), Kind::Action);
            for suffix in ["SendGoal", "GetResult"] {
                let mut t = a.clone();
                t.name = format!("{}_{suffix}", a.name);
                kinds.insert(t, Kind::Service);
            }
        }
        let mut derivable = BTreeMap::new();
        for t in set.types.keys() {
            derivable_traits(set, t, &mut derivable);
        }
        Emitter {
            set,
            paths,
            kinds,
            derivable,
        }
    }

    /// The Rust path of a generated type, from inside a `pkg::ns` module.
    fn path(&self, t: &TypeName) -> String {
        match self.paths.external.get(&t.package) {
            Some(root) => format!("{root}::{}::{}", t.namespace, t.name),
            None => format!(
                "super::super::{}::{}::{}",
                field_ident(&t.package),
                t.namespace,
                t.name
            ),
        }
    }

    fn element_type(&self, base: &BaseType) -> String {
        match base {
            BaseType::Primitive(p) => p.rust().into(),
            BaseType::String(_) | BaseType::WString(_) => "::std::string::String".into(),
            BaseType::Nested(t) => self.path(t),
        }
    }

    fn field_type(&self, f: &Field) -> String {
        let e = self.element_type(&f.ty.base);
        match f.ty.container {
            Container::Single => e,
            Container::Array(n) => format!("[{e}; {n}]"),
            Container::Bounded(_) | Container::Unbounded => format!("::std::vec::Vec<{e}>"),
        }
    }

    /// Writes every package in `packages` (which must all be in the set).
    pub fn emit(&self, packages: &[&crate::model::Package]) -> String {
        let mut out = String::new();
        out.push_str(
            "// @generated by rclev-codegen from ROS 2 interface definitions. Do not edit.\n\n",
        );
        for p in packages {
            self.emit_package(&mut out, p);
        }
        let rt = &self.paths.runtime;
        out.push_str("/// Every message type generated here (including the request, response and event\n/// messages of services and the protocol messages of actions), for lookups by name.\n");
        let _ = writeln!(
            out,
            "#[allow({LINTS_ALLOWED})]\npub const MESSAGE_TYPES: &[{rt}::TypeInfo] = &["
        );
        for p in packages {
            for t in self.set.types.keys() {
                if t.package == p.name && self.kinds[t] == Kind::Struct {
                    let _ = writeln!(
                        out,
                        "    {rt}::TypeInfo::of::<{}::{}::{}>(),",
                        field_ident(&t.package),
                        t.namespace,
                        t.name
                    );
                }
            }
        }
        out.push_str("];\n");
        out
    }

    fn emit_package(&self, out: &mut String, p: &crate::model::Package) {
        // The lints are the including crate's, not the generator's: a binary or a private
        // module that includes the types uses only some of them (`dead_code`,
        // `unreachable_pub`), and stricter crate-level levels (`unused_qualifications`,
        // clippy's opt-in groups) would flag the generated style.
        let _ = writeln!(
            out,
            "#[doc = {:?}]\n#[allow({LINTS_ALLOWED})]\npub mod {} {{",
            format!(
                " The `{}` interfaces: {}, {}, {}.",
                p.name,
                count(p.messages.len(), "message"),
                count(p.services.len(), "service"),
                count(p.actions.len(), "action")
            ),
            field_ident(&p.name)
        );
        if !p.messages.is_empty() {
            let _ = writeln!(
                out,
                "    #[doc = \" Messages (`{}/msg/…`).\"]\n    pub mod msg {{",
                p.name
            );
            for m in &p.messages {
                self.emit_struct(out, &m.name);
            }
            out.push_str("    }\n");
        }
        if !p.services.is_empty() {
            let _ = writeln!(out, "    #[doc = \" Services (`{}/srv/…`) and their request, response and event messages.\"]\n    pub mod srv {{", p.name);
            for s in &p.services {
                for part in s.all_types() {
                    self.emit_part(out, &part.name, &s.doc);
                }
            }
            out.push_str("    }\n");
        }
        if !p.actions.is_empty() {
            let _ = writeln!(out, "    #[doc = \" Actions (`{}/action/…`) and the messages of their protocol.\"]\n    pub mod action {{", p.name);
            for a in &p.actions {
                for part in resolve::action_types(a) {
                    self.emit_part(out, &part.name, &a.doc);
                }
            }
            out.push_str("    }\n");
        }
        out.push_str("}\n");
    }

    /// One of the types a service or action consists of: a struct, or the service or action
    /// type itself (documented with the definition's comment).
    fn emit_part(&self, out: &mut String, t: &TypeName, doc: &[String]) {
        match self.kinds[t] {
            Kind::Struct => self.emit_struct(out, t),
            Kind::Service if t.namespace == Namespace::Action => {
                let action = t.name.rsplit_once('_').map_or("", |(a, _)| a);
                let what = t.name.rsplit('_').next().unwrap_or_default();
                self.emit_service(out, t, &[format!("The `{what}` service of [`{action}`].")]);
            }
            Kind::Service => self.emit_service(out, t, doc),
            Kind::Action => self.emit_action(out, t, doc),
        }
    }

    /// A message struct, from the resolved type set (where references are final).
    fn emit_struct(&self, out: &mut String, t: &TypeName) {
        let m = &self.set.types[t];
        let rt = &self.paths.runtime;
        let name = &m.name.name;
        let ind = "        ";
        let mut doc = vec![format!("`{}`", m.name)];
        if !m.doc.is_empty() {
            doc.push(String::new());
            doc.extend(m.doc.iter().cloned());
        }
        doc_attr(out, ind, &doc);
        let mut derives = vec!["Debug", "Clone", "PartialEq"];
        let (copy, eq) = self.derivable[&m.name];
        if copy {
            derives.push("Copy");
        }
        if eq {
            derives.extend(["Eq", "Hash", "PartialOrd", "Ord"]);
        } else {
            derives.push("PartialOrd");
        }
        let _ = writeln!(out, "{ind}#[derive({})]", derives.join(", "));
        let _ = writeln!(out, "{ind}pub struct {name} {{");
        for f in &m.fields {
            let mut fdoc = vec![format!("`{}`", self.describe_field_type(f))];
            if let Some(v) = &f.default {
                fdoc[0].push_str(&format!(", default `{}`", doc_value(v)));
            }
            if !f.doc.is_empty() {
                fdoc.push(String::new());
                fdoc.extend(f.doc.iter().cloned());
            }
            doc_attr(out, "            ", &fdoc);
            let _ = writeln!(
                out,
                "            pub {}: {},",
                field_ident(&f.name),
                self.field_type(f)
            );
        }
        let _ = writeln!(out, "{ind}}}");

        // Default
        let _ = writeln!(out, "{ind}impl ::core::default::Default for {name} {{\n{ind}    fn default() -> Self {{\n{ind}        Self {{");
        field_inits(out, m, |f| self.default_expr(f));
        let _ = writeln!(out, "{ind}        }}\n{ind}    }}\n{ind}}}");

        // Constants
        if !m.constants.is_empty() {
            let _ = writeln!(out, "{ind}impl {name} {{");
            for c in &m.constants {
                let (ty, value) = match &c.ty {
                    BaseType::String(_) | BaseType::WString(_) => (
                        "&'static str".to_string(),
                        match &c.value {
                            Value::String(s) => format!("{s:?}"),
                            other => unreachable!("string constant with value {other:?}"),
                        },
                    ),
                    BaseType::Primitive(p) => (p.rust().to_string(), literal(*p, &c.value)),
                    BaseType::Nested(_) => unreachable!("the parser refuses message constants"),
                };
                let mut cdoc = vec![format!("`{} = {}`", c.name, doc_value(&c.value))];
                if !c.doc.is_empty() {
                    cdoc.push(String::new());
                    cdoc.extend(c.doc.iter().cloned());
                }
                doc_attr(out, "            ", &cdoc);
                let _ = writeln!(out, "            pub const {}: {ty} = {value};", c.name);
            }
            let _ = writeln!(out, "{ind}}}");
        }

        // Message
        let _ = writeln!(out, "{ind}impl {rt}::Message for {name} {{");
        self.emit_identity(out, &m.name);
        // `#[inline]` on both: a nested message's encode/decode is a few writes, called once
        // per element of a sequence. Without it the calls stay out of line, across codegen
        // units and crates; `benches/cdr.rs` measured `nav_msgs/Path` (1,000 poses) 1.2-1.6x
        // slower to encode and decode that way.
        let _ = writeln!(out, "{ind}    #[inline]");
        let _ = writeln!(out, "{ind}    fn encode_cdr(&self, w: &mut {rt}::cdr::CdrWriter<'_>) -> ::core::result::Result<(), {rt}::cdr::CdrError> {{");
        if m.fields.is_empty() {
            let _ = writeln!(out, "{ind}        w.write_u8(0);");
        }
        for f in &m.fields {
            let _ = writeln!(out, "{ind}        {}", self.encode_stmt(f));
        }
        let _ = writeln!(
            out,
            "{ind}        ::core::result::Result::Ok(())\n{ind}    }}"
        );
        let _ = writeln!(out, "{ind}    #[inline]");
        let _ = writeln!(out, "{ind}    fn decode_cdr(r: &mut {rt}::cdr::CdrReader<'_>) -> ::core::result::Result<Self, {rt}::cdr::CdrError> {{");
        if m.fields.is_empty() {
            let _ = writeln!(out, "{ind}        r.read_u8()?;");
        }
        let _ = writeln!(out, "{ind}        ::core::result::Result::Ok(Self {{");
        field_inits(out, m, |f| self.decode_expr(f));
        let _ = writeln!(out, "{ind}        }})\n{ind}    }}\n{ind}}}");
    }

    /// TYPE_NAME, TYPE_HASH, TYPE_DESCRIPTION and TYPE_SOURCES (and DDS_TYPE_NAME for
    /// structs).
    fn emit_identity(&self, out: &mut String, t: &TypeName) {
        let rt = &self.paths.runtime;
        let ind = "            ";
        let _ = writeln!(
            out,
            "{ind}const TYPE_NAME: &'static str = {:?};",
            t.to_string()
        );
        if self.kinds[t] == Kind::Struct {
            let _ = writeln!(
                out,
                "{ind}const DDS_TYPE_NAME: &'static str = {:?};",
                t.dds_name()
            );
        }
        let d: Description = self.set.description(t).expect("a type of the set");
        let hash = describe::rihs01(&d);
        let bytes: Vec<String> = hash.iter().map(|b| format!("0x{b:02x}")).collect();
        let _ = writeln!(
            out,
            "{ind}const TYPE_HASH: {rt}::TypeHash = {rt}::TypeHash([{}]);",
            bytes.join(", ")
        );
        let _ = write!(
            out,
            "{ind}const TYPE_DESCRIPTION: {rt}::TypeDescription = {rt}::TypeDescription {{\n{ind}    type_description: {},\n{ind}    referenced_type_descriptions: &[",
            self.individual_literal(&d.type_description)
        );
        for r in &d.referenced_type_descriptions {
            let _ = write!(
                out,
                "{}.type_description, ",
                self.referenced_const(r, "TYPE_DESCRIPTION")
            );
        }
        let _ = writeln!(out, "],\n{ind}}};");

        // The type's own source holds its file's text; every other type's source is that
        // type's own, taken from its constant, so that each file's text is written once.
        let m = &self.set.types[t];
        let _ = write!(
            out,
            "{ind}const TYPE_SOURCES: &'static [{rt}::TypeSource] = &[{rt}::TypeSource {{ type_name: {:?}, encoding: {:?}, raw_file_contents: {:?} }}, ",
            t.to_string(),
            m.source_encoding(),
            m.source_text.as_deref().unwrap_or_default()
        );
        for r in &d.referenced_type_descriptions {
            let _ = write!(out, "{}[0], ", self.referenced_const(r, "TYPE_SOURCES"));
        }
        let _ = writeln!(out, "];");
    }

    /// An expression for the constant `name` (`TYPE_DESCRIPTION`, `TYPE_SOURCES`) of a
    /// referenced type: the generated type's, through the trait its kind implements.
    fn referenced_const(&self, r: &IndividualDescription, name: &str) -> String {
        let rt = &self.paths.runtime;
        let t = self
            .set
            .get(&r.type_name)
            .map(|m| m.name.clone())
            .expect("referenced types are in the set");
        let trait_name = match self.kinds[&t] {
            Kind::Struct => "Message",
            Kind::Service => "ServiceType",
            Kind::Action => "ActionType",
        };
        format!("<{} as {rt}::{trait_name}>::{name}", self.path(&t))
    }

    fn individual_literal(&self, d: &IndividualDescription) -> String {
        let rt = &self.paths.runtime;
        let mut s = format!(
            "{rt}::IndividualTypeDescription {{ type_name: {:?}, fields: &[",
            d.type_name
        );
        for f in &d.fields {
            let _ = write!(
                s,
                "{rt}::FieldDescription {{ name: {:?}, type_id: {}, capacity: {}, string_capacity: {}, nested_type_name: {:?}, default_value: {:?} }}, ",
                f.name, f.type_id, f.capacity, f.string_capacity, f.nested_type_name, f.default_value
            );
        }
        s.push_str("] }");
        s
    }

    fn emit_service(&self, out: &mut String, t: &TypeName, doc: &[String]) {
        let rt = &self.paths.runtime;
        let ind = "        ";
        let mut d = vec![format!("`{t}`: a service type.")];
        if !doc.is_empty() {
            d.push(String::new());
            d.extend(doc.iter().cloned());
        }
        doc_attr(out, ind, &d);
        let name = &t.name;
        let _ = writeln!(out, "{ind}#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]\n{ind}pub struct {name};");
        let _ = writeln!(out, "{ind}impl {rt}::ServiceType for {name} {{");
        let _ = writeln!(
            out,
            "{ind}    type Request = {name}_Request;\n{ind}    type Response = {name}_Response;"
        );
        self.emit_identity(out, t);
        let _ = writeln!(out, "{ind}}}");
    }

    fn emit_action(&self, out: &mut String, t: &TypeName, doc: &[String]) {
        let rt = &self.paths.runtime;
        let ind = "        ";
        let mut d = vec![format!("`{t}`: an action type.")];
        if !doc.is_empty() {
            d.push(String::new());
            d.extend(doc.iter().cloned());
        }
        doc_attr(out, ind, &d);
        let n = &t.name;
        let uuid = self.path(&crate::resolve::uuid());
        let time = self.path(&crate::resolve::time());
        let _ = writeln!(out, "{ind}#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]\n{ind}pub struct {n};");
        let _ = writeln!(
            out,
            "{ind}impl {rt}::ActionType for {n} {{
{ind}    type Goal = {n}_Goal;
{ind}    type Result = {n}_Result;
{ind}    type Feedback = {n}_Feedback;
{ind}    type SendGoal = {n}_SendGoal;
{ind}    type GetResult = {n}_GetResult;
{ind}    type FeedbackMessage = {n}_FeedbackMessage;"
        );
        self.emit_identity(out, t);
        let _ = writeln!(
            out,
            "{ind}    fn send_goal_request(goal_id: {uuid}, goal: {n}_Goal) -> {n}_SendGoal_Request {{ {n}_SendGoal_Request {{ goal_id, goal }} }}
{ind}    fn split_send_goal_request(request: {n}_SendGoal_Request) -> ({uuid}, {n}_Goal) {{ (request.goal_id, request.goal) }}
{ind}    fn send_goal_response(accepted: bool, stamp: {time}) -> {n}_SendGoal_Response {{ {n}_SendGoal_Response {{ accepted, stamp }} }}
{ind}    fn split_send_goal_response(response: &{n}_SendGoal_Response) -> (bool, {time}) {{ (response.accepted, response.stamp) }}
{ind}    fn get_result_request(goal_id: {uuid}) -> {n}_GetResult_Request {{ {n}_GetResult_Request {{ goal_id }} }}
{ind}    fn get_result_request_goal_id(request: &{n}_GetResult_Request) -> {uuid} {{ request.goal_id }}
{ind}    fn get_result_response(status: i8, result: {n}_Result) -> {n}_GetResult_Response {{ {n}_GetResult_Response {{ status, result }} }}
{ind}    fn split_get_result_response(response: {n}_GetResult_Response) -> (i8, {n}_Result) {{ (response.status, response.result) }}
{ind}    fn feedback_message(goal_id: {uuid}, feedback: {n}_Feedback) -> {n}_FeedbackMessage {{ {n}_FeedbackMessage {{ goal_id, feedback }} }}
{ind}    fn feedback_message_parts(message: &{n}_FeedbackMessage) -> (&{uuid}, &{n}_Feedback) {{ (&message.goal_id, &message.feedback) }}
{ind}}}"
        );
    }

    fn describe_field_type(&self, f: &Field) -> String {
        let base = match &f.ty.base {
            BaseType::Primitive(p) => format!("{p:?}").to_lowercase(),
            BaseType::String(None) => "string".into(),
            BaseType::String(Some(b)) => format!("string<={b}"),
            BaseType::WString(None) => "wstring".into(),
            BaseType::WString(Some(b)) => format!("wstring<={b}"),
            BaseType::Nested(t) => t.to_string(),
        };
        match f.ty.container {
            Container::Single => base,
            Container::Array(n) => format!("{base}[{n}]"),
            Container::Bounded(n) => format!("{base}[<={n}]"),
            Container::Unbounded => format!("{base}[]"),
        }
    }

    fn default_expr(&self, f: &Field) -> String {
        let element = |v: &Value| match &f.ty.base {
            BaseType::Primitive(p) => literal(*p, v),
            BaseType::String(_) | BaseType::WString(_) => match v {
                Value::String(s) => format!("::std::string::String::from({s:?})"),
                other => unreachable!("string default {other:?}"),
            },
            BaseType::Nested(_) => unreachable!("the parser refuses message defaults"),
        };
        match (&f.default, f.ty.container) {
            (Some(Value::Array(items)), Container::Array(_)) => {
                let v: Vec<String> = items.iter().map(element).collect();
                format!("[{}]", v.join(", "))
            }
            (Some(Value::Array(items)), _) => {
                let v: Vec<String> = items.iter().map(element).collect();
                format!("::std::vec![{}]", v.join(", "))
            }
            (Some(v), _) => element(v),
            (None, Container::Array(n)) => match &f.ty.base {
                BaseType::Primitive(p) => format!("[{}; {n}]", zero(*p)),
                _ => "::core::array::from_fn(|_| ::core::default::Default::default())".into(),
            },
            (None, _) => "::core::default::Default::default()".into(),
        }
    }

    fn encode_stmt(&self, f: &Field) -> String {
        let rt = &self.paths.runtime;
        let id = field_ident(&f.name);
        let sb = |b: &Option<u64>| bound(*b);
        match (&f.ty.base, f.ty.container) {
            (BaseType::Primitive(Primitive::Bool), Container::Single) => {
                format!("w.write_bool(self.{id});")
            }
            (BaseType::Primitive(p), Container::Single) => {
                format!("w.write_{}(self.{id});", p.rust())
            }
            (BaseType::String(b), Container::Single) => {
                format!("w.write_string(&self.{id}, {})?;", sb(b))
            }
            (BaseType::WString(b), Container::Single) => {
                format!("w.write_wstring(&self.{id}, {})?;", sb(b))
            }
            (BaseType::Nested(_), Container::Single) => {
                format!("{rt}::Message::encode_cdr(&self.{id}, w)?;")
            }
            (BaseType::Primitive(Primitive::Bool), Container::Array(_)) => {
                format!("w.write_bool_array(&self.{id});")
            }
            (BaseType::Primitive(_), Container::Array(_)) => format!("w.write_array(&self.{id});"),
            (BaseType::String(b), Container::Array(_)) => {
                format!("w.write_string_array(&self.{id}, {})?;", sb(b))
            }
            (BaseType::WString(b), Container::Array(_)) => {
                format!("w.write_wstring_array(&self.{id}, {})?;", sb(b))
            }
            (BaseType::Nested(_), Container::Array(_)) => {
                format!("{rt}::encode_messages(&self.{id}, w)?;")
            }
            (base, c) => {
                let len_bound = bound(match c {
                    Container::Bounded(n) => Some(n),
                    _ => None,
                });
                match base {
                    BaseType::Primitive(Primitive::Bool) => {
                        format!("w.write_bool_sequence(&self.{id}, {len_bound})?;")
                    }
                    BaseType::Primitive(_) => {
                        format!("w.write_sequence(&self.{id}, {len_bound})?;")
                    }
                    BaseType::String(b) => format!(
                        "w.write_string_sequence(&self.{id}, {len_bound}, {})?;",
                        sb(b)
                    ),
                    BaseType::WString(b) => format!(
                        "w.write_wstring_sequence(&self.{id}, {len_bound}, {})?;",
                        sb(b)
                    ),
                    BaseType::Nested(_) => {
                        format!("{rt}::encode_message_sequence(&self.{id}, {len_bound}, w)?;")
                    }
                }
            }
        }
    }

    fn decode_expr(&self, f: &Field) -> String {
        let rt = &self.paths.runtime;
        let sb = |b: &Option<u64>| bound(*b);
        match (&f.ty.base, f.ty.container) {
            (BaseType::Primitive(Primitive::Bool), Container::Single) => "r.read_bool()?".into(),
            (BaseType::Primitive(p), Container::Single) => format!("r.read_{}()?", p.rust()),
            (BaseType::String(b), Container::Single) => format!("r.read_string({})?", sb(b)),
            (BaseType::WString(b), Container::Single) => format!("r.read_wstring({})?", sb(b)),
            (BaseType::Nested(t), Container::Single) => {
                format!("<{} as {rt}::Message>::decode_cdr(r)?", self.path(t))
            }
            (BaseType::Primitive(Primitive::Bool), Container::Array(n)) => {
                format!("r.read_bool_array::<{n}>()?")
            }
            (BaseType::Primitive(p), Container::Array(n)) => {
                format!("r.read_array::<{}, {n}>()?", p.rust())
            }
            (BaseType::String(b), Container::Array(n)) => {
                format!("r.read_string_array::<{n}>({})?", sb(b))
            }
            (BaseType::WString(b), Container::Array(n)) => {
                format!("r.read_wstring_array::<{n}>({})?", sb(b))
            }
            (BaseType::Nested(t), Container::Array(n)) => {
                format!("{rt}::decode_message_array::<{}, {n}>(r)?", self.path(t))
            }
            (base, c) => {
                let len_bound = bound(match c {
                    Container::Bounded(n) => Some(n),
                    _ => None,
                });
                match base {
                    BaseType::Primitive(Primitive::Bool) => {
                        format!("r.read_bool_sequence({len_bound})?")
                    }
                    BaseType::Primitive(p) => {
                        format!("r.read_sequence::<{}>({len_bound})?", p.rust())
                    }
                    BaseType::String(b) => {
                        format!("r.read_string_sequence({len_bound}, {})?", sb(b))
                    }
                    BaseType::WString(b) => {
                        format!("r.read_wstring_sequence({len_bound}, {})?", sb(b))
                    }
                    BaseType::Nested(t) => format!(
                        "{rt}::decode_message_sequence::<{}>(r, {len_bound})?",
                        self.path(t)
                    ),
                }
            }
        }
    }
}

/// Whether struct `t` can derive `Copy` (no strings or sequences anywhere inside) and
/// `Eq`/`Hash`/`Ord` (no floats anywhere inside); memoized in `memo`.
fn derivable_traits(
    set: &TypeSet,
    t: &TypeName,
    memo: &mut BTreeMap<TypeName, (bool, bool)>,
) -> (bool, bool) {
    if let Some(&known) = memo.get(t) {
        return known;
    }
    let (mut copy, mut eq) = (true, true);
    for f in &set.types[t].fields {
        if matches!(f.ty.container, Container::Bounded(_) | Container::Unbounded) {
            copy = false;
        }
        match &f.ty.base {
            BaseType::Primitive(p) => eq &= !p.is_float(),
            BaseType::String(_) | BaseType::WString(_) => copy = false,
            BaseType::Nested(n) => {
                let (c, e) = derivable_traits(set, n, memo);
                copy &= c;
                eq &= e;
            }
        }
    }
    memo.insert(t.clone(), (copy, eq));
    (copy, eq)
}

/// The `name: value,` lines of a struct literal of `m`, one per field.
fn field_inits(out: &mut String, m: &Message, value: impl Fn(&Field) -> String) {
    for f in &m.fields {
        let _ = writeln!(
            out,
            "                    {}: {},",
            field_ident(&f.name),
            value(f)
        );
    }
}

/// `1 service`, `2 services`.
fn count(n: usize, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

fn zero(p: Primitive) -> &'static str {
    match p {
        Primitive::Bool => "false",
        Primitive::Float32 => "0.0f32",
        Primitive::Float64 => "0.0f64",
        _ => "0",
    }
}

/// A Rust literal of primitive type `p`.
fn literal(p: Primitive, v: &Value) -> String {
    match (p, v) {
        (Primitive::Bool, Value::Bool(b)) => b.to_string(),
        (Primitive::Float32, Value::Float(f)) => float_literal(*f as f32, "f32"),
        (Primitive::Float64, Value::Float(f)) => float_literal(*f, "f64"),
        (_, Value::Int(i)) => format!("{i}{}", p.rust()),
        (p, v) => unreachable!("the parser gives {p:?} no value {v:?}"),
    }
}

fn float_literal<F: Into<f64> + std::fmt::Debug + Copy>(value: F, ty: &str) -> String {
    let f: f64 = value.into();
    if f.is_nan() {
        format!("{ty}::NAN")
    } else if f.is_infinite() {
        format!("{ty}::{}INFINITY", if f < 0.0 { "NEG_" } else { "" })
    } else {
        format!("{value:?}{ty}")
    }
}
