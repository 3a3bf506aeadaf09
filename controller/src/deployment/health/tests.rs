use super::*;

const MIN: i64 = 60_000;
const T0: i64 = 1_700_000_000_000;

fn settings(window_ms: i64, threshold: i64, checkpoint_window_ms: Option<i64>) -> HealthSettings {
    HealthSettings {
        restarts_window_ms: window_ms,
        restarts_threshold: threshold,
        checkpoint_window_ms,
    }
}

fn sample(restarts: i64, checkpoints: i64) -> HealthSample {
    HealthSample {
        num_restarts: restarts,
        num_completed_checkpoints: checkpoints,
    }
}

/// A healthy history whose restart baseline is `restarts` taken at `at`, and whose
/// checkpoint count `checkpoints` last went up at `increased`.
fn history(at: i64, restarts: i64, checkpoints: i64, increased: i64) -> HealthHistory {
    HealthHistory {
        time_stamp: at.max(increased),
        num_restarts: restarts,
        num_restarts_evaluation_time_stamp: at,
        num_completed_checkpoints: checkpoints,
        num_completed_checkpoints_increased_time_stamp: increased,
        health_result: HealthResult::default(),
    }
}

fn unhealthy(verdict: &Verdict) -> bool {
    matches!(verdict, Verdict::Unhealthy(_))
}

/// (what, stored history, sample, now, settings, unhealthy, restart baseline after, its time
/// after)
type Case = (
    &'static str,
    Option<HealthHistory>,
    Option<HealthSample>,
    i64,
    HealthSettings,
    bool,
    i64,
    i64,
);

#[test]
fn the_verdict_follows_restarts_and_checkpoint_progress() {
    let restarts_only = settings(2 * MIN, 3, None);
    let with_checkpoints = settings(2 * MIN, 3, Some(MIN));
    let cases: Vec<Case> = vec![
        (
            "first look: the baseline",
            None,
            Some(sample(7, 0)),
            T0,
            restarts_only,
            false,
            7,
            T0,
        ),
        (
            "restarts at the threshold within the window",
            Some(history(T0, 7, 0, T0)),
            Some(sample(10, 0)),
            T0 + MIN,
            restarts_only,
            false,
            7,
            T0,
        ),
        (
            "restarts over the threshold within the window",
            Some(history(T0, 7, 0, T0)),
            Some(sample(11, 0)),
            T0 + MIN,
            restarts_only,
            true,
            7,
            T0,
        ),
        (
            "over the threshold at the window's last millisecond",
            Some(history(T0, 7, 0, T0)),
            Some(sample(11, 0)),
            T0 + 2 * MIN,
            restarts_only,
            true,
            7,
            T0,
        ),
        (
            "a baseline past the window: the restarts are scaled to it, then it moves up",
            Some(history(T0, 0, 0, T0)),
            // 8 restarts over 4 minutes: 4 in a 2-minute window, over 3.
            Some(sample(8, 0)),
            T0 + 4 * MIN,
            restarts_only,
            true,
            8,
            T0 + 4 * MIN,
        ),
        (
            "a baseline past the window: few restarts spread out are healthy",
            Some(history(T0, 0, 0, T0)),
            // 6 restarts over 4 minutes: 3 in the window, not over 3.
            Some(sample(6, 0)),
            T0 + 4 * MIN,
            restarts_only,
            false,
            6,
            T0 + 4 * MIN,
        ),
        (
            "restarts went down (a new job): a new baseline, healthy",
            Some(history(T0, 50, 0, T0)),
            Some(sample(2, 0)),
            T0 + MIN,
            restarts_only,
            false,
            2,
            T0 + MIN,
        ),
        (
            "no sample (not running, metrics unanswered): the history stays",
            Some(history(T0, 7, 0, T0)),
            None,
            T0 + MIN,
            restarts_only,
            false,
            7,
            T0,
        ),
        (
            "the same millisecond again",
            Some(history(T0, 7, 0, T0)),
            Some(sample(7, 0)),
            T0,
            restarts_only,
            false,
            7,
            T0,
        ),
        (
            "the clock went back: the history starts again",
            Some(history(T0, 7, 0, T0)),
            Some(sample(100, 0)),
            T0 - MIN,
            restarts_only,
            false,
            100,
            T0 - MIN,
        ),
        (
            "checkpoints completed within the window",
            Some(history(T0, 0, 4, T0)),
            Some(sample(0, 5)),
            T0 + 5 * MIN,
            with_checkpoints,
            false,
            0,
            T0 + 5 * MIN,
        ),
        (
            "no checkpoint for exactly the window",
            Some(history(T0, 0, 4, T0)),
            Some(sample(0, 4)),
            T0 + MIN,
            with_checkpoints,
            false,
            0,
            T0,
        ),
        (
            "no checkpoint for longer than the window",
            Some(history(T0, 0, 4, T0)),
            Some(sample(0, 4)),
            T0 + MIN + 1,
            with_checkpoints,
            true,
            0,
            T0,
        ),
        (
            "no checkpoint for long, but the progress check is off",
            Some(history(T0, 0, 4, T0)),
            Some(sample(0, 4)),
            T0 + 10 * MIN,
            restarts_only,
            false,
            0,
            T0 + 10 * MIN,
        ),
        (
            "the checkpoint count went down (a new job): the window starts again",
            Some(history(T0, 0, 40, T0)),
            Some(sample(0, 0)),
            T0 + 10 * MIN,
            with_checkpoints,
            false,
            0,
            T0 + 10 * MIN,
        ),
    ];
    for (what, stored, observed, now, settings, want_unhealthy, baseline, baseline_at) in cases {
        let (next, verdict) = evaluate(stored.as_ref(), observed.as_ref(), now, Some(&settings));
        let next = next.unwrap_or_else(|| panic!("{what}: a history"));
        assert_eq!(unhealthy(&verdict), want_unhealthy, "{what}: {verdict:?}");
        assert_eq!(!next.health_result.healthy, want_unhealthy, "{what}: {next:?}");
        assert_eq!(next.num_restarts, baseline, "{what}: baseline");
        assert_eq!(
            next.num_restarts_evaluation_time_stamp, baseline_at,
            "{what}: baseline time"
        );
    }
}

