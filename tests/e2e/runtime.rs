//! The local runtime: Deployments and Services like a Flink operator's become real Flink
//! clusters, reachable over REST at the address the operator resolves, with pod status
//! that follows the processes.

use std::time::{Duration, Instant};

use flink_operator_controller::flink::{FlinkRestClient, JobId, RunJar};
use k8s_openapi::api::{apps::v1::Deployment, core::v1::Pod};
use kube::{
    Api, Client,
    api::{DeleteParams, ListParams},
};
use serde_json::json;

use crate::{
    cluster_harness::{TestNamespace, wait_for},
    flink_harness,
    harness::{self, LogsOnFailure, rest_address, rest_client, wait_for_running_job},
    objects,
};

const MIB: u64 = 1024 * 1024;

async fn wait_for_taskmanagers(rest: &FlinkRestClient, count: u32) -> String {
    let overview = wait_for(
        &format!("{count} registered TaskManager(s)"),
        Duration::from_secs(180),
        || async {
            let overview = rest.cluster_overview().await.ok()?;
            (overview.taskmanagers == count).then_some(overview)
        },
    )
    .await;
    overview.flink_version.unwrap_or_default()
}

async fn pods(client: &Client, namespace: &str, selector: &str) -> Vec<Pod> {
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    api.list(&ListParams::default().labels(selector))
        .await
        .unwrap()
        .items
}

