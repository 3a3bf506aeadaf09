//! Reading the world of one FlinkBlueGreenDeployment from the shared caches: its two
//! children, the transition's FlinkStateSnapshot, its blue/green options, the clock, a fresh
//! id and, in ADVANCED mode, the coordination ConfigMap. The children's and the snapshot's
//! own loops ask Flink; the one REST call here is the ADVANCED gate phase's, which asks the
//! old job whether its gates handed over.

use flink_operator_api::{
    FlinkBlueGreenDeployment, FlinkDeployment, FlinkStateSnapshot, TransitionMode, keys,
};
use kube::{Resource, ResourceExt};

use super::{
    BlueGreenPolicy, Child, Colour, Observation, Stage, TransitionSavepoint, child_name,
    decide::millis_of,
    gate::{self, HandOver, ObservedMap},
};
use crate::{
    caches::Caches,
    context::Context,
    flink::{Aggregation, JobId, SavepointFormat, TriggerId},
    lifecycle::spec::is_suspended,
    policy::Policy,
};

/// How many characters of a random id name a transition savepoint: unique enough among the
/// transitions of one resource, short enough to keep the snapshot's name readable.
const FRESH_ID_LEN: usize = 12;

/// What observe read, and the operator settings that time the next look.
pub struct Observed {
    pub observation: Observation,
    pub policy: Policy,
    /// The format of a transition savepoint: the template's `savepoint.format.type`, over
    /// the operator's.
    pub savepoint_format: SavepointFormat,
}

/// What the decision needs of `resource`'s world, read from the shared caches.
pub fn observe(ctx: &Context, caches: &Caches, resource: &FlinkBlueGreenDeployment) -> Observed {
    let namespace = resource.namespace().unwrap_or_default();
    let name = resource.name_any();
    let uid = resource.uid().unwrap_or_default();
    let mut foreign = Vec::new();
    let mut child = |colour: Colour| {
        let child_name = child_name(&name, colour);
        let fd = caches.deployments.get(&namespace, &child_name)?;
        // A FlinkDeployment of a child's name but another owner is never adopted, changed or
        // deleted: decide reports it and deploys nothing.
        if !owned_by(&*fd, &uid) {
            foreign.push(child_name);
            return None;
        }
        Some(child_of(&fd))
    };
    let (blue, green) = (child(Colour::Blue), child(Colour::Green));
    let savepoint = resource
        .status
        .as_ref()
        .and_then(|s| s.savepoint_trigger_id.as_deref())
        .filter(|n| !n.is_empty())
        .and_then(|n| caches.snapshots.get(&namespace, n))
        .map(|s| transition_savepoint(&s));
    let settings = ctx.validation().operator_settings(&namespace);
    let port = |colour: Colour| {
        caches
            .deployments
            .get(&namespace, &child_name(&name, colour))
            .map(|fd| ctx.rest_port(&fd))
            .unwrap_or_default()
    };
    let observation = Observation {
        blue,
        green,
        savepoint,
        policy: BlueGreenPolicy::from_configuration(resource.spec.configuration.as_ref()),
        now_ms: k8s_openapi::jiff::Timestamp::now().as_millisecond(),
        fresh_id: fresh_id(),
        foreign,
        gate: (resource.spec.transition_mode == Some(TransitionMode::Advanced))
            .then(|| {
                caches
                    .gate_config_maps
                    .get(&namespace, &gate::configmap_name(&name))
            })
            .flatten()
            .map(|cm| {
                let data = cm.data.clone().unwrap_or_default();
                ObservedMap::of(&data, cm.resource_version().unwrap_or_default())
            }),
        hand_over: HandOver::NotAsked,
        ingress: super::ingress::IngressObservation {
            cached: caches.ingress(&namespace, &name),
            blue_port: port(Colour::Blue),
            green_port: port(Colour::Green),
        },
        refused: ctx
            .validation()
            .operator_namespace_violation(&namespace)
            .map(|v| v.to_string()),
    };
    let template = resource.spec.template.as_ref().and_then(|t| t.spec.as_ref());
    let savepoint_format = Policy::from_config(&ctx.validation().effective_config(
        &namespace,
        template.and_then(|spec| spec.flink_version),
        template.and_then(|spec| spec.flink_configuration.as_ref()),
    ))
    .savepoint_format;
    Observed {
        observation,
        policy: Policy::from_config(&settings),
        savepoint_format,
    }
}

