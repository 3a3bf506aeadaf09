//! The operator with many resources, and its own share of an upgrade.
//!
//! The test shows that one JobManager whose REST API hangs (its process frozen with
//! SIGSTOP) does not hold up the others. The benchmarks (ignored here; run them with
//! `bench/operator.sh`) print MEASURED lines: the operator's memory and Kubernetes API
//! requests per minute idle and with 100 and 1,000 FlinkDeployments, and its share of a
//! savepoint upgrade with where the time goes (from the operator's `acting` log lines).
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
    steady_state::{keep_operator_log, operator_kubernetes_requests, summary},
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
pub(crate) fn process_tree(pid: u32) -> Vec<u32> {
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

pub(crate) fn signal(pids: &[u32], signal: &str) {
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
    crate::operator::shared(&client).await;
    let _alone = cluster_harness::exclusive_operator().await;
    let _operator_log = OperatorLogOnFailure;
    let ns = TestNamespace::new(&client, "hang").await;
    let _logs = LogsOnFailure(ns.name.clone());
    objects::create_all(&client, &objects::flink_service_account(&ns.name)).await;
    let api: Api<FlinkDeployment> = Api::namespaced(client.clone(), &ns.name);

    // A real session cluster, Ready, then frozen: its REST API accepts connections and
    // never answers, so every reconcile of it waits for the REST client's timeout.
    let mut frozen = unscheduled_session(&ns.name, "frozen");
    frozen.spec.pod_template = None;
    // Looked at every 10 s once steady rather than every minute: the freeze is found sooner,
    // and each look at it while the others are deployed waits out a REST timeout.
    frozen
        .spec
        .flink_configuration
        .get_or_insert_default()
        .insert("kubernetes.operator.reconcile.interval", "10 s");
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
        // The next look comes up to 10 s later (the reconcile interval) and waits out one
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
pub(crate) struct Thaw(pub(crate) Vec<u32>);

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
    let pid = crate::operator::operator_pid();
    flink_harness::rss_bytes(pid).unwrap_or(0) as f64 / (1024.0 * 1024.0)
}

/// What the operator did in one measuring window of 60 s: its RSS at the end and at most
/// (sampled every 10 s) and its Kubernetes API requests per minute.
struct Window {
    rss_last: f64,
    rss_max: f64,
    requests_per_minute: Option<f64>,
}

async fn measure_window() -> Window {
    let started = Instant::now();
    let requests_before = operator_kubernetes_requests();
    let mut samples = Vec::new();
    for _ in 0..6 {
        tokio::time::sleep(Duration::from_secs(10)).await;
        samples.push(operator_rss_mib());
    }
    let requests_after = operator_kubernetes_requests();
    let minutes = started.elapsed().as_secs_f64() / 60.0;
    Window {
        rss_last: *samples.last().unwrap(),
        rss_max: samples.iter().cloned().fold(0.0, f64::max),
        requests_per_minute: requests_before
            .zip(requests_after)
            .map(|(b, a)| (a - b) / minutes),
    }
}

fn per_minute(requests: Option<f64>, resources: usize) -> String {
    match requests {
        Some(n) if resources > 0 => format!("{n:.1} ({:.2} per resource)", n / resources as f64),
        Some(n) => format!("{n:.1}"),
        None => "n/a (this build has no such metric)".to_owned(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: bench/operator.sh"]
async fn bench_operator_memory_with_many_flinkdeployments() {
    let client = harness::client().await;
    crate::operator::shared(&client).await;
    let _alone = cluster_harness::exclusive_operator().await;
    let part = "memory";

    // Idle: started, its caches synchronised, nothing to reconcile.
    wait_for(
        "the operator's caches synchronised",
        Duration::from_secs(60),
        || async {
            crate::operator::operator_log()
                .contains("caches synchronised")
                .then_some(())
        },
    )
    .await;
    let idle = measure_window().await;
    println!(
        "MEASURED 0 FlinkDeployments (idle): operator RSS {:.1} MiB after 60 s (max {:.1} MiB); Kubernetes API requests per minute {}",
        idle.rss_last,
        idle.rss_max,
        per_minute(idle.requests_per_minute, 0)
    );
    summary(
        part,
        "RSS, idle (0 FlinkDeployments)",
        &format!("{:.1} MiB (max {:.1})", idle.rss_last, idle.rss_max),
        "< 24 MiB",
    );
    summary(
        part,
        "Kubernetes API requests per minute, idle",
        &per_minute(idle.requests_per_minute, 0),
        "",
    );

    let ns = TestNamespace::new(&client, "many").await;
    objects::create_all(&client, &objects::flink_service_account(&ns.name)).await;
    let api: Api<FlinkDeployment> = Api::namespaced(client.clone(), &ns.name);
    let mut created = 0;
    let mut behind = Vec::new();
    for target in [100usize, 1000] {
        let started = Instant::now();
        let requests_before = operator_kubernetes_requests();
        create_many(&api, &ns.name, (created..target).map(|i| format!("fd-{i:04}"))).await;
        created = target;
        // Measured also when not all are deployed in time (reported, and the test fails
        // at the end), so that a build that falls behind still gets its figures.
        let deadline = started + Duration::from_secs(900);
        let mut done = deployed(&api, "fd-").await;
        while done < target && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(500)).await;
            done = deployed(&api, "fd-").await;
        }
        let deployed_in = started.elapsed();
        if done < target {
            behind.push(format!("{done} of {target} deployed after 900 s"));
        }
        let deploy_requests = requests_before
            .zip(operator_kubernetes_requests())
            .map(|(b, a)| a - b);
        let at_deployed = operator_rss_mib();
        // Steady state: every resource is requeued and reconciled again meanwhile.
        let steady = measure_window().await;
        let deploying = match deploy_requests {
            Some(n) => format!(
                "{n:.0} Kubernetes API requests while deploying ({:.1} per new resource)",
                n / (target - if target == 100 { 0 } else { 100 }) as f64
            ),
            None => "Kubernetes API requests n/a".to_owned(),
        };
        let deploying = if done < target {
            format!("ONLY {done} deployed; {deploying}")
        } else {
            deploying
        };
        println!(
            "MEASURED {target} FlinkDeployments: deployed in {:.1} s ({deploying}); operator RSS {at_deployed:.1} MiB when deployed, {:.1} MiB after 60 s of steady reconciling (max {:.1} MiB); Kubernetes API requests per minute in those 60 s {}",
            deployed_in.as_secs_f64(),
            steady.rss_last,
            steady.rss_max,
            per_minute(steady.requests_per_minute, target)
        );
        let count = if target == 1000 {
            "1,000".to_owned()
        } else {
            target.to_string()
        };
        summary(
            part,
            &format!("RSS, {count} FlinkDeployments (60 s after all deployed)"),
            &format!(
                "{:.1} MiB (max {:.1}; {at_deployed:.1} when deployed)",
                steady.rss_last, steady.rss_max
            ),
            if target == 1000 { "< 80 MiB" } else { "" },
        );
        summary(
            part,
            &format!("Kubernetes API requests per minute, {count} FlinkDeployments (steady)"),
            &per_minute(steady.requests_per_minute, target),
            "",
        );
        summary(
            part,
            &format!("{count} FlinkDeployments deployed in"),
            &format!("{:.1} s ({deploying})", deployed_in.as_secs_f64()),
            "",
        );
    }
    delete_all(&api).await;
    assert!(behind.is_empty(), "not all deployed: {behind:?}");
}

/// Seconds from `from` to `to` (negative when `to` comes first).
fn seconds(from: SystemTime, to: SystemTime) -> f64 {
    match to.duration_since(from) {
        Ok(d) => d.as_secs_f64(),
        Err(e) => -e.duration().as_secs_f64(),
    }
}

/// The median and the maximum.
fn median_max(values: &[f64]) -> (f64, f64) {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let median = if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    };
    (median, sorted[n - 1])
}

/// An RFC 3339 UTC timestamp as the operator logs it (`2026-12-01T16:42:58.640126Z`).
fn parse_timestamp(text: &str) -> Option<SystemTime> {
    let (date, time) = text.strip_suffix('Z')?.split_once('T')?;
    let mut date = date.split('-').map(|p| p.parse::<i64>().ok());
    let (year, month, day) = (date.next()??, date.next()??, date.next()??);
    let (hms, fraction) = time.split_once('.').unwrap_or((time, "0"));
    let mut hms = hms.split(':').map(|p| p.parse::<i64>().ok());
    let (hour, minute, second) = (hms.next()??, hms.next()??, hms.next()??);
    let nanos: u64 = format!("{fraction:0<9}").get(..9)?.parse().ok()?;
    // Days since 1970-01-01 of a proleptic Gregorian date.
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    let days = era * 146_097 + day_of_era - 719_468;
    let secs = days * 86_400 + hour * 3_600 + minute * 60 + second;
    Some(
        SystemTime::UNIX_EPOCH + Duration::from_secs(u64::try_from(secs).ok()?) + Duration::from_nanos(nanos),
    )
}

/// The operator's `acting` log lines for resources of `namespace`: when and which action.
fn operator_actions(namespace: &str) -> Vec<(SystemTime, String)> {
    let needle = format!("\"namespace\":\"{namespace}\"");
    crate::operator::operator_log()
        .lines()
        .filter(|line| line.contains(&needle))
        .filter_map(|line| {
            let entry: serde_json::Value = serde_json::from_str(line).ok()?;
            if entry.get("message")?.as_str()? != "acting" {
                return None;
            }
            let at = parse_timestamp(entry.get("timestamp")?.as_str()?)?;
            Some((at, entry.get("action")?.as_str()?.to_owned()))
        })
        .collect()
}

/// The first action named `name` (`Deploy`, `DeleteCluster`, ...) logged at or after `after`.
fn first_action(actions: &[(SystemTime, String)], name: &str, after: SystemTime) -> Option<SystemTime> {
    actions
        .iter()
        .filter(|(at, _)| *at >= after)
        .find(|(_, action)| {
            // Requests to the job come wrapped: `Job(StopWithSavepoint { .. })`.
            let action = action.strip_prefix("Job(").unwrap_or(action);
            action
                .strip_prefix(name)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '{', '(', ')']))
        })
        .map(|(at, _)| *at)
}

