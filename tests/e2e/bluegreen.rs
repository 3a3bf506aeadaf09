//! FlinkBlueGreenDeployments, BASIC transitions: the counting job as blue, a template change
//! handed over to green from blue's NATIVE savepoint (Flink 2.x, savepoint mode; Flink 1.20,
//! last-state mode), a stateless hand-over that starts from nothing, a hand-over to a
//! template that cannot run (aborted, the old child untouched), suspend and resume of the
//! active child, the resource's Ingress following the active child, and the deletion of the
//! resource with its children.

use std::{
    collections::BTreeMap,
    path::PathBuf,
    time::{Duration, Instant, SystemTime},
};

use flink_operator_api::{FlinkBlueGreenDeployment, FlinkDeployment, FlinkJobState, FlinkStateSnapshot};
use k8s_openapi::api::{
    core::v1::{Event, Pod},
    networking::v1::Ingress,
};
use kube::{
    Api, Client,
    api::{DeleteParams, ListParams, Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};

use crate::{
    cluster_harness::{self, TestNamespace, wait_for},
    flink_harness,
    harness::{self, LogsOnFailure},
    objects,
    reconcile::{OperatorLogOnFailure, counted_to, counter_spec_with, counts_went_on},
};

pub(crate) const NAME: &str = "counter";

/// One FlinkBlueGreenDeployment of the counting job, named `counter`, and its namespace.
pub(crate) struct BlueGreen {
    pub(crate) client: Client,
    pub(crate) api: Api<FlinkBlueGreenDeployment>,
    pub(crate) children: Api<FlinkDeployment>,
    pub(crate) ns: TestNamespace,
    pub(crate) state: PathBuf,
}

impl BlueGreen {
    /// Creates it in a new namespace: `template` is the counting job's FlinkDeployment spec
    /// in `upgrade_mode`, with `config` added to its Flink configuration.
    async fn create(
        client: &Client,
        prefix: &str,
        version: &str,
        upgrade_mode: &str,
        config: &[(&str, &str)],
    ) -> Self {
        let ns = TestNamespace::new(client, prefix).await;
        objects::create_all(client, &objects::flink_service_account(&ns.name)).await;
        let state = harness::state_dir(&ns.name);
        let template = counter_spec_with(version, &state, upgrade_mode, config).await;
        Self::create_in(client, ns, state, json!({"template": {"spec": template}})).await
    }

    /// Creates it in `ns` with `spec`; `state` is the host directory its children mount.
    pub(crate) async fn create_in(client: &Client, ns: TestNamespace, state: PathBuf, spec: Value) -> Self {
        let resource: FlinkBlueGreenDeployment = serde_json::from_value(json!({
            "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkBlueGreenDeployment",
            "metadata": {"name": NAME, "namespace": ns.name},
            "spec": spec,
        }))
        .unwrap();
        let api: Api<FlinkBlueGreenDeployment> = Api::namespaced(client.clone(), &ns.name);
        api.create(&PostParams::default(), &resource).await.unwrap();
        Self {
            client: client.clone(),
            api,
            children: Api::namespaced(client.clone(), &ns.name),
            ns,
            state,
        }
    }

    pub(crate) fn counts(&self, dir: &str) -> PathBuf {
        self.state.join(dir)
    }

    pub(crate) async fn get(&self) -> FlinkBlueGreenDeployment {
        self.api.get(NAME).await.unwrap()
    }

    pub(crate) async fn patch(&self, patch: Value) {
        self.api
            .patch(NAME, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .unwrap();
    }

    /// Merges `patch` into `spec.template.spec`.
    pub(crate) async fn patch_template(&self, patch: Value) {
        self.patch(json!({"spec": {"template": {"spec": patch}}})).await;
    }

    /// Waits for `blueGreenState` to be `state`; returns the resource.
    pub(crate) async fn reaches(&self, state: &str, timeout: Duration) -> FlinkBlueGreenDeployment {
        wait_for(&format!("blueGreenState {state}"), timeout, || async {
            let bg = self.api.get(NAME).await.ok()?;
            (state_of(&bg).as_deref() == Some(state)).then_some(bg)
        })
        .await
    }

    /// Waits until the child of `colour` is STABLE with its job RUNNING (a job other than
    /// `previous`); returns it.
    pub(crate) async fn ready_child(&self, colour: &str, previous: Option<&str>) -> FlinkDeployment {
        harness::running_job(&self.children, &child(colour), previous).await
    }

    pub(crate) async fn child(&self, colour: &str) -> Option<FlinkDeployment> {
        self.children.get_opt(&child(colour)).await.unwrap()
    }

    /// Waits until the child of `colour` and its pods are gone.
    pub(crate) async fn child_gone(&self, colour: &str) {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &self.ns.name);
        let name = child(colour);
        wait_for(
            &format!("{name} and its pods gone"),
            Duration::from_secs(180),
            || async {
                let gone = self.children.get_opt(&name).await.ok()?.is_none();
                let selector = format!("app={name}");
                let no_pods = pods
                    .list(&ListParams::default().labels(&selector))
                    .await
                    .ok()?
                    .items
                    .is_empty();
                (gone && no_pods).then_some(())
            },
        )
        .await;
    }

    /// The job id of the running child of `colour`.
    pub(crate) async fn job_id(&self, colour: &str) -> String {
        let fd = self.child(colour).await.unwrap();
        fd.status.unwrap().job_status.unwrap().job_id.unwrap()
    }

    /// What the job of the child of `colour` restored when it started, as Flink reports it
    /// (`None`: it started from nothing, which is known once it completed a checkpoint).
    pub(crate) async fn restored(
        &self,
        colour: &str,
    ) -> Option<flink_operator_controller::flink::RestoredCheckpoint> {
        let url = harness::rest_address(&self.client, &self.ns.name, &child(colour)).await;
        let rest = harness::rest_client(&url);
        let id = flink_operator_controller::flink::JobId::from(self.job_id(colour).await.as_str());
        wait_for(
            "a restore or a completed checkpoint",
            Duration::from_secs(60),
            || async {
                let latest = rest.checkpoint_statistics(&id).await.ok()?.latest;
                match latest.restored {
                    Some(restored) => Some(Some(restored)),
                    None => latest.completed.map(|_| None),
                }
            },
        )
        .await
    }

    /// The reasons of the Events about the resource, oldest first.
    pub(crate) async fn event_reasons(&self) -> Vec<String> {
        let events: Api<Event> = Api::namespaced(self.client.clone(), &self.ns.name);
        let selector = format!("involvedObject.kind=FlinkBlueGreenDeployment,involvedObject.name={NAME}");
        let mut list = events
            .list(&ListParams::default().fields(&selector))
            .await
            .unwrap()
            .items;
        list.sort_by_key(|e| e.metadata.creation_timestamp.clone().map(|t| t.0));
        list.into_iter().filter_map(|e| e.reason).collect()
    }

    /// Deletes the resource; waits until it, both children and their pods are gone.
    pub(crate) async fn delete(&self) {
        self.api.delete(NAME, &DeleteParams::default()).await.unwrap();
        wait_for(
            "the FlinkBlueGreenDeployment gone",
            Duration::from_secs(120),
            || async { self.api.get_opt(NAME).await.ok()?.is_none().then_some(()) },
        )
        .await;
        self.child_gone("blue").await;
        self.child_gone("green").await;
    }
}

/// Whether a child is STABLE with its job RUNNING.
fn child_ready(fd: &FlinkDeployment) -> bool {
    let Some(status) = fd.status.as_ref() else {
        return false;
    };
    let running = status.job_status.as_ref().and_then(|j| j.state.as_ref()) == Some(&FlinkJobState::Running);
    running && status.lifecycle_state.map(|l| l.as_str()) == Some("STABLE")
}

pub(crate) fn child(colour: &str) -> String {
    format!("{NAME}-{colour}")
}

pub(crate) fn state_of(bg: &FlinkBlueGreenDeployment) -> Option<String> {
    let state = bg.status.as_ref()?.blue_green_state?;
    Some(state.as_str().to_owned())
}

fn condition(bg: &FlinkBlueGreenDeployment, type_: &str) -> Option<(String, String)> {
    harness::condition(bg.status.as_ref()?.conditions.as_ref(), type_)
}

/// No marker of a transition is left in the status of a resource that is not in one.
pub(crate) fn assert_settled(bg: &FlinkBlueGreenDeployment) {
    let status = bg.status.as_ref().unwrap();
    assert_eq!(status.savepoint_trigger_id, None, "{status:?}");
    assert_eq!(status.abort_timestamp, None, "{status:?}");
    assert_eq!(status.deployment_ready_timestamp, None, "{status:?}");
}

/// How long the operator's own steps of a stateful hand-over took, beyond Flink's work.
struct HandOver {
    /// From the spec change stored to the transition savepoint triggered in Flink.
    to_savepoint_triggered: Duration,
    /// From the new child stable (as its status shows) to the old one's deletion started.
    to_old_child_deleted: Duration,
    /// From the spec change stored to the new child running alone.
    whole: Duration,
    /// The transition savepoint's path.
    savepoint: String,
    /// The format its FlinkStateSnapshot asked Flink for.
    format: Option<flink_operator_api::SavepointFormatType>,
}

/// A stateful hand-over from `from` to `to` by `change` of the template: the savepoint of
/// `from` is taken as a FlinkStateSnapshot, `to` starts from it, `from` is deleted once `to`
/// is stable, and the resource ends ACTIVE_`to` with no marker left. Times its steps.
async fn stateful_hand_over(bg: &BlueGreen, from: &str, to: &str, change: Value) -> HandOver {
    let snapshots: Api<FlinkStateSnapshot> = Api::namespaced(bg.client.clone(), &bg.ns.name);
    let old_job = bg.job_id(from).await;
    bg.patch_template(change).await;
    let stored = Instant::now();
    let savepoint_prefix = format!("{}-transition-", child(from));
    let transition = |s: &FlinkStateSnapshot| {
        s.metadata
            .name
            .as_deref()
            .is_some_and(|n| n.starts_with(&savepoint_prefix))
    };
    let snapshot = wait_for(
        "the transition savepoint triggered",
        Duration::from_secs(60),
        || async {
            let list = snapshots.list(&ListParams::default()).await.ok()?.items;
            list.into_iter()
                .find(|s| transition(s) && s.status.as_ref().is_some_and(|st| st.trigger_id.is_some()))
        },
    )
    .await;
    let to_savepoint_triggered = stored.elapsed();
    let name = snapshot.metadata.name.clone().unwrap();
    let transitioning = bg
        .reaches(
            &format!("TRANSITIONING_TO_{}", to.to_uppercase()),
            Duration::from_secs(120),
        )
        .await;
    // The savepoint's name was recorded with the transition, and is its only savepoint.
    assert_eq!(
        transitioning
            .status
            .as_ref()
            .unwrap()
            .savepoint_trigger_id
            .as_deref(),
        Some(name.as_str())
    );
    let taken = snapshots.get(&name).await.unwrap();
    let format = taken.spec.savepoint.as_ref().and_then(|s| s.format_type);
    let savepoint = taken.status.unwrap().path.unwrap();
    let ours: Vec<_> = snapshots
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(transition)
        .collect();
    assert_eq!(ours.len(), 1, "{ours:?}");
    let incoming = bg.child(to).await.unwrap();
    let incoming_job = incoming.spec.job.as_ref().unwrap();
    assert_eq!(
        incoming_job.initial_savepoint_path.as_deref(),
        Some(savepoint.as_str())
    );
    let labels = incoming.metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        labels.get("flink/blue-green-deployment-type").map(String::as_str),
        Some(to.to_uppercase().as_str())
    );

    // The old child runs on until the new one is stable, and is deleted then: looked at
    // every 100 ms, the old one is never found going while the new one is not stable.
    let new_name = child(to);
    wait_for(
        &format!("{new_name} stable"),
        Duration::from_secs(240),
        || async {
            let old = bg.children.get_opt(&child(from)).await.ok()?;
            let new = bg.children.get(&new_name).await.ok()?;
            if child_ready(&new) {
                return Some(());
            }
            let going = old.is_none_or(|o| o.metadata.deletion_timestamp.is_some());
            assert!(!going, "{} was deleted before {new_name} was stable", child(from));
            None
        },
    )
    .await;
    let stable = Instant::now();
    wait_for(
        &format!("{} deleted", child(from)),
        Duration::from_secs(60),
        || async {
            let old = bg.children.get_opt(&child(from)).await.ok()?;
            old.is_none_or(|o| o.metadata.deletion_timestamp.is_some())
                .then_some(())
        },
    )
    .await;
    let to_old_child_deleted = stable.elapsed();
    let active = bg
        .reaches(&format!("ACTIVE_{}", to.to_uppercase()), Duration::from_secs(60))
        .await;
    assert_settled(&active);
    let status = active.status.as_ref().unwrap();
    assert_eq!(status.error, None);
    assert_eq!(
        status.job_status.as_ref().unwrap().state,
        Some(FlinkJobState::Running)
    );
    assert_ne!(bg.job_id(to).await, old_job);
    bg.child_gone(from).await;
    let whole = stored.elapsed();
    // The new job restored the transition savepoint, as Flink reports it.
    let restored = bg.restored(to).await.expect("the new job restored nothing");
    assert!(restored.is_savepoint, "{restored:?}");
    assert_eq!(restored.external_path.as_deref(), Some(savepoint.as_str()));
    HandOver {
        to_savepoint_triggered,
        to_old_child_deleted,
        whole,
        savepoint,
        format,
    }
}