/// What the old job's gates report, when an ADVANCED hand-over waits for them: the new
/// child is stable (its readiness recorded), the old one runs and is not being stopped yet.
pub async fn hand_over(
    ctx: &Context,
    caches: &Caches,
    resource: &FlinkBlueGreenDeployment,
    observation: &Observation,
) -> HandOver {
    let status = resource.status.as_ref();
    let Stage::TransitioningTo(to) = Stage::of(status.and_then(|s| s.blue_green_state)) else {
        return HandOver::NotAsked;
    };
    let ready = millis_of(status.and_then(|s| s.deployment_ready_timestamp.as_deref())).is_some();
    let old = observation.live_child(to.other());
    let (true, true, Some(old)) = (observation.gate.is_some(), ready, old) else {
        return HandOver::NotAsked;
    };
    if is_suspended(&old.spec) {
        return HandOver::NotAsked;
    }
    let Some(job) = old.job_status.as_ref().and_then(|j| j.job_id.clone()) else {
        return HandOver::Unknown("its job id is not known yet".to_owned());
    };
    let namespace = resource.namespace().unwrap_or_default();
    let cluster = child_name(&resource.name_any(), to.other());
    let Some(fd) = caches.deployments.get(&namespace, &cluster) else {
        return HandOver::NotAsked;
    };
    match gate_minima(ctx, &fd, &resource.name_any(), &JobId::from(job.as_str())).await {
        Ok(minima) => HandOver::of_minima(minima),
        Err(error) => HandOver::Unknown(error),
    }
}

/// The minimum of the hand-over gauge over the subtasks of each vertex of `job`, run by the
/// child `fd`, that has a gate (a vertex reports an operator's gauge as
/// `<operator>.<gauge>`); the requests count for the blue/green resource `counted_as`.
async fn gate_minima(
    ctx: &Context,
    fd: &FlinkDeployment,
    counted_as: &str,
    job: &JobId,
) -> Result<Vec<f64>, String> {
    let url = ctx.rest_url(fd).await.map_err(|e| e.to_string())?;
    let namespace = fd.namespace().unwrap_or_default();
    let rest = ctx
        .rest_client(&url, super::KIND, &namespace, counted_as)
        .map_err(|e| e.to_string())?;
    let details = rest.job_details(job).await.map_err(|e| e.to_string())?;
    let mut minima = Vec::new();
    for vertex in &details.vertices {
        let ids = rest
            .subtask_metric_ids(job, &vertex.id)
            .await
            .map_err(|e| e.to_string())?;
        let gauges: Vec<&str> = ids
            .iter()
            .map(String::as_str)
            .filter(|id| id.ends_with(gate::HAND_OVER_GAUGE))
            .collect();
        if gauges.is_empty() {
            continue;
        }
        let values = rest
            .subtask_metrics(job, &vertex.id, &gauges, &[Aggregation::Min])
            .await
            .map_err(|e| e.to_string())?;
        // A gauge that reports nothing yet counts as not handed over.
        minima.extend(values.iter().map(|v| v.min.unwrap_or(0.0)));
    }
    Ok(minima)
}

/// Whether `object` has an owner reference to the resource of `uid` (whatever its
/// `controller` flag: children created by the Apache operator carry `controller: false`).
pub fn owned_by(object: &impl Resource, uid: &str) -> bool {
    !uid.is_empty() && object.owner_references().iter().any(|o| o.uid == uid)
}

/// A child as the decision reads it.
pub fn child_of(fd: &FlinkDeployment) -> Child {
    let status = fd.status.as_ref();
    Child {
        spec: fd.spec.clone(),
        deleting: fd.metadata.deletion_timestamp.is_some(),
        lifecycle: status.and_then(|s| s.lifecycle_state),
        job_status: status.and_then(|s| s.job_status.clone()),
    }
}

