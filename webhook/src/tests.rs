//! The admission routes end to end, in process: HTTP in, AdmissionReview out. The lookup
//! is an in-memory directory here; the same paths run against a real API server in the
//! integration tests.

use std::{collections::BTreeSet, sync::Arc};

use axum::body::Body;
use base64::Engine;
use flink_operator_api::{FlinkDeployment, FlinkSessionJob, validation::ValidationContext};
use futures::future::BoxFuture;
use http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::{
    Admission,
    lookup::{JobDirectory, LookupError},
    metrics::AdmissionMetrics,
};

/// Existing objects by `kind/namespace/name`; `fail` makes every lookup fail.
#[derive(Default)]
struct StaticDirectory {
    existing: BTreeSet<String>,
    everything_exists: bool,
    fail: bool,
}

impl StaticDirectory {
    fn with(objects: &[&str]) -> Self {
        Self {
            existing: objects.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    fn find<K: serde::de::DeserializeOwned>(
        &self,
        kind: &'static str,
        namespace: String,
        name: String,
    ) -> Result<Option<Arc<K>>, LookupError> {
        if self.fail {
            return Err(LookupError::Timeout {
                kind,
                namespace,
                name,
            });
        }
        if !self.everything_exists && !self.existing.contains(&format!("{kind}/{namespace}/{name}")) {
            return Ok(None);
        }
        let object = json!({
            "apiVersion": "flink.apache.org/v1beta1", "kind": kind,
            "metadata": {"name": name, "namespace": namespace},
            "spec": {}
        });
        Ok(Some(Arc::new(
            serde_json::from_value(object).expect("minimal object decodes"),
        )))
    }
}

impl JobDirectory for StaticDirectory {
    fn deployment(
        &self,
        namespace: String,
        name: String,
    ) -> BoxFuture<'_, Result<Option<Arc<FlinkDeployment>>, LookupError>> {
        Box::pin(futures::future::ready(self.find(
            "FlinkDeployment",
            namespace,
            name,
        )))
    }

    fn session_job(
        &self,
        namespace: String,
        name: String,
    ) -> BoxFuture<'_, Result<Option<Arc<FlinkSessionJob>>, LookupError>> {
        Box::pin(futures::future::ready(self.find(
            "FlinkSessionJob",
            namespace,
            name,
        )))
    }
}

fn router(directory: StaticDirectory) -> axum::Router {
    crate::router(Arc::new(Admission::new(
        ValidationContext::default(),
        Arc::new(directory),
        AdmissionMetrics::default(),
    )))
}

async fn post(router: &axum::Router, path: &str, body: impl Into<Body>) -> (StatusCode, Vec<u8>) {
    let request = Request::post(path)
        .header("content-type", "application/json")
        .body(body.into())
        .expect("request");
    let response = router.clone().oneshot(request).await.expect("infallible");
    let status = response.status();
    (
        status,
        response
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes()
            .to_vec(),
    )
}

fn review(operation: &str, kind: &str, object: Value, old: Option<Value>) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "e911857d-c318-11e8-bbad-025000000001",
            "kind": {"group": "flink.apache.org", "version": "v1beta1", "kind": kind},
            "resource": {"group": "flink.apache.org", "version": "v1beta1", "resource": "x"},
            "name": object["metadata"]["name"],
            "namespace": "team-a",
            "operation": operation,
            "userInfo": {"username": "alice"},
            "object": object,
            "oldObject": old,
        }
    }))
    .expect("encodes")
}

/// Posts a review and returns its response, checking the envelope and that the uid of the
/// request is echoed.
async fn answer(router: &axum::Router, path: &str, body: Vec<u8>) -> Value {
    let request: Value = serde_json::from_slice(&body).expect("request review");
    let (status, body) = post(router, path, body).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    let review: Value = serde_json::from_slice(&body).expect("review");
    assert_eq!(review["kind"], "AdmissionReview");
    assert_eq!(review["response"]["uid"], request["request"]["uid"]);
    review["response"].clone()
}

