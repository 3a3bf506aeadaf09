//! The Controller of a kind over the shared caches, and what it does with failures.

use std::{
    hash::{DefaultHasher, Hash, Hasher},
    sync::Arc,
};

use futures::{FutureExt, StreamExt};
use kube::{
    Resource, ResourceExt,
    runtime::{
        Controller,
        controller::{self, Action as Requeue},
        reflector::Store,
    },
};
use tracing::Instrument;

use super::{
    Reconciler,
    backoff::Backoff,
    events::publish,
    next::AFTER_A_STEP,
    pass::{PassError, pass},
    shares::{NamespaceShares, deferral},
};
use crate::{
    caches::{Caches, WatchScope},
    context::Context,
    events::Reason,
};

/// What every reconcile of one kind shares.
struct Shared {
    ctx: Arc<Context>,
    caches: Caches,
    backoff: Backoff,
}

/// What the reconciles of one Controller (one watch) share: its workers, shared fairly
/// between namespaces (`None`: unbounded workers, nothing to share).
struct Lane {
    shared: Arc<Shared>,
    shares: Option<NamespaceShares>,
}

/// Runs the loop of `R` over the watched namespaces until the future is dropped: one
/// Controller per watch of the shared caches.
pub async fn run<R: Reconciler>(ctx: Arc<Context>, caches: Caches, scope: WatchScope) {
    let own = R::cache(&caches).clone();
    let shared = Arc::new(Shared {
        ctx: ctx.clone(),
        caches: caches.clone(),
        backoff: Backoff::default(),
    });
    let loops = scope.watches().into_iter().filter_map(|namespace| {
        let store = own.store(namespace.as_deref())?;
        let trigger = own
            .changes(namespace.as_deref())
            .filter(user_change_filter::<R::Kind>(store.clone()));
        let workers = ctx.reconcile_parallelism();
        let controller = Controller::for_shared_stream(trigger, store)
            .with_config(controller::Config::default().concurrency(workers));
        let controller = R::triggers(controller, &caches, namespace.as_deref());
        let lane = Arc::new(Lane {
            shared: shared.clone(),
            shares: NamespaceShares::new(workers, ctx.reconcile_namespace_share()),
        });
        Some(
            controller
                .run(reconcile::<R>, error_policy::<R>, lane)
                .for_each(|result| async move {
                    if let Err(e) = result {
                        tracing::debug!(error = %e, "reconcile loop");
                    }
                }),
        )
    });
    futures::future::join_all(loops).await;
}

/// Below this many remembered objects the filter does not prune its memory.
const PRUNE_FLOOR: usize = 256;

/// Passes an object on when a user changed it ([`user_change`]) since it was
/// last passed on, or when it is seen for the first time: status writes, ours above all,
/// do not trigger a reconcile (see [`UserChanges`]).
fn user_change_filter<K>(store: Store<K>) -> impl FnMut(&Arc<K>) -> std::future::Ready<bool> + Send + 'static
where
    K: Resource + Clone + Send + Sync + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    let mut changes = UserChanges::new(store);
    move |object| std::future::ready(changes.pass(object))
}

/// What the filter of user changes remembers: the last user change passed on, by object.
///
/// An entry goes with its object: at once when the object is seen deleted (a deletion
/// timestamp and no finalizer left), and for one deleted without ever showing that (an
/// object without finalizers, such as a snapshot its retention deletes, is never passed to
/// the filter again) when the memory has doubled since it was last pruned: then every
/// entry of an object no longer in the store goes. The memory stays within twice the
/// objects there are (or [`PRUNE_FLOOR`]), at a cost per object passed that does not grow
/// with them.
struct UserChanges<K: Resource + Clone + 'static>
where
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    seen: std::collections::HashMap<String, u64>,
    prune_at: usize,
    store: Store<K>,
}

