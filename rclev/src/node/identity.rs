//! What a node is below its handle: its resolved name and namespace, its clocks, its
//! registration with the transport, its remapping rules and the types its endpoints use.
//! Workers and entities hold it; it names nothing else of the node folder.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::arguments::remap::{self, NameUse};
use crate::base::error::Result;
use crate::base::sync::lock;
use crate::clock::{Clock, ClockType, Lifeline};
use crate::msg::{TypeDescription, TypeHash, TypeSource};

/// A node's validated name and namespace, its clocks, and its registration with the transport.
pub(crate) struct NodeIdentity {
    pub(crate) name: String,
    pub(crate) namespace: String,
    /// The node as the transport knows it; endpoints are created through it.
    pub(crate) port: Arc<dyn crate::transport::NodePort>,
    /// The node's ROS-time clock.
    pub(crate) clock: Clock,
    pub(crate) life: Arc<Lifeline>,
    /// The types of the node's endpoints (for `~/get_type_description`).
    pub(crate) types: TypeCache,
    /// The remapping rules that apply to the node's names: its own, then the context's.
    pub(crate) remap_rules: Vec<crate::arguments::remap::RemapRule>,
}

impl NodeIdentity {
    /// `/ns/name`.
    pub(crate) fn fully_qualified_name(&self) -> String {
        if self.namespace == "/" {
            format!("/{}", self.name)
        } else {
            format!("{}/{}", self.namespace, self.name)
        }
    }

    /// A topic (or action) name as the node uses it: expanded, then remapped.
    pub(crate) fn expand(&self, topic: &str) -> Result<String> {
        self.resolve(topic, NameUse::Topic)
    }

    /// A service name as the node uses it: expanded, then remapped.
    pub(crate) fn expand_service(&self, service: &str) -> Result<String> {
        self.resolve(service, NameUse::Service)
    }

    fn resolve(&self, name: &str, kind: NameUse) -> Result<String> {
        let expanded = crate::names::expand_topic_name(name, &self.namespace, &self.name)?;
        match remap::name(
            &self.remap_rules,
            &expanded,
            kind,
            &self.name,
            &self.namespace,
        ) {
            Some(remapped) => remapped,
            None => Ok(expanded),
        }
    }

    /// A clock of `clock_type` whose sleeps end with the executor.
    pub(crate) fn clock_of(&self, clock_type: ClockType) -> Clock {
        if let Some(timeline) = self.clock.virtual_source() {
            return Clock::virtual_of(timeline.clone(), clock_type, self.life.clone());
        }
        match clock_type {
            ClockType::RosTime => self.clock.clone(),
            ClockType::SteadyTime => Clock::steady().with_life(self.life.clone()),
            ClockType::SystemTime => Clock::system().with_life(self.life.clone()),
        }
    }
}

/// A type a node uses, as `~/get_type_description` serves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CachedType {
    pub(crate) description: TypeDescription,
    /// The type's own source, then its referenced types' (`Message::TYPE_SOURCES`); empty
    /// for a type whose sources are not known.
    pub(crate) sources: &'static [TypeSource],
}

/// The types a node uses, by hash.
#[derive(Default)]
pub(crate) struct TypeCache {
    types: Mutex<HashMap<TypeHash, CachedType>>,
}

impl TypeCache {
    /// Records a type the node uses.
    pub(crate) fn register(
        &self,
        hash: TypeHash,
        description: TypeDescription,
        sources: &'static [TypeSource],
    ) {
        lock(&self.types).entry(hash).or_insert(CachedType {
            description,
            sources,
        });
    }

    pub(crate) fn get(&self, hash: &TypeHash) -> Option<CachedType> {
        lock(&self.types).get(hash).copied()
    }
}
