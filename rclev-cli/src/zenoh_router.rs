//! `rclev zenoh router`: a Zenoh router for ROS 2 nodes on rmw_zenoh (and rclev-zenoh), as
//! `ros2 run rmw_zenoh_cpp rmw_zenohd` runs one: rmw_zenohd's default configuration (listening
//! on `tcp/[::]:7447`), `ZENOH_ROUTER_CONFIG_URI` and `ZENOH_CONFIG_OVERRIDE` honoured. It runs
//! until Ctrl-C (rclev's SIGINT handler, looked at every 200 ms), then stops the router and
//! exits 0.

use std::time::Duration;

/// How often the wait looks whether Ctrl-C was pressed.
const POLL: Duration = Duration::from_millis(200);

/// Runs the router until Ctrl-C.
pub fn run() -> crate::errors::Result {
    // Before the router starts, so that a Ctrl-C during its set-up also ends it cleanly.
    if let Err(e) = rclev::executor::install_sigint_handler() {
        eprintln!("rclev: warning: cannot handle Ctrl-C: {e}");
    }
    let router = rclev_zenoh::Router::from_env()?;
    println!(
        "Zenoh router {} listening on {} (Ctrl-C to stop)",
        router.zid(),
        router.listen_endpoints()
    );
    while !rclev::executor::sigint_received() {
        std::thread::sleep(POLL);
    }
    router.stop()?;
    Ok(())
}
