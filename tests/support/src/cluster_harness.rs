//! The shared control plane and operator of this test binary.
//!
//! Both are started once, on first use, and live as long as the test process: the
//! control plane is started with `--exit-with-parent` and the operator is watched by a
//! small reaper, so both stop when the tests end, pass or fail.

use std::{
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{Mutex, OnceLock},
    time::{Duration, Instant},
};

use k8s_openapi::{
    api::{
        admissionregistration::v1::{MutatingWebhookConfiguration, ValidatingWebhookConfiguration},
        core::v1::Namespace,
    },
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api, Client, Config,
    api::{DeleteParams, Patch, PatchParams, PostParams},
    config::{KubeConfigOptions, Kubeconfig},
};
use serde_json::json;

use crate::ROOT;

/// The operator binary the tests run: [`crate::built_operator`], or the one
/// `FLINK_OPERATOR_BIN` names (the benchmarks measure the release build, as users run it).
pub fn operator_binary() -> String {
    std::env::var("FLINK_OPERATOR_BIN").unwrap_or_else(|_| crate::built_operator().display().to_string())
}

/// Name of the webhook configurations the tests register and the operator keeps: the
/// chart's name for them (its RBAC grants the operator these two objects only).
pub const WEBHOOK_CONFIGURATION: &str = "flink-operator-flink-operator-system";
/// Namespace the operator runs in (its certificate Secret lives there).
pub const OPERATOR_NAMESPACE: &str = crate::chart_rbac::OPERATOR_NAMESPACE;

pub struct ControlPlane {
    pub kubeconfig: PathBuf,
    _process: Mutex<Child>,
}

/// The cluster tests' operator: a process on the host with the chart's rights.
pub struct Operator {
    pub log: PathBuf,
    pub probe_port: u16,
    process: Mutex<Child>,
}

impl Operator {
    /// The operator's process id.
    pub fn pid(&self) -> u32 {
        self.process.lock().unwrap_or_else(|e| e.into_inner()).id()
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        let mut process = self.process.lock().unwrap_or_else(|e| e.into_inner());
        let _ = process.kill();
        let _ = process.wait();
    }
}

/// Serialises a test that registers a webhook for every namespace and then takes it away
/// (requests the API server is sending meanwhile fail calling it) with the tests that count
/// failed requests through the API server.
pub async fn webhook_changes() -> tokio::sync::MutexGuard<'static, ()> {
    static CHANGES: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    CHANGES.lock().await
}

/// Turns on the shared operator and the machine. A test that crashes the operator, counts
/// its requests over all resources or times it (`exclusive_operator`) runs with no other test
/// beside it; every other test that starts clusters (`beside_others`) may run beside one more
/// (libtest's threads), and none of them restarts the operator. Turns are taken in the order
/// asked for, so a test waiting to run alone is not overtaken. How long each test held its
/// turn is appended to `target/e2e-serial-times.log` (scripts/test-all prints it): the tests
/// that run alone run one after another, so their sum bounds the suite's time.
static TURNS: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

/// The operator and the machine to this test alone (see [`TURNS`]).
pub async fn exclusive_operator() -> Turn {
    Turn::new(Hold::Alone(TURNS.write().await))
}

/// A turn beside at most one other test that does not need to run alone (see [`TURNS`]).
pub async fn beside_others() -> Turn {
    Turn::new(Hold::Beside(TURNS.read().await))
}

