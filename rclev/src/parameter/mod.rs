//! Node parameters: declare, get, set, descriptors with read-only flags and ranges, set-callbacks
//! that can reject a change, and overrides given at node creation (`--ros-args -p name:=value`
//! or [`NodeOptions::parameter_override`](crate::NodeOptions::parameter_override)).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, Weak};

use crate::sync::lock;

mod args;
mod range;
pub use args::{parse_ros_args, ValueParseError};

/// A parameter's value.
#[derive(Debug, Clone, PartialEq)]
pub enum ParameterValue {
    /// `bool`.
    Bool(bool),
    /// `int64`.
    Integer(i64),
    /// `double`.
    Double(f64),
    /// `string`.
    String(String),
    /// `byte[]`.
    ByteArray(Vec<u8>),
    /// `bool[]`.
    BoolArray(Vec<bool>),
    /// `int64[]`.
    IntegerArray(Vec<i64>),
    /// `double[]`.
    DoubleArray(Vec<f64>),
    /// `string[]`.
    StringArray(Vec<String>),
}

impl ParameterValue {
    /// The type's name, as ROS 2 tools print it.
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::Bool(_) => "bool",
            Self::Integer(_) => "integer",
            Self::Double(_) => "double",
            Self::String(_) => "string",
            Self::ByteArray(_) => "byte_array",
            Self::BoolArray(_) => "bool_array",
            Self::IntegerArray(_) => "integer_array",
            Self::DoubleArray(_) => "double_array",
            Self::StringArray(_) => "string_array",
        }
    }

    fn same_type(&self, other: &Self) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
    }
}

impl fmt::Display for ParameterValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Bool(v) => write!(f, "{v}"),
            Self::Integer(v) => write!(f, "{v}"),
            Self::Double(v) => write!(f, "{v}"),
            Self::String(v) => write!(f, "{v}"),
            other => write!(f, "{other:?}"),
        }
    }
}

macro_rules! from_value {
    ($($t:ty => $variant:ident),*) => {$(
        impl From<$t> for ParameterValue {
            fn from(v: $t) -> Self { Self::$variant(v.into()) }
        }
    )*};
}
from_value!(bool => Bool, i64 => Integer, f64 => Double, String => String, &str => String,
    Vec<u8> => ByteArray, Vec<bool> => BoolArray, Vec<i64> => IntegerArray,
    Vec<f64> => DoubleArray, Vec<String> => StringArray);

impl From<i32> for ParameterValue {
    fn from(v: i32) -> Self {
        Self::Integer(v.into())
    }
}

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
    fn validate(&self) -> Result<(), String> {
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

    fn check(&self, value: &ParameterValue) -> Result<(), String> {
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

/// A named value.
#[derive(Debug, Clone, PartialEq)]
pub struct Parameter {
    /// The name.
    pub name: String,
    /// The value.
    pub value: ParameterValue,
}

pub use crate::error::ParameterError;

/// A set-callback's verdict: `Ok` accepts, `Err(reason)` rejects the whole change.
pub type SetParametersResult = Result<(), String>;

type SetCallback = dyn Fn(&[Parameter]) -> SetParametersResult + Send + Sync;
type ChangeHook = dyn Fn(&Parameter) + Send + Sync;

struct Declared {
    value: ParameterValue,
    descriptor: ParameterDescriptor,
}

#[derive(Default)]
struct Store {
    declared: BTreeMap<String, Declared>,
    overrides: BTreeMap<String, ParameterValue>,
    callbacks: Vec<Weak<SetCallback>>,
    /// Internal observers (e.g. `use_sim_time` → the time source), called after a change.
    hooks: Vec<(String, Arc<ChangeHook>)>,
    /// Internal set-callbacks, asked before the user's and registered for the node's life.
    guards: Vec<Arc<SetCallback>>,
}

/// A node's parameters.
#[derive(Default)]
pub struct Parameters {
    store: Mutex<Store>,
}

/// Keeps a set-callback registered; dropping it unregisters the callback.
#[must_use = "dropping this handle unregisters the callback at once"]
pub struct SetCallbackHandle {
    _callback: Arc<SetCallback>,
}

impl fmt::Debug for SetCallbackHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SetCallbackHandle")
    }
}

impl Parameters {
    pub(crate) fn with_overrides(overrides: BTreeMap<String, ParameterValue>) -> Self {
        Self {
            store: Mutex::new(Store {
                overrides,
                ..Store::default()
            }),
        }
    }

