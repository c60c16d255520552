//! `hiroz-peer`: one ROS 2 node on hiroz (the Zenoh authors' rmw_zenoh-compatible Rust stack),
//! playing one role against rclev-zenoh in `rclev-zenoh/tests/hiroz_peer.rs`.
//!
//! It connects, as rmw_zenoh does, to the router at `tcp/127.0.0.1:7447` (override with
//! `HIROZ_PEER_ENDPOINT`), domain 0. Every role reports on stdout, one line per event, and
//! exits 0 when it has done what it was asked; any failure exits non-zero with the reason
//! on stderr. Roles that serve run until the test kills them.
//!
//! ```text
//! hiroz-peer talk <topic>                 publish std_msgs/String "hiroz <n>" every 20 ms
//! hiroz-peer listen <topic> <count>       print "heard <data>" for <count> std_msgs/String
//! hiroz-peer serve <service>              example_interfaces/AddTwoInts: sum = a + b
//! hiroz-peer call <service> <a> <b>       print "sum <sum>"
//! hiroz-peer action-serve <action>        example_interfaces/Fibonacci, one feedback per step
//! hiroz-peer action-send <action> <order> print "feedback <len>" ... then "result <seq>"
//! hiroz-peer graph <node> <topic>        once both are in the graph: "node <ns> <name>" and
//!                                         "topic <name> <type>" lines, then "done"
//! ```

use std::time::Duration;

use hiroz::context::{ZContext, ZContextBuilder};
use hiroz::{Builder, Result};
use hiroz_msgs::example_interfaces::{
    AddTwoIntsRequest, AddTwoIntsResponse, FibonacciFeedback, FibonacciGoal, FibonacciResult,
    action::Fibonacci, srv::AddTwoInts,
};
use hiroz_msgs::std_msgs::String as RosString;

/// How long a role that waits for something waits before it fails.
const PATIENCE: Duration = Duration::from_secs(60);

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runtime = tokio::runtime::Runtime::new().expect("a Tokio runtime");
    if let Err(e) = runtime.block_on(run(&args)) {
        eprintln!("hiroz-peer {}: {e}", args.join(" "));
        std::process::exit(1);
    }
}

async fn run(args: &[String]) -> Result<()> {
    let arg = |i: usize| -> Result<&str> {
        args.get(i)
            .map(String::as_str)
            .ok_or_else(|| format!("argument {i} missing (see the usage in main.rs)").into())
    };
    let int = |i: usize| -> Result<i64> {
        arg(i)?
            .parse::<i64>()
            .map_err(|e| format!("argument {i}: {e}").into())
    };
    let endpoint =
        std::env::var("HIROZ_PEER_ENDPOINT").unwrap_or_else(|_| "tcp/127.0.0.1:7447".into());
    let ctx = ZContextBuilder::default()
        .with_domain_id(0)
        .with_connect_endpoints([endpoint])
        .build()?;
    match arg(0)? {
        "talk" => talk(ctx, arg(1)?).await,
        "listen" => listen(ctx, arg(1)?, int(2)? as usize).await,
        "serve" => serve(ctx, arg(1)?).await,
        "call" => call(ctx, arg(1)?, int(2)?, int(3)?).await,
        "action-serve" => action_serve(ctx, arg(1)?).await,
        "action-send" => action_send(ctx, arg(1)?, int(2)? as i32).await,
        "graph" => graph(ctx, arg(1)?, arg(2)?).await,
        other => Err(format!("unknown role {other:?}").into()),
    }
}

