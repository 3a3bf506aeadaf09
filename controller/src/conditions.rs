//! The Ready, Progressing and Degraded conditions, derived from a phase that is also their
//! reason. Shared by the loops so that every kind reports its phases the same way: one
//! vocabulary of condition types ([`condition_type`]), statuses ([`condition_status`]) and
//! phases ([`phase`]).

use flink_operator_api::common::Condition;

/// The condition types every kind writes.
pub mod condition_type {
    /// The resource does what its spec asks (its job runs, or has succeeded).
    pub const READY: &str = "Ready";
    /// Something the operator started is under way (a deployment, an update, a deletion).
    pub const PROGRESSING: &str = "Progressing";
    /// Something failed, or a rollback replaced the spec.
    pub const DEGRADED: &str = "Degraded";
}

/// A condition's status, as Kubernetes spells it.
pub mod condition_status {
    pub const TRUE: &str = "True";
    pub const FALSE: &str = "False";
}

/// Phases, written as the conditions' reason.
pub mod phase {
    pub const DEPLOYING: &str = "Deploying";
    pub const DEPLOY_FAILED: &str = "DeployFailed";
    pub const RUNNING: &str = "Running";
    pub const UPDATING: &str = "Updating";
    pub const UPDATE_FAILED: &str = "UpdateFailed";
    /// A rollback is being carried out: a manual one to a kept revision, or a
    /// FlinkDeployment's automatic one to its last stable spec.
    pub const ROLLING_BACK: &str = "RollingBack";
    pub const RESTARTING: &str = "Restarting";
    pub const SUSPENDED: &str = "Suspended";
    pub const SUCCEEDED: &str = "Succeeded";
    pub const FAILED: &str = "Failed";
    pub const CANCELLED: &str = "Cancelled";
    pub const DELETING: &str = "Deleting";
    /// The job runs the last stable spec after the spec that replaced it was rolled back:
    /// ready, and degraded.
    pub const ROLLED_BACK: &str = "RolledBack";
    /// Flink refused a change of parallelism in place: the change goes on as an upgrade.
    pub const SCALING_FAILED: &str = "ScalingFailed";
}

/// Ready, Progressing and Degraded, with `reason` as the phase, replacing `conditions`.
///
/// A condition's lastTransitionTime is kept while its status does not change, so that it
/// says when the resource became (not) ready rather than when it was last reconciled.
pub fn set_conditions(
    conditions: &mut Option<Vec<Condition>>,
    generation: Option<i64>,
    reason: &str,
    message: &str,
    now_ms: i64,
) {
    let ready = matches!(reason, phase::RUNNING | phase::SUCCEEDED | phase::ROLLED_BACK);
    let progressing = matches!(
        reason,
        phase::DEPLOYING
            | phase::UPDATING
            | phase::ROLLING_BACK
            | phase::RESTARTING
            | phase::DELETING
            | phase::SCALING_FAILED
    );
    let degraded = matches!(
        reason,
        phase::DEPLOY_FAILED | phase::UPDATE_FAILED | phase::FAILED | phase::ROLLED_BACK
    );
    let previous = conditions.take().unwrap_or_default();
    let now = rfc3339(now_ms);
    let condition = |type_: &str, value: bool| {
        let value = if value {
            condition_status::TRUE
        } else {
            condition_status::FALSE
        };
        let kept = previous
            .iter()
            .find(|c| c.type_.as_deref() == Some(type_) && c.status.as_deref() == Some(value))
            .and_then(|c| c.last_transition_time.clone());
        Condition {
            type_: Some(type_.to_owned()),
            status: Some(value.to_owned()),
            reason: Some(reason.to_owned()),
            message: Some(message.to_owned()),
            last_transition_time: Some(kept.unwrap_or_else(|| now.clone())),
            observed_generation: generation,
        }
    };
    *conditions = Some(vec![
        condition(condition_type::READY, ready),
        condition(condition_type::PROGRESSING, progressing),
        condition(condition_type::DEGRADED, degraded),
    ]);
}

/// Epoch milliseconds as RFC 3339 in UTC, whole seconds (as Kubernetes writes times).
pub fn rfc3339(ms: i64) -> String {
    k8s_openapi::jiff::Timestamp::from_millisecond(ms)
        .map(|t| k8s_openapi::jiff::fmt::strtime::format("%Y-%m-%dT%H:%M:%SZ", t).unwrap_or_default())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::fixtures::NOW;

    fn condition<'a>(conditions: &'a Option<Vec<Condition>>, type_: &str) -> &'a Condition {
        conditions
            .iter()
            .flatten()
            .find(|c| c.type_.as_deref() == Some(type_))
            .unwrap_or_else(|| panic!("no {type_} condition in {conditions:?}"))
    }

    #[test]
    fn transition_times_are_kept_while_a_condition_keeps_its_status() {
        let mut conditions = None;
        set_conditions(&mut conditions, Some(1), phase::DEPLOYING, "a", NOW);
        set_conditions(&mut conditions, Some(2), phase::DEPLOYING, "b", NOW + 60_000);
        let progressing = condition(&conditions, "Progressing");
        assert_eq!(
            progressing.last_transition_time.as_deref(),
            Some("2027-01-15T08:00:00Z")
        );
        assert_eq!(progressing.message.as_deref(), Some("b"));
        assert_eq!(progressing.observed_generation, Some(2));

        set_conditions(&mut conditions, Some(2), phase::RUNNING, "c", NOW + 120_000);
        let ready = condition(&conditions, "Ready");
        assert_eq!(ready.status.as_deref(), Some("True"));
        assert_eq!(
            ready.last_transition_time.as_deref(),
            Some("2027-01-15T08:02:00Z")
        );
        // Degraded stayed False throughout.
        let degraded = condition(&conditions, "Degraded");
        assert_eq!(
            degraded.last_transition_time.as_deref(),
            Some("2027-01-15T08:00:00Z")
        );
    }

    #[test]
    fn each_phase_sets_ready_progressing_and_degraded() {
        let cases = [
            (phase::DEPLOYING, "False", "True", "False"),
            (phase::DEPLOY_FAILED, "False", "False", "True"),
            (phase::RUNNING, "True", "False", "False"),
            (phase::UPDATING, "False", "True", "False"),
            (phase::UPDATE_FAILED, "False", "False", "True"),
            (phase::RESTARTING, "False", "True", "False"),
            (phase::SUSPENDED, "False", "False", "False"),
            (phase::SUCCEEDED, "True", "False", "False"),
            (phase::FAILED, "False", "False", "True"),
            (phase::CANCELLED, "False", "False", "False"),
            (phase::DELETING, "False", "True", "False"),
        ];
        for (reason, ready, progressing, degraded) in cases {
            let mut conditions = None;
            set_conditions(&mut conditions, None, reason, "m", NOW);
            let status = |t| condition(&conditions, t).status.clone();
            assert_eq!(
                [status("Ready"), status("Progressing"), status("Degraded")],
                [ready, progressing, degraded].map(|s| Some(s.to_owned())),
                "{reason}"
            );
            assert!(
                conditions
                    .iter()
                    .flatten()
                    .all(|c| c.reason.as_deref() == Some(reason))
            );
        }
    }
}
