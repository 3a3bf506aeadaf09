//! The operator every end-to-end test runs against, as platform teams run it: `helm install`
//! of the chart into the cluster (release `flink-operator` in `flink-operator-system`), the
//! operator's image run by the local runtime as the binary under test, in its pod's network
//! and mount namespaces with its ServiceAccount's token. So the suite runs under the chart's
//! RBAC only, the API server calls the webhook through its Service, and JobManagers are
//! reached at their Services' names (`--flink-rest-endpoint service`, the in-cluster default).
//!
//! The values are what a platform team on small nodes writes (see
//! [`cluster_harness::test_platform_settings`]), the authority of JobManagers with REST SSL
//! it trusts (see [`crate::rest_ssl`]), and one replica: the tests read one
//! process's metrics, CPU time and log. The failover test adds the second replica the chart
//! runs by default.

use std::{
    path::{Path, PathBuf},
    sync::OnceLock,
    time::{Duration, Instant},
};

use k8s_openapi::api::{
    admissionregistration::v1::ValidatingWebhookConfiguration, apps::v1::Deployment, coordination::v1::Lease,
    core::v1::Pod,
};
use kube::{
    Api, Client,
    api::{ListParams, Patch, PatchParams},
};
use serde_json::json;

use crate::{
    chart_rbac::{RELEASE, helm_command, helm_output},
    cluster_harness::{
        self, OPERATOR_LEASE, OPERATOR_NAMESPACE, WEBHOOK_CONFIGURATION, control_plane, wait_for,
    },
    harness,
};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
/// The chart's Deployment of the operator (its full name for the release).
pub const DEPLOYMENT: &str = RELEASE;
/// The operator's container in its pods, as the chart names it.
const CONTAINER: &str = "operator";
/// The port of the probes and `/metrics` in the pods (the chart's `containerPorts.probes`).
const PROBE_PORT: u16 = 8080;

/// The installed operator: its pods are found through the API server and the runtime's
/// state. It keeps no client: a client belongs to the runtime of the test that made it.
pub struct SharedOperator;

static OPERATOR: OnceLock<SharedOperator> = OnceLock::new();

/// Installs the operator with the chart (once per test process) and returns once it leads
/// and the API server admits through its webhook.
pub async fn shared(client: &Client) -> &'static SharedOperator {
    // Tests run on parallel threads, each with its own runtime: the first one installs the
    // operator while the others wait here.
    static STARTING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let _starting = STARTING.lock().await;
    if let Some(operator) = OPERATOR.get() {
        return operator;
    }
    tokio::task::spawn_blocking(harness::runtime).await.unwrap();
    cluster_harness::install_crds(client).await;
    cluster_harness::ensure_operator_namespace(client).await;
    crate::rest_ssl::create_ca_secret(client).await;
    let dir = cluster_harness::work_dir().join("operator");
    std::fs::create_dir_all(&dir).unwrap();
    let values = dir.join("values.yaml");
    let configuration: serde_json::Map<String, serde_json::Value> = cluster_harness::test_platform_settings()
        .into_iter()
        .map(|(key, value)| (key, json!(value)))
        .collect();
    let mut chart_values = json!({"replicas": 1, "operatorConfiguration": configuration});
    // Trusting the authority of the JobManagers with REST SSL, as a platform team does.
    for (key, value) in crate::rest_ssl::operator_values().as_object().unwrap() {
        chart_values[key] = value.clone();
    }
    std::fs::write(&values, serde_yaml::to_string(&chart_values).unwrap()).unwrap();
    let installed = Instant::now();
    tokio::task::spawn_blocking(move || helm_install(&values))
        .await
        .unwrap();
    eprintln!("operator installed by helm in {:?}", installed.elapsed());

    let operator = SharedOperator;
    // The operator writes the caBundle once it has its certificate; until then the API
    // server cannot call it.
    let validating: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    wait_for(
        "the operator to write caBundle",
        Duration::from_secs(60),
        || async {
            let config = validating.get(WEBHOOK_CONFIGURATION).await.ok()?;
            config
                .webhooks?
                .iter()
                .all(|w| w.client_config.ca_bundle.is_some())
                .then_some(())
        },
    )
    .await;
    operator.leader().await;
    let _ = OPERATOR.set(operator);
    OPERATOR.get().unwrap()
}

