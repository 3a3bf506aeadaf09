//! Carrying out a blue/green plan. Every action may be repeated after a crash or a failed
//! status write: a child or a savepoint that already exists under its name is the one this
//! step created (409 is done), a spec update and a suspension set values, and a child that
//! is gone is deleted (404 is done).

use std::collections::BTreeMap;

use flink_operator_api::{
    FlinkBlueGreenDeployment, FlinkBlueGreenDeploymentSpec, FlinkDeployment, FlinkDeploymentSpec,
    FlinkStateSnapshot, JobKind,
    common::{JobState, SnapshotTriggerType},
    keys,
};
use k8s_openapi::{
    api::core::v1::ConfigMap,
    apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference},
};
use kube::{
    Api, Resource, ResourceExt,
    api::{DeleteParams, Patch, PatchParams, PostParams},
};
use serde_json::json;

use super::{
    Colour, child_name,
    gate::{self, GateMap},
};
use crate::{
    flink::SavepointFormat,
    job_actions::new_snapshot,
    lifecycle::snapshot_resources::NewSnapshot,
    runtime::api_error::{api_message, is_conflict},
};
use flink_operator_api::SnapshotType;

/// What an action was doing to which object when the API server refused it.
#[derive(Debug, thiserror::Error)]
pub enum ActError {
    #[error("{action} child FlinkDeployment {name}: {}", api_message(source))]
    Child {
        action: &'static str,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error(
        "creating transition savepoint FlinkStateSnapshot {name} of {child}: {}",
        api_message(source)
    )]
    Savepoint {
        name: String,
        child: String,
        #[source]
        source: kube::Error,
    },
    #[error("writing the coordination ConfigMap {name}: {}", api_message(source))]
    GateMap {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error(
        "setting the spec of FlinkBlueGreenDeployment {name} back to the one applied: {}",
        api_message(source)
    )]
    Revert {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("{0}")]
    Ingress(#[source] crate::ingresses::WriteError),
    /// The resource has no uid yet (never stored): no owner reference can name it.
    #[error("FlinkBlueGreenDeployment {0} has no uid, so its children cannot name it as owner")]
    NoUid(String),
}

/// The API of the children and snapshots: the resource's own namespace.
fn api<K>(client: &kube::Client, resource: &FlinkBlueGreenDeployment) -> Api<K>
where
    K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>,
{
    Api::namespaced(client.clone(), &resource.namespace().unwrap_or_default())
}

/// Creates the child of `colour` with `spec`; one that exists already is done.
pub async fn create_child(
    client: &kube::Client,
    resource: &FlinkBlueGreenDeployment,
    colour: Colour,
    spec: &FlinkDeploymentSpec,
) -> Result<(), ActError> {
    let child = child(resource, colour, spec)?;
    let name = child.name_any();
    match api::<FlinkDeployment>(client, resource)
        .create(&PostParams::default(), &child)
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
        Err(source) => Err(child_error("creating", name, source)),
    }
}

/// Replaces the spec of the child of `colour` with `spec` as a whole (a JSON patch, so that
/// what the new spec leaves out is removed rather than kept, as a merge patch would).
pub async fn update_child(
    client: &kube::Client,
    resource: &FlinkBlueGreenDeployment,
    colour: Colour,
    spec: &FlinkDeploymentSpec,
) -> Result<(), ActError> {
    let name = child_name(&resource.name_any(), colour);
    let serde = |e| child_error("updating", name.clone(), kube::Error::SerdeError(e));
    let value = serde_json::to_value(spec).map_err(serde)?;
    let patch: json_patch::Patch =
        serde_json::from_value(json!([{ "op": "replace", "path": "/spec", "value": value }]))
            .map_err(serde)?;
    api::<FlinkDeployment>(client, resource)
        .patch(&name, &PatchParams::default(), &Patch::Json::<()>(patch))
        .await
        .map(drop)
        .map_err(|source| child_error("updating", name, source))
}

