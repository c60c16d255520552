//! CDR against real ROS 2: rclpy's Fast CDR typesupport (ROS 2 Jazzy from PyPI) and rosbags'
//! zero-padding serializer, both ways.
//!
//! `cdr_oracle.py generate` makes values in Python — the default of each type and random ones
//! covering bounds, extremes, empty and long sequences, non-ASCII and non-BMP text — and writes
//! rclpy's bytes (junk in the padding, sometimes junk after the end) and rosbags' bytes
//! (zeroed padding, little- and big-endian). Here rclev decodes rclpy's bytes, encodes the
//! value again and must produce rosbags' bytes exactly; it must also decode rosbags' LE and
//! BE bytes to the same value. Then `cdr_oracle.py verify` decodes rclev's bytes with rclpy
//! and compares every field with the value Python started from.

use std::collections::BTreeMap;
use std::process::Command;

use rclev::interfaces::{
    action_msgs, builtin_interfaces, diagnostic_msgs, geometry_msgs, nav_msgs, rcl_interfaces,
    rmw_dds_common, sensor_msgs, service_msgs, std_msgs, unique_identifier_msgs,
    visualization_msgs,
};
use rclev::msg::{from_cdr, to_cdr, Message};
use rclev_oracle_tests::{python, scripts, test_msgs};
use serde_json::Value;

/// Decodes one case every way there is and returns rclev's re-encoding.
type Check = fn(&str, &[u8], Option<&[u8]>, Option<&[u8]>) -> Result<Vec<u8>, String>;

fn check<T: Message + PartialEq>(
    name: &str,
    rclpy: &[u8],
    exact: Option<&[u8]>,
    exact_be: Option<&[u8]>,
) -> Result<Vec<u8>, String> {
    if T::TYPE_NAME != name {
        return Err(format!("dispatched to {}", T::TYPE_NAME));
    }
    let value = from_cdr::<T>(rclpy).map_err(|e| format!("decoding rclpy's bytes: {e}"))?;
    let ours = to_cdr(&value).map_err(|e| format!("encoding: {e}"))?;
    if let Some(exact) = exact {
        if ours != exact {
            let at = ours.iter().zip(exact).position(|(a, b)| a != b);
            return Err(format!(
                "bytes differ from rosbags' (ours {} B, theirs {} B, first difference at {at:?})",
                ours.len(),
                exact.len()
            ));
        }
        let theirs = from_cdr::<T>(exact).map_err(|e| format!("decoding rosbags' LE: {e}"))?;
        if theirs != value {
            return Err("rosbags' LE bytes decode to another value than rclpy's".into());
        }
    }
    if let Some(be) = exact_be {
        let theirs = from_cdr::<T>(be).map_err(|e| format!("decoding rosbags' BE: {e}"))?;
        if theirs != value {
            return Err("rosbags' BE bytes decode to another value".into());
        }
    }
    Ok(ours)
}

macro_rules! corpus {
    ($($ty:ty),* $(,)?) => {
        fn checks() -> BTreeMap<&'static str, Check> {
            BTreeMap::from([$((<$ty as Message>::TYPE_NAME, check::<$ty> as Check)),*])
        }
    };
}

