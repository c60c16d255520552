//! Interface type names as the tools take them: `pkg/msg/Name`, or ros2's short form
//! `pkg/Name` where the command says which kind it wants (`topic` verbs take messages,
//! `service call` services, `action send_goal` actions), checked against the interfaces rclev
//! knows — the ones it ships and the ones installed under `AMENT_PREFIX_PATH` — so that a
//! misspelt name fails at once, with the closest known names offered, instead of deep inside
//! a lookup.

use std::collections::BTreeSet;
use std::fmt;
use std::path::PathBuf;

/// The kind of interface a command takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A message type (`pkg/msg/Name`).
    Msg,
    /// A service type (`pkg/srv/Name`).
    Srv,
    /// An action type (`pkg/action/Name`).
    Action,
}

impl Kind {
    const ALL: [Kind; 3] = [Kind::Msg, Kind::Srv, Kind::Action];

    /// The middle part of a full name, which is also the file extension.
    pub fn segment(self) -> &'static str {
        match self {
            Kind::Msg => "msg",
            Kind::Srv => "srv",
            Kind::Action => "action",
        }
    }

    fn noun(self) -> &'static str {
        match self {
            Kind::Msg => "message",
            Kind::Srv => "service",
            Kind::Action => "action",
        }
    }

    fn from_segment(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.segment() == s)
    }
}

/// The messages ROS 2 derives from a service or an action, by the suffix they add to its
/// name: `pkg/srv/Name_Request` is a message type too, and the tools take it as one (`topic
/// echo /fib/_action/feedback pkg/action/Fibonacci_FeedbackMessage`).
fn derived_suffixes(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::Msg => &[],
        Kind::Srv => &["_Request", "_Response", "_Event"],
        Kind::Action => &[
            "_Goal",
            "_Result",
            "_Feedback",
            "_FeedbackMessage",
            "_SendGoal_Request",
            "_SendGoal_Response",
            "_SendGoal_Event",
            "_GetResult_Request",
            "_GetResult_Response",
            "_GetResult_Event",
        ],
    }
}

/// Why a type name was not taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TypeNameError {
    /// Not of the form `pkg/kind/Name` or `pkg/Name`.
    Malformed {
        /// What was given.
        given: String,
        /// The kind the command takes (`None`: any).
        kind: Option<Kind>,
    },
    /// A full name of another kind than the command takes (`service call` given
    /// `pkg/msg/Name`).
    WrongKind {
        /// What was given.
        given: String,
        /// The kind the name says.
        named: Kind,
        /// The kind the command takes.
        wanted: Kind,
    },
    /// Well formed, but not among the interfaces searched.
    Unknown {
        /// The full name looked for (`pkg/kind/Name`).
        name: String,
        /// The kind the command takes (`None`: any).
        kind: Option<Kind>,
        /// The closest known names, best first (possibly none).
        suggestions: Vec<String>,
        /// Interfaces of the same package and name but of another kind.
        other_kinds: Vec<String>,
        /// Where it was looked for.
        sources: Sources,
        /// Whether `AMENT_PREFIX_PATH` was set.
        ament_prefix_path_set: bool,
    },
    /// `pkg/Name` names interfaces of several kinds (only where the kind is not implied).
    Ambiguous {
        /// What was given.
        given: String,
        /// The full names it could mean.
        candidates: Vec<String>,
    },
}

