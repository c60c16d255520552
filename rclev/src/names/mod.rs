//! ROS 2 name validation and expansion (rcl's `rcl_validate_*` and `rcl_expand_topic_name`
//! rules: `~` for the node's private namespace, `{node}` and `{ns}`/`{namespace}`
//! substitutions, relative names in the node's namespace).

use crate::base::error::{Error, NameKind, Result};

fn invalid(kind: NameKind, name: &str, reason: &'static str) -> Error {
    Error::InvalidName {
        kind,
        name: name.to_string(),
        reason,
    }
}

fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// A node name: non-empty, `[A-Za-z0-9_]`, not starting with a digit, at most 255 characters.
pub(crate) fn validate_node_name(name: &str) -> Result<()> {
    let kind = NameKind::Node;
    if name.is_empty() {
        return Err(invalid(kind, name, "must not be empty"));
    }
    if name.len() > 255 {
        return Err(invalid(kind, name, "longer than 255 characters"));
    }
    if !name.chars().all(is_token_char) {
        return Err(invalid(
            kind,
            name,
            "may contain only letters, digits and '_'",
        ));
    }
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(invalid(kind, name, "must not start with a digit"));
    }
    Ok(())
}

/// A namespace: absolute, `/`-separated valid tokens, no trailing `/` (except the root `/`).
/// An empty namespace means the root and is normalised to `/`.
pub(crate) fn normalize_namespace(ns: &str) -> Result<String> {
    let kind = NameKind::Namespace;
    if ns.is_empty() || ns == "/" {
        return Ok("/".to_string());
    }
    let ns = if ns.starts_with('/') {
        ns.to_string()
    } else {
        format!("/{ns}")
    };
    if ns.ends_with('/') {
        return Err(invalid(kind, &ns, "must not end with '/'"));
    }
    check_tokens(kind, &ns, ns[1..].split('/'))?;
    Ok(ns)
}

fn check_tokens<'a>(
    kind: NameKind,
    name: &str,
    tokens: impl Iterator<Item = &'a str>,
) -> Result<()> {
    for token in tokens {
        if token.is_empty() {
            return Err(invalid(kind, name, "must not contain '//'"));
        }
        if !token.chars().all(is_token_char) {
            return Err(invalid(
                kind,
                name,
                "tokens may contain only letters, digits and '_'",
            ));
        }
        if token.starts_with(|c: char| c.is_ascii_digit()) {
            return Err(invalid(kind, name, "a token must not start with a digit"));
        }
    }
    Ok(())
}

/// Expands a topic or service name against a node's namespace and name, checking it against
/// ROS 2's naming rules (`Error::InvalidName` otherwise): `chatter` → `/ns/chatter`,
/// `~/state` → `/ns/node/state`, `/tf` → `/tf`, `{node}/state` → `/ns/node/state`. As in
/// rcl, `{ns}` (or `{namespace}`) is the namespace as it is, so in the root namespace
/// `{ns}/x` expands to the invalid `//x`. Tools that make no node (`rclev topic echo`) expand
/// a user's name with it too.
///
/// ```
/// assert_eq!(rclev::expand_topic_name("chatter", "/robot", "talker").unwrap(), "/robot/chatter");
/// assert_eq!(rclev::expand_topic_name("{node}/x", "/robot", "talker").unwrap(), "/robot/talker/x");
/// assert!(rclev::expand_topic_name("bad name", "/", "n").is_err());
/// ```
pub fn expand_topic_name(name: &str, namespace: &str, node: &str) -> Result<String> {
    let kind = NameKind::Topic;
    if name.is_empty() {
        return Err(invalid(kind, name, "must not be empty"));
    }
    let base = if namespace == "/" { "" } else { namespace };
    let private = if name == "~" {
        Some(format!("{base}/{node}"))
    } else if let Some(rest) = name.strip_prefix("~/") {
        Some(format!("{base}/{node}/{rest}"))
    } else if name.starts_with('~') {
        return Err(invalid(kind, name, "'~' must be followed by '/'"));
    } else {
        None
    };
    let substituted = substitute(private.as_deref().unwrap_or(name), namespace, node)
        .map_err(|reason| invalid(kind, name, reason))?;
    let expanded = if substituted.starts_with('/') {
        substituted
    } else {
        format!("{base}/{substituted}")
    };
    if expanded.ends_with('/') {
        return Err(invalid(kind, name, "must not end with '/'"));
    }
    check_tokens(kind, name, expanded[1..].split('/'))?;
    Ok(expanded)
}

/// `{node}`, `{ns}` and `{namespace}` replaced; any other `{…}` is refused, as rcl refuses
/// an unknown substitution. The replacements are valid names and contain no braces, so one
/// pass over the text suffices.
fn substitute(
    name: &str,
    namespace: &str,
    node: &str,
) -> std::result::Result<String, &'static str> {
    if !name.contains(['{', '}']) {
        return Ok(name.to_string());
    }
    let mut out = String::with_capacity(name.len() + namespace.len() + node.len());
    let mut rest = name;
    while let Some(open) = rest.find(['{', '}']) {
        out.push_str(&rest[..open]);
        if rest.as_bytes()[open] == b'}' {
            return Err("unbalanced '}'");
        }
        let after = &rest[open + 1..];
        let close = after.find('}').ok_or("unclosed '{'")?;
        match &after[..close] {
            "node" => out.push_str(node),
            "ns" | "namespace" => out.push_str(namespace),
            _ => return Err("unknown substitution (only {node}, {ns} and {namespace})"),
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_names() {
        assert!(validate_node_name("talker_1").is_ok());
        for bad in ["", "1talker", "my-node", "a/b", "tälker"] {
            assert!(
                matches!(
                    validate_node_name(bad),
                    Err(Error::InvalidName {
                        kind: NameKind::Node,
                        ..
                    })
                ),
                "{bad:?} accepted"
            );
        }
    }

    #[test]
    fn namespaces() {
        assert_eq!(normalize_namespace("").unwrap(), "/");
        assert_eq!(normalize_namespace("robot").unwrap(), "/robot");
        assert_eq!(normalize_namespace("/a/b").unwrap(), "/a/b");
        for bad in ["/a/", "/a//b", "/1a", "/a-b"] {
            assert!(normalize_namespace(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn topic_expansion() {
        assert_eq!(expand_topic_name("chatter", "/", "n").unwrap(), "/chatter");
        assert_eq!(
            expand_topic_name("chatter", "/ns", "n").unwrap(),
            "/ns/chatter"
        );
        assert_eq!(
            expand_topic_name("~/state", "/ns", "n").unwrap(),
            "/ns/n/state"
        );
        assert_eq!(expand_topic_name("~", "/", "n").unwrap(), "/n");
        assert_eq!(expand_topic_name("/tf", "/ns", "n").unwrap(), "/tf");
        assert_eq!(
            expand_topic_name("{node}/x", "/ns", "n").unwrap(),
            "/ns/n/x"
        );
        assert_eq!(expand_topic_name("/a/{node}", "/ns", "n").unwrap(), "/a/n");
        assert_eq!(expand_topic_name("{ns}/x", "/ns", "n").unwrap(), "/ns/x");
        for bad in [
            "", "a//b", "a/", "~x", "9lives", "bad name", "a/#", "{ns}/x", "{other}", "{node",
            "node}",
        ] {
            assert!(
                matches!(
                    expand_topic_name(bad, "/", "n"),
                    Err(Error::InvalidName {
                        kind: NameKind::Topic,
                        ..
                    })
                ),
                "{bad:?} accepted"
            );
        }
    }
}