impl std::fmt::Display for HandOver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "spec stored -> savepoint triggered {:.2} s, new child stable -> old child deleted {:.2} s, \
             whole hand-over {:.1} s, savepoint {}",
            self.to_savepoint_triggered.as_secs_f64(),
            self.to_old_child_deleted.as_secs_f64(),
            self.whole.as_secs_f64(),
            self.savepoint
        )
    }
}

/// Flink 2.x, savepoint mode: blue, a hand-over to green from blue's savepoint with nothing
/// lost, suspend and resume of green, and the deletion of the resource.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_savepoint_hand_over_carries_the_state_to_green_and_retires_blue() {
    let client = harness::client().await;
    crate::operator::shared(&client).await;
    let _turn = cluster_harness::beside_others().await;
    let _operator_log = OperatorLogOnFailure;
    let version = flink_harness::versions().last().unwrap().clone();
    // NATIVE savepoints, as a large-state job takes them: the transition's too.
    let bg = BlueGreen::create(
        &client,
        "bluegreen-savepoint",
        &version,
        "savepoint",
        &[("kubernetes.operator.savepoint.format.type", "NATIVE")],
    )
    .await;
    let _logs = LogsOnFailure(bg.ns.name.clone());
    let counts = bg.counts("counts");

    // Blue first: owned by the resource, labelled, running the template.
    bg.ready_child("blue", None).await;
    let active = bg.reaches("ACTIVE_BLUE", Duration::from_secs(60)).await;
    assert_settled(&active);
    assert_eq!(
        condition(&active, "Ready"),
        Some(("True".into(), "Running".into()))
    );
    let blue = bg.child("blue").await.unwrap();
    let owner = &blue.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("FlinkBlueGreenDeployment", NAME)
    );
    assert!(bg.child("green").await.is_none());
    // The resource's Ingress, asked for once blue is active: no change of the children, routed
    // to blue now and to green by the hand-over.
    bg.patch(json!({"spec": {"ingress": {
        "template": "{{name}}.{{namespace}}.flink.example.com",
        "className": "nginx",
    }}}))
    .await;
    let ingresses: Api<Ingress> = Api::namespaced(client.clone(), &bg.ns.name);
    let ingress = ingress_routes_to(&ingresses, "counter-blue-rest").await;
    assert_eq!(
        ingress.spec.as_ref().unwrap().rules.as_ref().unwrap()[0]
            .host
            .as_deref(),
        Some(format!("counter.{}.flink.example.com", bg.ns.name).as_str())
    );
    assert_eq!(ingress.metadata.owner_references.unwrap()[0].name, NAME);
    let before = counted_to(&counts, 30).await;

    let hand_over = stateful_hand_over(&bg, "blue", "green", json!({"job": {"parallelism": 1}})).await;
    ingress_routes_to(&ingresses, "counter-green-rest").await;
    eprintln!("savepoint hand-over on Flink {version}: {hand_over}");
    assert!(
        hand_over.savepoint.contains("/opt/flink/state/savepoints/"),
        "{hand_over}"
    );
    assert_eq!(
        hand_over.format,
        Some(flink_operator_api::SavepointFormatType::Native),
        "{hand_over}"
    );
    // Green's counts go on from blue's: nothing was lost.
    counts_went_on(&counts, &before, SystemTime::now(), 0).await;
    let green = bg.child("green").await.unwrap();
    assert_eq!(green.spec.job.as_ref().unwrap().parallelism, Some(1));
    let reasons = bg.event_reasons().await;
    for reason in [
        "BlueGreenTransitionStarted",
        "SavepointCompleted",
        "BlueGreenChildDeleted",
        "BlueGreenTransitionCompleted",
    ] {
        assert!(
            reasons.iter().any(|r| r == reason),
            "{reason} missing: {reasons:?}"
        );
    }
    let metrics = crate::operator::probe_get("/metrics");
    let active_green = format!(
        r#"flink_operator_resources{{kind="FlinkBlueGreenDeployment",namespace="{}",lifecycle_state="ACTIVE_GREEN"}} 1"#,
        bg.ns.name
    );
    assert!(
        metrics.contains(&active_green),
        "{active_green} missing:\n{metrics}"
    );
    assert!(
        metrics.contains(r#"flink_operator_bluegreen_transition_seconds_count{transition="BlueToGreen"}"#),
        "no BlueToGreen duration:\n{metrics}"
    );

    // Suspend and resume: applied to the active child in place, no hand-over.
    let green_job = bg.job_id("green").await;
    let before = counted_to(&counts, 1).await;
    bg.patch_template(json!({"job": {"state": "suspended"}})).await;
    wait_for("green suspended", Duration::from_secs(120), || async {
        let bg_status = bg.api.get(NAME).await.ok()?.status?;
        let fd = bg.children.get(&child("green")).await.ok()?;
        let suspended = fd.status?.job_status?.state == Some(FlinkJobState::Suspended)
            && bg_status.job_status?.state == Some(FlinkJobState::Suspended);
        suspended.then_some(())
    })
    .await;
    assert_eq!(state_of(&bg.get().await).as_deref(), Some("ACTIVE_GREEN"));
    let suspended = bg.get().await;
    assert_eq!(
        condition(&suspended, "Ready"),
        Some(("False".into(), "Suspended".into()))
    );
    bg.patch_template(json!({"job": {"state": "running"}})).await;
    bg.ready_child("green", Some(&green_job)).await;
    let resumed_at = SystemTime::now();
    assert!(bg.child("blue").await.is_none(), "a resumption started blue");
    counts_went_on(&counts, &before, resumed_at, 0).await;
    assert_eq!(state_of(&bg.get().await).as_deref(), Some("ACTIVE_GREEN"));

    // The Ingress deleted by someone else comes back; spec.ingress removed, it goes.
    let uid = ingresses.get(NAME).await.unwrap().metadata.uid;
    ingresses.delete(NAME, &DeleteParams::default()).await.unwrap();
    wait_for("the Ingress recreated", Duration::from_secs(60), || async {
        let again = ingresses.get(NAME).await.ok()?;
        (again.metadata.uid != uid).then_some(())
    })
    .await;
    ingress_routes_to(&ingresses, "counter-green-rest").await;
    bg.patch(json!({"spec": {"ingress": null}})).await;
    wait_for("the Ingress deleted", Duration::from_secs(60), || async {
        ingresses.get_opt(NAME).await.ok()?.is_none().then_some(())
    })
    .await;

    bg.delete().await;
}