impl fmt::Display for TypeNameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TypeNameError::Malformed { given, kind } => match kind {
                Some(k) => write!(
                    f,
                    "'{given}' is not a {} type name: expected pkg/{}/Name or pkg/Name",
                    k.noun(),
                    k.segment()
                ),
                None => write!(
                    f,
                    "'{given}' is not an interface name: expected pkg/msg/Name, \
                         pkg/srv/Name, pkg/action/Name or pkg/Name"
                ),
            },
            TypeNameError::WrongKind {
                given,
                named,
                wanted,
            } => write!(
                f,
                "'{given}' names a {} type; a {} type is expected (pkg/{}/Name or pkg/Name)",
                named.noun(),
                wanted.noun(),
                wanted.segment()
            ),
            TypeNameError::Unknown {
                name,
                kind,
                suggestions,
                other_kinds,
                sources,
                ament_prefix_path_set,
            } => {
                match kind {
                    Some(k) => write!(f, "{} type '{name}' ", k.noun())?,
                    None => write!(f, "interface '{name}' ")?,
                }
                match (sources, ament_prefix_path_set) {
                    (Sources::Bundled, _) => write!(f, "is not one rclev ships")?,
                    (Sources::BundledAndInstalled, true) => write!(
                        f,
                        "is not one rclev knows (neither shipped with rclev nor installed \
                         under AMENT_PREFIX_PATH)"
                    )?,
                    (Sources::BundledAndInstalled, false) => write!(
                        f,
                        "is not one rclev knows (not shipped with rclev; AMENT_PREFIX_PATH is \
                         not set, so no installed types were searched)"
                    )?,
                }
                for other in other_kinds {
                    let noun = split(other)
                        .and_then(|(_, s, _)| s.and_then(Kind::from_segment))
                        .map_or("interface", Kind::noun);
                    write!(f, "; {other} is a {noun} type")?;
                }
                match suggestions.as_slice() {
                    [] => Ok(()),
                    [one] => write!(f, "; did you mean {one}?"),
                    many => write!(f, "; did you mean one of {}?", many.join(", ")),
                }
            }
            TypeNameError::Ambiguous { given, candidates } => write!(
                f,
                "'{given}' names several interfaces: {}; give the full name",
                candidates.join(", ")
            ),
        }
    }
}

impl std::error::Error for TypeNameError {}

/// A type name a user gave, resolved for a command that can learn types from the nodes that
/// use them (see `remote_types`).
#[cfg(feature = "dds")]
#[derive(Debug)]
pub enum Wanted {
    /// A type rclev knows: its full name.
    Known(String),
    /// A well-formed full name (`pkg/kind/Name`) of the kind asked for that rclev does not
    /// know.
    Learnable {
        /// The full name.
        name: String,
        /// Why it is not known.
        unknown: Unknown,
    },
}

/// Why rclev does not know a well-formed type name, for the error shown if it cannot learn
/// the type either.
#[cfg(feature = "dds")]
#[derive(Clone, Debug)]
pub struct Unknown {
    /// The message: the name, where it was looked for, the closest known names.
    pub message: String,
    /// Whether the message offers known names close to the one given (or the same name of
    /// another kind): with nothing on the graph to learn it from, a typo is then likelier
    /// than a type to install, and the message alone is the error.
    pub offers_names: bool,
}

#[cfg(feature = "dds")]
impl std::fmt::Display for Unknown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// [`resolve`], where a well-formed name rclev does not know is [`Wanted::Learnable`] rather
/// than an error: only a malformed name, or one of another kind, fails.
#[cfg(feature = "dds")]
pub fn resolve_learnable(
    given: &str,
    kind: Kind,
    sources: Sources,
) -> Result<Wanted, TypeNameError> {
    let e = match resolve(given, kind, sources) {
        Ok(name) => return Ok(Wanted::Known(name)),
        Err(e) => e,
    };
    match &e {
        TypeNameError::Unknown {
            name,
            kind: Some(_),
            suggestions,
            other_kinds,
            ..
        } => Ok(Wanted::Learnable {
            name: name.clone(),
            unknown: Unknown {
                message: e.to_string(),
                offers_names: !suggestions.is_empty() || !other_kinds.is_empty(),
            },
        }),
        _ => Err(e),
    }
}

/// Where interface names come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sources {
    /// Only the definitions rclev ships (what `interface show` can print).
    Bundled,
    /// Those, and the ones installed under `AMENT_PREFIX_PATH`.
    // Only the DDS verbs (topic, service, action) look beyond the bundled definitions.
    #[cfg_attr(not(feature = "dds"), expect(dead_code))]
    BundledAndInstalled,
}

