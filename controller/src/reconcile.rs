//! What the reconcile loops of the job kinds share: the outcome of a polled savepoint, the
//! Events they publish, their finalizer patches, their savepoint metrics, when they look at
//! a resource again, and the watch that triggers them.

use std::{
    hash::{DefaultHasher, Hash, Hasher},
    time::Duration,
};

use flink_operator_api::common::JobStatus;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType};
use serde_json::json;

use crate::{
    context::Context,
    flink::{FlinkError, OperationStatus},
};

pub use crate::events::Reason;

/// The outcome of a savepoint or checkpoint operation, by its trigger id.
#[derive(Debug, Clone, PartialEq)]
pub enum SavepointPoll {
    InProgress,
    /// The savepoint's path (for checkpoints: the checkpoint id).
    Completed(String),
    Failed(String),
    /// The JobManager does not know the trigger (never reached it, or it restarted).
    UnknownTrigger,
    /// The job is gone: no savepoint will come.
    JobGone(String),
    Unreachable(String),
}

impl SavepointPoll {
    pub fn from_status(result: Result<OperationStatus<String>, FlinkError>) -> Self {
        match result {
            Ok(OperationStatus::InProgress) => SavepointPoll::InProgress,
            Ok(OperationStatus::Completed(path)) => SavepointPoll::Completed(path),
            Ok(OperationStatus::Failed(failure)) => SavepointPoll::Failed(failure.message),
            Ok(OperationStatus::JobNotFound(reason)) => SavepointPoll::JobGone(reason),
            Ok(OperationStatus::UnknownTrigger(_)) => SavepointPoll::UnknownTrigger,
            Err(e) => SavepointPoll::Unreachable(e.to_string()),
        }
    }
}

/// When a plan wants its resource looked at again, by what is under way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Something only Flink or Kubernetes can finish is under way (a cluster starting, a
    /// savepoint pending, a job cancelling): `kubernetes.operator.observer.progress-check.interval`.
    Progress,
    /// Nothing is under way: `kubernetes.operator.reconcile.interval`.
    Steady,
    /// In this many seconds (a periodic savepoint or a retry falls due), or at the steady
    /// interval if that comes first.
    Within(u64),
    /// A job stops with a savepoint for a change (or its cluster's JobManager exits before
    /// the next one starts), under way for `for_ms`: see [`stopping_poll`].
    Stopping { for_ms: u64 },
    /// A snapshot Flink is taking, triggered `for_ms` ago: see [`awaiting_poll`].
    Awaiting { for_ms: u64 },
    /// Nothing will happen by itself any more (a snapshot that completed or was abandoned):
    /// looked at again only when the resource changes (its spec, its deletion).
    Idle,
}

/// While a job stops with a savepoint for an upgrade it processes nothing: every moment
/// until the savepoint is seen complete is downtime, so it is polled far more often than
/// other work in progress: every quarter of the time it has taken so far, between 50 ms and
/// 250 ms. A small job's stop completes within a few hundred milliseconds and is seen soon
/// after; a long one costs four calls a second, and only while a change is under way.
pub fn stopping_poll(for_ms: u64) -> Duration {
    Duration::from_millis((for_ms / 4).clamp(50, 250))
}

/// A snapshot under way is polled every quarter of the time it has taken so far, between
/// 1 s and `kubernetes.operator.observer.progress-check.interval`: a small job's savepoint,
/// done within a second or two, is seen complete about a second later, while one that takes
/// minutes costs no more than any other work in progress.
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

/// What triggers a reconcile of a resource of the loop's own kind: a change a user made (the
/// spec, i.e. the generation, which the API server also raises when a deletion starts; a
/// rollback request, which is an annotation) or its deletion. Status writes and the
/// operator's own annotations change none of these, so a steady resource is not reconciled
/// by its own writes; the cache still holds the latest object.
pub fn user_change<K: kube::Resource>(object: &K) -> Option<u64> {
    let meta = object.meta();
    let mut hasher = DefaultHasher::new();
    meta.generation.hash(&mut hasher);
    meta.deletion_timestamp.is_some().hash(&mut hasher);
    for key in [
        flink_operator_api::keys::annotations::ROLLBACK_TO_REVISION,
        flink_operator_api::keys::annotations::ROLLBACK_RESTORE,
    ] {
        meta.annotations
            .as_ref()
            .and_then(|a| a.get(key))
            .hash(&mut hasher);
    }
    Some(hasher.finish())
}

