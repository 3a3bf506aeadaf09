//! The operator's own snapshots as a job's configuration asks for them: periodic checkpoints
//! on a Quartz cron schedule, each a PERIODIC checkpoint FlinkStateSnapshot created on time
//! and trimmed beyond `execution.checkpointing.num-retained`; and NATIVE savepoints, which
//! Flink's checkpoint statistics show as such, one restored by a savepoint upgrade with the
//! counts going on.

use std::{
    collections::BTreeMap,
    time::{Duration, Instant, SystemTime},
};

use flink_operator_api::{FlinkStateSnapshot, FlinkStateSnapshotState as State, SavepointFormatType, keys};
use flink_operator_controller::flink::JobId;
use kube::{
    Api, ResourceExt,
    api::{ListParams, Patch, PatchParams},
};
use serde_json::json;

use crate::{
    cluster_harness::{self, TestNamespace, wait_for},
    flink_harness,
    harness::{self, LogsOnFailure},
    objects,
    reconcile::{OperatorLogOnFailure, counted_to, counts_went_on, create_counter},
};

/// The cron schedule's period: `0/20 * * * * ?` falls due at 0, 20 and 40 s of a minute.
const PERIOD_MS: i64 = 20_000;
/// How late after its time a periodic checkpoint may be asked for: the look that falls due
/// is scheduled in whole seconds, and its time is taken once the job is observed, which a
/// JobManager busy with its own checkpoints on a loaded machine answers in seconds.
const LATE_MS: i64 = 8_000;

/// Asks for a savepoint of the FlinkDeployment `counter` with `savepointTriggerNonce: 1`;
/// returns its MANUAL snapshot resource once COMPLETED.
pub(crate) async fn nonce_savepoint(
    api: &Api<flink_operator_api::FlinkDeployment>,
    snapshots: &Api<FlinkStateSnapshot>,
) -> FlinkStateSnapshot {
    api.patch(
        "counter",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"job": {"savepointTriggerNonce": 1}}})),
    )
    .await
    .unwrap();
    let manual = ListParams::default().labels(&format!("{}=MANUAL", keys::labels::SNAPSHOT_TRIGGER_TYPE));
    wait_for(
        "the nonce's savepoint COMPLETED",
        Duration::from_secs(120),
        || async {
            snapshots
                .list(&manual)
                .await
                .ok()?
                .items
                .into_iter()
                .find(|s| s.status.as_ref().and_then(|s| s.state) == Some(State::Completed))
        },
    )
    .await
}

