//! A worker's scheduling policies, without I/O: given the time (and what the worker saw), they
//! say what to do next, and the worker loop (`worker.rs`) reads the clock and does it. So they
//! are tested exactly, on made-up instants, below.
//!
//! - [`SpinPolicy`]: whether an idle worker spins before parking, and until when.
//! - [`PollBudget`]: when a busy worker yields its runtime thread.
//! - [`AlarmQueue`]: which entities waiting on the worker's alarm are due, in deadline order.
//! - [`order_ticks`]: the order a round runs its timer ticks in.

use std::sync::Weak;
use std::time::{Duration, Instant};

use super::executable::Executable;
use super::mailbox::MailItem;

/// Decides whether an idle worker spins briefly before parking.
///
/// Parking and being woken costs ~15 µs of latency and more of CPU here; if work has lately been
/// arriving sooner than `window` after the worker went idle, spinning for up to `window` is
/// cheaper than parking. The gap is tracked as an exponential moving average (1/8 weight), so a
/// 1 kHz timer (1 ms gaps) never spins while a 50 kHz one (20 µs gaps) always does.
pub(crate) struct SpinPolicy {
    window: Duration,
    gap_ewma_ns: f64,
}

impl SpinPolicy {
    pub(crate) fn new(window: Duration) -> Self {
        Self {
            window,
            gap_ewma_ns: f64::INFINITY,
        }
    }

    fn should_spin(&self) -> bool {
        !self.window.is_zero() && self.gap_ewma_ns < self.window.as_nanos() as f64
    }

    /// Until when a worker idle since `since` spins before parking (`None`: park at once).
    /// Never past its alarm's next wake-up (`alarm`): that is when it has work again.
    pub(crate) fn spin_until(&self, since: Instant, alarm: Option<Instant>) -> Option<Instant> {
        if !self.should_spin() {
            return None;
        }
        let end = since + self.window;
        Some(alarm.map_or(end, |t| t.min(end)))
    }

    /// The work that ended an idle period did not need the worker awake (a timer tick handed
    /// over early enough): counts as a long gap.
    pub(crate) fn record_no_spin_needed(&mut self) {
        self.record_gap(self.window * 2);
    }

    /// Work arrived `gap` after the worker went idle.
    pub(crate) fn record_gap(&mut self, gap: Duration) {
        let g = gap.as_nanos() as f64;
        self.gap_ewma_ns = if self.gap_ewma_ns.is_finite() {
            self.gap_ewma_ns + (g - self.gap_ewma_ns) / 8.0
        } else {
            g
        };
    }
}

/// How long one poll of a worker may keep running mailbox rounds before the task yields to the
/// runtime, so a busy worker cannot hog a runtime thread that other tasks (other workers, user
/// tasks, its own async callbacks) also need.
pub(crate) const POLL_BUDGET: Duration = Duration::from_millis(2);

/// Rounds between two looks at the clock: reading it costs ~20 ns, a round can be less.
const ROUNDS_PER_CHECK: u32 = 64;

/// One poll's budget: yield once [`POLL_BUDGET`] has passed, looked at every
/// [`ROUNDS_PER_CHECK`] rounds.
pub(crate) struct PollBudget {
    started: Instant,
    rounds: u32,
}

impl PollBudget {
    /// The budget of a poll that started at `now`.
    pub(crate) fn start(now: Instant) -> Self {
        Self {
            started: now,
            rounds: 0,
        }
    }

    /// Counts a round; whether the poll should yield now. `now` is read only every
    /// [`ROUNDS_PER_CHECK`] rounds.
    pub(crate) fn round_done(&mut self, now: impl FnOnce() -> Instant) -> bool {
        self.rounds = self.rounds.wrapping_add(1);
        self.rounds.is_multiple_of(ROUNDS_PER_CHECK)
            && now().saturating_duration_since(self.started) >= POLL_BUDGET
    }
}