fn snapshot(reference: Value) -> Value {
    json!({
        "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkStateSnapshot",
        "metadata": {"name": "sp", "namespace": "team-a"},
        "spec": {"jobReference": reference, "savepoint": {"path": "s3://b/s"}}
    })
}

fn blue_green(mode: &str) -> Value {
    json!({
        "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkBlueGreenDeployment",
        "metadata": {"name": "bg", "namespace": "team-a"},
        "spec": {"transitionMode": mode, "template": {"spec": {
            "flinkVersion": "v1_20", "serviceAccount": "flink",
            "jobManager": {"resource": {"memory": "1g"}}, "taskManager": {"resource": {"memory": "1g"}},
            "job": {"jarURI": "local:///opt/flink/job.jar", "parallelism": 1, "upgradeMode": "stateless"}
        }}}
    })
}

fn message(response: &Value) -> &str {
    response["status"]["message"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn snapshot_references_are_checked_against_the_directory() {
    let router = router(StaticDirectory::with(&[
        "FlinkDeployment/team-a/orders",
        "FlinkSessionJob/team-a/clicks",
    ]));
    let ok = answer(
        &router,
        "/validate",
        review(
            "CREATE",
            "FlinkStateSnapshot",
            snapshot(json!({"kind": "FlinkDeployment", "name": "orders"})),
            None,
        ),
    )
    .await;
    assert_eq!(ok["allowed"], true, "{ok}");
    let ok = answer(
        &router,
        "/validate",
        review(
            "CREATE",
            "FlinkStateSnapshot",
            snapshot(json!({"kind": "FlinkSessionJob", "name": "clicks"})),
            None,
        ),
    )
    .await;
    assert_eq!(ok["allowed"], true, "{ok}");

    let dangling = answer(
        &router,
        "/validate",
        review(
            "CREATE",
            "FlinkStateSnapshot",
            snapshot(json!({"kind": "FlinkDeployment", "name": "gone"})),
            None,
        ),
    )
    .await;
    assert_eq!(dangling["allowed"], false);
    assert_eq!(
        message(&dangling),
        "spec.jobReference: target FlinkDeployment team-a/gone was not found"
    );

    let foreign = snapshot(json!({"kind": "FlinkDeployment", "name": "orders", "namespace": "team-b"}));
    let denied = answer(
        &router,
        "/validate",
        review("CREATE", "FlinkStateSnapshot", foreign, None),
    )
    .await;
    assert_eq!(denied["allowed"], false);
    assert!(
        message(&denied).starts_with("spec.jobReference.namespace: must be the snapshot's own namespace"),
        "{denied}"
    );
}

#[tokio::test]
async fn snapshot_references_that_cannot_be_verified_are_refused() {
    let router = router(StaticDirectory {
        fail: true,
        ..Default::default()
    });
    let denied = answer(
        &router,
        "/validate",
        review(
            "CREATE",
            "FlinkStateSnapshot",
            snapshot(json!({"kind": "FlinkDeployment", "name": "orders"})),
            None,
        ),
    )
    .await;
    assert_eq!(denied["allowed"], false);
    assert!(message(&denied).contains("could not be verified"), "{denied}");
    assert!(message(&denied).contains("timed out"), "{denied}");
}

#[tokio::test]
async fn transition_mode_changes_are_denied_with_the_field_named() {
    let router = router(StaticDirectory::default());
    let denied = answer(
        &router,
        "/validate",
        review(
            "UPDATE",
            "FlinkBlueGreenDeployment",
            blue_green("ADVANCED"),
            Some(blue_green("BASIC")),
        ),
    )
    .await;
    assert_eq!(denied["allowed"], false);
    assert!(
        message(&denied).contains("spec.transitionMode: field is immutable (was BASIC, requested ADVANCED)"),
        "{denied}"
    );
    assert!(
        message(&denied).contains("spec.template.spec.job.upgradeMode"),
        "both violations: {denied}"
    );
}

#[tokio::test]
async fn updates_that_leave_the_spec_alone_are_allowed_even_for_invalid_objects() {
    let router = router(StaticDirectory::default());
    let mut invalid = blue_green("ADVANCED");
    let before = invalid.clone();
    invalid["metadata"]["finalizers"] = json!(["example.com/keep"]);
    let allowed = answer(
        &router,
        "/validate",
        review(
            "UPDATE",
            "FlinkBlueGreenDeployment",
            invalid.clone(),
            Some(before),
        ),
    )
    .await;
    assert_eq!(allowed["allowed"], true, "{allowed}");
    let created = answer(
        &router,
        "/validate",
        review("CREATE", "FlinkBlueGreenDeployment", invalid, None),
    )
    .await;
    assert_eq!(created["allowed"], false, "the same object is judged on CREATE");
}

#[tokio::test]
async fn delete_and_connect_are_allowed() {
    let router = router(StaticDirectory::default());
    for operation in ["DELETE", "CONNECT"] {
        let response = answer(
            &router,
            "/validate",
            review(
                operation,
                "FlinkBlueGreenDeployment",
                blue_green("ADVANCED"),
                None,
            ),
        )
        .await;
        assert_eq!(response["allowed"], true, "{operation}");
    }
}

#[tokio::test]
async fn other_kinds_are_denied_naming_the_kind() {
    let router = router(StaticDirectory::default());
    let mut body: Value =
        serde_json::from_slice(&review("CREATE", "Pod", json!({"metadata": {"name": "p"}}), None))
            .expect("json");
    body["request"]["kind"] = json!({"group": "", "version": "v1", "kind": "Pod"});
    let denied = answer(&router, "/validate", serde_json::to_vec(&body).expect("json")).await;
    assert_eq!(denied["allowed"], false);
    assert!(
        message(&denied).starts_with("kind Pod (group \"\") is not handled by this webhook"),
        "{denied}"
    );
}

#[tokio::test]
async fn objects_that_do_not_decode_are_denied_naming_the_field() {
    let router = router(StaticDirectory::default());
    let mut object = blue_green("BASIC");
    object["spec"]["template"]["spec"]["job"]["upgradeMode"] = json!("sometimes");
    let denied = answer(
        &router,
        "/validate",
        review("CREATE", "FlinkBlueGreenDeployment", object, None),
    )
    .await;
    assert_eq!(denied["allowed"], false);
    let text = message(&denied);
    assert!(
        text.starts_with(
            "FlinkBlueGreenDeployment: spec.template.spec.job.upgradeMode: unknown variant `sometimes`"
        ),
        "{text}"
    );
}

#[tokio::test]
async fn mutation_answers_a_json_patch_and_nothing_for_a_mutated_object() {
    let router = router(StaticDirectory::default());
    let mut object = blue_green("BASIC");
    object["spec"]
        .as_object_mut()
        .expect("spec")
        .remove("transitionMode");
    let response = answer(
        &router,
        "/mutate",
        review("CREATE", "FlinkBlueGreenDeployment", object.clone(), None),
    )
    .await;
    assert_eq!(response["allowed"], true);
    assert_eq!(response["patchType"], "JSONPatch");
    let patch = base64::engine::general_purpose::STANDARD
        .decode(response["patch"].as_str().expect("patch is base64 text"))
        .expect("base64");
    let patch: json_patch::Patch = serde_json::from_slice(&patch).expect("patch");
    json_patch::patch(&mut object, &patch).expect("applies");
    assert_eq!(object["spec"]["transitionMode"], "BASIC");

    let again = answer(
        &router,
        "/mutate",
        review("CREATE", "FlinkBlueGreenDeployment", object, None),
    )
    .await;
    assert_eq!(again["allowed"], true);
    assert!(
        again.get("patch").is_none(),
        "no patch for an already-mutated object: {again}"
    );
}

#[tokio::test]
async fn malformed_requests_get_a_4xx_with_a_one_line_reason() {
    let router = router(StaticDirectory::default());
    let cases: Vec<(&str, Vec<u8>, StatusCode, &str)> = vec![
        (
            "not json",
            b"{".to_vec(),
            StatusCode::BAD_REQUEST,
            "request body is not JSON",
        ),
        (
            "not a review",
            br#"{"kind":"Pod","apiVersion":"v1"}"#.to_vec(),
            StatusCode::BAD_REQUEST,
            "request body is not an AdmissionReview",
        ),
        (
            "old version",
            br#"{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1beta1","request":{}}"#.to_vec(),
            StatusCode::BAD_REQUEST,
            "unsupported AdmissionReview apiVersion",
        ),
        (
            "no request",
            br#"{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1"}"#.to_vec(),
            StatusCode::BAD_REQUEST,
            "AdmissionReview has no request",
        ),
        (
            "too large",
            vec![b' '; crate::review::MAX_BODY_BYTES + 1],
            StatusCode::PAYLOAD_TOO_LARGE,
            "request body exceeds the limit",
        ),
        (
            "too many values",
            format!(
                r#"{{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{{"object":{{"x":[{}{{}}]}}}}}}"#,
                "{},".repeat(crate::review::MAX_BODY_VALUES)
            )
            .into_bytes(),
            StatusCode::PAYLOAD_TOO_LARGE,
            "request body has more than 200000 JSON values",
        ),
    ];
    for (case, body, expected, reason) in cases {
        for path in ["/validate", "/mutate"] {
            let (status, body) = post(&router, path, body.clone()).await;
            let text = String::from_utf8(body).expect("utf-8");
            assert_eq!(status, expected, "{case} on {path}: {text}");
            assert!(text.starts_with(reason), "{case} on {path}: {text}");
            assert_eq!(text.trim_end().lines().count(), 1, "{case}: one line");
        }
    }
    let (status, _) = post(&router, "/other", Vec::new()).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_benchmark_review_is_a_valid_update_that_runs_every_rule() {
    // The load benchmark posts this body; it must exercise the allowed path, with a spec
    // change so that the rules run rather than the unchanged-spec shortcut.
    let body = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../bench/flinkdeployment-update-review.json"
    ))
    .expect("benchmark review");
    let review: Value = serde_json::from_slice(&body).expect("json");
    assert_ne!(
        review["request"]["object"]["spec"],
        review["request"]["oldObject"]["spec"]
    );
    let response = answer(&router(StaticDirectory::default()), "/validate", body).await;
    assert_eq!(response["allowed"], true, "{response}");
}

#[tokio::test]
async fn every_example_manifest_is_admitted() {
    let router = router(StaticDirectory {
        everything_exists: true,
        ..Default::default()
    });
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples");
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).expect("examples") {
        let path = entry.expect("entry").path();
        let text = std::fs::read_to_string(&path).expect("example");
        for document in serde_yaml::Deserializer::from_str(&text) {
            let mut object: Value = serde::Deserialize::deserialize(document).expect("yaml");
            object["metadata"]["namespace"] = json!("team-a");
            let kind = object["kind"].as_str().expect("kind").to_owned();
            for path_name in ["/mutate", "/validate"] {
                let response =
                    answer(&router, path_name, review("CREATE", &kind, object.clone(), None)).await;
                assert_eq!(
                    response["allowed"],
                    true,
                    "{} ({kind}) on {path_name}: {response}",
                    path.display()
                );
            }
            seen += 1;
        }
    }
    assert!(seen >= 12, "only {seen} example documents found");
}

