//! Request and response shapes of the Flink REST API (v1), as far as the operator reads
//! them. Every field a response may lack is optional, and unknown fields are ignored, so a
//! newer Flink that adds fields still decodes. Shapes are the same in Flink 1.20 and 2.x
//! unless noted.

use std::collections::BTreeMap;

use flink_operator_api::FlinkJobState;
use serde::{Deserialize, Serialize};

use super::ids::{JarId, JobId, TriggerId};

// === Cluster ===

/// `GET /overview`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct ClusterOverview {
    /// Registered TaskManagers.
    #[serde(default)]
    pub taskmanagers: u32,
    /// All task slots.
    #[serde(rename = "slots-total", default)]
    pub slots_total: u32,
    /// Free task slots.
    #[serde(rename = "slots-available", default)]
    pub slots_available: u32,
    /// Jobs running now.
    #[serde(rename = "jobs-running", default)]
    pub jobs_running: u32,
    /// Flink version, e.g. `1.20.5`.
    #[serde(rename = "flink-version")]
    pub flink_version: Option<String>,
    /// Flink commit.
    #[serde(rename = "flink-commit")]
    pub flink_commit: Option<String>,
}

/// `GET /config`: the web UI's view of the cluster.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct ClusterConfig {
    /// Flink version.
    #[serde(rename = "flink-version")]
    pub flink_version: Option<String>,
    /// Flink revision and build date.
    #[serde(rename = "flink-revision")]
    pub flink_revision: Option<String>,
}

/// One entry of `GET /jobmanager/config`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct ConfigEntry {
    /// Configuration key.
    pub key: String,
    /// Its value.
    pub value: String,
}

// === Jobs ===

/// `GET /jobs/overview`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct JobsOverview {
    /// All jobs the JobManager knows, running or finished.
    #[serde(default)]
    pub jobs: Vec<JobOverview>,
}

/// One job in `GET /jobs/overview`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct JobOverview {
    /// Job id.
    pub jid: JobId,
    /// Job name.
    #[serde(default)]
    pub name: String,
    /// Flink job state (`RUNNING`, `FINISHED`, ...).
    pub state: FlinkJobState,
    /// Start time, epoch milliseconds.
    #[serde(rename = "start-time")]
    pub start_time: Option<i64>,
    /// End time, epoch milliseconds (-1 while running).
    #[serde(rename = "end-time")]
    pub end_time: Option<i64>,
    /// Last state change, epoch milliseconds.
    #[serde(rename = "last-modification")]
    pub last_modification: Option<i64>,
    /// Task counts by state (`running`, `created`, ...).
    #[serde(default)]
    pub tasks: BTreeMap<String, i64>,
}

/// `GET /jobs/:jobid`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct JobDetails {
    /// Job id.
    pub jid: JobId,
    /// Job name.
    #[serde(default)]
    pub name: String,
    /// Flink job state.
    pub state: FlinkJobState,
    /// Whether stop-with-savepoint is possible.
    #[serde(rename = "isStoppable", default)]
    pub is_stoppable: bool,
    /// Start time, epoch milliseconds.
    #[serde(rename = "start-time")]
    pub start_time: Option<i64>,
    /// End time, epoch milliseconds (-1 while running).
    #[serde(rename = "end-time")]
    pub end_time: Option<i64>,
    /// When each state was entered, epoch milliseconds.
    #[serde(default)]
    pub timestamps: BTreeMap<String, i64>,
    /// The job's vertices.
    #[serde(default)]
    pub vertices: Vec<JobVertex>,
    /// The job graph: which vertex sends to which.
    #[serde(default)]
    pub plan: Option<JobPlan>,
}

/// The `plan` of `GET /jobs/:jobid`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct JobPlan {
    #[serde(default)]
    pub nodes: Vec<PlanNode>,
}

/// A vertex of the plan, with the vertices it takes input from.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct PlanNode {
    pub id: String,
    #[serde(default)]
    pub inputs: Vec<PlanInput>,
}

/// An edge into a plan node.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct PlanInput {
    pub id: String,
}

impl JobDetails {
    /// Whether the job is RUNNING with every task running: a RUNNING job can still wait for
    /// slots with its vertices CREATED.
    pub fn all_tasks_running(&self) -> bool {
        self.state == FlinkJobState::Running
            && !self.vertices.is_empty()
            && self.vertices.iter().all(|v| v.status == "RUNNING")
    }
}