/// The `share/` directories of `AMENT_PREFIX_PATH`'s prefixes (`None` when it is not set).
fn installed_shares() -> Option<Vec<PathBuf>> {
    let paths = std::env::var_os("AMENT_PREFIX_PATH").filter(|p| !p.is_empty())?;
    Some(
        std::env::split_paths(&paths)
            .filter(|p| !p.as_os_str().is_empty())
            .map(|p| p.join("share"))
            .collect(),
    )
}

fn is_bundled(full: &str) -> bool {
    crate::bundled::SOURCES.iter().any(|(n, _)| *n == full)
}

/// Whether interface `pkg/kind/Name` exists among `sources`: a direct look at its file, no
/// scan.
fn exists(full: &str, sources: Sources) -> bool {
    if is_bundled(full) {
        return true;
    }
    if sources == Sources::Bundled {
        return false;
    }
    let mut parts = full.splitn(3, '/');
    let (Some(pkg), Some(kind), Some(name)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    installed_shares().is_some_and(|shares| {
        shares.iter().any(|s| {
            s.join(pkg)
                .join(kind)
                .join(format!("{name}.{kind}"))
                .is_file()
        })
    })
}

/// Every interface name known among `sources` (`pkg/kind/Name`), for suggestions: a scan of
/// the installed `share/` directories, done only once a name was not found.
fn all_names(sources: Sources) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = crate::bundled::SOURCES
        .iter()
        .map(|(n, _)| n.to_string())
        .collect();
    if sources == Sources::Bundled {
        return out;
    }
    for share in installed_shares().unwrap_or_default() {
        let Ok(packages) = std::fs::read_dir(&share) else {
            continue;
        };
        for package in packages.flatten() {
            let pkg = package.file_name().to_string_lossy().to_string();
            for kind in Kind::ALL {
                let Ok(files) = std::fs::read_dir(package.path().join(kind.segment())) else {
                    continue;
                };
                for file in files.flatten() {
                    let path = file.path();
                    if path.extension().is_some_and(|e| e == kind.segment()) {
                        if let Some(stem) = path.file_stem() {
                            out.insert(format!(
                                "{pkg}/{}/{}",
                                kind.segment(),
                                stem.to_string_lossy()
                            ));
                        }
                    }
                }
            }
        }
    }
    out
}

/// The parts of a name: `(pkg, Some(kind segment), Name)` or `(pkg, None, Name)`.
fn split(given: &str) -> Option<(&str, Option<&str>, &str)> {
    let parts: Vec<&str> = given.split('/').collect();
    let ok = |s: &&str| !s.is_empty();
    match parts.as_slice() {
        [pkg, name] if ok(pkg) && ok(name) => Some((pkg, None, name)),
        [pkg, kind, name] if ok(pkg) && ok(kind) && ok(name) => Some((pkg, Some(kind), name)),
        _ => None,
    }
}

/// The interface a derived message names (`pkg/srv/X_Request` → `pkg/srv/X`), if it is one.
fn base_of_derived(pkg: &str, kind: Kind, name: &str) -> Option<String> {
    derived_suffixes(kind).iter().find_map(|suffix| {
        name.strip_suffix(suffix)
            .filter(|base| !base.is_empty())
            .map(|base| format!("{pkg}/{}/{base}", kind.segment()))
    })
}

/// The full name of a type a command of `kind` takes, checked to exist among `sources`:
/// `pkg/Name` means `pkg/<kind>/Name`; a message may also be one ROS 2 derives from a
/// service or action (`pkg/srv/Name_Request`).
pub fn resolve(given: &str, kind: Kind, sources: Sources) -> Result<String, TypeNameError> {
    let malformed = || TypeNameError::Malformed {
        given: given.to_string(),
        kind: Some(kind),
    };
    let (pkg, segment, name) = split(given).ok_or_else(malformed)?;
    let named_kind = match segment {
        None => kind,
        Some(s) => Kind::from_segment(s).ok_or_else(malformed)?,
    };
    let full = format!("{pkg}/{}/{name}", named_kind.segment());
    let found = if named_kind == kind {
        exists(&full, sources)
    } else if kind == Kind::Msg {
        base_of_derived(pkg, named_kind, name).is_some_and(|base| exists(&base, sources))
    } else {
        return Err(TypeNameError::WrongKind {
            given: given.to_string(),
            named: named_kind,
            wanted: kind,
        });
    };
    if found {
        return Ok(full);
    }
    Err(unknown(full, Some(kind), sources))
}

