//! The operator runs FlinkSessionJobs in a session FlinkDeployment it deployed itself: jars
//! from an `http://` server and from a `file://` URI, a savepoint upgrade after which the
//! job's counts go on from where they were (recorded as an UPGRADE FlinkStateSnapshot),
//! periodic and manual savepoints as FlinkStateSnapshots whose history is disposed of on disk,
//! and deletion that stops the job.

use std::{
    io::{Read, Write},
    path::PathBuf,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, SystemTime},
};

use flink_operator_api::{
    FlinkDeployment, FlinkJobState, FlinkSessionJob, FlinkSessionJobSpec, FlinkStateSnapshot,
    FlinkStateSnapshotState,
};
use flink_operator_controller::flink::{FlinkRestClient, JobId};
use k8s_openapi::api::core::v1::Namespace;
use kube::{
    Api, Client, ResourceExt,
    api::{DeleteParams, ListParams, Patch, PatchParams, PostParams},
};
use serde_json::json;

use crate::{
    cluster_harness::{self, LOCAL_JARS_NAMESPACE, wait_for},
    flink_harness,
    harness::{self, LogsOnFailure},
    objects,
    reconcile::{OperatorLogOnFailure, counted_to, counts_went_on},
};

const SESSION: &str = "session";

/// A namespace of a fixed name that the operator's configuration names (the one it takes
/// local jars in, by default); deleted when dropped. One test holds it at a time: tests that
/// run beside each other would otherwise create their resources in a namespace the other
/// one is deleting.
pub struct LocalJarsNamespace {
    name: String,
    _held: tokio::sync::MutexGuard<'static, ()>,
}

impl LocalJarsNamespace {
    /// Creates the namespace, once the previous test's is gone. That one may still be
    /// there: its deletion is sent from a task of the previous test's runtime, which may end
    /// first; it is deleted here then. A deleted namespace terminates for a while, and
    /// cannot be created again until it is gone.
    pub async fn new(client: &Client) -> Self {
        Self::named(client, LOCAL_JARS_NAMESPACE).await
    }

    /// The namespace `name`, created as [`LocalJarsNamespace::new`] creates its own.
    pub async fn named(client: &Client, name: &str) -> Self {
        static HELD: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
        let held = HELD.lock().await;
        let api: Api<Namespace> = Api::all(client.clone());
        let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
        wait_for(
            &format!("namespace {name} created"),
            Duration::from_secs(180),
            || async {
                match api.create(&PostParams::default(), &ns).await {
                    Ok(_) => Some(()),
                    Err(kube::Error::Api(e)) if e.code == 409 => {
                        let left = api.get_opt(name).await.ok().flatten();
                        if left.is_some_and(|n| n.metadata.deletion_timestamp.is_none()) {
                            let _ = api.delete(name, &DeleteParams::default()).await;
                        }
                        None
                    }
                    Err(e) => panic!("creating namespace {name}: {e}"),
                }
            },
        )
        .await;
        Self {
            name: name.to_owned(),
            _held: held,
        }
    }
}

impl Drop for LocalJarsNamespace {
    fn drop(&mut self) {
        cluster_harness::delete_namespace_now(&self.name);
    }
}

/// Serves `jar` to every GET on a port of the node's address on the pod network, where the
/// operator in its pod reaches it (a private address: allowed in this namespace only);
/// counts the jars served.
/// What the jar server wants in an `Authorization: Bearer` header.
const JAR_TOKEN: &str = "jar-token";

fn serve_jar(jar: PathBuf, host_ip: &str) -> (u16, Arc<AtomicUsize>) {
    let listener = std::net::TcpListener::bind((host_ip, 0)).unwrap();
    let port = listener.local_addr().unwrap().port();
    let served = Arc::new(AtomicUsize::new(0));
    let counter = served.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = Vec::new();
            let mut buffer = [0u8; 1024];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buffer) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&buffer[..n]),
                }
            }
            // The jar is served only to a download that sends the header its session job's
            // configuration names, as behind a repository that wants credentials.
            let head_text = String::from_utf8_lossy(&request).to_ascii_lowercase();
            if !head_text.contains(&format!("authorization: bearer {JAR_TOKEN}")) {
                let _ = stream.write_all(
                    b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                );
                continue;
            }
            let body = std::fs::read(&jar).unwrap();
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/java-archive\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
            counter.fetch_add(1, Ordering::SeqCst);
        }
    });
    (port, served)
}

