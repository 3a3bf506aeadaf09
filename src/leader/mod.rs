//! Leader election among the operator's replicas (`kubernetes.operator.leader-election.*`).
//!
//! Every replica serves the webhook and keeps its caches warm; only the replica that holds
//! the Lease runs the controllers. [`decide`] says what a replica does about the Lease (and
//! why two replicas never act at once); [`lease`] does it; [`supervise`] starts the
//! controllers when this replica leads and stops them, before anything else, when it no
//! longer can prove it does.
//!
//! Written here rather than taken from a crate: the crates at hand judge a lease expired by
//! comparing its `renewTime` with the local wall clock, which clock skew defeats, and do not
//! tell their user that a renewal failed until the lease has visibly changed hands, after
//! another replica may already act.

pub mod decide;
pub mod lease;

use std::{
    collections::BTreeMap,
    hash::{BuildHasher, Hasher},
    time::Duration,
};

use flink_operator_api::{keys::operator, options::defaults, options::parse_duration};
use k8s_openapi::api::coordination::v1::Lease;
use kube::{Api, Client};
use prometheus_client::{
    metrics::{counter::Counter, gauge::Gauge},
    registry::Registry,
};
use tokio::{sync::watch, task::JoinSet};

use self::{
    decide::{Timing, TimingError},
    lease::Elector,
};
use crate::loop_ended::LoopEnded;
use flink_operator_controller::fence::Fence;

/// Why the leader-election settings cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum LeaderElectionError {
    /// Leader election is on but names no Lease.
    #[error(
        "{} is true, so {} must name the Lease",
        operator::LEADER_ELECTION_ENABLED,
        operator::LEADER_ELECTION_LEASE_NAME
    )]
    NoLeaseName,
    /// A key's value is not of its type.
    #[error("{key}: {reason}")]
    Value {
        /// The key.
        key: &'static str,
        /// What is wrong with its value.
        reason: String,
    },
    /// The durations could let two replicas act at once.
    #[error(
        "{lease_duration}, {renew_deadline} and {retry_period}: {source}",
        lease_duration = operator::LEADER_ELECTION_LEASE_DURATION,
        renew_deadline = operator::LEADER_ELECTION_RENEW_DEADLINE,
        retry_period = operator::LEADER_ELECTION_RETRY_PERIOD
    )]
    Timing {
        /// What is wrong with them.
        #[from]
        source: TimingError,
    },
}

/// Where and how this replica takes part in the election.
#[derive(Clone, Debug)]
pub struct LeaderElection {
    /// The Lease's name.
    pub lease: String,
    /// Its namespace (the operator's).
    pub namespace: String,
    /// This replica's identity: its pod's name (see [`identity`]).
    pub identity: String,
    /// The durations.
    pub timing: Timing,
}

impl LeaderElection {
    /// The settings of `config`; `None` when leader election is off.
    pub fn from_config(
        config: &BTreeMap<String, String>,
        namespace: &str,
    ) -> Result<Option<Self>, LeaderElectionError> {
        let enabled = match config.get(operator::LEADER_ELECTION_ENABLED).map(|v| v.trim()) {
            None => false,
            Some(value) => value.parse::<bool>().map_err(|_| LeaderElectionError::Value {
                key: operator::LEADER_ELECTION_ENABLED,
                reason: format!("{value:?} is not true or false"),
            })?,
        };
        if !enabled {
            return Ok(None);
        }
        let lease = config
            .get(operator::LEADER_ELECTION_LEASE_NAME)
            .map(|name| name.trim().to_owned())
            .filter(|name| !name.is_empty())
            .ok_or(LeaderElectionError::NoLeaseName)?;
        let duration = |key: &'static str, default_ms: i64| -> Result<Duration, LeaderElectionError> {
            match config.get(key) {
                None => Ok(Duration::from_millis(u64::try_from(default_ms).unwrap_or(0))),
                Some(text) => {
                    parse_duration(text).map_err(|reason| LeaderElectionError::Value { key, reason })
                }
            }
        };
        let timing = Timing::new(
            duration(
                operator::LEADER_ELECTION_LEASE_DURATION,
                defaults::LEADER_ELECTION_LEASE_DURATION_MS,
            )?,
            duration(
                operator::LEADER_ELECTION_RENEW_DEADLINE,
                defaults::LEADER_ELECTION_RENEW_DEADLINE_MS,
            )?,
            duration(
                operator::LEADER_ELECTION_RETRY_PERIOD,
                defaults::LEADER_ELECTION_RETRY_PERIOD_MS,
            )?,
        )?;
        Ok(Some(Self {
            lease,
            namespace: namespace.to_owned(),
            identity: identity(),
            timing,
        }))
    }
}

