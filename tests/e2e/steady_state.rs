//! What the operator costs while nothing changes: ten FlinkDeployments of the real counting
//! job (native application clusters, Flink 1.20, savepoint upgrade mode with checkpoints),
//! all RUNNING and Ready, left alone. The benchmark (ignored here; run it with
//! `bench/operator.sh`) prints MEASURED lines, per resource per minute: its status writes
//! (resourceVersion changes seen by a watch, which works on any build, and the operator's
//! own count where it has one), its reconciles, the operator's Kubernetes API requests (all
//! of them, divided by the number of resources), and REST calls to its JobManager; the
//! fields the writes changed, the mean reconcile time, the operator's CPU time and how busy
//! the machine was.
//!
//! `STEADY_SECONDS` (default 300) is how long it measures, after the jobs have run for 30 s.
//! Besides the MEASURED lines, each benchmark prints SUMMARY lines, the rows of the table
//! that `bench/operator.sh` prints at the end ([`summary`]).

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use flink_operator_api::{FlinkDeployment, FlinkJobState};
use futures::{StreamExt, TryStreamExt};
use kube::{
    Api,
    api::{ApiResource, DeleteParams, DynamicObject, ListParams, PostParams},
    runtime::watcher,
};
use serde_json::{Value, json};

use crate::{
    cluster_harness::{self, TestNamespace, wait_for},
    flink_harness,
    harness::{self, LogsOnFailure},
    objects,
    reconcile::{OperatorLogOnFailure, counter_spec},
};

const RESOURCES: usize = 10;
const SETTLE: Duration = Duration::from_secs(30);
const KIND: &str = "FlinkDeployment";

/// The measuring time: `STEADY_SECONDS`, default 300.
fn steady_seconds() -> u64 {
    std::env::var("STEADY_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300)
}

/// The FlinkDeployment `name` of the counting job, as a user writes it, with its state
/// (checkpoints, savepoints, counts) in its own directory on the host.
async fn counting_job(namespace: &str, name: &str, version: &str) -> FlinkDeployment {
    let state = harness::state_dir(&format!("{namespace}-{name}"));
    let spec = tokio::task::spawn_blocking({
        let version = version.to_owned();
        move || counter_spec(&version, &state, "savepoint")
    })
    .await
    .unwrap();
    serde_json::from_value(json!({
        "apiVersion": "flink.apache.org/v1beta1", "kind": KIND,
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }))
    .unwrap()
}

/// RUNNING, STABLE and Ready.
fn running_and_ready(fd: &FlinkDeployment) -> bool {
    let Some(status) = &fd.status else {
        return false;
    };
    let running = status.job_status.as_ref().and_then(|j| j.state.as_ref()) == Some(&FlinkJobState::Running);
    let stable = status.lifecycle_state.map(|l| l.as_str()) == Some("STABLE");
    let ready = status
        .conditions
        .iter()
        .flatten()
        .any(|c| c.type_.as_deref() == Some("Ready") && c.status.as_deref() == Some("True"));
    running && stable && ready
}

/// What a watch of the namespace's FlinkDeployments has seen: per resource, how often its
/// resourceVersion changed, which fields the changes changed and the last change of each.
#[derive(Default)]
struct Writes {
    last: HashMap<String, (String, Value)>,
    changes: BTreeMap<String, u64>,
    fields: BTreeMap<String, (u64, String)>,
}

/// Watches the namespace's FlinkDeployments as raw JSON until dropped.
fn watch_writes(client: &kube::Client, namespace: &str) -> (Arc<Mutex<Writes>>, tokio::task::JoinHandle<()>) {
    let resource = ApiResource::erase::<FlinkDeployment>(&());
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource);
    let writes = Arc::new(Mutex::new(Writes::default()));
    let task = tokio::spawn({
        let writes = writes.clone();
        async move {
            let mut events = watcher(api, watcher::Config::default()).boxed();
            while let Some(event) = events.next().await {
                let object = match event {
                    Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => o,
                    _ => continue,
                };
                let (Some(name), Some(rv)) = (
                    object.metadata.name.clone(),
                    object.metadata.resource_version.clone(),
                ) else {
                    continue;
                };
                let value = serde_json::to_value(&object).unwrap_or(Value::Null);
                let mut writes = writes.lock().unwrap();
                let previous = writes.last.insert(name.clone(), (rv.clone(), value.clone()));
                // A relist after a restarted watch shows unchanged objects again: only a new
                // resourceVersion is a write.
                if let Some((old_rv, old)) = previous
                    && old_rv != rv
                {
                    *writes.changes.entry(name.clone()).or_default() += 1;
                    let mut paths = Vec::new();
                    changed_paths(&old, &value, String::new(), &mut paths);
                    for (path, from, to) in paths {
                        let field = writes.fields.entry(path).or_default();
                        field.0 += 1;
                        field.1 = format!("{name}: {} -> {}", short(&from), short(&to));
                    }
                }
            }
        }
    });
    (writes, task)
}

