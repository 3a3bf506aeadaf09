//! A change of parallelism alone, against both kinds: applied in place where the scheduler
//! can (the same requests, Events and status for both), else an upgrade.

use super::*;
use crate::{
    conditions::Phase, lifecycle::rescale::Rescale, policy::Rescaler, resources::parallelism::Parallelism,
};

fn adaptive() -> Policy {
    Policy {
        rescaler: Some(Rescaler::Adaptive),
        ..Policy::status_only()
    }
}

fn parallelism(default: i64) -> Parallelism {
    Parallelism {
        default: Some(default),
        overrides: Default::default(),
    }
}

#[test]
fn a_change_of_parallelism_alone_rescales_the_running_job_in_place_and_is_recorded_after() {
    both(|kind, decide| {
        let running = job_spec(UpgradeMode::Savepoint);
        let wanted = with(running.clone(), "parallelism", json!(3));
        let stored = started(&running, &json!({}), kind);
        let at = Look {
            policy: adaptive(),
            ..changed(FlinkJobState::Running)
        };
        let (outcome, next) = decide(&wanted, &json!({}), Some(&stored), &at, false);
        assert_eq!(
            outcome.job,
            [JobAction::Rescale(Rescale {
                job_id: JOB_ID.into(),
                from: parallelism(2),
                to: parallelism(3),
            })],
            "{kind}"
        );
        assert_eq!(
            outcome.own, 0,
            "{kind}: nothing is deployed, submitted or stopped"
        );
        assert_eq!(outcome.reasons(), [Reason::Scaling], "{kind}");
        // The spec is recorded only once the scheduler took the requirements.
        assert_eq!(outcome.recorded, running, "{kind}: written before acting");
        assert!(outcome.written_twice, "{kind}");
        let mut after = next.clone();
        let recorded = match &mut after {
            Status::Application(s) => recorded_job(s),
            Status::SessionJob(s) => recorded_job(s),
        };
        assert_eq!(recorded, wanted, "{kind}: written after acting");

        // The next look finds nothing changed: the same job goes on, STABLE once it runs.
        let (steady, _) = decide(&wanted, &json!({}), Some(&next), &at, false);
        assert!(steady.job.is_empty() && steady.own == 0, "{kind}: {steady:?}");
    });
}

#[test]
fn a_rescale_flink_refused_is_applied_by_an_upgrade() {
    both(|kind, decide| {
        let running = job_spec(UpgradeMode::Savepoint);
        let wanted = with(running.clone(), "parallelism", json!(3));
        let mut stored = started(&running, &json!({}), kind);
        let set = |conditions: &mut Option<Vec<flink_operator_api::common::Condition>>| {
            crate::conditions::set_conditions(conditions, Some(2), Phase::ScalingFailed, "refused", NOW)
        };
        match &mut stored {
            Status::Application(s) => set(&mut s.conditions),
            Status::SessionJob(s) => set(&mut s.conditions),
        }
        let at = Look {
            policy: adaptive(),
            ..changed(FlinkJobState::Running)
        };
        let (outcome, _) = decide(&wanted, &json!({}), Some(&stored), &at, false);
        assert!(
            matches!(outcome.job.as_slice(), [JobAction::StopWithSavepoint { .. }]),
            "{kind}: {outcome:?}"
        );
    });
}

#[test]
fn the_autoscalers_report_is_published_for_both_kinds_and_changes_nothing() {
    both(|kind, decide| {
        let job = job_spec(UpgradeMode::Savepoint);
        let stored = started(&job, &json!({}), kind);
        let at = Look {
            autoscaler: crate::autoscaler::apply::Looked {
                report: Some("vertex v: parallelism 2 -> 4".into()),
                ..Default::default()
            },
            ..running_job()
        };
        let (outcome, _) = decide(&job, &json!({}), Some(&stored), &at, false);
        assert_eq!(outcome.reasons(), [Reason::ScalingReport], "{kind}");
        assert_eq!(outcome.events[0].note, "vertex v: parallelism 2 -> 4", "{kind}");
        assert!(
            outcome.job.is_empty() && outcome.own == 0,
            "{kind}: advisory, nothing acted on"
        );
    });
}

/// The autoscaler's overrides in the spec the status records.
fn recorded_autoscaled(status: &Status) -> Value {
    let rs = match status {
        Status::Application(s) => s.reconciliation_status.clone(),
        Status::SessionJob(s) => s.reconciliation_status.clone(),
    };
    rs.and_then(|rs| rs.last_reconciled_spec::<Value>().ok().flatten())
        .map(|spec| spec["flinkConfiguration"][AUTOSCALED].clone())
        .unwrap_or(Value::Null)
}

const AUTOSCALED: &str = flink_operator_api::keys::operator::AUTOSCALER_PARALLELISM_OVERRIDES;

#[test]
fn the_autoscalers_overrides_rescale_the_running_job_in_place_recorded_apart_from_the_users_spec() {
    both(|kind, decide| {
        let job = job_spec(UpgradeMode::Savepoint);
        let stored = started(&job, &json!({}), kind);
        let wanted = std::collections::BTreeMap::from([("v".to_owned(), 4)]);
        let at = Look {
            policy: adaptive(),
            autoscaler: crate::autoscaler::apply::Looked {
                overrides: wanted.clone(),
                ..Default::default()
            },
            ..running_job()
        };
        let (outcome, next) = decide(&job, &json!({}), Some(&stored), &at, false);
        assert_eq!(
            outcome.job,
            [JobAction::Rescale(Rescale {
                job_id: JOB_ID.into(),
                from: parallelism(2),
                to: Parallelism {
                    default: Some(2),
                    overrides: wanted.clone(),
                },
            })],
            "{kind}"
        );
        assert_eq!(outcome.reasons(), [Reason::Scaling], "{kind}");
        assert_eq!(recorded_autoscaled(&next), json!("v:4"), "{kind}");

        // Kept at the next looks: nothing more to do.
        let (steady, kept) = decide(&job, &json!({}), Some(&next), &at, false);
        assert!(steady.job.is_empty() && steady.own == 0, "{kind}: {steady:?}");
        assert_eq!(recorded_autoscaled(&kept), json!("v:4"), "{kind}");

        // The autoscaler turned off: its override goes, which only an upgrade can undo (the
        // vertex may have its parallelism from the job's code).
        let off = Look {
            policy: adaptive(),
            ..running_job()
        };
        let (removed, _) = decide(&job, &json!({}), Some(&next), &off, false);
        assert!(
            matches!(removed.job.as_slice(), [JobAction::StopWithSavepoint { .. }]),
            "{kind}: {removed:?}"
        );
    });
}

#[test]
fn without_a_scheduler_that_rescales_in_place_the_autoscalers_overrides_are_an_upgrade() {
    both(|kind, decide| {
        let job = job_spec(UpgradeMode::Savepoint);
        let stored = started(&job, &json!({}), kind);
        let at = Look {
            autoscaler: crate::autoscaler::apply::Looked {
                overrides: std::collections::BTreeMap::from([("v".to_owned(), 4)]),
                ..Default::default()
            },
            ..running_job()
        };
        let (outcome, _) = decide(&job, &json!({}), Some(&stored), &at, false);
        assert!(
            matches!(outcome.job.as_slice(), [JobAction::StopWithSavepoint { .. }]),
            "{kind}: {outcome:?}"
        );
    });
}
