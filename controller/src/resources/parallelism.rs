//! The parallelism a spec asks for: its default and its vertex overrides
//! (`pipeline.jobvertex-parallelism-overrides`, as Flink reads it: `<vertex id>:<parallelism>,...`),
//! the user's with the autoscaler's over them. One reading for the cluster's configuration, a
//! session job's submission, the in-place rescale and the autoscaler.

use std::collections::BTreeMap;

use flink_operator_api::{
    FlinkSpec,
    keys::{flink, operator},
};

/// `pipeline.jobvertex-parallelism-overrides` as Flink is to be given it from the flat
/// configuration `config`: the user's overrides with the autoscaler's over them. None when
/// there are no autoscaler overrides (the user's value goes to Flink as it is).
pub fn merged_overrides(config: &BTreeMap<String, String>) -> Option<String> {
    let autoscaled = parse_overrides(config.get(operator::AUTOSCALER_PARALLELISM_OVERRIDES)?)?;
    let mut merged = config
        .get(flink::PIPELINE_JOBVERTEX_PARALLELISM_OVERRIDES)
        .and_then(|text| parse_overrides(text))
        .unwrap_or_default();
    merged.extend(autoscaled);
    Some(format_overrides(&merged))
}

/// Overrides as Flink reads them.
pub fn format_overrides(overrides: &BTreeMap<String, i64>) -> String {
    overrides
        .iter()
        .map(|(vertex, parallelism)| format!("{vertex}:{parallelism}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The overrides of `text`; `None` when one entry does not read.
pub fn parse_overrides(text: &str) -> Option<BTreeMap<String, i64>> {
    text.split(',')
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
        .map(|entry| {
            let (vertex, parallelism) = entry.split_once(':')?;
            let parallelism = parallelism.trim().parse::<i64>().ok().filter(|p| *p > 0)?;
            Some((vertex.trim().to_owned(), parallelism))
        })
        .collect()
}

/// The parallelism a spec asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parallelism {
    /// The job's default parallelism: an application cluster's `taskManager.replicas` times
    /// its slots when set, else `job.parallelism`.
    pub default: Option<i64>,
    /// `pipeline.jobvertex-parallelism-overrides`, by vertex id.
    pub overrides: BTreeMap<String, i64>,
}

impl Parallelism {
    /// What `spec` asks for, with `slots` per TaskManager; `None` when its overrides do not
    /// read as `<vertex id>:<parallelism>,...` (admission lets Flink judge them).
    pub fn of<S: FlinkSpec>(spec: &S, slots: i64) -> Option<Self> {
        let default = match spec.task_manager_replicas().filter(|r| *r > 0) {
            Some(replicas) => Some(i64::from(replicas) * slots.max(1)),
            None => spec
                .job()
                .and_then(|j| j.parallelism)
                .filter(|p| *p > 0)
                .map(i64::from),
        };
        let mut overrides = match overrides_of(spec) {
            None => BTreeMap::new(),
            Some(text) => parse_overrides(&text)?,
        };
        overrides.extend(autoscaled(spec));
        Some(Parallelism { default, overrides })
    }

    /// What `spec` asks for without the autoscaler's overrides: the user's own.
    pub fn of_user<S: FlinkSpec>(spec: &S, slots: i64) -> Option<Self> {
        Self::of(&with_autoscaled(spec, &BTreeMap::new()), slots)
    }

    /// What changed from `from`, as an Event says it: `parallelism 2 to 3`, `vertex 0a… to 4`.
    pub fn describe_from(&self, from: &Parallelism) -> String {
        let show = |p: Option<i64>| p.map_or_else(|| "the cluster's default".to_owned(), |p| p.to_string());
        let mut parts = Vec::new();
        if self.default != from.default {
            parts.push(format!(
                "parallelism {} to {}",
                show(from.default),
                show(self.default)
            ));
        }
        for (vertex, to) in &self.overrides {
            match from.overrides.get(vertex) {
                Some(was) if was == to => {}
                Some(was) => parts.push(format!("vertex {vertex} from {was} to {to}")),
                None => parts.push(format!("vertex {vertex} to {to}")),
            }
        }
        if parts.is_empty() {
            self.describe()
        } else {
            parts.join(", ")
        }
    }

    /// As an Event says it: `parallelism 2`, `vertex 0a…: 3`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(default) = self.default {
            parts.push(format!("parallelism {default}"));
        }
        parts.extend(self.overrides.iter().map(|(v, p)| format!("vertex {v}: {p}")));
        if parts.is_empty() {
            "the cluster's default parallelism".to_owned()
        } else {
            parts.join(", ")
        }
    }
}

fn overrides_of<S: FlinkSpec>(spec: &S) -> Option<String> {
    spec.flink_configuration()?
        .get(flink::PIPELINE_JOBVERTEX_PARALLELISM_OVERRIDES)
}

/// The job autoscaler's overrides the spec holds (as the operator records them; see
/// [`operator::AUTOSCALER_PARALLELISM_OVERRIDES`]), by vertex id.
pub fn autoscaled<S: FlinkSpec>(spec: &S) -> BTreeMap<String, i64> {
    spec.flink_configuration()
        .and_then(|c| c.get(operator::AUTOSCALER_PARALLELISM_OVERRIDES))
        .and_then(|text| parse_overrides(&text))
        .unwrap_or_default()
}

/// `spec` holding the autoscaler's `overrides` (none: without them).
pub fn with_autoscaled<S: FlinkSpec>(spec: &S, overrides: &BTreeMap<String, i64>) -> S {
    let mut spec = spec.clone();
    let config = spec.flink_configuration_mut();
    if overrides.is_empty() {
        if let Some(c) = config.as_mut() {
            c.0.remove(operator::AUTOSCALER_PARALLELISM_OVERRIDES);
            if c.is_empty() {
                *config = None;
            }
        }
    } else {
        config.get_or_insert_with(Default::default).insert(
            operator::AUTOSCALER_PARALLELISM_OVERRIDES,
            format_overrides(overrides),
        );
    }
    spec
}
