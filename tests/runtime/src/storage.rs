//! PersistentVolumeClaims on the node, as kind's local-path provisioner gives them: a default
//! StorageClass whose volumes are directories created on demand under
//! `<state-dir>/volumes/<pv-name>`.
//!
//! The control plane's own PersistentVolume controller does the binding; this runtime plays
//! the three parts a cluster adds around it:
//! - the scheduler's (kube-scheduler's VolumeBinding plugin): a pod whose claim is missing,
//!   being deleted, or unbound in an `Immediate` class is not scheduled, and says why; an
//!   unbound claim of a `WaitForFirstConsumer` class gets the `volume.kubernetes.io/selected-node`
//!   annotation when its pod is bound to the node ([`check_claims`]);
//! - the external provisioner's (sig-storage-lib-external-provisioner): a claim the PV
//!   controller hands to [`PROVISIONER`] gets a directory and a PersistentVolume pre-bound to
//!   it; a released volume of reclaim policy `Delete` loses its directory and is deleted
//!   ([`provision`]);
//! - the kubelet's: a `persistentVolumeClaim` or `ephemeral` volume mounts the bound volume's
//!   directory, and the pod waits while its claim is not bound ([`claim_path`]).

use std::{
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use futures::StreamExt;
use k8s_openapi::{
    api::{
        core::v1::{
            HostPathVolumeSource, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, ObjectReference,
            PersistentVolume, PersistentVolumeClaim, PersistentVolumeSpec, Pod, Volume, VolumeNodeAffinity,
        },
        storage::v1::StorageClass,
    },
    apimachinery::pkg::api::resource::Quantity,
};
use kube::{
    Api, Client, Resource, ResourceExt,
    api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams},
    runtime::{Controller, controller::Action, watcher},
};
use serde_json::json;

use crate::context::Context;

/// The provisioner name of the runtime's StorageClass.
pub const PROVISIONER: &str = "flink-local-runtime/local-path";
/// The default StorageClass the runtime creates if it is missing (kind's name for its own).
pub const DEFAULT_CLASS: &str = "standard";

const ANN_DEFAULT_CLASS: &str = "storageclass.kubernetes.io/is-default-class";
const ANN_SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
const ANN_STORAGE_PROVISIONER: &str = "volume.kubernetes.io/storage-provisioner";
const ANN_BETA_STORAGE_PROVISIONER: &str = "volume.beta.kubernetes.io/storage-provisioner";
const ANN_PROVISIONED_BY: &str = "pv.kubernetes.io/provisioned-by";
const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";
/// How soon a failed provisioning or deletion is tried again.
const RETRY: Duration = Duration::from_secs(5);

