//! `rclev topic hz` and `rclev topic bw`: rolling statistics of a topic's messages, printed
//! every second as `ros2 topic hz|bw` print them, until Ctrl-C. Only arrival times and sizes
//! are needed, so messages are not decoded.

use std::collections::VecDeque;
use std::time::{Duration, Instant, SystemTime};

use crate::wire::CliTransport;
use rclev::transport::{Gid, Payload};
use rclev::QoSProfile;

use crate::errors::Result;
use crate::topic::{absolute, cli_node, discover_type, subscribe, topic_type, NoType};

/// What is measured.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Stat {
    /// Message rate (`hz`).
    Rate,
    /// Bandwidth (`bw`).
    Bandwidth,
}

/// One message received: when it arrived, when its publisher sent it (`None`: not known),
/// who sent it, and its serialized size.
#[derive(Clone, Copy)]
struct Arrival {
    received: SystemTime,
    sent: Option<SystemTime>,
    publisher: Gid,
    bytes: usize,
}

/// A rolling window of arrivals.
struct Window {
    arrivals: VecDeque<Arrival>,
    size: usize,
}

impl Window {
    fn push(&mut self, arrival: Arrival) {
        self.arrivals.push_back(arrival);
        while self.arrivals.len() > self.size {
            self.arrivals.pop_front();
        }
    }

    /// The times the rate is measured on: when the publisher sent each message, if the whole
    /// window is one publisher's and each says; else when each arrived. Messages held up on
    /// the way (a stalled host, a network hiccup) arrive in a burst a few µs apart: measured
    /// on arrival, a 2 Hz talker read as 924 Hz; on its own clock, 2 Hz. (Several
    /// publishers' clocks need not agree, so arrivals are used for them.)
    fn times(&self) -> Vec<SystemTime> {
        let first = self.arrivals.front().map(|a| a.publisher);
        let one_sender = self
            .arrivals
            .iter()
            .all(|a| a.sent.is_some() && Some(a.publisher) == first);
        self.arrivals
            .iter()
            .map(|a| match (one_sender, a.sent) {
                (true, Some(sent)) => sent,
                _ => a.received,
            })
            .collect()
    }

    /// `average rate: …` and its interval statistics, or `None` before two messages.
    fn rate_report(&self) -> Option<String> {
        let times = self.times();
        let gaps: Vec<f64> = times
            .windows(2)
            .map(|w| w[1].duration_since(w[0]).unwrap_or_default().as_secs_f64())
            .collect();
        if gaps.is_empty() {
            return None;
        }
        let n = gaps.len() as f64;
        let mean = gaps.iter().sum::<f64>() / n;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / n;
        let min = gaps.iter().copied().fold(f64::INFINITY, f64::min);
        let max = gaps.iter().copied().fold(0.0, f64::max);
        Some(format!(
            "average rate: {:.3}\n\tmin: {min:.3}s max: {max:.3}s std dev: {:.5}s window: {}",
            1.0 / mean,
            var.sqrt(),
            gaps.len() + 1
        ))
    }

    /// `… B/s from n messages` and the size statistics, or `None` before two messages.
    fn bandwidth_report(&self) -> Option<String> {
        let times = self.times();
        let (first, last) = (*times.first()?, *times.last()?);
        let span = last.duration_since(first).unwrap_or_default().as_secs_f64();
        if self.arrivals.len() < 2 || span <= 0.0 {
            return None;
        }
        let sizes: Vec<usize> = self.arrivals.iter().map(|a| a.bytes).collect();
        let total: usize = sizes.iter().sum();
        let n = sizes.len();
        Some(format!(
            "{} from {n} messages\n\tMessage size mean: {} min: {} max: {}",
            per_second(total as f64 / span),
            bytes_text(total as f64 / n as f64),
            bytes_text(*sizes.iter().min().unwrap_or(&0) as f64),
            bytes_text(*sizes.iter().max().unwrap_or(&0) as f64),
        ))
    }
}

fn bytes_text(b: f64) -> String {
    if b >= 1e6 {
        format!("{:.2} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.2} KB", b / 1e3)
    } else {
        format!("{b:.0} B")
    }
}

fn per_second(b: f64) -> String {
    format!("{}/s", bytes_text(b))
}

