//! Fuzzing on stable Rust: property tests (proptest) over everything rclev parses from outside.
//!
//! - `from_cdr` of every message type rclev ships, action wrappers included: arbitrary bytes,
//!   mutated valid encodings, and round trips of generated values (both byte orders).
//! - ROS names, through `create_node` and `create_publisher`, against a model of the rules.
//! - `--ros-args` vectors, through `parse_ros_args` and through node creation.
//! - Parameter declarations and changes with arbitrary values and descriptors (extreme ranges
//!   and steps, NaN, infinities), against a model of the range rules.
//!
//! Every target asserts that nothing panics and that errors are rclev's typed ones. Decoding is
//! also watched by a counting allocator: the peak bytes allocated while decoding one input must
//! stay within [`ALLOC_FACTOR`] times its length plus [`ALLOC_SLACK`], so a short input that
//! claims a huge sequence cannot make rclev allocate for the claim.
//!
//! `RCLEV_FUZZ_CASES` sets the inputs per target (default [`DEFAULT_CASES`], for CI). The long
//! local campaign, printing the figures of every target:
//!
//! ```text
//! RCLEV_FUZZ_CASES=12000 cargo test --release --test fuzz -- --nocapture
//! ```
//!
//! A failure prints the shrunk input; keep it as a named test in the `regressions` module.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::fmt::Debug;
use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};
use rclev::action::GoalUuid;
use rclev::arguments::parse_ros_args;
use rclev::interfaces::action_msgs::msg::GoalInfo;
use rclev::interfaces::action_msgs::msg::GoalStatus;
use rclev::interfaces::action_msgs::msg::GoalStatusArray;
use rclev::interfaces::action_msgs::srv::CancelGoal_Request as CancelGoalRequest;
use rclev::interfaces::action_msgs::srv::CancelGoal_Response as CancelGoalResponse;
use rclev::interfaces::builtin_interfaces::msg::Duration as DurationMsg;
use rclev::interfaces::builtin_interfaces::msg::Time as TimeMsg;
use rclev::interfaces::example_interfaces::action::Fibonacci_Feedback as FibonacciFeedback;
use rclev::interfaces::example_interfaces::action::Fibonacci_FeedbackMessage as FeedbackMessage;
use rclev::interfaces::example_interfaces::action::Fibonacci_GetResult_Request as GetResultRequest;
use rclev::interfaces::example_interfaces::action::Fibonacci_GetResult_Response as GetResultResponse;
use rclev::interfaces::example_interfaces::action::Fibonacci_Goal as FibonacciGoal;
use rclev::interfaces::example_interfaces::action::Fibonacci_Result as FibonacciResult;
use rclev::interfaces::example_interfaces::action::Fibonacci_SendGoal_Request as SendGoalRequest;
use rclev::interfaces::example_interfaces::action::Fibonacci_SendGoal_Response as SendGoalResponse;
use rclev::interfaces::example_interfaces::srv::AddTwoInts_Request as AddTwoIntsRequest;
use rclev::interfaces::example_interfaces::srv::AddTwoInts_Response as AddTwoIntsResponse;
use rclev::interfaces::rcl_interfaces::msg::Log;
use rclev::interfaces::rosgraph_msgs::msg::Clock;
use rclev::interfaces::std_msgs::msg::Bool;
use rclev::interfaces::std_msgs::msg::Empty;
use rclev::interfaces::std_msgs::msg::Float64;
use rclev::interfaces::std_msgs::msg::Header;
use rclev::interfaces::std_msgs::msg::Int32;
use rclev::interfaces::std_msgs::msg::Int64;
use rclev::interfaces::std_msgs::msg::String as StringMsg;
use rclev::interfaces::std_msgs::msg::UInt64;
use rclev::msg::from_cdr;
use rclev::msg::{to_cdr, to_cdr_in_slice};
use rclev::msg::{CdrError, FieldDescription, IndividualTypeDescription, Message};
use rclev::parameter::Range;
use rclev::{
    Context, Error, ExecutorOptions, NameKind, NodeOptions, ParameterDescriptor, ParameterError,
    ParameterValue, RuntimeChoice,
};

/// Inputs per target when `RCLEV_FUZZ_CASES` is not set: keeps the suite to seconds in debug.
const DEFAULT_CASES: u32 = 512;
/// Peak allocation allowed per input byte while decoding. A `Vec` that grows by doubling holds
/// up to twice the decoded elements, and an element may be larger in memory than on the wire
/// (`GoalStatus`: 28 bytes for 25).
const ALLOC_FACTOR: usize = 4;
/// Peak allocation allowed for any input: a `Vec`'s first allocation holds 4 elements, and
/// an error message is a short string.
const ALLOC_SLACK: usize = 4096;

// ---------------------------------------------------------------------------------------------
// Counting allocator
// ---------------------------------------------------------------------------------------------

/// Counts the bytes live on the current thread while [`measure`] runs, and their peak.
/// Per-thread, because the test harness runs targets on parallel threads.
struct CountingAlloc;

thread_local! {
    // `const` initialisers without destructors: using them never allocates or registers a
    // destructor, so the allocator may touch them.
    static TRACKING: Cell<bool> = const { Cell::new(false) };
    static LIVE: Cell<usize> = const { Cell::new(0) };
    static PEAK: Cell<usize> = const { Cell::new(0) };
}

fn grew(bytes: usize) {
    let _ = TRACKING.try_with(|on| {
        if on.get() {
            let live = LIVE.get() + bytes;
            LIVE.set(live);
            PEAK.set(PEAK.get().max(live));
        }
    });
}