fn session_job(jar_uri: &str, own_config: Value) -> Value {
    json!({
        "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkSessionJob",
        "metadata": {"name": "clicks", "namespace": "team-a"},
        "spec": {
            "deploymentName": "session",
            "flinkConfiguration": own_config,
            "job": {"jarURI": jar_uri, "parallelism": 1, "upgradeMode": "stateless"}
        }
    })
}

#[tokio::test]
async fn a_session_job_cannot_widen_its_own_jar_allowlist_or_lift_host_checks() {
    const SCHEMES: &str = "kubernetes.operator.user.artifacts.allowed-schemes";
    const HOSTS: &str = "kubernetes.operator.user.artifacts.disallow-restricted-hosts";
    // The operator allows s3 besides https, for team-a only.
    let operator_config = [(
        format!("kubernetes.operator.default-configuration.namespace.team-a.{SCHEMES}"),
        "https,s3".to_owned(),
    )];
    let router = crate::router(Arc::new(Admission::new(
        ValidationContext::new(operator_config.into()),
        Arc::new(StaticDirectory::default()),
        AdmissionMetrics::default(),
    )));
    let own_setting = |key: &str| {
        format!(
            "spec.flinkConfiguration.{key}: is an operator setting: it is read only from the operator configuration"
        )
    };
    // (case, jar, the job's own flinkConfiguration, what the denial says; none: allowed)
    let cases: Vec<(&str, &str, Value, Vec<String>)> = vec![
        (
            "allowed by the operator",
            "s3://bucket/job.jar",
            json!({}),
            vec![],
        ),
        (
            "own allowlist adds file",
            "file:///etc/passwd",
            json!({ SCHEMES: "https,s3,file" }),
            vec![
                own_setting(SCHEMES),
                r#"spec.job.jarURI: scheme "file" is not in the allowlist [https, s3]"#.to_owned(),
            ],
        ),
        (
            "own allowlist that widens nothing",
            "https://repo.example.com/job.jar",
            json!({ SCHEMES: "https" }),
            vec![own_setting(SCHEMES)],
        ),
        (
            "own host check lifted",
            "https://10.0.0.1/job.jar",
            json!({ HOSTS: "false" }),
            vec![
                own_setting(HOSTS),
                r#"spec.job.jarURI: host "10.0.0.1" is a restricted address"#.to_owned(),
            ],
        ),
    ];
    for (case, jar, own, expected) in cases {
        let response = answer(
            &router,
            "/validate",
            review("CREATE", "FlinkSessionJob", session_job(jar, own), None),
        )
        .await;
        assert_eq!(response["allowed"], expected.is_empty(), "{case}: {response}");
        for part in &expected {
            assert!(message(&response).contains(part.as_str()), "{case}: {response}");
        }
    }
}

