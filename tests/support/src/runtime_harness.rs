//! The local runtime of this test binary: started once, on first use, against the shared
//! control plane, with every Flink version of `tests/flink/versions` installed and the test
//! job's jar in each version's /opt/flink/usrlib. It stops when the tests end (it watches
//! this process with `--exit-with-parent`), and stops every Flink process it started.

use flink_operator_api::FlinkJobState;
use std::{
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{Mutex, OnceLock},
    time::Duration,
};

use flink_operator_controller::flink::{
    ClientConfig, FlinkRestClient, JobId, RestEndpointMode, RestEndpoints, Scheme,
};
use k8s_openapi::api::core::v1::Pod;
use kube::{Api, Client, api::ListParams};

use crate::{
    cluster_harness::{self, wait_for, wait_for_seeing},
    flink_harness,
};

pub struct Runtime {
    pub state_dir: PathBuf,
    pub log: PathBuf,
    /// The node's address on the pod network (pods reach the host there).
    pub host_ip: String,
    _process: Mutex<Child>,
}

static RUNTIME: OnceLock<Runtime> = OnceLock::new();

/// Builds the runtime binary with the same cargo that runs these tests, so that it is never
/// older than its sources.
fn runtime_binary() -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let root = Path::new(crate::ROOT);
    let status = Command::new(cargo)
        .args(["build", "--quiet", "-p", "flink-local-runtime"])
        .current_dir(root)
        .status()
        .expect("running cargo build -p flink-local-runtime");
    assert!(status.success(), "cargo build -p flink-local-runtime failed");
    let exe = std::env::current_exe().unwrap();
    // target/<profile>/deps/e2e-<hash> -> target/<profile>/flink-local-runtime
    exe.parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("flink-local-runtime")
}