fn shrank(bytes: usize) {
    let _ = TRACKING.try_with(|on| {
        if on.get() {
            // Memory allocated before the measurement may be freed during it.
            LIVE.set(LIVE.get().saturating_sub(bytes));
        }
    });
}

// SAFETY: every call is forwarded unchanged to `System`; the counters only observe sizes.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc`, passed on.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc_zeroed`, passed on.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for `dealloc`, passed on.
        unsafe { System.dealloc(ptr, layout) };
        shrank(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract for `realloc`, passed on.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                shrank(layout.size() - new_size);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: CountingAlloc = CountingAlloc;

/// Runs `f` and returns its result with the peak bytes it held allocated at once.
fn measure<R>(f: impl FnOnce() -> R) -> (R, usize) {
    LIVE.set(0);
    PEAK.set(0);
    TRACKING.set(true);
    let r = f();
    TRACKING.set(false);
    (r, PEAK.get())
}

// ---------------------------------------------------------------------------------------------
// The runner
// ---------------------------------------------------------------------------------------------

fn cases() -> u32 {
    std::env::var("RCLEV_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_CASES)
}

/// Runs `test` on `cases()` inputs from `strategy`; on a failure, panics with the shrunk
/// input. Prints the target's figures (seen with `--nocapture`).
fn fuzz<S>(target: &str, strategy: S, test: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S: Strategy,
    S::Value: Debug,
{
    let config = Config {
        cases: cases(),
        // Failures become named regression tests here instead of files beside the sources.
        failure_persistence: None,
        ..Config::default()
    };
    MAX_PEAK.set(0);
    MAX_RATIO_MILLI.set(0);
    let start = std::time::Instant::now();
    let mut runner = TestRunner::new(config);
    match runner.run(&strategy, test) {
        Ok(()) => {
            let allocation = match MAX_PEAK.get() {
                0 => String::new(),
                peak => format!(
                    ", decoding peaked at {peak} B, at most {:.2} B per input byte (inputs ≥ 256 B)",
                    MAX_RATIO_MILLI.get() as f64 / 1000.0
                ),
            };
            println!(
                "fuzz {target}: {} inputs, 0 failures, {:.2} s{allocation}",
                cases(),
                start.elapsed().as_secs_f64()
            )
        }
        Err(TestError::Fail(reason, input)) => {
            panic!("fuzz {target}: {reason}\nminimal failing input: {input:#?}")
        }
        Err(TestError::Abort(reason)) => panic!("fuzz {target} aborted: {reason}"),
    }
}

// ---------------------------------------------------------------------------------------------
// CDR
// ---------------------------------------------------------------------------------------------

thread_local! {
    /// The current target's largest peak allocation while decoding one input, and its largest
    /// peak/length ratio (×1000, inputs of at least 256 bytes, where the slack no longer hides
    /// the proportional part). A target runs on one thread.
    static MAX_PEAK: Cell<usize> = const { Cell::new(0) };
    static MAX_RATIO_MILLI: Cell<usize> = const { Cell::new(0) };
}

/// Decodes untrusted bytes: no panic, only `Error::Serialization`, bounded allocation, and what
/// decodes re-encodes to bytes that decode to the same value.
fn decode_checked<T: Message>(bytes: &[u8]) -> Result<Option<T>, TestCaseError> {
    let (decoded, peak) = measure(|| from_cdr::<T>(bytes));
    MAX_PEAK.set(MAX_PEAK.get().max(peak));
    if bytes.len() >= 256 {
        MAX_RATIO_MILLI.set(MAX_RATIO_MILLI.get().max(peak * 1000 / bytes.len()));
    }
    prop_assert!(
        peak <= ALLOC_FACTOR * bytes.len() + ALLOC_SLACK,
        "decoding {} bytes peaked at {peak} bytes allocated",
        bytes.len()
    );
    match decoded {
        Ok(v) => {
            let again = to_cdr(&v).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let back = from_cdr::<T>(&again).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(to_cdr(&back).unwrap(), again);
            Ok(Some(v))
        }
        Err(Error::Serialization(_)) => Ok(None),
        Err(other) => Err(TestCaseError::fail(format!("untyped error {other:?}"))),
    }
}

/// The encapsulations a decoder meets: the two valid ones (options zero or not), the
/// parameter-list and XCDR2 ones, and anything at all.
fn header() -> impl Strategy<Value = [u8; 4]> {
    prop_oneof![
        3 => Just([0x00, 0x01, 0x00, 0x00]),
        2 => Just([0x00, 0x00, 0x00, 0x00]),
        1 => any::<[u8; 2]>().prop_map(|o| [0x00, 0x01, o[0], o[1]]),
        1 => (0u8..=0x0b).prop_map(|r| [0x00, r, 0x00, 0x00]),
        1 => any::<[u8; 4]>(),
    ]
}

fn arbitrary_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..8),
        (header(), prop::collection::vec(any::<u8>(), 0..512)).prop_map(|(h, body)| [
            &h[..],
            &body
        ]
        .concat()),
    ]
}

/// One edit of an encoding.
#[derive(Debug, Clone)]
enum Mutation {
    FlipBit(Index, u8),
    SetByte(Index, u8),
    Insert(Index, Vec<u8>),
    Remove(Index, usize),
    Truncate(Index),
    /// Overwrites an aligned `u32` of the body, where length prefixes live.
    Length(Index, u32, bool),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let length = prop_oneof![
        Just(u32::MAX),
        Just(0x8000_0000),
        Just(0x0001_0000),
        0u32..64,
        any::<u32>()
    ];
    prop_oneof![
        (any::<Index>(), 0u8..8).prop_map(|(i, b)| Mutation::FlipBit(i, b)),
        (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Mutation::SetByte(i, b)),
        (any::<Index>(), prop::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(i, b)| Mutation::Insert(i, b)),
        (any::<Index>(), 1usize..16).prop_map(|(i, n)| Mutation::Remove(i, n)),
        any::<Index>().prop_map(Mutation::Truncate),
        (any::<Index>(), length, any::<bool>()).prop_map(|(i, n, be)| Mutation::Length(i, n, be)),
    ]
}