#[tokio::test]
async fn a_malformed_rollback_request_is_refused_naming_the_annotation_even_without_a_spec_change() {
    let router = router(StaticDirectory::default());
    let job = session_job("https://repo.example.com/job.jar", json!({}));
    let annotated = |pairs: &[(&str, &str)]| {
        let mut object = job.clone();
        for (key, value) in pairs {
            object["metadata"]["annotations"][*key] = json!(value);
        }
        object
    };
    let to = flink_operator_api::keys::annotations::ROLLBACK_TO_REVISION;
    let restore = flink_operator_api::keys::annotations::ROLLBACK_RESTORE;
    for (pairs, refused) in [
        (vec![(to, "2")], None),
        (vec![(to, "2"), (restore, "revision")], None),
        (vec![(to, "two")], Some(to)),
        (vec![(to, "-1")], Some(to)),
        (vec![(to, "2"), (restore, "latest")], Some(restore)),
    ] {
        // `kubectl annotate`: the spec as stored.
        let answer = answer(
            &router,
            "/validate",
            review("UPDATE", "FlinkSessionJob", annotated(&pairs), Some(job.clone())),
        )
        .await;
        match refused {
            None => assert_eq!(answer["allowed"], true, "{pairs:?}: {answer}"),
            Some(key) => {
                assert_eq!(answer["allowed"], false, "{pairs:?}: {answer}");
                assert!(
                    message(&answer).starts_with(&format!("metadata.annotations[{key}]: ")),
                    "{pairs:?}: {}",
                    message(&answer)
                );
            }
        }
    }
    // A malformed value already stored (the webhook was off) does not block other writes,
    // e.g. the operator removing its finalizer.
    let stored = annotated(&[(to, "two")]);
    let mut finalised = stored.clone();
    finalised["metadata"]["finalizers"] = json!([]);
    let answer = answer(
        &router,
        "/validate",
        review("UPDATE", "FlinkSessionJob", finalised, Some(stored)),
    )
    .await;
    assert_eq!(answer["allowed"], true, "{answer}");
}