fn helm_install(values: &Path) {
    let chart = Path::new(ROOT).join("charts/flink-operator");
    if let Err(printed) = helm_output(
        helm_command()
            .args(["upgrade", "--install", RELEASE])
            .arg(&chart)
            .args(["--namespace", OPERATOR_NAMESPACE, "--values"])
            .arg(values)
            .args(["--wait", "--timeout", "4m", "--kubeconfig"])
            .arg(&control_plane().kubeconfig),
    ) {
        panic!(
            "helm install of the operator failed:\n{printed}\n{}",
            operator_log()
        );
    }
}

impl SharedOperator {
    /// The operator's pods, running or not.
    pub async fn pods(&self) -> Vec<Pod> {
        let pods: Api<Pod> = Api::namespaced(cluster_harness::client().await, OPERATOR_NAMESPACE);
        pods.list(&ListParams::default().labels(&format!("app.kubernetes.io/instance={RELEASE}")))
            .await
            .map(|l| l.items)
            .unwrap_or_default()
    }

    /// The name of the replica holding the Lease (waiting up to 60 s for one).
    pub async fn leader(&self) -> String {
        let leases: Api<Lease> = Api::namespaced(cluster_harness::client().await, OPERATOR_NAMESPACE);
        wait_for("a leader of the operator", Duration::from_secs(60), || async {
            leases.get(OPERATOR_LEASE).await.ok()?.spec?.holder_identity
        })
        .await
    }

    /// The leader's pod.
    pub async fn leader_pod(&self) -> Pod {
        let leader = self.leader().await;
        let pods: Api<Pod> = Api::namespaced(cluster_harness::client().await, OPERATOR_NAMESPACE);
        pods.get(&leader).await.unwrap()
    }

    /// Kills the leader's operator process (SIGKILL: no chance to tidy up, as in a crash);
    /// its pod's container restarts, as a kubelet restarts it, and the test goes on once it
    /// is ready again.
    pub async fn crash_and_restart(&self) {
        let pod = self.leader_pod().await;
        let name = pod.metadata.name.clone().unwrap();
        let restarts = restart_count(&pod);
        let pid = harness::container_pid(&pod, CONTAINER).expect("the operator's process id");
        signal(pid, "-KILL");
        let pods: Api<Pod> = Api::namespaced(cluster_harness::client().await, OPERATOR_NAMESPACE);
        // The second restart of a container waits 10 s (the kubelet's back-off).
        wait_for(
            "the operator's container restarted and ready",
            Duration::from_secs(90),
            || async {
                let pod = pods.get(&name).await.ok()?;
                (restart_count(&pod) > restarts && harness::is_ready(&pod)).then_some(())
            },
        )
        .await;
    }

    /// Runs `replicas` replicas of the operator until the guard is dropped, which goes back
    /// to one; returns once that many are ready.
    pub async fn scaled(&self, replicas: usize) -> Replicas {
        scale(replicas).await;
        self.wait_for_replicas(replicas).await;
        Replicas
    }

    /// Waits until `replicas` replicas run, each ready, none of them being deleted.
    pub async fn wait_for_replicas(&self, replicas: usize) {
        wait_for(
            &format!("{replicas} operator replicas ready"),
            Duration::from_secs(120),
            || async { (ready_replicas(&self.pods().await) == Some(replicas)).then_some(()) },
        )
        .await;
    }
}

/// How many replicas run, all ready and none being deleted; `None` while one is not ready.
fn ready_replicas(pods: &[Pod]) -> Option<usize> {
    let live: Vec<&Pod> = pods
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect();
    live.iter().all(|p| harness::is_ready(p)).then_some(live.len())
}

async fn scale(replicas: usize) {
    let deployments: Api<Deployment> = Api::namespaced(cluster_harness::client().await, OPERATOR_NAMESPACE);
    deployments
        .patch(
            DEPLOYMENT,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": replicas}})),
        )
        .await
        .unwrap();
}

