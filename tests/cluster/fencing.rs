//! Fencing: a leader whose Lease renewals stop getting through (here a proxy between it and
//! the API server holds every Lease request from some instant on, while everything else
//! passes) keeps acting only until the renew deadline of its last renewal that succeeded,
//! and issues no Kubernetes write after it, though resources keep asking for work. Another
//! replica may take the Lease once it expires; by then this one is silent.

use std::time::{Duration, Instant};

use kube::api::{Patch, PatchParams};
use serde_json::json;

use crate::{
    api_proxy::{ApiProxy, Hold},
    harness::{
        IN_CLUSTER_LABEL, OPERATOR_LEASE, TestNamespace, client, ensure_operator_namespace, install_crds,
        operator_config_text, small_deployment, work_dir,
    },
    leader_election::Replica,
};

const MINE: &str = "fencing";
const LEASE: &str = "flink-operator-fencing-test";
/// The chart's (and the Apache operator's) renew deadline, which this test keeps.
const RENEW_DEADLINE: Duration = Duration::from_secs(10);
/// Time for a write that left before the deadline to reach the proxy.
const IN_FLIGHT: Duration = Duration::from_millis(300);

fn is_lease(path: &str) -> bool {
    path.starts_with("/apis/coordination.k8s.io/")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_that_cannot_renew_writes_nothing_after_its_renew_deadline() {
    let client = client().await;
    install_crds(&client).await;
    ensure_operator_namespace(&client).await;
    let ns = TestNamespace::new(&client, "fencing").await;
    let api = crate::label_selector::flink_deployments(&client, &ns.name);
    let create = |name: String| {
        let api = api.clone();
        async move {
            let fd = small_deployment(&name, json!({IN_CLUSTER_LABEL: MINE}));
            api.patch(
                &name,
                &PatchParams::apply("flink-operator-tests"),
                &Patch::Apply(&fd),
            )
            .await
            .unwrap();
        }
    };

    let proxy = ApiProxy::start(client.clone(), |_, _| Hold::Pass).await;
    let dir = work_dir().join("fencing");
    let kubeconfig = proxy.kubeconfig(&dir);
    let config = dir.join("config.yaml");
    let text = operator_config_text()
        .replace(
            &format!("kubernetes.operator.leader-election.lease-name: {OPERATOR_LEASE}"),
            &format!("kubernetes.operator.leader-election.lease-name: {LEASE}"),
        )
        .replace(
            &format!("kubernetes.operator.label.selector: \"!{IN_CLUSTER_LABEL}\""),
            &format!("kubernetes.operator.label.selector: {IN_CLUSTER_LABEL}={MINE}"),
        );
    assert!(text.contains(LEASE) && text.contains(&format!("{IN_CLUSTER_LABEL}={MINE}")));
    std::fs::write(&config, text).unwrap();
    let replica = Replica::start_with("fencing", &ns.name, &config, &kubeconfig);

    let deadline = Instant::now() + Duration::from_secs(60);
    while replica.leads() != Some(true) {
        assert!(Instant::now() < deadline, "never led:\n{}", replica.log());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // It acts while it leads.
    create("before".to_owned()).await;
    let writes_to = |name: &str| {
        let path = format!("/flinkdeployments/{name}");
        proxy
            .seen()
            .into_iter()
            .filter(|s| s.is_write() && s.resource_path().contains(&path))
            .count()
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while writes_to("before") == 0 {
        assert!(
            Instant::now() < deadline,
            "the leader wrote nothing:\n{}",
            replica.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // From now on no renewal gets through; the last one that did was sent before this.
    proxy.set_rule(|_, path| if is_lease(path) { Hold::Stall } else { Hold::Pass });
    let cut = Instant::now();
    let fenced_by = cut + RENEW_DEADLINE + IN_FLIGHT;
    // Resources keep asking for work, past the deadline.
    let mut created = 0;
    while Instant::now() < fenced_by + Duration::from_secs(4) {
        create(format!("during-{created}")).await;
        created += 1;
        tokio::time::sleep(Duration::from_millis(700)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;

    let seen = proxy.seen();
    let late: Vec<String> = seen
        .iter()
        .filter(|s| s.at > fenced_by && s.is_write() && !is_lease(&s.path))
        .map(|s| {
            format!(
                "{:.1} s after the cut: {} {}",
                (s.at - cut).as_secs_f64(),
                s.method,
                s.path
            )
        })
        .collect();
    let acted: Vec<f64> = seen
        .iter()
        .filter(|s| s.at > cut && s.at <= fenced_by && s.is_write() && !is_lease(&s.path))
        .map(|s| (s.at - cut).as_secs_f64())
        .collect();
    assert!(
        late.is_empty(),
        "writes after the renew deadline of the last renewal: {late:?}\n{}",
        replica.log()
    );
    eprintln!(
        "MEASURED {created} resources created over {:.1} s from the cut; {} writes before the deadline (the last {:.1} s after the cut), none after it",
        (fenced_by + Duration::from_secs(4) - cut).as_secs_f64(),
        acted.len(),
        acted.iter().copied().fold(0.0, f64::max)
    );
    assert_eq!(replica.leads(), Some(false), "still leading:\n{}", replica.log());
}
