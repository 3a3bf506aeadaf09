//! Carrying out a [`JobAction`] through the JobManager's REST API, for every kind. Each may
//! be repeated after a crash: a stop or a trigger runs under the trigger id recorded before
//! it (Flink answers a repeated one with the same operation), and cancelling a job that is
//! gone is done.

use flink_operator_api::{
    CheckpointSpec, FlinkStateSnapshot, FlinkStateSnapshotSpec, JobKind, JobReference, SavepointFormatType,
    SavepointSpec, keys,
};
use kube::{
    Api,
    api::{DeleteParams, PostParams},
};

use super::{JobAction, Snapshot, snapshot_resources::NewSnapshot};
use crate::flink::{CheckpointKind, FlinkError, FlinkRestClient, JobId, SavepointFormat, TriggerId};

#[derive(Debug, thiserror::Error)]
pub enum JobActError {
    #[error("{what} of job {job_id}: {source}")]
    Flink {
        what: &'static str,
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
    #[error("{what} FlinkStateSnapshot {name}: {}", crate::reconcile::api_message(source))]
    Snapshot {
        what: &'static str,
        name: String,
        #[source]
        source: kube::Error,
    },
}

/// Carries out a [`JobAction`] on Kubernetes objects (see [`JobAction::on_resources`]) for
/// the job resource `owner` of kind `kind`: a FlinkStateSnapshot created (one that exists is
/// done: it was created before a crash, under the same name) or deleted (one that is gone is
/// done).
pub async fn on_resources<K>(
    client: &kube::Client,
    owner: &K,
    kind: JobKind,
    action: &JobAction,
) -> Result<(), JobActError>
where
    K: kube::Resource,
{
    let namespace = owner.meta().namespace.clone().unwrap_or_default();
    let owner_name = owner.meta().name.clone().unwrap_or_default();
    let api: Api<FlinkStateSnapshot> = Api::namespaced(client.clone(), &namespace);
    match action {
        JobAction::CreateSnapshot(new) => {
            let name = new.name(&owner_name);
            let snapshot = new_snapshot(new, &name, kind, &owner_name);
            match api.create(&PostParams::default(), &snapshot).await {
                Ok(_) => Ok(()),
                Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
                Err(source) => Err(JobActError::Snapshot {
                    what: "creating",
                    name,
                    source,
                }),
            }
        }
        JobAction::DeleteSnapshot { name } => match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
            Err(source) => Err(JobActError::Snapshot {
                what: "deleting",
                name: name.clone(),
                source,
            }),
        },
        _ => Err(JobActError::NotRest(format!("{action:?}"))),
    }
}

/// The FlinkStateSnapshot `name` for `new`, of the job resource `kind` `owner`.
pub fn new_snapshot(new: &NewSnapshot, name: &str, kind: JobKind, owner: &str) -> FlinkStateSnapshot {
    let savepoint = (new.kind == Snapshot::Savepoint).then(|| SavepointSpec {
        path: new.existing_path.clone(),
        format_type: Some(SavepointFormatType::Canonical),
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
            checkpoint: (new.kind == Snapshot::Checkpoint).then(CheckpointSpec::default),
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
    snapshot
}

pub async fn run(rest: &FlinkRestClient, action: &JobAction) -> Result<(), JobActError> {
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
                SavepointFormat::Canonical,
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
                SavepointFormat::Canonical,
            )
            .await
            .map(drop)
            .map_err(flink("triggering a savepoint", job_id)),
        JobAction::TriggerCheckpoint { job_id, trigger_id } => rest
            .trigger_checkpoint_as(
                &JobId::from(job_id.as_str()),
                &TriggerId::from(trigger_id.as_str()),
                CheckpointKind::Full,
            )
            .await
            .map(drop)
            .map_err(flink("triggering a checkpoint", job_id)),
        JobAction::CreateSnapshot(_) | JobAction::DeleteSnapshot { .. } => {
            Err(JobActError::NotRest(format!("{action:?}")))
        }
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
