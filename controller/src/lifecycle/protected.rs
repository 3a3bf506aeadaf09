//! The paths a job may still need, computed in one place: no savepoint among them is
//! disposed of, and no snapshot resource holding one is pruned, whatever a retention rule
//! (the status history's, the snapshot resources' own or the platform's caps) or a deletion
//! says. Each path is kept with why the job needs it, so that a disposal refused for it can
//! name who needs it.
//!
//! A job may still need:
//! - the state it was started from (`upgradeSavepointPath`): a restart without a newer
//!   checkpoint goes back to it, and a job started from a savepoint in NO_CLAIM mode reads
//!   its files until its first checkpoint completes;
//! - its last savepoint (`savepointInfo.lastSavepoint`): the next upgrade or resume may
//!   start from it;
//! - the state each kept revision was started from: a rollback to that revision with
//!   `flink.apache.org/rollback-restore: revision` restores it;
//! - the state a rollback in flight restores (`status.revision.rollback.restorePath`);
//! - the spec's `initialSavepointPath`: a first start, or a redeploy, restores it;
//! - for the snapshot resources' retention, every savepoint its status history still lists
//!   (the history's own trim decides about those, see [`Protected::with_history`]);
//! - while a stop-with-savepoint of its job is in flight (its trigger id recorded in
//!   `status.jobStatus.savepointInfo`), every savepoint named after that job: the stop's has
//!   no path until Flink completes it, and between Flink completing it and the job's loop
//!   recording it (a JobManager that does not answer, a stale read in between) it is the
//!   job's newest state that nothing names yet, while a FlinkStateSnapshot's deletion may
//!   be asked to dispose of it (Flink names the directory of a job's savepoints after its
//!   job id).
//!
//! Once the job's loop sees the stop complete, its path is recorded as the job's
//! `upgradeSavepointPath` and `lastSavepoint`, and so is protected as they are. A blue/green
//! deployment's children are FlinkDeployments (their paths are theirs) and its transition
//! savepoints are snapshot resources never disposed of on deletion; its template's
//! `initialSavepointPath`, the job status it shows and the transition savepoint it keeps
//! until a child started from it is stable (`status.transitionSavepointPath`, which an abort
//! that leaves no child running makes the only pointer to the job's state) are protected as
//! well ([`who_needs`]).
//!
//! Within a job's own loop the set is computed from its status, spec and revisions. A
//! FlinkStateSnapshot's deletion asks [`who_needs`] its path among every job resource of its
//! namespace (a job may have been started from a path another job's snapshot recorded), and
//! so does the savepoint history's trim before it disposes of a savepoint ([`super::records::look_up`]);
//! a path kept so is named in a `SavepointNotDisposed` Warning worded once ([`not_disposed`],
//! [`still_needed`]).

use flink_operator_api::LifecycleStatus;
use std::{
    collections::{BTreeMap, HashMap},
    sync::Arc,
};

use flink_operator_api::{
    FlinkBlueGreenDeployment, FlinkDeployment, FlinkSessionJob, FlinkStateSnapshot,
    common::{JobStatus, SnapshotTriggerType},
    keys::kinds,
};
use k8s_openapi::api::apps::v1::ControllerRevision;
use kube::ResourceExt;

use super::revisions::{self, Revision};
use crate::caches::Caches;

/// The paths a job may still need (see the module), each with why.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Protected {
    paths: BTreeMap<String, String>,
    /// The jobs with a stop-with-savepoint in flight: the start of the name Flink gives their
    /// savepoints' directories, and why (see [`Protected::stopping`]).
    stopping: Vec<(String, String)>,
}

impl Protected {
    /// The paths of the job's status, its kept revisions and its spec's `initialSavepointPath`.
    pub fn of(
        job: Option<&JobStatus>,
        revisions: Option<&[Revision]>,
        initial_savepoint_path: Option<&str>,
    ) -> Self {
        let mut protected = Self::default();
        if let Some(job) = job {
            protected.add(job.upgrade_savepoint_path.as_deref(), || {
                "the state its job was started from (status.jobStatus.upgradeSavepointPath)".to_owned()
            });
            let last = job
                .savepoint_info
                .as_ref()
                .and_then(|info| info.last_savepoint.as_ref())
                .and_then(|s| s.location.as_deref());
            protected.add(last, || {
                "its last savepoint (status.jobStatus.savepointInfo.lastSavepoint), which its next upgrade or resume may start from".to_owned()
            });
            protected.stopping(job);
        }
        for revision in revisions.into_iter().flatten() {
            protected.add(revision.started_from.as_deref(), || {
                format!(
                    "the state its revision {} was started from, which a rollback to that revision restores",
                    revision.number
                )
            });
        }
        protected.add(initial_savepoint_path, || {
            "the state its spec's job.initialSavepointPath names".to_owned()
        });
        protected
    }

