//! Reading the world of one FlinkSessionJob: its session FlinkDeployment, and its job,
//! savepoint and checkpoints through that cluster's REST API.

use flink_operator_api::validation::limits::PlatformLimits;
use flink_operator_api::{
    FlinkDeployment, FlinkSessionJob, JobManagerDeploymentStatus, UpgradeMode,
    common::FlinkJobState,
    keys::operator,
    options::read,
    validation::session_job::{self, ArtifactPolicy},
};
use kube::ResourceExt;

use super::{
    artifact::{self, DownloadHeaders},
    decide::{JarDownload, Observation, SessionObservation},
    downloads::downloads,
};
use crate::{
    caches::Caches,
    context::Context,
    flink::{JobId, TriggerId, poll},
    lifecycle::records,
    policy::Policy,
};

/// The observation, and the session cluster's REST address when it is ready (for act).
pub struct Observed {
    pub observation: Observation,
    pub rest_url: Option<String>,
}

/// What the session cluster can do for its jobs. One that is being deleted but still runs
/// (it waits for its session jobs to go) is ready: a job deleted with it is stopped or
/// cancelled as its settings say, not left running in a cluster that then waits for it.
fn session_state(session: &FlinkDeployment) -> SessionObservation {
    if session.spec.job.is_some() {
        return SessionObservation::NotSession;
    }
    let jm = session
        .status
        .as_ref()
        .and_then(|s| s.job_manager_deployment_status)
        .unwrap_or_default();
    if jm == JobManagerDeploymentStatus::Ready {
        SessionObservation::Ready
    } else if session.metadata.deletion_timestamp.is_some() {
        SessionObservation::Deleting
    } else {
        SessionObservation::NotReady(format!("its JobManager is {}", jm.as_str()))
    }
}

/// Whether a resource's own `flinkConfiguration` sets the download headers (which are then
/// the tenant's, not the platform's).
fn sets_headers(config: Option<&flink_operator_api::FlinkConfiguration>) -> bool {
    config.is_some_and(|c| c.flattened().contains_key(operator::USER_ARTIFACTS_HTTP_HEADER))
}

/// The download of the spec's jar, when it is an http(s) one.
fn jar_download(sj: &FlinkSessionJob) -> Option<JarDownload> {
    let uri = sj.spec.job.as_ref()?.jar_uri.clone()?;
    if !artifact::is_download(&uri) {
        return None;
    }
    let state = downloads().state(&sj.uid().unwrap_or_default(), &uri);
    Some(JarDownload { uri, state })
}