/// The pod's name, which the API server keeps unique among running pods: a container
/// restarted in its pod (after a crash) takes its lease back at once, since its predecessor
/// is gone. Without one (an operator outside the cluster), the host's name and 32 random
/// bits, so that no other process can pass for this one.
fn identity() -> String {
    if let Some(pod) = std::env::var("POD_NAME").ok().filter(|name| !name.is_empty()) {
        return pod;
    }
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "flink-operator".to_owned());
    // The standard library's hasher keys are random per process: no extra dependency.
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    format!("{host}_{:08x}", hasher.finish() as u32)
}

/// Who leads, as this replica sees itself.
#[derive(Clone, Default)]
pub struct LeaderMetrics {
    leader: Gauge,
    changes: Counter,
}

impl LeaderMetrics {
    /// Registers the metrics.
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = Self::default();
        let sub = registry.sub_registry_with_prefix("flink_operator");
        sub.register(
            "leader",
            "1 while this replica holds the leader-election Lease and runs the controllers, else 0 \
             (always 1 without leader election)",
            metrics.leader.clone(),
        );
        sub.register(
            "leader_changes",
            "Times this replica started or stopped leading",
            metrics.changes.clone(),
        );
        metrics
    }

    /// This replica starts (`true`) or stops leading.
    pub fn leading(&self, leading: bool) {
        self.leader.set(i64::from(leading));
        self.changes.inc();
    }
}

/// What this replica takes part in the election with.
pub struct Candidate {
    /// The client the Lease is read and written with.
    pub client: Client,
    pub election: LeaderElection,
    /// Where leadership is shown.
    pub metrics: LeaderMetrics,
    /// What every action of the controllers checks: open while this replica's lease holds.
    pub fence: Fence,
}

/// Runs the controllers that `start` spawns while `candidate` leads, until `stopping`
/// turns true; then stops them and releases the lease. A controller that ends by itself
/// (none should before the process stops) ends the supervision the same way, with the
/// error: the lease is given up, so that another replica leads while this one restarts.
pub async fn supervise(
    candidate: Candidate,
    mut stopping: watch::Receiver<bool>,
    start: impl Fn() -> JoinSet<&'static str> + Send,
) -> Result<(), LoopEnded> {
    let Candidate {
        client,
        election,
        metrics,
        fence,
    } = candidate;
    tracing::info!(
        lease = %election.lease,
        namespace = %election.namespace,
        identity = %election.identity,
        timing = ?election.timing,
        "taking part in leader election; the controllers run only while this replica leads"
    );
    let (leading_sender, mut leading) = watch::channel(false);
    let (release, released) = watch::channel(false);
    let elector = Elector {
        api: Api::<Lease>::namespaced(client, &election.namespace),
        name: election.lease.clone(),
        identity: election.identity.clone(),
        timing: election.timing,
        metrics,
        fence,
    };
    let mut elector = tokio::spawn(elector.run(leading_sender, released));
    let mut controllers: Option<JoinSet<&'static str>> = None;
    let mut outcome = Ok(());
    loop {
        tokio::select! {
            biased;
            () = stopped(&mut stopping) => break,
            joined = ended(&mut controllers) => {
                let loop_ended = LoopEnded::from_join(joined);
                tracing::error!(error = %loop_ended, "a controller ended while leading: giving up the Lease");
                outcome = Err(loop_ended);
                break;
            }
            changed = leading.changed() => {
                if changed.is_err() {
                    break;
                }
                let now_leading = *leading.borrow_and_update();
                match (now_leading, controllers.take()) {
                    (true, None) => {
                        tracing::info!("leading: starting the controllers");
                        controllers = Some(start());
                    }
                    (false, Some(mut running)) => {
                        running.shutdown().await;
                        tracing::warn!("no longer leading: the controllers stopped");
                    }
                    (_, unchanged) => controllers = unchanged,
                }
            }
            // The elector ends on its own only when the Lease's watch does, i.e. never
            // before the process stops; without it this replica must not act.
            _ = &mut elector => {
                tracing::error!("the leader election ended; the controllers stop");
                break;
            }
        }
    }
    // Stop acting before giving the lease up: the next leader may start at once.
    if let Some(mut running) = controllers {
        running.shutdown().await;
    }
    let _ = release.send(true);
    if !elector.is_finished() {
        let _ = elector.await;
    }
    outcome
}

