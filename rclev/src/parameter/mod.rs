//! Node parameters: declare, get, set, descriptors with read-only flags and ranges, set-callbacks
//! that can reject a change, and overrides given at node creation (`--ros-args -p name:=value`
//! or [`NodeOptions::parameter_override`](crate::NodeOptions::parameter_override)).
//!
//! - `value.rs`: [`ParameterValue`], [`Parameter`] and the conversions from Rust values.
//! - `descriptor.rs`: [`ParameterDescriptor`] and its [`Range`]s, and the checks a value must
//!   pass; `range.rs` holds the range arithmetic.
//! - `store.rs`: [`Parameters`], a node's store: declare, get, set, set-callbacks.
//! - `typed.rs`: [`TypedParameter`], declared with a [`ParameterBuilder`]: the same store,
//!   read and set as a Rust type.
//! - `args.rs`, `yaml.rs`: values as text (`-p name:=value`, params files), typed as rcl
//!   types YAML ([`ParameterValue::try_parse`]).
//! - `wire.rs`: the `rcl_interfaces` messages of values, parameters and descriptors (what the
//!   parameter services and `/parameter_events` carry).

mod args;
mod descriptor;
mod range;
mod store;
mod typed;
mod value;
mod wire;
pub(crate) mod yaml;

pub use args::ValueParseError;
pub use descriptor::{ParameterDescriptor, Range};
pub use store::{ParameterChange, Parameters, SetCallbackHandle, SetParametersResult};
pub use typed::{ParameterBuilder, ParameterType, TypedParameter};
pub use value::{Parameter, ParameterValue};

pub use crate::base::error::ParameterError;
