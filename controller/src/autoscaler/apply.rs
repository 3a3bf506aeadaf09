//! How the autoscaler's decisions reach the job: as parallelism overrides the operator keeps
//! in the spec it runs, apart from the user's.
//!
//! The overrides live under the operator key
//! [`AUTOSCALER_PARALLELISM_OVERRIDES`](flink_operator_api::keys::operator::AUTOSCALER_PARALLELISM_OVERRIDES)
//! of the spec the lifecycle acts on, never of the resource's own spec. Flink is given them
//! over `pipeline.jobvertex-parallelism-overrides`, and the lifecycle takes a change of them
//! as any change of parallelism: in place where the cluster can rescale ([`crate::lifecycle::rescale`]),
//! else by an upgrade. Once applied they are in `lastReconciledSpec`, which carries them to
//! the next look (and across a restart of the operator). A revision holds no operator key, so
//! the autoscaler's changes are not revisions and a rollback is about the user's spec.

use std::{borrow::Cow, collections::BTreeMap};

use flink_operator_api::common::ReconciliationStatus;

use super::{history::ScalingEntry, memory::Judgement};
use crate::policy::autoscaler::{AutoscalerOptions, Retention};
use crate::resources::parallelism::{self, Parallelism};
use flink_operator_api::FlinkSpec;

/// The overrides the job is to run with: those recorded, with this look's `changes` over them
/// when scaling is on. None at all when the autoscaler is off (its overrides are removed),
/// before the first start, after a new `job.autoscalerResetNonce`, and once the user changed
/// the parallelism (the user's word wins; the autoscaler judges again from there).
pub fn overrides<S: FlinkSpec>(
    spec: &S,
    recorded: Option<&S>,
    options: &AutoscalerOptions,
    changes: &BTreeMap<String, i64>,
    slots: i64,
) -> BTreeMap<String, i64> {
    let Some(recorded) = recorded.filter(|_| options.enabled) else {
        return BTreeMap::new();
    };
    let nonce = |s: &S| s.job().and_then(|j| j.autoscaler_reset_nonce);
    let reset = nonce(spec).is_some() && nonce(spec) != nonce(recorded);
    if reset || Parallelism::of_user(spec, slots) != Parallelism::of_user(recorded, slots) {
        return BTreeMap::new();
    }
    let mut overrides = parallelism::autoscaled(recorded);
    if options.scaling_enabled {
        overrides.extend(changes.iter().map(|(vertex, p)| (vertex.clone(), *p)));
    }
    overrides
}

/// What the autoscaler makes of a job at a look, for its loop to decide with.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Looked {
    /// The ScalingReport to publish.
    pub report: Option<String>,
    /// The overrides the job is to run with (see [`overrides`]).
    pub overrides: BTreeMap<String, i64>,
    /// A decision made at this look, for the scaling history.
    pub decided: Option<ScalingEntry>,
    /// How much of the scaling history is kept.
    pub retention: Retention,
}

/// The autoscaler's part of a look at a job whose spec is `spec` and whose recorded status is
/// `reconciliation`.
pub fn after_look<S: FlinkSpec>(
    spec: &S,
    reconciliation: Option<&ReconciliationStatus>,
    options: &AutoscalerOptions,
    judgement: Judgement,
    slots: i64,
) -> Looked {
    // The recorded spec is decoded only for a job the autoscaler looks after: every look at
    // every resource comes here.
    let recorded = options
        .enabled
        .then(|| reconciliation.and_then(|rs| rs.last_reconciled_spec::<S>().ok().flatten()))
        .flatten();
    Looked {
        overrides: overrides(spec, recorded.as_ref(), options, &judgement.changes, slots),
        report: judgement.report,
        decided: judgement.decided,
        retention: options.history,
    }
}

/// `resource` as the lifecycle acts on it: its `spec`, given back by `set`, holding the
/// autoscaler's `overrides`; borrowed as it is when there are none to hold or remove.
pub fn effective<'a, R: Clone, S: FlinkSpec>(
    resource: &'a R,
    spec: &S,
    set: fn(&mut R, S),
    overrides: &BTreeMap<String, i64>,
) -> Cow<'a, R> {
    if overrides.is_empty() && parallelism::autoscaled(spec).is_empty() {
        return Cow::Borrowed(resource);
    }
    let mut owned = resource.clone();
    set(&mut owned, parallelism::with_autoscaled(spec, overrides));
    Cow::Owned(owned)
}

#[cfg(test)]
mod tests {
    use flink_operator_api::FlinkDeploymentSpec;
    use serde_json::json;

    use super::*;

