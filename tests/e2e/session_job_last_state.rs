//! The Apache operator's own end-to-end scenario for session jobs, on every Flink version
//! the tests run: a session cluster with Kubernetes high availability and its checkpoints on
//! a volume; a FlinkSessionJob in savepoint mode; a savepoint asked for by a nonce; a
//! savepoint upgrade; then ONE edit that sets `upgradeMode: last-state` and a new
//! parallelism. The job was submitted in savepoint mode, yet the last-state upgrade cancels
//! it only because its checkpoints outlive the cancellation (the operator asks every job to
//! retain them, and reads the running job's checkpoint configuration before it cancels):
//! the new job restores the cancelled one's latest checkpoint, and its key counts go on.
//!
//! Then (on the newest version) a job whose own configuration deletes its checkpoints on
//! cancellation: its last-state upgrade is not a cancellation but a stop with a savepoint,
//! and its counts go on from that.

use std::time::{Duration, Instant, SystemTime};

use flink_operator_api::{
    FlinkDeployment, FlinkJobState, FlinkSessionJob, FlinkStateSnapshot, FlinkStateSnapshotState,
};
use flink_operator_controller::flink::{FlinkRestClient, JobId};
use k8s_openapi::api::core::v1::Event;
use kube::{
    Api, Client,
    api::{DeleteParams, ListParams, Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};

use crate::{
    cluster_harness::{self, LOCAL_JARS_NAMESPACE, wait_for},
    flink_harness,
    harness::{self, LogsOnFailure},
    objects,
    reconcile::{OperatorLogOnFailure, counted_to, counts_went_on},
    session_job::LocalJarsNamespace,
};

/// A session job of the test job writing its counts under /opt/flink/state/`counts` in the
/// session cluster `session`, with its own `configuration`.
fn session_job(
    name: &str,
    session: &str,
    jar: &str,
    counts: &str,
    mode: &str,
    configuration: Value,
) -> FlinkSessionJob {
    serde_json::from_value(json!({
        "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkSessionJob",
        "metadata": {"name": name, "namespace": LOCAL_JARS_NAMESPACE},
        "spec": {
            "deploymentName": session,
            "flinkConfiguration": configuration,
            "job": {
                "jarURI": jar,
                "entryClass": flink_harness::JOB_CLASS,
                "args": ["--rate", "20", "--keys", "4", "--out", format!("/opt/flink/state/{counts}")],
                "parallelism": 1,
                "upgradeMode": mode,
            },
        },
    }))
    .unwrap()
}

fn job_id(sj: &FlinkSessionJob) -> JobId {
    JobId::from(
        sj.status
            .as_ref()
            .and_then(|s| s.job_status.as_ref())
            .and_then(|j| j.job_id.as_deref())
            .unwrap(),
    )
}

/// Flink's state of `job` in the session cluster.
async fn flink_state(rest: &FlinkRestClient, job: &JobId) -> Option<FlinkJobState> {
    let jobs = rest.jobs_overview().await.ok()?;
    jobs.iter().find(|j| &j.jid == job).map(|j| j.state.clone())
}

/// The path the running `job` restored from, and whether it is a savepoint.
async fn restored_from(rest: &FlinkRestClient, job: &JobId) -> (String, bool) {
    wait_for(
        &format!("job {job}'s restore in its checkpoint statistics"),
        Duration::from_secs(60),
        || async {
            let restored = rest.checkpoint_statistics(job).await.ok()?.latest.restored?;
            Some((restored.external_path?, restored.is_savepoint))
        },
    )
    .await
}

/// The notes of the Events of `reason` in the namespace.
async fn events_of(client: &Client, reason: &str) -> Vec<String> {
    let events: Api<Event> = Api::namespaced(client.clone(), LOCAL_JARS_NAMESPACE);
    (events.list(&Default::default()).await.unwrap().items.into_iter())
        .filter(|e| e.reason.as_deref() == Some(reason))
        .filter_map(|e| e.message)
        .collect()
}

async fn patch(api: &Api<FlinkSessionJob>, name: &str, patch: Value) {
    api.patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .unwrap();
}

/// Deletes the resource and waits until it is gone.
async fn delete_and_wait<K>(api: &Api<K>, name: &str)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.delete(name, &DeleteParams::default()).await.unwrap();
    wait_for(&format!("{name} gone"), Duration::from_secs(180), || async {
        api.get_opt(name).await.ok()?.is_none().then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_job_made_last_state_in_one_edit_with_a_new_parallelism_restores_its_checkpoint() {
    let client = harness::client().await;
    crate::operator::shared(&client).await;
    let _turn = cluster_harness::beside_others().await;
    let _operator_log = OperatorLogOnFailure;
    let _ns = LocalJarsNamespace::new(&client).await;
    let _logs = LogsOnFailure(LOCAL_JARS_NAMESPACE.to_owned());
    objects::create_all(&client, &objects::flink_service_account(LOCAL_JARS_NAMESPACE)).await;
    let state = harness::state_dir(LOCAL_JARS_NAMESPACE);
    let deployments: Api<FlinkDeployment> = Api::namespaced(client.clone(), LOCAL_JARS_NAMESPACE);
    let jobs: Api<FlinkSessionJob> = Api::namespaced(client.clone(), LOCAL_JARS_NAMESPACE);
    // The newest version in every run; all with FLINK_E2E_EVERY_VERSION (scripts/test-flink-versions).
    let mut versions = flink_harness::versions();
    if std::env::var_os("FLINK_E2E_EVERY_VERSION").is_none() {
        versions.drain(..versions.len() - 1);
    }
    for (i, version) in versions.iter().enumerate() {
        let jar = flink_harness::job_jar_async(version).await;
        let jar = format!("file://{}", jar.display());
        // One session cluster per version, with Kubernetes HA and its state on the volume.
        let session = format!("ls-session-{i}");
        let mut spec = objects::stateful_cluster_spec(version, &state);
        spec["flinkConfiguration"]["high-availability.type"] = json!("kubernetes");
        spec["flinkConfiguration"]["high-availability.storageDir"] =
            json!(format!("file:///opt/flink/state/ha-{i}"));
        let fd: FlinkDeployment = serde_json::from_value(json!({
            "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
            "metadata": {"name": session, "namespace": LOCAL_JARS_NAMESPACE},
            "spec": spec,
        }))
        .unwrap();
        deployments.create(&PostParams::default(), &fd).await.unwrap();

        // A job in savepoint mode.
        let name = format!("counter-{i}");
        let counts_name = format!("counts-last-state-{i}");
        let counts = state.join(&counts_name);
        let sj = session_job(&name, &session, &jar, &counts_name, "savepoint", json!({}));
        jobs.create(&PostParams::default(), &sj).await.unwrap();
        let first = harness::running_job(&jobs, &name, None).await;
        let url = harness::rest_address(&client, LOCAL_JARS_NAMESPACE, &session).await;
        let rest = harness::rest_client(&url);
        counted_to(&counts, 20).await;

        // A savepoint by nonce.
        patch(
            &jobs,
            &name,
            json!({"spec": {"job": {"savepointTriggerNonce": 1}}}),
        )
        .await;
        let snapshots: Api<FlinkStateSnapshot> = Api::namespaced(client.clone(), LOCAL_JARS_NAMESPACE);
        let selector = format!("job-reference.name={name},snapshot.trigger-type=MANUAL");
        let manual = wait_for(
            "the savepoint asked for by the nonce",
            Duration::from_secs(120),
            || async {
                let listed = snapshots
                    .list(&ListParams::default().labels(&selector))
                    .await
                    .ok()?;
                listed.items.into_iter().find_map(|s| {
                    let status = s.status?;
                    (status.state == Some(FlinkStateSnapshotState::Completed))
                        .then_some(status.path)
                        .flatten()
                })
            },
        )
        .await;

        // A savepoint upgrade.
        let before = counted_to(&counts, 30).await;
        let since = SystemTime::now();
        patch(&jobs, &name, json!({"spec": {"job": {"args": [
            "--rate", "20", "--keys", "4", "--out", format!("/opt/flink/state/{counts_name}"), "--name", "counter",
        ]}}}))
        .await;
        let upgraded = harness::running_job(&jobs, &name, Some(job_id(&first).as_str())).await;
        let (from, is_savepoint) = restored_from(&rest, &job_id(&upgraded)).await;
        assert!(
            is_savepoint && from != manual,
            "{version}: restored {from}, the nonce's was {manual}"
        );
        counts_went_on(&counts, &before, since, 0).await;

        // ONE edit: last-state, and a new parallelism.
        // Counts well beyond a checkpoint interval's worth (5 s at 5 a second per key), so that
        // a restore from the latest checkpoint is told apart from a start from nothing.
        let before = counted_to(&counts, before.values().max().copied().unwrap_or(0) + 60).await;
        let since = SystemTime::now();
        let started = Instant::now();
        patch(
            &jobs,
            &name,
            json!({"spec": {"job": {"upgradeMode": "last-state", "parallelism": 2}}}),
        )
        .await;
        let last_state = harness::running_job(&jobs, &name, Some(job_id(&upgraded).as_str())).await;
        let took = started.elapsed();
        assert_eq!(
            flink_state(&rest, &job_id(&upgraded)).await,
            Some(FlinkJobState::Canceled),
            "{version}: the savepoint-mode job was cancelled for the last-state upgrade"
        );
        // Flink reports a checkpoint restored through the savepoint path as a savepoint: the
        // path says it is the cancelled job's retained checkpoint.
        let (from, _) = restored_from(&rest, &job_id(&last_state)).await;
        assert!(
            from.contains(&format!("/{}/chk-", job_id(&upgraded))),
            "{version}: restored {from}"
        );
        let recorded = last_state.status.as_ref().and_then(|s| s.job_status.as_ref());
        assert_eq!(
            recorded.and_then(|j| j.upgrade_savepoint_path.clone()),
            Some(from.clone()),
            "{version}"
        );
        // A checkpoint, not a savepoint taken at the stop: the counts written since it are
        // written again, so the restored counts may lag (a job started over would count from 1).
        counts_went_on(&counts, &before, since, 40).await;
        let after = flink_harness::read_counts(&counts);
        eprintln!(
            "Flink {version}: last-state upgrade with parallelism 2 RUNNING after {took:?}, restored {from}; counts before {before:?}, after {after:?}"
        );
        let details = rest.job_details(&job_id(&last_state)).await.unwrap();
        assert!(
            details.vertices.iter().any(|v| v.parallelism == 2),
            "{version}: runs with parallelism 2: {details:?}"
        );

        // A job whose own configuration deletes its checkpoints when cancelled: the
        // last-state upgrade stops it with a savepoint instead (on the newest version only,
        // to keep the test short).
        delete_and_wait(&jobs, &name).await;
        if i + 1 == versions.len() {
            let name = format!("deleting-{i}");
            let counts_name = format!("counts-deleting-{i}");
            let counts = state.join(&counts_name);
            let sj = session_job(
                &name,
                &session,
                &jar,
                &counts_name,
                "last-state",
                json!({"execution.checkpointing.externalized-checkpoint-retention": "DELETE_ON_CANCELLATION"}),
            );
            jobs.create(&PostParams::default(), &sj).await.unwrap();
            let first = harness::running_job(&jobs, &name, None).await;
            let before = counted_to(&counts, 30).await;
            let since = SystemTime::now();
            let started = Instant::now();
            patch(&jobs, &name, json!({"spec": {"job": {"parallelism": 2}}})).await;
            let upgraded = harness::running_job(&jobs, &name, Some(job_id(&first).as_str())).await;
            let took = started.elapsed();
            assert_eq!(
                flink_state(&rest, &job_id(&first)).await,
                Some(FlinkJobState::Finished),
                "{version}: stopped with a savepoint, not cancelled"
            );
            let (from, is_savepoint) = restored_from(&rest, &job_id(&upgraded)).await;
            assert!(is_savepoint, "{version}: restored {from}");
            counts_went_on(&counts, &before, since, 0).await;
            let said = events_of(&client, "SpecChanged").await;
            assert!(
                said.iter()
                    .any(|n| n.starts_with("Not cancelling job") && n.contains("DELETE_ON_CANCELLATION")),
                "{version}: {said:?}"
            );
            eprintln!(
                "Flink {version}: last-state upgrade of a job deleting its checkpoints on cancellation: stopped with a savepoint, RUNNING after {took:?}, restored {from}"
            );
            delete_and_wait(&jobs, &name).await;
        }
        delete_and_wait(&deployments, &session).await;
    }
}
