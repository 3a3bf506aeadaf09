//! What the lifecycle says, once for every kind: the messages and Event reasons of its
//! stops, waits, refusals and commits. What differs between jobs is a parameter: the job's
//! id (how a message names it) and what the change is ([`Change`]: an upgrade or a
//! suspension). What only a kind does (a cluster deployed, a jar submitted) it words itself.

use super::{
    kind::{Cause, Refusal, Restore, Wait},
    restore::{self, RestorableState},
};
use crate::{conditions::Phase, events::Reason};

/// What a spec change is, as said in messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Upgrade,
    Suspension,
}

impl Change {
    pub fn of(suspending: bool) -> Self {
        if suspending {
            Change::Suspension
        } else {
            Change::Upgrade
        }
    }

    /// "upgrade", "suspension".
    pub fn noun(self) -> &'static str {
        match self {
            Change::Upgrade => "upgrade",
            Change::Suspension => "suspension",
        }
    }

    /// "upgrading", "suspending".
    pub fn doing(self) -> &'static str {
        match self {
            Change::Upgrade => "upgrading",
            Change::Suspension => "suspending",
        }
    }
}

/// How a message names the job: by its recorded id, once it has one.
pub fn job(job_id: &str) -> String {
    if job_id.is_empty() {
        "the job".to_owned()
    } else {
        format!("job {job_id}")
    }
}

/// The Event of a change of parallelism applied in place.
pub fn rescaling(change: &super::rescale::Rescale) -> String {
    format!(
        "Rescaling {} in place ({}): it goes on from its latest checkpoint under the same id, without a savepoint",
        job(&change.job_id),
        change.to.describe_from(&change.from)
    )
}

/// The condition message of a stop-with-savepoint sent for a change.
pub fn stopping(job_id: &str, change: Change) -> String {
    format!(
        "stopping {} with a savepoint for the {}",
        job(job_id),
        change.noun()
    )
}

/// The phase and the message of a wait, and whether the change is under way (UPGRADING):
/// the job is being ended for it.
pub fn wait(what: Wait, job_id: &str, state: &str) -> (Phase, String, bool) {
    let job = job(job_id);
    match what {
        Wait::ForSnapshot => (
            Phase::Updating,
            "waiting for the pending manual or periodic snapshot before changing the job".to_owned(),
            false,
        ),
        Wait::ForRunning => (
            Phase::Updating,
            format!("waiting for {job} to be RUNNING to take its savepoint (it is {state})"),
            true,
        ),
        Wait::ForCancel => (
            Phase::Updating,
            format!("waiting for {job} to be cancelled"),
            true,
        ),
        Wait::ForCheckpoint => (
            Phase::Updating,
            format!("reading the latest checkpoint of {job}"),
            false,
        ),
        Wait::ForCheckpointToRestart => (
            Phase::Failed,
            format!("{job} FAILED; reading its latest checkpoint to restart it"),
            false,
        ),
    }
}

/// What a refusal is about, as its message says it.
pub struct Refused<'s> {
    pub change: Change,
    pub job_id: &'s str,
    /// The job's state as Flink reports it now.
    pub state: &'s str,
    /// The newest state known of the job (its age said).
    pub newest: Option<RestorableState>,
    pub now_ms: i64,
}

/// The phase and the note of a refusal: `Phase::Failed` for a restart, which leaves the
/// job FAILED, else `Phase::UpdateFailed`.
pub fn refusal(refusal: Refusal, of: &Refused<'_>) -> (Phase, String) {
    let doing = of.change.doing();
    let job = job(of.job_id);
    let state = of.state;
    let note = match refusal {
        Refusal::Said(note) => note,
        Refusal::StopGaveUp(why) => {
            format!("{doing}: {why}; {job} keeps running with the previous spec")
        }
        Refusal::Ending(why) => {
            let newest = (of.newest.as_ref())
                .map(|s| format!("; the newest known state is {}", restore::age_note(s, of.now_ms)))
                .unwrap_or_default();
            format!("{doing}: {job} is {state}{newest}: {why}")
        }
        Refusal::NotCancelled(why) => format!(
            "{doing} without a savepoint: {}; {job} keeps running",
            why.as_deref()
                .unwrap_or("no checkpoint or savepoint of the job is known yet")
        ),
        Refusal::Ended(why) => format!("{doing}: {job} ended ({state}): {why}"),
        Refusal::GoneWithoutCheckpoint(reason) => format!(
            "{doing}: {job} is gone and its latest checkpoint is unknown ({reason}); manual restore required"
        ),
        Refusal::Restart(why) => {
            return (Phase::Failed, format!("restarting the failed {job}: {why}"));
        }
    };
    (Phase::UpdateFailed, note)
}

/// The reason and the message of a spec committed for `cause` with the state it starts
/// from: the kind's condition message, and its Event's note capitalised (None: the kind's
/// start says it all, as for a first start or a spec recorded while suspended).
pub fn committed(cause: &Cause, restore: &Restore, change: Change, now_ms: i64) -> Option<(Reason, String)> {
    let doing = change.doing();
    let restored = match restore {
        Restore::State(state) => Some(restore::age_note(state, now_ms)),
        _ => None,
    };
    let suspending = change == Change::Suspension;
    let (reason, note) = match cause {
        Cause::FirstStart | Cause::WhileSuspended => return None,
        Cause::WithoutState => (Reason::SpecChanged, format!("{doing} the job without state")),
        Cause::KeepingLastState => (
            Reason::SpecChanged,
            format!("{doing}: the latest checkpoint stays in the high-availability metadata"),
        ),
        Cause::Savepoint => (
            Reason::SpecChanged,
            match restored {
                Some(state) => format!("{doing}: the savepoint is recorded, {state}"),
                None => format!("{doing}: the savepoint is recorded"),
            },
        ),
        Cause::Ended => match (restore, suspending) {
            (Restore::State(s), true) => (
                Reason::StateFound,
                format!("suspending the stopped job; it resumes from {}", s.path),
            ),
            (_, true) => (
                Reason::SpecChanged,
                "suspending the stopped job; no state of it is known".to_owned(),
            ),
            (Restore::State(_), false) => (
                Reason::StateFound,
                format!("{doing}, restoring {}", restored.unwrap_or_default()),
            ),
            (_, false) => (Reason::SpecChanged, format!("{doing} without state")),
        },
        Cause::FreshSavepoint => (
            Reason::StateFound,
            format!(
                "{doing}: the job is not running; restoring {}, younger than kubernetes.operator.job.upgrade.savepoint.max-age",
                restored.unwrap_or_default()
            ),
        ),
        Cause::Resume => (
            Reason::Resume,
            match restore {
                Restore::Nothing => "resuming the job without state".to_owned(),
                Restore::State(_) => format!("resuming the job from {}", restored.unwrap_or_default()),
                Restore::LastState => {
                    "resuming the job from the latest checkpoint in its high-availability metadata".to_owned()
                }
            },
        ),
        Cause::Redeploy(path) => (
            Reason::SavepointRedeploy,
            format!("redeploying from spec.job.initialSavepointPath {path} without taking a savepoint"),
        ),
        Cause::NeverRan => (
            Reason::SpecChanged,
            format!("{doing}: the previous job never ran, so the new one starts from the same state"),
        ),
        Cause::Restart => (
            Reason::RestartFailedJob,
            match &restored {
                Some(age) => format!("restarting the failed job, restoring {age}"),
                None => "restarting the failed job without state".to_owned(),
            },
        ),
    };
    Some((reason, note))
}
