//! Reading the world of one FlinkDeployment: its JobManager Deployment and pods, and its
//! job through the Flink REST API.

use flink_operator_api::FlinkDeployment;
use flink_operator_api::common::{FlinkJobState, UpgradeMode};
use flink_operator_api::validation::limits::PlatformLimits;
use k8s_openapi::api::{apps::v1::Deployment, core::v1::Pod};
use kube::{Api, ResourceExt};

use super::{
    decide::{HaMetadata, JobManagerObservation, JobObservation, Observation, StateObservation},
    health::{self, HealthSample},
};
use crate::{
    caches::Caches,
    conditions::condition_status,
    context::{Context, RestLook},
    flink::poll::{self, CheckpointLookup, SavepointPoll},
    flink::{FlinkRestClient, JobId, TriggerId},
    lifecycle::records,
    lifecycle::retention::{self, OnCancel},
    policy::Policy,
};

/// Kubernetes objects are read from the shared caches: their changes wake the resource
/// (the JobManager Deployment's) or are looked at on the next progress check, so no read
/// per reconcile goes to the API server. The exception is a crashing JobManager's log.
pub async fn observe(
    ctx: &Context,
    caches: &Caches,
    fd: &FlinkDeployment,
) -> Result<Observation, kube::Error> {
    let namespace = fd.namespace().unwrap_or_default();
    let name = fd.name_any();
    let jm = match caches.cluster_deployments.get(&namespace, &name) {
        Some(jm) => Some(jm),
        None if recorded_as_existing(fd) => confirmed_missing(ctx, &namespace, &name).await?,
        None => None,
    };
    let tm = caches
        .cluster_deployments
        .get(&namespace, &format!("{name}-taskmanager"));
    let cluster_exists = jm.is_some() || tm.is_some();
    let cluster_deleting = cluster_exists
        && [&jm, &tm]
            .into_iter()
            .flatten()
            .all(|d| d.metadata.deletion_timestamp.is_some());
    let job_manager_pods = caches.job_manager_pods.of_cluster(&namespace, &name);
    let config = ctx.effective_config(fd);

    let policy = Policy::from_config(&config)
        .with_limits(&PlatformLimits::new(&ctx.validation(), &namespace))
        .with_flink_version(fd.spec.flink_version)
        .with_snapshot_loop(crate::policy::snapshot_loop_enabled(
            &ctx.operator_config.current(),
        ));

    let mut job_manager = JobManagerObservation::Missing;
    let mut job = None;
    let mut savepoint = None;
    let mut late_savepoint = None;
    let mut checkpoint = None;
    let mut latest_checkpoint = None;
    let mut on_cancel = OnCancel::NotLooked;
    let mut health = None;
    let mut unanswered_before = false;
    let mut session_overview: Option<Vec<crate::flink::JobOverview>> = None;
    let mut judgement = Default::default();
    let annotation = |key: &str| {
        jm.as_ref()
            .and_then(|d| d.metadata.annotations.as_ref())
            .and_then(|a| a.get(key))
            .and_then(|g| g.parse().ok())
    };
    let deployed_generation = annotation(flink_operator_api::keys::annotations::DEPLOYMENT_GENERATION);
    let rolled_back_generation = annotation(flink_operator_api::keys::annotations::ROLLED_BACK_GENERATION);
    let deployed_at_ms = annotation(flink_operator_api::keys::annotations::DEPLOYED_AT);
    if let Some(jm) = &jm {
        let status = jm.status.clone().unwrap_or_default();
        let replicas = jm.spec.replicas.unwrap_or(1);
        let ready = status.ready_replicas.unwrap_or(0);
        let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
        let problem = match job_manager_pods.iter().find_map(|pod| pod_problem(pod)) {
            Some(problem) => Some(problem.describe(&pods).await),
            None => replica_failure(jm),
        };
        let mut rest_ready = false;
        let mut held_back = false;
        let deleting_session = fd.metadata.deletion_timestamp.is_some() && fd.spec.job.is_none();
        if ready > 0 {
            match ctx.rest_url(fd).await {
                Ok(url) => match ctx.rest_client(&url, super::KIND, &namespace, &name) {
                    Ok(rest) => {
                        let look = look(&rest, fd, &policy).await;
                        rest_ready = look.answered;
                        health = look.health;
                        job = look.job;
                        savepoint = look.savepoint;
                        late_savepoint = look.late_savepoint;
                        checkpoint = look.checkpoint;
                        latest_checkpoint = look.latest_checkpoint;
                        on_cancel = look.on_cancel;
                        let uid = fd.uid().unwrap_or_default();
                        let resource = crate::autoscaler::memory::ScaledResource {
                            uid: &uid,
                            options: &policy.autoscaler,
                            rest: &rest,
                        };
                        judgement = crate::autoscaler::memory::look_at_job(
                            &ctx.autoscaler,
                            resource,
                            fd.status.as_ref().and_then(|s| s.job_status.as_ref()),
                            job.as_ref(),
                        )
                        .await;
                        if deleting_session && policy.block_on_unmanaged_jobs {
                            // A JobManager that does not answer holds nothing back: what it
                            // would run cannot be asked for, nor saved.
                            session_overview = rest.jobs_overview().await.ok();
                        }
                        held_back = rest.only_held_back();
                    }
                    Err(e) => job = Some(JobObservation::Unreachable(e.to_string())),
                },
                Err(e) => job = Some(JobObservation::Unreachable(e.to_string())),
            }
        }
        let look = match (rest_ready || ready == 0, held_back) {
            (true, _) => RestLook::Answered,
            (false, true) => RestLook::HeldBack,
            (false, false) => RestLook::Unanswered,
        };
        unanswered_before = ctx.unanswered_again(&fd.uid().unwrap_or_default(), look);
        // The status shows the JobManager not ready; only the log can say why.
        if unanswered_before && let Some(JobObservation::Unreachable(why)) = &job {
            tracing::warn!(error = %why, "the JobManager's REST API did not answer twice in a row");
        }
        job_manager = JobManagerObservation::Present {
            ready,
            replicas,
            problem,
            rest_ready,
        };
    }

    let autoscaler = crate::autoscaler::apply::after_look(
        &fd.spec,
        fd.status.as_ref().and_then(|s| s.reconciliation_status.as_ref()),
        &policy.autoscaler,
        judgement,
        policy.task_slots,
    );
    let now_ms = k8s_openapi::jiff::Timestamp::now().as_millisecond();
    let kind = flink_operator_api::JobKind::FlinkDeployment;
    let records::Records {
        snapshots,
        revisions,
        history_needed_by,
    } = records::look_up(caches, kind, fd, &policy, now_ms);
    // ZooKeeper's nodes cost a session: read only at the looks that need them, which a
    // steady job's are not.
    let needed = super::decide::needs_ha_metadata(
        &super::decide::autoscaled_by(fd, &autoscaler),
        super::decide::HaLooked {
            job_manager: &job_manager,
            health: health.as_ref(),
            policy: &policy,
            now_ms,
        },
    );
    let (ha_source, zookeeper) = zookeeper_ha(&config, &name, needed).await;
    let ha_metadata = match &zookeeper {
        ZooKeeperLook::Kubernetes => !caches.ha_config_maps_of(&namespace, &name).is_empty(),
        ZooKeeperLook::NotNeeded => false,
        ZooKeeperLook::Unreadable => true,
        ZooKeeperLook::Read(look) => look.exists,
    };
    // A rollback, a recovery, the health check's restart and a last-state change restore
    // from it (a change may come with any look): the ConfigMaps are read from the cache at
    // no cost.
    let ha_checkpoint = match &zookeeper {
        _ if !policy.high_availability || fd.spec.job.is_none() => None,
        ZooKeeperLook::Kubernetes => Some(ha_holds_a_checkpoint(caches, &namespace, &name)),
        ZooKeeperLook::NotNeeded => None,
        ZooKeeperLook::Unreadable => Some(false),
        ZooKeeperLook::Read(look) => Some(look.checkpoint),
    };
    // The deletion records the state the job leaves before its HA metadata goes: read once
    // nothing of the cluster is left to write a later checkpoint. ZooKeeper's was read in
    // this look's session (unreadable, the source says why and the deletion waits).
    let ha_latest_checkpoint = if fd.metadata.deletion_timestamp.is_some()
        && fd.spec.job.is_some()
        && !cluster_exists
        && job_manager_pods.is_empty()
        && ha_metadata
    {
        let dir = flink_operator_api::keys::flink::CHECKPOINT_DIR_KEYS
            .iter()
            .find_map(|key| config.get(*key))
            .map(String::as_str);
        let job_id = fd
            .status
            .as_ref()
            .and_then(|s| s.job_status.as_ref())
            .and_then(|j| j.job_id.as_deref());
        match &zookeeper {
            ZooKeeperLook::Kubernetes => latest_ha_checkpoint(ctx, caches, fd, job_id, dir).await,
            ZooKeeperLook::Read(look) => {
                let filed = (look.latest.as_ref()).map(|(job, id)| (Some(job.as_str()), *id));
                super::ha_checkpoint::path(filed, job_id, dir)
            }
            ZooKeeperLook::NotNeeded | ZooKeeperLook::Unreadable => None,
        }
    } else {
        None
    };

    let validation = ctx.validation();
    let violations = validation
        .operator_namespace_violation(&namespace)
        .into_iter()
        .chain(flink_operator_api::validation::deployment::validate(
            fd,
            None,
            &validation,
        ))
        .map(|v| v.to_string())
        .collect();
    let mut session_jobs = Vec::new();
    let mut unmanaged_jobs = Vec::new();
    if fd.metadata.deletion_timestamp.is_some() && fd.spec.job.is_none() {
        let users = caches.session_jobs.list(&namespace, |sj| {
            sj.spec.deployment_name.as_deref() == Some(name.as_str())
        });
        session_jobs = users.iter().map(|sj| sj.name_any()).collect();
        let managed: std::collections::BTreeSet<&str> = users
            .iter()
            .filter_map(|sj| sj.status.as_ref()?.job_status.as_ref()?.job_id.as_deref())
            .collect();
        unmanaged_jobs = session_overview
            .unwrap_or_default()
            .into_iter()
            .filter(|j| !j.state.is_globally_terminal())
            .filter(|j| !managed.contains(j.jid.as_str()))
            .map(|j| format!("{} ({})", j.name, j.jid))
            .collect();
    }
    Ok(Observation {
        session_jobs,
        unmanaged_jobs,
        job_manager,
        cluster_exists,
        cluster_deleting,
        job_manager_pods_left: !job_manager_pods.is_empty(),
        ha_metadata,
        ha_source,
        job,
        violations,
        deployed_generation,
        deployed_at_ms,
        rolled_back_generation,
        savepoint,
        late_savepoint,
        checkpoint,
        latest_checkpoint,
        on_cancel,
        health,
        ha_checkpoint,
        ha_latest_checkpoint,
        unanswered_before,
        policy,
        snapshots,
        revisions: Some(revisions),
        history_needed_by,
        fresh_trigger_id: TriggerId::random().as_str().to_owned(),
        fresh_job_id: JobId::random().as_str().to_owned(),
        now_ms,
        ingress: crate::resources::ingress::Observed {
            // The Deployment looked at above: no request of its own.
            job_manager: jm
                .as_deref()
                .and_then(|jm| crate::resources::ingress::own_job_manager(jm, fd.metadata.uid.as_deref())),
            ..caches.ingress(&namespace, &name)
        },
        rest_port: ctx.rest_port(fd),
        autoscaler,
    })
}