/// A vertex of `GET /jobs/:jobid`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct JobVertex {
    /// Vertex id.
    pub id: String,
    /// Vertex name.
    #[serde(default)]
    pub name: String,
    /// Parallelism.
    #[serde(default)]
    pub parallelism: u32,
    /// Max parallelism (the number of key groups).
    #[serde(rename = "maxParallelism", default)]
    pub max_parallelism: Option<i64>,
    /// Execution state of the vertex.
    #[serde(default)]
    pub status: String,
    /// How many of its subtasks are in each execution state (`RUNNING`, `FINISHED`, ...).
    #[serde(default)]
    pub tasks: BTreeMap<String, u32>,
}

impl JobVertex {
    /// Every subtask runs (or, a source's without a split, has finished).
    pub fn all_subtasks_running(&self) -> bool {
        let count = |state: &str| self.tasks.get(state).copied().unwrap_or(0);
        self.status == "RUNNING"
            && count("RUNNING") + count("FINISHED") == self.parallelism
            && count("RUNNING") > 0
    }
}

/// `GET`/`PUT /jobs/:jobid/resource-requirements`: per vertex id, its parallelism bounds.
pub type ResourceRequirements = BTreeMap<String, VertexRequirements>;

/// One vertex's resource requirements.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VertexRequirements {
    pub parallelism: ParallelismBounds,
}

/// The parallelism the adaptive scheduler runs a vertex with: as high as the slots allow up
/// to `upperBound`, and not below `lowerBound`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParallelismBounds {
    pub lower_bound: i64,
    pub upper_bound: i64,
}

/// `GET /jobs/:jobid/exceptions`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct JobExceptions {
    /// The exception history.
    #[serde(rename = "exceptionHistory", default)]
    pub history: ExceptionHistory,
}

/// The exception history of a job.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct ExceptionHistory {
    /// Newest first.
    #[serde(default)]
    pub entries: Vec<ExceptionEntry>,
    /// Whether older entries were dropped.
    #[serde(default)]
    pub truncated: bool,
}

/// One failure of a job.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExceptionEntry {
    /// Exception class and message.
    #[serde(default)]
    pub exception_name: String,
    /// Full stack trace.
    #[serde(default)]
    pub stacktrace: String,
    /// When it happened, epoch milliseconds.
    pub timestamp: Option<i64>,
    /// The failing task, if one.
    pub task_name: Option<String>,
    /// Labels attached by failure enrichers.
    #[serde(default)]
    pub failure_labels: BTreeMap<String, String>,
}

// === Checkpoints ===

/// `GET /jobs/:jobid/checkpoints`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct CheckpointStatistics {
    /// Counts by outcome.
    #[serde(default)]
    pub counts: CheckpointCounts,
    /// The latest of each kind.
    #[serde(default)]
    pub latest: LatestCheckpoints,
    /// The most recent checkpoints and savepoints, newest first (`web.checkpoints.history`
    /// of them, 10 by default), whatever became of them.
    #[serde(default)]
    pub history: Vec<CheckpointEntry>,
}

/// Checkpoint counts.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct CheckpointCounts {
    /// Restores so far.
    #[serde(default)]
    pub restored: u64,
    /// All checkpoints triggered.
    #[serde(default)]
    pub total: u64,
    /// Running now.
    #[serde(default)]
    pub in_progress: u64,
    /// Completed.
    #[serde(default)]
    pub completed: u64,
    /// Failed (usually 1 right after a start: the first trigger finds tasks not running yet).
    #[serde(default)]
    pub failed: u64,
}

/// The latest checkpoints of each kind.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct LatestCheckpoints {
    /// The latest completed checkpoint.
    pub completed: Option<CompletedCheckpoint>,
    /// The latest savepoint.
    pub savepoint: Option<CompletedCheckpoint>,
    /// What the job restored from, if it did.
    pub restored: Option<RestoredCheckpoint>,
}

/// A completed checkpoint or savepoint.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct CompletedCheckpoint {
    /// Checkpoint id.
    pub id: u64,
    /// Whether it is a savepoint.
    #[serde(default)]
    pub is_savepoint: bool,
    /// Where it is stored (absent for a checkpoint that is not externalised).
    pub external_path: Option<String>,
    /// When it was triggered, epoch milliseconds.
    pub trigger_timestamp: Option<i64>,
    /// When the last task acknowledged it, epoch milliseconds.
    pub latest_ack_timestamp: Option<i64>,
    /// Size of the state in bytes (`state_size` in 1.x, `checkpointed_size` also in 2.x).
    pub state_size: Option<u64>,
    /// Whether it has been discarded since.
    #[serde(default)]
    pub discarded: bool,
}

