//! How a Zenoh session and router are configured, as `rmw_zenoh_cpp` configures them: the same
//! defaults, the same environment variables, the same override syntax.
//!
//! rmw_zenoh reads a whole Zenoh configuration from a JSON5 file — its installed
//! `DEFAULT_RMW_ZENOH_SESSION_CONFIG.json5` (nodes) or `DEFAULT_RMW_ZENOH_ROUTER_CONFIG.json5`
//! (`rmw_zenohd`), or the file named by `ZENOH_SESSION_CONFIG_URI` / `ZENOH_ROUTER_CONFIG_URI`
//! instead — then edits single keys from `ZENOH_CONFIG_OVERRIDE` (`key/path=json5;…`, on the
//! session and the router alike). rclev-zenoh does the same, with defaults of its own
//! (`config/session.json5`, `config/router.json5` in this crate: only the keys rmw_zenoh sets
//! to other values than Zenoh's defaults, each with the reason). A node then checks that a
//! router is connected, `ZENOH_ROUTER_CHECK_ATTEMPTS` times, once a second ([`RouterCheck`]).
//!
//! Where rmw_zenoh logs and carries on, rclev refuses with a [`ConfigError`]: an override entry
//! without `=` (rmw_zenoh skips it silently), an override Zenoh rejects (rmw_zenoh warns and
//! skips it), a `ZENOH_ROUTER_CHECK_ATTEMPTS` that is not a number (rmw_zenoh's `strtoll`
//! reads `abc` as 0, "wait forever", and `5x` as 5). A mistyped setting then fails at start
//! instead of leaving a node that silently talks to no one.
//!
//! Sources (ros2/rmw_zenoh): `rmw_zenoh_cpp/src/detail/zenoh_config.cpp` at eb7c138b (the
//! override syntax, rmw_zenoh#551; attempts unset = 1, 0 = forever, negative = no check,
//! rmw_zenoh#429), `rmw_zenoh_cpp/config/DEFAULT_RMW_ZENOH_{SESSION,ROUTER}_CONFIG.json5` at
//! 30f30305 (Zenoh 1.5-era), `rmw_context_impl_s.cpp` (2025: one check a second).

use std::ffi::OsString;
use std::fmt;
use std::num::{IntErrorKind, NonZeroU64};
use std::path::PathBuf;
use std::time::Duration;

/// The variable naming a session configuration file that replaces the default one.
pub const SESSION_CONFIG_URI: &str = "ZENOH_SESSION_CONFIG_URI";
/// The variable naming a router configuration file that replaces the default one.
pub const ROUTER_CONFIG_URI: &str = "ZENOH_ROUTER_CONFIG_URI";
/// The variable holding `key/path=value;…` edits applied to the session's and the router's
/// configuration, after the file.
pub const CONFIG_OVERRIDE: &str = "ZENOH_CONFIG_OVERRIDE";
/// The variable telling how many times a session looks for a router before giving up.
pub const ROUTER_CHECK_ATTEMPTS: &str = "ZENOH_ROUTER_CHECK_ATTEMPTS";

/// rclev-zenoh's default session configuration (JSON5): a peer connecting to the router on
/// `tcp/localhost:7447`, multicast scouting off, gossip on (see the file's comments).
pub const DEFAULT_SESSION_CONFIG: &str = include_str!("../config/session.json5");
/// rclev-zenoh's default router configuration (JSON5): a router listening on `tcp/[::]:7447`,
/// multicast scouting off, gossip on (see the file's comments).
pub const DEFAULT_ROUTER_CONFIG: &str = include_str!("../config/router.json5");