/// One upgrade's times: the benchmark's figures and where the time goes.
#[derive(Default)]
struct Round {
    to_trigger: f64,
    to_deployment: f64,
    /// Spec stored -> the operator logs StopWithSavepoint; that -> Flink's trigger.
    to_stop_action: Option<f64>,
    stop_action_to_trigger: Option<f64>,
    /// Savepoint completed -> the operator logs DeleteCluster (it noticed the savepoint).
    completed_to_delete: Option<f64>,
    /// Savepoint completed -> Flink logs the job FINISHED (a stop-with-savepoint reports
    /// its result once the job has ended): Flink's part.
    completed_to_finished: Option<f64>,
    /// Job FINISHED -> the operator logs DeleteCluster: the operator's part.
    finished_to_delete: Option<f64>,
    /// DeleteCluster -> the old JobManager pods gone (the HA metadata waits for that).
    delete_to_pods_gone: Option<f64>,
    /// Old JobManager pods gone -> the operator logs Deploy.
    pods_gone_to_deploy: Option<f64>,
    /// DeleteCluster -> Deploy, whatever happened in between.
    delete_to_deploy: Option<f64>,
    /// Deploy logged -> the new JobManager Deployment seen.
    deploy_to_deployment: Option<f64>,
}

impl Round {
    /// What the operator spends between the savepoint and the new JobManager Deployment:
    /// noticing the job ended with it, and deploying once the old JobManager is gone (the
    /// rest is Flink ending the job and Kubernetes removing the old pods).
    fn operator_share_after_savepoint(&self) -> Option<f64> {
        Some(self.finished_to_delete? + self.pods_gone_to_deploy? + self.deploy_to_deployment?)
    }
}