    /// [`Protected::of`] a lifecycle status, with the state a rollback in flight restores.
    pub fn of_status(
        status: Option<&impl LifecycleStatus>,
        revisions: Option<&[Revision]>,
        initial_savepoint_path: Option<&str>,
    ) -> Self {
        let mut protected = Self::of(
            status.and_then(|s| s.job_status()),
            revisions,
            initial_savepoint_path,
        );
        let restore = status
            .and_then(|s| s.revision())
            .and_then(|r| r.rollback.as_ref())
            .filter(|r| r.phase == Some(flink_operator_api::RollbackPhase::RollingBack))
            .and_then(|r| r.restore_path.as_deref());
        protected.add(restore, || {
            "the state its rollback in progress restores (status.revision.rollback.restorePath)".to_owned()
        });
        protected
    }

    /// With the savepoints the job's status history lists as well: a snapshot resource's
    /// retention leaves them to the history's trim.
    pub fn with_history(mut self, job: Option<&JobStatus>) -> Self {
        let history = job
            .and_then(|job| job.savepoint_info.as_ref())
            .and_then(|info| info.savepoint_history.as_deref())
            .unwrap_or_default();
        for savepoint in history {
            self.add(savepoint.location.as_deref(), || {
                "a savepoint its status history lists (status.jobStatus.savepointInfo.savepointHistory)"
                    .to_owned()
            });
        }
        self
    }

    /// With `paths` as well: those its snapshot resources record.
    pub fn with_paths<'a>(mut self, paths: impl IntoIterator<Item = &'a str>) -> Self {
        for path in paths {
            self.add(Some(path), || {
                "a savepoint its snapshot resources record".to_owned()
            });
        }
        self
    }

    /// Whether the job may still need `path`.
    pub fn contains(&self, path: &str) -> bool {
        self.why(path).is_some()
    }

    /// Why the job may still need `path` (the first reason found), if it does.
    pub fn why(&self, path: &str) -> Option<&str> {
        let path = path.trim();
        if let Some(why) = self.paths.get(path) {
            return Some(why);
        }
        let name = path.trim_end_matches('/').rsplit('/').next().unwrap_or(path);
        (self.stopping.iter())
            .find(|(prefix, _)| name.starts_with(prefix.as_str()))
            .map(|(_, why)| why.as_str())
    }

    fn add(&mut self, path: Option<&str>, why: impl FnOnce() -> String) {
        let Some(path) = path.map(str::trim).filter(|p| !p.is_empty()) else {
            return;
        };
        if !self.paths.contains_key(path) {
            self.paths.insert(path.to_owned(), why());
        }
    }

    /// While a stop-with-savepoint of `job` is in flight (for a change or a deletion), every
    /// savepoint named after its job: the stop's path is known only once the job's loop
    /// polls it, and until then the savepoint may be on storage, the job's newest state,
    /// with only a record the user made of it to dispose of it. Flink names a savepoint's
    /// directory `savepoint-<the first 6 characters of the job id>-<random>` (as
    /// [`crate::flink::poll::savepoint_in_directory`] reads it); an earlier savepoint of the same
    /// job id is held as well until the stop settles.
    fn stopping(&mut self, job: &JobStatus) {
        let info = job.savepoint_info.as_ref();
        let in_flight = info
            .is_some_and(|i| i.trigger_id.is_some() && i.trigger_type == Some(SnapshotTriggerType::Upgrade));
        let Some(job_id) = job.job_id.as_deref().map(str::trim).filter(|id| !id.is_empty()) else {
            return;
        };
        if !in_flight {
            return;
        }
        let prefix = format!("savepoint-{}-", job_id.get(..6).unwrap_or(job_id));
        self.stopping.push((
            prefix,
            format!(
                "its job {job_id} is being stopped with a savepoint (status.jobStatus.savepointInfo.triggerId), \
                 whose path is not recorded yet: this savepoint of the job may be the one the stop wrote"
            ),
        ));
    }
}

