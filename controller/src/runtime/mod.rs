//! The one reconcile shell every kind plugs into.
//!
//! A kind implements [`Reconciler`]: how it observes its world, the pure decide that turns
//! an observation into a [`Plan`] (the vocabulary of decisions is [`crate::plan`]), and how
//! one action is carried out. Everything else is
//! written once here, the same for every kind:
//!
//! - [`wiring`]: the kube-runtime Controller over the shared caches, the per-object
//!   exponential [`backoff`] of failed reconciles, conflicts looked at again soon;
//! - [`pass`]: one reconcile, in a tracing span with kind, namespace and name: observe,
//!   decide, write `status_before`, act, publish the plan's Events, write the status, count
//!   the reconcile metrics, requeue when the plan says;
//! - [`shares`]: the workers of a kind shared fairly between namespaces: a namespace that
//!   runs its share is deferred (looked at again in 1 to 2 s) so that another gets the worker;
//! - [`status`]: the one status writer (only what changed, guarded by resourceVersion,
//!   nothing sent when nothing changed);
//! - [`next`]: the delay a plan's [`crate::plan::Next`] becomes;
//! - [`events`]: the Events a plan asks for ([`crate::events::EventNote`]), published with
//!   a key that tells a new note from a repeated one;
//! - [`finalizer`]: our finalizer added and removed with a JSON Patch that leaves other
//!   writers' entries alone;
//! - [`api_error`]: a refused API request: a conflict, or its message in one line.

pub mod api_error;
pub mod backoff;
pub mod events;
pub mod finalizer;
pub mod next;
pub mod pass;
pub mod shares;
pub mod status;
pub mod wiring;

use std::future::Future;

use kube::{Resource, core::NamespaceResourceScope, runtime::Controller};
use serde::{Serialize, de::DeserializeOwned};

use crate::{
    caches::{Cache, Caches},
    context::Context,
    plan::{Plan, Recovery},
    policy::Policy,
};

pub use wiring::run;

/// What an action did beyond its effect, as far as the runtime must know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acted {
    /// Nothing the runtime tracks changed.
    Done,
    /// The object itself was patched (a finalizer added): a later status write in the same
    /// pass is conditional on this resourceVersion (`None`: unchanged).
    Patched(Option<String>),
    /// Our finalizer was removed: the object may be gone, its status is not written again
    /// and what is kept in memory about it is forgotten.
    Released,
}

/// A kind's own part of its reconcile loop; see the module docs for the shell around it.
pub trait Reconciler: Send + Sync + 'static {
    /// The reconciled resource.
    type Kind: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static;
    /// Its status.
    type Status: Serialize + Clone + PartialEq + std::fmt::Debug + Send + Sync;
    /// What observe read.
    type Observed: Send + Sync;
    /// One step of a plan.
    type Action: std::fmt::Debug + Send + Sync;
    /// Why observing or acting failed.
    type Error: std::error::Error + Send + Sync + 'static;

    /// The kind's name in metrics, spans and logs.
    const KIND: &'static str;

    /// Its cache among the shared caches.
    fn cache(caches: &Caches) -> &Cache<Self::Kind>;

    /// The status as read.
    fn status(object: &Self::Kind) -> Option<&Self::Status>;

    /// Reads the world of `object`.
    fn observe(
        ctx: &Context,
        caches: &Caches,
        object: &Self::Kind,
    ) -> impl Future<Output = Result<Self::Observed, Self::Error>> + Send;

    /// The pure decision.
    fn decide(object: &Self::Kind, observed: &Self::Observed) -> Plan<Self::Status, Self::Action>;

    /// Carries out one action.
    fn act(
        ctx: &Context,
        object: &Self::Kind,
        observed: &Self::Observed,
        action: &Self::Action,
    ) -> impl Future<Output = Result<Acted, Self::Error>> + Send;

    /// The operator settings that time the next look.
    fn policy(observed: &Self::Observed) -> &Policy;

    /// The lifecycle state reported by the `lifecycle` metric.
    fn lifecycle_state(status: &Self::Status) -> Option<&'static str>;

    /// Called once the pass settled the object: with what it observed and the status it now
    /// holds (written, or unchanged), or `None` when it was released. For a kind's own
    /// metrics of what changed (`object` holds the status as read); by default nothing.
    fn written(
        _ctx: &Context,
        _object: &Self::Kind,
        _observed: &Self::Observed,
        _status: Option<&Self::Status>,
    ) {
    }

    /// Whether a failed action becomes a status (see [`Recovery`]); by default it is an
    /// error, retried with back-off.
    fn recover(
        _object: &Self::Kind,
        _observed: &Self::Observed,
        _plan: &Plan<Self::Status, Self::Action>,
        _error: &Self::Error,
    ) -> Option<Recovery<Self::Status>> {
        None
    }

    /// What else wakes a resource besides changes of its own (owned objects, objects it
    /// refers to), wired from the shared caches of `namespace` (`None`: all namespaces).
    fn triggers(
        controller: Controller<Self::Kind>,
        _caches: &Caches,
        _namespace: Option<&str>,
    ) -> Controller<Self::Kind> {
        controller
    }
}
