//! `rclev bag info`: what a bag holds, laid out as `ros2 bag info` prints it — files, size,
//! storage, distribution, duration, start and end, message count, and each topic with its
//! type, count and serialization format. A bag its recorder never closed (no
//! `metadata.yaml`, or a file without its summary) is read from its files up to the last
//! complete chunk, and the output says so.

use std::fmt::Write as _;
use std::path::Path;

use rclev_bag::{BagMetadata, BagReader};

use crate::errors::Result;

/// `ros2 bag info`'s label column.
const LABEL: usize = 19;

/// `1536` → `1.5 KiB`, as rosbag2 prints sizes.
fn size_text(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// The local calendar time of `ns` since the epoch: `Dec  6 2026 17:00:00.123456789`.
fn date_text(ns: u64) -> String {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let secs = (ns / 1_000_000_000) as libc::time_t;
    // SAFETY: localtime_r reads the `time_t` we pass and writes the zeroed `tm` we own (an
    // all-zero `tm` is valid).
    let tm = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        libc::localtime_r(&secs, &mut tm);
        tm
    };
    format!(
        "{} {:>2} {} {:02}:{:02}:{:02}.{:09}",
        MONTHS[tm.tm_mon.clamp(0, 11) as usize],
        tm.tm_mday,
        tm.tm_year + 1900,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        ns % 1_000_000_000
    )
}

/// `ns` as seconds with nine decimals.
fn seconds_text(ns: u64) -> String {
    format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
}

fn line(out: &mut String, label: &str, value: &str) {
    let _ = writeln!(out, "{:<LABEL$}{value}", format!("{label}:"));
}

/// The report for `metadata` (files of `total_size` bytes).
pub(crate) fn report(metadata: &BagMetadata, total_size: u64) -> String {
    let mut out = String::from("\n");
    let mut files = metadata.relative_file_paths.iter();
    line(
        &mut out,
        "Files",
        files.next().map(String::as_str).unwrap_or(""),
    );
    for f in files {
        let _ = writeln!(out, "{:LABEL$}{f}", "");
    }
    line(&mut out, "Bag size", &size_text(total_size));
    line(&mut out, "Storage id", &metadata.storage_identifier);
    let distro = match metadata.ros_distro.as_str() {
        "" => "unknown",
        d => d,
    };
    line(&mut out, "ROS Distro", distro);
    let duration = u64::try_from(metadata.duration.as_nanos()).unwrap_or(u64::MAX);
    line(
        &mut out,
        "Duration",
        &format!("{}s", seconds_text(duration)),
    );
    let start = metadata.starting_time;
    let end = start.saturating_add(duration);
    line(
        &mut out,
        "Start",
        &format!("{} ({})", date_text(start), seconds_text(start)),
    );
    line(
        &mut out,
        "End",
        &format!("{} ({})", date_text(end), seconds_text(end)),
    );
    let (services, topics): (Vec<_>, Vec<_>) = metadata
        .topics
        .iter()
        .partition(|t| service_of(&t.metadata.name, &t.metadata.type_name).is_some());
    let events: u64 = services.iter().map(|t| t.message_count).sum();
    line(
        &mut out,
        "Messages",
        &metadata.message_count.saturating_sub(events).to_string(),
    );
    let mut topics = topics.iter().map(|t| {
        format!(
            "Topic: {} | Type: {} | Count: {} | Serialization Format: {}",
            t.metadata.name, t.metadata.type_name, t.message_count, t.metadata.serialization_format
        )
    });
    line(
        &mut out,
        "Topic information",
        &topics.next().unwrap_or_default(),
    );
    for t in topics {
        let _ = writeln!(out, "{:LABEL$}{t}", "");
    }
    line(&mut out, "Service", &services.len().to_string());
    // rosbag2's label is wider than the column: its continuation lines are indented by 21.
    out.push_str("Service information: ");
    for (i, t) in services.iter().enumerate() {
        let (service, type_name) =
            service_of(&t.metadata.name, &t.metadata.type_name).unwrap_or_default();
        if i > 0 {
            out.push_str(&format!("\n{:21}", ""));
        }
        let _ = write!(
            out,
            "Service: {service} | Type: {type_name} | Event Count: {} | Serialization Format: {}",
            t.message_count, t.metadata.serialization_format
        );
    }
    out.push('\n');
    out
}