/// The other FlinkStateSnapshots of a namespace (of `snapshots`, not `own` nor one being
/// deleted too) that record `path`, one sentence each: the files of a snapshot being deleted
/// stay while another points at them (a job's deletion, for one, trusts its own snapshot
/// resources as the record of its state).
pub fn recorded_elsewhere(path: &str, own: &str, snapshots: &[Arc<FlinkStateSnapshot>]) -> Vec<String> {
    let path = path.trim();
    if path.is_empty() {
        return Vec::new();
    }
    (snapshots.iter())
        .filter(|s| s.name_any() != own && s.metadata.deletion_timestamp.is_none())
        .filter(|s| {
            let recorded = (s.status.as_ref().and_then(|st| st.path.as_deref()))
                .or_else(|| s.spec.savepoint.as_ref().and_then(|sp| sp.path.as_deref()));
            recorded.map(str::trim) == Some(path)
        })
        .map(|s| format!("FlinkStateSnapshot {}: it records the same path", s.name_any()))
        .collect()
}

/// Who among the job resources of one namespace may still need `path`, and why: one
/// sentence each (`FlinkDeployment basic: the state its job was started from (...)`), none
/// when nobody does. `revisions` are the namespace's ControllerRevisions; each counts for
/// the resource that owns it (by uid, so that a resource re-created under the same name does
/// not inherit its predecessor's revisions).
pub fn who_needs(
    path: &str,
    deployments: &[Arc<FlinkDeployment>],
    session_jobs: &[Arc<FlinkSessionJob>],
    blue_greens: &[Arc<FlinkBlueGreenDeployment>],
    revisions: &[Arc<ControllerRevision>],
) -> Vec<String> {
    let mut by_owner: HashMap<&str, Vec<Revision>> = HashMap::new();
    for object in revisions {
        let Some(revision) = revisions::from_controller_revision(object) else {
            continue;
        };
        for owner in object.metadata.owner_references.iter().flatten() {
            by_owner
                .entry(owner.uid.as_str())
                .or_default()
                .push(revision.clone());
        }
    }
    let kept = |uid: Option<String>| uid.and_then(|uid| by_owner.get(uid.as_str())).map(Vec::as_slice);
    let mut needs = Vec::new();
    let mut note = |kind: &str, name: String, protected: Protected| {
        if let Some(why) = protected.why(path) {
            needs.push(format!("{kind} {name}: {why}"));
        }
    };
    for fd in deployments.iter().filter(|fd| fd.spec.job.is_some()) {
        let initial = fd
            .spec
            .job
            .as_ref()
            .and_then(|j| j.initial_savepoint_path.as_deref());
        let protected = Protected::of_status(fd.status.as_ref(), kept(fd.uid()), initial);
        note(kinds::FLINK_DEPLOYMENT, fd.name_any(), protected);
    }
    for sj in session_jobs {
        let initial = sj
            .spec
            .job
            .as_ref()
            .and_then(|j| j.initial_savepoint_path.as_deref());
        let protected = Protected::of_status(sj.status.as_ref(), kept(sj.uid()), initial);
        note(kinds::FLINK_SESSION_JOB, sj.name_any(), protected);
    }
    for bg in blue_greens {
        let initial = bg
            .spec
            .deployment_spec()
            .and_then(|spec| spec.job.as_ref())
            .and_then(|j| j.initial_savepoint_path.as_deref());
        let job = bg.status.as_ref().and_then(|s| s.job_status.as_ref());
        let mut protected = Protected::of(job, None, initial);
        let transition = bg
            .status
            .as_ref()
            .and_then(|s| s.transition_savepoint_path.as_deref());
        protected.add(transition, || {
            "the state of its job that its next child starts from (status.transitionSavepointPath): \
             no child that ran from it is stable yet"
                .to_owned()
        });
        note(kinds::FLINK_BLUE_GREEN_DEPLOYMENT, bg.name_any(), protected);
    }
    needs
}

/// Who among the job resources of a namespace may still need each of some paths, as
/// [`who_needs`] says: looked up in observe from the shared caches, for a decision to read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NeededBy(BTreeMap<String, Vec<String>>);

