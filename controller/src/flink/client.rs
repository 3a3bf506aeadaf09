//! The Flink REST client.

use std::{
    path::Path,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::Duration,
};

use backon::{ExponentialBuilder, Retryable};
use flink_operator_api::{
    keys::operator,
    options::{defaults, read},
};
use reqwest::{Method, StatusCode};
use serde::{Serialize, de::DeserializeOwned};

use super::{
    RestTls,
    error::{FlinkError, first_chars},
    hosts::{Admission, Hosts, Probe},
    ids::{JarId, JobId, TriggerId},
    model::*,
    operation::{OperationStatus, classify},
};

/// The largest answer read from a JobManager. What the operator reads stays far below it:
/// a job's details with a thousand vertices, a session cluster's overview of a thousand
/// jobs and an exception history of Flink's default 16 entries with their stack traces are
/// each well under 1 MiB, a JobManager's configuration and a savepoint's status a few KiB.
/// Up to `kubernetes.operator.reconcile.parallelism` (50) reconciles read answers at once,
/// so the limit is what each may cost, not what the process may.
pub const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;

/// The most JSON values (counted as the objects, arrays and separators outside strings) an
/// answer may hold. Decoding turns each into a struct, a string or a map entry of up to
/// ~150 bytes, so an answer of `[{},{},...]` within [`MAX_ANSWER_BYTES`] could otherwise
/// cost fifty times its size; a job of a thousand vertices answers with about 40,000.
pub const MAX_ANSWER_VALUES: usize = 100_000;

/// Answers up to this size are read and decoded at once: nearly all are a few KiB.
const SMALL_ANSWER_BYTES: usize = 256 * 1024;

/// How many answers larger than [`SMALL_ANSWER_BYTES`] the process reads and decodes at
/// once. Every reconcile may hold a small answer, but only these may grow to
/// [`MAX_ANSWER_BYTES`], so the answers of hostile or huge JobManagers together cost at
/// most this many times one large answer (its buffer and what it decodes into). A large
/// answer waits for its turn within its call's timeout, which bounds the whole answer (from
/// sending the request to its last byte), so a turn is never held longer than that.
pub const LARGE_ANSWERS_AT_ONCE: usize = 2;

/// How many of the [`LARGE_ANSWERS_AT_ONCE`] turns the answers of one JobManager host may
/// hold at once: a host that drips a large answer (or several) holds one turn until its
/// timeout, never every turn, and another host's large answer is read meanwhile.
pub const LARGE_ANSWERS_PER_HOST: usize = 1;

/// Process-wide rather than per client: the bound is on the process's memory, whichever
/// clients read.
static LARGE_ANSWERS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(LARGE_ANSWERS_AT_ONCE);

/// Each host's turns among [`LARGE_ANSWERS`], by `host:port`; a host's entry lives while one
/// of its answers holds or waits for a turn.
static LARGE_ANSWERS_BY_HOST: std::sync::LazyLock<
    std::sync::Mutex<std::collections::HashMap<String, Arc<tokio::sync::Semaphore>>>,
> = std::sync::LazyLock::new(Default::default);

/// A large answer's turn: one of its host's, then one of the process's.
struct LargeTurn {
    host: String,
    turns: Option<(
        tokio::sync::OwnedSemaphorePermit,
        tokio::sync::SemaphorePermit<'static>,
    )>,
}

impl LargeTurn {
    /// Waits for a turn for an answer of `host`: its host's first, so that an answer waiting
    /// behind another of the same host holds none of the process's turns.
    async fn take(host: &str) -> Result<Self, FlinkError> {
        let closed = |_| FlinkError::Request("the turns for large JobManager answers are closed".to_owned());
        // Declared before `own`, so dropped after it: if the call is dropped while waiting,
        // this Drop then finds the host's entry unused and forgets it.
        let mut turn = Self {
            host: host.to_owned(),
            turns: None,
        };
        let own = LARGE_ANSWERS_BY_HOST
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(host.to_owned())
            .or_insert_with(|| Arc::new(tokio::sync::Semaphore::new(LARGE_ANSWERS_PER_HOST)))
            .clone();
        let host_turn = own.acquire_owned().await.map_err(closed)?;
        let process_turn = LARGE_ANSWERS.acquire().await.map_err(closed)?;
        turn.turns = Some((host_turn, process_turn));
        Ok(turn)
    }
}

impl Drop for LargeTurn {
    fn drop(&mut self) {
        self.turns = None;
        let mut hosts = LARGE_ANSWERS_BY_HOST.lock().unwrap_or_else(|e| e.into_inner());
        // Only the map holds it: no answer of this host holds or waits for a turn.
        if hosts
            .get(&self.host)
            .is_some_and(|own| Arc::strong_count(own) == 1)
        {
            hosts.remove(&self.host);
        }
    }
}

/// Timeouts and retries of a client.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// Per attempt, from connecting to the last byte of the answer;
    /// `kubernetes.operator.flink.client.timeout`.
    pub timeout: Duration,
    /// For jar uploads and runs, which wait for the job's main method to build the graph;
    /// `kubernetes.operator.job.submission.timeout`.
    pub submission_timeout: Duration,
    /// Further attempts after a connection error, an answer that broke off or a 5xx (never
    /// after a 4xx or a timeout).
    pub retries: usize,
    /// First backoff; doubled per attempt up to `max_backoff`, with jitter.
    pub min_backoff: Duration,
    /// Largest backoff.
    pub max_backoff: Duration,
    /// What HTTPS trusts and presents, when the operator was given files for it (see
    /// [`RestTls`]); the same client speaks http to JobManagers without REST SSL.
    pub tls: Option<RestTls>,
}

impl Default for ClientConfig {
    fn default() -> Self {
        Self::from_operator_config(&std::collections::BTreeMap::new())
    }
}

impl ClientConfig {
    /// The timeouts of the operator configuration, defaults where unset.
    pub fn from_operator_config(config: &std::collections::BTreeMap<String, String>) -> Self {
        let millis = |key: &str, default: i64| {
            let ms = read::millis(config, key).unwrap_or(default);
            // A zero timeout would fail every request before it is sent.
            Duration::from_millis(u64::try_from(ms).unwrap_or(0).max(1))
        };
        Self {
            timeout: millis(operator::FLINK_CLIENT_TIMEOUT, defaults::FLINK_CLIENT_TIMEOUT_MS),
            submission_timeout: millis(
                operator::JOB_SUBMISSION_TIMEOUT,
                defaults::JOB_SUBMISSION_TIMEOUT_MS,
            ),
            retries: 3,
            min_backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(2),
            tls: None,
        }
    }

