//! Sessions and the embedded router, each case in a loopback-only network namespace of its own
//! (`common::in_netns`): two sessions with rmw_zenoh's default session configuration meet
//! through the router on 7447 (a put arrives, a query is answered); without a router the
//! router check fails with its typed error; the configuration variables take effect.

mod common;

use std::num::NonZeroU64;
use std::time::Duration;

use rclev_zenoh::config::{CONFIG_OVERRIDE, ROUTER_CHECK_ATTEMPTS};
use rclev_zenoh::{RouterCheck, SessionError, ZenohOptions, ZenohSession};
use zenoh::Wait;

use common::{eventually, in_netns};

/// Generous: the host may be busy.
const LIMIT: Duration = Duration::from_secs(120);
const MEET: Duration = Duration::from_secs(60);

/// Options from a table of variables, as `from_env` would read them.
fn options(vars: &[(&str, &str)]) -> ZenohOptions {
    ZenohOptions::from_vars(|name| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.into()))
        .expect("valid options")
}

/// A session that looks for its router for up to a minute (the router was started first, so
/// the first look normally finds it).
fn session(mut options: ZenohOptions) -> ZenohSession {
    options.router_check = RouterCheck::Attempts(NonZeroU64::new(60).unwrap());
    ZenohSession::open(&options).expect("a session connected to the router")
}

/// `talker` puts on `key` until `listener`'s subscriber hears it (a put made before the
/// subscription has reached the talker goes nowhere); what it heard.
fn put_until_heard(talker: &ZenohSession, listener: &ZenohSession, key: &str) -> String {
    let subscriber = listener
        .zenoh()
        .declare_subscriber(key)
        .wait()
        .expect("a subscriber");
    eventually(MEET, || {
        talker.zenoh().put(key, "hello from rclev").wait().ok()?;
        let sample = subscriber
            .recv_timeout(Duration::from_millis(200))
            .ok()
            .flatten()?;
        Some(sample.payload().try_to_string().ok()?.into_owned())
    })
    .expect("the put arrived")
}

#[test]
fn two_sessions_meet_through_the_embedded_router() {
    in_netns(
        "two_sessions_meet_through_the_embedded_router",
        &[],
        LIMIT,
        || {
            let defaults = ZenohOptions::default();
            let router = rclev_zenoh::Router::start(&defaults).expect("a router on 7447");
            assert_eq!(router.listen_endpoints(), r#"["tcp/[::]:7447"]"#);
            let a = session(defaults.clone());
            let b = session(defaults);
            assert_eq!(a.routers(), vec![router.zid()]);
            assert_eq!(b.routers(), vec![router.zid()]);

            assert_eq!(
                put_until_heard(&a, &b, "rclev/test/chatter"),
                "hello from rclev"
            );

            // A query from a to a queryable on b gets its reply.
            let queryable = b
                .zenoh()
                .declare_queryable("rclev/test/service")
                .wait()
                .expect("a queryable");
            let answering = std::thread::spawn(move || {
                while let Ok(query) = queryable.recv() {
                    let text = query
                        .payload()
                        .map(|p| p.try_to_string().unwrap_or_default().into_owned());
                    let answer = format!("pong to {}", text.unwrap_or_default());
                    if query
                        .reply(query.key_expr().clone(), answer)
                        .wait()
                        .is_err()
                    {
                        break;
                    }
                }
            });
            let reply = eventually(MEET, || {
                let replies = a
                    .zenoh()
                    .get("rclev/test/service")
                    .payload("ping")
                    .timeout(Duration::from_secs(5))
                    .wait()
                    .ok()?;
                let reply = replies.recv().ok()?;
                let sample = reply.into_result().ok()?;
                Some(sample.payload().try_to_string().ok()?.into_owned())
            })
            .expect("the query was answered");
            assert_eq!(reply, "pong to ping");

            a.close().unwrap();
            // Closing b undeclares its queryable, which ends the answering thread.
            b.close().unwrap();
            answering.join().unwrap();
            router.stop().unwrap();
        },
    );
}

#[test]
fn without_a_router_the_check_fails_with_its_error() {
    in_netns(
        "without_a_router_the_check_fails_with_its_error",
        &[(ROUTER_CHECK_ATTEMPTS, "2")],
        LIMIT,
        || {
            let err = ZenohSession::from_env().expect_err("no router to find");
            match &err {
                SessionError::NoRouter {
                    attempts, connect, ..
                } => {
                    assert_eq!(*attempts, 2);
                    assert_eq!(connect, r#"["tcp/localhost:7447"]"#);
                }
                other => panic!("expected NoRouter, got {other:?}"),
            }
            let text = err.to_string();
            assert!(text.contains("tcp/localhost:7447"), "{text}");
            assert!(text.contains(ROUTER_CHECK_ATTEMPTS), "{text}");
        },
    );
}

#[test]
fn overrides_move_the_router_and_the_sessions_follow() {
    in_netns(
        "overrides_move_the_router_and_the_sessions_follow",
        &[],
        LIMIT,
        || {
            // As two processes would read ZENOH_CONFIG_OVERRIDE: the router's listens on 7448,
            // the nodes' dial it there.
            let router = rclev_zenoh::Router::start(&options(&[(
                CONFIG_OVERRIDE,
                r#"listen/endpoints=["tcp/127.0.0.1:7448"]"#,
            )]))
            .expect("a router on 7448");
            assert_eq!(router.listen_endpoints(), r#"["tcp/127.0.0.1:7448"]"#);
            let moved = options(&[
                (
                    CONFIG_OVERRIDE,
                    r#"connect/endpoints=["tcp/127.0.0.1:7448"]"#,
                ),
                (ROUTER_CHECK_ATTEMPTS, "60"),
            ]);
            let a = ZenohSession::open(&moved).expect("a session finds the router on 7448");
            let b = ZenohSession::open(&moved).expect("a second one too");
            assert_eq!(a.routers(), vec![router.zid()]);
            assert_eq!(
                put_until_heard(&b, &a, "rclev/test/moved"),
                "hello from rclev"
            );

            // Nothing is on 7447: a session with the default configuration finds no router.
            let err = ZenohSession::open(&options(&[(ROUTER_CHECK_ATTEMPTS, "1")]))
                .expect_err("no router on 7447");
            assert!(matches!(err, SessionError::NoRouter { .. }), "{err}");

            // A second router cannot take the port the first has: a typed error, not a panic.
            let err = rclev_zenoh::Router::start(&options(&[(
                CONFIG_OVERRIDE,
                r#"listen/endpoints=["tcp/127.0.0.1:7448"]"#,
            )]))
            .expect_err("7448 is taken");
            assert!(
                matches!(err, SessionError::Open { what: "router", .. }),
                "{err}"
            );
        },
    );
}