// The guards are held for their Drop: the turn ends with them.
#[expect(dead_code, reason = "held, never read")]
enum Hold {
    Alone(tokio::sync::RwLockWriteGuard<'static, ()>),
    Beside(tokio::sync::RwLockReadGuard<'static, ()>),
}

/// A test's turn (see [`TURNS`]).
pub struct Turn {
    hold: Hold,
    test: String,
    since: std::time::Instant,
}

impl Turn {
    fn new(hold: Hold) -> Self {
        Turn {
            hold,
            test: std::thread::current().name().unwrap_or("unnamed").to_owned(),
            since: std::time::Instant::now(),
        }
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        use std::io::Write;
        let path = std::path::Path::new(crate::ROOT).join("target/e2e-serial-times.log");
        let line = format!(
            "{:6.0} s  {} {}{}\n",
            self.since.elapsed().as_secs_f64(),
            match self.hold {
                Hold::Alone(_) => "alone ",
                Hold::Beside(_) => "beside",
            },
            self.test,
            if std::thread::panicking() { " (failed)" } else { "" }
        );
        if let Ok(mut file) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
            let _ = file.write_all(line.as_bytes());
        }
    }
}

/// The one namespace where the operator fetches session job jars from `file://` URIs and
/// `http://` servers on private addresses (the end-to-end tests serve the test job's jar that way);
/// everywhere else its defaults hold (https only, no restricted hosts).
pub const LOCAL_JARS_NAMESPACE: &str = "session-jobs-local-jars";

/// The namespace of the hostile-tenant test's tenant A: its platform overlay lets it take
/// `http` jars from the node's private address (where the test serves a jar a few bytes a
/// second) and `file` jars from [`hostile_jars_dir`] only.
pub const HOSTILE_TENANT_NAMESPACE: &str = "hostile-tenant-a";

/// The test infrastructure's cache (`FLINK_OPERATOR_CACHE`, else ~/.cache/flink-operator).
fn cache_dir() -> String {
    std::env::var("FLINK_OPERATOR_CACHE").unwrap_or_else(|_| {
        format!(
            "{}/.cache/flink-operator",
            std::env::var("HOME").unwrap_or_default()
        )
    })
}

/// Where tests/jobs/build.sh keeps the test jobs' jars.
fn test_jobs_dir() -> String {
    format!("{}/jobs", cache_dir())
}

/// The one directory [`HOSTILE_TENANT_NAMESPACE`] may take `file` jars from: on the host, so
/// that the operator's pod sees it (its /tmp is its own).
pub fn hostile_jars_dir() -> String {
    format!("{}/hostile-tenant-jars", cache_dir())
}

/// What this test platform adds to the operator's default configuration, as a platform
/// team would set it (in the chart's `operatorConfiguration`).
pub fn test_platform_settings() -> Vec<(String, String)> {
    let overlay = format!("kubernetes.operator.default-configuration.namespace.{LOCAL_JARS_NAMESPACE}");
    let hostile = format!("kubernetes.operator.default-configuration.namespace.{HOSTILE_TENANT_NAMESPACE}");
    vec![
        // What a platform team on small nodes would set for every cluster: C1 only and the
        // serial collector start JVMs with less CPU and memory, which matters more on this
        // 2-core machine than peak throughput. A Flink key of the operator's configuration
        // is a default of every cluster (as in the Apache operator); a spec's own
        // env.java.opts.all replaces it, while the Java 17 module options, in
        // env.java.default-opts.all, stay.
        (
            "env.java.opts.all".to_owned(),
            "-XX:+UseSerialGC -XX:TieredStopAtLevel=1".to_owned(),
        ),
        (
            format!("{overlay}.kubernetes.operator.user.artifacts.allowed-schemes"),
            "https,http,file".to_owned(),
        ),
        (
            format!("{overlay}.kubernetes.operator.user.artifacts.disallow-restricted-hosts"),
            "false".to_owned(),
        ),
        // file:// jars only from where tests/jobs/build.sh caches the test job's jar.
        (
            format!("{overlay}.kubernetes.operator.user.artifacts.file.allowed-dirs"),
            test_jobs_dir(),
        ),
        // Tenant A of the hostile-tenant test: jars from the node's private address and
        // from one directory; its other limits are the platform's.
        (
            format!("{hostile}.kubernetes.operator.user.artifacts.allowed-schemes"),
            "https,http,file".to_owned(),
        ),
        (
            format!("{hostile}.kubernetes.operator.user.artifacts.disallow-restricted-hosts"),
            "false".to_owned(),
        ),
        (
            format!("{hostile}.kubernetes.operator.user.artifacts.file.allowed-dirs"),
            hostile_jars_dir(),
        ),
        // The tests compress time (looks every 5 s, savepoints every 2 s): the platform's
        // floors of those intervals lowered as a platform team may lower them.
        (
            "kubernetes.operator.reconcile.interval.min".to_owned(),
            "1 s".to_owned(),
        ),
        (
            "kubernetes.operator.observer.progress-check.interval.min".to_owned(),
            "1 s".to_owned(),
        ),
        (
            "kubernetes.operator.periodic.savepoint.interval.min".to_owned(),
            "1 s".to_owned(),
        ),
        (
            "kubernetes.operator.periodic.checkpoint.interval.min".to_owned(),
            "1 s".to_owned(),
        ),
        // The resources of the operator the end-to-end tests install in the cluster with the
        // chart are that operator's alone, as two teams' operators share namespaces.
        (
            "kubernetes.operator.label.selector".to_owned(),
            format!("!{IN_CLUSTER_LABEL}"),
        ),
    ]
}

/// The operator's configuration: the operator's default configuration as the chart and
/// `scripts/dev-up` give it (the chart's `conf/operator-defaults.yaml`), leader election as
/// the chart sets it, then [`test_platform_settings`].
pub fn operator_config_text() -> String {
    let defaults = Path::new(ROOT).join("charts/flink-operator/conf/operator-defaults.yaml");
    let mut text = std::fs::read_to_string(&defaults).unwrap();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&format!(
        "kubernetes.operator.leader-election.enabled: true\n\
         kubernetes.operator.leader-election.lease-name: {OPERATOR_LEASE}\n"
    ));
    for (key, value) in test_platform_settings() {
        text.push_str(&format!("{key}: {}\n", serde_json::Value::String(value)));
    }
    text
}

