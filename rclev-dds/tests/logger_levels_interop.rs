//! Logger levels at run time against rclpy (Jazzy): `~/get_logger_levels` and
//! `~/set_logger_levels` on a node created with `enable_logger_service`, both ways. One
//! script of calls (get, set four levels of which one is not a level, get again) is run by an
//! rclpy client (`tests/peers/rclpy_peer.py logger_client`) and by an rclev client, each
//! against an rclpy node (`rclpy_peer.py logger_server`) and an rclev node: the four
//! transcripts must be the same, line for line, but for the logger's name.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{call_retrying, dds_context, finish_while_spinning, in_netns, spin_until, Peer};
use rclev::interfaces::rcl_interfaces::msg::LoggerLevel;
use rclev::interfaces::rcl_interfaces::srv::{
    GetLoggerLevels, GetLoggerLevels_Request, SetLoggerLevels, SetLoggerLevels_Request,
};
use rclev::{Executor, Node, NodeOptions, SpinOptions};

const LIMIT: Duration = Duration::from_secs(120);
const EACH: Duration = Duration::from_secs(60);

/// The rclpy client's script, run by rclev: the same calls, the same lines.
fn rclev_client(executor: &Executor, node: &Node, target: &str, logger: &str) -> String {
    let get = node
        .create_client::<GetLoggerLevels>(format!("{target}/get_logger_levels").as_str())
        .unwrap();
    let set = node
        .create_client::<SetLoggerLevels>(format!("{target}/set_logger_levels").as_str())
        .unwrap();
    let transcript = Arc::new(Mutex::new(None));
    let t = transcript.clone();
    let logger = logger.to_string();
    let errors = executor.spin(
        SpinOptions::default()
            .until_promise_resolved(async move {
                let run = async {
                    get.wait_for_service(Some(EACH)).await?;
                    set.wait_for_service(Some(EACH)).await?;
                    let each = Duration::from_secs(5);
                    let show = |answer: rclev::interfaces::rcl_interfaces::srv::GetLoggerLevels_Response| {
                        let levels: Vec<String> = answer
                            .levels
                            .iter()
                            .map(|l| format!("{}={}", l.name, l.level))
                            .collect();
                        format!("get: {}\n", levels.join(" "))
                    };
                    let child = format!("{logger}.child");
                    let mut out = show(
                        call_retrying(
                            &get,
                            GetLoggerLevels_Request {
                                names: vec![logger.clone(), child.clone(), "never.set".into()],
                            },
                            each,
                            3,
                        )
                        .await?,
                    );
                    let levels = [
                        (logger.clone(), 40),
                        (child.clone(), 10),
                        (logger.clone(), 33),
                        (String::new(), 30),
                    ];
                    let answer = call_retrying(
                        &set,
                        SetLoggerLevels_Request {
                            levels: levels
                                .iter()
                                .map(|(name, level)| LoggerLevel {
                                    name: name.clone(),
                                    level: *level,
                                })
                                .collect(),
                        },
                        each,
                        3,
                    )
                    .await?;
                    for ((name, level), r) in levels.iter().zip(&answer.results) {
                        let name = if name.is_empty() { "(default)" } else { name };
                        let result = if r.successful {
                            "ok".to_string()
                        } else {
                            format!("refused: {}", r.reason)
                        };
                        out += &format!("set {name}={level}: {result}\n");
                    }
                    out += &show(
                        call_retrying(
                            &get,
                            GetLoggerLevels_Request {
                                names: vec![logger.clone(), child, String::new(), "never.set".into()],
                            },
                            each,
                            3,
                        )
                        .await?,
                    );
                    Ok::<_, rclev::Error>(out)
                };
                *t.lock().unwrap() = Some(run.await);
            })
            .timeout(EACH * 2),
    );
    assert!(errors.is_empty(), "{errors:?}");
    let out = transcript.lock().unwrap().take();
    out.expect("the rclev client did not finish")
        .unwrap_or_else(|e| panic!("the rclev client against {target}: {e}"))
}

#[test]
fn logger_services_answer_as_rclpys_do_both_ways() {
    in_netns(
        "logger_services_answer_as_rclpys_do_both_ways",
        LIMIT,
        || {
            let server = Peer::start("rclpy_peer.py", &["logger_server", "100"]);
            let executor = dds_context().create_basic_executor();
            let rclev_logs = executor
                .create_node(NodeOptions::new("rclev_logs").enable_logger_service(true))
                .unwrap();
            let caller = executor.create_node("rclev_logger_caller").unwrap();
            assert!(spin_until(&executor, EACH, || caller
                .graph()
                .node_names()
                .iter()
                .any(|n| n.name == "rclpy_logs")));

            // Each run has a logger of its own: the levels a run sets stay in the server's process.
            let runs = [
                ("rclpy -> rclpy", "a_logger", None),
                ("rclpy -> rclev", "b_logger", None),
                ("rclev -> rclpy", "c_logger", Some("/rclpy_logs")),
                ("rclev -> rclev", "d_logger", Some("/rclev_logs")),
            ];
            let mut transcripts = Vec::new();
            for (what, logger, rclev_target) in runs {
                let out = match rclev_target {
                    Some(target) => rclev_client(&executor, &caller, target, logger),
                    None => {
                        let target = if what.ends_with("rclpy") {
                            "/rclpy_logs"
                        } else {
                            "/rclev_logs"
                        };
                        let peer = Peer::start("rclpy_peer.py", &["logger_client", target, logger]);
                        finish_while_spinning(&executor, peer, EACH)
                    }
                };
                transcripts.push((what, out.replace(logger, "L")));
            }
            let (first_what, first) = &transcripts[0];
            assert_eq!(
                first,
                "get: L=0 L.child=0 never.set=0\n\
             set L=40: ok\n\
             set L.child=10: ok\n\
             set L=33: refused: Failed reason: Invalid logger level.\n\
             set (default)=30: ok\n\
             get: L=40 L.child=10 =30 never.set=0\n",
                "{first_what}"
            );
            for (what, transcript) in &transcripts[1..] {
                assert_eq!(transcript, first, "{what} differs from {first_what}");
            }
            drop(rclev_logs);
            drop(server);
        },
    );
}
