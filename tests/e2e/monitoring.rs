//! The chart's monitoring kit against the real operator: every expression of its alerts
//! (PrometheusRule) and its Grafana dashboard parses as PromQL, every metric they query is one
//! the operator serves, with the suffixes of its type, and every Event reason an alert names
//! is one the operator publishes.
//!
//! A family without a series yet (no resource of a kind, no admission review) is not in
//! `/metrics` at all, so the families are those of the metrics reference (generated from the
//! code), each checked against the running operator's `/metrics`: every family it serves is
//! there, with the same type.

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

/// `| \`<name>\` | <type> | ...` rows of the metrics reference.
fn documented() -> BTreeMap<String, String> {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/reference/metrics.md")).unwrap();
    text.lines()
        .filter_map(|line| {
            let mut cells = line.split('|').map(str::trim).skip(1);
            let name = cells.next()?.strip_prefix('`')?.strip_suffix('`')?;
            let kind = cells.next()?;
            Some((name.to_owned(), kind.to_owned()))
        })
        .collect()
}

/// The operator's metric names in a PromQL expression (its own and its process's).
fn metric_names(expr: &str) -> BTreeSet<String> {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    expr.split(|c: char| !word(c))
        .filter(|w| w.starts_with("flink_operator_") || w.starts_with("process_"))
        .map(str::to_owned)
        .collect()
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
    let served_now = families(&answer);
    let families = documented();
    assert!(families.len() > 15, "{families:?}");
    for (name, kind) in &served_now {
        assert_eq!(
            families.get(name),
            Some(kind),
            "{name} ({kind}) is served but not in docs/reference/metrics.md as such"
        );
    }
    assert!(
        served_now.contains_key("flink_operator_leader")
            && served_now.contains_key("flink_operator_reconcile_errors"),
        "{answer}"
    );

    let expressions = tokio::task::spawn_blocking(expressions).await.unwrap();
    let alerts = expressions.iter().filter(|(w, _)| w.starts_with("alert")).count();
    let panels = expressions.iter().filter(|(w, _)| w.starts_with("panel")).count();
    assert!(
        alerts >= 10 && panels >= 15,
        "{alerts} alerts, {panels} panel queries"
    );
    let unparsed: Vec<String> = expressions
        .iter()
        .filter_map(|(what, expr)| {
            promql_parser::parser::parse(expr)
                .err()
                .map(|e| format!("{what}: {e}: {expr}"))
        })
        .collect();
    assert!(unparsed.is_empty(), "not PromQL: {unparsed:#?}");
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
    assert!(unknown.is_empty(), "not served by the operator: {unknown:#?}");
    let now = queried.iter().filter(|n| served(n, &served_now)).count();
    eprintln!(
        "MEASURED monitoring: {alerts} alerts and {panels} panel queries over {} metrics, all served \
         ({now} of them with series in /metrics at this moment; {} families served)",
        queried.len(),
        served_now.len()
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
fn the_promql_parser_refuses_what_prometheus_would() {
    assert!(
        promql_parser::parser::parse("sum by (kind) (rate(flink_operator_reconcile_errors_total[5m])) > 0")
            .is_ok()
    );
    for bad in ["sum by (kind (rate(x[5m]))", "rate(x)", "x > > 1"] {
        assert!(promql_parser::parser::parse(bad).is_err(), "{bad}");
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