fn mutate(bytes: &mut Vec<u8>, m: &Mutation) {
    let len = bytes.len();
    match m {
        Mutation::FlipBit(i, bit) if len > 0 => bytes[i.index(len)] ^= 1 << bit,
        Mutation::SetByte(i, b) if len > 0 => bytes[i.index(len)] = *b,
        Mutation::Insert(i, new) => {
            let at = i.index(len + 1);
            bytes.splice(at..at, new.iter().copied());
        }
        Mutation::Remove(i, n) if len > 0 => {
            let at = i.index(len);
            bytes.drain(at..(at + n).min(len));
        }
        Mutation::Truncate(i) => bytes.truncate(i.index(len + 1)),
        Mutation::Length(i, n, big_endian) if len >= 8 => {
            let at = 4 + i.index((len - 4) / 4) * 4;
            let word = if *big_endian {
                n.to_be_bytes()
            } else {
                n.to_le_bytes()
            };
            bytes[at..at + 4].copy_from_slice(&word);
        }
        _ => {}
    }
}

/// `T` in CDR_BE, which rclev never writes but peers may: its little-endian encoding
/// transcoded field by field, driven by the type's own REP-2016 description (which also checks
/// that the description and the encoder agree).
fn to_cdr_be<T: Message>(value: &T) -> Vec<u8> {
    let le = to_cdr(value).expect("encodes");
    let mut t = Transcoder {
        input: &le[4..],
        pos: 0,
        out: vec![0, 0, 0, 0],
        refs: T::TYPE_DESCRIPTION.referenced_type_descriptions,
    };
    t.structure(&T::TYPE_DESCRIPTION.type_description);
    assert_eq!(
        t.pos,
        le.len() - 4,
        "{}: description and encoding disagree",
        T::TYPE_NAME
    );
    t.out
}

/// Rewrites a little-endian CDR body as big-endian; alignment is the same in both.
struct Transcoder<'a> {
    input: &'a [u8],
    pos: usize,
    out: Vec<u8>,
    refs: &'static [IndividualTypeDescription],
}

impl Transcoder<'_> {
    /// Copies one primitive of `size` bytes, aligned, reversing its bytes.
    fn primitive(&mut self, size: usize) {
        while !self.pos.is_multiple_of(size) {
            self.pos += 1;
            self.out.push(0);
        }
        let mut bytes = self.input[self.pos..self.pos + size].to_vec();
        bytes.reverse();
        self.out.extend_from_slice(&bytes);
        self.pos += size;
    }

    fn u32(&mut self) -> usize {
        let at = self.pos.next_multiple_of(4);
        let n = u32::from_le_bytes(self.input[at..at + 4].try_into().unwrap());
        self.primitive(4);
        n as usize
    }

    fn structure(&mut self, d: &IndividualTypeDescription) {
        for f in d.fields {
            let count = match f.type_id / 48 {
                0 => 1,
                1 => f.capacity as usize,
                _ => self.u32(),
            };
            for _ in 0..count {
                self.element(f);
            }
        }
    }

    fn element(&mut self, f: &FieldDescription) {
        match f.type_id % 48 {
            1 => {
                let nested = self
                    .refs
                    .iter()
                    .find(|r| r.type_name == f.nested_type_name)
                    .expect("referenced type is described");
                self.structure(nested)
            }
            2 | 3 | 15 | 16 => self.primitive(1),
            4 | 5 => self.primitive(2),
            6 | 7 | 10 => self.primitive(4),
            8 | 9 | 11 => self.primitive(8),
            17 | 21 => {
                let n = self.u32();
                self.out
                    .extend_from_slice(&self.input[self.pos..self.pos + n]);
                self.pos += n;
            }
            18 | 22 => {
                for _ in 0..self.u32() {
                    self.primitive(4);
                }
            }
            other => panic!("type id {other} in a ROS 2 description"),
        }
    }
}

fn fuzz_arbitrary_bytes<T: Message>(target: &str) {
    fuzz(target, arbitrary_bytes(), |bytes| {
        decode_checked::<T>(&bytes).map(drop)
    });
}

fn fuzz_round_trip<T: Message + PartialEq>(target: &str, values: impl Strategy<Value = T>) {
    fuzz(target, values, |value| {
        let le = to_cdr(&value).map_err(|e| TestCaseError::fail(e.to_string()))?;
        // Encoding in place (into a transport's buffer) gives the same bytes when they fit,
        // and `NoRoom` when one byte is missing.
        let mut room = vec![0xAA; le.len() + 16];
        let n =
            to_cdr_in_slice(&value, &mut room).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&room[..n], &le[..]);
        let short = to_cdr_in_slice(&value, &mut room[..le.len() - 1]);
        prop_assert!(
            matches!(
                short,
                Err(rclev::Error::Serialization(
                    rclev::msg::CdrError::NoRoom { .. }
                ))
            ),
            "{:?}",
            short
        );
        for bytes in [le.clone(), to_cdr_be(&value)] {
            let back = decode_checked::<T>(&bytes)?
                .ok_or_else(|| TestCaseError::fail("own encoding refused"))?;
            // `==` only where the value equals itself (a NaN does not); the bytes always.
            if value.clone() == value {
                prop_assert_eq!(&back, &value);
            }
            prop_assert_eq!(to_cdr(&back).unwrap(), le.clone());
        }
        Ok(())
    });
}

