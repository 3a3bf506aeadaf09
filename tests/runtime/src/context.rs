//! What every part of the runtime shares.

use std::{path::PathBuf, sync::Arc, time::Duration};

use k8s_openapi::api::core::v1::ObjectReference;
use kube::{
    Client,
    runtime::events::{Event, EventType, Recorder},
};

use crate::{container::Tools, hosts::HostsFiles, images::Catalog, network::Network};

pub struct Context {
    pub client: Client,
    pub node_name: String,
    pub network: Arc<Network>,
    pub hosts: HostsFiles,
    pub catalog: Catalog,
    pub tools: Arc<Tools>,
    /// Per-pod folders live under `<state_dir>/pods`.
    pub state_dir: PathBuf,
    /// The stand-in for the image's /docker-entrypoint.sh.
    pub entrypoint: PathBuf,
    pub java_home: String,
    pub http: reqwest::Client,
    pub recorder: Recorder,
    /// The longest a process gets to stop when the runtime itself stops.
    pub shutdown_grace: Duration,
}

impl Context {
    /// Publishes an Event about `object`; failures are logged, never fatal.
    pub async fn event(&self, object: &ObjectReference, warning: bool, reason: &str, note: String) {
        let event = Event {
            type_: if warning {
                EventType::Warning
            } else {
                EventType::Normal
            },
            reason: reason.to_owned(),
            note: Some(note.chars().take(1000).collect()),
            action: reason.to_owned(),
            secondary: None,
        };
        if let Err(e) = self.recorder.publish(&event, object).await {
            tracing::debug!(error = %e, reason, "could not publish an Event");
        }
    }

    pub fn host_ip(&self) -> String {
        self.network.cidr().gateway().to_string()
    }
}
