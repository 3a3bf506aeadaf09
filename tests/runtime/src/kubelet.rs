//! The watch loops: binding pending pods to the node (the scheduler's part, which also
//! waits for their PersistentVolumeClaims as kube-scheduler does), running the
//! node's pods (the kubelet's part), and following EndpointSlices for the hosts files.

use std::{
    collections::{HashMap, HashSet},
    sync::Arc,
    time::Duration,
};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::{
    api::{
        core::v1::{Binding, ObjectReference, Pod},
        discovery::v1::EndpointSlice,
    },
    jiff::Timestamp,
};
use kube::{
    Api, Resource, ResourceExt,
    api::{ObjectMeta, Patch, PatchParams, PostParams},
    runtime::{
        WatchStreamExt,
        watcher::{self, Event},
    },
};
use serde_json::json;
use tokio::sync::{mpsc, oneshot};

use crate::{
    context::Context,
    pod::{self, Message},
    storage,
};

/// How often a pod that its claims hold back is looked at again.
const SCHEDULE_RETRY: Duration = Duration::from_secs(1);

/// Binds every unscheduled pod to the node: there is only one. A pod whose claims hold it
/// back (see `storage::check_claims`) is reported unschedulable and looked at again each
/// second.
pub async fn schedule(ctx: Arc<Context>) {
    let api: Api<Pod> = Api::all(ctx.client.clone());
    let config = watcher::Config::default().fields("spec.nodeName=");
    let mut pods = watcher::watcher(api, config).default_backoff().boxed();
    // The pods held back, by UID, with the reason last reported.
    let mut held: HashMap<String, (Pod, String)> = HashMap::new();
    let mut retry = tokio::time::interval(SCHEDULE_RETRY);
    loop {
        tokio::select! {
            event = pods.try_next() => match event {
                Ok(Some(Event::Apply(pod) | Event::InitApply(pod))) => {
                    let uid = pod.uid().unwrap_or_default();
                    let reported = held.remove(&uid).map(|(_, reason)| reason);
                    if let Some(reason) = schedule_pod(&ctx, &pod, reported).await {
                        held.insert(uid, (pod, reason));
                    }
                }
                Ok(Some(Event::Delete(pod))) => {
                    held.remove(&pod.uid().unwrap_or_default());
                }
                Ok(Some(Event::Init)) => held.clear(),
                Ok(Some(Event::InitDone)) => {}
                Ok(None) => return,
                Err(e) => tracing::warn!(error = %e, "watching unscheduled pods"),
            },
            _ = retry.tick(), if !held.is_empty() => {
                for (uid, (pod, reported)) in std::mem::take(&mut held) {
                    if let Some(reason) = schedule_pod(&ctx, &pod, Some(reported)).await {
                        held.insert(uid, (pod, reason));
                    }
                }
            }
        }
    }
}

/// Binds `pod` if its claims allow; otherwise returns why not, after reporting it on the pod
/// unless `reported` already says so.
async fn schedule_pod(ctx: &Context, pod: &Pod, reported: Option<String>) -> Option<String> {
    if pod.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let scheduler = pod
        .spec
        .as_ref()
        .and_then(|s| s.scheduler_name.as_deref())
        .unwrap_or("default-scheduler");
    if scheduler != "default-scheduler" {
        return None;
    }
    match storage::check_claims(ctx, pod).await {
        Ok(()) => {
            bind(ctx, pod).await;
            None
        }
        Err(reason) => {
            if reported.as_ref() != Some(&reason) {
                unschedulable(ctx, pod, &reason).await;
            }
            Some(reason)
        }
    }
}

/// kube-scheduler's report of a pod that fits no node: the PodScheduled condition and a
/// FailedScheduling Event.
async fn unschedulable(ctx: &Context, pod: &Pod, reason: &str) {
    let message = format!("0/1 nodes are available: {reason}.");
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), &pod.namespace().unwrap_or_default());
    let status = json!({"status": {"conditions": [{
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": message,
        "lastProbeTime": null,
        "lastTransitionTime": Timestamp::now().to_string(),
    }]}});
    if let Err(e) = api
        .patch_status(
            &pod.name_any(),
            &PatchParams::default(),
            &Patch::Strategic(status),
        )
        .await
    {
        tracing::debug!(error = %e, pod = %pod.name_any(), "reporting an unschedulable pod");
    }
    ctx.event(&pod.object_ref(&()), true, "FailedScheduling", message)
        .await;
}

