//! The reasons of the Events the operator publishes about a resource: one vocabulary for
//! every kind, so that the same happening reads the same on a FlinkDeployment and a
//! FlinkSessionJob (`kubectl get events --field-selector reason=...` finds both). Names
//! shared with the Apache operator are kept as it spells them.

macro_rules! reasons {
    ($($(#[doc = $doc:literal])+ $name:ident,)+) => {
        /// Why an Event was published.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Reason {
            $($(#[doc = $doc])+ $name,)+
        }

        impl Reason {
            /// Every reason, in the order of the reference.
            pub const ALL: &'static [Reason] = &[$(Reason::$name,)+];

            /// The Event's `reason` as Kubernetes shows it.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Reason::$name => stringify!($name),)+
                }
            }

            /// What the reason means, for the reference.
            pub fn meaning(self) -> &'static str {
                match self {
                    $(Reason::$name => concat!($($doc),+).trim_ascii_start(),)+
                }
            }
        }
    };
}

/// An Event a plan asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventNote {
    pub warning: bool,
    pub reason: Reason,
    pub note: String,
}

impl EventNote {
    pub fn normal(reason: Reason, note: impl Into<String>) -> Self {
        EventNote {
            warning: false,
            reason,
            note: note.into(),
        }
    }

    pub fn warning(reason: Reason, note: impl Into<String>) -> Self {
        EventNote {
            warning: true,
            reason,
            note: note.into(),
        }
    }
}