/// Whether the status says the JobManager Deployment exists: then a cache that does not
/// hold it may be behind (a watch that has not relisted yet), and that is no ground to
/// recover anything.
fn recorded_as_existing(fd: &FlinkDeployment) -> bool {
    use flink_operator_api::JobManagerDeploymentStatus as Jm;
    matches!(
        fd.status.as_ref().and_then(|s| s.job_manager_deployment_status),
        Some(Jm::Ready | Jm::DeployedNotReady | Jm::Deploying | Jm::Error)
    )
}

/// The JobManager Deployment `name` as the API server has it now, for a cache miss of one
/// the status says exists: recovery deletes and redeploys clusters, so "missing" must be
/// true, not a cold or lagging cache. Costs one GET, only while the two disagree.
async fn confirmed_missing(
    ctx: &Context,
    namespace: &str,
    name: &str,
) -> Result<Option<std::sync::Arc<Deployment>>, kube::Error> {
    let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), namespace);
    let found = deployments.get_opt(name).await?;
    if found.is_some() {
        tracing::info!(
            "the JobManager Deployment is not in the cache yet but exists: not treated as missing"
        );
    }
    Ok(found.map(std::sync::Arc::new))
}

/// What one look through the REST API finds.
#[derive(Default)]
struct Look {
    answered: bool,
    /// For application deployments.
    job: Option<JobObservation>,
    savepoint: Option<SavepointPoll>,
    late_savepoint: Option<poll::LateSavepoint>,
    checkpoint: Option<SavepointPoll>,
    /// The job's latest completed checkpoint with a path, while it is known to Flink (for
    /// restores without a savepoint).
    latest_checkpoint: Option<StateObservation>,
    /// What becomes of the job's checkpoints if it is cancelled (see [`retention`]).
    on_cancel: OnCancel,
    /// The job's restart and checkpoint counts, when the health check is on.
    health: Option<HealthSample>,
}