/// A checkpoint or savepoint of the history: in progress, completed or failed.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct CheckpointEntry {
    /// Checkpoint id.
    pub id: u64,
    /// `IN_PROGRESS`, `COMPLETED` or `FAILED`.
    #[serde(default)]
    pub status: String,
    /// Whether it is a savepoint.
    #[serde(default)]
    pub is_savepoint: bool,
    /// A savepoint's format: `CANONICAL` or `NATIVE`.
    #[serde(rename = "savepointFormat")]
    pub savepoint_format: Option<String>,
    /// Where it is stored (a completed one that is externalised).
    pub external_path: Option<String>,
    /// When it was triggered, epoch milliseconds.
    pub trigger_timestamp: Option<i64>,
    /// When the last task acknowledged it, epoch milliseconds.
    pub latest_ack_timestamp: Option<i64>,
    /// Whether it has been discarded since.
    #[serde(default)]
    pub discarded: bool,
}

/// What a job restored from.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct RestoredCheckpoint {
    /// Checkpoint id.
    pub id: u64,
    /// When it was restored, epoch milliseconds.
    pub restore_timestamp: Option<i64>,
    /// Whether it was a savepoint.
    #[serde(default)]
    pub is_savepoint: bool,
    /// Where it was read from.
    pub external_path: Option<String>,
}

/// `GET /jobs/:jobid/checkpoints/config`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct CheckpointConfig {
    /// `exactly_once` or `at_least_once`.
    pub mode: Option<String>,
    /// Checkpoint interval, milliseconds.
    pub interval: Option<i64>,
    /// Checkpoint timeout, milliseconds.
    pub timeout: Option<i64>,
    /// Whether checkpoints are kept after the job ends.
    #[serde(default)]
    pub externalization: Externalization,
    /// State backend name.
    pub state_backend: Option<String>,
    /// Checkpoint storage name.
    pub checkpoint_storage: Option<String>,
}

/// Externalised-checkpoint settings.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct Externalization {
    /// Whether checkpoints are externalised.
    #[serde(default)]
    pub enabled: bool,
    /// Whether they are deleted when the job is cancelled.
    #[serde(default)]
    pub delete_on_cancellation: bool,
}

// === Requests ===

/// Savepoint format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum SavepointFormat {
    /// Portable across state backends.
    #[default]
    Canonical,
    /// The state backend's own format (faster).
    Native,
}

/// Type of a manually triggered checkpoint (Flink 1.19+).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum CheckpointKind {
    /// A full checkpoint, independent of earlier ones.
    #[default]
    Full,
    /// An incremental checkpoint.
    Incremental,
    /// Whatever the job is configured for.
    Configured,
}

/// How a restored job claims the snapshot it starts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ClaimMode {
    /// The job takes ownership and may delete the snapshot.
    Claim,
    /// The job copies what it needs first; the snapshot stays the user's.
    NoClaim,
}

/// Body of `POST /jobs/:jobid/savepoints`.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct SavepointTrigger<'a> {
    #[serde(rename = "target-directory", skip_serializing_if = "Option::is_none")]
    pub target_directory: Option<&'a str>,
    #[serde(rename = "cancel-job")]
    pub cancel_job: bool,
    #[serde(rename = "formatType")]
    pub format: SavepointFormat,
    #[serde(rename = "triggerId")]
    pub trigger_id: &'a TriggerId,
}

/// Body of `POST /jobs/:jobid/stop` (note the camelCase, unlike `/savepoints`).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StopTrigger<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_directory: Option<&'a str>,
    pub drain: bool,
    #[serde(rename = "formatType")]
    pub format: SavepointFormat,
    pub trigger_id: &'a TriggerId,
}

/// Body of `POST /jobs/:jobid/checkpoints`.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CheckpointTrigger<'a> {
    pub checkpoint_type: CheckpointKind,
    pub trigger_id: &'a TriggerId,
}

/// Body of `POST /savepoint-disposal`: the path alone (unlike the other triggers, a disposal
/// takes no trigger id; Flink chooses one).
#[derive(Clone, Debug, Serialize)]
pub(crate) struct DisposalTrigger<'a> {
    #[serde(rename = "savepoint-path")]
    pub savepoint_path: &'a str,
}

