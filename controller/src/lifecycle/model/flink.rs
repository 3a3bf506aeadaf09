//! A simulated Flink session cluster and its state storage, as the operator sees them over
//! REST: jobs by id with their checkpoints and savepoint operations, and the files on
//! storage. What Flink does that matters for the state is kept: checkpoint and savepoint ids
//! in one rising sequence, a newer checkpoint subsuming (deleting) the older one, a
//! cancellation deleting the job's checkpoints unless they are retained, a stop ending the
//! job with its savepoint, trigger results forgotten, ended jobs dropped from the archive.
//! An application cluster runs its one job through the same calls ([`Flink::run`],
//! [`Flink::suspend`], [`Flink::lose`]; see [`super::cluster`]).

use std::collections::BTreeMap;

use flink_operator_api::common::FlinkJobState;

/// A checkpoint or savepoint on storage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    /// Its checkpoint id: Flink numbers a job's checkpoints and savepoints in one rising
    /// sequence; here one sequence for all, so that a higher id is always newer state.
    pub id: i64,
    pub completed_ms: i64,
    pub savepoint: bool,
    pub job_id: String,
}

/// A savepoint or checkpoint asked for under a trigger id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operation {
    Pending {
        stop: bool,
    },
    /// The savepoint's path, or the checkpoint's id.
    Completed(String),
    Failed(String),
}

#[derive(Debug, Clone)]
pub struct Job {
    pub state: FlinkJobState,
    pub start_ms: i64,
    pub started_from: Option<String>,
    /// `execution.checkpointing.externalized-checkpoint-retention` is not DELETE_ON_CANCELLATION.
    pub retained_on_cancel: bool,
    /// The latest completed checkpoint's id (Flink keeps one: a newer one subsumes it).
    pub latest_checkpoint: Option<i64>,
    /// The highest id the job's statistics show.
    pub highest_id: i64,
    /// A checkpoint the run restored from its high-availability store: the run owns it, so its
    /// first checkpoint subsumes (deletes) it, though its statistics show no completed one.
    pub restored_checkpoint: Option<i64>,
    /// Completed savepoints of the job, by id (its checkpoint history).
    pub savepoints: BTreeMap<i64, String>,
    /// The savepoint a stop ended the job with.
    pub stopped_with: Option<String>,
    pub savepoint_operations: BTreeMap<String, Operation>,
    pub checkpoint_operations: BTreeMap<String, Operation>,
}

/// Why Flink refused a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused(pub String);

#[derive(Debug, Clone, Default)]
pub struct Flink {
    pub now_ms: i64,
    pub next_id: i64,
    pub files: BTreeMap<String, File>,
    /// The checkpoint id of every file ever written, deleted or not.
    pub ids: BTreeMap<String, i64>,
    /// When every file ever written completed (the statistics keep it once the files are gone).
    pub times: BTreeMap<String, i64>,
    pub jobs: BTreeMap<String, Job>,
    /// Who deleted each file that is gone (the last deletion of its path).
    pub removed: BTreeMap<String, String>,
}

impl Flink {
    fn next_id(&mut self) -> i64 {
        self.next_id += 1;
        self.next_id
    }

    fn write(&mut self, path: String, file: File) {
        self.ids.insert(path.clone(), file.id);
        self.times.insert(path.clone(), file.completed_ms);
        self.removed.remove(&path);
        self.files.insert(path, file);
    }

    /// Deletes the files at `path`, `by` whom (a sentence for a violation to name).
    fn remove(&mut self, path: &str, by: String) {
        if self.files.remove(path).is_some() {
            self.removed.insert(path.to_owned(), by);
        }
    }

    /// Names who disposed of the files at `path` through [`Flink::dispose`] (the history's
    /// trim, a FlinkStateSnapshot's deletion), which only its caller knows.
    pub fn disposed_by(&mut self, path: &str, by: &str) {
        if !self.files.contains_key(path) && self.ids.contains_key(path) {
            self.removed.insert(path.to_owned(), by.to_owned());
        }
    }

    /// Why nothing is at `path` on storage: who deleted it, or that nothing was ever written
    /// there.
    pub fn why_missing(&self, path: &str) -> String {
        match self.removed.get(path) {
            Some(by) => format!("deleted by {by}"),
            None if self.ids.contains_key(path) => "deleted".to_owned(),
            None => "never written".to_owned(),
        }
    }

    pub fn checkpoint_path(job_id: &str, id: i64) -> String {
        format!("file:/checkpoints/{job_id}/chk-{id}")
    }

