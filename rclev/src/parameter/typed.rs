//! Typed parameters: `node.declare_typed_parameter::<f64>("gain").default(0.5).declare()`
//! gives a [`TypedParameter<f64>`] whose `get` returns an `f64`, beside the untyped
//! [`ParameterValue`] API (the shape of rclrs's parameter builder).
//!
//! The value lives in the node's [`Parameters`] as any other (the services, events and
//! set-callbacks see it), statically typed: a set of another type is refused. As in ROS 2, an
//! integer override is taken for a double parameter (`-p gain:=1`), and nothing else converts.

use std::marker::PhantomData;
use std::sync::Arc;

use super::descriptor::{ParameterDescriptor, Range};
use super::store::Parameters;
use super::value::ParameterValue;
use super::ParameterError;

/// A Rust type a parameter can have: the nine ROS 2 parameter types.
pub trait ParameterType: Clone + Send + Sync + 'static {
    /// The value as the untyped store holds it.
    fn into_value(self) -> ParameterValue;
    /// The value back, if it is of this type.
    fn from_value(value: &ParameterValue) -> Option<Self>;
}

macro_rules! parameter_type {
    ($($t:ty => $variant:ident),* $(,)?) => {$(
        impl ParameterType for $t {
            fn into_value(self) -> ParameterValue {
                ParameterValue::$variant(self)
            }
            fn from_value(value: &ParameterValue) -> Option<Self> {
                match value {
                    ParameterValue::$variant(v) => Some(v.clone()),
                    _ => None,
                }
            }
        }
    )*};
}
parameter_type!(bool => Bool, i64 => Integer, f64 => Double, String => String,
    Vec<u8> => ByteArray, Vec<bool> => BoolArray, Vec<i64> => IntegerArray,
    Vec<f64> => DoubleArray, Vec<String> => StringArray);

/// Declares a typed parameter: see [`NodeState::declare_typed_parameter`](crate::NodeState::declare_typed_parameter).
#[must_use = "nothing is declared until `declare` is called"]
pub struct ParameterBuilder<T: ParameterType> {
    parameters: Arc<Parameters>,
    name: String,
    default: Option<T>,
    descriptor: ParameterDescriptor,
    ignore_override: bool,
}

impl<T: ParameterType> ParameterBuilder<T> {
    pub(crate) fn new(parameters: Arc<Parameters>, name: &str) -> Self {
        Self {
            parameters,
            name: name.to_string(),
            default: None,
            descriptor: ParameterDescriptor::default(),
            ignore_override: false,
        }
    }

    /// The value when no override is given. Without one, an override is mandatory.
    pub fn default(mut self, value: T) -> Self {
        self.default = Some(value);
        self
    }

    /// The description tools show.
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.descriptor.description = text.into();
        self
    }

    /// Refuses every change after declaration.
    pub fn read_only(mut self) -> Self {
        self.descriptor.read_only = true;
        self
    }

    /// A full descriptor (its `dynamic_typing` is ignored: a typed parameter keeps its type).
    pub fn descriptor(mut self, descriptor: ParameterDescriptor) -> Self {
        self.descriptor = ParameterDescriptor {
            dynamic_typing: false,
            ..descriptor
        };
        self
    }

    /// Takes the default even if an override was given at node creation (rclcpp's
    /// `ignore_override`): the override is neither used nor checked.
    pub fn ignore_override(mut self) -> Self {
        self.ignore_override = true;
        self
    }

    /// Declares it: the override given at node creation if there is one (an integer for a
    /// double parameter is taken as the double), else the default;
    /// [`ParameterError::InvalidOverride`] if neither exists or the override is of another
    /// type or outside the range, [`ParameterError::OutOfRange`] if the default is taken and
    /// is outside the range (see [`Parameters::declare`]).
    pub fn declare(self) -> Result<TypedParameter<T>, ParameterError> {
        let given = match self.ignore_override {
            true => None,
            false => self.parameters.override_of(&self.name),
        };
        // The value to declare, also as a `T`.
        let (initial, typed) = match (self.default, given) {
            // The store applies the override and checks its type against the default's.
            (Some(default), _) => (default.clone().into_value(), default),
            (None, Some(given)) => {
                let given = match T::from_value(&given) {
                    Some(_) => given,
                    None => super::value::coerce(&given, &ParameterValue::Double(0.0)),
                };
                let given = match T::from_value(&given) {
                    Some(_) => given,
                    None => super::value::coerce(&given, &ParameterValue::DoubleArray(vec![])),
                };
                let Some(typed) = T::from_value(&given) else {
                    return Err(ParameterError::InvalidOverride {
                        name: self.name,
                        reason: format!(
                            "{} given for a parameter of type {}",
                            given.type_name(),
                            std::any::type_name::<T>()
                        ),
                    });
                };
                (given, typed)
            }
            (None, None) => {
                let reason = match self.ignore_override {
                    true => "no value: the parameter has no default and ignores overrides",
                    false => "no value: the parameter has no default and none was given",
                };
                return Err(ParameterError::InvalidOverride {
                    name: self.name,
                    reason: reason.into(),
                });
            }
        };
        let value = self.parameters.declare_with(
            &self.name,
            initial,
            self.descriptor,
            !self.ignore_override,
        )?;
        // The store returns the override converted to the initial value's type, which a typed
        // parameter never lets change (its descriptor is never dynamically typed).
        let declared = T::from_value(&value).unwrap_or(typed);
        Ok(TypedParameter {
            parameters: self.parameters,
            name: self.name,
            declared,
            _type: PhantomData,
        })
    }
}

impl ParameterBuilder<i64> {
    /// Allowed values: `from..=to` in steps of `step` (0: any).
    pub fn range(mut self, from: i64, to: i64, step: i64) -> Self {
        self.descriptor.integer_range = Some(Range { from, to, step });
        self
    }
}