/// Extra replicas of the shared operator; dropped (also when a test fails), the operator
/// goes back to the one replica the other tests expect, which leads.
pub struct Replicas;

impl Drop for Replicas {
    fn drop(&mut self) {
        // No panic here: this may run while a failing test unwinds.
        let back = blocking(async {
            scale(1).await;
            let operator = OPERATOR.get()?;
            let deadline = Instant::now() + Duration::from_secs(120);
            while Instant::now() < deadline {
                let pods = operator.pods().await;
                let leader = operator.leader().await;
                let one = ready_replicas(&pods) == Some(1) && pods.len() == 1;
                if one && pods[0].metadata.name.as_deref() == Some(leader.as_str()) {
                    return Some(());
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            None
        });
        if back.is_none() {
            eprintln!("the operator is not back to one leading replica after 120 s");
        }
    }
}

fn restart_count(pod: &Pod) -> i32 {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|c| c.iter().find(|c| c.name == CONTAINER))
        .map_or(0, |c| c.restart_count)
}

/// Sends `signal` (as `kill` names it) to `pid`.
pub fn signal(pid: u32, signal: &str) {
    let status = std::process::Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill {signal} {pid}");
}

/// The runtime's directories of the operator's pods (current and gone), oldest first.
fn pod_dirs() -> Vec<PathBuf> {
    let mut dirs = harness::pod_dirs(OPERATOR_NAMESPACE);
    dirs.sort_by_key(|d| d.metadata().and_then(|m| m.modified()).ok());
    dirs
}

/// The process id of the operator: of its running replica, of the leader when there are two.
pub fn operator_pid() -> u32 {
    let live: Vec<(String, u32)> = pod_dirs()
        .iter()
        .filter_map(|d| {
            let pid = std::fs::read_to_string(d.join("containers").join(CONTAINER).join("pid")).ok()?;
            let pid: u32 = pid.trim().parse().ok()?;
            // `<namespace>_<name>_<uid>`
            let name = d.file_name()?.to_str()?.split('_').nth(1)?.to_owned();
            harness::alive(pid).then_some((name, pid))
        })
        .collect();
    match live.as_slice() {
        [] => panic!("no operator process is running"),
        [(_, pid)] => *pid,
        _ => {
            let leader = blocking(async { OPERATOR.get().expect("operator installed").leader().await });
            live.iter()
                .find(|(name, _)| *name == leader)
                .map(|(_, pid)| *pid)
                .unwrap_or_else(|| panic!("the leader {leader} is none of the running {live:?}"))
        }
    }
}

/// Runs `future` to completion on a thread of its own (with its own runtime), for sync
/// callers inside async tests.
fn blocking<T: Send + 'static>(future: impl std::future::Future<Output = T> + Send + 'static) -> T {
    std::thread::spawn(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(future)
    })
    .join()
    .unwrap()
}

/// The operator's log: every replica's and every restart's, oldest first.
pub fn operator_log() -> String {
    let mut log = String::new();
    for dir in pod_dirs() {
        let logs = dir.join("logs").join(CONTAINER);
        let mut files: Vec<(u32, PathBuf)> = std::fs::read_dir(&logs)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let restart = e.path().file_stem()?.to_str()?.parse().ok()?;
                Some((restart, e.path()))
            })
            .collect();
        files.sort();
        for (_, file) in files {
            log.push_str(&std::fs::read_to_string(file).unwrap_or_default());
        }
    }
    log
}

/// GETs `path` from the leader's probe port (plain HTTP at its pod's address); the whole
/// response. Callable from sync code: the pod is looked up on a thread of its own.
pub fn probe_get(path: &str) -> String {
    let ip = blocking(async {
        let operator = OPERATOR.get().expect("operator installed");
        operator.leader_pod().await.status.and_then(|s| s.pod_ip)
    })
    .expect("the leader's address");
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect((ip.as_str(), PROBE_PORT)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: operator\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}