/// The epoch milliseconds a snapshot resource's name ends with: when it was asked for.
fn asked_at(name: &str) -> i64 {
    name.rsplit('-').next().and_then(|ms| ms.parse().ok()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn periodic_checkpoints_follow_a_cron_schedule_and_native_savepoints_carry_an_upgrade() {
    let client = harness::client().await;
    crate::operator::shared(&client).await;
    let _alone = cluster_harness::exclusive_operator().await;
    let _operator_log = OperatorLogOnFailure;
    let ns = TestNamespace::new(&client, "snapshot-formats").await;
    let _logs = LogsOnFailure(ns.name.clone());
    objects::create_all(&client, &objects::flink_service_account(&ns.name)).await;
    let version = flink_harness::versions().last().unwrap().clone();
    let (api, state) = create_counter(
        &client,
        &ns.name,
        &version,
        "savepoint",
        &[
            ("kubernetes.operator.savepoint.format.type", "NATIVE"),
            (
                "kubernetes.operator.periodic.checkpoint.interval",
                "0/20 * * * * ?",
            ),
            ("execution.checkpointing.num-retained", "2"),
        ],
    )
    .await;
    let counts = state.join("counts");
    let first = harness::running_job(&api, "counter", None).await;
    let first_job = first.status.unwrap().job_status.unwrap().job_id.unwrap();
    let url = harness::rest_address(&client, &ns.name, "counter").await;
    let rest = harness::rest_client(&url);
    harness::wait_for_running_job(&rest, &JobId::from(first_job.as_str())).await;
    let snapshots: Api<FlinkStateSnapshot> = Api::namespaced(client.clone(), &ns.name);

    // 1. A savepoint asked for by a nonce: a NATIVE savepoint resource, and NATIVE in Flink's
    // own statistics.
    let savepoint = nonce_savepoint(&api, &snapshots).await;
    let spec = savepoint.spec.savepoint.clone().unwrap();
    assert_eq!(
        spec.format_type,
        Some(SavepointFormatType::Native),
        "{}",
        savepoint.name_any()
    );
    let path = savepoint.status.unwrap().path.unwrap();
    // The JobManager caches its checkpoint statistics for a few seconds
    // (`rest.cache.checkpoint-statistics.timeout`): the savepoint shows once they are renewed.
    let taken = wait_for(
        "the savepoint in Flink's checkpoint history",
        Duration::from_secs(30),
        || async {
            let statistics = rest
                .checkpoint_statistics(&JobId::from(first_job.as_str()))
                .await
                .ok()?;
            statistics
                .history
                .into_iter()
                .find(|c| c.is_savepoint && c.external_path.as_deref() == Some(path.as_str()))
        },
    )
    .await;
    assert_eq!(taken.savepoint_format.as_deref(), Some("NATIVE"), "{taken:?}");
    eprintln!("NATIVE savepoint {path}");

    // 2. Periodic checkpoints: each asked for within a few seconds of its cron time, those
    // beyond the two retained deleted.
    let periodic = ListParams::default().labels(&format!("{}=PERIODIC", keys::labels::SNAPSHOT_TRIGGER_TYPE));
    let mut asked = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(200);
    let (kept, completed) = loop {
        let items = snapshots.list(&periodic).await.unwrap().items;
        for s in &items {
            assert!(
                s.spec.checkpoint.is_some(),
                "{} is not a checkpoint",
                s.name_any()
            );
            asked.insert(s.name_any(), asked_at(&s.name_any()));
        }
        let first_gone = asked
            .keys()
            .next()
            .is_some_and(|n| !items.iter().any(|s| &s.name_any() == n));
        let completed = items
            .iter()
            .filter(|s| s.status.as_ref().and_then(|s| s.state) == Some(State::Completed))
            .count();
        if asked.len() >= 4 && first_gone && completed > 0 {
            break (items.len(), completed);
        }
        assert!(
            Instant::now() < deadline,
            "periodic checkpoints seen: {asked:?}, now: {:?}",
            items
                .iter()
                .map(|s| (s.name_any(), s.status.clone()))
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    for (name, at) in &asked {
        assert!(
            at.rem_euclid(PERIOD_MS) <= LATE_MS,
            "{name} was asked for {} ms after its time",
            at.rem_euclid(PERIOD_MS)
        );
    }
    assert!(
        kept <= 3,
        "{kept} periodic checkpoint resources kept with num-retained 2"
    );
    eprintln!("periodic checkpoints asked for at {asked:?}; {kept} kept, {completed} completed");

    // 3. A savepoint upgrade: its NATIVE savepoint restored, the counts going on.
    let before = counted_to(&counts, 50).await;
    api.patch(
        "counter",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"job": {"parallelism": 1}}})),
    )
    .await
    .unwrap();
    let upgraded = harness::running_job(&api, "counter", Some(&first_job)).await;
    let restarted_at = SystemTime::now();
    let job_status = upgraded.status.unwrap().job_status.unwrap();
    let upgrade_path = job_status.upgrade_savepoint_path.unwrap();
    let upgrade = ListParams::default().labels(&format!("{}=UPGRADE", keys::labels::SNAPSHOT_TRIGGER_TYPE));
    let recorded = snapshots.list(&upgrade).await.unwrap().items;
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    assert_eq!(
        recorded[0].spec.savepoint.as_ref().and_then(|s| s.format_type),
        Some(SavepointFormatType::Native)
    );
    let new_job = JobId::from(job_status.job_id.unwrap().as_str());
    // The new JobManager is another pod, at another address.
    let rest = harness::rest_client(&harness::rest_address(&client, &ns.name, "counter").await);
    harness::wait_for_running_job(&rest, &new_job).await;
    let restored = wait_for(
        "the restored snapshot in Flink's checkpoint statistics",
        Duration::from_secs(30),
        || async { rest.checkpoint_statistics(&new_job).await.ok()?.latest.restored },
    )
    .await;
    assert!(restored.is_savepoint, "{restored:?}");
    assert_eq!(restored.external_path.as_deref(), Some(upgrade_path.as_str()));
    counts_went_on(&counts, &before, restarted_at, 0).await;
}
