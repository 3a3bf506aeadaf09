//! Flink on Java 17 needs its module options (`--add-exports`/`--add-opens`), which its
//! distribution sets in its own conf/config.yaml and the operator's configuration file
//! replaces. A FlinkDeployment whose spec holds no Java option must run all the same: the
//! operator's default configuration (the chart's conf/operator-defaults.yaml, which these
//! tests' operator starts from) brings them. A spec's own `env.java.opts.all` is added to
//! them, never replaces them, and stays itself.

use std::{collections::HashMap, time::Duration};

use flink_operator_api::{FlinkDeployment, FlinkJobState};
use flink_operator_controller::flink::JobId;
use k8s_openapi::api::core::v1::Pod;
use kube::{Api, Client};

use crate::{
    cluster_harness::{self, TestNamespace},
    flink_harness,
    harness::{self, LogsOnFailure},
    objects,
    reconcile::{OperatorLogOnFailure, create_counter},
};

/// The command lines of the JobManager's and a TaskManager's JVM of a test job deployed
/// with `config` in its spec, once the job runs with all its tasks.
struct Jvms {
    job_manager: Vec<String>,
    task_manager: Vec<String>,
}

async fn deploy_and_read_jvms(client: &Client, version: &str, config: &[(&str, &str)]) -> Jvms {
    let ns = TestNamespace::new(client, "java-defaults").await;
    let _logs = LogsOnFailure(ns.name.clone());
    objects::create_all(client, &objects::flink_service_account(&ns.name)).await;
    let (api, _state) = create_counter(client, &ns.name, version, "stateless", config).await;

    // What the test is about: the spec has no Java options but those of `config`.
    let fd = api.get("counter").await.unwrap();
    let java_keys: Vec<String> = fd
        .spec
        .flink_configuration
        .as_ref()
        .map(|c| {
            c.flattened()
                .into_keys()
                .filter(|k| k.starts_with("env.java."))
                .collect()
        })
        .unwrap_or_default();
    let expected: Vec<String> = config
        .iter()
        .map(|(k, _)| k.to_string())
        .filter(|k| k.starts_with("env.java."))
        .collect();
    assert_eq!(java_keys, expected, "{version}: the spec's Java options");

    let job_id = running_job(&api, version).await;
    let rest = harness::rest_client(&harness::rest_address(client, &ns.name, "counter").await);
    harness::wait_for_running_job(&rest, &JobId::from(job_id.as_str())).await;
    let job_manager =
        harness::wait_for_ready_pods(client, &ns.name, "app=counter,component=jobmanager", 1).await;
    let task_managers =
        harness::wait_for_ready_pods(client, &ns.name, "app=counter,component=taskmanager", 1).await;
    Jvms {
        job_manager: java_command_line(&job_manager[0]),
        task_manager: java_command_line(&task_managers[0]),
    }
}

/// Waits for the job RUNNING; returns its id. Without the module options the job fails
/// within seconds (`InaccessibleObjectException`), and the resource with it: that, or a
/// timeout, shows the status.
async fn running_job(api: &Api<FlinkDeployment>, version: &str) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(240);
    loop {
        let status = api.get("counter").await.ok().and_then(|fd| fd.status);
        let job = status.as_ref().and_then(|s| s.job_status.clone());
        if let Some(job) = job
            && job.state == Some(FlinkJobState::Running)
            && let Some(id) = job.job_id
        {
            return id;
        }
        let failed = status
            .as_ref()
            .and_then(|s| s.lifecycle_state)
            .map(|l| l.as_str())
            == Some("FAILED");
        assert!(
            !failed && std::time::Instant::now() < deadline,
            "{version}: the job did not reach RUNNING; status: {}",
            serde_json::to_string_pretty(&status).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The command line of the JVM of a pod's Flink container: its process, or the first `java`
/// below it.
fn java_command_line(pod: &Pod) -> Vec<String> {
    let root = harness::container_pid(pod, "flink-main-container").expect("the container's pid");
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        // `pid (comm) state ppid ...`; comm may hold spaces and parentheses.
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if let Some(ppid) = ppid {
            children.entry(ppid).or_default().push(pid);
        }
    }
    let mut queue = vec![root];
    while let Some(pid) = queue.pop() {
        let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let args: Vec<String> = raw
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        if args.first().is_some_and(|a| a == "java" || a.ends_with("/java")) {
            return args;
        }
        queue.extend(children.get(&pid).into_iter().flatten());
    }
    panic!(
        "no java process at or below pid {root} of pod {:?}",
        pod.metadata.name
    );
}

/// Asserts that `jvm` has every one of Flink's Java 17 module options for `version`, as its
/// distribution's own conf/config.yaml lists them; returns the position of the last.
fn has_module_options(jvm: &[String], version: &str, what: &str) -> usize {
    objects::java_opts(version)
        .split_whitespace()
        .map(|option| {
            jvm.iter()
                .position(|a| a == option)
                .unwrap_or_else(|| panic!("{version}: the {what} JVM lacks {option}: {jvm:?}"))
        })
        .max()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spec_without_java_options_runs_on_java_17_with_the_operators_module_options() {
    let client = harness::client().await;
    crate::operator::shared(&client).await;
    let _turn = cluster_harness::beside_others().await;
    let _operator_log = OperatorLogOnFailure;
    let started = std::time::Instant::now();
    let versions = flink_harness::versions();
    let jvms = futures::future::join_all(
        versions
            .iter()
            .map(|version| deploy_and_read_jvms(&client, version, &[])),
    )
    .await;
    eprintln!(
        "{versions:?}: jobs RUNNING with every task running {:?} after the specs were created",
        started.elapsed()
    );
    for (version, jvm) in versions.iter().zip(&jvms) {
        for (what, args) in [
            ("JobManager", &jvm.job_manager),
            ("TaskManager", &jvm.task_manager),
        ] {
            has_module_options(args, version, what);
            // The test platform's default env.java.opts.all (tests/support/src/cluster_harness.rs).
            assert!(
                args.iter().any(|a| a == "-XX:+UseSerialGC"),
                "{version}: the {what} JVM lacks the platform's options: {args:?}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_specs_own_java_options_are_kept_and_added_after_the_module_options() {
    let client = harness::client().await;
    crate::operator::shared(&client).await;
    let _turn = cluster_harness::beside_others().await;
    let _operator_log = OperatorLogOnFailure;
    let version = flink_harness::versions().first().unwrap().clone();
    let own = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Dflink-operator.test.own-option=kept";
    let jvm = deploy_and_read_jvms(&client, &version, &[("env.java.opts.all", own)]).await;
    for (what, args) in [
        ("JobManager", &jvm.job_manager),
        ("TaskManager", &jvm.task_manager),
    ] {
        let last_module_option = has_module_options(args, &version, what);
        let own_option = args
            .iter()
            .position(|a| a == "-Dflink-operator.test.own-option=kept")
            .unwrap_or_else(|| panic!("{version}: the {what} JVM lacks the spec's option: {args:?}"));
        assert!(
            own_option > last_module_option,
            "{version}: the {what} JVM has the spec's options before the defaults: {args:?}"
        );
    }
}
