//! Taking over from the Apache Flink Kubernetes Operator, as docs/migrating.md's runbook says:
//! a cluster as the Apache operator 1.10 leaves it, its CRDs replaced with
//! `flink-operator crd --apply`, this chart installed beside the kept `flink` ServiceAccount
//! and the old webhook configurations, and the running job taken over without a restart,
//! then upgraded by this operator from its high-availability metadata.
//!
//! A test binary of its own (`cargo test --test migration`): it needs a control plane whose
//! CRDs are the Apache operator's, which the `e2e` binary's shared control plane cannot have,
//! and one local runtime runs on a machine at a time (it starts once the `e2e` binary's has
//! stopped).
//!
//! What the Apache operator would have done is done with the parts it uses: its CRDs from its
//! release (`tests/tools/apache-operator-crds.sh`), its chart's objects as version 1.10.0
//! renders them, and the Flink cluster deployed by Flink's own native Kubernetes client
//! (`flink run-application --target kubernetes-application`, which is what the Apache
//! operator calls) with the configuration the Apache operator computes for the spec; its
//! status written as it writes it. The Apache operator itself does not run here: no build of
//! it can be fetched.

// Test code: a panic is a failing test with its reason.
#![allow(clippy::unwrap_used)]

mod apache;

use std::{
    collections::BTreeMap,
    process::Command,
    time::{Duration, Instant, SystemTime},
};

use flink_operator_api::{FlinkDeployment, FlinkJobState, FlinkSessionJob};
use flink_operator_controller::flink::JobId;
use flink_operator_test_support::{
    built_operator,
    chart_rbac::install_chart,
    cluster_harness::{control_plane, wait_for, wait_for_seeing},
    flink_harness,
    runtime_harness::{self as harness, LogsOnFailure, counted_to, counts_went_on},
};
use k8s_openapi::api::{
    admissionregistration::v1::{MutatingWebhookConfiguration, ValidatingWebhookConfiguration},
    apps::v1::Deployment,
    core::v1::{ConfigMap, Event, Namespace, Pod, ServiceAccount},
};
use kube::{
    Api, Client,
    api::{ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};

/// The namespace of the jobs, watched by the Apache operator and then by this one.
const JOBS: &str = "flink-jobs";
/// The Apache operator's release and namespace, as its docs install it.
const APACHE_NAMESPACE: &str = "flink-kubernetes-operator";
/// This operator's release and namespace.
const RELEASE: &str = "flink-operator";
const RELEASE_NAMESPACE: &str = "flink-operator";
const NAME: &str = "counter";
/// The session cluster and the job on it.
const SESSION: &str = "session";
const SESSION_JOB: &str = "session-counter";

/// The platform's log configuration of every Flink cluster: console only, each line marked.
const PLATFORM_LOG4J: &str = "\
rootLogger.level = INFO
rootLogger.appenderRef.console.ref = ConsoleAppender
appender.console.name = ConsoleAppender
appender.console.type = CONSOLE
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = platform-log %d{HH:mm:ss,SSS} %-5p %c - %m%n
";

/// Event reasons of this operator that mean a job was started, stopped or redeployed.
const RESTARTING: &[&str] = &[
    "Submit",
    "SpecChanged",
    "Cancelling",
    "Suspended",
    "RecoverDeployment",
    "Missing",
    "Rollback",
    "RestartFailedJob",
    "RestartUnhealthyJob",
];

/// The pods of cluster `name` by name, with their uids.
async fn cluster_pods(pods: &Api<Pod>, name: &str) -> BTreeMap<String, String> {
    pods.list(&ListParams::default().labels(&format!("app={name}")))
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .map(|p| (p.metadata.name.unwrap(), p.metadata.uid.unwrap()))
        .collect()
}

/// The Events about the resource `kind/name`: `<reason>: <message>`.
async fn event_reasons(events: &Api<Event>, kind: &str, name: &str) -> Vec<String> {
    events
        .list(
            &ListParams::default().fields(&format!("involvedObject.name={name},involvedObject.kind={kind}")),
        )
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|e| Some(format!("{}: {}", e.reason?, e.message.unwrap_or_default())))
        .collect()
}

