//! The counting job's state through last-state upgrades, a rollback, suspend and resume, and
//! a restore refused for its age: each test proves the state by the counts the job writes to the
//! host (a restored job counts on, a fresh one would start again at 1).

use std::{collections::BTreeMap, path::PathBuf, time::Duration};

use flink_operator_api::{FlinkDeployment, FlinkJobState};
use k8s_openapi::api::core::v1::Pod;
use kube::{
    Api, Client,
    api::{DeleteParams, ListParams, Patch, PatchParams},
};
use serde_json::json;

use crate::{
    cluster_harness::{self, TestNamespace, wait_for},
    flink_harness,
    harness::{self, LogsOnFailure},
    objects,
    reconcile::{OperatorLogOnFailure, counted_to, counts_went_on, create_counter},
};

/// One counting FlinkDeployment in its own namespace, with its state directory on the host.
struct Counter {
    client: Client,
    api: Api<FlinkDeployment>,
    ns: TestNamespace,
    counts: PathBuf,
}

impl Counter {
    async fn create(
        client: &Client,
        prefix: &str,
        version: &str,
        mode: &str,
        config: &[(&str, &str)],
    ) -> Self {
        let ns = TestNamespace::new(client, prefix).await;
        objects::create_all(client, &objects::flink_service_account(&ns.name)).await;
        let (api, state) = create_counter(client, &ns.name, version, mode, config).await;
        Counter {
            client: client.clone(),
            api,
            ns,
            counts: state.join("counts"),
        }
    }

