//! What the autoscaler keeps of each job between looks, in this process: the samples of the
//! current metric window, since when each vertex wants a scale-down, and the last report.
//! It is not persisted: after a restart (or a change of leader) the window starts again, so a
//! judgement comes one `metrics.window` later.

use std::{
    collections::{BTreeMap, HashMap, VecDeque},
    sync::Mutex,
};

use super::{
    collect,
    decide::{self, Decision},
    evaluate::{self, Sample},
};
use crate::{
    flink::{FlinkRestClient, JobId},
    policy::autoscaler::AutoscalerOptions,
};

/// A ScalingReport is published again for the same judgement after this long (the Apache
/// autoscaler's `scaling.event.interval` default).
const REPORT_AGAIN_MS: i64 = 30 * 60_000;

/// One job's window.
#[derive(Debug, Default, Clone)]
pub struct JobWindow {
    job_id: String,
    /// The vertices' parallelism the samples were taken at.
    parallelism: BTreeMap<String, i64>,
    started_ms: i64,
    samples: VecDeque<Sample>,
    wanted_since: BTreeMap<String, i64>,
    reported: Option<(BTreeMap<String, i64>, i64)>,
    /// Each vertex's true processing rate at each parallelism it was judged at (kept across
    /// rescales and new jobs of the resource; see [`super::scalability`]).
    observed: BTreeMap<String, super::scalability::Observed>,
}

/// What the autoscaler makes of a job at one look.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Judgement {
    /// The ScalingReport to publish, when one is due.
    pub report: Option<String>,
    /// The new parallelism of the vertices to rescale now (none when nothing is to change,
    /// in advisory mode, or within an excluded period).
    pub changes: BTreeMap<String, i64>,
    /// The decision made at this look, for the scaling history (none when it was made at an
    /// earlier look, or is not applied).
    pub decided: Option<super::history::ScalingEntry>,
}

/// A resource whose job the autoscaler looks at: what each look needs besides the job.
#[derive(Clone, Copy)]
pub struct ScaledResource<'a> {
    /// The key of the resource's window; a new job of the same resource keeps what was
    /// learnt of its vertices.
    pub uid: &'a str,
    pub options: &'a AutoscalerOptions,
    /// The client of the resource's JobManager, which the samples are asked from.
    pub rest: &'a FlinkRestClient,
}

/// The windows of every job, by the uid of its resource.
#[derive(Debug, Default)]
pub struct Windows(Mutex<HashMap<String, JobWindow>>);

impl Windows {
    pub fn forget(&self, uid: &str) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).remove(uid);
    }

    /// Samples the RUNNING job `job_id` (started at `started_ms`) of `resource` and judges it
    /// once its window is full. Nothing when the autoscaler is off, within the stabilization
    /// interval after the start, or when the JobManager does not answer (the window keeps
    /// what it had).
    pub async fn look(
        &self,
        resource: ScaledResource<'_>,
        job_id: &str,
        started_ms: Option<i64>,
        now_ms: i64,
    ) -> Judgement {
        let ScaledResource { uid, options, rest } = resource;
        if !options.enabled {
            self.forget(uid);
            return Judgement::default();
        }
        if started_ms.is_some_and(|s| now_ms - s < options.stabilization_ms) {
            return Judgement::default();
        }
        let sample = match collect::sample(rest, &JobId::from(job_id), now_ms).await {
            Ok(sample) => sample,
            Err(error) => {
                tracing::debug!(%error, "no autoscaler sample at this look");
                return Judgement::default();
            }
        };
        let mut windows = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let window = windows.entry(uid.to_owned()).or_default();
        judge(window, job_id, sample, options, now_ms)
    }
}

/// [`Windows::look`] for a job whose recorded status is `recorded` and which was observed as
/// `observed`: only a RUNNING job with all its tasks running is sampled.
pub async fn look_at_job(
    windows: &Windows,
    resource: ScaledResource<'_>,
    recorded: Option<&flink_operator_api::common::JobStatus>,
    observed: Option<&crate::flink::job::JobObservation>,
) -> Judgement {
    use crate::flink::job::JobObservation;
    let Some(job_id) = recorded.and_then(|r| r.job_id.as_deref()) else {
        return Judgement::default();
    };
    let Some(JobObservation::Found {
        state,
        start_time,
        all_tasks_running: true,
        ..
    }) = observed
    else {
        return Judgement::default();
    };
    if *state != flink_operator_api::FlinkJobState::Running {
        return Judgement::default();
    }
    let now_ms = k8s_openapi::jiff::Timestamp::now().as_millisecond();
    windows.look(resource, job_id, *start_time, now_ms).await
}

/// Adds `sample` to the window (starting it again for another job, or after a rescale once
/// the stabilization interval is over), drops samples older than the metric window, and once
/// the window is full judges the job: the changes to make, and the report when its changes
/// differ from the last one reported or that one is old.
pub fn judge(
    window: &mut JobWindow,
    job_id: &str,
    sample: Sample,
    options: &AutoscalerOptions,
    now_ms: i64,
) -> Judgement {
    let parallelism: BTreeMap<String, i64> = sample
        .vertices
        .iter()
        .map(|(id, v)| (id.clone(), v.parallelism))
        .collect();
    if window.job_id != job_id || window.parallelism != parallelism {
        // The same job rescaled in place restarts its tasks: what they do while they catch
        // up is not their steady state (a new job's start is waited for by its start time).
        let rescaled = window.job_id == job_id;
        *window = JobWindow {
            job_id: job_id.to_owned(),
            parallelism,
            started_ms: now_ms + if rescaled { options.stabilization_ms } else { 0 },
            observed: std::mem::take(&mut window.observed),
            ..JobWindow::default()
        };
    }
    if now_ms < window.started_ms {
        return Judgement::default();
    }
    window.samples.push_back(sample);
    while window
        .samples
        .front()
        .is_some_and(|s| now_ms - s.at_ms > options.metrics_window_ms)
    {
        window.samples.pop_front();
    }
    if now_ms - window.started_ms < options.metrics_window_ms {
        return Judgement::default();
    }
    let samples: Vec<Sample> = window.samples.iter().cloned().collect();
    let Some(mut evaluated) = evaluate::evaluate(&samples, options.catch_up_ms) else {
        return Judgement::default();
    };
    for (id, e) in &mut evaluated {
        let observed = window.observed.entry(id.clone()).or_default();
        if let Some(rate) = e.true_processing_rate {
            observed.insert(e.parallelism, rate);
        }
        if let Some((min_observations, coefficient_min)) = options.observed_scalability {
            e.scalability = super::scalability::coefficient(observed, min_observations, coefficient_min);
        }
    }
    let decision: Decision = decide::decide(&evaluated, options, &window.wanted_since, now_ms);
    window.wanted_since = decision.scale_down_wanted_since.clone();
    let changes = decision.changes();
    if changes.is_empty() {
        window.reported = None;
        return Judgement::default();
    }
    let held = options.held_at(now_ms);
    let again = match &window.reported {
        Some((reported, at)) => *reported != changes || now_ms - at >= REPORT_AGAIN_MS,
        None => true,
    };
    let report = again.then(|| {
        window.reported = Some((changes.clone(), now_ms));
        match held {
            Some(why) => format!("{}; not applied: {why}", decision.report()),
            None => decision.report(),
        }
    });
    let applied = held.is_none();
    Judgement {
        decided: (applied && report.is_some())
            .then(|| super::history::ScalingEntry::of(&decision, job_id, now_ms)),
        report,
        changes: if applied { changes } else { BTreeMap::new() },
    }
}
