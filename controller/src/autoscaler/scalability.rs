//! Observed scalability: how a vertex's true processing rate grew with its parallelism, from
//! what it processed at each parallelism it was judged at. Without it the autoscaler assumes
//! that `n` subtasks process `n` times what one does; a vertex that scales worse (shuffles,
//! hot keys, a shared external system) would then be given too little.
//!
//! The observations are fitted by least squares to a line through the origin (rate = k ×
//! parallelism); the coefficient is `k` over what one subtask processed at the smallest
//! parallelism observed, within `[observed-scalability.coefficient-min, 1]`. A vertex is given
//! its parallelism over that coefficient. Fewer than `observed-scalability.min-observations`
//! distinct parallelisms: 1 (linear).

use std::collections::BTreeMap;

/// What a vertex processed at each parallelism it was judged at: true processing rate by
/// parallelism.
pub type Observed = BTreeMap<i64, f64>;

/// The coefficient of `observed` (see the module's documentation).
pub fn coefficient(observed: &Observed, min_observations: usize, coefficient_min: f64) -> f64 {
    let points: Vec<(f64, f64)> = observed
        .iter()
        .filter(|(p, rate)| **p > 0 && rate.is_finite() && **rate > 0.0)
        .map(|(p, rate)| (*p as f64, *rate))
        .collect();
    let Some(&(p0, rate0)) = points.first() else {
        return 1.0;
    };
    if points.len() < min_observations.max(2) {
        return 1.0;
    }
    let slope =
        points.iter().map(|(p, r)| p * r).sum::<f64>() / points.iter().map(|(p, _)| p * p).sum::<f64>();
    (slope / (rate0 / p0)).clamp(coefficient_min.clamp(0.01, 1.0), 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn observed(points: &[(i64, f64)]) -> Observed {
        points.iter().copied().collect()
    }

    #[test]
    fn a_vertex_that_scales_worse_than_linearly_has_a_coefficient_below_one() {
        let cases: &[(&str, Observed, f64)] = &[
            ("linear", observed(&[(1, 100.0), (2, 200.0), (4, 400.0)]), 1.0),
            // 1740 / 21 per subtask against 100: 0.83.
            (
                "sublinear",
                observed(&[(1, 100.0), (2, 180.0), (4, 320.0)]),
                1740.0 / 21.0 / 100.0,
            ),
            (
                "better than linear counts as linear",
                observed(&[(1, 100.0), (2, 250.0), (4, 500.0)]),
                1.0,
            ),
            (
                "flat, at the minimum",
                observed(&[(1, 100.0), (2, 100.0), (4, 100.0)]),
                0.5,
            ),
            ("too few observations", observed(&[(1, 100.0), (4, 100.0)]), 1.0),
            ("none", observed(&[]), 1.0),
        ];
        for (case, points, expected) in cases {
            let c = coefficient(points, 3, 0.5);
            assert!((c - expected).abs() < 1e-9, "{case}: {c}");
        }
    }
}
