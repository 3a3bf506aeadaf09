//! The operator's informer caches: one reflector per kind it reconciles or reads, shared by
//! every controller (their triggers and their observe) and by the admission webhook's
//! lookups.
//!
//! | cache | watched | read by |
//! |---|---|---|
//! | `deployments` | FlinkDeployments | their loop; session jobs (their cluster); webhook; blue/green children |
//! | `session_jobs` | FlinkSessionJobs | their loop; a session cluster's deletion; webhook |
//! | `snapshots` | FlinkStateSnapshots | their loop and its census; webhook; blue/green observe and trigger |
//! | `blue_greens` | FlinkBlueGreenDeployments | their loop |
//! | `revisions` | the jobs' revisions: ControllerRevisions labelled `flink.apache.org/revision-owner-kind` | FlinkDeployment and FlinkSessionJob observe |
//! | `cluster_deployments` | JobManager and TaskManager Deployments (`app`, `component`) | FlinkDeployment observe and trigger |
//! | `job_manager_pods` | JobManager pods (`app`, `component=jobmanager`) | FlinkDeployment observe |
//! | `ha_config_maps` | ConfigMaps labelled as Flink's (`app`, `type=flink-native-kubernetes`), read through [`Caches::ha_config_maps_of`] (HA ones by name) | last-state restores |
//! | `gate_config_maps` | the ADVANCED blue/green coordination ConfigMaps (`flink.apache.org/blue-green-gate`) | blue/green observe |
//! | `ingresses` | Ingresses of `spec.ingress` (`app`, `component=ingress`), with `kubernetes.operator.ingress.manage` only | FlinkDeployment and blue/green observe and trigger |
//! | `endpoint_slices` | EndpointSlices of Flink's Services (`app`), with `--flink-rest-endpoint endpoint-slice` only | REST addresses |
//!
//! Cached objects are trimmed as they arrive ([`trim`]): managed fields, the last-applied
//! annotation and whatever the operator never reads (pod specs, Deployments' pod templates,
//! ConfigMap values) are dropped, so memory grows only with what is kept.
//!
//! With `kubernetes.operator.watched.namespaces` set, the operator may only read those
//! namespaces (the Helm chart grants Roles there, not a ClusterRole), so there is one
//! watch per namespace and kind, each with its own store: a relist of one namespace must
//! not wipe the cache of another.
//!
//! A controller follows a cache through [`Cache::changes`]: every object the watch applies,
//! after the store holds it. The fan-out never blocks the watch: a follower that falls
//! behind gets every cached object once more instead of the ones it missed.

use std::{collections::BTreeMap, sync::Arc};

use flink_operator_api::{
    FlinkBlueGreenDeployment, FlinkDeployment, FlinkSessionJob, FlinkStateSnapshot, keys,
};
use futures::{Stream, StreamExt, future::BoxFuture};
use k8s_openapi::api::{
    apps::v1::{ControllerRevision, Deployment},
    core::v1::{ConfigMap, Pod},
    discovery::v1::EndpointSlice,
    networking::v1::Ingress,
};
use kube::{
    Api, Client, Resource, ResourceExt,
    runtime::{WatchStreamExt, reflector, reflector::ObjectRef, reflector::Store, watcher},
};
use serde::de::DeserializeOwned;
use tokio::sync::broadcast;

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

    /// The namespaces with a watch of their own (`None`: one watch of all namespaces).
    pub fn watches(&self) -> Vec<Option<String>> {
        match self {
            WatchScope::All => vec![None],
            WatchScope::Namespaces(namespaces) => namespaces.iter().cloned().map(Some).collect(),
        }
    }
}

/// How many changes a follower may fall behind before it is handed the whole cache again.
const CHANGES_BUFFER: usize = 256;

/// One watch: its store, and the changes it applied.
#[derive(Clone)]
struct Watched<K: Resource<DynamicType = ()> + Clone + 'static> {
    store: Store<K>,
    changes: broadcast::Sender<Change<K>>,
    /// Turns true at the end of the first list. Our own signal rather than the store's:
    /// the store's readiness wakes only the last of several waiters, and its Controller
    /// waits on it too (a follower that starts its controllers later would otherwise never
    /// see its caches ready).
    listed: tokio::sync::watch::Receiver<bool>,
}

