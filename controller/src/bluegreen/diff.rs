//! How a blue/green spec changed since it was last applied (`lastReconciledSpec`), as the
//! Apache operator's `FlinkBlueGreenDeploymentSpecDiff` classifies it, and whether a change
//! of a child's spec ends its job.

use flink_operator_api::{FlinkBlueGreenDeploymentSpec, FlinkDeploymentSpec, common::JobState};

use crate::lifecycle::spec::{changed, redeploy_nonce_changed};

/// What a spec change asks of the blue/green deployment, in order of precedence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpecDiff {
    /// `job.state` went from running to suspended: suspend the active child.
    Suspend,
    /// `job.state` went from suspended to running: resume the active child.
    Resume,
    /// A new `savepointRedeployNonce`: start the other child from `initialSavepointPath`.
    SavepointRedeploy,
    /// The template's spec did not change.
    Ignore,
    /// The template's spec changed only where a FlinkDeployment's change ends no job: the
    /// active child is updated in place.
    PatchChild,
    /// Anything else: hand over to a new child of the other colour.
    Transition,
}

/// How `spec` differs from `recorded`. Only the template's spec counts, as in the Apache
/// operator: the blue/green options are read on every reconcile, and the template's
/// metadata reaches the children with their next spec.
pub fn diff(recorded: &FlinkBlueGreenDeploymentSpec, spec: &FlinkBlueGreenDeploymentSpec) -> SpecDiff {
    let default = FlinkDeploymentSpec::default();
    let before = recorded.deployment_spec().unwrap_or(&default);
    let after = spec.deployment_spec().unwrap_or(&default);
    match (job_state(before), job_state(after)) {
        (JobState::Running, JobState::Suspended) => return SpecDiff::Suspend,
        (JobState::Suspended, JobState::Running) => return SpecDiff::Resume,
        _ => {}
    }
    if redeploy_nonce_changed(after, before) {
        SpecDiff::SavepointRedeploy
    } else if with_state_normalised(before) == with_state_normalised(after) {
        SpecDiff::Ignore
    } else if !ends_job(before, after) {
        SpecDiff::PatchChild
    } else {
        SpecDiff::Transition
    }
}

/// Whether changing a FlinkDeployment from `from` to `to` ends its job (see
/// [`crate::lifecycle::spec::changed`]). The job's desired state is left out (suspending
/// is not an upgrade; an unset state is running), and so is `initialSavepointPath`: it is read
/// only at a child's first start, and each child gets its own.
pub fn ends_job(from: &FlinkDeploymentSpec, to: &FlinkDeploymentSpec) -> bool {
    changed(&comparable(from), &comparable(to))
}

fn comparable(spec: &FlinkDeploymentSpec) -> FlinkDeploymentSpec {
    let mut spec = spec.clone();
    if let Some(job) = spec.job.as_mut() {
        job.state = None;
        job.initial_savepoint_path = None;
    }
    spec
}

/// An unset job state is running: spelling it out is no change.
fn with_state_normalised(spec: &FlinkDeploymentSpec) -> FlinkDeploymentSpec {
    let mut spec = spec.clone();
    if let Some(job) = spec.job.as_mut() {
        job.state = Some(job.state_or_default());
    }
    spec
}

fn job_state(spec: &FlinkDeploymentSpec) -> JobState {
    spec.job
        .as_ref()
        .map(|j| j.state_or_default())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn spec(template_spec: Value) -> FlinkBlueGreenDeploymentSpec {
        serde_json::from_value(json!({"template": {"spec": template_spec}})).expect("a blue/green spec")
    }

    fn base() -> Value {
        json!({
            "image": "flink:1.20",
            "flinkVersion": "v1_20",
            "flinkConfiguration": {"taskmanager.numberOfTaskSlots": "2"},
            "job": {"jarURI": "local:///job.jar", "parallelism": 2, "upgradeMode": "savepoint"}
        })
    }

    fn with(path: &[&str], value: Value) -> Value {
        let mut spec = base();
        let mut at = &mut spec;
        for key in &path[..path.len() - 1] {
            at = &mut at[*key];
        }
        at[path[path.len() - 1]] = value;
        spec
    }

    fn suspended(mut spec: Value) -> Value {
        spec["job"]["state"] = json!("suspended");
        spec
    }

    #[test]
    fn each_change_is_classified_in_the_apache_order_of_precedence() {
        let cases: Vec<(&str, Value, Value, SpecDiff)> = vec![
            ("same spec", base(), base(), SpecDiff::Ignore),
            (
                "unset state is running",
                with(&["job", "state"], json!("running")),
                base(),
                SpecDiff::Ignore,
            ),
            (
                "suspend",
                base(),
                with(&["job", "state"], json!("suspended")),
                SpecDiff::Suspend,
            ),
            (
                "resume",
                with(&["job", "state"], json!("suspended")),
                base(),
                SpecDiff::Resume,
            ),
            (
                "suspend wins over any other change",
                base(),
                suspended(with(&["image"], json!("flink:2.1"))),
                SpecDiff::Suspend,
            ),
            (
                "redeploy nonce",
                base(),
                with(&["job", "savepointRedeployNonce"], json!(1)),
                SpecDiff::SavepointRedeploy,
            ),
            (
                "upgrade mode ends no job",
                base(),
                with(&["job", "upgradeMode"], json!("last-state")),
                SpecDiff::PatchChild,
            ),
            (
                "operator keys end no job",
                base(),
                with(
                    &[
                        "flinkConfiguration",
                        "kubernetes.operator.savepoint.history.max.count",
                    ],
                    json!("3"),
                ),
                SpecDiff::PatchChild,
            ),
            (
                "initial savepoint path ends no job",
                base(),
                with(&["job", "initialSavepointPath"], json!("s3://sp/1")),
                SpecDiff::PatchChild,
            ),
            (
                "image",
                base(),
                with(&["image"], json!("flink:2.1")),
                SpecDiff::Transition,
            ),
            (
                "parallelism",
                base(),
                with(&["job", "parallelism"], json!(4)),
                SpecDiff::Transition,
            ),
            (
                "flink configuration",
                base(),
                with(
                    &["flinkConfiguration", "taskmanager.numberOfTaskSlots"],
                    json!("4"),
                ),
                SpecDiff::Transition,
            ),
        ];
        for (name, before, after, expected) in cases {
            assert_eq!(diff(&spec(before), &spec(after)), expected, "{name}");
        }
    }

    #[test]
    fn suspend_and_resume_win_over_a_redeploy_nonce() {
        let after = suspended(with(&["job", "savepointRedeployNonce"], json!(7)));
        assert_eq!(diff(&spec(base()), &spec(after)), SpecDiff::Suspend);
    }

    #[test]
    fn a_missing_template_counts_as_an_empty_spec() {
        let empty = FlinkBlueGreenDeploymentSpec::default();
        assert_eq!(diff(&empty, &empty), SpecDiff::Ignore);
        assert_eq!(diff(&empty, &spec(base())), SpecDiff::Transition);
    }

    #[test]
    fn a_child_started_from_its_own_savepoint_runs_the_template() {
        let template: FlinkDeploymentSpec = serde_json::from_value(base()).expect("spec");
        let child: FlinkDeploymentSpec = serde_json::from_value(with(
            &["job", "initialSavepointPath"],
            json!("s3://sp/transition"),
        ))
        .expect("spec");
        assert!(!ends_job(&child, &template));
        let newer: FlinkDeploymentSpec =
            serde_json::from_value(with(&["image"], json!("flink:2.1"))).expect("spec");
        assert!(ends_job(&child, &newer));
    }
}
