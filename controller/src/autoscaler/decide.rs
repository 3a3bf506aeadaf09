//! The parallelism each vertex needs, from [`evaluate`](super::evaluate)'s figures and the
//! options, with the reason: what a ScalingReport says, vertex by vertex.

use std::collections::BTreeMap;

use super::evaluate::Evaluated;
use crate::policy::autoscaler::AutoscalerOptions;

/// Why a vertex keeps or changes its parallelism.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Why {
    /// Its expected utilisation is above `utilization.max`.
    Overloaded(f64),
    /// Below `utilization.min`, and wanted for `scale-down.interval`.
    Underused(f64),
    /// Below `utilization.min` since `since` (epoch ms): held until the interval is over.
    ScaleDownHeld { utilization: f64, since: i64 },
    /// Within the band.
    Balanced(f64),
    /// Outside the band, but its bounds leave it where it is.
    AtItsBound(f64),
    /// It was idle over the window: nothing to judge by.
    Idle,
    /// `vertex.exclude.ids` names it.
    Excluded,
}

impl Why {
    /// As a ScalingReport says it.
    pub fn said(&self) -> String {
        match *self {
            Why::Overloaded(u) => format!("expected utilization {u:.2} over the maximum"),
            Why::Underused(u) => format!("expected utilization {u:.2} under the minimum"),
            Why::ScaleDownHeld { utilization, .. } => format!(
                "expected utilization {utilization:.2} under the minimum; scale-down held for the scale-down interval"
            ),
            Why::Balanced(u) => format!("expected utilization {u:.2} within bounds"),
            Why::AtItsBound(u) => format!("expected utilization {u:.2}, at its parallelism bound"),
            Why::Idle => "idle over the metric window".to_owned(),
            Why::Excluded => "excluded (vertex.exclude.ids)".to_owned(),
        }
    }
}

/// One vertex's judgement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VertexDecision {
    pub from: i64,
    pub to: i64,
    pub why: Why,
    pub target_rate: f64,
    pub true_processing_rate: Option<f64>,
}

/// The judgement of every vertex, and since when each wants a scale-down (to be kept for
/// the next look).
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub vertices: BTreeMap<String, VertexDecision>,
    pub scale_down_wanted_since: BTreeMap<String, i64>,
}

impl Decision {
    /// The new parallelism of the vertices that change.
    pub fn changes(&self) -> BTreeMap<String, i64> {
        self.vertices
            .iter()
            .filter(|(_, d)| d.to != d.from)
            .map(|(id, d)| (id.clone(), d.to))
            .collect()
    }

    /// The ScalingReport: one line per vertex, the changed ones first.
    pub fn report(&self) -> String {
        let mut lines: Vec<(bool, String)> = self
            .vertices
            .iter()
            .map(|(id, d)| {
                let rates = match d.true_processing_rate {
                    Some(tpr) => format!(
                        "target rate {:.1}/s, true processing rate {tpr:.1}/s",
                        d.target_rate
                    ),
                    None => format!("target rate {:.1}/s", d.target_rate),
                };
                let why = d.why.said();
                (
                    d.to == d.from,
                    format!("vertex {id}: parallelism {} -> {} ({why}; {rates})", d.from, d.to),
                )
            })
            .collect();
        lines.sort_by_key(|(unchanged, _)| *unchanged);
        lines.into_iter().map(|(_, l)| l).collect::<Vec<_>>().join("; ")
    }
}

/// Judges every vertex at `now_ms`; `wanted_since`: since when each vertex wanted a
/// scale-down, as the last decision left it.
pub fn decide(
    evaluated: &BTreeMap<String, Evaluated>,
    options: &AutoscalerOptions,
    wanted_since: &BTreeMap<String, i64>,
    now_ms: i64,
) -> Decision {
    let mut vertices = BTreeMap::new();
    let mut scale_down_wanted_since = BTreeMap::new();
    for (id, e) in evaluated {
        let keep = |why| VertexDecision {
            from: e.parallelism,
            to: e.parallelism,
            why,
            target_rate: e.target_rate,
            true_processing_rate: e.true_processing_rate,
        };
        if options.excluded_vertices.contains(id) {
            vertices.insert(id.clone(), keep(Why::Excluded));
            continue;
        }
        let Some(utilization) = e.expected_utilization() else {
            vertices.insert(id.clone(), keep(Why::Idle));
            continue;
        };
        let overloaded = utilization > options.max_utilization;
        let underused = utilization < options.min_utilization;
        if !overloaded && !underused {
            vertices.insert(id.clone(), keep(Why::Balanced(utilization)));
            continue;
        }
        let to = required_parallelism(e, utilization, options);
        if to == e.parallelism {
            vertices.insert(id.clone(), keep(Why::AtItsBound(utilization)));
            continue;
        }
        let why = if to > e.parallelism {
            Why::Overloaded(utilization)
        } else {
            let since = wanted_since.get(id).copied().unwrap_or(now_ms);
            scale_down_wanted_since.insert(id.clone(), since);
            if now_ms - since < options.scale_down_interval_ms {
                vertices.insert(id.clone(), keep(Why::ScaleDownHeld { utilization, since }));
                continue;
            }
            Why::Underused(utilization)
        };
        vertices.insert(id.clone(), VertexDecision { to, why, ..keep(why) });
    }
    Decision {
        vertices,
        scale_down_wanted_since,
    }
}

/// The parallelism that brings the vertex to the target utilisation, within the scale
/// factors and the bounds, aligned up to a divisor of its max parallelism when one is within
/// them (so that its key groups spread evenly over its subtasks).
fn required_parallelism(e: &Evaluated, utilization: f64, o: &AutoscalerOptions) -> i64 {
    let current = e.parallelism.max(1) as f64;
    let mut wanted = current * utilization / o.target_utilization.max(f64::EPSILON);
    if utilization > o.target_utilization && o.catch_up_ms > 0 {
        // A scale-up restarts the job: what piles up while it does is caught up within
        // `catch-up.duration` too (not at the target utilisation: that is what the
        // headroom is for).
        wanted += current * utilization * o.restart_ms as f64 / o.catch_up_ms as f64;
    }
    // A vertex that scales worse than linearly needs more subtasks for the same rate.
    let wanted = (wanted / e.scalability.clamp(0.01, 1.0)).ceil();
    let up = (current * (1.0 + o.scale_up_max_factor)).ceil();
    let down = (current * (1.0 - o.scale_down_max_factor.min(1.0)))
        .ceil()
        .max(1.0);
    let ceiling = o.vertex_max_parallelism.min(e.max_parallelism.max(1));
    let floor = o.vertex_min_parallelism.min(ceiling);
    let bounded = (wanted.clamp(down, up.max(down)) as i64).clamp(floor, ceiling);
    (bounded..=ceiling)
        .find(|p| e.max_parallelism % p == 0)
        .unwrap_or(bounded)
}
