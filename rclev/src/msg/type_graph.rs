//! A type description as a checked graph: each nested field resolved to the index of its type,
//! no type containing itself, and the types in an order where each comes after every type it
//! contains, so that a size, a depth or a default is computed once per type (memoised), never
//! once per path — a "diamond" (each type holding two fields of the next) has 2^depth paths.
//!
//! Ground rules, for descriptions from outside (a peer, a bag, an installed file):
//! - building the graph is iterative (an explicit stack, never recursion on the description's
//!   depth) and linear in the description's size;
//! - it enforces [`TypeLimits`] before anything else is built from the description, so the
//!   walks over a message's values that do recurse (decode, encode, defaults) recurse at most
//!   [`TypeLimits::max_depth`] levels;
//! - every type has a field and every fixed array an element, as rosidl requires: each value
//!   then takes at least one byte on the wire, so decoding does work linear in the bytes it
//!   is given, whatever the type's shape.
//!
//! Index 0 is the type itself; index `i > 0` is `referenced_type_descriptions[i - 1]`.

use std::collections::HashMap;

use super::description::{FieldDescription, IndividualTypeDescription, TypeDescription};
use super::limits::TypeLimits;
use crate::base::error::{Error, Result};
use crate::base::text::printable;
use crate::interfaces::type_description_interfaces::msg as td;

/// What the graph needs of a field, in either form a description comes in (the generated
/// `'static` tables, or the `type_description_interfaces` message a peer sends).
pub(crate) trait FieldLike {
    fn name(&self) -> &str;
    /// REP-2016: the element's id plus 48 (array), 96 (bounded) or 144 (unbounded sequence).
    fn type_id(&self) -> u8;
    fn capacity(&self) -> u64;
    fn nested_type_name(&self) -> &str;
    /// The bytes of text the field holds (names and default value).
    fn text_len(&self) -> usize;
}

impl FieldLike for FieldDescription {
    fn name(&self) -> &str {
        self.name
    }
    fn type_id(&self) -> u8 {
        self.type_id
    }
    fn capacity(&self) -> u64 {
        self.capacity
    }
    fn nested_type_name(&self) -> &str {
        self.nested_type_name
    }
    fn text_len(&self) -> usize {
        self.name.len() + self.nested_type_name.len() + self.default_value.len()
    }
}

/// REP-2016's id of a nested message element.
const NESTED: u8 = 1;
/// The highest element id REP-2016 defines (`wstring<=N`).
const LAST_ELEMENT: u8 = 22;
/// A field whose element is not a nested type.
const NONE: u32 = u32::MAX;

/// A checked description's shape; see the module docs.
#[derive(Debug, Clone)]
pub(crate) struct TypeGraph {
    /// Type `t`'s fields are `first_field[t]..first_field[t + 1]` of `target`.
    first_field: Vec<u32>,
    /// Per field, the index of its nested type, or [`NONE`].
    target: Vec<u32>,
    /// The types the root reaches (itself included), each after every type it contains.
    order: Vec<u32>,
    /// The root's nesting depth (1: no nested message).
    depth: usize,
}

impl TypeGraph {
    /// The graph of a generated (or leaked) description.
    pub(crate) fn of_description(d: &TypeDescription, limits: &TypeLimits) -> Result<Self> {
        let types: Vec<(&str, &[FieldDescription])> =
            types_of(d).map(|t| (t.type_name, t.fields)).collect();
        Self::build(&types, limits)
    }

