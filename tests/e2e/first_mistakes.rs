//! The mistakes of a first FlinkDeployment, each made in the basic example as a user would
//! make it, and the one line `kubectl describe flinkdeployment` then shows: status.error, the
//! Ready condition's message and a Warning Event; or the webhook's refusal naming the field.

use std::time::Duration;

use flink_operator_api::FlinkDeployment;
use kube::{Api, Client, api::PostParams};
use serde_json::{Value, json};

use crate::{
    cluster_harness::{TestNamespace, wait_for},
    harness::LogsOnFailure,
    objects,
    reconcile::OperatorLogOnFailure,
};

/// examples/basic.yaml, as a user applies it.
fn basic_example() -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/basic.yaml");
    serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

struct Mistake {
    what: &'static str,
    make: fn(&mut Value),
    /// What the one line says, in parts.
    shows: &'static [&'static str],
}

const MISTAKES: [Mistake; 5] = [
    Mistake {
        what: "image tag",
        make: |fd| fd["spec"]["image"] = json!("flink:1.99"),
        shows: &["ErrImagePull", "\"flink:1.99\""],
    },
    Mistake {
        what: "service account",
        make: |fd| fd["spec"]["serviceAccount"] = json!("nosuch"),
        shows: &["FailedCreate", "serviceaccount \"nosuch\" not found"],
    },
    Mistake {
        what: "jarURI",
        make: |fd| fd["spec"]["job"]["jarURI"] = json!("local:///opt/flink/usrlib/no-such-job.jar"),
        shows: &["no-such-job.jar"],
    },
    Mistake {
        what: "entryClass",
        make: |fd| fd["spec"]["job"]["entryClass"] = json!("org.example.NoSuchJob"),
        shows: &["org.example.NoSuchJob"],
    },
    Mistake {
        what: "TaskManager memory",
        make: |fd| fd["spec"]["taskManager"]["resource"]["memory"] = json!("512m"),
        shows: &["Total Flink Memory"],
    },
];

fn condition(fd: &FlinkDeployment, type_: &str) -> String {
    fd.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_.as_deref() == Some(type_)))
        .and_then(|c| c.message.clone())
        .unwrap_or_default()
}

async fn check(client: &Client, mistake: &Mistake) -> String {
    let ns = TestNamespace::new(client, "mistake").await;
    let _logs = LogsOnFailure(ns.name.clone());
    objects::create_all(client, &objects::flink_service_account(&ns.name)).await;
    let mut manifest = basic_example();
    manifest["metadata"]["namespace"] = json!(ns.name);
    (mistake.make)(&mut manifest);
    let fd: FlinkDeployment = serde_json::from_value(manifest).unwrap();
    let api: Api<FlinkDeployment> = Api::namespaced(client.clone(), &ns.name);
    api.create(&PostParams::default(), &fd).await.unwrap();
    let what = format!("the {} mistake shown as {:?}", mistake.what, mistake.shows);
    let seen = wait_for(&what, Duration::from_secs(240), || async {
        let fd = api.get("basic-example").await.ok()?;
        let error = fd.status.as_ref()?.error.clone()?;
        mistake
            .shows
            .iter()
            .all(|part| error.contains(part))
            .then_some((fd, error))
    })
    .await;
    let (fd, error) = seen;
    assert!(!error.contains('\n'), "not one line: {error}");
    assert_eq!(condition(&fd, "Ready"), error, "{}", mistake.what);
    crate::cluster_harness::wait_for_event(
        client,
        &ns.name,
        &format!("a Warning Event about the {} mistake", mistake.what),
        Duration::from_secs(60),
        |e| {
            e.type_.as_deref() == Some("Warning")
                && e.involved_object.name.as_deref() == Some("basic-example")
                && e.message.as_deref().is_some_and(|m| m.contains(mistake.shows[0]))
        },
    )
    .await;
    eprintln!("MISTAKE {}: {error}", mistake.what);
    error
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_first_time_mistake_is_one_line_with_its_reason() {
    let client = crate::harness::client().await;
    crate::operator::shared(&client).await;
    let _turn = crate::cluster_harness::beside_others().await;
    let _operator_log = OperatorLogOnFailure;
    let started = std::time::Instant::now();
    futures::future::join_all(MISTAKES.iter().map(|m| check(&client, m))).await;
    eprintln!(
        "MEASURED {} mistakes shown in {:.1} s",
        MISTAKES.len(),
        started.elapsed().as_secs_f64()
    );
}

/// A memory size Flink cannot read is refused at admission, naming the field.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_size_flink_cannot_read_is_refused_naming_the_field() {
    let client = crate::harness::client().await;
    crate::operator::shared(&client).await;
    let _turn = crate::cluster_harness::beside_others().await;
    let ns = TestNamespace::new(&client, "mistake-memory").await;
    let api: Api<FlinkDeployment> = Api::namespaced(client.clone(), &ns.name);
    let mut manifest = basic_example();
    manifest["metadata"]["namespace"] = json!(ns.name);
    manifest["spec"]["taskManager"]["resource"]["memory"] = json!("2gigs");
    let fd: FlinkDeployment = serde_json::from_value(manifest.clone()).unwrap();
    let refused = api.create(&PostParams::default(), &fd).await.unwrap_err();
    let message = match refused {
        kube::Error::Api(status) => status.message,
        other => panic!("{other}"),
    };
    eprintln!("MISTAKE memory 2gigs: {message}");
    assert!(
        message.contains("spec.taskManager.resource.memory")
            && message.contains("\"2gigs\" is not a memory size"),
        "{message}"
    );
    // `2gb` is a size Flink reads (2 GiB): admitted (a dry run: nothing is deployed).
    manifest["spec"]["taskManager"]["resource"]["memory"] = json!("2gb");
    let fd: FlinkDeployment = serde_json::from_value(manifest).unwrap();
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    api.create(&dry_run, &fd).await.unwrap();
}
