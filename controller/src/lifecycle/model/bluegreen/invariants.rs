//! What must hold after every step of the blue/green model, judged from the simulated world
//! (what Flink ran, what is on storage), not from what the operator believes.
//!
//! The job's *floor* is the newest state it must never go below, raised by the jobs of its
//! *line* (the child that runs the job for the resource): their latest checkpoint, the
//! savepoint a stop ended them with. A transition savepoint raises it too and ends its job's
//! part in the line (BASIC: what the old job does after it is not handed over); the new
//! child's job is the line from its start. An abort that leaves the old child active puts it
//! back as the line, its own newest state the floor (the aborted attempt's is not the job's).
//! The user resets the floor by naming a state (`initialSavepointPath`, with or without a
//! redeploy nonce) or by running the job stateless.
//!
//! Checked: a child starts from the floor or newer (or the state the user named, or none when
//! stateless), and beside another child's running job only from a savepoint of that job (a
//! stateless or redeploy transition, or the incoming child's own restart, aside); the floor stays on storage and is named where the
//! next start reads it (the resource's status, a child's spec or status, or a running child's
//! job) while the resource is there; no disposal takes a path the resource or a child still
//! names; a resource that leaves has its newest state recorded by its children's deletions
//! (unless the user disposed of it once the resource left).

use std::collections::BTreeSet;

use super::{
    super::flink::Flink,
    children::ChildEffect,
    world::{Effect, World},
};
use flink_operator_api::common::{FlinkJobState, UpgradeMode};

use crate::{
    bluegreen::{Colour, Stage},
    lifecycle::spec::{is_suspended, upgrade_mode},
};

/// A broken promise, in words.
pub type Violation = String;

#[derive(Debug, Clone, Default)]
pub struct Lineage {
    /// The floor: its checkpoint id and path.
    pub floor: Option<(i64, String)>,
    /// The jobs whose completed state raises the floor.
    pub line: BTreeSet<String>,
    /// The states the user named in the template for a child's first start.
    pub named: BTreeSet<String>,
    /// The stage the stored status showed after the previous step.
    pub stage: Option<Stage>,
    /// The template (the last one, once the resource left) runs the job stateless.
    pub stateless: bool,
    /// The transition savepoint being handed over: its job, its path and its
    /// FlinkStateSnapshot's name, until a child the resource adopted starts from it.
    pub handed: Option<(String, String, String)>,
    /// The jobs whose child's spec runs stateless (as last seen).
    pub stateless_jobs: BTreeSet<String>,
    /// The states whose FlinkStateSnapshot the user deleted once the resource left (its
    /// records are theirs to keep or drop then).
    pub dropped: BTreeSet<String>,
}

impl Lineage {
    fn raise(&mut self, id: i64, path: &str) {
        if self.floor.as_ref().is_none_or(|(floor, _)| id > *floor) {
            self.floor = Some((id, path.to_owned()));
        }
    }

    /// A new resource: its state is the one the user names, if any.
    pub fn recreated(&mut self, named: Option<String>, world: &World) {
        *self = Lineage {
            floor: (named.as_ref()).and_then(|p| world.flink.files.get(p).map(|f| (f.id, p.clone()))),
            named: named.into_iter().collect(),
            ..Lineage::default()
        };
    }

