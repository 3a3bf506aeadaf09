//! Carrying out a [`JobAction`] through the JobManager's REST API, for every kind. Each may
//! be repeated after a crash: a stop or a trigger runs under the trigger id recorded before
//! it (Flink answers a repeated one with the same operation), and cancelling a job that is
//! gone is done.

use flink_operator_api::{
    CheckpointSpec, FlinkStateSnapshot, FlinkStateSnapshotSpec, JobKind, JobReference, SavepointFormatType,
    SavepointSpec, keys,
};
use k8s_openapi::api::apps::v1::ControllerRevision;
use kube::{
    Api,
    api::{DeleteParams, Patch, PatchParams, PostParams},
};
use serde_json::json;

use crate::lifecycle::{
    facts::JobAction,
    revisions::{self, RecordRevision, RevisionStep},
    snapshot_resources::NewSnapshot,
};
use crate::{
    flink::{FlinkError, FlinkRestClient, JobId, SavepointFormat, TriggerId},
    policy::Policy,
};
use flink_operator_api::SnapshotType;

#[derive(Debug, thiserror::Error)]
pub enum JobActError {
    #[error("{what} of job {job_id}: {source}")]
    Flink {
        what: &'static str,
        job_id: String,
        #[source]
        source: FlinkError,
    },
    /// Flink refused, or did not answer, new resource requirements: the change is applied
    /// by an upgrade instead.
    #[error("rescaling job {job_id} in place: {source}")]
    Rescale {
        job_id: String,
        #[source]
        source: FlinkError,
    },
    #[error("disposing of savepoint {path}: {source}")]
    Dispose {
        path: String,
        #[source]
        source: FlinkError,
    },
    /// A kind's act routes each action by [`JobAction::on_resources`].
    #[error("{0} was routed to the wrong carrier")]
    NotRest(String),
    #[error(
        "{what} FlinkStateSnapshot {name}: {}",
        crate::runtime::api_error::api_message(source)
    )]
    SnapshotType {
        what: &'static str,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error(
        "{what} the scaling history in ConfigMap {name}: {}",
        crate::runtime::api_error::api_message(source)
    )]
    ScalingHistory {
        what: &'static str,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("{what} revision {name}: {}", crate::runtime::api_error::api_message(source))]
    Revision {
        what: &'static str,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("{what}: {}", crate::runtime::api_error::api_message(source))]
    Resource {
        what: &'static str,
        #[source]
        source: kube::Error,
    },
}

/// A job resource (FlinkDeployment or FlinkSessionJob) as the actions on Kubernetes objects
/// read and patch it.
pub trait JobResource:
    kube::Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
    + Clone
    + serde::de::DeserializeOwned
    + std::fmt::Debug
{
}

impl<K> JobResource for K where
    K: kube::Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
{
}

/// The namespace and name of `owner`.
fn located(owner: &impl kube::Resource) -> (String, String) {
    let meta = owner.meta();
    (
        meta.namespace.clone().unwrap_or_default(),
        meta.name.clone().unwrap_or_default(),
    )
}

/// Deletes the snapshot resource `name`; one that is gone is done.
async fn delete_snapshot(api: &Api<FlinkStateSnapshot>, name: &str) -> Result<Option<String>, JobActError> {
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(None),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(None),
        Err(source) => Err(JobActError::SnapshotType {
            what: "deleting",
            name: name.to_owned(),
            source,
        }),
    }
}

