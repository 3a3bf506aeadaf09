//! What a key does where it is set: the warnings that a key the operator accepts but does not
//! act on gets, so that no setting a user wrote is silently ignored. The webhook returns them
//! as admission warnings (kubectl prints them), and the operator logs them for its own
//! configuration file when it starts.

use super::{SetIn, ignored, option};
use crate::keys::{flink, operator};

/// Where a key was set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// The operator configuration file (or one of its overlays).
    OperatorFile,
    /// A FlinkDeployment's or FlinkSessionJob's `spec.flinkConfiguration` (a blue/green
    /// template's included: it becomes a FlinkDeployment's).
    Resource,
    /// A FlinkBlueGreenDeployment's `spec.configuration`.
    BlueGreenConfiguration,
}

/// The older prefix of the autoscaler's keys, still read by the Apache operator.
const AUTOSCALER_LEGACY_PREFIX: &str = "kubernetes.operator.job.autoscaler.";

/// Why `key`, set in `place`, has no effect; None when the operator acts on it there, or when
/// it is not the operator's key (Flink's own keys go to Flink).
pub fn no_effect(key: &str, place: Place) -> Option<String> {
    if crate::keys::autoscaler::READ.contains(&key) {
        return None;
    }
    if key.starts_with(flink::AUTOSCALER_PREFIX) || key.starts_with(AUTOSCALER_LEGACY_PREFIX) {
        return Some(
            "has no effect: this key of the job autoscaler is not read (its keys are checked; the \
             autoscaler reads only the job.autoscaler keys of its window, utilization, bounds, \
             scale-down interval, catch-up and restart time, excluded periods and vertices, \
             history and observed scalability)"
                .to_owned(),
        );
    }
    if !key.starts_with(operator::PREFIX) && place != Place::BlueGreenConfiguration {
        return None;
    }
    if let Some(ignored) = ignored(key) {
        return Some(if ignored.note.is_empty() {
            "has no effect: this operator accepts the key for compatibility but does not act on it".to_owned()
        } else {
            format!(
                "has no effect: this operator accepts the key for compatibility but does not act on \
                 it ({})",
                ignored.note
            )
        });
    }
    let Some(known) = option(key) else {
        // The overlays' keys are the operator file's own way of scoping a key.
        if place == Place::OperatorFile && key.starts_with(operator::DEFAULT_CONFIGURATION_PREFIX) {
            return None;
        }
        return Some("has no effect: it is not a key this operator knows (misspelt?)".to_owned());
    };
    let acts = match (known.set_in, place) {
        (SetIn::BlueGreenConfiguration | SetIn::ByTheOperator, Place::OperatorFile) => false,
        (_, Place::OperatorFile) => true,
        (SetIn::Resource, Place::Resource) => true,
        (SetIn::BlueGreenConfiguration, Place::BlueGreenConfiguration) => true,
        (SetIn::ByTheOperator, _) => false,
        _ => false,
    };
    (!acts).then(|| {
        format!(
            "has no effect here: it is read from the {}",
            known.set_in.describe()
        )
    })
}

/// The key an operator-file entry sets: the key itself, or the one an overlay scopes.
pub fn overlaid_key(key: &str) -> &str {
    [
        operator::DEFAULT_CONFIGURATION_NAMESPACE_PREFIX,
        operator::DEFAULT_CONFIGURATION_FLINK_VERSION_PREFIX,
    ]
    .iter()
    .find_map(|prefix| key.strip_prefix(prefix))
    .and_then(|scoped| scoped.split_once('.'))
    .map_or(key, |(_, key)| key)
}

