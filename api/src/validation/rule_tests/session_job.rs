use serde_json::{Value, json};

use super::{RuleCase, assert_single, set, typed};
use crate::{
    FlinkDeployment, FlinkSessionJob,
    validation::{ValidationContext, Violation, session_job::validate},
};

fn base() -> Value {
    json!({
        "apiVersion": "flink.apache.org/v1beta1",
        "kind": "FlinkSessionJob",
        "metadata": {"name": "word-count", "namespace": "default"},
        "spec": {
            "deploymentName": "session-cluster",
            "job": {
                "jarURI": "https://repo.example.com/flink/word-count-1.0.jar",
                "parallelism": 2,
                "upgradeMode": "stateless"
            }
        }
    })
}

fn session_cluster(with_job: bool) -> FlinkDeployment {
    let mut cluster = json!({
        "apiVersion": "flink.apache.org/v1beta1",
        "kind": "FlinkDeployment",
        "metadata": {"name": "session-cluster", "namespace": "default"},
        "spec": {
            "flinkVersion": "v1_20",
            "flinkConfiguration": {
                "execution.checkpointing.dir": "s3://b/c",
                "execution.checkpointing.savepoint-dir": "s3://b/s"
            }
        }
    });
    if with_job {
        cluster["spec"]["job"] = json!({"jarURI": "local:///opt/flink/job.jar", "parallelism": 1});
    }
    typed(cluster)
}

fn with(changes: &[(&str, Value)]) -> Value {
    let mut object = base();
    for (path, value) in changes {
        set(&mut object, path, value.clone());
    }
    object
}

fn check(object: &Value) -> Vec<Violation> {
    validate(
        &typed::<FlinkSessionJob>(object.clone()),
        None,
        None,
        &ValidationContext::default(),
    )
}

/// The rule table: each case breaks one rule of [`base`], and the rule's answer is kept.
pub(super) fn cases() -> Vec<RuleCase> {
    let cases: Vec<(&str, Value, &str, &str)> = vec![
        (
            "S1 no deployment name",
            with(&[("spec/deploymentName", Value::Null)]),
            "spec.deploymentName",
            "must name the session cluster",
        ),
        (
            "S1 invalid deployment name",
            with(&[("spec/deploymentName", json!("Session"))]),
            "spec.deploymentName",
            "lowercase letters",
        ),
        (
            "autoscaler overrides are the operator's",
            with(&[(
                "spec/flinkConfiguration/kubernetes.operator.autoscaler.parallelism-overrides",
                json!("a:4"),
            )]),
            "spec.flinkConfiguration.kubernetes.operator.autoscaler.parallelism-overrides",
            "is written by the job autoscaler",
        ),
        (
            "S2 no job",
            with(&[("spec/job", Value::Null)]),
            "spec.job",
            "must be defined",
        ),
        (
            "S4 no scheme",
            with(&[("spec/job/jarURI", json!("repo.example.com/job.jar"))]),
            "spec.job.jarURI",
            "must include a scheme",
        ),
        (
            "S4 scheme not allowed",
            with(&[("spec/job/jarURI", json!("file:///etc/passwd"))]),
            "spec.job.jarURI",
            r#"scheme "file" is not in the allowlist [https]"#,
        ),
        (
            "S4 http not allowed by default",
            with(&[("spec/job/jarURI", json!("http://repo.example.com/job.jar"))]),
            "spec.job.jarURI",
            "allowlist",
        ),
        (
            "S5 no host",
            with(&[("spec/job/jarURI", json!("https:///job.jar"))]),
            "spec.job.jarURI",
            "must include a host",
        ),
        (
            "S5 loopback",
            with(&[("spec/job/jarURI", json!("https://127.0.0.1/job.jar"))]),
            "spec.job.jarURI",
            "restricted address",
        ),
        (
            "S5 localhost",
            with(&[("spec/job/jarURI", json!("https://localhost:8443/job.jar"))]),
            "spec.job.jarURI",
            "restricted address",
        ),
        (
            "S5 link-local metadata endpoint",
            with(&[("spec/job/jarURI", json!("https://169.254.169.254/latest"))]),
            "spec.job.jarURI",
            "restricted",
        ),
        (
            "S5 private",
            with(&[("spec/job/jarURI", json!("https://10.1.2.3/job.jar"))]),
            "spec.job.jarURI",
            "restricted",
        ),
        (
            "S5 ipv6 loopback",
            with(&[("spec/job/jarURI", json!("https://[::1]:443/job.jar"))]),
            "spec.job.jarURI",
            "restricted",
        ),
        (
            "S5 wildcard",
            with(&[("spec/job/jarURI", json!("https://0.0.0.0/job.jar"))]),
            "spec.job.jarURI",
            "restricted",
        ),
        (
            "allowlist set by the job itself",
            with(&[(
                "spec/flinkConfiguration",
                json!({"kubernetes.operator.user.artifacts.allowed-schemes": "https"}),
            )]),
            "spec.flinkConfiguration.kubernetes.operator.user.artifacts.allowed-schemes",
            "is an operator setting",
        ),
        (
            "host check set by the job itself",
            with(&[(
                "spec/flinkConfiguration",
                json!({"kubernetes": {"operator": {"user": {"artifacts": {"disallow-restricted-hosts": "true"}}}}}),
            )]),
            "spec.flinkConfiguration.kubernetes.operator.user.artifacts.disallow-restricted-hosts",
            "is an operator setting",
        ),
        (
            "S8 parallelism",
            with(&[("spec/job/parallelism", json!(0))]),
            "spec.job.parallelism",
            "larger than 0",
        ),
        (
            "S8 savepoint mode needs directories",
            with(&[
                ("spec/job/upgradeMode", json!("savepoint")),
                (
                    "spec/flinkConfiguration",
                    json!({"execution.checkpointing.dir": "s3://b/c"}),
                ),
            ]),
            "spec.flinkConfiguration.execution.checkpointing.savepoint-dir",
            "upgradeMode savepoint",
        ),
        (
            "S9 autoscaler",
            with(&[(
                "spec/flinkConfiguration",
                json!({"job.autoscaler.enabled": "true", "job.autoscaler.utilization.min": "0.9"}),
            )]),
            "spec.flinkConfiguration.job.autoscaler.utilization.min",
            "within [0, 0.7]",
        ),
        (
            "D30 redeploy nonce without path",
            with(&[("spec/job/savepointRedeployNonce", json!(3))]),
            "spec.job.initialSavepointPath",
            "must name a savepoint",
        ),
    ];
    let mut out: Vec<RuleCase> = cases
        .into_iter()
        .map(|(case, object, field, reason)| RuleCase::new(KIND, case, check(&object), field, reason))
        .collect();
    out.extend(update_cases());
    out
}

