//! Whether a running job's checkpoints outlive its cancellation, as its JobManager says
//! (`GET /jobs/:jobid/checkpoints/config`, field `externalization`), and what a change that
//! would cancel the job to restore its latest checkpoint does when they would not.
//!
//! Every job the operator starts is asked to retain its checkpoints on cancellation
//! (`execution.checkpointing.externalized-checkpoint-retention: RETAIN_ON_CANCELLATION`,
//! the same key in Flink 1.x and 2.x, unless the configuration sets it), but the job's own
//! code, the session cluster's configuration or the user's can say otherwise, and a job
//! submitted by an older operator may run without it. A cancellation deletes the
//! checkpoints of a job that does not retain them: the state the change meant to restore
//! would be gone, and the job would start from older state or be refused. So the job is
//! cancelled only when the JobManager reports its checkpoints retained on cancellation;
//! otherwise ([`OnCancel::Deleted`], [`OnCancel::Unknown`], [`OnCancel::NotLooked`]) it is
//! stopped with a savepoint instead, or the change waits for the job to run or is refused
//! when no savepoint can be taken ([`instead_of_cancel`]).

use crate::{
    flink::{CheckpointConfig, FlinkError, FlinkRestClient, JobId},
    policy::Policy,
};

/// What becomes of the running job's checkpoints when it is cancelled.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum OnCancel {
    /// Not asked at this look (asked only while a change of the spec is pending).
    #[default]
    NotLooked,
    /// Externalized and retained on cancellation: they outlive it.
    Retained,
    /// Deleted on cancellation (or not externalized at all); the words say which.
    Deleted(String),
    /// The configuration could not be read (why).
    Unknown(String),
}

impl OnCancel {
    /// From the JobManager's answer to `GET /jobs/:jobid/checkpoints/config`.
    pub fn of(answer: Result<CheckpointConfig, FlinkError>) -> Self {
        match answer {
            Ok(config) => match (config.externalization.enabled, config.externalization.delete_on_cancellation) {
                (true, false) => OnCancel::Retained,
                (true, true) => OnCancel::Deleted(
                    "the job's checkpoints are deleted when it is cancelled (DELETE_ON_CANCELLATION)".to_owned(),
                ),
                (false, _) => OnCancel::Deleted(
                    "the job's checkpoints are not retained: they are deleted when it is cancelled (NO_EXTERNALIZED_CHECKPOINTS)"
                        .to_owned(),
                ),
            },
            Err(e) => OnCancel::Unknown(format!(
                "whether the job's checkpoints outlive its cancellation is unknown: its checkpoint configuration cannot be read ({e})"
            )),
        }
    }

    /// Why a cancellation would lose the checkpoint; None when it would not.
    pub fn loses_checkpoint(&self) -> Option<String> {
        match self {
            OnCancel::Retained => None,
            OnCancel::Deleted(why) | OnCancel::Unknown(why) => Some(why.clone()),
            OnCancel::NotLooked => {
                Some("whether the job's checkpoints outlive its cancellation was not looked up".to_owned())
            }
        }
    }
}

/// Asks the JobManager what becomes of `job_id`'s checkpoints on cancellation.
pub async fn look(rest: &FlinkRestClient, job_id: &JobId) -> OnCancel {
    OnCancel::of(rest.checkpoint_config(job_id).await)
}

/// Whether a look asks for it: the job is stateful and a change of its spec is pending
/// (`metadata.generation` ahead of `status.observedGeneration`), or the autoscaler may change
/// it; otherwise a steady job costs no extra call.
pub fn wanted(
    stateful: bool,
    generation: Option<i64>,
    observed_generation: Option<i64>,
    policy: &Policy,
) -> bool {
    stateful
        && (generation != observed_generation
            || (policy.autoscaler.enabled && policy.autoscaler.scaling_enabled))
}

/// What a change does instead of cancelling a job whose checkpoints would not outlive the
/// cancellation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Instead {
    /// Stop it with a savepoint (it runs, and one can be taken).
    Savepoint,
    /// Wait for it to run, then stop it with a savepoint.
    WaitForRunning,
    /// Refuse the change: no savepoint can be taken; the words say why, for the user.
    Refuse(String),
}