/// A session cluster's overview, or the recorded job with its pending snapshots and latest
/// checkpoint.
async fn look(rest: &FlinkRestClient, fd: &FlinkDeployment, policy: &Policy) -> Look {
    if fd.spec.job.is_none() {
        return match rest.cluster_overview().await {
            Ok(_) => Look {
                answered: true,
                ..Look::default()
            },
            Err(e) => Look {
                job: Some(JobObservation::Unreachable(e.to_string())),
                ..Look::default()
            },
        };
    }
    let status = fd.status.as_ref();
    let recorded = status
        .and_then(|s| s.job_status.as_ref())
        .and_then(|j| Some((j, j.job_id.as_deref()?)));
    let Some((job_status, job_id)) = recorded else {
        return Look {
            answered: true,
            job: Some(JobObservation::NotFound),
            ..Look::default()
        };
    };
    let failure_known =
        job_status.state == Some(FlinkJobState::Failed) && status.is_some_and(|s| s.error.is_some());
    let asking = poll::Asking {
        failure_known,
        latest_checkpoint: true,
        savepoint_dir: policy.savepoint_dir.as_deref(),
    };
    let look = poll::look(rest, job_status, &JobId::from(job_id), asking).await;
    let live = matches!(&look.job, JobObservation::Found { state, .. } if !state.is_globally_terminal());
    let stateful = fd
        .spec
        .job
        .as_ref()
        .is_some_and(|j| j.upgrade_mode_or_default() != UpgradeMode::Stateless);
    let observed_generation = status.and_then(|s| s.observed_generation);
    // Asked only while a change of a stateful job that still runs is pending: a steady job
    // costs no extra call.
    let on_cancel =
        if live && retention::wanted(stateful, fd.metadata.generation, observed_generation, policy) {
            retention::look(rest, &JobId::from(job_id)).await
        } else {
            OnCancel::NotLooked
        };
    let latest_checkpoint = match (&look.job, look.latest_checkpoint) {
        (
            JobObservation::Found { .. },
            Some(CheckpointLookup::Found {
                path,
                timestamp_ms: Some(timestamp_ms),
            }),
        ) => Some(StateObservation { path, timestamp_ms }),
        _ => None,
    };
    // Only with the check on (off, it costs no call), and of a job that has not ended, as
    // a job in a restart loop is as often RESTARTING as RUNNING when looked at.
    let sampled = matches!(&look.job, JobObservation::Found { state, .. } if !state.is_globally_terminal());
    let health = match policy.health {
        Some(_) if sampled => health_sample(rest, &JobId::from(job_id)).await,
        _ => None,
    };
    Look {
        answered: !matches!(look.job, JobObservation::Unreachable(_)),
        health,
        job: Some(look.job),
        savepoint: look.savepoint,
        late_savepoint: look.late_savepoint,
        checkpoint: look.checkpoint,
        latest_checkpoint,
        on_cancel,
    }
}

