//! Lookups of the objects a rule needs to see: the FlinkDeployment or FlinkSessionJob a
//! snapshot references, and the session cluster a session job targets.
//!
//! The webhook never depends on the controllers; the binary hands it a [`JobDirectory`].
//! When the controllers run in the same process, their reflector stores answer hits
//! without a round trip. A miss is confirmed with the API server before it counts, because
//! a store trails the API by a watch event: a snapshot created right after its job would
//! otherwise be refused for a job that exists.

use std::{fmt::Debug, sync::Arc, time::Duration};

use flink_operator_api::{FlinkDeployment, FlinkSessionJob};
use futures::future::BoxFuture;
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;

/// How long one API lookup may take. The API server gives the whole webhook call
/// `timeoutSeconds` (5 s in our chart); a lookup that cannot finish well inside that must
/// fail as "could not verify" rather than let the API server time out on us.
pub const LOOKUP_TIMEOUT: Duration = Duration::from_secs(2);

/// Why a lookup could not say whether an object exists.
#[derive(Debug, thiserror::Error)]
pub enum LookupError {
    /// The API server answered with an error.
    #[error("looking up {kind} {namespace}/{name} failed: {source}")]
    Api {
        /// Kind looked up.
        kind: &'static str,
        /// Namespace looked in.
        namespace: String,
        /// Name looked for.
        name: String,
        /// What the API server or the client said (boxed: kube's error is large, and
        /// lookups return it on every path).
        #[source]
        source: Box<kube::Error>,
    },
    /// This process has no connection to an API server.
    #[error("no Kubernetes API is available to look up {kind} {namespace}/{name}: {reason}")]
    Unavailable {
        /// Kind looked up.
        kind: &'static str,
        /// Namespace looked in.
        namespace: String,
        /// Name looked for.
        name: String,
        /// Why there is no API client.
        reason: Arc<str>,
    },
    /// The API server did not answer in time.
    #[error("looking up {kind} {namespace}/{name} timed out after {LOOKUP_TIMEOUT:?}")]
    Timeout {
        /// Kind looked up.
        kind: &'static str,
        /// Namespace looked in.
        namespace: String,
        /// Name looked for.
        name: String,
    },
}

/// Finds the Flink resources that admission rules refer to.
pub trait JobDirectory: Send + Sync + 'static {
    /// The FlinkDeployment `namespace/name`, if it exists.
    fn deployment(
        &self,
        namespace: String,
        name: String,
    ) -> BoxFuture<'_, Result<Option<Arc<FlinkDeployment>>, LookupError>>;

    /// The FlinkSessionJob `namespace/name`, if it exists.
    fn session_job(
        &self,
        namespace: String,
        name: String,
    ) -> BoxFuture<'_, Result<Option<Arc<FlinkSessionJob>>, LookupError>>;
}

// === impl ApiDirectory ===

/// Looks objects up with GET requests to the API server.
#[derive(Clone)]
pub struct ApiDirectory {
    client: Client,
}

impl ApiDirectory {
    /// A directory that asks the API server through `client`.
    pub fn new(client: Client) -> Self {
        Self { client }
    }

    async fn get<K>(
        &self,
        kind: &'static str,
        namespace: String,
        name: String,
    ) -> Result<Option<Arc<K>>, LookupError>
    where
        K: Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
            + Clone
            + DeserializeOwned
            + Debug,
    {
        let api: Api<K> = Api::namespaced(self.client.clone(), &namespace);
        match tokio::time::timeout(LOOKUP_TIMEOUT, api.get_opt(&name)).await {
            Ok(Ok(found)) => Ok(found.map(Arc::new)),
            Ok(Err(source)) => Err(LookupError::Api {
                kind,
                namespace,
                name,
                source: Box::new(source),
            }),
            Err(_) => Err(LookupError::Timeout {
                kind,
                namespace,
                name,
            }),
        }
    }
}

impl JobDirectory for ApiDirectory {
    fn deployment(
        &self,
        namespace: String,
        name: String,
    ) -> BoxFuture<'_, Result<Option<Arc<FlinkDeployment>>, LookupError>> {
        Box::pin(self.get("FlinkDeployment", namespace, name))
    }

    fn session_job(
        &self,
        namespace: String,
        name: String,
    ) -> BoxFuture<'_, Result<Option<Arc<FlinkSessionJob>>, LookupError>> {
        Box::pin(self.get("FlinkSessionJob", namespace, name))
    }
}

// === impl UnavailableDirectory ===

/// A directory for a process without a Kubernetes client (a webhook started with no
/// kubeconfig): every lookup fails with the reason, so rules that need one fail closed.
#[derive(Clone)]
pub struct UnavailableDirectory {
    reason: Arc<str>,
}

impl UnavailableDirectory {
    /// A directory whose lookups all fail with `reason`.
    pub fn new(reason: impl Into<Arc<str>>) -> Self {
        Self {
            reason: reason.into(),
        }
    }

    fn fail<T: Send + 'static>(
        &self,
        kind: &'static str,
        namespace: String,
        name: String,
    ) -> BoxFuture<'_, Result<T, LookupError>> {
        let reason = self.reason.clone();
        Box::pin(futures::future::ready(Err(LookupError::Unavailable {
            kind,
            namespace,
            name,
            reason,
        })))
    }
}

impl JobDirectory for UnavailableDirectory {
    fn deployment(
        &self,
        namespace: String,
        name: String,
    ) -> BoxFuture<'_, Result<Option<Arc<FlinkDeployment>>, LookupError>> {
        self.fail("FlinkDeployment", namespace, name)
    }

    fn session_job(
        &self,
        namespace: String,
        name: String,
    ) -> BoxFuture<'_, Result<Option<Arc<FlinkSessionJob>>, LookupError>> {
        self.fail("FlinkSessionJob", namespace, name)
    }
}

// === impl CachedDirectory ===

/// A cache read: the object `namespace/name` if the cache has it.
pub type CacheRead<K> = Arc<dyn Fn(&str, &str) -> Option<Arc<K>> + Send + Sync>;

/// Answers from the controllers' caches, and confirms misses with the API.
#[derive(Clone)]
pub struct CachedDirectory {
    deployments: CacheRead<FlinkDeployment>,
    session_jobs: CacheRead<FlinkSessionJob>,
    api: ApiDirectory,
}

impl CachedDirectory {
    /// A directory over the given cache reads, falling back to `api` on a miss.
    pub fn new(
        deployments: CacheRead<FlinkDeployment>,
        session_jobs: CacheRead<FlinkSessionJob>,
        api: ApiDirectory,
    ) -> Self {
        Self {
            deployments,
            session_jobs,
            api,
        }
    }
}

impl JobDirectory for CachedDirectory {
    fn deployment(
        &self,
        namespace: String,
        name: String,
    ) -> BoxFuture<'_, Result<Option<Arc<FlinkDeployment>>, LookupError>> {
        match (self.deployments)(&namespace, &name) {
            Some(hit) => Box::pin(futures::future::ready(Ok(Some(hit)))),
            None => self.api.deployment(namespace, name),
        }
    }

    fn session_job(
        &self,
        namespace: String,
        name: String,
    ) -> BoxFuture<'_, Result<Option<Arc<FlinkSessionJob>>, LookupError>> {
        match (self.session_jobs)(&namespace, &name) {
            Some(hit) => Box::pin(futures::future::ready(Ok(Some(hit)))),
            None => self.api.session_job(namespace, name),
        }
    }
}