/// Carries out a [`JobAction`] on Kubernetes objects (see [`JobAction::on_resources`]) for
/// the job resource `owner` of kind `kind`. Each may be repeated: a FlinkStateSnapshot or a
/// revision that exists is done (created before a crash, under the same name), one that is
/// gone is deleted, and a rollback request that is no longer there is not acted on. Returns
/// the owner's new resourceVersion when it was patched (a status write later in the pass is
/// conditional on it).
pub async fn on_resources<K>(
    client: &kube::Client,
    owner: &K,
    kind: JobKind,
    action: &JobAction,
    policy: &Policy,
) -> Result<Option<String>, JobActError>
where
    K: JobResource,
{
    let (namespace, owner_name) = located(owner);
    let api: Api<FlinkStateSnapshot> = Api::namespaced(client.clone(), &namespace);
    match action {
        JobAction::CreateSnapshot(new) => {
            let name = new.name(&owner_name);
            let snapshot = new_snapshot(new, &name, kind, &owner_name, policy.savepoint_format);
            match api.create(&PostParams::default(), &snapshot).await {
                Ok(_) => Ok(None),
                Err(kube::Error::Api(e)) if e.code == 409 => Ok(None),
                Err(source) => Err(JobActError::SnapshotType {
                    what: "creating",
                    name,
                    source,
                }),
            }
        }
        JobAction::DeleteSnapshot { name, keep_files } => {
            if *keep_files {
                let keep = json!({"spec": {"savepoint": {"disposeOnDelete": false}}});
                match api
                    .patch(name, &PatchParams::default(), &Patch::Merge(&keep))
                    .await
                {
                    Ok(_) => {}
                    Err(kube::Error::Api(e)) if e.code == 404 => return Ok(None),
                    Err(source) => {
                        return Err(JobActError::SnapshotType {
                            what: "keeping the files of",
                            name: name.clone(),
                            source,
                        });
                    }
                }
            }
            delete_snapshot(&api, name).await
        }
        JobAction::RecordRevision(record) => record_revision(client, owner, kind, record).await,
        JobAction::RollBack {
            spec,
            request,
            drop_restore,
        } => {
            let mut operations = vec![json!({"op": "replace", "path": "/spec", "value": spec})];
            operations.extend(request_removal(*drop_restore));
            patch_if_requested(client, owner, request, operations, "writing the revision's spec").await
        }
        JobAction::RecordScaling(entry, retention) => {
            record_scaling(client, owner, kind, entry, *retention).await
        }
        JobAction::DropRollbackRequest { request } => {
            let drop_restore = owner
                .meta()
                .annotations
                .as_ref()
                .is_some_and(|a| a.contains_key(keys::annotations::ROLLBACK_RESTORE));
            let operations = request_removal(drop_restore);
            patch_if_requested(
                client,
                owner,
                request,
                operations,
                "removing the refused rollback request",
            )
            .await
        }
        _ => Err(JobActError::NotRest(format!("{action:?}"))),
    }
}

/// Adds `entry` to the owner's scaling history (see [`crate::autoscaler::history`]): read,
/// appended and trimmed, then applied with the owner as its owner.
async fn record_scaling<K>(
    client: &kube::Client,
    owner: &K,
    kind: JobKind,
    entry: &crate::autoscaler::history::ScalingEntry,
    retention: crate::policy::autoscaler::Retention,
) -> Result<Option<String>, JobActError>
where
    K: JobResource,
{
    use crate::autoscaler::history;
    use k8s_openapi::api::core::v1::ConfigMap;
    let (namespace, owner_name) = located(owner);
    let name = history::config_map_name(kind, &owner_name);
    let failed = |what: &'static str| {
        let name = name.clone();
        move |source| JobActError::ScalingHistory { what, name, source }
    };
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
    let kept = history::read(api.get_opt(&name).await.map_err(failed("reading"))?.as_ref());
    let now_ms = k8s_openapi::jiff::Timestamp::now().as_millisecond();
    let history = history::appended(kept, entry, retention, now_ms);
    let config_map = ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(namespace.clone()),
            labels: Some(
                [
                    ("app".to_owned(), owner_name.clone()),
                    ("component".to_owned(), history::COMPONENT.to_owned()),
                ]
                .into(),
            ),
            owner_references: owner.controller_owner_ref(&()).map(|r| vec![r]),
            ..Default::default()
        },
        data: Some(history::data(&history)),
        ..Default::default()
    };
    api.patch(
        &name,
        &PatchParams::apply(crate::resources::FIELD_MANAGER).force(),
        &Patch::Apply(&config_map),
    )
    .await
    .map_err(failed("writing"))?;
    Ok(None)
}