/// The job's restart and completed checkpoint counts; a failure to read them is a look
/// without a sample (the history keeps what it had).
async fn health_sample(rest: &FlinkRestClient, job_id: &JobId) -> Option<HealthSample> {
    match rest.job_metrics(job_id, &health::METRICS).await {
        Ok(metrics) => HealthSample::from_metrics(&metrics),
        Err(e) => {
            tracing::debug!(error = %e, "could not read the job's metrics for the health check");
            None
        }
    }
}

/// A JobManager container that does not run: crash loop, image or configuration error.
struct PodProblem {
    pod: String,
    container: String,
    reason: String,
    message: String,
    /// The exit code of the container's last run, if it ended.
    exit_code: Option<i32>,
}

/// A crash loop or an image error of a JobManager pod (init containers first).
fn pod_problem(pod: &Pod) -> Option<PodProblem> {
    let status = pod.status.as_ref()?;
    let init = status.init_container_statuses.iter().flatten();
    init.chain(status.container_statuses.iter().flatten())
        .find_map(|c| {
            let waiting = c.state.as_ref()?.waiting.as_ref()?;
            let reason = waiting.reason.as_deref()?;
            let known = [
                "CrashLoopBackOff",
                "ErrImagePull",
                "ImagePullBackOff",
                "InvalidImageName",
                "CreateContainerConfigError",
                "CreateContainerError",
            ];
            known.contains(&reason).then(|| PodProblem {
                pod: pod.name_any(),
                container: c.name.clone(),
                reason: reason.to_owned(),
                // The kubelet's back-off message ("back-off 20s restarting failed container=...")
                // changes with every restart and says nothing the reason does not.
                message: if reason == "CrashLoopBackOff" {
                    String::new()
                } else {
                    waiting.message.clone().unwrap_or_default()
                },
                exit_code: c
                    .last_state
                    .as_ref()
                    .and_then(|s| s.terminated.as_ref())
                    .map(|t| t.exit_code),
            })
        })
}