/// The label of the resources that the operator installed in the cluster by the chart
/// manages (and the tests' shared operator leaves alone).
pub const IN_CLUSTER_LABEL: &str = "flink-operator-tests/in-cluster";

/// The Lease of the shared operator.
pub const OPERATOR_LEASE: &str = "flink-operator-leader";
/// The shared operator's pod name (its leader-election identity): the same across its
/// restarts, as a container restarted in its pod keeps the pod's name.
pub const OPERATOR_POD_NAME: &str = "flink-operator-0";

/// The operator's configuration file.
fn operator_config(dir: &Path) -> PathBuf {
    let path = dir.join("operator-config.yaml");
    std::fs::write(&path, operator_config_text()).unwrap();
    path
}

fn spawn_operator(webhook_port: u16, probe_port: u16, dir: &Path, log: &Path) -> Child {
    let config = operator_config(dir);
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .unwrap();
    let mut command = Command::new(operator_binary());
    command
        .args([
            "run",
            "--components",
            "all",
            "--bind-address",
            "127.0.0.1",
            "--manage-webhook-certs",
            // Outside the cluster, JobManagers are reached at their pods.
            "--flink-rest-endpoint",
            "endpoint-slice",
        ])
        .args([
            "--webhook-port",
            &webhook_port.to_string(),
            "--probe-port",
            &probe_port.to_string(),
        ])
        .args([
            "--operator-namespace",
            OPERATOR_NAMESPACE,
            "--webhook-configuration-name",
            WEBHOOK_CONFIGURATION,
        ])
        .args(["--webhook-cert-extra-san", "127.0.0.1", "--webhook-cert-dir"])
        .arg(dir.join("certs"))
        // The chart's ServiceAccount, with the chart's rights (see `chart_rbac`).
        .arg("--kubeconfig")
        .arg(dir.join("operator.kubeconfig"))
        .arg("--config")
        .arg(config)
        .env("POD_NAME", OPERATOR_POD_NAME)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap()
}

static CONTROL_PLANE: OnceLock<ControlPlane> = OnceLock::new();
static OPERATOR: OnceLock<Operator> = OnceLock::new();

pub fn work_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        crate::work_dirs::remove_stale("flink-operator-cluster-tests");
        let dir = std::env::temp_dir().join(format!("flink-operator-cluster-tests-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    })
    .clone()
}

/// The path of the testplane binary, built (or taken from the cache) by its build script.
fn testplane_binary() -> PathBuf {
    if let Ok(path) = std::env::var("FLINK_OPERATOR_TESTPLANE") {
        return PathBuf::from(path);
    }
    let output = Command::new(Path::new(ROOT).join("tests/testplane/build.sh"))
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    assert!(output.status.success(), "tests/testplane/build.sh failed");
    PathBuf::from(String::from_utf8(output.stdout).unwrap().trim())
}

/// The `READY {json}` lines of `child`'s stdout (the testplane's and the local runtime's
/// start signal), their JSON as it comes.
pub fn ready_lines(child: &mut Child) -> std::sync::mpsc::Receiver<String> {
    let stdout = child.stdout.take().expect("the child's stdout is piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(json) = line.strip_prefix("READY ") {
                let _ = tx.send(json.to_owned());
            }
        }
    });
    rx
}