/// Suspends the child of `colour` (`spec.job.state: suspended`), keeping it.
pub async fn suspend_child(
    client: &kube::Client,
    resource: &FlinkBlueGreenDeployment,
    colour: Colour,
) -> Result<(), ActError> {
    let name = child_name(&resource.name_any(), colour);
    let patch = json!({ "spec": { "job": { "state": JobState::Suspended } } });
    api::<FlinkDeployment>(client, resource)
        .patch(&name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .map(drop)
        .map_err(|source| child_error("suspending", name, source))
}

/// Deletes the child of `colour`; one that is gone is done. Its own loop tears its cluster
/// down (its finalizer holds the deletion until then).
pub async fn delete_child(
    client: &kube::Client,
    resource: &FlinkBlueGreenDeployment,
    colour: Colour,
) -> Result<(), ActError> {
    let name = child_name(&resource.name_any(), colour);
    match api::<FlinkDeployment>(client, resource)
        .delete(&name, &DeleteParams::default())
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(source) => Err(child_error("deleting", name, source)),
    }
}

/// The savepoint a transition takes of its old child.
pub struct SavepointOfChild<'a> {
    /// The FlinkStateSnapshot's name, recorded in the status before it is created.
    pub name: &'a str,
    pub colour: Colour,
    /// When the savepoint is asked for, as the snapshot's trigger time.
    pub now_ms: i64,
    pub format: SavepointFormat,
}

/// Creates the FlinkStateSnapshot `savepoint.name`, a savepoint of the child of
/// `savepoint.colour`; one that exists already is this transition's (its name was recorded
/// before it was created).
pub async fn create_savepoint(
    client: &kube::Client,
    resource: &FlinkBlueGreenDeployment,
    savepoint: SavepointOfChild<'_>,
) -> Result<(), ActError> {
    let SavepointOfChild {
        name,
        colour,
        now_ms,
        format,
    } = savepoint;
    let child = child_name(&resource.name_any(), colour);
    let snapshot = transition_savepoint(resource, name, &child, now_ms, format)?;
    match api::<FlinkStateSnapshot>(client, resource)
        .create(&PostParams::default(), &snapshot)
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
        Err(source) => Err(ActError::Savepoint {
            name: name.to_owned(),
            child,
            source,
        }),
    }
}

/// Brings the coordination ConfigMap to `map`: created when none was observed
/// (`resource_version` `None`), else a merge patch of `patch` conditional on the
/// resourceVersion observed (a 409 means a gate or another writer changed it since: the next
/// look decides again from what it holds).
pub async fn write_gate_map(
    client: &kube::Client,
    resource: &FlinkBlueGreenDeployment,
    map: &GateMap,
    patch: &BTreeMap<String, Option<String>>,
    resource_version: Option<&str>,
) -> Result<(), ActError> {
    let name = gate::configmap_name(&resource.name_any());
    let error = |source| ActError::GateMap {
        name: name.clone(),
        source,
    };
    let api = api::<ConfigMap>(client, resource);
    let Some(resource_version) = resource_version else {
        let config_map = gate_config_map(resource, map)?;
        return api
            .create(&PostParams::default(), &config_map)
            .await
            .map(drop)
            .map_err(error);
    };
    let body = json!({
        "metadata": { "resourceVersion": resource_version },
        "data": patch,
    });
    api.patch(&name, &PatchParams::default(), &Patch::Merge(body))
        .await
        .map(drop)
        .map_err(error)
}

/// The coordination ConfigMap of `resource` holding `map`, owned by it and labelled for the
/// operator's watch.
pub fn gate_config_map(resource: &FlinkBlueGreenDeployment, map: &GateMap) -> Result<ConfigMap, ActError> {
    Ok(ConfigMap {
        metadata: ObjectMeta {
            name: Some(gate::configmap_name(&resource.name_any())),
            namespace: resource.namespace(),
            labels: Some([(keys::labels::BLUE_GREEN_GATE.to_owned(), resource.name_any())].into()),
            owner_references: Some(vec![owner_reference(resource)?]),
            ..Default::default()
        },
        data: Some(map.data()),
        ..Default::default()
    })
}

