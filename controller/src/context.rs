//! What the reconcile loops share.

use std::collections::BTreeMap;

use flink_operator_api::{FlinkDeployment, operator_config::OperatorConfig, validation::ValidationContext};
use kube::{Client, ResourceExt, runtime::events::Recorder};

use crate::{
    flink::{EndpointError, FlinkError, FlinkRestClient, RestClients, RestEndpoints, Scheme},
    metrics::ReconcileMetrics,
};

pub struct Context {
    pub client: Client,
    /// Where JobManager REST APIs are reached (`--flink-rest-endpoint`).
    pub rest_endpoints: RestEndpoints,
    /// Clients of JobManager REST APIs, sharing one connection pool.
    pub rest_clients: RestClients,
    /// The operator's configuration, flattened Apache-style keys: its current version (see
    /// [`OperatorConfig`]).
    pub operator_config: OperatorConfig,
    pub recorder: Recorder,
    pub metrics: ReconcileMetrics,
    /// Resources (by uid) whose ready JobManager did not answer its REST API at the last
    /// look: a second unanswered look in a row is reported, a single one is not.
    pub unanswered: std::sync::Mutex<std::collections::HashSet<String>>,
    /// Whether this replica may act now (it leads, and its lease is renewed in time).
    pub fence: crate::fence::Fence,
    /// The autoscaler's metric windows of the jobs it judges.
    pub autoscaler: crate::autoscaler::memory::Windows,
    /// The log configuration of clusters whose resource sets none (`--flink-log-config`).
    pub default_logging: crate::resources::cluster::LogConfiguration,
    /// The operator's own namespace, where no Flink resource is acted on unless the
    /// configuration allows it (`None`: it has none, outside a cluster).
    pub operator_namespace: Option<std::sync::Arc<str>>,
}

impl Context {
    /// The rules' view of the operator's current configuration.
    pub fn validation(&self) -> ValidationContext {
        ValidationContext::shared(self.operator_config.current())
            .with_operator_namespace(self.operator_namespace.clone())
    }

    /// Records what the look at the JobManager of the resource `uid` found now; returns
    /// whether it did not answer at this look and at the previous one.
    pub fn unanswered_again(&self, uid: &str, look: RestLook) -> bool {
        let mut unanswered = self.unanswered.lock().unwrap_or_else(|e| e.into_inner());
        unanswered_in_a_row(&mut unanswered, uid, look)
    }

    /// The configuration `fd` runs with before its spec fields are applied: operator
    /// defaults, their namespace and version overlays, then its `flinkConfiguration`.
    pub fn effective_config(&self, fd: &FlinkDeployment) -> BTreeMap<String, String> {
        self.validation().effective_config(
            &fd.namespace().unwrap_or_default(),
            fd.spec.flink_version,
            fd.spec.flink_configuration.as_ref(),
        )
    }

    /// A session job's configuration: the operator's (with its namespace and version
    /// overlays), the session cluster's, then the job's own. Not for the artifact policy,
    /// which a manifest must not widen (see the session job's `ArtifactPolicy`).
    pub fn session_job_config(
        &self,
        sj: &flink_operator_api::FlinkSessionJob,
        session: Option<&FlinkDeployment>,
    ) -> BTreeMap<String, String> {
        let mut config = self.validation().effective_config(
            &sj.namespace().unwrap_or_default(),
            session.and_then(|s| s.spec.flink_version),
            session.and_then(|s| s.spec.flink_configuration.as_ref()),
        );
        if let Some(own) = &sj.spec.flink_configuration {
            config.extend(own.flattened());
        }
        config
    }

    /// How many resources of one kind are reconciled at once
    /// (`kubernetes.operator.reconcile.parallelism`, default 50 as in the Apache operator;
    /// -1 lifts the bound). The bound also caps the operator's connections to the API
    /// server and its memory when many resources change at once.
    pub fn reconcile_parallelism(&self) -> u16 {
        match self
            .operator_config
            .current()
            .get(flink_operator_api::keys::operator::RECONCILE_PARALLELISM)
            .and_then(|v| v.trim().parse::<i64>().ok())
        {
            Some(n) if n < 0 => 0,
            Some(n) => u16::try_from(n.max(1)).unwrap_or(u16::MAX),
            None => flink_operator_api::options::defaults::RECONCILE_PARALLELISM,
        }
    }