fn optional(value: Option<f64>) -> String {
    value.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.3} s"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: bench/operator.sh"]
async fn bench_operator_share_of_a_savepoint_upgrade() {
    let client = harness::client().await;
    crate::operator::shared(&client).await;
    let _alone = cluster_harness::exclusive_operator().await;
    let _operator_log = OperatorLogOnFailure;
    let ns = TestNamespace::new(&client, "share").await;
    let _logs = LogsOnFailure(ns.name.clone());
    objects::create_all(&client, &objects::flink_service_account(&ns.name)).await;
    let version = flink_harness::versions().last().unwrap().clone();
    let (api, state) = create_counter(&client, &ns.name, &version, "savepoint", &[]).await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns.name);
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns.name);
    let mut job = None;
    let mut rounds = Vec::new();
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
        // The new JobManager Deployment, seen as soon as it exists, and when the old
        // JobManager pods were gone.
        let (replaced, pods_gone) = wait_for_new_deployment(&deployments, &pods, old_uid).await;
        let savepoint = savepoint_dirs(&state)
            .difference(&savepoints_before)
            .next()
            .cloned()
            .expect("a new savepoint directory");
        let completed = std::fs::metadata(savepoint.join("_metadata"))
            .and_then(|m| m.modified())
            .unwrap();
        let triggered = trigger_time(&ns.name).expect("the savepoint's trigger in the JobManager log");
        let finished = finished_time(&ns.name);
        let actions = operator_actions(&ns.name);
        // (`stored` is taken once the patch has returned: the operator may act a moment before.)
        let stop_action = first_action(&actions, "StopWithSavepoint", stored - Duration::from_secs(2));
        let delete_action = stop_action.and_then(|at| first_action(&actions, "DeleteCluster", at));
        let deploy_action = delete_action.and_then(|at| first_action(&actions, "Deploy", at));
        let between = |a: Option<SystemTime>, b: Option<SystemTime>| a.zip(b).map(|(a, b)| seconds(a, b));
        let r = Round {
            to_trigger: seconds(stored, triggered),
            to_deployment: seconds(completed, replaced),
            to_stop_action: between(Some(stored), stop_action),
            stop_action_to_trigger: between(stop_action, Some(triggered)),
            completed_to_delete: between(Some(completed), delete_action),
            completed_to_finished: between(Some(completed), finished),
            finished_to_delete: between(finished, delete_action),
            delete_to_pods_gone: between(delete_action, pods_gone),
            pods_gone_to_deploy: between(pods_gone, deploy_action),
            delete_to_deploy: between(delete_action, deploy_action),
            deploy_to_deployment: between(deploy_action, Some(replaced)),
        };
        println!(
            "MEASURED upgrade {}: spec stored -> stop-with-savepoint in Flink {:.3} s; savepoint completed -> new JobManager Deployment {:.3} s",
            round + 1,
            r.to_trigger,
            r.to_deployment
        );
        println!(
            "MEASURED upgrade {} where the time goes: spec stored -> operator acts StopWithSavepoint {}, -> Flink triggers {}; savepoint completed -> Flink logs the job FINISHED {}, -> operator acts DeleteCluster {} ({} after the savepoint), -> old JobManager pods gone {}, -> operator acts Deploy {} ({} after DeleteCluster), -> new JobManager Deployment seen {}; the operator's share after the savepoint {}",
            round + 1,
            optional(r.to_stop_action),
            optional(r.stop_action_to_trigger),
            optional(r.completed_to_finished),
            optional(r.finished_to_delete),
            optional(r.completed_to_delete),
            optional(r.delete_to_pods_gone),
            optional(r.pods_gone_to_deploy),
            optional(r.delete_to_deploy),
            optional(r.deploy_to_deployment),
            optional(r.operator_share_after_savepoint()),
        );
        rounds.push(r);
    }
    running_job(&api, job).await;
    let part = format!("upgrade, {} savepoint upgrades (median, max)", rounds.len());
    let row = |figure: &str, values: Vec<Option<f64>>, target: &str| {
        let known: Vec<f64> = values.iter().flatten().copied().collect();
        let value = if known.len() == values.len() && !known.is_empty() {
            let (median, max) = median_max(&known);
            format!("{median:.3} s, {max:.3} s")
        } else {
            "n/a".to_owned()
        };
        summary(&part, figure, &value, target);
    };
    row(
        "spec stored -> stop-with-savepoint triggered in Flink",
        rounds.iter().map(|r| Some(r.to_trigger)).collect(),
        "< 0.200 s",
    );
    row(
        "savepoint completed -> new JobManager Deployment",
        rounds.iter().map(|r| Some(r.to_deployment)).collect(),
        "< 0.200 s",
    );
    row(
        "of which: spec stored -> operator acts StopWithSavepoint",
        rounds.iter().map(|r| r.to_stop_action).collect(),
        "",
    );
    row(
        "of which: operator acts StopWithSavepoint -> Flink triggers",
        rounds.iter().map(|r| r.stop_action_to_trigger).collect(),
        "",
    );
    row(
        "of which the operator's share (job FINISHED -> DeleteCluster, pods gone -> Deploy -> Deployment seen)",
        rounds.iter().map(Round::operator_share_after_savepoint).collect(),
        "< 0.200 s",
    );
    row(
        "of which: savepoint completed -> Flink logs the job FINISHED",
        rounds.iter().map(|r| r.completed_to_finished).collect(),
        "",
    );
    row(
        "of which: job FINISHED -> operator acts DeleteCluster",
        rounds.iter().map(|r| r.finished_to_delete).collect(),
        "",
    );
    row(
        "of which: DeleteCluster -> old JobManager pods gone",
        rounds.iter().map(|r| r.delete_to_pods_gone).collect(),
        "",
    );
    row(
        "of which: old JobManager pods gone -> operator acts Deploy",
        rounds.iter().map(|r| r.pods_gone_to_deploy).collect(),
        "",
    );
    row(
        "of which: operator acts Deploy -> new JobManager Deployment seen",
        rounds.iter().map(|r| r.deploy_to_deployment).collect(),
        "",
    );
    keep_operator_log();
    delete_all(&api).await;
}

