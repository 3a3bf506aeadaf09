//! What the lifecycle reads of a spec, whatever kind holds it: its job, and which of its
//! changes end the job.

use flink_operator_api::{
    FlinkSpec, ReconciledSpec,
    common::{JobState, ReconciliationStatus, UpgradeMode},
};

/// Whether the spec asks for its job to be suspended.
pub fn is_suspended(spec: &impl FlinkSpec) -> bool {
    spec.job()
        .is_some_and(|j| j.state_or_default() == JobState::Suspended)
}

/// The spec's upgrade mode (stateless without a job).
pub fn upgrade_mode(spec: &impl FlinkSpec) -> UpgradeMode {
    spec.job()
        .map(|j| j.upgrade_mode_or_default())
        .unwrap_or_default()
}

/// The spec without the fields whose change does not end the job: the snapshot nonces
/// (they trigger snapshots of the running job), the upgrade mode and `allowNonRestoredState`
/// (they say how the next start is made) and the operator's and the autoscaler's own
/// configuration keys (read on every reconcile, never sent to Flink), but for the
/// autoscaler's parallelism overrides, which count as `pipeline.jobvertex-parallelism-overrides`.
pub fn upgrade_relevant<S: FlinkSpec>(spec: &S) -> S {
    let mut spec = without_defaults(spec);
    if let Some(job) = spec.job_mut() {
        job.savepoint_trigger_nonce = None;
        job.checkpoint_trigger_nonce = None;
        job.autoscaler_reset_nonce = None;
        job.upgrade_mode = None;
        job.allow_non_restored_state = None;
    }
    let config = spec.flink_configuration_mut();
    // The autoscaler's overrides (an operator key) change what Flink runs: they count as
    // the overrides Flink is given.
    if let Some(c) = config.as_mut()
        && c.contains_key(flink_operator_api::keys::operator::AUTOSCALER_PARALLELISM_OVERRIDES)
        && let Some(merged) = crate::resources::parallelism::merged_overrides(&c.flattened())
    {
        c.insert(
            flink_operator_api::keys::flink::PIPELINE_JOBVERTEX_PARALLELISM_OVERRIDES,
            merged,
        );
    }
    *config = without_operator_keys(config.take()).and_then(|mut config| {
        config
            .0
            .retain(|k, _| !k.starts_with(flink_operator_api::keys::flink::AUTOSCALER_PREFIX));
        (!config.is_empty()).then_some(config)
    });
    spec
}

/// `spec` with the fields that hold their default value unset: written out or left out, they
/// ask for the same (`job.args: []`, `job.state: running`, `jobManager.replicas: 1`). The
/// Apache operator records every such default in `lastReconciledSpec`; a user may write them
/// or not.
pub fn without_defaults<S: FlinkSpec>(spec: &S) -> S {
    let mut spec = spec.clone();
    if let Some(job) = spec.job_mut() {
        if job.args.as_ref().is_some_and(Vec::is_empty) {
            job.args = None;
        }
        if job.state == Some(JobState::Running) {
            job.state = None;
        }
    }
    spec.clear_defaults();
    spec
}

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

/// Whether `spec` differs from `recorded` in a way that ends the job.
pub fn changed<S: FlinkSpec>(recorded: &S, spec: &S) -> bool {
    upgrade_relevant(recorded) != upgrade_relevant(spec)
}

/// `spec` as recorded when its changes end no job: the recorded snapshot nonces stay until
/// their snapshots are triggered.
pub fn with_recorded_nonces<S: FlinkSpec>(spec: &S, recorded: &S) -> S {
    let mut spec = spec.clone();
    if let (Some(job), Some(old)) = (spec.job_mut(), recorded.job()) {
        job.savepoint_trigger_nonce = old.savepoint_trigger_nonce;
        job.checkpoint_trigger_nonce = old.checkpoint_trigger_nonce;
    }
    spec
}

/// Whether the recorded spec is still the first one deployed (`firstDeployment` in the
/// record, as the Apache operator writes it).
pub fn first_recorded<S: FlinkSpec>(reconciliation: Option<&ReconciliationStatus>) -> bool {
    reconciliation
        .and_then(|rs| rs.last_reconciled::<S>().ok().flatten())
        .is_some_and(|r| r.is_first_deployment())
}

/// Records `spec` as the last reconciled one, keeping whether it is the first deployment.
pub fn record<S: FlinkSpec>(reconciliation: &mut ReconciliationStatus, spec: S) {
    let first = first_recorded::<S>(Some(reconciliation));
    reconciliation.last_reconciled_spec = encode(spec, first);
}

/// The spec as `lastReconciledSpec` holds it.
pub fn encode<S: FlinkSpec>(spec: S, first: bool) -> Option<String> {
    ReconciledSpec::new(spec, first).encode().ok()
}