impl PodProblem {
    /// In one line. A crashing container's last run is asked for its cause: the last
    /// `Caused by:` (else exception) line of its log, which for Flink names what failed (a
    /// jar or class that does not exist, a memory configuration that does not fit, ...).
    async fn describe(&self, pods: &Api<Pod>) -> String {
        let mut line = format!(
            "JobManager pod {} container {}: {}",
            self.pod, self.container, self.reason
        );
        if let Some(code) = self.exit_code.filter(|_| self.reason == "CrashLoopBackOff") {
            line.push_str(&format!(" (exit code {code})"));
        }
        if !self.message.trim().is_empty() {
            line.push(' ');
            line.push_str(self.message.trim());
        }
        if self.reason == "CrashLoopBackOff"
            && let Some(cause) = self.logged_cause(pods).await
        {
            line.push_str(": ");
            line.push_str(&cause);
        }
        line
    }

    async fn logged_cause(&self, pods: &Api<Pod>) -> Option<String> {
        let mut params = kube::api::LogParams {
            container: Some(self.container.clone()),
            previous: true,
            tail_lines: Some(300),
            ..kube::api::LogParams::default()
        };
        let log = match pods.logs(&self.pod, &params).await {
            Ok(log) => log,
            Err(_) => {
                params.previous = false;
                pods.logs(&self.pod, &params).await.ok()?
            }
        };
        cause_in_log(&log)
    }
}