/// Creates or moves the revision, deletes the pruned ones, and shows the current number in
/// the owner's `flink.apache.org/revision` annotation.
async fn record_revision<K>(
    client: &kube::Client,
    owner: &K,
    kind: JobKind,
    record: &RecordRevision,
) -> Result<Option<String>, JobActError>
where
    K: JobResource,
{
    let (namespace, owner_name) = located(owner);
    let revisions: Api<ControllerRevision> = Api::namespaced(client.clone(), &namespace);
    let failed = |what: &'static str, name: &str| {
        let name = name.to_owned();
        move |source| JobActError::Revision { what, name, source }
    };
    match &record.step {
        Some(RevisionStep::Create(revision)) => {
            let Some(reference) = owner.controller_owner_ref(&()) else {
                return Err(JobActError::NotRest(
                    "a revision of an owner without uid".to_owned(),
                ));
            };
            let object = revisions::controller_revision(kind, &owner_name, &namespace, reference, revision);
            match revisions.create(&PostParams::default(), &object).await {
                Ok(_) => {}
                Err(kube::Error::Api(e)) if e.code == 409 => {}
                Err(source) => return Err(failed("creating", &revision.name)(source)),
            }
        }
        Some(RevisionStep::Reuse { revision, .. }) => {
            revisions
                .patch(
                    &revision.name,
                    &PatchParams::default(),
                    &Patch::Merge(revisions::reuse_patch(revision)),
                )
                .await
                .map_err(failed("moving", &revision.name))?;
        }
        Some(RevisionStep::Unchanged(_)) | None => {}
    }
    for name in &record.prune {
        match revisions.delete(name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(source) => return Err(failed("pruning", name)(source)),
        }
    }
    let current = record.current.to_string();
    let shown = owner
        .meta()
        .annotations
        .as_ref()
        .and_then(|a| a.get(keys::annotations::REVISION));
    if shown == Some(&current) {
        return Ok(None);
    }
    let api: Api<K> = Api::namespaced(client.clone(), &namespace);
    let patch = json!({"metadata": {"annotations": {keys::annotations::REVISION: current}}});
    let patched = api
        .patch(&owner_name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .map_err(|source| JobActError::Resource {
            what: "showing the current revision",
            source,
        })?;
    Ok(patched.meta().resource_version.clone())
}

/// JSON Patch operations that remove a rollback request's annotations.
fn request_removal(drop_restore: bool) -> Vec<serde_json::Value> {
    let path = |key: &str| {
        format!(
            "/metadata/annotations/{}",
            key.replace('~', "~0").replace('/', "~1")
        )
    };
    let mut operations = vec![json!({"op": "remove", "path": path(keys::annotations::ROLLBACK_TO_REVISION)})];
    if drop_restore {
        operations.push(json!({"op": "remove", "path": path(keys::annotations::ROLLBACK_RESTORE)}));
    }
    operations
}

/// Applies `operations` to the owner only while its rollback request is still `request`:
/// read first (a request removed or changed since is not acted on), then tested in the patch
/// itself (a change in between fails it, and the next pass decides again).
async fn patch_if_requested<K>(
    client: &kube::Client,
    owner: &K,
    request: &str,
    operations: Vec<serde_json::Value>,
    what: &'static str,
) -> Result<Option<String>, JobActError>
where
    K: JobResource,
{
    let (namespace, name) = located(owner);
    let api: Api<K> = Api::namespaced(client.clone(), &namespace);
    let resource = |source| JobActError::Resource { what, source };
    let now = api.get(&name).await.map_err(resource)?;
    let still = now
        .meta()
        .annotations
        .as_ref()
        .and_then(|a| a.get(keys::annotations::ROLLBACK_TO_REVISION));
    if still.map(String::as_str) != Some(request) {
        return Ok(None);
    }
    let test = json!({
        "op": "test",
        "path": format!(
            "/metadata/annotations/{}",
            keys::annotations::ROLLBACK_TO_REVISION.replace('/', "~1")
        ),
        "value": request,
    });
    let operations: Vec<serde_json::Value> = std::iter::once(test).chain(operations).collect();
    let patch: json_patch::Patch = serde_json::from_value(serde_json::Value::Array(operations))
        .map_err(|e| resource(kube::Error::SerdeError(e)))?;
    let patched = api
        .patch(&name, &PatchParams::default(), &Patch::Json::<()>(patch))
        .await
        .map_err(resource)?;
    Ok(patched.meta().resource_version.clone())
}