async fn bind(ctx: &Context, pod: &Pod) {
    let namespace = pod.namespace().unwrap_or_default();
    let binding = Binding {
        metadata: ObjectMeta {
            name: Some(pod.name_any()),
            namespace: Some(namespace.clone()),
            ..Default::default()
        },
        target: ObjectReference {
            kind: Some("Node".to_owned()),
            name: Some(ctx.node_name.clone()),
            ..Default::default()
        },
    };
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
    match api
        .create_subresource::<Binding, serde_json::Value>(
            "binding",
            &pod.name_any(),
            &PostParams::default(),
            &binding,
        )
        .await
    {
        Ok(_) => {
            let note = format!(
                "Successfully assigned {namespace}/{} to {}",
                pod.name_any(),
                ctx.node_name
            );
            ctx.event(&pod.object_ref(&()), false, "Scheduled", note).await;
        }
        Err(e) => tracing::debug!(error = %e, pod = %pod.name_any(), "binding"),
    }
}

/// Runs the node's pods: one worker per pod UID. Returns when `stop` fires, after every
/// worker has stopped its processes.
pub async fn run_pods(ctx: Arc<Context>, mut stop: oneshot::Receiver<()>) {
    let api: Api<Pod> = Api::all(ctx.client.clone());
    let config = watcher::Config::default().fields(&format!("spec.nodeName={}", ctx.node_name));
    let mut events = watcher::watcher(api, config).default_backoff().boxed();
    let mut workers: HashMap<String, mpsc::UnboundedSender<Message>> = HashMap::new();
    let mut listed: HashSet<String> = HashSet::new();
    loop {
        let event = tokio::select! {
            _ = &mut stop => break,
            event = events.try_next() => event,
        };
        let event = match event {
            Ok(Some(event)) => event,
            Ok(None) => break,
            Err(e) => {
                tracing::warn!(error = %e, "watching the node's pods");
                continue;
            }
        };
        match event {
            Event::Init => listed.clear(),
            Event::InitApply(pod) => {
                listed.insert(pod.uid().unwrap_or_default());
                apply(&ctx, &mut workers, pod);
            }
            Event::InitDone => {
                // A pod that disappeared while the watch was down.
                let gone: Vec<String> = workers
                    .keys()
                    .filter(|uid| !listed.contains(*uid))
                    .cloned()
                    .collect();
                for uid in gone {
                    if let Some(worker) = workers.remove(&uid) {
                        let _ = worker.send(Message::Gone);
                    }
                }
            }
            Event::Apply(pod) => apply(&ctx, &mut workers, pod),
            Event::Delete(pod) => {
                if let Some(worker) = workers.remove(&pod.uid().unwrap_or_default()) {
                    let _ = worker.send(Message::Gone);
                }
            }
        }
    }
    let mut stopped = Vec::new();
    for (_, worker) in workers.drain() {
        let (done, wait) = oneshot::channel();
        if worker.send(Message::Shutdown(done)).is_ok() {
            stopped.push(wait);
        }
    }
    futures::future::join_all(stopped).await;
}

fn apply(ctx: &Arc<Context>, workers: &mut HashMap<String, mpsc::UnboundedSender<Message>>, pod: Pod) {
    let uid = pod.uid().unwrap_or_default();
    if let Some(worker) = workers.get(&uid) {
        if worker.send(Message::Updated(Box::new(pod))).is_ok() {
            return;
        }
        // The worker finished (it deleted the pod); the pod's last updates need nothing.
        return;
    }
    let phase = pod
        .status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or_default();
    if matches!(phase, "Succeeded" | "Failed") && pod.metadata.deletion_timestamp.is_none() {
        // Finished before this runtime started: nothing to run.
        return;
    }
    workers.insert(uid, pod::spawn(ctx.clone(), pod));
}

/// Keeps the hosts files in step with the cluster's EndpointSlices.
pub async fn follow_endpoints(ctx: Arc<Context>) {
    let api: Api<EndpointSlice> = Api::all(ctx.client.clone());
    let mut events = watcher::watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    // The slices a relist has listed so far: a slice deleted while the watch was down is
    // in none of them, and goes when the relist is done (else its Service would keep
    // resolving to the addresses of pods that are gone).
    let mut relisted: Option<std::collections::BTreeSet<(String, String)>> = None;
    loop {
        match events.try_next().await {
            Ok(Some(Event::Init)) => relisted = Some(Default::default()),
            Ok(Some(Event::InitApply(slice))) => {
                if let Some(listed) = relisted.as_mut() {
                    listed.insert((slice.namespace().unwrap_or_default(), slice.name_any()));
                }
                ctx.hosts.update(|t| t.apply_slice(&slice))
            }
            Ok(Some(Event::InitDone)) => {
                if let Some(listed) = relisted.take() {
                    ctx.hosts.update(|t| t.retain_slices(&listed))
                }
            }
            Ok(Some(Event::Apply(slice))) => ctx.hosts.update(|t| t.apply_slice(&slice)),
            Ok(Some(Event::Delete(slice))) => ctx
                .hosts
                .update(|t| t.remove_slice(&slice.namespace().unwrap_or_default(), &slice.name_any())),
            Ok(None) => return,
            Err(e) => tracing::warn!(error = %e, "watching EndpointSlices"),
        }
    }
}
