//! Command-line parameter values: `ParameterValue::try_parse` reads a `-p name:=value` value
//! as rcl reads it (YAML, typed by rcl's rules: see `yaml.rs`).
//!
//! Arguments are untrusted input, so nothing here recurses: the YAML parser is a state
//! machine, and a nested sequence is refused when it opens.

use super::{yaml, ParameterValue};

/// Why a command-line value is not a parameter value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ValueParseError(String);

impl ParameterValue {
    /// Parses a command-line value the way `ros2 run … -p name:=value` does (a YAML scalar or
    /// flow sequence, typed as rcl types it): `true`/`yes`/`on`, `3`, `0x1F`, `2.5`, `.inf`,
    /// `[1, 2]`, `['a', 'b']`, a quoted scalar is a string, anything else a string.
    ///
    /// Refuses what rcl refuses: an empty value, nested sequences, items of different types
    /// (`[1, 2.5]` too), mappings, aliases, and text that is not YAML.
    ///
    /// ```
    /// use rclev::parameter::ParameterValue;
    /// assert_eq!(ParameterValue::try_parse("[1, 2]"), Ok(ParameterValue::IntegerArray(vec![1, 2])));
    /// assert_eq!(ParameterValue::try_parse("'42'"), Ok(ParameterValue::String("42".into())));
    /// assert!(ParameterValue::try_parse("[[1]]").is_err());
    /// ```
    pub fn try_parse(text: &str) -> Result<Self, ValueParseError> {
        yaml::parse_value(text).map_err(ValueParseError)
    }

    /// The lenient form of [`try_parse`](Self::try_parse): text it refuses is taken as a
    /// string, as written (trimmed).
    pub fn parse(text: &str) -> Self {
        Self::try_parse(text).unwrap_or_else(|_| Self::String(text.trim().to_string()))
    }
}
