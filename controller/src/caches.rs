//! Reflector caches of the resources that the controllers watch, shared with the webhook.

use flink_operator_api::{FlinkDeployment, FlinkSessionJob};
use futures::StreamExt;
use kube::{
    Api, Client,
    runtime::{WatchStreamExt, reflector, reflector::Store, watcher},
};

/// Read handles of the caches of FlinkDeployments and FlinkSessionJobs of all namespaces.
#[derive(Clone)]
pub struct JobCaches {
    /// All FlinkDeployments.
    pub deployments: Store<FlinkDeployment>,
    /// All FlinkSessionJobs.
    pub session_jobs: Store<FlinkSessionJob>,
}

impl JobCaches {
    /// Starts watching with `client`; the caches fill while the returned future runs.
    pub fn start(client: Client) -> (Self, impl Future<Output = ()> + Send + 'static) {
        let (deployments, deployments_writer) = reflector::store();
        let (session_jobs, session_jobs_writer) = reflector::store();
        let deployments_api: Api<FlinkDeployment> = Api::all(client.clone());
        let session_jobs_api: Api<FlinkSessionJob> = Api::all(client);
        let run = async move {
            // Watch errors (CRD not installed yet, API restarts) are retried with backoff
            // inside the stream; they are logged, never fatal.
            let deployments = reflector(
                deployments_writer,
                watcher(deployments_api, watcher::Config::default()),
            )
            .default_backoff()
            .for_each(|event| async move {
                if let Err(error) = event {
                    tracing::warn!(%error, "FlinkDeployment watch failed; retrying");
                }
            });
            let session_jobs = reflector(
                session_jobs_writer,
                watcher(session_jobs_api, watcher::Config::default()),
            )
            .default_backoff()
            .for_each(|event| async move {
                if let Err(error) = event {
                    tracing::warn!(%error, "FlinkSessionJob watch failed; retrying");
                }
            });
            futures::join!(deployments, session_jobs);
        };
        (
            Self {
                deployments,
                session_jobs,
            },
            run,
        )
    }

    /// Resolves once both caches hold a full list.
    pub async fn wait_until_ready(&self) {
        // A dropped writer means the watch task ended, i.e. the process is stopping.
        let _ = futures::join!(
            self.deployments.wait_until_ready(),
            self.session_jobs.wait_until_ready()
        );
    }
}