#[test]
fn neighbours_of_the_rules_are_allowed() {
    let allowed: Vec<(&str, Value)> = vec![
        ("base", base()),
        (
            "no jar (classpath job)",
            with(&[("spec/job/jarURI", Value::Null)]),
        ),
        (
            "public IP",
            with(&[("spec/job/jarURI", json!("https://93.184.216.34/job.jar"))]),
        ),
        (
            "last-state needs no HA for session jobs",
            with(&[
                ("spec/job/upgradeMode", json!("last-state")),
                (
                    "spec/flinkConfiguration",
                    json!({"execution.checkpointing.dir": "s3://b/c"}),
                ),
            ]),
        ),
    ];
    for (case, object) in allowed {
        assert_eq!(check(&object), vec![], "{case}");
    }
}

#[test]
fn operator_configuration_widens_the_scheme_allowlist_and_can_lift_host_checks() {
    let ctx = ValidationContext::new(
        [
            (
                "kubernetes.operator.user.artifacts.allowed-schemes".to_owned(),
                "https;s3;local".to_owned(),
            ),
            (
                "kubernetes.operator.user.artifacts.disallow-restricted-hosts".to_owned(),
                "false".to_owned(),
            ),
        ]
        .into(),
    );
    for uri in [
        "s3://bucket/job.jar",
        "local:///opt/flink/job.jar",
        "https://127.0.0.1/job.jar",
    ] {
        let job: FlinkSessionJob = typed(with(&[("spec/job/jarURI", json!(uri))]));
        assert_eq!(validate(&job, None, None, &ctx), vec![], "{uri}");
    }
}