#[test]
fn a_disabled_check_reads_nothing_and_drops_its_history() {
    let stored = history(T0, 7, 0, T0);
    assert_eq!(
        evaluate(Some(&stored), Some(&sample(100, 0)), T0 + MIN, None),
        (None, Verdict::Unknown)
    );
    assert_eq!(evaluate(None, None, T0, None), (None, Verdict::Unknown));
}

#[test]
fn the_window_slides_past_old_restarts() {
    let settings = settings(MIN, 2, None);
    // A restart a minute, looked at every 20 s: the baseline moves on once it is older
    // than the window, and the restarts since are never more than 2.
    let mut stored = None;
    let mut restarts = 0;
    for look in 0..30 {
        let now = T0 + look * 20_000;
        if look % 3 == 0 {
            restarts += 1;
        }
        let (next, verdict) = evaluate(stored.as_ref(), Some(&sample(restarts, 0)), now, Some(&settings));
        assert!(!unhealthy(&verdict), "look {look}: {verdict:?} {next:?}");
        stored = next;
    }
    // Then a burst: 3 more within the window.
    let now = T0 + 30 * 20_000;
    let (_, verdict) = evaluate(
        stored.as_ref(),
        Some(&sample(restarts + 3, 0)),
        now,
        Some(&settings),
    );
    assert!(unhealthy(&verdict), "{verdict:?}");
}

#[test]
fn an_unhealthy_verdict_says_why_and_stays_while_nothing_is_sampled() {
    let settings = settings(2 * MIN, 3, Some(MIN));
    let (next, verdict) = evaluate(
        Some(&history(T0, 0, 4, T0)),
        Some(&sample(9, 4)),
        T0 + 2 * MIN,
        Some(&settings),
    );
    let Verdict::Unhealthy(why) = verdict else {
        panic!("{verdict:?}")
    };
    assert!(why.contains("restarted 9 times within 2m"), "{why}");
    assert!(why.contains("no checkpoint completed within 1m"), "{why}");
    let (kept, verdict) = evaluate(next.as_ref(), None, T0 + 3 * MIN, Some(&settings));
    assert_eq!(kept, next);
    assert_eq!(verdict, Verdict::Unhealthy(why));
}

