//! Cyclone DDS's `ddsperf` (Debian `cyclonedds-tools`) as the outside reference.
//!
//! - Throughput: `ddsperf -k 10 sub` and `ddsperf -k 10 pub size N+12`: reliable,
//!   KeepLast(10) data topic, type `KS` (sequence number, key, octet sequence); `size` counts
//!   the whole serialized sample, and `KS`'s fixed part is 12 bytes, as the fixed part of our
//!   `ByteMultiArray` is (empty `layout.dim`, `layout.data_offset`, the data's length), so
//!   both put the same number of bytes on the wire. The sub prints received samples every
//!   second; the rate is taken over the whole seconds inside the window.
//! - Round trip: `ddsperf pong` and `ddsperf ping 1000Hz size N+12` (ping/pong are always
//!   reliable KeepLast(1) in ddsperf). The ping prints percentiles every second; p50 and p99
//!   are the medians of the per-second values in the window.
//!
//! Discovery is unicast on `lo` (the namespace's `lo` has no multicast), configured through
//! `CYCLONEDDS_URI`. Note that ddsperf enables write batching (`dds_write_set_batch`) for its
//! whole process: its small-message throughput is Cyclone's batched mode, which neither
//! rclev nor the raw Fast DDS writer (synchronous publish mode) has.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use super::procs::Proc;
use super::{median, steal_percent, RoundTrip, Throughput, START_LIMIT};
use crate::errors::Result;

/// Cyclone's configuration: `lo` only, unicast discovery of the other processes on it.
const CONFIG: &str = "<CycloneDDS><Domain id=\"any\"><General><Interfaces>\
<NetworkInterface name=\"lo\"/></Interfaces><AllowMulticast>false</AllowMulticast></General>\
<Discovery><ParticipantIndex>auto</ParticipantIndex><Peers><Peer address=\"127.0.0.1\"/>\
</Peers></Discovery></Domain></CycloneDDS>";
/// Bytes of ddsperf's `KS` sample before its octet sequence's data.
const KS_FIXED: usize = 12;
/// Seconds ddsperf runs beyond warm-up and window: time to discover, then to print the last
/// per-second report (it is killed when done anyway).
const SLACK_SECS: f64 = 15.0;

fn find() -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join("ddsperf"))
        .find(|p| p.is_file())
}

/// Whether `ddsperf` is on the `PATH`.
pub fn available() -> bool {
    find().is_some()
}

fn ddsperf(args: &[&str], secs: f64, name: &str) -> Result<Proc> {
    let mut cmd = Command::new(find().ok_or("ddsperf is not on the PATH")?);
    let domain = std::env::var("ROS_DOMAIN_ID").unwrap_or_else(|_| "0".into());
    cmd.args(["-i", &domain, "-D", &format!("{secs:.0}")])
        .args(args)
        .env("CYCLONEDDS_URI", CONFIG);
    let mut p = Proc::spawn(cmd, format!("ddsperf {name}"))?;
    // Its first line reports its own participant: it exists and can be discovered.
    p.wait_for(START_LIMIT, |l| l.contains("(self)"))?;
    Ok(p)
}

/// ddsperf's timestamp of a report line: `[pid] 12.000 …`.
fn timestamp(line: &str) -> Option<f64> {
    let mut tokens = line.split_whitespace();
    tokens.next().filter(|t| t.starts_with('['))?;
    tokens.next()?.parse().ok()
}

/// The token after `key` (its first occurrence after token `from`).
fn after<'a>(tokens: &[&'a str], key: &str, from: usize) -> Option<(usize, &'a str)> {
    let i = tokens.iter().skip(from).position(|t| *t == key)? + from;
    Some((i + 1, tokens.get(i + 1)?))
}

/// A sub report: `[pid] T  size S total N lost N delta N lost N rate …`: (T, delta
/// received, delta lost).
fn sub_report(line: &str) -> Option<(f64, u64, u64)> {
    let tokens: Vec<&str> = line.split_whitespace().collect();
    let (_, total) = after(&tokens, "total", 0)?;
    total.parse::<u64>().ok()?;
    let (i, delta) = after(&tokens, "delta", 0)?;
    let (_, lost) = after(&tokens, "lost", i)?;
    Some((timestamp(line)?, delta.parse().ok()?, lost.parse().ok()?))
}

