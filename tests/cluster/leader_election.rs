//! Two replicas of the operator with leader election on, against the real API server: one
//! leads and reconciles, the other only keeps its caches and serves its webhook; a killed
//! leader is replaced within the lease duration (and not before its renew deadline has
//! passed), a stopped one at once.

use std::{
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use k8s_openapi::api::coordination::v1::Lease;
use kube::{
    Api,
    api::{Patch, PatchParams},
};
use serde_json::json;

use crate::harness::{
    OPERATOR_LEASE, OPERATOR_NAMESPACE, TestNamespace, client, free_port, install_crds, operator_binary,
    operator_config_text, reap_with_this_process, wait_for, work_dir,
};

const LEASE: &str = "flink-operator-leader-test";
/// The Apache operator's defaults, which are ours: what users get.
const LEASE_DURATION: Duration = Duration::from_secs(15);
const RENEW_DEADLINE: Duration = Duration::from_secs(10);
const RETRY_PERIOD: Duration = Duration::from_secs(2);

pub struct Replica {
    pub name: &'static str,
    probe_port: u16,
    log: PathBuf,
    process: Child,
}

impl Replica {
    pub fn start(name: &'static str, namespace: &str, config: &Path) -> Self {
        Self::start_with(
            name,
            namespace,
            config,
            &crate::harness::control_plane().kubeconfig,
        )
    }

    /// [`Replica::start`] reaching the API server through `kubeconfig`.
    pub fn start_with(name: &'static str, namespace: &str, config: &Path, kubeconfig: &Path) -> Self {
        Self::spawn(name, Some(namespace), config, kubeconfig)
    }

    /// A replica that watches the namespaces its configuration file names.
    pub fn start_watching_as_configured(name: &'static str, config: &Path) -> Self {
        Self::spawn(name, None, config, &crate::harness::control_plane().kubeconfig)
    }

    /// How the process ended, once it has.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.process.try_wait().unwrap()
    }

    fn spawn(name: &'static str, namespace: Option<&str>, config: &Path, kubeconfig: &Path) -> Self {
        let dir = work_dir().join(format!("leader-election-{name}"));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("operator.log");
        let probe_port = free_port();
        let output = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .unwrap();
        let mut command = Command::new(operator_binary());
        command
            .args(["run", "--components", "all", "--bind-address", "127.0.0.1"])
            .args(["--webhook-port", &free_port().to_string()])
            .args(["--probe-port", &probe_port.to_string()])
            .args(["--operator-namespace", OPERATOR_NAMESPACE])
            .arg("--self-signed-certs")
            .arg(dir.join("certs"))
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .arg("--config")
            .arg(config)
            .env("POD_NAME", name)
            .env(
                "RUST_LOG",
                "info,flink_operator=debug,flink_operator_controller::caches=debug",
            )
            .stdout(Stdio::null())
            .stderr(output);
        // Only this test's namespace: the shared operator of this binary owns the rest.
        if let Some(namespace) = namespace {
            command.env("WATCH_NAMESPACES", namespace);
        }
        let process = command.spawn().unwrap();
        reap_with_this_process(process.id());
        Self {
            name,
            probe_port,
            log,
            process,
        }
    }

    pub fn get(&self, path: &str) -> Option<String> {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", self.probe_port)).ok()?;
        write!(stream, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").ok()?;
        let mut response = String::new();
        stream.read_to_string(&mut response).ok()?;
        Some(response)
    }

    /// `flink_operator_leader` as this replica reports it; `None` while it does not answer.
    pub fn leads(&self) -> Option<bool> {
        let metrics = self.get("/metrics")?;
        let value = metric_sum(&metrics, "flink_operator_leader ")?;
        Some(value == 1.0)
    }

    /// How many reconciles this replica has finished.
    pub fn reconciles(&self) -> f64 {
        self.get("/metrics")
            .and_then(|m| metric_sum(&m, "flink_operator_reconcile_duration_seconds_count"))
            .unwrap_or(0.0)
    }

    fn ready(&self) -> bool {
        self.get("/readyz")
            .is_some_and(|r| r.starts_with("HTTP/1.1 200") || r.starts_with("HTTP/1.0 200"))
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn kill(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }

    fn terminate(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.process.id().to_string()])
            .status();
        let _ = self.process.wait();
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The sum of the samples of the metric lines starting with `prefix`.
pub fn metric_sum(metrics: &str, prefix: &str) -> Option<f64> {
    let values: Vec<f64> = metrics
        .lines()
        .filter(|line| line.starts_with(prefix))
        .filter_map(|line| line.rsplit(' ').next()?.parse().ok())
        .collect();
    (!values.is_empty()).then(|| values.iter().sum())
}

async fn holder(leases: &Api<Lease>) -> Option<String> {
    leases
        .get_opt(LEASE)
        .await
        .ok()
        .flatten()
        .and_then(|l| l.spec?.holder_identity)
}

/// Waits until exactly one of `replicas` reports that it leads; returns its index.
async fn one_leader(replicas: &[&Replica], timeout: Duration) -> usize {
    let deadline = Instant::now() + timeout;
    loop {
        let leading: Vec<usize> = replicas
            .iter()
            .enumerate()
            .filter(|(_, r)| r.leads() == Some(true))
            .map(|(i, _)| i)
            .collect();
        assert!(
            leading.len() <= 1,
            "two replicas lead at once:\n{}",
            replicas
                .iter()
                .map(|r| r.log())
                .collect::<Vec<_>>()
                .join("\n----\n")
        );
        if let [leader] = leading[..] {
            return leader;
        }
        assert!(
            Instant::now() < deadline,
            "no replica leads after {timeout:?}:\n{}",
            replicas
                .iter()
                .map(|r| r.log())
                .collect::<Vec<_>>()
                .join("\n----\n")
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_replica_leads_a_killed_leader_is_replaced_within_the_lease_duration_and_a_stopped_one_at_once() {
    let client = client().await;
    install_crds(&client).await;
    let ns = TestNamespace::new(&client, "leader-election").await;
    crate::harness::ensure_operator_namespace(&client).await;
    let config_path = work_dir().join("leader-election-config.yaml");
    // The shared operator's configuration, with a Lease of this test's own.
    let config = operator_config_text().replace(
        &format!("lease-name: {OPERATOR_LEASE}"),
        &format!("lease-name: {LEASE}"),
    );
    assert!(config.contains(LEASE));
    std::fs::write(&config_path, config).unwrap();

    // Something to reconcile: a FlinkDeployment (no kubelet here, so its cluster never
    // starts, but every pass over it counts).
    let deployment = crate::harness::small_deployment("leader-election", json!({}));
    let deployments: Api<kube::core::DynamicObject> = Api::namespaced_with(
        client.clone(),
        &ns.name,
        &kube::discovery::ApiResource {
            group: "flink.apache.org".into(),
            version: "v1beta1".into(),
            api_version: "flink.apache.org/v1beta1".into(),
            kind: "FlinkDeployment".into(),
            plural: "flinkdeployments".into(),
        },
    );
    deployments
        .patch(
            "leader-election",
            &PatchParams::apply("flink-operator-tests"),
            &Patch::Apply(&deployment),
        )
        .await
        .unwrap();

    let leases: Api<Lease> = Api::namespaced(client.clone(), OPERATOR_NAMESPACE);
    let mut a = Replica::start("replica-a", &ns.name, &config_path);
    let mut b = Replica::start("replica-b", &ns.name, &config_path);
    let leader = one_leader(&[&a, &b], Duration::from_secs(60)).await;
    let (first, second) = if leader == 0 {
        (&mut a, &mut b)
    } else {
        (&mut b, &mut a)
    };
    let held = holder(&leases).await.unwrap();
    assert!(
        held.starts_with(first.name),
        "the Lease names {held}, not {}",
        first.name
    );

    // Only the leader acts; both serve their webhook and are ready.
    wait_for("the leader to reconcile", Duration::from_secs(30), || {
        let done = first.reconciles() > 0.0;
        async move { done.then_some(()) }
    })
    .await;
    wait_for("both replicas to be ready", Duration::from_secs(30), || {
        let ready = first.ready() && second.ready();
        async move { ready.then_some(()) }
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        second.reconciles(),
        0.0,
        "the follower reconciled:\n{}",
        second.log()
    );
    assert_eq!(second.leads(), Some(false));

    // SIGKILL: no release. The follower must wait out the lease duration from the last
    // renewal it saw (at most one retry period before the kill), and no longer than that
    // plus a retry period and the watch's latency.
    first.kill();
    let killed = Instant::now();
    one_leader(&[&*second], LEASE_DURATION + RETRY_PERIOD * 2).await;
    let takeover = killed.elapsed();
    println!("takeover after SIGKILL of the leader: {takeover:?}");
    assert!(
        takeover >= LEASE_DURATION - RETRY_PERIOD - Duration::from_millis(500),
        "the follower took over after {takeover:?}, before the killed leader's lease could have run out"
    );
    assert!(takeover >= RENEW_DEADLINE);
    let held = holder(&leases).await.unwrap();
    assert!(held.starts_with(second.name), "the Lease names {held}");
    wait_for("the new leader to reconcile", Duration::from_secs(30), || {
        let done = second.reconciles() > 0.0;
        async move { done.then_some(()) }
    })
    .await;

    // The killed replica comes back as a follower.
    let restarted = Replica::start(first.name, &ns.name, &config_path);
    wait_for(
        "the restarted replica to be ready",
        Duration::from_secs(30),
        || {
            let ready = restarted.ready();
            async move { ready.then_some(()) }
        },
    )
    .await;
    tokio::time::sleep(RETRY_PERIOD * 2).await;
    assert_eq!(restarted.leads(), Some(false), "{}", restarted.log());
    assert_eq!(restarted.reconciles(), 0.0);

    // SIGTERM: the leader stops its controllers, releases the Lease, and the other replica
    // takes it at once, without waiting out the lease duration.
    let stopped = Instant::now();
    second.terminate();
    one_leader(&[&restarted], RETRY_PERIOD * 2).await;
    let handover = stopped.elapsed();
    println!("takeover after SIGTERM of the leader: {handover:?}");
    assert!(second.log().contains("released the Lease"), "{}", second.log());
    assert!(holder(&leases).await.unwrap().starts_with(restarted.name));
    drop(restarted);
    leases.delete(LEASE, &Default::default()).await.ok();
}
