//! The README's flow as a user meets it: `scripts/dev-up` on a fresh state directory, then
//! every manifest of `examples/` applied with kubectl and followed as its comment says —
//! Ready, the JobManager's log showing the job running, its REST API reached through
//! `kubectl port-forward`, deleted; the examples of what is not done yet show the outcome
//! their comment promises.
//!
//! A test binary of its own (`cargo test --test getting_started`): dev-up starts its own
//! control plane and local runtime, and one local runtime runs on a machine at a time, so it
//! never shares a process with the `e2e` binary's runtime. It takes the debug binaries the
//! tests build (`FLINK_OPERATOR_DEV_BIN`) instead of a release build.

// Test code: a panic is a failing test with its reason.
#![allow(clippy::unwrap_used)]

use flink_operator_test_support::{kubectl_tool, runtime_harness};

use std::{
    fs::File,
    io::{BufRead, BufReader, Read, Write},
    net::TcpStream,
    path::{Path, PathBuf},
    process::{Child, Command, Output, Stdio},
    time::{Duration, Instant},
};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The local runtime's binary, built as the e2e harness builds it, next to flink-operator.
fn binaries_dir() -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = Command::new(cargo)
        .args(["build", "--quiet", "-p", "flink-local-runtime"])
        .current_dir(root())
        .status()
        .expect("running cargo build -p flink-local-runtime");
    assert!(status.success(), "cargo build -p flink-local-runtime failed");
    let dir = Path::new(env!("CARGO_BIN_EXE_flink-operator"))
        .parent()
        .unwrap()
        .to_owned();
    assert!(dir.join("flink-local-runtime").exists(), "{}", dir.display());
    dir
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `scripts/dev-up`, running; stopped (SIGTERM to its PID, which stops what it started)
/// when dropped, its logs printed first if the test failed.
struct DevUp {
    child: Child,
    dir: PathBuf,
    kubectl: PathBuf,
    kubeconfig: PathBuf,
}

impl DevUp {
    /// Starts dev-up; again when another test's local runtime took the machine's lock
    /// between the wait for it and dev-up's start of its own.
    fn start() -> Self {
        let kubectl = kubectl_tool::kubectl_binary().to_owned();
        let bin = binaries_dir();
        for _ in 0..5 {
            runtime_harness::wait_for_runtime_lock();
            if let Some(env) = Self::try_start(&kubectl, &bin) {
                return env;
            }
        }
        panic!("another local runtime took the machine's lock five times over");
    }

