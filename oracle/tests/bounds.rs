//! Bounds are enforced both ways on generated types: encoding an over-long bounded field is an
//! error, and so is decoding one (never a silent truncation, never a huge allocation).

use rclev::msg::{from_cdr, to_cdr, CdrError};
use rclev::Error;
use rclev_oracle_tests::test_msgs::msg::{BoundedPlainSequences, Strings};

fn bound_exceeded<T: std::fmt::Debug>(r: Result<T, Error>) -> (usize, usize) {
    match r {
        Err(Error::Serialization(CdrError::BoundExceeded { len, bound, .. })) => (len, bound),
        other => panic!("expected BoundExceeded, got {other:?}"),
    }
}

#[test]
fn over_long_sequences_are_refused_on_encode_and_decode() {
    let mut bounded = BoundedPlainSequences {
        int32_values: vec![1, 2, 3],
        ..Default::default()
    };
    assert!(to_cdr(&bounded).is_ok());
    bounded.int32_values.push(4);
    assert_eq!(bound_exceeded(to_cdr(&bounded)), (4, 3));

    // Decoding: the same bytes with the first sequence (bool_values, at the start of the
    // body) claiming and holding 4 elements.
    bounded.int32_values.pop();
    bounded.bool_values = vec![true, false, true];
    let mut bytes = to_cdr(&bounded).unwrap();
    assert_eq!(&bytes[4..11], [3, 0, 0, 0, 1, 0, 1]);
    bytes[4] = 4;
    bytes.insert(11, 1);
    assert_eq!(
        bound_exceeded(from_cdr::<BoundedPlainSequences>(&bytes)),
        (4, 3)
    );
    let fits = to_cdr(&bounded).unwrap();
    assert_eq!(from_cdr::<BoundedPlainSequences>(&fits).unwrap(), bounded);
}

#[test]
fn over_long_bounded_strings_are_refused() {
    let mut s = Strings {
        bounded_string_value: "x".repeat(22),
        ..Default::default()
    };
    assert!(to_cdr(&s).is_ok());
    s.bounded_string_value.push('y');
    assert_eq!(bound_exceeded(to_cdr(&s)), (23, 22));
    // The bound counts bytes, as rosidl's string<=N does: 11 two-byte characters fit.
    s.bounded_string_value = "é".repeat(11);
    assert!(to_cdr(&s).is_ok());
    s.bounded_string_value.push('é');
    assert_eq!(bound_exceeded(to_cdr(&s)), (24, 22));
}

#[test]
fn defaults_follow_the_definitions() {
    let d = rclev_oracle_tests::test_msgs::msg::Defaults::default();
    assert!(d.bool_value);
    assert_eq!(d.byte_value, 50);
    assert_eq!(d.char_value, 100);
    assert_eq!(d.float32_value, 1.125);
    assert_eq!(d.float64_value, 1.125);
    assert_eq!(d.int8_value, -50);
    assert_eq!(d.uint64_value, 50_000_000);
    let a = rclev_oracle_tests::test_msgs::msg::Arrays::default();
    assert_eq!(a.int8_values_default, [0, 127, -128]);
    assert_eq!(a.string_values_default, ["", "max value", "min value"]);
    assert_eq!(
        rclev_oracle_tests::test_msgs::msg::Constants::INT64_CONST,
        -40_000_000i64
    );
    assert_eq!(
        rclev_oracle_tests::test_msgs::msg::Strings::default().string_value_default3,
        "Hello\"world!"
    );
}