    /// This configuration with `tls` for HTTPS.
    pub fn with_tls(self, tls: Option<RestTls>) -> Self {
        Self { tls, ..self }
    }
}

/// A client of one JobManager's REST API.
///
/// Triggers of asynchronous operations always carry a trigger id chosen here, and job
/// submissions a job id, so that retrying a call whose answer was lost cannot start a
/// second savepoint or a second job: Flink recognises the id.
#[derive(Clone, Debug)]
pub struct FlinkRestClient {
    base: String,
    /// `host:port` of `base`: what [`Hosts`] holds back.
    host: String,
    http: reqwest::Client,
    config: ClientConfig,
    /// The JobManager hosts that did not answer lately, shared by every client of the
    /// process (see [`super::hosts`]).
    hosts: Arc<Hosts>,
    /// How this client's calls (and its clones') ended, for [`Self::only_held_back`].
    record: Arc<CallRecord>,
    /// Counts every request sent (each retry too).
    requests: Option<prometheus_client::metrics::counter::Counter>,
    /// Times every request sent, by method and answer.
    timer: Option<crate::metrics::CallTimer>,
    /// Whether this replica may still act (leader election), checked right before each
    /// write is sent: `None` for tools and tests, which always may.
    fence: Option<crate::fence::Fence>,
}

/// Clients of any JobManager that share one HTTP client: building one (its TLS
/// configuration and root certificates) costs milliseconds of CPU, and a shared pool keeps
/// each JobManager's connection open from one reconcile to the next.
#[derive(Clone, Debug)]
pub struct RestClients {
    http: reqwest::Client,
    config: ClientConfig,
    hosts: Arc<Hosts>,
}

impl RestClients {
    pub fn new(config: ClientConfig) -> Result<Self, FlinkError> {
        Ok(Self {
            http: http_client(&config)?,
            config,
            hosts: Arc::default(),
        })
    }

    /// A client of the JobManager at `base_url`.
    pub fn client(&self, base_url: &str) -> Result<FlinkRestClient, FlinkError> {
        FlinkRestClient::sharing(
            base_url,
            self.http.clone(),
            self.config.clone(),
            self.hosts.clone(),
        )
    }

    pub fn config(&self) -> &ClientConfig {
        &self.config
    }
}

fn http_client(config: &ClientConfig) -> Result<reqwest::Client, FlinkError> {
    // reqwest takes rustls's process-wide provider. The binary installs ring at start;
    // installing it here too (a no-op when one is set) keeps the client usable from tests
    // and tools, and ring is the only provider in our dependency tree.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let builder = reqwest::Client::builder()
        .connect_timeout(config.timeout.min(Duration::from_secs(5)))
        .pool_idle_timeout(Duration::from_secs(30));
    let builder = match &config.tls {
        Some(tls) => tls.apply(builder),
        None => builder,
    };
    builder
        .build()
        .map_err(|e| FlinkError::Request(format!("HTTP client: {e}")))
}

/// How the calls of a client ended, as far as counting unanswered looks needs.
#[derive(Debug, Default)]
struct CallRecord {
    /// A call was held back (not sent: its host did not answer lately).
    held_back: AtomicBool,
    /// A call was sent and got no answer (a timeout, no connection, an answer broken off).
    unanswered: AtomicBool,
}

/// An answer that is not a server error: its status and body.
struct Answer {
    status: StatusCode,
    body: String,
    /// Held for a large answer until it is decoded: decoding is where it costs most.
    _large: Option<LargeTurn>,
}

impl FlinkRestClient {
    /// A client of the JobManager at `base_url` (e.g. `http://basic-rest.flink:8081`), with
    /// an HTTP client of its own (for tools and tests; the operator shares one, see
    /// [`RestClients`]).
    pub fn new(base_url: &str, config: ClientConfig) -> Result<Self, FlinkError> {
        Self::sharing(base_url, http_client(&config)?, config, Arc::default())
    }