impl NeededBy {
    /// Looks `paths` up among the job resources of `namespace` (no path: no look).
    pub fn look_up<'a>(caches: &Caches, namespace: &str, paths: impl IntoIterator<Item = &'a str>) -> Self {
        let mut paths = paths.into_iter().peekable();
        if paths.peek().is_none() {
            return Self::default();
        }
        let deployments = caches.deployments.list(namespace, |_| true);
        let session_jobs = caches.session_jobs.list(namespace, |_| true);
        let blue_greens = caches.blue_greens.list(namespace, |_| true);
        let revisions = caches.revisions.list(namespace, |_| true);
        paths
            .map(|path| {
                let who = who_needs(path, &deployments, &session_jobs, &blue_greens, &revisions);
                (path.trim().to_owned(), who)
            })
            .collect()
    }

    /// Who may still need `path` (empty: nobody); None when it was not looked up.
    pub fn of(&self, path: &str) -> Option<&[String]> {
        self.0.get(path.trim()).map(Vec::as_slice)
    }
}

impl FromIterator<(String, Vec<String>)> for NeededBy {
    fn from_iter<I: IntoIterator<Item = (String, Vec<String>)>>(iter: I) -> Self {
        Self(iter.into_iter().collect())
    }
}

/// Why a savepoint is kept on storage though it was to be disposed of: the jobs that may still
/// need it (`needed_by`, from [`who_needs`]).
pub fn still_needed(needed_by: &[String]) -> String {
    format!(
        "a job may still need it, so it is kept (delete the job resource, or change what it needs, first): {}",
        needed_by.join("; ")
    )
}

/// The note of the `SavepointNotDisposed` Warning: the savepoint at `path` is left on storage,
/// and why.
pub fn not_disposed(path: &str, why: &str) -> String {
    format!("The savepoint {path} was not disposed of and is left on storage: {why}")
}

#[cfg(test)]
mod tests {
    use flink_operator_api::common::{Savepoint, SavepointInfo};

    use super::*;
    use crate::{
        lifecycle::{snapshot_resources::JobSnapshot, snapshots::history_to_look_up},
        policy::Policy,
    };

    fn savepoint(path: &str) -> Savepoint {
        Savepoint {
            location: Some(path.to_owned()),
            ..Default::default()
        }
    }

    #[test]
    fn every_path_a_job_may_still_need_is_protected() {
        let job = JobStatus {
            upgrade_savepoint_path: Some("s3://sp/started-from".into()),
            savepoint_info: Some(SavepointInfo {
                last_savepoint: Some(savepoint("s3://sp/last")),
                savepoint_history: Some(vec![savepoint("s3://sp/in-history"), savepoint("s3://sp/last")]),
                ..Default::default()
            }),
            ..Default::default()
        };
        let revisions = [Revision {
            number: 1,
            name: "job-1".into(),
            spec: serde_json::Value::Null,
            started_from: Some("s3://sp/revision-1".into()),
            started_from_ms: None,
            applied_ms: 0,
        }];
        let protected = Protected::of(Some(&job), Some(&revisions), Some("s3://sp/initial"));
        for path in [
            "s3://sp/started-from",
            "s3://sp/last",
            "s3://sp/revision-1",
            "s3://sp/initial",
        ] {
            assert!(protected.contains(path), "{path}");
        }
        assert!(!protected.contains("s3://sp/in-history"));
        assert!(!protected.contains("s3://sp/other"));
        let with_history = protected.with_history(Some(&job));
        assert!(with_history.contains("s3://sp/in-history"));
        assert!(!with_history.contains("s3://sp/other"));
        assert_eq!(Protected::of(None, None, Some(" ")), Protected::default());
    }

