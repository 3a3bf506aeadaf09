//! `kubectl logs`, `exec` and `port-forward` on the local runtime's pods: the real kubectl
//! (of the control plane's release) against the control plane, whose API server calls the
//! runtime's kubelet API.

use std::{
    io::{BufRead, BufReader, Read},
    process::{Child, Command, Output, Stdio},
    sync::mpsc,
    time::{Duration, Instant},
};

use k8s_openapi::api::core::v1::Pod;
use kube::{Api, Client};
use serde_json::{Value, json};

use crate::{
    cluster_harness::{self, TestNamespace, wait_for},
    flink_harness,
    harness::{self, LogsOnFailure, rest_client},
    kubectl_tool::kubectl_binary,
    objects,
};

fn kubectl(namespace: &str) -> Command {
    let mut command = Command::new(kubectl_binary());
    command
        .arg("--kubeconfig")
        .arg(&cluster_harness::control_plane().kubeconfig)
        .arg("--namespace")
        .arg(namespace)
        .stdin(Stdio::null());
    command
}

/// Runs kubectl to its end (at most `timeout`: it is killed then, and the test fails).
pub(crate) async fn run(namespace: &str, args: &[&str], stdin: Option<&str>) -> Output {
    let mut command = kubectl(namespace);
    command.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    if stdin.is_some() {
        command.stdin(Stdio::piped());
    }
    let input = stdin.map(str::to_owned);
    let description = format!("kubectl {}", args.join(" "));
    tokio::task::spawn_blocking(move || {
        let mut child = Killed(command.spawn().unwrap());
        if let Some(input) = input {
            use std::io::Write;
            let mut pipe = child.0.stdin.take().unwrap();
            pipe.write_all(input.as_bytes()).unwrap();
        }
        let (tx, rx) = mpsc::channel();
        let (mut stdout, mut stderr) = (child.0.stdout.take().unwrap(), child.0.stderr.take().unwrap());
        std::thread::spawn(move || {
            let mut out = Vec::new();
            let _ = stdout.read_to_end(&mut out);
            let _ = tx.send(out);
        });
        let err = std::thread::spawn(move || {
            let mut err = Vec::new();
            let _ = stderr.read_to_end(&mut err);
            err
        });
        let Ok(stdout) = rx.recv_timeout(Duration::from_secs(60)) else {
            panic!("{description} did not end within 60 s");
        };
        let status = child.0.wait().unwrap();
        Output {
            status,
            stdout,
            stderr: err.join().unwrap(),
        }
    })
    .await
    .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A kubectl that runs in the background; killed when dropped (also when a test fails).
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Reads lines of a background kubectl's stdout into a channel.
fn lines_of(child: &mut Child) -> mpsc::Receiver<String> {
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// The first line of `lines` that `matches`, within `timeout`.
async fn line_matching(
    lines: &mpsc::Receiver<String>,
    timeout: Duration,
    what: &str,
    matches: impl Fn(&str) -> bool,
) -> String {
    let deadline = Instant::now() + timeout;
    let mut seen = Vec::new();
    while Instant::now() < deadline {
        match lines.try_recv() {
            Ok(line) if matches(&line) => return line,
            Ok(line) => seen.push(line),
            Err(mpsc::TryRecvError::Empty) => tokio::time::sleep(Duration::from_millis(50)).await,
            Err(mpsc::TryRecvError::Disconnected) => break,
        }
    }
    panic!(
        "no line with {what} within {timeout:?}; saw:\n{}",
        seen.join("\n")
    );
}

/// `kubectl port-forward TARGET :8081` in the background, and the local port it chose.
async fn port_forward(namespace: &str, target: &str) -> (Killed, u16) {
    let mut child = Killed(
        kubectl(namespace)
            .args(["port-forward", target, ":8081"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap(),
    );
    let lines = lines_of(&mut child.0);
    // "Forwarding from 127.0.0.1:40123 -> 8081"
    let line = line_matching(
        &lines,
        Duration::from_secs(30),
        "Forwarding from 127.0.0.1",
        |l| l.starts_with("Forwarding from 127.0.0.1:"),
    )
    .await;
    let port = line
        .trim_start_matches("Forwarding from 127.0.0.1:")
        .split_whitespace()
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {line:?}"));
    (child, port)
}

/// A container beside the JobManager that says which process it is and counts.
fn sidecar(version: &str) -> Value {
    json!({
        "name": "sidecar",
        "image": objects::image(version),
        "command": ["bash", "-c",
            // `$$$$` is `$$` once Kubernetes has expanded `$(VAR)` references (`$$` escapes `$`).
            "echo \"sidecar started as pid $$$$\"; i=0; while true; do i=$((i+1)); echo \"tick $i\"; sleep 0.5; done"],
    })
}

async fn container_state(api: &Api<Pod>, pod: &str, container: &str) -> Option<(i32, bool)> {
    let pod = api.get(pod).await.ok()?;
    let status = pod
        .status?
        .container_statuses?
        .into_iter()
        .find(|s| s.name == container)?;
    Some((status.restart_count, status.state?.running.is_some()))
}

fn kill_group(pid: u32) {
    let status = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pid}")])
        .status()
        .unwrap();
    assert!(status.success(), "kill -KILL -{pid}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_logs_exec_and_port_forward_reach_a_jobmanager_pod() {
    let _turn = cluster_harness::beside_others().await;
    let client: Client = harness::client().await;
    let ns = TestNamespace::new(&client, "rt-kubectl").await;
    let _logs = LogsOnFailure(ns.name.clone());
    let version = flink_harness::versions().last().unwrap().clone();
    let id = "kc";
    // The JobManager alone (its REST API answers without TaskManagers), with a sidecar.
    let mut cluster = objects::standalone_session(&ns.name, id, &version);
    cluster.retain(|o| o["metadata"]["name"] != json!(format!("{id}-taskmanager")));
    for object in &mut cluster {
        if object["kind"] == "Deployment" {
            let containers = object["spec"]["template"]["spec"]["containers"]
                .as_array_mut()
                .unwrap();
            containers.push(sidecar(&version));
        }
    }
    objects::create_all(&client, &cluster).await;
    let jm =
        harness::wait_for_ready_pods(&client, &ns.name, &format!("app={id},component=jobmanager"), 1).await;
    let pod = jm[0].metadata.name.clone().unwrap();
    let api: Api<Pod> = Api::namespaced(client.clone(), &ns.name);
    let n = ns.name.as_str();

    // logs: the JobManager's startup lines, from the first container unless -c says otherwise.
    let started = Instant::now();
    let out = run(n, &["logs", &pod], None).await;
    eprintln!("kubectl logs: {:?}", started.elapsed());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let logs = text(&out.stdout);
    assert!(
        logs.contains("Starting StandaloneSessionClusterEntrypoint")
            || logs.contains("org.apache.flink.runtime.entrypoint.ClusterEntrypoint"),
        "no JobManager startup lines in:\n{logs}"
    );
    assert!(!logs.contains("sidecar started"), "{logs}");
    let out = run(n, &["logs", &pod, "-c", "sidecar"], None).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let sidecar_logs = text(&out.stdout);
    let first_pid = harness::container_pid(&jm[0], "sidecar").unwrap();
    assert!(
        sidecar_logs.starts_with(&format!("sidecar started as pid {first_pid}\n")),
        "{sidecar_logs}"
    );
    assert!(!sidecar_logs.contains("ClusterEntrypoint"), "{sidecar_logs}");
    // --tail
    let out = run(n, &["logs", &pod, "-c", "sidecar", "--tail=2"], None).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let tail = text(&out.stdout);
    assert_eq!(tail.lines().count(), 2, "{tail}");
    assert!(tail.lines().all(|l| l.starts_with("tick ")), "{tail}");
    // What the logs cannot answer is refused, with the reason.
    let out = run(n, &["logs", &pod, "-c", "sidecar", "--timestamps"], None).await;
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("timestamps are not supported"),
        "{}",
        text(&out.stderr)
    );
    // --previous before any restart: the kubelet's error.
    let out = run(n, &["logs", &pod, "-c", "sidecar", "--previous"], None).await;
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("previous terminated container \"sidecar\""),
        "{}",
        text(&out.stderr)
    );

    // logs -f streams, and ends when the container's process ends.
    let mut follow = Killed(
        kubectl(n)
            .args(["logs", "-f", &pod, "-c", "sidecar", "--tail=1"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap(),
    );
    let lines = lines_of(&mut follow.0);
    let first = line_matching(&lines, Duration::from_secs(20), "a tick", |l| {
        l.starts_with("tick ")
    })
    .await;
    let first: u64 = first.trim_start_matches("tick ").parse().unwrap();
    // Lines written after the request arrive while it runs.
    line_matching(&lines, Duration::from_secs(20), "a later tick", |l| {
        l.trim_start_matches("tick ")
            .parse::<u64>()
            .is_ok_and(|t| t >= first + 3)
    })
    .await;
    kill_group(first_pid);
    let ended = Instant::now();
    let status = wait_for("kubectl logs -f to end", Duration::from_secs(20), || {
        let status = follow.0.try_wait().unwrap();
        async move { status }
    })
    .await;
    eprintln!(
        "kubectl logs -f ended {:?} after the process was killed",
        ended.elapsed()
    );
    assert!(status.success(), "kubectl logs -f: {status}");

    // --previous after the restart: the first start's log; without it: the second start's.
    let second_pid = wait_for("the sidecar's restart", Duration::from_secs(60), || async {
        let (restarts, running) = container_state(&api, &pod, "sidecar").await?;
        let current = api.get(&pod).await.ok()?;
        let pid = harness::container_pid(&current, "sidecar")?;
        (restarts == 1 && running && pid != first_pid && harness::alive(pid)).then_some(pid)
    })
    .await;
    let out = run(n, &["logs", &pod, "-c", "sidecar", "--previous"], None).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).starts_with(&format!("sidecar started as pid {first_pid}\n")),
        "{}",
        text(&out.stdout)
    );
    let out = wait_for(
        "the second start's first line",
        Duration::from_secs(10),
        || async {
            let out = run(n, &["logs", &pod, "-c", "sidecar"], None).await;
            text(&out.stdout).starts_with("sidecar started").then_some(out)
        },
    )
    .await;
    assert!(
        text(&out.stdout).starts_with(&format!("sidecar started as pid {second_pid}\n")),
        "{}",
        text(&out.stdout)
    );

    // exec: in the container (its environment, working directory and hostname), output and
    // exit code carried back.
    let started = Instant::now();
    let out = run(
        n,
        &[
            "exec",
            &pod,
            "-c",
            "flink-main-container",
            "--",
            "sh",
            "-c",
            "echo $FLINK_HOME; pwd; hostname; echo oops >&2; exit 3",
        ],
        None,
    )
    .await;
    eprintln!("kubectl exec: {:?}", started.elapsed());
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), format!("/opt/flink\n/opt/flink\n{pod}\n"));
    assert!(text(&out.stderr).contains("oops"), "{}", text(&out.stderr));
    // The container's mount namespace: its configuration volume is at /opt/flink/conf.
    let out = run(n, &["exec", &pod, "--", "ls", "/opt/flink/conf"], None).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("config.yaml"), "{}", text(&out.stdout));
    // stdin
    let out = run(
        n,
        &["exec", "-i", &pod, "-c", "sidecar", "--", "tr", "a-z", "A-Z"],
        Some("hello\n"),
    )
    .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "HELLO\n");

    // -it: a terminal of its own (kubectl needs one on its side too: `script` gives it one).
    let line = format!(
        "{} --kubeconfig {} -n {n} exec -i -t {pod} -- sh -c 'tty; test -t 0 && echo is-a-tty; exit 4'",
        kubectl_binary().display(),
        cluster_harness::control_plane().kubeconfig.display(),
    );
    let out = tokio::task::spawn_blocking(move || {
        Command::new("script")
            .args(["-qec", &line, "/dev/null"])
            .stdin(Stdio::null())
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let terminal = text(&out.stdout);
    assert_eq!(out.status.code(), Some(4), "{terminal}{}", text(&out.stderr));
    assert!(
        terminal.contains("/dev/pts/") && terminal.contains("is-a-tty"),
        "{terminal}"
    );

    // port-forward to the pod and to its REST Service: Flink's REST API answers.
    for target in [format!("pod/{pod}"), format!("svc/{id}-rest")] {
        let started = Instant::now();
        let (forward, port) = port_forward(n, &target).await;
        let rest = rest_client(&format!("http://127.0.0.1:{port}"));
        let overview = rest
            .cluster_overview()
            .await
            .unwrap_or_else(|e| panic!("GET /overview through port-forward {target}: {e}"));
        eprintln!(
            "kubectl port-forward {target}: /overview in {:?}",
            started.elapsed()
        );
        assert_eq!(
            overview.flink_version.as_deref(),
            Some(version.as_str()),
            "{target}"
        );
        // A second connection over the same forward.
        rest.cluster_overview().await.unwrap();
        drop(forward);
    }
}
