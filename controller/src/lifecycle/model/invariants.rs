//! What must hold after every step of the model, judged from the simulated world (what
//! Flink ran and what is on storage), not from what the operator believes.
//!
//! The job's *floor* is the newest state it must never go below: the latest checkpoint
//! any of its runs completed, the savepoint a stop ended a run with, and the state a run was
//! started from. Manual savepoints do not raise it (a last-state upgrade restores the latest
//! checkpoint, which may precede a manual savepoint: Flink replays from there). The user
//! resets it by naming a state (`initialSavepointPath` of a new resource, or the state of the
//! revision a rollback restores with `rollback-restore: revision`) or by running the job
//! stateless.
//!
//! No savepoint a kept revision was started from is disposed of (a rollback to it with
//! `rollback-restore: revision` restores it), and no job is submitted to restore a path
//! that is not on storage, unless the user wrote that path into the spec
//! (`initialSavepointPath`) or gave that state up (see [`super::world::World::given_up`]):
//! the operator refuses a rollback whose state no record lists before it stops the running
//! job.
//!
//! What points at the newest state: the stored status, the FlinkStateSnapshots and the
//! StateRecorded Events, and for an application with HA its HA metadata, from which the
//! next cluster of a last-state change restores it. Ending the job (a cancellation, the
//! deletion of its cluster) must leave it named in status (or, for the cluster, in the HA
//! metadata that stays), and neither the resource nor the HA metadata may go while it is
//! the only pointer to it.

use flink_operator_api::LifecycleStatus;
use std::collections::BTreeSet;

use flink_operator_api::common::FlinkJobState;

use super::world::{Effect, Kind, World, recorded_paths};

/// A broken promise, in words.
pub type Violation = String;

#[derive(Debug, Clone, Default)]
pub struct Lineage {
    /// The floor: its checkpoint id and path.
    pub floor: Option<(i64, String)>,
    /// The jobs the resource ran.
    pub jobs: BTreeSet<String>,
    /// The state the user named for the next start (a new resource's initialSavepointPath).
    pub named: Option<String>,
    /// The resource left; its state lives on in a deletion record (or nowhere).
    pub released: bool,
    /// The newest `lastSavepoint` its stored status showed (its checkpoint id).
    pub last_savepoint: Option<i64>,
    /// The user's spec (the last one, once the resource left) runs the job stateless.
    pub stateless: bool,
    /// The paths StateRecorded Events named.
    pub event_records: Vec<String>,
    /// The rollbacks the user asked for that restore their revision's state
    /// (`rollback-restore: revision`), by revision number: that state, and when it was asked
    /// for (a rollback under way that started before is another request's). Each is there
    /// while rollbacks are asked for or under way, until it commits (its state then the
    /// floor, the jobs it ends dropped). A request made while another rollback is under way
    /// waits for it: both are kept.
    pub rollbacks_asked: std::collections::BTreeMap<i64, (String, i64)>,
}

impl Lineage {
    fn raise(&mut self, id: i64, path: &str) {
        if self.floor.as_ref().is_none_or(|(f, _)| id > *f) {
            self.floor = Some((id, path.to_owned()));
        }
    }

    /// A new resource (`named`: the state its spec names, if any, `named_id` its checkpoint
    /// id, None when it is not on storage): the state the user named is its newest (the
    /// record it came from may be an older one than the last resource's newest state, the
    /// user's choice), even before its first job runs.
    pub fn recreated(&mut self, named: Option<String>, named_id: Option<i64>) {
        *self = Lineage {
            floor: match (&named, named_id) {
                (Some(path), Some(id)) => Some((id, path.clone())),
                // What the user named is gone from storage: the job has no state to keep.
                (Some(_), None) | (None, _) => None,
            },
            named,
            event_records: std::mem::take(&mut self.event_records),
            ..Lineage::default()
        };
    }

    /// The paths that records outside the resource name: its FlinkStateSnapshots' and the
    /// StateRecorded Events'.
    pub fn records<'a, K: Kind>(&'a self, world: &'a World<K>) -> impl Iterator<Item = String> + 'a {
        (world.snapshots.values())
            .filter(|s| s.metadata.deletion_timestamp.is_none())
            .filter_map(|s| {
                (s.status.as_ref().and_then(|st| st.path.clone()))
                    .or_else(|| s.spec.savepoint.as_ref().and_then(|sp| sp.path.clone()))
            })
            .chain(self.event_records.iter().cloned())
    }