impl<K: Resource + Clone + 'static> UserChanges<K>
where
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    fn new(store: Store<K>) -> Self {
        Self {
            seen: std::collections::HashMap::new(),
            prune_at: PRUNE_FLOOR,
            store,
        }
    }

    /// Whether `object` is passed on to a reconcile.
    fn pass(&mut self, object: &K) -> bool {
        let key = key(object);
        if object.meta().deletion_timestamp.is_some()
            && object.meta().finalizers.as_ref().is_none_or(Vec::is_empty)
        {
            self.seen.remove(&key);
            return false;
        }
        match (self.seen.get(&key), user_change(object)) {
            (Some(before), Some(now)) if *before == now => false,
            (_, Some(now)) => {
                self.seen.insert(key, now);
                if self.seen.len() >= self.prune_at {
                    self.prune();
                }
                true
            }
            (_, None) => true,
        }
    }

    fn prune(&mut self) {
        let live: std::collections::HashSet<String> = self.store.state().iter().map(|o| key(&**o)).collect();
        self.seen.retain(|k, _| live.contains(k));
        self.prune_at = (self.seen.len() * 2).max(PRUNE_FLOOR);
    }
}

/// What triggers a reconcile of a resource of the loop's own kind: a change a user made (the
/// spec, i.e. the generation, which the API server also raises when a deletion starts; a
/// rollback request, which is an annotation) or its deletion. Status writes and the
/// operator's own annotations change none of these, so a steady resource is not reconciled
/// by its own writes; the cache still holds the latest object.
pub fn user_change<K: kube::Resource>(object: &K) -> Option<u64> {
    let meta = object.meta();
    let mut hasher = DefaultHasher::new();
    meta.generation.hash(&mut hasher);
    meta.deletion_timestamp.is_some().hash(&mut hasher);
    for key in [
        flink_operator_api::keys::annotations::ROLLBACK_TO_REVISION,
        flink_operator_api::keys::annotations::ROLLBACK_RESTORE,
    ] {
        meta.annotations
            .as_ref()
            .and_then(|a| a.get(key))
            .hash(&mut hasher);
    }
    Some(hasher.finish())
}

fn key<K: Resource>(object: &K) -> String {
    format!(
        "{}/{}",
        object.meta().namespace.as_deref().unwrap_or_default(),
        object.meta().name.as_deref().unwrap_or_default()
    )
}

/// Runs `work` when `namespace` is within its share of the workers (see
/// [`super::shares`]); `None`, without running it, when it is not. `priority`: a first
/// reconcile or a deletion.
async fn shared_fairly<T>(
    shares: Option<&NamespaceShares>,
    namespace: &str,
    priority: bool,
    work: impl Future<Output = T>,
) -> Option<T> {
    let _turn = match shares {
        Some(shares) => Some(shares.enter(namespace, priority, std::time::Instant::now())?),
        None => None,
    };
    Some(work.await)
}

async fn reconcile<R: Reconciler>(
    object: Arc<R::Kind>,
    lane: Arc<Lane>,
) -> Result<Requeue, PassError<R::Error>> {
    let namespace = object.namespace().unwrap_or_default();
    // What a user waits for, and rare: held to the namespace's cap only.
    let priority = object.meta().deletion_timestamp.is_some() || R::status(&object).is_none();
    let shared = &lane.shared;
    match shared_fairly(
        lane.shares.as_ref(),
        &namespace,
        priority,
        reconcile_now::<R>(&object, shared),
    )
    .await
    {
        Some(result) => result,
        None => {
            // The worker goes to another namespace's resource; this one is looked at again
            // soon (a change of it meanwhile brings it sooner).
            shared.ctx.metrics.reconcile_deferred(R::KIND, &namespace);
            tracing::debug!(kind = R::KIND, %namespace, name = %object.name_any(), "reconcile deferred: the namespace runs its share of the workers");
            Ok(Requeue::requeue(deferral()))
        }
    }
}