    /// Checks what a step did, then takes in what the world now holds; `seen`: the
    /// resource's pass saw the world as it is (no crash, no stale read).
    pub fn check(&mut self, world: &World, effects: &[Effect], seen: bool) -> Result<(), Violation> {
        // The user deleted the child that runs the job: its state goes to the record that
        // deletion leaves, which the resource does not read; what it starts next is the user's
        // to name (a known gap: see the module doc of `lifecycle::model::bluegreen`).
        let gone = effects.iter().filter_map(|e| match e {
            Effect::Child(ChildEffect::Deleted {
                jobs, by_hand: true, ..
            }) => Some(jobs.iter()),
            _ => None,
        });
        let handed = self.handed.as_ref().map(|(job, _, _)| job);
        let dropped = (world.children.iter().flatten())
            .filter(|c| c.deleted_by_hand)
            .flat_map(|c| c.earlier.iter().chain(c.run.as_ref().map(|r| &r.job_id)))
            .chain(gone.flatten())
            .any(|job| self.line.contains(job) || Some(job) == handed);
        if dropped {
            self.floor = None;
            self.line.clear();
        }
        // A job that ended while its child ran stateless left no state of the job's; one that
        // runs on once its child's spec is stateful again keeps what it completes from then.
        for child in world.children.iter().flatten() {
            if let Some(run) = &child.run {
                if child.deleted_by_operator {
                    // The resource gave that child up (an old one after a hand-over, a
                    // leftover whose state it took, a new one that never ran or ran from the
                    // wrong state): what its deletion leaves is not the job's.
                    self.line.remove(&run.job_id);
                }
                if upgrade_mode(&child.object.spec) == UpgradeMode::Stateless {
                    self.stateless_jobs.insert(run.job_id.clone());
                } else if child.running(&world.flink) {
                    self.stateless_jobs.remove(&run.job_id);
                }
            }
        }
        for effect in effects {
            self.check_effect(world, effect)?;
        }
        if seen {
            Self::check_overlap(world)?;
        }
        self.survivor(world);
        if world.resource.is_some() {
            self.stateless = world.stateless();
        }
        if self.stateless {
            // The user runs the job without state: nothing of it is kept for them, and what
            // a job that ended meanwhile left is not its state any more.
            self.floor = None;
            self.line
                .retain(|id| (world.flink.jobs.get(id)).is_some_and(|j| j.state == FlinkJobState::Running));
            return Ok(());
        }
        self.take_in(world);
        self.check_world(world)
    }

