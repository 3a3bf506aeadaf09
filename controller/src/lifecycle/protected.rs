//! The paths a job may still need, computed in one place: no savepoint among them is
//! disposed of, and no snapshot resource holding one is pruned, whatever a retention rule
//! (the status history's, the snapshot resources' own or the platform's caps) says.
//!
//! A job may still need:
//! - the state it was started from (`upgradeSavepointPath`): a restart without a newer
//!   checkpoint goes back to it;
//! - its last savepoint (`savepointInfo.lastSavepoint`): the next upgrade or resume may
//!   start from it;
//! - the state each kept revision was started from: a manual rollback to that revision
//!   restores it;
//! - the spec's `initialSavepointPath`: a first start, or a redeploy, restores it;
//! - for the snapshot resources' retention, every savepoint its status history still lists
//!   (the history's own trim decides about those, see [`Protected::with_history`]).

use std::collections::BTreeSet;

use flink_operator_api::common::JobStatus;

use super::revisions::Revision;

/// The paths a job may still need (see the module).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Protected(BTreeSet<String>);

impl Protected {
    /// The paths of the job's status, its kept revisions and its spec's `initialSavepointPath`.
    pub fn of(
        job: Option<&JobStatus>,
        revisions: Option<&[Revision]>,
        initial_savepoint_path: Option<&str>,
    ) -> Self {
        let status = job.into_iter().flat_map(|job| {
            let last = job
                .savepoint_info
                .as_ref()
                .and_then(|info| info.last_savepoint.as_ref())
                .and_then(|s| s.location.as_deref());
            [job.upgrade_savepoint_path.as_deref(), last]
        });
        let revisions = revisions
            .into_iter()
            .flatten()
            .map(|revision| revision.started_from.as_deref());
        Self(
            status
                .chain(revisions)
                .chain([initial_savepoint_path])
                .flatten()
                .map(str::trim)
                .filter(|path| !path.is_empty())
                .map(str::to_owned)
                .collect(),
        )
    }

    /// With the savepoints the job's status history lists as well: a snapshot resource's
    /// retention leaves them to the history's trim.
    pub fn with_history(mut self, job: Option<&JobStatus>) -> Self {
        let history = job
            .and_then(|job| job.savepoint_info.as_ref())
            .and_then(|info| info.savepoint_history.as_deref())
            .unwrap_or_default();
        self.0.extend(
            history
                .iter()
                .filter_map(|s| s.location.as_deref())
                .filter(|path| !path.trim().is_empty())
                .map(|path| path.trim().to_owned()),
        );
        self
    }

    /// With `paths` as well.
    pub fn with_paths<'a>(mut self, paths: impl IntoIterator<Item = &'a str>) -> Self {
        self.0.extend(
            paths
                .into_iter()
                .map(str::trim)
                .filter(|path| !path.is_empty())
                .map(str::to_owned),
        );
        self
    }

    /// Whether the job may still need `path`.
    pub fn contains(&self, path: &str) -> bool {
        self.0.contains(path.trim())
    }
}

#[cfg(test)]
mod tests {
    use flink_operator_api::common::{Savepoint, SavepointInfo};

    use super::*;

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
}
