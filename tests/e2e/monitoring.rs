//! The chart's monitoring kit against the real operator: every metric that the expressions
//! of its alerts (PrometheusRule) and its Grafana dashboard query is one
//! the operator serves, with the suffixes of its type, and every Event reason an alert names
//! is one the operator publishes. Prometheus' own promtool lints the operator's `/metrics`
//! (`check metrics`: names, suffixes, units, help), checks the rules and the dashboard's
//! queries (`check rules`) and evaluates every alert on series it is for and on series it is
//! not for (`test rules`).
//!
//! A family without a series yet (no resource of a kind, no admission review) is not in
//! `/metrics` at all, so the families are those of the metrics reference (generated from the
//! code), each checked against the running operator's `/metrics`: every family it serves is
//! there, with the same type.

use std::{
    collections::{BTreeMap, BTreeSet},
    io::Write,
    process::{Command, Stdio},
};

use flink_operator_controller::events::Reason;
use serde_json::{Value, json};

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
    let _turn = crate::cluster_harness::beside_others().await;
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
    let body = answer
        .split_once("\r\n\r\n")
        .map_or(answer.as_str(), |(_, body)| body);
    let text = as_prometheus_text(body);
    let linted = tokio::task::spawn_blocking(move || promtool(&["check", "metrics"], Some(&text)))
        .await
        .unwrap();
    assert_eq!(linted, Ok(String::new()), "promtool check metrics");

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

