//! A pod's volumes as host directories, bind-mounted into its containers.
//!
//! ConfigMap, Secret, projected (service account token, ConfigMap, Secret, downward API),
//! downwardAPI, emptyDir and hostPath volumes are supported; the files are written once when
//! the pod starts (later ConfigMap edits are not synced, unlike a kubelet).
//! persistentVolumeClaim and ephemeral volumes mount the directory of the bound
//! PersistentVolume (see `storage.rs`); while a claim is missing or unbound the pod waits.
//! Any other volume type is an error that names it, reported in the pod's status.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
};

use k8s_openapi::api::{
    authentication::v1::{BoundObjectReference, TokenRequest, TokenRequestSpec},
    core::v1::{DownwardAPIVolumeFile, KeyToPath, Pod, ServiceAccount, Volume},
};
use kube::{Api, Client, api::PostParams};

use crate::{
    spec::{PodAddresses, Sources, field_value, resource_value},
    storage,
};

/// Where each volume of the pod lives on the host.
#[derive(Debug, Default, Clone)]
pub struct Volumes {
    pub paths: BTreeMap<String, PathBuf>,
    /// Volumes mounted read-only whatever their volumeMounts say (a claim's `readOnly`).
    pub read_only: BTreeSet<String>,
}

/// Writes every volume of `pod` under `dir` (hostPath volumes stay where they are).
pub async fn materialize(
    client: &Client,
    pod: &Pod,
    dir: &Path,
    sources: &Sources,
    addresses: &PodAddresses,
) -> Result<Volumes, String> {
    let mut volumes = Volumes::default();
    let Some(spec) = &pod.spec else {
        return Ok(volumes);
    };
    // Claims first: while one is not bound the pod waits, and nothing else is written yet.
    for volume in spec.volumes.iter().flatten() {
        if storage::claim_name(pod, volume).is_none() {
            continue;
        }
        let path = storage::claim_path(client, pod, volume)
            .await
            .map_err(|e| format!("volume {:?}: {e}", volume.name))?;
        volumes.paths.insert(volume.name.clone(), path);
        if storage::claim_read_only(volume) {
            volumes.read_only.insert(volume.name.clone());
        }
    }
    for volume in spec.volumes.iter().flatten() {
        if volumes.paths.contains_key(&volume.name) {
            continue;
        }
        let target = dir.join(&volume.name);
        let path = write_volume(client, pod, volume, &target, sources, addresses)
            .await
            .map_err(|e| format!("volume {:?}: {e}", volume.name))?;
        volumes.paths.insert(volume.name.clone(), path);
    }
    Ok(volumes)
}

async fn write_volume(
    client: &Client,
    pod: &Pod,
    volume: &Volume,
    target: &Path,
    sources: &Sources,
    addresses: &PodAddresses,
) -> Result<PathBuf, String> {
    let io = |e: std::io::Error| e.to_string();
    if let Some(host_path) = &volume.host_path {
        let path = PathBuf::from(&host_path.path);
        match host_path.type_.as_deref().unwrap_or_default() {
            "DirectoryOrCreate" => std::fs::create_dir_all(&path).map_err(io)?,
            "Directory" if !path.is_dir() => {
                return Err(format!("hostPath {:?} is not a directory", host_path.path));
            }
            "File" if !path.is_file() => return Err(format!("hostPath {:?} is not a file", host_path.path)),
            "FileOrCreate" if !path.exists() => {
                std::fs::write(&path, b"").map_err(io)?;
            }
            _ => {}
        }
        return Ok(path);
    }
    std::fs::create_dir_all(target).map_err(io)?;
    if volume.empty_dir.is_some() {
        return Ok(target.to_owned());
    }
    if let Some(cm) = &volume.config_map {
        let data = sources.config_maps.get(&cm.name);
        write_keys(
            target,
            data,
            cm.items.as_deref(),
            cm.optional,
            &format!("ConfigMap {:?}", cm.name),
        )?;
        return Ok(target.to_owned());
    }
    if let Some(secret) = &volume.secret {
        let name = secret.secret_name.clone().unwrap_or_default();
        let data = sources.secrets.get(&name);
        write_keys(
            target,
            data,
            secret.items.as_deref(),
            secret.optional,
            &format!("Secret {name:?}"),
        )?;
        return Ok(target.to_owned());
    }
    if let Some(downward) = &volume.downward_api {
        write_downward(
            target,
            pod,
            addresses,
            downward.items.as_deref().unwrap_or_default(),
        )?;
        return Ok(target.to_owned());
    }
    if let Some(projected) = &volume.projected {
        for source in projected.sources.iter().flatten() {
            if let Some(token) = &source.service_account_token {
                let value =
                    request_token(client, pod, token.audience.clone(), token.expiration_seconds).await?;
                write_file(&target.join(&token.path), value.as_bytes())?;
            }
            if let Some(cm) = &source.config_map {
                let data = sources.config_maps.get(&cm.name);
                write_keys(
                    target,
                    data,
                    cm.items.as_deref(),
                    cm.optional,
                    &format!("ConfigMap {:?}", cm.name),
                )?;
            }
            if let Some(secret) = &source.secret {
                let data = sources.secrets.get(&secret.name);
                write_keys(
                    target,
                    data,
                    secret.items.as_deref(),
                    secret.optional,
                    &format!("Secret {:?}", secret.name),
                )?;
            }
            if let Some(downward) = &source.downward_api {
                write_downward(
                    target,
                    pod,
                    addresses,
                    downward.items.as_deref().unwrap_or_default(),
                )?;
            }
            if source.cluster_trust_bundle.is_some() || source.pod_certificate.is_some() {
                return Err(
                    "projected clusterTrustBundle and podCertificate sources are not supported".to_owned(),
                );
            }
        }
        return Ok(target.to_owned());
    }
    let kind = serde_json::to_value(volume)
        .ok()
        .and_then(|v| {
            v.as_object().map(|o| {
                o.keys()
                    .filter(|k| *k != "name")
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(",")
            })
        })
        .unwrap_or_default();
    Err(format!(
        "volume type {kind:?} is not supported by the local runtime"
    ))
}

