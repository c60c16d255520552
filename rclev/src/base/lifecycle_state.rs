//! The standard lifecycle state machine (rcl_lifecycle's `default_state_machine.c`) as plain
//! data: its 11 states, its 25 transitions, and the lookups the node makes in them. A leaf
//! module that imports nothing from the crate, so that `Error` (layer 0) can name states.
//!
//! Ids, labels and the order of every list are rcl's: the states in the order rcl registers
//! them (what `~/get_available_states` answers), the transitions in the order rcl registers
//! them (`~/get_transition_graph`), and a state's transitions in that same order
//! (`~/get_available_transitions`).

use std::fmt;

/// A lifecycle state: one of the four primary states a managed node rests in (plus `Unknown`,
/// which rcl lists but never enters), or one of the six transition states it passes through
/// while a transition's callback runs.
///
/// ```
/// use rclev::lifecycle::State;
/// assert_eq!(State::Inactive.id(), 2);
/// assert_eq!(State::ErrorProcessing.label(), "errorprocessing");
/// assert_eq!(State::from_id(13), Some(State::Activating));
/// assert!(State::Active.is_primary() && !State::Configuring.is_primary());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum State {
    /// `unknown` (0): listed by rcl, never entered.
    Unknown = 0,
    /// `unconfigured` (1): where a managed node starts, and where cleanup and error recovery end.
    Unconfigured = 1,
    /// `inactive` (2): configured, not processing; managed entities are off.
    Inactive = 2,
    /// `active` (3): processing; managed publishers publish and managed timers tick.
    Active = 3,
    /// `finalized` (4): shut down; no transition leaves it.
    Finalized = 4,
    /// `configuring` (10): `on_configure` runs.
    Configuring = 10,
    /// `cleaningup` (11): `on_cleanup` runs.
    CleaningUp = 11,
    /// `shuttingdown` (12): `on_shutdown` runs.
    ShuttingDown = 12,
    /// `activating` (13): `on_activate` runs.
    Activating = 13,
    /// `deactivating` (14): `on_deactivate` runs.
    Deactivating = 14,
    /// `errorprocessing` (15): `on_error` runs, after a callback reported an error.
    ErrorProcessing = 15,
}

impl State {
    /// Every state, in rcl's order (what `~/get_available_states` lists).
    pub const ALL: [State; 11] = [
        State::Unknown,
        State::Unconfigured,
        State::Inactive,
        State::Active,
        State::Finalized,
        State::Configuring,
        State::CleaningUp,
        State::ShuttingDown,
        State::Activating,
        State::Deactivating,
        State::ErrorProcessing,
    ];

    /// The id (`lifecycle_msgs/msg/State` constants).
    pub const fn id(self) -> u8 {
        self as u8
    }

    /// rcl's label (`"unconfigured"`, `"cleaningup"`…).
    pub const fn label(self) -> &'static str {
        match self {
            State::Unknown => "unknown",
            State::Unconfigured => "unconfigured",
            State::Inactive => "inactive",
            State::Active => "active",
            State::Finalized => "finalized",
            State::Configuring => "configuring",
            State::CleaningUp => "cleaningup",
            State::ShuttingDown => "shuttingdown",
            State::Activating => "activating",
            State::Deactivating => "deactivating",
            State::ErrorProcessing => "errorprocessing",
        }
    }

    /// The state with this id, if there is one.
    pub fn from_id(id: u8) -> Option<State> {
        State::ALL.into_iter().find(|s| s.id() == id)
    }

    /// Whether this is a primary state (a node rests there between transitions).
    pub const fn is_primary(self) -> bool {
        (self as u8) < 10
    }

    /// The transitions that start here, in rcl's order (`~/get_available_transitions`): none
    /// from `finalized` and `unknown`; a transition state's are the three its callback's
    /// result chooses from.
    pub fn transitions(self) -> impl Iterator<Item = &'static Transition> {
        TRANSITIONS.iter().filter(move |t| t.start == self)
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// What a transition callback decided (rclcpp's `CallbackReturn`, rclpy's
/// `TransitionCallbackReturn`): it picks which of the transition state's three transitions is
/// taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CallbackReturn {
    /// On to the transition's goal (`transition_success`).
    Success,
    /// Back to the state the transition started from (`transition_failure`); from
    /// `shuttingdown` and `errorprocessing`, on to `finalized`.
    Failure,
    /// To `errorprocessing`, where `on_error` decides (`transition_error`); from
    /// `errorprocessing` itself, on to `finalized`.
    Error,
}