/// A ping report: `[pid] T  host:pid size S mean Xus min Xus 50% Xus 90% Xus 99% Xus max Xus
/// cnt N`: (T, p50 µs, p99 µs, count).
fn ping_report(line: &str) -> Option<(f64, f64, f64, u64)> {
    let tokens: Vec<&str> = line.split_whitespace().collect();
    let us = |key| -> Option<f64> { after(&tokens, key, 0)?.1.strip_suffix("us")?.parse().ok() };
    let (_, cnt) = after(&tokens, "cnt", 0)?;
    Some((timestamp(line)?, us("50%")?, us("99%")?, cnt.parse().ok()?))
}

/// A pub report: `[pid] T 1.44M/s …`: samples written per second.
fn pub_rate(line: &str) -> Option<(f64, f64)> {
    let t = timestamp(line)?;
    let rate = line.split_whitespace().nth(2)?.strip_suffix("/s")?;
    let (digits, mult) = match rate.as_bytes().last()? {
        b'k' => (&rate[..rate.len() - 1], 1e3),
        b'M' => (&rate[..rate.len() - 1], 1e6),
        _ => (rate, 1.0),
    };
    Some((t, digits.parse::<f64>().ok()? * mult))
}

/// The reports whose timestamps lie in the window that starts `warmup` after the first one
/// (at `first`) and lasts `secs` (rounded to ddsperf's whole-second reports, at least one).
fn in_window<T>(
    reports: impl Iterator<Item = (f64, T)>,
    first: f64,
    warmup: Duration,
    secs: Duration,
) -> Vec<(f64, T)> {
    let start = first + warmup.as_secs_f64();
    let end = start + secs.as_secs_f64().round().max(1.0);
    reports
        .filter(|(t, _)| *t > start + 0.01 && *t <= end + 0.01)
        .collect()
}

/// Sub and pub, as fast as ddsperf publishes.
pub fn throughput(size: usize, warmup: Duration, secs: Duration) -> Result<Throughput> {
    let run = warmup.as_secs_f64() + secs.as_secs_f64() + SLACK_SECS;
    let mut sub = ddsperf(&["-k", "10", "sub"], run, "sub")?;
    let size_arg = (size + KS_FIXED).to_string();
    let mut publisher = ddsperf(
        &[
            "-k",
            "10",
            "-Qminmatch:1",
            "-Qinitwait:20",
            "pub",
            "size",
            &size_arg,
        ],
        run,
        "pub",
    )?;
    let first_line = sub.wait_for(START_LIMIT, |l| sub_report(l).is_some())?;
    let first = timestamp(&first_line).ok_or("no timestamp")?;
    // The window in our time: its start and end as the reports will show them, with the CPU
    // and steal readings at both ends.
    std::thread::sleep(warmup);
    let steal0 = crate::report::steal_jiffies();
    let cpu0 = (publisher.cpu_secs()?, sub.cpu_secs()?);
    let t0 = std::time::Instant::now();
    std::thread::sleep(secs);
    let cpu1 = (publisher.cpu_secs()?, sub.cpu_secs()?);
    let elapsed = t0.elapsed().as_secs_f64();
    let steal1 = crate::report::steal_jiffies();
    // The last whole-second report of the window comes up to a second later.
    std::thread::sleep(Duration::from_millis(1300));
    let sub_lines = sub.drain();
    let pub_lines = publisher.drain();
    let reports = in_window(
        sub_lines
            .iter()
            .filter_map(|l| sub_report(l))
            .map(|(t, n, lost)| (t, (n, lost))),
        first,
        warmup,
        secs,
    );
    let (Some(&(t_first, _)), Some(&(t_last, _))) = (reports.first(), reports.last()) else {
        return Err("ddsperf sub reported nothing in the window".into());
    };
    // Each report covers the second before it.
    let span = t_last - t_first + 1.0;
    let received: u64 = reports.iter().map(|(_, (n, _))| n).sum();
    let lost: u64 = reports.iter().map(|(_, (_, l))| l).sum();
    let pub_first = pub_lines.iter().find_map(|l| pub_rate(l)).map(|(t, _)| t);
    let sent_per_s = pub_first.and_then(|pf| {
        // The pub's clock started a moment after the sub's: align on its own first report.
        let rates = in_window(
            pub_lines.iter().filter_map(|l| pub_rate(l)),
            pf,
            warmup,
            secs,
        );
        (!rates.is_empty()).then(|| median(rates.into_iter().map(|(_, r)| r).collect()))
    });
    Ok(Throughput {
        msgs_per_s: received as f64 / span,
        sent_per_s,
        lost_percent: if received + lost > 0 {
            100.0 * lost as f64 / (received + lost) as f64
        } else {
            0.0
        },
        sender_cores: (cpu1.0 - cpu0.0) / elapsed,
        receiver_cores: (cpu1.1 - cpu0.1) / elapsed,
        steal_percent: steal_percent(steal0, steal1),
    })
}