#[test]
fn a_session_job_cannot_widen_its_own_jar_allowlist_or_lift_host_checks() {
    const SCHEMES: &str = "kubernetes.operator.user.artifacts.allowed-schemes";
    const HOSTS: &str = "kubernetes.operator.user.artifacts.disallow-restricted-hosts";
    let jar = |uri: &str| ("spec/job/jarURI", json!(uri));
    let own = |key: &str, value: &str| ("spec/flinkConfiguration", json!({ key: value }));
    // (case, object, session cluster configuration, violated fields in order)
    let cases: Vec<(&str, Value, Option<Value>, Vec<&str>)> = vec![
        (
            "own allowlist with file",
            with(&[jar("file:///etc/passwd"), own(SCHEMES, "https,file")]),
            None,
            vec![
                "spec.flinkConfiguration.kubernetes.operator.user.artifacts.allowed-schemes",
                "spec.job.jarURI",
            ],
        ),
        (
            "own allowlist with http",
            with(&[jar("http://repo.example.com/job.jar"), own(SCHEMES, "http;https")]),
            None,
            vec![
                "spec.flinkConfiguration.kubernetes.operator.user.artifacts.allowed-schemes",
                "spec.job.jarURI",
            ],
        ),
        (
            "own host check lifted",
            with(&[jar("https://169.254.169.254/latest"), own(HOSTS, "false")]),
            None,
            vec![
                "spec.flinkConfiguration.kubernetes.operator.user.artifacts.disallow-restricted-hosts",
                "spec.job.jarURI",
            ],
        ),
        (
            "session cluster allowlist with file",
            with(&[jar("file:///etc/passwd")]),
            Some(json!({ SCHEMES: "https,file" })),
            vec!["spec.job.jarURI"],
        ),
        (
            "session cluster host check lifted",
            with(&[jar("https://10.1.2.3/job.jar")]),
            Some(json!({ HOSTS: "false" })),
            vec!["spec.job.jarURI"],
        ),
    ];
    for (case, object, session_config, fields) in cases {
        let session = session_config.map(|config| {
            let mut cluster = serde_json::to_value(session_cluster(false)).unwrap();
            cluster["spec"]["flinkConfiguration"] = config;
            typed::<FlinkDeployment>(cluster)
        });
        let violations = validate(
            &typed::<FlinkSessionJob>(object),
            None,
            session.as_ref(),
            &ValidationContext::default(),
        );
        let found: Vec<&str> = violations.iter().map(|v| v.field.as_str()).collect();
        assert_eq!(found, fields, "{case}: {violations:#?}");
        for violation in &violations {
            let expected = if violation.field == "spec.job.jarURI" {
                ["not in the allowlist [https]", "restricted address"].as_slice()
            } else {
                ["is an operator setting", "operator configuration"].as_slice()
            };
            assert!(
                expected.iter().any(|e| violation.reason.contains(e)),
                "{case}: {violation}"
            );
        }
    }
}

#[test]
fn a_namespace_overlay_of_the_operator_configuration_widens_the_allowlist_for_that_namespace_only() {
    let ctx = ValidationContext::new(
        [(
            "kubernetes.operator.default-configuration.namespace.default.kubernetes.operator.user.artifacts.allowed-schemes"
                .to_owned(),
            "https,file".to_owned(),
        )]
        .into(),
    );
    let job = with(&[("spec/job/jarURI", json!("file:///opt/jobs/job.jar"))]);
    assert_eq!(validate(&typed(job.clone()), None, None, &ctx), vec![]);
    let mut elsewhere = job;
    elsewhere["metadata"]["namespace"] = json!("team-b");
    assert_single(
        "other namespace",
        &validate(&typed(elsewhere), None, None, &ctx),
        "spec.job.jarURI",
        "not in the allowlist [https]",
    );
}

#[test]
fn the_session_cluster_must_not_be_an_application_cluster() {
    let job: FlinkSessionJob = typed(base());
    let ctx = ValidationContext::default();
    assert_eq!(validate(&job, None, Some(&session_cluster(false)), &ctx), vec![]);
    assert_single(
        "S6",
        &validate(&job, None, Some(&session_cluster(true)), &ctx),
        "spec.deploymentName",
        "is an application cluster",
    );
}

#[test]
fn the_session_cluster_configuration_supplies_directories() {
    let job: FlinkSessionJob = typed(with(&[("spec/job/upgradeMode", json!("savepoint"))]));
    let ctx = ValidationContext::default();
    assert_eq!(
        validate(&job, None, None, &ctx).len(),
        2,
        "unknown cluster: both directories missing"
    );
    assert_eq!(validate(&job, None, Some(&session_cluster(false)), &ctx), vec![]);
}

#[test]
fn the_deployment_name_is_frozen_once_deployed() {
    let reconciled =
        json!({"spec": {"deploymentName": "session-cluster", "job": base()["spec"]["job"].clone()}});
    let object = with(&[
        ("spec/deploymentName", json!("other-cluster")),
        (
            "status/reconciliationStatus/lastReconciledSpec",
            json!(reconciled.to_string()),
        ),
    ]);
    assert_single(
        "S3",
        &check(&object),
        "spec.deploymentName",
        r#"was "session-cluster", requested "other-cluster""#,
    );
}