/// Deletes Deployments and waits until their pods are gone from the API server and every
/// process of theirs has exited.
async fn delete_deployments(client: &Client, namespace: &str, names: &[&str], selector: &str) {
    let before = pods(client, namespace, selector).await;
    let pids: Vec<u32> = before
        .iter()
        .filter_map(|p| harness::container_pid(p, "flink-main-container"))
        .collect();
    assert!(!pids.is_empty(), "no processes to stop for {selector}");
    let api: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    for name in names {
        api.delete(name, &DeleteParams::foreground()).await.unwrap();
    }
    wait_for(
        &format!("pods with {selector} gone and processes {pids:?} stopped"),
        Duration::from_secs(60),
        || async {
            let remaining = pods(client, namespace, selector).await;
            (remaining.is_empty() && pids.iter().all(|pid| !harness::alive(*pid))).then_some(())
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standalone_session_cluster_answers_rest_and_its_pods_follow_the_processes() {
    let _turn = crate::cluster_harness::beside_others().await;
    let client = harness::client().await;
    let ns = TestNamespace::new(&client, "rt-session").await;
    let _logs = LogsOnFailure(ns.name.clone());
    let version = flink_harness::versions().last().unwrap().clone();
    objects::create_all(&client, &objects::standalone_session(&ns.name, "basic", &version)).await;

    harness::wait_for_ready_pods(&client, &ns.name, "app=basic", 2).await;
    let address = rest_address(&client, &ns.name, "basic").await;
    assert!(address.starts_with("http://10.244."), "{address}");
    let rest = rest_client(&address);
    assert_eq!(wait_for_taskmanagers(&rest, 1).await, version);

    // The JobManager dies: the pod shows it, and the container is started again.
    let jm = harness::wait_for_ready_pods(&client, &ns.name, "app=basic,component=jobmanager", 1).await;
    let jm_name = jm[0].metadata.name.clone().unwrap();
    let pid = harness::container_pid(&jm[0], "flink-main-container").unwrap();
    assert!(
        std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status()
            .unwrap()
            .success()
    );
    let api: Api<Pod> = Api::namespaced(client.clone(), &ns.name);
    let restarted = wait_for(
        "the JobManager's restart in its pod status",
        Duration::from_secs(60),
        || async {
            let pod = api.get(&jm_name).await.ok()?;
            let status = pod.status.as_ref()?.container_statuses.as_ref()?.first()?.clone();
            let last = status.last_state.as_ref()?.terminated.as_ref()?.clone();
            (status.restart_count == 1 && status.state.as_ref()?.running.is_some()).then_some(last)
        },
    )
    .await;
    assert_eq!(restarted.exit_code, 137, "{restarted:?}");
    let new_pid = wait_for(
        "the restarted JobManager's process",
        Duration::from_secs(30),
        || async {
            let pod = api.get(&jm_name).await.ok()?;
            harness::container_pid(&pod, "flink-main-container").filter(|p| *p != pid)
        },
    )
    .await;
    assert!(harness::alive(new_pid));
    // Ready again only once the REST API answers (its readiness probe), at the same address.
    let ready = harness::wait_for_ready_pods(&client, &ns.name, "app=basic,component=jobmanager", 1).await;
    assert_eq!(ready[0].metadata.name.as_deref(), Some(jm_name.as_str()));
    rest.cluster_overview().await.unwrap();

    delete_deployments(&client, &ns.name, &["basic", "basic-taskmanager"], "app=basic").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standalone_application_cluster_runs_the_test_job() {
    let _turn = crate::cluster_harness::beside_others().await;
    let client = harness::client().await;
    let ns = TestNamespace::new(&client, "rt-application").await;
    let _logs = LogsOnFailure(ns.name.clone());
    let version = flink_harness::versions().first().unwrap().clone();
    let job = JobId::random();
    let objects = objects::standalone_application(&ns.name, "counter", &version, job.as_str());

    let started = Instant::now();
    objects::create_all(&client, &objects).await;
    let address = rest_address(&client, &ns.name, "counter").await;
    let rest = rest_client(&address);
    wait_for_running_job(&rest, &job).await;
    let to_running = started.elapsed();
    harness::wait_for_ready_pods(&client, &ns.name, "app=counter", 2).await;
    let rss = harness::namespace_rss(&ns.name);
    eprintln!(
        "MEASURED standalone application cluster (Flink {version}): Deployments created -> job RUNNING in {:.1} s; JM + TM RSS {} MiB",
        to_running.as_secs_f64(),
        rss / MIB
    );
    assert!(rss > 0);

    delete_deployments(
        &client,
        &ns.name,
        &["counter", "counter-taskmanager"],
        "app=counter",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_native_session_cluster_creates_its_taskmanagers_through_the_api_server() {
    let _turn = crate::cluster_harness::beside_others().await;
    let client = harness::client().await;
    let ns = TestNamespace::new(&client, "rt-native").await;
    let _logs = LogsOnFailure(ns.name.clone());
    let version = flink_harness::versions().last().unwrap().clone();
    let started = Instant::now();
    objects::create_all(&client, &objects::native_session(&ns.name, "native", &version)).await;

    let address = rest_address(&client, &ns.name, "native").await;
    let rest = rest_client(&address);
    // A session cluster starts without TaskManagers; a job asks for them.
    assert_eq!(wait_for_taskmanagers(&rest, 0).await, version);
    let jar = tokio::task::spawn_blocking({
        let version = version.clone();
        move || objects::job_jar(&version)
    })
    .await
    .unwrap();
    let jar_id = rest.upload_jar(&jar).await.unwrap();
    let run = RunJar {
        args: ["--rate", "20", "--keys", "4"].map(str::to_owned).to_vec(),
        parallelism: Some(2),
        ..RunJar::default()
    };
    let job = rest.run_jar(&jar_id, &run).await.unwrap();
    wait_for_running_job(&rest, &job).await;
    let to_running = started.elapsed();

    // The TaskManager pod is Flink's own: named, labelled and owned as Flink makes it.
    let tms = harness::wait_for_ready_pods(&client, &ns.name, "app=native,component=taskmanager", 1).await;
    let tm = &tms[0];
    assert_eq!(tm.metadata.name.as_deref(), Some("native-taskmanager-1-1"));
    let owner = &tm.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("Deployment", "native")
    );
    let args = tm.spec.as_ref().unwrap().containers[0].args.clone().unwrap();
    assert!(args[2].starts_with("kubernetes-taskmanager.sh"), "{args:?}");
    harness::wait_for_ready_pods(&client, &ns.name, "app=native,component=jobmanager", 1).await;
    let rss = harness::namespace_rss(&ns.name);
    eprintln!(
        "MEASURED native session cluster (Flink {version}): Deployment created -> job RUNNING (submitted over REST) in {:.1} s; JM + TM RSS {} MiB",
        to_running.as_secs_f64(),
        rss / MIB
    );

    // Deleting the JobManager Deployment takes the TaskManagers with it (owner reference).
    delete_deployments(&client, &ns.name, &["native"], "app=native").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_native_application_cluster_runs_the_test_job_from_its_local_jar() {
    let _turn = crate::cluster_harness::beside_others().await;
    let client = harness::client().await;
    let ns = TestNamespace::new(&client, "rt-native-app").await;
    let _logs = LogsOnFailure(ns.name.clone());
    let version = flink_harness::versions().first().unwrap().clone();
    let job = JobId::random();
    let started = Instant::now();
    objects::create_all(
        &client,
        &objects::native_application(&ns.name, "app", &version, job.as_str()),
    )
    .await;

    let address = rest_address(&client, &ns.name, "app").await;
    let rest = rest_client(&address);
    wait_for_running_job(&rest, &job).await;
    let to_running = started.elapsed();
    let tms = harness::wait_for_ready_pods(&client, &ns.name, "app=app,component=taskmanager", 1).await;
    assert_eq!(tms[0].metadata.name.as_deref(), Some("app-taskmanager-1-1"));
    eprintln!(
        "MEASURED native application cluster (Flink {version}): Deployment created -> job RUNNING in {:.1} s; JM + TM RSS {} MiB",
        to_running.as_secs_f64(),
        harness::namespace_rss(&ns.name) / MIB
    );

    delete_deployments(&client, &ns.name, &["app"], "app=app").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_policies_init_containers_and_grace_periods_follow_the_kubelet() {
    let _turn = crate::cluster_harness::beside_others().await;
    let client = harness::client().await;
    let ns = TestNamespace::new(&client, "rt-lifecycle").await;
    let _logs = LogsOnFailure(ns.name.clone());
    let image = objects::image(flink_harness::versions().last().unwrap());
    let bash = |name: &str, policy: &str, init: Option<&str>, script: &str, grace: i64| {
        let mut pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns.name},
            "spec": {
                "restartPolicy": policy,
                "terminationGracePeriodSeconds": grace,
                "containers": [{"name": "main", "image": image, "command": ["bash", "-c", script],
                                "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
                "volumes": [{"name": "data", "emptyDir": {}}],
            },
        });
        if let Some(init) = init {
            pod["spec"]["initContainers"] = json!([{"name": "init", "image": image, "command": ["bash", "-c", init],
                                                    "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]);
        }
        pod
    };
    objects::create_all(
        &client,
        &[
            bash("fails", "Never", None, "exit 3", 30),
            // The init container's file and the first run's marker survive in the emptyDir;
            // the second run succeeds.
            bash(
                "retries",
                "OnFailure",
                Some("echo ready > /data/init"),
                "test -e /data/init || exit 2; test -e /data/ran && exit 0; touch /data/ran; exit 1",
                30,
            ),
            // Ignores SIGTERM: only SIGKILL after the grace period stops it.
            bash("stubborn", "Always", None, "trap '' TERM; sleep 1000", 2),
        ],
    )
    .await;
    let api: Api<Pod> = Api::namespaced(client.clone(), &ns.name);
    let phase_of = |name: &'static str, phase: &'static str| {
        let api = api.clone();
        async move {
            wait_for(&format!("{name} {phase}"), Duration::from_secs(60), || async {
                let pod = api.get(name).await.ok()?;
                (pod.status.as_ref()?.phase.as_deref() == Some(phase)).then_some(pod)
            })
            .await
        }
    };
    let failed = phase_of("fails", "Failed").await;
    let status = failed.status.unwrap().container_statuses.unwrap()[0].clone();
    assert_eq!(status.state.unwrap().terminated.unwrap().exit_code, 3);
    assert_eq!(status.restart_count, 0);

    let retried = phase_of("retries", "Succeeded").await.status.unwrap();
    let main = retried.container_statuses.unwrap()[0].clone();
    assert_eq!(main.restart_count, 1, "{main:?}");
    assert_eq!(main.last_state.unwrap().terminated.unwrap().exit_code, 1);
    assert_eq!(main.state.unwrap().terminated.unwrap().exit_code, 0);
    let init = retried.init_container_statuses.unwrap()[0].clone();
    assert_eq!(init.state.unwrap().terminated.unwrap().exit_code, 0);

    let stubborn = phase_of("stubborn", "Running").await;
    let pid = harness::container_pid(&stubborn, "main").unwrap();
    let deleting = Instant::now();
    api.delete("stubborn", &DeleteParams::default()).await.unwrap();
    wait_for("stubborn deleted", Duration::from_secs(30), || async {
        api.get_opt("stubborn").await.ok()?.is_none().then_some(())
    })
    .await;
    let took = deleting.elapsed();
    assert!(!harness::alive(pid));
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(10),
        "a process ignoring SIGTERM is killed after its 2 s grace period, took {took:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_clusters_run_side_by_side_with_the_same_names_and_ports() {
    let _turn = crate::cluster_harness::beside_others().await;
    let client = harness::client().await;
    let versions = flink_harness::versions();
    let a = TestNamespace::new(&client, "rt-twin").await;
    let b = TestNamespace::new(&client, "rt-twin").await;
    let _logs_a = LogsOnFailure(a.name.clone());
    let _logs_b = LogsOnFailure(b.name.clone());
    let (version_a, version_b) = (
        versions.first().unwrap().clone(),
        versions.last().unwrap().clone(),
    );
    objects::create_all(&client, &objects::standalone_session(&a.name, "twin", &version_a)).await;
    objects::create_all(&client, &objects::standalone_session(&b.name, "twin", &version_b)).await;

    let address_a = rest_address(&client, &a.name, "twin").await;
    let address_b = rest_address(&client, &b.name, "twin").await;
    assert_ne!(address_a, address_b);
    assert!(address_a.ends_with(":8081") && address_b.ends_with(":8081"));
    assert_eq!(
        wait_for_taskmanagers(&rest_client(&address_a), 1).await,
        version_a
    );
    assert_eq!(
        wait_for_taskmanagers(&rest_client(&address_b), 1).await,
        version_b
    );
    eprintln!(
        "MEASURED two session clusters side by side: {} MiB and {} MiB",
        harness::namespace_rss(&a.name) / MIB,
        harness::namespace_rss(&b.name) / MIB
    );

    delete_deployments(&client, &a.name, &["twin", "twin-taskmanager"], "app=twin").await;
    // The other cluster is untouched.
    rest_client(&address_b).cluster_overview().await.unwrap();
    delete_deployments(&client, &b.name, &["twin", "twin-taskmanager"], "app=twin").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn images_the_runtime_cannot_run_are_reported_on_the_pod() {
    let _turn = crate::cluster_harness::beside_others().await;
    let client = harness::client().await;
    let ns = TestNamespace::new(&client, "rt-images").await;
    let pod = |name: &str, image: &str| {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns.name},
            "spec": {"containers": [{"name": "main", "image": image, "args": ["jobmanager"]}]},
        })
    };
    objects::create_all(
        &client,
        &[pod("old-flink", "flink:1.15"), pod("not-flink", "busybox:1.36")],
    )
    .await;
    let api: Api<Pod> = Api::namespaced(client.clone(), &ns.name);
    for (name, expected) in [
        (
            "old-flink",
            "no local Flink distribution for image \"flink:1.15\" (installed: ",
        ),
        ("not-flink", "image \"busybox:1.36\" is not a Flink image"),
    ] {
        let waiting = wait_for(
            &format!("{name} to report its image"),
            Duration::from_secs(60),
            || async {
                let pod = api.get(name).await.ok()?;
                let status = pod.status?;
                let waiting = status.container_statuses?.first()?.state.clone()?.waiting?;
                (status.phase.as_deref() == Some("Pending")
                    && waiting.reason.as_deref() == Some("ErrImagePull"))
                .then_some(waiting)
            },
        )
        .await;
        let message = waiting.message.unwrap_or_default();
        assert!(message.contains(expected), "{name}: {message}");
    }
    // Deleting such a pod needs no process to stop.
    api.delete("old-flink", &DeleteParams::default()).await.unwrap();
    wait_for("old-flink deleted", Duration::from_secs(30), || async {
        api.get_opt("old-flink").await.ok()?.is_none().then_some(())
    })
    .await;
}