    fn spec(parallelism: i64, extra: serde_json::Value) -> FlinkDeploymentSpec {
        let mut spec = json!({
            "flinkVersion": "v1_20",
            "job": {"jarURI": "local:///job.jar", "parallelism": parallelism},
        });
        json_patch::merge(&mut spec, &extra);
        serde_json::from_value(spec).unwrap()
    }

    fn map(entries: &[(&str, i64)]) -> BTreeMap<String, i64> {
        entries.iter().map(|(v, p)| ((*v).to_owned(), *p)).collect()
    }

    #[test]
    fn the_overrides_are_carried_from_the_recorded_spec_and_given_up_for_the_users_word() {
        let on = AutoscalerOptions {
            enabled: true,
            ..AutoscalerOptions::default()
        };
        let advisory = AutoscalerOptions {
            scaling_enabled: false,
            ..on.clone()
        };
        let recorded = parallelism::with_autoscaled(&spec(2, json!({})), &map(&[("a", 4)]));
        let changes = map(&[("b", 3)]);
        let off = AutoscalerOptions::default();
        type Case<'a> = (
            &'a str,
            FlinkDeploymentSpec,
            Option<&'a FlinkDeploymentSpec>,
            &'a AutoscalerOptions,
            BTreeMap<String, i64>,
        );
        let cases: Vec<Case> = vec![
            ("first start", spec(2, json!({})), None, &on, map(&[])),
            (
                "carried, with this look's changes",
                spec(2, json!({})),
                Some(&recorded),
                &on,
                map(&[("a", 4), ("b", 3)]),
            ),
            (
                "advisory: carried, no change",
                spec(2, json!({})),
                Some(&recorded),
                &advisory,
                map(&[("a", 4)]),
            ),
            (
                "autoscaler off",
                spec(2, json!({})),
                Some(&recorded),
                &off,
                map(&[]),
            ),
            (
                "the user changed the parallelism",
                spec(3, json!({})),
                Some(&recorded),
                &on,
                map(&[]),
            ),
            (
                "the user set an override",
                spec(
                    2,
                    json!({"flinkConfiguration": {"pipeline.jobvertex-parallelism-overrides": "a:1"}}),
                ),
                Some(&recorded),
                &on,
                map(&[]),
            ),
            (
                "a new reset nonce",
                spec(2, json!({"job": {"autoscalerResetNonce": 1}})),
                Some(&recorded),
                &on,
                map(&[]),
            ),
            (
                "another change of the user's",
                spec(2, json!({"image": "flink:2.1"})),
                Some(&recorded),
                &on,
                map(&[("a", 4), ("b", 3)]),
            ),
        ];
        for (case, spec, recorded, options, expected) in cases {
            assert_eq!(
                overrides(&spec, recorded, options, &changes, 1),
                expected,
                "{case}"
            );
        }
    }

    #[test]
    fn flink_is_given_the_users_overrides_with_the_autoscalers_over_them_and_revisions_hold_neither_key() {
        let user = spec(
            2,
            json!({"flinkConfiguration": {"pipeline.jobvertex-parallelism-overrides": "a:1,c:5"}}),
        );
        let autoscaled = parallelism::with_autoscaled(&user, &map(&[("a", 4), ("b", 3)]));
        let flat = autoscaled.flink_configuration.as_ref().unwrap().flattened();
        assert_eq!(
            crate::resources::parallelism::merged_overrides(&flat).as_deref(),
            Some("a:4,b:3,c:5")
        );
        let user_flat = user.flink_configuration.as_ref().unwrap().flattened();
        assert_eq!(
            crate::resources::parallelism::merged_overrides(&user_flat),
            None,
            "nothing to merge"
        );
        // The lifecycle sees a change of parallelism; a revision does not.
        assert!(crate::lifecycle::spec::changed(&user, &autoscaled));
        let value = |s: &FlinkDeploymentSpec| serde_json::to_value(s).unwrap();
        assert_eq!(
            crate::lifecycle::revisions::normalised(&value(&user)),
            crate::lifecycle::revisions::normalised(&value(&autoscaled))
        );
        // Nothing to hold or remove: the resource itself.
        let fd = flink_operator_api::FlinkDeployment::new("counter", user.clone());
        assert!(matches!(
            effective(&fd, &fd.spec, |fd, spec| fd.spec = spec, &BTreeMap::new()),
            Cow::Borrowed(_)
        ));
        let owned = effective(&fd, &fd.spec, |fd, spec| fd.spec = spec, &map(&[("a", 4)]));
        assert_eq!(parallelism::autoscaled(&owned.spec), map(&[("a", 4)]));
    }
}