#[test]
fn initial_savepoint_path_cannot_be_edited_without_a_new_redeploy_nonce() {
    let old: FlinkSessionJob = typed(with(&[("spec/job/initialSavepointPath", json!("s3://b/s/sp-1"))]));
    let ctx = ValidationContext::default();
    let added: FlinkSessionJob = typed(with(&[("spec/job/initialSavepointPath", json!("s3://b/s/sp-2"))]));
    assert_single(
        "edit",
        &validate(&added, Some(&old), None, &ctx),
        "spec.job.initialSavepointPath",
        "cannot be changed on its own",
    );
    let redeploy: FlinkSessionJob = typed(with(&[
        ("spec/job/initialSavepointPath", json!("s3://b/s/sp-2")),
        ("spec/job/savepointRedeployNonce", json!(1)),
    ]));
    assert_eq!(validate(&redeploy, Some(&old), None, &ctx), vec![]);
}

const KIND: &str = crate::keys::kinds::FLINK_SESSION_JOB;

/// The rules that need the session cluster, the operator configuration or the previous
/// object (the tests below check the allowed neighbours of each).
fn update_cases() -> Vec<RuleCase> {
    let ctx = ValidationContext::default();
    let with_session_config = |object: Value, config: Value| {
        let mut cluster = serde_json::to_value(session_cluster(false)).unwrap_or_default();
        cluster["spec"]["flinkConfiguration"] = config;
        let cluster: FlinkDeployment = typed(cluster);
        validate(&typed::<FlinkSessionJob>(object), None, Some(&cluster), &ctx)
    };
    let reconciled =
        json!({"spec": {"deploymentName": "session-cluster", "job": base()["spec"]["job"].clone()}});
    let moved = with(&[
        ("spec/deploymentName", json!("other-cluster")),
        (
            "status/reconciliationStatus/lastReconciledSpec",
            json!(reconciled.to_string()),
        ),
    ]);
    let old: FlinkSessionJob = typed(with(&[("spec/job/initialSavepointPath", json!("s3://b/s/sp-1"))]));
    let edited: FlinkSessionJob = typed(with(&[("spec/job/initialSavepointPath", json!("s3://b/s/sp-2"))]));
    let overlay = ValidationContext::new(
        [(
            format!(
                "{}team-a.{}",
                crate::keys::operator::DEFAULT_CONFIGURATION_NAMESPACE_PREFIX,
                crate::keys::operator::USER_ARTIFACTS_ALLOWED_SCHEMES
            ),
            "https,file".to_owned(),
        )]
        .into(),
    );
    vec![
        RuleCase::new(
            KIND,
            "S6 the session cluster runs an application",
            validate(&typed(base()), None, Some(&session_cluster(true)), &ctx),
            "spec.deploymentName",
            "is an application cluster",
        ),
        RuleCase::new(
            KIND,
            "S3 deploymentName changed once deployed",
            check(&moved),
            "spec.deploymentName",
            r#"was "session-cluster", requested "other-cluster""#,
        ),
        RuleCase::new(
            KIND,
            "initialSavepointPath edited without a new savepointRedeployNonce",
            validate(&edited, Some(&old), None, &ctx),
            "spec.job.initialSavepointPath",
            "cannot be changed on its own",
        ),
        RuleCase::new(
            KIND,
            "jar scheme allowed by a namespace overlay of another namespace",
            validate(
                &typed(with(&[("spec/job/jarURI", json!("file:///opt/jobs/job.jar"))])),
                None,
                None,
                &overlay,
            ),
            "spec.job.jarURI",
            "not in the allowlist [https]",
        ),
        RuleCase::new(
            KIND,
            "jar scheme allowed only by the session cluster's configuration",
            with_session_config(
                with(&[("spec/job/jarURI", json!("file:///etc/passwd"))]),
                json!({ crate::keys::operator::USER_ARTIFACTS_ALLOWED_SCHEMES: "https,file" }),
            ),
            "spec.job.jarURI",
            "not in the allowlist [https]",
        ),
        RuleCase::new(
            KIND,
            "restricted host allowed only by the session cluster's configuration",
            with_session_config(
                with(&[("spec/job/jarURI", json!("https://10.1.2.3/job.jar"))]),
                json!({ crate::keys::operator::USER_ARTIFACTS_DISALLOW_RESTRICTED_HOSTS: "false" }),
            ),
            "spec.job.jarURI",
            "restricted address",
        ),
    ]
}