/// The control plane, started on first use.
pub fn control_plane() -> &'static ControlPlane {
    CONTROL_PLANE.get_or_init(|| {
        let dir = work_dir().join("testplane");
        let started = Instant::now();
        let mut child = Command::new(testplane_binary())
            .args(["up", "--exit-with-parent", "--dir"])
            .arg(&dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let rx = ready_lines(&mut child);
        let ready = match rx.recv_timeout(Duration::from_secs(180)) {
            Ok(ready) => ready,
            Err(_) => {
                let _ = child.kill();
                panic!(
                    "control plane not ready after 180 s; logs in {}",
                    dir.join("logs").display()
                )
            }
        };
        let ready: serde_json::Value = serde_json::from_str(&ready).unwrap();
        eprintln!(
            "control plane ready in {:.1} s: {ready}",
            started.elapsed().as_secs_f64()
        );
        ControlPlane {
            kubeconfig: PathBuf::from(ready["kubeconfig"].as_str().unwrap()),
            _process: Mutex::new(child),
        }
    })
}

/// A client of the control plane (one per test: a client belongs to its test's runtime).
/// The control plane's audit log: every request made with a service account's token.
pub fn audit_log() -> PathBuf {
    control_plane();
    work_dir().join("testplane").join("logs").join("audit.log")
}

pub async fn client() -> Client {
    let plane = control_plane();
    let kubeconfig = Kubeconfig::read_from(&plane.kubeconfig).unwrap();
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    Client::try_from(config).unwrap()
}

/// Applies the chart's CRDs (server-side) and waits until all are Established.
pub async fn install_crds(client: &Client) {
    let dir = Path::new(ROOT).join("charts/flink-operator/crds");
    let crds = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| serde_yaml::from_str(&std::fs::read_to_string(entry.unwrap().path()).unwrap()).unwrap())
        .collect();
    apply_crds(client, crds).await;
}

/// Server-side applies `crds` and waits until the API server serves each of them.
pub async fn apply_crds(client: &Client, crds: Vec<CustomResourceDefinition>) {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut names = Vec::new();
    for crd in crds {
        let name = crd.metadata.name.clone().unwrap();
        api.patch(
            &name,
            &PatchParams::apply("flink-operator-tests").force(),
            &Patch::Apply(&crd),
        )
        .await
        .unwrap_or_else(|e| panic!("the API server refused CRD {name}: {e}"));
        names.push(name);
    }
    wait_until_established(client, &names).await;
}

/// Waits until the API server serves each of the CRDs `names`.
pub async fn wait_until_established(client: &Client, names: &[String]) {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for name in names {
        wait_for(
            &format!("CRD {name} Established"),
            Duration::from_secs(30),
            || {
                let api = api.clone();
                let name = name.clone();
                async move {
                    let crd = api.get(&name).await.ok()?;
                    let established = crd
                        .status?
                        .conditions?
                        .iter()
                        .any(|c| c.type_ == "Established" && c.status == "True");
                    established.then_some(())
                }
            },
        )
        .await;
    }
}

/// Polls `check` until it yields a value, or panics naming `what` after `timeout`.
pub async fn wait_for<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    wait_for_seeing(what, timeout, || {
        let checked = check();
        async move { checked.await.ok_or_else(String::new) }
    })
    .await
}

/// Waits up to `timeout` for an Event in `namespace` that `matches`, and returns it.
pub async fn wait_for_event(
    client: &Client,
    namespace: &str,
    what: &str,
    timeout: Duration,
    matches: impl Fn(&k8s_openapi::api::core::v1::Event) -> bool,
) -> k8s_openapi::api::core::v1::Event {
    let events: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(client.clone(), namespace);
    let matches = &matches;
    wait_for(what, timeout, || {
        let events = events.clone();
        async move {
            events
                .list(&kube::api::ListParams::default())
                .await
                .ok()?
                .items
                .into_iter()
                .find(matches)
        }
    })
    .await
}

