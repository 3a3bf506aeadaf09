//! The objects the operator builds for a FlinkDeployment (`controller::resources`) make
//! real, working Flink clusters: created through the API server in the order a reconciler
//! creates them, run by the local runtime, and answering with the job RUNNING.

use std::{collections::BTreeMap, time::Duration};

use flink_operator_api::{FlinkConfiguration, FlinkDeployment, validation::ValidationContext};
use flink_operator_controller::{
    flink::{JobId, RunJar},
    resources::{
        cluster,
        flink_config::{self, DeployParameters},
    },
};
use k8s_openapi::api::{
    apps::v1::Deployment,
    core::v1::{ConfigMap, Service},
};
use kube::{Api, Client, api::PostParams};
use serde_json::json;

use crate::{
    cluster_harness::{self, TestNamespace, wait_for},
    flink_harness,
    harness::{self, LogsOnFailure, rest_address, rest_client, wait_for_running_job},
    objects,
};

/// A FlinkDeployment of `spec` with the tests' base configuration.
fn flink_deployment(namespace: &str, name: &str, mut spec: serde_json::Value) -> FlinkDeployment {
    spec["flinkConfiguration"] = json!(objects::base_config().into_iter().collect::<BTreeMap<_, _>>());
    serde_json::from_value(json!({
        "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
        "metadata": {"name": name, "namespace": namespace, "generation": 1},
        "spec": spec,
    }))
    .unwrap()
}

/// Builds the cluster and creates it: the JobManager Deployment first, then what it owns.
/// Its configuration is what the operator would run it with: the operator's configuration
/// of these tests (with its overlays for the namespace and the Flink version), then the
/// spec's own.
async fn deploy(client: &Client, deployment: &FlinkDeployment, job_id: Option<&JobId>) {
    let namespace = deployment.metadata.namespace.clone().unwrap();
    let operator: FlinkConfiguration =
        serde_yaml::from_str(&cluster_harness::operator_config_text()).unwrap();
    let effective = ValidationContext::new(operator.flattened()).effective_config(
        &namespace,
        deployment.spec.flink_version,
        deployment.spec.flink_configuration.as_ref(),
    );
    let deploy = DeployParameters {
        job_id: job_id.map(|j| j.as_str().to_owned()),
        ..DeployParameters::default()
    };
    let config = flink_config::build(deployment, &effective, &deploy).unwrap();
    let built = cluster::build(deployment, &config, &cluster::BuildOptions::default(), None).unwrap();
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &namespace);
    let pp = PostParams::default();
    let jm = deployments.create(&pp, &built.job_manager).await.unwrap();
    let owned = cluster::build(
        deployment,
        &config,
        &cluster::BuildOptions::default(),
        jm.metadata.uid.as_deref(),
    )
    .unwrap();
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
    for cm in &owned.config_maps {
        config_maps.create(&pp, cm).await.unwrap();
    }
    let services: Api<Service> = Api::namespaced(client.clone(), &namespace);
    for service in &owned.services {
        services.create(&pp, service).await.unwrap();
    }
    if let Some(tm) = &owned.task_manager {
        deployments.create(&pp, tm).await.unwrap();
    }
}

fn jar_uri(version: &str) -> String {
    let jar = flink_harness::job_jar(version);
    format!(
        "local:///opt/flink/usrlib/{}",
        jar.file_name().unwrap().to_string_lossy()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_built_native_application_runs_its_job_on_each_flink_version() {
    let _turn = cluster_harness::beside_others().await;
    let client = harness::client().await;
    for version in flink_harness::versions() {
        let ns = TestNamespace::new(&client, "built-native-app").await;
        let _logs = LogsOnFailure(ns.name.clone());
        objects::create_all(&client, &objects::flink_service_account(&ns.name)).await;
        let dotted: Vec<&str> = version.split('.').take(2).collect();
        let deployment = flink_deployment(
            &ns.name,
            "counter",
            json!({
                "image": objects::image(&version), "flinkVersion": format!("v{}", dotted.join("_")),
                "serviceAccount": "flink",
                "jobManager": {"resource": {"memory": "768m", "cpu": 0.5}},
                "taskManager": {"resource": {"memory": "1g", "cpu": 0.5}},
                "job": {"jarURI": jar_uri(&version), "entryClass": flink_harness::JOB_CLASS,
                        "args": ["--rate", "20", "--keys", "4"], "parallelism": 2, "upgradeMode": "stateless"},
            }),
        );
        let job = JobId::random();
        deploy(&client, &deployment, Some(&job)).await;
        let rest = rest_client(&rest_address(&client, &ns.name, "counter").await);
        wait_for_running_job(&rest, &job).await;
        // The JobManager created its TaskManager from the configuration the operator wrote.
        harness::wait_for_ready_pods(&client, &ns.name, "app=counter,component=taskmanager", 1).await;
        let overview = rest.cluster_overview().await.unwrap();
        assert_eq!(overview.flink_version.as_deref(), Some(version.as_str()));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_built_standalone_session_runs_a_submitted_job() {
    let _turn = cluster_harness::beside_others().await;
    let client = harness::client().await;
    let ns = TestNamespace::new(&client, "built-standalone").await;
    let _logs = LogsOnFailure(ns.name.clone());
    let version = flink_harness::versions().last().unwrap().clone();
    let dotted: Vec<&str> = version.split('.').take(2).collect();
    let deployment = flink_deployment(
        &ns.name,
        "session",
        json!({
            "image": objects::image(&version), "flinkVersion": format!("v{}", dotted.join("_")),
            "mode": "standalone",
            "jobManager": {"resource": {"memory": "768m", "cpu": 0.5}},
            "taskManager": {"resource": {"memory": "1g", "cpu": 0.5}, "replicas": 1},
        }),
    );
    deploy(&client, &deployment, None).await;
    let rest = rest_client(&rest_address(&client, &ns.name, "session").await);
    let jar = tokio::task::spawn_blocking({
        let version = version.clone();
        move || flink_harness::job_jar(&version)
    })
    .await
    .unwrap();
    let jar_id = wait_for("the jar upload", Duration::from_secs(120), || async {
        rest.upload_jar(&jar).await.ok()
    })
    .await;
    let run = RunJar {
        args: ["--rate", "20"].map(str::to_owned).to_vec(),
        parallelism: Some(2),
        ..RunJar::default()
    };
    let job = rest.run_jar(&jar_id, &run).await.unwrap();
    wait_for_running_job(&rest, &job).await;
    harness::wait_for_ready_pods(&client, &ns.name, "app=session", 2).await;
}
