//! Remapping rules (`-r from:=to`), parsed and applied as rcl parses and applies them
//! (`rcl/src/rcl/arguments.c`, `remap.c`).
//!
//! A rule is `[node:]match:=replacement`. `__node:=new` (or `__name`) renames a node,
//! `__ns:=/ns` moves it; any other rule renames a topic, service or action whose expanded name
//! equals the rule's expanded match (`rostopic://` or `rosservice://` in front restricts it to
//! one kind). Both sides are expanded against the node's final name and namespace, so `~/x`
//! and relative names in a rule mean what they would mean in the node's own code. The first
//! rule that matches wins: the node's own rules before the context's, each list in order. A
//! node prefix limits a rule to one node: the node's name as created for `__node`, its name
//! after `__node` for everything else, as in rcl. Wildcards and back-references are part of
//! the ROS 2 design but not of rcl, which refuses them; so does rclev.

use crate::names;

/// What a remapping rule renames.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Rewrite {
    /// `__node:=name`: the node's name.
    NodeName(String),
    /// `__ns:=/ns`: the node's namespace.
    Namespace(String),
    /// `match:=replacement` for topics and/or services (and actions, whose names are topic
    /// names to remapping).
    Name {
        /// The rule applies to topic (and action) names.
        topics: bool,
        /// The rule applies to service names.
        services: bool,
        /// The name to match, before expansion.
        from: String,
        /// The new name, before expansion.
        to: String,
    },
}

/// One `-r` rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RemapRule {
    /// The only node the rule applies to, if it names one.
    pub(crate) node: Option<String>,
    pub(crate) rewrite: Rewrite,
}

/// Whether a name is a topic's (or an action's) or a service's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NameUse {
    Topic,
    Service,
}

/// The length of the rcl lexer's TOKEN at the start of `s`:
/// `(([a-zA-Z]_?)|_)([0-9a-zA-Z]_?)*` (no digit first, no `__`).
pub(crate) fn token_len(s: &str) -> usize {
    let b = s.as_bytes();
    let mut i;
    match b.first() {
        Some(c) if c.is_ascii_alphabetic() => {
            i = 1;
            if b.get(1) == Some(&b'_') {
                i = 2;
            }
        }
        Some(b'_') => i = 1,
        _ => return 0,
    }
    while i < b.len() && b[i].is_ascii_alphanumeric() {
        i += 1;
        if b.get(i) == Some(&b'_') {
            i += 1;
        }
    }
    // `__x`: the lexer reads no token here at all.
    if b.get(i) == Some(&b'_') {
        return 0;
    }
    i
}

/// A keyword the lexer reads whole (`__node`, `__ns`) at the start of `s`, not followed by
/// token characters.
fn keyword<'a>(s: &'a str, word: &str) -> Option<&'a str> {
    let rest = s.strip_prefix(word)?;
    match rest.as_bytes().first() {
        Some(c) if c.is_ascii_alphanumeric() || *c == b'_' => None,
        _ => Some(rest),
    }
}

/// `[~/|/]token(/token)*` up to `end` (`":="` for a match, `""` for the end of the rule).
/// Returns the name and what follows it.
fn name_part<'a>(s: &'a str, what: &str) -> Result<(&'a str, &'a str), String> {
    let body = s
        .strip_prefix("~/")
        .or_else(|| s.strip_prefix('/'))
        .unwrap_or(s);
    let mut rest = body;
    loop {
        match rest.as_bytes().first() {
            Some(b'*') => {
                return Err("wildcards ('*', '**') are not implemented (as in rcl)".into())
            }
            Some(b'\\') => return Err("back-references are not implemented (as in rcl)".into()),
            _ => {}
        }
        let n = token_len(rest);
        if n == 0 {
            return Err(format!(
                "the {what} must be a name of tokens (letters, digits, single '_') separated by '/'"
            ));
        }
        rest = &rest[n..];
        match rest.strip_prefix('/') {
            Some(after) => rest = after,
            None => break,
        }
    }
    let len = s.len() - rest.len();
    Ok((&s[..len], rest))
}

impl RemapRule {
    /// Parses one rule, as `-r` takes it.
    pub(crate) fn parse(rule: &str) -> Result<Self, String> {
        let mut rest = rule;
        let mut node = None;
        let prefix = token_len(rest);
        if prefix > 0
            && rest[prefix..].starts_with(':')
            && !rest[prefix..].starts_with(":=")
            && !rest.starts_with("rostopic://")
            && !rest.starts_with("rosservice://")
        {
            node = Some(rest[..prefix].to_string());
            rest = &rest[prefix + 1..];
        }
        let rewrite = if let Some(r) = keyword(rest, "__node").or_else(|| keyword(rest, "__name")) {
            let name = r.strip_prefix(":=").ok_or("expected ':=' after __node")?;
            if token_len(name) != name.len() || name.is_empty() {
                return Err(format!("a node cannot be renamed to {name:?}"));
            }
            Rewrite::NodeName(name.to_string())
        } else if let Some(r) = keyword(rest, "__ns") {
            let ns = r.strip_prefix(":=").ok_or("expected ':=' after __ns")?;
            if !ns.starts_with('/') {
                return Err(format!(
                    "a namespace must be fully qualified (start with '/'), found {ns:?}"
                ));
            }
            if ns != "/" {
                let (_, after) = name_part(ns, "namespace")?;
                if !after.is_empty() {
                    return Err(format!("not a namespace: {ns:?}"));
                }
            }
            Rewrite::Namespace(ns.to_string())
        } else {
            let (topics, services, body) = if let Some(b) = rest.strip_prefix("rostopic://") {
                (true, false, b)
            } else if let Some(b) = rest.strip_prefix("rosservice://") {
                (false, true, b)
            } else {
                (true, true, rest)
            };
            let (from, after) = name_part(body, "name to match")?;
            let to = after.strip_prefix(":=").ok_or("expected [node:]from:=to")?;
            let (to, after) = name_part(to, "replacement")?;
            if !after.is_empty() {
                return Err(format!("unexpected {after:?} after the replacement"));
            }
            Rewrite::Name {
                topics,
                services,
                from: from.to_string(),
                to: to.to_string(),
            }
        };
        Ok(Self { node, rewrite })
    }