fn fuzz_mutations<T: Message>(target: &str, values: impl Strategy<Value = T>) {
    let cases = (
        values,
        any::<bool>(),
        prop::collection::vec(mutation(), 1..6),
    );
    fuzz(target, cases, |(value, big_endian, mutations)| {
        let mut bytes = if big_endian {
            to_cdr_be(&value)
        } else {
            to_cdr(&value).unwrap()
        };
        for m in &mutations {
            mutate(&mut bytes, m);
        }
        decode_checked::<T>(&bytes).map(drop)
    });
}

// Generators of valid values, one per message type.

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z_/ ]{0,12}",
        prop::collection::vec(any::<char>(), 0..40).prop_map(String::from_iter),
    ]
}

fn time() -> impl Strategy<Value = TimeMsg> {
    any::<(i32, u32)>().prop_map(|(sec, nanosec)| TimeMsg { sec, nanosec })
}

fn uuid() -> impl Strategy<Value = GoalUuid> {
    any::<[u8; 16]>().prop_map(|uuid| GoalUuid { uuid })
}

fn goal_info() -> impl Strategy<Value = GoalInfo> {
    (uuid(), time()).prop_map(|(goal_id, stamp)| GoalInfo { goal_id, stamp })
}

fn goal_status() -> impl Strategy<Value = GoalStatus> {
    (goal_info(), any::<i8>()).prop_map(|(goal_info, status)| GoalStatus { goal_info, status })
}

fn sequence() -> impl Strategy<Value = Vec<i32>> {
    prop::collection::vec(any::<i32>(), 0..300)
}

fn log() -> impl Strategy<Value = Log> {
    (
        time(),
        any::<u8>(),
        (text(), text(), text(), text()),
        any::<u32>(),
    )
        .prop_map(|(stamp, level, (name, msg, file, function), line)| Log {
            stamp,
            level,
            name,
            msg,
            file,
            function,
            line,
        })
}

/// Three targets per message type: `arbitrary_bytes`, `round_trip`, `mutated_encodings`.
macro_rules! cdr_targets {
    ($($module:ident: $ty:ty = $values:expr;)*) => {$(
        mod $module {
            use super::*;

            #[test]
            fn arbitrary_bytes() {
                fuzz_arbitrary_bytes::<$ty>(concat!(stringify!($ty), " arbitrary bytes"));
            }

            #[test]
            fn round_trip() {
                fuzz_round_trip::<$ty>(concat!(stringify!($ty), " round trip"), $values);
            }

            #[test]
            fn mutated_encodings() {
                fuzz_mutations::<$ty>(concat!(stringify!($ty), " mutated encodings"), $values);
            }
        }
    )*};
}

cdr_targets! {
    string_msg: StringMsg = text().prop_map(|data| StringMsg { data });
    int64: Int64 = any::<i64>().prop_map(|data| Int64 { data });
    int32: Int32 = any::<i32>().prop_map(|data| Int32 { data });
    uint64: UInt64 = any::<u64>().prop_map(|data| UInt64 { data });
    float64: Float64 = any::<f64>().prop_map(|data| Float64 { data });
    bool_msg: Bool = any::<bool>().prop_map(|data| Bool { data });
    empty: Empty = Just(Empty {});
    time_msg: TimeMsg = time();
    duration_msg: DurationMsg =
        any::<(i32, u32)>().prop_map(|(sec, nanosec)| DurationMsg { sec, nanosec });
    header: Header = (time(), text()).prop_map(|(stamp, frame_id)| Header { stamp, frame_id });
    clock: Clock = time().prop_map(|clock| Clock { clock });
    log_msg: Log = log();
    add_two_ints_request: AddTwoIntsRequest =
        any::<(i64, i64)>().prop_map(|(a, b)| AddTwoIntsRequest { a, b });
    add_two_ints_response: AddTwoIntsResponse =
        any::<i64>().prop_map(|sum| AddTwoIntsResponse { sum });
    goal_uuid: GoalUuid = uuid();
    goal_info_msg: GoalInfo = goal_info();
    goal_status_msg: GoalStatus = goal_status();
    goal_status_array: GoalStatusArray = prop::collection::vec(goal_status(), 0..40)
        .prop_map(|status_list| GoalStatusArray { status_list });
    cancel_goal_request: CancelGoalRequest =
        goal_info().prop_map(|goal_info| CancelGoalRequest { goal_info });
    cancel_goal_response: CancelGoalResponse =
        (any::<i8>(), prop::collection::vec(goal_info(), 0..40)).prop_map(
            |(return_code, goals_canceling)| CancelGoalResponse { return_code, goals_canceling },
        );
    send_goal_request: SendGoalRequest = (uuid(), any::<i32>())
        .prop_map(|(goal_id, order)| SendGoalRequest { goal_id, goal: FibonacciGoal { order } });
    send_goal_response: SendGoalResponse =
        (any::<bool>(), time()).prop_map(|(accepted, stamp)| SendGoalResponse { accepted, stamp });
    get_result_request: GetResultRequest = uuid().prop_map(|goal_id| GetResultRequest { goal_id });
    get_result_response: GetResultResponse = (any::<i8>(), sequence())
        .prop_map(|(status, sequence)| GetResultResponse {
            status,
            result: FibonacciResult { sequence },
        });
    feedback_message: FeedbackMessage = (uuid(), sequence())
        .prop_map(|(goal_id, sequence)| FeedbackMessage {
            goal_id,
            feedback: FibonacciFeedback { sequence },
        });
    fibonacci_goal: FibonacciGoal = any::<i32>().prop_map(|order| FibonacciGoal { order });
    fibonacci_result: FibonacciResult = sequence().prop_map(|sequence| FibonacciResult { sequence });
    fibonacci_feedback: FibonacciFeedback =
        sequence().prop_map(|sequence| FibonacciFeedback { sequence });
}

