//! `rclev bag record`.

use super::RecordArgs;
use crate::errors::Result;

/// `rclev bag record`.
pub fn record(_args: RecordArgs) -> Result {
    Err("rclev bag record: being written".into())
}