/// The first of `controllers` to end; never, while there are none.
async fn ended(
    controllers: &mut Option<JoinSet<&'static str>>,
) -> Result<&'static str, tokio::task::JoinError> {
    match controllers.as_mut() {
        Some(running) if !running.is_empty() => match running.join_next().await {
            Some(joined) => joined,
            None => std::future::pending().await,
        },
        _ => std::future::pending().await,
    }
}

/// Resolves once the process stops; the watch guard is dropped here, so the futures
/// awaiting this stay `Send`.
async fn stopped(stopping: &mut watch::Receiver<bool>) {
    let _ = stopping.wait_for(|stop| *stop).await;
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn config(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn off_unless_enabled() {
        assert!(LeaderElection::from_config(&config(&[]), "ns").unwrap().is_none());
        assert!(
            LeaderElection::from_config(&config(&[(operator::LEADER_ELECTION_ENABLED, "false")]), "ns")
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn enabled_takes_the_apache_defaults_and_needs_a_lease_name() {
        let error =
            LeaderElection::from_config(&config(&[(operator::LEADER_ELECTION_ENABLED, "true")]), "ns")
                .unwrap_err();
        assert!(
            error.to_string().contains(operator::LEADER_ELECTION_LEASE_NAME),
            "{error}"
        );
        let election = LeaderElection::from_config(
            &config(&[
                (operator::LEADER_ELECTION_ENABLED, "true"),
                (operator::LEADER_ELECTION_LEASE_NAME, "flink-operator-lease"),
            ]),
            "ops",
        )
        .unwrap()
        .unwrap();
        assert_eq!(election.lease, "flink-operator-lease");
        assert_eq!(election.namespace, "ops");
        assert_eq!(election.timing.lease_duration, Duration::from_secs(15));
        assert_eq!(election.timing.renew_deadline, Duration::from_secs(10));
        assert_eq!(election.timing.retry_period, Duration::from_secs(2));
    }

    #[test]
    fn bad_values_name_their_key() {
        let error = LeaderElection::from_config(&config(&[(operator::LEADER_ELECTION_ENABLED, "yes")]), "ns")
            .unwrap_err();
        assert!(
            error.to_string().starts_with(operator::LEADER_ELECTION_ENABLED),
            "{error}"
        );
        let error = LeaderElection::from_config(
            &config(&[
                (operator::LEADER_ELECTION_ENABLED, "true"),
                (operator::LEADER_ELECTION_LEASE_NAME, "l"),
                (operator::LEADER_ELECTION_RENEW_DEADLINE, "ten seconds"),
            ]),
            "ns",
        )
        .unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with(operator::LEADER_ELECTION_RENEW_DEADLINE),
            "{error}"
        );
        let error = LeaderElection::from_config(
            &config(&[
                (operator::LEADER_ELECTION_ENABLED, "true"),
                (operator::LEADER_ELECTION_LEASE_NAME, "l"),
                (operator::LEADER_ELECTION_RENEW_DEADLINE, "20 s"),
            ]),
            "ns",
        )
        .unwrap_err();
        assert!(matches!(error, LeaderElectionError::Timing { .. }), "{error}");
    }

    #[test]
    fn identities_outside_a_pod_differ_per_process() {
        if std::env::var_os("POD_NAME").is_none() {
            assert_ne!(identity(), identity());
        }
    }
}
