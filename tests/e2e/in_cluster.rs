//! The operator as a platform team installs it: `helm install` of the chart into the
//! cluster, two replicas of the operator's image (the local runtime runs the binary under
//! test for it) in their pods, with their service account's token and only the chart's
//! RBAC (Roles in the one watched namespace), the webhook called by the API server through
//! its Service, JobManagers reached at their Services' names. A savepoint upgrade with the
//! leader's pod deleted at once (as when its node is lost) is finished by the other replica.

use std::{
    collections::BTreeSet,
    time::{Duration, Instant, SystemTime},
};

use flink_operator_api::FlinkDeployment;
use k8s_openapi::api::{
    coordination::v1::Lease,
    core::v1::{Namespace, Pod},
};
use kube::{
    Api,
    api::{DeleteParams, ListParams, PostParams},
};
use serde_json::json;

use crate::{
    audit::{operator_requests_of, refusals},
    chart_rbac::{helm, install_chart},
    cluster_harness::{self, IN_CLUSTER_LABEL, TestNamespace, wait_for},
    flink_harness,
    harness::{self, LogsOnFailure},
    reconcile::{counted_to, counter_spec_with, counts_went_on},
};

const RELEASE: &str = "in-cluster";
/// The chart's full name for this release (`<release>-flink-operator`).
const FULLNAME: &str = "in-cluster-flink-operator";
const RELEASE_NAMESPACE: &str = "flink-operator-in-cluster";
const LEASE_DURATION: Duration = Duration::from_secs(15);

/// The operator pods of the release, by name.
async fn operator_pods(pods: &Api<Pod>) -> Vec<Pod> {
    pods.list(&ListParams::default().labels(&format!("app.kubernetes.io/instance={RELEASE}")))
        .await
        .map(|l| l.items)
        .unwrap_or_default()
}

