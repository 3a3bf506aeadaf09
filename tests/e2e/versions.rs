//! The job lifecycle on Flink versions in deployment modes: the version matrix that
//! `scripts/test-flink-versions` runs for every version of `tests/flink/versions-all`, native
//! and standalone.
//!
//! The versions come from `FLINK_E2E_VERSION` (one or more, e.g. `1.19.3` or `1.18.1,2.0.2`;
//! the harness installs them beside those of `tests/flink/versions`) and the modes from
//! `FLINK_E2E_MODE` (`native`, `standalone` or both). One cell is one version in one mode; the
//! modes of a version run side by side, the versions one after the other, all on one control
//! plane, local runtime and operator. Each cell prints `MATRIX-CELL <version> <mode>
//! <pass|FAIL> <seconds>`; the test fails if any cell failed. It is ignored in the normal
//! run; run on its own without the variables, it fails and says what to set, rather than
//! passing without having run anything.
//!
//! One FlinkDeployment of the counting job, as a job owner of that version writes it
//! (Kubernetes HA, so that last-state upgrades are possible), goes through a deploy, a
//! savepoint upgrade, a last-state upgrade, and a suspend and resume; after each, the counts
//! the job writes to the host go on from where they were instead of starting again at 1,
//! and Flink's checkpoint statistics show what it restored.

use std::{
    collections::BTreeMap,
    path::PathBuf,
    time::{Duration, Instant, SystemTime},
};

use flink_operator_api::{FlinkDeployment, FlinkDeploymentSpec, FlinkJobState};
use flink_operator_controller::flink::JobId;
use k8s_openapi::api::core::v1::Pod;
use kube::{
    Api, Client,
    api::{DeleteParams, ListParams, Patch, PatchParams, PostParams},
};
use serde_json::json;

use crate::{
    cluster_harness::{self, TestNamespace, wait_for},
    flink_harness,
    harness::{self, LogsOnFailure},
    objects,
    reconcile::{OperatorLogOnFailure, counted_to, counts_went_on},
};

const NAME: &str = "counter";

/// The versions and modes of the matrix, or a panic naming what is missing.
fn matrix() -> (Vec<String>, Vec<String>) {
    let versions = harness::matrix_versions();
    assert!(
        !versions.is_empty(),
        "FLINK_E2E_VERSION is not set: this test runs the Flink version matrix; \
         run scripts/test-flink-versions, or set FLINK_E2E_VERSION=1.19.3 FLINK_E2E_MODE=native"
    );
    let modes: Vec<String> = std::env::var("FLINK_E2E_MODE")
        .unwrap_or_default()
        .split([',', ' '])
        .filter(|m| !m.is_empty())
        .map(str::to_owned)
        .collect();
    assert!(
        !modes.is_empty() && modes.iter().all(|m| m == "native" || m == "standalone"),
        "FLINK_E2E_MODE must be native, standalone or both, not {modes:?}"
    );
    (versions, modes)
}

struct Counter {
    client: Client,
    api: Api<FlinkDeployment>,
    ns: String,
    counts: PathBuf,
}

impl Counter {
    fn status(fd: &FlinkDeployment) -> (Option<FlinkJobState>, Option<String>, Option<String>) {
        let status = fd.status.clone().unwrap_or_default();
        let job = status.job_status.clone().unwrap_or_default();
        (
            job.state,
            status.lifecycle_state.map(|l| l.as_str().to_owned()),
            job.job_id,
        )
    }

