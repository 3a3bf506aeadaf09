//! Cold caches never look like missing clusters. An operator starts while the API server
//! is slow to list Deployments (here: a proxy between them holds every Deployment LIST for
//! [`LIST_DELAY`]), beside a deployed application and a deployed session cluster whose
//! status says their JobManagers are READY. Its loops wait until every cache has listed:
//! it writes no Deployment (no DELETE, no re-apply), records no recovery, and the
//! JobManager Deployments keep their UIDs and generations.

use std::time::{Duration, Instant};

use flink_operator_api::{
    FlinkDeployment, FlinkDeploymentSpec, ReconciledSpec, validation::ValidationContext,
};
use flink_operator_controller::{events::Reason, resources::cluster, resources::flink_config};
use k8s_openapi::api::{apps::v1::Deployment, core::v1::Event};
use kube::{
    Api, Client, ResourceExt,
    api::{ListParams, Patch, PatchParams},
};
use serde_json::json;

use crate::{
    api_proxy::{ApiProxy, Hold},
    harness::{IN_CLUSTER_LABEL, TestNamespace, client, install_crds, operator_config_text, work_dir},
    leader_election::Replica,
};

const MINE: &str = "cold-caches";
/// Longer than a reconcile takes, so that loops started before the list would act first.
const LIST_DELAY: Duration = Duration::from_secs(6);

fn deployment(name: &str, namespace: &str, job: bool) -> FlinkDeployment {
    let mut spec = json!({
        "image": "flink:1.20", "flinkVersion": "v1_20", "serviceAccount": "flink",
        "jobManager": {"resource": {"memory": "1024m", "cpu": 0.5}},
        "taskManager": {"resource": {"memory": "1024m", "cpu": 0.5}},
    });
    if job {
        spec["job"] = json!({"jarURI": "local:///opt/flink/usrlib/job.jar", "parallelism": 1, "upgradeMode": "stateless"});
    }
    serde_json::from_value(json!({
        "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
        "metadata": {"name": name, "namespace": namespace, "labels": {IN_CLUSTER_LABEL: MINE}},
        "spec": spec,
    }))
    .unwrap()
}

/// Creates `fd` deployed as the operator would have left it: its JobManager Deployment
/// built and applied, its status READY and STABLE with the spec recorded.
async fn deployed(client: &Client, fd: &FlinkDeployment) -> Deployment {
    let namespace = fd.namespace().unwrap();
    let name = fd.name_any();
    let params = PatchParams::apply("flink-operator-tests");
    let api: Api<FlinkDeployment> = Api::namespaced(client.clone(), &namespace);
    let created = api.patch(&name, &params, &Patch::Apply(fd)).await.unwrap();
    let effective = ValidationContext::default().effective_config(&namespace, fd.spec.flink_version, None);
    let config =
        flink_config::build(&created, &effective, &flink_config::DeployParameters::default()).unwrap();
    let objects = cluster::build(
        &created,
        &config,
        &cluster::BuildOptions::from_effective(&effective),
        None,
    )
    .unwrap();
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &namespace);
    let jm = deployments
        .patch(&name, &params, &Patch::Apply(&objects.job_manager))
        .await
        .unwrap();
    let spec: &FlinkDeploymentSpec = &created.spec;
    let recorded = ReconciledSpec::new(spec.clone(), false).encode().unwrap();
    let mut status = json!({
        "jobManagerDeploymentStatus": "READY",
        "lifecycleState": "STABLE",
        "observedGeneration": created.metadata.generation,
        "reconciliationStatus": {
            "state": "DEPLOYED",
            "lastReconciledSpec": recorded,
            "lastStableSpec": recorded,
            "reconciliationTimestamp": 1_700_000_000_000_i64,
        },
    });
    if spec.job.is_some() {
        status["jobStatus"] = json!({"state": "RUNNING", "jobId": "0123456789abcdef0123456789abcdef",
                                     "jobName": name, "startTime": "1700000000000"});
    }
    api.patch_status(
        &name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": status})),
    )
    .await
    .unwrap();
    jm
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_starting_on_a_slow_deployment_list_leaves_deployed_clusters_alone() {
    let client = client().await;
    install_crds(&client).await;
    let ns = TestNamespace::new(&client, "cold-caches").await;
    let app = deployed(&client, &deployment("app", &ns.name, true)).await;
    let session = deployed(&client, &deployment("session", &ns.name, false)).await;

    // Deployment lists held back; their watches, and everything else, pass.
    let proxy = ApiProxy::start(client.clone(), |method, path| {
        let resource = path.split('?').next().unwrap_or_default();
        let watch = path.contains("watch=true") || path.contains("watch=1");
        if method == "GET"
            && resource.starts_with("/apis/apps/v1/")
            && resource.ends_with("/deployments")
            && !watch
        {
            Hold::Delay(LIST_DELAY)
        } else {
            Hold::Pass
        }
    })
    .await;
    let dir = work_dir().join("cold-caches");
    let kubeconfig = proxy.kubeconfig(&dir);
    let config = dir.join("config.yaml");
    let text = operator_config_text()
        .replace(
            "kubernetes.operator.leader-election.enabled: true",
            "kubernetes.operator.leader-election.enabled: false",
        )
        .replace(
            &format!("kubernetes.operator.label.selector: \"!{IN_CLUSTER_LABEL}\""),
            &format!("kubernetes.operator.label.selector: {IN_CLUSTER_LABEL}={MINE}"),
        );
    assert!(text.contains(&format!("{IN_CLUSTER_LABEL}={MINE}")));
    std::fs::write(&config, text).unwrap();
    let started = Instant::now();
    let replica = Replica::start_with("cold-caches", &ns.name, &config, &kubeconfig);

    // Both resources reconciled a few times, the first after the delayed list.
    let deadline = Instant::now() + LIST_DELAY + Duration::from_secs(40);
    while replica.reconciles() < 4.0 {
        assert!(Instant::now() < deadline, "not reconciled:\n{}", replica.log());
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let reconciled_after = started.elapsed();
    tokio::time::sleep(Duration::from_secs(3)).await;

    let seen = proxy.seen();
    let listed = seen
        .iter()
        .any(|s| s.method == "GET" && s.resource_path().ends_with("/deployments") && !s.is_watch());
    assert!(listed, "no Deployment list went through the proxy: {seen:?}");
    let writes: Vec<_> = seen
        .iter()
        .filter(|s| {
            s.is_write() && s.resource_path().starts_with("/apis/apps/v1/") && s.path.contains("/deployments")
        })
        .map(|s| format!("{} {}", s.method, s.path))
        .collect();
    assert!(
        writes.is_empty(),
        "Deployments written by an operator that saw them missing: {writes:?}\n{}",
        replica.log()
    );
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns.name);
    for before in [&app, &session] {
        let now = deployments.get(&before.name_any()).await.unwrap();
        assert_eq!(now.uid(), before.uid(), "{} was replaced", before.name_any());
        assert_eq!(
            now.metadata.generation,
            before.metadata.generation,
            "{} was changed",
            before.name_any()
        );
    }
    let events: Api<Event> = Api::namespaced(client.clone(), &ns.name);
    let recoveries: Vec<String> = events
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some(Reason::RecoverDeployment.as_str()))
        .filter_map(|e| e.message)
        .collect();
    assert!(recoveries.is_empty(), "recovered: {recoveries:?}");
    eprintln!(
        "MEASURED first reconciles {:.1} s after start with Deployment lists held {} s; {} requests through the proxy, none writing a Deployment",
        reconciled_after.as_secs_f64(),
        LIST_DELAY.as_secs(),
        seen.len()
    );
}
