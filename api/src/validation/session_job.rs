//! Rules of FlinkSessionJob (the Apache operator's S1–S9, plus our own).

use super::{
    ValidationContext, Violation, autoscaler,
    deployment::cluster_name,
    flink_config::{self, Config, StateNeeds},
    job,
};
use crate::{FlinkDeployment, FlinkSessionJob, FlinkSessionJobSpec, keys::operator, options::defaults};

/// The keys of [`ArtifactPolicy`]: operator settings that a session job may not set.
const ARTIFACT_POLICY_KEYS: [&str; 4] = [
    operator::USER_ARTIFACTS_ALLOWED_SCHEMES,
    operator::USER_ARTIFACTS_DISALLOW_RESTRICTED_HOSTS,
    operator::USER_ARTIFACTS_FILE_ALLOWED_DIRS,
    operator::USER_ARTIFACTS_HTTP_HEADER_HOSTS,
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
    /// Absolute directories `file` jars may be under
    /// (`kubernetes.operator.user.artifacts.file.allowed-dirs`, default none: no file jar is
    /// read even where the scheme is allowed). Relative entries are left out: they would
    /// depend on the operator's working directory.
    pub file_allowed_dirs: Vec<String>,
    /// Hosts the operator configuration's download headers are sent to, lowercase
    /// (`kubernetes.operator.user.artifacts.http.header.hosts`, default none).
    pub header_hosts: Vec<String>,
}

impl Default for ArtifactPolicy {
    /// The policy of an operator configuration that sets none of its keys.
    fn default() -> Self {
        Self::new(&ValidationContext::default(), "")
    }
}

/// A list value of the artifact policy: entries separated by `,` or `;`, trimmed.
fn list(value: &str) -> impl Iterator<Item = String> + '_ {
    value
        .split([',', ';'])
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
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
        let file_allowed_dirs = settings
            .get(operator::USER_ARTIFACTS_FILE_ALLOWED_DIRS)
            .map(|v| {
                list(v)
                    .filter(|d| d.starts_with('/'))
                    .map(|d| lexically_normal(&d).display().to_string())
                    .collect()
            })
            .unwrap_or_default();
        let header_hosts = settings
            .get(operator::USER_ARTIFACTS_HTTP_HEADER_HOSTS)
            .map(|v| list(v).map(|h| h.to_ascii_lowercase()).collect())
            .unwrap_or_default();
        Self {
            allowed_schemes,
            disallow_restricted_hosts,
            file_allowed_dirs,
            header_hosts,
        }
    }

    /// Whether the operator configuration's download headers go to `host`: it is listed, or
    /// a listed `*.domain` is a parent domain of it.
    pub fn sends_headers_to(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        self.header_hosts
            .iter()
            .any(|listed| match listed.strip_prefix("*.") {
                Some(domain) => host
                    .strip_suffix(domain)
                    .is_some_and(|sub| sub.len() > 1 && sub.ends_with('.')),
                None => *listed == host,
            })
    }
}

