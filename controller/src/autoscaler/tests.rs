use std::collections::BTreeMap;

use crate::policy::autoscaler::AutoscalerOptions;

use super::{
    decide::{Why, decide},
    evaluate::{Evaluated, Sample, VertexSample, evaluate},
};

const MIN: i64 = 60_000;

fn vertex(parallelism: i64, busy: f64, rate_in: f64, rate_out: f64, inputs: &[&str]) -> VertexSample {
    VertexSample {
        parallelism,
        max_parallelism: 128,
        busy_ms_per_s: busy,
        records_in_per_s: rate_in,
        records_out_per_s: rate_out,
        pending_records: None,
        inputs: inputs.iter().map(|s| (*s).to_owned()).collect(),
    }
}

fn sample(at_ms: i64, vertices: &[(&str, VertexSample)]) -> Sample {
    Sample {
        at_ms,
        vertices: vertices
            .iter()
            .map(|(id, v)| ((*id).to_owned(), v.clone()))
            .collect(),
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

#[test]
fn rates_follow_the_job_graph_from_its_sources() {
    // source (reads 100/s, sends each record twice) -> map (takes 200/s, sends half) -> sink
    let samples = [
        sample(
            0,
            &[
                ("source", vertex(1, 250.0, 100.0, 200.0, &[])),
                ("map", vertex(2, 800.0, 200.0, 100.0, &["source"])),
                ("sink", vertex(1, 0.0, 0.0, 0.0, &["map"])),
            ],
        ),
        sample(
            MIN,
            &[
                ("source", vertex(1, 250.0, 100.0, 200.0, &[])),
                ("map", vertex(2, 600.0, 200.0, 100.0, &["source"])),
                ("sink", vertex(1, 0.0, 0.0, 0.0, &["map"])),
            ],
        ),
    ];
    let e = evaluate(&samples, 30 * MIN).unwrap();
    assert!(close(e["source"].target_rate, 100.0));
    assert!(close(e["source"].true_processing_rate.unwrap(), 400.0));
    assert!(close(e["map"].target_rate, 200.0), "{:?}", e["map"]);
    // Averaged busy 700 ms/s: fully busy it would take 200 / 0.7 per second.
    assert!(close(e["map"].true_processing_rate.unwrap(), 200.0 / 0.7));
    assert!(close(e["sink"].target_rate, 100.0));
    assert_eq!(e["sink"].true_processing_rate, None, "idle: nothing to judge by");
}

#[test]
fn a_sources_backlog_is_to_be_caught_up_within_the_catch_up_duration() {
    let mut source = vertex(2, 500.0, 100.0, 100.0, &[]);
    source.pending_records = Some(180_000.0);
    let e = evaluate(&[sample(0, &[("source", source)])], 30 * MIN).unwrap();
    // 100/s coming in, plus 180,000 over 1,800 s.
    assert!(close(e["source"].target_rate, 200.0));
}

#[test]
fn an_unknown_input_or_a_cycle_is_not_evaluated() {
    assert_eq!(
        evaluate(&[sample(0, &[("a", vertex(1, 1.0, 1.0, 1.0, &["x"]))])], MIN),
        None
    );
    assert_eq!(
        evaluate(
            &[sample(
                0,
                &[
                    ("a", vertex(1, 1.0, 1.0, 1.0, &["b"])),
                    ("b", vertex(1, 1.0, 1.0, 1.0, &["a"]))
                ]
            )],
            MIN
        ),
        None
    );
    assert_eq!(evaluate(&[], MIN), None);
}

fn evaluated(parallelism: i64, target_rate: f64, true_rate: Option<f64>) -> Evaluated {
    Evaluated {
        parallelism,
        max_parallelism: 128,
        true_processing_rate: true_rate,
        target_rate,
        scalability: 1.0,
    }
}

#[test]
fn each_vertex_is_brought_to_the_target_utilization_within_its_bounds() {
    let options = AutoscalerOptions {
        enabled: true,
        ..AutoscalerOptions::default()
    };
    let now = 10 * 60 * MIN;
    let long_ago = BTreeMap::from([("v".to_owned(), now - 2 * 60 * MIN)]);
    for (case, e, since, to, why) in [
        // 2 subtasks at 150% of what they can: 2 * 1.5 / 0.7 = 4.3 -> 5, aligned to 8.
        (
            "overloaded",
            evaluated(2, 150.0, Some(100.0)),
            BTreeMap::new(),
            8,
            "Overloaded",
        ),
        (
            "within the band",
            evaluated(2, 70.0, Some(100.0)),
            BTreeMap::new(),
            2,
            "Balanced",
        ),
        ("idle", evaluated(2, 70.0, None), BTreeMap::new(), 2, "Idle"),
        // 8 at 10%: 8 * 0.1 / 0.7 -> 2, but no lower than 40% of 8 -> 4 (divides 128).
        (
            "underused, wanted long enough",
            evaluated(8, 10.0, Some(100.0)),
            long_ago.clone(),
            4,
            "Underused",
        ),
        (
            "underused, just now",
            evaluated(8, 10.0, Some(100.0)),
            BTreeMap::new(),
            8,
            "ScaleDownHeld",
        ),
        (
            "at its max parallelism",
            Evaluated {
                max_parallelism: 2,
                ..evaluated(2, 150.0, Some(100.0))
            },
            BTreeMap::new(),
            2,
            "AtItsBound",
        ),
    ] {
        let d = decide(&BTreeMap::from([("v".to_owned(), e)]), &options, &since, now);
        let v = d.vertices["v"];
        assert_eq!(v.to, to, "{case}: {v:?}");
        assert!(format!("{:?}", v.why).starts_with(why), "{case}: {v:?}");
    }
}

#[test]
fn limits_and_exclusions_are_kept() {
    let e = BTreeMap::from([("v".to_owned(), evaluated(2, 1_000.0, Some(100.0)))]);
    let options = |f: fn(&mut AutoscalerOptions)| {
        let mut o = AutoscalerOptions::default();
        f(&mut o);
        o
    };
    // At most twice (1 + 1.0) its parallelism, then aligned to a divisor of 128 within it.
    let up = decide(&e, &options(|o| o.scale_up_max_factor = 1.0), &BTreeMap::new(), 0);
    assert_eq!(up.vertices["v"].to, 4);
    let capped = decide(
        &e,
        &options(|o| o.vertex_max_parallelism = 6),
        &BTreeMap::new(),
        0,
    );
    assert_eq!(
        capped.vertices["v"].to, 6,
        "no divisor of 128 within 6 above 4... {capped:?}"
    );
    let excluded = decide(
        &e,
        &options(|o| o.excluded_vertices.insert("v".to_owned()).then_some(()).unwrap()),
        &BTreeMap::new(),
        0,
    );
    assert_eq!(excluded.vertices["v"].why, Why::Excluded);
    assert!(excluded.changes().is_empty());
}

#[test]
fn a_held_scale_down_is_remembered_and_forgotten_when_no_longer_wanted() {
    let options = AutoscalerOptions::default();
    let low = BTreeMap::from([("v".to_owned(), evaluated(8, 10.0, Some(100.0)))]);
    let first = decide(&low, &options, &BTreeMap::new(), 1_000);
    assert_eq!(first.scale_down_wanted_since["v"], 1_000);
    let later = decide(
        &low,
        &options,
        &first.scale_down_wanted_since,
        1_000 + options.scale_down_interval_ms,
    );
    assert_eq!(later.changes(), BTreeMap::from([("v".to_owned(), 4)]));
    let balanced = BTreeMap::from([("v".to_owned(), evaluated(8, 70.0, Some(100.0)))]);
    let back = decide(&balanced, &options, &first.scale_down_wanted_since, 2_000);
    assert!(back.scale_down_wanted_since.is_empty());
    assert!(
        back.report()
            .contains("vertex v: parallelism 8 -> 8 (expected utilization 0.70 within bounds"),
        "{}",
        back.report()
    );
}

#[test]
fn options_take_the_apache_defaults_and_the_band_from_the_boundary() {
    let o = AutoscalerOptions::from_config(&BTreeMap::new());
    let d = AutoscalerOptions::default();
    assert!(close(o.max_utilization, 1.0) && close(o.min_utilization, 0.4));
    assert_eq!(
        AutoscalerOptions {
            min_utilization: d.min_utilization,
            ..o
        },
        d
    );
    let o = AutoscalerOptions::from_config(&BTreeMap::from([
        ("job.autoscaler.enabled".to_owned(), "true".to_owned()),
        ("job.autoscaler.utilization.target".to_owned(), "0.5".to_owned()),
        (
            "job.autoscaler.target.utilization.boundary".to_owned(),
            "0.1".to_owned(),
        ),
        ("job.autoscaler.metrics.window".to_owned(), "2 min".to_owned()),
        ("job.autoscaler.vertex.exclude.ids".to_owned(), "a,b".to_owned()),
    ]));
    assert!(o.enabled && close(o.max_utilization, 0.6) && close(o.min_utilization, 0.4));
    assert_eq!(o.metrics_window_ms, 2 * MIN);
    assert_eq!(o.excluded_vertices.len(), 2);
}

/// `GET /jobs/:jobid` and the vertices' aggregated metrics of the test job on Flink 1.20
/// (trimmed to the fields read), as the JobManager answered them.
#[test]
fn a_sample_is_read_from_what_the_job_manager_answers() {
    let details: crate::flink::JobDetails = serde_json::from_str(
        r#"{"jid": "8e0d115a29a7213bf21df315bfd9fd01", "name": "keyed-counter", "state": "RUNNING",
            "start-time": 1796535776824, "end-time": -1,
            "vertices": [
              {"id": "f421c7059e6771b9a595acc02e87aaef", "name": "Source: sequence-source",
               "maxParallelism": 128, "parallelism": 3, "status": "RUNNING"},
              {"id": "ed63c6d066f83fc9a893ba13a9fb615d",
               "name": "keyed-counter -> count-files -> print-sink: Writer",
               "maxParallelism": 128, "parallelism": 3, "status": "RUNNING"}],
            "plan": {"nodes": [
              {"id": "f421c7059e6771b9a595acc02e87aaef", "parallelism": 3},
              {"id": "ed63c6d066f83fc9a893ba13a9fb615d", "parallelism": 3,
               "inputs": [{"num": 0, "id": "f421c7059e6771b9a595acc02e87aaef", "ship_strategy": "HASH",
                           "exchange": "pipelined_bounded"}]}]}}"#,
    )
    .unwrap();
    let metrics: BTreeMap<String, Vec<crate::flink::AggregatedMetric>> = BTreeMap::from([
        (
            "f421c7059e6771b9a595acc02e87aaef".to_owned(),
            serde_json::from_str(
                r#"[{"id":"busyTimeMsPerSecond","max":0.0,"sum":0.0},{"id":"numRecordsInPerSecond","max":0.0,"sum":0.0},
                    {"id":"numRecordsOutPerSecond","max":2.716666666666667,"sum":5.383333333333333}]"#,
            )
            .unwrap(),
        ),
        (
            "ed63c6d066f83fc9a893ba13a9fb615d".to_owned(),
            serde_json::from_str(
                r#"[{"id":"busyTimeMsPerSecond","max":12.0,"sum":20.0},{"id":"numRecordsInPerSecond","max":5.4,"sum":5.4},
                    {"id":"numRecordsOutPerSecond","max":0.0,"sum":0.0}]"#,
            )
            .unwrap(),
        ),
    ]);
    let pending = BTreeMap::from([("f421c7059e6771b9a595acc02e87aaef".to_owned(), 600.0)]);
    let sample = super::collect::of(&details, &metrics, &pending, 7);
    let source = &sample.vertices["f421c7059e6771b9a595acc02e87aaef"];
    assert!(source.inputs.is_empty());
    assert!(
        close(source.records_in_per_s, 5.383333333333333),
        "a source's input is what it sends"
    );
    assert_eq!((source.parallelism, source.max_parallelism), (3, 128));
    assert_eq!(source.pending_records, Some(600.0));
    let counter = &sample.vertices["ed63c6d066f83fc9a893ba13a9fb615d"];
    assert_eq!(counter.inputs, ["f421c7059e6771b9a595acc02e87aaef"]);
    assert!(close(counter.busy_ms_per_s, 12.0), "the busiest subtask");
    assert!(close(counter.records_in_per_s, 5.4));
    // What the source reads flows on to the counter, which was busy 1.2 % of the time.
    // ... with the source's backlog of 600 worked off within 30 min: 1/3 record a second more.
    let evaluated = evaluate(&[sample], 30 * MIN).unwrap();
    let counter = evaluated["ed63c6d066f83fc9a893ba13a9fb615d"];
    assert!(
        close(counter.target_rate, 5.383333333333333 + 600.0 / 1800.0),
        "{evaluated:?}"
    );
    assert!(
        close(counter.true_processing_rate.unwrap(), 450.0),
        "{evaluated:?}"
    );
}