/// Pong and ping at `hz`.
pub fn round_trip(size: usize, hz: f64, warmup: Duration, secs: Duration) -> Result<RoundTrip> {
    let run = warmup.as_secs_f64() + secs.as_secs_f64() + SLACK_SECS;
    let _pong = ddsperf(&["pong"], run, "pong")?;
    let size_arg = (size + KS_FIXED).to_string();
    let rate = format!("{hz}Hz");
    let mut ping = ddsperf(
        &[
            "-Qminmatch:1",
            "-Qinitwait:20",
            "ping",
            &rate,
            "size",
            &size_arg,
        ],
        run,
        "ping",
    )?;
    let first_line = ping.wait_for(START_LIMIT, |l| ping_report(l).is_some())?;
    let first = timestamp(&first_line).ok_or("no timestamp")?;
    std::thread::sleep(warmup + secs + Duration::from_millis(1300));
    let lines = ping.drain();
    let reports = in_window(
        lines
            .iter()
            .filter_map(|l| ping_report(l))
            .map(|(t, p50, p99, n)| (t, (p50, p99, n))),
        first,
        warmup,
        secs,
    );
    if reports.is_empty() {
        return Err("ddsperf ping reported nothing in the window".into());
    }
    Ok(RoundTrip {
        p50_us: median(reports.iter().map(|(_, (p, _, _))| *p).collect()),
        p99_us: median(reports.iter().map(|(_, (_, p, _))| *p).collect()),
        samples: reports.iter().map(|(_, (_, _, n))| n).sum(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_parse() {
        let sub = "[29960] 3.000  size 28 total 2880386 lost 1510019 delta 1406489 lost 303029 \
                   rate 1406.49 kS/s 315.05 Mb/s (288.04 kS/s 64.52 Mb/s)";
        assert_eq!(sub_report(sub), Some((3.0, 1406489, 303029)));
        assert_eq!(sub_report("[29960] 1.000  rss:8.9MB vcsw:1239"), None);
        let ping = "[1234] 2.000  vm:1235 size 28 mean 80.123us min 50.000us 50% 75.500us \
                    90% 90.000us 99% 150.250us max 400.000us cnt 1000";
        assert_eq!(ping_report(ping), Some((2.0, 75.5, 150.25, 1000)));
        assert_eq!(ping_report(sub), None);
        let publ = "[29961] 4.000 1.31M/s   0n |@_____........................|   0%   5m";
        assert_eq!(pub_rate(publ), Some((4.0, 1.31e6)));
        assert_eq!(pub_rate("[1] 4.000  12.5k/s 0n"), Some((4.0, 12500.0)));
        assert_eq!(pub_rate("[29961] 1.000  rss:7.5MB vcsw:1725"), None);
    }

    #[test]
    fn the_window_takes_whole_seconds_after_the_warm_up() {
        let reports = (1..=8).map(|t| (t as f64, t));
        let w = in_window(
            reports,
            1.0,
            Duration::from_secs(1),
            Duration::from_secs_f64(2.0),
        );
        assert_eq!(w.iter().map(|(_, n)| *n).collect::<Vec<_>>(), [3, 4]);
    }
}
