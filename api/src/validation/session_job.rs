//! Rules of FlinkSessionJob (the Apache operator's S1–S9, plus our own).

use std::net::IpAddr;

use super::{
    ValidationContext, Violation, autoscaler,
    deployment::cluster_name,
    flink_config::{self, Config, StateNeeds},
    job,
};
use crate::{FlinkDeployment, FlinkSessionJob, FlinkSessionJobSpec, keys::operator, options::defaults};

/// The keys of [`ArtifactPolicy`]: operator settings that a session job may not set.
const ARTIFACT_POLICY_KEYS: [&str; 2] = [
    operator::USER_ARTIFACTS_ALLOWED_SCHEMES,
    operator::USER_ARTIFACTS_DISALLOW_RESTRICTED_HOSTS,
];

/// Where the operator fetches session jobs' jars from. It bounds what a manifest may make
/// the operator read, so it comes from the operator configuration and its namespace
/// overlays only, never from the job's or its session cluster's `flinkConfiguration`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArtifactPolicy {
    /// Schemes a jar URI may use, lowercase
    /// (`kubernetes.operator.user.artifacts.allowed-schemes`, default `https`).
    pub allowed_schemes: Vec<String>,
    /// Whether http(s) jars on loopback, link-local, private, wildcard or multicast
    /// addresses are refused
    /// (`kubernetes.operator.user.artifacts.disallow-restricted-hosts`, default true).
    pub disallow_restricted_hosts: bool,
}

impl ArtifactPolicy {
    /// The policy for session jobs in `namespace`.
    pub fn new(ctx: &ValidationContext, namespace: &str) -> Self {
        let settings = ctx.operator_settings(namespace);
        let allowed_schemes = settings
            .get(operator::USER_ARTIFACTS_ALLOWED_SCHEMES)
            .map_or(defaults::USER_ARTIFACTS_ALLOWED_SCHEMES, String::as_str)
            .split([',', ';'])
            .map(|s| s.trim().to_ascii_lowercase())
            .filter(|s| !s.is_empty())
            .collect();
        // Anything but an explicit false keeps the check: a typo must not lift it.
        let disallow_restricted_hosts = settings
            .get(operator::USER_ARTIFACTS_DISALLOW_RESTRICTED_HOSTS)
            .map_or(defaults::USER_ARTIFACTS_DISALLOW_RESTRICTED_HOSTS, |v| {
                !v.trim().eq_ignore_ascii_case("false")
            });
        Self {
            allowed_schemes,
            disallow_restricted_hosts,
        }
    }
}

/// Validates a FlinkSessionJob on CREATE (`old` is `None`) or UPDATE. `session` is the
/// target FlinkDeployment when it could be found; a job for a cluster that does not exist
/// yet is admitted, as in the Apache operator (both are often applied together).
pub fn validate(
    new: &FlinkSessionJob,
    old: Option<&FlinkSessionJob>,
    session: Option<&FlinkDeployment>,
    ctx: &ValidationContext,
) -> Vec<Violation> {
    let mut out = Vec::new();
    let spec = &new.spec;
    match spec.deployment_name.as_deref() {
        None | Some("") => out.push(Violation::new(
            "spec.deploymentName",
            "must name the session cluster (a FlinkDeployment without spec.job) to run the job on",
        )),
        Some(name) => cluster_name("spec.deploymentName", name, &mut out),
    }
    let status = old.and_then(|o| o.status.as_ref()).or(new.status.as_ref());
    let reconciled: Option<FlinkSessionJobSpec> = status
        .and_then(|s| s.reconciliation_status.as_ref())
        .and_then(|r| r.last_reconciled_spec().ok().flatten());
    if let Some(reconciled) = &reconciled
        && reconciled.deployment_name.is_some()
        && reconciled.deployment_name != spec.deployment_name
    {
        out.push(Violation::new(
            "spec.deploymentName",
            format!(
                "cannot be changed once the job is deployed (was {:?}, requested {:?}): create a new session job",
                reconciled.deployment_name.as_deref().unwrap_or_default(),
                spec.deployment_name.as_deref().unwrap_or_default()
            ),
        ));
    }
    if let Some(session) = session
        && session.spec.job.is_some()
    {
        out.push(Violation::new(
            "spec.deploymentName",
            format!(
                "FlinkDeployment {:?} is an application cluster (it has spec.job); session jobs can only be \
                 submitted to a session cluster",
                session.metadata.name.as_deref().unwrap_or_default()
            ),
        ));
    }

    let namespace = new.metadata.namespace.as_deref().unwrap_or_default();
    let session_spec = session.map(|s| &s.spec);
    // The job runs with the session cluster's configuration, overridden by its own.
    let mut config = ctx.effective_config(
        namespace,
        session_spec.and_then(|s| s.flink_version),
        session_spec.and_then(|s| s.flink_configuration.as_ref()),
    );
    let own = spec
        .flink_configuration
        .as_ref()
        .map(|c| c.flattened())
        .unwrap_or_default();
    config.extend(own.clone());
    let cfg = Config { map: &config };
    flink_config::value_formats(&own, &mut out);
    let limits = super::limits::PlatformLimits::new(ctx, namespace);
    super::limits::refused_keys("spec.flinkConfiguration", own.keys(), &mut out);
    super::limits::interval_floors(&own, &limits, super::limits::now_ms(), &mut out);
    for key in ARTIFACT_POLICY_KEYS {
        if own.contains_key(key) {
            out.push(Violation::new(
                format!("spec.flinkConfiguration.{key}"),
                "is an operator setting: it is read only from the operator configuration (or its \
                 per-namespace default-configuration overlay), never from a session job; remove it",
            ));
        }
    }

    let Some(job_spec) = &spec.job else {
        out.push(Violation::new(
            "spec.job",
            "must be defined: a session job needs a job to run",
        ));
        return out;
    };
    if let Some(uri) = &job_spec.jar_uri {
        jar_uri(uri, &ArtifactPolicy::new(ctx, namespace), &mut out);
    }
    job::parallelism_is_positive(job_spec, &mut out);
    job::redeploy_needs_a_savepoint(
        job_spec,
        reconciled.as_ref().and_then(|r| r.job.as_ref()),
        &mut out,
    );
    job::initial_savepoint_path_is_immutable(Some(job_spec), old.and_then(|o| o.spec.job.as_ref()), &mut out);
    let needs = StateNeeds {
        upgrade_mode: job_spec.upgrade_mode.unwrap_or_default(),
        savepoint_trigger_nonce: job_spec.savepoint_trigger_nonce.is_some(),
        last_state_needs_ha: false,
    };
    flink_config::state_rules(
        &cfg,
        session_spec.and_then(|s| s.flink_version),
        Some(&needs),
        &mut out,
    );
    autoscaler::rules(&cfg, &mut out);
    out
}

