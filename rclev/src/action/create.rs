//! Creating actions on nodes and workers: `create_action_server`,
//! `create_action_server_with_callback` and `create_action_client`, written once for both.
//!
//! The methods belong to `NodeState` and `WorkerState`, but live here (inherent impls may sit
//! anywhere in the crate), so that the node layer does not import the action layer above it.
//! Inherent methods need an `impl` block per type, so `action_creation_methods!` writes them
//! into both, as `node/creation.rs` does for the other entities; each is one call of the
//! generic functions at the bottom, with the worker core of the node (its default worker) or
//! of the worker. Action callbacks never get a worker's payload, so the methods are the same
//! on both but for their docs.

use std::sync::Arc;

use super::{async_execute, create_action_client, create_action_server, handlers, sync_execute};
use crate::base::error::Result;
use crate::node::{NodeState, WorkerCore, WorkerState};

/// Expands to the action creation methods inside an `impl` block of a type with a
/// `core: Arc<WorkerCore>` field:
///
/// - `runs`: where the callbacks run, as the docs say it;
/// - `payload`: a sentence the server methods' docs end with (on workers: that the callbacks
///   do not get the payload);
/// - `examples`: `node` or `worker`, which of `action_example!`'s doc examples the methods get.
macro_rules! action_creation_methods {
    (runs: $runs:literal, payload: $payload:literal, examples: $on:ident $(,)?) => {
        #[doc = concat!("An action server whose callbacks run ", $runs, ": `goal` accepts or")]
        /// rejects goals, `cancel` answers cancel requests, and `execute` runs each accepted goal
        /// as an async task that ends with [`GoalEnd`](crate::GoalEnd). See [`crate::action`].
        #[doc = $payload]
        ///
        #[doc = action_example!($on, create_action_server)]
        pub fn create_action_server<A, G, C, E, Fut>(
            &self,
            name: &str,
            options: crate::ActionServerOptions,
            goal: G,
            cancel: C,
            execute: E,
        ) -> Result<crate::ActionServer<A>>
        where
            A: crate::msg::ActionType,
            G: FnMut(&crate::action::GoalUuid, &A::Goal) -> crate::GoalResponse + Send + 'static,
            C: FnMut(&crate::ServerGoalHandle<A>) -> crate::CancelResponse + Send + 'static,
            E: FnMut(crate::ServerGoalHandle<A>) -> Fut + Send + 'static,
            Fut: std::future::Future<Output = crate::GoalEnd<A::Result>> + Send + 'static,
        {
            create_server(
                &self.core,
                name,
                options,
                goal,
                cancel,
                async_execute(execute),
            )
        }

        #[doc = concat!("An action server whose callbacks run ", $runs, ", with a plain execute")]
        /// callback: it gets each accepted goal's handle and finishes it (now or later, from
        /// anywhere) with `succeed`/`abort`/`canceled`.
        #[doc = $payload]
        ///
        #[doc = action_example!($on, create_action_server_with_callback)]
        pub fn create_action_server_with_callback<A, G, C, E>(
            &self,
            name: &str,
            options: crate::ActionServerOptions,
            goal: G,
            cancel: C,
            execute: E,
        ) -> Result<crate::ActionServer<A>>
        where
            A: crate::msg::ActionType,
            G: FnMut(&crate::action::GoalUuid, &A::Goal) -> crate::GoalResponse + Send + 'static,
            C: FnMut(&crate::ServerGoalHandle<A>) -> crate::CancelResponse + Send + 'static,
            E: FnMut(crate::ServerGoalHandle<A>) + Send + 'static,
        {
            create_server(
                &self.core,
                name,
                options,
                goal,
                cancel,
                sync_execute(execute),
            )
        }

        #[doc = concat!("An action client whose responses are taken ", $runs, ".")]
        ///
        #[doc = action_example!($on, create_action_client)]
        pub fn create_action_client<A: crate::msg::ActionType>(
            &self,
            name: &str,
        ) -> Result<crate::ActionClient<A>> {
            create_action_client(&self.core, name)
        }
    };
}