    /// Checks `types` (the root first) against `limits` and resolves it.
    pub(crate) fn build<F: FieldLike>(types: &[(&str, &[F])], limits: &TypeLimits) -> Result<Self> {
        let root = types.first().map(|(name, _)| *name).unwrap_or_default();
        if types.len() > limits.max_types {
            return Err(over_limit(
                root,
                "max_types",
                limits.max_types,
                format!("{} types", types.len()),
            ));
        }
        let fields: usize = types.iter().map(|(_, f)| f.len()).sum();
        if fields > limits.max_fields {
            return Err(over_limit(
                root,
                "max_fields",
                limits.max_fields,
                format!("{fields} fields"),
            ));
        }
        let bytes: usize = types
            .iter()
            .map(|(name, f)| name.len() + f.iter().map(FieldLike::text_len).sum::<usize>())
            .sum();
        if bytes > limits.max_bytes {
            return Err(over_limit(
                root,
                "max_bytes",
                limits.max_bytes,
                format!("{bytes} bytes of names and defaults"),
            ));
        }
        let mut index: HashMap<&str, u32> = HashMap::with_capacity(types.len());
        for (i, (name, _)) in types.iter().enumerate() {
            if index.insert(name, i as u32).is_some() {
                return Err(invalid(root, format!("{} is described twice", shown(name))));
            }
        }
        let mut first_field = Vec::with_capacity(types.len() + 1);
        let mut target = Vec::with_capacity(fields);
        for (name, type_fields) in types {
            first_field.push(target.len() as u32);
            if type_fields.is_empty() {
                // rosidl gives a struct without members a placeholder member.
                return Err(invalid(root, format!("{} has no fields", shown(name))));
            }
            for f in type_fields.iter() {
                target.push(resolve(root, name, f, &index)?);
            }
        }
        first_field.push(target.len() as u32);
        let mut graph = Self {
            first_field,
            target,
            order: Vec::new(),
            depth: 0,
        };
        graph.sort(types, limits)?;
        Ok(graph)
    }

    /// Depth-first from the root with an explicit stack: fills `order` (post order) and
    /// `depth`; a type met again while it is still open closes a cycle.
    fn sort<F>(&mut self, types: &[(&str, &[F])], limits: &TypeLimits) -> Result<()> {
        const NEW: u8 = 0;
        const OPEN: u8 = 1;
        const DONE: u8 = 2;
        let mut state = vec![NEW; types.len()];
        let mut depth = vec![0usize; types.len()];
        // (type, the next of its fields to look at)
        let mut stack: Vec<(u32, u32)> = vec![(0, self.first_field[0])];
        state[0] = OPEN;
        while let Some(&mut (t, ref mut next)) = stack.last_mut() {
            let end = self.first_field[t as usize + 1];
            let mut child = NONE;
            while *next < end && child == NONE {
                let target = self.target[*next as usize];
                *next += 1;
                if target != NONE && state[target as usize] != DONE {
                    child = target;
                }
            }
            if child == NONE {
                stack.pop();
                let fields = self.first_field[t as usize]..end;
                let deepest = self.target[fields.start as usize..fields.end as usize]
                    .iter()
                    .filter(|&&c| c != NONE)
                    .map(|&c| depth[c as usize])
                    .max()
                    .unwrap_or(0);
                depth[t as usize] = deepest + 1;
                if depth[t as usize] > limits.max_depth {
                    return Err(over_limit(
                        types[0].0,
                        "max_depth",
                        limits.max_depth,
                        format!("more than {} levels of nested messages", limits.max_depth),
                    ));
                }
                state[t as usize] = DONE;
                self.order.push(t);
            } else if state[child as usize] == OPEN {
                let at = stack.iter().position(|&(s, _)| s == child).unwrap_or(0);
                let cycle: Vec<&str> = stack[at..]
                    .iter()
                    .map(|&(s, _)| types[s as usize].0)
                    .chain([types[child as usize].0])
                    .collect();
                return Err(invalid(
                    types[0].0,
                    format!(
                        "{} contains itself: {}",
                        shown(types[child as usize].0),
                        shown_chain(&cycle)
                    ),
                ));
            } else {
                state[child as usize] = OPEN;
                stack.push((child, self.first_field[child as usize]));
            }
        }
        self.depth = depth[0];
        Ok(())
    }

    /// How many types the description holds.
    pub(crate) fn len(&self) -> usize {
        self.first_field.len() - 1
    }

    /// How many fields all of them have.
    #[cfg(test)]
    pub(crate) fn fields(&self) -> usize {
        self.target.len()
    }

    /// The root's nesting depth: 1 for a type with no nested message.
    #[cfg(test)]
    pub(crate) fn depth(&self) -> usize {
        self.depth
    }