    fn check_effect(&mut self, world: &World, effect: &Effect) -> Result<(), Violation> {
        let id_of = |path: &String| world.flink.files.get(path).map(|f| f.id);
        match effect {
            Effect::Started {
                started:
                    ChildEffect::Started {
                        colour,
                        job_id,
                        restore,
                        stateless,
                        first,
                        earlier,
                    },
                beside,
                stage,
            } => {
                // The user names the state a child's first job restores.
                // The old child of a hand-over resuming its own job: that job is not the line
                // (the abort that would make it so puts it back).
                let file = restore.as_ref().and_then(|p| world.flink.files.get(p));
                // What the child's own earlier jobs left or started from.
                let own = file.is_some_and(|f| earlier.contains(&f.job_id))
                    || (earlier.iter()).any(|id| {
                        let job = world.flink.jobs.get(id);
                        job.is_some_and(|j| j.started_from.is_some() && &j.started_from == restore)
                    });
                let old_own = matches!(stage, Some(Stage::TransitioningTo(incoming)) if incoming != colour)
                    && (restore.is_none() || own);
                if old_own {
                    return Ok(());
                }
                let named = *first && restore.as_ref().is_some_and(|r| self.named.contains(r));
                let stateless = *stateless && restore.is_none();
                if let Some(other) = beside {
                    // From the old job's savepoint, or (a change or a resume of the child)
                    // from what its own earlier jobs left or started from.
                    let from_its_savepoint = file.is_some_and(|f| f.savepoint && &f.job_id == other);
                    if !from_its_savepoint && !own && !stateless && !named {
                        return Err(format!(
                            "the {} child's job {job_id} started from {restore:?} while the other child's job {other} runs, not from a savepoint of it",
                            colour.suffix()
                        ));
                    }
                }
                if stateless || named {
                    self.floor = restore.as_ref().and_then(|p| id_of(p).map(|id| (id, p.clone())));
                } else if let Some((floor, path)) = &self.floor {
                    match restore {
                        None => {
                            return Err(format!(
                                "the {} child's job {job_id} was started from no state, while the job's newest state {path} (id {floor}) exists",
                                colour.suffix()
                            ));
                        }
                        Some(restore) => {
                            let id = id_of(restore).unwrap_or(0);
                            if id < *floor {
                                return Err(format!(
                                    "the {} child's job {job_id} was started from {restore} (id {id}), older than the job's newest state {path} (id {floor})",
                                    colour.suffix()
                                ));
                            }
                        }
                    }
                }
                // Handed over once the resource's child starts from it. A stray's start (one a
                // pass that stopped before its status was written created) is not: the
                // resource may give the stray up and, if the savepoint's record goes too,
                // take another of the old job, whose own state is the job's again then.
                if adopted(*stage, *colour)
                    && self
                        .handed
                        .as_ref()
                        .is_some_and(|(_, path, _)| Some(path) == restore.as_ref())
                {
                    self.handed = None;
                }
                // A stray child (one the resource lost track of, which it then suspends) does
                // not run the job for it.
                if adopted(*stage, *colour) {
                    self.line = BTreeSet::from([job_id.clone()]);
                }
            }
            Effect::Started { .. } | Effect::Child(ChildEffect::Started { .. }) => {}
            Effect::TransitionSavepoint { name, job_id, path } => {
                // One the resource gave up (an abort, a suspension) is not handed over: no
                // more the job's state than a manual savepoint.
                let named = world.status().and_then(|s| s.savepoint_trigger_id.as_ref());
                if named != Some(name) {
                    return Ok(());
                }
                self.line.remove(job_id);
                self.handed = Some((job_id.clone(), path.clone(), name.clone()));
                if let Some(id) = id_of(path) {
                    self.raise(id, path);
                }
            }
            Effect::Disposed { path, by, named } => {
                // Once the resource left, its records are the user's to keep or drop.
                let there = world.resource.is_some();
                if there && self.floor.as_ref().is_some_and(|(_, floor)| floor == path) {
                    return Err(format!("{by} disposed of {path}, the newest state of the job"));
                }
                if named.contains(path) {
                    return Err(format!(
                        "{by} disposed of {path}, which the resource or a child still named"
                    ));
                }
            }
            Effect::Child(ChildEffect::Deleted { .. }) => {}
            Effect::Child(ChildEffect::DeployedFromSpec { .. }) => {}
            Effect::DeployedFromSpec {
                colour,
                restore,
                stage,
            } => {
                // A run of the resource's child deployed from a state the user named: that
                // state is the job's from now on, and what the jobs before it do is not (an
                // abort that leaves the old child active puts it back). Nor is a transition
                // savepoint being handed over (a redeploy of the incoming child): the user
                // dropping its record later does not make the old job's state the job's again.
                let named = restore.as_ref().filter(|p| self.named.contains(*p));
                if let Some(path) = named.filter(|_| adopted(*stage, *colour)) {
                    self.floor = id_of(path).map(|id| (id, path.clone()));
                    self.line.clear();
                    self.handed = None;
                }
            }
        }
        Ok(())
    }

    /// Outside a transition, once a pass saw the world as it is, no child but the active one
    /// runs the job or is to run it (BASIC overlaps the jobs during a hand-over only).
    fn check_overlap(world: &World) -> Result<(), Violation> {
        let Some(stage) = world.stage() else {
            return Ok(());
        };
        let active = match stage {
            Stage::Active(colour) => Some(colour),
            Stage::Initializing => None,
            Stage::Savepointing(_) | Stage::TransitioningTo(_) => return Ok(()),
        };
        for child in world.children.iter().flatten() {
            if Some(child.colour) == active || child.deleting() || is_suspended(&child.object.spec) {
                continue;
            }
            let run = child.run.as_ref();
            let to_run = run.is_none_or(|r| !r.submitted && !r.crash_loop) && !child.broken;
            if child.running(&world.flink) || to_run {
                return Err(format!(
                    "outside a transition ({stage:?}), the {} child runs the job or is to run it, and nothing stops it",
                    child.colour.suffix()
                ));
            }
        }
        Ok(())
    }