    /// Whether a rollback that restores its revision's state, as the user asked, committed
    /// at this step: that state is then the job's (the user named it), and what the jobs that
    /// run until the rollback ends them did is not.
    fn rollback_committed<K: Kind>(&mut self, world: &World<K>) -> Option<String> {
        let committed = (world.job_status()).and_then(|j| j.upgrade_savepoint_path.as_ref());
        let under_way = (world.object().and_then(|o| o.status()))
            .and_then(|s| s.revision())
            .and_then(|r| r.rollback.as_ref())
            .filter(|r| r.phase == Some(flink_operator_api::RollbackPhase::RollingBack))?;
        let to = under_way.to?;
        let (state, asked_ms) = self.rollbacks_asked.get(&to).cloned()?;
        if Some(&state) != committed
            // The commit moves the state from the rollback to the change's own restore.
            || under_way.restore_path.as_ref().is_some_and(|p| p != &state)
            || under_way.timestamp.is_none_or(|t| t < asked_ms)
        {
            return None;
        }
        let upgrading = (world.object().and_then(|o| o.status()))
            .and_then(|s| s.reconciliation())
            .is_some_and(|r| r.state == Some(flink_operator_api::common::ReconciliationState::Upgrading));
        // Under way (not only asked for, which may wait for an update that happens to
        // restore the same state).
        if !upgrading {
            return None;
        }
        self.rollbacks_asked.remove(&to);
        self.floor = world.flink.files.get(&state).map(|f| (f.id, state.clone()));
        self.jobs.clear();
        Some(state)
    }

    /// Checks what a step did, then takes in what the world now holds.
    pub fn check<K: Kind>(
        &mut self,
        world: &World<K>,
        effects: &[Effect],
        stateless_now: bool,
    ) -> Result<(), Violation> {
        for effect in effects {
            if let Effect::RecordedByEvent(path) = effect {
                self.event_records.push(path.clone());
            }
        }
        let committed = self.rollback_committed(world);
        for effect in effects {
            self.check_effect(world, effect)?;
            // A job the step started before the commit (a JobManager that came up with the
            // step's time) ends for it too, and the state it started from is no more the
            // job's than what it did since: the cluster deletion that ends it is judged by
            // the state the rollback restores.
            if let (Some(state), Effect::Started { .. }) = (&committed, effect) {
                self.floor = world.flink.files.get(state).map(|f| (f.id, state.clone()));
                self.jobs.clear();
            }
        }
        if let Some(state) = committed {
            self.floor = world.flink.files.get(&state).map(|f| (f.id, state));
            self.jobs.clear();
        }
        if !world.rolling_back() {
            self.rollbacks_asked.clear();
        }
        if stateless_now {
            // The user runs the job without state: nothing of it is kept for them, and what
            // a run that ended meanwhile left is not its state any more.
            // A job still running in the JobManager of a deleted cluster is ending with it,
            // and one that a committed change to a stateless spec is ending goes without
            // state: their checkpoints are no state of the job's either.
            self.floor = None;
            let status = world.stored_status();
            let upgrading = (status.reconciliation())
                .is_some_and(|r| r.state == Some(flink_operator_api::common::ReconciliationState::Upgrading));
            let ending_stateless = upgrading && super::world::recorded_stateless(&status);
            self.jobs.retain(|id| {
                world
                    .flink
                    .jobs
                    .get(id)
                    .is_some_and(|j| j.state == FlinkJobState::Running)
                    && !world.app.exiting(id)
                    && !ending_stateless
            });
            return Ok(());
        }
        self.take_in(world);
        self.check_world(world)
    }

    /// Whether any of `paths` names state at least as new as the floor `floor`.
    fn covers<K: Kind>(world: &World<K>, paths: &[String], floor: i64) -> bool {
        paths
            .iter()
            .any(|p| world.flink.ids.get(p).is_some_and(|id| *id >= floor))
    }

