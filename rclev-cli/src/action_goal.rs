//! `rclev action send_goal <action> <type> [values] [--feedback]`: one goal through the
//! action's `_action/send_goal`, its feedback (optionally) and its result through
//! `_action/get_result`, printed as `ros2 action send_goal` prints them, for every action type
//! rclev knows or finds installed.

use std::io::Read;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::wire::CliTransport;
use rclev::msg::{DynamicMessage, Value};
use rclev::transport::Payload;
use rclev::QoSProfile;

use crate::errors::Result;
use crate::service_call::{DynamicClient, WAIT};
use crate::topic::{absolute, cli_node, from_yaml, known_type, subscribe, to_yaml};

/// `action_msgs/msg/GoalStatus` codes, as `ros2` names them.
fn status_name(status: i64) -> &'static str {
    match status {
        1 => "ACCEPTED",
        2 => "EXECUTING",
        3 => "CANCELING",
        4 => "SUCCEEDED",
        5 => "CANCELED",
        6 => "ABORTED",
        _ => "UNKNOWN",
    }
}

/// A fresh goal id: 16 random bytes.
fn goal_id() -> Result<[u8; 16]> {
    let mut id = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut id)?;
    Ok(id)
}

fn uuid_value(id: &[u8; 16]) -> Value {
    Value::Message(DynamicMessage {
        type_name: "unique_identifier_msgs/msg/UUID".into(),
        fields: vec![(
            "uuid".into(),
            Value::Array(id.iter().map(|b| Value::UInt(u64::from(*b))).collect()),
        )],
    })
}

fn set(msg: &mut DynamicMessage, field: &str, value: Value) -> Result {
    let type_name = msg.type_name.clone();
    *msg.get_mut(field)
        .ok_or_else(|| format!("{type_name} has no field '{field}'"))? = value;
    Ok(())
}

/// `message` indented by `n` spaces (`ros2` indents the goal, feedback and result).
fn indented(message: &DynamicMessage, n: usize) -> String {
    to_yaml(message)
        .lines()
        .map(|l| format!("{}{l}\n", " ".repeat(n)))
        .collect()
}

fn field_message(msg: &DynamicMessage, field: &str) -> Result<DynamicMessage> {
    match msg.get(field) {
        Some(Value::Message(m)) => Ok(m.clone()),
        _ => Err(format!("{} has no message field '{field}'", msg.type_name).into()),
    }
}

/// `rclev action send_goal`.
pub fn send_goal(action: &str, type_name: &str, values: &str, feedback: bool) -> Result {
    let action = absolute(action)?;
    // `pkg/action/Name` or `pkg/Name`, checked before anything goes on the network.
    let type_name = &crate::type_names::resolve(
        type_name,
        crate::type_names::Kind::Action,
        crate::type_names::Sources::BundledAndInstalled,
    )?;
    let goal_type = known_type(&format!("{type_name}_Goal"))?;
    let goal = from_yaml(&goal_type, values)?;
    let transport = CliTransport::from_env()?;
    let node = cli_node(&transport, "send_goal")?;
    let send = DynamicClient::new(
        &node,
        &format!("{action}/_action/send_goal"),
        &format!("{type_name}_SendGoal"),
    )?;
    let get_result = DynamicClient::new(
        &node,
        &format!("{action}/_action/get_result"),
        &format!("{type_name}_GetResult"),
    )?;
    let feedback_type = known_type(&format!("{type_name}_FeedbackMessage"))?;
    let (feedback_sub, feedback_wake) = subscribe(
        &node,
        &format!("{action}/_action/feedback"),
        feedback_type,
        QoSProfile::default(),
        false,
    )?;
    println!("Waiting for an action server to become available...");
    if !send.wait_ready() || !get_result.wait_ready() {
        if crate::interrupt::interrupted() {
            return Ok(());
        }
        return Err(format!("action server {action} not available within {WAIT:?}").into());
    }
    println!("Sending goal:\n{}", indented(&goal, 5));
    let id = goal_id()?;
    let mut request = DynamicMessage::default_of(&send.request.description)?;
    set(&mut request, "goal_id", uuid_value(&id))?;
    set(&mut request, "goal", Value::Message(goal))?;
    let Some(response) = send.call(&request)? else {
        // Ctrl-C before the server answered: the goal may have been accepted meanwhile, and
        // then goes on on the server, as after an interrupt below.
        println!("Interrupted before the goal was answered.");
        return Ok(());
    };
    if response.get("accepted") != Some(&Value::Bool(true)) {
        println!("Goal was rejected.");
        return Ok(());
    }
    let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
    println!("Goal accepted with ID: {hex}\n");

    let mut result_request = DynamicMessage::default_of(&get_result.request.description)?;
    set(&mut result_request, "goal_id", uuid_value(&id))?;
    let sequence = get_result.send(&result_request)?;
    let mut batch = Vec::new();
    // Goals may run long: no limit but Ctrl-C.
    let started = Instant::now();
    loop {
        if let Some(answer) = get_result.answer(sequence, Duration::from_millis(50))? {
            // Feedback that arrived before the result is still shown.
            print_feedback(&feedback_sub, &feedback_type, &id, feedback, &mut batch);
            let status = match answer.get("status") {
                Some(Value::Int(s)) => *s,
                _ => 0,
            };
            println!(
                "Result:\n{}",
                indented(&field_message(&answer, "result")?, 4)
            );
            println!("Goal finished with status: {}", status_name(status));
            return Ok(());
        }
        let _ = feedback_wake.try_recv();
        print_feedback(&feedback_sub, &feedback_type, &id, feedback, &mut batch);
        if crate::interrupt::interrupted() {
            println!(
                "Interrupted after {:?}: the goal goes on on the server.",
                started.elapsed()
            );
            return Ok(());
        }
    }
}

/// Prints the feedback of goal `id` taken so far (when asked for).
fn print_feedback(
    sub: &Arc<dyn rclev::transport::SubscriptionPort>,
    feedback_type: &rclev::msg::TypeInfo,
    id: &[u8; 16],
    show: bool,
    batch: &mut Vec<Payload>,
) {
    loop {
        let more = sub.take_payloads(16, batch);
        for payload in batch.drain(..) {
            let Payload::Serialized(bytes) = payload else {
                continue;
            };
            let msg = match DynamicMessage::decode(&feedback_type.description, &bytes) {
                Ok(msg) => msg,
                Err(e) => {
                    eprintln!("rclev: a feedback message did not decode: {e}");
                    continue;
                }
            };
            if !show || msg.get("goal_id") != Some(&uuid_value(id)) {
                continue;
            }
            if let Ok(fb) = field_message(&msg, "feedback") {
                println!("Feedback:\n{}", indented(&fb, 4));
            }
        }
        if !more {
            break;
        }
    }
}
