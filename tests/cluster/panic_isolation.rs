//! A panic inside one reconcile fails that resource alone: the loop of its kind goes on
//! reconciling the others (those there before and those created after), the resource gets
//! a `ReconcilePanicked` Warning Event and is retried with back-off.
//!
//! The loop is the real runtime ([`runtime::run`]) over the real shared caches and API
//! server; only the kind plugged into it is the test's own, whose decide panics on one
//! resource as a bug in a real kind would.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use flink_operator_api::{FlinkDeployment, FlinkDeploymentStatus};
use flink_operator_controller::{
    caches::{Cache, Caches, WatchScope},
    context::Context,
    events::Reason,
    fence::Fence,
    flink::{ClientConfig, RestClients, RestEndpointMode, RestEndpoints},
    metrics::ReconcileMetrics,
    plan::{Next, Plan},
    policy::Policy,
    runtime::{self, Acted, Reconciler},
};
use kube::{
    Api, ResourceExt,
    api::{Patch, PatchParams},
    runtime::events::{Recorder, Reporter},
};
use serde_json::json;

use crate::harness::{IN_CLUSTER_LABEL, TestNamespace, client, install_crds, small_deployment};

/// The label value that keeps these resources away from every other operator of the tests.
const MINE: &str = "panic-isolation";

/// Every decide, by resource name, in order.
static DECIDED: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn decided(name: &str) -> usize {
    DECIDED.lock().unwrap().iter().filter(|n| *n == name).count()
}

/// A kind whose decide has a bug that one resource meets.
struct Buggy;

impl Reconciler for Buggy {
    type Kind = FlinkDeployment;
    type Status = FlinkDeploymentStatus;
    type Observed = Policy;
    type Action = ();
    type Error = std::io::Error;

    const KIND: &'static str = "FlinkDeployment";

    fn cache(caches: &Caches) -> &Cache<FlinkDeployment> {
        &caches.deployments
    }

    fn status(object: &FlinkDeployment) -> Option<&FlinkDeploymentStatus> {
        object.status.as_ref()
    }

    async fn observe(_: &Context, _: &Caches, _: &FlinkDeployment) -> Result<Policy, std::io::Error> {
        Ok(Policy::default())
    }

    fn decide(object: &FlinkDeployment, _: &Policy) -> Plan<FlinkDeploymentStatus, ()> {
        let name = object.name_any();
        DECIDED.lock().unwrap().push(name.clone());
        if name.starts_with("poison") {
            // What the cluster builder once did with `podTemplate: {metadata: "x"}`.
            let mut metadata = json!("x");
            metadata["labels"] = json!({"app": name});
        }
        Plan {
            status_before: None,
            actions: Vec::new(),
            status: object.status.clone().unwrap_or_default(),
            events: Vec::new(),
            requeue: Next::Steady,
        }
    }

    async fn act(_: &Context, _: &FlinkDeployment, _: &Policy, _: &()) -> Result<Acted, std::io::Error> {
        Ok(Acted::Done)
    }

    fn policy(observed: &Policy) -> &Policy {
        observed
    }

    fn lifecycle_state(_: &FlinkDeploymentStatus) -> Option<&'static str> {
        None
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_in_one_reconcile_fails_that_resource_alone() {
    let client = client().await;
    install_crds(&client).await;
    let ns = TestNamespace::new(&client, "panic-isolation").await;
    let api: Api<FlinkDeployment> = Api::namespaced(client.clone(), &ns.name);
    let params = PatchParams::apply("flink-operator-tests");
    let create = |name: &'static str| {
        let api = api.clone();
        let params = params.clone();
        async move {
            let fd = small_deployment(name, json!({IN_CLUSTER_LABEL: MINE}));
            api.patch(name, &params, &Patch::Apply(&fd)).await.unwrap();
        }
    };
    create("poison").await;
    create("before").await;

    let scope = WatchScope::parse(Some(&ns.name));
    let (caches, watching) = Caches::start(
        client.clone(),
        &scope,
        Some(&format!("{IN_CLUSTER_LABEL}={MINE}")),
        false,
        false,
    );
    let watching = tokio::spawn(watching);
    caches.wait_until_ready().await;
    let ctx = Arc::new(Context {
        client: client.clone(),
        rest_endpoints: RestEndpoints::new(client.clone(), RestEndpointMode::Service),
        rest_clients: RestClients::new(ClientConfig::default()).unwrap(),
        operator_config: BTreeMap::new().into(),
        recorder: Recorder::new(
            client.clone(),
            Reporter {
                controller: "flink-operator-tests".to_owned(),
                instance: None,
            },
        ),
        metrics: ReconcileMetrics::default(),
        unanswered: Default::default(),
        fence: Fence::open(),
        autoscaler: Default::default(),
        default_logging: flink_operator_controller::resources::cluster::built_in_logging(),
        operator_namespace: None,
    });
    let running = tokio::spawn(runtime::run::<Buggy>(ctx, caches, scope));

    let panicked = crate::harness::wait_for_event(
        &client,
        &ns.name,
        "a ReconcilePanicked Warning Event on the poison",
        Duration::from_secs(30),
        |e| {
            e.involved_object.name.as_deref() == Some("poison")
                && e.reason.as_deref() == Some(Reason::ReconcilePanicked.as_str())
                && e.type_.as_deref() == Some("Warning")
        },
    )
    .await;
    let note = panicked.message.unwrap_or_default();
    assert!(note.contains("other resources are not affected"), "{note}");
    assert!(
        note.contains("cannot access key \"labels\" in JSON string"),
        "the panic's message: {note}"
    );

    // The loop goes on: the one there before, and one created after the panic.
    create("after").await;
    crate::harness::wait_for(
        "the resources beside the poison to be reconciled",
        Duration::from_secs(30),
        || async { (decided("before") > 0 && decided("after") > 0).then_some(()) },
    )
    .await;
    // And the poison is retried, with back-off (the first retries come within seconds).
    crate::harness::wait_for("the poison to be retried", Duration::from_secs(30), || async {
        (decided("poison") >= 2).then_some(())
    })
    .await;
    assert!(!running.is_finished(), "the loop ended");
    running.abort();
    watching.abort();
}