/// How long rmw_zenoh waits between two looks for a router (`rmw_context_impl_s.cpp`, 2025).
pub const ROUTER_CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// Why a configuration could not be made.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// A configuration file could not be read or is not a valid Zenoh configuration (missing,
    /// unreadable, not JSON5/YAML, an unknown key or a bad value, or a name without a `.json5`,
    /// `.json`, `.yaml` or `.yml` extension, which Zenoh requires).
    File {
        /// The variable that named it ([`SESSION_CONFIG_URI`] or [`ROUTER_CONFIG_URI`]), or
        /// `None` when it was given in code.
        variable: Option<&'static str>,
        /// The file.
        path: PathBuf,
        /// What Zenoh said.
        reason: String,
    },
    /// An entry of `ZENOH_CONFIG_OVERRIDE` is not `key=value` with both sides non-empty.
    MalformedOverride {
        /// The entry, as written between `;`s.
        entry: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Zenoh refused an override: no such key, or a value that is not valid JSON5 or not valid
    /// there.
    OverrideRejected {
        /// The key (`listen/endpoints`).
        key: String,
        /// The value as written (`["tcp/[::]:7448"]`).
        value: String,
        /// What Zenoh said.
        reason: String,
    },
    /// `ZENOH_ROUTER_CHECK_ATTEMPTS` is not a whole number.
    RouterCheckAttempts {
        /// The value as found.
        value: String,
    },
    /// A variable holds bytes that are not UTF-8 (only file paths may).
    NotUnicode {
        /// The variable.
        variable: &'static str,
    },
    /// `ROS_DOMAIN_ID` is not a whole number.
    DomainId {
        /// The value as found.
        value: String,
    },
    /// One of rclev-zenoh's built-in configurations was refused by Zenoh: a bug of rclev's
    /// (the unit tests parse both).
    BuiltIn {
        /// Which one (`session`, `router`).
        which: &'static str,
        /// What Zenoh said.
        reason: String,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::File {
                variable,
                path,
                reason,
            } => {
                write!(f, "invalid Zenoh configuration file {}", path.display())?;
                if let Some(variable) = variable {
                    write!(f, " (from {variable})")?;
                }
                write!(f, ": {reason}")
            }
            Self::MalformedOverride { entry, reason } => write!(
                f,
                "{CONFIG_OVERRIDE}: entry {entry:?} {reason} (the syntax is \
                 key/path=json5value;key/path=json5value)"
            ),
            Self::OverrideRejected { key, value, reason } => write!(
                f,
                "{CONFIG_OVERRIDE}: Zenoh refused {key}={value}: {reason}"
            ),
            Self::RouterCheckAttempts { value } => write!(
                f,
                "{ROUTER_CHECK_ATTEMPTS}={value:?} is not a whole number (n > 0: look for a \
                 router n times, once a second; 0: until one is found; negative: do not look)"
            ),
            Self::DomainId { value } => {
                write!(f, "ROS_DOMAIN_ID={value:?} is not a whole number")
            }
            Self::NotUnicode { variable } => write!(f, "{variable} is not valid UTF-8"),
            Self::BuiltIn { which, reason } => write!(
                f,
                "rclev-zenoh's built-in {which} configuration was refused by Zenoh (a bug): {reason}"
            ),
        }
    }
}

impl std::error::Error for ConfigError {}

/// One `key=value` edit of `ZENOH_CONFIG_OVERRIDE`: `value` (JSON5) is put at `key` (a
/// `/`-separated path into the configuration, e.g. `connect/endpoints`), replacing what the
/// file had there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigOverride {
    /// The path of the key: `listen/endpoints`, `scouting/multicast/enabled`.
    pub key: String,
    /// Its new value in JSON5: `["tcp/127.0.0.1:7448"]`, `true`, `"client"`.
    pub value: String,
}

impl ConfigOverride {
    /// Parses `ZENOH_CONFIG_OVERRIDE`'s syntax: entries separated by `;`, each `key=value`
    /// split at its first `=` (the value may hold more), surrounding whitespace ignored,
    /// empty entries skipped. As in rmw_zenoh, a `;` always ends an entry, even inside a
    /// quoted value.
    pub fn parse_list(text: &str) -> Result<Vec<ConfigOverride>, ConfigError> {
        let mut overrides = Vec::new();
        for entry in text.split(';') {
            if entry.trim().is_empty() {
                continue;
            }
            let malformed = |reason| ConfigError::MalformedOverride {
                entry: entry.to_string(),
                reason,
            };
            let (key, value) = entry
                .split_once('=')
                .ok_or_else(|| malformed("has no '='"))?;
            let (key, value) = (key.trim(), value.trim());
            if key.is_empty() {
                return Err(malformed("has no key before '='"));
            }
            if value.is_empty() {
                return Err(malformed("has no value after '='"));
            }
            overrides.push(ConfigOverride {
                key: key.to_string(),
                value: value.to_string(),
            });
        }
        Ok(overrides)
    }

