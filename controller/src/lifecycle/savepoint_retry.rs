//! Retrying the savepoint of an upgrade, for both job kinds.
//!
//! A savepoint can fail for reasons that pass: the job reports RUNNING before all its tasks
//! run ("Not all required tasks are currently running"), a checkpoint is in progress, the
//! JobManager is busy. Flink's messages do not reliably tell a passing failure from a
//! lasting one, so every failed attempt is retried with back-off until
//! `kubernetes.operator.savepoint.trigger.grace-period` has passed since the first one was
//! wanted; only then is the upgrade declared failed, with the last reason. A job whose
//! tasks do not all run is not asked for a savepoint at all, within the same period.
//!
//! Pure: the attempts are kept in `status.jobStatus.savepointInfo.upgradeRetry`.

use flink_operator_api::SavepointRetry;

/// The first retry waits this long; each further one twice as long as the one before.
const FIRST_BACKOFF_MS: i64 = 2_000;
/// The longest wait between two attempts.
const MAX_BACKOFF_MS: i64 = 30_000;

/// Whether to trigger the upgrade savepoint now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt {
    /// Trigger it.
    Now,
    /// Look again in this many seconds: an attempt failed and its back-off runs, or the
    /// job's tasks do not all run yet. `note` says why, for the conditions.
    Wait { seconds: u64, note: String },
    /// The grace period is over: the upgrade failed, for this reason.
    GiveUp(String),
}

/// The attempts of `generation`'s upgrade: the recorded ones, or fresh ones from `now`.
pub fn attempts(recorded: Option<&SavepointRetry>, generation: Option<i64>, now_ms: i64) -> SavepointRetry {
    match recorded {
        Some(retry) if retry.generation == generation => retry.clone(),
        _ => SavepointRetry {
            generation,
            first_attempt_timestamp: now_ms,
            ..Default::default()
        },
    }
}

/// Whether the savepoint of `retry`'s upgrade is triggered now, for a job whose tasks
/// `ready` (all run) or not.
pub fn before_trigger(retry: &SavepointRetry, ready: bool, grace_ms: i64, now_ms: i64) -> Attempt {
    let over = now_ms.saturating_sub(retry.first_attempt_timestamp) >= grace_ms;
    if let Some(at) = retry.next_attempt_timestamp.filter(|at| *at > now_ms) {
        return Attempt::Wait {
            seconds: seconds_until(at, now_ms),
            note: format!(
                "{}; trying again {}",
                failed_attempts(retry),
                in_seconds(seconds_until(at, now_ms))
            ),
        };
    }
    if !ready {
        let waiting = "not all tasks of the job are running, which a savepoint needs";
        if over {
            return Attempt::GiveUp(match &retry.last_failure {
                Some(_) => format!("{}, and {waiting}", failed_attempts(retry)),
                None => format!("{waiting} (for {})", grace(grace_ms)),
            });
        }
        return Attempt::Wait {
            seconds: 1,
            note: format!("waiting to take the savepoint: {waiting} yet"),
        };
    }
    Attempt::Now
}

/// After an attempt failed with `reason`: the attempts with it recorded and the next one
/// scheduled, or, once the grace period is over, why the upgrade failed.
pub fn after_failure(
    retry: &SavepointRetry,
    reason: &str,
    grace_ms: i64,
    now_ms: i64,
) -> Result<SavepointRetry, String> {
    let mut next = retry.clone();
    next.failures = next.failures.saturating_add(1);
    next.last_failure = Some(reason.to_owned());
    let exponent = u32::try_from(next.failures.saturating_sub(1).clamp(0, 10)).unwrap_or(0);
    let backoff = (FIRST_BACKOFF_MS << exponent).min(MAX_BACKOFF_MS);
    let deadline = retry.first_attempt_timestamp.saturating_add(grace_ms);
    if now_ms >= deadline {
        return Err(format!(
            "{} within kubernetes.operator.savepoint.trigger.grace-period ({})",
            failed_attempts(&next),
            grace(grace_ms)
        ));
    }
    // A back-off that would end after the grace period is cut to its end: the last attempt
    // comes when the period is over, so the change fails no sooner than the user allowed.
    next.next_attempt_timestamp = Some(now_ms.saturating_add(backoff).min(deadline));
    Ok(next)
}

/// A failed attempt at `info`'s pending upgrade savepoint of `generation`, retried or not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// Tried again in `seconds`; `note` says why, for status, the conditions and an Event.
    Retry {
        retry: SavepointRetry,
        seconds: u64,
        note: String,
    },
    /// The grace period is over: why the upgrade failed.
    GiveUp(String),
}

/// What follows a failed attempt at the upgrade savepoint recorded in `info` (its trigger
/// time starts the grace period of a first attempt).
pub fn failed(
    info: &flink_operator_api::SavepointInfo,
    generation: Option<i64>,
    reason: &str,
    grace_ms: i64,
    now_ms: i64,
) -> Failure {
    let started = info.trigger_timestamp.unwrap_or(now_ms);
    let retry = attempts(info.upgrade_retry.as_ref(), generation, started);
    match after_failure(&retry, reason, grace_ms, now_ms) {
        Ok(next) => Failure::Retry {
            seconds: next
                .next_attempt_timestamp
                .map_or(1, |at| seconds_until(at, now_ms)),
            note: failed_attempts(&next),
            retry: next,
        },
        Err(why) => Failure::GiveUp(why),
    }
}

