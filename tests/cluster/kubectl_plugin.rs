//! `kubectl flink ...` as a user runs it: the real kubectl finding the operator's binary on
//! the `PATH` under the name `kubectl-flink`, against the test control plane. Its commands
//! change what they say (the spec's state and savepoint nonce), read the status and Events,
//! honour `--context` and `-o`, and end with distinct exit codes; and `kubectl get flink`
//! lists the kinds of the group (the CRDs' category) with a READY column.

use std::{path::PathBuf, process::Command};

use k8s_openapi::api::core::v1::Event;
use kube::{
    Api,
    api::{DynamicObject, Patch, PatchParams, PostParams},
    core::ApiResource,
};
use serde_json::{Value, json};

use crate::{
    admission::deployment,
    harness::{TestNamespace, client, control_plane, install_crds},
    kubectl_tool::kubectl_binary,
};

/// A directory on the `PATH` with `kubectl-flink` linked to the built operator.
fn plugin_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kubectl-flink-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["kubectl-flink", "kubectl_complete-flink"] {
        let link = dir.join(name);
        if !link.exists() {
            std::os::unix::fs::symlink(flink_operator_test_support::built_operator(), &link).unwrap();
        }
    }
    dir
}

/// The real kubectl, with the plugin's directory first on its PATH.
fn kubectl_finding_the_plugin() -> Command {
    let path = format!(
        "{}:{}",
        plugin_dir().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = Command::new(kubectl_binary());
    command.env("PATH", path);
    command
}

/// `kubectl flink <args> --kubeconfig <the control plane's>`: its exit code and output.
async fn kubectl_flink(args: &[&str]) -> (i32, String, String) {
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    tokio::task::spawn_blocking(move || {
        let output = kubectl_finding_the_plugin()
            .arg("flink")
            .args(&args)
            .arg("--kubeconfig")
            .arg(&control_plane().kubeconfig)
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&output.stdout).into_owned();
        let err = String::from_utf8_lossy(&output.stderr).into_owned();
        eprintln!("$ kubectl flink {}\n{out}{err}", args.join(" "));
        (output.status.code().unwrap_or(-1), out, err)
    })
    .await
    .unwrap()
}

