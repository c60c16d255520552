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
type ChangeObserver = dyn Fn(&ParameterChange) + Send + Sync;

/// A change of a node's parameters, as `/parameter_events` reports it.
#[derive(Debug, Clone, PartialEq)]
pub enum ParameterChange {
    /// A parameter was declared, with the value in effect.
    New(Parameter),
    /// Parameters were set, all at once.
    Changed(Vec<Parameter>),
    /// A parameter was undeclared; its last value.
    Deleted(Parameter),
}

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
    /// Told of every declaration, set and undeclaration (`/parameter_events`).
    observers: Vec<Arc<ChangeObserver>>,
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
        let observers = store.observers.clone();
        drop(store);
        notify(
            &observers,
            &ParameterChange::New(Parameter {
                name: name.to_string(),
                value: value.clone(),
            }),
        );
        Ok(value)
    }

    /// Undeclares a parameter: refused for a read-only or statically typed one (as rclcpp
    /// does), and for one never declared.
    pub fn undeclare(&self, name: &str) -> Result<(), ParameterError> {
        let (value, observers) = {
            let mut store = lock(&self.store);
            undeclarable(&store, name)?;
            let removed = store.declared.remove(name).map(|d| d.value);
            (removed, store.observers.clone())
        };
        if let Some(value) = value {
            notify(
                &observers,
                &ParameterChange::Deleted(Parameter {
                    name: name.to_string(),
                    value,
                }),
            );
        }
        Ok(())
    }

    /// Whether [`undeclare`](Self::undeclare) would undeclare `name` now.
    pub fn check_undeclare(&self, name: &str) -> Result<(), ParameterError> {
        undeclarable(&lock(&self.store), name)
    }

    /// The override given at node creation for `name`, if any.
    pub(crate) fn override_of(&self, name: &str) -> Option<ParameterValue> {
        lock(&self.store).overrides.get(name).cloned()
    }

    /// Whether `name` is declared.
    pub fn has(&self, name: &str) -> bool {
        lock(&self.store).declared.contains_key(name)
    }

    /// The declared names under `prefixes` (all when empty) down to `depth` levels of
    /// `.`-separated names (0: any depth), and the prefixes of the names found: what the
    /// `list_parameters` service answers, by rclcpp's rules.
    pub fn list(&self, prefixes: &[String], depth: u64) -> (Vec<String>, Vec<String>) {
        let deeper_than = |s: &str| depth != 0 && s.matches('.').count() as u64 >= depth;
        let store = lock(&self.store);
        let (mut names, mut found_prefixes) = (Vec::new(), Vec::<String>::new());
        for name in store.declared.keys() {
            let all = prefixes.is_empty() && !deeper_than(name);
            let under_prefix = prefixes.iter().any(|prefix| {
                name == prefix
                    || name
                        .strip_prefix(prefix.as_str())
                        .is_some_and(|rest| rest.starts_with('.') && !deeper_than(rest))
            });
            if all || under_prefix {
                names.push(name.clone());
                if let Some((prefix, _)) = name.rsplit_once('.') {
                    if !found_prefixes.iter().any(|p| p == prefix) {
                        found_prefixes.push(prefix.to_string());
                    }
                }
            }
        }
        (names, found_prefixes)
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
        let (callbacks, hooks, observers) = {
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
            (callbacks, store.hooks.clone(), store.observers.clone())
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
        notify(&observers, &ParameterChange::Changed(changes.to_vec()));
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

    /// Registers an observer of every change for the life of the parameters (the node's
    /// `/parameter_events` publisher). Called without the store's lock, after the change.
    pub(crate) fn observe(&self, observer: impl Fn(&ParameterChange) + Send + Sync + 'static) {
        lock(&self.store).observers.push(Arc::new(observer));
    }

    pub(crate) fn on_change(&self, name: &str, hook: impl Fn(&Parameter) + Send + Sync + 'static) {
        lock(&self.store)
            .hooks
            .push((name.to_string(), Arc::new(hook)));
    }
}

fn undeclarable(store: &Store, name: &str) -> Result<(), ParameterError> {
    let d = store
        .declared
        .get(name)
        .ok_or_else(|| ParameterError::NotDeclared(name.to_string()))?;
    if d.descriptor.read_only {
        return Err(ParameterError::ReadOnly(name.to_string()));
    }
    if !d.descriptor.dynamic_typing {
        return Err(ParameterError::StaticallyTyped(name.to_string()));
    }
    Ok(())
}

fn notify(observers: &[Arc<ChangeObserver>], change: &ParameterChange) {
    for observer in observers {
        observer(change);
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

    #[test]
    fn lists_by_prefix_and_depth_as_rclcpp_does() {
        let p = Parameters::default();
        for name in ["a", "b.c", "b.d.e", "f.g"] {
            p.declare(name, 1, ParameterDescriptor::default()).unwrap();
        }
        let list = |prefixes: &[&str], depth| {
            let prefixes: Vec<String> = prefixes.iter().map(|s| s.to_string()).collect();
            p.list(&prefixes, depth)
        };
        assert_eq!(
            list(&[], 0),
            (
                vec!["a".into(), "b.c".into(), "b.d.e".into(), "f.g".into()],
                vec!["b".into(), "b.d".into(), "f".into()]
            )
        );
        assert_eq!(list(&[], 1).0, ["a"]);
        assert_eq!(list(&[], 2).0, ["a", "b.c", "f.g"]);
        assert_eq!(list(&["b"], 0).0, ["b.c", "b.d.e"]);
        // Below a prefix, the separator after it counts as one level (rclcpp's arithmetic).
        assert_eq!(list(&["b"], 1).0, Vec::<String>::new());
        assert_eq!(list(&["b"], 2).0, ["b.c"]);
        assert_eq!(list(&["b.c"], 1).0, ["b.c"]);
        assert!(list(&["x"], 0).0.is_empty());
    }

    #[test]
    fn undeclaring_needs_a_dynamically_typed_writable_parameter() {
        let p = Parameters::default();
        p.declare("fixed", 1, ParameterDescriptor::default())
            .unwrap();
        p.declare("ro", 1, ParameterDescriptor::read_only())
            .unwrap();
        let dynamic = ParameterDescriptor {
            dynamic_typing: true,
            ..ParameterDescriptor::default()
        };
        p.declare("loose", 1, dynamic).unwrap();
        assert!(matches!(
            p.undeclare("fixed"),
            Err(ParameterError::StaticallyTyped(_))
        ));
        assert!(matches!(
            p.undeclare("ro"),
            Err(ParameterError::ReadOnly(_))
        ));
        assert!(matches!(
            p.undeclare("nope"),
            Err(ParameterError::NotDeclared(_))
        ));
        p.undeclare("loose").unwrap();
        assert!(!p.has("loose") && p.has("fixed"));
    }

    #[test]
    fn observers_see_declarations_sets_and_deletions_but_not_refusals() {
        let p = Parameters::default();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        p.observe(move |c| s.lock().unwrap().push(c.clone()));
        let dynamic = ParameterDescriptor {
            dynamic_typing: true,
            ..ParameterDescriptor::default()
        };
        p.declare("x", 1, dynamic).unwrap();
        p.set("x", 2).unwrap();
        let _veto = p.add_on_set_callback(|_| Err("no".into()));
        assert!(p.set("x", 3).is_err());
        p.undeclare("x").unwrap();
        let param = |v: i64| Parameter {
            name: "x".into(),
            value: ParameterValue::Integer(v),
        };
        assert_eq!(
            *seen.lock().unwrap(),
            [
                ParameterChange::New(param(1)),
                ParameterChange::Changed(vec![param(2)]),
                ParameterChange::Deleted(param(2)),
            ]
        );
    }
}