/// Large reviews take turns ([`crate::LARGE_BODIES_AT_ONCE`] at once) and each is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_reviews_take_turns_and_each_is_answered() {
    let router = router(StaticDirectory::with(&["FlinkDeployment/team-a/orders"]));
    let mut object = snapshot(json!({"kind": "FlinkDeployment", "name": "orders"}));
    object["metadata"]["annotations"] = json!({"padding": "x".repeat(crate::LARGE_BODY_BYTES as usize)});
    let body = review("CREATE", "FlinkStateSnapshot", object, None);
    let reviews = (0..3 * crate::LARGE_BODIES_AT_ONCE).map(|_| answer(&router, "/validate", body.clone()));
    for response in futures::future::join_all(reviews).await {
        assert_eq!(response["allowed"], true, "{response}");
    }
}

/// A key accepted for compatibility but not acted on is admitted with a warning naming its
/// field, which the API server passes on to the client (kubectl prints it); a spec that does
/// not change is not warned about again, and a key the operator acts on is never.
#[tokio::test]
async fn settings_without_effect_are_admitted_with_a_warning_naming_the_field() {
    let router = router(StaticDirectory::default());
    let mut bg = blue_green("BASIC");
    bg["spec"]["template"]["spec"]["flinkConfiguration"] = json!({
        "kubernetes.operator.checkpoint.trigger.grace-period": "1 min",
        "kubernetes.operator.job.restart.failed": "TRUE"
    });
    let created = answer(
        &router,
        "/validate",
        review("CREATE", "FlinkBlueGreenDeployment", bg.clone(), None),
    )
    .await;
    assert_eq!(created["allowed"], true, "{created}");
    let warnings = created["warnings"].as_array().expect("warnings");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].as_str().unwrap().starts_with(
            "spec.template.spec.flinkConfiguration.kubernetes.operator.checkpoint.trigger.grace-period: has no effect"
        ),
        "{warnings:?}"
    );
    let mut relabelled = bg.clone();
    relabelled["metadata"]["labels"] = json!({"team": "a"});
    let unchanged = answer(
        &router,
        "/validate",
        review("UPDATE", "FlinkBlueGreenDeployment", relabelled, Some(bg)),
    )
    .await;
    assert!(unchanged.get("warnings").is_none(), "{unchanged}");
}

