//! Carrying out a plan. Every action may be repeated: a trigger runs under the trigger id
//! recorded before it (Flink answers a repeated one with the operation it started), a
//! disposal records the id Flink runs it under as soon as it is started, a label patch sets
//! values, and finalizer patches test before they remove.

use std::collections::BTreeMap;

use flink_operator_api::{FlinkStateSnapshot, keys};
use kube::{
    Api, ResourceExt,
    api::{Patch, PatchParams},
};

use super::{
    DISPOSAL_TRIGGER_ID,
    decide::{Trigger, TriggerKind},
};
use crate::{
    context::Context,
    flink::{FlinkError, FlinkRestClient, JobId, TriggerId},
    job_actions::JobActError,
    runtime::api_error::api_message,
};

#[derive(Debug, thiserror::Error)]
pub enum ActError {
    #[error("{what}: {}", api_message(source))]
    Api {
        what: &'static str,
        #[source]
        source: kube::Error,
    },
    #[error("the REST address of the job's cluster is unknown")]
    NoCluster,
    #[error("a REST client of the job's cluster: {0}")]
    Client(#[source] FlinkError),
    #[error("{0}")]
    Job(#[from] JobActError),
}

impl ActError {
    /// Whether Flink refused to start the snapshot (an attempt that failed, counted against
    /// the back-off limit), as opposed to the operator failing to reach it (tried again
    /// under the same trigger id).
    pub fn is_refused_trigger(&self) -> bool {
        matches!(self, ActError::Job(JobActError::Flink { what, source, .. })
            if what.starts_with("triggering") && !source.retryable())
    }
}

/// A client of the JobManager at `url`, whose requests count for `snapshot`.
pub fn client(
    ctx: &Context,
    snapshot: &FlinkStateSnapshot,
    url: &str,
) -> Result<FlinkRestClient, FlinkError> {
    ctx.rest_client(
        url,
        super::KIND,
        &snapshot.namespace().unwrap_or_default(),
        &snapshot.name_any(),
    )
}

fn api(ctx: &Context, snapshot: &FlinkStateSnapshot) -> Api<FlinkStateSnapshot> {
    Api::namespaced(ctx.client.clone(), &snapshot.namespace().unwrap_or_default())
}

/// Adds or removes our finalizer; the object's new resourceVersion when it was patched.
pub async fn finalizer(
    ctx: &Context,
    snapshot: &FlinkStateSnapshot,
    add: bool,
) -> Result<Option<String>, ActError> {
    crate::runtime::finalizer::set_finalizer(
        &api(ctx, snapshot),
        snapshot,
        keys::finalizers::FLINK_STATE_SNAPSHOT,
        add,
    )
    .await
    .map_err(|source| ActError::Api {
        what: "updating the finalizer",
        source,
    })
}

/// Sets our labels (a merge patch of them alone: other labels are left as they are); the
/// object's new resourceVersion.
pub async fn labels(
    ctx: &Context,
    snapshot: &FlinkStateSnapshot,
    labels: &BTreeMap<String, String>,
) -> Result<Option<String>, ActError> {
    let patch = serde_json::json!({ "metadata": { "labels": labels } });
    merge_patch(ctx, snapshot, patch, "updating the labels").await
}

/// Merges `patch` into `snapshot`; its new resourceVersion.
async fn merge_patch(
    ctx: &Context,
    snapshot: &FlinkStateSnapshot,
    patch: serde_json::Value,
    what: &'static str,
) -> Result<Option<String>, ActError> {
    let patched = api(ctx, snapshot)
        .patch(
            &snapshot.name_any(),
            &PatchParams::default(),
            &Patch::Merge(patch),
        )
        .await
        .map_err(|source| ActError::Api { what, source })?;
    Ok(patched.metadata.resource_version)
}

/// Sends `trigger` to the job's cluster.
pub async fn trigger(rest: &FlinkRestClient, trigger: &Trigger) -> Result<(), ActError> {
    let job = JobId::from(trigger.job_id.as_str());
    let id = TriggerId::from(trigger.trigger_id.as_str());
    let (what, sent) = match &trigger.kind {
        TriggerKind::Savepoint { dir, format } => (
            "triggering a savepoint",
            rest.trigger_savepoint_as(&job, &id, Some(dir.as_str()), *format)
                .await,
        ),
        TriggerKind::Checkpoint(kind) => (
            "triggering a checkpoint",
            rest.trigger_checkpoint_as(&job, &id, *kind).await,
        ),
    };
    sent.map(drop).map_err(|source| {
        ActError::Job(JobActError::Flink {
            what,
            job_id: trigger.job_id.clone(),
            source,
        })
    })
}

/// Starts disposing of the savepoint at `path`, and records the trigger id Flink runs the
/// disposal under (of its own choosing) in the annotation [`DISPOSAL_TRIGGER_ID`], for the
/// next looks to poll; the object's new resourceVersion.
pub async fn dispose(
    ctx: &Context,
    snapshot: &FlinkStateSnapshot,
    rest: &FlinkRestClient,
    path: &str,
) -> Result<Option<String>, ActError> {
    let trigger = rest.dispose_savepoint(path).await.map_err(|source| {
        ActError::Job(JobActError::Dispose {
            path: path.to_owned(),
            source,
        })
    })?;
    let patch =
        serde_json::json!({ "metadata": { "annotations": { DISPOSAL_TRIGGER_ID: trigger.as_str() } } });
    merge_patch(ctx, snapshot, patch, "recording the trigger id of the disposal").await
}
