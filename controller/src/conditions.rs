//! The Ready, Progressing and Degraded conditions, derived from a phase that is also their
//! reason. Shared by the loops so that every kind reports its phases the same way: one
//! vocabulary of condition types ([`condition_type`]), statuses ([`condition_status`]) and
//! phases ([`Phase`]).

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

/// A resource's phase, written as the reason of its conditions. The strings are part of the
/// API (users and tools read them): [`Phase::as_str`] is what status shows,
/// [`Phase::from_reason`] reads a stored reason back. Which of Ready, Progressing and
/// Degraded a phase sets is [`Phase::ready`], [`Phase::progressing`] and
/// [`Phase::degraded`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    Deploying,
    DeployFailed,
    Running,
    Updating,
    UpdateFailed,
    /// A rollback is being carried out: a manual one to a kept revision, or a
    /// FlinkDeployment's automatic one to its last stable spec.
    RollingBack,
    Restarting,
    Suspended,
    Succeeded,
    Failed,
    Cancelled,
    Deleting,
    /// The job runs the last stable spec after the spec that replaced it was rolled back:
    /// ready, and degraded.
    RolledBack,
    /// Flink refused a change of parallelism in place: the change goes on as an upgrade.
    ScalingFailed,
}

impl Phase {
    /// Every phase.
    pub const ALL: [Phase; 14] = [
        Phase::Deploying,
        Phase::DeployFailed,
        Phase::Running,
        Phase::Updating,
        Phase::UpdateFailed,
        Phase::RollingBack,
        Phase::Restarting,
        Phase::Suspended,
        Phase::Succeeded,
        Phase::Failed,
        Phase::Cancelled,
        Phase::Deleting,
        Phase::RolledBack,
        Phase::ScalingFailed,
    ];

    /// The conditions' `reason`, as status shows it.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Deploying => "Deploying",
            Phase::DeployFailed => "DeployFailed",
            Phase::Running => "Running",
            Phase::Updating => "Updating",
            Phase::UpdateFailed => "UpdateFailed",
            Phase::RollingBack => "RollingBack",
            Phase::Restarting => "Restarting",
            Phase::Suspended => "Suspended",
            Phase::Succeeded => "Succeeded",
            Phase::Failed => "Failed",
            Phase::Cancelled => "Cancelled",
            Phase::Deleting => "Deleting",
            Phase::RolledBack => "RolledBack",
            Phase::ScalingFailed => "ScalingFailed",
        }
    }

    /// The phase a stored condition's `reason` names; `None` for a reason that is no phase
    /// (written by someone else, or by a newer operator).
    pub fn from_reason(reason: &str) -> Option<Phase> {
        Phase::ALL.into_iter().find(|p| p.as_str() == reason)
    }

    /// Whether the resource does what its spec asks: Ready is True.
    pub fn ready(self) -> bool {
        match self {
            Phase::Running | Phase::Succeeded | Phase::RolledBack => true,
            Phase::Deploying
            | Phase::DeployFailed
            | Phase::Updating
            | Phase::UpdateFailed
            | Phase::RollingBack
            | Phase::Restarting
            | Phase::Suspended
            | Phase::Failed
            | Phase::Cancelled
            | Phase::Deleting
            | Phase::ScalingFailed => false,
        }
    }

    /// Whether something the operator started is under way: Progressing is True.
    pub fn progressing(self) -> bool {
        match self {
            Phase::Deploying
            | Phase::Updating
            | Phase::RollingBack
            | Phase::Restarting
            | Phase::Deleting
            | Phase::ScalingFailed => true,
            Phase::DeployFailed
            | Phase::Running
            | Phase::UpdateFailed
            | Phase::Suspended
            | Phase::Succeeded
            | Phase::Failed
            | Phase::Cancelled
            | Phase::RolledBack => false,
        }
    }

    /// Whether something failed, or a rollback replaced the spec: Degraded is True.
    pub fn degraded(self) -> bool {
        match self {
            Phase::DeployFailed | Phase::UpdateFailed | Phase::Failed | Phase::RolledBack => true,
            Phase::Deploying
            | Phase::Running
            | Phase::Updating
            | Phase::RollingBack
            | Phase::Restarting
            | Phase::Suspended
            | Phase::Succeeded
            | Phase::Cancelled
            | Phase::Deleting
            | Phase::ScalingFailed => false,
        }
    }
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Ready, Progressing and Degraded, with `phase` as their reason, replacing `conditions`.
///
/// A condition's lastTransitionTime is kept while its status does not change, so that it
/// says when the resource became (not) ready rather than when it was last reconciled.
pub fn set_conditions(
    conditions: &mut Option<Vec<Condition>>,
    generation: Option<i64>,
    phase: Phase,
    message: &str,
    now_ms: i64,
) {
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
            reason: Some(phase.as_str().to_owned()),
            message: Some(message.to_owned()),
            last_transition_time: Some(kept.unwrap_or_else(|| now.clone())),
            observed_generation: generation,
        }
    };
    *conditions = Some(vec![
        condition(condition_type::READY, phase.ready()),
        condition(condition_type::PROGRESSING, phase.progressing()),
        condition(condition_type::DEGRADED, phase.degraded()),
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
        set_conditions(&mut conditions, Some(1), Phase::Deploying, "a", NOW);
        set_conditions(&mut conditions, Some(2), Phase::Deploying, "b", NOW + 60_000);
        let progressing = condition(&conditions, "Progressing");
        assert_eq!(
            progressing.last_transition_time.as_deref(),
            Some("2027-01-15T08:00:00Z")
        );
        assert_eq!(progressing.message.as_deref(), Some("b"));
        assert_eq!(progressing.observed_generation, Some(2));

        set_conditions(&mut conditions, Some(2), Phase::Running, "c", NOW + 120_000);
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
            (Phase::Deploying, "False", "True", "False"),
            (Phase::DeployFailed, "False", "False", "True"),
            (Phase::Running, "True", "False", "False"),
            (Phase::Updating, "False", "True", "False"),
            (Phase::UpdateFailed, "False", "False", "True"),
            (Phase::Restarting, "False", "True", "False"),
            (Phase::Suspended, "False", "False", "False"),
            (Phase::Succeeded, "True", "False", "False"),
            (Phase::Failed, "False", "False", "True"),
            (Phase::Cancelled, "False", "False", "False"),
            (Phase::Deleting, "False", "True", "False"),
            (Phase::RollingBack, "False", "True", "False"),
            (Phase::RolledBack, "True", "False", "True"),
            (Phase::ScalingFailed, "False", "True", "False"),
        ];
        assert_eq!(cases.len(), Phase::ALL.len());
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
                    .all(|c| c.reason.as_deref() == Some(reason.as_str()))
            );
        }
    }

    #[test]
    fn each_phase_is_written_as_its_name_and_read_back_from_it() {
        for phase in Phase::ALL {
            assert_eq!(format!("{phase:?}"), phase.as_str());
            assert_eq!(phase.to_string(), phase.as_str());
            assert_eq!(Phase::from_reason(phase.as_str()), Some(phase));
        }
        assert_eq!(Phase::from_reason("running"), None);
        assert_eq!(Phase::from_reason(""), None);
    }
}