/// What waits on a worker's alarm: entities to queue again at a wake-up time, each for a
/// deadline (a timer's). Few: one per paced timer of the worker. The alarm (`alarm.rs`) sets
/// the kernel timer for [`next`](Self::next); this decides what is due and in which order.
#[derive(Default)]
pub(crate) struct AlarmQueue {
    waiting: Vec<Waiting>,
}

/// An entity waiting on the alarm.
struct Waiting {
    /// When to queue it again.
    wake: Instant,
    /// What it waits for (a timer's deadline): entities are queued in this order.
    deadline: Instant,
    entity: Weak<dyn Executable>,
}

impl AlarmQueue {
    /// Queues `entity` again at `wake`, for something due at `deadline` (replacing an
    /// earlier request of the same entity).
    pub(crate) fn add(&mut self, wake: Instant, deadline: Instant, entity: Weak<dyn Executable>) {
        self.waiting.retain(|w| !Weak::ptr_eq(&w.entity, &entity));
        self.waiting.push(Waiting {
            wake,
            deadline,
            entity,
        });
    }

    /// The earliest wake-up time waiting.
    pub(crate) fn next(&self) -> Option<Instant> {
        self.waiting.iter().map(|w| w.wake).min()
    }

    /// The earliest deadline waiting.
    pub(crate) fn earliest_deadline(&self) -> Option<Instant> {
        self.waiting.iter().map(|w| w.deadline).min()
    }

    /// Moves the entities whose time has come (at `now`) into `out`, in deadline order, with
    /// every entity waiting for an earlier deadline than one of them (its own wake-up may be
    /// later, its margin being smaller): entities run in deadline order, as the scheduler
    /// hands ticks over.
    pub(crate) fn take_due(&mut self, now: Instant, out: &mut Vec<Weak<dyn Executable>>) {
        let Some(upto) = self
            .waiting
            .iter()
            .filter(|w| w.wake <= now)
            .map(|w| w.deadline)
            .max()
        else {
            return;
        };
        let mut due: Vec<Waiting> = Vec::new();
        let mut i = 0;
        while i < self.waiting.len() {
            if self.waiting[i].deadline <= upto {
                due.push(self.waiting.swap_remove(i));
            } else {
                i += 1;
            }
        }
        due.sort_by_key(|w| w.deadline);
        out.extend(due.into_iter().map(|w| w.entity));
    }
}

/// Puts the timer ticks of a worker's round in deadline order, each taking the place in
/// `batch` of another tick (other items keep theirs). The alarm queues its entities first, but
/// a tick the scheduler thread handed over can already wait in the mailbox with an earlier
/// deadline (handed over late, on a busy host), and ticks queued while the worker was held up
/// wait in the order they were handed over: none may run after a later one. Cheap when the
/// ticks are in order already: one pass, no allocation.
pub(crate) fn order_ticks(batch: &mut Vec<MailItem>) {
    let deadline = |item: &MailItem| match item {
        MailItem::Entity(weak) => weak.upgrade().and_then(|e| e.pending_deadline()),
        _ => None,
    };
    let mut last = None;
    let in_order = batch.iter().filter_map(deadline).all(|d| {
        let ok = last.is_none_or(|l| l <= d);
        last = Some(d);
        ok
    });
    if in_order {
        return;
    }
    let mut slots: Vec<Option<MailItem>> = batch.drain(..).map(Some).collect();
    let mut ticks: Vec<(Instant, usize)> = slots
        .iter()
        .enumerate()
        .filter_map(|(i, item)| deadline(item.as_ref()?).map(|d| (d, i)))
        .collect();
    let places: Vec<usize> = ticks.iter().map(|&(_, i)| i).collect();
    // Stable: ticks of one deadline keep their order.
    ticks.sort_by_key(|&(d, _)| d);
    let mut order: Vec<usize> = (0..slots.len()).collect();
    for (place, (_, from)) in places.into_iter().zip(ticks) {
        order[place] = from;
    }
    batch.extend(
        order
            .into_iter()
            .map(|from| slots[from].take().expect("each item moves once")),
    );
}

