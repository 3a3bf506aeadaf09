//! Carrying out a [`JobAction`] through the JobManager's REST API, for every kind. Each may
//! be repeated after a crash: a stop or a trigger runs under the trigger id recorded before
//! it (Flink answers a repeated one with the same operation), and cancelling a job that is
//! gone is done.

use super::JobAction;
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