/// The paths of the leaves that differ between `old` and `new`, with both values
/// (resourceVersion and managedFields, which every write changes, left out).
fn changed_paths(old: &Value, new: &Value, path: String, out: &mut Vec<(String, Value, Value)>) {
    if path == ".metadata.resourceVersion" || path == ".metadata.managedFields" {
        return;
    }
    match (old, new) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for key in keys {
                changed_paths(
                    a.get(key).unwrap_or(&Value::Null),
                    b.get(key).unwrap_or(&Value::Null),
                    format!("{path}.{key}"),
                    out,
                );
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                changed_paths(x, y, format!("{path}[{i}]"), out);
            }
        }
        (a, b) if a != b => out.push((path, a.clone(), b.clone())),
        _ => {}
    }
}

/// A value, cut to a length that fits a line.
fn short(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(80) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text,
    }
}

/// One sample of the operator's metrics (`None`: the build has no such metric).
struct Sample {
    at: Instant,
    reconciles: Option<f64>,
    reconcile_durations: Option<f64>,
    reconcile_seconds: Option<f64>,
    status_writes: Option<f64>,
    flink_requests: Option<f64>,
    kubernetes_requests: Option<BTreeMap<String, f64>>,
    cpu_seconds: Option<f64>,
    /// The machine's busy and total CPU time (in ticks) and its 1-minute load average.
    machine: Option<(f64, f64, String)>,
}

fn sample(namespace: &str) -> Sample {
    let text = crate::operator::probe_get("/metrics");
    let ours = [("kind", KIND), ("namespace", namespace)];
    let kubernetes_requests = family_present(&text, "flink_operator_kubernetes_requests").then(|| {
        let mut by_method = BTreeMap::new();
        for (labels, value) in series(&text, "flink_operator_kubernetes_requests_total") {
            // Leader election's Lease renewals are the process's, not the resources'.
            let method = match labels.get("client").map(String::as_str) {
                Some(LEADER_ELECTION) => LEADER_ELECTION.to_owned(),
                _ => labels.get("method").cloned().unwrap_or_default(),
            };
            *by_method.entry(method).or_default() += value;
        }
        by_method
    });
    Sample {
        at: Instant::now(),
        reconciles: sum(&text, "flink_operator_resource_reconciles", "_total", &ours),
        reconcile_durations: sum(
            &text,
            "flink_operator_reconcile_duration_seconds",
            "_count",
            &[("kind", KIND)],
        ),
        reconcile_seconds: sum(
            &text,
            "flink_operator_reconcile_duration_seconds",
            "_sum",
            &[("kind", KIND)],
        ),
        status_writes: sum(&text, "flink_operator_status_writes", "_total", &ours),
        flink_requests: sum(&text, "flink_operator_flink_requests", "_total", &ours),
        kubernetes_requests,
        cpu_seconds: operator_cpu_seconds(),
        machine: machine(),
    }
}

fn machine() -> Option<(f64, f64, String)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let ticks: Vec<f64> = stat
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .filter_map(|t| t.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal ...
    let total: f64 = ticks.iter().take(8).sum();
    let idle = ticks.get(3)? + ticks.get(4)?;
    let load = std::fs::read_to_string("/proc/loadavg").ok()?;
    Some((total - idle, total, load.split_whitespace().next()?.to_owned()))
}