/// Waits until the Ingress `counter` routes to `service`; returns it.
async fn ingress_routes_to(ingresses: &Api<Ingress>, service: &str) -> Ingress {
    wait_for(
        &format!("the Ingress routing to {service}"),
        Duration::from_secs(60),
        || async {
            let ingress = ingresses.get(NAME).await.ok()?;
            let rule = ingress.spec.as_ref()?.rules.as_ref()?.first()?.clone();
            let backend = rule.http?.paths.first()?.backend.service.clone()?;
            (backend.name == service).then_some(ingress)
        },
    )
    .await
}

/// Flink 1.20, last-state mode (with HA, as last-state needs): a hand-over to green from a
/// savepoint (last-state takes one too: the new child is a new cluster), then a stateless
/// one that starts from nothing, then one to an image that cannot be pulled, aborted after
/// the grace period with the active child untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn last_state_and_stateless_hand_overs_and_one_that_cannot_start_is_aborted() {
    let client = harness::client().await;
    crate::operator::shared(&client).await;
    let _turn = cluster_harness::beside_others().await;
    let _operator_log = OperatorLogOnFailure;
    let version = flink_harness::versions().first().unwrap().clone();
    let ha = [
        ("high-availability.type", "kubernetes"),
        ("high-availability.storageDir", "file:///opt/flink/state/ha"),
    ];
    let bg = BlueGreen::create(&client, "bluegreen-last-state", &version, "last-state", &ha).await;
    let _logs = LogsOnFailure(bg.ns.name.clone());
    let counts = bg.counts("counts");

    bg.ready_child("blue", None).await;
    bg.reaches("ACTIVE_BLUE", Duration::from_secs(60)).await;
    let before = counted_to(&counts, 30).await;
    let hand_over = stateful_hand_over(&bg, "blue", "green", json!({"job": {"parallelism": 1}})).await;
    eprintln!("last-state hand-over on Flink {version}: {hand_over}");
    counts_went_on(&counts, &before, SystemTime::now(), 0).await;

    // Stateless: blue starts from nothing, writing its counts somewhere new.
    let before = flink_harness::read_counts(&counts);
    let fresh = bg.counts("counts-stateless");
    let mut args = bg.child("green").await.unwrap().spec.job.unwrap().args.unwrap();
    let out = args.iter().position(|a| a == "--out").unwrap() + 1;
    args[out] = "/opt/flink/state/counts-stateless".to_owned();
    let started = Instant::now();
    bg.patch_template(json!({"job": {"upgradeMode": "stateless", "parallelism": 2, "args": args}}))
        .await;
    let first = wait_for(
        "the stateless job's first counts",
        Duration::from_secs(240),
        || async {
            let c = flink_harness::read_counts(&fresh);
            (c.len() == 4).then_some(c)
        },
    )
    .await;
    for (key, count) in &first {
        assert!(
            count < &before[key],
            "key {key}: {count} at the stateless job's start, {} before: state was carried over",
            before[key]
        );
    }
    let active = bg.reaches("ACTIVE_BLUE", Duration::from_secs(240)).await;
    eprintln!("stateless hand-over on Flink {version}: {:?}", started.elapsed());
    assert_settled(&active);
    bg.child_gone("green").await;
    let blue = bg.child("blue").await.unwrap();
    assert_eq!(blue.spec.job.as_ref().unwrap().initial_savepoint_path, None);
    assert!(
        bg.restored("blue").await.is_none(),
        "the stateless job restored state"
    );
    let snapshots: Api<FlinkStateSnapshot> = Api::namespaced(client.clone(), &bg.ns.name);
    let green_savepoints = snapshots
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|s| {
            s.metadata
                .name
                .as_deref()
                .unwrap_or_default()
                .starts_with("counter-green-transition-")
        })
        .count();
    assert_eq!(green_savepoints, 0, "a stateless hand-over took a savepoint");

    // A template that cannot run: aborted after the grace period (shortened here, as an
    // owner may), blue untouched.
    bg.patch(
        json!({"spec": {"configuration": {"kubernetes.operator.bluegreen.abort.grace-period": "30 s"}}}),
    )
    .await;
    let blue_job = bg.job_id("blue").await;
    bg.patch_template(json!({"image": "flink:1.99"})).await;
    let aborting_from = Instant::now();
    bg.reaches("TRANSITIONING_TO_GREEN", Duration::from_secs(30))
        .await;
    let aborted = wait_for("the transition aborted", Duration::from_secs(120), || async {
        let bg = bg.api.get(NAME).await.ok()?;
        let aborted = state_of(&bg).as_deref() == Some("ACTIVE_BLUE") && bg.status.as_ref()?.error.is_some();
        aborted.then_some(bg)
    })
    .await;
    let took = aborting_from.elapsed();
    eprintln!("abort after {took:?}");
    assert!(
        took >= Duration::from_secs(25),
        "aborted after {took:?}, before the grace period"
    );
    let error = aborted.status.as_ref().unwrap().error.clone().unwrap();
    assert!(error.contains("Transition aborted"), "{error}");
    assert_settled(&aborted);
    assert_eq!(condition(&aborted, "Degraded").map(|c| c.0), Some("True".into()));
    // Green never ran a job: it is deleted (one that ran would be kept, suspended).
    wait_for("green deleted or suspended", Duration::from_secs(120), || async {
        match bg.children.get_opt(&child("green")).await.ok()? {
            None => Some(()),
            Some(fd) => (fd.spec.job?.state.map(|s| s.as_str()) == Some("suspended")).then_some(()),
        }
    })
    .await;
    let blue_now = bg.child("blue").await.unwrap();
    assert_eq!(blue_now.spec, blue.spec, "the aborted transition changed blue");
    assert_eq!(bg.job_id("blue").await, blue_job);
    let at_abort: BTreeMap<u32, u64> = flink_harness::read_counts(&fresh);
    counts_went_on(&fresh, &at_abort, SystemTime::now(), 0).await;
    assert!(
        bg.event_reasons()
            .await
            .iter()
            .any(|r| r == "BlueGreenTransitionAborted"),
        "no abort Event"
    );
    let metrics = crate::operator::probe_get("/metrics");
    let aborts = metrics
        .lines()
        .find_map(|l| l.strip_prefix("flink_operator_bluegreen_aborts_total "))
        .and_then(|n| n.trim().parse::<u64>().ok());
    assert!(aborts >= Some(1), "no abort counted:\n{metrics}");

    // Deleting the resource removes every child.
    bg.delete().await;
}
