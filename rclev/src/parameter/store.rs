//! A node's parameter store: declaration (with overrides given at node creation), reads, and
//! atomic multi-parameter sets checked against descriptors and set-callbacks.
//!
//! Ground rules:
//! - Two locks, taken in this order: `sets`, then `store`. `store` guards the declarations and
//!   the registered callbacks; it is held only for short sections that run no set-callback,
//!   change hook or observer. Those run without it, so they may read, declare and undeclare
//!   parameters.
//! - `sets` serializes sets. A set holds it from its descriptor checks through its
//!   set-callbacks, its commit, its observers and its change hooks; so the callbacks of a set
//!   judge the values every earlier set left, and `/parameter_events` and the hooks learn of
//!   sets in the order they were committed. Declarations and undeclarations take only `store`, so
//!   they never wait for a set's callbacks.
//! - Every declaration gets a generation, unique within the store. A set notes the generation
//!   of each parameter it checks and commits only if each is still declared with it (compared
//!   under `store`, in the same section that writes): a parameter undeclared, and perhaps
//!   declared again with another type or read-only, while the set's callbacks ran is never
//!   written with a value checked against its predecessor. Sets being serialized, nothing but a
//!   new declaration can change what a set checked, so an unchanged generation is enough.
//! - A set that starts on a thread already inside a set of the same store is not given `sets`
//!   again (it is not reentrant): from a set-callback it is refused
//!   ([`ParameterError::SetInSetCallback`]), as it would change what the callback is judging;
//!   from a change hook (the `use_sim_time` switch, whose jump callbacks are user code) it runs
//!   nested, inside the outer set's hold, after the outer set's commit.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, Weak};

use super::descriptor::ParameterDescriptor;
use super::value::{coerce, Parameter, ParameterValue};
use super::ParameterError;
use crate::base::sync::lock;

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
    /// Which declaration of the name this is (see the ground rules).
    generation: u64,
}

#[derive(Default)]
struct Store {
    declared: BTreeMap<String, Declared>,
    /// The generation the next declaration gets.
    next_generation: u64,
    overrides: BTreeMap<String, ParameterValue>,
    callbacks: Vec<Weak<SetCallback>>,
    /// Internal observers (e.g. `use_sim_time` → the time source), called after a change.
    hooks: Vec<(String, Arc<ChangeHook>)>,
    /// Internal set-callbacks, asked before the user's and registered for the node's life.
    guards: Vec<Arc<SetCallback>>,
    /// Told of every declaration, set and undeclaration (`/parameter_events`).
    observers: Vec<Arc<ChangeObserver>>,
}

/// A node's parameters ([`NodeState::parameters`](crate::NodeState::parameters)): declared
/// with a default and a descriptor, then read and set, each set checked against the
/// descriptor and the set-callbacks. The parameter services and `/parameter_events` work on
/// this store.
///
/// ```
/// use rclev::{Parameter, ParameterDescriptor, ParameterError, ParameterValue};
///
/// let executor = rclev::Context::default().create_basic_executor();
/// let node = executor.create_node("controller")?;
/// let parameters = node.parameters();
/// let limits = ParameterDescriptor::default().floating_point_range(0.0, 2.0, 0.0);
/// assert_eq!(parameters.declare("max_speed", 1.5, limits)?, ParameterValue::Double(1.5));
/// parameters.declare("mode", "auto", ParameterDescriptor::default())?;
/// assert!(matches!(parameters.set("max_speed", 3.0), Err(ParameterError::OutOfRange { .. })));
/// // A set-callback may reject a change with a reason (registered while the handle lives).
/// let _no_turbo = node.add_on_set_parameters_callback(|changes: &[Parameter]| {
///     match changes.iter().any(|p| p.name == "mode" && p.value == ParameterValue::from("turbo")) {
///         true => Err("turbo is not allowed here".to_string()),
///         false => Ok(()),
///     }
/// });
/// // Several at once: all are set, or none is.
/// let both = [
///     Parameter { name: "max_speed".into(), value: 2.0.into() },
///     Parameter { name: "mode".into(), value: "turbo".into() },
/// ];
/// assert!(matches!(parameters.set_all(&both), Err(ParameterError::Rejected(_))));
/// assert_eq!(parameters.get("max_speed"), Some(ParameterValue::Double(1.5)));
/// assert!(parameters.has("use_sim_time")); // every node declares it
/// # Ok::<(), rclev::Error>(())
/// ```
#[derive(Default)]
pub struct Parameters {
    store: Mutex<Store>,
    /// Held by the set in progress, from its checks to its last notification.
    sets: Mutex<()>,
}

