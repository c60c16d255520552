//! Sleeping on any clock, without polling: steady and system sleeps are Tokio timers; simulated
//! sleeps are woken by `/clock` updates. All end early (returning `false`) when the executor
//! shuts down or simulation time is switched on or off underneath them.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use super::{Clock, ClockType, RosTimeSource, Time};

impl Clock {
    /// `future`'s output, or `None` once `after` has passed on this clock (a steady clock for
    /// timeouts: under a [`VirtualTimeExecutor`](crate::VirtualTimeExecutor) it is virtual).
    /// A sleep cut short (the executor shut down) does not end the wait: callers bound it by
    /// the executor's life themselves. Needs a Tokio runtime for steady and system time.
    pub(crate) async fn timeout<F: Future>(&self, after: Duration, future: F) -> Option<F::Output> {
        let deadline = Time {
            nanos: self
                .now()
                .nanos
                .saturating_add(super::saturating_nanos(after)),
            clock_type: self.clock_type(),
        };
        let expired = async {
            if !self.sleep_until(deadline).await {
                std::future::pending::<()>().await;
            }
        };
        tokio::select! {
            biased;
            output = future => Some(output),
            _ = expired => None,
        }
    }

    /// Sleeps until the clock reads `until`. Returns `true` when that time was reached, `false`
    /// if the sleep was cut short (executor shutdown, or simulation time switched on/off).
    /// Needs a Tokio runtime (any flavor) for steady and system time.
    pub async fn sleep_until(&self, until: Time) -> bool {
        let life = self.life().cloned();
        if life.as_ref().is_some_and(|l| l.is_ended()) {
            return false;
        }
        let shutdown = async {
            match &life {
                Some(l) => l.ended().await,
                None => std::future::pending().await,
            }
        };
        let sleep = async {
            match self.source() {
                Some(source) => {
                    let generation = source.generation();
                    if source.is_sim_active() {
                        SimSleep {
                            source: source.clone(),
                            until: until.nanos,
                            generation,
                            key: None,
                        }
                        .await
                    } else {
                        // ROS time on the system clock: a wall sleep that also ends when
                        // simulation time is switched on.
                        let wall = wall_sleep(until.nanos - self.now().nanos);
                        let switched = SimSleep {
                            source: source.clone(),
                            until: i64::MAX,
                            generation,
                            key: None,
                        };
                        tokio::select! {
                            _ = wall => source.generation() == generation,
                            _ = switched => false,
                        }
                    }
                }
                None => {
                    wall_sleep(until.nanos - self.now().nanos).await;
                    true
                }
            }
        };
        tokio::select! {
            reached = sleep => reached,
            _ = shutdown => false,
        }
    }

    /// Sleeps for `duration` of this clock's time (see [`sleep_until`](Self::sleep_until)).
    pub async fn sleep_for(&self, duration: Duration) -> bool {
        let now = self.now();
        self.sleep_until(Time {
            nanos: now.nanos.saturating_add(super::saturating_nanos(duration)),
            clock_type: now.clock_type,
        })
        .await
    }
}

async fn wall_sleep(nanos: i64) {
    if nanos > 0 {
        tokio::time::sleep(Duration::from_nanos(nanos as u64)).await;
    }
}

/// Resolves when the simulated clock reaches `until` (`true`), or the source's generation
/// moves (`false`).
struct SimSleep {
    source: Arc<RosTimeSource>,
    until: i64,
    generation: u64,
    key: Option<(i64, u64)>,
}

impl Future for SimSleep {
    type Output = bool;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<bool> {
        if self.source.generation() != self.generation {
            return Poll::Ready(false);
        }
        if self.source.sim_now() >= self.until {
            return Poll::Ready(true);
        }
        let (key, until, generation) = (self.key, self.until, self.generation);
        match self
            .source
            .register_sleeper(key, until, generation, cx.waker())
        {
            Some(k) => {
                self.key = Some(k);
                Poll::Pending
            }
            None => {
                self.key = None;
                Poll::Ready(self.source.generation() == self.generation)
            }
        }
    }
}

impl Drop for SimSleep {
    fn drop(&mut self) {
        if let Some(k) = self.key.take() {
            self.source.remove_sleeper(k);
        }
    }
}

/// Runs a loop at a fixed rate on any clock: `rate.sleep().await` sleeps until the next period
/// boundary. If an iteration overran by more than a period, the schedule restarts from now
/// instead of bursting.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use rclev::{Clock, Rate};
/// use std::time::Duration;
/// let mut rate = Rate::new(Clock::steady(), Duration::from_millis(2));
/// for _ in 0..3 {
///     assert!(rate.sleep().await);
/// }
/// # }
/// ```
#[derive(Debug)]
pub struct Rate {
    clock: Clock,
    period: Duration,
    next: Time,
}

impl Rate {
    /// A rate of one iteration per `period` on `clock`, starting now.
    pub fn new(clock: Clock, period: Duration) -> Self {
        let next = clock.now();
        Self {
            clock,
            period,
            next,
        }
    }

    /// The period.
    pub fn period(&self) -> Duration {
        self.period
    }

    /// Sleeps until the next period boundary; `false` if the sleep was cut short.
    pub async fn sleep(&mut self) -> bool {
        let period = super::saturating_nanos(self.period);
        self.next.nanos = self.next.nanos.saturating_add(period);
        let now = self.clock.now();
        if now.nanos > self.next.nanos.saturating_add(period)
            || now.nanos < self.next.nanos.saturating_sub(period.saturating_mul(2))
        {
            // Overran by more than a period, or the clock jumped back: restart from now.
            self.next = Time {
                nanos: now.nanos.saturating_add(period),
                clock_type: now.clock_type,
            };
        }
        self.clock.sleep_until(self.next).await
    }

    /// The clock type the rate runs on.
    pub fn clock_type(&self) -> ClockType {
        self.clock.clock_type()
    }
}
