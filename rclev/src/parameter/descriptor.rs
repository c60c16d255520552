//! What a parameter may hold: its descriptor (read-only flag, dynamic typing, allowed ranges)
//! and the checks a value must pass against it. The range arithmetic lives in `range.rs`.

use std::fmt;

use super::range;
use super::value::ParameterValue;

/// An inclusive range with an optional step, as in `rcl_interfaces/IntegerRange` and
/// `FloatingPointRange`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Range<T> {
    /// Smallest allowed value.
    pub from: T,
    /// Largest allowed value.
    pub to: T,
    /// Allowed values are `from + k·step` and the two bounds; zero allows any value in range.
    /// An integer step must not be negative (`IntegerRange.step` is unsigned); a floating-point
    /// step's sign is ignored (`FloatingPointRange` takes it as a magnitude).
    pub step: T,
}

/// What a parameter may hold.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParameterDescriptor {
    /// Human-readable description.
    pub description: String,
    /// Refuse every change after declaration.
    pub read_only: bool,
    /// Allow values of another type than the declared one.
    pub dynamic_typing: bool,
    /// Allowed range of an integer parameter.
    pub integer_range: Option<Range<i64>>,
    /// Allowed range of a double parameter.
    pub floating_point_range: Option<Range<f64>>,
}

impl ParameterDescriptor {
    /// A read-only descriptor.
    pub fn read_only() -> Self {
        Self {
            read_only: true,
            ..Self::default()
        }
    }
    /// Sets an integer range.
    pub fn integer_range(mut self, from: i64, to: i64, step: i64) -> Self {
        self.integer_range = Some(Range { from, to, step });
        self
    }
    /// Sets a floating-point range.
    pub fn floating_point_range(mut self, from: f64, to: f64, step: f64) -> Self {
        self.floating_point_range = Some(Range { from, to, step });
        self
    }

    /// Why the descriptor cannot be declared, if it cannot (a negative integer step, NaN in a
    /// floating-point range, `from > to`).
    pub(super) fn validate(&self) -> Result<(), String> {
        let integer = self
            .integer_range
            .as_ref()
            .and_then(range::integer_range_error);
        let floating = self
            .floating_point_range
            .as_ref()
            .and_then(range::floating_point_range_error);
        integer.or(floating).map_or(Ok(()), Err)
    }

    /// Why `value` is outside the descriptor's range, if it is.
    pub(super) fn check(&self, value: &ParameterValue) -> Result<(), String> {
        fn outside<T: fmt::Display>(v: &T, r: &Range<T>) -> String {
            format!("{v} is outside [{}, {}] step {}", r.from, r.to, r.step)
        }
        match (value, &self.integer_range, &self.floating_point_range) {
            (ParameterValue::Integer(v), Some(r), _) if !range::integer_allowed(*v, r) => {
                Err(outside(v, r))
            }
            (ParameterValue::Double(v), _, Some(r)) if !range::double_allowed(*v, r) => {
                Err(outside(v, r))
            }
            _ => Ok(()),
        }
    }
}