/// A service's introspection events topic (`/add/_service_event` of `pkg/srv/Add_Event`):
/// the service's name and type, which `ros2 bag info` lists apart from the topics.
fn service_of<'a>(topic: &'a str, type_name: &'a str) -> Option<(&'a str, &'a str)> {
    let service = topic.strip_suffix("/_service_event")?;
    let service_type = type_name.strip_suffix("_Event")?;
    service_type
        .contains("/srv/")
        .then_some((service, service_type))
}

/// `rclev bag info`.
pub fn info(bag: &Path) -> Result {
    let reader = BagReader::open(bag)?;
    // As rosbag2 counts it: the whole directory, metadata.yaml included.
    let total_size: u64 = if bag.is_dir() {
        std::fs::read_dir(bag)?
            .filter_map(|e| e.ok()?.metadata().ok())
            .filter(|m| m.is_file())
            .map(|m| m.len())
            .sum()
    } else {
        std::fs::metadata(bag)?.len()
    };
    print!("{}", report(reader.metadata(), total_size));
    if !reader.has_metadata_file() && bag.is_dir() {
        println!(
            "\nThis bag has no metadata.yaml (its recorder did not close it): what is shown \
             was read from its files."
        );
    }
    for f in reader.incomplete() {
        println!(
            "Incomplete: {} was not closed; read up to its last complete chunk: {} messages \
             ({}).",
            f.path.display(),
            f.messages,
            f.reason
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_times_print_as_rosbag2_prints_them() {
        assert_eq!(size_text(999), "999 B");
        assert_eq!(size_text(1536), "1.5 KiB");
        assert_eq!(size_text(3 * 1024 * 1024 * 1024), "3.0 GiB");
        assert_eq!(seconds_text(1_500_000_001), "1.500000001");
    }

    #[test]
    fn the_report_lists_files_and_topics_in_columns() {
        use rclev_bag::{TopicInfo, TopicMetadata};
        let m = BagMetadata {
            message_count: 7,
            relative_file_paths: vec!["b_0.mcap".into(), "b_1.mcap".into()],
            topics: ["/a", "/b"]
                .iter()
                .map(|n| TopicInfo {
                    metadata: TopicMetadata {
                        name: n.to_string(),
                        type_name: "std_msgs/msg/String".into(),
                        serialization_format: "cdr".into(),
                        offered_qos_profiles: vec![],
                        type_description_hash: String::new(),
                    },
                    message_count: 3,
                })
                .collect(),
            ..Default::default()
        };
        let mut m = m;
        m.topics[1].metadata.name = "/add/_service_event".into();
        m.topics[1].metadata.type_name = "example_interfaces/srv/AddTwoInts_Event".into();
        let text = report(&m, 2048);
        assert!(
            text.ends_with(
                "\nService:           1\nService information: Service: /add | Type: \
             example_interfaces/srv/AddTwoInts | Event Count: 3 | Serialization Format: cdr\n"
            ),
            "{text}"
        );
        assert!(text.contains("\nMessages:          4\n"), "{text}");
        m.topics.pop();
        let text = report(&m, 2048);
        assert!(
            text.ends_with("\nService:           0\nService information: \n"),
            "{text}"
        );
        assert!(
            text.contains("\nFiles:             b_0.mcap\n                   b_1.mcap\n"),
            "{text}"
        );
        assert!(text.contains("\nBag size:          2.0 KiB\n"), "{text}");
        assert!(
            text.contains(
                "\nTopic information: Topic: /a | Type: std_msgs/msg/String | Count: 3 | \
             Serialization Format: cdr\nService:"
            ),
            "{text}"
        );
    }
}