/// GETs `path` from a pod's probe port (8080), which the host reaches at the pod's address.
fn probe(pod: &Pod, path: &str) -> Option<String> {
    use std::io::{Read, Write};
    let ip = pod.status.as_ref()?.pod_ip.clone()?;
    let mut stream = std::net::TcpStream::connect((ip.as_str(), 8080)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: operator\r\n\r\n").ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    Some(response)
}

fn metric(metrics: &str, prefix: &str) -> f64 {
    metrics
        .lines()
        .filter(|l| l.starts_with(prefix))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

async fn holder(leases: &Api<Lease>) -> Option<String> {
    leases
        .get(&format!("{FULLNAME}-leader"))
        .await
        .ok()?
        .spec?
        .holder_identity
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chart_installs_an_operator_in_the_cluster_that_runs_jobs_under_its_rbac_and_survives_losing_its_leader()
 {
    let client = harness::client().await;
    // The shared operator registers the CRDs and starts the runtime's world; it leaves the
    // labelled resources to the operator installed here.
    crate::operator::shared(&client).await;
    let _turn = cluster_harness::beside_others().await;
    harness::runtime();
    let ns = TestNamespace::new(&client, "in-cluster").await;
    let _logs = LogsOnFailure(ns.name.clone());
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let _ = namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": RELEASE_NAMESPACE}})).unwrap(),
        )
        .await;
    let _release_logs = LogsOnFailure(RELEASE_NAMESPACE.to_owned());

    // What a platform team writes: one watched namespace, the label its resources carry, and
    // the JVM settings of small nodes (as the shared operator has them).
    let values = json!({
        "watchNamespaces": [ns.name],
        "operatorConfiguration": {
            "kubernetes.operator.label.selector": IN_CLUSTER_LABEL,
            "env.java.opts.all": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1",
        },
    });
    let installed = Instant::now();
    install_chart(RELEASE, RELEASE_NAMESPACE, &values);
    eprintln!("helm install --wait: {:?}", installed.elapsed());

    let pods: Api<Pod> = Api::namespaced(client.clone(), RELEASE_NAMESPACE);
    let leases: Api<Lease> = Api::namespaced(client.clone(), RELEASE_NAMESPACE);
    let replicas = operator_pods(&pods).await;
    assert_eq!(replicas.len(), 2, "the chart runs two replicas");
    assert!(replicas.iter().all(harness::is_ready), "both replicas ready");
    let leader = wait_for("a leader", Duration::from_secs(60), || async {
        holder(&leases).await
    })
    .await;
    let names: BTreeSet<String> = replicas.iter().filter_map(|p| p.metadata.name.clone()).collect();
    assert!(
        names.contains(&leader),
        "the Lease names {leader}, not one of {names:?}"
    );

    // The webhook, called by the API server through the Service: a spec it refuses is
    // refused, and the replicas counted the reviews.
    let api: Api<FlinkDeployment> = Api::namespaced(client.clone(), &ns.name);
    let state = harness::state_dir(&ns.name);
    let version = flink_harness::versions().last().unwrap().clone();
    let spec = counter_spec_with(&version, &state, "savepoint", &[]).await;
    let labelled = |spec: &serde_json::Value| -> FlinkDeployment {
        serde_json::from_value(json!({
            "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
            "metadata": {"name": "counter", "labels": {IN_CLUSTER_LABEL: "true"}},
            "spec": spec,
        }))
        .unwrap()
    };
    let mut bad = spec.clone();
    bad["job"]["parallelism"] = json!(0);
    let refused = api
        .create(&PostParams::default(), &labelled(&bad))
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("parallelism"), "{refused}");
    let reviews: f64 = operator_pods(&pods)
        .await
        .iter()
        .filter_map(|p| probe(p, "/metrics"))
        .map(|m| metric(&m, "flink_operator_admission_requests_total"))
        .sum();
    assert!(
        reviews >= 1.0,
        "the operator in the cluster answered no admission review"
    );

    // A job, run by the operator in the cluster.
    api.create(&PostParams::default(), &labelled(&spec))
        .await
        .unwrap();
    let counts = state.join("counts");
    let first = harness::running_job(&api, "counter", None).await;
    let first_job = first.status.unwrap().job_status.unwrap().job_id;
    let before = counted_to(&counts, 50).await;

    // A savepoint upgrade; its leader's pod deleted at once once the stop is triggered.
    api.patch(
        "counter",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(json!({"spec": {"job": {"parallelism": 1}}})),
    )
    .await
    .unwrap();
    wait_for(
        "the stop's trigger id recorded",
        Duration::from_secs(60),
        || async {
            api.get("counter")
                .await
                .ok()?
                .status?
                .job_status?
                .savepoint_info?
                .trigger_id
        },
    )
    .await;
    let leader = holder(&leases).await.unwrap();
    let lost = Instant::now();
    pods.delete(&leader, &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    let next = wait_for("another replica to lead", LEASE_DURATION * 2, || async {
        holder(&leases).await.filter(|h| *h != leader)
    })
    .await;
    let takeover = lost.elapsed();
    eprintln!("in the cluster: leader pod {leader} deleted; {next} leads after {takeover:?}");
    assert!(
        takeover <= LEASE_DURATION + Duration::from_secs(3),
        "{takeover:?}"
    );

    let upgraded = harness::running_job(&api, "counter", first_job.as_deref()).await;
    let since = SystemTime::now();
    let job = upgraded.status.unwrap().job_status.unwrap();
    let savepoint = job.upgrade_savepoint_path.clone().unwrap();
    let taken: Vec<String> = std::fs::read_dir(state.join("savepoints"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(taken.len(), 1, "savepoints on disk: {taken:?}");
    assert!(savepoint.ends_with(&taken[0]), "{savepoint} is not {taken:?}");
    counts_went_on(&counts, &before, since, 0).await;

    // Only the chart's rights, only where the chart grants them: never refused, and nothing
    // outside the watched namespace and its own.
    let user = format!("system:serviceaccount:{RELEASE_NAMESPACE}:{FULLNAME}");
    let requests = operator_requests_of(&cluster_harness::audit_log(), &user);
    assert!(!requests.is_empty(), "no request of {user} in the audit log");
    let refused = refusals(&requests);
    assert!(
        refused.is_empty(),
        "the API server refused the operator in the cluster:\n{}",
        refused
            .iter()
            .map(|r| format!("{} {}", r.what, r.uri))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let elsewhere: Vec<String> = requests
        .iter()
        .filter(|r| {
            r.namespace
                .as_deref()
                .is_some_and(|n| n != ns.name && n != RELEASE_NAMESPACE)
        })
        .map(|r| format!("{} {}", r.what, r.uri))
        .collect();
    assert!(
        elsewhere.is_empty(),
        "requests outside its namespaces: {elsewhere:?}"
    );
    eprintln!(
        "in the cluster: {} requests of the operator, none refused",
        requests.len()
    );

    api.delete("counter", &DeleteParams::default()).await.unwrap();
    wait_for("the FlinkDeployment gone", Duration::from_secs(120), || async {
        api.get_opt("counter").await.ok()?.is_none().then_some(())
    })
    .await;
    helm(&["uninstall", RELEASE, "--namespace", RELEASE_NAMESPACE, "--wait"]);
    let _ = namespaces
        .delete(RELEASE_NAMESPACE, &DeleteParams::default())
        .await;
}