/// Whether the exposition has the metric family `family` (with or without series yet).
fn family_present(text: &str, family: &str) -> bool {
    text.lines().any(|l| {
        l.strip_prefix("# TYPE ")
            .and_then(|rest| rest.split_whitespace().next())
            == Some(family)
    })
}

/// The sum of `family` + `suffix` over the series whose labels include `wanted`.
pub(crate) fn sum(text: &str, family: &str, suffix: &str, wanted: &[(&str, &str)]) -> Option<f64> {
    family_present(text, family).then(|| {
        series(text, &format!("{family}{suffix}"))
            .into_iter()
            .filter(|(labels, _)| {
                wanted
                    .iter()
                    .all(|(k, v)| labels.get(*k).map(String::as_str) == Some(*v))
            })
            .map(|(_, value)| value)
            .sum()
    })
}

/// The series of metric `name`: labels and value.
fn series(text: &str, name: &str) -> Vec<(HashMap<String, String>, f64)> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|line| {
            let (head, value) = line.rsplit_once(' ')?;
            let value: f64 = value.trim().parse().ok()?;
            let (metric, labels) = match head.split_once('{') {
                Some((metric, rest)) => (metric, rest.strip_suffix('}')?),
                None => (head, ""),
            };
            (metric == name).then(|| {
                let labels = labels
                    .split(',')
                    .filter_map(|pair| {
                        let (k, v) = pair.split_once('=')?;
                        Some((k.to_owned(), v.trim_matches('"').to_owned()))
                    })
                    .collect();
                (labels, value)
            })
        })
        .collect()
}

/// The operator process's user + system CPU time.
fn operator_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", crate::operator::operator_pid())).ok()?;
    // pid (comm) state ppid ...: utime and stime are fields 14 and 15.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    let per_second = std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse::<f64>().ok())
        .unwrap_or(100.0);
    Some(ticks / per_second)
}

/// The `client` label of leader election's Kubernetes API requests.
const LEADER_ELECTION: &str = "leader-election";

/// The operator's Kubernetes API requests so far (every client and method), from its `/metrics`;
/// `None` when the build has no such metric.
pub(crate) fn operator_kubernetes_requests() -> Option<f64> {
    let text = crate::operator::probe_get("/metrics");
    family_present(&text, "flink_operator_kubernetes_requests").then(|| {
        series(&text, "flink_operator_kubernetes_requests_total")
            .into_iter()
            .map(|(_, value)| value)
            .sum()
    })
}

/// One row of the table that `bench/operator.sh` prints at the end of its run: the part,
/// the figure, its value and the target the issue sets (empty: none).
pub(crate) fn summary(part: &str, figure: &str, value: &str, target: &str) {
    println!("SUMMARY|{part}|{figure}|{value}|{target}");
}

/// Copies the operator's log to `BENCH_OPERATOR_LOG` when it is set (`bench/operator.sh`
/// sets it, so that the log outlives the run's work directory).
pub(crate) fn keep_operator_log() {
    if let Ok(path) = std::env::var("BENCH_OPERATOR_LOG") {
        let _ = std::fs::write(path, crate::operator::operator_log());
    }
}

