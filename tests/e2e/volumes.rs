//! PersistentVolumeClaims in the local environment: the runtime's default StorageClass, its
//! provisioner and the control plane's own PersistentVolume controller give claims
//! directories on the host, which outlive the pods that mount them.

use std::{
    path::PathBuf,
    time::{Duration, Instant},
};

use flink_operator_api::{FlinkDeployment, FlinkJobState};
use k8s_openapi::api::{
    core::v1::{Event, PersistentVolume, PersistentVolumeClaim, Pod},
    storage::v1::StorageClass,
};
use kube::{
    Api, Client,
    api::{DeleteParams, ListParams, PostParams},
};
use serde_json::{Value, json};

use crate::{
    cluster_harness::{TestNamespace, wait_for},
    flink_harness,
    harness::{self, LogsOnFailure},
    objects,
};

/// Where the runtime keeps the directory of volume `pv`.
fn volume_dir(pv: &str) -> PathBuf {
    harness::runtime().state_dir.join("volumes").join(pv)
}

fn claim(namespace: &str, name: &str, class: Option<&str>) -> PersistentVolumeClaim {
    let mut claim = json!({
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "64Mi"}}},
    });
    if let Some(class) = class {
        claim["spec"]["storageClassName"] = json!(class);
    }
    serde_json::from_value(claim).unwrap()
}

/// A pod of the Flink image that runs `script` once with `volume` mounted at /data.
fn shell_pod(namespace: &str, name: &str, volume: Value, script: &str) -> Pod {
    let image = objects::image(flink_harness::versions().last().unwrap());
    let mut volume = volume;
    volume["name"] = json!("data");
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 5,
            "containers": [{"name": "main", "image": image, "command": ["bash", "-c", script],
                            "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
            "volumes": [volume],
        },
    }))
    .unwrap()
}

async fn create_pod(client: &Client, pod: &Pod) {
    let api: Api<Pod> = Api::namespaced(client.clone(), pod.metadata.namespace.as_deref().unwrap());
    api.create(&PostParams::default(), pod).await.unwrap();
}

async fn create_claim(client: &Client, claim: &PersistentVolumeClaim) {
    let api: Api<PersistentVolumeClaim> =
        Api::namespaced(client.clone(), claim.metadata.namespace.as_deref().unwrap());
    api.create(&PostParams::default(), claim).await.unwrap();
}

async fn wait_for_phase(api: &Api<Pod>, name: &str, phase: &str) -> Pod {
    wait_for(
        &format!("pod {name} {phase}"),
        Duration::from_secs(90),
        || async {
            let pod = api.get(name).await.ok()?;
            (pod.status.as_ref()?.phase.as_deref() == Some(phase)).then_some(pod)
        },
    )
    .await
}

async fn delete_pod(api: &Api<Pod>, name: &str) {
    api.delete(name, &DeleteParams::default()).await.unwrap();
    wait_for(&format!("pod {name} gone"), Duration::from_secs(60), || async {
        api.get_opt(name).await.ok()?.is_none().then_some(())
    })
    .await;
}

/// The bound claim's volume name.
async fn bound_volume(api: &Api<PersistentVolumeClaim>, name: &str) -> String {
    wait_for(
        &format!("claim {name} Bound"),
        Duration::from_secs(60),
        || async {
            let claim = api.get(name).await.ok()?;
            (claim.status?.phase.as_deref() == Some("Bound")).then_some(())?;
            claim.spec?.volume_name
        },
    )
    .await
}

/// Waits until the claim, its volume and the volume's directory are all gone.
async fn wait_for_reclaimed(client: &Client, claims: &Api<PersistentVolumeClaim>, claim: &str, pv: &str) {
    let pvs: Api<PersistentVolume> = Api::all(client.clone());
    let dir = volume_dir(pv);
    wait_for(
        &format!("claim {claim}, volume {pv} and {} gone", dir.display()),
        Duration::from_secs(60),
        || async {
            let claim_gone = claims.get_opt(claim).await.ok()?.is_none();
            let pv_gone = pvs.get_opt(pv).await.ok()?.is_none();
            (claim_gone && pv_gone && !dir.exists()).then_some(())
        },
    )
    .await;
}

