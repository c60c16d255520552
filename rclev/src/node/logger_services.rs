//! `~/get_logger_levels` and `~/set_logger_levels` (`rcl_interfaces`, Jazzy), offered by
//! nodes created with `enable_logger_service`, answered as rclpy answers them: a logger's own
//! level (0 when it has none; the empty name is the default level), and per requested
//! level a result, refused with rclpy's reason when the number is not a level. Levels are
//! process-wide by logger name (see [`crate::logging::set_logger_level`]).

use super::service::{create_service, ServiceCallback};
use super::{NodeState, Service};
use crate::base::error::Result;
use crate::endpoint::IntoPrimitiveOptions;
use crate::interfaces::rcl_interfaces::{msg, srv};
use crate::logging::{logger_level, set_logger_level, LogLevel};
use crate::qos::QoSProfile;

/// The two services; dropping it withdraws them.
pub(crate) struct LoggerServices {
    _get: Service<srv::GetLoggerLevels>,
    _set: Service<srv::SetLoggerLevels>,
}

impl LoggerServices {
    pub(crate) fn start(node: &NodeState) -> Result<Self> {
        let get = create_service::<srv::GetLoggerLevels>(
            &node.core,
            "~/get_logger_levels".qos(QoSProfile::services_default()),
            ServiceCallback::plain(|request: srv::GetLoggerLevels_Request| {
                srv::GetLoggerLevels_Response {
                    levels: request
                        .names
                        .into_iter()
                        .map(|name| msg::LoggerLevel {
                            level: logger_level(&name) as u32,
                            name,
                        })
                        .collect(),
                }
            }),
        )?;
        let set = create_service::<srv::SetLoggerLevels>(
            &node.core,
            "~/set_logger_levels".qos(QoSProfile::services_default()),
            ServiceCallback::plain(|request: srv::SetLoggerLevels_Request| {
                srv::SetLoggerLevels_Response {
                    results: request
                        .levels
                        .iter()
                        .map(|l| match LogLevel::from_number(l.level) {
                            Some(level) => {
                                set_logger_level(&l.name, level);
                                msg::SetLoggerLevelsResult {
                                    successful: true,
                                    reason: String::new(),
                                }
                            }
                            None => msg::SetLoggerLevelsResult {
                                successful: false,
                                reason: "Failed reason: Invalid logger level.".into(),
                            },
                        })
                        .collect(),
                }
            }),
        )?;
        Ok(Self {
            _get: get,
            _set: set,
        })
    }
}