/// "the savepoint failed (attempt 2): <reason>".
pub fn failed_attempts(retry: &SavepointRetry) -> String {
    let reason = retry.last_failure.as_deref().unwrap_or("no reason given");
    match retry.failures {
        0 | 1 => format!("the savepoint failed: {reason}"),
        n => format!("the savepoint failed {n} times, the last time: {reason}"),
    }
}

fn seconds_until(at_ms: i64, now_ms: i64) -> u64 {
    u64::try_from(at_ms.saturating_sub(now_ms))
        .unwrap_or(0)
        .div_ceil(1000)
        .max(1)
}

fn in_seconds(seconds: u64) -> String {
    format!("in {seconds} s")
}

fn grace(ms: i64) -> String {
    if ms % 60_000 == 0 && ms > 0 {
        format!("{} min", ms / 60_000)
    } else {
        format!("{} s", ms / 1000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_800_000_000_000;
    const GRACE: i64 = 60_000;

    fn retry(first_ago_ms: i64, failures: i32, next_in_ms: Option<i64>) -> SavepointRetry {
        SavepointRetry {
            generation: Some(2),
            first_attempt_timestamp: NOW - first_ago_ms,
            failures,
            next_attempt_timestamp: next_in_ms.map(|ms| NOW + ms),
            last_failure: (failures > 0).then(|| "Not all required tasks are currently running".to_owned()),
        }
    }

    #[test]
    fn attempts_belong_to_one_generation() {
        let recorded = retry(5_000, 1, None);
        assert_eq!(attempts(Some(&recorded), Some(2), NOW), recorded);
        let fresh = attempts(Some(&recorded), Some(3), NOW);
        assert_eq!(
            (fresh.first_attempt_timestamp, fresh.failures, fresh.generation),
            (NOW, 0, Some(3))
        );
        assert_eq!(attempts(None, Some(3), NOW), fresh);
    }

    #[test]
    fn a_savepoint_is_triggered_when_the_tasks_run_and_no_back_off_runs() {
        let cases = [
            ("first attempt", retry(0, 0, None), true, Attempt::Now),
            (
                "tasks still deploying",
                retry(3_000, 0, None),
                false,
                Attempt::Wait {
                    seconds: 1,
                    note: "waiting to take the savepoint: not all tasks of the job are running, which a savepoint needs yet".into(),
                },
            ),
            (
                "tasks never ran within the grace period",
                retry(GRACE, 0, None),
                false,
                Attempt::GiveUp("not all tasks of the job are running, which a savepoint needs (for 1 min)".into()),
            ),
            (
                "back-off after a failure",
                retry(4_000, 1, Some(1_500)),
                true,
                Attempt::Wait {
                    seconds: 2,
                    note: "the savepoint failed: Not all required tasks are currently running; trying again in 2 s".into(),
                },
            ),
            ("back-off over", retry(6_000, 1, Some(-1)), true, Attempt::Now),
            (
                "failed, and then the tasks stopped running past the grace period",
                retry(GRACE + 1, 2, Some(-1)),
                false,
                Attempt::GiveUp(
                    "the savepoint failed 2 times, the last time: Not all required tasks are currently running, and not all tasks of the job are running, which a savepoint needs".into(),
                ),
            ),
        ];
        for (name, retry, ready, expected) in cases {
            assert_eq!(before_trigger(&retry, ready, GRACE, NOW), expected, "{name}");
        }
    }

    #[test]
    fn failures_back_off_exponentially_until_the_grace_period_is_over() {
        let first = after_failure(&retry(0, 0, None), "busy", GRACE, NOW).unwrap();
        assert_eq!(
            (first.failures, first.next_attempt_timestamp),
            (1, Some(NOW + 2_000))
        );
        let third = after_failure(&retry(10_000, 2, None), "busy", GRACE, NOW).unwrap();
        assert_eq!(third.next_attempt_timestamp, Some(NOW + 8_000));
        let capped = after_failure(&retry(1_000, 9, None), "busy", 10 * GRACE, NOW).unwrap();
        assert_eq!(capped.next_attempt_timestamp, Some(NOW + MAX_BACKOFF_MS));
        // The last attempt comes when the grace period ends, not after it; a failure then
        // ends the change.
        let last = after_failure(&retry(55_000, 3, None), "Permission denied", GRACE, NOW).unwrap();
        assert_eq!(last.next_attempt_timestamp, Some(NOW + 5_000));
        assert_eq!(
            after_failure(&retry(GRACE, 4, None), "Permission denied", GRACE, NOW),
            Err("the savepoint failed 5 times, the last time: Permission denied within kubernetes.operator.savepoint.trigger.grace-period (1 min)".into())
        );
    }
}