#[test]
fn a_job_is_judged_once_its_window_is_full_and_each_report_is_published_once() {
    use super::memory::{JobWindow, Judgement, judge};
    let options = AutoscalerOptions {
        enabled: true,
        metrics_window_ms: 3 * MIN,
        stabilization_ms: MIN,
        target_utilization: 0.5,
        max_utilization: 0.7,
        min_utilization: 0.3,
        restart_ms: 0,
        ..AutoscalerOptions::default()
    };
    let mut window = JobWindow::default();
    let mut judged = Vec::new();
    for minute in 0..=5 {
        let at = minute * MIN;
        judged.push((minute, judge(&mut window, "j1", overloaded(at, 2), &options, at)));
    }
    let published: Vec<i64> = judged
        .iter()
        .filter(|(_, j)| j.report.is_some())
        .map(|(m, _)| *m)
        .collect();
    assert_eq!(
        published,
        [3],
        "once the window is full, then not again: {judged:?}"
    );
    let report = judged[3].1.report.clone().unwrap();
    assert!(
        report.starts_with("vertex work: parallelism 2 -> 4 (expected utilization 0.90"),
        "{report}"
    );
    // The change is wanted at every look until it is made, reported or not.
    let wanted = BTreeMap::from([("work".to_owned(), 4)]);
    for (minute, j) in &judged[3..] {
        assert_eq!(j.changes, wanted, "minute {minute}");
    }
    // Another parallelism (the job was rescaled) starts the window again once the
    // stabilization interval is over: from minute 7, full at 10.
    for minute in [6, 7, 9] {
        let at = minute * MIN;
        assert_eq!(
            judge(&mut window, "j1", overloaded(at, 4), &options, at),
            Judgement::default(),
            "minute {minute}"
        );
    }
    let at = 10 * MIN;
    assert!(
        judge(&mut window, "j1", overloaded(at, 4), &options, at)
            .report
            .is_some()
    );
}