#[tokio::test]
async fn kubectl_flink_suspends_resumes_savepoints_and_shows_the_status_with_its_events() {
    let client = client().await;
    install_crds(&client).await;
    let ns = TestNamespace::new(&client, "kubectl-flink").await;
    let n = ns.name.as_str();
    let resource = ApiResource::erase::<flink_operator_api::FlinkDeployment>(&());
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), n, &resource);
    let object: DynamicObject = serde_json::from_value(deployment("basic")).unwrap();
    api.create(&PostParams::default(), &object).await.unwrap();
    let spec_job = |o: &DynamicObject| o.data["spec"]["job"].clone();

    // Not there: exit 3. A command line kubectl-flink cannot read: exit 2.
    let (code, _, err) = kubectl_flink(&["status", "flinkdep/missing", "-n", n]).await;
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("not found"), "{err}");
    let (code, _, _) = kubectl_flink(&["status", "basic", "-n", n]).await;
    assert_eq!(code, 2);

    let (code, out, err) = kubectl_flink(&["suspend", "flinkdep/basic", "-n", n]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("spec.job.state is suspended"), "{out}");
    assert_eq!(spec_job(&api.get("basic").await.unwrap())["state"], "suspended");
    let (code, out, _) = kubectl_flink(&["suspend", "flinkdep/basic", "-n", n]).await;
    assert_eq!(code, 0);
    assert!(out.contains("is suspended already"), "{out}");
    let (code, _, err) = kubectl_flink(&["resume", "flinkdep/basic", "-n", n]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(spec_job(&api.get("basic").await.unwrap())["state"], "running");
    for expected in [1, 2] {
        let (code, _, err) = kubectl_flink(&["savepoint", "flinkdep/basic", "-n", n]).await;
        assert_eq!(code, 0, "{err}");
        assert_eq!(
            spec_job(&api.get("basic").await.unwrap())["savepointTriggerNonce"],
            expected
        );
    }

    // The status: what the shared operator of this test binary wrote, when it runs (it
    // reconciles every namespace), else what it would have written.
    let mut status = settled(&api).await;
    let written_here = status.is_null();
    if written_here {
        api.patch_status(
            "basic",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {
                "lifecycleState": "STABLE",
                "jobStatus": {"state": "RUNNING", "jobId": "0123456789abcdef0123456789abcdef"},
                "conditions": [{"type": "Ready", "status": "True", "reason": "Running", "message": "the job runs"}]
            }})),
        )
        .await
        .unwrap();
        status = settled(&api).await;
    }
    let uid = api.get("basic").await.unwrap().metadata.uid.unwrap();
    let events: Api<Event> = Api::namespaced(client.clone(), n);
    let event: Event = serde_json::from_value(json!({
        "metadata": {"name": "basic.savepoint"},
        "involvedObject": {"apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
                           "name": "basic", "namespace": n, "uid": uid},
        "reason": "SavepointTriggered", "message": "savepoint triggered", "type": "Normal",
        "firstTimestamp": "2026-12-06T09:00:00Z", "lastTimestamp": "2026-12-06T09:00:00Z", "count": 1
    }))
    .unwrap();
    events.create(&PostParams::default(), &event).await.unwrap();

    // The CRDs' category and READY column: `kubectl get flink` lists the kinds of the group.
    let listed = {
        let n = n.to_owned();
        tokio::task::spawn_blocking(move || {
            let output = Command::new(kubectl_binary())
                .args(["get", "flink", "-n", &n, "--kubeconfig"])
                .arg(&control_plane().kubeconfig)
                .output()
                .unwrap();
            String::from_utf8_lossy(&output.stdout).into_owned()
        })
        .await
        .unwrap()
    };
    let header = listed.lines().next().unwrap_or_default().to_owned();
    let row = listed
        .lines()
        .find(|l| l.contains("basic"))
        .unwrap_or_default()
        .to_owned();
    assert!(header.split_whitespace().any(|c| c == "READY"), "{listed}");
    assert!(
        row.starts_with("flinkdeployment.flink.apache.org/basic"),
        "{listed}"
    );
    if written_here {
        assert!(row.split_whitespace().any(|c| c == "True"), "{listed}");
    }

    let lifecycle = status["lifecycleState"].as_str().unwrap_or("-").to_owned();
    let (code, out, err) = kubectl_flink(&["status", "flinkdep/basic", "-n", n, "--events", "100"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&format!("Lifecycle:  {lifecycle}\n")), "{out}");
    assert!(
        out.contains("Normal SavepointTriggered: savepoint triggered"),
        "{out}"
    );
    if written_here {
        assert!(
            out.contains("Job:        RUNNING (0123456789abcdef0123456789abcdef)"),
            "{out}"
        );
    }
    for format in ["json", "yaml"] {
        let (code, out, _) = kubectl_flink(&[
            "status",
            "flinkdep/basic",
            "-n",
            n,
            "-o",
            format,
            "--events",
            "100",
        ])
        .await;
        assert_eq!(code, 0);
        let shown: Value = if format == "json" {
            serde_json::from_str(&out).unwrap()
        } else {
            serde_yaml::from_str(&out).unwrap()
        };
        assert_eq!(shown["status"], status, "{format}");
        assert!(
            shown["events"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e["reason"] == "SavepointTriggered"),
            "{format}: {out}"
        );
    }

    // The kubeconfig's context by name; an unknown one is a failed call (exit 1).
    let kubeconfig: Value =
        serde_yaml::from_str(&std::fs::read_to_string(&control_plane().kubeconfig).unwrap()).unwrap();
    let context = kubeconfig["current-context"].as_str().unwrap().to_owned();
    let (code, _, err) = kubectl_flink(&["status", "flinkdep/basic", "-n", n, "--context", &context]).await;
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = kubectl_flink(&["status", "flinkdep/basic", "-n", n, "--context", "nowhere"]).await;
    assert_eq!(code, 1, "{err}");

    // The history (none kept, or the revision the shared operator recorded); a rollback has
    // no earlier revision to go to either way, and is refused.
    let (code, out, _) = kubectl_flink(&["history", "flinkdep/basic", "-n", n]).await;
    assert_eq!(code, 0);
    assert!(
        out.contains("No revisions") || out.starts_with("REVISION"),
        "{out}"
    );
    let (code, _, err) = kubectl_flink(&["rollback", "flinkdep/basic", "-n", n]).await;
    assert_eq!(code, 4, "{err}");

    // kubectl's own completion of a plugin's arguments, through kubectl_complete-flink: the
    // subcommands, and the names of a kind in the namespace, from the kubeconfig's cluster.
    let complete = |words: Vec<String>| {
        tokio::task::spawn_blocking(move || {
            let output = kubectl_finding_the_plugin()
                .args(["__complete", "flink"])
                .args(&words)
                .env("KUBECONFIG", &control_plane().kubeconfig)
                .output()
                .unwrap();
            String::from_utf8_lossy(&output.stdout).into_owned()
        })
    };
    let completed = complete(vec!["sta".to_owned()]).await.unwrap();
    assert!(completed.lines().any(|l| l == "status"), "{completed}");
    let completed = complete(
        ["status", "-n", n, "flinkdep/ba"]
            .iter()
            .map(|w| (*w).to_owned())
            .collect(),
    )
    .await
    .unwrap();
    assert_eq!(completed.lines().next(), Some("flinkdep/basic"), "{completed}");

    for shell in ["bash", "zsh", "fish"] {
        let (code, out, _) = kubectl_flink(&["completion", shell]).await;
        assert_eq!(code, 0, "{shell}");
        assert!(
            out.contains("kubectl-flink") && out.contains("savepoint"),
            "{shell}: {out}"
        );
    }
}

/// The resource's status once two reads two seconds apart agree (an operator may be writing
/// it).
async fn settled(api: &Api<DynamicObject>) -> Value {
    let read = || async { api.get("basic").await.unwrap().data["status"].clone() };
    let mut last = read().await;
    for _ in 0..15 {
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
        let now = read().await;
        if now == last {
            return now;
        }
        last = now;
    }
    panic!("the status of basic kept changing: {last}");
}