    fn check_effect<K: Kind>(&mut self, world: &World<K>, effect: &Effect) -> Result<(), Violation> {
        match effect {
            Effect::Started {
                job_id,
                restore,
                stateless,
                rolling_back,
            } => {
                let file_id = |path: &String| world.flink.files.get(path).map(|f| f.id);
                let named = restore.is_some()
                    && (restore == &self.named
                        || (*rolling_back
                            && (self.rollbacks_asked.values()).any(|(s, _)| Some(s) == restore.as_ref())));
                if *stateless && restore.is_none() {
                    // The user chose to run without state: what earlier runs left is not
                    // the job's state any more, nor is what this run checkpoints.
                    self.floor = None;
                    self.jobs.clear();
                    self.named = None;
                    return Ok(());
                } else if named {
                    let path = restore.clone().expect("named");
                    self.floor = file_id(&path).map(|id| (id, path));
                } else {
                    match (&self.floor, restore) {
                        (Some((floor, path)), None) => {
                            return Err(format!(
                                "job {job_id} was started from no state, while its newest state {path} (id {floor}) exists"
                            ));
                        }
                        (Some((floor, path)), Some(restore)) => {
                            let id = file_id(restore).unwrap_or(0);
                            if id < *floor {
                                return Err(format!(
                                    "job {job_id} was started from {restore} (id {id}), older than its newest state {path} (id {floor})"
                                ));
                            }
                        }
                        (None, _) => {}
                    }
                    if let Some(restore) = restore
                        && let Some(id) = file_id(restore)
                    {
                        self.raise(id, restore);
                    }
                }
                self.named = None;
                self.jobs.insert(job_id.clone());
            }
            Effect::Cancelled { job_id, recorded } => {
                let Some((floor, path)) = &self.floor else {
                    return Ok(());
                };
                let stateless = world.stateless().unwrap_or(false);
                // Whether the cancellation kept it is checked with the world after the step.
                let covered = Self::covers(world, recorded, *floor);
                if !stateless && !covered {
                    return Err(format!(
                        "job {job_id} was cancelled while the status written before named none of its newest state {path} (id {floor}), but {recorded:?}"
                    ));
                }
            }
            Effect::ClusterDeleted { recorded, ha_pointer } => {
                let Some((floor, path)) = &self.floor else {
                    return Ok(());
                };
                // The HA metadata the deletion keeps points at it, or status names it (what
                // the job completes while its JobManager exits is judged as it comes); for
                // the resource's own deletion a record outside it does too (the next job
                // of a change restores what status or the HA metadata names).
                let kept = Self::covers(world, &ha_pointer.iter().cloned().collect::<Vec<_>>(), *floor);
                let deleting = world
                    .object()
                    .is_some_and(|o| o.meta().deletion_timestamp.is_some());
                let records: Vec<String> = self.records(world).collect();
                let recorded_outside = deleting && Self::covers(world, &records, *floor);
                if !world.stateless().unwrap_or(false)
                    && !kept
                    && !recorded_outside
                    && !Self::covers(world, recorded, *floor)
                {
                    return Err(format!(
                        "the cluster was deleted while neither the status written before ({recorded:?}) nor its HA metadata ({ha_pointer:?}) named the job's newest state {path} (id {floor})"
                    ));
                }
            }
            Effect::HaDeleted { pointer, recorded } => {
                let Some((floor, path)) = &self.floor else {
                    return Ok(());
                };
                let pointed = Self::covers(world, &pointer.iter().cloned().collect::<Vec<_>>(), *floor);
                let records: Vec<String> = self.records(world).collect();
                let elsewhere = Self::covers(world, recorded.as_deref().unwrap_or_default(), *floor)
                    || Self::covers(world, &records, *floor);
                if pointed && !elsewhere {
                    return Err(format!(
                        "the HA metadata was deleted while it was the only pointer to the job's newest state {path} (id {floor}): it pointed at {pointer:?}, the status named {recorded:?}, the records {records:?}"
                    ));
                }
            }
            Effect::SubmittedFromMissing {
                job_id,
                path,
                removed,
                users_own,
            } => {
                // The operator disposes of state only through what it records (the history's
                // trim, a snapshot resource's deletion), never of what a job may still need,
                // and refuses a restore whose state no record lists before it stops anything:
                // a start from a path that is gone means a job was ended (or a resume
                // committed) for state that was disposed of. Only the user's own
                // initialSavepointPath, or a checkpoint they gave up, may be gone.
                if !users_own {
                    return Err(format!(
                        "job {job_id} was submitted to restore {path}, which is not on storage ({removed}); \
                         neither the user's spec.job.initialSavepointPath names it nor did they give it up"
                    ));
                }
            }
            Effect::Anomaly(what) => return Err(what.clone()),
            Effect::Lost(job_id) => {
                // What nothing but the lost JobManager knew is lost by Flink's design: the
                // job's newest state is now the newest its status still names (the user's
                // records may name older state of other runs).
                self.jobs.remove(job_id);
                let named = (world.object().and_then(|o| o.status()))
                    .map(recorded_paths)
                    .unwrap_or_default();
                self.floor = (named.into_iter())
                    .filter_map(|p| world.flink.files.get(&p).map(|f| (f.id, p)))
                    .filter(|(id, _)| self.floor.as_ref().is_some_and(|(floor, _)| id <= floor))
                    .max();
            }
            Effect::Disposed { path, by } => {
                if let Some((id, floor)) = &self.floor
                    && floor == path
                {
                    return Err(format!(
                        "{by} disposed of {path} (id {id}), the newest state of the job"
                    ));
                }
                let current = (world.job_status())
                    .and_then(|j| j.job_id.as_ref())
                    .and_then(|id| world.flink.jobs.get(id))
                    .filter(|j| j.state == FlinkJobState::Running);
                // Restored in NO_CLAIM mode (Flink's default), a job reads the savepoint it
                // was started from until its first checkpoint completes, and never after.
                if let Some(job) = current
                    && job.started_from.as_ref() == Some(path)
                    && job.latest_checkpoint.is_none()
                {
                    return Err(format!(
                        "{by} disposed of {path}, the state its running job was started from"
                    ));
                }
                // A kept revision's state is what a rollback to it with `rollback-restore:
                // revision` restores (its revisions go with the resource).
                let kept = (world.revisions.iter())
                    .filter(|_| world.object().is_some())
                    .find(|r| r.started_from.as_ref() == Some(path));
                if let Some(revision) = kept {
                    return Err(format!(
                        "{by} disposed of {path}, the state kept revision {} was started from, which a rollback to it restores",
                        revision.number
                    ));
                }
            }
            Effect::Released => {
                self.released = true;
                if let Some((floor, path)) = &self.floor {
                    let recorded = self
                        .records(world)
                        .any(|p| world.flink.files.get(&p).is_some_and(|f| f.id >= *floor));
                    if !recorded {
                        return Err(format!(
                            "the resource left without a record of its newest state {path} (id {floor})"
                        ));
                    }
                }
            }
            Effect::RecordedByEvent(_) => {}
        }
        Ok(())
    }

