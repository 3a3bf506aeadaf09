//! A simulated application cluster of one FlinkDeployment and its Kubernetes
//! high-availability metadata, as far as the job's state goes:
//!
//! - a deployed cluster's JobManager comes up with time ([`Application::tick`]) and runs the
//!   job under the job id it was deployed with; with HA it first recovers the job graph its
//!   metadata holds for that id, and either way restores the latest checkpoint the metadata
//!   holds for that id before the savepoint it was deployed with (Flink restores the
//!   checkpoint store's latest checkpoint, if there is one, before `execution.savepoint.path`);
//!   a path that is not on storage crash-loops it;
//! - with HA, every checkpoint of its job is filed in the metadata (the latest only, as
//!   `state.checkpoints.num-retained: 1`), a job graph when the job is submitted, and both go
//!   when the job reaches a globally terminal state (Flink's cleanup of a finished job);
//! - a deleted cluster's Deployments are gone at once, its JobManager pod exits with the
//!   next tick (after what it checkpoints in it), its job SUSPENDED, its metadata kept;
//! - a JobManager that dies is started again by its Deployment and, with HA, recovers its
//!   job from the metadata under the same id; without HA the job is gone (Flink would run
//!   the application again from its configured savepoint, older state by its own design,
//!   which no operator decision causes: the model checks what the operator makes of the
//!   loss instead).

use std::collections::BTreeMap;

use flink_operator_api::common::FlinkJobState;

use super::{
    flink::Flink,
    world::{Effect, NAME},
};

#[derive(Debug, Clone, Default)]
pub struct Application {
    pub cluster: Option<Cluster>,
    /// The cluster's HA metadata: there once a JobManager with HA ran, until deleted.
    pub ha: Option<Ha>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum JobManager {
    /// Its pod is starting (not ready, its REST API does not answer).
    Starting,
    Up,
    /// Its pod crash-loops (why).
    CrashLoop(String),
}

#[derive(Debug, Clone)]
pub struct Cluster {
    /// Its Deployments exist; false once deleted, while its JobManager pod is still exiting.
    pub deployed: bool,
    pub job_manager: JobManager,
    pub job_id: String,
    /// The savepoint it was deployed to restore (`execution.savepoint.path`).
    pub restore: Option<String>,
    pub ha: bool,
    /// Its job's checkpoints outlive a cancellation.
    pub retained: bool,
    /// The spec the status recorded when it was deployed runs stateless (for the invariants).
    pub stateless: bool,
    /// Its JobManager died since it was deployed: without a job graph to recover, the job is
    /// gone (see the module doc).
    pub lost: bool,
    /// The annotations of its JobManager Deployment: the resource generation it was built
    /// from, the generation whose spec it rolled back, and the status time stamp it was
    /// deployed at.
    pub generation: Option<i64>,
    pub rolled_back_generation: Option<i64>,
    pub deployed_at_ms: i64,
    /// The spec the status recorded when it was deployed (`lastReconciledSpec`).
    pub recorded: Option<String>,
}

/// What a cluster is deployed with (an `Action::Deploy` as the runtime builds it).
#[derive(Debug, Clone)]
pub struct Deployment {
    pub job_id: String,
    pub restore: Option<String>,
    pub last_state: bool,
    pub ha: bool,
    pub retained: bool,
    pub stateless: bool,
    pub generation: Option<i64>,
    pub rolled_back_generation: Option<i64>,
    pub deployed_at_ms: i64,
    pub recorded: Option<String>,
}

/// The Kubernetes HA metadata of the cluster (its ConfigMaps).
#[derive(Debug, Clone, Default)]
pub struct Ha {
    /// Job graphs by job id, with the savepoint their job was submitted to restore.
    pub job_graphs: BTreeMap<String, Option<String>>,
    /// The latest checkpoint filed for each job id.
    pub checkpoints: BTreeMap<String, i64>,
}

impl Ha {
    /// The ConfigMaps as `(name, data keys)`, as Flink's Kubernetes HA services write them.
    pub fn config_maps(&self) -> Vec<(String, Vec<String>)> {
        let mut maps = vec![(format!("{NAME}-cluster-config-map"), vec!["leader".to_owned()])];
        let jobs: std::collections::BTreeSet<&String> =
            self.job_graphs.keys().chain(self.checkpoints.keys()).collect();
        for job in jobs {
            let mut keys = vec!["counter".to_owned()];
            if self.job_graphs.contains_key(job) {
                keys.push(format!("jobGraph-{job}"));
            }
            if let Some(id) = self.checkpoints.get(job) {
                keys.push(format!("checkpointID-{id:019}"));
            }
            maps.push((format!("{NAME}-{job}-config-map"), keys));
        }
        maps
    }

