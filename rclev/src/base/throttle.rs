//! Rate-limited reports of a problem that a peer can repeat at will: a malformed sample, a
//! refused request, a listener failure. Every occurrence is counted; the first one from a
//! source is reported at once, later ones at most once per interval per source, with how many
//! were held back. A flood from a peer costs a counter increment per occurrence, never a log
//! line per occurrence (8 s of malformed `ros_discovery_info` samples once wrote 424,466).
//!
//! ```
//! use rclev::throttle::ReportThrottle;
//! use std::time::Duration;
//!
//! static MALFORMED: ReportThrottle = ReportThrottle::new(Duration::from_secs(10));
//! for _ in 0..1000 {
//!     if let Some(held_back) = MALFORMED.note("peer 01.0f.3c") {
//!         eprintln!("a malformed sample from peer 01.0f.3c{held_back}");
//!     }
//! }
//! assert_eq!(MALFORMED.total(), 1000);
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How many sources a throttle tracks. A peer that invents sources (new GUIDs, new topic
/// names) cannot grow it: the least recently reported source is forgotten.
const MAX_SOURCES: usize = 64;

/// At most this many reports per interval over all sources: many sources reporting at once
/// (a peer announcing thousands of bad endpoints) still give a bounded number of lines.
const MAX_REPORTS_PER_INTERVAL: u32 = 16;

/// Counts occurrences of one kind of problem and decides which to report (see the module
/// docs). `const`-constructible, so it can be a `static` per call site.
pub struct ReportThrottle {
    interval: Duration,
    total: AtomicU64,
    state: Mutex<State>,
}

struct State {
    sources: BTreeMap<String, Source>,
    /// The current global window: when it began and how many reports it has made.
    window_start: Option<Instant>,
    window_reports: u32,
}

struct Source {
    /// When this source was last reported.
    last_report: Instant,
    /// Occurrences since then that were not reported.
    held_back: u64,
    /// Occurrences in all.
    total: u64,
}

/// What a report says of the occurrences it stands for besides its own; `Display` gives ""
/// when there were none, else " (N more since the last report, T in all)".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeldBack {
    /// Occurrences from the source since its last report that were not reported.
    pub since_last_report: u64,
    /// Occurrences from the source in all, this one included (as far as the throttle
    /// remembers the source).
    pub total: u64,
}

impl fmt::Display for HeldBack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.since_last_report > 0 {
            write!(
                f,
                " ({} more since the last report, {} in all)",
                self.since_last_report, self.total
            )
        } else {
            Ok(())
        }
    }
}

impl ReportThrottle {
    /// A throttle reporting each source at most once per `interval`.
    pub const fn new(interval: Duration) -> Self {
        Self {
            interval,
            total: AtomicU64::new(0),
            state: Mutex::new(State {
                sources: BTreeMap::new(),
                window_start: None,
                window_reports: 0,
            }),
        }
    }

    /// Counts one occurrence from `source`; `Some` when it should be reported now, with what
    /// the report stands for besides itself.
    pub fn note(&self, source: &str) -> Option<HeldBack> {
        self.total.fetch_add(1, Ordering::Relaxed);
        let now = Instant::now();
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let state = &mut *state;
        match state.window_start {
            Some(start) if now.duration_since(start) < self.interval => {}
            _ => {
                state.window_start = Some(now);
                state.window_reports = 0;
            }
        }
        let budget_left = state.window_reports < MAX_REPORTS_PER_INTERVAL;
        let report = match state.sources.get_mut(source) {
            Some(s) => {
                s.total += 1;
                if budget_left && now.duration_since(s.last_report) >= self.interval {
                    let held = HeldBack {
                        since_last_report: s.held_back,
                        total: s.total,
                    };
                    s.last_report = now;
                    s.held_back = 0;
                    Some(held)
                } else {
                    s.held_back += 1;
                    None
                }
            }
            None => {
                if state.sources.len() >= MAX_SOURCES {
                    let oldest = state
                        .sources
                        .iter()
                        .min_by_key(|(_, s)| s.last_report)
                        .map(|(k, _)| k.clone());
                    if let Some(oldest) = oldest {
                        state.sources.remove(&oldest);
                    }
                }
                let mut s = Source {
                    last_report: now,
                    held_back: 0,
                    total: 1,
                };
                let report = if budget_left {
                    Some(HeldBack {
                        since_last_report: 0,
                        total: 1,
                    })
                } else {
                    // Over the global budget: remembered as reported an interval from now,
                    // so that its next occurrence after that is reported with this one
                    // counted.
                    s.held_back = 1;
                    None
                };
                state.sources.insert(source.to_string(), s);
                report
            }
        };
        if report.is_some() {
            state.window_reports += 1;
        }
        report
    }

    /// Occurrences counted so far, from every source.
    pub fn total(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }
}

impl fmt::Debug for ReportThrottle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReportThrottle")
            .field("interval", &self.interval)
            .field("total", &self.total())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_occurrence_of_a_source_is_reported_and_repeats_are_held_back() {
        let t = ReportThrottle::new(Duration::from_secs(3600));
        assert_eq!(
            t.note("a"),
            Some(HeldBack {
                since_last_report: 0,
                total: 1
            })
        );
        for _ in 0..10_000 {
            assert_eq!(t.note("a"), None);
        }
        assert!(t.note("b").is_some(), "another source is reported");
        assert_eq!(t.total(), 10_002);
    }

    #[test]
    fn a_source_is_reported_again_after_the_interval_with_what_was_held_back() {
        let t = ReportThrottle::new(Duration::ZERO);
        assert!(t.note("a").is_some());
        // A zero interval has passed at once: every occurrence is reported, none held back.
        let held = t.note("a").unwrap();
        assert_eq!(held.since_last_report, 0);
        assert_eq!(held.total, 2);
        assert_eq!(held.to_string(), "");
        let held = HeldBack {
            since_last_report: 5,
            total: 9,
        };
        assert_eq!(
            held.to_string(),
            " (5 more since the last report, 9 in all)"
        );
    }

    #[test]
    fn many_sources_stay_bounded_in_memory_and_in_reports() {
        let t = ReportThrottle::new(Duration::from_secs(3600));
        let reported = (0..10_000)
            .filter(|i| t.note(&format!("source {i}")).is_some())
            .count();
        assert_eq!(reported, MAX_REPORTS_PER_INTERVAL as usize);
        let state = t.state.lock().unwrap();
        assert_eq!(state.sources.len(), MAX_SOURCES);
        assert_eq!(t.total(), 10_000);
    }
}