    /// Puts the value at the key in `config`.
    pub fn apply(&self, config: &mut zenoh::Config) -> Result<(), ConfigError> {
        config
            .insert_json5(&self.key, &self.value)
            .map_err(|e| ConfigError::OverrideRejected {
                key: self.key.clone(),
                value: self.value.clone(),
                reason: e.to_string(),
            })
    }
}

/// Whether, and how long, opening a session waits for a router to be connected
/// (`ZENOH_ROUTER_CHECK_ATTEMPTS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouterCheck {
    /// Do not look (a negative value): for peers that meet without a router (multicast
    /// scouting or explicit endpoints set by override).
    Skip,
    /// Look this many times, [`ZenohOptions::router_check_interval`] apart (a positive value;
    /// 1 when the variable is unset or empty, rmw_zenoh's default).
    Attempts(NonZeroU64),
    /// Look until a router is connected (`0`).
    Forever,
}

impl Default for RouterCheck {
    /// One look, as rmw_zenoh does when `ZENOH_ROUTER_CHECK_ATTEMPTS` is unset.
    fn default() -> Self {
        RouterCheck::Attempts(NonZeroU64::MIN)
    }
}

impl RouterCheck {
    /// Reads a value of `ZENOH_ROUTER_CHECK_ATTEMPTS` as rmw_zenoh does — empty: the default
    /// (one look); positive: that many; 0: forever; negative: no look — except that anything
    /// but a whole number (after trimming whitespace) is an error. Numbers beyond 64 bits
    /// count as the largest or smallest, as `strtoll` makes them.
    pub fn parse(value: &str) -> Result<RouterCheck, ConfigError> {
        let trimmed = value.trim();
        if trimmed.is_empty() {
            return Ok(RouterCheck::default());
        }
        let n = match trimmed.parse::<i64>() {
            Ok(n) => n,
            Err(e) if *e.kind() == IntErrorKind::PosOverflow => i64::MAX,
            Err(e) if *e.kind() == IntErrorKind::NegOverflow => i64::MIN,
            Err(_) => {
                return Err(ConfigError::RouterCheckAttempts {
                    value: value.to_string(),
                })
            }
        };
        Ok(match u64::try_from(n) {
            Err(_) => RouterCheck::Skip,
            Ok(n) => NonZeroU64::new(n).map_or(RouterCheck::Forever, RouterCheck::Attempts),
        })
    }
}

/// Where a configuration comes from, before the overrides.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ConfigSource {
    /// rclev-zenoh's built-in default ([`DEFAULT_SESSION_CONFIG`] or [`DEFAULT_ROUTER_CONFIG`]).
    #[default]
    Default,
    /// A Zenoh configuration file (`.json5`, `.json`, `.yaml` or `.yml`) replacing the default
    /// whole, and the variable that named it, if any.
    File {
        /// The file.
        path: PathBuf,
        /// [`SESSION_CONFIG_URI`] or [`ROUTER_CONFIG_URI`] when read from the environment.
        variable: Option<&'static str>,
    },
}

impl ConfigSource {
    /// A file given in code.
    pub fn file(path: impl Into<PathBuf>) -> Self {
        ConfigSource::File {
            path: path.into(),
            variable: None,
        }
    }

    /// The configuration it holds, `which` and `default` naming the built-in one.
    fn load(&self, which: &'static str, default: &str) -> Result<zenoh::Config, ConfigError> {
        match self {
            ConfigSource::Default => {
                zenoh::Config::from_json5(default).map_err(|e| ConfigError::BuiltIn {
                    which,
                    reason: e.to_string(),
                })
            }
            ConfigSource::File { path, variable } => {
                zenoh::Config::from_file(path).map_err(|e| ConfigError::File {
                    variable: *variable,
                    path: path.clone(),
                    reason: e.to_string(),
                })
            }
        }
    }
}