/// What a watch applied: by reference while the store holds the object (the buffer then
/// keeps no copies of objects), the object itself once it is gone (an owned object's
/// deletion wakes its owner).
#[derive(Clone)]
enum Change<K: Resource<DynamicType = ()>> {
    Applied(ObjectRef<K>),
    Deleted(Arc<K>),
}

/// The cache of one kind: one store for all namespaces, or one per watched namespace.
#[derive(Clone)]
pub struct Cache<K: Resource<DynamicType = ()> + Clone + 'static> {
    watches: BTreeMap<Option<String>, Watched<K>>,
}

impl<K> Cache<K>
where
    K: Resource<DynamicType = ()> + Clone + Send + Sync + 'static,
{
    fn covering(&self, namespace: &str) -> Option<&Watched<K>> {
        self.watches
            .get(&None)
            .or_else(|| self.watches.get(&Some(namespace.to_owned())))
    }

    /// The cached object `namespace/name`, if a store covering that namespace has it.
    pub fn get(&self, namespace: &str, name: &str) -> Option<Arc<K>> {
        self.covering(namespace)?
            .store
            .get(&ObjectRef::new(name).within(namespace))
    }

    /// The cached objects of `namespace` that `keep` accepts.
    pub fn list(&self, namespace: &str, keep: impl Fn(&K) -> bool) -> Vec<Arc<K>> {
        let Some(watched) = self.covering(namespace) else {
            return Vec::new();
        };
        watched
            .store
            .state()
            .into_iter()
            .filter(|o| o.meta().namespace.as_deref() == Some(namespace) && keep(o))
            .collect()
    }

    /// Every cached object, of every watched namespace.
    pub fn all(&self) -> Vec<Arc<K>> {
        self.watches.values().flat_map(|w| w.store.state()).collect()
    }

    /// The cached objects of `namespace` carrying the label `app=<name>`, i.e. those of
    /// the Flink cluster `name`.
    pub fn of_cluster(&self, namespace: &str, name: &str) -> Vec<Arc<K>> {
        self.list(namespace, |o| {
            o.labels().get(keys::labels::APP).map(String::as_str) == Some(name)
        })
    }

    /// The store of the watch of `namespace` (`None`: of all namespaces).
    pub fn store(&self, namespace: Option<&str>) -> Option<Store<K>> {
        self.watches
            .get(&namespace.map(str::to_owned))
            .map(|w| w.store.clone())
    }

    /// Every object the watch of `namespace` holds now and applies from now on, read from
    /// its store (the latest version). A follower that fell behind gets every cached object
    /// instead of the changes it missed.
    pub fn changes(&self, namespace: Option<&str>) -> impl Stream<Item = Arc<K>> + Send + 'static {
        let watched = self.watches.get(&namespace.map(str::to_owned)).cloned();
        // Subscribed before the store is read: nothing applied in between is missed.
        let receiver = watched.as_ref().map(|w| w.changes.subscribe());
        let store = watched.map(|w| w.store);
        let now = store.as_ref().map(Store::state).unwrap_or_default();
        let later = futures::stream::unfold((receiver, store), |(receiver, store)| async move {
            let (mut receiver, store) = (receiver?, store?);
            loop {
                let objects = match receiver.recv().await {
                    // Gone since: its deletion follows.
                    Ok(Change::Applied(key)) => store.get(&key).into_iter().collect::<Vec<_>>(),
                    Ok(Change::Deleted(object)) => vec![object],
                    Err(broadcast::error::RecvError::Lagged(missed)) => {
                        tracing::debug!(missed, kind = %K::kind(&()), "a cache follower fell behind; resyncing it");
                        store.state()
                    }
                    Err(broadcast::error::RecvError::Closed) => return None,
                };
                if !objects.is_empty() {
                    return Some((futures::stream::iter(objects), (Some(receiver), Some(store))));
                }
            }
        })
        .flatten();
        futures::stream::iter(now).chain(later)
    }

    /// Resolves once every store holds a full list.
    pub async fn wait_until_ready(&self) {
        for watched in self.watches.values() {
            // A dropped sender means the watch task ended, i.e. the process is stopping.
            let _ = watched.listed.clone().wait_for(|listed| *listed).await;
        }
        tracing::debug!(kind = %K::kind(&()), "cache listed");
    }
}