/// A boolean the operator reads is read in any letter case, as admission admits it; a value
/// of no boolean is refused, naming the key (it was once admitted and read as false).
#[tokio::test]
async fn operator_keys_are_judged_by_their_type_in_the_table() {
    let router = router(StaticDirectory::default());
    let mut bg = blue_green("BASIC");
    bg["spec"]["template"]["spec"]["flinkConfiguration"] =
        json!({"kubernetes.operator.jm-deployment.startup.probe.enabled": "ture"});
    let refused = answer(
        &router,
        "/validate",
        review("CREATE", "FlinkBlueGreenDeployment", bg, None),
    )
    .await;
    assert_eq!(refused["allowed"], false, "{refused}");
    assert!(
        message(&refused).contains("kubernetes.operator.jm-deployment.startup.probe.enabled")
            && message(&refused).contains("not a boolean"),
        "{}",
        message(&refused)
    );
}

/// The example manifests (every kind), each placed in `team-a`, the namespace of the reviews.
fn examples_in_team_a() -> Vec<(String, Value)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples");
    let mut objects = Vec::new();
    for entry in std::fs::read_dir(dir).expect("examples") {
        let text = std::fs::read_to_string(entry.expect("entry").path()).expect("example");
        for document in serde_yaml::Deserializer::from_str(&text) {
            let mut object: Value = serde::Deserialize::deserialize(document).expect("yaml");
            object["metadata"]["namespace"] = json!("team-a");
            objects.push((object["kind"].as_str().expect("kind").to_owned(), object));
        }
    }
    objects
}