/// How to run an uploaded jar (`POST /jars/:jarid/run`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunJar {
    /// Main class; the jar's manifest when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entry_class: Option<String>,
    /// Program arguments.
    #[serde(rename = "programArgsList", skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Parallelism; the cluster default when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parallelism: Option<u32>,
    /// The job id to use; the client picks a random one when absent, so that a retried
    /// submission is recognised as a duplicate rather than starting a second job.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_id: Option<JobId>,
    /// Savepoint or retained checkpoint to restore from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub savepoint_path: Option<String>,
    /// Skip state that maps to no operator of the new job.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_non_restored_state: Option<bool>,
    /// How the restored snapshot is claimed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claim_mode: Option<ClaimMode>,
    /// Job configuration overrides.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub flink_configuration: BTreeMap<String, String>,
}

/// Aggregation of a subtask metric across subtasks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aggregation {
    /// Smallest value.
    Min,
    /// Largest value.
    Max,
    /// Mean value.
    Avg,
    /// Sum of values.
    Sum,
}

impl Aggregation {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Min => "min",
            Self::Max => "max",
            Self::Avg => "avg",
            Self::Sum => "sum",
        }
    }
}

/// One metric of `GET /jobs/:jobid/vertices/:vertexid/subtasks/metrics` asked for nothing:
/// its name.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct MetricId {
    /// Metric name.
    pub id: String,
}

/// A metric's value (`GET /jobs/:jobid/metrics?get=..`); Flink sends numbers as text.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct MetricValue {
    /// Metric name.
    pub id: String,
    pub value: Option<String>,
}

/// A metric's aggregates over a vertex's subtasks.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct AggregatedMetric {
    /// Metric name.
    pub id: String,
    /// Minimum over subtasks.
    pub min: Option<f64>,
    /// Maximum over subtasks.
    pub max: Option<f64>,
    /// Average over subtasks.
    pub avg: Option<f64>,
    /// Sum over subtasks.
    pub sum: Option<f64>,
}

// === Responses of asynchronous operations ===

#[derive(Deserialize)]
pub(crate) struct TriggerResponse {
    #[serde(rename = "request-id")]
    pub request_id: TriggerId,
}

#[derive(Deserialize)]
pub(crate) struct UploadResponse {
    pub filename: String,
}

impl UploadResponse {
    /// Flink names an uploaded jar by the base name of the stored file.
    pub fn jar_id(&self) -> JarId {
        JarId(
            self.filename
                .rsplit('/')
                .next()
                .unwrap_or(&self.filename)
                .to_owned(),
        )
    }
}

#[derive(Deserialize)]
pub(crate) struct RunResponse {
    pub jobid: JobId,
}

/// The body of an operation status poll: `{"status":{"id":...},"operation":{...}}`.
#[derive(Deserialize)]
pub(crate) struct OperationPoll {
    pub status: OperationPollStatus,
    #[serde(default)]
    pub operation: Option<OperationResult>,
}

#[derive(Deserialize)]
pub(crate) struct OperationPollStatus {
    pub id: String,
}

#[derive(Deserialize)]
pub(crate) struct OperationResult {
    pub location: Option<String>,
    #[serde(rename = "checkpointId")]
    pub checkpoint_id: Option<u64>,
    /// `failure-cause` in a savepoint's or disposal's answer, `failureCause` in a
    /// checkpoint's.
    #[serde(rename = "failure-cause", alias = "failureCause")]
    pub failure_cause: Option<FailureCauseBody>,
}

#[derive(Deserialize)]
pub(crate) struct FailureCauseBody {
    pub class: Option<String>,
    #[serde(rename = "stack-trace")]
    pub stack_trace: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_decode_with_fields_this_client_does_not_know() {
        let overview: ClusterOverview = serde_json::from_str(
            r#"{"taskmanagers":1,"slots-total":2,"slots-available":0,"jobs-running":1,"jobs-finished":0,
               "jobs-cancelled":0,"jobs-failed":0,"flink-version":"2.3.0","flink-commit":"abc","new-field":1}"#,
        )
        .unwrap();
        assert_eq!(
            (
                overview.taskmanagers,
                overview.slots_total,
                overview.flink_version.as_deref()
            ),
            (1, 2, Some("2.3.0"))
        );

