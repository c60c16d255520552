//! rclev-zenoh against a plain Zenoh peer in Python (`eclipse-zenoh` from the oracle venv,
//! `bash .ci/oracles`), in a loopback-only network namespace: the Python session, connected to
//! the embedded router, receives a put from an rclev-zenoh session. Skipped, with a word on
//! stderr, when the venv lacks zenoh.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use rclev_zenoh::{Router, ZenohOptions, ZenohSession};
use zenoh::Wait;

use common::{eventually, in_netns, python_with_zenoh};

#[test]
fn a_python_zenoh_peer_hears_an_rclev_put() {
    let python = match python_with_zenoh() {
        Ok(p) => p,
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    in_netns(
        "a_python_zenoh_peer_hears_an_rclev_put",
        &[("ZENOH_ROUTER_CHECK_ATTEMPTS", "60")],
        Duration::from_secs(180),
        move || {
            let options = ZenohOptions::from_env().unwrap();
            let _router = Router::start(&options).expect("a router on 7447");
            let session = ZenohSession::open(&options).expect("a session");

            let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/peers/zenoh_listener.py");
            let mut peer = Command::new(&python)
                .args(["-u", script, "rclev/test/python", "tcp/localhost:7447"])
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("the venv's python");
            // Its lines, read on a thread so that waiting for them is bounded.
            let stdout = peer.stdout.take().expect("piped stdout");
            let (lines, heard) = mpsc::channel();
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                    if lines.send(line).is_err() {
                        break;
                    }
                }
            });
            let ready = heard
                .recv_timeout(Duration::from_secs(60))
                .expect("the peer starts");
            assert_eq!(ready, "ready");
            // Put until the peer hears one (its subscription takes a moment to reach us).
            let line = eventually(Duration::from_secs(60), || {
                session
                    .zenoh()
                    .put("rclev/test/python", "hello from rclev")
                    .wait()
                    .ok()?;
                heard.recv_timeout(Duration::from_millis(200)).ok()
            });
            if line.is_none() {
                // It would wait for ever: end it, so that the assertion below reports.
                let _ = peer.kill();
            }
            let status = peer.wait().expect("the peer exits");
            assert_eq!(line.as_deref(), Some("heard: hello from rclev"));
            assert!(status.success(), "the peer failed: {status}");
        },
    );
}