/// A source feeding a vertex of `p` busy 90 % of the time: over a maximum of 0.7.
fn overloaded(at: i64, p: i64) -> Sample {
    sample(
        at,
        &[
            ("source", vertex(1, 100.0, 100.0, 100.0, &[])),
            ("work", vertex(p, 900.0, 100.0, 0.0, &["source"])),
        ],
    )
}

#[test]
fn advisory_mode_and_an_excluded_period_report_a_decision_and_change_nothing() {
    use super::memory::{JobWindow, judge};
    use flink_operator_api::options::periods::ExcludedPeriods;
    let base = AutoscalerOptions {
        enabled: true,
        metrics_window_ms: MIN,
        target_utilization: 0.5,
        max_utilization: 0.7,
        min_utilization: 0.3,
        restart_ms: 0,
        ..AutoscalerOptions::default()
    };
    // 2026-12-07T09:30:00Z, a Monday.
    let monday_morning = 1_796_635_800_000;
    let cases = [
        (
            AutoscalerOptions {
                scaling_enabled: false,
                ..base.clone()
            },
            "not applied: job.autoscaler.scaling.enabled is false (advisory)",
        ),
        (
            AutoscalerOptions {
                excluded_periods: ExcludedPeriods::parse("9:00-10:00 && * * * ? * MON-FRI").unwrap(),
                ..base.clone()
            },
            "not applied: within an excluded period (job.autoscaler.excluded.periods)",
        ),
    ];
    for (options, said) in cases {
        let mut window = JobWindow::default();
        let first = monday_morning - MIN;
        judge(&mut window, "j1", overloaded(first, 2), &options, first);
        let j = judge(
            &mut window,
            "j1",
            overloaded(monday_morning, 2),
            &options,
            monday_morning,
        );
        let report = j.report.unwrap_or_default();
        assert!(
            report.contains("parallelism 2 -> 4") && report.ends_with(said),
            "{report}"
        );
        assert!(j.changes.is_empty(), "{said}");
    }
    // Outside the period, the same decision is made.
    let options = AutoscalerOptions {
        excluded_periods: ExcludedPeriods::parse("9:00-10:00").unwrap(),
        ..base
    };
    let mut window = JobWindow::default();
    let (first, then) = (
        monday_morning + 2 * 3_600_000,
        monday_morning + 2 * 3_600_000 + MIN,
    );
    judge(&mut window, "j1", overloaded(first, 2), &options, first);
    let j = judge(&mut window, "j1", overloaded(then, 2), &options, then);
    assert_eq!(j.changes, BTreeMap::from([("work".to_owned(), 4)]));
}

