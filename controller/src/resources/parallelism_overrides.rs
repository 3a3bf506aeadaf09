//! `pipeline.jobvertex-parallelism-overrides` as Flink reads it (`<vertex id>:<parallelism>,...`),
//! and the autoscaler's overrides merged over the user's: one format for the cluster's
//! configuration, a session job's submission and the in-place rescale.

use std::collections::BTreeMap;

use flink_operator_api::keys::{flink, operator};

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
