//! The message types of a recording.
