//! Dynamic configuration (`kubernetes.operator.dynamic.config.enabled`, on by default as in
//! the Apache operator): the operator's configuration files are read again every
//! `kubernetes.operator.dynamic.config.check.interval` (default 5 min), so that an edit of
//! the chart's ConfigMap, which the kubelet puts into the mounted file, reaches a running
//! operator. A version that loads and passes the checks of the start replaces the current one
//! as a whole for every later admission and reconcile (the keys a resource's effective
//! configuration holds, and the webhook's rules); one that does not is logged as an error
//! and the current version stays. The keys read once at start ([`READ_AT_START`]: what
//! is watched, leader election, the REST client's timeouts, which loops run) are logged as
//! waiting for a restart; with `kubernetes.operator.dynamic.namespaces.enabled`, a change of
//! the watched namespaces restarts the process, whose caches and loops watch one scope.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::PathBuf,
    time::Duration,
};

use flink_operator_api::{
    keys::operator,
    operator_config::OperatorConfig,
    options::{defaults, effect, read},
};
use tokio::sync::{mpsc, watch};

use crate::config::{self, ConfigError};

/// Keys read once when the process starts: a changed value waits for the next start.
pub const READ_AT_START: &[&str] = &[
    operator::WATCHED_NAMESPACES,
    operator::LABEL_SELECTOR,
    operator::LEADER_ELECTION_ENABLED,
    operator::LEADER_ELECTION_LEASE_NAME,
    operator::LEADER_ELECTION_LEASE_DURATION,
    operator::LEADER_ELECTION_RENEW_DEADLINE,
    operator::LEADER_ELECTION_RETRY_PERIOD,
    operator::RECONCILE_PARALLELISM,
    operator::RECONCILE_NAMESPACE_SHARE,
    operator::FLINK_CLIENT_TIMEOUT,
    operator::JOB_SUBMISSION_TIMEOUT,
    operator::INGRESS_MANAGE,
    operator::SNAPSHOT_RESOURCE_ENABLED,
    operator::DYNAMIC_CONFIG_ENABLED,
    operator::DYNAMIC_CONFIG_CHECK_INTERVAL,
];

/// What one look at the files found.
#[derive(Debug)]
pub enum Look {
    Unchanged,
    /// A new version, made current: the keys whose value changed (added and removed ones
    /// too), those of them read at start only, and the checks' warnings.
    Replaced {
        changed: Vec<String>,
        at_start: Vec<String>,
        warnings: Vec<String>,
    },
    /// The files do not load or fail the checks: the current version stays.
    Refused(ConfigError),
}

/// How often the files are looked at; None when dynamic configuration is off.
pub fn interval(config: &BTreeMap<String, String>) -> Option<Duration> {
    if !read::flag(
        config,
        operator::DYNAMIC_CONFIG_ENABLED,
        defaults::DYNAMIC_CONFIG_ENABLED,
    ) {
        return None;
    }
    let ms = read::millis(config, operator::DYNAMIC_CONFIG_CHECK_INTERVAL)
        .unwrap_or(defaults::DYNAMIC_CONFIG_CHECK_INTERVAL_MS);
    // A zero interval would be a busy loop: at least a second.
    Some(Duration::from_millis(u64::try_from(ms).unwrap_or(0).max(1000)))
}

/// Reads `paths` and makes them the current version of `live` when they changed and pass
/// the checks.
pub fn look(paths: &[PathBuf], live: &OperatorConfig) -> Look {
    let loaded = match config::load_layered(paths) {
        Ok(loaded) => loaded,
        Err(error) => return Look::Refused(error),
    };
    let current = live.current();
    if *current == loaded {
        return Look::Unchanged;
    }
    let warnings = match config::check(&loaded) {
        Ok(warnings) => warnings,
        Err(error) => return Look::Refused(error),
    };
    let keys: BTreeSet<&String> = current.keys().chain(loaded.keys()).collect();
    let changed: Vec<String> = keys
        .into_iter()
        .filter(|key| current.get(*key) != loaded.get(*key))
        .cloned()
        .collect();
    let at_start = changed
        .iter()
        .filter(|key| READ_AT_START.contains(&effect::overlaid_key(key)))
        .cloned()
        .collect();
    live.replace(loaded);
    Look::Replaced {
        changed,
        at_start,
        warnings,
    }
}