#[test]
fn a_look_that_changes_nothing_changes_no_time() {
    let settings = settings(2 * MIN, 3, Some(10 * MIN));
    let stored = history(T0, 1, 4, T0);
    let (next, _) = evaluate(Some(&stored), Some(&sample(1, 4)), T0 + MIN, Some(&settings));
    assert_eq!(
        next.as_ref(),
        Some(&stored),
        "no status write for a look that saw nothing new"
    );
}

#[test]
fn the_history_reads_and_writes_the_apache_operators_shape() {
    // As the Apache operator writes it (Jackson, its field names).
    let apache = r#"{"timeStamp":1700000060000,"numRestarts":3,"numRestartsEvaluationTimeStamp":1700000000000,"numCompletedCheckpoints":12,"numCompletedCheckpointsIncreasedTimeStamp":1700000050000,"healthResult":{"healthy":false,"error":"Restart count hit threshold: 2"}}"#;
    let info = BTreeMap::from([
        (CLUSTER_INFO_KEY.to_owned(), apache.to_owned()),
        ("flink-version".to_owned(), "1.20.1".to_owned()),
    ]);
    let read = HealthHistory::read(Some(&info)).expect("readable");
    assert_eq!(read.num_restarts, 3);
    assert_eq!(
        read.num_completed_checkpoints_increased_time_stamp,
        1_700_000_050_000
    );
    assert!(!read.health_result.healthy);
    let mut stored = Some(info.clone());
    HealthHistory::store(&mut stored, Some(&read));
    let written: serde_json::Value =
        serde_json::from_str(&stored.as_ref().expect("kept")[CLUSTER_INFO_KEY]).expect("JSON");
    assert_eq!(
        written,
        serde_json::from_str::<serde_json::Value>(apache).expect("JSON")
    );
    // Removing it keeps the other entries; an emptied map goes.
    HealthHistory::store(&mut stored, None);
    assert_eq!(stored.as_ref().map(|m| m.len()), Some(1));
    let mut only = Some(BTreeMap::from([(CLUSTER_INFO_KEY.to_owned(), apache.to_owned())]));
    HealthHistory::store(&mut only, None);
    assert_eq!(only, None);
    // Unreadable is no history.
    let broken = BTreeMap::from([(CLUSTER_INFO_KEY.to_owned(), "{".to_owned())]);
    assert_eq!(HealthHistory::read(Some(&broken)), None);
}

#[test]
fn a_sample_is_read_from_the_job_metrics() {
    let metric = |id: &str, value: &str| MetricValue {
        id: id.to_owned(),
        value: Some(value.to_owned()),
    };
    assert_eq!(
        HealthSample::from_metrics(&[metric(NUM_RESTARTS, "4"), metric(COMPLETED_CHECKPOINTS, "12")]),
        Some(sample(4, 12))
    );
    assert_eq!(
        HealthSample::from_metrics(&[metric(FULL_RESTARTS, "2"), metric(COMPLETED_CHECKPOINTS, "1")]),
        Some(sample(2, 1)),
        "older Flink versions"
    );
    assert_eq!(
        HealthSample::from_metrics(&[metric(NUM_RESTARTS, "0")]),
        Some(sample(0, 0))
    );
    assert_eq!(
        HealthSample::from_metrics(&[metric(COMPLETED_CHECKPOINTS, "3")]),
        None
    );
    assert_eq!(HealthSample::from_metrics(&[]), None);
    let decoded: Vec<MetricValue> = serde_json::from_str(
        r#"[{"id":"numRestarts","value":"7"},{"id":"numberOfCompletedCheckpoints","value":"3"}]"#,
    )
    .expect("Flink's answer");
    assert_eq!(HealthSample::from_metrics(&decoded), Some(sample(7, 3)));
}
