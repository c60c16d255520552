//! How much of the ROS graph a wire transport's cache holds: what peers announce (DDS
//! discovery data, Zenoh liveliness tokens) comes from the network, so the cache that mirrors
//! it is bounded in entries and in bytes, with the same policy on every transport: an entry
//! beyond either bound is refused (counted, and reported rate-limited by the transport), and
//! what is cached already stays.
//!
//! A cache keeps a [`GraphBudget`] beside its maps, under the same lock: it asks the budget to
//! [`admit`](GraphBudget::admit) each new entry's bytes and gives them back on removal.

use std::fmt;

use crate::base::error::{Error, Result};

/// Bounds on a transport's graph cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GraphLimits {
    /// The most entries (endpoints, nodes, participants or tokens) it holds.
    pub max_entries: usize,
    /// The most bytes their names, types and announced data take.
    pub max_bytes: usize,
}

/// The environment variable that sets [`GraphLimits::max_entries`].
pub const GRAPH_CACHE_ENTRIES_VAR: &str = "RCLEV_GRAPH_CACHE_ENTRIES";
/// The environment variable that sets [`GraphLimits::max_bytes`].
pub const GRAPH_CACHE_BYTES_VAR: &str = "RCLEV_GRAPH_CACHE_BYTES";

impl GraphLimits {
    /// 100,000 entries, 64 MiB: far more than any ROS 2 system announces (a large robot has a
    /// few thousand endpoints of a few hundred bytes each), little enough that a peer flooding
    /// the graph costs megabytes, not the host.
    pub const DEFAULT: Self = Self {
        max_entries: 100_000,
        max_bytes: 64 << 20,
    };

    /// The defaults, with [`RCLEV_GRAPH_CACHE_ENTRIES`](GRAPH_CACHE_ENTRIES_VAR) and
    /// [`RCLEV_GRAPH_CACHE_BYTES`](GRAPH_CACHE_BYTES_VAR) applied when set (a positive
    /// integer each; anything else is an [`Error::InvalidArgument`]).
    pub fn from_env() -> Result<Self> {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    /// [`from_env`](Self::from_env) through `var` (a test's table).
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let read = |name: &str, default: usize| -> Result<usize> {
            match var(name) {
                None => Ok(default),
                Some(text) => match text.trim().parse::<usize>() {
                    Ok(n) if n > 0 => Ok(n),
                    _ => Err(Error::InvalidArgument {
                        argument: format!("{name}={text}"),
                        reason: "a positive integer is expected".into(),
                    }),
                },
            }
        };
        Ok(Self {
            max_entries: read(GRAPH_CACHE_ENTRIES_VAR, Self::DEFAULT.max_entries)?,
            max_bytes: read(GRAPH_CACHE_BYTES_VAR, Self::DEFAULT.max_bytes)?,
        })
    }
}

impl Default for GraphLimits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Why an entry was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GraphFull {
    limits: GraphLimits,
    by_bytes: bool,
}

impl fmt::Display for GraphFull {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.by_bytes {
            write!(
                f,
                "the graph cache holds its limit of {} bytes ({GRAPH_CACHE_BYTES_VAR})",
                self.limits.max_bytes
            )
        } else {
            write!(
                f,
                "the graph cache holds its limit of {} entries ({GRAPH_CACHE_ENTRIES_VAR})",
                self.limits.max_entries
            )
        }
    }
}

/// What a graph cache holds, against its [`GraphLimits`].
#[derive(Debug, Clone, Copy)]
pub struct GraphBudget {
    limits: GraphLimits,
    entries: usize,
    bytes: usize,
}

impl GraphBudget {
    /// An empty cache's budget.
    pub fn new(limits: GraphLimits) -> Self {
        Self {
            limits,
            entries: 0,
            bytes: 0,
        }
    }

    /// Takes a new entry of `bytes` into the budget, or says why not.
    pub fn admit(&mut self, bytes: usize) -> Result<(), GraphFull> {
        let full = |by_bytes| GraphFull {
            limits: self.limits,
            by_bytes,
        };
        if self.entries >= self.limits.max_entries {
            return Err(full(false));
        }
        if self.bytes.saturating_add(bytes) > self.limits.max_bytes {
            return Err(full(true));
        }
        self.entries += 1;
        self.bytes += bytes;
        Ok(())
    }

    /// Takes an entry in whatever the budget holds: the process's own, which must be in the
    /// graph (it still counts against what peers may add).
    pub fn admit_own(&mut self, bytes: usize) {
        self.entries += 1;
        self.bytes = self.bytes.saturating_add(bytes);
    }

    /// An entry of `bytes` (as admitted) left.
    pub fn release(&mut self, bytes: usize) {
        self.entries = self.entries.saturating_sub(1);
        self.bytes = self.bytes.saturating_sub(bytes);
    }

    /// An entry admitted with `old` bytes now takes `new` (an update of the same entry), or
    /// the update is refused (the old entry stays as it was).
    pub fn resize(&mut self, old: usize, new: usize) -> Result<(), GraphFull> {
        if new > old && self.bytes.saturating_add(new - old) > self.limits.max_bytes {
            return Err(GraphFull {
                limits: self.limits,
                by_bytes: true,
            });
        }
        self.bytes = self.bytes.saturating_sub(old).saturating_add(new);
        Ok(())
    }

    /// Entries held.
    pub fn entries(&self) -> usize {
        self.entries
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_beyond_either_bound_are_refused_and_removals_make_room() {
        let mut b = GraphBudget::new(GraphLimits {
            max_entries: 3,
            max_bytes: 100,
        });
        b.admit(40).unwrap();
        b.admit(40).unwrap();
        let full = b.admit(40).unwrap_err();
        assert!(
            full.to_string()
                .contains("100 bytes (RCLEV_GRAPH_CACHE_BYTES)"),
            "{full}"
        );
        b.admit(10).unwrap();
        let full = b.admit(1).unwrap_err();
        assert!(full.to_string().contains("3 entries"), "{full}");
        b.release(40);
        b.admit(1).unwrap();
        assert!(b.resize(1, 100).is_err());
        b.resize(1, 5).unwrap();
        assert_eq!((b.entries(), b.bytes()), (3, 55));
        b.admit_own(1000);
        assert_eq!(b.entries(), 4);
    }

    #[test]
    fn limits_come_from_the_environment() {
        let vars = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(
            GraphLimits::from_vars(vars(&[])).unwrap(),
            GraphLimits::DEFAULT
        );
        let set = GraphLimits::from_vars(vars(&[
            ("RCLEV_GRAPH_CACHE_ENTRIES", "10"),
            ("RCLEV_GRAPH_CACHE_BYTES", " 4096 "),
        ]))
        .unwrap();
        assert_eq!((set.max_entries, set.max_bytes), (10, 4096));
        for bad in ["0", "-1", "lots", ""] {
            let e = GraphLimits::from_vars(move |n| {
                (n == "RCLEV_GRAPH_CACHE_BYTES").then(|| bad.to_string())
            })
            .unwrap_err();
            assert!(e.to_string().contains("RCLEV_GRAPH_CACHE_BYTES"), "{e}");
        }
    }
}