#[test]
fn a_scale_up_also_catches_up_what_piles_up_while_the_job_restarts() {
    let evaluated = BTreeMap::from([(
        "work".to_owned(),
        Evaluated {
            parallelism: 4,
            max_parallelism: 120,
            true_processing_rate: Some(100.0),
            target_rate: 90.0,
            scalability: 1.0,
        },
    )]);
    let options = |restart_ms| AutoscalerOptions {
        enabled: true,
        target_utilization: 0.5,
        max_utilization: 0.7,
        min_utilization: 0.3,
        restart_ms,
        catch_up_ms: 30 * MIN,
        ..AutoscalerOptions::default()
    };
    let to = |restart_ms| decide(&evaluated, &options(restart_ms), &BTreeMap::new(), 0).vertices["work"].to;
    // 90/s at 0.5 needs 180/s of the vertex's 25/s per subtask: 7.2, aligned to 8 (of 120).
    assert_eq!(to(0), 8);
    // 5 min of 90/s caught up within 30 min: 15/s more, 195/s: 7.8, still 8.
    assert_eq!(to(5 * MIN), 8);
    // 15 min: 45/s more, 225/s: 9, aligned to 10.
    assert_eq!(to(15 * MIN), 10);
}

/// A JobManager on loopback that answers the autoscaler's reads of the test job (two
/// vertices) as Flink 1.20 does, and keeps the paths it was asked for.
async fn scripted_job_manager() -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = asked.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    let Ok(n) = stream.read(&mut buf).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    request.extend_from_slice(&buf[..n]);
                }
                let text = String::from_utf8_lossy(&request);
                let path = text.split_whitespace().nth(1).unwrap_or("").to_owned();
                seen.lock().unwrap().push(path.clone());
                let body = if path.ends_with("/subtasks/metrics") {
                    r#"[{"id":"busyTimeMsPerSecond"},{"id":"Source__sequence-source.numRecordsOutPerSecond"}]"#.to_owned()
                } else if path.contains("/subtasks/metrics?") {
                    r#"[{"id":"busyTimeMsPerSecond","max":100.0,"sum":150.0},{"id":"numRecordsInPerSecond","max":5.0,"sum":10.0},{"id":"numRecordsOutPerSecond","max":5.0,"sum":10.0}]"#.to_owned()
                } else {
                    r#"{"jid":"e3bc32a1e3bc32a1e3bc32a1e3bc32a1","name":"keyed-counter","state":"RUNNING",
                        "vertices":[{"id":"src","parallelism":2,"maxParallelism":128,"status":"RUNNING"},
                                    {"id":"cnt","parallelism":2,"maxParallelism":128,"status":"RUNNING"}],
                        "plan":{"nodes":[{"id":"src"},{"id":"cnt","inputs":[{"id":"src"}]}]}}"#
                        .to_owned()
                };
                let answer = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(answer.as_bytes()).await;
            });
        }
    });
    (url, asked)
}

