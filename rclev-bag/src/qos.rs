//! QoS profiles as rosbag2 writes them (`offered_qos_profiles`): in `metadata.yaml` a YAML
//! list, and in each MCAP channel's metadata the same list as YAML text. Policies are written
//! as rosbag2 (version 9) writes them, by name; a number, as older bags have, is read too.
//! A duration `{sec, nsec}` of 0 (unspecified) or of `RMW_DURATION_INFINITE` (or Foxy's
//! "infinite" values) reads as none. A policy rosbag2 writes as `unknown` — a recording's
//! publishers' history, which DDS discovery does not carry — reads as the system default.

use std::fmt::Write as _;
use std::time::Duration;

use rclev::qos::{Durability, History, Liveliness, Reliability};
use rclev::QoSProfile;
use yaml_rust2::Yaml;

/// `RMW_DURATION_INFINITE` (`INT64_MAX` ns) as `{sec, nsec}`: what rosbag2 writes for "none".
const INFINITE: (u64, u64) = (9_223_372_036, 854_775_807);

fn duration_yaml(out: &mut String, indent: &str, key: &str, d: Option<Duration>) {
    let (sec, nsec) = d.map_or(INFINITE, |d| (d.as_secs(), u64::from(d.subsec_nanos())));
    let _ = write!(
        out,
        "{indent}{key}:\n{indent}  sec: {sec}\n{indent}  nsec: {nsec}\n"
    );
}

/// Appends `profiles` as a YAML block list, each line after `indent`.
pub(crate) fn write_profiles(out: &mut String, indent: &str, profiles: &[QoSProfile]) {
    if profiles.is_empty() {
        let _ = writeln!(out, "{indent}[]");
        return;
    }
    for p in profiles {
        let (history, depth) = match p.history {
            History::KeepLast(n) => ("keep_last", n),
            History::KeepAll => ("keep_all", 0),
            History::SystemDefault => ("system_default", 0),
        };
        let reliability = match p.reliability {
            Reliability::Reliable => "reliable",
            Reliability::BestEffort => "best_effort",
            Reliability::SystemDefault => "system_default",
            Reliability::BestAvailable => "best_available",
        };
        let durability = match p.durability {
            Durability::Volatile => "volatile",
            Durability::TransientLocal => "transient_local",
            Durability::SystemDefault => "system_default",
            Durability::BestAvailable => "best_available",
        };
        let liveliness = match p.liveliness {
            Liveliness::Automatic => "automatic",
            Liveliness::ManualByTopic => "manual_by_topic",
            Liveliness::SystemDefault => "system_default",
            Liveliness::BestAvailable => "best_available",
        };
        let inner = format!("{indent}  ");
        let _ = write!(
            out,
            "{indent}- history: {history}\n{inner}depth: {depth}\n{inner}reliability: \
             {reliability}\n{inner}durability: {durability}\n"
        );
        duration_yaml(out, &inner, "deadline", p.deadline);
        duration_yaml(out, &inner, "lifespan", p.lifespan);
        let _ = writeln!(out, "{inner}liveliness: {liveliness}");
        duration_yaml(
            out,
            &inner,
            "liveliness_lease_duration",
            p.liveliness_lease_duration,
        );
        let _ = writeln!(
            out,
            "{inner}avoid_ros_namespace_conventions: {}",
            p.avoid_ros_namespace_conventions
        );
    }
}

/// `profiles` as the YAML text a channel's `offered_qos_profiles` holds.
pub fn profiles_to_yaml(profiles: &[QoSProfile]) -> String {
    let mut out = String::new();
    write_profiles(&mut out, "", profiles);
    out
}

/// Reads the YAML text of `offered_qos_profiles` (a channel's metadata value).
pub fn profiles_from_yaml(text: &str) -> Result<Vec<QoSProfile>, String> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let docs = crate::yaml::load(text).map_err(|e| e.to_string())?;
    match docs.first() {
        None | Some(Yaml::Null) => Ok(Vec::new()),
        // The text is the list itself: a string here would be a string in a string.
        Some(Yaml::String(_)) => Err("offered_qos_profiles is not a list: it is a string".into()),
        Some(doc) => profiles_from_node(doc),
    }
}

/// Reads a parsed `offered_qos_profiles`: a list of profiles, or (as rosbag2 before version 9
/// wrote it) a string holding that list.
pub(crate) fn profiles_from_node(node: &Yaml) -> Result<Vec<QoSProfile>, String> {
    match node {
        Yaml::Array(items) => items.iter().map(profile).collect(),
        Yaml::String(text) => profiles_from_yaml(text),
        Yaml::Null => Ok(Vec::new()),
        other => Err(format!(
            "offered_qos_profiles is not a list: it is {}",
            crate::yaml::kind(other)
        )),
    }
}

/// A policy by name or by its rmw enum number.
fn policy<'a>(p: &'a Yaml, key: &str) -> Result<Option<PolicyValue<'a>>, String> {
    match &p[key] {
        Yaml::BadValue | Yaml::Null => Ok(None),
        Yaml::String(s) => Ok(Some(PolicyValue::Name(s))),
        Yaml::Integer(n) => Ok(Some(PolicyValue::Number(*n))),
        other => Err(format!(
            "QoS {key} is not a policy: it is {}",
            crate::yaml::kind(other)
        )),
    }
}