/// What a change does instead of a cancellation that would lose the checkpoint (`why`), for
/// a job that is `running` or not: a savepoint when one can be taken
/// (`kubernetes.operator.job.upgrade.take-savepoint` and a savepoint directory, as a
/// last-state change whose checkpoint is too old), else a refusal naming what to do.
pub fn instead_of_cancel(why: &str, running: bool, policy: &Policy) -> Instead {
    match (policy.take_savepoint, &policy.savepoint_dir, running) {
        (true, Some(_), true) => Instead::Savepoint,
        (true, Some(_), false) => Instead::WaitForRunning,
        (take, dir, _) => Instead::Refuse(format!(
            "{why}, so cancelling it would lose the state to restore, and no savepoint is taken instead: {}; \
             set execution.checkpointing.externalized-checkpoint-retention: RETAIN_ON_CANCELLATION for the job \
             (it applies from its next start), or use upgradeMode stateless",
            if !take {
                "kubernetes.operator.job.upgrade.take-savepoint is false"
            } else if dir.is_none() {
                "execution.checkpointing.savepoint-dir is not set"
            } else {
                "the job is not running"
            }
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flink::Externalization;

    fn config(enabled: bool, delete: bool) -> Result<CheckpointConfig, FlinkError> {
        Ok(CheckpointConfig {
            externalization: Externalization {
                enabled,
                delete_on_cancellation: delete,
            },
            ..Default::default()
        })
    }

    #[test]
    fn only_checkpoints_externalized_and_retained_on_cancellation_outlive_it() {
        assert_eq!(OnCancel::of(config(true, false)), OnCancel::Retained);
        assert!(
            matches!(OnCancel::of(config(true, true)), OnCancel::Deleted(why) if why.contains("DELETE_ON_CANCELLATION"))
        );
        assert!(
            matches!(OnCancel::of(config(false, false)), OnCancel::Deleted(why) if why.contains("NO_EXTERNALIZED_CHECKPOINTS"))
        );
        // Flink's answer as 1.20 and 2.x give it.
        let answer: CheckpointConfig = serde_json::from_str(
            r#"{"mode":"exactly_once","interval":1000,"timeout":600000,"externalization":{"enabled":true,"delete_on_cancellation":false},"state_backend":"HashMapStateBackend","checkpoint_storage":"FileSystemCheckpointStorage"}"#,
        )
        .expect("checkpoint config");
        assert_eq!(OnCancel::of(Ok(answer)), OnCancel::Retained);
        // Without the field, nothing says they are retained.
        let bare: CheckpointConfig = serde_json::from_str(r#"{"mode":"exactly_once"}"#).expect("config");
        assert!(matches!(OnCancel::of(Ok(bare)), OnCancel::Deleted(_)));
        let unknown = OnCancel::of(Err(FlinkError::Timeout {
            url: "http://jm:8081/jobs/j/checkpoints/config".into(),
            after: std::time::Duration::from_secs(10),
        }));
        assert!(matches!(&unknown, OnCancel::Unknown(why) if why.contains("cannot be read")));
        // Only a retained one lets a cancellation go ahead.
        for on_cancel in [OnCancel::NotLooked, unknown, OnCancel::of(config(true, true))] {
            assert!(on_cancel.loses_checkpoint().is_some(), "{on_cancel:?}");
        }
        assert_eq!(OnCancel::Retained.loses_checkpoint(), None);
    }

    #[test]
    fn a_cancellation_that_would_lose_the_checkpoint_becomes_a_savepoint_when_one_can_be_taken() {
        let dir = Policy {
            savepoint_dir: Some("file:/savepoints".into()),
            ..Policy::default()
        };
        let no_dir = Policy::default();
        let no_take = Policy {
            take_savepoint: false,
            ..dir.clone()
        };
        // (policy, running) -> instead (None: refused, naming this)
        let cases: Vec<(&Policy, bool, Result<Instead, &str>)> = vec![
            (&dir, true, Ok(Instead::Savepoint)),
            (&dir, false, Ok(Instead::WaitForRunning)),
            (
                &no_dir,
                true,
                Err("execution.checkpointing.savepoint-dir is not set"),
            ),
            (&no_take, true, Err("take-savepoint is false")),
            (&no_take, false, Err("take-savepoint is false")),
        ];
        for (policy, running, expected) in cases {
            let instead = instead_of_cancel("they are deleted", running, policy);
            match expected {
                Ok(expected) => assert_eq!(instead, expected, "running={running}"),
                Err(named) => {
                    let Instead::Refuse(note) = &instead else {
                        panic!("refused, not {instead:?}")
                    };
                    assert!(
                        note.contains(named)
                            && note.contains("they are deleted")
                            && note.contains("RETAIN_ON_CANCELLATION"),
                        "{note}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_configuration_is_asked_only_while_a_change_of_a_stateful_job_is_pending() {
        let policy = Policy::default();
        assert!(wanted(true, Some(2), Some(1), &policy));
        assert!(!wanted(true, Some(2), Some(2), &policy));
        assert!(!wanted(false, Some(2), Some(1), &policy));
    }
}
