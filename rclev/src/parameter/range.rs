//! Range checks of `rcl_interfaces/IntegerRange` and `FloatingPointRange`, total over every
//! `i64` and `f64`: no overflow, and NaN is never in range.
//!
//! What a step means follows the message definitions and rclcpp's checks. `IntegerRange.step`
//! is a `uint64`, so a negative step cannot be sent and is refused when the descriptor is
//! declared. `FloatingPointRange.step` "is considered to be a magnitude", so its sign is
//! ignored. In both, a zero step allows any value in range, and the bounds are always allowed
//! even when `to - from` is not a multiple of the step.

use super::Range;

/// Why a range cannot be declared, if it cannot.
pub(super) fn integer_range_error(r: &Range<i64>) -> Option<String> {
    if r.step < 0 {
        Some(format!(
            "integer range step {} is negative (IntegerRange.step is unsigned)",
            r.step
        ))
    } else if r.from > r.to {
        Some(format!("integer range from {} exceeds to {}", r.from, r.to))
    } else {
        None
    }
}

/// Why a range cannot be declared, if it cannot.
pub(super) fn floating_point_range_error(r: &Range<f64>) -> Option<String> {
    if r.from.is_nan() || r.to.is_nan() || r.step.is_nan() {
        Some("floating-point range has a NaN bound or step".into())
    } else if r.from > r.to {
        Some(format!(
            "floating-point range from {} exceeds to {}",
            r.from, r.to
        ))
    } else {
        None
    }
}

/// Whether `v` is allowed by `r`.
pub(super) fn integer_allowed(v: i64, r: &Range<i64>) -> bool {
    if v == r.from || v == r.to {
        return true;
    }
    if v < r.from || v > r.to {
        return false;
    }
    // In i128 because `v - from` reaches 2^64 - 1 (from = i64::MIN, v = i64::MAX). The
    // magnitude keeps a step that slipped past declaration from dividing by a negative.
    r.step == 0 || (i128::from(v) - i128::from(r.from)) % i128::from(r.step.unsigned_abs()) == 0
}

/// Whether `v` is allowed by `r`, within a tolerance of `1e-9·max(|step|, 1)` for rounding
/// errors in the caller's arithmetic.
pub(super) fn double_allowed(v: f64, r: &Range<f64>) -> bool {
    if v.is_nan() {
        return false;
    }
    if v == r.from || v == r.to {
        return true;
    }
    let step = r.step.abs();
    // An infinite step would make the tolerance infinite; only the bounds fit such a grid.
    let tolerance = if step.is_finite() {
        1e-9 * step.max(1.0)
    } else {
        1e-9
    };
    if v < r.from - tolerance || v > r.to + tolerance {
        return false;
    }
    if step == 0.0 || (v - r.to).abs() <= tolerance {
        return true;
    }
    // Off a bound, an infinite value, bound or step leaves no grid point `from + k·step` to
    // compare with (the arithmetic gives NaN or ∞): rejected, as rclcpp does.
    if !(v.is_finite() && r.from.is_finite() && step.is_finite()) {
        return false;
    }
    let span = v - r.from;
    if span.is_finite() {
        let k = (span / step).round();
        (r.from + k * step - v).abs() <= tolerance
    } else {
        // `v - from` overflowed (a range wider than f64::MAX): halving every term is exact
        // for these magnitudes and keeps the grid test finite.
        let (span, step) = (v / 2.0 - r.from / 2.0, step / 2.0);
        let k = (span / step).round();
        (span - k * step).abs() * 2.0 <= tolerance
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range<T>(from: T, to: T, step: T) -> Range<T> {
        Range { from, to, step }
    }

    /// Defect 10: `(v - from) % step` overflowed for `from = i64::MIN` (a panic in debug builds,
    /// and `i64::MIN % -1` panics in release too).
    #[test]
    fn integer_ranges_spanning_all_of_i64() {
        let all = range(i64::MIN, i64::MAX, 2);
        assert!(integer_allowed(0, &all));
        assert!(integer_allowed(i64::MIN + 2, &all));
        assert!(!integer_allowed(1, &all));
        assert!(
            integer_allowed(i64::MAX, &all),
            "the bound is always allowed"
        );
        assert!(
            integer_allowed(i64::MAX - 1, &all),
            "2^64 - 2 steps of 2 from i64::MIN"
        );
        assert!(!integer_allowed(i64::MAX - 2, &all));
        let any = range(i64::MIN, i64::MAX, 0);
        assert!([i64::MIN, -1, 0, 1, i64::MAX]
            .iter()
            .all(|v| integer_allowed(*v, &any)));
        let coarse = range(i64::MIN, i64::MAX, i64::MAX);
        assert!(integer_allowed(-1, &coarse));
        assert!(!integer_allowed(0, &coarse));
        // A negative step is refused at declaration; the check itself stays total.
        let negative = range(i64::MIN, i64::MAX, -1);
        assert!(integer_range_error(&negative).is_some());
        assert!(integer_allowed(0, &negative));
        assert!(integer_allowed(0, &range(i64::MIN, i64::MAX, i64::MIN)));
        assert!(integer_range_error(&range(1, 0, 0)).is_some());
        assert!(integer_range_error(&range(0, 0, 0)).is_none());
    }

    #[test]
    fn floating_point_ranges_with_nan_and_infinities() {
        let unit = range(0.0, 1.0, 0.0);
        assert!(
            !double_allowed(f64::NAN, &unit),
            "NaN in a continuous range"
        );
        assert!(!double_allowed(f64::INFINITY, &unit));
        assert!(!double_allowed(f64::NEG_INFINITY, &unit));
        let everything = range(f64::NEG_INFINITY, f64::INFINITY, 0.0);
        assert!(double_allowed(f64::INFINITY, &everything));
        assert!(double_allowed(-1e300, &everything));
        assert!(!double_allowed(f64::NAN, &everything));
        let stepped = range(f64::NEG_INFINITY, 10.0, 0.5);
        assert!(double_allowed(10.0, &stepped));
        assert!(double_allowed(f64::NEG_INFINITY, &stepped));
        assert!(
            !double_allowed(3.0, &stepped),
            "no grid from an infinite bound"
        );
        let only_bounds = range(1.0, 2.0, f64::INFINITY);
        assert!(double_allowed(1.0, &only_bounds) && double_allowed(2.0, &only_bounds));
        assert!(!double_allowed(1.5, &only_bounds));
        let negative_step = range(0.0, 1.0, -0.25);
        assert!(double_allowed(0.75, &negative_step));
        assert!(!double_allowed(0.8, &negative_step));
        // `v - from` overflows to ∞ here; the grid is -MAX, -MAX/2, 0, MAX/2, MAX.
        let wide = range(-f64::MAX, f64::MAX, f64::MAX / 2.0);
        assert!(double_allowed(f64::MAX / 2.0, &wide));
        assert!(double_allowed(0.0, &wide));
        assert!(!double_allowed(f64::MAX * 0.6, &wide));
        assert!(floating_point_range_error(&range(0.0, f64::NAN, 0.0)).is_some());
        assert!(floating_point_range_error(&range(1.0, 0.0, 0.0)).is_some());
    }
}
