//! `rclev bag play`'s keyboard: the keys rosbag2's player binds (space, the right, up and down
//! arrows) read from a terminal in raw mode. Decoding is pure ([`KeyDecoder`], tested); the
//! terminal handling ([`Keyboard`]) is kept to setting the mode, restoring it, and a thread
//! that reads bytes.

use std::sync::Mutex;

/// A key the player acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Key {
    /// Pause/resume.
    Space,
    /// Play the next message (while paused).
    Right,
    /// Raise the rate.
    Up,
    /// Lower the rate.
    Down,
    /// Ctrl-C typed while the terminal is raw (its signal keys are off).
    CtrlC,
}

/// Turns the bytes a terminal sends into [`Key`]s: arrows come as escape sequences
/// (`ESC [ A`, or `ESC O A` in the terminal's application-cursor mode), split across reads
/// at times. Other keys and sequences are ignored.
#[derive(Debug, Default)]
pub(crate) struct KeyDecoder {
    state: State,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum State {
    #[default]
    Ground,
    /// After ESC.
    Escape,
    /// After `ESC [` or `ESC O`: parameters until a final byte.
    Sequence,
}

impl KeyDecoder {
    /// The key `byte` completes, if any.
    pub(crate) fn push(&mut self, byte: u8) -> Option<Key> {
        match (self.state, byte) {
            (_, 0x1b) => {
                self.state = State::Escape;
                None
            }
            (State::Escape, b'[' | b'O') => {
                self.state = State::Sequence;
                None
            }
            // Parameter and intermediate bytes (`ESC [ 1 ; 5 A`, a modified arrow).
            (State::Sequence, 0x20..=0x3f) => None,
            (State::Sequence, final_byte) => {
                self.state = State::Ground;
                match final_byte {
                    b'A' => Some(Key::Up),
                    b'B' => Some(Key::Down),
                    b'C' => Some(Key::Right),
                    _ => None,
                }
            }
            (State::Escape, _) => {
                // ESC then a plain key (Alt+key): neither is one of ours.
                self.state = State::Ground;
                None
            }
            (State::Ground, b' ') => Some(Key::Space),
            (State::Ground, 0x03) => Some(Key::CtrlC),
            (State::Ground, _) => None,
        }
    }
}

/// The terminal's settings before raw mode, to restore (from the player's thread at the end,
/// or from the reader's at a Ctrl-C).
static SAVED: Mutex<Option<libc::termios>> = Mutex::new(None);

/// Puts the saved settings back, once.
fn restore() {
    let saved = SAVED.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(t) = saved {
        // SAFETY: `t` is a termios tcgetattr filled for this descriptor.
        unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &t) };
    }
}

/// Raw-mode stdin for the player's keys; the terminal is restored when this drops (the end of
/// playback, an error, a panic's unwinding) or at a Ctrl-C typed in it.
pub(crate) struct Keyboard {
    _private: (),
}

impl Keyboard {
    /// When stdin is a terminal: puts it in raw mode (no line buffering, no echo, and no
    /// signal keys, so that a Ctrl-C can restore the terminal before it is delivered) and
    /// starts a thread that calls `on_key` with each key read (until it returns `false`).
    /// `None` otherwise.
    pub(crate) fn start(on_key: impl FnMut(Key) -> bool + Send + 'static) -> Option<Keyboard> {
        // SAFETY: isatty only inspects the descriptor.
        if unsafe { libc::isatty(libc::STDIN_FILENO) } != 1 {
            return None;
        }
        // SAFETY: a zeroed termios is a valid buffer for tcgetattr to fill.
        let mut t: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: `t` is a valid, writable termios.
        if unsafe { libc::tcgetattr(libc::STDIN_FILENO, &mut t) } != 0 {
            return None;
        }
        *SAVED.lock().unwrap_or_else(|e| e.into_inner()) = Some(t);
        let mut raw = t;
        raw.c_lflag &= !(libc::ICANON | libc::ECHO | libc::ISIG);
        raw.c_cc[libc::VMIN] = 1;
        raw.c_cc[libc::VTIME] = 0;
        // SAFETY: `raw` is the terminal's own settings with local flags changed.
        if unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &raw) } != 0 {
            SAVED.lock().unwrap_or_else(|e| e.into_inner()).take();
            return None;
        }
        let keyboard = Keyboard { _private: () };
        let spawned = std::thread::Builder::new()
            .name("rclev-bag-keys".into())
            .spawn(move || read_keys(on_key));
        // Without the reader the keys would do nothing: the terminal goes back to normal
        // (by `keyboard`'s drop).
        spawned.ok().map(|_| keyboard)
    }
}

impl Drop for Keyboard {
    fn drop(&mut self) {
        restore();
    }
}

/// Reads stdin until it ends or the player stops listening. The thread stays blocked in
/// `read` when playback ends first; the process exits without waiting for it.
fn read_keys(mut on_key: impl FnMut(Key) -> bool) {
    let mut decoder = KeyDecoder::default();
    let mut buf = [0u8; 64];
    loop {
        // SAFETY: reading into a buffer of the length given.
        let n = unsafe { libc::read(libc::STDIN_FILENO, buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        if n <= 0 {
            return;
        }
        for &b in &buf[..n as usize] {
            let Some(key) = decoder.push(b) else { continue };
            if key == Key::CtrlC {
                // The terminal is normal again before the signal lands, even if it ends
                // the process (a second Ctrl-C), and later Ctrl-Cs are the terminal's.
                restore();
                // SAFETY: signals this very process, as the terminal would have.
                unsafe { libc::kill(libc::getpid(), libc::SIGINT) };
                return;
            }
            if !on_key(key) {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(bytes: &[u8]) -> Vec<Key> {
        let mut d = KeyDecoder::default();
        bytes.iter().filter_map(|&b| d.push(b)).collect()
    }

    #[test]
    fn keys_decode_from_terminal_bytes() {
        assert_eq!(decode(b" "), [Key::Space]);
        assert_eq!(
            decode(b"\x1b[A\x1b[B\x1b[C\x1bOA"),
            [Key::Up, Key::Down, Key::Right, Key::Up]
        );
        // Modified arrows, other sequences and keys, Alt+key: only ours come out.
        assert_eq!(decode(b"\x1b[1;5C"), [Key::Right]);
        assert_eq!(decode(b"x\x1b[D\x1b[3~q\x1bx "), [Key::Space]);
        assert_eq!(decode(b"\x03"), [Key::CtrlC]);
        // ESC ESC [ A: the second escape starts over.
        assert_eq!(decode(b"\x1b\x1b[A"), [Key::Up]);
        // Split across reads: the decoder keeps its state.
        let mut d = KeyDecoder::default();
        assert_eq!(d.push(0x1b), None);
        assert_eq!(d.push(b'['), None);
        assert_eq!(d.push(b'C'), Some(Key::Right));
    }
}