// ---------------------------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------------------------

fn name_text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9_]{1,10}",
        "[a-z0-9_/~]{0,16}",
        "[a-zA-Z0-9_/~{}. -]{0,12}",
        "[a-z_]{250,260}",
        any::<String>(),
    ]
}

fn token_ok(t: &str) -> bool {
    !t.is_empty()
        && t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && !t.as_bytes()[0].is_ascii_digit()
}

/// The node-name rule: one token of at most 255 bytes.
fn node_name_ok(name: &str) -> bool {
    name.len() <= 255 && token_ok(name)
}

/// The namespace rule, as the absolute namespace it normalises to.
fn namespace_model(ns: &str) -> Option<String> {
    if ns.is_empty() || ns == "/" {
        return Some("/".into());
    }
    let abs = if ns.starts_with('/') {
        ns.to_string()
    } else {
        format!("/{ns}")
    };
    abs[1..].split('/').all(token_ok).then_some(abs)
}

/// Mostly valid node names, so that the topic half of [`names`] runs often.
fn node_name() -> impl Strategy<Value = String> {
    prop_oneof!["[a-zA-Z_][a-zA-Z0-9_]{0,10}", name_text()]
}

fn namespace() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("/".to_string()),
        "(/?[a-z_][a-z0-9_]{0,5})(/[a-z_][a-z0-9_]{0,5}){0,2}",
        name_text(),
    ]
}

fn topic() -> impl Strategy<Value = String> {
    prop_oneof!["~?(/[a-z_][a-z0-9_]{0,4}){1,3}", "[a-z_]{1,6}", name_text()]
}

/// An executor whose workers are tasks on a one-thread runtime of the test's own (the
/// runtime must outlive the executor, so both are returned).
fn executor_on_own_runtime() -> (tokio::runtime::Runtime, rclev::Executor) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let executor = Context::default()
        .create_executor(ExecutorOptions {
            runtime: RuntimeChoice::Adopt(runtime.handle().clone()),
            ..ExecutorOptions::default()
        })
        .unwrap();
    (runtime, executor)
}

/// Names go through node and publisher creation: every result is either what the model
/// predicts or a typed `InvalidName` of the right kind.
#[test]
fn names() {
    let (_runtime, executor) = executor_on_own_runtime();
    let inputs = (node_name(), namespace(), topic());
    fuzz("names", inputs, |(name, namespace, topic)| {
        let options = NodeOptions::new(name.clone())
            .namespace(namespace.clone())
            .enable_rosout(false);
        let expected_ns = namespace_model(&namespace);
        let node = match executor.create_node(options) {
            Ok(node) => node,
            Err(Error::InvalidName { kind, .. }) => {
                let expected = if node_name_ok(&name) {
                    NameKind::Namespace
                } else {
                    NameKind::Node
                };
                prop_assert_eq!(kind, expected);
                prop_assert!(kind == NameKind::Node || expected_ns.is_none());
                return Ok(());
            }
            Err(other) => return Err(TestCaseError::fail(format!("{other:?}"))),
        };
        prop_assert!(node_name_ok(&name));
        prop_assert_eq!(Some(node.namespace().to_string()), expected_ns);
        let resolved = node.resolve_topic_name(&topic);
        let publisher = node.create_publisher::<StringMsg>(topic.as_str());
        match (&resolved, &publisher) {
            (Ok(full), Ok(p)) => {
                prop_assert_eq!(p.topic_name(), full.as_str());
                prop_assert!(full.starts_with('/'));
                prop_assert!(full[1..].split('/').all(token_ok), "{} accepted", full);
            }
            (
                Err(Error::InvalidName {
                    kind: NameKind::Topic,
                    ..
                }),
                Err(Error::InvalidName {
                    kind: NameKind::Topic,
                    ..
                }),
            ) => {}
            _ => {
                return Err(TestCaseError::fail(format!(
                    "resolve gave {resolved:?}, create_publisher gave {:?}",
                    publisher.as_ref().map(|p| p.topic_name().to_string())
                )))
            }
        }
        Ok(())
    });
}

// ---------------------------------------------------------------------------------------------
// --ros-args
// ---------------------------------------------------------------------------------------------

/// Text that looks like a parameter value: scalars, flat sequences, quotes, brackets (nested
/// or not), commas.
fn value_text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[-0-9a-z.]{0,8}",
        2 => r"\[ ?(-?[0-9]{1,3}(\.[0-9])?, ?){0,4}-?[0-9]{1,3}\]",
        1 => r#"\[ ?(('[a-z,]{0,3}'|"[a-z\]]{0,3}"|[a-z]{1,3}), ?){0,3}[a-z]{1,3}\]"#,
        2 => r#"\[[ 0-9a-z.,'"\[\]{}-]{0,24}\]"#,
        1 => r#"[ 0-9a-zA-Z.,'"\\\[\]{}:-]{0,24}"#,
        1 => (1usize..64).prop_map(|d| format!("{}1{}", "[".repeat(d), "]".repeat(d))),
        1 => any::<String>(),
    ]
}

fn rule() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => ("[a-z_]{1,6}", value_text()).prop_map(|(n, v)| format!("{n}:={v}")),
        3 => ("fuzz|other|", "[a-z_.]{0,6}", value_text())
            .prop_map(|(t, n, v)| format!("{t}:{n}:={v}")),
        1 => Just("use_sim_time:=true".to_string()),
        1 => Just("use_sim_time:=3".to_string()),
        1 => any::<String>(),
    ]
}