/// The snapshot a nonce changed since it was recorded asks for (a savepoint first).
pub fn new_nonce(
    spec: &impl FlinkSpec,
    recorded: &impl FlinkSpec,
) -> Option<flink_operator_api::SnapshotType> {
    let wanted = spec.job()?;
    let old = recorded.job().cloned().unwrap_or_default();
    let changed = |new: Option<i64>, old: Option<i64>| new.is_some() && new != old;
    if changed(wanted.savepoint_trigger_nonce, old.savepoint_trigger_nonce) {
        Some(flink_operator_api::SnapshotType::Savepoint)
    } else if changed(wanted.checkpoint_trigger_nonce, old.checkpoint_trigger_nonce) {
        Some(flink_operator_api::SnapshotType::Checkpoint)
    } else {
        None
    }
}

/// Whether a new `savepointRedeployNonce` asks for the job to start from
/// `initialSavepointPath`.
pub fn redeploy_nonce_changed(spec: &impl FlinkSpec, recorded: &impl FlinkSpec) -> bool {
    let nonce = spec.job().and_then(|j| j.savepoint_redeploy_nonce);
    nonce.is_some() && nonce != recorded.job().and_then(|j| j.savepoint_redeploy_nonce)
}

#[cfg(test)]
mod tests {
    use flink_operator_api::{FlinkDeploymentSpec, ReconciliationStatus};
    use serde_json::json;

    use super::changed;

    /// What the Apache operator 1.10 records after a first deployment of this spec: every
    /// field of its Java classes, nulls and defaults included (`args: []`, `jobManager.replicas:
    /// 1`, cpu as a double), and `upgradeMode: stateless` whatever the spec says.
    #[test]
    fn a_spec_recorded_by_the_apache_operator_is_no_change_of_the_same_spec() {
        let spec: FlinkDeploymentSpec = serde_json::from_value(json!({
            "image": "flink:1.20.5", "flinkVersion": "v1_20", "serviceAccount": "flink",
            "flinkConfiguration": {"taskmanager.numberOfTaskSlots": "2"},
            "jobManager": {"resource": {"memory": "1024m", "cpu": 1}},
            "taskManager": {"resource": {"memory": "1024m", "cpu": 1}},
            "job": {"jarURI": "local:///opt/flink/usrlib/job.jar", "parallelism": 2, "upgradeMode": "last-state"},
        }))
        .unwrap();
        let recorded = r#"{"spec":{"job":{"jarURI":"local:///opt/flink/usrlib/job.jar","parallelism":2,"entryClass":null,"args":[],"state":"running","savepointTriggerNonce":null,"initialSavepointPath":null,"checkpointTriggerNonce":null,"upgradeMode":"stateless","allowNonRestoredState":null,"savepointRedeployNonce":null},"restartNonce":null,"flinkConfiguration":{"taskmanager.numberOfTaskSlots":"2"},"image":"flink:1.20.5","imagePullPolicy":null,"serviceAccount":"flink","flinkVersion":"v1_20","ingress":null,"podTemplate":null,"jobManager":{"resource":{"cpu":1.0,"memory":"1024m","ephemeralStorage":null},"replicas":1,"podTemplate":null},"taskManager":{"resource":{"cpu":1.0,"memory":"1024m","ephemeralStorage":null},"replicas":null,"podTemplate":null},"logConfiguration":null,"mode":null},"resource_metadata":{"apiVersion":"flink.apache.org/v1beta1","firstDeployment":true}}"#;
        let status = ReconciliationStatus {
            last_reconciled_spec: Some(recorded.to_owned()),
            ..ReconciliationStatus::default()
        };
        let recorded: FlinkDeploymentSpec = status.last_reconciled().unwrap().unwrap().spec;
        assert!(!changed(&recorded, &spec), "{recorded:#?}\n{spec:#?}");
    }

    #[test]
    fn a_default_written_out_or_left_out_is_no_change_and_another_value_is() {
        let spec = |job: serde_json::Value, jm: serde_json::Value| -> FlinkDeploymentSpec {
            serde_json::from_value(json!({"job": job, "jobManager": jm})).unwrap()
        };
        let bare = spec(json!({"jarURI": "local:///j.jar"}), json!(null));
        for (written, why) in [
            (
                spec(
                    json!({"jarURI": "local:///j.jar", "state": "running"}),
                    json!(null),
                ),
                "state: running",
            ),
            (
                spec(json!({"jarURI": "local:///j.jar", "args": []}), json!(null)),
                "args: []",
            ),
            (
                spec(json!({"jarURI": "local:///j.jar"}), json!({"replicas": 1})),
                "jobManager.replicas: 1",
            ),
        ] {
            assert!(!changed(&bare, &written), "{why}");
            assert!(!changed(&written, &bare), "{why}");
        }
        for (other, why) in [
            (
                spec(
                    json!({"jarURI": "local:///j.jar", "state": "suspended"}),
                    json!(null),
                ),
                "state: suspended",
            ),
            (
                spec(json!({"jarURI": "local:///j.jar", "args": ["--x"]}), json!(null)),
                "args: [--x]",
            ),
            (
                spec(json!({"jarURI": "local:///j.jar"}), json!({"replicas": 2})),
                "jobManager.replicas: 2",
            ),
        ] {
            assert!(changed(&bare, &other), "{why}");
        }
    }
}
