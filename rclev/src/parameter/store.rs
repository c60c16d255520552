//! A node's parameter store: declaration (with overrides given at node creation), reads, and
//! atomic multi-parameter sets checked against descriptors and set-callbacks.
//!
//! Ground rule: callbacks and change hooks run without the store's lock held, so they may read
//! parameters; the lock is taken again only to apply a change every callback accepted.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, Weak};

use super::descriptor::ParameterDescriptor;
use super::value::{coerce, Parameter, ParameterValue};
use super::ParameterError;
use crate::sync::lock;

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