/// Whether `error` is a write refused because the object changed since it was read (its
/// resourceVersion precondition failed): the next reconcile reads it again.
pub fn is_conflict(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 409)
}

/// An Event a plan asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventNote {
    pub warning: bool,
    pub reason: Reason,
    pub note: String,
}

impl EventNote {
    pub fn normal(reason: Reason, note: impl Into<String>) -> Self {
        EventNote {
            warning: false,
            reason,
            note: note.into(),
        }
    }

    pub fn warning(reason: Reason, note: impl Into<String>) -> Self {
        EventNote {
            warning: true,
            reason,
            note: note.into(),
        }
    }
}

/// The Event's `action`: its reason and a digest of its note. The recorder counts an Event
/// with the key of one it sent in the last minutes as a repeat of it and drops the new note;
/// so that an Event that says something new (a savepoint that now failed for good, a job in
/// another state) is shown, the key holds the note, and only a note said again is counted.
fn action(reason: Reason, note: &str) -> String {
    use std::hash::{Hash, Hasher};
    let mut digest = std::collections::hash_map::DefaultHasher::new();
    note.hash(&mut digest);
    format!("{}-{:08x}", reason.as_str(), digest.finish() & 0xffff_ffff)
}

/// Publishes an Event about `object`; a failure to publish is logged, not fatal.
pub async fn publish(ctx: &Context, object: &ObjectReference, warning: bool, reason: Reason, note: String) {
    if let Err(fenced) = ctx.fence.check() {
        tracing::debug!(%reason, %fenced, "an Event not published");
        return;
    }
    let event = Event {
        type_: if warning {
            EventType::Warning
        } else {
            EventType::Normal
        },
        reason: reason.as_str().to_owned(),
        note: Some(note.chars().take(1000).collect()),
        action: action(reason, &note),
        secondary: None,
    };
    ctx.metrics.event_published(reason.as_str(), warning);
    if let Err(e) = ctx.recorder.publish(&event, object).await {
        tracing::debug!(error = %e, %reason, "could not publish an Event");
    }
}

/// The JSON Patch that adds (or removes) `ours` among `finalizers`, or `None` when there is
/// nothing to do. Other writers' finalizers are left alone, and a removal first tests that
/// the entry is still ours.
/// `config` without the operator's own keys (`kubernetes.operator.*`), `None` when nothing
/// else is left: those keys are read on every reconcile and never sent to Flink, so a change
/// of them alone does not end a job.
pub fn without_operator_keys(
    config: Option<flink_operator_api::FlinkConfiguration>,
) -> Option<flink_operator_api::FlinkConfiguration> {
    let mut config = config?;
    config
        .0
        .retain(|k, _| !k.starts_with(flink_operator_api::keys::operator::PREFIX));
    (!config.is_empty()).then_some(config)
}

/// Adds (or removes) `ours` among the finalizers of `object` with [`finalizer_patch`];
/// returns the object's new resourceVersion when it was patched (a status write later in the
/// same reconcile is conditional on it). Removing from an object that is gone is done.
pub async fn set_finalizer<K>(
    api: &kube::Api<K>,
    object: &K,
    ours: &str,
    add: bool,
) -> Result<Option<String>, kube::Error>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    use kube::ResourceExt;
    let Some(operations) = finalizer_patch(object.finalizers(), ours, add) else {
        return Ok(None);
    };
    let patch: json_patch::Patch = serde_json::from_value(operations).map_err(kube::Error::SerdeError)?;
    match api
        .patch(
            &object.name_any(),
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Json::<()>(patch),
        )
        .await
    {
        Ok(patched) => Ok(patched.meta().resource_version.clone()),
        Err(kube::Error::Api(e)) if !add && e.code == 404 => Ok(None),
        Err(e) => Err(e),
    }
}