impl CallbackReturn {
    /// The label of the transition this result takes (`transition_success`, …).
    pub const fn label(self) -> &'static str {
        match self {
            CallbackReturn::Success => TRANSITION_SUCCESS,
            CallbackReturn::Failure => TRANSITION_FAILURE,
            CallbackReturn::Error => TRANSITION_ERROR,
        }
    }
}

/// The label of every callback-result transition taken on success.
pub const TRANSITION_SUCCESS: &str = "transition_success";
/// The label of every callback-result transition taken on failure.
pub const TRANSITION_FAILURE: &str = "transition_failure";
/// The label of every callback-result transition taken on error.
pub const TRANSITION_ERROR: &str = "transition_error";

/// A transition of the state machine's graph: id and label as rcl has them, and the states it
/// goes from and to.
///
/// ```
/// use rclev::lifecycle::{State, Transition};
/// assert_eq!(Transition::graph().len(), 25);
/// let from_inactive: Vec<_> = State::Inactive.transitions().map(|t| (t.id, t.label)).collect();
/// assert_eq!(from_inactive, [(2, "cleanup"), (3, "activate"), (6, "shutdown")]);
/// assert_eq!(Transition::CONFIGURE.goal, State::Configuring);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Transition {
    /// The id (`lifecycle_msgs/msg/Transition` constants).
    pub id: u8,
    /// rcl's label: `configure`, `cleanup`, `activate`, `deactivate`, `shutdown`, or
    /// `transition_success|failure|error` for a callback's result.
    pub label: &'static str,
    /// Where it starts.
    pub start: State,
    /// Where it goes.
    pub goal: State,
}

const fn t(id: u8, label: &'static str, start: State, goal: State) -> Transition {
    Transition {
        id,
        label,
        start,
        goal,
    }
}

use State::{
    Activating, Active, CleaningUp, Configuring, Deactivating, ErrorProcessing, Finalized,
    Inactive, ShuttingDown, Unconfigured,
};

/// rcl's default graph, in the order rcl registers it.
const TRANSITIONS: [Transition; 25] = [
    t(1, "configure", Unconfigured, Configuring),
    t(10, TRANSITION_SUCCESS, Configuring, Inactive),
    t(11, TRANSITION_FAILURE, Configuring, Unconfigured),
    t(12, TRANSITION_ERROR, Configuring, ErrorProcessing),
    t(2, "cleanup", Inactive, CleaningUp),
    t(20, TRANSITION_SUCCESS, CleaningUp, Unconfigured),
    t(21, TRANSITION_FAILURE, CleaningUp, Inactive),
    t(22, TRANSITION_ERROR, CleaningUp, ErrorProcessing),
    t(3, "activate", Inactive, Activating),
    t(30, TRANSITION_SUCCESS, Activating, Active),
    t(31, TRANSITION_FAILURE, Activating, Inactive),
    t(32, TRANSITION_ERROR, Activating, ErrorProcessing),
    t(4, "deactivate", Active, Deactivating),
    t(40, TRANSITION_SUCCESS, Deactivating, Inactive),
    t(41, TRANSITION_FAILURE, Deactivating, Active),
    t(42, TRANSITION_ERROR, Deactivating, ErrorProcessing),
    t(5, "shutdown", Unconfigured, ShuttingDown),
    t(6, "shutdown", Inactive, ShuttingDown),
    t(7, "shutdown", Active, ShuttingDown),
    t(50, TRANSITION_SUCCESS, ShuttingDown, Finalized),
    t(51, TRANSITION_FAILURE, ShuttingDown, Finalized),
    t(52, TRANSITION_ERROR, ShuttingDown, ErrorProcessing),
    t(60, TRANSITION_SUCCESS, ErrorProcessing, Unconfigured),
    t(61, TRANSITION_FAILURE, ErrorProcessing, Finalized),
    t(62, TRANSITION_ERROR, ErrorProcessing, Finalized),
];

impl Transition {
    /// `configure` (1): unconfigured → configuring.
    pub const CONFIGURE: Transition = TRANSITIONS[0];
    /// `cleanup` (2): inactive → cleaningup.
    pub const CLEANUP: Transition = TRANSITIONS[4];
    /// `activate` (3): inactive → activating.
    pub const ACTIVATE: Transition = TRANSITIONS[8];
    /// `deactivate` (4): active → deactivating.
    pub const DEACTIVATE: Transition = TRANSITIONS[12];
    /// `shutdown` (5): unconfigured → shuttingdown.
    pub const UNCONFIGURED_SHUTDOWN: Transition = TRANSITIONS[16];
    /// `shutdown` (6): inactive → shuttingdown.
    pub const INACTIVE_SHUTDOWN: Transition = TRANSITIONS[17];
    /// `shutdown` (7): active → shuttingdown.
    pub const ACTIVE_SHUTDOWN: Transition = TRANSITIONS[18];