    /// An abort that leaves the old child active (or a suspension that wins over a
    /// transition): its job is the line again, and its own newest state the floor (the
    /// savepoint that was not handed over is no more its state than a manual one).
    fn survivor(&mut self, world: &World) {
        let before = std::mem::replace(&mut self.stage, world.stage());
        if let Some(Stage::TransitioningTo(incoming)) = world.stage()
            && before != world.stage()
            && let Some(run) = world.child(incoming).and_then(|c| c.run.as_ref())
            && (run.first || run.redeploy)
            && let Some(path) = run.restore.as_ref().filter(|p| self.named.contains(*p))
        {
            // A redeploy's child created (and maybe started) by a pass that stopped before its
            // status was written, adopted now: the state the user named is the job's.
            self.floor = world.flink.files.get(path).map(|f| (f.id, path.clone()));
            self.line = (run.submitted).then(|| run.job_id.clone()).into_iter().collect();
        }
        if let Some(Stage::TransitioningTo(incoming)) = world.stage()
            && let Some(new) = world.child(incoming).filter(|c| c.created_stateless)
        {
            // A stateless transition: what the old child's job does is no state of the job's.
            let old = (world.child(incoming.other()))
                .and_then(|c| c.run.as_ref())
                .map(|r| r.job_id.clone());
            if new.run.as_ref().is_none_or(|r| !r.submitted) {
                self.floor = None;
            }
            self.line.retain(|id| Some(id) != old.as_ref());
        }
        if matches!(world.stage(), Some(Stage::Active(_) | Stage::Initializing) | None) {
            // The hand-over ended (finished, aborted, or given up for a suspension).
            self.handed = None;
        }
        if let Some(Stage::TransitioningTo(incoming)) = world.stage()
            && let Some((_, path, _)) = &self.handed
            && let Some(new) = world.child(incoming).filter(|c| !c.deleting())
            && new
                .run
                .as_ref()
                .is_some_and(|r| r.submitted && r.restore.as_ref() == Some(path))
        {
            // A stray that started from it, adopted now: handed over.
            self.handed = None;
        }
        if let Some((job_id, path, name)) = self.handed.clone() {
            let recorded = (world.snapshots.get(&name))
                .and_then(|s| s.status.as_ref())
                .is_some_and(|s| s.path.as_ref() == Some(&path));
            // (Not by a child being deleted: the next start does not read it.)
            let named = world.status().and_then(|s| s.transition_savepoint_path.as_ref()) == Some(&path)
                || (world.children.iter().flatten())
                    .filter(|c| !c.deleting())
                    .any(|c| {
                        c.object
                            .spec
                            .job
                            .as_ref()
                            .and_then(|j| j.initial_savepoint_path.as_ref())
                            == Some(&path)
                    });
            if !recorded && !named {
                // Its record went (the user deleted it) before a child started from it: the
                // next transition takes another; the old job's own state is the job's again
                // (the user dropped the savepoint).
                self.handed = None;
                let old = (world.children.iter().flatten())
                    .find(|c| c.run.as_ref().is_some_and(|r| r.job_id == job_id) && !c.deleting());
                let stateless = self.stateless_jobs.contains(&job_id);
                self.floor = (old.and_then(|c| c.newest(&world.flink)).into_iter())
                    .filter(|_| !stateless)
                    .filter_map(|p| world.flink.files.get(&p).map(|f| (f.id, p)))
                    .max();
                if old.is_some_and(|c| c.running(&world.flink)) {
                    self.line.insert(job_id);
                }
            }
        }
        let Some(Stage::Active(colour)) = world.stage() else {
            return;
        };
        if !matches!(before, Some(Stage::Savepointing(_) | Stage::TransitioningTo(_))) {
            return;
        }
        let Some(child) = world.child(colour).filter(|c| !c.deleting()) else {
            return;
        };
        // Its job (none when it is suspended before its run started).
        let job = (child.run.as_ref())
            .filter(|r| r.submitted)
            .map(|r| r.job_id.clone());
        if job.as_ref().is_some_and(|j| self.line.contains(j)) {
            return;
        }
        // Its savepoints are not handed over: as a manual savepoint, they do not raise it.
        let stateless = job.as_ref().is_some_and(|j| self.stateless_jobs.contains(j));
        self.floor = (child.newest(&world.flink).into_iter())
            .filter(|_| !stateless)
            .filter_map(|p| world.flink.files.get(&p).map(|f| (f.id, p)))
            .max();
        self.line = job.into_iter().collect();
    }