/// Creates the default StorageClass unless a class of that name exists.
///
/// `volumeBindingMode: WaitForFirstConsumer`, as kind's `standard` class: a claim is
/// provisioned when the first pod that uses it is scheduled, so manifests written for kind
/// see the same claim states and Events here. The real PV controller supports it as it is
/// (it waits for the scheduler's `selected-node` annotation before it hands the claim to
/// the provisioner), and the runtime, being the scheduler, sets that annotation.
pub async fn ensure_default_class(client: &Client) -> Result<(), kube::Error> {
    let api: Api<StorageClass> = Api::all(client.clone());
    if api.get_opt(DEFAULT_CLASS).await?.is_some() {
        return Ok(());
    }
    let class = StorageClass {
        metadata: ObjectMeta {
            name: Some(DEFAULT_CLASS.to_owned()),
            annotations: Some([(ANN_DEFAULT_CLASS.to_owned(), "true".to_owned())].into()),
            ..Default::default()
        },
        provisioner: PROVISIONER.to_owned(),
        reclaim_policy: Some("Delete".to_owned()),
        volume_binding_mode: Some("WaitForFirstConsumer".to_owned()),
        allow_volume_expansion: Some(false),
        ..Default::default()
    };
    match api.create(&PostParams::default(), &class).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Where the runtime's volumes live on the host.
pub fn volumes_dir(ctx: &Context) -> PathBuf {
    ctx.state_dir.join("volumes")
}

// === The scheduler's part ===

/// The name of the claim a volume of `pod` uses, if it uses one: its own for a
/// `persistentVolumeClaim` volume, `<pod>-<volume>` for an `ephemeral` one.
pub fn claim_name(pod: &Pod, volume: &Volume) -> Option<(String, bool)> {
    if let Some(source) = &volume.persistent_volume_claim {
        return Some((source.claim_name.clone(), false));
    }
    volume
        .ephemeral
        .as_ref()
        .map(|_| (format!("{}-{}", pod.name_any(), volume.name), true))
}

/// The claim of a volume as the pod may use it: present, owned by the pod if ephemeral, and
/// not being deleted. `Err` says why not, in kube-scheduler's words.
async fn usable_claim(
    api: &Api<PersistentVolumeClaim>,
    pod: &Pod,
    name: &str,
    ephemeral: bool,
) -> Result<PersistentVolumeClaim, String> {
    let claim = api
        .get_opt(name)
        .await
        .map_err(|e| format!("persistentvolumeclaim {name:?}: {e}"))?;
    let Some(claim) = claim else {
        return Err(if ephemeral {
            format!("waiting for ephemeral volume controller to create the persistentvolumeclaim {name:?}")
        } else {
            format!("persistentvolumeclaim {name:?} not found")
        });
    };
    if ephemeral {
        let owned = claim
            .metadata
            .owner_references
            .iter()
            .flatten()
            .any(|o| o.controller == Some(true) && Some(&o.uid) == pod.metadata.uid.as_ref());
        if !owned {
            return Err(format!(
                "PVC {}/{name} was not created for pod {}/{} (pod is not owner)",
                claim.namespace().unwrap_or_default(),
                pod.namespace().unwrap_or_default(),
                pod.name_any()
            ));
        }
    }
    if claim.metadata.deletion_timestamp.is_some() {
        return Err(format!("persistentvolumeclaim {name:?} is being deleted"));
    }
    Ok(claim)
}

fn is_bound(claim: &PersistentVolumeClaim) -> bool {
    claim
        .spec
        .as_ref()
        .and_then(|s| s.volume_name.as_deref())
        .is_some_and(|v| !v.is_empty())
}

/// What kube-scheduler's VolumeBinding plugin decides for `pod` on this node. `Ok` when the
/// pod may be bound: every claim exists, and is bound or of a `WaitForFirstConsumer` class;
/// the unbound ones have been annotated with the node. `Err` with the reason otherwise: the
/// pod stays unscheduled and is looked at again.
///
/// Unlike kube-scheduler, which binds the pod only once its claims are bound, the pod is
/// bound at once: the kubelet part then waits for the claims and shows that in the pod's
/// status.
pub async fn check_claims(ctx: &Context, pod: &Pod) -> Result<(), String> {
    let Some(spec) = &pod.spec else {
        return Ok(());
    };
    let namespace = pod.namespace().unwrap_or_default();
    let api: Api<PersistentVolumeClaim> = Api::namespaced(ctx.client.clone(), &namespace);
    let classes: Api<StorageClass> = Api::all(ctx.client.clone());
    let mut to_annotate = Vec::new();
    for volume in spec.volumes.iter().flatten() {
        let Some((name, ephemeral)) = claim_name(pod, volume) else {
            continue;
        };
        let claim = usable_claim(&api, pod, &name, ephemeral).await?;
        if is_bound(&claim) {
            continue;
        }
        let class_name = claim
            .spec
            .as_ref()
            .and_then(|s| s.storage_class_name.clone())
            .unwrap_or_default();
        let class = if class_name.is_empty() {
            None
        } else {
            classes
                .get_opt(&class_name)
                .await
                .map_err(|e| format!("storageclass {class_name:?}: {e}"))?
        };
        let Some(class) = class.filter(|c| c.volume_binding_mode.as_deref() == Some("WaitForFirstConsumer"))
        else {
            return Err("pod has unbound immediate PersistentVolumeClaims".to_owned());
        };
        if class.provisioner == "kubernetes.io/no-provisioner" {
            return Err("node(s) didn't find available persistent volumes to bind".to_owned());
        }
        let selected = claim
            .annotations()
            .get(ANN_SELECTED_NODE)
            .is_some_and(|n| *n == ctx.node_name);
        if !selected {
            to_annotate.push(name);
        }
    }
    for name in to_annotate {
        let patch = json!({"metadata": {"annotations": {ANN_SELECTED_NODE: ctx.node_name}}});
        api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|e| format!("persistentvolumeclaim {name:?}: setting the selected node: {e}"))?;
    }
    Ok(())
}