corpus!(
    test_msgs::msg::Arrays,
    test_msgs::msg::BasicTypes,
    test_msgs::msg::BoundedPlainSequences,
    test_msgs::msg::BoundedSequences,
    test_msgs::msg::Builtins,
    test_msgs::msg::Constants,
    test_msgs::msg::Defaults,
    test_msgs::msg::Empty,
    test_msgs::msg::MultiNested,
    test_msgs::msg::Nested,
    test_msgs::msg::Strings,
    test_msgs::msg::UnboundedSequences,
    test_msgs::msg::WStrings,
    test_msgs::srv::Arrays_Request,
    test_msgs::srv::Arrays_Response,
    test_msgs::srv::BasicTypes_Request,
    test_msgs::srv::BasicTypes_Response,
    test_msgs::srv::Empty_Request,
    test_msgs::srv::Empty_Response,
    test_msgs::action::Fibonacci_Goal,
    test_msgs::action::Fibonacci_Result,
    test_msgs::action::Fibonacci_Feedback,
    test_msgs::action::Fibonacci_SendGoal_Request,
    test_msgs::action::Fibonacci_SendGoal_Response,
    test_msgs::action::Fibonacci_GetResult_Request,
    test_msgs::action::Fibonacci_GetResult_Response,
    test_msgs::action::Fibonacci_FeedbackMessage,
    std_msgs::msg::Header,
    std_msgs::msg::String,
    std_msgs::msg::Empty,
    std_msgs::msg::Float64MultiArray,
    builtin_interfaces::msg::Time,
    sensor_msgs::msg::Image,
    sensor_msgs::msg::PointCloud2,
    sensor_msgs::msg::JointState,
    sensor_msgs::msg::Imu,
    sensor_msgs::msg::LaserScan,
    geometry_msgs::msg::PoseWithCovarianceStamped,
    geometry_msgs::msg::TransformStamped,
    geometry_msgs::msg::Twist,
    nav_msgs::msg::Path,
    nav_msgs::msg::Odometry,
    visualization_msgs::msg::Marker,
    visualization_msgs::msg::MarkerArray,
    rcl_interfaces::msg::ParameterEvent,
    rcl_interfaces::msg::Log,
    diagnostic_msgs::msg::DiagnosticArray,
    action_msgs::msg::GoalStatusArray,
    action_msgs::srv::CancelGoal_Response,
    rmw_dds_common::msg::ParticipantEntitiesInfo,
    service_msgs::msg::ServiceEventInfo,
    unique_identifier_msgs::msg::UUID,
);

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

fn oracle(args: &[&str]) -> String {
    let out = Command::new(python())
        .arg(scripts().join("cdr_oracle.py"))
        .args(args)
        .output()
        .expect("runs the oracle venv's python (bash .ci/oracles)");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "cdr_oracle.py {args:?} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn corpus_covers_the_oracles_types() {
    let theirs: Vec<String> = oracle(&["types"]).lines().map(str::to_string).collect();
    let ours = checks();
    for t in &theirs {
        assert!(
            ours.contains_key(t.as_str()),
            "{t} is in the oracle's corpus but not here"
        );
    }
    assert_eq!(
        theirs.len(),
        ours.len(),
        "types here that the oracle does not make"
    );
}

#[test]
fn rclev_cdr_matches_rclpy_and_rosbags_both_ways() {
    let dir = std::env::temp_dir().join(format!("rclev-cdr-oracle-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dir_arg = dir.to_str().unwrap();
    let seed = "rclev-1";
    oracle(&[
        "generate",
        "--out",
        dir_arg,
        "--seed",
        seed,
        "--cases-per-type",
        "6",
    ]);
    let checks = checks();
    let mut out = String::new();
    let mut failures = Vec::new();
    let (mut cases, mut byte_exact, mut big_endian) = (0, 0, 0);
    for line in std::fs::read_to_string(dir.join("cases.jsonl"))
        .unwrap()
        .lines()
    {
        let case: Value = serde_json::from_str(line).unwrap();
        let name = case["type"].as_str().unwrap();
        let bytes = |key: &str| case[key].as_str().map(unhex);
        let (exact, exact_be) = (bytes("exact"), bytes("exact_be"));
        let check = checks[name];
        match check(
            name,
            &bytes("rclpy").unwrap(),
            exact.as_deref(),
            exact_be.as_deref(),
        ) {
            Ok(ours) => {
                let row =
                    serde_json::json!({"type": name, "case": case["case"], "rclev": hex(&ours)});
                out.push_str(&row.to_string());
                out.push('\n');
            }
            Err(e) => failures.push(format!("{name} case {}: {e}", case["case"])),
        }
        cases += 1;
        byte_exact += exact.is_some() as usize;
        big_endian += exact_be.is_some() as usize;
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    std::fs::write(dir.join("rclev.jsonl"), out).unwrap();
    let verified = oracle(&["verify", "--dir", dir_arg, "--seed", seed]);
    std::fs::remove_dir_all(&dir).ok();
    println!(
        "{cases} cases of {} types: rclpy decodes all of rclev's bytes to the original values; \
         {byte_exact} byte-exact against rosbags, {big_endian} big-endian decoded\n{}",
        checks.len(),
        verified.trim()
    );
    assert!(cases >= checks.len() * 7);
}