/// The full name of an interface of any kind (`interface show`): `pkg/Name` is taken when
/// exactly one kind has it.
pub fn resolve_any(given: &str, sources: Sources) -> Result<String, TypeNameError> {
    let (pkg, segment, name) = split(given).ok_or_else(|| TypeNameError::Malformed {
        given: given.to_string(),
        kind: None,
    })?;
    if let Some(s) = segment {
        let kind = Kind::from_segment(s).ok_or_else(|| TypeNameError::Malformed {
            given: given.to_string(),
            kind: None,
        })?;
        return resolve(given, kind, sources);
    }
    let found: Vec<String> = Kind::ALL
        .iter()
        .map(|k| format!("{pkg}/{}/{name}", k.segment()))
        .filter(|full| exists(full, sources))
        .collect();
    match found.len() {
        1 => Ok(found.into_iter().next().unwrap_or_default()),
        0 => Err(unknown(given.to_string(), None, sources)),
        _ => Err(TypeNameError::Ambiguous {
            given: given.to_string(),
            candidates: found,
        }),
    }
}

/// The error for `full` (`pkg/kind/Name`), not found: with the closest names among `sources`
/// of the kind the command takes, and the same name's interfaces of other kinds.
fn unknown(full: String, kind: Option<Kind>, sources: Sources) -> TypeNameError {
    let names = all_names(sources);
    let (pkg, segment, name) = split(&full).unwrap_or_default();
    let named_kind = segment.and_then(Kind::from_segment).unwrap_or(Kind::Msg);
    let of_kind = |k: Kind| {
        let segment = format!("/{}/", k.segment());
        names.iter().filter(move |n| n.contains(&segment)).cloned()
    };
    let candidates: Vec<String> = match kind {
        // `interface show` takes any kind.
        None => names.iter().cloned().collect(),
        // A message ROS 2 derives from a service or action: compared with the derived
        // messages of the interfaces of that kind.
        Some(Kind::Msg) if named_kind != Kind::Msg => of_kind(named_kind)
            .flat_map(|n| {
                derived_suffixes(named_kind)
                    .iter()
                    .map(move |s| format!("{n}{s}"))
            })
            .collect(),
        Some(k) => of_kind(k).collect(),
    };
    let other_kinds = match kind {
        Some(k) if named_kind == k => Kind::ALL
            .into_iter()
            .filter(|other| *other != k)
            .map(|other| format!("{pkg}/{}/{name}", other.segment()))
            .filter(|n| names.contains(n))
            .collect(),
        _ => Vec::new(),
    };
    TypeNameError::Unknown {
        suggestions: suggest(&full, &candidates),
        name: full,
        kind,
        other_kinds,
        sources,
        ament_prefix_path_set: installed_shares().is_some(),
    }
}

/// At most this many names are offered.
const MAX_SUGGESTIONS: usize = 5;