/// Where a set of a store stands, as the thread running it records it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum SetPhase {
    /// Checking and asking the set-callbacks: no other set of the store may start here.
    Asking,
    /// Committed; telling the observers and change hooks, which may set again.
    Telling,
}

std::thread_local! {
    /// The sets this thread is running, innermost last: the store (by the address of its
    /// `sets` lock, which is unique among live stores, and an entry never outlives the
    /// `&Parameters` its set borrows) and how far the set is.
    static SETTING: RefCell<Vec<(usize, SetPhase)>> = const { RefCell::new(Vec::new()) };
}

/// Records a set on this thread's [`SETTING`] for as long as it lives, unwinding included.
struct SettingHere {
    store: usize,
}

impl SettingHere {
    fn enter(store: usize) -> Self {
        SETTING.with(|s| s.borrow_mut().push((store, SetPhase::Asking)));
        Self { store }
    }

    fn committed(&self) {
        SETTING.with(|s| {
            if let Some(entry) = s.borrow_mut().iter_mut().rev().find(|e| e.0 == self.store) {
                entry.1 = SetPhase::Telling;
            }
        });
    }

    /// How far the innermost set of `store` on this thread is, if one runs here.
    fn phase(store: usize) -> Option<SetPhase> {
        SETTING.with(|s| s.borrow().iter().rev().find(|e| e.0 == store).map(|e| e.1))
    }
}

impl Drop for SettingHere {
    fn drop(&mut self) {
        SETTING.with(|s| {
            let mut s = s.borrow_mut();
            if let Some(i) = s.iter().rposition(|e| e.0 == self.store) {
                s.remove(i);
            }
        });
    }
}