/// The doc examples of `action_creation_methods!`, by type and method (each is a doctest).
macro_rules! action_example {
    (node, create_action_server) => {
        r##"```
use rclev::interfaces::example_interfaces::action::{
    Fibonacci, Fibonacci_Feedback, Fibonacci_Goal, Fibonacci_Result,
};
use rclev::{
    ActionServerOptions, CancelResponse, GoalEnd, GoalResponse, GoalState, ServerGoalHandle,
    SpinOptions,
};
use std::time::Duration;

let executor = rclev::Context::default().create_basic_executor();
let node = executor.create_node("fibonacci_server")?;
let _server = node.create_action_server::<Fibonacci, _, _, _, _>(
    "fibonacci",
    ActionServerOptions::default(),
    |_id, goal: &Fibonacci_Goal| match goal.order {
        0.. => GoalResponse::AcceptAndExecute,
        _ => GoalResponse::Reject,
    },
    |_goal: &ServerGoalHandle<Fibonacci>| CancelResponse::Accept,
    |goal: ServerGoalHandle<Fibonacci>| async move {
        let mut sequence = vec![0, 1];
        for i in 1..goal.goal().order as usize {
            if goal.is_cancel_requested() {
                return GoalEnd::Canceled(Fibonacci_Result { sequence });
            }
            sequence.push(sequence[i] + sequence[i - 1]);
            let _ = goal.publish_feedback(Fibonacci_Feedback { sequence: sequence.clone() });
            tokio::time::sleep(Duration::from_millis(1)).await; // the work
        }
        GoalEnd::Succeeded(Fibonacci_Result { sequence })
    },
)?;

let client = node.create_action_client::<Fibonacci>("fibonacci")?;
let (tx, rx) = std::sync::mpsc::channel();
let errors = executor.spin(
    SpinOptions::default()
        .until_promise_resolved(async move {
            let rejected = client.send_goal(Fibonacci_Goal { order: -1 }).await;
            assert!(matches!(rejected, Err(rclev::Error::GoalRejected)));
            let outcome = async {
                let goal = client.send_goal(Fibonacci_Goal { order: 5 }).await?;
                goal.result().await
            };
            tx.send(outcome.await).unwrap();
        })
        .timeout(Duration::from_secs(5)),
);
assert!(errors.is_empty());
let (state, result) = rx.try_recv().unwrap()?;
assert_eq!(state, GoalState::Succeeded);
assert_eq!(result.sequence, [0, 1, 1, 2, 3, 5]);
# Ok::<(), rclev::Error>(())
```"##
    };

    (worker, create_action_server) => {
        r##"```
use rclev::interfaces::example_interfaces::action::{Fibonacci, Fibonacci_Result};
use rclev::{ActionServerOptions, CancelResponse, GoalEnd, GoalResponse};

let executor = rclev::Context::default().create_basic_executor();
let node = executor.create_node("fibonacci_server")?;
let worker = node.create_worker(())?; // apart from the node's other callbacks
let server = worker.create_action_server::<Fibonacci, _, _, _, _>(
    "~/fibonacci",
    ActionServerOptions::default(),
    |_id, _goal| GoalResponse::AcceptAndExecute,
    |_goal| CancelResponse::Reject,
    |goal| async move {
        let mut sequence = vec![0, 1];
        for i in 1..goal.goal().order as usize {
            sequence.push(sequence[i] + sequence[i - 1]);
        }
        GoalEnd::Succeeded(Fibonacci_Result { sequence })
    },
)?;
assert_eq!(server.action_name(), "/fibonacci_server/fibonacci");
let client = node.create_action_client::<Fibonacci>("/fibonacci_server/fibonacci")?;
assert!(client.server_is_available());
# Ok::<(), rclev::Error>(())
```"##
    };

    (node, create_action_server_with_callback) => {
        r##"```
use rclev::interfaces::example_interfaces::action::{Fibonacci, Fibonacci_Goal, Fibonacci_Result};
use rclev::{ActionServerOptions, CancelResponse, GoalResponse, GoalState, ServerGoalHandle, SpinOptions};
use std::time::Duration;

let executor = rclev::Context::default().create_basic_executor();
let node = executor.create_node("planner")?;
let (goals, queue) = std::sync::mpsc::channel::<ServerGoalHandle<Fibonacci>>();
let server = node.create_action_server_with_callback::<Fibonacci, _, _, _>(
    "fibonacci",
    ActionServerOptions::default(),
    |_id, _goal| GoalResponse::AcceptAndExecute,
    |_goal| CancelResponse::Reject,
    move |goal| goals.send(goal).unwrap(), // hand it over; return at once
)?;
// Goals are finished elsewhere: here by a thread of the program's own.
let planner = std::thread::spawn(move || {
    for goal in queue {
        let mut sequence = vec![0, 1];
        for i in 1..goal.goal().order as usize {
            sequence.push(sequence[i] + sequence[i - 1]);
        }
        goal.succeed(Fibonacci_Result { sequence }).unwrap();
    }
});

let client = node.create_action_client::<Fibonacci>("fibonacci")?;
let (tx, rx) = std::sync::mpsc::channel();
let errors = executor.spin(
    SpinOptions::default()
        .until_promise_resolved(async move {
            let outcome = async {
                let goal = client.send_goal(Fibonacci_Goal { order: 4 }).await?;
                goal.result().await
            };
            tx.send(outcome.await).unwrap();
        })
        .timeout(Duration::from_secs(5)),
);
assert!(errors.is_empty());
let (state, result) = rx.try_recv().unwrap()?;
assert_eq!((state, result.sequence), (GoalState::Succeeded, vec![0, 1, 1, 2, 3]));
drop(server); // drops the execute callback and its sender: the planner's loop ends
planner.join().unwrap();
# Ok::<(), rclev::Error>(())
```"##
    };

    (worker, create_action_server_with_callback) => {
        r##"```
use rclev::interfaces::example_interfaces::action::{Fibonacci, Fibonacci_Result};
use rclev::{ActionServerOptions, CancelResponse, GoalResponse, ServerGoalHandle};

let executor = rclev::Context::default().create_basic_executor();
let node = executor.create_node("sequencer")?;
let worker = node.create_worker(())?;
// Past order 45 the terms overflow an i32: such goals are rejected before they start.
let short = worker.create_action_server_with_callback::<Fibonacci, _, _, _>(
    "short_sequences",
    ActionServerOptions::default(),
    |_id, goal| match goal.order {
        0..=45 => GoalResponse::AcceptAndExecute,
        _ => GoalResponse::Reject,
    },
    |_goal: &ServerGoalHandle<Fibonacci>| CancelResponse::Accept,
    |goal| {
        let mut sequence = vec![0, 1];
        while sequence.len() <= goal.goal().order as usize {
            sequence.push(sequence[sequence.len() - 1] + sequence[sequence.len() - 2]);
        }
        goal.succeed(Fibonacci_Result { sequence }).unwrap(); // or later, from elsewhere
    },
)?;
assert_eq!(short.action_name(), "/short_sequences");
# Ok::<(), rclev::Error>(())
```"##
    };

    (node, create_action_client) => {
        r##"```
use rclev::interfaces::example_interfaces::action::{
    Fibonacci, Fibonacci_Feedback, Fibonacci_Goal, Fibonacci_Result,
};
use rclev::{ActionServerOptions, CancelResponse, GoalResponse, GoalState, ServerGoalHandle, SpinOptions};
use std::time::Duration;

let executor = rclev::Context::default().create_basic_executor();
let node = executor.create_node("fibonacci_client")?;
let client = node.create_action_client::<Fibonacci>("fibonacci")?;
assert!(!client.server_is_available());
# let _server = node.create_action_server_with_callback::<Fibonacci, _, _, _>(
#     "fibonacci",
#     ActionServerOptions::default(),
#     |_id, _goal| GoalResponse::AcceptAndExecute,
#     |_goal| CancelResponse::Accept,
#     |goal: ServerGoalHandle<Fibonacci>| {
#         goal.publish_feedback(Fibonacci_Feedback { sequence: vec![0, 1, 1] }).unwrap();
#         goal.succeed(Fibonacci_Result { sequence: vec![0, 1, 1, 2] }).unwrap();
#     },
# )?;
// … a server for "fibonacci" starts, in this process or another …
let (tx, rx) = std::sync::mpsc::channel();
let errors = executor.spin(
    SpinOptions::default()
        .until_promise_resolved(async move {
            let outcome = async {
                client.wait_for_server(Some(Duration::from_secs(5))).await?;
                let goal = client.send_goal(Fibonacci_Goal { order: 3 }).await?;
                let mut feedback = goal.feedback()?; // a `Stream` too
                while let Some(partial) = feedback.recv().await {
                    println!("so far: {:?}", partial.sequence);
                }
                goal.result().await
            };
            tx.send(outcome.await).unwrap();
        })
        .timeout(Duration::from_secs(10)),
);
assert!(errors.is_empty());
let (state, result) = rx.try_recv().unwrap()?;
assert_eq!((state, result.sequence), (GoalState::Succeeded, vec![0, 1, 1, 2]));
# Ok::<(), rclev::Error>(())
```"##
    };

    (worker, create_action_client) => {
        r##"```
use rclev::interfaces::example_interfaces::action::Fibonacci;

let executor = rclev::Context::default().create_basic_executor();
let node = executor.create_node("navigator")?;
let worker = node.create_worker(())?;
let client = worker.create_action_client::<Fibonacci>("fibonacci")?;
assert_eq!(client.action_name(), "/fibonacci");
assert!(!client.server_is_available());
# Ok::<(), rclev::Error>(())
```"##
    };
}

impl NodeState {
    action_creation_methods! {
        runs: "on the node's default worker",
        payload: "",
        examples: node,
    }
}

impl<P: Send + 'static> WorkerState<P> {
    action_creation_methods! {
        runs: "on this worker",
        payload: "They do not get the worker's payload.",
        examples: worker,
    }
}

/// The one path every action server is created by.
fn create_server<A, G, C>(
    core: &Arc<WorkerCore>,
    name: &str,
    options: crate::ActionServerOptions,
    goal: G,
    cancel: C,
    execute: crate::action::ExecuteFn<A>,
) -> Result<crate::ActionServer<A>>
where
    A: crate::msg::ActionType,
    G: FnMut(&crate::action::GoalUuid, &A::Goal) -> crate::GoalResponse + Send + 'static,
    C: FnMut(&crate::ServerGoalHandle<A>) -> crate::CancelResponse + Send + 'static,
{
    let (goal, cancel) = handlers::<A>(goal, cancel);
    create_action_server(core, name, options, goal, cancel, execute)
}