// === The kubelet's part ===

/// The host directory of the volume bound to a pod's claim. `Err` while the claim is
/// missing or not bound (the pod waits), or when its volume cannot be mounted here.
pub async fn claim_path(client: &Client, pod: &Pod, volume: &Volume) -> Result<PathBuf, String> {
    let Some((name, ephemeral)) = claim_name(pod, volume) else {
        return Err("not a claim".to_owned());
    };
    let namespace = pod.namespace().unwrap_or_default();
    let api: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), &namespace);
    let claim = usable_claim(&api, pod, &name, ephemeral).await?;
    let phase = claim
        .status
        .as_ref()
        .and_then(|s| s.phase.clone())
        .unwrap_or_else(|| "Pending".to_owned());
    let volume_name = claim
        .spec
        .as_ref()
        .and_then(|s| s.volume_name.clone())
        .unwrap_or_default();
    if phase != "Bound" || volume_name.is_empty() {
        return Err(format!(
            "waiting for persistentvolumeclaim {name:?} to be bound (phase {phase})"
        ));
    }
    let pvs: Api<PersistentVolume> = Api::all(client.clone());
    let pv = pvs
        .get_opt(&volume_name)
        .await
        .map_err(|e| format!("persistentvolume {volume_name:?}: {e}"))?
        .ok_or_else(|| format!("persistentvolume {volume_name:?} of claim {name:?} not found"))?;
    let spec = pv.spec.unwrap_or_default();
    if spec.volume_mode.as_deref() == Some("Block") {
        return Err(format!(
            "persistentvolume {volume_name:?} is a block volume: not supported by the local runtime"
        ));
    }
    if let Some(host_path) = spec.host_path {
        let path = PathBuf::from(&host_path.path);
        match host_path.type_.as_deref().unwrap_or_default() {
            "DirectoryOrCreate" => {
                std::fs::create_dir_all(&path).map_err(|e| format!("{}: {e}", path.display()))?
            }
            _ if !path.exists() => {
                return Err(format!(
                    "persistentvolume {volume_name:?}: {} does not exist",
                    path.display()
                ));
            }
            _ => {}
        }
        return Ok(path);
    }
    if let Some(local) = spec.local {
        let path = PathBuf::from(&local.path);
        if !path.exists() {
            return Err(format!(
                "persistentvolume {volume_name:?}: {} does not exist",
                path.display()
            ));
        }
        return Ok(path);
    }
    Err(format!(
        "persistentvolume {volume_name:?} is neither hostPath nor local: the local runtime cannot mount it"
    ))
}

/// Whether the kubelet mounts the volume read-only whatever the volumeMount says.
pub fn claim_read_only(volume: &Volume) -> bool {
    volume
        .persistent_volume_claim
        .as_ref()
        .is_some_and(|c| c.read_only == Some(true))
}

// === The provisioner's part ===