/// The resources taken over, as stored: kind, name and their API.
fn resources(client: &Client) -> Vec<(&'static str, &'static str, Api<DynamicObject>)> {
    let api = |resource: ApiResource| Api::namespaced_with(client.clone(), JOBS, &resource);
    vec![
        (
            "FlinkDeployment",
            NAME,
            api(ApiResource::erase::<FlinkDeployment>(&())),
        ),
        (
            "FlinkDeployment",
            SESSION,
            api(ApiResource::erase::<FlinkDeployment>(&())),
        ),
        (
            "FlinkSessionJob",
            SESSION_JOB,
            api(ApiResource::erase::<FlinkSessionJob>(&())),
        ),
    ]
}

/// What each resource holds as stored: spec, labels, annotations, finalizers and status.
async fn stored_all(client: &Client) -> Vec<Value> {
    let mut all = Vec::new();
    for (_, name, api) in resources(client) {
        all.push(stored(
            &serde_json::to_value(api.get(name).await.unwrap()).unwrap(),
        ));
    }
    all
}

/// What the user wrote and the Apache operator stored, as JSON: the spec, labels,
/// annotations and finalizers, and the status.
fn stored(fd: &Value) -> Value {
    json!({
        "spec": fd["spec"],
        "labels": fd["metadata"]["labels"],
        "annotations": fd["metadata"]["annotations"],
        "finalizers": fd["metadata"]["finalizers"],
        "status": fd["status"],
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_the_apache_operator_runs_is_taken_over_without_a_restart_and_then_upgraded_from_its_state() {
    let client = harness::client().await;
    let _job_logs = LogsOnFailure(JOBS.to_owned());
    let _operator_logs = LogsOnFailure(RELEASE_NAMESPACE.to_owned());
    let version = flink_harness::versions()
        .into_iter()
        .find(|v| v.starts_with("1.20."))
        .expect("a Flink 1.20 among tests/flink/versions: the Apache operator 1.10 runs up to 1.20");

    // ---- The cluster as the Apache operator 1.10 left it, its operator scaled to zero.
    apache::install_crds(&client).await;
    for ns in [JOBS, APACHE_NAMESPACE, RELEASE_NAMESPACE] {
        let namespaces: Api<Namespace> = Api::all(client.clone());
        namespaces
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap(),
            )
            .await
            .unwrap();
    }
    apache::install_chart_objects(&client, APACHE_NAMESPACE, JOBS).await;
    let state = harness::state_dir(JOBS);
    let spec = apache::user_spec(&version, &state);
    let fds: Api<FlinkDeployment> = Api::namespaced(client.clone(), JOBS);
    let uid = apache::create_resource(&client, "FlinkDeployment", JOBS, NAME, &spec, json!({})).await;
    let created = apache::deploy_cluster(JOBS, NAME, &uid, &spec, &version)
        .await
        .unwrap();
    // A session cluster, and a job the Apache operator submitted to it.
    let session_spec = apache::session_spec(&version);
    let session_uid = apache::create_resource(
        &client,
        "FlinkDeployment",
        JOBS,
        SESSION,
        &session_spec,
        json!({}),
    )
    .await;
    apache::deploy_cluster(JOBS, SESSION, &session_uid, &session_spec, &version).await;
    let rest = harness::rest_client(&harness::rest_address(&client, JOBS, NAME).await);
    let job_id = JobId::from(created.as_str());
    harness::wait_for_running_job(&rest, &job_id).await;
    apache::write_deployment_status(&client, JOBS, NAME, &spec, Some(&created), &rest).await;
    let session_rest = harness::rest_client(&harness::rest_address(&client, JOBS, SESSION).await);
    let session_job_spec = apache::session_job_spec(&version, SESSION);
    apache::create_resource(
        &client,
        "FlinkSessionJob",
        JOBS,
        SESSION_JOB,
        &session_job_spec,
        json!({"target.session": SESSION}),
    )
    .await;
    let session_job = apache::submit_session_job(&session_rest, &version, &session_job_spec["job"]).await;
    let session_job_id = JobId::from(session_job.as_str());
    harness::wait_for_running_job(&session_rest, &session_job_id).await;
    apache::write_deployment_status(&client, JOBS, SESSION, &session_spec, None, &session_rest).await;
    apache::write_session_job_status(
        &client,
        JOBS,
        SESSION_JOB,
        &session_job_spec,
        &session_job,
        &session_rest,
    )
    .await;
    // The webhook configurations last: the API server refuses every change they cover from
    // here on, as nothing answers behind them.
    apache::install_webhook_configurations(&client, APACHE_NAMESPACE).await;
    let counts = state.join("counts");
    counted_to(&counts, 10).await;

    let pods: Api<Pod> = Api::namespaced(client.clone(), JOBS);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), JOBS);
    let events: Api<Event> = Api::namespaced(client.clone(), JOBS);
    let mut clusters = BTreeMap::new();
    for name in [NAME, SESSION] {
        let pods = cluster_pods(&pods, name).await;
        assert_eq!(pods.len(), 2, "{name}: a JobManager and a TaskManager: {pods:?}");
        let deployment = deployments.get(name).await.unwrap();
        clusters.insert(
            name,
            (pods, deployment.metadata.uid, deployment.metadata.generation),
        );
    }
    let before = stored_all(&client).await;
    let job_before = rest.job_details(&job_id).await.unwrap();
    let session_job_before = session_rest.job_details(&session_job_id).await.unwrap();

    // ---- The runbook.
    // 1. The CRDs replaced. Nothing stored is lost.
    let started = Instant::now();
    let output = Command::new(built_operator())
        .args(["crd", "--apply", "--kubeconfig"])
        .arg(&control_plane().kubeconfig)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "flink-operator crd --apply failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        stored_all(&client).await,
        before,
        "the stored resources changed with the CRDs"
    );
    // They read as this operator's kinds.
    fds.get(NAME).await.unwrap();
    fds.get(SESSION).await.unwrap();
    let session_jobs: Api<FlinkSessionJob> = Api::namespaced(client.clone(), JOBS);
    session_jobs.get(SESSION_JOB).await.unwrap();

    // 2. The chart, beside the Apache release: its `flink` ServiceAccount kept (not
    //    created), its webhook configurations still there.
    install_chart(
        RELEASE,
        RELEASE_NAMESPACE,
        &json!({
            "watchNamespaces": [JOBS],
            "jobServiceAccount": {"create": false},
            "operatorConfiguration": {
                // The platform's JVM settings for small nodes, as the Apache release had them
                // in its default configuration.
                "env.java.opts.all": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1",
            },
            // Its default `log4j-console.properties` for the clusters, moved over.
            "flinkLogConfiguration": {"log4j-console.properties": PLATFORM_LOG4J},
        }),
    );
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), JOBS);
    let kept = accounts.get("flink").await.unwrap();
    assert_eq!(
        kept.metadata.labels.as_ref().unwrap()["app.kubernetes.io/name"],
        "flink-kubernetes-operator",
        "the Apache release's ServiceAccount is the one kept"
    );

    // 3. The Apache webhook configurations removed (`helm uninstall` of the Apache release
    //    does it; here they are deleted by name, the release kept).
    let old = apache::webhook_configuration_name(APACHE_NAMESPACE);
    let validating: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let mutating: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    validating.delete(&old, &Default::default()).await.unwrap();
    mutating.delete(&old, &Default::default()).await.unwrap();

    // ---- Taken over: each resource Ready under this operator, with its revision where it
    // has a job; nothing restarted.
    for (kind, name, api) in resources(&client) {
        let with_job = name != SESSION;
        wait_for_seeing(
            &format!("{kind} {name} Ready under this operator"),
            Duration::from_secs(180),
            || async {
                let object = api.get(name).await.map_err(|e| e.to_string())?;
                let status = &object.data["status"];
                let ready = status["conditions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True");
                let revision = !status["revision"].is_null() || !with_job;
                if ready && revision {
                    Ok(())
                } else {
                    Err(format!(
                        "conditions {}, revision {}, error {}",
                        status["conditions"], status["revision"], status["error"]
                    ))
                }
            },
        )
        .await;
    }
    eprintln!("taken over {:?} after the CRDs were replaced", started.elapsed());
    let status = fds.get(NAME).await.unwrap().status.unwrap();
    let job = status.job_status.unwrap();
    assert_eq!(job.job_id.as_deref(), Some(created.as_str()));
    assert_eq!(job.state, Some(FlinkJobState::Running));
    let status = session_jobs.get(SESSION_JOB).await.unwrap().status.unwrap();
    let job = status.job_status.unwrap();
    assert_eq!(job.job_id.as_deref(), Some(session_job.as_str()));
    assert_eq!(job.state, Some(FlinkJobState::Running));
    // Counting on: no restore went back.
    let since = SystemTime::now();
    let counted = flink_harness::read_counts(&counts);
    counts_went_on(&counts, &counted, since, 0).await;
    for (kind, name, _) in resources(&client) {
        let reasons = event_reasons(&events, kind, name).await;
        eprintln!("Events of {kind} {name} at the takeover: {reasons:?}");
        // Until the Apache webhook configurations are gone, the API server refuses the
        // operator's writes to the resource (its revision annotation); it retries. Its own
        // webhook answers from its first write: it reconciles once its Service has an
        // endpoint.
        for reason in reasons.iter().filter(|r| r.starts_with("ReconcileFailed:")) {
            assert!(
                reason.contains("failed calling webhook \"validationwebhook.flink.apache.org\""),
                "{reason}"
            );
        }
        assert!(
            !reasons.iter().any(|r| RESTARTING
                .iter()
                .any(|restart| r.starts_with(&format!("{restart}:")))),
            "Events of a restart of {kind} {name} at the takeover: {reasons:?}"
        );
    }
    for (rest, job_id, before) in [
        (&rest, &job_id, &job_before),
        (&session_rest, &session_job_id, &session_job_before),
    ] {
        let after = rest
            .job_details(job_id)
            .await
            .unwrap_or_else(|e| panic!("the JobManager of job {job_id} does not answer: {e}"));
        assert_eq!(
            after.start_time, before.start_time,
            "job {job_id} was not restarted"
        );
    }
    for (name, (pods_before, uid, generation)) in &clusters {
        assert_eq!(
            &cluster_pods(&pods, name).await,
            pods_before,
            "{name}: the cluster's pods are the same"
        );
        let deployment = deployments.get(name).await.unwrap();
        assert_eq!(&deployment.metadata.uid, uid, "{name}");
        assert_eq!(&deployment.metadata.generation, generation, "{name}");
    }
    let jm_deployment = deployments.get(NAME).await.unwrap();

    // ---- Upgraded by this operator: a last-state upgrade restores the job's state from the
    // high-availability metadata the Apache-deployed cluster wrote.
    // Counted past what a restore may lag by, so that a count that started over shows.
    let before_upgrade = counted_to(&counts, 120).await;
    fds.patch(
        NAME,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"job": {"parallelism": 1}}})),
    )
    .await
    .unwrap();
    let upgraded = wait_for(
        "the upgraded job RUNNING at parallelism 1 on a new cluster",
        Duration::from_secs(240),
        || async {
            let fd = fds.get(NAME).await.ok()?;
            let status = fd.status.as_ref()?;
            let job = status.job_status.as_ref()?;
            let jm = deployments.get(NAME).await.ok()?;
            (job.state == Some(FlinkJobState::Running)
                && status.lifecycle_state == Some(flink_operator_api::common::ResourceLifecycleState::Stable)
                && jm.metadata.uid != jm_deployment.metadata.uid
                && status.observed_generation == fd.metadata.generation)
                .then_some(fd)
        },
    )
    .await;
    let since = SystemTime::now();
    counts_went_on(&counts, &before_upgrade, since, 50).await;
    let job = upgraded.status.unwrap().job_status.unwrap();
    assert_eq!(
        job.job_id.as_deref(),
        Some(created.as_str()),
        "last-state keeps the job id"
    );
    // The cluster this operator deployed logs as the chart's `flinkLogConfiguration` says.
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), JOBS);
    let conf = config_maps.get(&format!("flink-config-{NAME}")).await.unwrap();
    assert_eq!(
        conf.data
            .unwrap()
            .get("log4j-console.properties")
            .map(String::as_str),
        Some(PLATFORM_LOG4J)
    );
    let job_manager = pods
        .list(&ListParams::default().labels(&format!("app={NAME},component=jobmanager")))
        .await
        .unwrap()
        .items
        .into_iter()
        .find(|p| p.metadata.deletion_timestamp.is_none())
        .unwrap()
        .metadata
        .name
        .unwrap();
    let dir = harness::pod_dirs(JOBS)
        .into_iter()
        .find(|d| {
            d.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(&format!("{JOBS}_{job_manager}_"))
        })
        .unwrap();
    let stdout = std::fs::read_to_string(dir.join("logs/flink-main-container/0.log")).unwrap();
    assert!(
        stdout.lines().any(|l| l.contains("platform-log ")),
        "the JobManager's stdout has no line of the platform's pattern:\n{}",
        &stdout[..stdout.len().min(2000)]
    );

    eprintln!(
        "upgraded from the Apache-deployed cluster's state; Events: {:?}",
        event_reasons(&events, "FlinkDeployment", NAME).await
    );
}
