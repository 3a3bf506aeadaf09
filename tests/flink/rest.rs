//! The operator's Flink REST client against real clusters of every version in
//! `tests/flink/versions`: savepoints, stop, restore (in a session cluster and through an
//! application cluster started from the savepoint, as a Kubernetes deployment restores),
//! checkpoints, metrics, disposal, and each failure the client must tell apart.

use flink_operator_api::FlinkJobState;
use std::{collections::BTreeMap, path::Path, time::Duration};

use flink_operator_controller::flink::{
    Aggregation, CheckpointKind, ClientConfig, FlinkError, FlinkRestClient, JobId, OperationStatus, RunJar,
    SavepointFormat, TriggerId,
};

use crate::harness::{self, ApplicationCluster, JOB_CLASS, SessionCluster, StateStorage};

const KEYS: u32 = 4;

fn client(rest_url: &str) -> FlinkRestClient {
    // Short backoff: the retries are exercised, without making the connection-error case slow.
    let config = ClientConfig {
        retries: 2,
        min_backoff: Duration::from_millis(100),
        max_backoff: Duration::from_millis(300),
        ..ClientConfig::default()
    };
    FlinkRestClient::new(rest_url, config).unwrap()
}

/// Polls an operation until it is no longer in progress.
async fn settle<T, F, Fut>(what: &str, mut poll: F) -> OperationStatus<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<OperationStatus<T>, FlinkError>>,
{
    for _ in 0..300 {
        match poll().await.unwrap_or_else(|e| panic!("{what}: {e}")) {
            OperationStatus::InProgress => tokio::time::sleep(Duration::from_millis(100)).await,
            done => return done,
        }
    }
    panic!("{what} still in progress after 30 s");
}

fn completed<T: std::fmt::Debug>(what: &str, status: OperationStatus<T>) -> T {
    match status {
        OperationStatus::Completed(value) => value,
        other => panic!("{what}: expected completion, got {other:?}"),
    }
}