    pub fn savepoint_path(job_id: &str, id: i64) -> String {
        format!(
            "file:/savepoints/savepoint-{}-{id}",
            &job_id[..job_id.len().min(6)]
        )
    }

    /// Runs a job from its jar: restoring `restore` when given, which must exist.
    pub fn submit(&mut self, job_id: &str, restore: Option<&str>, retained: bool) -> Result<(), Refused> {
        if self.jobs.contains_key(job_id) {
            // Flink: "job has already been submitted"; the operator takes it as done.
            return Ok(());
        }
        self.run(job_id, restore, retained, false)
    }

    /// Runs a job under `job_id` (an application cluster's JobManager starting it), in place
    /// of an earlier run of that id that no longer runs: restoring `restore`, which must
    /// exist; `owned`: a checkpoint of its high-availability store, which the run takes over.
    pub fn run(
        &mut self,
        job_id: &str,
        restore: Option<&str>,
        retained: bool,
        owned: bool,
    ) -> Result<(), Refused> {
        let restored_id = match restore {
            Some(path) => match self.files.get(path) {
                Some(file) => file.id,
                None => return Err(Refused(format!("no state at {path}"))),
            },
            None => 0,
        };
        self.jobs.insert(
            job_id.to_owned(),
            Job {
                state: FlinkJobState::Running,
                start_ms: self.now_ms,
                started_from: restore.map(str::to_owned),
                retained_on_cancel: retained,
                latest_checkpoint: None,
                highest_id: restored_id,
                restored_checkpoint: owned.then_some(restored_id),
                savepoints: BTreeMap::new(),
                stopped_with: None,
                savepoint_operations: BTreeMap::new(),
                checkpoint_operations: BTreeMap::new(),
            },
        );
        Ok(())
    }

    /// The JobManager running `job_id` shuts down (its cluster was deleted): the job is
    /// SUSPENDED, its checkpoints kept, pending operations lost with it.
    pub fn suspend(&mut self, job_id: &str) {
        if let Some(job) = self.jobs.get_mut(job_id)
            && !job.state.is_globally_terminal()
        {
            job.state = FlinkJobState::Suspended;
            fail_pending(job, "the JobManager shut down");
        }
    }

    /// The JobManager running `job_id` died: its memory of the job (trigger results, the
    /// archive) is gone; its files stay.
    pub fn lose(&mut self, job_id: &str) {
        self.jobs.remove(job_id);
    }

    fn running(&mut self, job_id: &str) -> Result<&mut Job, Refused> {
        match self.jobs.get_mut(job_id) {
            Some(job) if job.state == FlinkJobState::Running => Ok(job),
            Some(job) => Err(Refused(format!("job {job_id} is {}", job.state))),
            None => Err(Refused(format!("job {job_id} not found"))),
        }
    }

    pub fn trigger_savepoint(&mut self, job_id: &str, trigger: &str, stop: bool) -> Result<(), Refused> {
        let job = self.running(job_id)?;
        job.savepoint_operations
            .entry(trigger.to_owned())
            .or_insert(Operation::Pending { stop });
        Ok(())
    }

    pub fn trigger_checkpoint(&mut self, job_id: &str, trigger: &str) -> Result<(), Refused> {
        let job = self.running(job_id)?;
        job.checkpoint_operations
            .entry(trigger.to_owned())
            .or_insert(Operation::Pending { stop: false });
        Ok(())
    }

    /// Cancels a job; one that ended already or is unknown is left so.
    pub fn cancel(&mut self, job_id: &str) {
        let Some(job) = self.jobs.get_mut(job_id) else {
            return;
        };
        if job.state != FlinkJobState::Running {
            return;
        }
        job.state = FlinkJobState::Canceled;
        fail_pending(job, "the job was cancelled");
        if !job.retained_on_cancel
            && let Some(id) = job.latest_checkpoint.or(job.restored_checkpoint)
        {
            self.remove(
                &Self::checkpoint_path(job_id, id),
                format!("Flink as job {job_id} was cancelled (its checkpoints are deleted on cancellation)"),
            );
        }
    }

    /// A disposal through the JobManager's REST API.
    pub fn dispose(&mut self, path: &str) {
        self.remove(path, "a disposal through the JobManager".to_owned());
    }