    fn try_start(kubectl: &Path, bin: &Path) -> Option<Self> {
        let kubectl = kubectl.to_owned();
        let dir = std::env::temp_dir().join(format!("flink-operator-getting-started-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("dev-up.log");
        let started = Instant::now();
        let child = Command::new(root().join("scripts/dev-up"))
            .env("FLINK_OPERATOR_DEV_STATE", dir.join("state"))
            .env("FLINK_OPERATOR_DEV_BIN", bin)
            .env("FLINK_OPERATOR_WEBHOOK_PORT", free_port().to_string())
            .env("FLINK_OPERATOR_PROBE_PORT", free_port().to_string())
            .env("KUBECTL", &kubectl)
            .stdin(Stdio::null())
            .stdout(File::create(dir.join("dev-up.out")).unwrap())
            .stderr(File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let mut env = DevUp {
            child,
            kubeconfig: dir.join("state/testplane/kubeconfig"),
            dir,
            kubectl,
        };
        loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if text.contains("Ctrl-C stops everything.") {
                break;
            }
            if let Some(status) = env.child.try_wait().unwrap() {
                if text.contains("holds /run/flink-local-runtime.lock") {
                    eprintln!("another local runtime started meanwhile; waiting for it");
                    return None;
                }
                panic!("scripts/dev-up ended ({status}) before it was up:\n{text}");
            }
            assert!(
                started.elapsed() < Duration::from_secs(600),
                "scripts/dev-up was not up within 10 minutes:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(500));
        }
        eprintln!(
            "MEASURED scripts/dev-up up in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        Some(env)
    }

    fn kubectl(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.kubectl);
        command
            .env("KUBECONFIG", &self.kubeconfig)
            .current_dir(root())
            .args(args)
            .stdin(Stdio::null());
        command
    }

    /// Runs kubectl to its end; returns its output, whether it succeeded or not.
    fn run(&self, args: &[&str]) -> Output {
        self.kubectl(args).output().unwrap()
    }

    /// Runs kubectl, which must succeed; returns its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let output = self.run(args);
        assert!(
            output.status.success(),
            "kubectl {} failed:\n{}{}",
            args.join(" "),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    }

    /// Applies a manifest given on stdin.
    fn apply_stdin(&self, manifest: &str) {
        let mut child = self
            .kubectl(&["apply", "-f", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(manifest.as_bytes())
            .unwrap();
        let output = child.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    fn jsonpath(&self, resource: &str, path: &str) -> String {
        self.ok(&["get", resource, "-o", &format!("jsonpath={path}")])
    }

    /// Polls `check` every 2 s until it answers, at most `timeout`.
    fn until<T>(&self, what: &str, timeout: Duration, mut check: impl FnMut() -> Option<T>) -> T {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(value) = check() {
                return value;
            }
            assert!(Instant::now() < deadline, "{what}: not within {timeout:?}");
            std::thread::sleep(Duration::from_secs(2));
        }
    }
}

impl Drop for DevUp {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let state = self.dir.join("state");
            let describe = self.run(&["describe", "flinkdeployment,flinksessionjob"]);
            eprintln!(
                "---- kubectl describe ----\n{}\n---- dev-up ----\n{}\n---- operator log (tail) ----\n{}\n---- pod logs: {} ----",
                String::from_utf8_lossy(&describe.stdout),
                std::fs::read_to_string(self.dir.join("dev-up.log")).unwrap_or_default(),
                tail(&state.join("operator.log"), 60),
                state.join("runtime/pods").display(),
            );
        }
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(200));
        }
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// `kubectl port-forward svc/<name>-rest :8081`, stopped when dropped.
struct PortForward(Child);

impl Drop for PortForward {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// GETs `path` from 127.0.0.1:`port`; the body. Tried for up to 20 s: the first
/// connections through a fresh port-forward may be cut while its stream is set up.
fn http_get(port: u16, path: &str) -> String {
    let once = || -> std::io::Result<String> {
        let mut stream = TcpStream::connect(("127.0.0.1", port))?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
        )?;
        let mut response = String::new();
        stream.read_to_string(&mut response)?;
        response
            .split_once("\r\n\r\n")
            .map(|(_, body)| body.to_owned())
            .filter(|body| !body.is_empty())
            .ok_or_else(|| std::io::Error::other(format!("no body in {response:?}")))
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match once() {
            Ok(body) => return body,
            Err(e) if Instant::now() > deadline => panic!("GET {path} through port {port}: {e}"),
            Err(_) => std::thread::sleep(Duration::from_secs(1)),
        }
    }
}

/// The user's checks of a running example: the JobManager's log shows the job RUNNING,
/// and its REST API, through `kubectl port-forward`, lists one running job.
fn check_running_cluster(env: &DevUp, name: &str) {
    let logs = env.run(&["logs", &format!("deployment/{name}"), "--tail=-1"]);
    let text = String::from_utf8_lossy(&logs.stdout);
    assert!(
        logs.status.success() && text.contains("switched from state CREATED to RUNNING"),
        "kubectl logs deployment/{name}: the JobManager's log does not show the job running:\n{}{}",
        tail_text(&text, 20),
        String::from_utf8_lossy(&logs.stderr)
    );
    let err_file = env.dir.join(format!("port-forward-{name}.err"));
    let mut child = env
        .kubectl(&["port-forward", &format!("svc/{name}-rest"), ":8081"])
        .stdout(Stdio::piped())
        .stderr(File::create(&err_file).unwrap())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let forward = PortForward(child);
    // "Forwarding from 127.0.0.1:PORT -> 8081"; then one "Handling connection" line per
    // connection, so its stdout is read to the end (a closed pipe would end kubectl).
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(port) = line
                .strip_prefix("Forwarding from 127.0.0.1:")
                .and_then(|rest| rest.split(' ').next())
                .and_then(|p| p.parse::<u16>().ok())
            {
                let _ = tx.send(port);
            }
        }
    });
    let Ok(port) = rx.recv_timeout(Duration::from_secs(30)) else {
        drop(forward);
        panic!(
            "kubectl port-forward svc/{name}-rest :8081 forwarded nothing: {}",
            std::fs::read_to_string(&err_file).unwrap_or_default()
        );
    };
    let overview = http_get(port, "/overview");
    let value: serde_json::Value = serde_json::from_str(&overview)
        .unwrap_or_else(|e| panic!("/overview of {name} through port-forward: {e}: {overview:?}"));
    assert!(
        value["jobs-running"].as_u64().unwrap_or(0) >= 1,
        "{name}: {value}"
    );
    drop(forward);
}