async fn reconcile_now<R: Reconciler>(
    object: &Arc<R::Kind>,
    shared: &Shared,
) -> Result<Requeue, PassError<R::Error>> {
    let namespace = object.namespace().unwrap_or_default();
    let name = object.name_any();
    let span = tracing::info_span!("reconcile", kind = R::KIND, %namespace, %name);
    let started = std::time::Instant::now();
    let result = guarded(pass::<R>(&shared.ctx, &shared.caches, object).instrument(span.clone())).await;
    let result = match result {
        Ok(result) => result,
        Err(panic) => {
            // One object's bug must not end the loop of every object of its kind: the
            // panic is this object's failure, reported on it and retried with back-off.
            tracing::error!(parent: &span, panic = %panic, "reconcile panicked; only this resource is affected");
            let note = format!(
                "the operator failed on this resource with an internal error (a bug, please report it): {panic}; \
                 retrying with back-off, other resources are not affected"
            );
            publish(
                &shared.ctx,
                &object.object_ref(&()),
                true,
                Reason::ReconcilePanicked,
                note,
            )
            .await;
            Err(PassError::Panicked(panic))
        }
    };
    let completed = matches!(result, Ok(ref passed) if passed.completed);
    shared
        .ctx
        .metrics
        .reconciled(R::KIND, &namespace, &name, started.elapsed(), completed);
    let passed = result?;
    shared.backoff.succeeded(&key(&**object));
    Ok(passed
        .requeue
        .map_or_else(Requeue::await_change, Requeue::requeue))
}

/// Runs `work`, turning a panic inside it into its message.
async fn guarded<T>(work: impl Future<Output = T>) -> Result<T, String> {
    // Nothing `work` borrows outlives it in a broken state that another object could see:
    // the shared maps recover from poisoning (`PoisonError::into_inner`) and the caches are
    // written only by their watches.
    std::panic::AssertUnwindSafe(work)
        .catch_unwind()
        .await
        .map_err(|payload| panic_message(payload.as_ref()))
}

/// The message a panic was raised with.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}

fn error_policy<R: Reconciler>(
    object: Arc<R::Kind>,
    error: &PassError<R::Error>,
    lane: Arc<Lane>,
) -> Requeue {
    let shared = &lane.shared;
    let namespace = object.namespace().unwrap_or_default();
    let name = object.name_any();
    if let PassError::Fenced(fenced) = error {
        // Not this object's fault: the replica that leads next (or this one, once it
        // renews) decides again.
        tracing::info!(kind = R::KIND, %namespace, %name, %fenced, "reconcile stopped");
        return Requeue::requeue(AFTER_A_STEP);
    }
    if error.is_conflict() {
        // Decided on a stale read: nothing was lost; look again at the fresh object soon.
        tracing::debug!(kind = R::KIND, %namespace, %name, "status changed since it was read; reconciling again");
        return Requeue::requeue(AFTER_A_STEP);
    }
    let delay = shared.backoff.failed(&key(&*object));
    tracing::warn!(kind = R::KIND, %namespace, %name, %error, retry_in = ?delay, "reconcile failed; retrying");
    Requeue::requeue(delay)
}

#[cfg(test)]
mod tests {
    use std::{future::Future, sync::Arc};

    use futures::StreamExt;
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::user_change_filter;