    /// The whole graph, in rcl's order (what `~/get_transition_graph` lists): 25 transitions.
    pub fn graph() -> &'static [Transition] {
        &TRANSITIONS
    }
}

/// A transition as asked for: by id, or by label (`ros2 lifecycle set`'s `configure`). A
/// label names the transition of that label from the node's current state, so `shutdown`
/// is 5, 6 or 7 depending on where the node is.
///
/// ```
/// use rclev::lifecycle::{Transition, TransitionRequest};
/// assert_eq!(TransitionRequest::from("activate"), TransitionRequest::Label("activate".into()));
/// assert_eq!(TransitionRequest::from(3u8), TransitionRequest::Id(3));
/// assert_eq!(TransitionRequest::from(Transition::ACTIVATE), TransitionRequest::Id(3));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TransitionRequest {
    /// The transition with this id, which must start at the current state.
    Id(u8),
    /// The transition with this label from the current state.
    Label(String),
}

impl TransitionRequest {
    /// As `~/change_state` reads its request (rclcpp and rclpy alike): a non-empty label wins
    /// over the id, which is then ignored (`ros2 service call` leaves the id 0).
    pub fn from_id_and_label(id: u8, label: &str) -> Self {
        if label.is_empty() {
            TransitionRequest::Id(id)
        } else {
            TransitionRequest::Label(label.to_string())
        }
    }

    /// The transition this names from `state`, if it starts there.
    pub fn resolve(&self, state: State) -> Option<&'static Transition> {
        let mut from = state.transitions();
        match self {
            TransitionRequest::Id(id) => from.find(|t| t.id == *id),
            TransitionRequest::Label(label) => from.find(|t| t.label == label),
        }
    }
}

impl From<u8> for TransitionRequest {
    fn from(id: u8) -> Self {
        TransitionRequest::Id(id)
    }
}

impl From<&str> for TransitionRequest {
    fn from(label: &str) -> Self {
        TransitionRequest::Label(label.to_string())
    }
}

impl From<String> for TransitionRequest {
    fn from(label: String) -> Self {
        TransitionRequest::Label(label)
    }
}

impl From<Transition> for TransitionRequest {
    fn from(t: Transition) -> Self {
        TransitionRequest::Id(t.id)
    }
}

impl From<&Transition> for TransitionRequest {
    fn from(t: &Transition) -> Self {
        TransitionRequest::Id(t.id)
    }
}

impl fmt::Display for TransitionRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransitionRequest::Id(id) => write!(f, "{id}"),
            TransitionRequest::Label(label) => write!(f, "{label:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_graph_is_rcls() {
        assert_eq!(State::ALL.len(), 11);
        assert_eq!(Transition::graph().len(), 25);
        // Every transition state has exactly success, failure and error; every primary state
        // but finalized and unknown has shutdown.
        for s in State::ALL {
            let labels: Vec<_> = s.transitions().map(|t| t.label).collect();
            if !s.is_primary() {
                assert_eq!(
                    labels,
                    [TRANSITION_SUCCESS, TRANSITION_FAILURE, TRANSITION_ERROR],
                    "{s}"
                );
            } else if matches!(s, State::Unknown | State::Finalized) {
                assert!(labels.is_empty(), "{s}");
            } else {
                assert_eq!(labels.last(), Some(&"shutdown"), "{s}");
            }
        }
        let ids: std::collections::BTreeSet<u8> =
            Transition::graph().iter().map(|t| t.id).collect();
        assert_eq!(ids.len(), 25, "ids are unique");
    }

    #[test]
    fn requests_resolve_from_the_current_state() {
        let shutdown = TransitionRequest::from("shutdown");
        assert_eq!(shutdown.resolve(State::Unconfigured).unwrap().id, 5);
        assert_eq!(shutdown.resolve(State::Inactive).unwrap().id, 6);
        assert_eq!(shutdown.resolve(State::Active).unwrap().id, 7);
        assert!(shutdown.resolve(State::Finalized).is_none());
        assert!(TransitionRequest::Id(3)
            .resolve(State::Unconfigured)
            .is_none());
        assert_eq!(
            TransitionRequest::from_id_and_label(0, "configure"),
            TransitionRequest::Label("configure".into())
        );
        assert_eq!(
            TransitionRequest::from_id_and_label(1, ""),
            TransitionRequest::Id(1)
        );
    }
}