async fn talk(ctx: ZContext, topic: &str) -> Result<()> {
    let node = ctx.create_node("hiroz_talker").build()?;
    let publisher = node.create_pub::<RosString>(topic).build()?;
    println!("ready");
    for n in 1u64.. {
        let msg = RosString {
            data: format!("hiroz {n}"),
        };
        publisher.async_publish(&msg).await?;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

async fn listen(ctx: ZContext, topic: &str, count: usize) -> Result<()> {
    let node = ctx.create_node("hiroz_listener").build()?;
    let subscriber = node.create_sub::<RosString>(topic).build()?;
    println!("ready");
    for _ in 0..count {
        let msg = tokio::time::timeout(PATIENCE, subscriber.async_recv())
            .await
            .map_err(|_| format!("no message on {topic} within {PATIENCE:?}"))??;
        println!("heard {}", msg.data);
    }
    Ok(())
}

async fn serve(ctx: ZContext, service: &str) -> Result<()> {
    let node = ctx.create_node("hiroz_server").build()?;
    let mut server = node.create_service::<AddTwoInts>(service).build()?;
    println!("ready");
    loop {
        let request = server.async_take_request().await?;
        let sum = request.message().a + request.message().b;
        println!("request {} {}", request.message().a, request.message().b);
        request.reply(&AddTwoIntsResponse { sum }).await?;
    }
}

async fn call(ctx: ZContext, service: &str, a: i64, b: i64) -> Result<()> {
    let node = ctx.create_node("hiroz_client").build()?;
    let client = node.create_client::<AddTwoInts>(service).build()?;
    // hiroz has no wait for a server: a call made before the server's queryable reached this
    // session ends at once with no reply (seen on a busy host), so such a call is made
    // again until one is answered.
    let deadline = tokio::time::Instant::now() + PATIENCE;
    let response = loop {
        match client
            .call_with_timeout(&AddTwoIntsRequest { a, b }, PATIENCE)
            .await
        {
            Ok(response) => break response,
            Err(e)
                if e.to_string().contains("ended before any response")
                    && tokio::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => return Err(e),
        }
    };
    println!("sum {}", response.sum);
    Ok(())
}

async fn action_serve(ctx: ZContext, action: &str) -> Result<()> {
    let node = ctx.create_node("hiroz_action_server").build()?;
    let _server = node
        .create_action_server::<Fibonacci>(action)
        .build()?
        .with_handler(
            |executing: hiroz::action::server::ExecutingGoal<Fibonacci>| async move {
                let order = executing.goal.order.max(1) as usize;
                let mut sequence = vec![0, 1];
                while sequence.len() <= order {
                    let next = sequence[sequence.len() - 1] + sequence[sequence.len() - 2];
                    sequence.push(next);
                    let feedback = FibonacciFeedback {
                        sequence: sequence.clone(),
                    };
                    if let Err(e) = executing.publish_feedback(feedback) {
                        eprintln!("feedback: {e}");
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                if let Err(e) = executing.succeed(FibonacciResult { sequence }) {
                    eprintln!("result: {e}");
                }
            },
        );
    println!("ready");
    std::future::pending::<()>().await;
    Ok(())
}

async fn action_send(ctx: ZContext, action: &str, order: i32) -> Result<()> {
    let node = ctx.create_node("hiroz_action_client").build()?;
    let client = node.create_action_client::<Fibonacci>(action).build()?;
    let mut goal = tokio::time::timeout(PATIENCE, client.send_goal(FibonacciGoal { order }))
        .await
        .map_err(|_| format!("goal not answered within {PATIENCE:?}"))??;
    println!("accepted");
    let feedback = goal.feedback();
    let result = tokio::time::timeout(PATIENCE, goal.result())
        .await
        .map_err(|_| format!("no result within {PATIENCE:?}"))??;
    if let Some(mut feedback) = feedback {
        while let Ok(fb) = feedback.try_recv() {
            println!("feedback {}", fb.sequence.len());
        }
    }
    let text: Vec<String> = result.sequence.iter().map(i32::to_string).collect();
    println!("result {}", text.join(","));
    Ok(())
}

async fn graph(ctx: ZContext, name: &str, topic: &str) -> Result<()> {
    let node = ctx.create_node("hiroz_observer").build()?;
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let nodes = node.graph().get_node_names();
        let topics = node.graph().get_topic_names_and_types();
        if nodes.iter().any(|(n, _)| n == name) && topics.iter().any(|(t, _)| t == topic) {
            for (n, ns) in nodes {
                println!("node {ns} {n}");
            }
            for (t, ty) in topics {
                println!("topic {t} {ty}");
            }
            println!("done");
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            return Err(format!(
                "{name} and {topic} not in hiroz's graph within {PATIENCE:?}: {nodes:?} {topics:?}"
            )
            .into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