/// S4/S5: the operator fetches the jar itself, so it must not be a way to make the operator
/// read local files or call internal endpoints.
fn jar_uri(uri: &str, policy: &ArtifactPolicy, out: &mut Vec<Violation>) {
    const FIELD: &str = "spec.job.jarURI";
    let Some((scheme, rest)) = uri.split_once(':') else {
        out.push(Violation::new(
            FIELD,
            format!("{uri:?} must include a scheme (e.g. https://host/path/job.jar)"),
        ));
        return;
    };
    if scheme.is_empty()
        || !scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    {
        out.push(Violation::new(
            FIELD,
            format!("{uri:?} is not a valid URI: bad scheme {scheme:?}"),
        ));
        return;
    }
    if uri.chars().any(char::is_whitespace) {
        out.push(Violation::new(
            FIELD,
            format!("{uri:?} is not a valid URI: it contains whitespace"),
        ));
        return;
    }
    let allowed = &policy.allowed_schemes;
    let scheme = scheme.to_ascii_lowercase();
    if !allowed.contains(&scheme) {
        out.push(Violation::new(
            FIELD,
            format!(
                "scheme {scheme:?} is not in the allowlist [{}] ({})",
                allowed.join(", "),
                operator::USER_ARTIFACTS_ALLOWED_SCHEMES
            ),
        ));
        return;
    }
    if matches!(scheme.as_str(), "http" | "https") && policy.disallow_restricted_hosts {
        let authority = rest.strip_prefix("//").unwrap_or_default();
        let authority = authority.split(['/', '?', '#']).next().unwrap_or_default();
        let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        let host = if let Some(bracketed) = host_port.strip_prefix('[') {
            bracketed.split(']').next().unwrap_or_default()
        } else {
            host_port.split(':').next().unwrap_or_default()
        };
        if host.is_empty() {
            out.push(Violation::new(
                FIELD,
                format!("{uri:?} must include a host for http/https schemes"),
            ));
        } else if is_restricted_host(host) {
            out.push(Violation::new(
                FIELD,
                format!(
                    "host {host:?} is a restricted address (loopback, link-local, private, wildcard or multicast); \
                     the operator does not fetch jars from it"
                ),
            ));
        }
    }
}

/// Literal addresses of the classes the Apache operator refuses. Names are not resolved at
/// admission (that would be I/O, and DNS can change before the download): the fetcher
/// checks resolved addresses again.
fn is_restricted_host(host: &str) -> bool {
    let lower = host.to_ascii_lowercase();
    if lower == "localhost" || lower.ends_with(".localhost") {
        return true;
    }
    match lower.parse::<IpAddr>() {
        Ok(IpAddr::V4(ip)) => {
            ip.is_loopback()
                || ip.is_link_local()
                || ip.is_private()
                || ip.is_unspecified()
                || ip.is_multicast()
        }
        Ok(IpAddr::V6(ip)) => {
            let segments = ip.segments();
            ip.is_loopback()
                || ip.is_unspecified()
                || ip.is_multicast()
                || (segments[0] & 0xffc0) == 0xfe80 // link-local
                || (segments[0] & 0xfe00) == 0xfc00 // unique local (site-local successor)
                || ip.to_ipv4_mapped().is_some_and(|v4| is_restricted_host(&v4.to_string()))
        }
        Err(_) => false,
    }
}
    super::limits::size_caps(
        job_spec.parallelism.map(i64::from),
        None,
        &config,
        &limits,
        &mut out,
    );
