//! From samples of a running job's vertices to what each vertex can process and what it must.
//!
//! Each sample holds, per vertex: its parallelism and max parallelism, the busy time of its
//! busiest subtask (ms per second), the records it takes in and gives out per second (summed
//! over subtasks), a source's backlog (pending records, when the source reports it), and the
//! vertices that feed it. Over the window the figures are averaged; then, in the job graph's
//! order:
//!
//! - the **true processing rate** is the input rate divided by the busy fraction: what the
//!   vertex would process if it were busy all the time (unknown for a vertex that was idle);
//! - the **target rate** of a source is its input rate plus its backlog spread over
//!   `catch-up.duration`; of any other vertex, the sum over its inputs of each input's target
//!   rate times that input's output/input ratio (what it sends per record it takes).

use std::collections::BTreeMap;

/// One vertex at one look.
#[derive(Debug, Clone, PartialEq)]
pub struct VertexSample {
    pub parallelism: i64,
    pub max_parallelism: i64,
    /// Busy time of the busiest subtask, ms per second (0 - 1000).
    pub busy_ms_per_s: f64,
    /// A source's records read per second, another vertex's records taken in.
    pub records_in_per_s: f64,
    pub records_out_per_s: f64,
    /// A source's backlog, when it reports one (`pendingRecords`).
    pub pending_records: Option<f64>,
    /// The vertices that send to it (none: a source).
    pub inputs: Vec<String>,
}

/// A job at one look: its vertices by id.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub at_ms: i64,
    pub vertices: BTreeMap<String, VertexSample>,
}

/// What one vertex can process and what it must, over the window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Evaluated {
    pub parallelism: i64,
    pub max_parallelism: i64,
    /// Records per second the whole vertex would process fully busy (None: it was idle).
    pub true_processing_rate: Option<f64>,
    /// Records per second it must process.
    pub target_rate: f64,
    /// How its processing rate grows with its parallelism (1: linearly; see
    /// [`super::scalability`]).
    pub scalability: f64,
}

impl Evaluated {
    /// The busy fraction it would have at its target rate (None: not known).
    pub fn expected_utilization(&self) -> Option<f64> {
        let rate = self.true_processing_rate?;
        (rate > 0.0).then(|| self.target_rate / rate)
    }
}

/// The vertices evaluated over `samples` (of one parallelism: those of the window since the
/// last rescale), `catch_up_ms` to work off a source's backlog. None when there are no samples
/// or the job graph has a cycle or an unknown input.
pub fn evaluate(samples: &[Sample], catch_up_ms: i64) -> Option<BTreeMap<String, Evaluated>> {
    let last = samples.last()?;
    let averaged: BTreeMap<&str, Averages> = last
        .vertices
        .keys()
        .map(|id| (id.as_str(), Averages::of(samples, id)))
        .collect();
    let mut evaluated: BTreeMap<String, Evaluated> = BTreeMap::new();
    for id in topological_order(&last.vertices)? {
        let vertex = &last.vertices[id];
        let a = &averaged[id];
        let busy = (a.busy_ms_per_s / 1000.0).clamp(0.0, 1.0);
        let true_processing_rate = (busy > 0.0).then(|| a.records_in / busy);
        let target_rate = if vertex.inputs.is_empty() {
            let catch_up_s = (catch_up_ms as f64 / 1000.0).max(1.0);
            a.records_in + a.pending.unwrap_or(0.0) / catch_up_s
        } else {
            vertex
                .inputs
                .iter()
                .map(|input| {
                    let upstream = &averaged[input.as_str()];
                    let ratio = if upstream.records_in > 0.0 {
                        upstream.records_out / upstream.records_in
                    } else {
                        0.0
                    };
                    evaluated[input].target_rate * ratio
                })
                .sum()
        };
        evaluated.insert(
            id.to_owned(),
            Evaluated {
                parallelism: vertex.parallelism,
                max_parallelism: vertex.max_parallelism,
                true_processing_rate,
                target_rate,
                scalability: 1.0,
            },
        );
    }
    Some(evaluated)
}

struct Averages {
    busy_ms_per_s: f64,
    records_in: f64,
    records_out: f64,
    pending: Option<f64>,
}

impl Averages {
    fn of(samples: &[Sample], id: &str) -> Self {
        let seen: Vec<&VertexSample> = samples.iter().filter_map(|s| s.vertices.get(id)).collect();
        let n = seen.len().max(1) as f64;
        let mean = |f: fn(&VertexSample) -> f64| seen.iter().map(|v| f(v)).sum::<f64>() / n;
        let pending: Vec<f64> = seen.iter().filter_map(|v| v.pending_records).collect();
        Averages {
            busy_ms_per_s: mean(|v| v.busy_ms_per_s),
            records_in: mean(|v| v.records_in_per_s),
            records_out: mean(|v| v.records_out_per_s),
            // The backlog now, not on average: what is left to catch up.
            pending: seen
                .last()
                .and_then(|v| v.pending_records)
                .or(pending.last().copied()),
        }
    }
}

/// The vertex ids, each after its inputs; None for a cycle or an unknown input.
fn topological_order(vertices: &BTreeMap<String, VertexSample>) -> Option<Vec<&str>> {
    let mut order: Vec<&str> = Vec::with_capacity(vertices.len());
    while order.len() < vertices.len() {
        let before = order.len();
        for (id, vertex) in vertices {
            if order.contains(&id.as_str()) {
                continue;
            }
            if vertex.inputs.iter().any(|i| !vertices.contains_key(i)) {
                return None;
            }
            if vertex.inputs.iter().all(|i| order.contains(&i.as_str())) {
                order.push(id);
            }
        }
        if order.len() == before {
            return None;
        }
    }
    Some(order)
}
