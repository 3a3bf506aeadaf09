//! The operator deploys FlinkDeployments: through the API server (webhook included), its
//! reconcile loop creates the cluster, the local runtime runs it, and the status follows.

use std::time::Duration;

use flink_operator_api::{FlinkDeployment, FlinkJobState};
use k8s_openapi::api::{apps::v1::Deployment, core::v1::Pod};
use kube::{
    Api,
    api::{DeleteParams, ListParams, Patch, PatchParams, PostParams},
};
use serde_json::json;

use crate::{
    cluster_harness::{self, TestNamespace, wait_for},
    flink_harness,
    harness::{self, LogsOnFailure},
    objects,
};

fn condition(fd: &FlinkDeployment, type_: &str) -> Option<(String, String)> {
    harness::condition(fd.status.as_ref()?.conditions.as_ref(), type_)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_deploys_an_application_upgrades_it_statelessly_and_deletes_it() {
    let client = harness::client().await;
    crate::operator::shared(&client).await;
    let _turn = cluster_harness::beside_others().await;
    let _operator_log = OperatorLogOnFailure;
    let ns = TestNamespace::new(&client, "reconcile-app").await;
    let _logs = LogsOnFailure(ns.name.clone());
    objects::create_all(&client, &objects::flink_service_account(&ns.name)).await;
    let version = flink_harness::versions().last().unwrap().clone();
    let (api, state) = create_counter(&client, &ns.name, &version, "stateless", &[]).await;
    let counts = state.join("counts");

    let stable = wait_for(
        "the FlinkDeployment STABLE with its job RUNNING",
        Duration::from_secs(240),
        || async {
            let fd = api.get("counter").await.ok()?;
            let status = fd.status.as_ref()?;
            let running = status.job_status.as_ref()?.state == Some(FlinkJobState::Running);
            let stable = status.lifecycle_state.map(|l| l.as_str()) == Some("STABLE");
            (running && stable).then_some(fd)
        },
    )
    .await;
    let status = stable.status.as_ref().unwrap();
    assert_eq!(
        status.job_manager_deployment_status.map(|s| s.as_str()),
        Some("READY")
    );
    assert_eq!(
        condition(&stable, "Ready"),
        Some(("True".into(), "Running".into()))
    );
    assert_eq!(
        condition(&stable, "Degraded"),
        Some(("False".into(), "Running".into()))
    );
    let recorded: flink_operator_api::FlinkDeploymentSpec = status
        .reconciliation_status
        .as_ref()
        .unwrap()
        .last_reconciled_spec()
        .unwrap()
        .unwrap();
    assert_eq!(recorded, stable.spec);
    assert!(
        status
            .reconciliation_status
            .as_ref()
            .unwrap()
            .last_stable_spec
            .is_some()
    );
    // The JobManager Deployment is the operator's, owned by the resource.
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns.name);
    let jm = deployments.get("counter").await.unwrap();
    let owner = &jm.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("FlinkDeployment", "counter")
    );

    // A stateless upgrade: the job is cancelled with its cluster and started from nothing.
    let first_job = status.job_status.as_ref().unwrap().job_id.clone();
    let before = counted_to(&counts, 50).await;
    api.patch(
        "counter",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"job": {"parallelism": 1}}})),
    )
    .await
    .unwrap();
    let upgraded = wait_for("the upgraded job RUNNING", Duration::from_secs(240), || async {
        let fd = api.get("counter").await.ok()?;
        let job = fd.status.as_ref()?.job_status.clone()?;
        (job.state == Some(FlinkJobState::Running) && job.job_id != first_job).then_some(fd)
    })
    .await;
    assert_eq!(
        upgraded
            .status
            .unwrap()
            .job_status
            .unwrap()
            .upgrade_savepoint_path,
        None
    );
    // Its counts start again from 1.
    let restarted_at = std::time::SystemTime::now();
    let after = counts_since(&counts, restarted_at).await;
    for (key, count) in &before {
        assert!(
            after[key] < *count,
            "key {key}: {count} before, {} after a stateless upgrade",
            after[key]
        );
    }

    // Deletion goes through the finalizer: the cluster first, then the resource.
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns.name);
    api.delete("counter", &DeleteParams::default()).await.unwrap();
    wait_for(
        "the FlinkDeployment and its pods gone",
        Duration::from_secs(120),
        || async {
            let gone = api.get_opt("counter").await.ok()?.is_none();
            let no_pods = pods
                .list(&ListParams::default().labels("app=counter"))
                .await
                .ok()?
                .items
                .is_empty();
            (gone && no_pods).then_some(())
        },
    )
    .await;
}

