//! Chooses rclev's wire transport as ROS 2 chooses its middleware: by `RMW_IMPLEMENTATION`.
//!
//! | `RMW_IMPLEMENTATION` | transport | feature |
//! |---|---|---|
//! | unset, empty, `rmw_fastrtps_cpp`, `rmw_fastrtps_dynamic_cpp`, `rmw_cyclonedds_cpp`, `rmw_connextdds` | [`Rmw::Dds`]: rclev-dds (Fast DDS; it talks to every DDS-based rmw on the wire) | `dds` |
//! | `rmw_zenoh_cpp` | [`Rmw::Zenoh`]: rclev-zenoh (rmw_zenoh's wire) | `zenoh` |
//!
//! Unset means DDS, ROS 2's default. Any other value, or a transport this build does not
//! include, is a typed [`Error::InvalidArgument`] naming the variable, never a silent
//! fallback: a node that should be on Zenoh must not quietly join DDS.
//!
//! ```no_run
//! // RMW_IMPLEMENTATION=rmw_zenoh_cpp ./my_node --ros-args -r __node:=left
//! let executor = rclev_rmw::context()?.create_basic_executor();
//! let node = executor.create_node("talker")?;
//! # Ok::<(), rclev::Error>(())
//! ```
//!
//! To pick a transport in code instead, build it and hand it to
//! [`Context::new`](rclev::Context::new), or name it here: [`Rmw::context_from`].

#![warn(missing_docs)]

use std::sync::Arc;

use rclev::transport::Transport;
use rclev::{Arguments, Context, Error, Result};

/// The variable ROS 2 reads.
pub const RMW_IMPLEMENTATION: &str = "RMW_IMPLEMENTATION";

/// The rmw names that mean DDS.
const DDS_NAMES: [&str; 4] = [
    "rmw_fastrtps_cpp",
    "rmw_fastrtps_dynamic_cpp",
    "rmw_cyclonedds_cpp",
    "rmw_connextdds",
];

/// The rmw name that means Zenoh.
const ZENOH_NAME: &str = "rmw_zenoh_cpp";

/// A wire transport rclev has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rmw {
    /// rclev-dds: DDS (RTPS) through Fast DDS.
    Dds,
    /// rclev-zenoh: Zenoh, as rmw_zenoh.
    Zenoh,
}

impl Rmw {
    /// The transport an `RMW_IMPLEMENTATION` value names (`None`: unset).
    pub fn parse(value: Option<&str>) -> Result<Self> {
        match value.map(str::trim) {
            None | Some("") => Ok(Rmw::Dds),
            Some(name) if DDS_NAMES.contains(&name) => Ok(Rmw::Dds),
            Some(ZENOH_NAME) => Ok(Rmw::Zenoh),
            Some(other) => Err(Error::InvalidArgument {
                argument: format!("{RMW_IMPLEMENTATION}={other}"),
                reason: format!(
                    "rclev speaks DDS ({}) and Zenoh ({ZENOH_NAME})",
                    DDS_NAMES.join(", ")
                ),
            }),
        }
    }

    /// The transport `RMW_IMPLEMENTATION` names.
    pub fn from_env() -> Result<Self> {
        Self::parse(std::env::var(RMW_IMPLEMENTATION).ok().as_deref())
    }

    /// The rmw implementation ROS 2 tools would name for it.
    pub fn rmw_name(self) -> &'static str {
        match self {
            Rmw::Dds => DDS_NAMES[0],
            Rmw::Zenoh => ZENOH_NAME,
        }
    }

    /// Whether this build includes it.
    pub fn is_available(self) -> bool {
        match self {
            Rmw::Dds => cfg!(feature = "dds"),
            Rmw::Zenoh => cfg!(feature = "zenoh"),
        }
    }

    fn unavailable(self, feature: &str) -> Error {
        Error::InvalidArgument {
            argument: format!("{RMW_IMPLEMENTATION}={}", self.rmw_name()),
            reason: format!(
                "this program was built without rclev's {feature} transport (the `{feature}` \
                 feature of rclev-rmw)"
            ),
        }
    }

    /// A context over this transport, set up from the environment, whose nodes take
    /// `arguments` (`--enclave` included).
    pub fn context_from(self, arguments: Arguments) -> Result<Context> {
        match self {
            #[cfg(feature = "dds")]
            Rmw::Dds => rclev_dds::DdsTransport::context_from(arguments),
            #[cfg(feature = "zenoh")]
            Rmw::Zenoh => rclev_zenoh::ZenohTransport::context_from(arguments),
            #[allow(unreachable_patterns)]
            _ => {
                drop(arguments);
                Err(self.unavailable(self.feature()))
            }
        }
    }

    /// This transport, set up from the environment, for a program that wants the transport
    /// itself (graph tools).
    pub fn transport(self) -> Result<Arc<dyn Transport>> {
        match self {
            #[cfg(feature = "dds")]
            Rmw::Dds => Ok(Arc::new(rclev_dds::DdsTransport::from_env()?)),
            #[cfg(feature = "zenoh")]
            Rmw::Zenoh => Ok(Arc::new(rclev_zenoh::ZenohTransport::from_env()?)),
            #[allow(unreachable_patterns)]
            _ => Err(self.unavailable(self.feature())),
        }
    }

    fn feature(self) -> &'static str {
        match self {
            Rmw::Dds => "dds",
            Rmw::Zenoh => "zenoh",
        }
    }
}

/// A [`Context`] for a ROS 2 program: the transport `RMW_IMPLEMENTATION` names, set up from
/// the environment, and the process's `--ros-args`.
pub fn context() -> Result<Context> {
    Rmw::from_env()?.context_from(Arguments::from_env()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rmw_names_choose_transports() {
        assert_eq!(Rmw::parse(None).unwrap(), Rmw::Dds);
        assert_eq!(Rmw::parse(Some("")).unwrap(), Rmw::Dds);
        for dds in DDS_NAMES {
            assert_eq!(Rmw::parse(Some(dds)).unwrap(), Rmw::Dds);
        }
        assert_eq!(Rmw::parse(Some("rmw_zenoh_cpp")).unwrap(), Rmw::Zenoh);
        assert_eq!(Rmw::parse(Some(" rmw_zenoh_cpp ")).unwrap(), Rmw::Zenoh);
        let error = Rmw::parse(Some("rmw_nope")).unwrap_err().to_string();
        assert!(error.contains("RMW_IMPLEMENTATION=rmw_nope"), "{error}");
    }

    #[test]
    fn a_transport_left_out_of_the_build_is_a_typed_error() {
        for rmw in [Rmw::Dds, Rmw::Zenoh] {
            if !rmw.is_available() {
                let Err(error) = rmw.context_from(Arguments::default()) else {
                    panic!("{rmw:?} is not in this build, yet made a context");
                };
                assert!(matches!(error, Error::InvalidArgument { .. }), "{error}");
            }
        }
    }
}
