//! How the DDS participant is set up: domain, discovery range and static peers as ROS 2 reads
//! them from the environment, and whether Fast DDS's shared-memory transport may be used.

use rclev::{Error, Result};

use crate::entities::GidSize;
use crate::ffi::bridge::{DiscoveryRange, ParticipantConfig};

/// Whether the participant may use Fast DDS's shared-memory transport beside UDP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SharedMemory {
    /// Only when the linked Fast DDS is of the release line ROS 2 Jazzy ships (2.14): shared
    /// memory segments of other Fast DDS versions are laid out differently, and a process
    /// that opens a foreign segment can abort (measured: 2.9.1 meeting 2.14.5). The
    /// environment variable `RCLEV_DDS_SHM=0|1` overrides.
    Auto,
    /// Always (same-host peers must run a compatible Fast DDS).
    On,
    /// Never: UDP only, safe with any peer.
    Off,
}

/// The release line whose shared-memory layout rclev knows to be compatible with ROS 2
/// Jazzy's Fast DDS.
const SHM_COMPATIBLE_LINE: &str = "2.14.";

impl SharedMemory {
    /// Whether shared memory is on, for a participant linked against Fast DDS `engine`.
    pub fn enabled(self, engine: &str) -> bool {
        match self {
            SharedMemory::On => true,
            SharedMemory::Off => false,
            SharedMemory::Auto => match std::env::var("RCLEV_DDS_SHM").as_deref() {
                Ok("1") => true,
                Ok("0") => false,
                _ => engine.starts_with(SHM_COMPATIBLE_LINE),
            },
        }
    }
}

/// `ROS_AUTOMATIC_DISCOVERY_RANGE`: how far automatic discovery reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiscoveryRangeOption {
    /// No automatic discovery: only this process (and static peers cannot be reached either).
    Off,
    /// This host only.
    Localhost,
    /// The local subnet (multicast), the ROS 2 default.
    Subnet,
    /// Whatever Fast DDS does by default (its XML profiles).
    SystemDefault,
}

/// The participant's options; [`DdsOptions::from_env`] reads them as rcl does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DdsOptions {
    /// `ROS_DOMAIN_ID`, 0 by default.
    pub domain_id: u32,
    /// `ROS_AUTOMATIC_DISCOVERY_RANGE` (with `ROS_LOCALHOST_ONLY=1` meaning `Localhost`).
    pub range: DiscoveryRangeOption,
    /// `ROS_STATIC_PEERS`: host names or addresses also announced to.
    pub static_peers: Vec<String>,
    /// Shared-memory transport.
    pub shared_memory: SharedMemory,
    /// The security enclave named in the participant's USER_DATA (`/`).
    pub enclave: String,
    /// The GID size of the ROS 2 distribution to be seen by, in `ros_discovery_info`:
    /// 16 bytes (Iron and later, the default), or 24 with `ROS_DISTRO=humble`.
    pub gid_size: GidSize,
}

impl Default for DdsOptions {
    fn default() -> Self {
        Self {
            domain_id: 0,
            range: DiscoveryRangeOption::Subnet,
            static_peers: Vec::new(),
            shared_memory: SharedMemory::Auto,
            enclave: "/".into(),
            gid_size: GidSize::Bytes16,
        }
    }
}

/// The largest domain id whose RTPS ports fit in 16 bits (rcl's own limit is 232).
const MAX_DOMAIN_ID: u32 = 232;

impl DdsOptions {
    /// Reads the options from the process environment.
    pub fn from_env() -> Result<Self> {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    /// Reads the options through `var` (the environment, or a test's table), as Jazzy's rcl
    /// does: `ROS_DOMAIN_ID` (0 when unset or empty), `ROS_AUTOMATIC_DISCOVERY_RANGE`
    /// (`SUBNET` when unset or empty; an unknown value warns and means `LOCALHOST`),
    /// `ROS_STATIC_PEERS` (`;`-separated, entries of 256 characters or more skipped), and
    /// Humble's `ROS_LOCALHOST_ONLY=1`, which forces `LOCALHOST` and clears the static peers;
    /// `ROS_DISTRO=humble` selects Humble's 24-byte GIDs in `ros_discovery_info`.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let mut options = DdsOptions::default();
        if let Some(id) = var("ROS_DOMAIN_ID").filter(|v| !v.trim().is_empty()) {
            options.domain_id = id
                .trim()
                .parse::<u32>()
                .ok()
                .filter(|d| *d <= MAX_DOMAIN_ID)
                .ok_or_else(|| Error::InvalidArgument {
                    argument: format!("ROS_DOMAIN_ID={id}"),
                    reason: format!("not a domain id from 0 to {MAX_DOMAIN_ID}"),
                })?;
        }
        options.range = match var("ROS_AUTOMATIC_DISCOVERY_RANGE").as_deref() {
            None | Some("") | Some("SUBNET") => DiscoveryRangeOption::Subnet,
            Some("LOCALHOST") => DiscoveryRangeOption::Localhost,
            Some("OFF") => DiscoveryRangeOption::Off,
            Some("SYSTEM_DEFAULT") => DiscoveryRangeOption::SystemDefault,
            Some(other) => {
                rclev::diagnostic!(WARN,
                    target: "rclev_dds",
                    "ROS_AUTOMATIC_DISCOVERY_RANGE={other} is not one of SUBNET, LOCALHOST, OFF, \
                     SYSTEM_DEFAULT; using LOCALHOST"
                );
                DiscoveryRangeOption::Localhost
            }
        };
        if let Some(peers) = var("ROS_STATIC_PEERS") {
            for peer in peers.split(';').map(str::trim).filter(|p| !p.is_empty()) {
                if peer.len() >= 256 {
                    rclev::diagnostic!(WARN, target: "rclev_dds", "ROS_STATIC_PEERS entry of {} characters skipped", peer.len());
                } else {
                    options.static_peers.push(peer.to_string());
                }
            }
        }
        if var("ROS_LOCALHOST_ONLY").as_deref() == Some("1") {
            rclev::diagnostic!(WARN,
                target: "rclev_dds",
                "ROS_LOCALHOST_ONLY is deprecated; it sets ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST"
            );
            options.range = DiscoveryRangeOption::Localhost;
            options.static_peers.clear();
        }
        // rcl turns DDS security on only for exactly "true"; rclev has none to turn on, and a
        // node that silently talked in the clear where security was asked for would be worse
        // than one that does not start.
        if var("ROS_SECURITY_ENABLE").as_deref() == Some("true") {
            return Err(Error::InvalidArgument {
                argument: "ROS_SECURITY_ENABLE=true".into(),
                reason: "rclev-dds has no DDS security (SROS2); unset it to talk unsecured".into(),
            });
        }
        if var("ROS_DISTRO").is_some_and(|d| d.trim().eq_ignore_ascii_case("humble")) {
            options.gid_size = GidSize::Bytes24;
        }
        if options.range == DiscoveryRangeOption::SystemDefault && !options.static_peers.is_empty()
        {
            rclev::diagnostic!(WARN,
                target: "rclev_dds",
                "ROS_STATIC_PEERS is ignored with ROS_AUTOMATIC_DISCOVERY_RANGE=SYSTEM_DEFAULT"
            );
            options.static_peers.clear();
        }
        Ok(options)
    }