/// The FlinkStateSnapshot `name` for `new`, of the job resource `kind` `owner`.
pub fn new_snapshot(
    new: &NewSnapshot,
    name: &str,
    kind: JobKind,
    owner: &str,
    format: SavepointFormat,
) -> FlinkStateSnapshot {
    let savepoint = (new.kind == SnapshotType::Savepoint).then(|| SavepointSpec {
        path: new.existing_path.clone(),
        format_type: Some(match format {
            SavepointFormat::Canonical => SavepointFormatType::Canonical,
            SavepointFormat::Native => SavepointFormatType::Native,
        }),
        dispose_on_delete: Some(new.dispose_on_delete),
        already_exists: Some(new.existing_path.is_some()),
    });
    let mut snapshot = FlinkStateSnapshot::new(
        name,
        FlinkStateSnapshotSpec {
            job_reference: Some(JobReference {
                kind: Some(kind),
                name: Some(owner.to_owned()),
                namespace: None,
            }),
            checkpoint: (new.kind == SnapshotType::Checkpoint).then(CheckpointSpec::default),
            savepoint,
            backoff_limit: Some(new.backoff_limit()),
        },
    );
    snapshot.metadata.labels = Some(
        [(
            keys::labels::SNAPSHOT_TRIGGER_TYPE.to_owned(),
            new.trigger_type.as_str().to_owned(),
        )]
        .into(),
    );
    // The existing savepoint's own time, which the FlinkStateSnapshot loop records; without
    // it the savepoint would be of unknown age (never of the time it is recorded).
    if new.existing_path.is_some()
        && let Some(at) = new.completed_ms
    {
        snapshot.metadata.annotations = Some(
            [(
                keys::annotations::SAVEPOINT_COMPLETED_AT.to_owned(),
                crate::timestamps::timestamp(at),
            )]
            .into(),
        );
    }
    snapshot
}

/// Reads the job's resource requirements and sends those that apply `change`, unless they
/// are so already (a repeat after a crash).
async fn rescale(
    rest: &FlinkRestClient,
    change: &crate::lifecycle::rescale::Rescale,
) -> Result<(), FlinkError> {
    let job = JobId::from(change.job_id.as_str());
    let current = rest.resource_requirements(&job).await?;
    let wanted = crate::lifecycle::rescale::requirements(&current, change);
    if wanted == current {
        return Ok(());
    }
    rest.set_resource_requirements(&job, &wanted).await
}

/// Carries out `action` through the job's JobManager, in the savepoint format and checkpoint
/// type of the job's `policy`.
pub async fn run(rest: &FlinkRestClient, action: &JobAction, policy: &Policy) -> Result<(), JobActError> {
    let flink = |what: &'static str, job_id: &str| {
        let job_id = job_id.to_owned();
        move |source| JobActError::Flink { what, job_id, source }
    };
    match action {
        JobAction::StopWithSavepoint {
            job_id,
            trigger_id,
            drain,
        } => rest
            .stop_with_savepoint_as(
                &JobId::from(job_id.as_str()),
                &TriggerId::from(trigger_id.as_str()),
                None,
                *drain,
                policy.savepoint_format,
            )
            .await
            .map(drop)
            .map_err(flink("stop-with-savepoint", job_id)),
        JobAction::Cancel { job_id } => match rest.cancel(&JobId::from(job_id.as_str())).await {
            Ok(()) | Err(FlinkError::NotFound { .. }) => Ok(()),
            Err(source) => Err(flink("cancelling", job_id)(source)),
        },
        JobAction::TriggerSavepoint { job_id, trigger_id } => rest
            .trigger_savepoint_as(
                &JobId::from(job_id.as_str()),
                &TriggerId::from(trigger_id.as_str()),
                None,
                policy.savepoint_format,
            )
            .await
            .map(drop)
            .map_err(flink("triggering a savepoint", job_id)),
        JobAction::TriggerCheckpoint { job_id, trigger_id } => rest
            .trigger_checkpoint_as(
                &JobId::from(job_id.as_str()),
                &TriggerId::from(trigger_id.as_str()),
                policy.checkpoint_type,
            )
            .await
            .map(drop)
            .map_err(flink("triggering a checkpoint", job_id)),
        JobAction::CreateSnapshot(_)
        | JobAction::DeleteSnapshot { .. }
        | JobAction::RecordRevision(_)
        | JobAction::RollBack { .. }
        | JobAction::DropRollbackRequest { .. }
        | JobAction::RecordScaling(..) => Err(JobActError::NotRest(format!("{action:?}"))),
        JobAction::Rescale(change) => rescale(rest, change)
            .await
            .map_err(|source| JobActError::Rescale {
                job_id: change.job_id.clone(),
                source,
            }),
        JobAction::DisposeSavepoint { path } => {
            rest.dispose_savepoint(path)
                .await
                .map(drop)
                .map_err(|source| JobActError::Dispose {
                    path: path.clone(),
                    source,
                })
        }
    }
}