/// The shared caches; see the module docs.
#[derive(Clone)]
pub struct Caches {
    pub deployments: Cache<FlinkDeployment>,
    pub session_jobs: Cache<FlinkSessionJob>,
    pub snapshots: Cache<FlinkStateSnapshot>,
    pub blue_greens: Cache<FlinkBlueGreenDeployment>,
    /// The jobs' revisions (see [`crate::lifecycle::revisions`]).
    pub revisions: Cache<ControllerRevision>,
    /// JobManager and TaskManager Deployments.
    pub cluster_deployments: Cache<Deployment>,
    pub job_manager_pods: Cache<Pod>,
    /// ConfigMaps labelled as Flink's (HA and others: see [`ha`]), with their
    /// checkpoint keys only; read through [`Caches::ha_config_maps_of`].
    pub ha_config_maps: Cache<ConfigMap>,
    /// The coordination ConfigMaps of ADVANCED blue/green hand-overs (see
    /// [`crate::bluegreen::gate`]), with their data.
    pub gate_config_maps: Cache<ConfigMap>,
    /// The EndpointSlices of Flink's Services, when JobManagers are reached at their pods.
    pub endpoint_slices: Option<Cache<EndpointSlice>>,
    /// The Ingresses of `spec.ingress`, when the operator manages them.
    pub ingresses: Option<Cache<Ingress>>,
}

impl Caches {
    /// Starts watching `scope` with `client` (EndpointSlices too with `endpoint_slices`,
    /// Ingresses with `ingresses`); the caches fill while the returned future runs.
    pub fn start(
        client: Client,
        scope: &WatchScope,
        resource_selector: Option<&str>,
        endpoint_slices: bool,
        ingresses: bool,
    ) -> (Self, impl Future<Output = ()> + Send + 'static) {
        let mut watches: Vec<BoxFuture<'static, ()>> = Vec::new();
        // The four kinds only: what the operator builds for a resource carries the
        // resource's name, not its labels.
        let resources = match resource_selector {
            Some(selector) => watcher::Config::default().labels(selector),
            None => watcher::Config::default(),
        };
        let cluster_objects = watcher::Config::default().labels(&format!(
            "{},{} in ({},{})",
            keys::labels::APP,
            keys::labels::COMPONENT,
            keys::labels::COMPONENT_JOB_MANAGER,
            keys::labels::COMPONENT_TASK_MANAGER
        ));
        let job_managers = watcher::Config::default().labels(&format!(
            "{},{}={}",
            keys::labels::APP,
            keys::labels::COMPONENT,
            keys::labels::COMPONENT_JOB_MANAGER
        ));
        let ha = watcher::Config::default().labels(&ha::selector(None));
        let revisions = watcher::Config::default().labels(keys::labels::REVISION_OWNER_KIND);
        let gates = watcher::Config::default().labels(keys::labels::BLUE_GREEN_GATE);
        let caches = Self {
            deployments: cache(&client, scope, &resources, trim::common, &mut watches),
            session_jobs: cache(&client, scope, &resources, trim::common, &mut watches),
            snapshots: cache(&client, scope, &resources, trim::common, &mut watches),
            blue_greens: cache(&client, scope, &resources, trim::common, &mut watches),
            revisions: cache(&client, scope, &revisions, trim::common, &mut watches),
            cluster_deployments: cache(&client, scope, &cluster_objects, trim::deployment, &mut watches),
            job_manager_pods: cache(&client, scope, &job_managers, trim::pod, &mut watches),
            ha_config_maps: cache(&client, scope, &ha, trim::config_map, &mut watches),
            gate_config_maps: cache(&client, scope, &gates, trim::common, &mut watches),
            endpoint_slices: endpoint_slices.then(|| {
                // The EndpointSlice controller copies a Service's labels to its slices.
                let flink = watcher::Config::default().labels(&format!(
                    "{},{}",
                    keys::labels::APP,
                    keys::labels::SERVICE_NAME
                ));
                cache(&client, scope, &flink, trim::common, &mut watches)
            }),
            ingresses: ingresses.then(|| {
                let ours = watcher::Config::default().labels(&format!(
                    "{},{}={}",
                    keys::labels::APP,
                    keys::labels::COMPONENT,
                    keys::labels::COMPONENT_INGRESS
                ));
                cache(&client, scope, &ours, trim::ingress, &mut watches)
            }),
        };
        let run = async move {
            futures::future::join_all(watches).await;
        };
        (caches, run)
    }

