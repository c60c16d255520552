//! The bound of a type's CDR encoding, computed once per type over its checked graph: what a
//! wire transport refuses a longer sample by, before decoding it.

use super::description::{FieldDescription, IndividualTypeDescription, TypeDescription, TypeInfo};
use super::type_graph::{types_of, TypeGraph};

impl TypeInfo {
    /// An upper bound of the length of the type's CDR encoding, encapsulation header and
    /// padding included; `None` when the type holds an unbounded string or sequence (see
    /// [`TypeDescription::max_serialized_size`]).
    pub fn max_serialized_size(&self) -> Option<usize> {
        self.description.max_serialized_size()
    }
}

/// Slack for what a peer may add after the body: CDR's padding to a 4-byte multiple, which
/// ROS 2 peers send, and a little more.
pub(crate) const TRAILING_SLACK: usize = 8;
/// The encapsulation header before the body.
pub(crate) const ENCAPSULATION: usize = 4;
/// The most alignment padding CDR puts before one value.
const MAX_PADDING: usize = 7;

impl TypeDescription {
    /// An upper bound of the length of the type's CDR encoding, encapsulation header and
    /// padding included; `None` when the type holds an unbounded string or sequence, or is not
    /// a type rclev accepts (see [`TypeLimits`](super::TypeLimits)). A wire transport refuses
    /// a sample longer than this without decoding it, as ROS 2's typesupport refuses one
    /// longer than a bounded type's maximum: no valid encoding is that long.
    ///
    /// Not exact: every value is counted with the most padding it could need. Linear in the
    /// description's size: each type's bound is computed once, however many paths reach it.
    pub fn max_serialized_size(&self) -> Option<usize> {
        let graph = TypeGraph::of_description(self, &super::limits::TypeLimits::DEFAULT).ok()?;
        max_body_size(self, &graph)?.checked_add(ENCAPSULATION + TRAILING_SLACK)
    }
}

/// The bound of the root's CDR body: each type's bound from those of the types it contains,
/// in the graph's order.
pub(crate) fn max_body_size(d: &TypeDescription, graph: &TypeGraph) -> Option<usize> {
    let types: Vec<&IndividualTypeDescription> = types_of(d).collect();
    // `None` while not computed or unbounded; every type is computed after those it contains.
    let mut bound: Vec<Option<usize>> = vec![None; types.len()];
    for &t in graph.order() {
        let t = t as usize;
        let mut sum = Some(0usize);
        for (i, f) in types[t].fields.iter().enumerate() {
            let element = match graph.nested(t, i) {
                Some(nested) => bound[nested],
                None => element_max(f.type_id % 48, f.string_capacity),
            };
            sum = sum.and_then(|s| s.checked_add(field_max(f, element?)?));
        }
        bound[t] = sum;
    }
    bound[0]
}

fn field_max(f: &FieldDescription, element: usize) -> Option<usize> {
    // REP-2016 type ids: the element's id plus 48 (array), 96 (bounded sequence) or 144
    // (unbounded sequence).
    let one = element.checked_add(MAX_PADDING)?;
    let count = usize::try_from(f.capacity).ok()?;
    match f.type_id / 48 {
        0 => Some(one),
        1 => one.checked_mul(count),
        // The u32 length (padded), then the elements.
        2 => one.checked_mul(count)?.checked_add(4 + MAX_PADDING),
        _ => None,
    }
}

/// The bound of one element that is not a nested message.
fn element_max(element: u8, string_capacity: u64) -> Option<usize> {
    let string_capacity = usize::try_from(string_capacity).ok()?;
    match element {
        // int8, uint8, char, bool, byte
        2 | 3 | 13 | 15 | 16 => Some(1),
        4 | 5 => Some(2),
        // int32, uint32, float32, wchar
        6 | 7 | 10 | 14 => Some(4),
        8 | 9 | 11 => Some(8),
        // long double
        12 => Some(16),
        // Bounded and fixed strings: a u32 length, the bytes and a NUL.
        19 | 21 => string_capacity.checked_add(4 + 1),
        // Bounded and fixed wstrings: a u32 count, then four bytes per UTF-16 unit (ROS 2
        // Jazzy's layout; the two-byte layouts of other stacks are shorter).
        20 | 22 => string_capacity
            .checked_add(1)?
            .checked_mul(4)?
            .checked_add(4),
        // Unbounded strings, and anything unknown.
        _ => None,
    }
}