/// `per_minute` of the difference, per resource, or why there is none.
fn rate(before: Option<f64>, after: Option<f64>, minutes: f64) -> String {
    match (before, after) {
        (Some(b), Some(a)) => format!("{:.2}", (a - b) / RESOURCES as f64 / minutes),
        _ => "n/a (this build has no such metric)".to_owned(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: bench/operator.sh"]
async fn bench_operator_steady_state() {
    let client = harness::client().await;
    crate::operator::shared(&client).await;
    let _alone = cluster_harness::exclusive_operator().await;
    let _operator_log = OperatorLogOnFailure;
    // On failure, the namespace goes (best effort) and, with this process, the runtime stops
    // every Flink process it started.
    let ns = TestNamespace::new(&client, "steady").await;
    let _logs = LogsOnFailure(ns.name.clone());
    objects::create_all(&client, &objects::flink_service_account(&ns.name)).await;
    let version = flink_harness::versions()
        .into_iter()
        .find(|v| v.starts_with("1.20."))
        .expect("Flink 1.20 in tests/flink/versions");
    let api: Api<FlinkDeployment> = Api::namespaced(client.clone(), &ns.name);
    let names: Vec<String> = (0..RESOURCES).map(|i| format!("counter-{i}")).collect();

    let started = Instant::now();
    for name in &names {
        let fd = counting_job(&ns.name, name, &version).await;
        api.create(&PostParams::default(), &fd).await.unwrap();
    }
    wait_for(
        "every job RUNNING and Ready",
        Duration::from_secs(900),
        || async {
            let list = api.list(&ListParams::default()).await.ok()?;
            (list.items.iter().filter(|fd| running_and_ready(fd)).count() == RESOURCES).then_some(())
        },
    )
    .await;
    println!(
        "MEASURED steady state: {RESOURCES} FlinkDeployments (Flink {version}) RUNNING and Ready {:.1} s after the first create",
        started.elapsed().as_secs_f64()
    );

    let (writes, watch) = watch_writes(&client, &ns.name);
    tokio::time::sleep(SETTLE).await;
    let seconds = steady_seconds();
    let before_writes = writes.lock().unwrap().changes.clone();
    writes.lock().unwrap().fields.clear();
    let before = sample(&ns.name);
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    let after = sample(&ns.name);
    let (after_writes, fields) = {
        let writes = writes.lock().unwrap();
        (writes.changes.clone(), writes.fields.clone())
    };
    watch.abort();
    let minutes = after.at.duration_since(before.at).as_secs_f64() / 60.0;

    // Still all running: the figures are those of a steady state.
    let list = api.list(&ListParams::default()).await.unwrap();
    let not_running: Vec<String> = list
        .items
        .iter()
        .filter(|fd| !running_and_ready(fd))
        .filter_map(|fd| fd.metadata.name.clone())
        .collect();

    let per_resource: Vec<u64> = names
        .iter()
        .map(|n| after_writes.get(n).copied().unwrap_or(0) - before_writes.get(n).copied().unwrap_or(0))
        .collect();
    let total: u64 = per_resource.iter().sum();
    println!(
        "MEASURED steady state over {seconds} s ({} resources, each RUNNING for 30 s first){}",
        RESOURCES,
        if not_running.is_empty() {
            String::new()
        } else {
            format!("; NOT running and Ready at the end: {}", not_running.join(", "))
        }
    );
    let steady = format!("steady, {RESOURCES} RUNNING jobs, {seconds} s");
    summary(
        &steady,
        "status writes per resource per minute (watch)",
        &format!("{:.2}", total as f64 / RESOURCES as f64 / minutes),
        "",
    );
    summary(
        &steady,
        "status writes per resource per minute (operator metric)",
        &rate(before.status_writes, after.status_writes, minutes),
        "",
    );
    summary(
        &steady,
        "reconciles per resource per minute",
        &rate(before.reconciles, after.reconciles, minutes),
        "",
    );
    println!(
        "MEASURED status writes per resource per minute (resourceVersion changes seen by a watch): {:.2} ({total} in all, {:.2}/s; per resource {} to {})",
        total as f64 / RESOURCES as f64 / minutes,
        total as f64 / (minutes * 60.0),
        per_resource.iter().min().unwrap(),
        per_resource.iter().max().unwrap(),
    );
    let mut fields: Vec<(String, (u64, String))> = fields.into_iter().collect();
    fields.sort_by(|a, b| b.1.0.cmp(&a.1.0).then(a.0.cmp(&b.0)));
    if fields.is_empty() {
        println!("MEASURED fields the writes changed: none");
    }
    for (path, (n, last)) in fields.iter().take(20) {
        println!("MEASURED field the writes changed: {path} x{n} (last: {last})");
    }
    println!(
        "MEASURED status writes per resource per minute (operator metric): {}",
        rate(before.status_writes, after.status_writes, minutes)
    );
    println!(
        "MEASURED reconciles per resource per minute: {} (operator metric per resource); {} (reconcile_duration_seconds_count of the kind)",
        rate(before.reconciles, after.reconciles, minutes),
        rate(before.reconcile_durations, after.reconcile_durations, minutes)
    );
    if let (Some(n0), Some(n1), Some(s0), Some(s1)) = (
        before.reconcile_durations,
        after.reconcile_durations,
        before.reconcile_seconds,
        after.reconcile_seconds,
    ) && n1 > n0
    {
        println!("MEASURED mean reconcile duration: {:.3} s", (s1 - s0) / (n1 - n0));
    }
    match (&before.kubernetes_requests, &after.kubernetes_requests) {
        (Some(b), Some(a)) => {
            let delta = |method: &String| a[method] - b.get(method).copied().unwrap_or(0.0);
            let by_method: Vec<String> = a
                .keys()
                .filter(|method| *method != LEADER_ELECTION)
                .map(|method| format!("{method} {:.2}", delta(method) / RESOURCES as f64 / minutes))
                .collect();
            let total: f64 = a
                .keys()
                .filter(|method| *method != LEADER_ELECTION)
                .map(delta)
                .sum();
            if a.contains_key(LEADER_ELECTION) {
                let lease = delta(&LEADER_ELECTION.to_owned()) / minutes;
                summary(
                    &steady,
                    "leader election's Lease requests per minute (the process's, whatever the resources)",
                    &format!("{lease:.2}"),
                    "",
                );
                println!(
                    "MEASURED leader election's Lease requests per minute (not per resource): {lease:.2}"
                );
            }
            summary(
                &steady,
                "Kubernetes API requests per resource per minute",
                &format!(
                    "{:.2} ({})",
                    total / RESOURCES as f64 / minutes,
                    by_method.join(", ")
                ),
                "",
            );
            println!(
                "MEASURED Kubernetes API requests per resource per minute (operator total / {RESOURCES}): {:.2} ({})",
                total / RESOURCES as f64 / minutes,
                by_method.join(", ")
            );
        }
        _ => {
            summary(
                &steady,
                "Kubernetes API requests per resource per minute",
                "n/a (this build has no such metric)",
                "",
            );
            println!(
                "MEASURED Kubernetes API requests per resource per minute: n/a (this build has no such metric)"
            )
        }
    }
    println!(
        "MEASURED REST calls to the JobManager per job per minute: {}",
        rate(before.flink_requests, after.flink_requests, minutes)
    );
    summary(
        &steady,
        "REST calls to the JobManager per job per minute",
        &rate(before.flink_requests, after.flink_requests, minutes),
        "",
    );
    if let (Some(b), Some(a)) = (before.cpu_seconds, after.cpu_seconds) {
        summary(
            &steady,
            "operator CPU, all resources",
            &format!("{:.2} s per minute", (a - b) / minutes),
            "",
        );
        println!(
            "MEASURED operator CPU: {:.2} s per minute ({:.1} % of one core)",
            (a - b) / minutes,
            (a - b) / (minutes * 60.0) * 100.0
        );
    }
    if let (Some((busy0, total0, load0)), Some((busy1, total1, load1))) = (&before.machine, &after.machine) {
        println!(
            "MEASURED machine while measuring: CPU {:.0} % busy ({} cores), load average {load0} at the start, {load1} at the end",
            (busy1 - busy0) / (total1 - total0) * 100.0,
            std::thread::available_parallelism().map_or(0, |n| n.get()),
        );
    }
    if !not_running.is_empty() {
        summary(
            &steady,
            "NOT running and Ready at the end",
            &not_running.join(" "),
            "",
        );
    }
    keep_operator_log();
    delete_all(&api).await;
    assert!(
        not_running.is_empty(),
        "not RUNNING and Ready at the end: {not_running:?}"
    );
}

/// Deletes the namespace's FlinkDeployments and waits until they are gone.
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
        .buffer_unordered(RESOURCES)
        .try_collect::<Vec<()>>()
        .await
        .unwrap();
    crate::harness::wait_until_none(api, "every FlinkDeployment gone", Duration::from_secs(300)).await;
}
