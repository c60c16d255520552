//! Fast DDS's errors as rclev's.

/// A C++ exception from the shim (Fast DDS refused or failed something) as an
/// [`rclev::Error::Transport`] carrying its message.
pub(crate) fn engine_error(e: cxx::Exception) -> rclev::Error {
    rclev::Error::Transport(e.what().to_string())
}
