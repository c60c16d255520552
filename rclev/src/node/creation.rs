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
//! - `runs`: how the docs say where callbacks run.
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
        runs: $runs:literal $(,)?
    ) => {
        /// A publisher.
        pub fn create_publisher<T: $crate::msg::Message>(
            &self,
            options: impl $crate::qos::IntoPrimitiveOptions,
        ) -> $crate::error::Result<$crate::node::Publisher<T>> {
            $crate::node::PublisherState::create(&self.core, options)
        }

        #[doc = concat!("A subscription whose callback runs ", $runs, ".")]
        pub fn create_subscription<T: $crate::msg::Message, F>(
            &self,
            options: impl $crate::qos::IntoPrimitiveOptions,
            callback: F,
        ) -> $crate::error::Result<$crate::node::Subscription<T>>
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
        pub fn create_subscription_with_info<T: $crate::msg::Message, F>(
            &self,
            options: impl $crate::qos::IntoPrimitiveOptions,
            mut callback: F,
        ) -> $crate::error::Result<$crate::node::Subscription<T>>
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
        /// task.
        pub fn create_async_subscription<T: $crate::msg::Message, F, Fut>(
            &self,
            options: impl $crate::qos::IntoPrimitiveOptions,
            callback: F,
        ) -> $crate::error::Result<$crate::node::Subscription<T>>
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
        pub fn create_subscription_stream<T: $crate::msg::Message>(
            &self,
            options: impl $crate::qos::IntoPrimitiveOptions,
        ) -> $crate::error::Result<$crate::node::SubscriptionStream<T>> {
            $crate::node::SubscriptionStream::create(&self.core, options)
        }

        #[doc = concat!("A service whose callback runs ", $runs, ".")]
        pub fn create_service<S: $crate::msg::ServiceType, F>(
            &self,
            options: impl $crate::qos::IntoPrimitiveOptions,
            callback: F,
        ) -> $crate::error::Result<$crate::node::Service<S>>
        where
            F: FnMut($($bound)* S::Request) -> S::Response + Send + 'static,
        {
            $crate::node::service::create_service(
                &self.core,
                options,
                $crate::node::service::ServiceCallback::$wrap(callback),
            )
        }

        /// A service with an async callback; each request's future runs on the worker's task.
        pub fn create_async_service<S: $crate::msg::ServiceType, F, Fut>(
            &self,
            options: impl $crate::qos::IntoPrimitiveOptions,
            callback: F,
        ) -> $crate::error::Result<$crate::node::Service<S>>
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
        pub fn create_client<S: $crate::msg::ServiceType>(
            &self,
            options: impl $crate::qos::IntoPrimitiveOptions,
        ) -> $crate::error::Result<$crate::node::Client<S>> {
            $crate::node::service::create_client(&self.core, options)
        }

        #[doc = concat!("A guard condition whose callback runs ", $runs, ".")]
        pub fn create_guard_condition<F>(
            &self,
            mut callback: F,
        ) -> $crate::error::Result<$crate::node::GuardCondition>
        where
            F: FnMut($($bound)*) + Send + 'static,
        {
            $crate::node::guard::create_guard_condition(
                &self.core,
                $crate::node::Callback::$wrap(move |$($param)* ()| callback($($arg)*)),
            )
        }

        #[doc = concat!("A repeating timer whose callback runs ", $runs, ".")]
        pub fn create_timer_repeating<$($timer_generics)*>(
            &self,
            options: impl $crate::timer::IntoTimerOptions,
            callback: $timer_callback,
        ) -> $crate::error::Result<$crate::timer::Timer> {
            let $timer_given = callback;
            $crate::timer::create_timer(
                &self.core,
                options,
                $crate::timer::TimerKind::Repeating($timer_convert),
            )
        }

        #[doc = concat!("A timer whose callback runs ", $runs, " once, one period from now")]
        /// (again after each `reset()`).
        pub fn create_timer_oneshot<$($timer_generics)*>(
            &self,
            options: impl $crate::timer::IntoTimerOptions,
            callback: $timer_callback,
        ) -> $crate::error::Result<$crate::timer::Timer> {
            let $timer_given = callback;
            $crate::timer::create_timer(
                &self.core,
                options,
                $crate::timer::TimerKind::OneShot($timer_convert),
            )
        }

        /// A timer that keeps its schedule but calls nothing until given a callback with
        /// `set_repeating`/`set_oneshot`.
        pub fn create_timer_inert(
            &self,
            options: impl $crate::timer::IntoTimerOptions,
        ) -> $crate::error::Result<$crate::timer::Timer> {
            $crate::timer::create_timer(&self.core, options, $crate::timer::TimerKind::Inert)
        }

        /// A repeating timer with an async callback; each tick's future runs on the worker's
        /// task.
        pub fn create_async_timer_repeating<F, Fut>(
            &self,
            options: impl $crate::timer::IntoTimerOptions,
            callback: F,
        ) -> $crate::error::Result<$crate::timer::Timer>
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
