//! Operator-managed webhook certificates (`--manage-webhook-certs`): a CA and serving
//! certificate kept in a Secret, served from files, and the CA written as `caBundle` into
//! the webhook configurations, so that no cert-manager is needed.
//!
//! Every replica runs this. The first one to start creates the Secret; the others (and
//! restarts) read it, so all replicas serve the same certificate. The caBundle is kept
//! right by a watch: a `helm upgrade` that renders the configurations without it is
//! repaired within a watch event.

use std::{
    collections::BTreeMap,
    net::IpAddr,
    path::PathBuf,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use flink_operator_certs::{CertPaths, GeneratedCerts};
use futures::StreamExt;
use k8s_openapi::{
    ByteString,
    api::{
        admissionregistration::v1::{MutatingWebhookConfiguration, ValidatingWebhookConfiguration},
        core::v1::Secret,
    },
};
use kube::{
    Api, Client, Resource,
    api::{ObjectMeta, PostParams},
    runtime::{WatchStreamExt, watcher},
};
use serde::{Serialize, de::DeserializeOwned};

/// Annotation on the Secret: when its serving certificate expires (seconds since the epoch).
const EXPIRES_ANNOTATION: &str = "flink-operator.flink.apache.org/serving-cert-expires";

/// Annotation on the Secret: the subject names its serving certificate was issued for, so
/// that a changed Service name or extra name leads to a new certificate.
const NAMES_ANNOTATION: &str = "flink-operator.flink.apache.org/serving-cert-names";

/// A certificate this close to expiry is replaced at start.
const RENEW_BEFORE: Duration = Duration::from_secs(30 * 24 * 60 * 60);

/// Where the managed certificate lives and whom it serves.
#[derive(Clone, Debug)]
pub struct ManagedCertsConfig {
    /// Namespace of the operator (of the Secret and the Service).
    pub namespace: String,
    /// Name of the webhook's Service: the certificate's DNS names derive from it.
    pub service: String,
    /// Name of the Secret holding ca.crt, tls.crt and tls.key.
    pub secret: String,
    /// Name of both the Validating- and the MutatingWebhookConfiguration.
    pub configuration: String,
    /// Directory the files are written to and served from.
    pub dir: PathBuf,
    /// Additional subject names: DNS names or IP addresses.
    pub extra_sans: Vec<String>,
}

impl ManagedCertsConfig {
    /// The subject names as recorded on the Secret.
    fn names_annotation(&self) -> String {
        let (dns, ips) = self.subject_names();
        let mut names: Vec<String> = dns
            .into_iter()
            .chain(ips.iter().map(ToString::to_string))
            .collect();
        names.sort();
        names.join(",")
    }

    /// The certificate's DNS names and IP addresses.
    fn subject_names(&self) -> (Vec<String>, Vec<IpAddr>) {
        let (svc, ns) = (&self.service, &self.namespace);
        let mut dns = vec![
            svc.clone(),
            format!("{svc}.{ns}"),
            format!("{svc}.{ns}.svc"),
            format!("{svc}.{ns}.svc.cluster.local"),
        ];
        let mut ips = Vec::new();
        for name in &self.extra_sans {
            match name.parse::<IpAddr>() {
                Ok(ip) => ips.push(ip),
                Err(_) => dns.push(name.clone()),
            }
        }
        (dns, ips)
    }
}

/// Why the managed certificate could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ManagedCertsError {
    /// The Kubernetes API refused or failed a request.
    #[error("{action}: {source}")]
    Api {
        /// What was being done.
        action: String,
        /// The client error.
        #[source]
        source: Box<kube::Error>,
    },
    /// The certificate could not be generated or written.
    #[error(transparent)]
    Certs(#[from] flink_operator_certs::CertsError),
}

fn api_error(action: impl Into<String>) -> impl FnOnce(kube::Error) -> ManagedCertsError {
    let action = action.into();
    move |source| ManagedCertsError::Api {
        action,
        source: Box::new(source),
    }
}

/// Reads or creates the Secret, writes its files into the directory and returns their
/// paths and the CA (for the caBundle).
pub async fn ensure_secret(
    client: &Client,
    config: &ManagedCertsConfig,
) -> Result<(CertPaths, String), ManagedCertsError> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &config.namespace);
    let name = &config.secret;
    let existing = secrets
        .get_opt(name)
        .await
        .map_err(api_error(format!("reading Secret {}/{name}", config.namespace)))?;
    let generated = match existing.as_ref().and_then(|s| usable_certs(s, config)) {
        Some(certs) => {
            tracing::info!(secret = %name, "using the webhook certificate from the Secret");
            certs
        }
        None => {
            let (dns, ips) = config.subject_names();
            let certs = flink_operator_certs::generate_self_signed(&dns, &ips)?;
            let secret = secret_for(config, &certs);
            let stored = match existing {
                None => match secrets.create(&PostParams::default(), &secret).await {
                    Ok(_) => certs,
                    // Another replica created it between our read and our create: use theirs.
                    Err(kube::Error::Api(status)) if status.code == 409 => {
                        let theirs = secrets
                            .get(name)
                            .await
                            .map_err(api_error(format!("reading Secret {name}")))?;
                        usable_certs(&theirs, config).unwrap_or(certs)
                    }
                    Err(e) => {
                        return Err(api_error(format!("creating Secret {}/{name}", config.namespace))(
                            e,
                        ));
                    }
                },
                Some(mut old) => {
                    old.data = secret.data;
                    old.metadata.annotations = secret.metadata.annotations;
                    secrets
                        .replace(name, &PostParams::default(), &old)
                        .await
                        .map_err(api_error(format!("renewing Secret {}/{name}", config.namespace)))?;
                    certs
                }
            };
            tracing::info!(secret = %name, "generated a new webhook CA and serving certificate");
            stored
        }
    };
    generated.write_to_dir(&config.dir)?;
    Ok((CertPaths::in_dir(&config.dir), generated.ca_pem))
}