    /// What the operator sees of the Ingress `namespace/name`.
    pub fn ingress(&self, namespace: &str, name: &str) -> crate::resources::ingress::Observed {
        crate::resources::ingress::Observed {
            managed: self.ingresses.is_some(),
            existing: self
                .ingresses
                .as_ref()
                .and_then(|cache| cache.get(namespace, name))
                .map(|ingress| (*ingress).clone()),
            // Known from the resource's JobManager Deployment, which the caller looks at.
            job_manager: None,
        }
    }

    /// The Kubernetes HA ConfigMaps of the Flink cluster `name`.
    pub fn ha_config_maps_of(&self, namespace: &str, name: &str) -> Vec<Arc<ConfigMap>> {
        self.ha_config_maps
            .of_cluster(namespace, name)
            .into_iter()
            .filter(|cm| ha::is_ha_config_map(&cm.name_any()))
            .collect()
    }

    /// Resolves once every cache holds a full list.
    pub async fn wait_until_ready(&self) {
        futures::join!(
            self.deployments.wait_until_ready(),
            self.session_jobs.wait_until_ready(),
            self.snapshots.wait_until_ready(),
            self.blue_greens.wait_until_ready(),
            self.revisions.wait_until_ready(),
            self.cluster_deployments.wait_until_ready(),
            self.job_manager_pods.wait_until_ready(),
            self.ha_config_maps.wait_until_ready(),
            self.gate_config_maps.wait_until_ready(),
            async {
                if let Some(slices) = &self.endpoint_slices {
                    slices.wait_until_ready().await;
                }
            },
            async {
                if let Some(ingresses) = &self.ingresses {
                    ingresses.wait_until_ready().await;
                }
            },
        );
    }
}

fn cache<K>(
    client: &Client,
    scope: &WatchScope,
    config: &watcher::Config,
    trim: fn(&mut K),
    watches: &mut Vec<BoxFuture<'static, ()>>,
) -> Cache<K>
where
    K: Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let watches_of_kind = scope.watches().into_iter().map(|namespace| {
        let api = match &namespace {
            None => Api::all(client.clone()),
            Some(ns) => Api::namespaced(client.clone(), ns),
        };
        let watched = watch(api, namespace.clone(), config.clone(), trim, watches);
        (namespace, watched)
    });
    Cache {
        watches: watches_of_kind.collect(),
    }
}

fn watch<K>(
    api: Api<K>,
    namespace: Option<String>,
    config: watcher::Config,
    trim: fn(&mut K),
    watches: &mut Vec<BoxFuture<'static, ()>>,
) -> Watched<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
{
    let (store, writer) = reflector::store();
    let (changes, _) = broadcast::channel(CHANGES_BUFFER);
    let sender = changes.clone();
    let (listed_sender, listed) = tokio::sync::watch::channel(false);
    let stored = store.clone();
    let kind = K::kind(&()).into_owned();
    watches.push(Box::pin(
        // Watch errors (CRD not installed yet, API restarts) are retried with backoff
        // inside the stream; they are logged, never fatal.
        watcher(api, config)
            .default_backoff()
            .modify(trim)
            .reflect(writer)
            .for_each(move |event| {
                // A send fails only while nobody follows (webhook only, or before the
                // controllers start): they read the store when they start following.
                match event {
                    Ok(watcher::Event::Apply(object)) => {
                        let _ = sender.send(Change::Applied(ObjectRef::from_obj(&object)));
                    }
                    Ok(watcher::Event::Delete(object)) => {
                        let _ = sender.send(Change::Deleted(Arc::new(object)));
                    }
                    // A (re)list reaches the store as a whole at its end.
                    Ok(watcher::Event::InitDone) => {
                        for object in stored.state() {
                            let _ = sender.send(Change::Applied(ObjectRef::from_obj(&*object)));
                        }
                        listed_sender.send_replace(true);
                    }
                    Ok(_) => {}
                    Err(error) => {
                        tracing::warn!(%error, %kind, namespace = namespace.as_deref().unwrap_or("*"), "watch failed; retrying");
                    }
                }
                std::future::ready(())
            }),
    ));
    Watched {
        store,
        changes,
        listed,
    }
}