/// The message of a pod's `PodScheduled=False` condition once it says `expected`.
async fn unschedulable_message(api: &Api<Pod>, name: &str, expected: &str) -> String {
    wait_for(
        &format!("pod {name} unschedulable: {expected}"),
        Duration::from_secs(60),
        || async {
            let pod = api.get(name).await.ok()?;
            let status = pod.status?;
            let condition = status
                .conditions?
                .into_iter()
                .find(|c| c.type_ == "PodScheduled" && c.status == "False")?;
            let message = condition.message.unwrap_or_default();
            (status.phase.as_deref() == Some("Pending")
                && condition.reason.as_deref() == Some("Unschedulable")
                && message.contains(expected))
            .then_some(message)
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claims_files_outlive_its_pod_and_deleting_the_claim_removes_its_directory() {
    let _turn = crate::cluster_harness::beside_others().await;
    let client = harness::client().await;
    let ns = TestNamespace::new(&client, "pvc-keep").await;
    let _logs = LogsOnFailure(ns.name.clone());
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns.name);
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), &ns.name);

    let started = Instant::now();
    create_claim(&client, &claim(&ns.name, "data", None)).await;
    // The default class, WaitForFirstConsumer: nothing is provisioned before a pod uses it.
    let created = claims.get("data").await.unwrap();
    assert_eq!(
        created.spec.as_ref().unwrap().storage_class_name.as_deref(),
        Some("standard")
    );
    let claim_volume = json!({"persistentVolumeClaim": {"claimName": "data"}});
    create_pod(
        &client,
        &shell_pod(
            &ns.name,
            "writer",
            claim_volume.clone(),
            "echo kept > /data/file && test -w /data",
        ),
    )
    .await;
    wait_for_phase(&pods, "writer", "Succeeded").await;
    let first_pod_done = started.elapsed();

    let pv_name = bound_volume(&claims, "data").await;
    let claim_uid = claims.get("data").await.unwrap().metadata.uid.unwrap();
    assert_eq!(pv_name, format!("pvc-{claim_uid}"));
    let dir = volume_dir(&pv_name);
    assert_eq!(std::fs::read_to_string(dir.join("file")).unwrap(), "kept\n");
    let pv = Api::<PersistentVolume>::all(client.clone())
        .get(&pv_name)
        .await
        .unwrap();
    let spec = pv.spec.unwrap();
    assert_eq!(spec.persistent_volume_reclaim_policy.as_deref(), Some("Delete"));
    assert_eq!(spec.capacity.unwrap()["storage"].0, "64Mi");
    assert_eq!(spec.access_modes.unwrap(), ["ReadWriteOnce"]);
    assert_eq!(spec.claim_ref.unwrap().name.as_deref(), Some("data"));
    assert_eq!(spec.host_path.unwrap().path, dir.display().to_string());

    // A new pod with the same claim, mounted read-only, sees the file and cannot write.
    delete_pod(&pods, "writer").await;
    create_pod(
        &client,
        &shell_pod(
            &ns.name,
            "reader",
            json!({"persistentVolumeClaim": {"claimName": "data", "readOnly": true}}),
            "test \"$(cat /data/file)\" = kept && ! touch /data/other 2>/dev/null",
        ),
    )
    .await;
    wait_for_phase(&pods, "reader", "Succeeded").await;
    assert!(!dir.join("other").exists());
    delete_pod(&pods, "reader").await;

    // Reclaim policy Delete: the released volume's directory and the volume go.
    let deleting = Instant::now();
    claims.delete("data", &DeleteParams::default()).await.unwrap();
    wait_for_reclaimed(&client, &claims, "data", &pv_name).await;
    eprintln!(
        "MEASURED claim created -> first pod Succeeded with its file on the claim: {:.1} s; claim deleted -> claim, volume and directory gone: {:.1} s",
        first_pod_done.as_secs_f64(),
        deleting.elapsed().as_secs_f64()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_waits_unscheduled_while_its_claim_is_missing_or_unbound_and_starts_once_it_exists() {
    let _turn = crate::cluster_harness::beside_others().await;
    let client = harness::client().await;
    let ns = TestNamespace::new(&client, "pvc-wait").await;
    let _logs = LogsOnFailure(ns.name.clone());
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns.name);
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), &ns.name);

    // A class nobody provides binds nothing: an Immediate claim that stays Pending.
    create_claim(&client, &claim(&ns.name, "never", Some("no-such-class"))).await;
    let claim_of = |name: &str| json!({"persistentVolumeClaim": {"claimName": name}});
    create_pod(&client, &shell_pod(&ns.name, "stuck", claim_of("never"), "true")).await;
    create_pod(
        &client,
        &shell_pod(&ns.name, "early", claim_of("later"), "touch /data/started"),
    )
    .await;
    let stuck =
        unschedulable_message(&pods, "stuck", "pod has unbound immediate PersistentVolumeClaims").await;
    let early = unschedulable_message(&pods, "early", "persistentvolumeclaim \"later\" not found").await;
    eprintln!("stuck: {stuck}\nearly: {early}");
    let events: Api<Event> = Api::namespaced(client.clone(), &ns.name);
    let failed = events
        .list(&ListParams::default().fields("involvedObject.name=early"))
        .await
        .unwrap()
        .items;
    assert!(
        failed
            .iter()
            .any(|e| e.reason.as_deref() == Some("FailedScheduling")
                && e.message
                    .as_deref()
                    .is_some_and(|m| m.contains("\"later\" not found"))),
        "{failed:?}"
    );

    // A WaitForFirstConsumer class whose provisioner nobody runs: the pod is scheduled and
    // its claim marked with the node, then its containers wait for the claim.
    let classes: Api<StorageClass> = Api::all(client.clone());
    let class_name = format!("{}-elsewhere", ns.name);
    let class: StorageClass = serde_json::from_value(json!({
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": class_name},
        "provisioner": "example.com/nobody",
        "volumeBindingMode": "WaitForFirstConsumer",
    }))
    .unwrap();
    classes.create(&PostParams::default(), &class).await.unwrap();
    create_claim(&client, &claim(&ns.name, "elsewhere", Some(&class_name))).await;
    create_pod(
        &client,
        &shell_pod(&ns.name, "waiting", claim_of("elsewhere"), "true"),
    )
    .await;
    let (node, waiting) = wait_for(
        "pod waiting scheduled, its container waiting for its claim",
        Duration::from_secs(60),
        || async {
            let pod = pods.get("waiting").await.ok()?;
            let node = pod.spec?.node_name?;
            let status = pod.status?;
            let state = status.container_statuses?.first()?.state.clone()?.waiting?;
            let message = state.message.unwrap_or_default();
            (status.phase.as_deref() == Some("Pending")
                && state.reason.as_deref() == Some("ContainerCreating")
                && message.contains("waiting for persistentvolumeclaim \"elsewhere\" to be bound"))
            .then_some((node, message))
        },
    )
    .await;
    eprintln!("waiting: {waiting}");
    let elsewhere = claims.get("elsewhere").await.unwrap();
    let annotations = elsewhere.metadata.annotations.unwrap_or_default();
    assert_eq!(annotations.get("volume.kubernetes.io/selected-node"), Some(&node));
    assert_eq!(
        annotations
            .get("volume.kubernetes.io/storage-provisioner")
            .map(String::as_str),
        Some("example.com/nobody")
    );

    // The claim appears: the pod is scheduled, its volume provisioned, and it runs.
    let created = Instant::now();
    create_claim(&client, &claim(&ns.name, "later", None)).await;
    wait_for_phase(&pods, "early", "Succeeded").await;
    let to_done = created.elapsed();
    let pv = bound_volume(&claims, "later").await;
    assert!(volume_dir(&pv).join("started").exists());

    // The other one is still waiting, unscheduled, with its claim Pending.
    let pod = pods.get("stuck").await.unwrap();
    assert_eq!(pod.status.unwrap().phase.as_deref(), Some("Pending"));
    assert!(pod.spec.unwrap().node_name.is_none());
    let never = claims.get("never").await.unwrap();
    assert_eq!(never.status.unwrap().phase.as_deref(), Some("Pending"));
    eprintln!(
        "MEASURED missing claim created -> its waiting pod Succeeded: {:.1} s",
        to_done.as_secs_f64()
    );
    delete_pod(&pods, "stuck").await;
    delete_pod(&pods, "waiting").await;
    delete_pod(&pods, "early").await;
    classes
        .delete(&class_name, &DeleteParams::default())
        .await
        .unwrap();
    claims.delete("later", &DeleteParams::default()).await.unwrap();
    wait_for_reclaimed(&client, &claims, "later", &pv).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ephemeral_volume_gets_a_claim_of_its_own_that_goes_with_its_pod() {
    let _turn = crate::cluster_harness::beside_others().await;
    let client = harness::client().await;
    let ns = TestNamespace::new(&client, "pvc-ephemeral").await;
    let _logs = LogsOnFailure(ns.name.clone());
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns.name);
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), &ns.name);
    let ephemeral = json!({"ephemeral": {"volumeClaimTemplate": {"spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "16Mi"}},
    }}}});
    create_pod(
        &client,
        &shell_pod(&ns.name, "scratch", ephemeral, "echo x > /data/f"),
    )
    .await;
    wait_for_phase(&pods, "scratch", "Succeeded").await;
    // The ephemeral-volume controller's claim <pod>-<volume>, owned by the pod.
    let pv = bound_volume(&claims, "scratch-data").await;
    let claim = claims.get("scratch-data").await.unwrap();
    let owner = &claim.metadata.owner_references.unwrap()[0];
    assert_eq!((owner.kind.as_str(), owner.name.as_str()), ("Pod", "scratch"));
    assert!(volume_dir(&pv).join("f").exists());

    // The pod goes, the garbage collector deletes its claim, and the volume goes with it.
    delete_pod(&pods, "scratch").await;
    wait_for_reclaimed(&client, &claims, "scratch-data", &pv).await;
}

