//! Parameters as `rcl_interfaces` messages: what the parameter services and
//! `/parameter_events` carry, and what a parameter client sends.

use super::descriptor::{ParameterDescriptor, Range};
use super::value::{Parameter, ParameterValue};
use crate::interfaces::rcl_interfaces::msg as rcl;
use rcl::ParameterType as T;

impl ParameterValue {
    /// The `rcl_interfaces/msg/ParameterType` constant of this value's type.
    pub fn type_id(&self) -> u8 {
        match self {
            Self::Bool(_) => T::PARAMETER_BOOL,
            Self::Integer(_) => T::PARAMETER_INTEGER,
            Self::Double(_) => T::PARAMETER_DOUBLE,
            Self::String(_) => T::PARAMETER_STRING,
            Self::ByteArray(_) => T::PARAMETER_BYTE_ARRAY,
            Self::BoolArray(_) => T::PARAMETER_BOOL_ARRAY,
            Self::IntegerArray(_) => T::PARAMETER_INTEGER_ARRAY,
            Self::DoubleArray(_) => T::PARAMETER_DOUBLE_ARRAY,
            Self::StringArray(_) => T::PARAMETER_STRING_ARRAY,
        }
    }

    /// The value as an `rcl_interfaces/msg/ParameterValue`.
    pub fn to_msg(&self) -> rcl::ParameterValue {
        let mut msg = rcl::ParameterValue {
            r#type: self.type_id(),
            ..Default::default()
        };
        match self {
            Self::Bool(v) => msg.bool_value = *v,
            Self::Integer(v) => msg.integer_value = *v,
            Self::Double(v) => msg.double_value = *v,
            Self::String(v) => msg.string_value = v.clone(),
            Self::ByteArray(v) => msg.byte_array_value = v.clone(),
            Self::BoolArray(v) => msg.bool_array_value = v.clone(),
            Self::IntegerArray(v) => msg.integer_array_value = v.clone(),
            Self::DoubleArray(v) => msg.double_array_value = v.clone(),
            Self::StringArray(v) => msg.string_array_value = v.clone(),
        }
        msg
    }

    /// The value an `rcl_interfaces/msg/ParameterValue` carries: `Ok(None)` for
    /// `PARAMETER_NOT_SET` (no value: deleting a parameter), an error for a type id that is
    /// not one of `ParameterType`'s.
    pub fn from_msg(msg: &rcl::ParameterValue) -> Result<Option<Self>, String> {
        Ok(Some(match msg.r#type {
            T::PARAMETER_NOT_SET => return Ok(None),
            T::PARAMETER_BOOL => Self::Bool(msg.bool_value),
            T::PARAMETER_INTEGER => Self::Integer(msg.integer_value),
            T::PARAMETER_DOUBLE => Self::Double(msg.double_value),
            T::PARAMETER_STRING => Self::String(msg.string_value.clone()),
            T::PARAMETER_BYTE_ARRAY => Self::ByteArray(msg.byte_array_value.clone()),
            T::PARAMETER_BOOL_ARRAY => Self::BoolArray(msg.bool_array_value.clone()),
            T::PARAMETER_INTEGER_ARRAY => Self::IntegerArray(msg.integer_array_value.clone()),
            T::PARAMETER_DOUBLE_ARRAY => Self::DoubleArray(msg.double_array_value.clone()),
            T::PARAMETER_STRING_ARRAY => Self::StringArray(msg.string_array_value.clone()),
            other => return Err(format!("unknown parameter type {other}")),
        }))
    }
}

impl Parameter {
    /// The parameter as an `rcl_interfaces/msg/Parameter`.
    pub fn to_msg(&self) -> rcl::Parameter {
        rcl::Parameter {
            name: self.name.clone(),
            value: self.value.to_msg(),
        }
    }
}

impl ParameterDescriptor {
    /// The descriptor of parameter `name`, whose value is `value`, as an
    /// `rcl_interfaces/msg/ParameterDescriptor` (what `describe_parameters` answers).
    pub fn to_msg(&self, name: &str, value: &ParameterValue) -> rcl::ParameterDescriptor {
        rcl::ParameterDescriptor {
            name: name.to_string(),
            r#type: value.type_id(),
            description: self.description.clone(),
            additional_constraints: String::new(),
            read_only: self.read_only,
            dynamic_typing: self.dynamic_typing,
            floating_point_range: self
                .floating_point_range
                .iter()
                .map(|r| rcl::FloatingPointRange {
                    from_value: r.from,
                    to_value: r.to,
                    step: r.step,
                })
                .collect(),
            integer_range: self
                .integer_range
                .iter()
                .map(|r: &Range<i64>| rcl::IntegerRange {
                    from_value: r.from,
                    to_value: r.to,
                    // `validate` refuses a negative step at declaration.
                    step: u64::try_from(r.step).unwrap_or(0),
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_goes_through_the_message_and_back() {
        let values = [
            ParameterValue::Bool(true),
            ParameterValue::Integer(-3),
            ParameterValue::Double(0.25),
            ParameterValue::String("s".into()),
            ParameterValue::ByteArray(vec![1, 2]),
            ParameterValue::BoolArray(vec![false, true]),
            ParameterValue::IntegerArray(vec![4, 5]),
            ParameterValue::DoubleArray(vec![1.5]),
            ParameterValue::StringArray(vec!["a".into(), "b".into()]),
        ];
        for (i, v) in values.iter().enumerate() {
            let msg = v.to_msg();
            assert_eq!(usize::from(msg.r#type), i + 1);
            assert_eq!(ParameterValue::from_msg(&msg).unwrap().as_ref(), Some(v));
        }
        let unset = rcl::ParameterValue::default();
        assert_eq!(ParameterValue::from_msg(&unset), Ok(None));
        let odd = rcl::ParameterValue {
            r#type: 42,
            ..Default::default()
        };
        assert!(ParameterValue::from_msg(&odd).is_err());
    }

    #[test]
    fn descriptors_carry_their_ranges() {
        let d = ParameterDescriptor {
            description: "speed".into(),
            ..ParameterDescriptor::default().integer_range(0, 10, 2)
        };
        let msg = d.to_msg("speed", &ParameterValue::Integer(4));
        assert_eq!(msg.name, "speed");
        assert_eq!(msg.r#type, T::PARAMETER_INTEGER);
        assert_eq!(msg.description, "speed");
        assert_eq!(msg.integer_range.len(), 1);
        assert_eq!(msg.integer_range[0].step, 2);
        assert!(msg.floating_point_range.is_empty());
    }
}