fn session_job(name: &str, jar_uri: &str, out: &str, parallelism: i32, mode: &str) -> FlinkSessionJob {
    serde_json::from_value(json!({
        "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkSessionJob",
        "metadata": {"name": name, "namespace": LOCAL_JARS_NAMESPACE},
        "spec": {
            "deploymentName": SESSION,
            "job": {
                "jarURI": jar_uri,
                "entryClass": flink_harness::JOB_CLASS,
                "args": ["--rate", "20", "--keys", "4", "--out", out],
                "parallelism": parallelism,
                "upgradeMode": mode,
            },
        },
    }))
    .unwrap()
}

/// Waits until `name` runs a job other than `previous` and is STABLE; returns it.
async fn running(api: &Api<FlinkSessionJob>, name: &str, previous: Option<String>) -> FlinkSessionJob {
    harness::running_job(api, name, previous.as_deref()).await
}

fn job_id(sj: &FlinkSessionJob) -> JobId {
    JobId::from(
        sj.status
            .as_ref()
            .and_then(|s| s.job_status.as_ref())
            .and_then(|j| j.job_id.as_deref())
            .unwrap(),
    )
}

/// Deletes `name`, waits until it is gone, and checks that its job no longer runs.
async fn delete_and_check_stopped(
    api: &Api<FlinkSessionJob>,
    rest: &FlinkRestClient,
    name: &str,
    job: &JobId,
) {
    api.delete(name, &DeleteParams::default()).await.unwrap();
    wait_for(
        &format!("session job {name} gone and its job {job} ended"),
        Duration::from_secs(120),
        || async {
            let gone = api.get_opt(name).await.ok()?.is_none();
            let jobs = rest.jobs_overview().await.ok()?;
            let state = jobs.iter().find(|j| &j.jid == job).map(|j| j.state.clone());
            let ended = state.is_none_or(|s| matches!(s, FlinkJobState::Canceled | FlinkJobState::Finished));
            (gone && ended).then_some(())
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_jobs_run_from_http_and_file_jars_keep_their_state_over_a_savepoint_upgrade_and_stop_when_deleted()
 {
    let client = harness::client().await;
    crate::operator::shared(&client).await;
    let _turn = cluster_harness::beside_others().await;
    let _operator_log = OperatorLogOnFailure;
    let _ns = LocalJarsNamespace::new(&client).await;
    let _logs = LogsOnFailure(LOCAL_JARS_NAMESPACE.to_owned());
    objects::create_all(&client, &objects::flink_service_account(LOCAL_JARS_NAMESPACE)).await;
    let version = flink_harness::versions().last().unwrap().clone();
    let jar = flink_harness::job_jar_async(&version).await;
    let state = harness::state_dir(LOCAL_JARS_NAMESPACE);

    // A session job created before its cluster exists waits for it.
    let jobs: Api<FlinkSessionJob> = Api::namespaced(client.clone(), LOCAL_JARS_NAMESPACE);
    let host_ip = tokio::task::spawn_blocking(|| harness::runtime().host_ip.clone())
        .await
        .unwrap();
    let (port, served) = serve_jar(jar.clone(), &host_ip);
    let mut from_http = session_job(
        "from-http",
        &format!("http://{host_ip}:{port}/keyed-counter.jar"),
        "/opt/flink/state/counts-http",
        1,
        "stateless",
    );
    from_http.spec.flink_configuration = Some(
        serde_json::from_value(json!({
            "kubernetes.operator.user.artifacts.http.header": format!("Authorization:Bearer {JAR_TOKEN}")
        }))
        .unwrap(),
    );
    jobs.create(&PostParams::default(), &from_http).await.unwrap();
    wait_for(
        "the session job waiting for its cluster",
        Duration::from_secs(60),
        || async {
            let error = jobs.get("from-http").await.ok()?.status?.error?;
            error
                .starts_with("waiting for session cluster session")
                .then_some(())
        },
    )
    .await;

    let deployments: Api<FlinkDeployment> = Api::namespaced(client.clone(), LOCAL_JARS_NAMESPACE);
    let fd: FlinkDeployment = serde_json::from_value(json!({
        "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
        "metadata": {"name": SESSION, "namespace": LOCAL_JARS_NAMESPACE},
        "spec": objects::stateful_cluster_spec(&version, &state),
    }))
    .unwrap();
    deployments.create(&PostParams::default(), &fd).await.unwrap();

    // The http jar: downloaded by the operator, uploaded, run.
    let started = std::time::Instant::now();
    let http_job = running(&jobs, "from-http", None).await;
    eprintln!("http session job RUNNING after {:?}", started.elapsed());
    assert!(served.load(Ordering::SeqCst) >= 1, "the jar was never downloaded");
    let url = harness::rest_address(&client, LOCAL_JARS_NAMESPACE, SESSION).await;
    let rest = harness::rest_client(&url);
    let http_job_id = job_id(&http_job);
    harness::wait_for_running_job(&rest, &http_job_id).await;
    // The uploaded jar is deleted once the job runs.
    let (_, jars) = flink_harness::get_json(&url, "/jars").await.unwrap();
    assert_eq!(jars["files"].as_array().map(Vec::len), Some(0), "{jars}");
    delete_and_check_stopped(&jobs, &rest, "from-http", &http_job_id).await;

    // The file jar, in savepoint mode.
    let counts = state.join("counts");
    let counter = session_job(
        "counter",
        &format!("file://{}", jar.display()),
        "/opt/flink/state/counts",
        2,
        "savepoint",
    );
    jobs.create(&PostParams::default(), &counter).await.unwrap();
    let first = running(&jobs, "counter", None).await;
    let first_job = job_id(&first);
    let recorded: FlinkSessionJobSpec = first
        .status
        .as_ref()
        .unwrap()
        .reconciliation_status
        .as_ref()
        .unwrap()
        .last_reconciled_spec()
        .unwrap()
        .unwrap();
    assert_eq!(recorded, first.spec);

    // Enough state that a job started from nothing could not be mistaken for a restored one.
    let before = counted_to(&counts, 50).await;

    let started = std::time::Instant::now();
    jobs.patch(
        "counter",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"job": {"parallelism": 1}}})),
    )
    .await
    .unwrap();
    let upgraded = running(&jobs, "counter", Some(first_job.as_str().to_owned())).await;
    eprintln!("savepoint upgrade done after {:?}", started.elapsed());
    let restarted_at = SystemTime::now();
    let status = upgraded.status.clone().unwrap();
    let job_status = status.job_status.clone().unwrap();
    let savepoint = job_status.upgrade_savepoint_path.clone().unwrap();
    assert!(savepoint.contains("/opt/flink/state/savepoints/"), "{savepoint}");
    assert_eq!(
        job_status
            .savepoint_info
            .as_ref()
            .and_then(|i| i.last_savepoint.as_ref())
            .and_then(|s| s.location.clone()),
        Some(savepoint.clone())
    );
    // The old job was stopped with the savepoint, the new one restored it...
    let old = rest.jobs_overview().await.unwrap();
    assert_eq!(
        old.iter().find(|j| j.jid == first_job).map(|j| &j.state),
        Some(&FlinkJobState::Finished)
    );
    let upgraded_job = job_id(&upgraded);
    let restored = harness::restored(&rest, &upgraded_job).await;
    assert!(restored.is_savepoint);
    assert_eq!(restored.external_path.as_deref(), Some(savepoint.as_str()));
    // ...and its counts go on from where the old job's were, not from 1.
    counts_went_on(&counts, &before, restarted_at, 0).await;
    let metrics = crate::operator::probe_get("/metrics");
    let completed = metrics
        .lines()
        .find_map(|l| {
            l.strip_prefix(r#"flink_operator_savepoint_duration_seconds_count{kind="FlinkSessionJob"} "#)
        })
        .and_then(|n| n.trim().parse::<u64>().ok())
        .unwrap_or(0);
    assert!(completed >= 1, "{metrics}");
    let stable = format!(
        r#"flink_operator_resources{{kind="FlinkSessionJob",namespace="{LOCAL_JARS_NAMESPACE}",lifecycle_state="STABLE"}} 1"#
    );
    assert!(metrics.contains(&stable), "{stable} missing:\n{metrics}");

    periodic_savepoints_leave_the_history_and_the_disk(&jobs, &state, &savepoint).await;
    // Manual and periodic snapshots made no revision: the history is still 1 and 2.
    crate::revisions::a_misbehaving_update_is_rolled_back(
        &client,
        &jobs,
        "FlinkSessionJob",
        "counter",
        &counts,
    )
    .await;
    let upgraded_job = job_id(&jobs.get("counter").await.unwrap());

    delete_and_check_stopped(&jobs, &rest, "counter", &upgraded_job).await;
    deployments
        .delete(SESSION, &DeleteParams::default())
        .await
        .unwrap();
    wait_for(
        "the session FlinkDeployment gone",
        Duration::from_secs(120),
        || async { deployments.get_opt(SESSION).await.ok()?.is_none().then_some(()) },
    )
    .await;
}