/// A service account token bound to the pod, as the kubelet requests it.
async fn request_token(
    client: &Client,
    pod: &Pod,
    audience: Option<String>,
    expiration: Option<i64>,
) -> Result<String, String> {
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    let account = pod
        .spec
        .as_ref()
        .and_then(|s| s.service_account_name.clone())
        .unwrap_or_else(|| "default".to_owned());
    let request = TokenRequest {
        spec: Some(TokenRequestSpec {
            audiences: audience.map(|a| vec![a]),
            expiration_seconds: Some(expiration.unwrap_or(3607)),
            bound_object_ref: Some(BoundObjectReference {
                api_version: Some("v1".to_owned()),
                kind: Some("Pod".to_owned()),
                name: pod.metadata.name.clone(),
                uid: pod.metadata.uid.clone(),
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    let api: Api<ServiceAccount> = Api::namespaced(client.clone(), &namespace);
    let response = api
        .create_token_request(&account, &PostParams::default(), &request)
        .await
        .map_err(|e| format!("token for service account {account:?}: {e}"))?;
    response
        .status
        .and_then(|s| s.token)
        .ok_or_else(|| format!("token request for service account {account:?} returned no token"))
}

fn write_keys(
    dir: &Path,
    data: Option<&BTreeMap<String, Vec<u8>>>,
    items: Option<&[KeyToPath]>,
    optional: Option<bool>,
    what: &str,
) -> Result<(), String> {
    let Some(data) = data else {
        if optional == Some(true) {
            return Ok(());
        }
        return Err(format!("{what} not found"));
    };
    match items {
        Some(items) if !items.is_empty() => {
            for item in items {
                match data.get(&item.key) {
                    Some(value) => write_file(&dir.join(&item.path), value)?,
                    None if optional == Some(true) => {}
                    None => return Err(format!("key {:?} of {what} not found", item.key)),
                }
            }
        }
        _ => {
            for (key, value) in data {
                write_file(&dir.join(key), value)?;
            }
        }
    }
    Ok(())
}

fn write_downward(
    dir: &Path,
    pod: &Pod,
    addresses: &PodAddresses,
    items: &[DownwardAPIVolumeFile],
) -> Result<(), String> {
    for item in items {
        let value = if let Some(field) = &item.field_ref {
            field_value(pod, addresses, &field.field_path)?
        } else if let Some(resource) = &item.resource_field_ref {
            let container = pod.spec.as_ref().and_then(|s| {
                s.containers
                    .iter()
                    .find(|c| Some(&c.name) == resource.container_name.as_ref())
            });
            resource_value(
                container.and_then(|c| c.resources.as_ref()),
                &resource.resource,
                resource.divisor.as_ref().map(|q| q.0.as_str()),
            )?
        } else {
            return Err(format!("downwardAPI item {:?} has no source", item.path));
        };
        write_file(&dir.join(&item.path), value.as_bytes())?;
    }
    Ok(())
}

fn write_file(path: &Path, content: &[u8]) -> Result<(), String> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    std::fs::write(path, content).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_written_by_items_or_all() {
        let dir = std::env::temp_dir().join(format!("volumes-test-{}", std::process::id()));
        let data: BTreeMap<String, Vec<u8>> = [
            ("config.yaml".to_owned(), b"a: 1".to_vec()),
            ("log4j-console.properties".to_owned(), b"x".to_vec()),
        ]
        .into();
        let items = [KeyToPath {
            key: "config.yaml".into(),
            path: "sub/flink.yaml".into(),
            ..Default::default()
        }];
        write_keys(&dir.join("a"), Some(&data), Some(&items), None, "ConfigMap \"c\"").unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.join("a/sub/flink.yaml")).unwrap(),
            "a: 1"
        );
        assert!(!dir.join("a/log4j-console.properties").exists());
        write_keys(&dir.join("b"), Some(&data), None, None, "ConfigMap \"c\"").unwrap();
        assert!(dir.join("b/log4j-console.properties").exists());
        let missing = [KeyToPath {
            key: "nope".into(),
            path: "nope".into(),
            ..Default::default()
        }];
        let error = write_keys(
            &dir.join("c"),
            Some(&data),
            Some(&missing),
            None,
            "ConfigMap \"c\"",
        )
        .unwrap_err();
        assert_eq!(error, "key \"nope\" of ConfigMap \"c\" not found");
        assert_eq!(
            write_keys(&dir.join("d"), None, None, None, "Secret \"s\"").unwrap_err(),
            "Secret \"s\" not found"
        );
        write_keys(&dir.join("e"), None, None, Some(true), "Secret \"s\"").unwrap();
        std::fs::remove_dir_all(dir).unwrap();
    }
}