/// [`wait_for`] with a `check` that says what it saw when it yields no value: a timeout's
/// message ends with what was seen last.
pub async fn wait_for_seeing<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        let seen = match check().await {
            Ok(value) => return value,
            Err(seen) => seen,
        };
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}{}",
            if seen.is_empty() {
                String::new()
            } else {
                format!("; last seen: {seen}")
            }
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// CRDs installed, webhook configurations registered (pointing at the operator's port,
/// without caBundle) and the operator running with `--manage-webhook-certs`; returns once
/// the operator has written the caBundle and the API server admits through it.
pub async fn operator(client: &Client) -> &'static Operator {
    // Tests run on parallel threads, each with its own runtime: the first one starts the
    // operator while the others wait here.
    static STARTING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let _starting = STARTING.lock().await;
    if let Some(operator) = OPERATOR.get() {
        return operator;
    }
    install_crds(client).await;
    ensure_operator_namespace(client).await;

    let webhook_port = free_port();
    let probe_port = free_port();
    register_webhooks(client, webhook_port).await;

    let dir = work_dir().join("operator");
    std::fs::create_dir_all(&dir).unwrap();
    crate::chart_rbac::install(client, &control_plane().kubeconfig, &dir).await;
    let log = dir.join("operator.log");
    let child = spawn_operator(webhook_port, probe_port, &dir, &log);
    reap_with_this_process(child.id());
    let operator = Operator {
        log,
        probe_port,
        process: Mutex::new(child),
    };

    // The operator writes the caBundle; until then the API server cannot call it.
    let validating: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let log = operator.log.clone();
    wait_for("the operator to write caBundle", Duration::from_secs(60), || {
        let validating = validating.clone();
        let log = log.clone();
        async move {
            let config = validating.get(WEBHOOK_CONFIGURATION).await.ok()?;
            let with_bundle = config
                .webhooks?
                .iter()
                .all(|w| w.client_config.ca_bundle.is_some());
            if !with_bundle
                && std::fs::read_to_string(&log)
                    .unwrap_or_default()
                    .contains("\"level\":\"ERROR\"")
            {
                panic!(
                    "operator failed:\n{}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                );
            }
            with_bundle.then_some(())
        }
    })
    .await;
    let _ = OPERATOR.set(operator);
    OPERATOR.get().unwrap()
}

/// Creates the operator's namespace unless it exists.
pub async fn ensure_operator_namespace(client: &Client) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": OPERATOR_NAMESPACE}});
    namespaces
        .patch(
            OPERATOR_NAMESPACE,
            &PatchParams::apply("flink-operator-tests"),
            &Patch::Apply(&ns),
        )
        .await
        .unwrap();
}

/// Registers both webhook configurations for the four kinds, by URL (there is no
/// kubelet, so no Service can route to a pod), with failurePolicy Fail.
async fn register_webhooks(client: &Client, port: u16) {
    register_webhooks_named(client, WEBHOOK_CONFIGURATION, port, None).await;
}

/// Registers both webhook configurations `configuration` by URL (`https://127.0.0.1:port`),
/// with failurePolicy Fail, for every namespace or for `namespace` only.
pub async fn register_webhooks_named(
    client: &Client,
    configuration: &str,
    port: u16,
    namespace: Option<&str>,
) {
    let namespace_selector = match namespace {
        Some(ns) => json!({"matchLabels": {"kubernetes.io/metadata.name": ns}}),
        None => json!({}),
    };
    let rules = json!([{
        "apiGroups": ["flink.apache.org"], "apiVersions": ["*"], "operations": ["CREATE", "UPDATE"],
        "resources": ["flinkdeployments", "flinksessionjobs", "flinkstatesnapshots", "flinkbluegreendeployments"],
        "scope": "Namespaced"
    }]);
    let webhook = |name: &str, path: &str| {
        json!({
            "name": name,
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            "failurePolicy": "Fail",
            "timeoutSeconds": 10,
            "matchPolicy": "Equivalent",
            "clientConfig": {"url": format!("https://127.0.0.1:{port}{path}")},
            "namespaceSelector": namespace_selector,
            "rules": rules,
        })
    };
    let validating = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": configuration},
        "webhooks": [webhook("validate.flink.apache.org", "/validate")],
    });
    let mutating = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": configuration},
        "webhooks": [webhook("mutate.flink.apache.org", "/mutate")],
    });
    let params = PatchParams::apply("flink-operator-tests").force();
    let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    api.patch(configuration, &params, &Patch::Apply(&validating))
        .await
        .unwrap();
    let api: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    api.patch(configuration, &params, &Patch::Apply(&mutating))
        .await
        .unwrap();
}