/// Sets the resource's spec back to `spec` (a JSON patch replacing it, conditional on the
/// resourceVersion read, so that a newer edit is never overwritten).
pub async fn revert_spec(
    client: &kube::Client,
    resource: &FlinkBlueGreenDeployment,
    spec: &FlinkBlueGreenDeploymentSpec,
) -> Result<Option<String>, ActError> {
    let name = resource.name_any();
    let error = |source| ActError::Revert {
        name: name.clone(),
        source,
    };
    let value = serde_json::to_value(spec).map_err(|e| error(kube::Error::SerdeError(e)))?;
    let version = resource.resource_version().unwrap_or_default();
    let patch: json_patch::Patch = serde_json::from_value(json!([
        { "op": "test", "path": "/metadata/resourceVersion", "value": version },
        { "op": "replace", "path": "/spec", "value": value },
    ]))
    .map_err(|e| error(kube::Error::SerdeError(e)))?;
    api::<FlinkBlueGreenDeployment>(client, resource)
        .patch(&name, &PatchParams::default(), &Patch::Json::<()>(patch))
        .await
        .map(|stored| stored.resource_version())
        .map_err(error)
}

impl ActError {
    /// A write of the coordination map that found it changed since it was read (a gate's
    /// turn, or the cache behind the last write): nothing is wrong, the next look reads it
    /// again.
    pub fn is_stale_gate_map(&self) -> bool {
        matches!(self, Self::GateMap { source, .. } if is_conflict(source))
    }
}

fn child_error(action: &'static str, name: String, source: kube::Error) -> ActError {
    ActError::Child { action, name, source }
}

/// The owner reference every object made for `resource` carries: `controller` and
/// `blockOwnerDeletion`, so that the children go with it and wake it.
fn owner_reference(resource: &FlinkBlueGreenDeployment) -> Result<OwnerReference, ActError> {
    let reference = resource
        .controller_owner_ref(&())
        .ok_or_else(|| ActError::NoUid(resource.name_any()))?;
    // kube leaves blockOwnerDeletion unset; set, a foreground deletion of the resource waits
    // for its children's own teardown.
    Ok(OwnerReference {
        block_owner_deletion: Some(true),
        ..reference
    })
}

/// The child FlinkDeployment of `colour`: `spec`, the template's labels and annotations, the
/// blue/green type label, and `resource` as its controlling owner.
pub fn child(
    resource: &FlinkBlueGreenDeployment,
    colour: Colour,
    spec: &FlinkDeploymentSpec,
) -> Result<FlinkDeployment, ActError> {
    let template = resource.spec.template.as_ref().and_then(|t| t.metadata.as_ref());
    let mut labels: BTreeMap<String, String> = template.and_then(|m| m.labels.clone()).unwrap_or_default();
    labels.insert(
        keys::labels::BLUE_GREEN_DEPLOYMENT_TYPE.to_owned(),
        colour.as_str().to_owned(),
    );
    let mut fd = FlinkDeployment::new(&child_name(&resource.name_any(), colour), spec.clone());
    fd.metadata.namespace = resource.namespace();
    fd.metadata.labels = Some(labels);
    fd.metadata.annotations = template.and_then(|m| m.annotations.clone());
    fd.metadata.owner_references = Some(vec![owner_reference(resource)?]);
    Ok(fd)
}

/// The transition savepoint `name` of the FlinkDeployment `child`, in `format` (the
/// template's `savepoint.format.type`). It is never disposed of with the resource: the new
/// child starts from it, and may need it again to restart.
pub fn transition_savepoint(
    resource: &FlinkBlueGreenDeployment,
    name: &str,
    child: &str,
    now_ms: i64,
    format: SavepointFormat,
) -> Result<FlinkStateSnapshot, ActError> {
    let new = NewSnapshot {
        kind: SnapshotType::Savepoint,
        trigger_type: SnapshotTriggerType::Manual,
        at_ms: now_ms,
        existing_path: None,
        completed_ms: None,
        dispose_on_delete: false,
    };
    let mut snapshot = new_snapshot(&new, name, JobKind::FlinkDeployment, child, format);
    snapshot.metadata.namespace = resource.namespace();
    snapshot.metadata.owner_references = Some(vec![owner_reference(resource)?]);
    Ok(snapshot)
}