    /// The shim's configuration for these options, with Fast DDS `engine` linked.
    pub(crate) fn participant_config(&self, engine: &str) -> ParticipantConfig {
        ParticipantConfig {
            domain_id: self.domain_id,
            range: match self.range {
                DiscoveryRangeOption::Off => DiscoveryRange::Off,
                DiscoveryRangeOption::Localhost => DiscoveryRange::Localhost,
                DiscoveryRangeOption::Subnet => DiscoveryRange::Subnet,
                DiscoveryRangeOption::SystemDefault => DiscoveryRange::SystemDefault,
            },
            static_peers: self.static_peers.clone(),
            shared_memory: self.shared_memory.enabled(engine),
            user_data: format!("enclave={};", self.enclave).into_bytes(),
            name: self.enclave.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn options(vars: &[(&str, &str)]) -> Result<DdsOptions> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        DdsOptions::from_vars(|k| vars.get(k).cloned())
    }

    #[test]
    fn defaults_are_domain_zero_on_the_subnet() {
        let o = options(&[]).unwrap();
        assert_eq!(o, DdsOptions::default());
        assert_eq!(options(&[("ROS_DOMAIN_ID", "")]).unwrap().domain_id, 0);
    }

    #[test]
    fn the_environment_is_read_as_rcl_reads_it() {
        let o = options(&[
            ("ROS_DOMAIN_ID", "42"),
            ("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST"),
            ("ROS_STATIC_PEERS", "10.0.0.2; robot.local;;"),
        ])
        .unwrap();
        assert_eq!(o.domain_id, 42);
        assert_eq!(o.range, DiscoveryRangeOption::Localhost);
        assert_eq!(o.static_peers, ["10.0.0.2", "robot.local"]);
        assert_eq!(o.gid_size, GidSize::Bytes16);
        let humble = options(&[("ROS_DISTRO", "humble")]).unwrap();
        assert_eq!(humble.gid_size, GidSize::Bytes24);
        let jazzy = options(&[("ROS_DISTRO", "jazzy")]).unwrap();
        assert_eq!(jazzy.gid_size, GidSize::Bytes16);
        let off = options(&[("ROS_AUTOMATIC_DISCOVERY_RANGE", "OFF")]).unwrap();
        assert_eq!(off.range, DiscoveryRangeOption::Off);
        let odd = options(&[("ROS_AUTOMATIC_DISCOVERY_RANGE", "GALAXY")]).unwrap();
        assert_eq!(odd.range, DiscoveryRangeOption::Localhost);
    }

    #[test]
    fn humbles_localhost_only_wins_and_clears_static_peers() {
        let o = options(&[
            ("ROS_LOCALHOST_ONLY", "1"),
            ("ROS_AUTOMATIC_DISCOVERY_RANGE", "SUBNET"),
            ("ROS_STATIC_PEERS", "10.0.0.2"),
        ])
        .unwrap();
        assert_eq!(o.range, DiscoveryRangeOption::Localhost);
        assert!(o.static_peers.is_empty());
        let long = "a".repeat(256);
        assert!(options(&[("ROS_STATIC_PEERS", &long)])
            .unwrap()
            .static_peers
            .is_empty());
    }

    #[test]
    fn a_bad_domain_id_is_an_error() {
        for bad in ["x", "-1", "233", "99999"] {
            assert!(
                matches!(
                    options(&[("ROS_DOMAIN_ID", bad)]),
                    Err(Error::InvalidArgument { .. })
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn shared_memory_only_with_jazzys_fast_dds_line() {
        // RCLEV_DDS_SHM is not set in the test environment.
        if std::env::var_os("RCLEV_DDS_SHM").is_none() {
            assert!(SharedMemory::Auto.enabled("2.14.5"));
            assert!(!SharedMemory::Auto.enabled("2.9.1"));
        }
        assert!(!SharedMemory::Off.enabled("2.14.5"));
        assert!(SharedMemory::On.enabled("2.9.1"));
    }
}
