//! YAML from outside — a bag's `metadata.yaml`, the QoS profiles in an MCAP channel's
//! metadata, a QoS override file, a value typed on a command line — read as a tree, with what a
//! hostile document could do with YAML's tree builder taken away:
//!
//! - **No aliases, no anchors.** A builder that expands aliases copies the anchored node at
//!   each use: nine nested levels of ten aliases each ("billion laughs") are 10^9 copies from
//!   a document of a few hundred bytes, and anchors on nested nodes are copied level by level.
//!   rosbag2 never writes either, and rcl refuses aliases in parameter files too.
//! - **At most [`MAX_DEPTH`] levels of nesting.** A tree is walked, printed and dropped by
//!   recursion; `- - - - …` nests a level every two bytes.
//!
//! The document is checked event by event first (one pass, nothing built, stopping at the
//! first thing refused), then built.

use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::scanner::Marker;
pub use yaml_rust2::Yaml;
use yaml_rust2::YamlLoader;

/// The most levels of nested sequences and mappings a document may have. rosbag2's
/// `metadata.yaml` has 7.
pub const MAX_DEPTH: usize = 64;

/// The largest YAML file [`read_file`] reads: a `metadata.yaml` takes about 150 bytes per file
/// and 500 per topic of the bag.
pub const MAX_FILE_BYTES: u64 = 16 << 20;

/// The text of YAML file `path`, refused (as [`std::io::ErrorKind::InvalidData`]) when it is
/// larger than [`MAX_FILE_BYTES`]: a file from outside is not read whole into memory whatever
/// its size.
pub fn read_file(path: &std::path::Path) -> std::io::Result<String> {
    use std::io::Read as _;
    let mut text = String::new();
    std::fs::File::open(path)?
        .take(MAX_FILE_BYTES + 1)
        .read_to_string(&mut text)?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than {MAX_FILE_BYTES} bytes, more than any YAML file rclev reads"),
        ));
    }
    Ok(text)
}

/// Why a YAML document was not read: a syntax error, an alias or anchor, nesting deeper than
/// [`MAX_DEPTH`]; with where in the text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct YamlError(String);

/// Where an event is, for a message.
fn at(mark: &Marker) -> String {
    format!("line {} column {}", mark.line(), mark.col() + 1)
}

/// Looks at the document event by event, pulled one at a time from the parser's state machine
/// (its `load` recurses once per level of nesting: a deep document would overflow the
/// stack before any check ran), and stops at the first thing refused.
fn check(text: &str) -> Result<(), YamlError> {
    let mut parser = Parser::new_from_str(text);
    let mut depth = 0usize;
    loop {
        let (event, mark) = parser
            .next_token()
            .map_err(|e| YamlError(format!("invalid YAML: {e}")))?;
        // Anchor ids start at 1; 0 is "none".
        let anchor = match event {
            Event::StreamEnd => return Ok(()),
            Event::Alias(_) => {
                return Err(YamlError(format!(
                    "refused a YAML alias (*name), which rclev does not expand, at {}",
                    at(&mark)
                )))
            }
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(YamlError(format!(
                        "refused nesting deeper than {MAX_DEPTH} levels at {}",
                        at(&mark)
                    )));
                }
                anchor
            }
            Event::SequenceEnd | Event::MappingEnd => {
                depth = depth.saturating_sub(1);
                0
            }
            Event::Scalar(_, _, anchor, _) => anchor,
            _ => 0,
        };
        if anchor > 0 {
            return Err(YamlError(format!(
                "refused a YAML anchor (&name), which rclev does not read, at {}",
                at(&mark)
            )));
        }
    }
}

/// Reads every document of `text`; see the [module docs](self) for what is refused.
pub fn load(text: &str) -> Result<Vec<Yaml>, YamlError> {
    check(text)?;
    // Within MAX_DEPTH levels, the builder's recursion is bounded.
    YamlLoader::load_from_str(text).map_err(|e| YamlError(format!("invalid YAML: {e}")))
}

/// A node as an error message shows it: a scalar as written (a string quoted, control
/// characters escaped, cut after 40 characters), anything else by its [`kind`].
pub fn shown(node: &Yaml) -> String {
    match node {
        Yaml::String(s) => {
            let mut out: String = s.chars().take(40).flat_map(char::escape_debug).collect();
            if s.chars().nth(40).is_some() {
                out.push('…');
            }
            format!("'{out}'")
        }
        Yaml::Integer(i) => i.to_string(),
        Yaml::Real(r) => r.chars().take(40).collect(),
        Yaml::Boolean(b) => b.to_string(),
        other => kind(other).to_string(),
    }
}

/// What kind of node `node` is, for an error message (which must not print a node from
/// outside whole: it may be megabytes).
pub fn kind(node: &Yaml) -> &'static str {
    match node {
        Yaml::Real(_) => "a number",
        Yaml::Integer(_) => "an integer",
        Yaml::String(_) => "a string",
        Yaml::Boolean(_) => "a boolean",
        Yaml::Array(_) => "a list",
        Yaml::Hash(_) => "a mapping",
        Yaml::Alias(_) => "an alias",
        Yaml::Null => "null",
        Yaml::BadValue => "nothing",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `levels` levels of `fan` aliases each: 10^9 nodes once expanded, at 9 × 10.
    pub(crate) fn billion_laughs(levels: usize, fan: usize) -> String {
        let mut text = String::from("a0: &a0 [lol]\n");
        for i in 1..=levels {
            let uses: Vec<String> = (0..fan).map(|_| format!("*a{}", i - 1)).collect();
            text.push_str(&format!("a{i}: &a{i} [{}]\n", uses.join(", ")));
        }
        text
    }

    #[test]
    fn aliases_and_anchors_are_refused_before_anything_is_built() {
        let e = load(&billion_laughs(9, 10)).unwrap_err().to_string();
        assert!(e.contains("anchor"), "{e}");
        assert!(e.contains("line 1"), "{e}");
        let e = load("a: *b\n").unwrap_err().to_string();
        assert!(e.contains("alias") || e.contains("invalid"), "{e}");
        let e = load("a: &x 1\nb: 2\n").unwrap_err().to_string();
        assert!(e.contains("anchor"), "{e}");
    }

    #[test]
    fn deep_nesting_is_refused() {
        let deep = "- ".repeat(100_000) + "x\n";
        let e = load(&deep).unwrap_err().to_string();
        assert!(e.contains("deeper than 64"), "{e}");
        assert!(load(&("- ".repeat(MAX_DEPTH) + "x\n")).is_ok());
        let flow = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        assert!(load(&flow).is_err());
    }

    #[test]
    fn plain_documents_are_read_as_yaml_rust2_reads_them() {
        let text = "rosbag2_bagfile_information:\n  version: 9\n  files:\n    - path: a.mcap\n";
        assert_eq!(
            load(text).unwrap(),
            YamlLoader::load_from_str(text).unwrap()
        );
        assert!(load("a: [1, 2")
            .unwrap_err()
            .to_string()
            .contains("invalid YAML"));
        assert_eq!(kind(&load("[1]").unwrap()[0]), "a list");
        assert_eq!(shown(&Yaml::String("rate".into())), "'rate'");
        let long = shown(&Yaml::String(format!("\u{1b}[2J{}", "x".repeat(5000))));
        assert!(long.starts_with("'\\u{1b}[2J") && long.len() < 60, "{long}");
    }
}