/// The ROS domain from `ROS_DOMAIN_ID` (0 when unset or empty), as rcl reads it.
pub fn domain_id_from_env() -> Result<usize, ConfigError> {
    domain_id_from(std::env::var("ROS_DOMAIN_ID").ok().as_deref())
}

/// The ROS domain from a `ROS_DOMAIN_ID` value (`None`: unset).
pub fn domain_id_from(value: Option<&str>) -> Result<usize, ConfigError> {
    match value.map(str::trim) {
        None | Some("") => Ok(0),
        Some(v) => v.parse().map_err(|_| ConfigError::DomainId {
            value: v.to_owned(),
        }),
    }
}

/// How rclev-zenoh sets up Zenoh: the configurations of sessions and of the embedded router,
/// and the router check. [`ZenohOptions::from_env`] reads them as rmw_zenoh does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZenohOptions {
    /// The sessions' configuration (`ZENOH_SESSION_CONFIG_URI`).
    pub session_config: ConfigSource,
    /// The embedded router's configuration (`ZENOH_ROUTER_CONFIG_URI`).
    pub router_config: ConfigSource,
    /// Edits applied after either file, in order (`ZENOH_CONFIG_OVERRIDE`).
    pub overrides: Vec<ConfigOverride>,
    /// Whether opening a session waits for a router (`ZENOH_ROUTER_CHECK_ATTEMPTS`).
    pub router_check: RouterCheck,
    /// The time between two looks for a router: [`ROUTER_CHECK_INTERVAL`] (1 s), as
    /// rmw_zenoh.
    pub router_check_interval: Duration,
}

impl Default for ZenohOptions {
    fn default() -> Self {
        Self {
            session_config: ConfigSource::Default,
            router_config: ConfigSource::Default,
            overrides: Vec::new(),
            router_check: RouterCheck::default(),
            router_check_interval: ROUTER_CHECK_INTERVAL,
        }
    }
}

impl ZenohOptions {
    /// Reads the options from the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_vars(|name| std::env::var_os(name))
    }

    /// Reads the options through `var` (the environment, or a test's table):
    /// `ZENOH_SESSION_CONFIG_URI` and `ZENOH_ROUTER_CONFIG_URI` (a file replacing the default;
    /// unset or empty: the default; the file is read when a configuration is made),
    /// `ZENOH_CONFIG_OVERRIDE` ([`ConfigOverride::parse_list`]) and
    /// `ZENOH_ROUTER_CHECK_ATTEMPTS` ([`RouterCheck::parse`]).
    pub fn from_vars(var: impl Fn(&str) -> Option<OsString>) -> Result<Self, ConfigError> {
        let source = |variable: &'static str| match var(variable) {
            Some(path) if !path.is_empty() => ConfigSource::File {
                path: PathBuf::from(path),
                variable: Some(variable),
            },
            _ => ConfigSource::Default,
        };
        let text = |variable: &'static str| -> Result<Option<String>, ConfigError> {
            var(variable)
                .map(|v| {
                    v.into_string()
                        .map_err(|_| ConfigError::NotUnicode { variable })
                })
                .transpose()
        };
        Ok(Self {
            session_config: source(SESSION_CONFIG_URI),
            router_config: source(ROUTER_CONFIG_URI),
            overrides: match text(CONFIG_OVERRIDE)? {
                Some(list) => ConfigOverride::parse_list(&list)?,
                None => Vec::new(),
            },
            router_check: match text(ROUTER_CHECK_ATTEMPTS)? {
                Some(value) => RouterCheck::parse(&value)?,
                None => RouterCheck::default(),
            },
            router_check_interval: ROUTER_CHECK_INTERVAL,
        })
    }

    /// The sessions' Zenoh configuration: [`session_config`](Self::session_config) with the
    /// overrides applied.
    pub fn session_zenoh_config(&self) -> Result<zenoh::Config, ConfigError> {
        self.build(&self.session_config, "session", DEFAULT_SESSION_CONFIG)
    }

    /// The embedded router's Zenoh configuration: [`router_config`](Self::router_config) with
    /// the overrides applied.
    pub fn router_zenoh_config(&self) -> Result<zenoh::Config, ConfigError> {
        self.build(&self.router_config, "router", DEFAULT_ROUTER_CONFIG)
    }

    fn build(
        &self,
        source: &ConfigSource,
        which: &'static str,
        default: &str,
    ) -> Result<zenoh::Config, ConfigError> {
        let mut config = source.load(which, default)?;
        for o in &self.overrides {
            o.apply(&mut config)?;
        }
        Ok(config)
    }
}