pub fn finalizer_patch(finalizers: &[String], ours: &str, add: bool) -> Option<serde_json::Value> {
    Some(match (add, finalizers.iter().position(|f| f == ours)) {
        (true, Some(_)) | (false, None) => return None,
        (true, None) if finalizers.is_empty() => {
            json!([{"op": "add", "path": "/metadata/finalizers", "value": [ours]}])
        }
        (true, None) => json!([{"op": "add", "path": "/metadata/finalizers/-", "value": ours}]),
        (false, Some(i)) => json!([
            {"op": "test", "path": format!("/metadata/finalizers/{i}"), "value": ours},
            {"op": "remove", "path": format!("/metadata/finalizers/{i}")},
        ]),
    })
}

/// Counts a savepoint that this observation found ended: its duration since it was
/// triggered, or a failure.
pub fn record_savepoint(
    ctx: &Context,
    kind: &'static str,
    job: Option<&JobStatus>,
    poll: Option<&SavepointPoll>,
    now_ms: i64,
) {
    let triggered = job
        .and_then(|j| j.savepoint_info.as_ref())
        .filter(|i| i.trigger_id.is_some())
        .and_then(|i| i.trigger_timestamp);
    match (poll, triggered) {
        (Some(SavepointPoll::Completed(_)), Some(at)) => {
            let elapsed = u64::try_from(now_ms - at).unwrap_or(0);
            ctx.metrics
                .savepoint_completed(kind, Duration::from_millis(elapsed));
        }
        (Some(SavepointPoll::Failed(_) | SavepointPoll::JobGone(_)), Some(_)) => {
            ctx.metrics.savepoint_failed(kind);
        }
        _ => {}
    }
}

/// What the Kubernetes API said, in one line: its message for a refused request (kube's
/// own rendering appends the whole Status object), else the error.
pub fn api_message(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) if !status.message.is_empty() => {
            format!("{} ({})", status.message, status.reason)
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod event_tests {
    use super::*;

    #[test]
    fn an_event_that_says_something_new_is_not_counted_as_a_repeat() {
        let first = action(
            Reason::SavepointError,
            "The savepoint failed (attempt 1), tried again in 10 s: x",
        );
        let last = action(
            Reason::SavepointError,
            "The savepoint failed (attempt 2, backoffLimit 1), for good: x",
        );
        assert_ne!(first, last);
        assert_eq!(
            first,
            action(
                Reason::SavepointError,
                "The savepoint failed (attempt 1), tried again in 10 s: x"
            ),
            "the same note is the same Event, counted"
        );
        assert!(
            first.starts_with("SavepointError-") && first.len() <= 128,
            "{first}"
        );
    }
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

    #[test]
    fn an_api_refusal_is_its_message_and_reason_in_one_line() {
        let status = kube::core::Status::failure(
            "Deployment.apps \"x\" is invalid: spec.template.spec.containers[0].volumeMounts[0].name: Not found: \"logs\"",
            "Invalid",
        );
        assert_eq!(
            api_message(&kube::Error::Api(status.boxed())),
            "Deployment.apps \"x\" is invalid: spec.template.spec.containers[0].volumeMounts[0].name: Not found: \"logs\" (Invalid)"
        );
    }

    #[test]
    fn finalizer_patches_touch_only_our_entry() {
        const OURS: &str = "x/finalizer";
        let ours = OURS;
        let cases: Vec<(&[&str], bool, Option<serde_json::Value>)> = vec![
            (
                &[],
                true,
                Some(json!([{"op": "add", "path": "/metadata/finalizers", "value": [ours]}])),
            ),
            (
                &["other"],
                true,
                Some(json!([{"op": "add", "path": "/metadata/finalizers/-", "value": ours}])),
            ),
            (&["other", OURS], true, None),
            (&["other"], false, None),
            (
                &["other", OURS],
                false,
                Some(json!([
                    {"op": "test", "path": "/metadata/finalizers/1", "value": ours},
                    {"op": "remove", "path": "/metadata/finalizers/1"},
                ])),
            ),
        ];
        for (finalizers, add, expected) in cases {
            let finalizers: Vec<String> = finalizers.iter().map(|f| f.to_string()).collect();
            assert_eq!(
                finalizer_patch(&finalizers, ours, add),
                expected,
                "{finalizers:?} add={add}"
            );
        }
    }
}