/// Kills `pid` when this test process exits, however it exits: a watcher process
/// (`sh`) waits for our stdin pipe to close, which happens only when we are gone.
pub fn reap_with_this_process(pid: u32) {
    let script =
        format!("cat >/dev/null; kill -TERM {pid} 2>/dev/null; sleep 5; kill -KILL {pid} 2>/dev/null");
    let child = Command::new("sh")
        .args(["-c", &script])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // The pipe's write end must stay open for the life of this process.
    std::mem::forget(child);
}

/// A fresh namespace for one test, removed when dropped.
pub struct TestNamespace {
    pub name: String,
}

/// How many test namespaces this process created, and how many of them are still in use.
static NAMESPACES_CREATED: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
static NAMESPACES_IN_USE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// How many test namespaces are in use: tests still running (nearly every test holds one).
pub fn namespaces_in_use() -> u32 {
    NAMESPACES_IN_USE.load(std::sync::atomic::Ordering::Relaxed)
}

/// How many test namespaces this process created so far: how much of the suite ran.
pub fn namespaces_created() -> u32 {
    NAMESPACES_CREATED.load(std::sync::atomic::Ordering::Relaxed)
}

impl TestNamespace {
    pub async fn new(client: &Client, prefix: &str) -> Self {
        let n = NAMESPACES_CREATED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        NAMESPACES_IN_USE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("{prefix}-{n}");
        let api: Api<Namespace> = Api::all(client.clone());
        let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
        api.create(&PostParams::default(), &ns).await.unwrap();
        Self { name }
    }
}

impl Drop for TestNamespace {
    fn drop(&mut self) {
        NAMESPACES_IN_USE.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        delete_namespace_now(&self.name);
    }
}

/// Asks the API server to delete namespace `name` and returns once it was asked (its
/// objects then go in the background, their finalizers run by the operator). Called from a
/// `Drop`: a task spawned on the test's runtime would not run, since the runtime ends with
/// the test, and the namespace, with its Flink clusters running, would outlive the test for
/// the rest of the suite, taking the CPU the tests after it need. A thread of its own with a
/// runtime and a client of its own sends it, whatever state the test's runtime is in.
pub fn delete_namespace_now(name: &str) {
    let name = name.to_owned();
    let sent = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime for the namespace's deletion");
        runtime.block_on(async {
            let api: Api<Namespace> = Api::all(client().await);
            let deleted = tokio::time::timeout(
                Duration::from_secs(30),
                api.delete(&name, &DeleteParams::default()),
            )
            .await;
            match deleted {
                Ok(Ok(_)) => {}
                Ok(Err(kube::Error::Api(e))) if e.code == 404 => {}
                Ok(Err(e)) => eprintln!("deleting namespace {name}: {e}"),
                Err(_) => eprintln!("deleting namespace {name}: no answer within 30 s"),
            }
        });
    })
    .join();
    if sent.is_err() {
        eprintln!("deleting a test namespace: the thread sending it panicked");
    }
}

/// A FlinkDeployment `name` of the smallest valid spec (its cluster never starts without a
/// kubelet, but every controller and webhook path over it runs).
pub fn small_deployment(name: &str, labels: serde_json::Value) -> serde_json::Value {
    json!({
        "apiVersion": "flink.apache.org/v1beta1",
        "kind": "FlinkDeployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "image": "flink:1.20",
            "flinkVersion": "v1_20",
            "serviceAccount": "flink",
            "jobManager": {"resource": {"memory": "1024m", "cpu": 0.5}},
            "taskManager": {"resource": {"memory": "1024m", "cpu": 0.5}},
            "job": {"jarURI": "local:///opt/flink/examples/streaming/StateMachineExample.jar", "parallelism": 1, "upgradeMode": "stateless"}
        }
    })
}

/// GETs `path` from the operator's plain-HTTP probe port.
pub fn probe_get(path: &str) -> String {
    use std::io::{Read, Write};
    let port = OPERATOR.get().expect("operator started").probe_port;
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

/// The operator's process id.
pub fn operator_pid() -> u32 {
    OPERATOR.get().expect("operator started").pid()
}

/// The operator's log, for failure messages.
pub fn operator_log() -> String {
    OPERATOR
        .get()
        .map(|o| std::fs::read_to_string(&o.log).unwrap_or_default())
        .unwrap_or_default()
}