/// Runs Prometheus' promtool (`tests/tools/build-promtool.sh`, cached) with `args` and
/// `stdin`: what it printed when it exited 0, else all it printed.
fn promtool(args: &[&str], stdin: Option<&str>) -> Result<String, String> {
    let mut child = Command::new(crate::chart_rbac::tool("build-promtool.sh"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.unwrap_or_default().as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    if output.status.success() {
        Ok(stdout)
    } else {
        Err(format!("{stdout}{}", String::from_utf8_lossy(&output.stderr)))
    }
}

/// The OpenMetrics text the operator serves, as Prometheus' text format, which promtool
/// lints: there a counter's family is named with its `_total`, and there is no `# UNIT` or
/// `# EOF` line (Prometheus reads the one as it scrapes the other).
fn as_prometheus_text(openmetrics: &str) -> String {
    let counters: BTreeSet<&str> = openmetrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE ")?.strip_suffix(" counter"))
        .collect();
    let mut text = String::new();
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let meta = ["# HELP ", "# TYPE "]
            .into_iter()
            .find_map(|p| Some((p, line.strip_prefix(p)?)));
        match meta {
            Some((prefix, rest)) => {
                let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
                let name = if counters.contains(name) {
                    format!("{name}_total")
                } else {
                    name.to_owned()
                };
                text.push_str(&format!("{prefix}{name} {tail}\n"));
            }
            None => {
                text.push_str(line);
                text.push('\n');
            }
        }
    }
    text
}

/// An alert's case for `promtool test rules`: the series it sees, when it is evaluated, and
/// the labels of the alert expected to fire then beyond the rule's own (None: none fires).
struct AlertCase {
    alert: &'static str,
    series: &'static [(&'static str, &'static str)],
    at: &'static str,
    fires: Option<&'static [(&'static str, &'static str)]>,
}

const ALERT_CASES: &[AlertCase] = &[
    AlertCase {
        alert: "FlinkOperatorAbsent",
        series: &[("process_open_fds", "10x20")],
        at: "15m",
        fires: Some(&[]),
    },
    AlertCase {
        alert: "FlinkOperatorAbsent",
        series: &[("flink_operator_leader{pod=\"a\"}", "1x20")],
        at: "15m",
        fires: None,
    },
    AlertCase {
        alert: "FlinkOperatorNoLeader",
        series: &[
            ("flink_operator_leader{pod=\"a\"}", "0x20"),
            ("flink_operator_leader{pod=\"b\"}", "0x20"),
        ],
        at: "10m",
        fires: Some(&[]),
    },
    AlertCase {
        alert: "FlinkOperatorNoLeader",
        series: &[
            ("flink_operator_leader{pod=\"a\"}", "0x20"),
            ("flink_operator_leader{pod=\"b\"}", "1x20"),
        ],
        at: "10m",
        fires: None,
    },
    AlertCase {
        alert: "FlinkOperatorNotReconciling",
        series: &[
            (
                "flink_operator_resources{kind=\"FlinkDeployment\",namespace=\"jobs\",lifecycle_state=\"STABLE\"}",
                "2x40",
            ),
            (
                "flink_operator_resource_reconciles_total{kind=\"FlinkDeployment\",namespace=\"jobs\",name=\"a\"}",
                "5x40",
            ),
        ],
        at: "25m",
        fires: Some(&[]),
    },
    AlertCase {
        alert: "FlinkOperatorNotReconciling",
        series: &[
            (
                "flink_operator_resources{kind=\"FlinkDeployment\",namespace=\"jobs\",lifecycle_state=\"STABLE\"}",
                "2x40",
            ),
            (
                "flink_operator_resource_reconciles_total{kind=\"FlinkDeployment\",namespace=\"jobs\",name=\"a\"}",
                "0+1x40",
            ),
        ],
        at: "25m",
        fires: None,
    },
    AlertCase {
        alert: "FlinkJobUpdateFailed",
        series: &[("flink_operator_events_total{reason=\"UpdateFailed\"}", "0x5 1x20")],
        at: "10m",
        fires: Some(&[("reason", "UpdateFailed")]),
    },
    AlertCase {
        alert: "FlinkJobUpdateFailed",
        series: &[("flink_operator_events_total{reason=\"Scaling\"}", "0+1x20")],
        at: "10m",
        fires: None,
    },
    AlertCase {
        alert: "FlinkSavepointFailures",
        series: &[(
            "flink_operator_savepoint_failures_total{kind=\"FlinkDeployment\"}",
            "0x5 1x20",
        )],
        at: "10m",
        fires: Some(&[("kind", "FlinkDeployment")]),
    },
    AlertCase {
        alert: "FlinkSavepointFailures",
        series: &[(
            "flink_operator_savepoint_failures_total{kind=\"FlinkDeployment\"}",
            "0x20",
        )],
        at: "10m",
        fires: None,
    },
    AlertCase {
        alert: "FlinkSnapshotFailures",
        series: &[(
            "flink_operator_snapshot_failures_total{snapshot_type=\"CHECKPOINT\"}",
            "0x5 1x20",
        )],
        at: "10m",
        fires: Some(&[("snapshot_type", "CHECKPOINT")]),
    },
    // The chart's test values warn 14 days ahead: 13 days left warns, 30 do not.
    AlertCase {
        alert: "FlinkOperatorWebhookCertificateExpiring",
        series: &[(
            "flink_operator_webhook_certificate_expiry_timestamp_seconds",
            "1123200x20",
        )],
        at: "15m",
        fires: Some(&[]),
    },
    AlertCase {
        alert: "FlinkOperatorWebhookCertificateExpiring",
        series: &[(
            "flink_operator_webhook_certificate_expiry_timestamp_seconds",
            "2592000x20",
        )],
        at: "15m",
        fires: None,
    },
    AlertCase {
        alert: "FlinkOperatorWebhookCertificateExpiresToday",
        series: &[(
            "flink_operator_webhook_certificate_expiry_timestamp_seconds",
            "72000x20",
        )],
        at: "15m",
        fires: Some(&[]),
    },
    AlertCase {
        alert: "FlinkOperatorWebhookCertificateExpiresToday",
        series: &[(
            "flink_operator_webhook_certificate_expiry_timestamp_seconds",
            "1123200x20",
        )],
        at: "15m",
        fires: None,
    },
];

/// An alert whose annotations quote `$value`, evaluated through its expression counted by
/// the labels it keeps (`count by (<by>) (<expr>)`): the series that fire, each 1.
struct ExpressionCase {
    alert: &'static str,
    series: &'static [(&'static str, &'static str)],
    at: &'static str,
    by: &'static str,
    /// The labels of the one series expected, or None for none.
    fires: Option<&'static str>,
}

const EXPRESSION_CASES: &[ExpressionCase] = &[
    ExpressionCase {
        alert: "FlinkOperatorReconcileErrors",
        series: &[(
            "flink_operator_reconcile_errors_total{kind=\"FlinkDeployment\"}",
            "0+2x30",
        )],
        at: "20m",
        by: "kind",
        fires: Some("{kind=\"FlinkDeployment\"}"),
    },
    ExpressionCase {
        alert: "FlinkOperatorReconcileErrors",
        series: &[(
            "flink_operator_reconcile_errors_total{kind=\"FlinkDeployment\"}",
            "0+1x5 5x30",
        )],
        at: "20m",
        by: "kind",
        fires: None,
    },
    ExpressionCase {
        alert: "FlinkOperatorLeaderChanges",
        series: &[("flink_operator_leader_changes_total{pod=\"a\"}", "0+1x90")],
        at: "80m",
        by: "",
        fires: Some("{}"),
    },
    ExpressionCase {
        alert: "FlinkOperatorLeaderChanges",
        series: &[("flink_operator_leader_changes_total{pod=\"a\"}", "0+1x3 3x90")],
        at: "80m",
        by: "",
        fires: None,
    },
];

/// `{{ $labels.<name> }}` of an annotation template replaced by `labels`' values.
fn with_labels(template: &str, labels: &serde_json::Map<String, Value>) -> String {
    let mut text = template.to_owned();
    for (name, value) in labels {
        text = text.replace(&format!("{{{{ $labels.{name} }}}}"), value.as_str().unwrap());
    }
    text
}

#[test]
fn promtool_checks_the_rules_and_the_dashboard_and_every_alert_fires_on_its_series_only() {
    let values = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/charts/flink-operator/ci/monitoring-values.yaml"
    );
    let objects = render_chart(&["-f", values]);
    let rule = objects.iter().find(|o| o["kind"] == "PrometheusRule").unwrap();
    let dir = std::env::temp_dir().join(format!("flink-operator-promtool-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let rules_file = dir.join("rules.yaml");
    std::fs::write(
        &rules_file,
        serde_yaml::to_string(&json!({"groups": rule["spec"]["groups"]})).unwrap(),
    )
    .unwrap();
    // The dashboard's queries as recording rules, so that Prometheus' parser reads them.
    let queries: Vec<Value> = expressions()
        .into_iter()
        .filter(|(what, _)| what.starts_with("panel"))
        .enumerate()
        .map(|(i, (_, expr))| json!({"record": format!("dashboard:query_{i}"), "expr": expr}))
        .collect();
    let dashboard_file = dir.join("dashboard.yaml");
    std::fs::write(
        &dashboard_file,
        serde_yaml::to_string(&json!({"groups": [{"name": "dashboard", "rules": queries}]})).unwrap(),
    )
    .unwrap();
    let checked = promtool(
        &[
            "check",
            "rules",
            rules_file.to_str().unwrap(),
            dashboard_file.to_str().unwrap(),
        ],
        None,
    );
    assert!(checked.is_ok(), "promtool check rules: {checked:?}");

    let rules: BTreeMap<&str, &Value> = rule["spec"]["groups"][0]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["alert"].as_str().unwrap(), r))
        .collect();
    let series = |series: &[(&str, &str)]| -> Value {
        series
            .iter()
            .map(|(s, v)| json!({"series": s, "values": v}))
            .collect()
    };
    let mut tests = Vec::new();
    let mut covered = BTreeSet::new();
    for case in ALERT_CASES {
        let rule = rules
            .get(case.alert)
            .unwrap_or_else(|| panic!("no alert {}", case.alert));
        covered.insert(case.alert);
        let expected: Vec<Value> = case
            .fires
            .map(|extra| {
                let mut labels = rule["labels"].as_object().cloned().unwrap_or_default();
                for (k, v) in extra {
                    labels.insert((*k).to_owned(), json!(v));
                }
                let annotations: serde_json::Map<String, Value> = rule["annotations"]
                    .as_object()
                    .unwrap()
                    .iter()
                    .map(|(k, v)| (k.clone(), json!(with_labels(v.as_str().unwrap(), &labels))))
                    .collect();
                vec![json!({"exp_labels": labels, "exp_annotations": annotations})]
            })
            .unwrap_or_default();
        tests.push(json!({
            "interval": "1m",
            "input_series": series(case.series),
            "alert_rule_test": [{"eval_time": case.at, "alertname": case.alert, "exp_alerts": expected}],
        }));
    }
    for case in EXPRESSION_CASES {
        let ExpressionCase {
            alert,
            series: input,
            at,
            by,
            fires,
        } = case;
        covered.insert(*alert);
        let expr = rules[alert]["expr"].as_str().unwrap().trim();
        let samples: Vec<Value> = fires
            .iter()
            .map(|labels| json!({"labels": labels, "value": 1}))
            .collect();
        tests.push(json!({
            "interval": "1m",
            "input_series": series(input),
            "promql_expr_test": [{"expr": format!("count by ({by}) ({expr})"), "eval_time": at, "exp_samples": samples}],
        }));
    }
    assert_eq!(
        covered,
        rules.keys().copied().collect::<BTreeSet<_>>(),
        "every alert has its cases"
    );
    let tests_file = dir.join("tests.yaml");
    std::fs::write(
        &tests_file,
        serde_yaml::to_string(
            &json!({"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": tests}),
        )
        .unwrap(),
    )
    .unwrap();
    let tested = promtool(&["test", "rules", tests_file.to_str().unwrap()], None);
    assert!(tested.is_ok(), "promtool test rules: {tested:?}");
    eprintln!(
        "MEASURED promtool: {} rules and {} dashboard queries checked, {} alert cases passed",
        rules.len(),
        queries.len(),
        ALERT_CASES.len() + EXPRESSION_CASES.len()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
