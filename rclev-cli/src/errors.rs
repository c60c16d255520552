//! The CLI's error handling: any error prints as a message for the user and exits 1.

/// The CLI's result: any error prints as a message and exits 1.
pub type Result<T = ()> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// Prints the errors a spin raised: the CLI's own callbacks should raise none.
pub fn report_spin(errors: Vec<rclev::Error>) {
    for e in &errors {
        eprintln!("rclev: error while spinning: {e}");
    }
}