    /// Raises the floor with what the line's jobs completed (those of a child whose own spec
    /// is stateful: a child running stateless keeps none of its job's state, whatever the
    /// template says meanwhile).
    fn take_in(&mut self, world: &World) {
        for job_id in &self.line.clone() {
            let Some(job) = world.flink.jobs.get(job_id) else {
                continue;
            };
            if self.stateless_jobs.contains(job_id) {
                continue;
            }
            if let Some(id) = job.latest_checkpoint
                && let path = crate::lifecycle::model::flink::Flink::checkpoint_path(job_id, id)
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
    }

    fn check_world(&mut self, world: &World) -> Result<(), Violation> {
        let Some((floor, path)) = self.floor.clone() else {
            return Ok(());
        };
        let covers = |paths: &[String]| {
            (paths.iter()).any(|p| world.flink.files.get(p).is_some_and(|f| f.id >= floor))
        };
        if world.resource.is_none() {
            if world.children.iter().any(Option::is_some) {
                return Ok(());
            }
            // The resource and its children left: their deletions' records name its state
            // (a child running stateless records none, whatever the template said).
            let of_stateless =
                (world.flink.files.get(&path)).is_some_and(|f| self.stateless_jobs.contains(&f.job_id));
            // A state the user disposed of once the resource left is no child's to record (a
            // child whose job fails on its way out records the newest savepoint on storage).
            let dropped = self.dropped.contains(&path) && !world.flink.files.contains_key(&path);
            if !covers(&world.records) && !of_stateless && !dropped {
                return Err(format!(
                    "the FlinkBlueGreenDeployment left without a record of its newest state {path} (id {floor}): its children's deletions recorded {:?}",
                    world.records
                ));
            }
            *self = Lineage::default();
            return Ok(());
        }
        if !world.flink.files.contains_key(&path) {
            return Err(format!(
                "the newest state of the job, {path} (id {floor}), is no longer on storage"
            ));
        }
        let template = (world.object().and_then(|o| o.spec.deployment_spec()))
            .and_then(|s| s.job.as_ref())
            .and_then(|j| j.initial_savepoint_path.as_ref());
        // A child whose spec names a state the user named, and that has not started from it.
        let pending = (world.children.iter().flatten()).any(|c| {
            let initial = c
                .object
                .spec
                .job
                .as_ref()
                .and_then(|j| j.initial_savepoint_path.as_ref());
            let started = c
                .run
                .as_ref()
                .is_some_and(|r| r.submitted && r.restore.as_ref() == initial);
            !c.deleting() && !started && initial.is_some_and(|p| self.named.contains(p))
        });
        if pending
            || (world.stage() == Some(Stage::Initializing)
                && template.is_some_and(|p| self.named.contains(p)))
        {
            // The user named the state the next first child is to restore: what the job had
            // before is theirs to leave.
            return Ok(());
        }
        // A child the user deleted by hand left its state in its deletion's record.
        let mut named = world.named_paths();
        named.extend(world.held_by(&self.line));
        named.extend(world.records_by_hand.iter().cloned());
        // (And one still on its way out will record what its job leaves.)
        for child in world.children.iter().flatten().filter(|c| c.deleted_by_hand) {
            named.extend(child.newest(&world.flink));
            if child.running(&world.flink) {
                named.extend(
                    (child.job(&world.flink))
                        .and_then(|j| j.latest_checkpoint)
                        .map(|id| Flink::checkpoint_path(&child.run.as_ref().expect("a run").job_id, id)),
                );
            }
        }
        if !covers(&named) {
            return Err(format!(
                "the job's newest state {path} (id {floor}) is named nowhere the next start reads it (the resource's status, a child's spec or status, a running child's job): {named:?}"
            ));
        }
        Ok(())
    }
}

/// Whether the resource, at `stage`, has the child of `colour` run its job: the active one,
/// the incoming one, any first child.
fn adopted(stage: Option<Stage>, colour: Colour) -> bool {
    match stage {
        None | Some(Stage::Initializing) => true,
        Some(Stage::Active(c) | Stage::Savepointing(c) | Stage::TransitioningTo(c)) => c == colour,
    }
}