    /// Waits for the job RUNNING and the resource STABLE with `check` true of the spec it
    /// runs and its job id; a timeout shows the status it got stuck in.
    async fn running(
        &self,
        what: &str,
        check: impl Fn(&FlinkDeploymentSpec, &str) -> bool,
    ) -> FlinkDeployment {
        let deadline = Instant::now() + Duration::from_secs(300);
        loop {
            let fd = self.api.get(NAME).await.ok();
            if let Some(fd) = &fd {
                let (state, lifecycle, job_id) = Self::status(fd);
                let recorded: Option<FlinkDeploymentSpec> = fd
                    .status
                    .as_ref()
                    .and_then(|s| s.reconciliation_status.as_ref())
                    .and_then(|r| r.last_reconciled_spec().ok().flatten());
                let ok = state == Some(FlinkJobState::Running)
                    && lifecycle.as_deref() == Some("STABLE")
                    && recorded
                        .as_ref()
                        .zip(job_id.as_deref())
                        .is_some_and(|(spec, id)| check(spec, id));
                if ok {
                    return fd.clone();
                }
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; status: {}",
                serde_json::to_string_pretty(&fd.and_then(|fd| fd.status)).unwrap_or_default()
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    async fn patch(&self, patch: serde_json::Value) {
        self.api
            .patch(NAME, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .unwrap();
    }

    async fn pods(&self) -> usize {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &self.ns);
        pods.list(&ListParams::default().labels(&format!("app={NAME}")))
            .await
            .map(|l| l.items.len())
            .unwrap_or(usize::MAX)
    }

    async fn rest(&self) -> flink_operator_controller::flink::FlinkRestClient {
        harness::rest_client(&harness::rest_address(&self.client, &self.ns, NAME).await)
    }

    /// What the job `job_id` restored, from Flink's checkpoint statistics: (savepoint?, path).
    async fn restored(&self, job_id: &str) -> (bool, Option<String>) {
        let rest = self.rest().await;
        let id = JobId::from(job_id);
        let restored = harness::restored(&rest, &id).await;
        (restored.is_savepoint, restored.external_path)
    }

    /// Waits until the job `job_id` completed a checkpoint of its own (not the savepoint it
    /// restored), so that a last-state restore has a checkpoint to take.
    async fn checkpointed(&self, job_id: &str) {
        let rest = self.rest().await;
        let id = JobId::from(job_id);
        wait_for(
            "a completed checkpoint of the running job",
            Duration::from_secs(60),
            || async {
                let latest = rest.checkpoint_statistics(&id).await.ok()?.latest;
                let completed = latest.completed?;
                let restored = latest.restored.map(|r| r.id);
                (!completed.is_savepoint && Some(completed.id) != restored).then_some(())
            },
        )
        .await;
    }

    fn read_counts(&self) -> BTreeMap<u32, u64> {
        flink_harness::read_counts(&self.counts)
    }
}

fn job_id(fd: &FlinkDeployment) -> String {
    Counter::status(fd).2.unwrap_or_default()
}

fn upgrade_savepoint(fd: &FlinkDeployment) -> Option<String> {
    fd.status
        .as_ref()?
        .job_status
        .as_ref()?
        .upgrade_savepoint_path
        .clone()
}

fn step(version: &str, mode: &str, name: &str, started: Instant) {
    eprintln!(
        "MATRIX {version} {mode}: {name} after {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the Flink version matrix: run by scripts/test-flink-versions (FLINK_E2E_VERSION, FLINK_E2E_MODE)"]
async fn the_job_lifecycle_on_each_matrix_version_and_mode() {
    let (versions, modes) = matrix();
    let client = harness::client().await;
    crate::operator::shared(&client).await;
    let _alone = cluster_harness::exclusive_operator().await;
    let _operator_log = OperatorLogOnFailure;
    let mut failed = Vec::new();
    for version in &versions {
        let cells: Vec<_> = modes
            .iter()
            .map(|mode| {
                let (client, version, mode) = (client.clone(), version.clone(), mode.clone());
                let started = Instant::now();
                let task = tokio::spawn(lifecycle(client, version.clone(), mode.clone()));
                (version, mode, started, task)
            })
            .collect();
        for (version, mode, started, task) in cells {
            let passed = task.await.is_ok();
            let seconds = started.elapsed().as_secs();
            let outcome = if passed { "pass" } else { "FAIL" };
            eprintln!("MATRIX-CELL {version} {mode} {outcome} {seconds}");
            if !passed {
                failed.push(format!("{version} {mode}"));
            }
        }
    }
    assert!(failed.is_empty(), "failed cells: {failed:?}");
}

/// One cell: the lifecycle of the counting job on `version` in `mode`; panics if a step fails.
async fn lifecycle(client: Client, version: String, mode: String) {
    let started = Instant::now();
    let ns = TestNamespace::new(&client, &format!("matrix-{mode}")).await;
    let _logs = LogsOnFailure(ns.name.clone());
    objects::create_all(&client, &objects::flink_service_account(&ns.name)).await;

    // The spec a job owner of this version writes: the image of the exact version, the mode,
    // savepoint upgrades, Kubernetes HA (which last-state upgrades need).
    let state = harness::state_dir(&ns.name);
    // The job's jar is in the runtime's /opt/flink/usrlib of every version.
    let mut spec = objects::stateful_cluster_spec(&version, &state);
    spec["job"] = json!({
        "jarURI": "local:///opt/flink/usrlib/keyed-counter.jar",
        "entryClass": flink_harness::JOB_CLASS,
        "args": ["--rate", "20", "--keys", "4", "--out", "/opt/flink/state/counts"],
        "parallelism": 2,
        "upgradeMode": "savepoint",
    });
    spec["image"] = json!(format!("flink:{version}"));
    spec["mode"] = json!(mode);
    spec["flinkConfiguration"]["high-availability.type"] = json!("kubernetes");
    spec["flinkConfiguration"]["high-availability.storageDir"] = json!("file:///opt/flink/state/ha");
    let fd: FlinkDeployment = serde_json::from_value(json!({
        "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
        "metadata": {"name": NAME, "namespace": ns.name},
        "spec": spec,
    }))
    .unwrap();
    let api: Api<FlinkDeployment> = Api::namespaced(client.clone(), &ns.name);
    api.create(&PostParams::default(), &fd).await.unwrap();
    let counter = Counter {
        client: client.clone(),
        api,
        ns: ns.name.clone(),
        counts: state.join("counts"),
    };

    // Deploy.
    let first = counter.running("the job RUNNING", |_, _| true).await;
    let first_job = job_id(&first);
    let before = counted_to(&counter.counts, 50).await;
    step(&version, &mode, "deployed, counted to 50", started);

    // A savepoint upgrade: stopped with a savepoint, started again from it under a new job id.
    counter.patch(json!({"spec": {"job": {"parallelism": 1}}})).await;
    let upgraded = counter
        .running("the savepoint upgrade to parallelism 1", |spec, id| {
            spec.job.as_ref().and_then(|j| j.parallelism) == Some(1) && id != first_job
        })
        .await;
    let since = SystemTime::now();
    let savepoint = upgrade_savepoint(&upgraded).expect("the upgrade savepoint in status");
    assert!(savepoint.contains("/opt/flink/state/savepoints/"), "{savepoint}");
    let second_job = job_id(&upgraded);
    let (is_savepoint, path) = counter.restored(&second_job).await;
    assert!(
        is_savepoint,
        "the savepoint upgrade restored a checkpoint: {path:?}"
    );
    assert_eq!(path.as_deref(), Some(savepoint.as_str()));
    counts_went_on(&counter.counts, &before, since, 0).await;
    step(&version, &mode, "savepoint upgrade, state kept", started);

    // A last-state upgrade: the cluster is deleted and the job restores its latest checkpoint
    // from the HA metadata, under the same job id, without a savepoint.
    counter.checkpointed(&second_job).await;
    let before = counter.read_counts();
    counter
        .patch(json!({"spec": {"job": {"parallelism": 2, "upgradeMode": "last-state"}}}))
        .await;
    let upgraded = counter
        .running("the last-state upgrade to parallelism 2", |spec, _| {
            spec.job.as_ref().and_then(|j| j.parallelism) == Some(2)
        })
        .await;
    let since = SystemTime::now();
    assert_eq!(job_id(&upgraded), second_job, "last-state keeps the job id");
    let (is_savepoint, path) = counter.restored(&second_job).await;
    assert!(
        !is_savepoint,
        "the last-state upgrade restored a savepoint: {path:?}"
    );
    // A checkpoint every 5 s at 5 counts a second per key: the restored state lags the
    // written counts by well under 50.
    counts_went_on(&counter.counts, &before, since, 50).await;
    step(&version, &mode, "last-state upgrade, state kept", started);

    // Suspend with a savepoint: the cluster goes, the savepoint's path stays in status.
    let before = counted_to(&counter.counts, before.values().copied().max().unwrap_or(0) + 20).await;
    counter
        .patch(json!({"spec": {"job": {"state": "suspended", "upgradeMode": "savepoint"}}}))
        .await;
    let suspended = wait_for(
        "SUSPENDED with no pods left",
        Duration::from_secs(240),
        || async {
            let fd = counter.api.get(NAME).await.ok()?;
            let suspended = Counter::status(&fd).1.as_deref() == Some("SUSPENDED");
            (suspended && counter.pods().await == 0).then_some(fd)
        },
    )
    .await;
    let suspend_savepoint = upgrade_savepoint(&suspended).expect("the suspend savepoint in status");
    assert_ne!(suspend_savepoint, savepoint, "suspending took a new savepoint");
    assert!(
        suspend_savepoint.contains("/opt/flink/state/savepoints/"),
        "{suspend_savepoint}"
    );
    step(&version, &mode, "suspended with a savepoint", started);

    // Resume: the suspend savepoint is restored and the counts go on from it.
    counter
        .patch(json!({"spec": {"job": {"state": "running"}}}))
        .await;
    let resumed = counter
        .running("the resumed job RUNNING", |_, id| id != second_job)
        .await;
    let since = SystemTime::now();
    let (is_savepoint, path) = counter.restored(&job_id(&resumed)).await;
    assert!(is_savepoint, "the resume restored a checkpoint: {path:?}");
    assert_eq!(path.as_deref(), Some(suspend_savepoint.as_str()));
    counts_went_on(&counter.counts, &before, since, 0).await;
    step(&version, &mode, "resumed, state kept", started);

    // The Flink version that ran is the one asked for.
    let url = harness::rest_address(&client, &ns.name, NAME).await;
    let overview = harness::rest_client(&url).cluster_overview().await.unwrap();
    assert_eq!(overview.flink_version.as_deref(), Some(version.as_str()));

    counter.api.delete(NAME, &DeleteParams::default()).await.unwrap();
    wait_for(
        "the FlinkDeployment and its pods gone",
        Duration::from_secs(120),
        || async {
            let gone = counter.api.get_opt(NAME).await.ok()?.is_none();
            (gone && counter.pods().await == 0).then_some(())
        },
    )
    .await;
    step(&version, &mode, "deleted", started);
}
