//! The lifecycle's basic terms, which every part of it reads and which read nothing of it:
//! what both job kinds' statuses share ([`LifecycleStatus`]), the two kinds of snapshot, how
//! soon a job is looked at again, and how a message becomes an Event note.

use flink_operator_api::{
    FlinkDeploymentStatus, FlinkSessionJobStatus, RevisionStatus,
    common::{Condition, JobStatus, ReconciliationStatus, ResourceLifecycleState},
};

use crate::plan::Next;

/// Something only Flink or Kubernetes can finish is under way: look again soon.
pub const FAST: Next = Next::Progress;
/// A cluster is starting or a session cluster is awaited: the watches bring the change,
/// this is the fallback.
pub const WAIT: Next = Next::Progress;
/// Nothing is under way.
pub const SLOW: Next = Next::Steady;

/// A status that records a job's lifecycle: the fields both job kinds' statuses share.
pub trait LifecycleStatus: Clone + Default {
    fn job_status(&self) -> Option<&JobStatus>;
    fn job_status_mut(&mut self) -> &mut JobStatus;
    fn reconciliation(&self) -> Option<&ReconciliationStatus>;
    fn reconciliation_mut(&mut self) -> &mut Option<ReconciliationStatus>;
    fn revision(&self) -> Option<&RevisionStatus>;
    fn revision_mut(&mut self) -> &mut RevisionStatus;
    fn conditions(&self) -> Option<&Vec<Condition>>;
    fn error(&self) -> Option<&str>;
    fn error_mut(&mut self) -> &mut Option<String>;
    fn lifecycle_state_mut(&mut self) -> &mut Option<ResourceLifecycleState>;
    fn conditions_mut(&mut self) -> &mut Option<Vec<Condition>>;
    fn observed_generation_mut(&mut self) -> &mut Option<i64>;
}

macro_rules! lifecycle_status {
    ($status:ty) => {
        impl LifecycleStatus for $status {
            fn job_status(&self) -> Option<&JobStatus> {
                self.job_status.as_ref()
            }
            fn job_status_mut(&mut self) -> &mut JobStatus {
                self.job_status.get_or_insert_with(Default::default)
            }
            fn reconciliation(&self) -> Option<&ReconciliationStatus> {
                self.reconciliation_status.as_ref()
            }
            fn reconciliation_mut(&mut self) -> &mut Option<ReconciliationStatus> {
                &mut self.reconciliation_status
            }
            fn revision(&self) -> Option<&RevisionStatus> {
                self.revision.as_ref()
            }
            fn revision_mut(&mut self) -> &mut RevisionStatus {
                self.revision.get_or_insert_with(Default::default)
            }
            fn conditions(&self) -> Option<&Vec<Condition>> {
                self.conditions.as_ref()
            }
            fn error(&self) -> Option<&str> {
                self.error.as_deref()
            }
            fn error_mut(&mut self) -> &mut Option<String> {
                &mut self.error
            }
            fn lifecycle_state_mut(&mut self) -> &mut Option<ResourceLifecycleState> {
                &mut self.lifecycle_state
            }
            fn conditions_mut(&mut self) -> &mut Option<Vec<Condition>> {
                &mut self.conditions
            }
            fn observed_generation_mut(&mut self) -> &mut Option<i64> {
                &mut self.observed_generation
            }
        }
    };
}

lifecycle_status!(FlinkDeploymentStatus);
lifecycle_status!(FlinkSessionJobStatus);

/// The stored condition of `type_` if it says `reason` for `generation`: what a look of the
/// same generation remembers of the one before it.
pub fn said_for<'s, S: LifecycleStatus>(
    stored: &'s S,
    type_: &str,
    reason: &str,
    generation: Option<i64>,
) -> Option<&'s flink_operator_api::common::Condition> {
    stored.conditions().into_iter().flatten().find(|c| {
        c.type_.as_deref() == Some(type_)
            && c.reason.as_deref() == Some(reason)
            && c.observed_generation == generation
    })
}

/// `text` with its first letter upper-case (a status message as an Event note).
pub fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}