    /// The namespace is scanned for the history's trim only when it would dispose of some
    /// savepoint: a steady job's history costs nothing.
    #[test]
    fn a_history_is_looked_up_in_the_namespace_only_when_its_trim_disposes_of_some() {
        let now = 10 * 3_600_000;
        let history: Vec<Savepoint> = ["s3://sp/1", "s3://sp/2", "s3://sp/3"]
            .into_iter()
            .map(|path| Savepoint {
                time_stamp: Some(now - 60_000),
                ..savepoint(path)
            })
            .collect();
        let job = JobStatus {
            savepoint_info: Some(SavepointInfo {
                last_savepoint: history.last().cloned(),
                savepoint_history: Some(history),
                ..Default::default()
            }),
            ..Default::default()
        };
        let policy = |max_count, cleanup| Policy {
            history_max_count: max_count,
            history_cleanup: cleanup,
            ..Policy::default()
        };
        let own = Protected::of(Some(&job), None, None);
        let look_up = |policy: &Policy| history_to_look_up(&job, &own, &[], policy, now);
        // Within the history's count: nothing to trim, no scan.
        assert!(look_up(&policy(3, true)).is_empty());
        // Beyond it, without the cleanup: nothing is disposed of, no scan.
        assert!(look_up(&policy(1, false)).is_empty());
        // Beyond it with the cleanup: every path of the history.
        assert_eq!(look_up(&policy(1, true)), ["s3://sp/1", "s3://sp/2", "s3://sp/3"]);
        // The job's own snapshot resources hold what would leave: nothing is disposed of.
        let held = |path: &str| JobSnapshot {
            name: path.into(),
            kind: flink_operator_api::SnapshotType::Savepoint,
            trigger_type: flink_operator_api::common::SnapshotTriggerType::Periodic,
            state: crate::lifecycle::snapshot_resources::SnapshotState::Completed,
            path: Some(path.into()),
            created_ms: now,
            result_ms: Some(now),
            failures: 0,
            deleting: false,
            disposes: true,
        };
        let snapshots = [held("s3://sp/1"), held("s3://sp/2")];
        assert!(history_to_look_up(&job, &own, &snapshots, &policy(1, true), now).is_empty());
    }

    #[test]
    fn a_blue_green_deployments_kept_transition_savepoint_is_needed() {
        let bg: FlinkBlueGreenDeployment = serde_json::from_value(serde_json::json!({
            "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkBlueGreenDeployment",
            "metadata": {"name": "bg", "namespace": "ns"},
            "spec": {"template": {"spec": {"job": {"jarURI": "local:///job.jar"}}}},
            "status": {"blueGreenState": "INITIALIZING_BLUE", "transitionSavepointPath": "s3://sp/transition"}
        }))
        .expect("a blue/green deployment");
        let needs = who_needs("s3://sp/transition", &[], &[], &[Arc::new(bg)], &[]);
        assert_eq!(needs.len(), 1, "{needs:?}");
        assert!(
            needs[0].starts_with("FlinkBlueGreenDeployment bg: ")
                && needs[0].contains("transitionSavepointPath"),
            "{needs:?}"
        );
    }