/// Prints the operator's log if the test fails.
pub struct OperatorLogOnFailure;

impl Drop for OperatorLogOnFailure {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let log = crate::operator::operator_log();
            let lines: Vec<&str> = log.lines().collect();
            eprintln!(
                "---- operator log ----\n{}",
                lines[lines.len().saturating_sub(120)..].join("\n")
            );
        }
    }
}

pub use crate::harness::{counted_to, counts_since, counts_went_on};

/// The spec of a test job whose counts and savepoints live in `state` on the host.
pub fn counter_spec(version: &str, state: &std::path::Path, upgrade_mode: &str) -> serde_json::Value {
    let jar = flink_harness::job_jar(version);
    let mut spec = objects::stateful_cluster_spec(version, state);
    spec["job"] = json!({
        "jarURI": format!("local:///opt/flink/usrlib/{}", jar.file_name().unwrap().to_string_lossy()),
        "entryClass": flink_harness::JOB_CLASS,
        "args": ["--rate", "20", "--keys", "4", "--out", "/opt/flink/state/counts"],
        "parallelism": 2,
        "upgradeMode": upgrade_mode,
    });
    spec
}

/// [`counter_spec`] with `config` added to its configuration.
pub async fn counter_spec_with(
    version: &str,
    state: &std::path::Path,
    upgrade_mode: &str,
    config: &[(&str, &str)],
) -> serde_json::Value {
    let mut spec = tokio::task::spawn_blocking({
        let (version, state, mode) = (version.to_owned(), state.to_owned(), upgrade_mode.to_owned());
        // Finds (and on first use builds) the test job's jar: blocking work.
        move || counter_spec(&version, &state, &mode)
    })
    .await
    .unwrap();
    for (key, value) in config {
        spec["flinkConfiguration"][*key] = json!(value);
    }
    spec
}

/// Creates the FlinkDeployment `counter` of the test job in `namespace`, with `config` added
/// to its configuration; returns its API and its state directory on the host.
pub async fn create_counter(
    client: &kube::Client,
    namespace: &str,
    version: &str,
    upgrade_mode: &str,
    config: &[(&str, &str)],
) -> (Api<FlinkDeployment>, std::path::PathBuf) {
    let state = harness::state_dir(namespace);
    let spec = counter_spec_with(version, &state, upgrade_mode, config).await;
    (create_counter_of(client, namespace, spec).await, state)
}

/// Creates the FlinkDeployment `counter` of `spec` in `namespace`; returns its API.
pub async fn create_counter_of(
    client: &kube::Client,
    namespace: &str,
    spec: serde_json::Value,
) -> Api<FlinkDeployment> {
    let fd: FlinkDeployment = serde_json::from_value(json!({
        "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
        "metadata": {"name": "counter", "namespace": namespace},
        "spec": spec,
    }))
    .unwrap();
    let api: Api<FlinkDeployment> = Api::namespaced(client.clone(), namespace);
    api.create(&PostParams::default(), &fd).await.unwrap();
    api
}

/// The parallelism of the spec `fd` records as reconciled.
pub fn recorded_parallelism(fd: &FlinkDeployment) -> Option<i32> {
    let rs = fd.status.as_ref()?.reconciliation_status.as_ref()?;
    rs.last_reconciled_spec::<flink_operator_api::FlinkDeploymentSpec>()
        .ok()
        .flatten()?
        .job?
        .parallelism
}

/// Then a rollback to a kept revision (see `revisions`): one job's history, from its first
/// deployment through an upgrade, a misbehaving upgrade and its rollback.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_savepoint_upgrade_restores_the_jobs_state_and_a_rollback_to_a_kept_revision_too() {
    savepoint_upgrade(Crash::Never).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_killed_during_a_savepoint_upgrade_finishes_it_from_the_recorded_savepoint() {
    savepoint_upgrade(Crash::OnceTheTriggerIsRecorded).await;
}

/// The crash the design of snapshot resources worried about: Flink completed the
/// stop-with-savepoint, and the operator died before it recorded the savepoint or created
/// its snapshot resource.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_killed_after_flink_completed_the_stop_records_and_restores_that_savepoint_once() {
    savepoint_upgrade(Crash::OnceFlinkCompletedTheStop).await;
}

/// When the operator is killed during a savepoint upgrade.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Crash {
    Never,
    /// As soon as it has recorded the stop's trigger id.
    OnceTheTriggerIsRecorded,
    /// Frozen as soon as it has recorded the stop's trigger id, killed once Flink completed
    /// the stop under that trigger id: it never saw the completion.
    OnceFlinkCompletedTheStop,
}