    /// The path of the checkpoint filed last, of any job.
    pub fn pointer(&self) -> Option<String> {
        (self.checkpoints.iter())
            .max_by_key(|(_, id)| **id)
            .map(|(job, id)| Flink::checkpoint_path(job, *id))
    }
}

impl Application {
    /// Whether its JobManager answers over REST.
    pub fn answers(&self) -> bool {
        self.cluster
            .as_ref()
            .is_some_and(|c| c.deployed && c.job_manager == JobManager::Up)
    }

    /// Whether `job_id` runs in the JobManager of a deleted cluster, which is exiting.
    pub fn exiting(&self, job_id: &str) -> bool {
        self.cluster
            .as_ref()
            .is_some_and(|c| !c.deployed && c.job_id == job_id)
    }

    /// The job id of a JobManager that still runs (its cluster deleted or not).
    fn running_job(&self) -> Option<&Cluster> {
        self.cluster.as_ref().filter(|c| c.job_manager == JobManager::Up)
    }

    /// `Action::Deploy`: the cluster's objects applied. A cluster of the same name that still
    /// runs, or whose JobManager has not exited, is an anomaly (two JobManagers of one cluster
    /// id would both act on its HA metadata); the same deployment applied again changes nothing.
    pub fn deploy(&mut self, deployment: Deployment) -> Vec<Effect> {
        let mut effects = vec![];
        if let Some(cluster) = &mut self.cluster {
            let same = cluster.deployed
                && cluster.job_id == deployment.job_id
                && cluster.restore == deployment.restore;
            if same {
                cluster.generation = deployment.generation;
                cluster.rolled_back_generation = deployment.rolled_back_generation;
                cluster.deployed_at_ms = deployment.deployed_at_ms;
                return effects;
            }
            effects.push(Effect::Anomaly(format!(
                "a cluster was deployed (job {}, restoring {:?}) while the JobManager of another of the same name runs (job {}, {})",
                deployment.job_id,
                deployment.restore,
                cluster.job_id,
                if cluster.deployed { "deployed" } else { "exiting" }
            )));
        }
        if deployment.last_state
            && let Some(ha) = &mut self.ha
        {
            ha.job_graphs.clear();
        }
        self.cluster = Some(Cluster {
            deployed: true,
            job_manager: JobManager::Starting,
            job_id: deployment.job_id,
            restore: deployment.restore,
            ha: deployment.ha,
            retained: deployment.retained,
            stateless: deployment.stateless,
            lost: false,
            generation: deployment.generation,
            rolled_back_generation: deployment.rolled_back_generation,
            deployed_at_ms: deployment.deployed_at_ms,
            recorded: deployment.recorded,
        });
        effects
    }

    /// `Action::DeleteCluster`: its Deployments go (in the background); its JobManager pod
    /// exits with the next tick. Whether it had a cluster to delete.
    pub fn delete_cluster(&mut self) -> bool {
        match &mut self.cluster {
            Some(cluster) if cluster.deployed => {
                cluster.deployed = false;
                // A pod not running a JobManager has nothing to exit from.
                if cluster.job_manager != JobManager::Up {
                    self.cluster = None;
                }
                true
            }
            _ => false,
        }
    }

    /// `Action::DeleteHaMetadata`: the path of the checkpoint it pointed at last.
    pub fn delete_ha(&mut self) -> Option<String> {
        self.ha.take().and_then(|ha| ha.pointer())
    }

    /// The JobManager pod dies; its Deployment starts it again. Without HA (or once the job
    /// ended) its job is gone with what only it knew (an effect for the invariants).
    pub fn lose_job_manager(&mut self, flink: &mut Flink) -> Vec<Effect> {
        let Some(cluster) = &mut self.cluster else {
            return vec![];
        };
        if !cluster.deployed || cluster.job_manager != JobManager::Up {
            return vec![];
        }
        // With HA, a job that ended has left the metadata (Flink's cleanup): what only the
        // JobManager knew of it goes too.
        let ended = (flink.jobs.get(&cluster.job_id)).is_some_and(|j| j.state.is_globally_terminal());
        flink.lose(&cluster.job_id);
        cluster.job_manager = JobManager::Starting;
        cluster.lost = true;
        match cluster.ha && !ended {
            true => vec![],
            false => vec![Effect::Lost(cluster.job_id.clone())],
        }
    }

