//! A manual rollback as the user asks for it, with annotations on a FlinkDeployment or
//! FlinkSessionJob (`flink.apache.org/rollback-to-revision`, and
//! `flink.apache.org/rollback-restore`). Read the same way by the webhook, which refuses a
//! malformed request at admission (a `kubectl annotate` too, which changes no spec), and by
//! the operator, which refuses it when the webhook was bypassed. Whether the revision is
//! kept only the operator can tell.

use std::collections::BTreeMap;

use super::Violation;
use crate::keys::annotations;

/// A rollback the user asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RollbackRequest {
    /// The revision to roll back to.
    pub to: i64,
    /// `flink.apache.org/rollback-restore: revision`: restore the state revision `to` was
    /// started from, rather than the state taken when the running job stops.
    pub restore_from_revision_state: bool,
}

/// Why a rollback request cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    #[error(
        "The annotation {} is {value:?}, which is not a revision number. Set it to the positive \
         whole number of a kept revision (e.g. \"2\"), or remove it.",
        annotations::ROLLBACK_TO_REVISION
    )]
    NotARevision { value: String },
    #[error(
        "The annotation {} is {value:?}, which is not understood. Set it to {:?} to restore the \
         state revision {to} was started from, or remove it to restore the state taken when the \
         running job stops.",
        annotations::ROLLBACK_RESTORE,
        annotations::ROLLBACK_RESTORE_REVISION
    )]
    UnknownRestore { to: i64, value: String },
}

impl RequestError {
    /// The refusal as the webhook words it: the annotation as the field.
    pub fn violation(&self) -> Violation {
        let key = match self {
            RequestError::NotARevision { .. } => annotations::ROLLBACK_TO_REVISION,
            RequestError::UnknownRestore { .. } => annotations::ROLLBACK_RESTORE,
        };
        Violation::new(format!("metadata.annotations[{key}]"), self.to_string())
    }
}

/// The rollback `annotations` ask for: none without `flink.apache.org/rollback-to-revision`.
pub fn request(
    annotations: Option<&BTreeMap<String, String>>,
) -> Result<Option<RollbackRequest>, RequestError> {
    let Some(annotations) = annotations else {
        return Ok(None);
    };
    let Some(value) = annotations.get(annotations::ROLLBACK_TO_REVISION) else {
        return Ok(None);
    };
    let digits = value.trim();
    let to = digits
        .parse::<i64>()
        .ok()
        .filter(|n| *n > 0 && digits.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(|| RequestError::NotARevision { value: value.clone() })?;
    let restore_from_revision_state = match annotations.get(annotations::ROLLBACK_RESTORE) {
        None => false,
        Some(restore) if restore.trim() == annotations::ROLLBACK_RESTORE_REVISION => true,
        Some(restore) => {
            return Err(RequestError::UnknownRestore {
                to,
                value: restore.clone(),
            });
        }
    };
    Ok(Some(RollbackRequest {
        to,
        restore_from_revision_state,
    }))
}

/// The violations of the rollback request in `annotations` (none, or one).
pub fn violations(annotations: Option<&BTreeMap<String, String>>) -> Vec<Violation> {
    request(annotations)
        .err()
        .map(|e| e.violation())
        .into_iter()
        .collect()
}
