//! What a replica does next about the Lease, as a pure function of what it saw and when.
//!
//! Every time here is on the replica's own monotonic clock; the times written in the Lease
//! (`renewTime`, `acquireTime`) are only compared for a change, never against our clock, so
//! clock skew between replicas cannot make a replica take a lease that is still held.
//!
//! The guarantee that no two replicas act at once rests on two rules:
//! - a leader stops acting once `renew_deadline` has passed since it *sent* its last
//!   renewal that succeeded;
//! - another replica takes the lease only after it has seen no change to it for
//!   `lease_duration`, counted from when it *saw* the last change, which is after that
//!   renewal was written.
//!
//! So the leader stops at least `lease_duration - renew_deadline` before anyone else can
//! start, whatever the replicas' wall clocks say; only a difference in the clocks' rates
//! (not in their readings) could eat into that margin.

use std::time::{Duration, Instant};

/// The parts of a Lease that say who holds it and whether it moved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// `spec.holderIdentity`; `None` (or empty) when nobody holds it.
    pub holder: Option<String>,
    /// `spec.leaseDurationSeconds`, as the holder promised it.
    pub lease_duration: Option<Duration>,
    /// `spec.renewTime`, as written: only compared for a change.
    pub renew_time: Option<String>,
    /// `spec.acquireTime`, as written.
    pub acquire_time: Option<String>,
    /// `spec.leaseTransitions`.
    pub transitions: i32,
}

impl Record {
    /// The holder, when there is one.
    pub fn holder(&self) -> Option<&str> {
        self.holder.as_deref().filter(|h| !h.is_empty())
    }
}

/// The three durations of an election.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    /// How long others wait on an unchanged lease before taking it.
    pub lease_duration: Duration,
    /// How long a leader acts without a renewal that succeeded.
    pub renew_deadline: Duration,
    /// How often the leader renews, and the least time between two attempts.
    pub retry_period: Duration,
}

/// Why three durations cannot make a safe election.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimingError {
    /// The leader must stop before the others may start.
    #[error(
        "the renew deadline ({renew_deadline:?}) must be shorter than the lease duration ({lease_duration:?}): \
         the difference is the margin that keeps two replicas from acting at once"
    )]
    DeadlineNotBelowDuration {
        /// The renew deadline.
        renew_deadline: Duration,
        /// The lease duration.
        lease_duration: Duration,
    },
    /// The leader must get more than one try before its deadline.
    #[error(
        "the retry period ({retry_period:?}) must be shorter than the renew deadline ({renew_deadline:?}): \
         a leader must be able to try again before it has to stop"
    )]
    RetryNotBelowDeadline {
        /// The retry period.
        retry_period: Duration,
        /// The renew deadline.
        renew_deadline: Duration,
    },
    /// A zero duration.
    #[error("the retry period must be longer than zero")]
    ZeroRetry,
}

impl Timing {
    /// The timing, if it keeps two leaders apart.
    pub fn new(
        lease_duration: Duration,
        renew_deadline: Duration,
        retry_period: Duration,
    ) -> Result<Self, TimingError> {
        if retry_period.is_zero() {
            return Err(TimingError::ZeroRetry);
        }
        if renew_deadline >= lease_duration {
            return Err(TimingError::DeadlineNotBelowDuration {
                renew_deadline,
                lease_duration,
            });
        }
        if retry_period >= renew_deadline {
            return Err(TimingError::RetryNotBelowDeadline {
                retry_period,
                renew_deadline,
            });
        }
        Ok(Self {
            lease_duration,
            renew_deadline,
            retry_period,
        })
    }
}

/// What this replica remembers between looks.
#[derive(Clone, Debug)]
pub struct Memory {
    /// The record last seen, and when it was first seen in that form.
    seen: Option<(Record, Instant)>,
    /// When the last renewal (or acquisition) that succeeded was sent; `Some` while leading.
    renewed_at: Option<Instant>,
    /// When the last write to the lease was sent, whatever came of it.
    attempted_at: Option<Instant>,
}

impl Memory {
    /// Nothing seen yet.
    pub fn new() -> Self {
        Self {
            seen: None,
            renewed_at: None,
            attempted_at: None,
        }
    }

    /// Records a look at the lease at `now`; a record unlike the last one restarts its wait.
    pub fn saw(&mut self, record: Option<&Record>, now: Instant) {
        match (record, &self.seen) {
            (Some(record), Some((last, _))) if last == record => {}
            (Some(record), _) => self.seen = Some((record.clone(), now)),
            (None, _) => self.seen = None,
        }
    }

    /// A write to the lease was sent at `sent`.
    pub fn attempted(&mut self, sent: Instant) {
        self.attempted_at = Some(sent);
    }

    /// The write sent at `sent` took or renewed the lease: this replica leads.
    pub fn renewed(&mut self, sent: Instant) {
        self.renewed_at = Some(sent);
    }

    /// This replica no longer leads.
    pub fn stepped_down(&mut self) {
        self.renewed_at = None;
    }

    /// Whether this replica leads, as far as it knows.
    pub fn leading(&self) -> bool {
        self.renewed_at.is_some()
    }
}

impl Default for Memory {
    fn default() -> Self {
        Self::new()
    }
}

/// The next step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// There is no lease: create it, held by this replica.
    Create,
    /// The lease is free, ours, or its holder let it lapse: take it (a write conditional
    /// on the version seen).
    Take,
    /// We lead and a renewal is due.
    Renew,
    /// Nothing to do before `until`, or before the lease changes.
    Wait {
        /// When to decide again at the latest.
        until: Instant,
    },
    /// We lead but can no longer prove it: stop acting now.
    StepDown,
}

/// What to do at `now`, knowing `memory`, having seen `lease` (`None`: there is none).
pub fn decide(memory: &Memory, lease: Option<&Record>, me: &str, now: Instant, timing: &Timing) -> Decision {
    let next_try = memory.attempted_at.map(|at| at + timing.retry_period);
    if let Some(renewed_at) = memory.renewed_at {
        let deadline = renewed_at + timing.renew_deadline;
        if now >= deadline {
            return Decision::StepDown;
        }
        // Taken by someone else or deleted: whatever happened, we are not the holder.
        if lease.and_then(Record::holder) != Some(me) {
            return Decision::StepDown;
        }
        let due = (renewed_at + timing.retry_period).max(next_try.unwrap_or(renewed_at));
        return if now >= due {
            Decision::Renew
        } else {
            Decision::Wait {
                until: due.min(deadline),
            }
        };
    }
    // Not leading: never write more often than once a retry period.
    if let Some(next_try) = next_try
        && now < next_try
    {
        return Decision::Wait { until: next_try };
    }
    let Some(record) = lease else {
        return Decision::Create;
    };
    match record.holder() {
        None => Decision::Take,
        // Ours (a write of ours that was applied though its answer was lost): take it back.
        Some(holder) if holder == me => Decision::Take,
        Some(_) => {
            let since = match &memory.seen {
                Some((seen, since)) if seen == record => *since,
                // Not yet recorded as seen: it starts its wait now.
                _ => now,
            };
            let expires = since + record.lease_duration.unwrap_or(timing.lease_duration);
            if now >= expires {
                Decision::Take
            } else {
                Decision::Wait { until: expires }
            }
        }
    }
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
