//! Standalone clusters (`spec.mode: standalone`) through the operator's reconcile loop: an
//! application cluster of the counting job and a session cluster running it as a
//! FlinkSessionJob, each deployed, upgraded in savepoint mode (the new job restores the
//! savepoint the upgrade took, and its counts go on) and deleted with all its objects.
//! The specs are written as a job owner writes them: the native tests' specs with
//! `mode: standalone` added.

use std::time::{Duration, SystemTime};

use flink_operator_api::{FlinkDeployment, FlinkJobState, FlinkSessionJob};
use flink_operator_controller::flink::{FlinkRestClient, JobId};
use k8s_openapi::api::{
    apps::v1::Deployment,
    core::v1::{ConfigMap, Pod, Service},
};
use kube::{
    Api, Client,
    api::{DeleteParams, ListParams, Patch, PatchParams, PostParams},
};
use serde_json::json;

use crate::{
    cluster_harness::{self, LOCAL_JARS_NAMESPACE, TestNamespace, wait_for},
    flink_harness,
    harness::{self, LogsOnFailure},
    objects,
    reconcile::{OperatorLogOnFailure, counted_to, counter_spec, counts_went_on},
    session_job::LocalJarsNamespace,
};

/// Waits until the FlinkDeployment `name` is STABLE with its job RUNNING under another id
/// than `previous` (a session cluster, without a job: STABLE with its JobManager READY).
async fn stable(api: &Api<FlinkDeployment>, name: &str, previous: Option<&str>) -> FlinkDeployment {
    let deadline = std::time::Instant::now() + Duration::from_secs(240);
    loop {
        let fd = api.get(name).await.ok();
        let status = fd.as_ref().and_then(|fd| fd.status.clone());
        let ok = status.as_ref().is_some_and(|status| {
            let stable = status.lifecycle_state.map(|l| l.as_str()) == Some("STABLE");
            let job_ok = match fd.as_ref().and_then(|fd| fd.spec.job.as_ref()) {
                Some(_) => {
                    let job = status.job_status.clone().unwrap_or_default();
                    job.state == Some(FlinkJobState::Running) && job.job_id.as_deref() != previous
                }
                None => status.job_manager_deployment_status.map(|s| s.as_str()) == Some("READY"),
            };
            stable && job_ok
        });
        if ok {
            return fd.unwrap();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {name} STABLE; status: {}",
            serde_json::to_string_pretty(&status).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Checks that the standalone cluster `id` is made of what the Apache operator's standalone
/// mode makes: a JobManager and a TaskManager Deployment (running `replicas` TaskManagers),
/// the internal and the REST Service, and its configuration; the JobManager runs the image's
/// `entry` (`standalone-job` or `jobmanager`).
async fn check_standalone_objects(
    client: &Client,
    namespace: &str,
    id: &str,
    entry: &str,
    tm_replicas: usize,
) {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    let jm = deployments.get(id).await.unwrap();
    let args = jm.spec.template.spec.unwrap().containers[0]
        .args
        .clone()
        .unwrap_or_default();
    assert_eq!(args.first().map(String::as_str), Some(entry), "{args:?}");
    deployments.get(&format!("{id}-taskmanager")).await.unwrap();
    let services: Api<Service> = Api::namespaced(client.clone(), namespace);
    services.get(id).await.unwrap();
    services.get(&format!("{id}-rest")).await.unwrap();
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    config_maps.get(&format!("flink-config-{id}")).await.unwrap();
    harness::wait_for_ready_pods(
        client,
        namespace,
        &format!("app={id},component=taskmanager"),
        tm_replicas,
    )
    .await;
    harness::wait_for_ready_pods(client, namespace, &format!("app={id},component=jobmanager"), 1).await;
}

/// Deletes the FlinkDeployment `name` and waits until it and every object of its cluster
/// (Deployments, pods, Services, ConfigMaps labelled `app=<name>`) are gone.
async fn delete_cluster_and_check_gone(client: &Client, namespace: &str, name: &str) {
    let api: Api<FlinkDeployment> = Api::namespaced(client.clone(), namespace);
    api.delete(name, &DeleteParams::default()).await.unwrap();
    let selector = format!("app={name}");
    let params = ListParams::default().labels(&selector);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let services: Api<Service> = Api::namespaced(client.clone(), namespace);
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    wait_for(
        &format!("{namespace}/{name} and all its objects gone"),
        Duration::from_secs(180),
        || async {
            let gone = api.get_opt(name).await.ok()?.is_none()
                && deployments.list(&params).await.ok()?.items.is_empty()
                && pods.list(&params).await.ok()?.items.is_empty()
                && services.list(&params).await.ok()?.items.is_empty()
                && config_maps.list(&params).await.ok()?.items.is_empty();
            gone.then_some(())
        },
    )
    .await;
}

/// Waits until the job `job` restored `savepoint` (Flink's checkpoint statistics say so).
async fn check_restored(rest: &FlinkRestClient, job: &JobId, savepoint: &str) {
    let restored = harness::restored(rest, job).await;
    assert!(restored.is_savepoint, "{restored:?}");
    assert_eq!(restored.external_path.as_deref(), Some(savepoint));
}

/// Checks that every vertex of `job` runs with `parallelism`: the upgraded spec is the one
/// running.
async fn check_parallelism(url: &str, job: &JobId, parallelism: u64) {
    let (code, details) = flink_harness::get_json(url, &format!("/jobs/{job}"))
        .await
        .unwrap();
    assert_eq!(code, 200, "{details}");
    let vertices = details["vertices"].as_array().cloned().unwrap_or_default();
    assert!(!vertices.is_empty(), "{details}");
    for vertex in vertices {
        assert_eq!(vertex["parallelism"].as_u64(), Some(parallelism), "{vertex}");
    }
}

fn job_id_of(job_status: Option<&flink_operator_api::common::JobStatus>) -> JobId {
    JobId::from(job_status.and_then(|j| j.job_id.as_deref()).unwrap())
}

/// Also the test of `--flink-rest-endpoint service`, the operator's default in its chart: the
/// operator in its pod reaches the JobManager at `http://counter-rest.<namespace>:8081`,
/// resolved by the system resolver (the runtime's hosts file is the pod's /etc/hosts, as
/// cluster DNS answers in a cluster), for every REST call of the deployment, the
/// stop-with-savepoint and the observation of both jobs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standalone_application_is_deployed_upgraded_from_a_savepoint_and_deleted_by_an_operator_resolving_service_names()
 {
    let client = harness::client().await;
    crate::operator::shared(&client).await;
    let _turn = cluster_harness::beside_others().await;
    let _operator_log = OperatorLogOnFailure;
    let ns = TestNamespace::new(&client, "standalone-app").await;
    let _logs = LogsOnFailure(ns.name.clone());
    objects::create_all(&client, &objects::flink_service_account(&ns.name)).await;
    let version = flink_harness::versions().last().unwrap().clone();
    let state = harness::state_dir(&ns.name);
    let counts = state.join("counts");
    let mut spec = tokio::task::spawn_blocking({
        let (version, state) = (version.clone(), state.clone());
        move || counter_spec(&version, &state, "savepoint")
    })
    .await
    .unwrap();
    spec["mode"] = json!("standalone");
    let fd: FlinkDeployment = serde_json::from_value(json!({
        "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
        "metadata": {"name": "counter", "namespace": ns.name},
        "spec": spec,
    }))
    .unwrap();
    let api: Api<FlinkDeployment> = Api::namespaced(client.clone(), &ns.name);
    let started = std::time::Instant::now();
    api.create(&PostParams::default(), &fd).await.unwrap();

    let first = stable(&api, "counter", None).await;
    eprintln!("standalone application RUNNING after {:?}", started.elapsed());
    let first_job = first.status.unwrap().job_status.unwrap().job_id.unwrap();
    // The job's state came from its REST API, which the operator reached by the Service's
    // name: the name is in the hosts file the operator sees, not in the machine's.
    let name = format!("counter-rest.{}", ns.name);
    let seen = std::fs::read_to_string(format!(
        "/proc/{}/root/etc/hosts",
        crate::operator::operator_pid()
    ))
    .unwrap();
    assert!(
        seen.contains(&name),
        "{name} not in the operator's /etc/hosts:\n{seen}"
    );
    let machine = std::fs::read_to_string("/etc/hosts").unwrap();
    assert!(
        !machine.contains(&name),
        "the machine's /etc/hosts was changed:\n{machine}"
    );
    assert!(
        crate::operator::operator_log().contains(r#""rest_endpoints":"service""#),
        "the operator is not in service mode"
    );
    // Parallelism 2 on TaskManagers of 2 slots: one TaskManager.
    check_standalone_objects(&client, &ns.name, "counter", "standalone-job", 1).await;

    // Enough state that a job started from nothing could not be mistaken for a restored one.
    let before = counted_to(&counts, 50).await;
    let started = std::time::Instant::now();
    api.patch(
        "counter",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"job": {"parallelism": 1}}})),
    )
    .await
    .unwrap();
    let upgraded = stable(&api, "counter", Some(&first_job)).await;
    eprintln!("standalone savepoint upgrade done after {:?}", started.elapsed());
    let restarted_at = SystemTime::now();
    let status = upgraded.status.unwrap();
    let recorded: flink_operator_api::FlinkDeploymentSpec = status
        .reconciliation_status
        .as_ref()
        .unwrap()
        .last_reconciled_spec()
        .unwrap()
        .unwrap();
    assert_eq!(recorded.job.unwrap().parallelism, Some(1));
    let savepoint = status
        .job_status
        .as_ref()
        .unwrap()
        .upgrade_savepoint_path
        .clone()
        .unwrap();
    assert!(savepoint.contains("/opt/flink/state/savepoints/"), "{savepoint}");
    check_standalone_objects(&client, &ns.name, "counter", "standalone-job", 1).await;

    // The new job restored the savepoint the operator recorded, and counts on from it.
    let url = harness::rest_address(&client, &ns.name, "counter").await;
    let rest = harness::rest_client(&url);
    let job = job_id_of(status.job_status.as_ref());
    check_restored(&rest, &job, &savepoint).await;
    check_parallelism(&url, &job, 1).await;
    counts_went_on(&counts, &before, restarted_at, 0).await;

    delete_cluster_and_check_gone(&client, &ns.name, "counter").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standalone_session_runs_a_session_job_through_a_savepoint_upgrade_and_both_are_deleted() {
    let client = harness::client().await;
    crate::operator::shared(&client).await;
    let _turn = cluster_harness::beside_others().await;
    let _operator_log = OperatorLogOnFailure;
    // The namespace where the operator's configuration lets session jobs take file:// jars.
    let _ns = LocalJarsNamespace::new(&client).await;
    let namespace = LOCAL_JARS_NAMESPACE;
    let _logs = LogsOnFailure(namespace.to_owned());
    objects::create_all(&client, &objects::flink_service_account(namespace)).await;
    let version = flink_harness::versions().last().unwrap().clone();
    let jar = flink_harness::job_jar_async(&version).await;
    let state = harness::state_dir(namespace);
    let counts = state.join("counts-standalone");

    let mut spec = objects::stateful_cluster_spec(&version, &state);
    spec["mode"] = json!("standalone");
    let fd: FlinkDeployment = serde_json::from_value(json!({
        "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
        "metadata": {"name": "session", "namespace": namespace},
        "spec": spec,
    }))
    .unwrap();
    let deployments: Api<FlinkDeployment> = Api::namespaced(client.clone(), namespace);
    let started = std::time::Instant::now();
    deployments.create(&PostParams::default(), &fd).await.unwrap();
    stable(&deployments, "session", None).await;
    eprintln!("standalone session cluster STABLE after {:?}", started.elapsed());
    check_standalone_objects(&client, namespace, "session", "jobmanager", 1).await;

    let jobs: Api<FlinkSessionJob> = Api::namespaced(client.clone(), namespace);
    let sj: FlinkSessionJob = serde_json::from_value(json!({
        "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkSessionJob",
        "metadata": {"name": "counter", "namespace": namespace},
        "spec": {
            "deploymentName": "session",
            "job": {
                "jarURI": format!("file://{}", jar.display()),
                "entryClass": flink_harness::JOB_CLASS,
                "args": ["--rate", "20", "--keys", "4", "--out", "/opt/flink/state/counts-standalone"],
                "parallelism": 2,
                "upgradeMode": "savepoint",
            },
        },
    }))
    .unwrap();
    jobs.create(&PostParams::default(), &sj).await.unwrap();
    let running = |previous: Option<String>| {
        let jobs = jobs.clone();
        async move { harness::running_job(&jobs, "counter", previous.as_deref()).await }
    };
    let first = running(None).await;
    let first_job = job_id_of(first.status.as_ref().unwrap().job_status.as_ref());
    let before = counted_to(&counts, 50).await;

    let started = std::time::Instant::now();
    jobs.patch(
        "counter",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"job": {"parallelism": 1}}})),
    )
    .await
    .unwrap();
    let upgraded = running(Some(first_job.as_str().to_owned())).await;
    eprintln!("session job savepoint upgrade done after {:?}", started.elapsed());
    let restarted_at = SystemTime::now();
    let job_status = upgraded.status.as_ref().unwrap().job_status.clone().unwrap();
    let savepoint = job_status.upgrade_savepoint_path.clone().unwrap();
    assert!(savepoint.contains("/opt/flink/state/savepoints/"), "{savepoint}");
    let url = harness::rest_address(&client, namespace, "session").await;
    let rest = harness::rest_client(&url);
    let overview = rest.jobs_overview().await.unwrap();
    assert_eq!(
        overview.iter().find(|j| j.jid == first_job).map(|j| &j.state),
        Some(&FlinkJobState::Finished),
        "the old job stopped with the savepoint"
    );
    let upgraded_job = job_id_of(Some(&job_status));
    check_restored(&rest, &upgraded_job, &savepoint).await;
    check_parallelism(&url, &upgraded_job, 1).await;
    counts_went_on(&counts, &before, restarted_at, 0).await;

    // The session job first: its job is stopped, then the cluster and its objects go.
    jobs.delete("counter", &DeleteParams::default()).await.unwrap();
    wait_for(
        "the session job gone and its job ended",
        Duration::from_secs(120),
        || async {
            let gone = jobs.get_opt("counter").await.ok()?.is_none();
            let overview = rest.jobs_overview().await.ok()?;
            let state = overview
                .iter()
                .find(|j| j.jid == upgraded_job)
                .map(|j| j.state.clone());
            let ended = state.is_none_or(|s| matches!(s, FlinkJobState::Canceled | FlinkJobState::Finished));
            (gone && ended).then_some(())
        },
    )
    .await;
    delete_cluster_and_check_gone(&client, namespace, "session").await;
}
