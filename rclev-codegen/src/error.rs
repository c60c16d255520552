//! The one error type: where in which definition file, and what is wrong.

use std::fmt;
use std::path::{Path, PathBuf};

/// A problem in a definition file, a package layout or the output.
///
/// `Display` reads like a compiler message: `msg/Foo.msg:3: unknown type 'Bar'`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// The file the problem is in (or the directory, for layout problems).
    pub file: PathBuf,
    /// The 1-based line, when the problem is on one.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl Error {
    /// An error on `line` of `file`.
    pub fn at(file: &Path, line: usize, message: impl Into<String>) -> Self {
        Self {
            file: file.to_path_buf(),
            line: Some(line),
            message: message.into(),
        }
    }
    /// An error about a whole file or directory.
    pub fn in_file(file: &Path, message: impl Into<String>) -> Self {
        Self {
            file: file.to_path_buf(),
            line: None,
            message: message.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{}: {}", self.file.display(), line, self.message),
            None => write!(f, "{}: {}", self.file.display(), self.message),
        }
    }
}

impl std::error::Error for Error {}

/// Shorthand for results with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