#[derive(Debug, thiserror::Error)]
pub enum ProvisionError {
    #[error("{0}")]
    Kube(#[from] kube::Error),
    #[error("{0}")]
    Io(String),
}

/// Provisions the claims handed to [`PROVISIONER`] and deletes its released volumes, as long
/// as the runtime runs.
pub async fn provision(ctx: Arc<Context>) {
    if let Err(e) = std::fs::create_dir_all(volumes_dir(&ctx)) {
        tracing::warn!(error = %e, "cannot create the volumes directory");
    }
    let claims = Controller::new(
        Api::<PersistentVolumeClaim>::all(ctx.client.clone()),
        watcher::Config::default(),
    )
    .run(provision_claim, retry, ctx.clone())
    .for_each(|_| async {});
    let volumes = Controller::new(
        Api::<PersistentVolume>::all(ctx.client.clone()),
        watcher::Config::default(),
    )
    .run(reclaim_volume, retry, ctx)
    .for_each(|_| async {});
    futures::join!(claims, volumes);
}

fn retry<K>(_: Arc<K>, error: &ProvisionError, _: Arc<Context>) -> Action {
    tracing::warn!(%error, "volume provisioning");
    Action::requeue(RETRY)
}

/// The PersistentVolume for `claim`, named as the external provisioner names it.
pub fn volume_name(claim: &PersistentVolumeClaim) -> String {
    format!("pvc-{}", claim.uid().unwrap_or_default())
}

async fn provision_claim(
    claim: Arc<PersistentVolumeClaim>,
    ctx: Arc<Context>,
) -> Result<Action, ProvisionError> {
    let annotations = claim.annotations();
    let ours = [ANN_STORAGE_PROVISIONER, ANN_BETA_STORAGE_PROVISIONER]
        .iter()
        .any(|a| annotations.get(*a).map(String::as_str) == Some(PROVISIONER));
    if !ours || claim.metadata.deletion_timestamp.is_some() || is_bound(&claim) {
        return Ok(Action::await_change());
    }
    let spec = claim.spec.clone().unwrap_or_default();
    let class_name = spec.storage_class_name.clone().unwrap_or_default();
    let classes: Api<StorageClass> = Api::all(ctx.client.clone());
    let Some(class) = classes.get_opt(&class_name).await? else {
        return Ok(Action::await_change());
    };
    if class.provisioner != PROVISIONER {
        return Ok(Action::await_change());
    }
    if class.volume_binding_mode.as_deref() == Some("WaitForFirstConsumer")
        && annotations.get(ANN_SELECTED_NODE) != Some(&ctx.node_name)
    {
        return Ok(Action::await_change());
    }
    let name = volume_name(&claim);
    let pvs: Api<PersistentVolume> = Api::all(ctx.client.clone());
    if pvs.get_opt(&name).await?.is_some() {
        return Ok(Action::await_change());
    }
    let reference = claim.object_ref(&());
    let claim_id = format!("{}/{}", claim.namespace().unwrap_or_default(), claim.name_any());
    let refused = if spec.volume_mode.as_deref() == Some("Block") {
        Some("volumeMode Block is not supported: the local runtime provisions directories".to_owned())
    } else if spec.data_source.is_some() || spec.data_source_ref.is_some() {
        Some("claims with a dataSource are not supported".to_owned())
    } else if spec.selector.is_some() {
        Some("claim Selector is not supported".to_owned())
    } else {
        None
    };
    if let Some(reason) = refused {
        let note = format!("failed to provision volume with StorageClass {class_name:?}: {reason}");
        ctx.event(&reference, true, "ProvisioningFailed", note).await;
        return Ok(Action::await_change());
    }
    let note = format!("External provisioner is provisioning volume for claim {claim_id:?}");
    ctx.event(&reference, false, "Provisioning", note).await;

    let dir = volumes_dir(&ctx).join(&name);
    let io = |e: std::io::Error| ProvisionError::Io(format!("{}: {e}", dir.display()));
    std::fs::create_dir_all(&dir).map_err(io)?;
    // Any user of any pod may write, as in local-path-provisioner's directories.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).map_err(io)?;

    let pv = persistent_volume(&claim, &class, &name, &dir, &ctx.node_name);
    match pvs.create(&PostParams::default(), &pv).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 409 => return Ok(Action::await_change()),
        Err(e) => {
            let note = format!("failed to provision volume with StorageClass {class_name:?}: {e}");
            ctx.event(&reference, true, "ProvisioningFailed", note).await;
            return Err(e.into());
        }
    }
    tracing::info!(claim = %claim_id, volume = %name, path = %dir.display(), "provisioned");
    let note = format!("Successfully provisioned volume {name}");
    ctx.event(&reference, false, "ProvisioningSucceeded", note).await;
    Ok(Action::await_change())
}