fn in_operator_namespace(operator_namespace: &str, operator_config: &[(&str, &str)]) -> axum::Router {
    let config = operator_config
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    crate::router(Arc::new(
        Admission::new(
            ValidationContext::new(config),
            Arc::new(StaticDirectory {
                everything_exists: true,
                ..Default::default()
            }),
            AdmissionMetrics::default(),
        )
        .in_operator_namespace(Some(operator_namespace)),
    ))
}

#[tokio::test]
async fn every_kind_is_refused_in_the_operators_namespace_unless_the_configuration_allows_it() {
    const KEY: &str = "kubernetes.operator.operator-namespace.flink-resources.enabled";
    let examples = examples_in_team_a();
    let kinds: BTreeSet<&str> = examples.iter().map(|(kind, _)| kind.as_str()).collect();
    assert_eq!(kinds.len(), 4, "{kinds:?}");

    let refusing = in_operator_namespace("team-a", &[]);
    for (kind, object) in &examples {
        let response = answer(
            &refusing,
            "/validate",
            review("CREATE", kind, object.clone(), None),
        )
        .await;
        assert_eq!(response["allowed"], false, "{kind}: {response}");
        let message = message(&response);
        assert!(
            message.starts_with("metadata.namespace: namespace \"team-a\" is the operator's own"),
            "{kind}: {message}"
        );
        assert!(message.contains("credentials"), "{message}");
        assert!(message.contains(&format!("{KEY}: true")), "{message}");
    }
    let (kind, object) = &examples[0];
    // A spec change is refused too; an update of metadata only (a finalizer removed) and a
    // deletion go through, so that what is stored there can be cleaned up.
    let mut changed = object.clone();
    changed["spec"]["restartNonce"] = json!(7);
    let response = answer(
        &refusing,
        "/validate",
        review("UPDATE", kind, changed, Some(object.clone())),
    )
    .await;
    assert_eq!(response["allowed"], false, "{response}");
    let mut finalized = object.clone();
    finalized["metadata"]["finalizers"] = json!([]);
    for (operation, old) in [("UPDATE", Some(object.clone())), ("DELETE", None)] {
        let response = answer(
            &refusing,
            "/validate",
            review(operation, kind, finalized.clone(), old),
        )
        .await;
        assert_eq!(response["allowed"], true, "{operation}: {response}");
    }

    // Allowed by the platform, or another namespace than the operator's: admitted.
    for router in [
        in_operator_namespace("team-a", &[(KEY, "true")]),
        in_operator_namespace("flink-operator", &[]),
    ] {
        for (kind, object) in &examples {
            let response = answer(&router, "/validate", review("CREATE", kind, object.clone(), None)).await;
            assert_eq!(response["allowed"], true, "{kind}: {response}");
        }
    }
}

/// A review whose request names `namespace` (None: no namespace at all, as a caller that is
/// not the API server may send).
fn review_in(namespace: Option<&str>, kind: &str, object: Value) -> Vec<u8> {
    let mut review: Value = serde_json::from_slice(&review("CREATE", kind, object, None)).unwrap();
    match namespace {
        Some(namespace) => review["request"]["namespace"] = json!(namespace),
        None => {
            review["request"].as_object_mut().unwrap().remove("namespace");
        }
    }
    serde_json::to_vec(&review).unwrap()
}

