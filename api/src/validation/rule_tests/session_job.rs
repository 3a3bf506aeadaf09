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
        [
            (
                "kubernetes.operator.default-configuration.namespace.default.kubernetes.operator.user.artifacts.allowed-schemes"
                    .to_owned(),
                "https,file".to_owned(),
            ),
            (
                "kubernetes.operator.default-configuration.namespace.default.kubernetes.operator.user.artifacts.file.allowed-dirs"
                    .to_owned(),
                "/opt/jobs".to_owned(),
            ),
        ]
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

/// The operator configuration of a platform that allows `file` jars under `dirs`.
fn file_jars_under(dirs: &str) -> ValidationContext {
    ValidationContext::new(
        [
            (
                crate::keys::operator::USER_ARTIFACTS_ALLOWED_SCHEMES.to_owned(),
                "https,file".to_owned(),
            ),
            (
                crate::keys::operator::USER_ARTIFACTS_FILE_ALLOWED_DIRS.to_owned(),
                dirs.to_owned(),
            ),
        ]
        .into(),
    )
}

#[test]
fn file_jars_are_read_only_under_the_configured_directories() {
    const KEY: &str = "kubernetes.operator.user.artifacts.file.allowed-dirs";
    let verdict = |ctx: &ValidationContext, uri: &str| {
        validate(
            &typed::<FlinkSessionJob>(with(&[("spec/job/jarURI", json!(uri))])),
            None,
            None,
            ctx,
        )
    };
    // The file scheme allowed, no directory listed: no file jar at all.
    let none = file_jars_under("");
    let token = "file:///var/run/secrets/kubernetes.io/serviceaccount/token";
    let refused = verdict(&none, token);
    assert_single(
        "no directories",
        &refused,
        "spec.job.jarURI",
        "/var/run/secrets/kubernetes.io/serviceaccount/token is not read",
    );
    assert!(refused[0].reason.contains(KEY), "{refused:?}");

    let jobs = file_jars_under("/opt/jobs, /srv/jars/;relative/dir");
    for (uri, path) in [
        (token, "/var/run/secrets/kubernetes.io/serviceaccount/token"),
        ("file:///opt/jobs/../../etc/passwd", "/etc/passwd"),
        ("file:/opt/jobs-other/job.jar", "/opt/jobs-other/job.jar"),
        ("file://localhost/opt/job.jar", "/opt/job.jar"),
        // A relative directory of the setting is left out, never matched.
        ("file:///relative/dir/job.jar", "/relative/dir/job.jar"),
    ] {
        let violations = verdict(&jobs, uri);
        assert_single(uri, &violations, "spec.job.jarURI", "is outside the directories");
        let reason = &violations[0].reason;
        assert!(
            reason.contains(path) && reason.contains(KEY) && reason.contains("[/opt/jobs, /srv/jars]"),
            "{uri}: {reason}"
        );
    }
    assert_single(
        "remote file host",
        &verdict(&jobs, "file://other-host/opt/jobs/job.jar"),
        "spec.job.jarURI",
        "is not local",
    );
    for uri in [
        "file:///opt/jobs/job.jar",
        "file:///opt/jobs/team-a/../job.jar",
        "file://localhost/srv/jars/job.jar",
        "file:/srv/jars/a/b.jar",
    ] {
        assert_eq!(verdict(&jobs, uri), vec![], "{uri}");
    }
}

#[test]
fn the_new_artifact_settings_cannot_be_set_by_a_session_job() {
    for key in [
        "kubernetes.operator.user.artifacts.file.allowed-dirs",
        "kubernetes.operator.user.artifacts.http.header.hosts",
    ] {
        let violations = check(&with(&[("spec/flinkConfiguration", json!({ key: "/" }))]));
        assert_single(
            key,
            &violations,
            &format!("spec.flinkConfiguration.{key}"),
            "is an operator setting",
        );
    }
}

#[test]
fn operator_headers_go_only_to_the_listed_hosts() {
    let policy = crate::validation::session_job::ArtifactPolicy::new(
        &ValidationContext::new(
            [(
                crate::keys::operator::USER_ARTIFACTS_HTTP_HEADER_HOSTS.to_owned(),
                "repo.example.com; *.jars.example.org".to_owned(),
            )]
            .into(),
        ),
        "default",
    );
    for host in [
        "repo.example.com",
        "REPO.example.com.",
        "a.jars.example.org",
        "b.a.jars.example.org",
    ] {
        assert!(policy.sends_headers_to(host), "{host}");
    }
    for host in [
        "evil.com",
        "repo.example.com.evil.com",
        "jars.example.org",
        "evil-jars.example.org",
        "xjars.example.org",
    ] {
        assert!(!policy.sends_headers_to(host), "{host}");
    }
    let unset = crate::validation::session_job::ArtifactPolicy::new(&ValidationContext::default(), "default");
    assert!(!unset.sends_headers_to("repo.example.com"));
}

#[test]
fn every_special_purpose_range_is_refused_at_admission() {
    for host in [
        "100.64.0.1",
        "198.18.0.1",
        "192.0.0.8",
        "[64:ff9b::a00:1]",
        "[2002:7f00:1::1]",
        "[::ffff:127.0.0.1]",
        "0x7f.1",
        "2130706433",
    ] {
        let violations = check(&with(&[(
            "spec/job/jarURI",
            json!(format!("https://{host}/job.jar")),
        )]));
        assert_single(host, &violations, "spec.job.jarURI", "is a restricted address");
    }
}

#[test]
fn operator_headers_without_hosts_and_relative_file_directories_are_warned_about() {
    use crate::validation::session_job::settings_warnings;
    const HEADER: &str = "kubernetes.operator.user.artifacts.http.header";
    const HOSTS: &str = "kubernetes.operator.user.artifacts.http.header.hosts";
    const DIRS: &str = "kubernetes.operator.user.artifacts.file.allowed-dirs";
    let overlay =
        |ns: &str, key: &str| format!("kubernetes.operator.default-configuration.namespace.{ns}.{key}");
    let config = |pairs: &[(String, &str)]| {
        pairs
            .iter()
            .map(|(k, v)| (k.clone(), (*v).to_owned()))
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    let warnings = settings_warnings(&config(&[
        (HEADER.to_owned(), "Authorization:Bearer x"),
        (overlay("team-a", HEADER), "X-Key:y"),
        (overlay("team-b", HOSTS), "repo.example.com"),
        (DIRS.to_owned(), "/opt/jobs,jobs"),
    ]));
    // Everywhere but team-b, whose overlay lists a host.
    assert_eq!(warnings.len(), 3, "{warnings:#?}");
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with(&format!("{HEADER}: is set but {HOSTS}")))
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with(&format!("{HEADER} (namespace team-a)")))
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("\"jobs\" is not an absolute directory"))
    );
    assert!(
        !warnings.iter().any(|w| w.contains("Bearer")),
        "values are never shown"
    );
    assert_eq!(
        settings_warnings(&config(&[
            (HEADER.to_owned(), "A:b"),
            (HOSTS.to_owned(), "repo.example.com")
        ])),
        Vec::<String>::new()
    );
}