/// The root cause a Java process logged last: its last `Caused by:` line, else its last
/// line naming an exception; at most 400 characters.
fn cause_in_log(log: &str) -> Option<String> {
    let lines: Vec<&str> = log.lines().map(str::trim).collect();
    let cause = lines
        .iter()
        .rev()
        .find(|l| l.starts_with("Caused by: "))
        .map(|l| l.trim_start_matches("Caused by: "))
        .or_else(|| {
            lines.iter().rev().copied().find(|l| {
                !l.starts_with("at ")
                    && l.split_whitespace()
                        .next()
                        .is_some_and(|w| w.trim_end_matches(':').ends_with("Exception"))
            })
        })?;
    let mut cause = cause.to_owned();
    if cause.chars().count() > 400 {
        cause = cause.chars().take(399).collect::<String>() + "…";
    }
    Some(cause)
}

/// Why the JobManager Deployment creates no pod, as its ReplicaFailure condition says
/// (e.g. a service account that does not exist).
fn replica_failure(jm: &Deployment) -> Option<String> {
    let conditions = jm.status.as_ref()?.conditions.as_ref()?;
    let failure = conditions.iter().find(|c| {
        c.type_.as_deref() == Some("ReplicaFailure") && c.status.as_deref() == Some(condition_status::TRUE)
    })?;
    Some(
        format!(
            "JobManager Deployment {}: {} {}",
            jm.name_any(),
            failure.reason.as_deref().unwrap_or("ReplicaFailure"),
            failure.message.as_deref().unwrap_or_default()
        )
        .trim()
        .to_owned(),
    )
}

/// What a look read of a cluster's ZooKeeper HA metadata.
enum ZooKeeperLook {
    /// Not ZooKeeper HA: the Kubernetes HA ConfigMaps are read from the cache.
    Kubernetes,
    /// This look needs none of it (see [`super::decide::needs_ha_metadata`]): not read.
    NotNeeded,
    /// It could not be read (the source says why).
    Unreadable,
    Read(crate::zookeeper::HaLook),
}

/// Where the cluster's HA metadata is and, with ZooKeeper HA, what its nodes hold, read in
/// one short session when the look `needs` them: unlike ConfigMaps, no cache or watch can
/// hold them.
async fn zookeeper_ha(
    config: &std::collections::BTreeMap<String, String>,
    name: &str,
    needs: bool,
) -> (HaMetadata, ZooKeeperLook) {
    if !crate::zookeeper::is_zookeeper_ha(config) {
        return (HaMetadata::KubernetesConfigMaps, ZooKeeperLook::Kubernetes);
    }
    let nodes = match crate::zookeeper::HaNodes::of(config, name) {
        Ok(nodes) => nodes,
        // Without a quorum no JobManager of it ever ran (the rules refuse the spec): there
        // is no metadata, and nothing to wait for on deletion.
        Err(e) => {
            let source = HaMetadata::ZooKeeperNodes {
                path: String::new(),
                unreadable: Some(e.to_string()),
            };
            let none = crate::zookeeper::HaLook {
                exists: false,
                checkpoint: false,
                latest: None,
            };
            return (source, ZooKeeperLook::Read(none));
        }
    };
    if !needs {
        let source = HaMetadata::ZooKeeperNodes {
            path: nodes.path,
            unreadable: None,
        };
        return (source, ZooKeeperLook::NotNeeded);
    }
    match nodes.look().await {
        Ok(look) => (
            HaMetadata::ZooKeeperNodes {
                path: nodes.path,
                unreadable: None,
            },
            ZooKeeperLook::Read(look),
        ),
        Err(e) => {
            tracing::warn!(error = %e, "the cluster's ZooKeeper HA metadata could not be read");
            let source = HaMetadata::ZooKeeperNodes {
                path: nodes.path,
                unreadable: Some(e.to_string()),
            };
            (source, ZooKeeperLook::Unreadable)
        }
    }
}

