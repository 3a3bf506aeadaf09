//! Whether this replica may still act: the deadline that leader election sets and every
//! action checks.
//!
//! Stopping the controllers when a renewal fails is not enough: a reconcile already past its
//! decision would go on writing to Kubernetes and calling Flink while another replica takes
//! the lease. So each action, status write and Event checks the fence at the moment it is
//! sent: past the renew deadline of the last renewal that succeeded, nothing is sent. The
//! deadline is on the monotonic clock, so it holds however late the elector itself runs.

use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

/// Until when this replica may act; cloned into everything that acts.
#[derive(Clone, Debug)]
pub struct Fence {
    state: Arc<Mutex<State>>,
}

#[derive(Clone, Copy, Debug)]
enum State {
    /// No leader election: the only replica always acts.
    Open,
    /// Leading until the instant (renewal sent + renew deadline); `None`: not leading.
    Until(Option<Instant>),
}

/// Why an action was not sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Fenced {
    /// This replica does not hold the lease.
    #[error("this replica does not lead (leader election): nothing is sent")]
    NotLeading,
    /// The lease was not renewed in time: another replica may take it soon.
    #[error(
        "the leader-election Lease was not renewed within the renew deadline ({ago:?} ago): nothing is sent"
    )]
    Expired {
        /// How long ago the deadline passed.
        ago: Duration,
    },
}

impl Fence {
    /// A fence that never closes, for an operator without leader election.
    pub fn open() -> Self {
        Self {
            state: Arc::new(Mutex::new(State::Open)),
        }
    }

    /// A fence that opens only while a lease is held ([`Fence::hold_until`]).
    pub fn closed() -> Self {
        Self {
            state: Arc::new(Mutex::new(State::Until(None))),
        }
    }

    /// The lease is held until `deadline` (a renewal succeeded).
    pub fn hold_until(&self, deadline: Instant) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if let State::Until(until) = &mut *state {
            *until = Some(until.map_or(deadline, |known| known.max(deadline)));
        }
    }

    /// The lease is no longer held (stepped down or released).
    pub fn close(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if let State::Until(until) = &mut *state {
            *until = None;
        }
    }

    /// Whether an action may be sent now.
    pub fn check(&self) -> Result<(), Fenced> {
        self.check_at(Instant::now())
    }

    /// Whether an action may be sent at `now`.
    pub fn check_at(&self, now: Instant) -> Result<(), Fenced> {
        let state = *self.state.lock().unwrap_or_else(|e| e.into_inner());
        match state {
            State::Open => Ok(()),
            State::Until(None) => Err(Fenced::NotLeading),
            State::Until(Some(deadline)) if now < deadline => Ok(()),
            State::Until(Some(deadline)) => Err(Fenced::Expired {
                ago: now.duration_since(deadline),
            }),
        }
    }

    /// How long this replica may still act (`None`: without leader election, forever).
    pub fn remaining(&self) -> Option<Duration> {
        let state = *self.state.lock().unwrap_or_else(|e| e.into_inner());
        match state {
            State::Open => None,
            State::Until(None) => Some(Duration::ZERO),
            State::Until(Some(deadline)) => Some(deadline.saturating_duration_since(Instant::now())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_fences_never_close() {
        let fence = Fence::open();
        fence.close();
        assert_eq!(fence.check(), Ok(()));
        assert_eq!(fence.remaining(), None);
    }

    #[test]
    fn a_held_lease_lets_actions_through_until_its_deadline_only() {
        let fence = Fence::closed();
        let now = Instant::now();
        assert_eq!(fence.check_at(now), Err(Fenced::NotLeading));
        fence.hold_until(now + Duration::from_secs(10));
        assert_eq!(fence.check_at(now + Duration::from_secs(9)), Ok(()));
        assert_eq!(
            fence.check_at(now + Duration::from_secs(11)),
            Err(Fenced::Expired {
                ago: Duration::from_secs(1)
            })
        );
        // A late answer to an older renewal does not shorten the deadline.
        fence.hold_until(now + Duration::from_secs(5));
        assert_eq!(fence.check_at(now + Duration::from_secs(9)), Ok(()));
        fence.close();
        assert_eq!(fence.check_at(now), Err(Fenced::NotLeading));
        // Clones share the deadline: the elector's renewal opens the controllers' fence.
        let clone = fence.clone();
        fence.hold_until(now + Duration::from_secs(1));
        assert_eq!(clone.check_at(now), Ok(()));
    }
}