pub async fn observe(ctx: &Context, caches: &Caches, sj: &FlinkSessionJob) -> Result<Observed, kube::Error> {
    let namespace = sj.namespace().unwrap_or_default();
    let session_name = sj.spec.deployment_name.clone().unwrap_or_default();
    // From the shared cache: the session cluster's changes wake this job (see the loop's
    // triggers), so the cache is as fresh as this reconcile needs.
    let session = if session_name.is_empty() {
        None
    } else {
        caches.deployments.get(&namespace, &session_name)
    };
    let config = ctx.session_job_config(sj, session.as_deref());
    let validation = ctx.validation();
    let violations = validation
        .operator_namespace_violation(&namespace)
        .into_iter()
        .chain(session_job::validate(sj, None, session.as_deref(), &validation))
        .map(|v| v.to_string())
        .collect();
    let policy = Policy::from_config(&config)
        .with_limits(&PlatformLimits::new(&validation, &namespace))
        .with_flink_version(session.as_ref().and_then(|s| s.spec.flink_version))
        .with_snapshot_loop(crate::policy::snapshot_loop_enabled(
            &ctx.operator_config.current(),
        ));
    // The recorded overrides hold whatever this look finds (a session cluster not ready, a
    // job not sampled); a judgement of the job below adds its changes.
    let autoscaler = crate::autoscaler::apply::after_look(
        &sj.spec,
        sj.status.as_ref().and_then(|s| s.reconciliation_status.as_ref()),
        &policy.autoscaler,
        Default::default(),
        policy.task_slots,
    );
    let now_ms = k8s_openapi::jiff::Timestamp::now().as_millisecond();
    let kind = flink_operator_api::JobKind::FlinkSessionJob;
    let records::Records {
        snapshots,
        revisions,
        history_needed_by,
    } = records::look_up(caches, kind, sj, &policy, now_ms);
    let mut observation = Observation {
        autoscaler,
        violations,
        policy,
        snapshots,
        revisions: Some(revisions),
        history_needed_by,
        artifact_policy: ArtifactPolicy::new(&validation, &namespace),
        artifact_headers: DownloadHeaders::of(
            read::map(&config, operator::USER_ARTIFACTS_HTTP_HEADER),
            sets_headers(sj.spec.flink_configuration.as_ref())
                || sets_headers(session.as_ref().and_then(|s| s.spec.flink_configuration.as_ref())),
        ),
        download: jar_download(sj),
        fresh_trigger_id: TriggerId::random().as_str().to_owned(),
        fresh_job_id: JobId::random().as_str().to_owned(),
        now_ms,
        ..Default::default()
    };
    let Some(session) = session else {
        return Ok(Observed {
            observation,
            rest_url: None,
        });
    };
    observation.session = session_state(&session);
    if observation.session != SessionObservation::Ready {
        return Ok(Observed {
            observation,
            rest_url: None,
        });
    }
    let url = match ctx.rest_url(&session).await {
        Ok(url) => url,
        Err(e) => {
            observation.session = SessionObservation::NotReady(format!("its REST address is unknown: {e}"));
            return Ok(Observed {
                observation,
                rest_url: None,
            });
        }
    };
    let rest = match ctx.rest_client(
        &url,
        super::KIND,
        &sj.namespace().unwrap_or_default(),
        &sj.name_any(),
    ) {
        Ok(rest) => rest,
        Err(e) => {
            observation.session = SessionObservation::NotReady(e.to_string());
            return Ok(Observed {
                observation,
                rest_url: None,
            });
        }
    };
    if let Some(job_status) = sj.status.as_ref().and_then(|s| s.job_status.as_ref())
        && let Some(job_id) = job_status.job_id.as_deref()
    {
        let failure_known = job_status.state == Some(FlinkJobState::Failed)
            && sj.status.as_ref().is_some_and(|s| s.error.is_some());
        let stateful = sj
            .spec
            .job
            .as_ref()
            .is_some_and(|j| j.upgrade_mode_or_default() != UpgradeMode::Stateless);
        // The latest checkpoint is read while the job runs too: the restore guard is checked
        // before a job is ended for a restore, and a failed job is restarted from it.
        let savepoint_dir = observation.policy.savepoint_dir.clone();
        let asking = poll::Asking {
            failure_known,
            latest_checkpoint: stateful,
            savepoint_dir: savepoint_dir.as_deref(),
        };
        let look = poll::look(&rest, job_status, &JobId::from(job_id), asking).await;
        observation.job = Some(look.job);
        observation.savepoint = look.savepoint;
        observation.late_savepoint = look.late_savepoint;
        observation.manual_checkpoint = look.checkpoint;
        observation.checkpoint = look.latest_checkpoint;
        // Whether a cancellation keeps the checkpoints is asked only while a change of a
        // stateful job that still runs is pending: a steady job costs no extra call.
        let live = matches!(&observation.job, Some(crate::flink::job::JobObservation::Found { state, .. })
            if !state.is_globally_terminal());
        let observed_generation = sj.status.as_ref().and_then(|s| s.observed_generation);
        if live
            && crate::lifecycle::retention::wanted(
                stateful,
                sj.metadata.generation,
                observed_generation,
                &observation.policy,
            )
        {
            observation.on_cancel = crate::lifecycle::retention::look(&rest, &JobId::from(job_id)).await;
        }
        let uid = sj.uid().unwrap_or_default();
        let resource = crate::autoscaler::memory::ScaledResource {
            uid: &uid,
            options: &observation.policy.autoscaler,
            rest: &rest,
        };
        let judgement = crate::autoscaler::memory::look_at_job(
            &ctx.autoscaler,
            resource,
            Some(job_status),
            observation.job.as_ref(),
        )
        .await;
        if judgement != Default::default() {
            observation.autoscaler = crate::autoscaler::apply::after_look(
                &sj.spec,
                sj.status.as_ref().and_then(|s| s.reconciliation_status.as_ref()),
                &observation.policy.autoscaler,
                judgement,
                observation.policy.task_slots,
            );
        }
    }
    Ok(Observed {
        observation,
        rest_url: Some(url),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_session_cluster_being_deleted_is_ready_while_its_jobmanager_runs() {
        let cluster = |job: bool, deleting: bool, jm: &str| -> FlinkDeployment {
            let mut value = json!({
                "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
                "metadata": {"name": "session", "namespace": "ns"},
                "spec": {"image": "flink:2.3", "flinkVersion": "v2_3"},
                "status": {"jobManagerDeploymentStatus": jm},
            });
            if job {
                value["spec"]["job"] = json!({"jarURI": "local:///opt/flink/job.jar"});
            }
            if deleting {
                value["metadata"]["deletionTimestamp"] = json!("2026-12-05T10:00:00Z");
            }
            serde_json::from_value(value).unwrap()
        };
        assert_eq!(
            session_state(&cluster(false, false, "READY")),
            SessionObservation::Ready
        );
        // Deleted with its jobs: it waits for them, so they are stopped through it.
        assert_eq!(
            session_state(&cluster(false, true, "READY")),
            SessionObservation::Ready
        );
        assert_eq!(
            session_state(&cluster(false, true, "MISSING")),
            SessionObservation::Deleting
        );
        assert!(matches!(
            session_state(&cluster(false, false, "DEPLOYING")),
            SessionObservation::NotReady(_)
        ));
        assert_eq!(
            session_state(&cluster(true, false, "READY")),
            SessionObservation::NotSession
        );
    }
}