/// The Flink versions that `scripts/test-flink-versions` runs the version matrix's test on
/// (`FLINK_E2E_VERSION`, one or more separated by commas or spaces, e.g. `1.19.3`).
pub fn matrix_versions() -> Vec<String> {
    std::env::var("FLINK_E2E_VERSION")
        .unwrap_or_default()
        .split([',', ' '])
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The versions the runtime runs: those of `tests/flink/versions` and the matrix's.
fn installed_versions() -> Vec<String> {
    let mut versions = flink_harness::versions();
    for version in matrix_versions() {
        if !versions.contains(&version) {
            versions.push(version);
        }
    }
    versions
}

/// The runtime's kubelet API program (`tests/runtime/kubelet-api/build.sh`, cached), or
/// `FLINK_OPERATOR_KUBELET_API`.
fn kubelet_api_binary() -> PathBuf {
    if let Ok(path) = std::env::var("FLINK_OPERATOR_KUBELET_API") {
        return PathBuf::from(path);
    }
    let root = Path::new(crate::ROOT);
    let output = Command::new(root.join("tests/runtime/kubelet-api/build.sh"))
        .stderr(Stdio::inherit())
        .output()
        .expect("running tests/runtime/kubelet-api/build.sh");
    assert!(
        output.status.success(),
        "tests/runtime/kubelet-api/build.sh failed"
    );
    PathBuf::from(String::from_utf8(output.stdout).unwrap().trim())
}

/// FLINK_HOME and the test job's jar of `version`. A version of the matrix only is installed
/// with the two scripts alone: its test runs the test job and nothing else.
fn distribution(version: &str) -> (PathBuf, PathBuf) {
    if flink_harness::versions().iter().any(|v| v == version) {
        return (
            flink_harness::flink_home(version),
            flink_harness::job_jar(version),
        );
    }
    let root = Path::new(crate::ROOT);
    let path_of = |script: &str, arg: &std::ffi::OsStr| {
        let output = Command::new("bash")
            .arg(root.join(script))
            .arg(arg)
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .output()
            .unwrap_or_else(|e| panic!("running {script}: {e}"));
        assert!(output.status.success(), "{script} {arg:?} failed");
        PathBuf::from(String::from_utf8(output.stdout).unwrap().trim())
    };
    let home = path_of("tests/flink/install.sh", version.as_ref());
    let jar = path_of("tests/jobs/build.sh", home.as_os_str());
    (home, jar)
}

/// Waits until no local runtime holds the machine's lock (another test binary's runtime
/// stops a moment after its process).
pub fn wait_for_runtime_lock() {
    let deadline = std::time::Instant::now() + Duration::from_secs(600);
    loop {
        let free = std::fs::File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open("/run/flink-local-runtime.lock")
            .map(|f| f.try_lock().is_ok())
            .unwrap_or(true);
        if free {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "another local runtime kept running for 10 minutes"
        );
        std::thread::sleep(Duration::from_secs(2));
    }
}

/// The runtime, started on first use (once no other test binary's runtime runs).
pub fn runtime() -> &'static Runtime {
    RUNTIME.get_or_init(|| {
        let plane = cluster_harness::control_plane();
        wait_for_runtime_lock();
        crate::work_dirs::remove_stale("flink-operator-e2e");
        let dir = std::env::temp_dir().join(format!("flink-operator-e2e-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut command = Command::new(runtime_binary());
        command
            .arg("--kubeconfig")
            .arg(&plane.kubeconfig)
            .arg("--state-dir")
            .arg(dir.join("runtime"))
            .arg("--exit-with-parent")
            .arg("--kubelet-api")
            .arg(kubelet_api_binary())
            // The operator's image runs the binary under test: the chart installs it.
            .arg("--operator-binary")
            .arg(cluster_harness::operator_binary());
        for version in installed_versions() {
            let (home, jar) = distribution(&version);
            command
                .arg("--flink")
                .arg(format!("{version}={}", home.display()));
            command
                .arg("--usrlib")
                .arg(format!("{version}={}", jar.parent().unwrap().display()));
        }
        let log = dir.join("runtime.log");
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let rx = cluster_harness::ready_lines(&mut child);
        let Ok(ready) = rx.recv_timeout(Duration::from_secs(60)) else {
            let _ = child.kill();
            panic!(
                "the local runtime did not start (it needs root for network namespaces):\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        };
        eprintln!("local runtime ready: {ready}");
        let ready: serde_json::Value = serde_json::from_str(&ready).unwrap();
        Runtime {
            state_dir: dir.join("runtime"),
            log,
            host_ip: ready["hostIP"].as_str().unwrap().to_owned(),
            _process: Mutex::new(child),
        }
    })
}

/// A client of the control plane, with the runtime running.
pub async fn client() -> Client {
    tokio::task::spawn_blocking(runtime).await.unwrap();
    cluster_harness::client().await
}

/// The per-pod folders of a namespace's pods (logs, container layers).
/// A directory on the host for the state of the Flink clusters of `namespace` (mounted into
/// their pods as a hostPath volume).
pub fn state_dir(namespace: &str) -> PathBuf {
    runtime()
        .state_dir
        .parent()
        .unwrap()
        .join(format!("state-{namespace}"))
}

pub fn pod_dirs(namespace: &str) -> Vec<PathBuf> {
    let prefix = format!("{namespace}_");
    let Ok(entries) = std::fs::read_dir(runtime().state_dir.join("pods")) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect();
    dirs.sort();
    dirs
}

/// The process id of a running pod's container.
pub fn container_pid(pod: &Pod, container: &str) -> Option<u32> {
    let dir = runtime().state_dir.join("pods").join(format!(
        "{}_{}_{}",
        pod.metadata.namespace.as_deref()?,
        pod.metadata.name.as_deref()?,
        pod.metadata.uid.as_deref()?
    ));
    let pid = std::fs::read_to_string(dir.join("containers").join(container).join("pid")).ok()?;
    pid.trim().parse().ok()
}

pub fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Prints the logs of a namespace's pods if the test fails.
pub struct LogsOnFailure(pub String);

impl Drop for LogsOnFailure {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        let mut out = format!("---- pod logs of namespace {} ----\n", self.0);
        for dir in pod_dirs(&self.0) {
            let mut files = Vec::new();
            collect_logs(&dir.join("logs"), &mut files);
            for file in files {
                out.push_str(&format!("==> {} <==\n{}\n", file.display(), tail(&file, 60)));
            }
        }
        out.push_str(&format!("==> runtime log <==\n{}\n", tail(&runtime().log, 40)));
        eprintln!("{out}");
    }
}

fn collect_logs(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_logs(&path, files);
        } else if path.extension().is_some_and(|e| e == "log") {
            files.push(path);
        }
    }
}

fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Waits until `selector` matches `count` pods, all Running and Ready; returns them.
pub async fn wait_for_ready_pods(client: &Client, namespace: &str, selector: &str, count: usize) -> Vec<Pod> {
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let params = ListParams::default().labels(selector);
    wait_for(
        &format!("{count} Running and Ready pods with {selector} in {namespace}"),
        Duration::from_secs(240),
        || {
            let api = api.clone();
            let params = params.clone();
            async move {
                let pods = api.list(&params).await.ok()?.items;
                let ready = pods.iter().filter(|p| is_ready(p)).count();
                (pods.len() == count && ready == count).then_some(pods)
            }
        },
    )
    .await
}

pub fn is_ready(pod: &Pod) -> bool {
    let status = pod.status.as_ref();
    status.and_then(|s| s.phase.as_deref()) == Some("Running")
        && status
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// The summed resident memory of the processes of a namespace's running containers.
pub fn namespace_rss(namespace: &str) -> u64 {
    pod_dirs(namespace)
        .iter()
        .flat_map(|dir| {
            std::fs::read_dir(dir.join("containers"))
                .into_iter()
                .flatten()
                .flatten()
        })
        .filter_map(|c| std::fs::read_to_string(c.path().join("pid")).ok())
        .filter_map(|pid| pid.trim().parse::<u32>().ok())
        .filter_map(flink_harness::rss_bytes)
        .sum()
}

/// A REST client with short timeouts and no retries, for polling.
pub fn rest_client(base_url: &str) -> FlinkRestClient {
    let config = ClientConfig {
        timeout: Duration::from_secs(5),
        retries: 0,
        ..ClientConfig::default()
    };
    FlinkRestClient::new(base_url, config).unwrap()
}

/// The REST address of cluster `id` as an operator outside the cluster resolves it.
pub async fn rest_address(client: &Client, namespace: &str, id: &str) -> String {
    let endpoints = RestEndpoints::new(client.clone(), RestEndpointMode::EndpointSlice);
    wait_for(
        &format!("a ready endpoint of {namespace}/{id}-rest"),
        Duration::from_secs(120),
        || {
            let endpoints = endpoints.clone();
            async move {
                endpoints
                    .base_url(namespace, &format!("{id}-rest"), 8081, Scheme::Http)
                    .await
                    .ok()
            }
        },
    )
    .await
}

/// Waits until `job` is RUNNING with every task running.
/// What `job` restored, once its checkpoint statistics show it (the JobManager renews them
/// every few seconds).
pub async fn restored(
    rest: &FlinkRestClient,
    job: &JobId,
) -> flink_operator_controller::flink::RestoredCheckpoint {
    wait_for(
        "the restore in the checkpoint statistics",
        Duration::from_secs(60),
        || async { rest.checkpoint_statistics(job).await.ok()?.latest.restored },
    )
    .await
}

pub async fn wait_for_running_job(rest: &FlinkRestClient, job: &JobId) {
    wait_for(
        &format!("job {job} RUNNING with all tasks running"),
        Duration::from_secs(240),
        || async {
            let jobs = rest.jobs_overview().await.ok()?;
            let job = jobs.into_iter().find(|j| &j.jid == job)?;
            let total = job.tasks.get("total").copied().unwrap_or(0);
            let running = job.tasks.get("running").copied().unwrap_or(0);
            (job.state == FlinkJobState::Running && total > 0 && running == total).then_some(())
        },
    )
    .await;
}

/// Waits until `api` lists no object (every one deleted and gone), at most `timeout`.
pub async fn wait_until_none<K>(api: &Api<K>, what: &str, timeout: Duration)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    wait_for(what, timeout, || async {
        api.list(&ListParams::default())
            .await
            .ok()?
            .items
            .is_empty()
            .then_some(())
    })
    .await;
}

/// Waits until the resource `name` (a FlinkDeployment or a FlinkSessionJob) is STABLE with
/// its job RUNNING under another job id than `previous`; returns it.
pub async fn running_job<K>(api: &Api<K>, name: &str, previous: Option<&str>) -> K
where
    K: kube::Resource
        + kube::core::object::HasStatus
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
    K::Status: flink_operator_api::common::LifecycleStatus,
{
    use flink_operator_api::common::{LifecycleStatus, ResourceLifecycleState};
    wait_for_seeing(
        &format!("{name}: its job RUNNING (not job {previous:?}) and the resource STABLE"),
        Duration::from_secs(240),
        || async {
            let resource = api.get(name).await.map_err(|e| e.to_string())?;
            let status = resource.status().ok_or("no status")?;
            let job = status.job_status();
            let job_id = job.and_then(|j| j.job_id.as_deref());
            if job.and_then(|j| j.state.as_ref()) == Some(&FlinkJobState::Running)
                && status.lifecycle_state() == Some(ResourceLifecycleState::Stable)
                && job_id != previous
            {
                return Ok(resource.clone());
            }
            let seen = serde_json::to_value(&resource).unwrap_or_default();
            let field = |pointer: &str| seen.pointer(pointer).cloned().unwrap_or_default();
            Err(format!(
                "lifecycle {}, reconciliation {}, JobManager {}, job {} {}, error {}",
                field("/status/lifecycleState"),
                field("/status/reconciliationStatus/state"),
                field("/status/jobManagerDeploymentStatus"),
                field("/status/jobStatus/jobId"),
                field("/status/jobStatus/state"),
                field("/status/error"),
            ))
        },
    )
    .await
}

/// The status and reason of the condition `type_` among `conditions`.
pub fn condition(
    conditions: Option<&Vec<flink_operator_api::common::Condition>>,
    type_: &str,
) -> Option<(String, String)> {
    let condition = conditions?
        .iter()
        .find(|c| c.type_.as_deref() == Some(type_))?
        .clone();
    Some((condition.status?, condition.reason?))
}

/// Waits until every key of the test job was counted to `at_least`; returns the counts.
pub async fn counted_to(counts: &std::path::Path, at_least: u64) -> std::collections::BTreeMap<u32, u64> {
    wait_for(
        &format!("every key counted to {at_least}"),
        Duration::from_secs(120),
        || async {
            let c = flink_harness::read_counts(counts);
            (c.len() == 4 && c.values().all(|v| *v >= at_least)).then_some(c)
        },
    )
    .await
}

/// Waits until every key was counted again after `since` (by the job running now);
/// returns the counts.
pub async fn counts_since(
    counts: &std::path::Path,
    since: std::time::SystemTime,
) -> std::collections::BTreeMap<u32, u64> {
    wait_for(
        "every key counted by the new job",
        Duration::from_secs(120),
        || async { counts_written_after(counts, since).then(|| flink_harness::read_counts(counts)) },
    )
    .await
}

/// Checks that every key went on from `before` after `since` rather than starting over.
/// `lag` is how far back a restore may go: a savepoint taken at the stop holds every
/// count, the latest checkpoint may be a few seconds older than the counts last written.
pub async fn counts_went_on(
    counts: &std::path::Path,
    before: &std::collections::BTreeMap<u32, u64>,
    since: std::time::SystemTime,
    lag: u64,
) {
    let after = counts_since(counts, since).await;
    for (key, count) in before {
        assert!(
            after[key] + lag > *count && after[key] > lag,
            "key {key}: {count} before, {} after (restored state may lag by {lag})",
            after[key]
        );
    }
}

/// The newest modification time among the count files.
pub fn counts_written_after(dir: &std::path::Path, after: std::time::SystemTime) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    let times: Vec<std::time::SystemTime> = entries
        .flatten()
        .filter_map(|e| e.metadata().ok()?.modified().ok())
        .collect();
    times.len() == 4 && times.iter().all(|t| *t > after)
}