fn tail_text(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Examples that run here: file, the FlinkDeployments with a job, the session jobs.
const RUNNING: [(&str, &[&str], &[&str]); 6] = [
    ("basic.yaml", &["basic-example"], &[]),
    ("custom-logging.yaml", &["custom-logging-example"], &[]),
    ("basic-reactive.yaml", &["basic-reactive-example"], &[]),
    ("basic-ingress.yaml", &["basic-ingress-example"], &[]),
    ("basic-checkpoint-ha.yaml", &["basic-checkpoint-ha-example"], &[]),
    (
        "basic-session-deployment-and-job.yaml",
        &[],
        &["basic-session-job-example"],
    ),
];

/// The snapshot examples, applied once the jobs they name run (a snapshot of a job that is
/// not running is abandoned): each completes.
const SNAPSHOTS: [(&str, &str); 3] = [
    (
        "snapshot-checkpoint.yaml",
        "flinkstatesnapshot/example-checkpoint",
    ),
    ("snapshot-savepoint.yaml", "flinkstatesnapshot/example-savepoint"),
    (
        "snapshot-savepoint-already-exists.yaml",
        "flinkstatesnapshot/example-savepoint-already-exists",
    ),
];

/// The examples whose jobs the snapshot examples name.
const SNAPSHOT_JOBS: [&str; 2] = [
    "basic-checkpoint-ha.yaml",
    "basic-session-deployment-and-job.yaml",
];

/// The blue/green examples: each deploys its first (blue) child.
const BLUE_GREEN: [(&str, &str); 2] = [
    (
        "bluegreen-basic.yaml",
        "flinkbluegreendeployment/bluegreen-basic-example",
    ),
    (
        "bluegreen-advanced.yaml",
        "flinkbluegreendeployment/bluegreen-advanced-example",
    ),
];

const SESSION_EXAMPLE: &str = "basic-session-deployment-and-job.yaml";

/// The namespace the guide runs the examples in (made by dev-up), and the operator's own.
const JOBS_NAMESPACE: &str = "flink-jobs";
const OPERATOR_NAMESPACE: &str = "flink-operator-system";

/// The session-job example with its jar from this machine: the example names Flink's
/// `flink-examples-streaming` jar on Maven Central, and the tests reach nothing beyond
/// loopback. The same artifact is installed as the distribution's StateMachineExample.jar
/// (`tests/flink/install-examples.sh`), so the job is the one the example runs, fetched
/// as the example's comment says a local jar is (`file://`, allowed by dev-up's
/// configuration). The https path of the fetch has its own test (`session_job`).
fn session_example_with_local_jar() -> String {
    let manifest = std::fs::read_to_string(root().join("examples").join(SESSION_EXAMPLE)).unwrap();
    let remote = manifest
        .lines()
        .find_map(|line| line.trim().strip_prefix("jarURI: "))
        .expect("the session-job example names a jarURI")
        .to_owned();
    assert!(remote.starts_with("https://"), "{remote}");
    let versions = std::fs::read_to_string(root().join("tests/flink/versions")).unwrap();
    let version = versions
        .lines()
        .find(|v| v.starts_with("1.20."))
        .expect("tests/flink/versions lists a 1.20 release");
    let home = Command::new(root().join("tests/flink/install.sh"))
        .arg(version)
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    assert!(home.status.success(), "tests/flink/install.sh {version} failed");
    let jar = Command::new(root().join("tests/flink/install-examples.sh"))
        .arg(String::from_utf8(home.stdout).unwrap().trim())
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    assert!(jar.status.success(), "tests/flink/install-examples.sh failed");
    let local = format!("file://{}", String::from_utf8(jar.stdout).unwrap().trim());
    manifest.replace(&remote, &local)
}

/// The claim the checkpoint-HA example's comment tells the user to create first.
const FLINK_DATA_CLAIM: &str = "apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: flink-data}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
";

#[test]
fn every_example_runs_locally_as_its_comment_says() {
    let started = Instant::now();
    let env = DevUp::start();
    let up = started.elapsed();

    // Every file of examples/ is one of the cases below.
    let mut listed: Vec<&str> = RUNNING.iter().map(|(f, _, _)| *f).collect();
    listed.extend(BLUE_GREEN.iter().map(|(f, _)| *f));
    listed.extend(SNAPSHOTS.iter().map(|(f, _)| *f));
    listed.push("pod-template.yaml");
    listed.sort_unstable();
    let mut files: Vec<String> = std::fs::read_dir(root().join("examples"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|f| f.ends_with(".yaml"))
        .collect();
    files.sort();
    assert_eq!(files, listed, "an example without a case here");

    // As the guide says: the jobs' own namespace, which dev-up made with the `flink`
    // service account; the operator's namespace refuses Flink resources.
    env.ok(&[
        "config",
        "set-context",
        "--current",
        "--namespace",
        JOBS_NAMESPACE,
    ]);
    env.ok(&["get", "serviceaccount", "flink"]);
    let refused = env.run(&["-n", OPERATOR_NAMESPACE, "apply", "-f", "examples/basic.yaml"]);
    let message = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success()
            && message.contains(&format!(
                "namespace \"{OPERATOR_NAMESPACE}\" is the operator's own"
            ))
            && message.contains("kubernetes.operator.operator-namespace.flink-resources.enabled"),
        "an example applied in the operator's namespace: {message}"
    );

    env.apply_stdin(FLINK_DATA_CLAIM);
    for (file, _, _) in RUNNING {
        if file == SESSION_EXAMPLE {
            env.apply_stdin(&session_example_with_local_jar());
        } else {
            env.ok(&["apply", "-f", &format!("examples/{file}")]);
        }
    }
    env.ok(&["apply", "-f", "examples/pod-template.yaml"]);
    for (file, _) in BLUE_GREEN {
        env.ok(&["apply", "-f", &format!("examples/{file}")]);
    }

    // One wait for all of them, as a user would wait for each.
    let mut ready: Vec<String> = Vec::new();
    for (_, deployments, jobs) in RUNNING {
        ready.extend(deployments.iter().map(|d| format!("flinkdeployment/{d}")));
        ready.extend(jobs.iter().map(|j| format!("flinksessionjob/{j}")));
    }
    ready.push("flinkdeployment/basic-session-deployment-example".to_owned());
    let mut args = vec!["wait", "--for=condition=Ready", "--timeout=420s"];
    args.extend(ready.iter().map(String::as_str));
    env.ok(&args);
    eprintln!(
        "MEASURED every example Ready {:.1} s after its apply",
        (started.elapsed() - up).as_secs_f64()
    );
    for (_, deployments, jobs) in RUNNING {
        for d in deployments {
            let state = env.jsonpath(&format!("flinkdeployment/{d}"), "{.status.jobStatus.state}");
            assert_eq!(state, "RUNNING", "{d}");
            let namespace = env.jsonpath(&format!("flinkdeployment/{d}"), "{.metadata.namespace}");
            assert_eq!(namespace, JOBS_NAMESPACE, "{d}");
        }
        for j in jobs {
            let state = env.jsonpath(&format!("flinksessionjob/{j}"), "{.status.jobStatus.state}");
            assert_eq!(state, "RUNNING", "{j}");
        }
    }
    // The ingress example: its Ingress kept by the operator (no ingress controller here
    // serves it), routing the template's host and path to the REST Service.
    let ingress = "ingress/basic-ingress-example";
    assert_eq!(
        env.jsonpath(ingress, "{.spec.rules[0].host}"),
        "flink.example.com"
    );
    assert_eq!(
        env.jsonpath(ingress, "{.spec.rules[0].http.paths[0].backend.service.name}"),
        "basic-ingress-example-rest"
    );
    assert_eq!(env.jsonpath(ingress, "{.metadata.labels.team}"), "streaming");

    // Busybox containers do not run here: the JobManager pod waits for its image, and the
    // FlinkDeployment says so.
    let error = env.until(
        "pod-template-example's status naming busybox",
        Duration::from_secs(120),
        || {
            let error = env.jsonpath("flinkdeployment/pod-template-example", "{.status.error}");
            error.contains("busybox:1.36").then_some(error)
        },
    );
    assert!(error.contains("ErrImagePull"), "{error}");

    // BASIC and ADVANCED: the first child is created, owned by the resource and labelled
    // blue.
    for (_, resource) in BLUE_GREEN {
        env.until(
            &format!("{resource} deploying blue"),
            Duration::from_secs(120),
            || {
                let state = env.jsonpath(resource, "{.status.blueGreenState}");
                matches!(state.as_str(), "TRANSITIONING_TO_BLUE" | "ACTIVE_BLUE").then_some(())
            },
        );
        let name = resource.trim_start_matches("flinkbluegreendeployment/");
        let colour = env.jsonpath(
            &format!("flinkdeployment/{name}-blue"),
            "{.metadata.labels.flink/blue-green-deployment-type}",
        );
        assert_eq!(colour, "BLUE");
    }

    // The snapshots of the running jobs, taken through their clusters.
    for (file, _) in SNAPSHOTS {
        env.ok(&["apply", "-f", &format!("examples/{file}")]);
    }
    // The running clusters are checked while the snapshots wait for their jobs' tasks.
    for (_, deployments, _) in RUNNING {
        for d in deployments {
            check_running_cluster(&env, d);
        }
    }
    // Taken once every task of the job runs: with every example starting at once on a small
    // machine, the TaskManagers of a job may come minutes after its JobManager. The examples
    // no snapshot names go meanwhile, leaving the machine to the jobs the snapshots are of.
    let unnamed: Vec<String> = RUNNING
        .iter()
        .filter(|(file, _, _)| !SNAPSHOT_JOBS.contains(file))
        .map(|(f, _, _)| f)
        .chain(BLUE_GREEN.iter().map(|(f, _)| f))
        .chain(std::iter::once(&"pod-template.yaml"))
        .map(|f| format!("-f=examples/{f}"))
        .collect();
    let mut args = vec!["delete", "--wait=false"];
    args.extend(unnamed.iter().map(String::as_str));
    env.ok(&args);
    for (_, resource) in SNAPSHOTS {
        env.until(&format!("{resource} COMPLETED"), Duration::from_secs(300), || {
            (env.jsonpath(resource, "{.status.state}") == "COMPLETED").then_some(())
        });
        let path = env.jsonpath(resource, "{.status.path}");
        assert!(!path.is_empty(), "{resource} completed without a path");
    }

    let mut args = vec!["delete", "--timeout=180s", "--ignore-not-found"];
    // The snapshots first: a savepoint is disposed of through its cluster while it runs (and
    // released naming its path if the cluster went first).
    let mut all: Vec<String> = SNAPSHOTS
        .iter()
        .map(|(f, _)| format!("-f=examples/{f}"))
        .collect();
    all.extend(RUNNING.iter().map(|(f, _, _)| format!("-f=examples/{f}")));
    all.extend(BLUE_GREEN.iter().map(|(f, _)| format!("-f=examples/{f}")));
    all.push("-f=examples/pod-template.yaml".to_owned());
    args.extend(all.iter().map(String::as_str));
    env.ok(&args);
    env.until("every example's pods gone", Duration::from_secs(180), || {
        env.ok(&["get", "pods", "-o", "name"])
            .trim()
            .is_empty()
            .then_some(())
    });
    eprintln!(
        "MEASURED getting started: {:.1} s in all",
        started.elapsed().as_secs_f64()
    );
}