#[cfg(test)]
mod tests {
    use super::super::executable::ExecContext;
    use super::*;
    use std::sync::Arc;

    /// A stand-in timer for [`order_ticks`]: a label and, if it holds a tick, its deadline.
    struct Tick(char, Option<Instant>);
    impl Executable for Tick {
        fn execute(&self, _cx: &mut ExecContext<'_>) {}
        fn dispatch(&self) -> &dyn crate::runtime::executable::Coalescing {
            unreachable!("order_ticks only reads deadlines")
        }
        fn pending_deadline(&self) -> Option<Instant> {
            self.1
        }
    }

    /// Ticks come to run in deadline order, each in the place of another tick; a job and an
    /// entity without a tick keep their places, and ties keep their order.
    #[test]
    fn a_round_runs_its_ticks_in_deadline_order() {
        let t0 = Instant::now();
        let at = |us| Some(t0 + Duration::from_micros(us));
        let entities: Vec<Arc<Tick>> = [
            Tick('a', at(300)),
            Tick('s', None),
            Tick('b', at(100)),
            Tick('c', at(300)),
            Tick('d', at(200)),
        ]
        .into_iter()
        .map(Arc::new)
        .collect();
        let mut batch: Vec<MailItem> = entities
            .iter()
            .map(|e| MailItem::Entity(Arc::downgrade(e) as Weak<dyn Executable>))
            .collect();
        batch.insert(2, MailItem::Job(Box::new(|_| {})));
        let labels = |batch: &[MailItem]| -> String {
            batch
                .iter()
                .map(|item| match item {
                    MailItem::Entity(w) => {
                        let e = w.upgrade().unwrap();
                        entities
                            .iter()
                            .find(|t| std::ptr::addr_eq(Arc::as_ptr(t), Arc::as_ptr(&e)))
                            .unwrap()
                            .0
                    }
                    MailItem::Job(_) => 'j',
                    MailItem::Spawned(_) => 'f',
                })
                .collect()
        };
        assert_eq!(labels(&batch), "asjbcd");
        order_ticks(&mut batch);
        assert_eq!(labels(&batch), "bsjdac");
        // In order already: untouched.
        order_ticks(&mut batch);
        assert_eq!(labels(&batch), "bsjdac");
    }

    /// Never upgraded: the queue only holds it.
    struct Nothing;
    impl Executable for Nothing {
        fn execute(&self, _cx: &mut ExecContext<'_>) {}
        fn dispatch(&self) -> &dyn crate::runtime::executable::Coalescing {
            unreachable!("a dangling Weak is never upgraded")
        }
    }

    #[test]
    fn a_later_request_of_the_same_entity_replaces_the_earlier() {
        let mut alarm = AlarmQueue::default();
        let e: Weak<dyn Executable> = Weak::<Nothing>::new();
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        alarm.add(t0 + ms(5), t0 + ms(5), e.clone());
        alarm.add(t0 + ms(1), t0 + ms(1), e.clone());
        assert_eq!(alarm.next(), Some(t0 + ms(1)));
        let mut due = Vec::new();
        alarm.take_due(t0 + ms(2), &mut due);
        assert_eq!(due.len(), 1);
        assert!(alarm.next().is_none());
    }

