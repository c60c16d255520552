//! The `create_*` methods of [`NodeState`](super::NodeState) and
//! [`WorkerState`](super::WorkerState), written once.
//!
//! A node's entities run on its default worker, a worker's on itself; the methods are the same
//! but for the shape of the callbacks: a worker's callbacks get `&mut P`, its payload, before
//! their own arguments. Rust infers a closure's argument types only from a plain `Fn*` bound,
//! so the two shapes cannot hide behind one trait without making users annotate every closure.
//! Instead each type expands this macro with its shape, given as tokens:
//!
//! - `bound`: what comes before the callback's own arguments in its `FnMut(..)` bound
//!   (nothing, or `&mut P,`);
//! - `param` / `arg`: the same as a closure parameter and as a call argument (nothing, or
//!   `p: &mut P,` and `p,`);
//! - `wrap`: the constructor of the stored callback (`plain` or `with_payload`);
//! - `timer`: the generic parameters, the callback's type and its conversion for timers (a
//!   node's accept `FnMut()` as well as `FnMut(TimerInfo)`);
//! - `runs`: how the docs say where callbacks run;
//! - `examples`: `node` or `worker`, which of `creation_example!`'s doc examples the methods
//!   get (each is a doctest, run once per expansion).
//!
//! Async callbacks never get the payload (their futures outlive the borrow): those methods,
//! and the ones without callbacks, are the same on both.