/// The names closest to `wanted`, best first: the same `Name` in other packages (`nope/msg/String`
/// → `std_msgs/msg/String`), then those within a few edits of the whole name (case ignored:
/// `std_msgs/msg/string`, `std_msg/msg/String`, `std_msgs/msg/Strnig`).
fn suggest(wanted: &str, candidates: &[String]) -> Vec<String> {
    // Compared as `pkg/Name`: the candidates are of the kind wanted already, and the short
    // form given is as close to its full name as the full form.
    let short = |s: &str| {
        let mut parts = s.split('/');
        let pkg = parts.next().unwrap_or_default();
        let name = parts.next_back().unwrap_or_default();
        (pkg.to_ascii_lowercase(), name.to_ascii_lowercase())
    };
    let (wanted_pkg, wanted_name) = short(wanted);
    let wanted_short = format!("{wanted_pkg}/{wanted_name}");
    // Roughly one edit per five characters, at least two: typos, not other words.
    let limit = (wanted_short.chars().count() / 5).max(2);
    // (edits to the name, edits to the package): the same name in another package first,
    // the nearest package first among those.
    let mut scored: Vec<(usize, usize, &String)> = candidates
        .iter()
        .filter(|c| c.as_str() != wanted)
        .filter_map(|c| {
            let (pkg, name) = short(c);
            if name == wanted_name {
                return Some((0, strsim::osa_distance(&wanted_pkg, &pkg), c));
            }
            let d = strsim::osa_distance(&wanted_short, &format!("{pkg}/{name}"));
            (d <= limit).then_some((d, 0, c))
        })
        .collect();
    scored.sort();
    scored
        .into_iter()
        .take(MAX_SUGGESTIONS)
        .map(|(_, _, c)| c.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_short_form_takes_the_commands_kind() {
        let b = Sources::Bundled;
        assert_eq!(
            resolve("std_msgs/String", Kind::Msg, b).unwrap(),
            "std_msgs/msg/String"
        );
        assert_eq!(
            resolve("std_msgs/msg/String", Kind::Msg, b).unwrap(),
            "std_msgs/msg/String"
        );
        assert_eq!(
            resolve("example_interfaces/AddTwoInts", Kind::Srv, b).unwrap(),
            "example_interfaces/srv/AddTwoInts"
        );
        assert_eq!(
            resolve("example_interfaces/Fibonacci", Kind::Action, b).unwrap(),
            "example_interfaces/action/Fibonacci"
        );
        // A message ROS 2 derives from a service or an action is a message type too.
        assert_eq!(
            resolve(
                "example_interfaces/action/Fibonacci_FeedbackMessage",
                Kind::Msg,
                b
            )
            .unwrap(),
            "example_interfaces/action/Fibonacci_FeedbackMessage"
        );
        assert_eq!(
            resolve_any("geometry_msgs/Pose", b).unwrap(),
            "geometry_msgs/msg/Pose"
        );
        for bad in [
            "String",
            "a/b/c/d",
            "/String",
            "std_msgs/",
            "std_msgs/foo/String",
        ] {
            assert!(
                matches!(
                    resolve(bad, Kind::Msg, b),
                    Err(TypeNameError::Malformed { .. })
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn unknown_names_come_with_the_closest_known_ones() {
        let b = Sources::Bundled;
        let e = resolve("std_msgs/msg/Strin", Kind::Msg, b).unwrap_err();
        let TypeNameError::Unknown { suggestions, .. } = &e else {
            panic!("{e:?}")
        };
        assert_eq!(
            suggestions.first().map(String::as_str),
            Some("std_msgs/msg/String")
        );
        let text = e.to_string();
        assert!(
            text.starts_with("message type 'std_msgs/msg/Strin' is not one rclev ships"),
            "{text}"
        );
        assert!(text.contains("did you mean std_msgs/msg/String"), "{text}");
        // The same name in other packages comes first.
        let e = resolve("nope_msgs/String", Kind::Msg, b).unwrap_err();
        let TypeNameError::Unknown { suggestions, .. } = &e else {
            panic!("{e:?}")
        };
        assert!(
            suggestions.contains(&"std_msgs/msg/String".to_string()),
            "{suggestions:?}"
        );
        // Case is ignored; a service is offered services only.
        let e = resolve("example_interfaces/addtwoints", Kind::Srv, b).unwrap_err();
        assert!(
            e.to_string()
                .ends_with("did you mean example_interfaces/srv/AddTwoInts?"),
            "{e}"
        );
        // Nothing close: no suggestion, one sentence.
        let e = resolve("zzz_qqq/msg/Xylophone", Kind::Msg, b).unwrap_err();
        assert!(!e.to_string().contains("did you mean"), "{e}");
        // The same name of another kind is pointed out.
        let e = resolve("example_interfaces/AddTwoInts", Kind::Msg, b).unwrap_err();
        assert!(
            e.to_string()
                .contains("example_interfaces/srv/AddTwoInts is a service type"),
            "{e}"
        );
        let e = resolve("std_msgs/msg/String", Kind::Srv, b).unwrap_err();
        assert!(matches!(e, TypeNameError::WrongKind { .. }), "{e:?}");
    }
}
