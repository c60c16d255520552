//! What rclev accepts of a type it did not compile in: one set of bounds, [`TypeLimits`],
//! applied wherever such a type enters — a peer's `~/get_type_description` answer, a bag's
//! schema, an installed interface file — before anything is built from it.
//!
//! Every algorithm over a type graph from outside is linear in the size of its description
//! (see `type_graph.rs`), so the limits are not there to make the algorithms affordable: they
//! keep what one type may cost in memory, and in values built from its defaults, to a size no
//! real ROS 2 type comes near, with an error that names the limit when a type is over it.

/// Bounds on a type description from outside the program (a peer, a bag, an installed
/// file). A description over any of them is refused with [`Error::TypeOverLimit`](crate::Error::TypeOverLimit), which
/// names the limit.
///
/// The defaults ([`TypeLimits::DEFAULT`]) are far above real types: the deepest standard or
/// common robot type nests under 10 levels and references under 100 types. A program that
/// meets a legitimate type over them can raise them where it checks types
/// ([`DynamicType::with_limits`](super::DynamicType::with_limits),
/// [`TypeLimits::check`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TypeLimits {
    /// The most levels of nested messages: a type with no nested message has depth 1, a
    /// `geometry_msgs/PoseStamped` (a `Pose` holding a `Point`) has 3. It bounds the
    /// recursion of every walk over a message's values (decoding, encoding, defaults).
    pub max_depth: usize,
    /// The most types a description may hold: the type itself and every type it references.
    pub max_types: usize,
    /// The most fields over all of those types.
    pub max_fields: usize,
    /// The most bytes of text in the description: type, field and nested type names and
    /// default values. (The interface files' texts, the type's sources, are bounded where
    /// they are read.)
    pub max_bytes: usize,
    /// The most values a message built from the type's defaults may hold (each field, array
    /// element and nested message counts one): a default value is built from the description
    /// alone, so a small description (a type with two fields of the next type, 40 levels
    /// deep) could otherwise ask for 2^40 values.
    pub max_values: usize,
}

impl TypeLimits {
    /// 64 levels, 1,024 types, 16,384 fields, 1 MiB of text, 4,194,304 default values.
    pub const DEFAULT: Self = Self {
        max_depth: 64,
        max_types: 1024,
        max_fields: 16 * 1024,
        max_bytes: 1 << 20,
        max_values: 1 << 22,
    };
}

impl Default for TypeLimits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::error::Error;
    use crate::interfaces::type_description_interfaces::msg as td;
    use crate::interfaces::MESSAGE_TYPES;
    use crate::msg::type_graph::TypeGraph;

    #[test]
    fn every_shipped_type_is_far_inside_the_default_limits() {
        let (mut depth, mut types, mut fields) = (0, 0, 0);
        for t in MESSAGE_TYPES {
            let graph = TypeGraph::of_description(&t.description, &TypeLimits::DEFAULT)
                .unwrap_or_else(|e| panic!("{}: {e}", t.type_name));
            depth = depth.max(graph.depth());
            types = types.max(graph.len());
            fields = fields.max(graph.fields());
        }
        assert!(depth * 4 <= TypeLimits::DEFAULT.max_depth, "{depth}");
        assert!(types * 16 <= TypeLimits::DEFAULT.max_types, "{types}");
        assert!(fields * 16 <= TypeLimits::DEFAULT.max_fields, "{fields}");
    }

    #[test]
    fn a_message_description_is_checked_as_the_static_one() {
        use crate::interfaces::sensor_msgs::msg::Image;
        use crate::msg::Message;
        let message = td::TypeDescription::from(&Image::TYPE_DESCRIPTION);
        TypeLimits::DEFAULT.check_message(&message).unwrap();
        let tight = TypeLimits {
            max_depth: 2,
            ..TypeLimits::DEFAULT
        };
        // Image > Header > Time: three levels.
        for result in [
            tight.check_message(&message),
            tight.check(&Image::TYPE_DESCRIPTION),
        ] {
            match result {
                Err(Error::TypeOverLimit { limit, max, .. }) => {
                    assert_eq!((limit, max), ("max_depth", 2))
                }
                other => panic!("{other:?}"),
            }
        }
    }
}