/// Expands to the `create_*` methods inside an `impl` block of a type with a
/// `core: Arc<WorkerCore>` field. See the module docs for the arguments.
macro_rules! entity_creation_methods {
    (
        bound: [$($bound:tt)*],
        param: [$($param:tt)*],
        arg: [$($arg:tt)*],
        wrap: $wrap:ident,
        timer: [$($timer_generics:tt)*] $timer_callback:ty => |$timer_given:ident| $timer_convert:expr,
        runs: $runs:literal,
        examples: $on:ident $(,)?
    ) => {
        /// A publisher.
        ///
        #[doc = $crate::node::creation::creation_example!($on, create_publisher)]
        pub fn create_publisher<T: $crate::msg::Message>(
            &self,
            options: impl $crate::endpoint::IntoPrimitiveOptions,
        ) -> $crate::base::error::Result<$crate::node::Publisher<T>> {
            $crate::node::PublisherState::create(&self.core, options)
        }

        #[doc = concat!("A subscription whose callback runs ", $runs, ".")]
        ///
        #[doc = $crate::node::creation::creation_example!($on, create_subscription)]
        pub fn create_subscription<T: $crate::msg::Message, F>(
            &self,
            options: impl $crate::endpoint::IntoPrimitiveOptions,
            callback: F,
        ) -> $crate::base::error::Result<$crate::node::Subscription<T>>
        where
            F: FnMut($($bound)* std::sync::Arc<T>) + Send + 'static,
        {
            $crate::node::pubsub::create_subscription(
                &self.core,
                options,
                $crate::node::pubsub::SubscriptionCallback::Message(
                    $crate::node::Callback::$wrap(callback),
                ),
            )
        }

        #[doc = concat!("A subscription whose callback runs ", $runs, ", and also gets each")]
        /// message's [`MessageInfo`]: source and reception timestamps, publisher GID, sequence
        /// numbers.
        ///
        /// [`MessageInfo`]: crate::transport::MessageInfo
        ///
        #[doc = $crate::node::creation::creation_example!($on, create_subscription_with_info)]
        pub fn create_subscription_with_info<T: $crate::msg::Message, F>(
            &self,
            options: impl $crate::endpoint::IntoPrimitiveOptions,
            mut callback: F,
        ) -> $crate::base::error::Result<$crate::node::Subscription<T>>
        where
            F: FnMut($($bound)* std::sync::Arc<T>, $crate::transport::MessageInfo)
                + Send
                + 'static,
        {
            $crate::node::pubsub::create_subscription(
                &self.core,
                options,
                $crate::node::pubsub::SubscriptionCallback::WithInfo(
                    $crate::node::Callback::$wrap(
                        move |$($param)* (m, info): (std::sync::Arc<T>, $crate::transport::MessageInfo)| {
                            callback($($arg)* m, info)
                        },
                    ),
                ),
            )
        }

        /// A subscription with an async callback; each message's future runs on the worker's
        /// task, alongside those of earlier messages that are still running.
        ///
        #[doc = $crate::node::creation::creation_example!($on, create_async_subscription)]
        pub fn create_async_subscription<T: $crate::msg::Message, F, Fut>(
            &self,
            options: impl $crate::endpoint::IntoPrimitiveOptions,
            callback: F,
        ) -> $crate::base::error::Result<$crate::node::Subscription<T>>
        where
            F: FnMut(std::sync::Arc<T>) -> Fut + Send + 'static,
            Fut: std::future::Future<Output = ()> + Send + 'static,
        {
            $crate::node::pubsub::create_subscription(
                &self.core,
                options,
                $crate::node::pubsub::SubscriptionCallback::Message(
                    $crate::node::Callback::asynchronous(callback),
                ),
            )
        }

        /// A subscription to `.await` or use as a `Stream`, without a callback.
        ///
        #[doc = $crate::node::creation::creation_example!($on, create_subscription_stream)]
        pub fn create_subscription_stream<T: $crate::msg::Message>(
            &self,
            options: impl $crate::endpoint::IntoPrimitiveOptions,
        ) -> $crate::base::error::Result<$crate::node::SubscriptionStream<T>> {
            $crate::node::SubscriptionStream::create(&self.core, options)
        }

        #[doc = concat!("A service whose callback runs ", $runs, ".")]
        ///
        #[doc = $crate::node::creation::creation_example!($on, create_service)]
        pub fn create_service<S: $crate::msg::ServiceType, F>(
            &self,
            options: impl $crate::endpoint::IntoPrimitiveOptions,
            callback: F,
        ) -> $crate::base::error::Result<$crate::node::Service<S>>
        where
            F: FnMut($($bound)* S::Request) -> S::Response + Send + 'static,
        {
            $crate::node::service::create_service(
                &self.core,
                options,
                $crate::node::service::ServiceCallback::$wrap(callback),
            )
        }

        /// A service with an async callback; each request's future runs on the worker's task,
        /// alongside those of earlier requests that are still running (at most its KeepLast
        /// depth at once; 1000 under KeepAll).
        ///
        #[doc = $crate::node::creation::creation_example!($on, create_async_service)]
        pub fn create_async_service<S: $crate::msg::ServiceType, F, Fut>(
            &self,
            options: impl $crate::endpoint::IntoPrimitiveOptions,
            callback: F,
        ) -> $crate::base::error::Result<$crate::node::Service<S>>
        where
            F: FnMut(S::Request) -> Fut + Send + 'static,
            Fut: std::future::Future<Output = S::Response> + Send + 'static,
        {
            $crate::node::service::create_service(
                &self.core,
                options,
                $crate::node::service::ServiceCallback::asynchronous(callback),
            )
        }

        /// A client.
        ///
        #[doc = $crate::node::creation::creation_example!($on, create_client)]
        pub fn create_client<S: $crate::msg::ServiceType>(
            &self,
            options: impl $crate::endpoint::IntoPrimitiveOptions,
        ) -> $crate::base::error::Result<$crate::node::Client<S>> {
            $crate::node::service::create_client(&self.core, options)
        }

        #[doc = concat!("A guard condition whose callback runs ", $runs, ".")]
        ///
        #[doc = $crate::node::creation::creation_example!($on, create_guard_condition)]
        pub fn create_guard_condition<F>(
            &self,
            mut callback: F,
        ) -> $crate::base::error::Result<$crate::node::GuardCondition>
        where
            F: FnMut($($bound)*) + Send + 'static,
        {
            $crate::node::guard::create_guard_condition(
                &self.core,
                $crate::node::Callback::$wrap(move |$($param)* ()| callback($($arg)*)),
            )
        }

        #[doc = concat!("A repeating timer whose callback runs ", $runs, ".")]
        ///
        #[doc = $crate::node::creation::creation_example!($on, create_timer_repeating)]
        pub fn create_timer_repeating<$($timer_generics)*>(
            &self,
            options: impl $crate::timer::IntoTimerOptions,
            callback: $timer_callback,
        ) -> $crate::base::error::Result<$crate::timer::Timer> {
            let $timer_given = callback;
            $crate::timer::create_timer(
                &self.core,
                options,
                $crate::timer::TimerKind::Repeating($timer_convert),
            )
        }

        #[doc = concat!("A timer whose callback runs ", $runs, " once, one period from now")]
        /// (again after each `reset()`).
        ///
        #[doc = $crate::node::creation::creation_example!($on, create_timer_oneshot)]
        pub fn create_timer_oneshot<$($timer_generics)*>(
            &self,
            options: impl $crate::timer::IntoTimerOptions,
            callback: $timer_callback,
        ) -> $crate::base::error::Result<$crate::timer::Timer> {
            let $timer_given = callback;
            $crate::timer::create_timer(
                &self.core,
                options,
                $crate::timer::TimerKind::OneShot($timer_convert),
            )
        }

        /// A timer that keeps its schedule but calls nothing until given a callback with
        /// `set_repeating`/`set_oneshot`.
        ///
        #[doc = $crate::node::creation::creation_example!($on, create_timer_inert)]
        pub fn create_timer_inert(
            &self,
            options: impl $crate::timer::IntoTimerOptions,
        ) -> $crate::base::error::Result<$crate::timer::Timer> {
            $crate::timer::create_timer(&self.core, options, $crate::timer::TimerKind::Inert)
        }

        /// A repeating timer with an async callback; each tick's future runs on the worker's
        /// task, alongside those of earlier ticks that are still running.
        ///
        #[doc = $crate::node::creation::creation_example!($on, create_async_timer_repeating)]
        pub fn create_async_timer_repeating<F, Fut>(
            &self,
            options: impl $crate::timer::IntoTimerOptions,
            callback: F,
        ) -> $crate::base::error::Result<$crate::timer::Timer>
        where
            F: FnMut($crate::timer::TimerInfo) -> Fut + Send + 'static,
            Fut: std::future::Future<Output = ()> + Send + 'static,
        {
            $crate::timer::create_timer(
                &self.core,
                options,
                $crate::timer::TimerKind::Repeating($crate::timer::TimerCallback::asynchronous(
                    callback,
                )),
            )
        }
    };
}