    fn applies_to(&self, node: &str) -> bool {
        self.node.as_deref().is_none_or(|n| n == node)
    }
}

/// The node's name after the first `__node` rule for `node` (as created), if any.
pub(crate) fn node_name<'a>(
    rules: impl IntoIterator<Item = &'a RemapRule>,
    node: &str,
) -> Option<String> {
    rules.into_iter().find_map(|r| match &r.rewrite {
        Rewrite::NodeName(new) if r.applies_to(node) => Some(new.clone()),
        _ => None,
    })
}

/// The node's namespace after the first `__ns` rule for `node` (its name after renaming).
pub(crate) fn namespace<'a>(
    rules: impl IntoIterator<Item = &'a RemapRule>,
    node: &str,
) -> Option<String> {
    rules.into_iter().find_map(|r| match &r.rewrite {
        Rewrite::Namespace(ns) if r.applies_to(node) => Some(ns.clone()),
        _ => None,
    })
}

/// `expanded` (a name already expanded for node `/namespace/node`) after the first rule that
/// matches it, expanded too; `None` when no rule matches. A rule whose match does not expand
/// for this node (it cannot name anything here) is passed over, as in rcl.
pub(crate) fn name<'a>(
    rules: impl IntoIterator<Item = &'a RemapRule>,
    expanded: &str,
    kind: NameUse,
    node: &str,
    namespace: &str,
) -> Option<crate::Result<String>> {
    rules.into_iter().find_map(|r| match &r.rewrite {
        Rewrite::Name {
            topics,
            services,
            from,
            to,
        } if r.applies_to(node)
            && match kind {
                NameUse::Topic => *topics,
                NameUse::Service => *services,
            } =>
        {
            let matched = names::expand_topic_name(from, namespace, node).ok()?;
            (matched == expanded).then(|| names::expand_topic_name(to, namespace, node))
        }
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name_rule(
        node: Option<&str>,
        topics: bool,
        services: bool,
        from: &str,
        to: &str,
    ) -> RemapRule {
        RemapRule {
            node: node.map(Into::into),
            rewrite: Rewrite::Name {
                topics,
                services,
                from: from.into(),
                to: to.into(),
            },
        }
    }

    #[test]
    fn rules_parse_as_rcl_parses_them() {
        let ok = |r: &str| RemapRule::parse(r).unwrap();
        assert_eq!(
            ok("chatter:=talk"),
            name_rule(None, true, true, "chatter", "talk")
        );
        assert_eq!(
            ok("talker:chatter:=/x/y"),
            name_rule(Some("talker"), true, true, "chatter", "/x/y")
        );
        assert_eq!(ok("~/a:=~/b"), name_rule(None, true, true, "~/a", "~/b"));
        assert_eq!(
            ok("rostopic://a:=b"),
            name_rule(None, true, false, "a", "b")
        );
        assert_eq!(
            ok("n:rosservice://a:=b"),
            name_rule(Some("n"), false, true, "a", "b")
        );
        assert_eq!(ok("__node:=left").rewrite, Rewrite::NodeName("left".into()));
        assert_eq!(ok("__name:=left").rewrite, Rewrite::NodeName("left".into()));
        assert_eq!(ok("cam:__node:=left").node.as_deref(), Some("cam"));
        assert_eq!(
            ok("__ns:=/robot1").rewrite,
            Rewrite::Namespace("/robot1".into())
        );
        assert_eq!(ok("__ns:=/").rewrite, Rewrite::Namespace("/".into()));
        for bad in [
            "chatter",
            "chatter:=",
            ":=x",
            "a:=b:=c",
            "__ns:=robot",
            "__ns:=/a//b",
            "__node:=/x",
            "__node:=9x",
            "a/*:=b",
            "**:=b",
            "a:=\\1",
            "a__b:=c",
            "1a:=b",
            "a b:=c",
            "{node}:=x",
            "a:=b/",
        ] {
            assert!(RemapRule::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn first_matching_rule_wins_after_expansion() {
        let rules = [
            name_rule(Some("other"), true, true, "chatter", "nope"),
            name_rule(None, false, true, "chatter", "srv_only"),
            name_rule(None, true, true, "/ns/chatter", "~/mine"),
            name_rule(None, true, true, "chatter", "second"),
        ];
        let topic = name(&rules, "/ns/chatter", NameUse::Topic, "me", "/ns");
        assert_eq!(topic, Some(Ok("/ns/me/mine".into())));
        let service = name(&rules, "/ns/chatter", NameUse::Service, "me", "/ns");
        assert_eq!(service, Some(Ok("/ns/srv_only".into())));
        assert_eq!(name(&rules, "/chatter", NameUse::Topic, "me", "/ns"), None);
    }
}
