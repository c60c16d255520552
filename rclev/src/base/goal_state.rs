//! The goal state machine (rcl_action's), as plain data: a leaf module that imports nothing
//! from the crate, so that `Error` (layer 0) can name goal states.

/// A goal's state (`action_msgs/msg/GoalStatus` values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i8)]
pub enum GoalState {
    /// Not known to the server (never sent, rejected, or expired).
    Unknown = 0,
    /// Accepted, not executing yet.
    Accepted = 1,
    /// Executing.
    Executing = 2,
    /// A cancel request was accepted; the goal is winding down.
    Canceling = 3,
    /// Finished successfully.
    Succeeded = 4,
    /// Finished after being canceled.
    Canceled = 5,
    /// Finished unsuccessfully.
    Aborted = 6,
}

impl GoalState {
    /// From the wire value (unknown values map to `Unknown`).
    pub fn from_i8(v: i8) -> Self {
        match v {
            1 => Self::Accepted,
            2 => Self::Executing,
            3 => Self::Canceling,
            4 => Self::Succeeded,
            5 => Self::Canceled,
            6 => Self::Aborted,
            _ => Self::Unknown,
        }
    }

    /// Whether the goal has finished.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Succeeded | Self::Canceled | Self::Aborted)
    }

    /// The state after `event`, following rcl_action's goal state machine, or `None` if the
    /// transition is not allowed.
    pub fn after(self, event: GoalEvent) -> Option<Self> {
        use GoalEvent::*;
        use GoalState::*;
        match (self, event) {
            (Accepted, Execute) => Some(Executing),
            (Accepted | Executing, CancelGoal) => Some(Canceling),
            (Executing | Canceling, Succeed) => Some(Succeeded),
            (Executing | Canceling, Abort) => Some(Aborted),
            (Canceling, GoalEvent::Canceled) => Some(GoalState::Canceled),
            _ => None,
        }
    }
}

/// What happens to a goal (rcl_action's goal events).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GoalEvent {
    /// Start executing.
    Execute,
    /// A cancel request was accepted.
    CancelGoal,
    /// Finished successfully.
    Succeed,
    /// Finished unsuccessfully.
    Abort,
    /// Finished after cancellation.
    Canceled,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_machine_matches_rcl_action() {
        use GoalEvent::*;
        use GoalState::*;
        assert_eq!(Accepted.after(Execute), Some(Executing));
        assert_eq!(Accepted.after(CancelGoal), Some(Canceling));
        assert_eq!(Executing.after(Succeed), Some(Succeeded));
        assert_eq!(Executing.after(Abort), Some(Aborted));
        assert_eq!(
            Canceling.after(GoalEvent::Canceled),
            Some(GoalState::Canceled)
        );
        assert_eq!(Canceling.after(Succeed), Some(Succeeded));
        for bad in [
            (Accepted, Succeed),
            (Executing, Execute),
            (Executing, GoalEvent::Canceled),
            (Succeeded, Abort),
            (Aborted, CancelGoal),
        ] {
            assert_eq!(bad.0.after(bad.1), None, "{bad:?} allowed");
        }
        for s in [
            Unknown,
            Accepted,
            Executing,
            Canceling,
            Succeeded,
            GoalState::Canceled,
            Aborted,
        ] {
            assert_eq!(GoalState::from_i8(s as i8), s);
        }
    }
}