    /// Declares a parameter; an override given at node creation replaces `default`. Returns
    /// the value in effect. A descriptor whose range cannot be used is refused with
    /// [`ParameterError::InvalidDescriptor`].
    pub fn declare(
        &self,
        name: &str,
        default: impl Into<ParameterValue>,
        descriptor: ParameterDescriptor,
    ) -> Result<ParameterValue, ParameterError> {
        let default = default.into();
        descriptor
            .validate()
            .map_err(|reason| ParameterError::InvalidDescriptor {
                name: name.to_string(),
                reason,
            })?;
        let mut store = lock(&self.store);
        if store.declared.contains_key(name) {
            return Err(ParameterError::AlreadyDeclared(name.to_string()));
        }
        let value = match store.overrides.get(name) {
            Some(o) => {
                let o = coerce(o, &default);
                if !descriptor.dynamic_typing && !o.same_type(&default) {
                    return Err(ParameterError::InvalidOverride {
                        name: name.to_string(),
                        reason: format!(
                            "{} given for a {} parameter",
                            o.type_name(),
                            default.type_name()
                        ),
                    });
                }
                descriptor
                    .check(&o)
                    .map_err(|reason| ParameterError::InvalidOverride {
                        name: name.to_string(),
                        reason,
                    })?;
                o
            }
            None => default,
        };
        store.declared.insert(
            name.to_string(),
            Declared {
                value: value.clone(),
                descriptor,
            },
        );
        Ok(value)
    }

    /// The value of a declared parameter.
    pub fn get(&self, name: &str) -> Option<ParameterValue> {
        lock(&self.store)
            .declared
            .get(name)
            .map(|d| d.value.clone())
    }

    /// The descriptor of a declared parameter.
    pub fn describe(&self, name: &str) -> Option<ParameterDescriptor> {
        lock(&self.store)
            .declared
            .get(name)
            .map(|d| d.descriptor.clone())
    }

    /// Names of all declared parameters, sorted.
    pub fn names(&self) -> Vec<String> {
        lock(&self.store).declared.keys().cloned().collect()
    }

    /// Sets one parameter (see [`set_all`](Self::set_all)).
    pub fn set(&self, name: &str, value: impl Into<ParameterValue>) -> Result<(), ParameterError> {
        self.set_all(&[Parameter {
            name: name.to_string(),
            value: value.into(),
        }])
    }

    /// Sets several parameters atomically: every value is checked against its descriptor and
    /// every set-callback, and either all change or none does.
    pub fn set_all(&self, changes: &[Parameter]) -> Result<(), ParameterError> {
        let (callbacks, hooks) = {
            let store = lock(&self.store);
            for p in changes {
                let d = store
                    .declared
                    .get(&p.name)
                    .ok_or_else(|| ParameterError::NotDeclared(p.name.clone()))?;
                if d.descriptor.read_only {
                    return Err(ParameterError::ReadOnly(p.name.clone()));
                }
                if !d.descriptor.dynamic_typing && !p.value.same_type(&d.value) {
                    return Err(ParameterError::WrongType {
                        name: p.name.clone(),
                        expected: d.value.type_name(),
                        got: p.value.type_name(),
                    });
                }
                d.descriptor
                    .check(&p.value)
                    .map_err(|reason| ParameterError::OutOfRange {
                        name: p.name.clone(),
                        reason,
                    })?;
            }
            let callbacks: Vec<_> = store
                .guards
                .iter()
                .cloned()
                .chain(store.callbacks.iter().filter_map(Weak::upgrade))
                .collect();
            (callbacks, store.hooks.clone())
        };
        // Called without the lock, so a callback may read parameters.
        for cb in callbacks {
            cb(changes).map_err(ParameterError::Rejected)?;
        }
        {
            let mut store = lock(&self.store);
            store.callbacks.retain(|w| w.strong_count() > 0);
            for p in changes {
                if let Some(d) = store.declared.get_mut(&p.name) {
                    d.value = p.value.clone();
                }
            }
        }
        for p in changes {
            for (name, hook) in &hooks {
                if *name == p.name {
                    hook(p);
                }
            }
        }
        Ok(())
    }

    /// Registers a callback asked before every change; it can reject it with a reason.
    pub fn add_on_set_callback(
        &self,
        callback: impl Fn(&[Parameter]) -> SetParametersResult + Send + Sync + 'static,
    ) -> SetCallbackHandle {
        let cb: Arc<SetCallback> = Arc::new(callback);
        lock(&self.store).callbacks.push(Arc::downgrade(&cb));
        SetCallbackHandle { _callback: cb }
    }

    /// Registers an internal set-callback for the life of the parameters.
    pub(crate) fn add_guard(
        &self,
        guard: impl Fn(&[Parameter]) -> SetParametersResult + Send + Sync + 'static,
    ) {
        lock(&self.store).guards.push(Arc::new(guard));
    }

