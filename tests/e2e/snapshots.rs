//! FlinkStateSnapshots of a running application, taken by the operator through Flink: a
//! savepoint into the job's savepoint directory and a checkpoint, both on disk; an existing
//! savepoint recorded without asking Flink; a savepoint Flink cannot write, retried after its
//! back-off and then FAILED; the disposal of a savepoint when its resource is deleted; a
//! snapshot of a suspended job ABANDONED; and the deletion of a savepoint whose job resource
//! is gone, which leaves its files and says so rather than hang.

use std::{
    path::PathBuf,
    time::{Duration, Instant},
};

use flink_operator_api::{FlinkStateSnapshot, FlinkStateSnapshotState as State, FlinkStateSnapshotStatus};
use flink_operator_controller::flink::JobId;
use k8s_openapi::api::core::v1::Event;
use kube::{
    Api, ResourceExt,
    api::{DeleteParams, ListParams, Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};

use crate::{
    cluster_harness::{self, TestNamespace, wait_for},
    flink_harness,
    harness::{self, LogsOnFailure},
    objects,
    reconcile::{OperatorLogOnFailure, create_counter},
};

/// The FlinkDeployment the snapshots are taken of.
const JOB: &str = "counter";

/// A savepoint directory no process can create: procfs refuses new entries, even to root.
const UNWRITABLE: &str = "file:///proc/forbidden";

/// The snapshot `name` of the job of FlinkDeployment [`JOB`], with `spec` besides its
/// `jobReference`.
fn snapshot(namespace: &str, name: &str, spec: Value) -> FlinkStateSnapshot {
    let mut spec = spec;
    spec["jobReference"] = json!({"kind": "FlinkDeployment", "name": JOB});
    serde_json::from_value(json!({
        "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkStateSnapshot",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }))
    .unwrap()
}

/// The snapshots of one namespace, their Events, and the state directory their files are in.
struct Snapshots {
    api: Api<FlinkStateSnapshot>,
    events: Api<Event>,
    state: PathBuf,
}

impl Snapshots {
    async fn create(&self, snapshot: FlinkStateSnapshot) {
        let name = snapshot.name_any();
        self.api
            .create(&PostParams::default(), &snapshot)
            .await
            .unwrap_or_else(|e| panic!("creating snapshot {name}: {e}"));
    }

    /// Waits until snapshot `name` is in `state`; a timeout shows the status it got stuck in.
    async fn reaches(&self, name: &str, state: State, timeout: Duration) -> FlinkStateSnapshot {
        let deadline = Instant::now() + timeout;
        loop {
            let snapshot = self.api.get_opt(name).await.ok().flatten();
            let status = snapshot.as_ref().and_then(|s| s.status.clone());
            if status.as_ref().and_then(|s| s.state) == Some(state) {
                return snapshot.unwrap();
            }
            assert!(
                Instant::now() < deadline,
                "timed out after {timeout:?} waiting for snapshot {name} {}; status: {}",
                state.as_str(),
                serde_json::to_string_pretty(&status).unwrap_or_default()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Deletes snapshot `name` and waits until it is gone; how long that took.
    async fn delete(&self, name: &str, timeout: Duration) -> Duration {
        let started = Instant::now();
        self.api
            .delete(name, &DeleteParams::default())
            .await
            .unwrap_or_else(|e| panic!("deleting snapshot {name}: {e}"));
        wait_for(&format!("the deleted snapshot {name} gone"), timeout, || async {
            self.api.get_opt(name).await.ok()?.is_none().then_some(())
        })
        .await;
        started.elapsed()
    }

    /// The Events about snapshot `name` with `reason`.
    async fn events(&self, name: &str, reason: &str) -> Vec<Event> {
        self.events
            .list(&ListParams::default())
            .await
            .map(|l| l.items)
            .unwrap_or_default()
            .into_iter()
            .filter(|e| {
                e.involved_object.kind.as_deref() == Some("FlinkStateSnapshot")
                    && e.involved_object.name.as_deref() == Some(name)
                    && e.reason.as_deref() == Some(reason)
            })
            .collect()
    }

    /// Waits for an Event of `type_` and `reason` about snapshot `name` whose message holds
    /// `containing`; returns its message.
    async fn event(&self, name: &str, type_: &str, reason: &str, containing: &str) -> String {
        wait_for(
            &format!("a {type_} Event {reason} about snapshot {name} saying {containing:?}"),
            Duration::from_secs(30),
            || async {
                self.events(name, reason)
                    .await
                    .into_iter()
                    .filter(|e| e.type_.as_deref() == Some(type_))
                    .filter_map(|e| e.message)
                    .find(|m| m.contains(containing))
            },
        )
        .await
    }

    /// On the host, the file or directory at `path` as the pods see it under /opt/flink/state.
    fn on_disk(&self, path: &str) -> PathBuf {
        let inside = path.trim_start_matches("file:").trim_start_matches('/');
        self.state.join(
            inside
                .strip_prefix("opt/flink/state/")
                .unwrap_or_else(|| panic!("{path} is not under /opt/flink/state")),
        )
    }
}

fn status(snapshot: &FlinkStateSnapshot) -> FlinkStateSnapshotStatus {
    snapshot.status.clone().unwrap_or_default()
}

fn millis(timestamp: Option<&str>) -> i64 {
    let timestamp = timestamp.expect("a timestamp");
    timestamp
        .parse::<k8s_openapi::jiff::Timestamp>()
        .unwrap_or_else(|e| panic!("{timestamp}: {e}"))
        .as_millisecond()
}

/// Asserts the labels the operator keeps on a MANUAL snapshot of [`JOB`].
fn assert_labels(snapshot: &FlinkStateSnapshot, snapshot_type: &str, state: &str) {
    let labels = snapshot.labels();
    for (key, value) in [
        ("snapshot.type", snapshot_type),
        ("snapshot.trigger-type", "MANUAL"),
        ("snapshot.state", state),
        ("job-reference.kind", "FlinkDeployment"),
        ("job-reference.name", JOB),
    ] {
        assert_eq!(
            labels.get(key).map(String::as_str),
            Some(value),
            "label {key} of snapshot {}: {labels:?}",
            snapshot.name_any()
        );
    }
}

/// Polls the status of snapshot `name` until it is FAILED (at most `timeout`); returns every
/// distinct status seen, in order.
async fn statuses_until_failed(
    api: Api<FlinkStateSnapshot>,
    name: &'static str,
    timeout: Duration,
) -> Vec<FlinkStateSnapshotStatus> {
    let deadline = Instant::now() + timeout;
    let mut seen: Vec<FlinkStateSnapshotStatus> = Vec::new();
    while Instant::now() < deadline {
        if let Ok(Some(status)) = api.get_opt(name).await.map(|s| s.and_then(|s| s.status)) {
            if seen.last() != Some(&status) {
                seen.push(status.clone());
            }
            if status.state == Some(State::Failed) {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    seen
}

/// One stateful application and its snapshots, in the order a user meets them: a manual
/// savepoint (into the job's savepoint directory, labelled, on disk), a checkpoint (its
/// external path on disk), an existing savepoint recorded without a trigger, a savepoint into
/// a directory Flink cannot write (tried twice, 10 s apart, then FAILED with a Warning), the
/// disposal of the first savepoint when its resource is deleted, a savepoint of the suspended
/// job ABANDONED, and a savepoint whose FlinkDeployment was deleted: deleting it returns at
/// once, leaves its files and names them in a Warning.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_resources_take_savepoints_and_checkpoints_retry_failures_and_dispose_of_savepoints() {
    let client = harness::client().await;
    crate::operator::shared(&client).await;
    let _turn = cluster_harness::beside_others().await;
    let _operator_log = OperatorLogOnFailure;
    let ns = TestNamespace::new(&client, "snapshots").await;
    let _logs = LogsOnFailure(ns.name.clone());
    objects::create_all(&client, &objects::flink_service_account(&ns.name)).await;
    let version = flink_harness::versions().last().unwrap().clone();
    // A checkpoint resource's files are one of the checkpoints Flink retains: as the
    // snapshot documentation says, a user who wants one to outlive the next few periodic
    // checkpoints (every 5 s here) keeps more of them.
    let (deployments, state) = create_counter(
        &client,
        &ns.name,
        &version,
        "stateless",
        &[("execution.checkpointing.num-retained", "10")],
    )
    .await;
    let fd = harness::running_job(&deployments, JOB, None).await;
    let job_id = JobId::from(
        fd.status
            .as_ref()
            .and_then(|s| s.job_status.as_ref())
            .and_then(|j| j.job_id.as_deref())
            .unwrap(),
    );
    let url = harness::rest_address(&client, &ns.name, JOB).await;
    harness::wait_for_running_job(&harness::rest_client(&url), &job_id).await;
    let snapshots = Snapshots {
        api: Api::namespaced(client.clone(), &ns.name),
        events: Api::namespaced(client.clone(), &ns.name),
        state,
    };
    let started = Instant::now();

    // The savepoint Flink cannot write goes first: its retry waits 10 s, while the others run.
    snapshots
        .create(snapshot(
            &ns.name,
            "unwritable",
            json!({"savepoint": {"path": UNWRITABLE}, "backoffLimit": 1}),
        ))
        .await;
    let unwritable = tokio::spawn(statuses_until_failed(
        snapshots.api.clone(),
        "unwritable",
        Duration::from_secs(120),
    ));

    // 1. A manual savepoint into the job's savepoint directory.
    snapshots
        .create(snapshot(
            &ns.name,
            "manual-savepoint",
            json!({"savepoint": {"disposeOnDelete": true}}),
        ))
        .await;
    let savepoint = snapshots
        .reaches("manual-savepoint", State::Completed, Duration::from_secs(90))
        .await;
    let done = status(&savepoint);
    let savepoint_path = done.path.clone().expect("the savepoint's path in status");
    assert!(
        savepoint_path.contains("/opt/flink/state/savepoints/savepoint-"),
        "{savepoint_path}"
    );
    assert!(done.trigger_id.is_some(), "{done:?}");
    assert_eq!(done.failures, Some(0), "{done:?}");
    let savepoint_dir = snapshots.on_disk(&savepoint_path);
    assert!(
        savepoint_dir.join("_metadata").is_file(),
        "no _metadata in {}",
        savepoint_dir.display()
    );
    // The labels follow the state: patched after the status that completed it.
    let savepoint = wait_for(
        "the labels of manual-savepoint",
        Duration::from_secs(30),
        || async {
            let s = snapshots.api.get("manual-savepoint").await.ok()?;
            (s.labels().get("snapshot.state").map(String::as_str) == Some("COMPLETED")).then_some(s)
        },
    )
    .await;
    assert_labels(&savepoint, "SAVEPOINT", "COMPLETED");
    snapshots
        .event(
            "manual-savepoint",
            "Normal",
            "SavepointCompleted",
            &savepoint_path,
        )
        .await;
    eprintln!(
        "savepoint COMPLETED after {:?}: {savepoint_path}",
        started.elapsed()
    );

    // 2. A checkpoint: its external path, on disk.
    snapshots
        .create(snapshot(&ns.name, "manual-checkpoint", json!({"checkpoint": {}})))
        .await;
    let checkpoint = snapshots
        .reaches("manual-checkpoint", State::Completed, Duration::from_secs(90))
        .await;
    let done = status(&checkpoint);
    let checkpoint_path = done.path.clone().expect("the checkpoint's path in status");
    assert!(
        checkpoint_path.contains(&format!("/opt/flink/state/checkpoints/{job_id}/chk-")),
        "{checkpoint_path}"
    );
    assert!(
        snapshots.on_disk(&checkpoint_path).join("_metadata").is_file(),
        "checkpoint {checkpoint_path} is not on disk"
    );
    assert_eq!(done.failures, Some(0), "{done:?}");
    eprintln!(
        "checkpoint COMPLETED after {:?}: {checkpoint_path}",
        started.elapsed()
    );

    // 3. An existing savepoint recorded: COMPLETED at once, no trigger sent.
    let elsewhere = "file:///opt/flink/state/savepoints/savepoint-taken-elsewhere";
    snapshots
        .create(snapshot(
            &ns.name,
            "recorded",
            json!({"savepoint": {"path": elsewhere, "alreadyExists": true, "disposeOnDelete": false}}),
        ))
        .await;
    let recorded = snapshots
        .reaches("recorded", State::Completed, Duration::from_secs(30))
        .await;
    let done = status(&recorded);
    assert_eq!(done.path.as_deref(), Some(elsewhere), "{done:?}");
    assert_eq!(
        done.trigger_id, None,
        "a recorded savepoint is not triggered: {done:?}"
    );
    snapshots
        .event("recorded", "Normal", "SavepointCompleted", elsewhere)
        .await;
    assert!(
        snapshots
            .events("recorded", "SavepointTriggered")
            .await
            .is_empty(),
        "a recorded savepoint is not triggered"
    );

    // The savepoint deleted at the end, once its FlinkDeployment is gone.
    snapshots
        .create(snapshot(&ns.name, "outlives-its-job", json!({"savepoint": {}})))
        .await;
    let outlives = snapshots
        .reaches("outlives-its-job", State::Completed, Duration::from_secs(90))
        .await;
    let outlives_path = status(&outlives).path.expect("the savepoint's path in status");

    // 4. The savepoint Flink cannot write: failed once, tried again 10 s after, then FAILED.
    let seen = tokio::time::timeout(Duration::from_secs(150), unwritable)
        .await
        .expect("the unwritable savepoint's statuses")
        .unwrap();
    let last = seen.last().cloned().unwrap_or_default();
    assert_eq!(
        last.state,
        Some(State::Failed),
        "the savepoint into {UNWRITABLE} did not end FAILED: {seen:#?}"
    );
    assert_eq!(last.failures, Some(2), "{seen:#?}");
    assert!(last.error.as_deref().is_some_and(|e| !e.is_empty()), "{seen:#?}");
    let first_failure = seen
        .iter()
        .find(|s| s.failures == Some(1))
        .unwrap_or_else(|| panic!("no status with one failure: {seen:#?}"));
    assert_eq!(first_failure.state, Some(State::TriggerPending), "{seen:#?}");
    let first_attempt = millis(first_failure.trigger_timestamp.as_deref());
    let failed_at = millis(first_failure.result_timestamp.as_deref());
    let second_attempt = millis(last.trigger_timestamp.as_deref());
    assert!(
        second_attempt >= failed_at + 10_000 && second_attempt >= first_attempt + 10_000,
        "the second attempt ({second_attempt}) came less than 10 s after the first \
         ({first_attempt}, failed at {failed_at}): {seen:#?}"
    );
    let unwritable = snapshots.api.get("unwritable").await.unwrap();
    assert_labels(&unwritable, "SAVEPOINT", "FAILED");
    // A Warning for each attempt: two Events, or one Event seen twice (an Event series keeps
    // the note of its first occurrence).
    let occurrences = wait_for(
        "a Warning Event SavepointError about each attempt of snapshot unwritable",
        Duration::from_secs(30),
        || async {
            let warnings: Vec<Event> = snapshots
                .events("unwritable", "SavepointError")
                .await
                .into_iter()
                .filter(|e| e.type_.as_deref() == Some("Warning"))
                .collect();
            let occurrences: i32 = warnings
                .iter()
                .map(|e| e.series.as_ref().and_then(|s| s.count).unwrap_or(1))
                .sum();
            (occurrences >= 2).then_some(warnings)
        },
    )
    .await;
    let notes: Vec<String> = occurrences.into_iter().filter_map(|e| e.message).collect();
    assert!(notes.iter().any(|n| n.contains("attempt 1")), "{notes:?}");
    eprintln!(
        "unwritable savepoint FAILED after {:?}: {:?}; Events: {notes:?}",
        started.elapsed(),
        last.error
    );

    // 5. Deleting the first savepoint disposes of its files through Flink.
    let took = snapshots
        .delete("manual-savepoint", Duration::from_secs(60))
        .await;
    assert!(
        !savepoint_dir.exists(),
        "{} is still on disk after the disposal",
        savepoint_dir.display()
    );
    snapshots
        .event("manual-savepoint", "Normal", "SavepointDisposed", &savepoint_path)
        .await;
    eprintln!("savepoint disposed of in {took:?}");

    // 6. The job suspended: a new savepoint is ABANDONED.
    deployments
        .patch(
            JOB,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"job": {"state": "suspended"}}})),
        )
        .await
        .unwrap();
    wait_for(
        "the FlinkDeployment SUSPENDED",
        Duration::from_secs(120),
        || async {
            let fd = deployments.get(JOB).await.ok()?;
            (fd.status?.lifecycle_state.map(|l| l.as_str()) == Some("SUSPENDED")).then_some(())
        },
    )
    .await;
    snapshots
        .create(snapshot(&ns.name, "of-a-suspended-job", json!({"savepoint": {}})))
        .await;
    let abandoned = snapshots
        .reaches("of-a-suspended-job", State::Abandoned, Duration::from_secs(30))
        .await;
    let done = status(&abandoned);
    assert!(
        done.error.as_deref().is_some_and(|e| e.contains("not running")),
        "{done:?}"
    );
    assert_eq!(done.trigger_id, None, "{done:?}");
    snapshots
        .event(
            "of-a-suspended-job",
            "Warning",
            "SnapshotAbandoned",
            "not running",
        )
        .await;

    // 7. The FlinkDeployment deleted: deleting a savepoint of its job leaves the files and
    // names them, promptly.
    deployments.delete(JOB, &DeleteParams::default()).await.unwrap();
    wait_for("the FlinkDeployment gone", Duration::from_secs(120), || async {
        deployments.get_opt(JOB).await.ok()?.is_none().then_some(())
    })
    .await;
    let took = snapshots
        .delete("outlives-its-job", Duration::from_secs(30))
        .await;
    let warning = snapshots
        .event(
            "outlives-its-job",
            "Warning",
            "SavepointNotDisposed",
            &outlives_path,
        )
        .await;
    assert!(
        snapshots.on_disk(&outlives_path).join("_metadata").is_file(),
        "{outlives_path} was not left on disk"
    );
    eprintln!("savepoint of a deleted job released in {took:?}: {warning}");

    for name in [
        "manual-checkpoint",
        "recorded",
        "unwritable",
        "of-a-suspended-job",
    ] {
        snapshots.delete(name, Duration::from_secs(30)).await;
    }
    harness::wait_until_none(&snapshots.api, "every snapshot gone", Duration::from_secs(30)).await;
    eprintln!("snapshot test done after {:?}", started.elapsed());
}

/// The state a job runs from is never disposed of by deleting the snapshot that records it:
/// a savepoint-mode job suspended (its savepoint S in `upgradeSavepointPath`), S recorded by
/// the user as a FlinkStateSnapshot (`alreadyExists`, `disposeOnDelete: true`), the job
/// resumed from S, then the record deleted while the job runs: the record goes at once, S
/// stays on disk, and a Warning Event names the FlinkDeployment that needs it and why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_the_record_of_the_savepoint_a_job_was_resumed_from_keeps_its_files_and_says_why() {
    let client = harness::client().await;
    crate::operator::shared(&client).await;
    let _turn = cluster_harness::beside_others().await;
    let _operator_log = OperatorLogOnFailure;
    let ns = TestNamespace::new(&client, "protected").await;
    let _logs = LogsOnFailure(ns.name.clone());
    objects::create_all(&client, &objects::flink_service_account(&ns.name)).await;
    let version = flink_harness::versions().last().unwrap().clone();
    let (deployments, state) = create_counter(&client, &ns.name, &version, "savepoint", &[]).await;
    let first = harness::running_job(&deployments, JOB, None).await;
    let first_job = first
        .status
        .as_ref()
        .and_then(|s| s.job_status.as_ref())
        .and_then(|j| j.job_id.clone());
    let snapshots = Snapshots {
        api: Api::namespaced(client.clone(), &ns.name),
        events: Api::namespaced(client.clone(), &ns.name),
        state,
    };

    // Suspended: stopped with the savepoint S, which its status names.
    let suspend = |state: &'static str| {
        let deployments = deployments.clone();
        async move {
            deployments
                .patch(
                    JOB,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"spec": {"job": {"state": state}}})),
                )
                .await
                .unwrap();
        }
    };
    suspend("suspended").await;
    let suspended = wait_for(
        "the FlinkDeployment SUSPENDED",
        Duration::from_secs(180),
        || async {
            let fd = deployments.get(JOB).await.ok()?;
            let status = fd.status.clone()?;
            (status.lifecycle_state.map(|l| l.as_str()) == Some("SUSPENDED")).then_some(fd)
        },
    )
    .await;
    let path = suspended
        .status
        .as_ref()
        .and_then(|s| s.job_status.as_ref())
        .and_then(|j| j.upgrade_savepoint_path.clone())
        .expect("the suspension's savepoint in upgradeSavepointPath");
    assert!(
        snapshots.on_disk(&path).join("_metadata").is_file(),
        "{path} is not on disk"
    );

    // Recorded by the user, to be disposed of on deletion.
    snapshots
        .create(snapshot(
            &ns.name,
            "recorded-by-the-user",
            json!({"savepoint": {"path": path, "alreadyExists": true, "disposeOnDelete": true}}),
        ))
        .await;
    snapshots
        .reaches("recorded-by-the-user", State::Completed, Duration::from_secs(30))
        .await;

    // Resumed from S.
    suspend("running").await;
    let resumed = harness::running_job(&deployments, JOB, first_job.as_deref()).await;
    let started_from = resumed
        .status
        .as_ref()
        .and_then(|s| s.job_status.as_ref())
        .and_then(|j| j.upgrade_savepoint_path.clone());
    assert_eq!(started_from.as_deref(), Some(path.as_str()), "resumed from S");

    // The record deleted while the job runs: released at once, the files stay, and why.
    let took = snapshots
        .delete("recorded-by-the-user", Duration::from_secs(30))
        .await;
    let warning = snapshots
        .event(
            "recorded-by-the-user",
            "Warning",
            "SavepointNotDisposed",
            &format!("FlinkDeployment {JOB}: the state its job was started from"),
        )
        .await;
    assert!(warning.contains(&path), "{warning}");
    assert!(
        snapshots
            .events("recorded-by-the-user", "SavepointDisposed")
            .await
            .is_empty(),
        "S must not be disposed of"
    );
    assert!(
        snapshots.on_disk(&path).join("_metadata").is_file(),
        "{path} was disposed of while the job needs it"
    );
    eprintln!("the record of S released in {took:?}, its files kept: {warning}");

    deployments.delete(JOB, &DeleteParams::default()).await.unwrap();
    wait_for("the FlinkDeployment gone", Duration::from_secs(180), || async {
        deployments.get_opt(JOB).await.ok()?.is_none().then_some(())
    })
    .await;
}