    /// A client of the JobManager at `base_url` that sends through `http` (a clone shares its
    /// connection pool) and holds back calls to the hosts `hosts` says did not answer lately.
    fn sharing(
        base_url: &str,
        http: reqwest::Client,
        config: ClientConfig,
        hosts: Arc<Hosts>,
    ) -> Result<Self, FlinkError> {
        let base = base_url.trim_end_matches('/').to_owned();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(FlinkError::Request(format!(
                "JobManager URL {base_url:?} must start with http:// or https://"
            )));
        }
        let host = reqwest::Url::parse(&base)
            .ok()
            .and_then(|url| Some(format!("{}:{}", url.host_str()?, url.port_or_known_default()?)))
            .unwrap_or_else(|| base.clone());
        Ok(Self {
            base,
            host,
            http,
            config,
            hosts,
            record: Arc::default(),
            requests: None,
            timer: None,
            fence: None,
        })
    }

    /// Whether the calls of this client (and its clones) that got no answer were all held
    /// back, none sent and left unanswered: a look made only of such calls asked the
    /// JobManager nothing, and does not count as a second unanswered look in a row. A call held
    /// back once the host has timed out twice in a row counts as unanswered (see
    /// [`super::hosts`]).
    pub fn only_held_back(&self) -> bool {
        self.record.held_back.load(Ordering::Relaxed) && !self.record.unanswered.load(Ordering::Relaxed)
    }

    /// The same client, counting each request it sends into `counter`.
    pub fn counted(mut self, counter: prometheus_client::metrics::counter::Counter) -> Self {
        self.requests = Some(counter);
        self
    }

    /// The same client, timing each request it sends, by method and answer, with `timer`.
    pub fn timed(mut self, timer: crate::metrics::CallTimer) -> Self {
        self.timer = Some(timer);
        self
    }

    /// The same client, sending a write (upload, run, cancel, stop, savepoint, disposal,
    /// rescale, jar deletion) only while `fence` says this replica may act. Checked at each
    /// attempt, right before it is sent: an action that started while this replica led sends
    /// nothing once it no longer does, however long it waited (for a retry, a jar to read).
    pub fn fenced(mut self, fence: crate::fence::Fence) -> Self {
        self.fence = Some(fence);
        self
    }

    /// The JobManager's base URL.
    pub fn base_url(&self) -> &str {
        &self.base
    }

    // === Cluster ===

    /// `GET /overview`: TaskManagers, slots, running jobs, version.
    pub async fn cluster_overview(&self) -> Result<ClusterOverview, FlinkError> {
        self.get_json("/overview").await
    }

    /// `GET /config`: version and revision.
    pub async fn cluster_config(&self) -> Result<ClusterConfig, FlinkError> {
        self.get_json("/config").await
    }

    /// `GET /jobmanager/config`: the JobManager's effective configuration.
    pub async fn job_manager_config(&self) -> Result<Vec<ConfigEntry>, FlinkError> {
        self.get_json("/jobmanager/config").await
    }

    // === Jobs ===

    /// `GET /jobs/overview`: every job the JobManager knows.
    pub async fn jobs_overview(&self) -> Result<Vec<JobOverview>, FlinkError> {
        Ok(self.get_json::<JobsOverview>("/jobs/overview").await?.jobs)
    }

    /// `GET /jobs/:jobid`.
    pub async fn job_details(&self, job: &JobId) -> Result<JobDetails, FlinkError> {
        self.get_json(&format!("/jobs/{job}")).await
    }

    /// `GET /jobs/:jobid/exceptions`.
    pub async fn job_exceptions(&self, job: &JobId) -> Result<JobExceptions, FlinkError> {
        self.get_json(&format!("/jobs/{job}/exceptions")).await
    }

    /// `PATCH /jobs/:jobid?mode=cancel`: cancels without a savepoint. Cancelling a job that
    /// already ended succeeds too.
    pub async fn cancel(&self, job: &JobId) -> Result<(), FlinkError> {
        let path = format!("/jobs/{job}?mode=cancel");
        let answer = self
            .call(Method::PATCH, &path, None::<&()>, self.config.timeout)
            .await?;
        self.expect_success(&path, answer).map(|_| ())
    }

    /// `GET /jobs/:jobid/resource-requirements`: each vertex's parallelism bounds (the
    /// adaptive scheduler, Flink 1.18 and later).
    pub async fn resource_requirements(&self, job: &JobId) -> Result<ResourceRequirements, FlinkError> {
        self.get_json(&format!("/jobs/{job}/resource-requirements")).await
    }

    /// `PUT /jobs/:jobid/resource-requirements`: the adaptive scheduler rescales the running
    /// job to them (it restarts from its latest checkpoint under the same job id).
    pub async fn set_resource_requirements(
        &self,
        job: &JobId,
        requirements: &ResourceRequirements,
    ) -> Result<(), FlinkError> {
        let path = format!("/jobs/{job}/resource-requirements");
        let answer = self
            .call(Method::PUT, &path, Some(requirements), self.config.timeout)
            .await?;
        self.expect_success(&self.url(&path), answer).map(|_| ())
    }

    // === Savepoints and checkpoints ===

    /// `GET /jobs/:jobid/checkpoints`: counts and the latest completed, savepoint and restored.
    pub async fn checkpoint_statistics(&self, job: &JobId) -> Result<CheckpointStatistics, FlinkError> {
        self.get_json(&format!("/jobs/{job}/checkpoints")).await
    }

    /// `GET /jobs/:jobid/checkpoints/config`.
    pub async fn checkpoint_config(&self, job: &JobId) -> Result<CheckpointConfig, FlinkError> {
        self.get_json(&format!("/jobs/{job}/checkpoints/config")).await
    }

    /// `POST /jobs/:jobid/savepoints`: starts a savepoint into `target_directory` (the
    /// cluster's savepoint directory when `None`); the job keeps running. Poll with
    /// [`savepoint_status`](Self::savepoint_status).
    pub async fn trigger_savepoint(
        &self,
        job: &JobId,
        target_directory: Option<&str>,
        format: SavepointFormat,
    ) -> Result<TriggerId, FlinkError> {
        self.trigger_savepoint_as(job, &TriggerId::random(), target_directory, format)
            .await
    }

    /// [`trigger_savepoint`](Self::trigger_savepoint) under a trigger id the caller chose
    /// and recorded first (sending it again does not start a second savepoint).
    pub async fn trigger_savepoint_as(
        &self,
        job: &JobId,
        trigger_id: &TriggerId,
        target_directory: Option<&str>,
        format: SavepointFormat,
    ) -> Result<TriggerId, FlinkError> {
        let body = SavepointTrigger {
            target_directory,
            cancel_job: false,
            format,
            trigger_id,
        };
        self.trigger(&format!("/jobs/{job}/savepoints"), &body).await
    }

    /// `POST /jobs/:jobid/stop`: stops the job with a savepoint (`drain` first flushes event
    /// time to the end, for a job that will not resume). Poll with
    /// [`savepoint_status`](Self::savepoint_status); the job ends FINISHED.
    pub async fn stop_with_savepoint(
        &self,
        job: &JobId,
        target_directory: Option<&str>,
        drain: bool,
        format: SavepointFormat,
    ) -> Result<TriggerId, FlinkError> {
        self.stop_with_savepoint_as(job, &TriggerId::random(), target_directory, drain, format)
            .await
    }

    /// [`stop_with_savepoint`](Self::stop_with_savepoint) under a trigger id the caller
    /// chose and recorded first, so that after a crash it can poll the same operation, or
    /// send the same request again without starting a second one.
    pub async fn stop_with_savepoint_as(
        &self,
        job: &JobId,
        trigger_id: &TriggerId,
        target_directory: Option<&str>,
        drain: bool,
        format: SavepointFormat,
    ) -> Result<TriggerId, FlinkError> {
        let body = StopTrigger {
            target_directory,
            drain,
            format,
            trigger_id,
        };
        self.trigger(&format!("/jobs/{job}/stop"), &body).await
    }

    /// `GET /jobs/:jobid/savepoints/:triggerid`: the state of a savepoint or stop; completed
    /// with the savepoint's location.
    pub async fn savepoint_status(
        &self,
        job: &JobId,
        trigger: &TriggerId,
    ) -> Result<OperationStatus<String>, FlinkError> {
        self.poll(&format!("/jobs/{job}/savepoints/{trigger}"), |result| {
            result
                .location
                .ok_or_else(|| "a completed savepoint without location".to_owned())
        })
        .await
    }

    /// `POST /jobs/:jobid/checkpoints` (Flink 1.19+): starts a checkpoint of `kind`.
    pub async fn trigger_checkpoint(
        &self,
        job: &JobId,
        kind: CheckpointKind,
    ) -> Result<TriggerId, FlinkError> {
        self.trigger_checkpoint_as(job, &TriggerId::random(), kind).await
    }

    /// [`trigger_checkpoint`](Self::trigger_checkpoint) under a trigger id the caller chose
    /// and recorded first.
    pub async fn trigger_checkpoint_as(
        &self,
        job: &JobId,
        trigger_id: &TriggerId,
        kind: CheckpointKind,
    ) -> Result<TriggerId, FlinkError> {
        let body = CheckpointTrigger {
            checkpoint_type: kind,
            trigger_id,
        };
        self.trigger(&format!("/jobs/{job}/checkpoints"), &body).await
    }

    /// `GET /jobs/:jobid/checkpoints/:triggerid`: completed with the checkpoint id (its
    /// path is in [`checkpoint_statistics`](Self::checkpoint_statistics) or the details).
    pub async fn checkpoint_status(
        &self,
        job: &JobId,
        trigger: &TriggerId,
    ) -> Result<OperationStatus<u64>, FlinkError> {
        self.poll(&format!("/jobs/{job}/checkpoints/{trigger}"), |result| {
            result
                .checkpoint_id
                .ok_or_else(|| "a completed checkpoint without checkpointId".to_owned())
        })
        .await
    }

    /// `GET /jobs/:jobid/checkpoints/details/:checkpointid`: one checkpoint of the job's
    /// recent history (`web.checkpoints.history` long), with its external path; a checkpoint
    /// that left the history is [`FlinkError::NotFound`].
    pub async fn checkpoint_details(
        &self,
        job: &JobId,
        checkpoint: u64,
    ) -> Result<CompletedCheckpoint, FlinkError> {
        self.get_json(&format!("/jobs/{job}/checkpoints/details/{checkpoint}"))
            .await
    }

    /// `POST /savepoint-disposal`: deletes a savepoint's files through Flink (which knows
    /// how to remove every state backend's format). Flink runs the disposal under a trigger
    /// id of its own choosing (the request takes none, and a repeated request starts another
    /// disposal): the one returned, to poll with [`disposal_status`](Self::disposal_status).
    pub async fn dispose_savepoint(&self, path: &str) -> Result<TriggerId, FlinkError> {
        let body = DisposalTrigger { savepoint_path: path };
        self.trigger("/savepoint-disposal", &body).await
    }

    /// `GET /savepoint-disposal/:triggerid`.
    pub async fn disposal_status(&self, trigger: &TriggerId) -> Result<OperationStatus<()>, FlinkError> {
        self.poll(&format!("/savepoint-disposal/{trigger}"), |_| Ok(()))
            .await
    }

    // === Jars ===

    /// `POST /jars/upload`: uploads the jar at `path` (session clusters only), streamed from
    /// the file: a jar may be hundreds of MiB.
    pub async fn upload_jar(&self, path: &Path) -> Result<JarId, FlinkError> {
        let unreadable =
            |e: std::io::Error| FlinkError::Request(format!("reading jar {}: {e}", path.display()));
        let length = tokio::fs::metadata(path).await.map_err(unreadable)?.len();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("job.jar")
            .to_owned();
        let url = self.url("/jars/upload");
        let answer = self
            .with_retries(&url, || {
                let name = name.clone();
                let url = url.clone();
                async move {
                    // Opened again for each attempt: a stream is read once.
                    let file = tokio::fs::File::open(path).await.map_err(unreadable)?;
                    let part = reqwest::multipart::Part::stream_with_length(file_body(file), length)
                        .file_name(name)
                        .mime_str("application/java-archive")
                        .map_err(|e| FlinkError::Request(e.to_string()))?;
                    let form = reqwest::multipart::Form::new().part("jarfile", part);
                    let request = self
                        .http
                        .post(&url)
                        .multipart(form)
                        .timeout(self.config.submission_timeout);
                    self.attempt(&url, request, self.config.submission_timeout).await
                }
            })
            .await?;
        let upload: UploadResponse = self.decode(&url, self.expect_success(&url, answer)?)?;
        Ok(upload.jar_id())
    }

    /// `POST /jars/:jarid/run`: starts a job from an uploaded jar and returns its id. The
    /// job id is chosen here when `run.job_id` is empty, so that a retry after a lost answer
    /// finds the job Flink already accepted instead of starting another.
    pub async fn run_jar(&self, jar: &JarId, run: &RunJar) -> Result<JobId, FlinkError> {
        let mut run = run.clone();
        let job_id = run.job_id.get_or_insert_with(JobId::random).clone();
        let path = format!("/jars/{jar}/run");
        let attempts = AtomicUsize::new(0);
        let url = self.url(&path);
        let result = self
            .with_retries(&url, || {
                attempts.fetch_add(1, Ordering::Relaxed);
                let request = self
                    .http
                    .post(&url)
                    .json(&run)
                    .timeout(self.config.submission_timeout);
                self.attempt(&url, request, self.config.submission_timeout)
            })
            .await
            .and_then(|answer| self.expect_success(&url, answer));
        match result {
            Ok(body) => Ok(self.decode::<RunResponse>(&url, body)?.jobid),
            // Our own earlier attempt got through before its answer was lost.
            Err(FlinkError::BadRequest { message, .. })
                if attempts.load(Ordering::Relaxed) > 1 && message.contains("already been submitted") =>
            {
                Ok(job_id)
            }
            Err(error) => Err(error),
        }
    }

    /// `DELETE /jars/:jarid`.
    pub async fn delete_jar(&self, jar: &JarId) -> Result<(), FlinkError> {
        let path = format!("/jars/{jar}");
        let answer = self
            .call(Method::DELETE, &path, None::<&()>, self.config.timeout)
            .await?;
        self.expect_success(&path, answer).map(|_| ())
    }

    // === Metrics ===

    /// `GET /jobs/:jobid/metrics?get=..`: the job's own metrics of those names that it
    /// reports (a name it does not report is left out).
    pub async fn job_metrics(&self, job: &JobId, metrics: &[&str]) -> Result<Vec<MetricValue>, FlinkError> {
        let get = metrics.join(",");
        self.get_json(&format!("/jobs/{job}/metrics?get={get}")).await
    }

    /// `GET /jobs/:jobid/vertices/:vertexid/subtasks/metrics?get=..&agg=..`: gauges of a
    /// vertex aggregated over its subtasks.
    pub async fn subtask_metrics(
        &self,
        job: &JobId,
        vertex: &str,
        metrics: &[&str],
        aggregations: &[Aggregation],
    ) -> Result<Vec<AggregatedMetric>, FlinkError> {
        let get = metrics.join(",");
        let agg = aggregations
            .iter()
            .map(|a| a.as_str())
            .collect::<Vec<_>>()
            .join(",");
        self.get_json(&format!(
            "/jobs/{job}/vertices/{vertex}/subtasks/metrics?get={get}&agg={agg}"
        ))
        .await
    }

    /// `GET /jobs/:jobid/vertices/:vertexid/subtasks/metrics`: the ids of the metrics a
    /// vertex's subtasks report (operators' own metrics as `<operator>.<metric>`).
    pub async fn subtask_metric_ids(&self, job: &JobId, vertex: &str) -> Result<Vec<String>, FlinkError> {
        let ids: Vec<MetricId> = self
            .get_json(&format!("/jobs/{job}/vertices/{vertex}/subtasks/metrics"))
            .await?;
        Ok(ids.into_iter().map(|m| m.id).collect())
    }

    // === Plumbing ===

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    async fn get_json<T: DeserializeOwned>(&self, path: &str) -> Result<T, FlinkError> {
        let answer = self
            .call(Method::GET, path, None::<&()>, self.config.timeout)
            .await?;
        let url = self.url(path);
        let body = self.expect_success(&url, answer)?;
        self.decode(&url, body)
    }

    async fn trigger<B: Serialize>(&self, path: &str, body: &B) -> Result<TriggerId, FlinkError> {
        let answer = self
            .call(Method::POST, path, Some(body), self.config.timeout)
            .await?;
        let url = self.url(path);
        let body = self.expect_success(&url, answer)?;
        Ok(self.decode::<TriggerResponse>(&url, body)?.request_id)
    }

    async fn poll<T>(
        &self,
        path: &str,
        complete: impl FnOnce(OperationResult) -> Result<T, String>,
    ) -> Result<OperationStatus<T>, FlinkError> {
        let answer = self
            .call(Method::GET, path, None::<&()>, self.config.timeout)
            .await?;
        classify(&self.url(path), answer.status, &answer.body, complete)
    }

    /// One call with retries; 4xx answers come back as answers, for the caller to read.
    async fn call<B: Serialize>(
        &self,
        method: Method,
        path: &str,
        body: Option<&B>,
        timeout: Duration,
    ) -> Result<Answer, FlinkError> {
        let url = self.url(path);
        self.with_retries(&url, || {
            let mut request = self.http.request(method.clone(), &url).timeout(timeout);
            if let Some(body) = body {
                request = request.json(body);
            }
            self.attempt(&url, request, timeout)
        })
        .await
    }

    async fn with_retries<F, Fut>(&self, url: &str, attempt: F) -> Result<Answer, FlinkError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<Answer, FlinkError>>,
    {
        let backoff = ExponentialBuilder::default()
            .with_min_delay(self.config.min_backoff)
            .with_max_delay(self.config.max_backoff)
            .with_max_times(self.config.retries)
            .with_jitter();
        // A JobManager that let a call time out is not asked again within the same call: the
        // caller looks again on its next reconcile anyway, and a hung JobManager then holds
        // a reconcile (one of a bounded number of slots) for one timeout instead of one per
        // retry.
        attempt
            .retry(backoff)
            .when(|error| {
                error.retryable()
                    && !matches!(error, FlinkError::Timeout { .. } | FlinkError::HeldBack { .. })
            })
            .notify(|error, after| tracing::debug!(%url, %error, ?after, "retrying Flink REST call"))
            .await
    }

    async fn attempt(
        &self,
        url: &str,
        request: reqwest::RequestBuilder,
        timeout: Duration,
    ) -> Result<Answer, FlinkError> {
        let (http, built) = request.build_split();
        let built = built.map_err(|e| FlinkError::Request(e.to_string()))?;
        let method = built.method().to_string();
        if let Some(fence) = &self.fence
            && !built.method().is_safe()
            && let Err(fenced) = fence.check()
        {
            tracing::info!(%url, %method, %fenced, "a Flink REST write not sent");
            return Err(FlinkError::Fenced(fenced));
        }
        let request = reqwest::RequestBuilder::from_parts(http, built);
        let probe = match self.hosts.admit(&self.host, std::time::Instant::now()) {
            Admission::HeldBack {
                timeout,
                retry_in,
                again,
            } => {
                self.record.held_back.store(true, Ordering::Relaxed);
                if again {
                    // The host did not answer the call let through after a window either:
                    // this look got no answer as surely as one that timed out.
                    self.record.unanswered.store(true, Ordering::Relaxed);
                }
                return Err(FlinkError::HeldBack {
                    url: url.to_owned(),
                    after: timeout,
                    retry_in,
                });
            }
            Admission::Send { probe } => Probe::new(&self.hosts, &self.host, probe),
        };
        if let Some(requests) = &self.requests {
            requests.inc();
        }
        let started = std::time::Instant::now();
        // reqwest's own timeout covers the body too; this one bounds the attempt whatever
        // the transport does, so that no answer, however slow, holds a reconcile longer.
        let exchanged = tokio::time::timeout(timeout, exchange(url, &self.host, request, timeout))
            .await
            .map_err(|_| FlinkError::Timeout {
                url: url.to_owned(),
                after: timeout,
            })
            .and_then(|answer| answer);
        match &exchanged {
            Err(FlinkError::Timeout { .. }) => {
                self.record.unanswered.store(true, Ordering::Relaxed);
                self.hosts
                    .timed_out(&self.host, timeout, std::time::Instant::now());
            }
            // No connection, or an answer broken off: the host does not hang, each such call
            // fails fast by itself (and is retried within the call).
            Err(FlinkError::Unreachable { .. } | FlinkError::Interrupted { .. }) => {
                self.record.unanswered.store(true, Ordering::Relaxed);
                self.hosts.answered(&self.host);
            }
            _ => self.hosts.answered(&self.host),
        }
        probe.settled();
        if let Some(timer) = &self.timer {
            let status = exchanged.as_ref().ok().map(|(status, _, _)| status.as_u16());
            timer.observe(&method, status, started.elapsed());
        }
        let (status, body, large) = exchanged?;
        tracing::debug!(%url, %status, elapsed_ms = started.elapsed().as_millis(), "Flink REST call");
        if status.is_server_error() {
            return Err(FlinkError::from_status(url, status, &body));
        }
        Ok(Answer {
            status,
            body,
            _large: large,
        })
    }

    fn expect_success(&self, url: &str, answer: Answer) -> Result<Answer, FlinkError> {
        if answer.status.is_success() {
            Ok(answer)
        } else {
            Err(FlinkError::from_status(url, answer.status, &answer.body))
        }
    }

    fn decode<T: DeserializeOwned>(&self, url: &str, answer: Answer) -> Result<T, FlinkError> {
        serde_json::from_str(&answer.body).map_err(|e| FlinkError::Decode {
            url: url.to_owned(),
            reason: format!("{e}: {}", first_chars(&answer.body, 200)),
        })
    }
}

