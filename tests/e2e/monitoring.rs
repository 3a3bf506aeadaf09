//! The chart's monitoring kit against the real operator: every metric that its alerts
//! (PrometheusRule) and its Grafana dashboard query is one that the running operator's
//! `/metrics` serves, with the suffixes of its type, and every Event reason an alert names is
//! one the operator publishes.

use std::collections::{BTreeMap, BTreeSet};

use flink_operator_controller::events::Reason;
use serde_json::Value;

use crate::chart_rbac::render_chart;

/// `# TYPE <name> <type>` of a `/metrics` answer.
fn families(metrics: &str) -> BTreeMap<String, String> {
    metrics
        .lines()
        .filter_map(|line| line.strip_prefix("# TYPE "))
        .filter_map(|rest| {
            let (name, kind) = rest.split_once(' ')?;
            Some((name.to_owned(), kind.trim().to_owned()))
        })
        .collect()
}

/// The operator's metric names in a PromQL expression.
fn metric_names(expr: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = expr;
    while let Some(at) = rest.find("flink_operator_") {
        let name: String = rest[at..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        rest = &rest[at + name.len()..];
        names.insert(name);
    }
    names
}

/// Whether `name`, as an expression writes it, is a sample of one of `families`: a gauge by
/// its name, a counter by `_total`, a histogram by `_bucket`, `_sum` or `_count`.
fn served(name: &str, families: &BTreeMap<String, String>) -> bool {
    let of = |suffix: &str, kind: &str| {
        name.strip_suffix(suffix)
            .and_then(|family| families.get(family))
            .is_some_and(|k| k == kind)
    };
    families.get(name).is_some_and(|k| k == "gauge")
        || of("_total", "counter")
        || ["_bucket", "_sum", "_count"].iter().any(|s| of(s, "histogram"))
}

/// Every expression of the rendered PrometheusRule and dashboard, with where it is.
fn expressions() -> Vec<(String, String)> {
    let values = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/charts/flink-operator/ci/monitoring-values.yaml"
    );
    let objects = render_chart(&["-f", values]);
    let mut found = Vec::new();
    for object in &objects {
        match object["kind"].as_str() {
            Some("PrometheusRule") => {
                for group in object["spec"]["groups"].as_array().unwrap() {
                    for rule in group["rules"].as_array().unwrap() {
                        found.push((
                            format!("alert {}", rule["alert"].as_str().unwrap()),
                            rule["expr"].as_str().unwrap().to_owned(),
                        ));
                    }
                }
            }
            Some("ConfigMap")
                if object["metadata"]["name"]
                    .as_str()
                    .unwrap()
                    .ends_with("-dashboard") =>
            {
                let text = object["data"]["flink-operator.json"].as_str().unwrap();
                let dashboard: Value = serde_json::from_str(text).expect("the dashboard is JSON");
                for panel in dashboard["panels"].as_array().unwrap() {
                    for target in panel["targets"].as_array().into_iter().flatten() {
                        found.push((
                            format!("panel {:?}", panel["title"].as_str().unwrap()),
                            target["expr"].as_str().unwrap().to_owned(),
                        ));
                    }
                }
            }
            _ => {}
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_metric_the_alerts_and_the_dashboard_query_is_served_by_the_operator() {
    let client = crate::harness::client().await;
    crate::operator::shared(&client).await;
    let answer = tokio::task::spawn_blocking(|| crate::operator::probe_get("/metrics"))
        .await
        .unwrap();
    let families = families(&answer);
    assert!(families.len() > 10, "{answer}");

    let expressions = tokio::task::spawn_blocking(expressions).await.unwrap();
    let alerts = expressions.iter().filter(|(w, _)| w.starts_with("alert")).count();
    let panels = expressions.iter().filter(|(w, _)| w.starts_with("panel")).count();
    assert!(
        alerts >= 10 && panels >= 15,
        "{alerts} alerts, {panels} panel queries"
    );
    let mut unknown = Vec::new();
    let mut queried = BTreeSet::new();
    for (what, expr) in &expressions {
        let names = metric_names(expr);
        assert!(
            !names.is_empty(),
            "{what} queries no metric of the operator: {expr}"
        );
        for name in names {
            if !served(&name, &families) {
                unknown.push(format!("{what}: {name}"));
            }
            queried.insert(name);
        }
    }
    assert!(unknown.is_empty(), "not served by /metrics: {unknown:#?}");
    eprintln!(
        "MEASURED monitoring: {alerts} alerts and {panels} panel queries over {} metrics, all served",
        queried.len()
    );

    // The reasons an alert names are Event reasons the operator publishes.
    let reasons: BTreeSet<&str> = Reason::ALL.iter().map(|r| r.as_str()).collect();
    for (what, expr) in &expressions {
        let Some(at) = expr.find("reason=~\"") else {
            continue;
        };
        let list = &expr[at + 9..];
        let list = &list[..list.find('"').unwrap()];
        for reason in list.split('|') {
            assert!(reasons.contains(reason), "{what}: {reason} is no Event reason");
        }
    }
}

#[test]
fn names_are_read_from_expressions_and_matched_by_type() {
    assert_eq!(
        metric_names(
            "sum by (kind) (rate(flink_operator_reconcile_errors_total[5m])) > flink_operator_leader"
        ),
        BTreeSet::from([
            "flink_operator_leader".to_owned(),
            "flink_operator_reconcile_errors_total".to_owned()
        ])
    );
    let families = families(
        "# TYPE flink_operator_leader gauge\n# TYPE flink_operator_reconcile_errors counter\n\
         # TYPE flink_operator_reconcile_duration_seconds histogram\n",
    );
    for (name, ok) in [
        ("flink_operator_leader", true),
        ("flink_operator_reconcile_errors_total", true),
        ("flink_operator_reconcile_errors", false),
        ("flink_operator_reconcile_duration_seconds_bucket", true),
        ("flink_operator_reconcile_duration_seconds_total", false),
        ("flink_operator_leader_total", false),
    ] {
        assert_eq!(served(name, &families), ok, "{name}");
    }
}