    fn object(generation: i64, deleted: bool, finalizers: Option<Vec<String>>) -> Arc<ConfigMap> {
        let mut object = ConfigMap::default();
        object.metadata.namespace = Some("ns".into());
        object.metadata.name = Some("a".into());
        object.metadata.generation = Some(generation);
        object.metadata.resource_version = Some(generation.to_string());
        object.metadata.finalizers = finalizers;
        if deleted {
            object.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
            ));
        }
        Arc::new(object)
    }

    fn now<F: Future<Output = bool>>(future: F) -> bool {
        futures::executor::block_on(future)
    }

    #[test]
    fn a_panic_is_caught_with_its_message() {
        let caught = now_value(super::guarded(async { panic!("index out of bounds: {}", 3) }));
        assert_eq!(caught, Err("index out of bounds: 3".to_owned()));
        let caught = now_value(super::guarded(async { std::panic::panic_any(7_u8) }));
        assert_eq!(caught, Err::<(), _>("a panic without a message".to_owned()));
        assert_eq!(now_value(super::guarded(async { 1 })), Ok(1));
    }

    fn now_value<T, F: Future<Output = T>>(future: F) -> T {
        futures::executor::block_on(future)
    }

    /// Through kube-runtime's own scheduler and runner, as the Controller drives them: a
    /// tenant whose 60 resources each wait on a JobManager that never answers, started
    /// first, leaves workers for a resource of a second namespace, which is reconciled at
    /// once instead of after one of the stuck reconciles ends.
    #[tokio::test]
    async fn a_tenant_stuck_on_a_slow_jobmanager_leaves_workers_for_another_namespace() {
        use std::{
            convert::Infallible,
            sync::atomic::{AtomicUsize, Ordering},
            time::{Duration, Instant},
        };

        use kube::runtime::{
            controller::{Action, Config},
            reflector::{self, ObjectRef},
            watcher,
        };

        use crate::runtime::shares::NamespaceShares;

        const WORKERS: u16 = 10;
        let cm = |namespace: &str, name: String| {
            let mut object = ConfigMap::default();
            object.metadata.namespace = Some(namespace.to_owned());
            object.metadata.name = Some(name);
            object
        };
        let (queue, queued) = futures::channel::mpsc::unbounded::<ObjectRef<ConfigMap>>();
        let (store, mut writer) = reflector::store();
        writer.apply_watcher_event(&watcher::Event::InitDone);
        let stuck: Vec<ConfigMap> = (0..60).map(|i| cm("tenant-a", format!("job-{i}"))).collect();
        let other = cm("tenant-b", "upgrade".to_owned());
        for object in stuck.iter().chain([&other]) {
            writer.apply_watcher_event(&watcher::Event::Apply(object.clone()));
        }
        struct Seen {
            shares: Option<NamespaceShares>,
            running_a: AtomicUsize,
            most_a: AtomicUsize,
            deferred: AtomicUsize,
            other_at: std::sync::Mutex<Option<Instant>>,
        }
        let seen = Arc::new(Seen {
            shares: NamespaceShares::new(WORKERS, None),
            running_a: AtomicUsize::new(0),
            most_a: AtomicUsize::new(0),
            deferred: AtomicUsize::new(0),
            other_at: std::sync::Mutex::new(None),
        });
        let applier = kube::runtime::applier(
            |object: Arc<ConfigMap>, seen: Arc<Seen>| {
                Box::pin(async move {
                    let namespace = object.metadata.namespace.clone().unwrap_or_default();
                    let work = async {
                        if namespace == "tenant-a" {
                            let now = seen.running_a.fetch_add(1, Ordering::SeqCst) + 1;
                            seen.most_a.fetch_max(now, Ordering::SeqCst);
                            // A JobManager that accepts the call and never answers.
                            tokio::time::sleep(Duration::from_secs(600)).await;
                        } else {
                            *seen.other_at.lock().unwrap() = Some(Instant::now());
                        }
                        Action::await_change()
                    };
                    Ok::<_, Infallible>(
                        match super::shared_fairly(seen.shares.as_ref(), &namespace, false, work).await {
                            Some(action) => action,
                            None => {
                                seen.deferred.fetch_add(1, Ordering::SeqCst);
                                Action::requeue(super::deferral())
                            }
                        },
                    )
                })
            },
            |_, _: &Infallible, _| Action::await_change(),
            seen.clone(),
            store,
            queued.map(Ok::<_, Infallible>),
            Config::default().concurrency(WORKERS),
        );
        let running = tokio::spawn(applier.for_each(|_| async {}));
        for object in &stuck {
            queue.unbounded_send(ObjectRef::from_obj(object)).unwrap();
        }
        // The stuck tenant's reconciles start and take what they may.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let asked = Instant::now();
        queue.unbounded_send(ObjectRef::from_obj(&other)).unwrap();
        let mut waited = Duration::ZERO;
        while seen.other_at.lock().unwrap().is_none() && waited < Duration::from_secs(5) {
            tokio::time::sleep(Duration::from_millis(20)).await;
            waited += Duration::from_millis(20);
        }
        running.abort();
        let reconciled = seen.other_at.lock().unwrap().map(|at| at.duration_since(asked));
        assert!(
            reconciled.is_some_and(|after| after < Duration::from_secs(1)),
            "the second namespace's resource waited {reconciled:?}"
        );
        assert_eq!(seen.most_a.load(Ordering::SeqCst), usize::from(WORKERS / 2));
        assert!(
            seen.deferred.load(Ordering::SeqCst) >= 50,
            "the rest of the tenant's resources were deferred"
        );
    }

    #[test]
    fn only_changes_users_make_trigger_a_reconcile() {
        let (store, _writer) = kube::runtime::reflector::store::<ConfigMap>();
        let mut filter = user_change_filter::<ConfigMap>(store);
        let ours = Some(vec!["ours".to_owned()]);
        // First seen: reconciled.
        assert!(now(filter(&object(1, false, ours.clone()))));
        // A status write (same generation): not.
        assert!(!now(filter(&object(1, false, ours.clone()))));
        // A spec change: reconciled, once.
        assert!(now(filter(&object(2, false, ours.clone()))));
        assert!(!now(filter(&object(2, false, ours.clone()))));
        // A rollback request (an annotation): reconciled, once; the operator's own
        // annotation (the current revision): not.
        let annotated = |pairs: &[(&str, &str)]| {
            let mut object = (*object(2, false, ours.clone())).clone();
            object.metadata.annotations = Some(
                pairs
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            );
            Arc::new(object)
        };
        let request = (flink_operator_api::keys::annotations::ROLLBACK_TO_REVISION, "1");
        let shown = (flink_operator_api::keys::annotations::REVISION, "2");
        assert!(now(filter(&annotated(&[request]))));
        assert!(!now(filter(&annotated(&[request, shown]))));
        assert!(now(filter(&annotated(&[shown]))), "the request removed");
        // A deletion starting: reconciled (the finalizer's work).
        assert!(now(filter(&object(2, true, ours))));
        // Gone (no finalizer left): forgotten, not reconciled.
        assert!(!now(filter(&object(2, true, None))));
    }

    #[test]
    fn what_the_filter_remembers_of_objects_deleted_without_a_deletion_timestamp_goes() {
        use kube::runtime::{reflector, watcher::Event};
        let (store, mut writer) = reflector::store::<ConfigMap>();
        let mut changes = super::UserChanges::new(store.clone());
        let named = |i: usize| {
            let mut object = (*object(1, false, None)).clone();
            object.metadata.name = Some(format!("o{i}"));
            object
        };
        // 10,000 objects created, passed on, and deleted without a deletion timestamp
        // (gone from the store, never passed to the filter again), 100 at a time.
        let mut most = 0;
        for batch in 0..100 {
            let objects: Vec<_> = (0..100).map(|i| named(batch * 100 + i)).collect();
            for o in &objects {
                writer.apply_watcher_event(&Event::Apply(o.clone()));
                assert!(changes.pass(o), "first seen: passed on");
                most = most.max(changes.seen.len());
            }
            for o in &objects {
                writer.apply_watcher_event(&Event::Delete(o.clone()));
            }
        }
        assert!(
            most <= 2 * super::PRUNE_FLOOR,
            "at most {most} objects remembered of 10,000 seen, 100 at a time"
        );
        // An object that stays is remembered through the pruning: its status writes (the
        // same object again) are still not passed on.
        let kept = named(1_000_000);
        writer.apply_watcher_event(&Event::Apply(kept.clone()));
        assert!(changes.pass(&kept));
        for batch in 100..110 {
            for i in 0..100 {
                let o = named(batch * 100 + i);
                writer.apply_watcher_event(&Event::Apply(o.clone()));
                changes.pass(&o);
                writer.apply_watcher_event(&Event::Delete(o));
            }
        }
        assert!(!changes.pass(&kept), "still remembered after pruning");
        assert_eq!(store.state().len(), 1);
    }
}