/// Keeps a set-callback registered; dropping it unregisters the callback.
#[must_use = "dropping this handle unregisters the callback at once, and `let _ = …` drops it too: keep it in a named binding (`let _callback = …`)"]
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
            sets: Mutex::default(),
        }
    }

    /// Declares a parameter; an override given at node creation replaces `default`. Returns
    /// the value in effect, which the descriptor must allow, as in rclcpp: a descriptor whose
    /// range cannot be used is refused with [`ParameterError::InvalidDescriptor`], an override
    /// of another type or outside the range with [`ParameterError::InvalidOverride`], a
    /// default outside the range (when no override replaces it) with
    /// [`ParameterError::OutOfRange`]. Set-callbacks are not asked.
    pub fn declare(
        &self,
        name: &str,
        default: impl Into<ParameterValue>,
        descriptor: ParameterDescriptor,
    ) -> Result<ParameterValue, ParameterError> {
        self.declare_with(name, default.into(), descriptor, true)
    }

    /// [`declare`](Self::declare) that takes `default` even if an override was given for
    /// `name` (rclcpp's `ignore_override`): the override is neither used nor checked, and the
    /// default must be allowed by the descriptor.
    pub fn declare_ignoring_override(
        &self,
        name: &str,
        default: impl Into<ParameterValue>,
        descriptor: ParameterDescriptor,
    ) -> Result<ParameterValue, ParameterError> {
        self.declare_with(name, default.into(), descriptor, false)
    }

    pub(super) fn declare_with(
        &self,
        name: &str,
        default: ParameterValue,
        descriptor: ParameterDescriptor,
        use_override: bool,
    ) -> Result<ParameterValue, ParameterError> {
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
        let given = store.overrides.get(name).filter(|_| use_override);
        let value = match given {
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
            None => {
                // rclcpp checks the value the declaration takes, whichever it is: a default
                // that an override replaces is not looked at.
                descriptor
                    .check(&default)
                    .map_err(|reason| ParameterError::OutOfRange {
                        name: name.to_string(),
                        reason,
                    })?;
                default
            }
        };
        let generation = store.next_generation;
        store.next_generation += 1;
        store.declared.insert(
            name.to_string(),
            Declared {
                value: value.clone(),
                descriptor,
                generation,
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
    ///
    /// Between concurrent callers, sets of one node's parameters are serializable: each runs
    /// its checks, set-callbacks, commit, `/parameter_events` observers and change hooks while
    /// no other set of them runs, so the callbacks judge the values every earlier set left, and
    /// a set's values are never mixed with another's. Declaring and undeclaring do not wait for
    /// sets: if a parameter of the set is undeclared while its set-callbacks run, nothing is
    /// set and the set fails with [`ParameterError::NotDeclared`], or with
    /// [`ParameterError::Redeclared`] if the name was declared again meanwhile.
    ///
    /// A set-callback must not set parameters of the same node
    /// ([`ParameterError::SetInSetCallback`]), nor wait for another thread that does: that
    /// set waits for the callback's own set to end.
    pub fn set_all(&self, changes: &[Parameter]) -> Result<(), ParameterError> {
        let me = &self.sets as *const Mutex<()> as usize;
        match SettingHere::phase(me) {
            Some(SetPhase::Asking) => Err(ParameterError::SetInSetCallback),
            // A change hook of a set of this store, on this thread: that set holds `sets` and
            // has committed; this one runs inside its hold.
            Some(SetPhase::Telling) => self.set_serialized(me, changes),
            None => {
                let _serial = lock(&self.sets);
                self.set_serialized(me, changes)
            }
        }
    }

    /// [`set_all`](Self::set_all), with `sets` held by this thread.
    fn set_serialized(&self, me: usize, changes: &[Parameter]) -> Result<(), ParameterError> {
        let here = SettingHere::enter(me);
        let (generations, callbacks, hooks, observers) = {
            let store = lock(&self.store);
            let generations = changes
                .iter()
                .map(|p| check_change(&store, p))
                .collect::<Result<Vec<u64>, _>>()?;
            let callbacks: Vec<_> = store
                .guards
                .iter()
                .cloned()
                .chain(store.callbacks.iter().filter_map(Weak::upgrade))
                .collect();
            (
                generations,
                callbacks,
                store.hooks.clone(),
                store.observers.clone(),
            )
        };
        // Called without the store's lock, so a callback may read parameters.
        for cb in callbacks {
            cb(changes).map_err(ParameterError::Rejected)?;
        }
        {
            let mut store = lock(&self.store);
            // Still the declarations that were checked? (See the ground rules.)
            for (p, generation) in changes.iter().zip(&generations) {
                match store.declared.get(&p.name) {
                    Some(d) if d.generation == *generation => {}
                    Some(_) => return Err(ParameterError::Redeclared(p.name.clone())),
                    None => return Err(ParameterError::NotDeclared(p.name.clone())),
                }
            }
            store.callbacks.retain(|w| w.strong_count() > 0);
            for p in changes {
                if let Some(d) = store.declared.get_mut(&p.name) {
                    d.value = p.value.clone();
                }
            }
        }
        here.committed();
        // Observers before hooks: a set made by a hook runs nested, after this one's event
        // has gone out, so events stay in commit order.
        notify(&observers, &ParameterChange::Changed(changes.to_vec()));
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

    /// Registers an observer of every change for the life of the parameters (the node's
    /// `/parameter_events` publisher). Called without the store's lock, after the change.
    pub(crate) fn observe(&self, observer: impl Fn(&ParameterChange) + Send + Sync + 'static) {
        lock(&self.store).observers.push(Arc::new(observer));
    }

    /// Registers an internal hook called after every committed set of `name`, for the life of
    /// the parameters. It runs within the set (holding `sets`): a set it makes runs nested.
    pub(crate) fn on_change(&self, name: &str, hook: impl Fn(&Parameter) + Send + Sync + 'static) {
        lock(&self.store)
            .hooks
            .push((name.to_string(), Arc::new(hook)));
    }
}

/// Why `p` cannot be set now, if it cannot; else the generation of the declaration it was
/// checked against.
fn check_change(store: &Store, p: &Parameter) -> Result<u64, ParameterError> {
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
    Ok(d.generation)
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

    fn param(name: &str, value: impl Into<ParameterValue>) -> Parameter {
        Parameter {
            name: name.into(),
            value: value.into(),
        }
    }

    /// A set from a set-callback would change what the callback judges, and under `sets` it
    /// would wait for itself: it is refused, and the set that asked goes on.
    #[test]
    fn a_set_from_a_set_callback_is_refused() {
        let p = Arc::new(Parameters::default());
        p.declare("a", 1, ParameterDescriptor::default()).unwrap();
        p.declare("b", 1, ParameterDescriptor::default()).unwrap();
        let nested = Arc::new(Mutex::new(None));
        let (q, n) = (Arc::downgrade(&p), nested.clone());
        let _cb = p.add_on_set_callback(move |changes| {
            if changes.iter().any(|c| c.name == "a") {
                *n.lock().unwrap() = q.upgrade().map(|q| q.set("b", 2));
            }
            Ok(())
        });
        p.set("a", 2).unwrap();
        assert_eq!(
            *nested.lock().unwrap(),
            Some(Err(ParameterError::SetInSetCallback))
        );
        assert_eq!(p.get("a"), Some(ParameterValue::Integer(2)));
        assert_eq!(p.get("b"), Some(ParameterValue::Integer(1)));
    }

    /// A change hook (the `use_sim_time` switch runs user jump callbacks in one) may set: that
    /// set runs nested, after the outer one's commit and event, so events keep commit order.
    #[test]
    fn a_set_from_a_change_hook_runs_nested_after_the_outer_event() {
        let p = Arc::new(Parameters::default());
        p.declare("a", 1, ParameterDescriptor::default()).unwrap();
        p.declare("b", 1, ParameterDescriptor::default()).unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        p.observe(move |c| s.lock().unwrap().push(c.clone()));
        let q = Arc::downgrade(&p);
        p.on_change("a", move |_| {
            let q = q.upgrade().unwrap();
            q.set("b", 2).unwrap();
        });
        p.set("a", 2).unwrap();
        assert_eq!(p.get("b"), Some(ParameterValue::Integer(2)));
        assert_eq!(
            *seen.lock().unwrap(),
            [
                ParameterChange::Changed(vec![param("a", 2)]),
                ParameterChange::Changed(vec![param("b", 2)]),
            ]
        );
    }

    /// Sets are serializable: a set-callback that keeps `x + y <= 10` by reading the values
    /// not in the change holds it however two threads race, and the events come in commit
    /// order (replaying them gives the store's final values).
    #[test]
    fn concurrent_sets_are_judged_and_reported_one_at_a_time() {
        let p = Arc::new(Parameters::default());
        p.declare("x", 0, ParameterDescriptor::default()).unwrap();
        p.declare("y", 0, ParameterDescriptor::default()).unwrap();
        let q = Arc::downgrade(&p);
        let _limit = p.add_on_set_callback(move |changes| {
            let q = q.upgrade().unwrap();
            let value = |name: &str| match changes.iter().rev().find(|c| c.name == name) {
                Some(c) => c.value.clone(),
                None => q.get(name).unwrap(),
            };
            let (ParameterValue::Integer(x), ParameterValue::Integer(y)) = (value("x"), value("y"))
            else {
                return Err("not integers".into());
            };
            // Widens the window between reading and committing that an unserialized set
            // would leave to the other thread.
            std::thread::yield_now();
            match x + y <= 10 {
                true => Ok(()),
                false => Err(format!("x + y = {}", x + y)),
            }
        });
        let replay = Arc::new(Mutex::new((0, 0, Vec::new())));
        let r = replay.clone();
        p.observe(move |c| {
            let mut r = r.lock().unwrap();
            if let ParameterChange::Changed(ps) = c {
                for q in ps {
                    let ParameterValue::Integer(v) = q.value else {
                        continue;
                    };
                    match q.name.as_str() {
                        "x" => r.0 = v,
                        _ => r.1 = v,
                    }
                }
                let sum = r.0 + r.1;
                if sum > 10 {
                    r.2.push(sum);
                }
            }
        });
        let racers: Vec<_> = ["x", "y"]
            .into_iter()
            .map(|name| {
                let p = p.clone();
                std::thread::spawn(move || {
                    for round in 0..2_000 {
                        let _ = p.set(name, if round % 2 == 0 { 6 } else { 0 });
                    }
                })
            })
            .collect();
        for racer in racers {
            racer.join().unwrap();
        }
        let (x, y) = match (p.get("x"), p.get("y")) {
            (Some(ParameterValue::Integer(x)), Some(ParameterValue::Integer(y))) => (x, y),
            other => panic!("{other:?}"),
        };
        let replay = replay.lock().unwrap();
        assert!(x + y <= 10, "x = {x}, y = {y}");
        assert!(replay.2.is_empty(), "events replay to sums {:?}", replay.2);
        assert_eq!((replay.0, replay.1), (x, y), "events out of commit order");
    }
}