fn job_args(out: &Path) -> Vec<String> {
    [
        "--rate",
        "40",
        "--keys",
        &KEYS.to_string(),
        "--out",
        out.to_str().unwrap(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// Waits for the job's first checkpoint, so that a savepoint or stop finds it running.
async fn wait_for_checkpoint(client: &FlinkRestClient, job: &JobId) -> u64 {
    for _ in 0..300 {
        let stats = client.checkpoint_statistics(job).await.unwrap();
        if let Some(completed) = stats.latest.completed {
            return completed.id;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no completed checkpoint of {job} within 30 s");
}

/// After a restore, every key's count continues from the saved value instead of starting
/// again at 1: the first counts the new job writes are at least those of the savepoint.
fn assert_continues(saved: &BTreeMap<u32, u64>, restored: &BTreeMap<u32, u64>) {
    for (key, before) in saved {
        let after = restored.get(key).copied().unwrap_or(0);
        assert!(
            after > *before,
            "key {key}: count {after} after restore, {before} in the savepoint (fresh state?)"
        );
    }
}

#[tokio::test]
async fn rest_client_drives_a_session_cluster_through_savepoints_stop_and_restore() {
    for version in harness::versions() {
        let jar = harness::job_jar_async(&version).await;
        let storage = StateStorage::new();
        let mut cluster = SessionCluster::start_with(&version, &storage.config()).await;
        let flink = client(&cluster.rest_url());

        let overview = flink.cluster_overview().await.unwrap();
        assert_eq!(
            (overview.taskmanagers, overview.flink_version.as_deref()),
            (1, Some(version.as_str()))
        );
        assert_eq!(
            flink.cluster_config().await.unwrap().flink_version.as_deref(),
            Some(version.as_str())
        );
        let jm_config = flink.job_manager_config().await.unwrap();
        assert!(jm_config.iter().any(|e| e.key == "rest.port"), "{jm_config:?}");

        // Upload and run; RUNNING with every task running; checkpoints are taken.
        let jar_id = flink.upload_jar(&jar).await.unwrap();
        let out = storage.path().join("counts-1");
        let run = RunJar {
            args: job_args(&out),
            parallelism: Some(2),
            ..Default::default()
        };
        let job = flink.run_jar(&jar_id, &run).await.unwrap();
        cluster
            .wait_for_job_running(job.as_str(), Duration::from_secs(60))
            .await;
        let details = flink.job_details(&job).await.unwrap();
        assert!(details.all_tasks_running(), "{details:?}");
        assert!(
            flink
                .jobs_overview()
                .await
                .unwrap()
                .iter()
                .any(|j| j.jid == job && j.state == FlinkJobState::Running)
        );
        wait_for_checkpoint(&flink, &job).await;
        let config = flink.checkpoint_config(&job).await.unwrap();
        assert!(
            config.externalization.enabled && !config.externalization.delete_on_cancellation,
            "{config:?}"
        );
        assert!(
            flink
                .job_exceptions(&job)
                .await
                .unwrap()
                .history
                .entries
                .is_empty()
        );

        // A manual checkpoint, then a savepoint with the job running on.
        let trigger = flink
            .trigger_checkpoint(&job, CheckpointKind::Full)
            .await
            .unwrap();
        let checkpoint = completed(
            "checkpoint",
            settle("checkpoint", || flink.checkpoint_status(&job, &trigger)).await,
        );
        assert!(checkpoint >= 1);
        let trigger = flink
            .trigger_savepoint(&job, None, SavepointFormat::Canonical)
            .await
            .unwrap();
        let savepoint = completed(
            "savepoint",
            settle("savepoint", || flink.savepoint_status(&job, &trigger)).await,
        );
        assert!(savepoint.contains("savepoint-"), "{savepoint}");
        assert!(
            Path::new(savepoint.trim_start_matches("file:")).exists(),
            "{savepoint} not on disk"
        );

        // Metrics of the source vertex, aggregated over its two subtasks. The JobManager
        // fetches metrics from the TaskManagers periodically, so the first answers are empty.
        let source = &details.vertices[0];
        let mut metrics = Vec::new();
        for _ in 0..100 {
            metrics = flink
                .subtask_metrics(
                    &job,
                    &source.id,
                    &["numRecordsOut"],
                    &[Aggregation::Min, Aggregation::Max],
                )
                .await
                .unwrap();
            if !metrics.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert_eq!(metrics.len(), 1, "{metrics:?}");
        assert_eq!(metrics[0].id, "numRecordsOut");
        let (min, max) = (metrics[0].min.unwrap(), metrics[0].max.unwrap());
        assert!(min >= 0.0 && max >= min, "{metrics:?}");

        // Stop with a savepoint: the job ends FINISHED and the savepoint is on disk.
        cluster
            .wait_for_counts(&out, KEYS, 20, Duration::from_secs(60))
            .await;
        let trigger = flink
            .stop_with_savepoint(&job, None, false, SavepointFormat::Canonical)
            .await
            .unwrap();
        let stopped_at = completed(
            "stop",
            settle("stop", || flink.savepoint_status(&job, &trigger)).await,
        );
        cluster
            .wait_for_job_state(job.as_str(), FlinkJobState::Finished, Duration::from_secs(30))
            .await;
        let saved = harness::read_counts(&out);

        // A savepoint or stop of a job that is gone is a distinct outcome, not a failure.
        // Right after FINISHED the JobMaster may still be shutting down, and then answers
        // "is not a streaming job"; once it is gone the answer is JobNotFound.
        let mut outcome = None;
        for _ in 0..40 {
            let gone = flink
                .trigger_savepoint(&job, None, SavepointFormat::Canonical)
                .await
                .unwrap();
            let status = settle("savepoint of a finished job", || {
                flink.savepoint_status(&job, &gone)
            })
            .await;
            let shutting_down =
                matches!(&status, OperationStatus::Failed(f) if f.message.contains("is not a streaming job"));
            outcome = Some(status);
            if !shutting_down {
                break;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        let outcome = outcome.unwrap();
        assert!(matches!(outcome, OperationStatus::JobNotFound(_)), "{outcome:?}");
        // An id the JobManager never issued (as after its restart) is another.
        let unknown = flink.savepoint_status(&job, &TriggerId::random()).await.unwrap();
        assert!(
            matches!(unknown, OperationStatus::UnknownTrigger(_)),
            "{unknown:?}"
        );

        // Restore from the stop savepoint: the counts continue.
        let restored_out = storage.path().join("counts-2");
        let run = RunJar {
            entry_class: Some(JOB_CLASS.to_owned()),
            args: job_args(&restored_out),
            parallelism: Some(2),
            savepoint_path: Some(stopped_at.clone()),
            allow_non_restored_state: Some(false),
            ..Default::default()
        };
        let restored = flink.run_jar(&jar_id, &run).await.unwrap();
        cluster
            .wait_for_job_running(restored.as_str(), Duration::from_secs(60))
            .await;
        let first = cluster
            .wait_for_counts(&restored_out, KEYS, 1, Duration::from_secs(60))
            .await;
        assert_continues(&saved, &first);
        let stats = flink.checkpoint_statistics(&restored).await.unwrap();
        let from = stats
            .latest
            .restored
            .expect("restored checkpoint in the statistics");
        assert!(
            from.is_savepoint
                && stopped_at.ends_with(
                    from.external_path
                        .as_deref()
                        .unwrap_or("?")
                        .trim_start_matches("file:")
                ),
            "{from:?} vs {stopped_at}"
        );

        // Stop with drain (for a job that will not resume): FINISHED, with a savepoint.
        let trigger = flink
            .stop_with_savepoint(&restored, None, true, SavepointFormat::Native)
            .await
            .unwrap();
        let drained = completed(
            "stop with drain",
            settle("stop with drain", || flink.savepoint_status(&restored, &trigger)).await,
        );
        assert!(
            Path::new(drained.trim_start_matches("file:")).exists(),
            "{drained} not on disk"
        );
        cluster
            .wait_for_job_state(
                restored.as_str(),
                FlinkJobState::Finished,
                Duration::from_secs(30),
            )
            .await;

        // Cancel: the job ends CANCELED.
        let run = RunJar {
            args: job_args(&storage.path().join("counts-cancel")),
            ..Default::default()
        };
        let cancelled = flink.run_jar(&jar_id, &run).await.unwrap();
        cluster
            .wait_for_job_running(cancelled.as_str(), Duration::from_secs(60))
            .await;
        flink.cancel(&cancelled).await.unwrap();
        cluster
            .wait_for_job_state(
                cancelled.as_str(),
                FlinkJobState::Canceled,
                Duration::from_secs(30),
            )
            .await;

        // A bad savepoint path is refused with Flink's reason.
        let run = RunJar {
            args: job_args(&storage.path().join("counts-3")),
            savepoint_path: Some("file:///nonexistent/savepoint-000000-000000000000".into()),
            ..Default::default()
        };
        match flink.run_jar(&jar_id, &run).await {
            Err(FlinkError::BadRequest {
                status: 400, message, ..
            }) => {
                assert!(
                    message.contains("Cannot find checkpoint or savepoint"),
                    "{message}"
                )
            }
            other => panic!("expected a refusal naming the missing savepoint, got {other:?}"),
        }

        // An unknown job is not found.
        match flink.job_details(&JobId::random()).await {
            Err(FlinkError::NotFound { message, .. }) => assert!(message.contains("not found"), "{message}"),
            other => panic!("expected not found, got {other:?}"),
        }

        // The savepoint is disposed of through Flink.
        let trigger = flink.dispose_savepoint(&savepoint).await.unwrap();
        completed(
            "disposal",
            settle("disposal", || flink.disposal_status(&trigger)).await,
        );
        assert!(
            !Path::new(savepoint.trim_start_matches("file:")).exists(),
            "{savepoint} still on disk"
        );
        flink.delete_jar(&jar_id).await.unwrap();

        // A JobManager that is gone is a retryable connection error.
        cluster.stop_job_manager();
        match flink.cluster_overview().await {
            Err(error @ FlinkError::Unreachable { .. }) => assert!(error.retryable(), "{error}"),
            other => panic!("expected a connection error, got {other:?}"),
        }
        cluster.stop().await;
    }
}

#[tokio::test]
async fn an_application_cluster_started_from_a_savepoint_restores_the_state() {
    for version in harness::versions() {
        let jar = harness::job_jar_async(&version).await;
        let storage = StateStorage::new();
        let out = storage.path().join("counts-1");
        let args = job_args(&out);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let job = JobId::random();
        let first = ApplicationCluster::start(
            &version,
            &jar,
            JOB_CLASS,
            job.as_str(),
            None,
            &args,
            &storage.config(),
        )
        .await;
        let flink = client(&first.rest_url());
        first
            .wait_for_job_running(job.as_str(), Duration::from_secs(60))
            .await;
        first
            .wait_for_counts(&out, KEYS, 20, Duration::from_secs(60))
            .await;
        let trigger = flink
            .stop_with_savepoint(&job, None, false, SavepointFormat::Native)
            .await
            .unwrap();
        let savepoint = completed(
            "stop",
            settle("stop", || flink.savepoint_status(&job, &trigger)).await,
        );
        first
            .wait_for_job_state(job.as_str(), FlinkJobState::Finished, Duration::from_secs(30))
            .await;
        let saved = harness::read_counts(&out);
        first.stop().await;

        // The way a Kubernetes deployment restores: a new cluster started with the path.
        let restored_out = storage.path().join("counts-2");
        let args = job_args(&restored_out);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let second = ApplicationCluster::start(
            &version,
            &jar,
            JOB_CLASS,
            job.as_str(),
            Some(&savepoint),
            &args,
            &storage.config(),
        )
        .await;
        let flink = client(&second.rest_url());
        second
            .wait_for_job_running(job.as_str(), Duration::from_secs(60))
            .await;
        let counts = second
            .wait_for_counts(&restored_out, KEYS, 1, Duration::from_secs(60))
            .await;
        assert_continues(&saved, &counts);
        let stats = flink.checkpoint_statistics(&job).await.unwrap();
        assert_eq!(stats.counts.restored, 1, "{stats:?}");
        assert!(
            stats.latest.restored.as_ref().is_some_and(|r| r.is_savepoint),
            "{stats:?}"
        );
        eprintln!(
            "Flink {version}: application cluster restored from {savepoint}; RSS {}",
            second.rss()
        );
        second.stop().await;
    }
}
