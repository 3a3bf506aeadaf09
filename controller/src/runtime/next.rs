//! The delay the [`Next`] a plan asks for becomes under the operator's settings.

use std::time::Duration;

use crate::plan::Next;

/// While a job stops with a savepoint for an upgrade it processes nothing: every moment
/// until the savepoint is seen complete is downtime, so it is polled far more often than
/// other work in progress: every quarter of the time it has taken so far, between 50 ms and
/// 250 ms. A small job's stop completes within a few hundred milliseconds and is seen soon
/// after; a long one costs four calls a second, and only while a change is under way.
pub fn stopping_poll(for_ms: u64) -> Duration {
    Duration::from_millis((for_ms / 4).clamp(50, 250))
}

/// A snapshot under way (or a job starting) is polled every quarter of the time it has taken
/// so far, between 1 s and `kubernetes.operator.observer.progress-check.interval`: a small
/// job's savepoint, done within a second or two, is seen complete about a second later, while
/// one that takes minutes costs no more than any other work in progress.
pub fn awaiting_poll(for_ms: u64, progress: Duration) -> Duration {
    Duration::from_millis(for_ms / 4).clamp(Duration::from_secs(1), progress.max(Duration::from_secs(1)))
}

/// After a pass that took a step (wrote a status before acting, or acted), the next step may
/// be ready at once; our own status write no longer triggers a reconcile, so it is looked
/// for after this delay. Short, yet long enough for the watch to bring the write into the
/// cache (a write from a stale read would fail its resourceVersion precondition anyway).
pub const AFTER_A_STEP: Duration = Duration::from_secs(1);

/// The delay before the next look at a resource, `None` for none: an idle resource is not
/// looked at again unless it changes, except just after a step (which may have more to do).
pub fn next_look(next: Next, stepped: bool, policy: &crate::policy::Policy) -> Option<Duration> {
    (next != Next::Idle || stepped).then(|| requeue_after(next, stepped, policy))
}

/// The delay before the next look at a resource (an idle one: the steady interval).
pub fn requeue_after(next: Next, stepped: bool, policy: &crate::policy::Policy) -> Duration {
    let ms = |ms: i64| Duration::from_millis(u64::try_from(ms).unwrap_or(1000));
    let steady = ms(policy.reconcile_interval_ms);
    let wanted = match next {
        Next::Progress => ms(policy.progress_check_ms).min(steady),
        Next::Steady | Next::Idle => steady,
        Next::Within(seconds) => Duration::from_secs(seconds.max(1)).min(steady),
        Next::Stopping { for_ms } => stopping_poll(for_ms).min(steady),
        Next::Awaiting { for_ms } => awaiting_poll(for_ms, ms(policy.progress_check_ms)).min(steady),
    };
    if stepped { wanted.min(AFTER_A_STEP) } else { wanted }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stopping_job_is_polled_every_quarter_of_its_stop_so_far_between_50_and_250_ms() {
        for (for_ms, poll_ms) in [
            (0, 50),
            (100, 50),
            (400, 100),
            (800, 200),
            (1_000, 250),
            (60_000, 250),
        ] {
            assert_eq!(stopping_poll(for_ms), Duration::from_millis(poll_ms), "{for_ms}");
        }
        // Never later than the steady interval.
        let policy = crate::policy::Policy {
            reconcile_interval_ms: 100,
            ..Default::default()
        };
        assert_eq!(
            requeue_after(Next::Stopping { for_ms: 60_000 }, false, &policy),
            Duration::from_millis(100)
        );
    }

    #[test]
    fn a_snapshot_under_way_is_polled_every_quarter_of_its_time_so_far_between_1_s_and_the_progress_interval()
    {
        let progress = Duration::from_secs(10);
        for (for_ms, poll_ms) in [
            (0, 1_000),
            (2_000, 1_000),
            (8_000, 2_000),
            (20_000, 5_000),
            (40_000, 10_000),
            (600_000, 10_000),
        ] {
            assert_eq!(
                awaiting_poll(for_ms, progress),
                Duration::from_millis(poll_ms),
                "{for_ms}"
            );
        }
        // A progress interval under a second does not make it poll faster than once a second.
        assert_eq!(
            awaiting_poll(60_000, Duration::from_millis(10)),
            Duration::from_secs(1)
        );
        let policy = crate::policy::Policy::default();
        assert_eq!(
            requeue_after(Next::Awaiting { for_ms: 600_000 }, false, &policy),
            Duration::from_millis(u64::try_from(policy.progress_check_ms).unwrap())
        );
    }

    #[test]
    fn an_idle_resource_is_not_looked_at_again_unless_it_just_took_a_step() {
        let policy = crate::policy::Policy::default();
        assert_eq!(next_look(Next::Idle, false, &policy), None);
        assert_eq!(next_look(Next::Idle, true, &policy), Some(AFTER_A_STEP));
        assert_eq!(
            next_look(Next::Steady, false, &policy),
            Some(requeue_after(Next::Steady, false, &policy))
        );
    }
}