#[tokio::test]
async fn the_answer_never_depends_on_objects_outside_the_requests_namespace() {
    // The same request, answered with the referenced job existing, missing, and lookups
    // failing: one answer, so nothing is learnt about team-b; none is looked up there.
    let directories = || {
        [
            StaticDirectory::with(&["FlinkDeployment/team-b/orders", "FlinkDeployment/team-a/orders"]),
            StaticDirectory::default(),
            StaticDirectory {
                fail: true,
                ..Default::default()
            },
        ]
    };
    let in_team_b = |reference: Value| {
        let mut object = snapshot(reference);
        object["metadata"]["namespace"] = json!("team-b");
        object
    };
    let requests: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "a reference to another namespace",
            review_in(
                Some("team-a"),
                "FlinkStateSnapshot",
                snapshot(json!({"kind": "FlinkDeployment", "name": "orders", "namespace": "team-b"})),
            ),
            "spec.jobReference.namespace: must be the snapshot's own namespace",
        ),
        (
            "an object naming another namespace than the request",
            review_in(
                Some("team-a"),
                "FlinkStateSnapshot",
                in_team_b(json!({"kind": "FlinkDeployment", "name": "orders"})),
            ),
            "metadata.namespace: \"team-b\" is not the namespace of the request",
        ),
        (
            "a request without a namespace",
            review_in(
                None,
                "FlinkStateSnapshot",
                in_team_b(json!({"kind": "FlinkDeployment", "name": "orders"})),
            ),
            "request.namespace: is missing",
        ),
        (
            "a session job's cluster, asked without a namespace",
            review_in(None, "FlinkSessionJob", {
                let mut job = session_job("https://example.com/job.jar", json!({}));
                job["metadata"]["namespace"] = json!("team-b");
                job["spec"]["deploymentName"] = json!("orders");
                job
            }),
            "request.namespace: is missing",
        ),
    ];
    for (case, request, expected) in requests {
        let mut answers = Vec::new();
        for directory in directories() {
            let response = answer(&router(directory), "/validate", request.clone()).await;
            answers.push((response["allowed"].clone(), message(&response).to_owned()));
        }
        assert_eq!(answers[0].0, false, "{case}: {answers:?}");
        assert!(answers[0].1.starts_with(expected), "{case}: {answers:?}");
        assert!(answers.iter().all(|a| *a == answers[0]), "{case}: {answers:?}");
    }
}

#[tokio::test]
async fn a_session_job_or_snapshot_named_too_long_for_its_events_is_refused_when_created_only() {
    let router = router(StaticDirectory::default());
    let long = format!("a{}", "b".repeat(252));
    let mut job = session_job("https://example.com/job.jar", json!({}));
    job["metadata"]["name"] = json!(long);
    let mut snap = snapshot(json!({"kind": "FlinkDeployment", "name": "orders"}));
    snap["metadata"]["name"] = json!(long);
    snap["spec"]["savepoint"]["alreadyExists"] = json!(true);
    for (kind, object) in [("FlinkSessionJob", job), ("FlinkStateSnapshot", snap)] {
        let created = answer(&router, "/validate", review("CREATE", kind, object.clone(), None)).await;
        assert_eq!(created["allowed"], false, "{kind}: {created}");
        assert!(
            message(&created).contains("metadata.name: is 253 characters long, more than 236"),
            "{kind}: {created}"
        );
        // Stored before the rule: a change of it is judged by the other rules only.
        let mut changed = object.clone();
        changed["spec"]["backoffLimit"] = json!(3);
        let updated = answer(
            &router,
            "/validate",
            review("UPDATE", kind, changed, Some(object)),
        )
        .await;
        assert!(!message(&updated).contains("metadata.name"), "{kind}: {updated}");
    }
}