    /// Before time passes: an exiting JobManager without HA exits first. Without HA nothing
    /// could name a checkpoint its job completed while it exits (no pointer outlives it, and
    /// no operator can learn of it), so the model lets none complete, and checks what the
    /// operator decides; with HA the metadata files it, and the operator reads it once the
    /// JobManager has exited.
    pub fn before_tick(&mut self, flink: &mut Flink) {
        if let Some(cluster) = &self.cluster
            && !cluster.deployed
            && !cluster.ha
        {
            flink.suspend(&cluster.job_id);
            self.cluster = None;
        }
    }

    /// Time passes (after `flink` ticked, `checkpointed`: the latest checkpoint of the
    /// cluster's job before): its checkpoint is filed, an exiting JobManager exits, a
    /// starting one comes up with its job (unless `held`).
    pub fn tick(&mut self, flink: &mut Flink, checkpointed: Option<i64>, held: bool) -> Vec<Effect> {
        let mut effects = vec![];
        if let Some(cluster) = self.running_job()
            && cluster.ha
            && let Some(job) = flink.jobs.get(&cluster.job_id)
            && let Some(id) = job.latest_checkpoint
            && Some(id) != checkpointed
        {
            let job_id = cluster.job_id.clone();
            self.ha
                .get_or_insert_with(Ha::default)
                .checkpoints
                .insert(job_id, id);
        }
        self.settle(flink);
        if let Some(cluster) = &self.cluster
            && !cluster.deployed
        {
            flink.suspend(&cluster.job_id);
            self.cluster = None;
        }
        let Some(cluster) = self.cluster.as_mut() else {
            return effects;
        };
        if cluster.job_manager != JobManager::Starting || held {
            return effects;
        }
        let ha = match cluster.ha {
            true => Some(self.ha.get_or_insert_with(Ha::default)),
            false => None,
        };
        let job_id = cluster.job_id.clone();
        // A recovered job graph restores what it was submitted with when the store holds no
        // checkpoint; a graph of another job id would run a job nobody asked for.
        let (graph, filed) = match &ha {
            Some(ha) => (
                ha.job_graphs.get(&job_id).cloned(),
                ha.checkpoints.get(&job_id).copied(),
            ),
            None => (None, None),
        };
        if let Some(ha) = &ha {
            for other in ha.job_graphs.keys().filter(|j| **j != job_id) {
                effects.push(Effect::Anomaly(format!(
                    "the JobManager of job {job_id} recovered the job graph of job {other} from its HA metadata"
                )));
            }
        }
        if graph.is_none() && cluster.lost {
            cluster.job_manager = JobManager::Up;
            return effects;
        }
        let restore = match filed {
            Some(id) => Some(Flink::checkpoint_path(&job_id, id)),
            None => graph.clone().unwrap_or_else(|| cluster.restore.clone()),
        };
        if let Err(refused) = flink.run(&job_id, restore.as_deref(), cluster.retained, filed.is_some()) {
            if let Some(path) = restore {
                effects.push(Effect::SubmittedFromMissing {
                    removed: flink.why_missing(&path),
                    job_id,
                    path,
                    users_own: false,
                });
            }
            cluster.job_manager = JobManager::CrashLoop(refused.0);
            return effects;
        }
        cluster.job_manager = JobManager::Up;
        if let Some(ha) = ha {
            let submitted = graph.unwrap_or_else(|| cluster.restore.clone());
            ha.job_graphs.insert(job_id.clone(), submitted);
        }
        effects.push(Effect::Started {
            job_id,
            restore,
            stateless: cluster.stateless,
            rolling_back: false,
        });
        effects
    }

    /// A job that reached a globally terminal state leaves the HA metadata (its job graph and
    /// checkpoint pointers), as Flink's cleanup of it removes them.
    pub fn settle(&mut self, flink: &Flink) {
        let Some(cluster) = self.running_job().filter(|c| c.ha) else {
            return;
        };
        let job_id = cluster.job_id.clone();
        let ended = (flink.jobs.get(&job_id)).is_some_and(|j| j.state.is_globally_terminal());
        if let Some(ha) = self.ha.as_mut()
            && ended
        {
            ha.job_graphs.remove(&job_id);
            ha.checkpoints.remove(&job_id);
        }
    }

    /// The latest checkpoint of the cluster's running job (to tell what a tick adds).
    pub fn checkpointed(&self, flink: &Flink) -> Option<i64> {
        let cluster = self.running_job()?;
        let job = flink
            .jobs
            .get(&cluster.job_id)
            .filter(|j| j.state == FlinkJobState::Running)?;
        job.latest_checkpoint
    }
}
