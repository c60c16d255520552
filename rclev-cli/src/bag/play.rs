//! `rclev bag play`.

use super::PlayArgs;
use crate::errors::Result;

/// `rclev bag play`.
pub fn play(_args: PlayArgs) -> Result {
    Err("rclev bag play: being written".into())
}