    /// Raises the floor with what the resource's jobs completed.
    fn take_in<K: Kind>(&mut self, world: &World<K>) {
        for job_id in &self.jobs.clone() {
            let Some(job) = world.flink.jobs.get(job_id) else {
                continue;
            };
            // A checkpoint deleted already (its job cancelled while the user ran it
            // stateless) was never the job's state under these rules.
            if let Some(id) = job.latest_checkpoint
                && let path = super::flink::Flink::checkpoint_path(job_id, id)
                && world.flink.files.contains_key(&path)
            {
                self.raise(id, &path);
            }
            if let Some(path) = &job.stopped_with
                && let Some(file) = world.flink.files.get(path)
            {
                self.raise(file.id, path);
            }
        }
        // A savepoint one of its jobs took while it ran (a manual one) is not what a
        // last-state restore reads (Flink restores its latest checkpoint), but once the status
        // names it as the state the job restores next, the job's state is at least that new.
        let restores = (world.job_status()).and_then(|j| j.upgrade_savepoint_path.clone());
        if let Some(path) = restores
            && let Some(file) = world.flink.files.get(&path)
            && file.savepoint
            && self.jobs.contains(&file.job_id)
        {
            self.raise(file.id, &path);
        }
    }

    fn check_world<K: Kind>(&mut self, world: &World<K>) -> Result<(), Violation> {
        if let Some(status) = world.object().and_then(|o| o.status()) {
            let last = (status.job_status())
                .and_then(|j| j.savepoint_info.as_ref())
                .and_then(|i| i.last_savepoint.as_ref())
                .and_then(|s| s.location.as_ref())
                .and_then(|p| world.flink.files.get(p).map(|f| f.id));
            if let (Some(before), Some(now)) = (self.last_savepoint, last)
                && now < before
            {
                return Err(format!(
                    "the stored lastSavepoint went back from id {before} to id {now}: {:?}",
                    recorded_paths(status)
                ));
            }
            if last.is_some() {
                self.last_savepoint = last;
            }
        }
        let Some((floor, path)) = &self.floor else {
            return Ok(());
        };
        if self.released {
            let recorded = self.records(world).any(|p| &p == path);
            if !recorded {
                // The user deleted the record (its disposal was checked when it happened).
                self.floor = None;
                return Ok(());
            }
        }
        if !world.flink.files.contains_key(path) {
            return Err(format!(
                "the newest state of the job, {path} (id {floor}), is no longer on storage"
            ));
        }
        Ok(())
    }
}
