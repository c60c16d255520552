//! The interface definitions rclev vendors (its generated types are made from them), by full
//! name (`pkg/msg/Name`): what `interface show|list` prints and what type names resolve
//! against when nothing is installed.

include!(concat!(env!("OUT_DIR"), "/interface_sources.rs"));