reasons! {
    /// The spec breaks a rule of the admission webhook (which may have been bypassed); nothing is deployed from it.
    ValidationError,
    /// A job or cluster is being started for the first time, or again after an upgrade.
    Submit,
    /// Starting a job failed: the jar or Flink refused it (retried).
    SubmitFailed,
    /// A change of the spec is being applied.
    SpecChanged,
    /// A change of the spec was refused (the job keeps running as it was).
    UpdateFailed,
    /// A change of parallelism is applied in place: the job keeps running, rescaled by its
    /// scheduler, without a savepoint or a new job.
    Scaling,
    /// Flink refused a change of parallelism in place; the change is applied by an upgrade.
    ScalingFailed,
    /// The autoscaler's judgement of a running job: the parallelism each vertex needs, with
    /// its rates and utilization, and why it is not applied when it is not (advisory mode, an
    /// excluded period).
    ScalingReport,
    /// A restore was refused: no state young enough to restore from.
    RestoreRefused,
    /// The job was suspended.
    Suspended,
    /// A suspended job is being started again.
    Resume,
    /// A job is being cancelled without a savepoint.
    Cancelling,
    /// The job changed state (Flink's job state).
    JobStatusChanged,
    /// The job failed; the note says why.
    JobFailed,
    /// A failed job is being restarted (`kubernetes.operator.job.restart.failed`).
    RestartFailedJob,
    /// A job is being started from the savepoint named by `savepointRedeployNonce`.
    SavepointRedeploy,
    /// A savepoint was triggered.
    SavepointTriggered,
    /// A savepoint completed; the note names its path.
    SavepointCompleted,
    /// A savepoint failed (it may be retried).
    SavepointFailed,
    /// Savepoints beyond the history's count or age left it; their files are disposed of.
    SavepointsDisposed,
    /// Savepoints beyond the history's count or age left it; their files are kept.
    SavepointHistoryTrimmed,
    /// A checkpoint was triggered.
    CheckpointTriggered,
    /// A checkpoint completed.
    CheckpointCompleted,
    /// A checkpoint failed.
    CheckpointFailed,
    /// A FlinkStateSnapshot failed; it is tried again after a back-off unless its `backoffLimit` is reached (the note says which).
    SavepointError,
    /// A FlinkStateSnapshot of a checkpoint failed and may be tried again, or completed without a path (the note says which).
    CheckpointError,
    /// A FlinkStateSnapshot will not be taken: its job resource is gone or its job is not running.
    SnapshotAbandoned,
    /// A deleted FlinkStateSnapshot's savepoint was disposed of through Flink; the note names its path.
    SavepointDisposed,
    /// A deleted FlinkStateSnapshot's savepoint was not disposed of (a job of the namespace may still need it, and the note names who and why; or its job resource or cluster is gone or does not answer, or Flink failed); the resource is released and the note names the path left on storage.
    SavepointNotDisposed,
    /// A restore uses the newest state found (checkpoint or savepoint), named in the note.
    StateFound,
    /// A deleted job's latest checkpoint or savepoint was recorded before what pointed at it went (a FlinkStateSnapshot owned by nobody, where snapshot resources are used); the note names the path to start a new resource from.
    StateRecorded,
    /// What the job needs is not there (its JobManager Deployment, its job in the cluster).
    Missing,
    /// The JobManager Deployment does not run (crash loop, image, configuration).
    JobManagerDeploymentError,
    /// A missing JobManager Deployment is being deployed again.
    RecoverDeployment,
    /// A missing JobManager Deployment could not be recovered.
    RecoverDeploymentFailed,
    /// The JobManager of a job that ended (FINISHED, FAILED and not restarted, CANCELED) was shut down after `kubernetes.operator.jm-deployment.shutdown-ttl`; its high-availability metadata is kept.
    JobManagerShutDown,
    /// The cluster health check found the job unhealthy (too many restarts within the window, or no checkpoint progress; the note says which): its cluster is deployed again, the job restored as its upgrade mode allows.
    RestartUnhealthyJob,
    /// The cluster health check found the job unhealthy, but it cannot be restarted without losing its state (the note says why).
    RestartUnhealthyJobFailed,
    /// A deployed spec did not become stable: the last stable spec is deployed again.
    Rollback,
    /// A rollback was due but cannot be made, or a manual rollback's update failed (the note says why).
    RollbackFailed,
    /// A manual rollback started: the note names the revisions from and to, and the state restored.
    RollingBack,
    /// A manual rollback ended: the job runs the revision's spec again.
    RolledBack,
    /// A manual rollback request was refused (an unknown or pruned revision, an invalid annotation); nothing changed.
    RollbackRefused,
    /// A session job waits for its session cluster.
    SessionClusterNotReady,
    /// A resource is being deleted (the note says what happens to its job).
    Deleting,
    /// A resource's job and cluster are gone; the resource is released.
    Deleted,
    /// Cleaning up on deletion failed (retried).
    CleanupFailed,
    /// A step of the reconcile failed on the Kubernetes or Flink API (retried).
    ReconcileFailed,
    /// The Ingress of `spec.ingress` was not written: one of that name exists that the operator did not create for this resource (the note names it and its owner); it is neither taken over nor deleted.
    IngressNotOwned,
    /// The operator failed on this resource with an internal error (a bug; the note has its message): only this resource is affected, and it is retried with back-off.
    ReconcilePanicked,
    /// A blue/green deployment started its first child, or a transition to the other child (the note says from which state).
    BlueGreenTransitionStarted,
    /// A child of a blue/green deployment is being created from the transition savepoint (the note names it).
    BlueGreenChildCreated,
    /// A child of a blue/green deployment is being deleted: the old one once the new one is stable, a new one that never ran after an abort, or a leftover before its colour is started again (the note says which).
    BlueGreenChildDeleted,
    /// An ADVANCED blue/green transition's new child is running and stable: the record gates of both jobs hand over at a toggle in event time.
    BlueGreenHandOverStarted,
    /// Every record gate subtask of the old job handed over: the old job is stopped with a savepoint (so that its sinks commit what it wrote), then deleted.
    BlueGreenHandedOver,
    /// A blue/green transition waits: the active child is not running and stable, so no savepoint of it can be taken.
    BlueGreenTransitionWaiting,
    /// A blue/green transition ended: the new child runs and the old one is deleted.
    BlueGreenTransitionCompleted,
    /// A blue/green transition was aborted (the note says why); the old child is untouched and the new one suspended or deleted.
    BlueGreenTransitionAborted,
    /// A blue/green deployment is refused and nothing is deployed: one of its options or its template cannot be used, or a child's name is taken by a FlinkDeployment it does not own (the note says which).
    BlueGreenRefused,
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::Reason;

    #[test]
    fn every_reason_is_listed_once_named_as_its_variant_and_explained() {
        let mut names: Vec<&str> = Reason::ALL.iter().map(|r| r.as_str()).collect();
        for reason in Reason::ALL {
            assert_eq!(format!("{reason:?}"), reason.as_str());
            assert!(reason.meaning().ends_with('.'), "{reason}: {}", reason.meaning());
        }
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Reason::ALL.len());
    }
}