        let jobs: JobsOverview = serde_json::from_str(
            r#"{"jobs":[{"jid":"e3bc32a1e3bc32a1e3bc32a1e3bc32a1","name":"keyed-counter","state":"RUNNING",
               "start-time":1764500000000,"end-time":-1,"duration":5000,"last-modification":1764500001000,
               "tasks":{"running":2,"created":0},"application-id":"x"}]}"#,
        )
        .unwrap();
        assert_eq!(jobs.jobs[0].state, FlinkJobState::Running);
        assert_eq!(jobs.jobs[0].tasks["running"], 2);

        let details: JobDetails = serde_json::from_str(
            r#"{"jid":"e3bc32a1e3bc32a1e3bc32a1e3bc32a1","name":"n","isStoppable":false,"state":"RUNNING",
               "start-time":1,"end-time":-1,"timestamps":{"RUNNING":1},
               "vertices":[{"id":"v1","name":"Source","parallelism":2,"maxParallelism":128,"status":"RUNNING"},
                           {"id":"v2","name":"Sink","parallelism":2,"status":"CREATED"}]}"#,
        )
        .unwrap();
        assert!(!details.all_tasks_running(), "a vertex still waits for slots");

        let stats: CheckpointStatistics = serde_json::from_str(
            r#"{"counts":{"restored":1,"total":5,"in_progress":0,"completed":4,"failed":1},
               "summary":{},
               "latest":{"completed":{"id":5,"status":"COMPLETED","is_savepoint":false,
                          "external_path":"file:/cp/chk-5","trigger_timestamp":10,"latest_ack_timestamp":12,
                          "state_size":1024,"discarded":false},
                         "savepoint":null,"failed":null,
                         "restored":{"id":3,"restore_timestamp":9,"is_savepoint":true,"external_path":"file:/sp/savepoint-1"}},
               "history":[{"className":"completed","id":6,"status":"COMPLETED","is_savepoint":true,
                           "savepointFormat":"CANONICAL","checkpoint_type":"SYNC_SAVEPOINT",
                           "trigger_timestamp":20,"latest_ack_timestamp":21,"external_path":"file:/sp/savepoint-6","discarded":false},
                          {"className":"failed","id":4,"status":"FAILED","is_savepoint":false,"trigger_timestamp":8,
                           "failure_timestamp":9,"failure_message":"declined"}]}"#,
        )
        .unwrap();
        assert_eq!(
            stats.latest.completed.unwrap().external_path.as_deref(),
            Some("file:/cp/chk-5")
        );
        assert_eq!(stats.history.len(), 2);
        assert!(stats.history[0].is_savepoint && stats.history[0].status == "COMPLETED");
        assert_eq!(
            stats.history[0].external_path.as_deref(),
            Some("file:/sp/savepoint-6")
        );
        assert_eq!(stats.history[1].external_path, None);
        assert_eq!(stats.history[0].savepoint_format.as_deref(), Some("CANONICAL"));
        assert!(stats.latest.restored.unwrap().is_savepoint);
    }

    #[test]
    fn request_bodies_use_each_endpoints_own_spelling() {
        let trigger = TriggerId::from("t");
        let savepoint = serde_json::to_value(SavepointTrigger {
            target_directory: Some("file:///sp"),
            cancel_job: false,
            format: SavepointFormat::Native,
            trigger_id: &trigger,
        })
        .unwrap();
        assert_eq!(
            savepoint,
            serde_json::json!({"target-directory": "file:///sp", "cancel-job": false, "formatType": "NATIVE", "triggerId": "t"})
        );
        let stop = serde_json::to_value(StopTrigger {
            target_directory: Some("file:///sp"),
            drain: true,
            format: SavepointFormat::Canonical,
            trigger_id: &trigger,
        })
        .unwrap();
        assert_eq!(
            stop,
            serde_json::json!({"targetDirectory": "file:///sp", "drain": true, "formatType": "CANONICAL", "triggerId": "t"})
        );
        let run = serde_json::to_value(RunJar {
            args: vec!["--rate".into(), "20".into()],
            parallelism: Some(2),
            savepoint_path: Some("file:/sp/savepoint-1".into()),
            claim_mode: Some(ClaimMode::NoClaim),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(
            run,
            serde_json::json!({"programArgsList": ["--rate", "20"], "parallelism": 2,
                               "savepointPath": "file:/sp/savepoint-1", "claimMode": "NO_CLAIM"})
        );
        let upload = UploadResponse {
            filename: "/tmp/flink-web-upload/1f2e_keyed-counter.jar".into(),
        };
        assert_eq!(upload.jar_id().0, "1f2e_keyed-counter.jar");
    }
}
