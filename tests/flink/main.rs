//! Tests against real Flink clusters on loopback: JobManager and TaskManager JVMs started
//! from the Flink distributions in `tests/flink/versions` (installed from PyPI into the cache
//! by `tests/flink/install.sh`), running the stateful test job from `tests/jobs/`.

// Test code: a panic is a failing test with its reason.
#![allow(clippy::unwrap_used)]

mod rest;

use std::time::{Duration, Instant};

use flink_operator_test_support::flink_harness as harness;
use harness::{ApplicationCluster, JOB_CLASS, SLOTS, SessionCluster};

/// A session cluster of each version starts, registers one TaskManager with its slots, loses
/// its JobManager on request, and stops without leaving a JVM behind.
#[tokio::test]
async fn session_cluster_starts_and_stops() {
    for version in harness::versions() {
        let mut cluster = SessionCluster::start(&version).await;
        let (status, overview) = harness::get_json(&cluster.rest_url(), "/overview").await.unwrap();
        assert_eq!(status, 200, "{overview}");
        assert_eq!(overview["taskmanagers"], 1, "{overview}");
        assert_eq!(overview["slots-total"], SLOTS, "{overview}");
        let reported = overview["flink-version"].as_str().unwrap_or_default();
        assert_eq!(reported, version, "{overview}");
        // Let the JVMs settle before measuring them idle.
        tokio::time::sleep(Duration::from_secs(2)).await;
        eprintln!(
            "Flink {version} session cluster: ready after {:.1} s; idle RSS {}",
            cluster.ready_after().as_secs_f64(),
            cluster.rss()
        );

        // Losing the JobManager closes the REST port (what the REST client's connection-error
        // handling is tested against).
        cluster.stop_job_manager();
        assert!(cluster.job_manager_pid().is_none());
        let refused = harness::get_json(&cluster.rest_url(), "/overview").await;
        assert!(refused.is_err(), "{refused:?}");

        let pids: Vec<u32> = cluster
            .job_manager_pid()
            .into_iter()
            .chain(cluster.task_manager_pids())
            .collect();
        assert_eq!(pids.len(), 1);
        let stopping = Instant::now();
        cluster.stop().await;
        eprintln!(
            "Flink {version} session cluster: stopped in {:.1} s",
            stopping.elapsed().as_secs_f64()
        );
        for pid in pids {
            assert!(
                !std::path::Path::new(&format!("/proc/{pid}")).exists(),
                "JVM {pid} still exists after stop"
            );
        }
    }
}

/// An application cluster of each version runs the keyed-counter job: RUNNING on every
/// vertex, and the per-key count files appear and grow.
#[tokio::test]
async fn application_cluster_runs_the_test_job() {
    for version in harness::versions() {
        let jar = harness::job_jar_async(&version).await;
        let job_id = harness::fresh_id();
        let out = std::env::temp_dir().join(format!("flink-operator-counts-{job_id}"));
        let out_arg = out.to_str().unwrap().to_owned();
        let cluster = ApplicationCluster::start(
            &version,
            &jar,
            JOB_CLASS,
            &job_id,
            None,
            &["--rate", "40", "--keys", "4", "--out", &out_arg],
            &[],
        )
        .await;
        let launched = Instant::now();
        let job = cluster
            .wait_for_job_running(&job_id, Duration::from_secs(60))
            .await;
        let running_after = cluster.ready_after() + launched.elapsed();
        assert_eq!(job["jid"], job_id.as_str());

        let (_, jobs) = harness::get_json(&cluster.rest_url(), "/jobs/overview")
            .await
            .unwrap();
        let listed = jobs["jobs"].as_array().unwrap();
        assert_eq!(listed.len(), 1, "{jobs}");
        assert_eq!(listed[0]["state"], "RUNNING", "{jobs}");

        let first = cluster.wait_for_counts(&out, 4, 2, Duration::from_secs(30)).await;
        let target = first.values().copied().max().unwrap() + 3;
        let later = cluster
            .wait_for_counts(&out, 4, target, Duration::from_secs(30))
            .await;
        assert!(first.iter().all(|(k, c)| later[k] > *c), "{first:?} -> {later:?}");
        let stdout = cluster.task_manager_stdout();
        assert!(stdout.contains("key=0 count="), "TaskManager stdout:\n{stdout}");
        eprintln!(
            "Flink {version} application cluster: job RUNNING after {:.1} s; RSS with the job running {}",
            running_after.as_secs_f64(),
            cluster.rss()
        );

        cluster.stop().await;
        let _ = std::fs::remove_dir_all(&out);
    }
}

/// Even a test process killed with SIGKILL leaves no JVM behind: the harness's reaper stops
/// them. Runs this test binary again as a child that holds a session cluster, kills it, and
/// checks that its JVMs and its work dir go away.
#[test]
fn a_killed_test_process_leaves_no_jvm() {
    use std::io::BufRead as _;

    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "reaper_child_holds_a_cluster",
            "--nocapture",
        ])
        .env(REAPER_CHILD_ENV, "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let line = stdout
        .lines()
        .map_while(Result::ok)
        .find(|line| line.starts_with("FLINK_CLUSTER "))
        .unwrap_or_else(|| panic!("the child exited without starting a cluster: {:?}", child.wait()));
    let fields: Vec<&str> = line.split_whitespace().collect();
    let (work, pids) = (std::path::PathBuf::from(fields[1]), &fields[2..]);
    assert_eq!(pids.len(), 2, "{line}");

    child.kill().unwrap();
    child.wait().unwrap();
    let killed = Instant::now();

    // Gone means: no such process, a zombie, or (the PID reused) no longer a java process.
    let alive = |pid: &str| {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        !status.is_empty()
            && !status.lines().any(|l| l.starts_with("State:") && l.contains('Z'))
            && String::from_utf8_lossy(&cmdline).contains("java")
    };
    while pids.iter().any(|pid| alive(pid)) || work.exists() {
        assert!(
            killed.elapsed() < Duration::from_secs(20),
            "20 s after the test process was killed: JVMs {:?} alive, work dir {} exists: {}",
            pids.iter().filter(|pid| alive(pid)).collect::<Vec<_>>(),
            work.display(),
            work.exists()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!(
        "the reaper stopped the JVMs of a killed test process within {:.1} s",
        killed.elapsed().as_secs_f64()
    );
}

const REAPER_CHILD_ENV: &str = "FLINK_HARNESS_REAPER_CHILD";

/// The child of `a_killed_test_process_leaves_no_jvm`: holds a session cluster until killed.
/// Does nothing unless started by that test.
#[tokio::test]
#[ignore = "started by a_killed_test_process_leaves_no_jvm"]
async fn reaper_child_holds_a_cluster() {
    if std::env::var_os(REAPER_CHILD_ENV).is_none() {
        return;
    }
    let version = harness::versions().pop().unwrap();
    let cluster = SessionCluster::start(&version).await;
    let pids: Vec<String> = cluster
        .job_manager_pid()
        .into_iter()
        .chain(cluster.task_manager_pids())
        .map(|pid| pid.to_string())
        .collect();
    println!(
        "FLINK_CLUSTER {} {}",
        cluster.work_dir().display(),
        pids.join(" ")
    );
    tokio::time::sleep(Duration::from_secs(300)).await;
    panic!("not killed within 300 s");
}