/// The certificates of a Secret, unless missing, incomplete, issued for other names, or
/// near expiry.
fn usable_certs(secret: &Secret, config: &ManagedCertsConfig) -> Option<GeneratedCerts> {
    let data = secret.data.as_ref()?;
    let text = |key: &str| {
        data.get(key)
            .and_then(|b| String::from_utf8(b.0.clone()).ok())
            .filter(|s| !s.is_empty())
    };
    let annotations = secret.metadata.annotations.as_ref()?;
    if annotations.get(NAMES_ANNOTATION) != Some(&config.names_annotation()) {
        tracing::info!("the webhook serving certificate was issued for other names; replacing it");
        return None;
    }
    let expires: u64 = annotations.get(EXPIRES_ANNOTATION)?.parse().ok()?;
    let now = SystemTime::now().duration_since(UNIX_EPOCH).ok()?.as_secs();
    if expires.saturating_sub(now) < RENEW_BEFORE.as_secs() {
        tracing::info!("the webhook serving certificate expires within 30 days; renewing it");
        return None;
    }
    Some(GeneratedCerts {
        ca_pem: text("ca.crt")?,
        cert_pem: text("tls.crt")?,
        key_pem: text("tls.key")?,
    })
}

fn secret_for(config: &ManagedCertsConfig, certs: &GeneratedCerts) -> Secret {
    let expires = SystemTime::now()
        .checked_add(flink_operator_certs::SERVING_VALIDITY)
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs());
    let bytes = |s: &str| ByteString(s.as_bytes().to_vec());
    Secret {
        metadata: ObjectMeta {
            name: Some(config.secret.clone()),
            namespace: Some(config.namespace.clone()),
            labels: Some(BTreeMap::from([(
                "app.kubernetes.io/managed-by".to_owned(),
                "flink-operator".to_owned(),
            )])),
            annotations: Some(BTreeMap::from([
                (EXPIRES_ANNOTATION.to_owned(), expires.to_string()),
                (NAMES_ANNOTATION.to_owned(), config.names_annotation()),
            ])),
            ..Default::default()
        },
        type_: Some("kubernetes.io/tls".to_owned()),
        data: Some(BTreeMap::from([
            ("ca.crt".to_owned(), bytes(&certs.ca_pem)),
            ("tls.crt".to_owned(), bytes(&certs.cert_pem)),
            ("tls.key".to_owned(), bytes(&certs.key_pem)),
        ])),
        ..Default::default()
    }
}

/// A webhook configuration kind whose webhooks carry a `clientConfig.caBundle`.
trait WithCaBundle:
    Resource<DynamicType = ()> + Clone + std::fmt::Debug + Serialize + DeserializeOwned + Send + Sync + 'static
{
    /// Sets `ca` on every webhook; true when something changed.
    fn set_ca_bundle(&mut self, ca: &ByteString) -> bool;
}

/// Both kinds keep their webhooks in `webhooks`, each with a `clientConfig`, but as
/// different types; one body serves both.
macro_rules! with_ca_bundle {
    ($($kind:ty),+) => {$(
        impl WithCaBundle for $kind {
            fn set_ca_bundle(&mut self, ca: &ByteString) -> bool {
                let mut changed = false;
                for webhook in self.webhooks.iter_mut().flatten() {
                    if webhook.client_config.ca_bundle.as_ref() != Some(ca) {
                        webhook.client_config.ca_bundle = Some(ca.clone());
                        changed = true;
                    }
                }
                changed
            }
        }
    )+};
}

with_ca_bundle!(ValidatingWebhookConfiguration, MutatingWebhookConfiguration);

/// Writes `ca` into both webhook configurations now (those that exist), then keeps it
/// there until the process stops.
pub async fn keep_ca_bundle(client: Client, config: ManagedCertsConfig, ca_pem: String) {
    let ca = ByteString(ca_pem.into_bytes());
    futures::join!(
        keep::<ValidatingWebhookConfiguration>(client.clone(), config.configuration.clone(), ca.clone()),
        keep::<MutatingWebhookConfiguration>(client, config.configuration, ca),
    );
}

async fn keep<K: WithCaBundle>(client: Client, name: String, ca: ByteString) {
    let api: Api<K> = Api::all(client);
    let kind = K::kind(&());
    let selector = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let mut events = std::pin::pin!(watcher(api.clone(), selector).default_backoff().applied_objects());
    while let Some(event) = events.next().await {
        match event {
            Ok(mut object) => {
                if !object.set_ca_bundle(&ca) {
                    continue;
                }
                // A replace carries the resourceVersion just read: a concurrent change
                // makes it fail with a conflict, and the watch brings the newer object.
                match api.replace(&name, &PostParams::default(), &object).await {
                    Ok(_) => tracing::info!(%kind, %name, "wrote the webhook CA into caBundle"),
                    Err(error) => {
                        tracing::warn!(%kind, %name, %error, "could not write caBundle; retrying on the next change")
                    }
                }
            }
            Err(error) => {
                tracing::warn!(%kind, %name, %error, "watching the webhook configuration failed; retrying")
            }
        }
    }
}