async fn running_job(api: &Api<FlinkDeployment>, previous: Option<String>) -> Option<String> {
    let fd = harness::running_job(api, "counter", previous.as_deref()).await;
    fd.status?.job_status?.job_id
}

/// When the Deployment `counter` is one other than `old_uid` (as soon as it exists), and
/// when no JobManager pod of the old cluster was left (`None`: not seen before that).
async fn wait_for_new_deployment(
    deployments: &Api<Deployment>,
    pods: &Api<Pod>,
    old_uid: Option<String>,
) -> (SystemTime, Option<SystemTime>) {
    let deadline = Instant::now() + Duration::from_secs(180);
    let jobmanagers = ListParams::default().labels("app=counter,component=jobmanager");
    let mut pods_gone = None;
    loop {
        if let Ok(Some(d)) = deployments.get_opt("counter").await
            && d.metadata.uid != old_uid
        {
            return (SystemTime::now(), pods_gone);
        }
        if pods_gone.is_none()
            && let Ok(list) = pods.list_metadata(&jobmanagers).await
            && list.items.is_empty()
        {
            pods_gone = Some(SystemTime::now());
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
    newest_in_logs(namespace, |line| {
        if !(line.contains("Triggering checkpoint") && line.contains("Savepoint")) {
            return None;
        }
        line.split(" @ ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse::<u64>().ok())
    })
}

/// When Flink last logged a job of `namespace` FINISHED (its JobManager's log, in UTC).
fn finished_time(namespace: &str) -> Option<SystemTime> {
    use k8s_openapi::jiff::{civil::DateTime, tz::TimeZone};
    newest_in_logs(namespace, |line| {
        if !(line.contains("ExecutionGraph") && line.contains("switched from state RUNNING to FINISHED")) {
            return None;
        }
        // "2026-12-01 21:30:47,252 INFO ..."
        let stamp = line.get(..23)?.replacen(' ', "T", 1).replacen(',', ".", 1);
        let zoned = stamp.parse::<DateTime>().ok()?.to_zoned(TimeZone::UTC).ok()?;
        u64::try_from(zoned.timestamp().as_millisecond()).ok()
    })
}

/// The newest time (ms since the epoch) that `parse` finds in a line of the namespace's
/// pod logs.
fn newest_in_logs(namespace: &str, parse: impl Fn(&str) -> Option<u64>) -> Option<SystemTime> {
    let mut newest = None;
    for dir in harness::pod_dirs(namespace) {
        let mut files = Vec::new();
        collect_files(&dir, &mut files);
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            newest = text.lines().filter_map(&parse).max().max(newest);
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