    /// Waits for the job RUNNING (under another id than `previous`, if given) and STABLE;
    /// a timeout shows the status it got stuck in.
    async fn running(&self, previous: Option<&Option<String>>) -> FlinkDeployment {
        let deadline = std::time::Instant::now() + Duration::from_secs(240);
        loop {
            let fd = self.api.get("counter").await.ok();
            let status = fd.as_ref().and_then(|fd| fd.status.clone());
            let ok = status.as_ref().is_some_and(|status| {
                let job = status.job_status.clone().unwrap_or_default();
                job.state == Some(FlinkJobState::Running)
                    && status.lifecycle_state.map(|l| l.as_str()) == Some("STABLE")
                    && previous.is_none_or(|p| &job.job_id != p)
            });
            if ok {
                return fd.unwrap();
            }
            assert!(
                std::time::Instant::now() < deadline,
                "timed out waiting for the job RUNNING and the resource STABLE; status: {}",
                serde_json::to_string_pretty(&status).unwrap_or_default()
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    async fn counted_to(&self, at_least: u64) -> BTreeMap<u32, u64> {
        counted_to(&self.counts, at_least).await
    }

    async fn counts_went_on(&self, before: &BTreeMap<u32, u64>, since: std::time::SystemTime, lag: u64) {
        counts_went_on(&self.counts, before, since, lag).await
    }

    async fn patch(&self, patch: serde_json::Value) {
        self.api
            .patch("counter", &PatchParams::default(), &Patch::Merge(patch))
            .await
            .unwrap();
    }

    async fn pods(&self) -> usize {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &self.ns.name);
        pods.list(&ListParams::default().labels("app=counter"))
            .await
            .map(|l| l.items.len())
            .unwrap_or(usize::MAX)
    }

    async fn delete(&self) {
        self.api
            .delete("counter", &DeleteParams::default())
            .await
            .unwrap();
        wait_for("the FlinkDeployment gone", Duration::from_secs(120), || async {
            self.api.get_opt("counter").await.ok()?.is_none().then_some(())
        })
        .await;
    }
}

fn ready_reason(fd: &FlinkDeployment) -> Option<String> {
    fd.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_.as_deref() == Some("Ready"))?
        .reason
        .clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_last_state_upgrade_keeps_the_job_id_and_its_state_and_a_spec_that_cannot_start_is_rolled_back() {
    let client = harness::client().await;
    crate::operator::shared(&client).await;
    let _turn = cluster_harness::beside_others().await;
    let _operator_log = OperatorLogOnFailure;
    // Flink 1.x here; the savepoint upgrade test runs the newest 2.x.
    let version = flink_harness::versions().first().unwrap().clone();
    let counter = Counter::create(
        &client,
        "last-state",
        &version,
        "last-state",
        &[
            ("high-availability.type", "kubernetes"),
            ("high-availability.storageDir", "file:///opt/flink/state/ha"),
            // A lost JobManager Deployment is found at the next look of a steady job: every
            // 10 s rather than the default minute.
            ("kubernetes.operator.reconcile.interval", "10 s"),
        ],
    )
    .await;
    let _logs = LogsOnFailure(counter.ns.name.clone());
    let first = counter.running(None).await;
    let job_id = first.status.unwrap().job_status.unwrap().job_id;
    // 5 counts a second per key and a checkpoint every 5 s: the latest checkpoint lags the
    // written counts by well under 50, and a job started over would be far below 50.
    let before = counter.counted_to(100).await;

    counter.patch(json!({"spec": {"job": {"parallelism": 1}}})).await;
    let upgraded = wait_for(
        "the upgraded job RUNNING with parallelism 1",
        Duration::from_secs(240),
        || async {
            let fd = counter.api.get("counter").await.ok()?;
            let status = fd.status.clone()?;
            let recorded: flink_operator_api::FlinkDeploymentSpec = status
                .reconciliation_status
                .as_ref()?
                .last_reconciled_spec()
                .ok()??;
            let ok = recorded.job?.parallelism == Some(1)
                && status.job_status.as_ref()?.state == Some(FlinkJobState::Running)
                && status.lifecycle_state.map(|l| l.as_str()) == Some("STABLE");
            ok.then_some(fd)
        },
    )
    .await;
    let status = upgraded.status.unwrap();
    let job = status.job_status.unwrap();
    assert_eq!(job.job_id, job_id, "last-state keeps the job id");
    assert_eq!(job.upgrade_savepoint_path, None, "no savepoint was taken");
    let since = std::time::SystemTime::now();
    counter.counts_went_on(&before, since, 50).await;
    // Flink restored a checkpoint (not a savepoint) from its HA metadata.
    let url = harness::rest_address(&client, &counter.ns.name, "counter").await;
    let rest = harness::rest_client(&url);
    let id = flink_operator_controller::flink::JobId::from(job_id.as_deref().unwrap());
    let restored = harness::restored(&rest, &id).await;
    assert!(!restored.is_savepoint, "{restored:?}");

    // The JobManager Deployment deleted by hand: deployed again, and the job restores the
    // latest checkpoint from the HA metadata under the same job id.
    let before = flink_harness::read_counts(&counter.counts);
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::namespaced(client.clone(), &counter.ns.name);
    let lost = deployments.get("counter").await.unwrap().metadata.uid;
    let started = counter
        .api
        .get("counter")
        .await
        .unwrap()
        .status
        .unwrap()
        .job_status
        .unwrap()
        .start_time;
    let lost_at = std::time::Instant::now();
    deployments
        .delete("counter", &DeleteParams::foreground())
        .await
        .unwrap();
    wait_for(
        "a new JobManager Deployment and the job RUNNING again",
        Duration::from_secs(240),
        || async {
            let status = counter.api.get("counter").await.ok()?.status?;
            let job = status.job_status?;
            let running = status.lifecycle_state.map(|l| l.as_str()) == Some("STABLE")
                && job.state == Some(FlinkJobState::Running)
                && job.start_time != started;
            let replaced = deployments.get("counter").await.ok()?.metadata.uid != lost;
            (running && replaced).then_some(())
        },
    )
    .await;
    let since = std::time::SystemTime::now();
    eprintln!(
        "JobManager Deployment recovered, job RUNNING {:?} after the delete",
        lost_at.elapsed()
    );
    let status = counter.api.get("counter").await.unwrap().status.unwrap();
    assert_eq!(
        status.job_status.unwrap().job_id,
        job_id,
        "recovered under the same job id"
    );
    counter.counts_went_on(&before, since, 50).await;

    // A spec that cannot start (its image does not exist), with rollback enabled: after the
    // readiness timeout the last stable spec runs again, restoring the latest checkpoint
    // from the HA metadata, and the spec that failed is not deployed again.
    let before = flink_harness::read_counts(&counter.counts);
    let stable_image = objects::image(&version);
    let missing_image = "registry.invalid/no-such-image:1.0".to_owned();
    let failing_at = std::time::Instant::now();
    counter
        .patch(json!({"spec": {
            "image": missing_image,
            "flinkConfiguration": {
                "kubernetes.operator.deployment.rollback.enabled": "true",
                "kubernetes.operator.deployment.readiness.timeout": "20s",
            },
        }}))
        .await;
    let rolled_back = wait_for(
        "ROLLED_BACK with the job RUNNING",
        Duration::from_secs(240),
        || async {
            let fd = counter.api.get("counter").await.ok()?;
            let status = fd.status.clone()?;
            let ok = status.lifecycle_state.map(|l| l.as_str()) == Some("ROLLED_BACK")
                && status.job_status.as_ref()?.state == Some(FlinkJobState::Running);
            ok.then_some(fd)
        },
    )
    .await;
    let since = std::time::SystemTime::now();
    eprintln!(
        "rolled back and RUNNING {:?} after the failing spec was stored",
        failing_at.elapsed()
    );
    assert_eq!(ready_reason(&rolled_back).as_deref(), Some("RolledBack"));
    let status = rolled_back.status.unwrap();
    assert_eq!(
        status.job_status.unwrap().job_id,
        job_id,
        "a rollback restores under the same job id"
    );
    let recorded: flink_operator_api::FlinkDeploymentSpec = status
        .reconciliation_status
        .unwrap()
        .last_reconciled_spec()
        .unwrap()
        .unwrap();
    assert_eq!(
        recorded.image.as_deref(),
        Some(missing_image.as_str()),
        "the failed spec stays recorded"
    );
    counter.counts_went_on(&before, since, 50).await;
    let jm = deployments.get("counter").await.unwrap();
    let image = jm.spec.template.spec.unwrap().containers[0].image.clone();
    assert_eq!(
        image.as_deref(),
        Some(stable_image.as_str()),
        "the stable spec runs"
    );
    counter.delete().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suspended_job_resumes_with_its_state_unless_the_state_is_too_old() {
    let client = harness::client().await;
    crate::operator::shared(&client).await;
    let _turn = cluster_harness::beside_others().await;
    let _operator_log = OperatorLogOnFailure;
    let version = flink_harness::versions().last().unwrap().clone();
    let counter = Counter::create(&client, "suspend", &version, "savepoint", &[]).await;
    let _logs = LogsOnFailure(counter.ns.name.clone());
    let first = counter.running(None).await;
    let first_job = first.status.unwrap().job_status.unwrap().job_id;
    let before = counter.counted_to(50).await;

    // Suspend: stopped with a savepoint, its path in status, the cluster gone.
    counter
        .patch(json!({"spec": {"job": {"state": "suspended"}}}))
        .await;
    let suspended = wait_for(
        "SUSPENDED with no pods left",
        Duration::from_secs(180),
        || async {
            let fd = counter.api.get("counter").await.ok()?;
            let suspended = fd.status.as_ref()?.lifecycle_state.map(|l| l.as_str()) == Some("SUSPENDED");
            (suspended && counter.pods().await == 0).then_some(fd)
        },
    )
    .await;
    assert_eq!(ready_reason(&suspended).as_deref(), Some("Suspended"));
    let savepoint = suspended
        .status
        .unwrap()
        .job_status
        .unwrap()
        .upgrade_savepoint_path
        .unwrap();
    assert!(savepoint.contains("/opt/flink/state/savepoints/"), "{savepoint}");

    // Resume: the savepoint is restored and the counts go on.
    counter
        .patch(json!({"spec": {"job": {"state": "running"}}}))
        .await;
    let since = std::time::SystemTime::now();
    let resumed = counter.running(Some(&first_job)).await;
    let resumed_job = resumed.status.unwrap().job_status.unwrap().job_id;
    counter.counts_went_on(&before, since, 0).await;

    // Suspended again, with a restore bound the savepoint will have outlived: the resume
    // is refused, says why, and nothing runs.
    let before = flink_harness::read_counts(&counter.counts);
    counter
        .patch(json!({"spec": {"job": {"state": "suspended"}}}))
        .await;
    wait_for("SUSPENDED again", Duration::from_secs(180), || async {
        let fd = counter.api.get("counter").await.ok()?;
        (fd.status?.lifecycle_state.map(|l| l.as_str()) == Some("SUSPENDED")).then_some(())
    })
    .await;
    counter
        .patch(
            json!({"spec": {"flinkConfiguration": {"kubernetes.operator.job.restore.max-state-age": "2 s"}}}),
        )
        .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    counter
        .patch(json!({"spec": {"job": {"state": "running"}}}))
        .await;
    let refused = wait_for("the resume refused", Duration::from_secs(60), || async {
        let fd = counter.api.get("counter").await.ok()?;
        (ready_reason(&fd).as_deref() == Some("UpdateFailed")).then_some(fd)
    })
    .await;
    let error = refused.status.as_ref().unwrap().error.clone().unwrap();
    assert!(
        error.contains("older than kubernetes.operator.job.restore.max-state-age"),
        "{error}"
    );
    assert_eq!(counter.pods().await, 0, "nothing was started");
    let refusal = cluster_harness::wait_for_event(
        &client,
        &counter.ns.name,
        "the UpdateFailed Event",
        Duration::from_secs(30),
        |e| e.reason.as_deref() == Some("UpdateFailed"),
    )
    .await;
    assert!(refusal.message.unwrap_or_default().contains(" old, older than"));

    // Lifting the bound resumes from the same savepoint.
    counter
        .patch(
            json!({"spec": {"flinkConfiguration": {"kubernetes.operator.job.restore.max-state-age": "1 h"}}}),
        )
        .await;
    let since = std::time::SystemTime::now();
    counter.running(Some(&resumed_job)).await;
    counter.counts_went_on(&before, since, 0).await;
    counter.delete().await;
}

/// A GitOps prune-and-recreate of a last-state deployment: its deletion records the
/// checkpoint its HA metadata pointed at last as a FlinkStateSnapshot that outlives it (and
/// names it in an Event), and the resource created again from that path counts on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_last_state_deployment_recreated_from_its_recorded_state_counts_on() {
    use flink_operator_api::FlinkStateSnapshot;
    let client = harness::client().await;
    crate::operator::shared(&client).await;
    let _turn = cluster_harness::beside_others().await;
    let _operator_log = OperatorLogOnFailure;
    let version = flink_harness::versions().first().unwrap().clone();
    let config = [
        ("high-availability.type", "kubernetes"),
        ("high-availability.storageDir", "file:///opt/flink/state/ha"),
    ];
    let counter = Counter::create(&client, "deleted", &version, "last-state", &config).await;
    let _logs = LogsOnFailure(counter.ns.name.clone());
    counter.running(None).await;
    let before = counter.counted_to(100).await;

    counter.delete().await;
    let snapshots: Api<FlinkStateSnapshot> = Api::namespaced(client.clone(), &counter.ns.name);
    let recorded = wait_for(
        "the deletion's record of the state",
        Duration::from_secs(60),
        || async {
            let list = snapshots.list(&ListParams::default()).await.ok()?;
            list.items.into_iter().find(|s| {
                s.metadata
                    .name
                    .as_deref()
                    .is_some_and(|n| n.starts_with("counter-savepoint-upgrade-"))
            })
        },
    )
    .await;
    assert!(
        recorded
            .metadata
            .owner_references
            .as_ref()
            .is_none_or(Vec::is_empty),
        "owned by nobody: {:?}",
        recorded.metadata.owner_references
    );
    let savepoint = recorded.spec.savepoint.clone().expect("a savepoint spec");
    assert_eq!(savepoint.already_exists, Some(true));
    let path = savepoint.path.expect("the path");
    assert!(path.contains("/chk-"), "the latest checkpoint: {path}");

    // Created again, as a GitOps tool would, starting from the recorded path.
    let mut spec = crate::reconcile::counter_spec_with(
        &version,
        counter.counts.parent().unwrap(),
        "last-state",
        &config,
    )
    .await;
    spec["job"]["initialSavepointPath"] = json!(path);
    crate::reconcile::create_counter_of(&client, &counter.ns.name, spec).await;
    counter.running(None).await;
    let since = std::time::SystemTime::now();
    counter.counts_went_on(&before, since, 50).await;
}