enum PolicyValue<'a> {
    Name(&'a str),
    Number(i64),
}

fn unknown(key: &str, v: &PolicyValue<'_>) -> String {
    match v {
        PolicyValue::Name(s) => format!("unknown QoS {key} '{s}'"),
        PolicyValue::Number(n) => format!("unknown QoS {key} {n}"),
    }
}

fn duration(p: &Yaml, key: &str) -> Result<Option<Duration>, String> {
    let d = &p[key];
    if matches!(d, Yaml::BadValue | Yaml::Null) {
        return Ok(None);
    }
    let part = |k: &str| match &d[k] {
        Yaml::Integer(n) if *n >= 0 => Ok(*n as u64),
        Yaml::BadValue => Ok(0),
        other => Err(format!(
            "QoS {key}.{k} is not a count: it is {}",
            crate::yaml::kind(other)
        )),
    };
    let (sec, nsec) = (part("sec")?, part("nsec")?);
    // Foxy wrote "infinite" as {2147483647, …}: no real QoS duration is 68 years long.
    const FOXY_INFINITE_SEC: u64 = 2_147_483_647;
    if (sec, nsec) == (0, 0) || sec >= FOXY_INFINITE_SEC {
        return Ok(None);
    }
    Ok(Some(Duration::from_secs(sec) + Duration::from_nanos(nsec)))
}

fn profile(p: &Yaml) -> Result<QoSProfile, String> {
    use PolicyValue::{Name, Number};
    let mut q = QoSProfile::default();
    let depth = match &p["depth"] {
        Yaml::Integer(n) if *n >= 0 => *n as usize,
        Yaml::BadValue | Yaml::Null => 0,
        other => {
            return Err(format!(
                "QoS depth is not a count: it is {}",
                crate::yaml::kind(other)
            ))
        }
    };
    if let Some(v) = policy(p, "history")? {
        q.history = match v {
            Name("keep_last") | Number(1) => History::KeepLast(depth),
            Name("keep_all") | Number(2) => History::KeepAll,
            Name("system_default" | "unknown") | Number(0 | 3) => History::SystemDefault,
            v => return Err(unknown("history", &v)),
        };
    }
    if let Some(v) = policy(p, "reliability")? {
        q.reliability = match v {
            Name("reliable") | Number(1) => Reliability::Reliable,
            Name("best_effort") | Number(2) => Reliability::BestEffort,
            Name("system_default" | "unknown") | Number(0 | 3) => Reliability::SystemDefault,
            Name("best_available") | Number(4) => Reliability::BestAvailable,
            v => return Err(unknown("reliability", &v)),
        };
    }
    if let Some(v) = policy(p, "durability")? {
        q.durability = match v {
            Name("transient_local") | Number(1) => Durability::TransientLocal,
            Name("volatile") | Number(2) => Durability::Volatile,
            Name("system_default" | "unknown") | Number(0 | 3) => Durability::SystemDefault,
            Name("best_available") | Number(4) => Durability::BestAvailable,
            v => return Err(unknown("durability", &v)),
        };
    }
    if let Some(v) = policy(p, "liveliness")? {
        q.liveliness = match v {
            Name("automatic") | Number(1) => Liveliness::Automatic,
            Name("manual_by_topic") | Number(3) => Liveliness::ManualByTopic,
            Name("system_default" | "unknown") | Number(0 | 4) => Liveliness::SystemDefault,
            Name("best_available") | Number(5) => Liveliness::BestAvailable,
            v => return Err(unknown("liveliness", &v)),
        };
    }
    q.deadline = duration(p, "deadline")?;
    q.lifespan = duration(p, "lifespan")?;
    q.liveliness_lease_duration = duration(p, "liveliness_lease_duration")?;
    q.avoid_ros_namespace_conventions =
        matches!(p["avoid_ros_namespace_conventions"], Yaml::Boolean(true));
    Ok(q)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_round_trip() {
        let profiles = vec![
            QoSProfile::default(),
            QoSProfile::default()
                .keep_all()
                .best_effort()
                .transient_local()
                .deadline(Duration::from_millis(1500)),
        ];
        let text = profiles_to_yaml(&profiles);
        assert_eq!(profiles_from_yaml(&text).unwrap(), profiles, "{text}");
    }

    #[test]
    fn numbers_and_bad_values() {
        let text = "- history: 1\n  depth: 5\n  reliability: 2\n  durability: 1\n";
        let p = &profiles_from_yaml(text).unwrap()[0];
        assert_eq!(p.history, History::KeepLast(5));
        assert_eq!(p.reliability, Reliability::BestEffort);
        assert_eq!(p.durability, Durability::TransientLocal);
        assert!(profiles_from_yaml("- reliability: sometimes\n").is_err());
        // What rosbag2 records of a DDS publisher: its history is not known.
        let rosbag2 = "- history: unknown\n  depth: 0\n  reliability: reliable\n  deadline:\n    \
                       sec: 2147483647\n    nsec: 4294967295\n";
        let p = &profiles_from_yaml(rosbag2).unwrap()[0];
        assert_eq!(p.history, History::SystemDefault);
        assert_eq!(p.deadline, None);
        assert!(profiles_from_yaml("- depth: -3\n").is_err());
        assert!(profiles_from_yaml("{a: [").is_err());
    }
}
