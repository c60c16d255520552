//! The QoS a played topic is offered with, as rosbag2's player chooses it
//! (`publisher_qos_for_topic` in rosbag2_transport's player.cpp): the user's override for the
//! topic if `--qos-profile-overrides-path` has one, else the profile adapted to the recorded
//! publishers' offers (`Rosbag2QoS::adapt_offer_to_recorded_offers`, rosbag2_storage's
//! qos.cpp).

use std::collections::HashMap;

use rclev::qos::History;
use rclev::QoSProfile;
use yaml_rust2::Yaml;

/// The depth rosbag2 gives a replayed topic: `rmw_qos_profile_default`'s.
const DEFAULT_DEPTH: usize = 10;

/// The profile to offer for `topic`, recorded from publishers offering `recorded`, and a
/// warning when rosbag2 would print one.
///
/// As rosbag2: no recorded profile → the default profile; publishers that all offered the same
/// policies that matter for matching (reliability, durability, deadline, liveliness and its
/// lease; history and lifespan do not) → their profile, with keep-last 10 history; publishers
/// that differed → the default profile (keep last 10, reliable, volatile), with a warning. That
/// is what rosbag2 does, not the recorder's "all reliable → reliable, else best effort"
/// adaptation (`adapt_request_to_offers`), which is for subscriptions.
pub(crate) fn adapt_offer(topic: &str, recorded: &[QoSProfile]) -> (QoSProfile, Option<String>) {
    let Some(first) = recorded.first() else {
        return (QoSProfile::default(), None);
    };
    let same = recorded.iter().all(|p| {
        p.reliability == first.reliability
            && p.durability == first.durability
            && p.deadline == first.deadline
            && p.liveliness == first.liveliness
            && p.liveliness_lease_duration == first.liveliness_lease_duration
    });
    if same {
        let mut adapted = *first;
        adapted.history = History::KeepLast(DEFAULT_DEPTH);
        return (adapted, None);
    }
    (
        QoSProfile::default(),
        Some(format!(
            "Not all original publishers on topic {topic} offered the same QoS profiles; \
             offering the default profile (keep last 10, reliable, volatile)"
        )),
    )
}

/// The keys a profile of an overrides file may have (ros2bag's `interpret_dict_as_qos_profile`).
const KEYS: &[&str] = &[
    "history",
    "depth",
    "reliability",
    "durability",
    "deadline",
    "lifespan",
    "liveliness",
    "liveliness_lease_duration",
    "avoid_ros_namespace_conventions",
];

/// Reads a QoS overrides file's text (`--qos-profile-overrides-path`), rosbag2's format: a
/// mapping of topic names to profiles, each a mapping of policy names to values, written as in
/// `metadata.yaml` (`reliability: reliable`, `depth: 10`, `deadline: {sec: 1, nsec: 0}`).
/// As ros2bag (which builds an rclpy `QoSProfile` from each), a policy left out keeps the
/// default profile's, a depth without history means keep-last, and an unknown key is an error.
pub(crate) fn overrides_from_yaml(text: &str) -> Result<HashMap<String, QoSProfile>, String> {
    let docs = rclev_bag::yaml::load(text).map_err(|e| e.to_string())?;
    let map = match docs.first() {
        None | Some(Yaml::Null) => return Ok(HashMap::new()),
        Some(Yaml::Hash(map)) => map,
        Some(other) => {
            return Err(format!(
                "a mapping of topic names to QoS profiles is expected, not {}",
                rclev_bag::yaml::shown(other)
            ))
        }
    };
    let mut out = HashMap::new();
    for (topic, profile) in map {
        let Some(topic) = topic.as_str() else {
            return Err(format!(
                "topic names are strings, not {}",
                rclev_bag::yaml::shown(topic)
            ));
        };
        let profile = override_profile(profile).map_err(|e| format!("{topic}: {e}"))?;
        out.insert(topic.to_string(), profile);
    }
    Ok(out)
}