/// With periodic savepoints every 2 s, a history of 2 and `dispose-on-delete`, the running
/// job `counter` keeps taking savepoints, each a PERIODIC FlinkStateSnapshot; those beyond the
/// history are deleted and their files disposed of through the session cluster, while the
/// UPGRADE one the job started from (`started_from`), the newest, and a MANUAL one asked for by
/// a nonce stay, as resources and on disk.
async fn periodic_savepoints_leave_the_history_and_the_disk(
    jobs: &Api<FlinkSessionJob>,
    state: &std::path::Path,
    started_from: &str,
) {
    // On the host, a savepoint path the pods see under /opt/flink/state.
    let on_disk = |path: &str| {
        let inside = path.trim_start_matches("file:");
        state.join(
            inside
                .strip_prefix("/opt/flink/state/")
                .unwrap_or_else(|| panic!("{path}")),
        )
    };
    let snapshots: Api<FlinkStateSnapshot> =
        Api::namespaced(jobs.clone().into_client(), LOCAL_JARS_NAMESPACE);
    let of_counter = || async {
        snapshots
            .list(&ListParams::default().labels("job-reference.name=counter"))
            .await
            .unwrap()
            .items
    };
    let trigger_type = |s: &FlinkStateSnapshot| {
        s.labels()
            .get("snapshot.trigger-type")
            .cloned()
            .unwrap_or_default()
    };
    let completed = |s: &FlinkStateSnapshot| {
        s.status
            .as_ref()
            .filter(|st| st.state == Some(FlinkStateSnapshotState::Completed))
            .and_then(|st| st.path.clone())
    };
    let operator_keys = |interval: Option<&str>| {
        json!({"spec": {"flinkConfiguration": {
            "kubernetes.operator.periodic.savepoint.interval": interval,
            "kubernetes.operator.savepoint.history.max.count": "2",
            "kubernetes.operator.savepoint.dispose-on-delete": "true",
        }}})
    };
    jobs.patch(
        "counter",
        &PatchParams::default(),
        &Patch::Merge(operator_keys(Some("2s"))),
    )
    .await
    .unwrap();
    jobs.patch(
        "counter",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"job": {"savepointTriggerNonce": 1}}})),
    )
    .await
    .unwrap();
    let mut seen = std::collections::BTreeMap::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    let manual = loop {
        let all = of_counter().await;
        for s in all.iter().filter(|s| trigger_type(s) == "PERIODIC") {
            assert!(
                s.name_any().starts_with("counter-savepoint-periodic-"),
                "{}",
                s.name_any()
            );
            if let Some(path) = completed(s) {
                seen.insert(s.name_any(), path);
            }
        }
        let manual = all
            .iter()
            .find(|s| trigger_type(s) == "MANUAL")
            .and_then(|s| completed(s).map(|path| (s.name_any(), path)));
        if seen.len() >= 3
            && let Some(manual) = manual
        {
            break manual;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "three periodic and one manual savepoint resources COMPLETED within 120 s: {seen:?}, {all:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert!(manual.0.starts_with("counter-savepoint-manual-"), "{manual:?}");
    // Off again: the history settles, and every savepoint that left it is disposed of.
    jobs.patch(
        "counter",
        &PatchParams::default(),
        &Patch::Merge(operator_keys(None)),
    )
    .await
    .unwrap();
    let kept = wait_for(
        "the savepoints beyond the history deleted and disposed of",
        Duration::from_secs(60),
        || async {
            let all = of_counter().await;
            let names: Vec<String> = all.iter().map(|s| s.name_any()).collect();
            let left: Vec<&String> = seen.keys().filter(|n| !names.contains(n)).collect();
            let history = all
                .iter()
                .filter(|s| matches!(trigger_type(s).as_str(), "PERIODIC" | "UPGRADE"))
                .count();
            let disposed = left.iter().all(|n| !on_disk(&seen[*n]).exists());
            (history <= 3 && left.len() >= 2 && disposed).then_some(all)
        },
    )
    .await;
    let kept_paths: Vec<String> = kept.iter().filter_map(completed).collect();
    assert!(
        kept_paths.iter().any(|p| p == started_from),
        "{kept_paths:?} lost {started_from}"
    );
    assert!(
        kept_paths.contains(&manual.1),
        "the manual savepoint was trimmed: {kept_paths:?}"
    );
    for path in &kept_paths {
        assert!(
            on_disk(path).exists(),
            "{path} is a snapshot resource but not on disk"
        );
    }
    eprintln!(
        "periodic savepoint resources taken: {}; kept: {kept_paths:?}",
        seen.len()
    );
}
