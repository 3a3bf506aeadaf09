//! The operator with many resources, and its own share of an upgrade.
//!
//! The test shows that one JobManager whose REST API hangs (its process frozen with
//! SIGSTOP) does not hold up the others. The benchmarks (ignored here; run them with
//! `bench/operator.sh`) print MEASURED lines: the operator's memory with 100 and 1,000
//! FlinkDeployments, and its share of a savepoint upgrade.
//!
//! The many FlinkDeployments are session clusters whose pods name a scheduler that does
//! not exist: the operator creates and watches all their objects, and no Flink process is
//! started for them.

use std::{
    collections::BTreeSet,
    time::{Duration, Instant, SystemTime},
};

use flink_operator_api::FlinkDeployment;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::{apps::v1::Deployment, core::v1::Pod};
use kube::{
    Api,
    api::{DeleteParams, ListParams, Patch, PatchParams, PostParams},
};
use serde_json::json;

use crate::{
    cluster_harness::{self, TestNamespace, wait_for},
    flink_harness,
    harness::{self, LogsOnFailure},
    objects,
    reconcile::{OperatorLogOnFailure, create_counter},
};

/// A session FlinkDeployment whose pods are never scheduled.
fn unscheduled_session(namespace: &str, name: &str) -> FlinkDeployment {
    let version = flink_harness::versions().last().unwrap().clone();
    let dotted: Vec<&str> = version.split('.').take(2).collect();
    let configuration: serde_json::Map<String, serde_json::Value> = objects::base_config()
        .into_iter()
        .filter(|(k, _)| !k.ends_with("memory.process.size"))
        .map(|(k, v)| (k, json!(v)))
        .collect();
    serde_json::from_value(json!({
        "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "image": objects::image(&version), "flinkVersion": format!("v{}", dotted.join("_")),
            "serviceAccount": "flink",
            "flinkConfiguration": configuration,
            "podTemplate": {"spec": {"schedulerName": "no-such-scheduler"}},
            "jobManager": {"resource": {"memory": "768m", "cpu": 0.5}},
            "taskManager": {"resource": {"memory": "1g", "cpu": 0.5}},
        },
    }))
    .unwrap()
}

/// Creates `names` (16 requests at a time).
async fn create_many(api: &Api<FlinkDeployment>, namespace: &str, names: impl Iterator<Item = String>) {
    futures::stream::iter(names)
        .map(|name| {
            let api = api.clone();
            let fd = unscheduled_session(namespace, &name);
            async move { api.create(&PostParams::default(), &fd).await.map(|_| ()) }
        })
        .buffer_unordered(16)
        .try_collect::<Vec<()>>()
        .await
        .unwrap();
}

/// How many of the namespace's FlinkDeployments named `prefix…` the operator has deployed
/// (their JobManager Deployment is created and status says so).
async fn deployed(api: &Api<FlinkDeployment>, prefix: &str) -> usize {
    let Ok(list) = api.list(&ListParams::default()).await else {
        return 0;
    };
    list.items
        .iter()
        .filter(|fd| fd.metadata.name.as_deref().is_some_and(|n| n.starts_with(prefix)))
        .filter(|fd| {
            fd.status
                .as_ref()
                .and_then(|s| s.lifecycle_state)
                .map(|l| l.as_str())
                == Some("DEPLOYED")
        })
        .count()
}

/// The pids of `pid` and its descendants.
fn process_tree(pid: u32) -> Vec<u32> {
    let mut tree = vec![pid];
    let mut i = 0;
    while i < tree.len() {
        let parent = tree[i];
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Some(child) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            // pid (comm) state ppid ...: comm may hold spaces, so read after the last ')'.
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|p| p.parse::<u32>().ok());
            if ppid == Some(parent) && !tree.contains(&child) {
                tree.push(child);
            }
        }
        i += 1;
    }
    tree
}