/// What the operator logs about the artifact settings of its configuration (flattened, with
/// its namespace overlays), at start and at every reload: download headers that no host
/// receives, and file directories that are not absolute (left out).
pub fn settings_warnings(config: &std::collections::BTreeMap<String, String>) -> Vec<String> {
    let ctx = ValidationContext::new(config.clone());
    let overlay = |key: &str| {
        key.strip_prefix(operator::DEFAULT_CONFIGURATION_NAMESPACE_PREFIX)
            .and_then(|rest| rest.split_once('.'))
            .map(|(namespace, _)| namespace.to_owned())
    };
    let mut scopes: Vec<Option<String>> = vec![None];
    scopes.extend(config.keys().filter_map(|k| overlay(k)).map(Some));
    scopes.dedup();
    let mut out = Vec::new();
    for scope in scopes {
        let settings = ctx.operator_settings(scope.as_deref().unwrap_or_default());
        let place = scope.map_or_else(String::new, |ns| format!(" (namespace {ns})"));
        let headers = settings
            .get(operator::USER_ARTIFACTS_HTTP_HEADER)
            .is_some_and(|v| !v.trim().is_empty());
        let hosts = settings
            .get(operator::USER_ARTIFACTS_HTTP_HEADER_HOSTS)
            .is_some_and(|v| list(v).next().is_some());
        if headers && !hosts {
            out.push(format!(
                "{}{place}: is set but {} lists no host: these download headers are sent nowhere",
                operator::USER_ARTIFACTS_HTTP_HEADER,
                operator::USER_ARTIFACTS_HTTP_HEADER_HOSTS
            ));
        }
    }
    // Where each value is written, not in every namespace that inherits it.
    for (key, dirs) in config {
        if crate::options::effect::overlaid_key(key) != operator::USER_ARTIFACTS_FILE_ALLOWED_DIRS {
            continue;
        }
        for dir in list(dirs).filter(|d| !d.starts_with('/')) {
            out.push(format!(
                "{key}: {dir:?} is not an absolute directory and is left out"
            ));
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The local path a `file` jar URI or an absolute path names (`file:///p`,
/// `file://localhost/p` and `file:/p` all name `/p`); `None` for another scheme; an error
/// for a file URI that names no local absolute path.
pub fn file_jar_path(uri: &str) -> Option<Result<&str, String>> {
    if uri.starts_with('/') {
        return Some(Ok(uri));
    }
    let (scheme, rest) = uri.split_once(':')?;
    if !scheme.eq_ignore_ascii_case("file") {
        return None;
    }
    let path = match rest.strip_prefix("//") {
        Some(authority_and_path) => {
            let slash = authority_and_path.find('/').unwrap_or(authority_and_path.len());
            let (authority, path) = authority_and_path.split_at(slash);
            if !(authority.is_empty() || authority.eq_ignore_ascii_case("localhost")) {
                return Some(Err(format!(
                    "file URIs name local files; host {authority:?} is not local"
                )));
            }
            path
        }
        None => rest,
    };
    Some(if path.starts_with('/') {
        Ok(path)
    } else {
        Err("a file URI needs an absolute path".to_owned())
    })
}

/// `path` with `.` and `..` applied as written (no file system access; `..` of `/` is `/`).
pub fn lexically_normal(path: &str) -> std::path::PathBuf {
    use std::path::{Component, PathBuf};
    let mut out = PathBuf::from("/");
    for component in std::path::Path::new(path).components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(part) => out.push(part),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

/// Why the `file` jar at `path` (absolute, already resolved or lexically normal) may not be
/// read, or `None` when it is under one of `dirs` (compared component by component, so that
/// `/opt/jobs-other` is not under `/opt/jobs`).
pub fn file_jar_refusal(path: &std::path::Path, dirs: &[impl AsRef<std::path::Path>]) -> Option<String> {
    let key = operator::USER_ARTIFACTS_FILE_ALLOWED_DIRS;
    if dirs.is_empty() {
        return Some(format!(
            "{} is not read: file jars are read only under the directories listed in {key}, which lists none",
            path.display()
        ));
    }
    if dirs.iter().any(|dir| path.starts_with(dir.as_ref())) {
        return None;
    }
    let listed: Vec<String> = dirs.iter().map(|d| d.as_ref().display().to_string()).collect();
    Some(format!(
        "{} is outside the directories file jars are read from [{}] ({key})",
        path.display(),
        listed.join(", ")
    ))
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
    super::limits::size_caps(
        job_spec.parallelism.map(i64::from),
        None,
        &config,
        &limits,
        &mut out,
    );
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
    if scheme == "file" {
        match file_jar_path(uri) {
            Some(Ok(path)) => {
                // As written: the controller checks the path again once resolved.
                if let Some(why) = file_jar_refusal(&lexically_normal(path), &policy.file_allowed_dirs) {
                    out.push(Violation::new(FIELD, why));
                }
            }
            Some(Err(reason)) => out.push(Violation::new(
                FIELD,
                format!("{uri:?} is not a valid URI: {reason}"),
            )),
            None => {}
        }
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
        } else if let Some(range) = restricted_host(host) {
            out.push(Violation::new(
                FIELD,
                format!(
                    "host {host:?} is a restricted address ({range}); the operator does not fetch jars from it \
                     ({} is true)",
                    operator::USER_ARTIFACTS_DISALLOW_RESTRICTED_HOSTS
                ),
            ));
        }
    }
}

/// Literal addresses in a special-purpose range ([`super::addresses`]), and `localhost`. Names
/// are not resolved at admission (that would be I/O, and DNS can change before the
/// download): the fetcher checks every address it connects to.
fn restricted_host(host: &str) -> Option<String> {
    let lower = host.to_ascii_lowercase();
    if lower == "localhost" || lower.ends_with(".localhost") {
        return Some("localhost (RFC 6761)".to_owned());
    }
    super::addresses::literal(&lower).and_then(super::addresses::restricted)
}
