//! Reflector caches of the resources that the controllers watch, shared with the webhook.
//!
//! With `kubernetes.operator.watched.namespaces` set, the operator may only read those
//! namespaces (the Helm chart grants Roles there, not a ClusterRole), so there is one
//! watch per namespace, each with its own store: a relist of one namespace must not wipe
//! the cache of another.

use std::{collections::BTreeMap, sync::Arc};

use flink_operator_api::{FlinkDeployment, FlinkSessionJob};
use futures::{StreamExt, future::BoxFuture};
use kube::{
    Api, Client, Resource,
    runtime::{WatchStreamExt, reflector, reflector::ObjectRef, reflector::Store, watcher},
};
use serde::de::DeserializeOwned;

/// Which namespaces the operator manages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchScope {
    /// Every namespace.
    All,
    /// Only these.
    Namespaces(Vec<String>),
}

impl WatchScope {
    /// The scope of a comma-separated list as in `kubernetes.operator.watched.namespaces`
    /// (or `WATCH_NAMESPACES`); empty or the Apache marker `JOSDK_ALL_NAMESPACES` means all.
    pub fn parse(list: Option<&str>) -> Self {
        let names: Vec<String> = list
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty() && *n != "JOSDK_ALL_NAMESPACES")
            .map(str::to_owned)
            .collect();
        if names.is_empty() {
            Self::All
        } else {
            Self::Namespaces(names)
        }
    }
}

/// The stores of one kind: one for all namespaces, or one per watched namespace.
#[derive(Clone)]
pub struct ScopedStore<K: Resource<DynamicType = ()> + Clone + 'static> {
    all: Option<Store<K>>,
    by_namespace: BTreeMap<String, Store<K>>,
}

impl<K> ScopedStore<K>
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    /// The cached object `namespace/name`, if any store covering that namespace has it.
    pub fn get(&self, namespace: &str, name: &str) -> Option<Arc<K>> {
        let store = self.all.as_ref().or_else(|| self.by_namespace.get(namespace))?;
        store.get(&ObjectRef::new(name).within(namespace))
    }

    /// Resolves once every store holds a full list.
    pub async fn wait_until_ready(&self) {
        for store in self.all.iter().chain(self.by_namespace.values()) {
            // A dropped writer means the watch task ended, i.e. the process is stopping.
            let _ = store.wait_until_ready().await;
        }
    }
}

/// Read handles of the caches of FlinkDeployments and FlinkSessionJobs.
#[derive(Clone)]
pub struct JobCaches {
    /// FlinkDeployments.
    pub deployments: ScopedStore<FlinkDeployment>,
    /// FlinkSessionJobs.
    pub session_jobs: ScopedStore<FlinkSessionJob>,
}

impl JobCaches {
    /// Starts watching `scope` with `client`; the caches fill while the returned future runs.
    pub fn start(client: Client, scope: &WatchScope) -> (Self, impl Future<Output = ()> + Send + 'static) {
        let mut watches: Vec<BoxFuture<'static, ()>> = Vec::new();
        let deployments = scoped(&client, scope, &mut watches);
        let session_jobs = scoped(&client, scope, &mut watches);
        let run = async move {
            futures::future::join_all(watches).await;
        };
        (
            Self {
                deployments,
                session_jobs,
            },
            run,
        )
    }

    /// Resolves once both caches hold a full list.
    pub async fn wait_until_ready(&self) {
        futures::join!(
            self.deployments.wait_until_ready(),
            self.session_jobs.wait_until_ready()
        );
    }
}

fn scoped<K>(client: &Client, scope: &WatchScope, watches: &mut Vec<BoxFuture<'static, ()>>) -> ScopedStore<K>
where
    K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    match scope {
        WatchScope::All => {
            let store = watch(Api::all(client.clone()), None, watches);
            ScopedStore {
                all: Some(store),
                by_namespace: BTreeMap::new(),
            }
        }
        WatchScope::Namespaces(namespaces) => ScopedStore {
            all: None,
            by_namespace: namespaces
                .iter()
                .map(|ns| {
                    (
                        ns.clone(),
                        watch(Api::namespaced(client.clone(), ns), Some(ns.clone()), watches),
                    )
                })
                .collect(),
        },
    }
}

fn watch<K>(api: Api<K>, namespace: Option<String>, watches: &mut Vec<BoxFuture<'static, ()>>) -> Store<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
{
    let (store, writer) = reflector::store();
    let kind = K::kind(&()).into_owned();
    watches.push(Box::pin(
        // Watch errors (CRD not installed yet, API restarts) are retried with backoff
        // inside the stream; they are logged, never fatal.
        reflector(writer, watcher(api, watcher::Config::default())).default_backoff().for_each(move |event| {
            let kind = kind.clone();
            let namespace = namespace.clone();
            async move {
                if let Err(error) = event {
                    tracing::warn!(%error, %kind, namespace = namespace.as_deref().unwrap_or("*"), "watch failed; retrying");
                }
            }
        }),
    ));
    store
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watched_namespaces_parse_like_the_apache_operator() {
        assert_eq!(WatchScope::parse(None), WatchScope::All);
        assert_eq!(WatchScope::parse(Some("")), WatchScope::All);
        assert_eq!(WatchScope::parse(Some("JOSDK_ALL_NAMESPACES")), WatchScope::All);
        assert_eq!(
            WatchScope::parse(Some("team-a, team-b,")),
            WatchScope::Namespaces(vec!["team-a".into(), "team-b".into()])
        );
    }
}
