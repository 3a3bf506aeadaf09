//! A job's own snapshots as FlinkStateSnapshot resources (the default): periodic savepoints
//! and a manual one asked for by a nonce appear as resources, the FlinkStateSnapshot loop
//! takes them, and the history's retention trims the periodic ones to the configured count,
//! their files disposed of, while the manual one stays.

use std::{collections::BTreeSet, time::Duration};

use flink_operator_api::{FlinkStateSnapshot, FlinkStateSnapshotState as State};
use kube::{
    Api, ResourceExt,
    api::{DeleteParams, ListParams, Patch, PatchParams},
};
use serde_json::json;

use crate::{
    cluster_harness::{self, TestNamespace, wait_for},
    flink_harness,
    harness::{self, LogsOnFailure},
    objects,
    reconcile::{OperatorLogOnFailure, create_counter},
};

/// The savepoint directories on the host under `dir` (the job's `savepoints`).
fn on_disk(dir: &std::path::Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn trigger_type(snapshot: &FlinkStateSnapshot) -> String {
    snapshot
        .labels()
        .get("snapshot.trigger-type")
        .cloned()
        .unwrap_or_default()
}

fn state_of(snapshot: &FlinkStateSnapshot) -> Option<State> {
    snapshot.status.as_ref().and_then(|s| s.state)
}

/// The last directory of a savepoint path (`file:/…/savepoints/savepoint-ab12-…`).
fn dir_name(path: &str) -> String {
    path.trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn periodic_and_manual_savepoints_are_resources_and_the_periodic_ones_are_trimmed_with_their_files() {
    let client = harness::client().await;
    cluster_harness::operator(&client).await;
    let _exclusive = cluster_harness::exclusive_operator().await;
    let _operator_log = OperatorLogOnFailure;
    let ns = TestNamespace::new(&client, "own-snapshots").await;
    let _logs = LogsOnFailure(ns.name.clone());
    objects::create_all(&client, &objects::flink_service_account(&ns.name)).await;
    let version = flink_harness::versions().last().unwrap().clone();
    // What a user who wants a savepoint every 10 s, two kept, the others' files removed,
    // writes.
    let (api, state) = create_counter(
        &client,
        &ns.name,
        &version,
        "savepoint",
        &[
            ("kubernetes.operator.periodic.savepoint.interval", "10s"),
            ("kubernetes.operator.savepoint.history.max.count", "2"),
            ("kubernetes.operator.savepoint.dispose-on-delete", "true"),
        ],
    )
    .await;
    let savepoints_dir = state.join("savepoints");
    harness::running_job(&api, "counter", None).await;
    let snapshots: Api<FlinkStateSnapshot> = Api::namespaced(client.clone(), &ns.name);
    let list = || async { snapshots.list(&ListParams::default()).await.unwrap().items };

    // A manual savepoint, by nonce, among the periodic ones.
    api.patch(
        "counter",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"job": {"savepointTriggerNonce": 1}}})),
    )
    .await
    .unwrap();
    let manual = wait_for(
        "the MANUAL savepoint COMPLETED",
        Duration::from_secs(120),
        || async {
            list()
                .await
                .into_iter()
                .find(|s| trigger_type(s) == "MANUAL" && state_of(s) == Some(State::Completed))
        },
    )
    .await;
    assert!(
        manual.name_any().starts_with("counter-savepoint-manual-"),
        "{}",
        manual.name_any()
    );
    let manual_path = manual.status.as_ref().unwrap().path.clone().unwrap();
    assert!(
        on_disk(&savepoints_dir).contains(&dir_name(&manual_path)),
        "{manual_path} is not on disk: {:?}",
        on_disk(&savepoints_dir)
    );

    // Periodic ones come every 10 s; once three completed, the oldest is deleted and its
    // files disposed of, leaving two.
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut completed_paths: Vec<(String, String)> = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(180);
    let trimmed = loop {
        let periodic: Vec<FlinkStateSnapshot> = list()
            .await
            .into_iter()
            .filter(|s| trigger_type(s) == "PERIODIC")
            .collect();
        for s in &periodic {
            assert!(
                s.name_any().starts_with("counter-savepoint-periodic-"),
                "{}",
                s.name_any()
            );
            if let (Some(State::Completed), Some(path)) =
                (state_of(s), s.status.as_ref().and_then(|st| st.path.clone()))
                && seen.insert(s.name_any())
            {
                completed_paths.push((s.name_any(), path));
            }
        }
        let names: BTreeSet<String> = periodic.iter().map(|s| s.name_any()).collect();
        let disk = on_disk(&savepoints_dir);
        if let Some(gone) = completed_paths
            .iter()
            .find(|(name, path)| !names.contains(name) && !disk.contains(&dir_name(path)))
        {
            break gone.clone();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no periodic savepoint was trimmed with its files in 180 s; completed: {completed_paths:?}, now: {names:?}, on disk: {disk:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    eprintln!("trimmed {} and disposed of {}", trimmed.0, trimmed.1);
    // At most the two kept, plus one being taken; the manual one stays.
    let now = list().await;
    let periodic = now.iter().filter(|s| trigger_type(s) == "PERIODIC").count();
    assert!(periodic <= 3, "{periodic} periodic snapshots: {now:?}");
    assert!(
        now.iter().any(|s| s.name_any() == manual.name_any()),
        "the manual snapshot was trimmed"
    );
    assert!(on_disk(&savepoints_dir).contains(&dir_name(&manual_path)));

    api.delete("counter", &DeleteParams::default()).await.unwrap();
    wait_for("the FlinkDeployment gone", Duration::from_secs(120), || async {
        api.get_opt("counter").await.ok()?.is_none().then_some(())
    })
    .await;
}