fn signal(pids: &[u32], signal: &str) {
    for pid in pids {
        let status = std::process::Command::new("kill")
            .args([signal, &pid.to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill {signal} {pid}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobmanager_that_hangs_does_not_delay_the_other_resources() {
    let client = harness::client().await;
    cluster_harness::operator(&client).await;
    let _exclusive = cluster_harness::exclusive_operator().await;
    let _operator_log = OperatorLogOnFailure;
    let ns = TestNamespace::new(&client, "hang").await;
    let _logs = LogsOnFailure(ns.name.clone());
    objects::create_all(&client, &objects::flink_service_account(&ns.name)).await;
    let api: Api<FlinkDeployment> = Api::namespaced(client.clone(), &ns.name);

    // A real session cluster, Ready, then frozen: its REST API accepts connections and
    // never answers, so every reconcile of it waits for the REST client's timeout.
    let mut frozen = unscheduled_session(&ns.name, "frozen");
    frozen.spec.pod_template = None;
    api.create(&PostParams::default(), &frozen).await.unwrap();
    wait_for("the session cluster STABLE", Duration::from_secs(240), || async {
        let fd = api.get("frozen").await.ok()?;
        (fd.status?.lifecycle_state.map(|l| l.as_str()) == Some("STABLE")).then_some(())
    })
    .await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns.name);
    let jm = pods
        .list(&ListParams::default().labels("app=frozen,component=jobmanager"))
        .await
        .unwrap()
        .items
        .remove(0);
    let pids = process_tree(harness::container_pid(&jm, "flink-main-container").unwrap());
    signal(&pids, "-STOP");
    let _thaw = Thaw(pids.clone());
    let frozen_at = Instant::now();
    wait_for(
        "the operator to find the frozen JobManager's REST API unresponsive",
        // The next look comes up to 60 s later (the reconcile interval) and waits out one
        // REST timeout (10 s; a call that timed out is not retried within the reconcile);
        // one unanswered look is not reported, the next, a progress check (10 s) later, is.
        Duration::from_secs(150),
        || async {
            let status = api.get("frozen").await.ok()?.status?;
            (status.job_manager_deployment_status.map(|s| s.as_str()) == Some("DEPLOYED_NOT_READY"))
                .then_some(())
        },
    )
    .await;
    let noticed = frozen_at.elapsed();

    // Meanwhile, many others are deployed, each within a few reconciles.
    let count = 40;
    let started = Instant::now();
    create_many(&api, &ns.name, (0..count).map(|i| format!("other-{i}"))).await;
    let created = started.elapsed();
    wait_for(
        "every other resource deployed",
        Duration::from_secs(120),
        || async { (deployed(&api, "other-").await >= count).then_some(()) },
    )
    .await;
    let all = started.elapsed();
    // ...while the frozen one is still being reconciled and still found unresponsive.
    let status = api.get("frozen").await.unwrap().status.unwrap();
    assert_eq!(
        status.job_manager_deployment_status.map(|s| s.as_str()),
        Some("DEPLOYED_NOT_READY")
    );
    println!(
        "MEASURED frozen JobManager: unresponsive REST noticed after {:.1} s; {count} other FlinkDeployments created in {:.1} s, all deployed {:.1} s after the first create",
        noticed.as_secs_f64(),
        created.as_secs_f64(),
        all.as_secs_f64()
    );

    // Thawed, it is Ready again.
    signal(&pids, "-CONT");
    wait_for(
        "the thawed cluster STABLE again",
        Duration::from_secs(90),
        || async {
            let fd = api.get("frozen").await.ok()?;
            (fd.status?.lifecycle_state.map(|l| l.as_str()) == Some("STABLE")).then_some(())
        },
    )
    .await;
    delete_all(&api).await;
}

/// Resumes frozen processes, also when the test fails.
struct Thaw(Vec<u32>);

impl Drop for Thaw {
    fn drop(&mut self) {
        for pid in &self.0 {
            let _ = std::process::Command::new("kill")
                .args(["-CONT", &pid.to_string()])
                .status();
        }
    }
}

/// Deletes every FlinkDeployment of the namespace, one request each (a single
/// deletecollection of a thousand objects outlasts the API server's request timeout).
async fn delete_all(api: &Api<FlinkDeployment>) {
    let names: Vec<String> = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|fd| fd.metadata.name)
        .collect();
    futures::stream::iter(names)
        .map(|name| {
            let api = api.clone();
            async move {
                match api.delete(&name, &DeleteParams::default()).await {
                    Ok(_) => Ok(()),
                    Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
                    Err(e) => Err(e),
                }
            }
        })
        .buffer_unordered(16)
        .try_collect::<Vec<()>>()
        .await
        .unwrap();
    crate::harness::wait_until_none(api, "every FlinkDeployment gone", Duration::from_secs(600)).await;
}

fn operator_rss_mib() -> f64 {
    let pid = cluster_harness::operator_pid();
    flink_harness::rss_bytes(pid).unwrap_or(0) as f64 / (1024.0 * 1024.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: bench/operator.sh"]
async fn bench_operator_memory_with_many_flinkdeployments() {
    let client = harness::client().await;
    cluster_harness::operator(&client).await;
    let _exclusive = cluster_harness::exclusive_operator().await;
    let ns = TestNamespace::new(&client, "many").await;
    objects::create_all(&client, &objects::flink_service_account(&ns.name)).await;
    let api: Api<FlinkDeployment> = Api::namespaced(client.clone(), &ns.name);
    println!("MEASURED operator RSS before: {:.1} MiB", operator_rss_mib());
    let mut created = 0;
    for target in [100usize, 1000] {
        let started = Instant::now();
        create_many(&api, &ns.name, (created..target).map(|i| format!("fd-{i:04}"))).await;
        created = target;
        wait_for("all deployed", Duration::from_secs(900), || async {
            (deployed(&api, "fd-").await >= target).then_some(())
        })
        .await;
        let deployed_in = started.elapsed();
        let at_deployed = operator_rss_mib();
        // Steady state: every resource is requeued and reconciled again meanwhile.
        let mut samples = Vec::new();
        for _ in 0..6 {
            tokio::time::sleep(Duration::from_secs(10)).await;
            samples.push(operator_rss_mib());
        }
        let max = samples.iter().cloned().fold(0.0, f64::max);
        let last = *samples.last().unwrap();
        println!(
            "MEASURED {target} FlinkDeployments: deployed in {:.1} s; operator RSS {at_deployed:.1} MiB when deployed, {last:.1} MiB after 60 s of steady reconciling (max {max:.1} MiB)",
            deployed_in.as_secs_f64()
        );
    }
    delete_all(&api).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: bench/operator.sh"]
async fn bench_operator_share_of_a_savepoint_upgrade() {
    let client = harness::client().await;
    cluster_harness::operator(&client).await;
    let _exclusive = cluster_harness::exclusive_operator().await;
    let _operator_log = OperatorLogOnFailure;
    let ns = TestNamespace::new(&client, "share").await;
    let _logs = LogsOnFailure(ns.name.clone());
    objects::create_all(&client, &objects::flink_service_account(&ns.name)).await;
    let version = flink_harness::versions().last().unwrap().clone();
    let (api, state) = create_counter(&client, &ns.name, &version, "savepoint", &[]).await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns.name);
    let mut job = None;
    for (round, parallelism) in [1, 2, 1].into_iter().enumerate() {
        job = running_job(&api, job).await;
        // A few checkpoints first, as in a job that has been running a while.
        tokio::time::sleep(Duration::from_secs(12)).await;
        let old_uid = deployments.get("counter").await.unwrap().metadata.uid;
        let savepoints_before = savepoint_dirs(&state);
        api.patch(
            "counter",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"job": {"parallelism": parallelism}}})),
        )
        .await
        .unwrap();
        let stored = SystemTime::now();
        // The new JobManager Deployment, seen as soon as it exists.
        let replaced = wait_for_new_deployment(&deployments, old_uid).await;
        let savepoint = savepoint_dirs(&state)
            .difference(&savepoints_before)
            .next()
            .cloned()
            .expect("a new savepoint directory");
        let completed = std::fs::metadata(savepoint.join("_metadata"))
            .and_then(|m| m.modified())
            .unwrap();
        let triggered = trigger_time(&ns.name).expect("the savepoint's trigger in the JobManager log");
        let to_trigger = triggered
            .duration_since(stored)
            .map(|d| d.as_secs_f64())
            .unwrap_or(-1.0);
        let to_deployment = replaced
            .duration_since(completed)
            .map(|d| d.as_secs_f64())
            .unwrap_or(-1.0);
        println!(
            "MEASURED upgrade {}: spec stored -> stop-with-savepoint in Flink {to_trigger:.3} s; savepoint completed -> new JobManager Deployment {to_deployment:.3} s",
            round + 1
        );
    }
    running_job(&api, job).await;
    delete_all(&api).await;
}

