//! A job named on the command line, `KIND/NAME`, as `flink-operator history`/`rollback` and
//! `kubectl flink` take it.

use flink_operator_api::JobKind;

/// The spellings of a job's kind accepted in `KIND/NAME` (compared ignoring case), as
/// kubectl accepts a kind's singular, plural and short names.
const KIND_NAMES: &[(&str, JobKind)] = &[
    ("flinkdeployment", JobKind::FlinkDeployment),
    ("flinkdeployments", JobKind::FlinkDeployment),
    ("flinkdep", JobKind::FlinkDeployment),
    ("flinksessionjob", JobKind::FlinkSessionJob),
    ("flinksessionjobs", JobKind::FlinkSessionJob),
    ("sessionjob", JobKind::FlinkSessionJob),
];
/// A job named on the command line: `KIND/NAME`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobRef {
    pub kind: JobKind,
    pub name: String,
}

/// Parses `KIND/NAME` (see [`KIND_NAMES`]).
pub fn parse_job_ref(text: &str) -> Result<JobRef, String> {
    let accepted = || {
        KIND_NAMES
            .iter()
            .map(|(name, _)| *name)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let Some((kind, name)) = text.split_once('/') else {
        return Err(format!(
            "expected KIND/NAME, e.g. flinkdeployment/my-job (KIND one of {})",
            accepted()
        ));
    };
    let Some(kind) = KIND_NAMES
        .iter()
        .find(|(known, _)| known.eq_ignore_ascii_case(kind))
        .map(|(_, kind)| *kind)
    else {
        return Err(format!("unknown kind {kind:?}: expected one of {}", accepted()));
    };
    if name.is_empty() || name.contains('/') {
        return Err(format!("expected KIND/NAME, got {text:?}"));
    }
    Ok(JobRef {
        kind,
        name: name.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_refs_are_parsed() {
        let deployment = |name: &str| {
            Ok(JobRef {
                kind: JobKind::FlinkDeployment,
                name: name.to_owned(),
            })
        };
        let session_job = |name: &str| {
            Ok(JobRef {
                kind: JobKind::FlinkSessionJob,
                name: name.to_owned(),
            })
        };
        let cases: &[(&str, Result<JobRef, ()>)] = &[
            ("flinkdeployment/a", deployment("a")),
            ("flinkdeployments/a", deployment("a")),
            ("flinkdep/a", deployment("a")),
            ("FlinkDeployment/basic", deployment("basic")),
            ("FLINKDEP/a", deployment("a")),
            ("flinksessionjob/j", session_job("j")),
            ("flinksessionjobs/j", session_job("j")),
            ("sessionjob/j", session_job("j")),
            ("SessionJob/j", session_job("j")),
            ("deployment/a", Err(())),
            ("flinkdeployment", Err(())),
            ("flinkdeployment/", Err(())),
            ("flinkdeployment/a/b", Err(())),
            ("/a", Err(())),
        ];
        for (text, expected) in cases {
            assert_eq!(&parse_job_ref(text).map_err(|_| ()), expected, "{text}");
        }
    }

    #[test]
    fn an_unknown_kind_names_the_accepted_ones() {
        let error = parse_job_ref("deploy/a").err().unwrap_or_default();
        for accepted in ["flinkdeployment", "flinkdep", "flinksessionjobs", "sessionjob"] {
            assert!(error.contains(accepted), "{error}");
        }
    }
}