/// The transition savepoint as the decision reads it (no status yet: trigger pending).
pub fn transition_savepoint(snapshot: &FlinkStateSnapshot) -> TransitionSavepoint {
    let status = snapshot.status.as_ref();
    TransitionSavepoint {
        name: snapshot.name_any(),
        state: flink_operator_api::FlinkStateSnapshotState::of(status),
        path: status.and_then(|s| s.path.clone()),
        error: status.and_then(|s| s.error.clone()),
    }
}

/// The colour of a child, from its `flink/blue-green-deployment-type` label.
pub fn colour_label(fd: &FlinkDeployment) -> Option<Colour> {
    fd.labels()
        .get(keys::labels::BLUE_GREEN_DEPLOYMENT_TYPE)
        .and_then(|v| v.parse().ok())
}

fn fresh_id() -> String {
    TriggerId::random().as_str().chars().take(FRESH_ID_LEN).collect()
}

#[cfg(test)]
mod tests {
    use flink_operator_api::{
        FlinkDeploymentStatus, FlinkStateSnapshotSpec, FlinkStateSnapshotState, FlinkStateSnapshotStatus,
        common::ResourceLifecycleState,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    use super::*;

    fn owner(uid: &str) -> OwnerReference {
        OwnerReference {
            api_version: keys::API_VERSION.to_owned(),
            kind: keys::kinds::FLINK_BLUE_GREEN_DEPLOYMENT.to_owned(),
            name: "bg".to_owned(),
            uid: uid.to_owned(),
            controller: Some(false),
            block_owner_deletion: Some(true),
        }
    }

    #[test]
    fn a_child_is_owned_by_uid_whatever_its_controller_flag() {
        let mut fd = FlinkDeployment::new("bg-blue", Default::default());
        assert!(!owned_by(&fd, "u1"));
        fd.metadata.owner_references = Some(vec![owner("u1")]);
        assert!(owned_by(&fd, "u1"));
        assert!(!owned_by(&fd, "u2"));
        assert!(!owned_by(&fd, ""), "a resource without uid owns nothing");
    }

    #[test]
    fn a_child_reads_its_deletion_lifecycle_and_job() {
        let mut fd = FlinkDeployment::new("bg-green", Default::default());
        fd.metadata.labels = Some(
            [(
                keys::labels::BLUE_GREEN_DEPLOYMENT_TYPE.to_owned(),
                "GREEN".to_owned(),
            )]
            .into(),
        );
        fd.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        ));
        fd.status = Some(FlinkDeploymentStatus {
            lifecycle_state: Some(ResourceLifecycleState::Stable),
            ..Default::default()
        });
        let child = child_of(&fd);
        assert!(child.deleting);
        assert_eq!(child.lifecycle, Some(ResourceLifecycleState::Stable));
        assert_eq!(colour_label(&fd), Some(Colour::Green));
    }

    #[test]
    fn a_snapshot_without_status_is_pending_and_a_completed_one_carries_its_path() {
        let mut snapshot = FlinkStateSnapshot::new("bg-blue-transition-x", FlinkStateSnapshotSpec::default());
        assert_eq!(
            transition_savepoint(&snapshot).state,
            FlinkStateSnapshotState::TriggerPending
        );
        snapshot.status = Some(FlinkStateSnapshotStatus {
            state: Some(FlinkStateSnapshotState::Completed),
            path: Some("s3://sp/1".to_owned()),
            ..Default::default()
        });
        let read = transition_savepoint(&snapshot);
        assert_eq!(read.state, FlinkStateSnapshotState::Completed);
        assert_eq!(read.path.as_deref(), Some("s3://sp/1"));
        assert_eq!(read.name, "bg-blue-transition-x");
    }

    #[test]
    fn a_fresh_id_is_short_lowercase_hex() {
        let id = fresh_id();
        assert_eq!(id.len(), FRESH_ID_LEN);
        assert!(id.chars().all(|c| c.is_ascii_digit() || c.is_ascii_lowercase()));
    }
}