/// The path of the checkpoint the cluster's Kubernetes HA ConfigMaps point at last (see
/// [`super::ha_checkpoint`]), as the API server has them now (the cache may not hold the
/// JobManager's last write yet; it is read when the API server cannot be).
async fn latest_ha_checkpoint(
    ctx: &Context,
    caches: &Caches,
    fd: &FlinkDeployment,
    job_id: Option<&str>,
    checkpoint_dir: Option<&str>,
) -> Option<String> {
    use k8s_openapi::api::core::v1::ConfigMap;
    let name = fd.name_any();
    let namespace = fd.namespace().unwrap_or_default();
    let api: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &namespace);
    let selector = crate::caches::ha::selector(Some(&name));
    let listed: Vec<ConfigMap> = match api
        .list(&kube::api::ListParams::default().labels(&selector))
        .await
    {
        Ok(list) => list.items,
        Err(error) => {
            tracing::warn!(%error, "listing the HA ConfigMaps failed; reading them from the cache");
            caches
                .ha_config_maps_of(&namespace, &name)
                .iter()
                .map(|cm| (**cm).clone())
                .collect()
        }
    };
    let maps = listed.iter().map(|cm| {
        let keys = cm.data.iter().flatten().map(|(key, _)| key.as_str());
        (cm.metadata.name.as_deref().unwrap_or_default(), keys)
    });
    super::ha_checkpoint::path(
        super::ha_checkpoint::in_config_maps(&name, maps),
        job_id,
        checkpoint_dir,
    )
}

/// Whether the cluster's Kubernetes HA ConfigMaps point at a completed checkpoint (Flink
/// files them as `checkpointID-<n>` entries), which a last-state restore needs.
fn ha_holds_a_checkpoint(caches: &Caches, namespace: &str, name: &str) -> bool {
    caches
        .ha_config_maps_of(namespace, name)
        .iter()
        .flat_map(|cm| cm.data.iter().flatten())
        .any(|(key, _)| key.starts_with("checkpointID-"))
}

#[cfg(test)]
mod tests {
    use super::cause_in_log;

    #[test]
    fn the_cause_is_the_last_caused_by_line_else_the_last_exception() {
        let log = "2026-12-01 14:16:47,561 ERROR org.apache.flink.runtime.entrypoint.ClusterEntrypoint [] - Could not create application program.
org.apache.flink.util.FlinkException: Could not load the provided entrypoint class.
\tat org.apache.flink.client.program.DefaultPackagedProgramRetriever.getPackagedProgram(DefaultPackagedProgramRetriever.java:215)
Caused by: org.apache.flink.client.program.ProgramInvocationException: The program's entry point class 'a.B' was not found in the jar file.
\t... 3 more
Caused by: java.lang.ClassNotFoundException: a.B
\tat java.base/java.net.URLClassLoader.findClass(URLClassLoader.java:445)
";
        assert_eq!(
            cause_in_log(log).as_deref(),
            Some("java.lang.ClassNotFoundException: a.B")
        );
        let log = "INFO starting\norg.apache.flink.configuration.IllegalConfigurationException: too small\n\tat x.y(Z.java:1)\n";
        assert_eq!(
            cause_in_log(log).as_deref(),
            Some("org.apache.flink.configuration.IllegalConfigurationException: too small")
        );
        assert_eq!(cause_in_log("all fine\n"), None);
    }
}