#[cfg(test)]
mod tests {
    use flink_operator_api::{FlinkBlueGreenDeploymentSpec, FlinkDeploymentTemplateSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    fn resource() -> FlinkBlueGreenDeployment {
        let mut bg = FlinkBlueGreenDeployment::new(
            "bg",
            FlinkBlueGreenDeploymentSpec {
                template: Some(FlinkDeploymentTemplateSpec {
                    metadata: Some(ObjectMeta {
                        labels: Some([("team".to_owned(), "a".to_owned())].into()),
                        annotations: Some([("note".to_owned(), "n".to_owned())].into()),
                        ..Default::default()
                    }),
                    spec: Some(FlinkDeploymentSpec::default()),
                }),
                ..Default::default()
            },
        );
        bg.metadata.namespace = Some("ns".to_owned());
        bg.metadata.uid = Some("u1".to_owned());
        bg
    }

    #[test]
    fn a_child_is_labelled_with_its_colour_and_controlled_by_the_resource() {
        let fd = child(&resource(), Colour::Green, &FlinkDeploymentSpec::default()).expect("built");
        assert_eq!(fd.name_any(), "bg-green");
        assert_eq!(fd.namespace().as_deref(), Some("ns"));
        let labels = fd.labels();
        assert_eq!(labels[keys::labels::BLUE_GREEN_DEPLOYMENT_TYPE], "GREEN");
        assert_eq!(labels["team"], "a", "the template's labels are kept");
        assert_eq!(fd.annotations()["note"], "n");
        let owner = &fd.owner_references()[0];
        assert_eq!(owner.uid, "u1");
        assert_eq!(owner.kind, keys::kinds::FLINK_BLUE_GREEN_DEPLOYMENT);
        assert_eq!(owner.controller, Some(true));
        assert_eq!(owner.block_owner_deletion, Some(true));
    }

    #[test]
    fn the_coordination_map_is_owned_labelled_and_holds_the_operators_part() {
        use crate::bluegreen::gate::{GateStage, Named};
        let map = GateMap {
            transition_id: "3".to_owned(),
            stage: GateStage::Running,
            active: Named {
                colour: Colour::Blue,
                transition_id: "3".to_owned(),
            },
            standby: None,
            deletion_delay_ms: 10_000,
        };
        let config_map = gate_config_map(&resource(), &map).expect("built");
        assert_eq!(config_map.name_any(), "bg-configmap");
        assert_eq!(config_map.namespace().as_deref(), Some("ns"));
        assert_eq!(config_map.labels()[keys::labels::BLUE_GREEN_GATE], "bg");
        assert_eq!(config_map.owner_references()[0].uid, "u1");
        assert_eq!(config_map.data, Some(map.data()));
    }

    #[test]
    fn a_resource_never_stored_has_no_children() {
        let mut bg = resource();
        bg.metadata.uid = None;
        assert!(matches!(
            child(&bg, Colour::Blue, &FlinkDeploymentSpec::default()),
            Err(ActError::NoUid(_))
        ));
    }

    #[test]
    fn the_transition_savepoint_refers_to_the_active_child_and_is_kept_on_deletion() {
        let snapshot = transition_savepoint(
            &resource(),
            "bg-blue-transition-1",
            "bg-blue",
            5,
            SavepointFormat::Native,
        )
        .expect("built");
        assert_eq!(snapshot.name_any(), "bg-blue-transition-1");
        let reference = snapshot.spec.job_reference.as_ref().expect("reference");
        assert_eq!(reference.kind, Some(JobKind::FlinkDeployment));
        assert_eq!(reference.name.as_deref(), Some("bg-blue"));
        let savepoint = snapshot.spec.savepoint.as_ref().expect("a savepoint");
        assert_eq!(savepoint.dispose_on_delete, Some(false));
        assert_eq!(savepoint.already_exists, Some(false));
        assert_eq!(snapshot.owner_references()[0].uid, "u1");
    }
}