fn override_profile(node: &Yaml) -> Result<QoSProfile, String> {
    let Yaml::Hash(map) = node else {
        return Err(format!(
            "a mapping of QoS policies is expected, not {}",
            rclev_bag::yaml::shown(node)
        ));
    };
    for key in map.keys() {
        match key.as_str() {
            Some(k) if KEYS.contains(&k) => {}
            _ => {
                return Err(format!(
                    "unexpected key {} for a QoS profile (known: {})",
                    rclev_bag::yaml::shown(key),
                    KEYS.join(", ")
                ))
            }
        }
    }
    let has = |k: &str| !matches!(node[k], Yaml::BadValue | Yaml::Null);
    if !has("history") && !has("depth") {
        // rclpy's QoSProfile refuses a profile with neither.
        return Err("history or depth is required".into());
    }
    // The values are read by the bag's own QoS reader, which knows rosbag2's policy names
    // and numbers and its duration mapping; it reads a list of profiles.
    let mut text = String::new();
    yaml_rust2::YamlEmitter::new(&mut text)
        .dump(&Yaml::Array(vec![node.clone()]))
        .map_err(|e| e.to_string())?;
    let mut profile = rclev_bag::profiles_from_yaml(&text)?
        .pop()
        .ok_or("no profile")?;
    if !has("history") {
        profile.history = History::KeepLast(match &node["depth"] {
            Yaml::Integer(n) => usize::try_from(*n).map_err(|_| "depth is negative")?,
            _ => return Err("depth is not a count".into()),
        });
    }
    if profile.history == History::KeepLast(0) {
        return Err("keep_last needs a depth of at least 1".into());
    }
    Ok(profile)
}

/// A YAML node, for an error message.
#[cfg(test)]
mod tests {
    use super::*;
    use rclev::qos::{Durability, Liveliness, Reliability};
    use std::time::Duration;

    #[test]
    fn offers_adapt_as_rosbag2s() {
        let (q, w) = adapt_offer("/t", &[]);
        assert_eq!((q, w), (QoSProfile::default(), None));
        // All alike: their profile, with the default history.
        let latched = QoSProfile::default()
            .keep_last(1)
            .best_effort()
            .transient_local();
        let (q, w) = adapt_offer("/t", &[latched, latched.keep_all()]);
        assert!(w.is_none());
        assert_eq!(q.history, History::KeepLast(10));
        assert_eq!(q.reliability, Reliability::BestEffort);
        assert_eq!(q.durability, Durability::TransientLocal);
        // Lifespan does not matter either.
        let (q, w) = adapt_offer("/t", &[latched, latched.lifespan(Duration::from_secs(1))]);
        assert!(w.is_none() && q.durability == Durability::TransientLocal);
        // Mixed: the default profile, with a warning naming the topic.
        let (q, w) = adapt_offer("/t", &[latched, QoSProfile::default()]);
        assert_eq!(q, QoSProfile::default());
        assert!(w.unwrap().contains("/t"));
        let (_, w) = adapt_offer(
            "/t",
            &[
                QoSProfile::default(),
                QoSProfile::default().deadline(Duration::from_millis(100)),
            ],
        );
        assert!(w.is_some());
    }

    #[test]
    fn overrides_read_rosbag2s_format() {
        let text = "\
/test_topic:
  history: keep_all
  depth: 0
  reliability: reliable
  durability: transient_local
  deadline:
    # unspecified/infinity
    sec: 0
    nsec: 0
  liveliness: automatic
  avoid_ros_namespace_conventions: false
/fast:
  depth: 3
  reliability: best_effort
  lifespan: {sec: 1, nsec: 500000000}
";
        let o = overrides_from_yaml(text).unwrap();
        let t = o["/test_topic"];
        assert_eq!(t.history, History::KeepAll);
        assert_eq!(t.durability, Durability::TransientLocal);
        assert_eq!(t.deadline, None);
        assert_eq!(t.liveliness, Liveliness::Automatic);
        let f = o["/fast"];
        assert_eq!(f.history, History::KeepLast(3));
        assert_eq!(f.reliability, Reliability::BestEffort);
        assert_eq!(f.durability, Durability::Volatile);
        assert_eq!(f.lifespan, Some(Duration::from_millis(1500)));
        assert!(overrides_from_yaml("").unwrap().is_empty());
    }

    #[test]
    fn bad_overrides_say_what_is_wrong() {
        let e = |t: &str| overrides_from_yaml(t).unwrap_err();
        assert!(e("/t: {depth: 1, reliabilty: reliable}").contains("'reliabilty'"));
        assert!(e("/t: {depth: 1, reliability: sometimes}").contains("sometimes"));
        assert!(e("/t: {depth: -1}").contains("depth"));
        assert!(e("/t: {history: keep_last}").contains("depth of at least 1"));
        assert!(e("/t: {reliability: reliable}").contains("history or depth"));
        assert!(e("/t: [1, 2]").starts_with("/t:"));
        assert!(e("- /t").contains("mapping"));
        assert!(!e("/t: {depth: [").is_empty());
    }
}
