//! `rclev bag info`.

use std::path::Path;

use crate::errors::Result;

/// `rclev bag info`.
pub fn info(_bag: &Path) -> Result {
    Err("rclev bag info: being written".into())
}
