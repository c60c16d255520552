//! A robot node with the crate's own interfaces, in one process: it publishes `Telemetry`
//! on a timer and listens to it, serves `SetMode` and calls it, then docks with the `Dock`
//! action and prints the feedback. It exits when docked.
//!
//! Run with `cargo run -p rclev-interfaces-demo`.

use std::time::Duration;

use rclev::interfaces::builtin_interfaces::msg::Duration as DurationMsg;
use rclev::interfaces::geometry_msgs::msg::{Point, Pose};
use rclev::interfaces::std_msgs::msg::Header;
use rclev::{
    ActionServerOptions, CancelResponse, Context, GoalEnd, GoalResponse, ServerGoalHandle,
    SpinOptions,
};
use rclev_interfaces_demo::robot_msgs::action::{
    Dock, Dock_Feedback as DockFeedback, Dock_Goal as DockGoal, Dock_Result as DockResult,
};
use rclev_interfaces_demo::robot_msgs::msg::{Cell, Telemetry};
use rclev_interfaces_demo::robot_msgs::srv::{
    SetMode, SetMode_Request as SetModeRequest, SetMode_Response as SetModeResponse,
};

fn main() -> Result<(), rclev::Error> {
    // The process's --ros-args apply to its nodes (remaps, parameters, log levels).
    let executor = Context::from_env()?.create_basic_executor();
    let node = executor.create_node("robot")?;
    let clock = node.get_clock();

    // Telemetry, five times a second; the header and pose are rclev's std types.
    let publisher = node.create_publisher::<Telemetry>("telemetry")?;
    let stamp_clock = clock.clone();
    let _timer = node.create_timer_repeating(Duration::from_millis(200), move || {
        let telemetry = Telemetry {
            header: Header {
                stamp: stamp_clock.now().to_msg(),
                frame_id: Telemetry::FRAME.into(),
            },
            r#type: Telemetry::SOURCE_SIM,
            cells: vec![
                Cell {
                    voltage: 3.7,
                    ..Default::default()
                };
                4
            ],
            ..Default::default() // name "rover", wheel_radii, … from the .msg defaults
        };
        publisher
            .publish(telemetry)
            .expect("in-process publishing does not fail");
    })?;
    let _listener = node.create_subscription::<Telemetry, _>("telemetry", |t| {
        let volts: f32 = t.cells.iter().map(|c| c.voltage).sum();
        println!(
            "telemetry from '{}' in '{}': {} cells, {volts:.1} V",
            t.name,
            t.header.frame_id,
            t.cells.len()
        );
    })?;

    // SetMode: remembers the mode, refuses unknown ones.
    let mut mode = SetModeRequest::MODE_IDLE;
    let _service = node.create_service::<SetMode, _>("set_mode", move |req| {
        if req.mode > SetModeRequest::MODE_AUTONOMOUS {
            return SetModeResponse {
                error: SetModeResponse::ERROR_REFUSED,
                previous_mode: mode,
                message: format!("unknown mode {}", req.mode),
                ..Default::default()
            };
        }
        let previous_mode = std::mem::replace(&mut mode, req.mode);
        SetModeResponse {
            success: true,
            previous_mode,
            message: format!("mode {previous_mode} -> {} ({})", req.mode, req.reason),
            ..Default::default()
        }
    })?;
    let mode_client = node.create_client::<SetMode>("set_mode")?;

    // Dock: three phases, a feedback message after each.
    let _dock_server = node.create_action_server::<Dock, _, _, _, _>(
        "dock",
        ActionServerOptions::default(),
        |_id, goal: &DockGoal| {
            if goal.max_speed > 0.0 {
                GoalResponse::AcceptAndExecute
            } else {
                GoalResponse::Reject
            }
        },
        |_goal: &ServerGoalHandle<Dock>| CancelResponse::Accept,
        move |goal: ServerGoalHandle<Dock>| {
            let clock = clock.clone();
            async move {
                let start = clock.now();
                let mut distance = goal.goal().dock_pose.position.x as f32;
                for phase in [
                    DockFeedback::PHASE_APPROACH,
                    DockFeedback::PHASE_ALIGN,
                    DockFeedback::PHASE_CONTACT,
                ] {
                    clock.sleep_for(Duration::from_millis(300)).await;
                    distance /= 4.0;
                    let _ = goal.publish_feedback(DockFeedback {
                        phase,
                        distance_remaining: distance,
                    });
                }
                let elapsed = clock.now().duration_since(start).unwrap_or_default();
                GoalEnd::Succeeded(DockResult {
                    docked: true,
                    charge_percent: 37.5,
                    elapsed: DurationMsg {
                        sec: elapsed.as_secs() as i32,
                        nanosec: elapsed.subsec_nanos(),
                    },
                })
            }
        },
    )?;
    let dock_client = node.create_action_client::<Dock>("dock")?;

    let mission = async move {
        let request = SetModeRequest {
            mode: SetModeRequest::MODE_AUTONOMOUS,
            ..Default::default()
        };
        let response = mode_client.call(request).await?;
        println!(
            "set_mode: success {}, {}",
            response.success, response.message
        );

        let dock_pose = Pose {
            position: Point {
                x: 2.0,
                ..Default::default()
            },
            ..Default::default()
        };
        let goal = dock_client
            .send_goal(DockGoal {
                dock_pose,
                ..Default::default()
            })
            .await?;
        println!("dock goal {} accepted", goal.goal_id());
        let mut feedback = goal.feedback()?;
        while let Some(f) = feedback.recv().await {
            println!(
                "dock feedback: phase {}, {:.3} m to go",
                f.phase, f.distance_remaining
            );
        }
        let (state, result) = goal.result().await?;
        let took = Duration::new(result.elapsed.sec as u64, result.elapsed.nanosec);
        println!(
            "dock result ({state:?}): docked {}, charge {}%, took {took:?}",
            result.docked, result.charge_percent
        );
        Ok::<_, rclev::Error>(())
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let errors = executor.spin(
        SpinOptions::default()
            .until_promise_resolved(async move {
                let _ = tx.send(mission.await);
            })
            .timeout(Duration::from_secs(10)),
    );
    for e in errors {
        eprintln!("error while spinning: {e}");
    }
    rx.try_recv().unwrap_or(Err(rclev::Error::Shutdown))
}