/// Argument vectors, mostly inside a `--ros-args` section, built from whole flags and rules
/// with now and then a stray flag or argument.
fn ros_args() -> impl Strategy<Value = Vec<String>> {
    let chunk = prop_oneof![
        2 => Just(vec!["--ros-args".to_string()]),
        1 => Just(vec!["--".to_string()]),
        8 => rule().prop_map(|r| vec!["-p".to_string(), r]),
        2 => rule().prop_map(|r| vec!["--param".to_string(), r]),
        1 => Just(vec!["-p".to_string()]),
        1 => any::<String>().prop_map(|a| vec![a]),
    ];
    (
        prop::bool::weighted(0.8),
        prop::collection::vec(chunk, 0..6),
    )
        .prop_map(|(ros, chunks)| {
            let start = ros.then(|| "--ros-args".to_string());
            start
                .into_iter()
                .chain(chunks.into_iter().flatten())
                .collect()
        })
}

/// Compares two parameter values, NaN equal to NaN.
fn same_value(a: &ParameterValue, b: &ParameterValue) -> bool {
    format!("{a:?}") == format!("{b:?}")
}

fn check_parse_ros_args(args: &[String]) -> Result<(), TestCaseError> {
    match parse_ros_args(args, "fuzz") {
        Ok(overrides) => {
            prop_assert!(overrides.keys().all(|name| !name.is_empty()));
            Ok(())
        }
        Err(Error::InvalidArgument { argument, reason }) => {
            prop_assert!(!argument.is_empty());
            prop_assert!(argument.len() <= 19 + 200 + 3, "{} bytes", argument.len());
            prop_assert!(!reason.is_empty());
            Ok(())
        }
        Err(other) => Err(TestCaseError::fail(format!("untyped error {other:?}"))),
    }
}

#[test]
fn ros_args_parse() {
    fuzz("parse_ros_args", ros_args(), |args| {
        check_parse_ros_args(&args)
    });
}

/// `try_parse` and its lenient twin agree, and nothing they return is nested or mixed.
#[test]
fn parameter_values_parse() {
    fuzz("ParameterValue::try_parse", value_text(), |text| {
        let lenient = ParameterValue::parse(&text);
        match ParameterValue::try_parse(&text) {
            Ok(v) => prop_assert!(same_value(&v, &lenient)),
            Err(e) => {
                prop_assert!(!e.to_string().is_empty());
                prop_assert_eq!(lenient, ParameterValue::String(text.trim().to_string()));
            }
        }
        Ok(())
    });
}

/// The same vectors through `Context::from_args(..)` and node creation: the node is created
/// exactly when the arguments parse, and every override reaches its declaration.
#[test]
fn ros_args_create_node() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    fuzz("ros-args node creation", ros_args(), |args| {
        let parsed = parse_ros_args(&args, "fuzz");
        let context = match (&parsed, Context::from_args(args.clone())) {
            (Ok(_), Ok(context)) => context,
            (Err(Error::InvalidArgument { .. }), Err(Error::InvalidArgument { .. })) => {
                return Ok(())
            }
            (parsed, context) => {
                return Err(TestCaseError::fail(format!(
                    "parse_ros_args gave {parsed:?} but Context::from_args gave {:?}",
                    context.map(|_| ())
                )))
            }
        };
        let executor = context
            .create_executor(ExecutorOptions {
                runtime: RuntimeChoice::Adopt(runtime.handle().clone()),
                ..ExecutorOptions::default()
            })
            .unwrap();
        let created = executor.create_node(NodeOptions::new("fuzz").enable_rosout(false));
        match (&parsed, created) {
            (Ok(overrides), Ok(node)) => {
                for (name, value) in overrides {
                    if name == "use_sim_time" {
                        continue;
                    }
                    let dynamic = ParameterDescriptor {
                        dynamic_typing: true,
                        ..ParameterDescriptor::default()
                    };
                    let declared = node.declare_parameter_with(name, false, dynamic);
                    prop_assert!(
                        matches!(&declared, Ok(v) if same_value(v, value)),
                        "{} declared as {:?}",
                        name,
                        declared
                    );
                }
            }
            (Err(Error::InvalidArgument { .. }), Err(Error::InvalidArgument { .. })) => {}
            // `use_sim_time` is declared at creation, as a bool.
            (
                Ok(overrides),
                Err(Error::Parameter(ParameterError::InvalidOverride { name, .. })),
            ) => {
                prop_assert_eq!(name.as_str(), "use_sim_time");
                prop_assert!(!matches!(
                    overrides.get("use_sim_time"),
                    Some(ParameterValue::Bool(_)) | None
                ));
            }
            (parsed, created) => {
                return Err(TestCaseError::fail(format!(
                    "parse_ros_args gave {parsed:?} but create_node gave {:?}",
                    created.map(|_| ())
                )))
            }
        }
        Ok(())
    });
}

// ---------------------------------------------------------------------------------------------
// Parameters
// ---------------------------------------------------------------------------------------------

fn extreme_i64() -> impl Strategy<Value = i64> {
    prop_oneof![
        prop::sample::select(vec![
            i64::MIN,
            i64::MIN + 1,
            -1,
            0,
            1,
            i64::MAX - 1,
            i64::MAX
        ]),
        -20i64..20,
        any::<i64>(),
    ]
}

fn extreme_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        prop::sample::select(vec![
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MAX,
            -f64::MAX,
            f64::MIN_POSITIVE,
            0.0,
            -0.0,
            0.25,
            1.0
        ]),
        -20.0f64..20.0,
        any::<f64>(),
    ]
}

