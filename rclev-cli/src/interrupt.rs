//! Ctrl-C for the long-running commands (`topic echo|pub|hz|bw`, `action send_goal`): the
//! first SIGINT asks them to finish cleanly (exit status 0, after their last output; every
//! wait of theirs looks at [`interrupted`] at least every half second); a second one ends the
//! process at once, by SIGINT (the status a shell reports for it: 130).
//!
//! The handler is rclev's ([`rclev::executor::install_sigint_handler`]: one per process, also
//! the one that ends a spin), installed by `main` as soon as the command line is parsed,
//! before any DDS work. A SIGINT that comes earlier still, while the process is being loaded
//! (its first milliseconds, before any code of ours runs), takes the default action as it
//! would for any program: that window cannot be closed from inside the process. Tests that
//! interrupt "at once" wait for the handler first (`SigCgt` in `/proc/<pid>/status`).

/// Whether Ctrl-C was pressed.
pub use rclev::executor::sigint_received as interrupted;

/// Installs the handler for the rest of the process (idempotent).
pub fn install() {
    if let Err(e) = rclev::executor::install_sigint_handler() {
        eprintln!("rclev: warning: cannot handle Ctrl-C: {e}");
    }
}
