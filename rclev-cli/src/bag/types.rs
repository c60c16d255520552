//! The message types of a recording: a type rclev compiles in or finds installed
//! (`AMENT_PREFIX_PATH`) is used as is; any other is asked of a node that publishes it
//! (`crate::remote_types`), so that a bag records types rclev was not built with — which
//! `ros2 bag record` cannot do.

use rclev::msg::TypeInfo;

use crate::installed_types;

/// The type `type_name` if rclev compiles it in or finds it installed.
pub(crate) fn local(type_name: &str) -> Option<TypeInfo> {
    if let Some(info) = rclev::interfaces::MESSAGE_TYPES
        .iter()
        .find(|t| t.type_name == type_name)
    {
        return Some(*info);
    }
    installed_types::lookup(type_name).ok()
}