/// What is dropped from cached objects.
pub mod trim {
    use k8s_openapi::api::{
        apps::v1::Deployment,
        core::v1::{ConfigMap, Pod},
        networking::v1::Ingress,
    };
    use kube::Resource;

    use crate::resources::FIELD_MANAGER;

    /// `kubectl apply`'s copy of the whole object.
    const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

    /// What no reader of any kind uses: managed fields and the last-applied copy.
    pub fn common<K: Resource>(object: &mut K) {
        let meta = object.meta_mut();
        meta.managed_fields = None;
        if let Some(annotations) = meta.annotations.as_mut() {
            annotations.remove(LAST_APPLIED);
        }
    }

    /// Deployments are read for their annotations, replicas, status and owner; their pod
    /// template (most of their size) is not.
    pub fn deployment(object: &mut Deployment) {
        common(object);
        object.spec.template = Default::default();
    }

    /// Pods are read for their container statuses only.
    pub fn pod(object: &mut Pod) {
        common(object);
        object.spec = None;
        if let Some(status) = object.status.as_mut() {
            status.conditions = None;
        }
    }

    /// Ingresses are read whole, with only the operator's own managed-fields entry (which
    /// `resources::ingress::owned_keys` reads for the keys the operator set).
    pub fn ingress(object: &mut Ingress) {
        let ours = object.metadata.managed_fields.take().map(|entries| {
            entries
                .into_iter()
                .filter(|entry| entry.manager.as_deref() == Some(FIELD_MANAGER))
                .collect::<Vec<_>>()
        });
        common(object);
        object.metadata.managed_fields = ours.filter(|entries| !entries.is_empty());
    }

    /// HA ConfigMaps are read for whether a `checkpointID-` key exists; their values
    /// (serialized state handles, leader addresses) are not.
    pub fn config_map(object: &mut ConfigMap) {
        common(object);
        object.binary_data = None;
        if let Some(data) = object.data.as_mut() {
            data.retain(|key, _| key.starts_with("checkpointID-"));
            data.values_mut().for_each(String::clear);
        }
    }
}

/// Which ConfigMaps are Flink's Kubernetes HA metadata. Flink 1.x labels them `app`,
/// `type=flink-native-kubernetes` and `configmap-type=high-availability`; Flink 2.x drops the
/// last, and `type` keeps that value for standalone clusters too. The same two labels are on
/// Flink's `flink-config-<id>` and the autoscaler's ConfigMaps, so HA ones are told apart by
/// their names: `<id>-cluster-config-map` (leaders, job graphs or execution plans),
/// `<id>-<job id>-config-map` (checkpoints), and `<id>-…-jobmanager-leader` before Flink 1.15.
pub mod ha {
    use flink_operator_api::keys;

    /// The label selector of a cluster's (`app=<name>`, or every cluster's) HA ConfigMaps and
    /// the other ConfigMaps labelled as Flink's, the autoscaler's excepted.
    pub fn selector(cluster: Option<&str>) -> String {
        let app = match cluster {
            Some(name) => format!("{}={name}", keys::labels::APP),
            None => keys::labels::APP.to_owned(),
        };
        format!(
            "{app},{}={},{}!=autoscaler",
            keys::labels::TYPE,
            keys::labels::TYPE_NATIVE,
            keys::labels::COMPONENT
        )
    }