/// The repository's example manifest, as a user applies it (with the claim it names).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_checkpoint_ha_example_keeps_its_ha_data_and_checkpoints_on_its_claim() {
    let client = harness::client().await;
    crate::operator::shared(&client).await;
    let _turn = crate::cluster_harness::beside_others().await;
    let ns = TestNamespace::new(&client, "pvc-example").await;
    let _logs = LogsOnFailure(ns.name.clone());
    objects::create_all(&client, &objects::flink_service_account(&ns.name)).await;
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), &ns.name);
    let mut flink_data = claim(&ns.name, "flink-data", None);
    flink_data
        .spec
        .as_mut()
        .unwrap()
        .resources
        .as_mut()
        .unwrap()
        .requests = Some(
        [(
            "storage".to_owned(),
            k8s_openapi::apimachinery::pkg::api::resource::Quantity("1Gi".to_owned()),
        )]
        .into(),
    );
    create_claim(&client, &flink_data).await;

    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/basic-checkpoint-ha.yaml");
    let manifest: Value = serde_yaml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut fd: FlinkDeployment = serde_json::from_value(manifest).unwrap();
    fd.metadata.namespace = Some(ns.name.clone());
    let name = fd.metadata.name.clone().unwrap();
    let api: Api<FlinkDeployment> = Api::namespaced(client.clone(), &ns.name);
    let started = Instant::now();
    api.create(&PostParams::default(), &fd).await.unwrap();

    let job_id = wait_for("the example's job RUNNING", Duration::from_secs(240), || async {
        let job = api.get(&name).await.ok()?.status?.job_status?;
        (job.state == Some(FlinkJobState::Running)).then_some(job.job_id?)
    })
    .await;
    let to_running = started.elapsed();
    let pv = bound_volume(&claims, "flink-data").await;
    let dir = volume_dir(&pv);
    // The JobManager's HA data and the job's first checkpoint (every 30 s) on the claim.
    let checkpoint = wait_for(
        "HA data and a completed checkpoint on the claim",
        Duration::from_secs(120),
        || async {
            let ha = std::fs::read_dir(dir.join("ha")).ok()?.next().is_some();
            let checkpoints = std::fs::read_dir(dir.join("checkpoints").join(&job_id)).ok()?;
            let done = checkpoints.flatten().map(|e| e.path()).find(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("chk-"))
                    && p.join("_metadata").exists()
            })?;
            ha.then_some(done)
        },
    )
    .await;
    eprintln!(
        "MEASURED checkpoint-HA example with its claim: FlinkDeployment created -> job RUNNING in {:.1} s, first checkpoint on the claim after {:.1} s ({})",
        to_running.as_secs_f64(),
        started.elapsed().as_secs_f64(),
        checkpoint.display()
    );

    api.delete(&name, &DeleteParams::default()).await.unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns.name);
    crate::harness::wait_until_none(&pods, "the example's pods gone", Duration::from_secs(120)).await;
    claims
        .delete("flink-data", &DeleteParams::default())
        .await
        .unwrap();
    wait_for_reclaimed(&client, &claims, "flink-data", &pv).await;
}