    #[test]
    fn each_path_says_why_and_a_rollback_in_flight_protects_what_it_restores() {
        use flink_operator_api::{FlinkDeploymentStatus, RevisionStatus, RollbackPhase, RollbackStatus};
        let rollback = |phase| FlinkDeploymentStatus {
            job_status: Some(JobStatus {
                upgrade_savepoint_path: Some("s3://sp/started-from".into()),
                ..Default::default()
            }),
            revision: Some(RevisionStatus {
                rollback: Some(RollbackStatus {
                    restore_path: Some("s3://sp/revision-2".into()),
                    phase: Some(phase),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let rolling_back = Protected::of_status(Some(&rollback(RollbackPhase::RollingBack)), None, None);
        assert!(
            rolling_back
                .why("s3://sp/revision-2")
                .is_some_and(|why| why.contains("rollback in progress")),
            "{rolling_back:?}"
        );
        assert!(
            rolling_back
                .why(" s3://sp/started-from ")
                .is_some_and(|why| why.contains("upgradeSavepointPath")),
            "{rolling_back:?}"
        );
        // Once the rollback ended, what it restored is the job's own started-from state.
        let done = Protected::of_status(Some(&rollback(RollbackPhase::RolledBack)), None, None);
        assert!(!done.contains("s3://sp/revision-2"));
        let revision = Revision {
            number: 3,
            name: "job-3".into(),
            spec: serde_json::Value::Null,
            started_from: Some("s3://sp/started-from".into()),
            started_from_ms: None,
            applied_ms: 0,
        };
        // The first reason found is kept: the status's.
        let both = Protected::of(
            rollback(RollbackPhase::RollingBack).job_status.as_ref(),
            Some(std::slice::from_ref(&revision)),
            None,
        );
        assert!(
            both.why("s3://sp/started-from")
                .is_some_and(|w| w.contains("upgradeSavepointPath"))
        );
        let only_revision = Protected::of(None, Some(&[revision]), None);
        assert!(
            only_revision
                .why("s3://sp/started-from")
                .is_some_and(|w| w.contains("revision 3")),
            "{only_revision:?}"
        );
    }

    /// The savepoint a stop-with-savepoint wrote is the job's newest state before the job's
    /// loop has polled it (a JobManager that did not answer, a stale read): while the stop's
    /// trigger is recorded, a deletion of a record the user made of it keeps its files.
    #[test]
    fn a_savepoint_of_a_job_whose_stop_is_in_flight_is_needed_until_the_stop_settles() {
        const JOB: &str = "00000c0000000000000000000000000c";
        let session_job = |savepoint_info: serde_json::Value| {
            Arc::new(
                serde_json::from_value::<FlinkSessionJob>(serde_json::json!({
                    "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkSessionJob",
                    "metadata": {"name": "job", "namespace": "ns", "uid": "u-job"},
                    "spec": {"deploymentName": "session", "job": {"jarURI": "file:///job.jar"}},
                    "status": {"jobStatus": {"jobId": JOB, "state": "RUNNING", "savepointInfo": savepoint_info}},
                }))
                .unwrap(),
            )
        };
        let trigger = |trigger_type: &str| serde_json::json!({"triggerId": "t-1", "triggerType": trigger_type, "triggerTimestamp": 1});
        let stopping = session_job(trigger("UPGRADE"));
        // (case, job, path, whether it is needed)
        let cases = [
            (
                "the stop's savepoint",
                &stopping,
                "file:/savepoints/savepoint-00000c-5e3f0a1b2c3d",
                true,
            ),
            (
                "spelled with a trailing slash",
                &stopping,
                " s3://b/sp/savepoint-00000c-5e3f0a1b2c3d/ ",
                true,
            ),
            (
                "another job's savepoint",
                &stopping,
                "file:/savepoints/savepoint-0000aa-5e3f0a1b2c3d",
                false,
            ),
            (
                "not a savepoint's directory",
                &stopping,
                "file:/checkpoints/00000c/chk-2",
                false,
            ),
            (
                "a manual savepoint in flight is no stop",
                &session_job(trigger("MANUAL")),
                "file:/savepoints/savepoint-00000c-5e3f0a1b2c3d",
                false,
            ),
            (
                "the stop settled: its savepoint is recorded by path",
                &session_job(serde_json::json!({})),
                "file:/savepoints/savepoint-00000c-5e3f0a1b2c3d",
                false,
            ),
        ];
        for (case, job, path, needed) in cases {
            let needs = who_needs(path, &[], std::slice::from_ref(job), &[], &[]);
            assert_eq!(!needs.is_empty(), needed, "{case}: {needs:?}");
            if needed {
                assert!(
                    needs[0].starts_with("FlinkSessionJob job: ")
                        && needs[0].contains("stopped with a savepoint"),
                    "{case}: {needs:?}"
                );
            }
        }
    }

    /// A FlinkStateSnapshot being deleted keeps its files while another one names the same
    /// path (a job's own records, which its deletion trusts, among them): deleting one of
    /// two records of a savepoint is no order to destroy what the other points at.
    #[test]
    fn a_path_another_snapshot_records_is_needed() {
        let snapshot = |name: &str, path: &str, status: bool, deleting: bool| {
            let mut value = serde_json::json!({
                "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkStateSnapshot",
                "metadata": {"name": name, "namespace": "ns"},
                "spec": {"jobReference": {"kind": "FlinkSessionJob", "name": "job"},
                         "savepoint": {"path": if status { None } else { Some(path) }, "alreadyExists": !status}},
            });
            if status {
                value["status"] = serde_json::json!({"path": path, "state": "COMPLETED"});
            }
            if deleting {
                value["metadata"]["deletionTimestamp"] = serde_json::json!("2027-01-15T08:00:00Z");
            }
            Arc::new(serde_json::from_value::<flink_operator_api::FlinkStateSnapshot>(value).unwrap())
        };
        let snapshots = [
            snapshot("user-record", "s3://sp/1", false, true),
            snapshot("job-savepoint-manual-1", "s3://sp/1", true, false),
            snapshot("other", "s3://sp/2", true, false),
            snapshot("going-too", "s3://sp/3", true, true),
        ];
        let needs = recorded_elsewhere("s3://sp/1", "user-record", &snapshots);
        assert_eq!(needs.len(), 1, "{needs:?}");
        assert!(
            needs[0].starts_with("FlinkStateSnapshot job-savepoint-manual-1"),
            "{needs:?}"
        );
        // Its own record, or one that goes too, is no other.
        assert!(recorded_elsewhere("s3://sp/3", "x", &snapshots).is_empty());
        assert!(recorded_elsewhere("s3://sp/2", "other", &snapshots).is_empty());
    }
}