fn parameter_value() -> impl Strategy<Value = ParameterValue> {
    prop_oneof![
        1 => any::<bool>().prop_map(ParameterValue::Bool),
        4 => extreme_i64().prop_map(ParameterValue::Integer),
        4 => extreme_f64().prop_map(ParameterValue::Double),
        1 => text().prop_map(ParameterValue::String),
        1 => prop::collection::vec(any::<u8>(), 0..8).prop_map(ParameterValue::ByteArray),
        1 => prop::collection::vec(extreme_i64(), 0..4).prop_map(ParameterValue::IntegerArray),
        1 => prop::collection::vec(extreme_f64(), 0..4).prop_map(ParameterValue::DoubleArray),
    ]
}

fn descriptor() -> impl Strategy<Value = ParameterDescriptor> {
    let integer = (extreme_i64(), extreme_i64(), extreme_i64())
        .prop_map(|(from, to, step)| Range { from, to, step });
    let floating = (extreme_f64(), extreme_f64(), extreme_f64())
        .prop_map(|(from, to, step)| Range { from, to, step });
    (
        prop::option::of(integer),
        prop::option::of(floating),
        prop::bool::weighted(0.1),
        prop::bool::weighted(0.2),
    )
        .prop_map(
            |(integer_range, floating_point_range, read_only, dynamic_typing)| {
                ParameterDescriptor {
                    integer_range,
                    floating_point_range,
                    read_only,
                    dynamic_typing,
                    ..ParameterDescriptor::default()
                }
            },
        )
}

fn descriptor_usable(d: &ParameterDescriptor) -> bool {
    let integer = d
        .integer_range
        .is_none_or(|r| r.step >= 0 && r.from <= r.to);
    let floating = d
        .floating_point_range
        .is_none_or(|r| !(r.from.is_nan() || r.to.is_nan() || r.step.is_nan()) && r.from <= r.to);
    integer && floating
}

/// The integer rule, in i128: bounds, then the grid `from + k·step`.
fn integer_allowed(v: i64, r: &Range<i64>) -> bool {
    let (v, from, to, step) = (v as i128, r.from as i128, r.to as i128, r.step as i128);
    v == from || v == to || (from <= v && v <= to && (step == 0 || (v - from) % step == 0))
}

/// Whether the store's range verdict on `value` (`accepted` or refused as out of range) is the
/// model's: integers exactly; doubles accepted only within the bounds (their grid is left to
/// `range.rs`'s tests), refused only off the bounds.
fn check_range_verdict(
    value: &ParameterValue,
    descriptor: &ParameterDescriptor,
    accepted: bool,
) -> Result<(), TestCaseError> {
    match (
        value,
        &descriptor.integer_range,
        &descriptor.floating_point_range,
    ) {
        (ParameterValue::Integer(v), Some(r), _) => {
            prop_assert_eq!(integer_allowed(*v, r), accepted)
        }
        (ParameterValue::Double(v), _, Some(r)) if accepted => {
            prop_assert!(!v.is_nan());
            prop_assert!(*v >= r.from - 1e-9 * r.step.abs().max(1.0));
            prop_assert!(*v <= r.to + 1e-9 * r.step.abs().max(1.0));
        }
        (ParameterValue::Double(v), _, Some(r)) => prop_assert!(*v != r.from && *v != r.to),
        _ => prop_assert!(accepted, "out of range without a range"),
    }
    Ok(())
}

/// Declarations and changes on one node: typed errors only, and the model decides.
#[test]
fn parameters() {
    let (_runtime, executor) = executor_on_own_runtime();
    let node = executor
        .create_node(NodeOptions::new("params").enable_rosout(false))
        .unwrap();
    let next = AtomicUsize::new(0);
    let inputs = (
        descriptor(),
        parameter_value(),
        prop::collection::vec(parameter_value(), 1..5),
    );
    fuzz("parameters", inputs, |(descriptor, default, changes)| {
        let name = format!("p{}", next.fetch_add(1, Ordering::Relaxed));
        let declared = node.declare_parameter_with(&name, default.clone(), descriptor.clone());
        match declared {
            Ok(v) => {
                prop_assert!(descriptor_usable(&descriptor));
                prop_assert!(same_value(&v, &default));
                check_range_verdict(&default, &descriptor, true)?;
            }
            Err(Error::Parameter(ParameterError::InvalidDescriptor { .. })) => {
                prop_assert!(!descriptor_usable(&descriptor));
                return Ok(());
            }
            // A default is judged as a set of it would be (as rclcpp does).
            Err(Error::Parameter(ParameterError::OutOfRange { .. })) => {
                prop_assert!(descriptor_usable(&descriptor));
                check_range_verdict(&default, &descriptor, false)?;
                prop_assert!(node.get_parameter(&name).is_none());
                return Ok(());
            }
            Err(other) => return Err(TestCaseError::fail(format!("{other:?}"))),
        }
        let mut current = default;
        for value in changes {
            let result = node.set_parameter(&name, value.clone());
            let same_type = std::mem::discriminant(&value) == std::mem::discriminant(&current);
            match &result {
                Ok(()) => {
                    prop_assert!(!descriptor.read_only);
                    prop_assert!(same_type || descriptor.dynamic_typing);
                    check_range_verdict(&value, &descriptor, true)?;
                    current = value;
                }
                Err(Error::Parameter(ParameterError::ReadOnly(_))) => {
                    prop_assert!(descriptor.read_only)
                }
                Err(Error::Parameter(ParameterError::WrongType { .. })) => {
                    prop_assert!(!same_type && !descriptor.dynamic_typing)
                }
                Err(Error::Parameter(ParameterError::OutOfRange { .. })) => {
                    check_range_verdict(&value, &descriptor, false)?
                }
                Err(other) => return Err(TestCaseError::fail(format!("{other:?}"))),
            }
            let now = node.get_parameter(&name).unwrap();
            prop_assert!(same_value(&now, &current), "{:?} after {:?}", now, result);
        }
        Ok(())
    });
}

