//! One [`Sample`] of a running job from its JobManager's REST API: the job's vertices and
//! graph (`GET /jobs/:jobid`), then each vertex's busy time and rates aggregated over its
//! subtasks (`GET /jobs/:jobid/vertices/:vertexid/subtasks/metrics`): 1 + (vertices) calls.
//!
//! A source's input rate is what its task sends on (`numRecordsOutPerSecond`: a source task
//! reports no records in); its backlog is the sum of its source operator's `pendingRecords`
//! where the connector reports it (Kafka, for one), found among the vertex's metric ids: two
//! more calls per source vertex.

use std::collections::BTreeMap;

use super::evaluate::{Sample, VertexSample};
use crate::flink::{AggregatedMetric, Aggregation, FlinkError, FlinkRestClient, JobDetails, JobId};

const BUSY: &str = "busyTimeMsPerSecond";
const RECORDS_IN: &str = "numRecordsInPerSecond";
const RECORDS_OUT: &str = "numRecordsOutPerSecond";
/// A source operator's backlog, reported as `<operator>.pendingRecords`.
const PENDING_RECORDS: &str = ".pendingRecords";

/// A sample of `job` now (`at_ms`).
pub async fn sample(rest: &FlinkRestClient, job: &JobId, at_ms: i64) -> Result<Sample, FlinkError> {
    let details = rest.job_details(job).await?;
    let mut metrics = BTreeMap::new();
    for vertex in &details.vertices {
        let values = rest
            .subtask_metrics(
                job,
                &vertex.id,
                &[BUSY, RECORDS_IN, RECORDS_OUT],
                &[Aggregation::Max, Aggregation::Sum],
            )
            .await?;
        metrics.insert(vertex.id.clone(), values);
    }
    let mut pending = BTreeMap::new();
    for source in sources(&details) {
        if let Some(backlog) = backlog(rest, job, source).await? {
            pending.insert(source.to_owned(), backlog);
        }
    }
    Ok(of(&details, &metrics, &pending, at_ms))
}

/// The vertices no other vertex sends to.
fn sources(details: &JobDetails) -> Vec<&str> {
    let fed: std::collections::BTreeSet<&str> = details
        .plan
        .iter()
        .flat_map(|p| &p.nodes)
        .filter(|n| !n.inputs.is_empty())
        .map(|n| n.id.as_str())
        .collect();
    details
        .vertices
        .iter()
        .map(|v| v.id.as_str())
        .filter(|id| !fed.contains(id))
        .collect()
}

/// The pending records of a source vertex, if its connector reports them.
async fn backlog(rest: &FlinkRestClient, job: &JobId, vertex: &str) -> Result<Option<f64>, FlinkError> {
    let ids = rest.subtask_metric_ids(job, vertex).await?;
    let pending: Vec<&str> = ids
        .iter()
        .map(String::as_str)
        .filter(|id| id.ends_with(PENDING_RECORDS))
        .collect();
    if pending.is_empty() {
        return Ok(None);
    }
    let values = rest
        .subtask_metrics(job, vertex, &pending, &[Aggregation::Sum])
        .await?;
    Ok(Some(
        values
            .iter()
            .filter_map(|m| m.sum)
            .filter(|x| x.is_finite() && *x >= 0.0)
            .sum(),
    ))
}

/// The sample that the job's details and its vertices' aggregated metrics make.
pub fn of(
    details: &JobDetails,
    metrics: &BTreeMap<String, Vec<AggregatedMetric>>,
    pending: &BTreeMap<String, f64>,
    at_ms: i64,
) -> Sample {
    let inputs: BTreeMap<&str, Vec<String>> = details
        .plan
        .iter()
        .flat_map(|p| &p.nodes)
        .map(|n| (n.id.as_str(), n.inputs.iter().map(|i| i.id.clone()).collect()))
        .collect();
    let vertices = details
        .vertices
        .iter()
        .map(|v| {
            let values = metrics.get(&v.id).map(Vec::as_slice).unwrap_or_default();
            let get = |id: &str, pick: fn(&AggregatedMetric) -> Option<f64>| {
                values
                    .iter()
                    .find(|m| m.id == id)
                    .and_then(pick)
                    .filter(|x| x.is_finite())
                    .unwrap_or(0.0)
            };
            let inputs = inputs.get(v.id.as_str()).cloned().unwrap_or_default();
            let records_out = get(RECORDS_OUT, |m| m.sum);
            let records_in = if inputs.is_empty() {
                records_out
            } else {
                get(RECORDS_IN, |m| m.sum)
            };
            let sample = VertexSample {
                parallelism: i64::from(v.parallelism),
                max_parallelism: v.max_parallelism.unwrap_or(i64::from(v.parallelism)),
                busy_ms_per_s: get(BUSY, |m| m.max),
                records_in_per_s: records_in,
                records_out_per_s: records_out,
                pending_records: pending.get(&v.id).copied(),
                inputs,
            };
            (v.id.clone(), sample)
        })
        .collect();
    Sample { at_ms, vertices }
}