/// A hostPath volume on this node, pre-bound to `claim`: capacity, access modes and volume
/// mode of the claim, reclaim policy and mount options of the class.
fn persistent_volume(
    claim: &PersistentVolumeClaim,
    class: &StorageClass,
    name: &str,
    dir: &Path,
    node: &str,
) -> PersistentVolume {
    let spec = claim.spec.clone().unwrap_or_default();
    let storage = spec
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage").cloned())
        .unwrap_or_else(|| Quantity("1Gi".to_owned()));
    PersistentVolume {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            annotations: Some([(ANN_PROVISIONED_BY.to_owned(), PROVISIONER.to_owned())].into()),
            ..Default::default()
        },
        spec: Some(PersistentVolumeSpec {
            access_modes: spec.access_modes.clone(),
            capacity: Some([("storage".to_owned(), storage)].into()),
            claim_ref: Some(ObjectReference {
                api_version: Some("v1".to_owned()),
                kind: Some("PersistentVolumeClaim".to_owned()),
                namespace: claim.namespace(),
                name: Some(claim.name_any()),
                uid: claim.uid(),
                resource_version: claim.resource_version(),
                ..Default::default()
            }),
            persistent_volume_reclaim_policy: Some(
                class
                    .reclaim_policy
                    .clone()
                    .unwrap_or_else(|| "Delete".to_owned()),
            ),
            storage_class_name: class.metadata.name.clone(),
            mount_options: class.mount_options.clone(),
            volume_mode: Some(
                spec.volume_mode
                    .clone()
                    .unwrap_or_else(|| "Filesystem".to_owned()),
            ),
            host_path: Some(HostPathVolumeSource {
                path: dir.display().to_string(),
                type_: Some("DirectoryOrCreate".to_owned()),
            }),
            node_affinity: Some(VolumeNodeAffinity {
                required: Some(NodeSelector {
                    node_selector_terms: vec![NodeSelectorTerm {
                        match_expressions: Some(vec![NodeSelectorRequirement {
                            key: HOSTNAME_LABEL.to_owned(),
                            operator: "In".to_owned(),
                            values: Some(vec![node.to_owned()]),
                        }]),
                        ..Default::default()
                    }],
                }),
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A released volume of ours with reclaim policy `Delete`: its directory is removed, then
/// the PersistentVolume deleted (`Retain` keeps both, as in a cluster).
async fn reclaim_volume(pv: Arc<PersistentVolume>, ctx: Arc<Context>) -> Result<Action, ProvisionError> {
    if pv.annotations().get(ANN_PROVISIONED_BY).map(String::as_str) != Some(PROVISIONER) {
        return Ok(Action::await_change());
    }
    let spec = pv.spec.clone().unwrap_or_default();
    let phase = pv.status.as_ref().and_then(|s| s.phase.as_deref());
    if spec.persistent_volume_reclaim_policy.as_deref() != Some("Delete") || phase != Some("Released") {
        return Ok(Action::await_change());
    }
    if let Some(path) = spec.host_path.map(|h| PathBuf::from(h.path))
        && path.starts_with(volumes_dir(&ctx))
        && path.exists()
    {
        std::fs::remove_dir_all(&path).map_err(|e| ProvisionError::Io(format!("{}: {e}", path.display())))?;
    }
    let api: Api<PersistentVolume> = Api::all(ctx.client.clone());
    if pv.metadata.deletion_timestamp.is_none() {
        match api.delete(&pv.name_any(), &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(e.into()),
        }
    }
    tracing::info!(volume = %pv.name_any(), "deleted");
    Ok(Action::await_change())
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{
        EphemeralVolumeSource, PersistentVolumeClaimSpec, PersistentVolumeClaimVolumeSource,
    };

    use super::*;

    #[test]
    fn claims_are_named_as_the_pod_spec_and_the_ephemeral_volume_controller_say() {
        let pod = Pod {
            metadata: ObjectMeta {
                name: Some("jm-0".to_owned()),
                ..Default::default()
            },
            ..Default::default()
        };
        let claim = Volume {
            name: "data".to_owned(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: "checkpoints".to_owned(),
                read_only: Some(true),
            }),
            ..Default::default()
        };
        let ephemeral = Volume {
            name: "scratch".to_owned(),
            ephemeral: Some(EphemeralVolumeSource::default()),
            ..Default::default()
        };
        assert_eq!(claim_name(&pod, &claim), Some(("checkpoints".to_owned(), false)));
        assert!(claim_read_only(&claim));
        assert_eq!(
            claim_name(&pod, &ephemeral),
            Some(("jm-0-scratch".to_owned(), true))
        );
        assert!(!claim_read_only(&ephemeral));
        let empty_dir = Volume {
            name: "tmp".to_owned(),
            ..Default::default()
        };
        assert_eq!(claim_name(&pod, &empty_dir), None);
    }

    #[test]
    fn a_provisioned_volume_is_pre_bound_to_its_claim_on_this_node() {
        let claim = PersistentVolumeClaim {
            metadata: ObjectMeta {
                name: Some("ha".to_owned()),
                namespace: Some("flink".to_owned()),
                uid: Some("1234".to_owned()),
                ..Default::default()
            },
            spec: Some(PersistentVolumeClaimSpec {
                access_modes: Some(vec!["ReadWriteOnce".to_owned()]),
                resources: Some(k8s_openapi::api::core::v1::VolumeResourceRequirements {
                    requests: Some([("storage".to_owned(), Quantity("2Gi".to_owned()))].into()),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let class = StorageClass {
            metadata: ObjectMeta {
                name: Some("standard".to_owned()),
                ..Default::default()
            },
            provisioner: PROVISIONER.to_owned(),
            reclaim_policy: Some("Retain".to_owned()),
            ..Default::default()
        };
        let name = volume_name(&claim);
        assert_eq!(name, "pvc-1234");
        let pv = persistent_volume(
            &claim,
            &class,
            &name,
            Path::new("/state/volumes/pvc-1234"),
            "node-a",
        );
        let spec = pv.spec.unwrap();
        assert_eq!(spec.capacity.unwrap()["storage"].0, "2Gi");
        assert_eq!(spec.access_modes.unwrap(), ["ReadWriteOnce"]);
        assert_eq!(spec.persistent_volume_reclaim_policy.as_deref(), Some("Retain"));
        assert_eq!(spec.storage_class_name.as_deref(), Some("standard"));
        assert_eq!(spec.volume_mode.as_deref(), Some("Filesystem"));
        assert_eq!(spec.host_path.unwrap().path, "/state/volumes/pvc-1234");
        let claim_ref = spec.claim_ref.unwrap();
        assert_eq!(
            (
                claim_ref.namespace.as_deref(),
                claim_ref.name.as_deref(),
                claim_ref.uid.as_deref()
            ),
            (Some("flink"), Some("ha"), Some("1234"))
        );
        let term = &spec.node_affinity.unwrap().required.unwrap().node_selector_terms[0];
        let requirement = &term.match_expressions.as_ref().unwrap()[0];
        assert_eq!(requirement.key, HOSTNAME_LABEL);
        assert_eq!(requirement.values.as_deref(), Some(&["node-a".to_owned()][..]));
        assert_eq!(pv.metadata.annotations.unwrap()[ANN_PROVISIONED_BY], PROVISIONER);
    }
}