// ---------------------------------------------------------------------------------------------
// Regressions: crashers found, each a named test
// ---------------------------------------------------------------------------------------------

mod regressions {
    use super::*;

    /// Defect 9: a 30,000-deep `-p x:=[[[…]]]` overflowed the stack of `ParameterValue::parse`
    /// and aborted the process at node creation.
    #[test]
    fn deeply_nested_parameter_value_fails_node_creation() {
        let depth = 30_000;
        let rule = format!("x:={}1{}", "[".repeat(depth), "]".repeat(depth));
        match Context::from_args(["prog", "--ros-args", "-p", &rule]) {
            Err(Error::InvalidArgument { argument, reason }) => {
                assert!(argument.starts_with("-p x:=[[["), "{argument}");
                assert!(reason.contains("recursion limit"), "{reason}");
            }
            Err(other) => panic!("unexpected error {other}"),
            Ok(_) => panic!("a context made from a nested parameter value"),
        }
    }

    /// Defect 9, the other half: long values parse in one pass. A quadratic parser would
    /// take hours on these.
    #[test]
    fn long_parameter_values_parse_in_linear_time() {
        let start = std::time::Instant::now();
        let n = 1 << 20;
        let flat = format!("[{}1]", "1,".repeat(n));
        assert!(matches!(
            ParameterValue::try_parse(&flat),
            Ok(ParameterValue::IntegerArray(v)) if v.len() == n + 1
        ));
        let deep = format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(ParameterValue::try_parse(&deep).is_err());
        let unclosed = format!("['{}]", "a,".repeat(n));
        assert!(ParameterValue::try_parse(&unclosed).is_err());
        let args: Vec<String> = (0..n / 16)
            .flat_map(|i| ["-p".to_string(), format!("p{i}:=[{i}, {i}]")])
            .chain(std::iter::once("--ros-args".into()))
            .collect();
        assert!(parse_ros_args(&args, "n").unwrap().is_empty());
        let mut args = args;
        args.rotate_right(1);
        assert_eq!(parse_ros_args(&args, "n").unwrap().len(), n / 16);
        assert!(start.elapsed() < std::time::Duration::from_secs(20));
    }

    /// Defect 10: `(v - from) % step` overflowed for `from = i64::MIN` and panicked.
    #[test]
    fn integer_range_over_all_of_i64() {
        let p = rclev::parameter::Parameters::default();
        let all = ParameterDescriptor::default().integer_range(i64::MIN, i64::MAX, 2);
        p.declare("n", 0, all).unwrap();
        assert!(p.set("n", 0).is_ok());
        assert!(p.set("n", i64::MAX).is_ok());
        assert!(matches!(
            p.set("n", 1),
            Err(ParameterError::OutOfRange { .. })
        ));
        let negative = ParameterDescriptor::default().integer_range(i64::MIN, i64::MAX, -1);
        assert!(matches!(
            p.declare("m", 0, negative),
            Err(ParameterError::InvalidDescriptor { .. })
        ));
    }

    /// Defect 10 through an override: the range check ran at node creation.
    #[test]
    fn extreme_range_override_at_declaration() {
        let executor = Context::from_args(["prog", "--ros-args", "-p", "n:=0"])
            .unwrap()
            .create_executor(ExecutorOptions {
                runtime: RuntimeChoice::ThreadPerWorker,
                ..ExecutorOptions::default()
            })
            .unwrap();
        let node = executor.create_node("n").unwrap();
        let all = ParameterDescriptor::default().integer_range(i64::MIN, i64::MAX, 3);
        assert!(matches!(
            node.declare_parameter_with("n", 1, all),
            Err(Error::Parameter(ParameterError::InvalidOverride { .. }))
        ));
    }

    /// Defect 17: an encapsulation of `04 01` was read as CDR_LE.
    #[test]
    fn malformed_encapsulation_is_refused() {
        let mut bytes = to_cdr(&Int64 { data: 7 }).unwrap();
        for first in [0x04, 0x0d, 0x80] {
            bytes[0] = first;
            assert!(matches!(
                from_cdr::<Int64>(&bytes),
                Err(Error::Serialization(CdrError::Encapsulation { detail }))
                    if detail.contains(&format!("{first:02x} 01"))
            ));
        }
    }

    /// A short input claiming a 4 GiB string or sequence allocates nothing for the claim.
    #[test]
    fn huge_length_prefix_allocates_nothing_for_it() {
        for header in [[0u8, 1, 0, 0], [0, 0, 0, 0]] {
            let input = [&header[..], &[0xff, 0xff, 0xff, 0xff], &[0; 8]].concat();
            let (r, peak) = measure(|| from_cdr::<StringMsg>(&input));
            assert!(matches!(r, Err(Error::Serialization(_))));
            assert!(peak <= ALLOC_SLACK, "{peak} bytes");
            let (r, peak) = measure(|| from_cdr::<GoalStatusArray>(&input));
            assert!(matches!(r, Err(Error::Serialization(_))));
            assert!(peak <= ALLOC_SLACK, "{peak} bytes");
            let (r, peak) = measure(|| from_cdr::<FibonacciResult>(&input));
            assert!(matches!(r, Err(Error::Serialization(_))));
            assert!(peak <= ALLOC_SLACK, "{peak} bytes");
        }
    }
}