/// A savepoint upgrade of the counting job, with the operator killed as `crash` says.
/// Whatever the crash, the upgrade ends with one savepoint taken, recorded as one UPGRADE
/// FlinkStateSnapshot, and the new job restored from it.
async fn savepoint_upgrade(crash: Crash) {
    let client = harness::client().await;
    crate::operator::shared(&client).await;
    // Killing the operator would stall the tests beside it.
    let _turn = match crash {
        Crash::Never => cluster_harness::beside_others().await,
        _ => cluster_harness::exclusive_operator().await,
    };
    let _operator_log = OperatorLogOnFailure;
    let ns = TestNamespace::new(&client, "reconcile-upgrade").await;
    let _logs = LogsOnFailure(ns.name.clone());
    objects::create_all(&client, &objects::flink_service_account(&ns.name)).await;
    let version = flink_harness::versions().last().unwrap().clone();
    let (api, state) = create_counter(&client, &ns.name, &version, "savepoint", &[]).await;
    let counts = state.join("counts");
    let running = |previous_job: Option<String>| {
        let api = api.clone();
        async move { harness::running_job(&api, "counter", previous_job.as_deref()).await }
    };
    let first = running(None).await;
    let first_job = first.status.unwrap().job_status.unwrap().job_id;
    let endpoints = flink_operator_controller::flink::RestEndpoints::new(
        client.clone(),
        flink_operator_controller::flink::RestEndpointMode::EndpointSlice,
    );
    let url = endpoints
        .base_url(
            &ns.name,
            "counter-rest",
            8081,
            flink_operator_controller::flink::Scheme::Http,
        )
        .await
        .unwrap();
    let rest = flink_operator_controller::flink::FlinkRestClient::new(&url, Default::default()).unwrap();

    // Enough state that a job started from nothing could not be mistaken for a restored one.
    let before = counted_to(&counts, 50).await;

    api.patch(
        "counter",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"job": {"parallelism": 1}}})),
    )
    .await
    .unwrap();
    let recorded_trigger = || async {
        let fd = api.get("counter").await.ok()?;
        fd.status?.job_status?.savepoint_info?.trigger_id
    };
    match crash {
        Crash::Never => {}
        Crash::OnceTheTriggerIsRecorded => {
            wait_for(
                "the stop's trigger id recorded",
                Duration::from_secs(60),
                recorded_trigger,
            )
            .await;
            let operator = crate::operator::shared(&client).await;
            operator.crash_and_restart().await;
            eprintln!("operator killed with the stop triggered, and started again");
        }
        Crash::OnceFlinkCompletedTheStop => {
            let deadline = std::time::Instant::now() + Duration::from_secs(60);
            let trigger = loop {
                if let Some(trigger) = recorded_trigger().await {
                    break trigger;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "no stop trigger id recorded in 60 s"
                );
                tokio::time::sleep(Duration::from_millis(5)).await;
            };
            let operator = crate::operator::shared(&client).await;
            crate::operator::signal(crate::operator::operator_pid(), "-STOP");
            let job = flink_operator_controller::flink::JobId::from(first_job.as_deref().unwrap());
            let trigger = flink_operator_controller::flink::TriggerId::from(trigger.as_str());
            // The operator sends the stop right after it records the trigger id; if it was
            // frozen in between, the stop is sent as it would have sent it (Flink answers a
            // repeated trigger id with the operation it already runs).
            let _ = rest
                .stop_with_savepoint_as(
                    &job,
                    &trigger,
                    None,
                    false,
                    flink_operator_controller::flink::SavepointFormat::Canonical,
                )
                .await;
            let path = wait_for("Flink completing the stop", Duration::from_secs(60), || async {
                match rest.savepoint_status(&job, &trigger).await {
                    Ok(flink_operator_controller::flink::OperationStatus::Completed(path)) => Some(path),
                    _ => None,
                }
            })
            .await;
            let stored = api.get("counter").await.unwrap();
            assert_ne!(
                stored
                    .status
                    .unwrap()
                    .job_status
                    .unwrap()
                    .upgrade_savepoint_path
                    .as_deref(),
                Some(path.as_str()),
                "the frozen operator recorded {path} already: the crash window was missed"
            );
            operator.crash_and_restart().await;
            eprintln!("operator killed after Flink completed the stop ({path}), and started again");
        }
    }
    let upgraded = running(first_job).await;
    let restarted_at = std::time::SystemTime::now();
    let status = upgraded.status.unwrap();
    let savepoint = status
        .job_status
        .as_ref()
        .unwrap()
        .upgrade_savepoint_path
        .clone()
        .unwrap();
    assert!(savepoint.contains("/opt/flink/state/savepoints/"), "{savepoint}");
    // One savepoint was taken, whatever the crash...
    let taken: Vec<String> = std::fs::read_dir(state.join("savepoints"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(taken.len(), 1, "{crash:?}: savepoints on disk: {taken:?}");
    assert!(savepoint.ends_with(&taken[0]), "{savepoint} is not {taken:?}");
    // ...and it is recorded as one UPGRADE FlinkStateSnapshot.
    let snapshots: Api<flink_operator_api::FlinkStateSnapshot> = Api::namespaced(client.clone(), &ns.name);
    let upgrade = wait_for(
        "the UPGRADE snapshot COMPLETED",
        Duration::from_secs(30),
        || async {
            let list = snapshots.list(&ListParams::default()).await.ok()?.items;
            let done = list.iter().all(|s| {
                s.status.as_ref().and_then(|s| s.state)
                    == Some(flink_operator_api::FlinkStateSnapshotState::Completed)
            });
            (!list.is_empty() && done).then_some(list)
        },
    )
    .await;
    assert_eq!(upgrade.len(), 1, "{crash:?}: {upgrade:?}");
    let upgrade = &upgrade[0];
    assert!(
        upgrade
            .metadata
            .name
            .as_deref()
            .unwrap()
            .starts_with("counter-savepoint-upgrade-"),
        "{upgrade:?}"
    );
    assert_eq!(
        upgrade.metadata.labels.as_ref().unwrap()["snapshot.trigger-type"],
        "UPGRADE"
    );
    let recorded_savepoint = upgrade.spec.savepoint.as_ref().unwrap();
    assert_eq!(recorded_savepoint.already_exists, Some(true));
    assert_eq!(
        upgrade.status.as_ref().unwrap().path.as_deref(),
        Some(savepoint.as_str())
    );
    let recorded: flink_operator_api::FlinkDeploymentSpec = status
        .reconciliation_status
        .as_ref()
        .unwrap()
        .last_reconciled_spec()
        .unwrap()
        .unwrap();
    assert_eq!(recorded.job.unwrap().parallelism, Some(1));

    // The new job restored the savepoint the operator recorded...
    let url = endpoints
        .base_url(
            &ns.name,
            "counter-rest",
            8081,
            flink_operator_controller::flink::Scheme::Http,
        )
        .await
        .unwrap();
    let rest = flink_operator_controller::flink::FlinkRestClient::new(&url, Default::default()).unwrap();
    let job_id = flink_operator_controller::flink::JobId::from(
        status.job_status.as_ref().unwrap().job_id.as_deref().unwrap(),
    );
    let restored = harness::restored(&rest, &job_id).await;
    assert!(restored.is_savepoint);
    assert_eq!(restored.external_path.as_deref(), Some(savepoint.as_str()));
    // ...and its counts go on from where the old job's were, not from 1.
    counts_went_on(&counts, &before, restarted_at, 0).await;
    // The savepoint's duration and the resource's state are in the operator's metrics.
    let metrics = crate::operator::probe_get("/metrics");
    let savepoints = metrics
        .lines()
        .find_map(|l| {
            l.strip_prefix(r#"flink_operator_savepoint_duration_seconds_count{kind="FlinkDeployment"} "#)
        })
        .and_then(|n| n.trim().parse::<u64>().ok())
        .unwrap_or(0);
    // Killed once the trigger is recorded, the process may or may not have seen the
    // completion first (a savepoint of this job takes ~150 ms): the one running now counted
    // the savepoint only if it was the one that saw it complete.
    if crash != Crash::OnceTheTriggerIsRecorded {
        assert!(savepoints >= 1, "{crash:?}: {metrics}");
    }
    let stable = format!(
        r#"flink_operator_resources{{kind="FlinkDeployment",namespace="{}",lifecycle_state="STABLE"}} 1"#,
        ns.name
    );
    assert!(metrics.contains(&stable), "{stable} missing:\n{metrics}");

    if crash == Crash::Never {
        crate::revisions::a_misbehaving_update_is_rolled_back(
            &client,
            &api,
            "FlinkDeployment",
            "counter",
            &counts,
        )
        .await;
    }

    api.delete("counter", &DeleteParams::default()).await.unwrap();
    wait_for("the FlinkDeployment gone", Duration::from_secs(120), || async {
        api.get_opt("counter").await.ok()?.is_none().then_some(())
    })
    .await;
}