/// Sends `request` to `host` and reads its answer chunk by chunk, at most
/// [`MAX_ANSWER_BYTES`] and [`MAX_ANSWER_VALUES`] of it; an answer past
/// [`SMALL_ANSWER_BYTES`] first waits for one of its host's [`LARGE_ANSWERS_PER_HOST`] and
/// the process's [`LARGE_ANSWERS_AT_ONCE`] turns, returned with it.
async fn exchange(
    url: &str,
    host: &str,
    request: reqwest::RequestBuilder,
    timeout: Duration,
) -> Result<(StatusCode, String, Option<LargeTurn>), FlinkError> {
    let too_large = || FlinkError::TooLarge {
        url: url.to_owned(),
        limit: MAX_ANSWER_BYTES,
    };
    let large_turn = || LargeTurn::take(host);
    let mut response = request
        .send()
        .await
        .map_err(|e| transport_error(url, timeout, &e))?;
    let status = response.status();
    let mut large = None;
    match response.content_length() {
        // A declared length over the limit is refused before any of it is read.
        Some(length) if length > MAX_ANSWER_BYTES as u64 => return Err(too_large()),
        Some(length) if length > SMALL_ANSWER_BYTES as u64 => large = Some(large_turn().await?),
        _ => {}
    }
    let mut body = Vec::new();
    let broke_off = |error: reqwest::Error| match transport_error(url, timeout, &error) {
        FlinkError::Unreachable { url, reason } => FlinkError::Interrupted { url, reason },
        other => other,
    };
    while let Some(chunk) = response.chunk().await.map_err(broke_off)? {
        let needed = body.len() + chunk.len();
        if needed > MAX_ANSWER_BYTES {
            return Err(too_large());
        }
        if needed > SMALL_ANSWER_BYTES && large.is_none() {
            large = Some(large_turn().await?);
        }
        // Doubling, but never past the limit: a full answer costs the limit, not twice it.
        if needed > body.capacity() {
            let grown = (body.capacity() * 2).clamp(needed, MAX_ANSWER_BYTES);
            body.reserve_exact(grown - body.len());
        }
        body.extend_from_slice(&chunk);
    }
    if flink_operator_api::json_size::json_values(&body) > MAX_ANSWER_VALUES {
        return Err(FlinkError::TooManyValues {
            url: url.to_owned(),
            limit: MAX_ANSWER_VALUES,
        });
    }
    // Flink answers in UTF-8; anything else is shown as best it can be, in an error.
    let body = match String::from_utf8(body) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    Ok((status, body, large))
}