/// One warning for each key of `config` (set at `path`, e.g. `spec.flinkConfiguration`; empty
/// for the operator file, whose keys are their own path) that has no effect there.
pub fn warnings<'a>(
    path: &'a str,
    place: Place,
    config: impl IntoIterator<Item = &'a String> + 'a,
) -> impl Iterator<Item = String> + 'a {
    config.into_iter().filter_map(move |key| {
        let scoped = match place {
            Place::OperatorFile => overlaid_key(key),
            _ => key,
        };
        no_effect(scoped, place).map(|why| match path {
            "" => format!("{key}: {why}"),
            path => format!("{path}.{key}: {why}"),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::bluegreen;

    #[test]
    fn each_key_is_warned_about_where_it_has_no_effect() {
        let cases: &[(&str, Place, Option<&str>)] = &[
            (operator::JOB_RESTART_FAILED, Place::Resource, None),
            (operator::JOB_RESTART_FAILED, Place::OperatorFile, None),
            ("parallelism.default", Place::Resource, None),
            (
                operator::CHECKPOINT_TRIGGER_GRACE_PERIOD,
                Place::Resource,
                Some("does not act on it"),
            ),
            (operator::SAVEPOINT_FORMAT_TYPE, Place::Resource, None),
            (
                operator::RETRY_MAX_ATTEMPTS,
                Place::OperatorFile,
                Some("does not act on it"),
            ),
            ("job.autoscaler.enabled", Place::Resource, None),
            (
                "job.autoscaler.memory.tuning.enabled",
                Place::Resource,
                Some("has no effect: this key of the job autoscaler is not read"),
            ),
            (
                "kubernetes.operator.job.autoscaler.enabled",
                Place::OperatorFile,
                Some("has no effect"),
            ),
            (
                "kubernetes.operator.job.restart.faild",
                Place::Resource,
                Some("misspelt"),
            ),
            (
                operator::LEADER_ELECTION_ENABLED,
                Place::Resource,
                Some("operator configuration file"),
            ),
            (
                operator::USER_ARTIFACTS_ALLOWED_SCHEMES,
                Place::Resource,
                Some("namespace overlay"),
            ),
            (bluegreen::ABORT_GRACE_PERIOD, Place::BlueGreenConfiguration, None),
            (
                bluegreen::ABORT_GRACE_PERIOD,
                Place::Resource,
                Some("spec.configuration"),
            ),
            (
                "parallelism.default",
                Place::BlueGreenConfiguration,
                Some("misspelt"),
            ),
            (
                "kubernetes.operator.default-configuration.namespace.team-a.kubernetes.operator.job.restart.failed",
                Place::OperatorFile,
                None,
            ),
        ];
        for (key, place, expected) in cases {
            let got = warnings("at", *place, [&(*key).to_owned()]).next();
            match (expected, &got) {
                (None, None) => {}
                (Some(part), Some(warning)) => {
                    assert!(warning.contains(part), "{key} {place:?}: {warning}");
                    assert!(warning.starts_with(&format!("at.{key}: ")), "{warning}");
                }
                _ => panic!("{key} {place:?}: expected {expected:?}, got {got:?}"),
            }
        }
    }

    /// Every key of the tables either acts where it is set or is warned about there: a key
    /// added to the table of ignored ones is warned about without more code, and one the code
    /// acts on is never.
    #[test]
    fn every_key_of_the_tables_acts_or_is_warned_about_in_every_place() {
        let places = [
            Place::OperatorFile,
            Place::Resource,
            Place::BlueGreenConfiguration,
        ];
        for ignored in super::super::IGNORED_OPTIONS {
            for place in places {
                assert!(
                    no_effect(ignored.key, place).is_some(),
                    "{} {place:?}",
                    ignored.key
                );
            }
        }
        for known in super::super::OPTIONS {
            let acts_in = |place| no_effect(known.key, place).is_none();
            let expected = match known.set_in {
                SetIn::OperatorFile | SetIn::OperatorAndNamespace | SetIn::Platform => [true, false, false],
                SetIn::Resource => [true, true, false],
                SetIn::BlueGreenConfiguration => [false, false, true],
                SetIn::ByTheOperator => [false, false, false],
            };
            assert_eq!(places.map(acts_in), expected, "{}", known.key);
        }
    }

    #[test]
    fn an_overlay_is_judged_by_the_key_it_scopes() {
        let ignored = format!(
            "{}team-a.{}",
            operator::DEFAULT_CONFIGURATION_NAMESPACE_PREFIX,
            operator::RETRY_MAX_ATTEMPTS
        );
        assert_eq!(overlaid_key(&ignored), operator::RETRY_MAX_ATTEMPTS);
        assert!(warnings("file", Place::OperatorFile, [&ignored]).next().is_some());
        let versioned = format!(
            "{}v1_20+.{}",
            operator::DEFAULT_CONFIGURATION_FLINK_VERSION_PREFIX,
            operator::JOB_RESTART_FAILED
        );
        assert_eq!(overlaid_key(&versioned), operator::JOB_RESTART_FAILED);
        assert!(
            warnings("file", Place::OperatorFile, [&versioned])
                .next()
                .is_none()
        );
    }
}
