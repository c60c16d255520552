//! Message types rclev does not ship, read at run time from the installed interface files —
//! `<prefix>/share/<pkg>/{msg,srv,action}` for each prefix of `AMENT_PREFIX_PATH`, as `ros2`
//! finds them — with rclev-codegen's parser and REP-2016 describer. So `topic echo|pub`,
//! `service call` and `action send_goal` work on any type of a sourced ROS 2 installation
//! (test_msgs, a robot's own packages), not only on rclev's generated ones.
//!
//! A [`TypeInfo`] holds `'static` names and descriptions (generated code's are constants): the
//! few types a command uses are leaked once, and cached for the process.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Mutex, OnceLock};

use rclev::msg::{
    FieldDescription, IndividualTypeDescription, TypeDescription, TypeHash, TypeInfo,
};
use rclev_codegen::describe::{Description, IndividualDescription};
use rclev_codegen::model::{BaseType, Message};
use rclev_codegen::{Package, TypeName, TypeSet};

use crate::errors::Result;

/// Packages every service or action refers to implicitly (event info, goal ids, stamps).
const IMPLICIT: &[&str] = &[
    "builtin_interfaces",
    "service_msgs",
    "unique_identifier_msgs",
    "action_msgs",
];

fn leak(s: &str) -> &'static str {
    Box::leak(s.to_string().into_boxed_str())
}

fn individual(d: &IndividualDescription) -> IndividualTypeDescription {
    let fields: Vec<FieldDescription> = d
        .fields
        .iter()
        .map(|f| FieldDescription {
            name: leak(&f.name),
            type_id: f.type_id,
            capacity: f.capacity,
            string_capacity: f.string_capacity,
            nested_type_name: leak(&f.nested_type_name),
            default_value: leak(&f.default_value),
        })
        .collect();
    IndividualTypeDescription {
        type_name: leak(&d.type_name),
        fields: Box::leak(fields.into_boxed_slice()),
    }
}

fn description(d: &Description) -> TypeDescription {
    let referenced: Vec<IndividualTypeDescription> = d
        .referenced_type_descriptions
        .iter()
        .map(individual)
        .collect();
    TypeDescription {
        type_description: individual(&d.type_description),
        referenced_type_descriptions: Box::leak(referenced.into_boxed_slice()),
    }
}

/// The packages a package's definitions refer to.
fn references(package: &Package) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut scan = |m: &Message| {
        for f in &m.fields {
            if let BaseType::Nested(t) = &f.ty.base {
                out.insert(t.package.clone());
            }
        }
    };
    package.messages.iter().for_each(&mut scan);
    for s in &package.services {
        scan(&s.request);
        scan(&s.response);
    }
    for a in &package.actions {
        scan(&a.goal);
        scan(&a.result);
        scan(&a.feedback);
    }
    if !package.services.is_empty() || !package.actions.is_empty() {
        out.extend(IMPLICIT.iter().map(|p| p.to_string()));
    }
    out.remove(&package.name);
    out
}

/// Every type of `package` and of the packages it needs: rclev's bundled definitions where
/// they have the package, the installed ones otherwise.
fn type_set(package: &str) -> Result<TypeSet> {
    let bundled: BTreeMap<String, Package> = rclev_codegen::bundled_packages()?
        .into_iter()
        .map(|p| (p.name.clone(), p))
        .collect();
    let mut loaded: BTreeMap<String, Package> = BTreeMap::new();
    let mut wanted = vec![package.to_string()];
    while let Some(name) = wanted.pop() {
        if loaded.contains_key(&name) {
            continue;
        }
        let p = match bundled.get(&name) {
            Some(p) => p.clone(),
            None => {
                let dir = rclev_codegen::find_in_prefixes(&name, &[]).ok_or_else(|| {
                    format!(
                        "interface package '{name}' is neither one rclev ships nor installed \
                         under AMENT_PREFIX_PATH (source the ROS 2 setup first)"
                    )
                })?;
                rclev_codegen::load_package_dir(&dir)?
            }
        };
        wanted.extend(references(&p));
        loaded.insert(name, p);
    }
    let refs: Vec<&Package> = loaded.values().collect();
    Ok(TypeSet::build(&refs)?)
}

/// The RIHS01 hash of the service type `pkg/srv/Name` (or of an action's service,
/// `pkg/action/Name_SendGoal`, …): over Zenoh it is part of the service's key expression.
pub fn service_hash(type_name: &str) -> Result<TypeHash> {
    let package = type_name.split('/').next().unwrap_or_default();
    let set = type_set(package)?;
    let service = set.get(type_name).ok_or_else(|| {
        format!("service type '{type_name}' is not one rclev knows or finds installed")
    })?;
    Ok(TypeHash(*set.hashes.get(&service.name).ok_or("no hash")?))
}

/// The installed message type `pkg/kind/Name` (a `.msg` type, or a part ROS 2 derives from a
/// service or action: `pkg/srv/Name_Request`, `pkg/action/Name_SendGoal_Request`, …).
pub fn lookup(type_name: &str) -> Result<TypeInfo> {
    static CACHE: OnceLock<Mutex<HashMap<String, TypeInfo>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(info) = cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(type_name)
    {
        return Ok(*info);
    }
    let package = type_name.split('/').next().unwrap_or_default();
    let set = type_set(package)?;
    let message = set.get(type_name).ok_or_else(|| {
        format!("message type '{type_name}' is not one rclev knows or finds installed")
    })?;
    let name: &TypeName = &message.name;
    let info = TypeInfo {
        type_name: leak(type_name),
        dds_type_name: leak(&name.dds_name()),
        hash: TypeHash(*set.hashes.get(name).ok_or("no hash")?),
        description: description(set.descriptions.get(name).ok_or("no description")?),
    };
    cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(type_name.to_string(), info);
    Ok(info)
}
