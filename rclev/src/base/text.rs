//! Text from outside — a peer's node or topic name, a type name from a bag, a field of a file
//! — made safe to show on a terminal or in a log: it may hold escape sequences that clear the
//! screen or retitle the window, BEL, NUL, a right-to-left override that reorders what
//! follows, or a line break that makes one name look like two.

use std::borrow::Cow;

/// `text` as it may be printed: control characters (C0, DEL, C1) and the invisible Unicode
/// formatting characters (bidirectional controls, zero-width characters, the BOM, the soft
/// hyphen) written as Rust escapes (`\n`, `\u{1b}`, `\u{202e}`), everything else as it is;
/// cut after `max_chars` characters with `…` (`usize::MAX`: never). Borrowed when nothing
/// changes, which is the case for every valid ROS name.
///
/// ```
/// use rclev::printable;
/// assert_eq!(printable("/talker", usize::MAX), "/talker");
/// assert_eq!(printable("a\u{1b}[2Jb\nc", usize::MAX), "a\\u{1b}[2Jb\\nc");
/// assert_eq!(printable("x\u{202e}y", usize::MAX), "x\\u{202e}y");
/// assert_eq!(printable("abcdef", 3), "abc…");
/// ```
pub fn printable(text: &str, max_chars: usize) -> Cow<'_, str> {
    let needs_escape = text.chars().any(hidden);
    let too_long = max_chars != usize::MAX && text.chars().nth(max_chars).is_some();
    if !needs_escape && !too_long {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len().min(max_chars.saturating_mul(4)) + 8);
    for (i, c) in text.chars().enumerate() {
        if i == max_chars {
            out.push('…');
            break;
        }
        if hidden(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Whether `c` acts on a terminal, or shows as nothing, instead of as itself.
fn hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{ad}'
                | '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2060}'..='\u{2064}'
                | '\u{2066}'..='\u{2069}'
                | '\u{feff}'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_invisible_characters_are_escaped_and_long_text_cut() {
        assert!(matches!(
            printable("/ns/node_1", usize::MAX),
            Cow::Borrowed(_)
        ));
        assert_eq!(
            printable("a\u{7}\0\u{7f}\u{9b}", usize::MAX),
            "a\\u{7}\\u{0}\\u{7f}\\u{9b}"
        );
        assert_eq!(printable("tab\there", usize::MAX), "tab\\there");
        assert_eq!(
            printable("\u{200b}\u{2066}", usize::MAX),
            "\\u{200b}\\u{2066}"
        );
        assert_eq!(printable("pkg/msg/Größe", usize::MAX), "pkg/msg/Größe");
        let long = "é".repeat(5000);
        let cut = printable(&long, 100);
        assert_eq!(cut.chars().count(), 101);
        assert!(cut.ends_with('…'));
        assert_eq!(printable("abc", 3), "abc");
    }
}