    /// Time passes: each running job completes a checkpoint (not those of `unpolled`, whose
    /// completed savepoints the operator has not polled yet: see the module doc of
    /// `lifecycle::model`), and pending operations complete (a stop ends its job).
    pub fn tick(&mut self, ms: i64, unpolled: &[String]) {
        self.now_ms += ms;
        let ids: Vec<String> = self.jobs.keys().cloned().collect();
        for job_id in ids {
            if self.jobs[&job_id].state != FlinkJobState::Running {
                continue;
            }
            let triggers: Vec<(String, bool)> = (self.jobs[&job_id].savepoint_operations.iter())
                .filter_map(|(t, op)| match op {
                    Operation::Pending { stop } => Some((t.clone(), *stop)),
                    _ => None,
                })
                .collect();
            // A tick that completes savepoints completes no checkpoint: the operator records
            // a savepoint with the time it saw it complete (Flink's status of a trigger has
            // none), so a checkpoint completing between the savepoint and that look would
            // rank below it (see the module doc of `lifecycle::model`).
            let completes_savepoints = !triggers.is_empty();
            let mut stopped = false;
            for (trigger, stop) in triggers {
                if stopped {
                    break;
                }
                let id = self.next_id();
                let path = Self::savepoint_path(&job_id, id);
                self.write(
                    path.clone(),
                    File {
                        id,
                        completed_ms: self.now_ms,
                        savepoint: true,
                        job_id: job_id.clone(),
                    },
                );
                let job = self.jobs.get_mut(&job_id).expect("listed");
                job.highest_id = id;
                job.savepoints.insert(id, path.clone());
                job.savepoint_operations
                    .insert(trigger, Operation::Completed(path.clone()));
                if stop {
                    job.stopped_with = Some(path);
                    job.state = FlinkJobState::Finished;
                    fail_pending(job, "the job finished");
                    stopped = true;
                }
            }
            if stopped || completes_savepoints || unpolled.contains(&job_id) {
                continue;
            }
            let id = self.next_id();
            let path = Self::checkpoint_path(&job_id, id);
            self.write(
                path,
                File {
                    id,
                    completed_ms: self.now_ms,
                    savepoint: false,
                    job_id: job_id.clone(),
                },
            );
            let job = self.jobs.get_mut(&job_id).expect("listed");
            let subsumed = job
                .latest_checkpoint
                .replace(id)
                .or(job.restored_checkpoint.take());
            job.highest_id = id;
            for op in job.checkpoint_operations.values_mut() {
                if matches!(op, Operation::Pending { .. }) {
                    *op = Operation::Completed(id.to_string());
                }
            }
            if let Some(old) = subsumed {
                self.remove(
                    &Self::checkpoint_path(&job_id, old),
                    format!("Flink as checkpoint {id} of job {job_id} subsumed it"),
                );
            }
        }
    }

    /// A running job fails (its restart strategy gave up).
    pub fn fail(&mut self, job_id: &str) {
        if let Some(job) = self.jobs.get_mut(job_id)
            && job.state == FlinkJobState::Running
        {
            job.state = FlinkJobState::Failed;
            fail_pending(job, "the job failed");
        }
    }

    /// The pending savepoints of every job fail.
    pub fn fail_savepoints(&mut self) {
        for job in self.jobs.values_mut() {
            for op in job.savepoint_operations.values_mut() {
                if matches!(op, Operation::Pending { .. }) {
                    *op = Operation::Failed("the savepoint was declined".into());
                }
            }
        }
    }

    /// The JobManager forgets its trigger results (they are kept for a while only).
    pub fn forget_triggers(&mut self) {
        for job in self.jobs.values_mut() {
            job.savepoint_operations
                .retain(|_, op| matches!(op, Operation::Pending { .. }));
            job.checkpoint_operations
                .retain(|_, op| matches!(op, Operation::Pending { .. }));
        }
    }

    /// Ended jobs leave the JobManager's archive (after `jobstore.expiration-time`, or as
    /// its JobManager restarts), but `kept`, whose end the operator has not seen yet (the
    /// archive keeps a job for an hour; the operator looks far more often).
    pub fn forget_ended_jobs(&mut self, kept: Option<&str>) {
        self.jobs
            .retain(|id, job| job.state == FlinkJobState::Running || Some(id.as_str()) == kept);
    }
}

fn fail_pending(job: &mut Job, why: &str) {
    for op in job
        .savepoint_operations
        .values_mut()
        .chain(job.checkpoint_operations.values_mut())
    {
        if matches!(op, Operation::Pending { .. }) {
            *op = Operation::Failed(why.to_owned());
        }
    }
}