#[tokio::test]
async fn a_sample_costs_one_call_for_the_job_one_per_vertex_and_one_per_source_without_a_backlog() {
    let (url, asked) = scripted_job_manager().await;
    let rest = crate::flink::FlinkRestClient::new(&url, crate::flink::ClientConfig::default()).unwrap();
    let job = crate::flink::JobId::from("e3bc32a1e3bc32a1e3bc32a1e3bc32a1");
    let sample = super::collect::sample(&rest, &job, 7).await.unwrap();
    assert_eq!(sample.vertices["cnt"].inputs, ["src"]);
    assert_eq!(
        sample.vertices["src"].pending_records, None,
        "no pendingRecords reported"
    );
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 4, "{asked:?}");
}

#[test]
fn a_vertex_judged_at_several_parallelisms_is_given_more_when_it_scaled_worse_than_linearly() {
    use super::memory::{JobWindow, judge};
    let options = |observed| AutoscalerOptions {
        enabled: true,
        metrics_window_ms: MIN,
        stabilization_ms: 0,
        target_utilization: 0.5,
        max_utilization: 0.7,
        min_utilization: 0.3,
        restart_ms: 0,
        observed_scalability: observed,
        ..AutoscalerOptions::default()
    };
    // A vertex that processes 125/s at 1 and 200/s at 2 (100/s in, busy 0.8 and 0.5), then
    // 250/s at 4 (225/s in, busy 0.9: over the maximum).
    let at = |p: i64, rate: f64, busy: f64, t: i64| {
        sample(
            t,
            &[
                ("source", vertex(1, 100.0, rate, rate, &[])),
                ("work", vertex(p, busy, rate, 0.0, &["source"])),
            ],
        )
    };
    let run = |o: AutoscalerOptions| {
        let mut window = JobWindow::default();
        let mut t = 0;
        let mut last = Default::default();
        for (p, rate, busy) in [(1, 100.0, 800.0), (2, 100.0, 500.0), (4, 225.0, 900.0)] {
            for _ in 0..2 {
                last = judge(&mut window, "j1", at(p, rate, busy, t), &o, t);
                t += MIN;
            }
        }
        last
    };
    // Linear: 4 x 0.9 / 0.5 = 7.2 -> 8 (a divisor of 128).
    assert_eq!(
        run(options(None)).changes,
        BTreeMap::from([("work".to_owned(), 8)])
    );
    // Observed: 1 x 125, 2 x 200, 4 x 250 fit 1525/21 = 72.6 a subtask, 0.58 of 125:
    // 7.2 / 0.58 = 12.4 -> 16.
    let observed = run(options(Some((3, 0.5))));
    assert_eq!(
        observed.changes,
        BTreeMap::from([("work".to_owned(), 16)]),
        "{observed:?}"
    );
}
