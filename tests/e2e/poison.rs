//! One tenant's resource cannot stop the shared operator. The resources that once did (a
//! pod template whose `metadata` is text, which panicked the cluster builder and ended the
//! FlinkDeployment loop for every namespace; configuration keys `a`, `a-x`, `a.b` on Flink
//! 2.x, which reached an `unreachable!` writing config.yaml) are refused at admission naming
//! the field; stored anyway (as before this check existed, or with the webhook bypassed),
//! each gets that error in status and a Warning Event, and an unrelated FlinkDeployment in
//! another namespace still reaches RUNNING/STABLE, with the operator process the same.

use std::time::Duration;

use flink_operator_api::{FlinkDeployment, FlinkJobState};
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use kube::{
    Api, Client,
    api::{Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};

use crate::{
    cluster_harness::{TestNamespace, WEBHOOK_CONFIGURATION, wait_for},
    harness::LogsOnFailure,
    objects,
    reconcile::OperatorLogOnFailure,
};

/// Objects with this label skip the webhook while [`Bypass`] lasts.
pub(crate) const BYPASS_LABEL: &str = "flink-operator-tests/bypass-admission";

/// examples/basic.yaml in `namespace`, as a user applies it.
fn basic_example(namespace: &str, name: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/basic.yaml");
    let mut fd: Value = serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    fd["metadata"] = json!({"name": name, "namespace": namespace});
    fd
}

struct Poison {
    name: &'static str,
    make: fn(&mut Value),
    /// The field admission and the status name.
    field: &'static str,
}

const POISONS: [Poison; 2] = [
    Poison {
        name: "poison-template",
        make: |fd| fd["spec"]["podTemplate"] = json!({"metadata": "x"}),
        field: "spec.podTemplate.metadata",
    },
    Poison {
        name: "poison-config",
        make: |fd| {
            fd["spec"]["image"] = json!("flink:2.3");
            fd["spec"]["flinkVersion"] = json!("v2_3");
            let config = &mut fd["spec"]["flinkConfiguration"];
            config["a"] = json!("1");
            config["a-x"] = json!("2");
            config["a.b"] = json!("3");
        },
        field: "spec.flinkConfiguration.a.b",
    },
];

/// While it lives, the webhooks also skip objects labelled [`BYPASS_LABEL`] (other tests'
/// objects are judged as before); ended, they have the selector the chart gave them again.
pub(crate) struct Bypass {
    client: Client,
    /// The selector the chart gave the webhooks, put back by [`Bypass::end`].
    before: Value,
}

impl Bypass {
    pub(crate) async fn new(client: &Client) -> Self {
        let installed = Api::<ValidatingWebhookConfiguration>::all(client.clone())
            .get(WEBHOOK_CONFIGURATION)
            .await
            .unwrap();
        let before = installed
            .webhooks
            .and_then(|w| w.into_iter().next())
            .and_then(|w| w.object_selector)
            .map_or_else(|| json!({}), |s| serde_json::to_value(s).unwrap());
        let mut selector = before.clone();
        let expressions = selector
            .as_object_mut()
            .unwrap()
            .entry("matchExpressions")
            .or_insert_with(|| json!([]));
        expressions
            .as_array_mut()
            .unwrap()
            .push(json!({"key": BYPASS_LABEL, "operator": "DoesNotExist"}));
        set_object_selector(client, selector).await;
        Self {
            client: client.clone(),
            before,
        }
    }

    pub(crate) async fn end(self) {
        set_object_selector(&self.client, self.before).await;
    }
}

async fn set_object_selector(client: &Client, selector: Value) {
    let patch = Patch::Json::<()>(
        serde_json::from_value(
            json!([{"op": "add", "path": "/webhooks/0/objectSelector", "value": selector}]),
        )
        .unwrap(),
    );
    let params = PatchParams::default();
    Api::<ValidatingWebhookConfiguration>::all(client.clone())
        .patch(WEBHOOK_CONFIGURATION, &params, &patch)
        .await
        .unwrap();
    Api::<MutatingWebhookConfiguration>::all(client.clone())
        .patch(WEBHOOK_CONFIGURATION, &params, &patch)
        .await
        .unwrap();
}

fn message(error: kube::Error) -> String {
    match error {
        kube::Error::Api(status) => status.message,
        other => panic!("{other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poison_resource_fails_alone_and_another_tenants_deployment_runs() {
    let client = crate::harness::client().await;
    crate::operator::shared(&client).await;
    let _turn = crate::cluster_harness::beside_others().await;
    let _operator_log = OperatorLogOnFailure;
    let pid = crate::operator::operator_pid();
    let tenant = TestNamespace::new(&client, "poison").await;
    let _logs = LogsOnFailure(tenant.name.clone());
    objects::create_all(&client, &objects::flink_service_account(&tenant.name)).await;
    let api: Api<FlinkDeployment> = Api::namespaced(client.clone(), &tenant.name);

    // Admission refuses each, naming the field.
    for poison in &POISONS {
        let mut manifest = basic_example(&tenant.name, poison.name);
        (poison.make)(&mut manifest);
        let fd: FlinkDeployment = serde_json::from_value(manifest).unwrap();
        let refused = message(api.create(&PostParams::default(), &fd).await.unwrap_err());
        eprintln!("REFUSED {}: {refused}", poison.name);
        assert!(refused.contains(poison.field), "{}: {refused}", poison.name);
    }

    // Stored anyway, the webhook bypassed as an older operator's would have been.
    for poison in &POISONS {
        let mut manifest = basic_example(&tenant.name, poison.name);
        manifest["metadata"]["labels"] = json!({BYPASS_LABEL: "true"});
        (poison.make)(&mut manifest);
        let fd: FlinkDeployment = serde_json::from_value(manifest).unwrap();
        // A chart upgrade by another test may put the selector back in between: try again.
        let mut attempts = 0;
        loop {
            let bypass = Bypass::new(&client).await;
            let created = api.create(&PostParams::default(), &fd).await;
            bypass.end().await;
            match created {
                Ok(_) => break,
                Err(error) if attempts < 3 => {
                    eprintln!("storing {} past the webhook: {error}; again", poison.name);
                    attempts += 1;
                }
                Err(error) => panic!("storing {} past the webhook: {error}", poison.name),
            }
        }
    }

    // Another tenant's FlinkDeployment, created after the poison, runs.
    let other = TestNamespace::new(&client, "poison-neighbour").await;
    let _other_logs = LogsOnFailure(other.name.clone());
    objects::create_all(&client, &objects::flink_service_account(&other.name)).await;
    let neighbour: Api<FlinkDeployment> = Api::namespaced(client.clone(), &other.name);
    let fd: FlinkDeployment = serde_json::from_value(basic_example(&other.name, "basic-example")).unwrap();
    neighbour.create(&PostParams::default(), &fd).await.unwrap();

    // Each poison gets its error in status and a Warning Event naming the field.
    for poison in &POISONS {
        let error = wait_for(
            &format!("{} to show an error naming {}", poison.name, poison.field),
            Duration::from_secs(60),
            || async {
                let fd = api.get(poison.name).await.ok()?;
                let error = fd.status?.error?;
                error.contains(poison.field).then_some(error)
            },
        )
        .await;
        eprintln!("STATUS {}: {error}", poison.name);
        crate::cluster_harness::wait_for_event(
            &client,
            &tenant.name,
            &format!("a Warning Event on {} naming {}", poison.name, poison.field),
            Duration::from_secs(60),
            |e| {
                e.type_.as_deref() == Some("Warning")
                    && e.involved_object.name.as_deref() == Some(poison.name)
                    && e.message.as_deref().is_some_and(|m| m.contains(poison.field))
            },
        )
        .await;
    }

    wait_for(
        "the other tenant's FlinkDeployment STABLE with its job RUNNING",
        Duration::from_secs(240),
        || async {
            let fd = neighbour.get("basic-example").await.ok()?;
            let status = fd.status.as_ref()?;
            let running = status.job_status.as_ref()?.state == Some(FlinkJobState::Running);
            let stable = status.lifecycle_state.map(|l| l.as_str()) == Some("STABLE");
            (running && stable).then_some(())
        },
    )
    .await;
    assert_eq!(
        crate::operator::operator_pid(),
        pid,
        "the operator process was replaced: it crashed or was restarted"
    );
    let health = crate::operator::probe_get("/healthz");
    assert!(health.contains("ok"), "{health}");
}