    /// The types the root reaches, each after every type it contains.
    pub(crate) fn order(&self) -> &[u32] {
        &self.order
    }

    /// The index of the type field `field` of type `t` nests, if it nests one.
    pub(crate) fn nested(&self, t: usize, field: usize) -> Option<usize> {
        let target = self.target[self.first_field[t] as usize + field];
        (target != NONE).then_some(target as usize)
    }
}

/// The checks of [`TypeLimits`], which build the graph and drop it.
impl TypeLimits {
    /// Checks `description` against these limits, and that it is a type at all: every
    /// nested type it names is among its references, once, no type contains itself, every
    /// type id is one REP-2016 defines, every type has a field and every array an element.
    /// Linear in the description's size.
    pub fn check(&self, description: &TypeDescription) -> Result<()> {
        TypeGraph::of_description(description, self).map(drop)
    }

    /// [`check`](Self::check) for a description as the `type_description_interfaces` message
    /// carries it (what a peer's `~/get_type_description` answers), before anything is made
    /// of it.
    pub fn check_message(&self, description: &td::TypeDescription) -> Result<()> {
        let types: Vec<(&str, &[td::Field])> = std::iter::once(&description.type_description)
            .chain(&description.referenced_type_descriptions)
            .map(|d| (d.type_name.as_str(), d.fields.as_slice()))
            .collect();
        TypeGraph::build(&types, self).map(drop)
    }
}

impl FieldLike for td::Field {
    fn name(&self) -> &str {
        &self.name
    }
    fn type_id(&self) -> u8 {
        self.r#type.type_id
    }
    fn capacity(&self) -> u64 {
        self.r#type.capacity
    }
    fn nested_type_name(&self) -> &str {
        &self.r#type.nested_type_name
    }
    fn text_len(&self) -> usize {
        self.name.len() + self.r#type.nested_type_name.len() + self.default_value.len()
    }
}

/// An [`Error::TypeOverLimit`].
pub(crate) fn over_limit(type_name: &str, limit: &'static str, max: usize, what: String) -> Error {
    Error::TypeOverLimit {
        type_name: shown(type_name),
        limit,
        max,
        what,
    }
}

/// The individual descriptions of `d` in graph order: the type itself, then its references.
pub(crate) fn types_of(d: &TypeDescription) -> impl Iterator<Item = &IndividualTypeDescription> {
    std::iter::once(&d.type_description).chain(d.referenced_type_descriptions)
}

/// The nested type a field names, resolved; [`NONE`] for a field of another element.
fn resolve<F: FieldLike>(
    root: &str,
    type_name: &str,
    f: &F,
    index: &HashMap<&str, u32>,
) -> Result<u32> {
    let (container, element) = (f.type_id() / 48, f.type_id() % 48);
    let field = || format!("{}.{}", shown(type_name), shown(f.name()));
    if container > 3 || element == 0 || element > LAST_ELEMENT {
        return Err(invalid(
            root,
            format!(
                "{}: type id {} is not one REP-2016 defines",
                field(),
                f.type_id()
            ),
        ));
    }
    if container == 1 && f.capacity() == 0 {
        return Err(invalid(
            root,
            format!("{}: an array of no elements", field()),
        ));
    }
    if element != NESTED {
        return Ok(NONE);
    }
    index.get(f.nested_type_name()).copied().ok_or_else(|| {
        invalid(
            root,
            format!(
                "{} is of type {}, which the description lacks",
                field(),
                shown(f.nested_type_name())
            ),
        )
    })
}

fn invalid(type_name: &str, reason: String) -> Error {
    Error::InvalidType {
        type_name: shown(type_name),
        reason,
    }
}

/// The most characters of a name from outside an error message quotes.
const SHOWN_CHARS: usize = 100;

/// A name from outside as an error shows it: escaped and cut (see [`printable`]).
pub(crate) fn shown(name: &str) -> String {
    printable(name, SHOWN_CHARS).into_owned()
}