/// `rclev topic hz|bw <topic>`: reports every second until Ctrl-C (or `reports` reports).
pub fn run(topic: &str, stat: Stat, window: usize, reports: Option<u64>) -> Result {
    let topic = absolute(topic)?;
    let transport = CliTransport::from_env()?;
    let node = cli_node(&transport, "stats")?;
    // As `ros2 topic hz|bw`: as long as it takes for a publisher to come (no limit: only
    // Ctrl-C ends the wait).
    let type_name = match discover_type(&transport, &topic, None) {
        Ok(t) => t,
        Err(NoType::Interrupted | NoType::TimedOut) => return Ok(()),
    };
    let info = topic_type(&transport, &node, &topic, &type_name)?;
    // Each message's source and reception times (see `Window::times`), not when this loop
    // took it: the rate of a burst taken at once is still right.
    let (sub, rx) = subscribe(&node, &topic, info, QoSProfile::best_available(), true)?;
    if stat == Stat::Bandwidth {
        println!("Subscribed to [{topic}]");
    }
    let mut window = Window {
        arrivals: VecDeque::new(),
        size: window.max(2),
    };
    let mut batch = Vec::new();
    let mut next_report = Instant::now() + Duration::from_secs(1);
    let mut reported = 0u64;
    // Messages since the last report: none means the publisher went quiet, which `ros2`
    // says instead of repeating the last figures.
    let mut fresh = 0u64;
    while !crate::interrupt::interrupted() && reports.is_none_or(|r| reported < r) {
        let wait = next_report.saturating_duration_since(Instant::now());
        let _ = rx.recv_timeout(wait.min(Duration::from_millis(500)));
        let now = Instant::now();
        loop {
            let more = sub.take_batch(64, &mut batch);
            for (payload, info) in batch.drain(..) {
                if let Payload::Serialized(bytes) = payload {
                    window.push(Arrival {
                        received: info.received_timestamp,
                        // Zero (the epoch) when the transport was not told it.
                        sent: (info.source_timestamp > SystemTime::UNIX_EPOCH)
                            .then_some(info.source_timestamp),
                        publisher: info.publisher_gid,
                        bytes: bytes.len(),
                    });
                    fresh += 1;
                }
            }
            if !more {
                break;
            }
        }
        if now >= next_report {
            next_report += Duration::from_secs(1);
            match report(&window, stat, fresh) {
                Some(r) => {
                    println!("{r}");
                    reported += 1;
                }
                None => println!("no new messages"),
            }
            fresh = 0;
        }
    }
    // Ctrl-C: the messages since the last report are not left out (a run shorter than a
    // second still says something).
    if fresh > 0 {
        if let Some(r) = report(&window, stat, fresh) {
            println!("{r}");
        }
    }
    Ok(())
}

/// The report on `window` (`None`: nothing to report; `fresh` messages came since the last).
fn report(window: &Window, stat: Stat, fresh: u64) -> Option<String> {
    match stat {
        _ if fresh == 0 => None,
        Stat::Rate => window.rate_report(),
        Stat::Bandwidth => window.bandwidth_report(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_from_a_regular_stream() {
        let start = SystemTime::now();
        let mut w = Window {
            arrivals: VecDeque::new(),
            size: 100,
        };
        assert!(w.rate_report().is_none());
        for i in 0..11 {
            let at = start + Duration::from_millis(100 * i);
            w.push(Arrival {
                received: at,
                sent: None,
                publisher: Gid([1; 16]),
                bytes: 32,
            });
        }
        let rate = w.rate_report().unwrap();
        assert!(rate.starts_with("average rate: 10.000"), "{rate}");
        assert!(rate.contains("window: 11"), "{rate}");
        let bw = w.bandwidth_report().unwrap();
        assert!(bw.starts_with("352 B/s from 11 messages"), "{bw}");
        assert!(bw.contains("mean: 32 B"), "{bw}");
        w.size = 3;
        w.push(Arrival {
            received: start + Duration::from_secs(2),
            sent: None,
            publisher: Gid([1; 16]),
            bytes: 64,
        });
        assert_eq!(w.arrivals.len(), 3);
    }

    /// The defect: after a stall, a 2 Hz talker's messages arrived in a burst and `hz` said
    /// `average rate: 924.184`. The publisher's own send times give its rate.
    #[test]
    fn a_burst_of_held_up_messages_is_measured_on_the_publishers_clock() {
        let start = SystemTime::now();
        let mut w = Window {
            arrivals: VecDeque::new(),
            size: 100,
        };
        for i in 0..5u64 {
            w.push(Arrival {
                received: start + Duration::from_micros(900 * i),
                sent: Some(start - Duration::from_secs(3) + Duration::from_millis(500 * i)),
                publisher: Gid([1; 16]),
                bytes: 16,
            });
        }
        let rate = w.rate_report().unwrap();
        assert!(rate.starts_with("average rate: 2.000"), "{rate}");
        // Two publishers: their clocks need not agree, so arrivals are measured.
        w.push(Arrival {
            received: start + Duration::from_millis(4),
            sent: Some(start + Duration::from_secs(100)),
            publisher: Gid([2; 16]),
            bytes: 16,
        });
        let rate = w.rate_report().unwrap();
        assert!(!rate.starts_with("average rate: 2.000"), "{rate}");
    }
}