    /// Entities come out in deadline order, and one due later but woken later (a smaller
    /// margin) comes out with any due entity of a later deadline.
    #[test]
    fn due_entities_come_out_in_deadline_order() {
        let mut alarm = AlarmQueue::default();
        let t0 = Instant::now();
        let us = Duration::from_micros;
        let a = Arc::new(Nothing);
        let b = Arc::new(Nothing);
        let c = Arc::new(Nothing);
        let weak = |x: &Arc<Nothing>| Arc::downgrade(x) as Weak<dyn Executable>;
        // a: deadline 100, wakes at 98; b: deadline 105, wakes at 90; c: deadline 300.
        alarm.add(t0 + us(98), t0 + us(100), weak(&a));
        alarm.add(t0 + us(90), t0 + us(105), weak(&b));
        alarm.add(t0 + us(290), t0 + us(300), weak(&c));
        let mut due = Vec::new();
        alarm.take_due(t0 + us(91), &mut due);
        let order: Vec<_> = due
            .iter()
            .map(|w| w.upgrade().unwrap())
            .map(|e| {
                if Arc::ptr_eq(&e, &(a.clone() as Arc<dyn Executable>)) {
                    'a'
                } else if Arc::ptr_eq(&e, &(b.clone() as Arc<dyn Executable>)) {
                    'b'
                } else {
                    'c'
                }
            })
            .collect();
        assert_eq!(order, vec!['a', 'b']);
        assert_eq!(alarm.next(), Some(t0 + us(290)));
    }

    const US: Duration = Duration::from_micros(1);

    #[test]
    fn a_worker_spins_only_once_work_comes_sooner_than_its_window() {
        let t0 = Instant::now();
        let mut spin = SpinPolicy::new(60 * US);
        // Nothing learned yet: park.
        assert_eq!(spin.spin_until(t0, None), None);
        // Work 20 µs after going idle (a 50 kHz timer): spin for the window.
        spin.record_gap(20 * US);
        assert_eq!(spin.spin_until(t0, None), Some(t0 + 60 * US));
        // Capped by the alarm: the worker has work again then.
        assert_eq!(spin.spin_until(t0, Some(t0 + 25 * US)), Some(t0 + 25 * US));
        assert_eq!(spin.spin_until(t0, Some(t0 + 90 * US)), Some(t0 + 60 * US));
    }

    #[test]
    fn the_gap_average_moves_an_eighth_of_the_way() {
        let t0 = Instant::now();
        let mut spin = SpinPolicy::new(60 * US);
        spin.record_gap(20 * US);
        // 1 ms gaps (a 1 kHz timer) pull the average past the window after a few: 20 µs +
        // (1000 − 20)/8 = 142.5 µs already.
        spin.record_gap(1000 * US);
        assert_eq!(spin.spin_until(t0, None), None);
        // Back down: 142.5 → 127.2 → 113.8 → 102.1 → 91.8 → 82.8 → 75.0 → 68.1 → 62.1 → 56.8.
        for _ in 0..8 {
            spin.record_gap(20 * US);
            assert_eq!(spin.spin_until(t0, None), None);
        }
        spin.record_gap(20 * US);
        assert_eq!(spin.spin_until(t0, None), Some(t0 + 60 * US));
        // A tick that needed no spinning counts as a gap of twice the window.
        for _ in 0..3 {
            spin.record_no_spin_needed();
        }
        assert_eq!(spin.spin_until(t0, None), None);
    }

    #[test]
    fn a_zero_window_never_spins() {
        let mut spin = SpinPolicy::new(Duration::ZERO);
        spin.record_gap(Duration::ZERO);
        assert_eq!(spin.spin_until(Instant::now(), None), None);
    }

    #[test]
    fn a_poll_yields_after_its_budget_looking_every_64_rounds() {
        let t0 = Instant::now();
        let mut budget = PollBudget::start(t0);
        let mut looks = 0;
        // Within the budget: never yields, and reads the clock once per 64 rounds.
        for _ in 0..640 {
            assert!(!budget.round_done(|| {
                looks += 1;
                t0 + POLL_BUDGET / 2
            }));
        }
        assert_eq!(looks, 10);
        // Past it: yields at the next look, not before.
        for _ in 0..63 {
            assert!(!budget.round_done(|| unreachable!("looked between checks")));
        }
        assert!(budget.round_done(|| t0 + POLL_BUDGET));
    }
}
