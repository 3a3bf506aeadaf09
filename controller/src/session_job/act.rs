//! Carrying out a plan. Every action may be repeated after a crash: a submission runs under
//! the job id recorded before it, a stop under the recorded trigger id, a cancel of an
//! ended job is accepted by Flink, and finalizer patches test before they remove.

use std::path::PathBuf;

use flink_operator_api::{FlinkSessionJob, keys};
use kube::{Api, ResourceExt};

use super::{
    artifact::{self, ArtifactError},
    decide::{Action, Submission},
    downloads::{Owner, downloads},
};
use crate::{
    context::Context,
    flink::{FlinkError, FlinkRestClient, JobId, RunJar},
    policy::Policy,
};

#[derive(Debug, thiserror::Error)]
pub enum ActError {
    #[error("{what}: {}", crate::runtime::api_error::api_message(source))]
    Api {
        what: &'static str,
        #[source]
        source: kube::Error,
    },
    #[error("the session cluster's REST address is unknown")]
    NoSessionCluster,
    #[error("a REST client of the session cluster: {0}")]
    Client(#[source] FlinkError),
    #[error("{0}")]
    Artifact(#[from] ArtifactError),
    #[error("{0}")]
    Job(#[from] crate::job_actions::JobActError),
    #[error("{what} of job {job_id}: {source}")]
    Flink {
        what: &'static str,
        job_id: String,
        #[source]
        source: FlinkError,
    },
}

impl ActError {
    /// Whether the submission itself failed (the jar, or Flink refusing it), as opposed to
    /// the operator failing to reach something.
    pub fn is_submission_failure(&self) -> bool {
        match self {
            ActError::Artifact(_) => true,
            ActError::Flink { what, source, .. } => what.starts_with("submitting") && !source.retryable(),
            _ => false,
        }
    }

    /// Why an in-place rescale failed, if this is its failure.
    pub fn rescale_failure(&self) -> Option<String> {
        matches!(
            self,
            ActError::Job(crate::job_actions::JobActError::Rescale { .. })
        )
        .then(|| self.to_string())
    }
}

pub async fn act(
    ctx: &Context,
    sj: &FlinkSessionJob,
    rest_url: Option<&str>,
    policy: &Policy,
    action: &Action,
) -> Result<(), ActError> {
    let rest = || -> Result<FlinkRestClient, ActError> {
        let url = rest_url.ok_or(ActError::NoSessionCluster)?;
        ctx.rest_client(
            url,
            super::KIND,
            &sj.namespace().unwrap_or_default(),
            &sj.name_any(),
        )
        .map_err(ActError::Client)
    };
    match action {
        Action::AddFinalizer => finalizer(ctx, sj, true).await.map(|_| ()),
        Action::RemoveFinalizer => finalizer(ctx, sj, false).await.map(|_| ()),
        Action::Fetch(fetch) => {
            // Started, not waited for: the download runs off this worker.
            downloads().start(
                &Owner {
                    uid: sj.uid().unwrap_or_default(),
                    namespace: sj.namespace().unwrap_or_default(),
                },
                fetch.clone(),
                artifacts_dir(sj),
                artifact::Limits::with_total(ctx.rest_clients.config().submission_timeout),
            );
            Ok(())
        }
        Action::Submit(submission) => submit(sj, &rest()?, submission).await,
        Action::Job(action) => crate::job_actions::run(&rest()?, action, policy)
            .await
            .map_err(ActError::Job),
    }
}

/// Adds or removes our finalizer; the resource's new resourceVersion when it was patched.
pub async fn finalizer(ctx: &Context, sj: &FlinkSessionJob, add: bool) -> Result<Option<String>, ActError> {
    let api: Api<FlinkSessionJob> = Api::namespaced(ctx.client.clone(), &sj.namespace().unwrap_or_default());
    crate::runtime::finalizer::set_finalizer(&api, sj, keys::finalizers::FLINK_SESSION_JOB, add)
        .await
        .map_err(|source| ActError::Api {
            what: "updating the finalizer",
            source,
        })
}

/// Where downloaded jars wait for their upload.
fn artifacts_dir(sj: &FlinkSessionJob) -> PathBuf {
    std::env::temp_dir()
        .join("flink-operator-artifacts")
        .join(sj.namespace().unwrap_or_default())
        .join(sj.name_any())
}

/// The jar of `submission` as a local file: its finished download (taken, so that it is
/// removed after the upload), or the `file` jar where the platform allows it.
async fn local_jar(uid: &str, submission: &Submission) -> Result<artifact::LocalJar, ArtifactError> {
    let uri = submission
        .jar_uri
        .as_deref()
        .filter(|u| !u.trim().is_empty())
        .ok_or(ArtifactError::Missing)?;
    if artifact::is_download(uri) {
        return downloads()
            .take(uid, uri)
            .unwrap_or_else(|| Err(ArtifactError::NotDownloaded { uri: uri.to_owned() }));
    }
    artifact::local_file(uri, &submission.file_allowed_dirs).await
}

async fn submit(
    sj: &FlinkSessionJob,
    rest: &FlinkRestClient,
    submission: &Submission,
) -> Result<(), ActError> {
    let job_id = submission.job_id.clone();
    let flink_error = |what: &'static str| {
        let job_id = job_id.clone();
        move |source| ActError::Flink { what, job_id, source }
    };
    let jar = local_jar(&sj.uid().unwrap_or_default(), submission).await?;
    let jar_id = rest
        .upload_jar(&jar.path)
        .await
        .map_err(flink_error("submitting (uploading the jar)"))?;
    drop(jar);
    let run = RunJar {
        entry_class: submission.entry_class.clone(),
        args: submission.args.clone(),
        parallelism: submission.parallelism,
        job_id: Some(JobId::from(job_id.as_str())),
        savepoint_path: submission.restore_path.clone(),
        allow_non_restored_state: submission.allow_non_restored_state,
        claim_mode: None,
        flink_configuration: submission.configuration.clone(),
    };
    let ran = rest.run_jar(&jar_id, &run).await;
    // The jar is not needed once the job graph is built, and would pile up on every
    // submission otherwise; a failed delete only leaves a file behind.
    if let Err(error) = rest.delete_jar(&jar_id).await {
        tracing::warn!(%error, jar = %jar_id, "could not delete the uploaded jar");
    }
    match ran {
        Ok(_) => Ok(()),
        // Submitted by an earlier attempt whose answer was lost.
        Err(FlinkError::BadRequest { message, .. }) if message.contains("already been submitted") => Ok(()),
        Err(source) => Err(flink_error("submitting (running the jar)")(source)),
    }
}