/// The value at `key` in `config` as JSON (`["tcp/localhost:7447"]`), or `?` when Zenoh has
/// none: for messages that name where a session connects or a router listens.
pub fn json_at(config: &zenoh::Config, key: &str) -> String {
    config.get_json(key).unwrap_or_else(|_| "?".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn options(vars: &[(&str, &str)]) -> Result<ZenohOptions, ConfigError> {
        let vars: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        ZenohOptions::from_vars(|k| vars.get(k).cloned())
    }

    fn json(config: &zenoh::Config, key: &str) -> serde_json::Value {
        serde_json::from_str(&config.get_json(key).unwrap()).unwrap()
    }

    #[test]
    fn the_default_session_is_a_peer_dialling_the_local_router_without_multicast() {
        let config = ZenohOptions::default().session_zenoh_config().unwrap();
        assert_eq!(json(&config, "mode"), "peer");
        assert_eq!(
            json(&config, "connect/endpoints"),
            serde_json::json!(["tcp/localhost:7447"])
        );
        assert_eq!(
            json(&config, "listen/endpoints"),
            serde_json::json!(["tcp/localhost:0"])
        );
        assert_eq!(json(&config, "scouting/multicast/enabled"), false);
        assert_eq!(json(&config, "scouting/gossip/enabled"), true);
        assert_eq!(
            json(&config, "scouting/gossip/target"),
            serde_json::json!({"router": ["router", "peer"], "peer": ["router"]})
        );
        assert_eq!(
            json(&config, "timestamping/enabled"),
            serde_json::json!({"router": true, "peer": true, "client": true})
        );
        assert_eq!(json(&config, "transport/link/tx/lease"), 60000);
        assert_eq!(
            json(
                &config,
                "transport/link/tx/queue/congestion_control/block/wait_before_close"
            ),
            60000000
        );
    }

    #[test]
    fn the_default_router_listens_on_7447_everywhere_without_multicast() {
        let config = ZenohOptions::default().router_zenoh_config().unwrap();
        assert_eq!(json(&config, "mode"), "router");
        assert_eq!(
            json(&config, "listen/endpoints"),
            serde_json::json!(["tcp/[::]:7447"])
        );
        assert_eq!(json(&config, "connect/endpoints"), serde_json::json!([]));
        assert_eq!(json(&config, "scouting/multicast/enabled"), false);
        assert_eq!(json(&config, "scouting/gossip/enabled"), true);
        // Zenoh's own 5 s, unlike the sessions' minute.
        assert_eq!(
            json(
                &config,
                "transport/link/tx/queue/congestion_control/block/wait_before_close"
            ),
            5000000
        );
    }

    #[test]
    fn nothing_set_means_the_defaults_and_one_look_for_a_router() {
        let o = options(&[]).unwrap();
        assert_eq!(o, ZenohOptions::default());
        assert_eq!(o.router_check, RouterCheck::Attempts(NonZeroU64::MIN));
        assert_eq!(o.router_check_interval, Duration::from_secs(1));
        // Empty variables count as unset, as in rmw_zenoh.
        let o = options(&[
            (SESSION_CONFIG_URI, ""),
            (ROUTER_CONFIG_URI, ""),
            (CONFIG_OVERRIDE, ""),
            (ROUTER_CHECK_ATTEMPTS, ""),
        ])
        .unwrap();
        assert_eq!(o, ZenohOptions::default());
    }

    #[test]
    fn router_check_attempts_follow_rmw_zenoh() {
        let attempts = |n| RouterCheck::Attempts(NonZeroU64::new(n).unwrap());
        assert_eq!(RouterCheck::parse("3"), Ok(attempts(3)));
        assert_eq!(RouterCheck::parse(" 2 "), Ok(attempts(2)));
        assert_eq!(RouterCheck::parse("+4"), Ok(attempts(4)));
        assert_eq!(RouterCheck::parse("0"), Ok(RouterCheck::Forever));
        assert_eq!(RouterCheck::parse("-1"), Ok(RouterCheck::Skip));
        assert_eq!(RouterCheck::parse("-100"), Ok(RouterCheck::Skip));
        assert_eq!(
            RouterCheck::parse("99999999999999999999"),
            Ok(attempts(i64::MAX as u64))
        );
        assert_eq!(
            RouterCheck::parse("-99999999999999999999"),
            Ok(RouterCheck::Skip)
        );
        assert_eq!(RouterCheck::parse(""), Ok(RouterCheck::default()));
        for bad in ["abc", "5x", "1.5", "--1", "0x10"] {
            assert_eq!(
                RouterCheck::parse(bad),
                Err(ConfigError::RouterCheckAttempts { value: bad.into() }),
                "{bad}"
            );
        }
        let err = options(&[(ROUTER_CHECK_ATTEMPTS, "many")]).unwrap_err();
        assert!(err.to_string().contains(ROUTER_CHECK_ATTEMPTS), "{err}");
    }

    #[test]
    fn overrides_parse_as_rmw_zenoh_splits_them() {
        let list = ConfigOverride::parse_list(
            r#"listen/endpoints=["tcp/127.0.0.1:7448"];scouting/multicast/enabled=true;"#,
        )
        .unwrap();
        assert_eq!(
            list,
            vec![
                ConfigOverride {
                    key: "listen/endpoints".into(),
                    value: r#"["tcp/127.0.0.1:7448"]"#.into()
                },
                ConfigOverride {
                    key: "scouting/multicast/enabled".into(),
                    value: "true".into()
                },
            ]
        );
        // Split at the first '=' only; whitespace and empty entries do not count.
        let list = ConfigOverride::parse_list(r#" ; mode = "client" ;; a/b=x=y "#).unwrap();
        assert_eq!(list[0].key, "mode");
        assert_eq!(list[0].value, r#""client""#);
        assert_eq!(list[1].value, "x=y");
        assert_eq!(ConfigOverride::parse_list("").unwrap(), vec![]);
    }

    #[test]
    fn malformed_overrides_are_errors() {
        for (text, bad) in [
            ("mode", "mode"),
            (r#"mode="peer";oops"#, "oops"),
            ("=true", "=true"),
            ("mode=", "mode="),
            ("mode=  ", "mode=  "),
        ] {
            match ConfigOverride::parse_list(text) {
                Err(ConfigError::MalformedOverride { entry, .. }) => {
                    assert_eq!(entry, bad, "{text}")
                }
                other => panic!("{text}: {other:?}"),
            }
        }
        let err = options(&[(CONFIG_OVERRIDE, "nonsense")]).unwrap_err();
        assert!(err.to_string().contains("ZENOH_CONFIG_OVERRIDE"), "{err}");
    }

    #[test]
    fn overrides_edit_both_configurations() {
        let o = options(&[(
            CONFIG_OVERRIDE,
            r#"listen/endpoints=["tcp/127.0.0.1:7448"];connect/endpoints=["tcp/127.0.0.1:7448"]"#,
        )])
        .unwrap();
        for config in [
            o.session_zenoh_config().unwrap(),
            o.router_zenoh_config().unwrap(),
        ] {
            assert_eq!(
                json(&config, "listen/endpoints"),
                serde_json::json!(["tcp/127.0.0.1:7448"])
            );
            assert_eq!(
                json(&config, "connect/endpoints"),
                serde_json::json!(["tcp/127.0.0.1:7448"])
            );
        }
        // Keys not overridden keep the file's values.
        let session = o.session_zenoh_config().unwrap();
        assert_eq!(json(&session, "scouting/multicast/enabled"), false);
    }

    #[test]
    fn overrides_zenoh_refuses_are_errors() {
        for (text, key) in [
            ("no/such/key=1", "no/such/key"),
            (
                "scouting/multicast/enabled=maybe",
                "scouting/multicast/enabled",
            ),
            (r#"listen/endpoints=["nonsense"]"#, "listen/endpoints"),
            (r#"mode="emperor""#, "mode"),
        ] {
            let o = options(&[(CONFIG_OVERRIDE, text)]).unwrap();
            match o.session_zenoh_config() {
                Err(ConfigError::OverrideRejected { key: k, .. }) => assert_eq!(k, key),
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_config_file_replaces_the_default_whole() {
        let dir = std::env::temp_dir().join(format!("rclev-zenoh-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("session.json5");
        std::fs::write(
            &file,
            r#"{ mode: "client", connect: { endpoints: ["tcp/127.0.0.1:7999"] } }"#,
        )
        .unwrap();
        let o = options(&[
            (SESSION_CONFIG_URI, file.to_str().unwrap()),
            (CONFIG_OVERRIDE, "scouting/gossip/enabled=false"),
        ])
        .unwrap();
        assert_eq!(
            o.session_config,
            ConfigSource::File {
                path: file.clone(),
                variable: Some(SESSION_CONFIG_URI)
            }
        );
        let config = o.session_zenoh_config().unwrap();
        assert_eq!(json(&config, "mode"), "client");
        assert_eq!(
            json(&config, "connect/endpoints"),
            serde_json::json!(["tcp/127.0.0.1:7999"])
        );
        // Nothing of rclev's default is left: a key the file does not set is unset (Zenoh's
        // own default, multicast scouting on, applies when the session opens). The override
        // still applies on top.
        assert_eq!(
            json(&config, "scouting/multicast/enabled"),
            serde_json::Value::Null
        );
        assert_eq!(json(&config, "scouting/gossip/enabled"), false);
        // The router's configuration is untouched.
        assert_eq!(json(&o.router_zenoh_config().unwrap(), "mode"), "router");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn unreadable_or_invalid_files_are_errors() {
        let dir =
            std::env::temp_dir().join(format!("rclev-zenoh-config-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let broken = dir.join("broken.json5");
        std::fs::write(&broken, "{ mode: ").unwrap();
        let unknown = dir.join("unknown.json5");
        std::fs::write(&unknown, "{ no_such_key: 1 }").unwrap();
        let no_extension = dir.join("config");
        std::fs::write(&no_extension, "{}").unwrap();
        for path in [dir.join("missing.json5"), broken, unknown, no_extension] {
            let o = options(&[(ROUTER_CONFIG_URI, path.to_str().unwrap())]).unwrap();
            match o.router_zenoh_config() {
                Err(e @ ConfigError::File { .. }) => {
                    let text = e.to_string();
                    assert!(text.contains(ROUTER_CONFIG_URI), "{text}");
                    assert!(text.contains(&path.display().to_string()), "{text}");
                }
                other => panic!("{}: {other:?}", path.display()),
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn non_utf8_variables_are_errors_but_paths_may_be_any_bytes() {
        use std::os::unix::ffi::OsStringExt;
        let bad = OsString::from_vec(vec![0xff, b'x']);
        let b = bad.clone();
        let err =
            ZenohOptions::from_vars(|k| (k == CONFIG_OVERRIDE).then(|| b.clone())).unwrap_err();
        assert_eq!(
            err,
            ConfigError::NotUnicode {
                variable: CONFIG_OVERRIDE
            }
        );
        let o =
            ZenohOptions::from_vars(|k| (k == SESSION_CONFIG_URI).then(|| bad.clone())).unwrap();
        assert!(matches!(o.session_config, ConfigSource::File { .. }));
    }
}