    /// The most reconciles of one kind and namespace at once
    /// (`kubernetes.operator.reconcile.namespace-share`; `None`: unset, half the workers).
    pub fn reconcile_namespace_share(&self) -> Option<u64> {
        flink_operator_api::options::read::count(
            &self.operator_config.current(),
            flink_operator_api::keys::operator::RECONCILE_NAMESPACE_SHARE,
        )
    }

    /// A client of the JobManager at `url`, whose requests count for the resource `kind`
    /// `namespace/name`.
    pub fn rest_client(
        &self,
        url: &str,
        kind: &'static str,
        namespace: &str,
        name: &str,
    ) -> Result<FlinkRestClient, FlinkError> {
        Ok(self
            .rest_clients
            .client(url)?
            .counted(self.metrics.flink_requests(kind, namespace, name))
            .timed(self.metrics.flink_calls(kind))
            .fenced(self.fence.clone()))
    }

    /// Forgets what is kept in memory about the resource `uid`, which is gone.
    pub fn forget(&self, uid: &str) {
        self.unanswered
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(uid);
        self.autoscaler.forget(uid);
    }

    /// Where `fd`'s JobManager REST API is reached: its `<name>-rest` Service, or a ready
    /// endpoint of it (`--flink-rest-endpoint`), on its REST port.
    pub async fn rest_url(&self, fd: &FlinkDeployment) -> Result<String, EndpointError> {
        let config = self.effective_config(fd);
        self.rest_endpoints
            .base_url(
                &fd.namespace().unwrap_or_default(),
                &crate::resources::cluster::rest_service_name(&fd.name_any()),
                rest_port(&config),
                Scheme::of(&config),
            )
            .await
    }

    /// The REST port of `fd`'s JobManager (`rest.port`, default 8081).
    pub fn rest_port(&self, fd: &FlinkDeployment) -> u16 {
        rest_port(&self.effective_config(fd))
    }
}

/// What one look at a JobManager's REST API found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestLook {
    /// It answered (or there was nothing to ask).
    Answered,
    /// A call was sent and got no answer.
    Unanswered,
    /// No call was sent: every call that got no answer was held back, because a call to the
    /// same host timed out lately, once (see [`crate::flink::hosts`]). Not a look: it neither
    /// starts nor continues a run of unanswered looks, so that holding calls back never
    /// decides more than the timeout it stands for. (Held back after two timeouts in a row,
    /// the calls count as unanswered, and the look is [`RestLook::Unanswered`].)
    HeldBack,
}

impl RestLook {
    /// The look of `rest`'s calls, `answered` or not.
    pub fn of(answered: bool, rest: &FlinkRestClient) -> Self {
        match (answered, rest.only_held_back()) {
            (true, _) => RestLook::Answered,
            (false, true) => RestLook::HeldBack,
            (false, false) => RestLook::Unanswered,
        }
    }
}

/// Records `look` of `uid` among the resources whose JobManager did not answer at their last
/// look; whether it did not answer now and then.
fn unanswered_in_a_row(
    unanswered: &mut std::collections::HashSet<String>,
    uid: &str,
    look: RestLook,
) -> bool {
    match look {
        RestLook::Answered => {
            unanswered.remove(uid);
            false
        }
        RestLook::Unanswered => !unanswered.insert(uid.to_owned()),
        RestLook::HeldBack => false,
    }
}

fn rest_port(config: &BTreeMap<String, String>) -> u16 {
    config
        .get("rest.port")
        .and_then(|p| p.parse().ok())
        .unwrap_or(8081)
}

#[cfg(test)]
mod tests {
    use super::{RestLook, unanswered_in_a_row};

    #[test]
    fn looks_whose_calls_were_held_back_do_not_make_a_jobmanager_unanswered_twice() {
        use RestLook::*;
        // The looks in turn -> whether each is the second unanswered look in a row.
        for (looks, expected) in [
            (vec![Unanswered, Unanswered], vec![false, true]),
            (vec![Unanswered, Answered, Unanswered], vec![false, false, false]),
            // Held back after a timeout: not a second unanswered look, however many.
            (vec![Unanswered, HeldBack, HeldBack], vec![false, false, false]),
            // The call let through after the hold-back times out too: now it is.
            (vec![Unanswered, HeldBack, Unanswered], vec![false, false, true]),
            (vec![HeldBack, Unanswered], vec![false, false]),
        ] {
            let mut unanswered = std::collections::HashSet::new();
            let seen: Vec<bool> = looks
                .iter()
                .map(|look| unanswered_in_a_row(&mut unanswered, "uid", *look))
                .collect();
            assert_eq!(seen, expected, "{looks:?}");
        }
    }
}