    /// Whether a ConfigMap the [`selector`] selects is HA metadata, by its name.
    pub fn is_ha_config_map(name: &str) -> bool {
        name.ends_with("-config-map") || name.ends_with("-jobmanager-leader")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn flink_ha_config_maps_are_told_from_its_other_config_maps_by_name_on_every_version() {
        for ha in [
            "counter-cluster-config-map",
            "counter-0123456789abcdef0123456789abcdef-config-map",
            "counter-dispatcher-jobmanager-leader",
        ] {
            assert!(ha::is_ha_config_map(ha), "{ha}");
        }
        for other in [
            "flink-config-counter",
            "pod-template-counter",
            "autoscaler-counter",
        ] {
            assert!(!ha::is_ha_config_map(other), "{other}");
        }
        assert_eq!(
            ha::selector(Some("counter")),
            "app=counter,type=flink-native-kubernetes,component!=autoscaler"
        );
        assert_eq!(
            ha::selector(None),
            "app,type=flink-native-kubernetes,component!=autoscaler"
        );
    }

    #[test]
    fn an_ingress_keeps_only_the_operators_managed_fields_and_no_last_applied_copy() {
        let mut ingress: k8s_openapi::api::networking::v1::Ingress = serde_json::from_value(json!({
            "metadata": {
                "name": "job",
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}", "kept": "yes"},
                "managedFields": [
                    {"manager": crate::resources::FIELD_MANAGER, "fieldsV1": {"f:metadata": {}}},
                    {"manager": "kubectl", "fieldsV1": {"f:spec": {}}},
                ],
            },
        }))
        .unwrap();
        trim::ingress(&mut ingress);
        let managers: Vec<_> = (ingress.metadata.managed_fields.iter().flatten())
            .map(|entry| entry.manager.as_deref())
            .collect();
        assert_eq!(managers, [Some(crate::resources::FIELD_MANAGER)]);
        assert_eq!(
            ingress
                .metadata
                .annotations
                .unwrap()
                .into_keys()
                .collect::<Vec<_>>(),
            ["kept"]
        );

        // Nothing of ours: no managed fields at all.
        let mut theirs: k8s_openapi::api::networking::v1::Ingress = serde_json::from_value(json!({
            "metadata": {"name": "other", "managedFields": [{"manager": "kubectl"}]},
        }))
        .unwrap();
        trim::ingress(&mut theirs);
        assert_eq!(theirs.metadata.managed_fields, None);
    }

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

    #[test]
    fn cached_objects_keep_only_what_is_read() {
        let mut cm: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": "x-cluster-config-map", "labels": {"app": "x"},
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}", "keep": "1"},
                "managedFields": [{"manager": "flink"}]},
            "data": {"checkpointID-0000000000000000007": "rO0ABXNy...", "leader": "akka://x"},
            "binaryData": {"b": "AAAA"}
        }))
        .unwrap();
        trim::config_map(&mut cm);
        assert_eq!(
            serde_json::to_value(&cm).unwrap(),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x-cluster-config-map", "labels": {"app": "x"}, "annotations": {"keep": "1"}},
                   "data": {"checkpointID-0000000000000000007": ""}})
        );
        let mut pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "flink-main-container", "image": "flink"}]},
            "status": {"phase": "Running", "containerStatuses": [{"name": "flink-main-container", "image": "flink", "imageID": "", "ready": true, "restartCount": 0}]}
        }))
        .unwrap();
        trim::pod(&mut pod);
        assert!(pod.spec.is_none());
        assert_eq!(
            pod.status.and_then(|s| s.container_statuses).map(|c| c.len()),
            Some(1)
        );
        let mut deployment: Deployment = serde_json::from_value(json!({
            "metadata": {"name": "x", "annotations": {"flink.apache.org/deployment-generation": "2"}},
            "spec": {"replicas": 1, "selector": {}, "template": {"spec": {"containers": [{"name": "c"}]}}}
        }))
        .unwrap();
        trim::deployment(&mut deployment);
        let spec = deployment.spec;
        assert_eq!((spec.replicas, spec.template), (Some(1), Default::default()));
        assert_eq!(deployment.metadata.annotations.map(|a| a.len()), Some(1));
    }
}