pub(crate) use entity_creation_methods;

/// The doc examples of the `create_*` methods: `creation_example!(node, create_publisher)`
/// (or `worker`) expands to a string literal holding a doctest. The examples whose callbacks
/// get a worker's payload are written twice; the others once, with `$on` as the receiver.
macro_rules! creation_example {
    // What every example starts with: an in-process executor and a node (and a worker).
    (@setup node) => {
        r#"let executor = rclev::Context::default().create_basic_executor();
let node = executor.create_node("demo")?;
"#
    };
    (@setup worker) => {
        r#"let executor = rclev::Context::default().create_basic_executor();
let node = executor.create_node("demo")?;
let worker = node.create_worker(())?;
"#
    };

    ($on:ident, create_publisher) => {
        concat!(
            r#"```
use rclev::interfaces::std_msgs::msg::String as StringMsg;
use rclev::{IntoPrimitiveOptions, QoSProfile};

"#,
            $crate::node::creation::creation_example!(@setup $on),
            "let chatter = ", stringify!($on), r#".create_publisher::<StringMsg>("chatter")?;
chatter.publish(StringMsg { data: "hello".into() })?;
assert_eq!(chatter.topic_name(), "/chatter");
// Another QoS: chained onto the name. Late subscribers get the last status.
let status = "#, stringify!($on), r#".create_publisher::<StringMsg>(
    "~/status".qos(QoSProfile::default().keep_last(1).transient_local()),
)?;
assert_eq!(status.topic_name(), "/demo/status");
# Ok::<(), rclev::Error>(())
```"#
        )
    };

    (node, create_subscription) => {
        r#"```
use rclev::interfaces::std_msgs::msg::String as StringMsg;
use rclev::SpinOptions;
use std::time::Duration;

let executor = rclev::Context::default().create_basic_executor();
let node = executor.create_node("listener")?;
let (tx, rx) = std::sync::mpsc::channel();
let _chatter = node.create_subscription::<StringMsg, _>("chatter", move |msg| {
    tx.send(msg.data.clone()).unwrap();
})?;
let publisher = node.create_publisher::<StringMsg>("chatter")?;
publisher.publish(StringMsg { data: "hello".into() })?;
// Callbacks run while the executor spins.
let errors = executor.spin(SpinOptions::spin_once().timeout(Duration::from_secs(5)));
assert!(errors.is_empty());
assert_eq!(rx.try_recv().unwrap(), "hello");
# Ok::<(), rclev::Error>(())
```"#
    };
    (worker, create_subscription) => {
        r#"```
use rclev::interfaces::std_msgs::msg::Int64;
use rclev::SpinOptions;
use std::time::Duration;

let executor = rclev::Context::default().create_basic_executor();
let node = executor.create_node("adder")?;
let worker = node.create_worker(0_i64)?; // the payload: a running sum
let _numbers = worker.create_subscription::<Int64, _>("numbers", |sum: &mut i64, msg| {
    *sum += msg.data;
})?;
let publisher = node.create_publisher::<Int64>("numbers")?;
for data in [1, 2, 3] {
    publisher.publish(Int64 { data })?;
}
// Read the payload on the worker, after the callbacks queued before.
let sum = worker.run(|sum: &mut i64| *sum);
let (tx, rx) = std::sync::mpsc::channel();
let errors = executor.spin(
    SpinOptions::default()
        .until_promise_resolved(async move { tx.send(sum.await).unwrap() })
        .timeout(Duration::from_secs(5)),
);
assert!(errors.is_empty());
assert_eq!(rx.try_recv().unwrap()?, 6);
# Ok::<(), rclev::Error>(())
```"#
    };

    (node, create_subscription_with_info) => {
        r#"```
use rclev::interfaces::std_msgs::msg::String as StringMsg;
use rclev::SpinOptions;
use std::time::Duration;

let executor = rclev::Context::default().create_basic_executor();
let node = executor.create_node("listener")?;
let (tx, rx) = std::sync::mpsc::channel();
let _chatter = node.create_subscription_with_info::<StringMsg, _>("chatter", move |msg, info| {
    tx.send((msg.data.clone(), info.publisher_gid, info.publication_sequence_number)).unwrap();
})?;
let publisher = node.create_publisher::<StringMsg>("chatter")?;
publisher.publish(StringMsg { data: "hello".into() })?;
let errors = executor.spin(SpinOptions::spin_once().timeout(Duration::from_secs(5)));
assert!(errors.is_empty());
let (data, from, sequence_number) = rx.try_recv().unwrap();
assert_eq!((data.as_str(), from, sequence_number), ("hello", publisher.gid(), 1));
# Ok::<(), rclev::Error>(())
```"#
    };
    (worker, create_subscription_with_info) => {
        r#"```
use rclev::interfaces::std_msgs::msg::String as StringMsg;
use rclev::transport::Gid;
use rclev::SpinOptions;
use std::collections::HashMap;
use std::time::Duration;

let executor = rclev::Context::default().create_basic_executor();
let node = executor.create_node("listener")?;
// The payload: how many messages each publisher sent.
let worker = node.create_worker(HashMap::<Gid, u32>::new())?;
let _chatter = worker.create_subscription_with_info::<StringMsg, _>(
    "chatter",
    |counts: &mut HashMap<Gid, u32>, _msg, info| *counts.entry(info.publisher_gid).or_default() += 1,
)?;
let (a, b) = (node.create_publisher::<StringMsg>("chatter")?, node.create_publisher::<StringMsg>("chatter")?);
a.publish(StringMsg { data: "one".into() })?;
a.publish(StringMsg { data: "two".into() })?;
b.publish(StringMsg { data: "three".into() })?;
let counts = worker.run(move |counts: &mut HashMap<Gid, u32>| (counts[&a.gid()], counts[&b.gid()]));
let (tx, rx) = std::sync::mpsc::channel();
let errors = executor.spin(
    SpinOptions::default()
        .until_promise_resolved(async move { tx.send(counts.await).unwrap() })
        .timeout(Duration::from_secs(5)),
);
assert!(errors.is_empty());
assert_eq!(rx.try_recv().unwrap()?, (2, 1));
# Ok::<(), rclev::Error>(())
```"#
    };

    ($on:ident, create_async_subscription) => {
        concat!(
            r#"```
use rclev::interfaces::std_msgs::msg::String as StringMsg;
use rclev::SpinOptions;
use std::time::Duration;

"#,
            $crate::node::creation::creation_example!(@setup $on),
            r#"let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
let _chatter = "#, stringify!($on), r#".create_async_subscription::<StringMsg, _, _>("chatter", move |msg| {
    let tx = tx.clone();
    async move {
        // Awaiting here does not hold up the worker's other callbacks.
        tokio::time::sleep(Duration::from_millis(1)).await;
        tx.send(msg.data.clone()).unwrap();
    }
})?;
let publisher = node.create_publisher::<StringMsg>("chatter")?;
publisher.publish(StringMsg { data: "hello".into() })?;
let (done, heard) = std::sync::mpsc::channel();
let errors = executor.spin(
    SpinOptions::default()
        .until_promise_resolved(async move { done.send(rx.recv().await).unwrap() })
        .timeout(Duration::from_secs(5)),
);
assert!(errors.is_empty());
assert_eq!(heard.try_recv().unwrap().as_deref(), Some("hello"));
# Ok::<(), rclev::Error>(())
```"#
        )
    };

    ($on:ident, create_subscription_stream) => {
        concat!(
            r#"```
use rclev::interfaces::std_msgs::msg::String as StringMsg;

# #[tokio::main(flavor = "current_thread")]
# async fn main() -> rclev::Result<()> {
"#,
            $crate::node::creation::creation_example!(@setup $on),
            "let mut chatter = ", stringify!($on), r#".create_subscription_stream::<StringMsg>("chatter")?;
let publisher = node.create_publisher::<StringMsg>("chatter")?;
publisher.publish(StringMsg { data: "hello".into() })?;
// Read where it is awaited: no spin needed.
assert_eq!(chatter.recv().await.unwrap().data, "hello");
assert!(chatter.try_recv().is_none());
# Ok(())
# }
```"#
        )
    };

    (node, create_service) => {
        r#"```
use rclev::interfaces::example_interfaces::srv::{AddTwoInts, AddTwoInts_Request, AddTwoInts_Response};
use rclev::SpinOptions;
use std::time::Duration;

let executor = rclev::Context::default().create_basic_executor();
let node = executor.create_node("adder")?;
let _service = node.create_service::<AddTwoInts, _>("add_two_ints", |request| {
    AddTwoInts_Response { sum: request.a + request.b }
})?;
let client = node.create_client::<AddTwoInts>("add_two_ints")?;
let call = client.call(AddTwoInts_Request { a: 2, b: 3 });
let (tx, rx) = std::sync::mpsc::channel();
let errors = executor.spin(
    SpinOptions::default()
        .until_promise_resolved(async move { tx.send(call.await).unwrap() })
        .timeout(Duration::from_secs(5)),
);
assert!(errors.is_empty());
assert_eq!(rx.try_recv().unwrap()?.sum, 5);
# Ok::<(), rclev::Error>(())
```"#
    };
    (worker, create_service) => {
        r#"```
use rclev::interfaces::std_srvs::srv::{Trigger, Trigger_Request, Trigger_Response};
use rclev::SpinOptions;
use std::time::Duration;

let executor = rclev::Context::default().create_basic_executor();
let node = executor.create_node("counter")?;
let worker = node.create_worker(0_u32)?; // the payload: calls served so far
let _service = worker.create_service::<Trigger, _>("~/count", |calls: &mut u32, _request| {
    *calls += 1;
    Trigger_Response { success: true, message: format!("call {calls}") }
})?;
let client = node.create_client::<Trigger>("~/count")?;
let (tx, rx) = std::sync::mpsc::channel();
let errors = executor.spin(
    SpinOptions::default()
        .until_promise_resolved(async move {
            let first = client.call(Trigger_Request::default()).await;
            let second = client.call(Trigger_Request::default()).await;
            tx.send((first, second)).unwrap();
        })
        .timeout(Duration::from_secs(5)),
);
assert!(errors.is_empty());
let (first, second) = rx.try_recv().unwrap();
assert_eq!((first?.message, second?.message), ("call 1".into(), "call 2".into()));
# Ok::<(), rclev::Error>(())
```"#
    };

    ($on:ident, create_async_service) => {
        concat!(
            r#"```
use rclev::interfaces::example_interfaces::srv::{AddTwoInts, AddTwoInts_Request, AddTwoInts_Response};
use rclev::SpinOptions;
use std::time::Duration;

"#,
            $crate::node::creation::creation_example!(@setup $on),
            "let _service = ", stringify!($on), r#".create_async_service::<AddTwoInts, _, _>("add_two_ints", |request| async move {
    // Awaiting here does not hold up the worker's other callbacks.
    tokio::time::sleep(Duration::from_millis(1)).await;
    AddTwoInts_Response { sum: request.a + request.b }
})?;
let client = node.create_client::<AddTwoInts>("add_two_ints")?;
let call = client.call(AddTwoInts_Request { a: 40, b: 2 });
let (tx, rx) = std::sync::mpsc::channel();
let errors = executor.spin(
    SpinOptions::default()
        .until_promise_resolved(async move { tx.send(call.await).unwrap() })
        .timeout(Duration::from_secs(5)),
);
assert!(errors.is_empty());
assert_eq!(rx.try_recv().unwrap()?.sum, 42);
# Ok::<(), rclev::Error>(())
```"#
        )
    };

    ($on:ident, create_client) => {
        concat!(
            r#"```
use rclev::interfaces::example_interfaces::srv::{AddTwoInts, AddTwoInts_Request, AddTwoInts_Response};
use rclev::SpinOptions;
use std::time::Duration;

"#,
            $crate::node::creation::creation_example!(@setup $on),
            "let client = ", stringify!($on), r#".create_client::<AddTwoInts>("add_two_ints")?;
assert!(!client.service_is_ready());
let _service = node.create_service::<AddTwoInts, _>("add_two_ints", |request| {
    AddTwoInts_Response { sum: request.a + request.b }
})?;
let (tx, rx) = std::sync::mpsc::channel();
let errors = executor.spin(
    SpinOptions::default()
        .until_promise_resolved(async move {
            // Across processes: wait for the server, and bound each call.
            let response = async {
                client.wait_for_service(Some(Duration::from_secs(5))).await?;
                let request = AddTwoInts_Request { a: 2, b: 3 };
                client.call_with_timeout(request, Duration::from_secs(5)).await
            };
            tx.send(response.await).unwrap();
        })
        .timeout(Duration::from_secs(10)),
);
assert!(errors.is_empty());
assert_eq!(rx.try_recv().unwrap()?.sum, 5);
# Ok::<(), rclev::Error>(())
```"#
        )
    };

    (node, create_guard_condition) => {
        r#"```
use rclev::SpinOptions;
use std::time::Duration;

let executor = rclev::Context::default().create_basic_executor();
let node = executor.create_node("demo")?;
let (tx, rx) = std::sync::mpsc::channel();
let guard = node.create_guard_condition(move || tx.send("woken").unwrap())?;
// Trigger it from any thread, e.g. one that reads a device.
let trigger = guard.clone();
std::thread::spawn(move || trigger.trigger()).join().unwrap();
let errors = executor.spin(SpinOptions::spin_once().timeout(Duration::from_secs(5)));
assert!(errors.is_empty());
assert_eq!(rx.try_recv(), Ok("woken"));
# Ok::<(), rclev::Error>(())
```"#
    };
    (worker, create_guard_condition) => {
        r#"```
use rclev::SpinOptions;
use std::time::Duration;

let executor = rclev::Context::default().create_basic_executor();
let node = executor.create_node("demo")?;
let worker = node.create_worker(0_u32)?; // the payload: how often the callback ran
let guard = worker.create_guard_condition(|runs: &mut u32| *runs += 1)?;
guard.trigger();
guard.trigger(); // before the callback ran: merged into one run
let runs = worker.run(|runs: &mut u32| *runs);
let (tx, rx) = std::sync::mpsc::channel();
let errors = executor.spin(
    SpinOptions::default()
        .until_promise_resolved(async move { tx.send(runs.await).unwrap() })
        .timeout(Duration::from_secs(5)),
);
assert!(errors.is_empty());
assert_eq!(rx.try_recv().unwrap()?, 1);
# Ok::<(), rclev::Error>(())
```"#
    };

    (node, create_timer_repeating) => {
        r#"```
use rclev::{IntoTimerOptions, SpinOptions};
use std::time::Duration;

let executor = rclev::Context::default().create_basic_executor();
let node = executor.create_node("ticker")?;
let commands = executor.commands();
let (tx, rx) = std::sync::mpsc::channel();
let mut ticks = 0;
// Keep the handle: dropping it (also through `let _ = …`) stops the timer.
let _timer = node.create_timer_repeating(Duration::from_millis(1), move || {
    ticks += 1;
    tx.send(ticks).unwrap();
    if ticks == 3 {
        commands.halt_spinning();
    }
})?;
// A callback may take the call's `TimerInfo`; a timer may follow the node's ROS time.
let _on_ros_time = node.create_timer_repeating(Duration::from_secs(1).node_time(), |info: rclev::TimerInfo| {
    println!("{} ticks missed", info.missed_ticks);
})?;
let errors = executor.spin(SpinOptions::default().timeout(Duration::from_secs(5)));
assert!(errors.is_empty());
assert_eq!(rx.try_iter().take(3).collect::<Vec<_>>(), [1, 2, 3]);
# Ok::<(), rclev::Error>(())
```"#
    };
    (worker, create_timer_repeating) => {
        r#"```
use rclev::{SpinOptions, TimerInfo};
use std::time::Duration;

let executor = rclev::Context::default().create_basic_executor();
let node = executor.create_node("ticker")?;
let worker = node.create_worker(Vec::<Duration>::new())?; // the payload: each call's lateness
let commands = executor.commands();
let _timer = worker.create_timer_repeating(
    Duration::from_millis(1),
    move |lateness: &mut Vec<Duration>, info: TimerInfo| {
        lateness.push(info.lateness());
        if lateness.len() == 3 {
            commands.halt_spinning();
        }
    },
)?;
let errors = executor.spin(SpinOptions::default().timeout(Duration::from_secs(5)));
assert!(errors.is_empty());
let calls = worker.run(|lateness: &mut Vec<Duration>| lateness.len());
let (tx, rx) = std::sync::mpsc::channel();
let errors = executor.spin(
    SpinOptions::default()
        .until_promise_resolved(async move { tx.send(calls.await).unwrap() })
        .timeout(Duration::from_secs(5)),
);
assert!(errors.is_empty());
assert!(rx.try_recv().unwrap()? >= 3);
# Ok::<(), rclev::Error>(())
```"#
    };

    (node, create_timer_oneshot) => {
        r#"```
use rclev::SpinOptions;
use std::time::Duration;

let executor = rclev::Context::default().create_basic_executor();
let node = executor.create_node("demo")?;
let commands = executor.commands();
let (tx, rx) = std::sync::mpsc::channel();
let timer = node.create_timer_oneshot(Duration::from_millis(1), move || {
    tx.send("fired").unwrap();
    commands.halt_spinning();
})?;
assert!(timer.is_oneshot());
let errors = executor.spin(SpinOptions::default().timeout(Duration::from_secs(5)));
assert!(errors.is_empty());
assert_eq!(rx.try_recv(), Ok("fired"));
assert_eq!(timer.time_until_next_call(), None); // spent, until `reset()` arms it again
# Ok::<(), rclev::Error>(())
```"#
    };
    (worker, create_timer_oneshot) => {
        r#"```
use rclev::{SpinOptions, TimerInfo};
use std::time::Duration;

let executor = rclev::Context::default().create_basic_executor();
let node = executor.create_node("watchdog")?;
let worker = node.create_worker(false)?; // the payload: whether the deadline passed
let commands = executor.commands();
let timer = worker.create_timer_oneshot(
    Duration::from_millis(1),
    move |expired: &mut bool, _info: TimerInfo| {
        *expired = true;
        commands.halt_spinning();
    },
)?;
let errors = executor.spin(SpinOptions::default().timeout(Duration::from_secs(5)));
assert!(errors.is_empty());
let expired = worker.run(|expired: &mut bool| *expired);
let (tx, rx) = std::sync::mpsc::channel();
let errors = executor.spin(
    SpinOptions::default()
        .until_promise_resolved(async move { tx.send(expired.await).unwrap() })
        .timeout(Duration::from_secs(5)),
);
assert!(errors.is_empty());
assert!(rx.try_recv().unwrap()?);
assert_eq!(timer.time_until_next_call(), None); // spent, until `reset()` arms it again
# Ok::<(), rclev::Error>(())
```"#
    };

    ($on:ident, create_timer_inert) => {
        concat!(
            r#"```
use rclev::SpinOptions;
use std::time::Duration;

"#,
            $crate::node::creation::creation_example!(@setup $on),
            "let timer = ", stringify!($on), r#".create_timer_inert(Duration::from_millis(1))?;
assert!(timer.is_inert());
// Given a callback later, it runs from the timer's next deadline on.
let commands = executor.commands();
let (tx, rx) = std::sync::mpsc::channel();
timer.set_oneshot(move || {
    tx.send("fired").unwrap();
    commands.halt_spinning();
});
let errors = executor.spin(SpinOptions::default().timeout(Duration::from_secs(5)));
assert!(errors.is_empty());
assert_eq!(rx.try_recv(), Ok("fired"));
# Ok::<(), rclev::Error>(())
```"#
        )
    };

    ($on:ident, create_async_timer_repeating) => {
        concat!(
            r#"```
use rclev::{SpinOptions, TimerInfo};
use std::time::Duration;

"#,
            $crate::node::creation::creation_example!(@setup $on),
            r#"let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
let _timer = "#, stringify!($on), r#".create_async_timer_repeating(Duration::from_millis(1), move |info: TimerInfo| {
    let tx = tx.clone();
    async move {
        tokio::task::yield_now().await; // e.g. a request to a device
        let _ = tx.send(info.expected_call_time);
    }
})?;
let (done, calls) = std::sync::mpsc::channel();
let errors = executor.spin(
    SpinOptions::default()
        .until_promise_resolved(async move {
            let mut due = Vec::new();
            while due.len() < 3 {
                due.push(rx.recv().await.unwrap());
            }
            done.send(due).unwrap();
        })
        .timeout(Duration::from_secs(5)),
);
assert!(errors.is_empty());
// A tick does not wait for the previous tick's future: they may overlap and end in any
// order. Each call has a deadline of its own on the timer's grid.
let mut due = calls.try_recv().unwrap();
due.sort();
assert!(due.windows(2).all(|pair| pair[0] < pair[1]));
# Ok::<(), rclev::Error>(())
```"#
        )
    };
}

pub(crate) use creation_example;