/// A chain of names, at most the first three and the last two with a count between.
fn shown_chain(names: &[&str]) -> String {
    let show = |names: &[&str]| {
        names
            .iter()
            .map(|n| shown(n))
            .collect::<Vec<_>>()
            .join(" -> ")
    };
    if names.len() <= 6 {
        show(names)
    } else {
        format!(
            "{} -> … {} more … -> {}",
            show(&names[..3]),
            names.len() - 5,
            show(&names[names.len() - 2..])
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(name: &'static str, type_id: u8, nested: &'static str) -> FieldDescription {
        FieldDescription {
            name,
            type_id,
            capacity: if type_id / 48 == 1 { 2 } else { 0 },
            string_capacity: 0,
            nested_type_name: nested,
            default_value: "",
        }
    }

    fn graph(types: &[(&'static str, Vec<FieldDescription>)]) -> Result<TypeGraph> {
        let types: Vec<(&str, &[FieldDescription])> =
            types.iter().map(|(n, f)| (*n, f.as_slice())).collect();
        TypeGraph::build(&types, &TypeLimits::DEFAULT)
    }

    #[test]
    fn order_puts_each_type_after_what_it_contains() {
        let g = graph(&[
            (
                "p/msg/A",
                vec![field("b", 1, "p/msg/B"), field("c", 1 + 48, "p/msg/C")],
            ),
            ("p/msg/B", vec![field("c", 1, "p/msg/C")]),
            ("p/msg/C", vec![field("x", 3, "")]),
            ("p/msg/Unused", vec![field("x", 3, "")]),
        ])
        .unwrap();
        assert_eq!(g.order(), &[2, 1, 0]);
        assert_eq!((g.depth(), g.len(), g.fields()), (3, 4, 5));
        assert_eq!(g.nested(0, 1), Some(2));
        assert_eq!(g.nested(2, 0), None);
    }

    #[test]
    fn malformed_descriptions_are_refused_with_reasons() {
        let reason = |types: &[(&'static str, Vec<FieldDescription>)]| match graph(types) {
            Err(Error::InvalidType { reason, .. }) => reason,
            other => panic!("{other:?}"),
        };
        let cycle = reason(&[
            ("p/msg/A", vec![field("b", 1, "p/msg/B")]),
            ("p/msg/B", vec![field("a", 1 + 144, "p/msg/A")]),
        ]);
        assert_eq!(
            cycle,
            "p/msg/A contains itself: p/msg/A -> p/msg/B -> p/msg/A"
        );
        assert!(reason(&[("p/msg/A", vec![field("a", 1, "p/msg/A")])]).contains("contains itself"));
        assert!(reason(&[("p/msg/A", vec![field("b", 1, "p/msg/B")])]).contains("lacks"));
        assert!(reason(&[("p/msg/A", vec![])]).contains("no fields"));
        assert!(reason(&[("p/msg/A", vec![field("x", 12 + 4 * 48, "")])]).contains("type id"));
        assert!(reason(&[("p/msg/A", vec![field("x", 0, "")])]).contains("type id"));
        let mut empty_array = field("x", 3 + 48, "");
        empty_array.capacity = 0;
        assert!(reason(&[("p/msg/A", vec![empty_array])]).contains("no elements"));
        assert!(reason(&[
            ("p/msg/A", vec![field("x", 3, "")]),
            ("p/msg/A", vec![field("x", 3, "")]),
        ])
        .contains("twice"));
    }

    #[test]
    fn names_from_outside_are_shown_escaped_and_cut() {
        assert_eq!(shown("a\u{1b}[2Jb\n\u{7}\0"), "a\\u{1b}[2Jb\\n\\u{7}\\u{0}");
        assert_eq!(shown("x\u{202e}y"), "x\\u{202e}y");
        assert_eq!(shown("pkg/msg/Größe"), "pkg/msg/Größe");
        let long = "a".repeat(5000);
        assert_eq!(shown(&long).chars().count(), SHOWN_CHARS + 1);
        let names: Vec<String> = (0..5000).map(|i| format!("p/msg/T{i}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let chain = shown_chain(&refs);
        assert!(chain.len() < 120, "{chain}");
        assert!(chain.contains("4995 more"), "{chain}");
    }
}