/// How much of a jar is read from its file at a time while it is uploaded.
const UPLOAD_CHUNK_BYTES: usize = 256 * 1024;

/// The contents of `file` as a request body, read a chunk at a time as it is sent.
fn file_body(file: tokio::fs::File) -> reqwest::Body {
    use tokio::io::AsyncReadExt;
    reqwest::Body::wrap_stream(futures::stream::try_unfold(file, |mut file| async move {
        let mut chunk = vec![0; UPLOAD_CHUNK_BYTES];
        let read = file.read(&mut chunk).await?;
        if read == 0 {
            return Ok::<_, std::io::Error>(None);
        }
        chunk.truncate(read);
        Ok(Some((chunk, file)))
    }))
}

fn transport_error(url: &str, timeout: Duration, error: &reqwest::Error) -> FlinkError {
    if error.is_timeout() {
        return FlinkError::Timeout {
            url: url.to_owned(),
            after: timeout,
        };
    }
    // The whole chain: "error sending request" alone says nothing about why.
    let mut reason = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        reason.push_str(": ");
        reason.push_str(&cause.to_string());
        source = cause.source();
    }
    FlinkError::Unreachable {
        url: url.to_owned(),
        reason,
    }
}

#[cfg(test)]
mod tests {
    //! The retry policy, against a local HTTP server that answers as scripted. What the
    //! answers mean is tested against real Flink in `tests/flink`; here only how often the
    //! client asks.