/// Looks at `paths` every `every` until the process stops, logging what each look found.
/// What [`run`] reads, how often, and where it asks for a restart.
pub struct Reload {
    pub paths: Vec<PathBuf>,
    pub live: OperatorConfig,
    pub every: Duration,
    /// With `kubernetes.operator.dynamic.namespaces.enabled`: where a change of the watched
    /// namespaces asks the process to restart (the caches and loops watch one scope).
    pub restart_for_namespaces: Option<mpsc::Sender<String>>,
}

pub async fn run(reload: Reload, mut stopping: watch::Receiver<bool>) {
    let Reload {
        paths,
        live,
        every,
        restart_for_namespaces,
    } = reload;
    tracing::info!(
        ?paths,
        every_s = every.as_secs(),
        "the operator configuration is read again while it runs"
    );
    let mut refused_before = None;
    loop {
        tokio::select! {
            () = tokio::time::sleep(every) => {}
            _ = stopping.wait_for(|stop| *stop) => return,
        }
        let (paths, live_for_look) = (paths.clone(), live.clone());
        let Ok(found) = tokio::task::spawn_blocking(move || look(&paths, &live_for_look)).await else {
            continue;
        };
        match found {
            Look::Unchanged => {}
            Look::Replaced {
                changed,
                at_start,
                warnings,
            } => {
                refused_before = None;
                tracing::info!(
                    ?changed,
                    "operator configuration reloaded: later reconciles and admissions use it"
                );
                let namespaces = at_start.iter().any(|key| key == operator::WATCHED_NAMESPACES);
                if namespaces && let Some(restart) = &restart_for_namespaces {
                    let _ = restart
                        .send(format!("{} changed", operator::WATCHED_NAMESPACES))
                        .await;
                    return;
                }
                if !at_start.is_empty() {
                    tracing::warn!(keys = ?at_start, "operator configuration: read at start only, these take effect when the operator restarts");
                }
                for warning in warnings {
                    tracing::warn!("operator configuration: {warning}");
                }
            }
            Look::Refused(error) => {
                // Said once per new reason, not at every look.
                let reason = error.to_string();
                if refused_before.as_ref() != Some(&reason) {
                    tracing::error!(%reason, "operator configuration not reloaded: the previous version stays");
                    refused_before = Some(reason);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_changed_file_that_passes_the_checks_replaces_the_version_and_one_that_fails_does_not() {
        let dir = std::env::temp_dir().join(format!("flink-operator-reload-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("config.yaml");
        let paths = vec![file.clone()];
        std::fs::write(
            &file,
            "kubernetes.operator.reconcile.interval: 60 s\nkubernetes.operator.watched.namespaces: a\n",
        )
        .unwrap();
        let live = OperatorConfig::new(config::load_layered(&paths).unwrap());
        assert!(matches!(look(&paths, &live), Look::Unchanged));

        std::fs::write(
            &file,
            "kubernetes.operator.reconcile.interval: 30 s\nkubernetes.operator.watched.namespaces: a,b\n\
             kubernetes.operator.retry.max.attempts: 3\n",
        )
        .unwrap();
        match look(&paths, &live) {
            Look::Replaced {
                changed,
                at_start,
                warnings,
            } => {
                assert_eq!(
                    changed,
                    [
                        "kubernetes.operator.reconcile.interval",
                        "kubernetes.operator.retry.max.attempts",
                        "kubernetes.operator.watched.namespaces"
                    ]
                );
                assert_eq!(at_start, ["kubernetes.operator.watched.namespaces"]);
                assert_eq!(warnings.len(), 1, "{warnings:?}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(live.current()["kubernetes.operator.reconcile.interval"], "30 s");

        // A value not of its key's type, and YAML that does not parse: refused, kept.
        for text in ["kubernetes.operator.reconcile.interval: soon\n", "a: [b\n"] {
            std::fs::write(&file, text).unwrap();
            assert!(matches!(look(&paths, &live), Look::Refused(_)), "{text}");
            assert_eq!(live.current()["kubernetes.operator.reconcile.interval"], "30 s");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_interval_follows_the_keys() {
        let config = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        assert_eq!(interval(&config(&[])), Some(Duration::from_secs(300)));
        assert_eq!(
            interval(&config(&[(operator::DYNAMIC_CONFIG_CHECK_INTERVAL, "10 s")])),
            Some(Duration::from_secs(10))
        );
        assert_eq!(
            interval(&config(&[(operator::DYNAMIC_CONFIG_CHECK_INTERVAL, "0 ms")])),
            Some(Duration::from_secs(1))
        );
        assert_eq!(
            interval(&config(&[(operator::DYNAMIC_CONFIG_ENABLED, "false")])),
            None
        );
    }
}