async fn running_job(api: &Api<FlinkDeployment>, previous: Option<String>) -> Option<String> {
    wait_for("the job RUNNING", Duration::from_secs(240), || async {
        let status = api.get("counter").await.ok()?.status?;
        let job = status.job_status?;
        let ok = job.state.as_deref() == Some("RUNNING")
            && status.lifecycle_state.map(|l| l.as_str()) == Some("STABLE")
            && job.job_id != previous;
        ok.then_some(job.job_id)
    })
    .await
}

async fn wait_for_new_deployment(deployments: &Api<Deployment>, old_uid: Option<String>) -> SystemTime {
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        if let Ok(Some(d)) = deployments.get_opt("counter").await
            && d.metadata.uid != old_uid
        {
            return SystemTime::now();
        }
        assert!(Instant::now() < deadline, "no new JobManager Deployment");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn savepoint_dirs(state: &std::path::Path) -> BTreeSet<std::path::PathBuf> {
    std::fs::read_dir(state.join("savepoints"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect()
}

/// The newest savepoint trigger time in the namespace's JobManager logs: Flink logs
/// `Triggering checkpoint N (type=SavepointType{...}) @ <epoch ms> for job ...`.
fn trigger_time(namespace: &str) -> Option<SystemTime> {
    let mut newest = None;
    for dir in harness::pod_dirs(namespace) {
        let mut files = Vec::new();
        collect_files(&dir, &mut files);
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            for line in text.lines() {
                if !(line.contains("Triggering checkpoint") && line.contains("Savepoint")) {
                    continue;
                }
                let ms = line
                    .split(" @ ")
                    .nth(1)
                    .and_then(|rest| rest.split_whitespace().next())
                    .and_then(|n| n.parse::<u64>().ok());
                if let Some(ms) = ms {
                    newest = newest.max(Some(ms));
                }
            }
        }
    }
    newest.map(|ms| SystemTime::UNIX_EPOCH + Duration::from_millis(ms))
}

fn collect_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "log") {
            out.push(path);
        }
    }
}