    use std::sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    };

    use axum::{Router, http::StatusCode, routing::get};

    use super::*;

    /// Serves `/overview` with `statuses` in turn (the last one from then on); returns the
    /// base URL and the hit counter.
    async fn scripted(statuses: Vec<u16>) -> (String, Arc<AtomicUsize>) {
        let hits = Arc::new(AtomicUsize::new(0));
        let counter = hits.clone();
        let app = Router::new().route(
            "/overview",
            get(move || {
                let n = counter.fetch_add(1, Ordering::SeqCst);
                let status = statuses[n.min(statuses.len() - 1)];
                async move {
                    let body = if status == 200 {
                        r#"{"taskmanagers":1,"slots-total":2,"flink-version":"2.3.0"}"#.to_owned()
                    } else {
                        format!(r#"{{"errors":["status {status}"]}}"#)
                    };
                    (StatusCode::from_u16(status).unwrap(), body)
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (url, hits)
    }

    fn fast(retries: usize) -> ClientConfig {
        ClientConfig {
            retries,
            min_backoff: Duration::from_millis(1),
            max_backoff: Duration::from_millis(5),
            ..ClientConfig::default()
        }
    }

    #[tokio::test]
    async fn server_errors_are_retried_until_an_answer() {
        let (url, hits) = scripted(vec![503, 500, 200]).await;
        let client = FlinkRestClient::new(&url, fast(3)).unwrap();
        assert_eq!(client.cluster_overview().await.unwrap().taskmanagers, 1);
        assert_eq!(hits.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn server_errors_beyond_the_retries_are_returned_with_flinks_reason() {
        let (url, hits) = scripted(vec![503]).await;
        let client = FlinkRestClient::new(&url, fast(2)).unwrap();
        match client.cluster_overview().await {
            Err(FlinkError::Server {
                status: 503, message, ..
            }) => assert_eq!(message, "status 503"),
            other => panic!("expected a server error, got {other:?}"),
        }
        assert_eq!(hits.load(Ordering::SeqCst), 3, "one call and two retries");
    }

    #[tokio::test]
    async fn refusals_are_never_retried() {
        for status in [400, 404, 409] {
            let (url, hits) = scripted(vec![status, 200]).await;
            let client = FlinkRestClient::new(&url, fast(3)).unwrap();
            assert!(client.cluster_overview().await.is_err());
            assert_eq!(hits.load(Ordering::SeqCst), 1, "status {status}");
        }
    }

    #[tokio::test]
    async fn a_closed_port_is_an_unreachable_error_after_the_retries() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let client = FlinkRestClient::new(&format!("http://127.0.0.1:{port}"), fast(2)).unwrap();
        let started = std::time::Instant::now();
        match client.cluster_overview().await {
            Err(error @ FlinkError::Unreachable { .. }) => {
                assert!(error.retryable());
                assert!(error.to_string().contains(&port.to_string()), "{error}");
            }
            other => panic!("expected unreachable, got {other:?}"),
        }
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[tokio::test]
    async fn a_jobmanager_that_does_not_answer_is_asked_once_per_call() {
        let hits = Arc::new(AtomicUsize::new(0));
        let counter = hits.clone();
        let app = Router::new().route(
            "/overview",
            get(move || {
                counter.fetch_add(1, Ordering::SeqCst);
                async {
                    tokio::time::sleep(Duration::from_secs(30)).await;
                    "{}"
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        let client = FlinkRestClient::new(
            &url,
            ClientConfig {
                timeout: Duration::from_millis(300),
                ..fast(3)
            },
        )
        .unwrap();
        let started = std::time::Instant::now();
        match client.cluster_overview().await {
            Err(error @ FlinkError::Timeout { .. }) => assert!(error.retryable(), "later, by the caller"),
            other => panic!("expected a timeout, got {other:?}"),
        }
        assert_eq!(hits.load(Ordering::SeqCst), 1);
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
    }

    #[tokio::test]
    async fn a_disposal_sends_the_path_alone_and_is_polled_under_the_trigger_id_flink_chose() {
        let bodies = Arc::new(std::sync::Mutex::new(Vec::<serde_json::Value>::new()));
        let seen = bodies.clone();
        let app = Router::new()
            .route(
                "/savepoint-disposal",
                axum::routing::post(move |axum::Json(body): axum::Json<serde_json::Value>| {
                    seen.lock().unwrap().push(body);
                    // As Flink does: an id of its own, whatever the request holds.
                    async move {
                        axum::Json(serde_json::json!({"request-id": "00112233445566778899aabbccddeeff"}))
                    }
                }),
            )
            .route(
                "/savepoint-disposal/{trigger}",
                get(|| async { r#"{"status":{"id":"COMPLETED"},"operation":{}}"# }),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        let client = FlinkRestClient::new(&url, fast(0)).unwrap();
        let trigger = client.dispose_savepoint("file:/sp/savepoint-1").await.unwrap();
        assert_eq!(trigger, TriggerId::from("00112233445566778899aabbccddeeff"));
        assert_eq!(
            bodies.lock().unwrap().as_slice(),
            [serde_json::json!({"savepoint-path": "file:/sp/savepoint-1"})]
        );
        assert_eq!(
            client.disposal_status(&trigger).await.unwrap(),
            OperationStatus::Completed(())
        );
    }

    #[tokio::test]
    async fn checkpoint_details_name_the_external_path_and_a_forgotten_one_is_not_found() {
        let app = Router::new()
            .route(
                "/jobs/{job}/checkpoints/details/7",
                get(|| async {
                    r#"{"className":"completed","id":7,"status":"COMPLETED","is_savepoint":false,
                        "savepointFormat":null,"trigger_timestamp":10,"latest_ack_timestamp":12,
                        "checkpointed_size":1,"state_size":2,"end_to_end_duration":2,
                        "checkpoint_type":"CHECKPOINT","tasks":{},"external_path":"file:/cp/chk-7","discarded":false}"#
                }),
            )
            .route(
                "/jobs/{job}/checkpoints/details/3",
                get(|| async {
                    (
                        StatusCode::NOT_FOUND,
                        r#"{"errors":["Could not find checkpointing statistics for checkpoint 3."]}"#,
                    )
                }),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        let client = FlinkRestClient::new(&url, fast(0)).unwrap();
        let job = JobId::from("e3bc32a1e3bc32a1e3bc32a1e3bc32a1");
        let details = client.checkpoint_details(&job, 7).await.unwrap();
        assert_eq!(
            (details.id, details.external_path.as_deref()),
            (7, Some("file:/cp/chk-7"))
        );
        match client.checkpoint_details(&job, 3).await {
            Err(FlinkError::NotFound { message, .. }) => {
                assert!(message.contains("checkpoint 3"), "{message}")
            }
            other => panic!("expected not found, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_jar_is_uploaded_whole_from_its_file_with_its_length_declared() {
        let seen = Arc::new(std::sync::Mutex::new(None::<(Option<u64>, Vec<u8>)>));
        let record = seen.clone();
        let app = Router::new().route(
            "/jars/upload",
            axum::routing::post(move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                let length = headers
                    .get("content-length")
                    .and_then(|v| v.to_str().ok()?.parse().ok());
                *record.lock().unwrap() = Some((length, body.to_vec()));
                async { r#"{"filename":"/tmp/flink-web/upload/abc_job.jar","status":"success"}"# }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        let dir = std::env::temp_dir().join(format!("upload-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let jar = dir.join("job.jar");
        // Several upload chunks and a part of one.
        let contents: Vec<u8> = (0..UPLOAD_CHUNK_BYTES * 3 + 1234)
            .map(|i| (i % 253) as u8)
            .collect();
        std::fs::write(&jar, &contents).unwrap();
        let client = FlinkRestClient::new(&url, fast(0)).unwrap();
        assert_eq!(
            client.upload_jar(&jar).await.unwrap(),
            JarId("abc_job.jar".to_owned())
        );
        let (length, body) = seen.lock().unwrap().take().unwrap();
        assert_eq!(length, Some(body.len() as u64), "a declared length, not chunked");
        let at = body
            .windows(contents.len())
            .position(|w| w == contents.as_slice())
            .expect("the jar's bytes in the form");
        let head = String::from_utf8_lossy(&body[..at]);
        assert!(
            head.contains(r#"name="jarfile"; filename="job.jar""#)
                && head.contains("application/java-archive"),
            "{head}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A JobManager that answers every write with `status`, after closing `fence` at the
    /// first request (the lease running out while the action is under way), and reads with
    /// 200; the base URL and the writes it received.
    async fn losing_the_lease_at_the_first_write(
        fence: crate::fence::Fence,
        status: u16,
    ) -> (String, Arc<AtomicUsize>) {
        let writes = Arc::new(AtomicUsize::new(0));
        let counter = writes.clone();
        let app = Router::new().fallback(move |method: axum::http::Method| {
            let reply = if method == axum::http::Method::GET {
                (StatusCode::OK, r#"{"jobs":[]}"#.to_owned())
            } else {
                counter.fetch_add(1, Ordering::SeqCst);
                fence.close();
                (
                    StatusCode::from_u16(status).unwrap(),
                    r#"{"request-id":"00112233445566778899aabbccddeeff","errors":["busy"]}"#.to_owned(),
                )
            };
            async move { reply }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (url, writes)
    }

    fn leading() -> crate::fence::Fence {
        let fence = crate::fence::Fence::closed();
        fence.hold_until(std::time::Instant::now() + Duration::from_secs(60));
        fence
    }

    #[tokio::test]
    async fn a_write_is_not_sent_once_the_lease_is_lost_even_within_its_action() {
        let fence = leading();
        let (url, writes) = losing_the_lease_at_the_first_write(fence.clone(), 503).await;
        let client = FlinkRestClient::new(&url, fast(3)).unwrap().fenced(fence.clone());
        // The action starts while this replica leads: its first attempt is sent, Flink
        // answers 503, and the lease runs out meanwhile: the retry is not sent.
        let job = JobId::from("e3bc32a1e3bc32a1e3bc32a1e3bc32a1");
        match client
            .trigger_savepoint(&job, None, SavepointFormat::Canonical)
            .await
        {
            Err(FlinkError::Fenced(_)) => {}
            other => panic!("expected the retry fenced, got {other:?}"),
        }
        assert_eq!(writes.load(Ordering::SeqCst), 1);
        // Every later write of the action stops before it is sent; reads go through.
        assert!(matches!(client.cancel(&job).await, Err(FlinkError::Fenced(_))));
        assert!(matches!(
            client
                .stop_with_savepoint(&job, None, false, SavepointFormat::Canonical)
                .await,
            Err(FlinkError::Fenced(_))
        ));
        assert!(matches!(
            client.dispose_savepoint("file:/sp/1").await,
            Err(FlinkError::Fenced(_))
        ));
        assert!(matches!(
            client.run_jar(&JarId("a.jar".to_owned()), &RunJar::default()).await,
            Err(FlinkError::Fenced(error)) if error.to_string().contains("nothing is sent")
        ));
        assert!(client.jobs_overview().await.is_ok());
        assert_eq!(
            writes.load(Ordering::SeqCst),
            1,
            "no write after the lease was lost"
        );
        // Not retried, and not Flink's refusal.
        let error = client.cancel(&job).await.unwrap_err();
        assert!(!error.retryable() && error.kind() == "fenced", "{error:?}");
    }

    #[tokio::test]
    async fn a_jar_whose_upload_waited_is_not_sent_once_the_lease_is_lost() {
        let fence = leading();
        let (url, writes) = losing_the_lease_at_the_first_write(fence.clone(), 200).await;
        let client = FlinkRestClient::new(&url, fast(0)).unwrap().fenced(fence.clone());
        let dir = std::env::temp_dir().join(format!("fenced-upload-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let jar = dir.join("job.jar");
        std::fs::write(&jar, b"PK").unwrap();
        // The lease is lost while the jar is made ready (downloaded, read).
        fence.close();
        assert!(matches!(
            client.upload_jar(&jar).await,
            Err(FlinkError::Fenced(_))
        ));
        assert_eq!(writes.load(Ordering::SeqCst), 0);
        // Leading again, it is sent.
        fence.hold_until(std::time::Instant::now() + Duration::from_secs(60));
        assert!(
            client.upload_jar(&jar).await.is_err(),
            "the test server's answer is no upload's"
        );
        assert_eq!(writes.load(Ordering::SeqCst), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_url_without_scheme_is_refused() {
        let error = FlinkRestClient::new("basic-rest:8081", ClientConfig::default()).unwrap_err();
        assert!(
            error.to_string().contains("must start with http:// or https://"),
            "{error}"
        );
    }

    #[test]
    fn the_timeouts_come_from_the_operator_configuration() {
        let defaults = ClientConfig::default();
        assert_eq!(defaults.timeout, Duration::from_secs(10));
        assert_eq!(defaults.submission_timeout, Duration::from_secs(120));
        let config: std::collections::BTreeMap<String, String> = [
            ("kubernetes.operator.flink.client.timeout", "30 s"),
            ("kubernetes.operator.job.submission.timeout", "10 min"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let configured = ClientConfig::from_operator_config(&config);
        assert_eq!(configured.timeout, Duration::from_secs(30));
        assert_eq!(configured.submission_timeout, Duration::from_secs(600));
    }
}