    pub(crate) fn on_change(&self, name: &str, hook: impl Fn(&Parameter) + Send + Sync + 'static) {
        lock(&self.store)
            .hooks
            .push((name.to_string(), Arc::new(hook)));
    }
}

/// An integer override for a double parameter is taken as the double (`-p rate:=10`).
fn coerce(value: &ParameterValue, like: &ParameterValue) -> ParameterValue {
    match (value, like) {
        (ParameterValue::Integer(i), ParameterValue::Double(_)) => {
            ParameterValue::Double(*i as f64)
        }
        (ParameterValue::IntegerArray(v), ParameterValue::DoubleArray(_)) => {
            ParameterValue::DoubleArray(v.iter().map(|i| *i as f64).collect())
        }
        _ => value.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_types_and_read_only() {
        let p = Parameters::default();
        p.declare(
            "n",
            5,
            ParameterDescriptor::default().integer_range(0, 10, 5),
        )
        .unwrap();
        assert!(p.set("n", 10).is_ok());
        assert!(matches!(
            p.set("n", 7),
            Err(ParameterError::OutOfRange { .. })
        ));
        assert!(matches!(
            p.set("n", 11),
            Err(ParameterError::OutOfRange { .. })
        ));
        assert!(matches!(
            p.set("n", "x"),
            Err(ParameterError::WrongType { .. })
        ));
        p.declare(
            "g",
            0.5,
            ParameterDescriptor::default().floating_point_range(0.0, 1.0, 0.25),
        )
        .unwrap();
        assert!(p.set("g", 0.75).is_ok());
        assert!(p.set("g", 0.8).is_err());
        p.declare("fixed", "a", ParameterDescriptor::read_only())
            .unwrap();
        assert!(matches!(
            p.set("fixed", "b"),
            Err(ParameterError::ReadOnly(_))
        ));
        assert!(matches!(
            p.set("missing", 1),
            Err(ParameterError::NotDeclared(_))
        ));
        assert!(matches!(
            p.declare("n", 1, ParameterDescriptor::default()),
            Err(ParameterError::AlreadyDeclared(_))
        ));
        assert_eq!(p.get("n"), Some(ParameterValue::Integer(10)));
    }

    /// Unusable float ranges are refused and NaN/infinities never pass a range check (the
    /// integer side of defect 10 is a regression test in `tests/fuzz.rs`).
    #[test]
    fn float_ranges_refuse_nan_and_infinities() {
        let p = Parameters::default();
        let nan = ParameterDescriptor::default().floating_point_range(0.0, 1.0, f64::NAN);
        assert!(matches!(
            p.declare("d", 0.5, nan),
            Err(ParameterError::InvalidDescriptor { .. })
        ));
        let unit = ParameterDescriptor::default().floating_point_range(0.0, 1.0, 0.0);
        p.declare("g", 0.5, unit).unwrap();
        assert!(p.set("g", f64::NAN).is_err(), "NaN is in no range");
        assert!(p.set("g", f64::INFINITY).is_err());
        assert!(p.names().iter().all(|n| n != "d"));
    }

    #[test]
    fn set_callbacks_can_reject_atomically() {
        let p = Parameters::default();
        p.declare("a", 1, ParameterDescriptor::default()).unwrap();
        p.declare("b", 1, ParameterDescriptor::default()).unwrap();
        let handle = p.add_on_set_callback(|changes| {
            for c in changes {
                if c.value == ParameterValue::Integer(13) {
                    return Err(format!("{} may not be 13", c.name));
                }
            }
            Ok(())
        });
        let both = [
            Parameter {
                name: "a".into(),
                value: 2.into(),
            },
            Parameter {
                name: "b".into(),
                value: 13.into(),
            },
        ];
        assert_eq!(
            p.set_all(&both),
            Err(ParameterError::Rejected("b may not be 13".into()))
        );
        assert_eq!(
            p.get("a"),
            Some(ParameterValue::Integer(1)),
            "a partial change was applied"
        );
        drop(handle);
        assert!(p.set_all(&both).is_ok());
        assert_eq!(p.get("b"), Some(ParameterValue::Integer(13)));
    }

    #[test]
    fn overrides_replace_defaults_and_are_checked() {
        let mut o = BTreeMap::new();
        o.insert("rate".to_string(), ParameterValue::Integer(10));
        o.insert("name".to_string(), ParameterValue::Integer(3));
        let p = Parameters::with_overrides(o);
        assert_eq!(
            p.declare("rate", 1.0, ParameterDescriptor::default())
                .unwrap(),
            ParameterValue::Double(10.0)
        );
        assert!(matches!(
            p.declare("name", "x", ParameterDescriptor::default()),
            Err(ParameterError::InvalidOverride { .. })
        ));
    }
}