impl ParameterBuilder<f64> {
    /// Allowed values: `from..=to` in steps of `step` (0: any).
    pub fn range(mut self, from: f64, to: f64, step: f64) -> Self {
        self.descriptor.floating_point_range = Some(Range { from, to, step });
        self
    }
}

/// A declared parameter of Rust type `T`. It stays declared for the node's life; the handle
/// only reads and sets it.
///
/// ```
/// use rclev::NodeOptions;
///
/// let executor = rclev::Context::default().create_basic_executor();
/// // An override, as `--ros-args -p fps:=15` would give.
/// let node = executor.create_node(NodeOptions::new("camera").parameter_override("fps", 15))?;
/// let fps = node.declare_typed_parameter::<f64>("fps").default(30.0).declare()?;
/// assert_eq!(fps.get(), 15.0); // the override wins; an integer is taken for a double
/// // Sets from anywhere (here the untyped API; also the parameter services) show in `get`.
/// node.set_parameter("fps", 60.0)?;
/// assert_eq!(fps.get(), 60.0);
/// assert!(node.set_parameter("fps", "fast").is_err()); // its type is fixed
/// let frame = node
///     .declare_typed_parameter::<String>("frame_id")
///     .default("camera_link".into())
///     .read_only()
///     .declare()?;
/// assert!(frame.set("map".into()).is_err());
/// assert_eq!(frame.name(), "frame_id");
/// # Ok::<(), rclev::Error>(())
/// ```
pub struct TypedParameter<T: ParameterType> {
    parameters: Arc<Parameters>,
    name: String,
    /// The value it was declared with: what [`get`](Self::get) falls back on.
    declared: T,
    _type: PhantomData<fn() -> T>,
}

impl<T: ParameterType> TypedParameter<T> {
    /// The value now (set through the services or any handle meanwhile, too).
    pub fn get(&self) -> T {
        let value = self.parameters.get(&self.name);
        match value.as_ref().and_then(T::from_value) {
            Some(v) => v,
            // Not reachable: the parameter is statically typed, so it is never undeclared
            // (`undeclare` needs dynamic typing) and every set is checked to be of its type;
            // a set checked against an earlier declaration of the name is refused at commit
            // (`Parameters::set_all`). Were it reached, the caller gets the declared value and
            // the fault is logged, rather than a panic in the middle of a control loop.
            None => {
                // Layer 1: below the console fallback of `diagnostic!` (layer 2).
                tracing::error!(
                    target: "rclev",
                    "typed parameter {:?} holds {value:?}, not a {}; returning its declared value",
                    self.name,
                    std::any::type_name::<T>()
                );
                self.declared.clone()
            }
        }
    }

    /// Sets it, subject to its descriptor and the node's set-callbacks.
    pub fn set(&self, value: T) -> Result<(), ParameterError> {
        self.parameters.set(&self.name, value.into_value())
    }

    /// The parameter's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl<T: ParameterType + std::fmt::Debug> std::fmt::Debug for TypedParameter<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TypedParameter")
            .field("name", &self.name)
            .field("value", &self.get())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn with_overrides(o: &[(&str, ParameterValue)]) -> Arc<Parameters> {
        let map: BTreeMap<String, ParameterValue> =
            o.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        Arc::new(Parameters::with_overrides(map))
    }

    #[test]
    fn typed_values_defaults_overrides_and_ranges() {
        let p = with_overrides(&[
            ("rate", ParameterValue::Integer(10)),
            ("name", ParameterValue::String("r2".into())),
            ("bad", ParameterValue::String("x".into())),
        ]);
        let rate = ParameterBuilder::<f64>::new(p.clone(), "rate")
            .default(1.0)
            .declare()
            .unwrap();
        assert_eq!(rate.get(), 10.0, "an integer override for a double");
        let name = ParameterBuilder::<String>::new(p.clone(), "name")
            .declare()
            .unwrap();
        assert_eq!(name.get(), "r2", "no default: the override");
        let p2 = with_overrides(&[("hz", ParameterValue::Integer(3))]);
        let hz = ParameterBuilder::<f64>::new(p2, "hz").declare().unwrap();
        assert_eq!(
            hz.get(),
            3.0,
            "an integer override, no default, for a double"
        );
        let gain = ParameterBuilder::<i64>::new(p.clone(), "gain")
            .default(5)
            .range(0, 10, 1)
            .description("loop gain")
            .declare()
            .unwrap();
        assert_eq!(gain.get(), 5);
        gain.set(7).unwrap();
        assert_eq!(gain.get(), 7);
        assert!(matches!(
            gain.set(11),
            Err(ParameterError::OutOfRange { .. })
        ));
        assert!(matches!(
            p.set("gain", "seven"),
            Err(ParameterError::WrongType { .. })
        ));
        assert!(matches!(
            ParameterBuilder::<i64>::new(p.clone(), "missing").declare(),
            Err(ParameterError::InvalidOverride { .. })
        ));
        assert!(matches!(
            ParameterBuilder::<i64>::new(p.clone(), "bad").declare(),
            Err(ParameterError::InvalidOverride { .. })
        ));
        assert!(!p.has("bad"), "a refused declaration declares nothing");
        assert!(matches!(
            ParameterBuilder::<i64>::new(p.clone(), "bad")
                .default(1)
                .declare(),
            Err(ParameterError::InvalidOverride { .. })
        ));
        let ro = ParameterBuilder::<bool>::new(p, "frozen")
            .default(true)
            .read_only()
            .declare()
            .unwrap();
        assert!(matches!(ro.set(false), Err(ParameterError::ReadOnly(_))));
    }
}
