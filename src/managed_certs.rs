//! Operator-managed webhook certificates (`--manage-webhook-certs`): a CA and serving
//! certificate kept in a Secret, served from files, and the CA written as `caBundle` into
//! the webhook configurations, so that no cert-manager is needed.
//!
//! Every replica runs this. The first one to start creates the Secret; the others (and
//! restarts) read it, so all replicas serve the same certificate. The caBundle is kept
//! right by a watch: a `helm upgrade` that renders the configurations without it is
//! repaired within a watch event.
//!
//! # Renewal while running
//!
//! Each serving certificate comes with a CA of its own whose private key is thrown away
//! once it has signed: no CA key is ever stored, so reading the Secret lets one impersonate
//! the webhook until its certificate expires, but never mint a certificate that outlives it.
//! Renewing therefore means a new CA too, and the API server must trust that CA before it is
//! shown a certificate signed by it. So a renewal rolls the CA over with an overlap, in three
//! steps, each a conditional write of the Secret (by its resourceVersion):
//!
//! 1. **stage**: at `--webhook-cert-renew-fraction` of the serving certificate's life, a new
//!    CA and certificate are issued. The new CA joins the bundle (`ca.crt` now holds the old
//!    and the new CA) and the new certificate waits beside the served one (`next.crt`,
//!    `next.key`). Every replica writes the bundle into both webhook configurations.
//! 2. **promote**: once both configurations carry the bundle, and have carried it for
//!    [`SETTLE`] (so that every API server's informer has it), the staged certificate becomes
//!    the served one. Replicas see the Secret change through their watch, write the files, and
//!    the reloading resolver serves them to new handshakes. Both certificates are trusted
//!    meanwhile, so a replica that is a little late does no harm.
//! 3. **retire**: when the previous certificate expires, its CA leaves the bundle. No replica
//!    can be serving that certificate usefully any more, so dropping its CA cannot turn a
//!    working handshake into a failed one.
//!
//! The alternative, keeping the CA key in the Secret and re-issuing only the serving
//! certificate, would spare the overlap for ordinary renewals, but the CA itself must be
//! renewed one day, which needs this same overlap; one mechanism, exercised at every
//! renewal, is the one that is known to work when it is needed.
//!
//! Only one replica wins each write; the others get a conflict, adopt the winner's Secret
//! from their watch, and go on from there. The decisions (what to do next, what the Secret
//! looks like after it) are pure functions of the stored state and the clock, below; the
//! I/O around them is idempotent, so a crash between two steps resumes from the Secret.

use std::{
    collections::BTreeMap,
    net::IpAddr,
    path::{Path, PathBuf},
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
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
use tokio::sync::watch;

/// Annotation on the Secret: when its serving certificate expires (seconds since the epoch).
const EXPIRES_ANNOTATION: &str = "flink-operator.flink.apache.org/serving-cert-expires";

/// Annotation on the Secret: when its serving certificate was issued (seconds since the
/// epoch); with the expiry it gives the certificate's life, of which the renewal point is a
/// fraction.
const ISSUED_ANNOTATION: &str = "flink-operator.flink.apache.org/serving-cert-issued";

/// Annotation on the Secret: the subject names its serving certificate was issued for, so
/// that a changed Service name or extra name leads to a new certificate.
const NAMES_ANNOTATION: &str = "flink-operator.flink.apache.org/serving-cert-names";

/// Annotations on the Secret: issue and expiry time of the staged certificate.
const NEXT_ISSUED_ANNOTATION: &str = "flink-operator.flink.apache.org/next-cert-issued";
const NEXT_EXPIRES_ANNOTATION: &str = "flink-operator.flink.apache.org/next-cert-expires";

/// Annotation on the Secret: when the CAs of earlier certificates leave the bundle (the
/// expiry of the certificate served before the last promotion).
const RETIRE_ANNOTATION: &str = "flink-operator.flink.apache.org/previous-ca-retire-at";

/// Annotation on the Secret and on the webhook configurations: the generation of the CA
/// bundle, raised at each change of it.
const GENERATION_ANNOTATION: &str = "flink-operator.flink.apache.org/ca-bundle-generation";

const CA_KEY: &str = "ca.crt";
const CERT_KEY: &str = "tls.crt";
const KEY_KEY: &str = "tls.key";
const NEXT_CERT_KEY: &str = "next.crt";
const NEXT_KEY_KEY: &str = "next.key";

/// Secrets written before renewal existed carry no issue time; they were issued for a year.
const LEGACY_VALIDITY: Duration = flink_operator_certs::SERVING_VALIDITY;

/// How long both webhook configurations must have carried a new CA before certificates it
/// signed are served: the API servers read the configurations through informers, which
/// lag behind a write by a moment.
pub const SETTLE: Duration = Duration::from_secs(5);

/// The shortest validity accepted: a renewal takes a few checks and [`SETTLE`], which must
/// fit well inside a certificate's life.
pub const MIN_VALIDITY: Duration = Duration::from_secs(30);

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
    /// How long a serving certificate is valid.
    pub validity: Duration,
    /// The fraction of its validity after which a serving certificate is renewed.
    pub renew_fraction: f64,
    /// How often the Secret's state is looked at (besides every change of it).
    pub check_interval: Duration,
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

    fn policy(&self) -> Policy {
        Policy {
            renew_fraction: self.renew_fraction,
            names: self.names_annotation(),
            settle: SETTLE,
        }
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

// === The state kept in the Secret, and the decisions over it (pure) ===

/// A serving certificate with its key and the CA that signed it.
#[derive(Clone, PartialEq, Eq)]
struct Issued {
    ca_pem: String,
    cert_pem: String,
    key_pem: String,
    /// Seconds since the epoch.
    issued: u64,
    /// Seconds since the epoch.
    expires: u64,
}

impl std::fmt::Debug for Issued {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Issued")
            .field("issued", &self.issued)
            .field("expires", &self.expires)
            .finish_non_exhaustive()
    }
}

impl Issued {
    /// When this certificate is due for renewal.
    fn renew_at(&self, fraction: f64) -> u64 {
        let life = self.expires.saturating_sub(self.issued) as f64;
        self.issued + (life * fraction) as u64
    }
}

/// What the Secret holds.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Stored {
    /// The CAs the API server is to trust, oldest first: the served certificate's CA, a
    /// staged certificate's CA, and earlier CAs until they retire.
    bundle: Vec<String>,
    /// The certificate every replica serves.
    serving: Issued,
    /// A certificate issued by the newest CA, served once that CA is trusted.
    next: Option<Issued>,
    /// The names the serving certificate was issued for.
    names: String,
    /// When CAs other than the served (and staged) certificate's leave the bundle.
    retire_at: Option<u64>,
    /// Counts the changes of the bundle, so that a replica that has not seen the latest
    /// Secret yet cannot put an older bundle back into the webhook configurations.
    generation: u64,
}

impl Stored {
    fn bundle_pem(&self) -> String {
        self.bundle.concat()
    }
}

/// What the operator was configured to keep.
#[derive(Clone, Debug)]
struct Policy {
    renew_fraction: f64,
    names: String,
    settle: Duration,
}

/// The next step on the Secret.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Step {
    /// Nothing to do now.
    Wait,
    /// Issue a CA and certificate and serve them at once: there is nothing usable to keep
    /// serving meanwhile (no Secret, an unreadable one, an expired certificate).
    Fresh(&'static str),
    /// Issue a CA and certificate, put the CA into the bundle and keep the certificate aside.
    Stage(&'static str),
    /// Serve the staged certificate.
    Promote(&'static str),
    /// Drop the CAs of retired certificates from the bundle.
    Retire,
}

/// What to do next, given the Secret (None: missing or unusable), the time (seconds since
/// the epoch) and, while a certificate is staged, for how long both webhook configurations
/// have carried its CA (None: not yet both).
fn decide(stored: Option<&Stored>, policy: &Policy, now: u64, staged_trusted_for: Option<Duration>) -> Step {
    let Some(stored) = stored else {
        return Step::Fresh("the Secret holds no usable certificate");
    };
    // Retiring goes first: a renewal may be staged again before the certificate served
    // before the last one has expired, and must not keep that one's CA alive.
    let needed = 1 + usize::from(stored.next.is_some());
    if stored.bundle.len() > needed
        && stored.retire_at.is_none_or(|at| at <= now)
        && stored.serving.expires > now
    {
        return Step::Retire;
    }
    if let Some(next) = &stored.next {
        if stored.serving.expires <= now {
            // Nothing is lost: the served certificate fails anyway.
            return Step::Promote("the served certificate has expired");
        }
        if next.expires <= now {
            return Step::Fresh("the staged certificate expired before it was trusted");
        }
        return match staged_trusted_for {
            Some(trusted) if trusted >= policy.settle => {
                Step::Promote("both webhook configurations trust the new CA")
            }
            _ => Step::Wait,
        };
    }
    if stored.serving.expires <= now {
        return Step::Fresh("the served certificate has expired");
    }
    if stored.names != policy.names {
        return Step::Stage("the certificate was issued for other names");
    }
    if now >= stored.serving.renew_at(policy.renew_fraction) {
        return Step::Stage("the certificate reached its renewal point");
    }
    Step::Wait
}

/// The Secret's state after `step`, `issued` being the new certificate of a Fresh or Stage.
fn after(step: &Step, stored: Option<&Stored>, issued: Option<Issued>, names: &str) -> Option<Stored> {
    let generation = stored.map_or(0, |s| s.generation) + 1;
    match (step, stored, issued) {
        (Step::Fresh(_), _, Some(issued)) => Some(fresh_state(issued, names, stored)),
        (Step::Stage(_), Some(stored), Some(issued)) => {
            let mut bundle = stored.bundle.clone();
            bundle.push(issued.ca_pem.clone());
            Some(Stored {
                bundle,
                next: Some(issued),
                generation,
                ..stored.clone()
            })
        }
        (Step::Promote(_), Some(stored), _) => {
            let next = stored.next.clone()?;
            Some(Stored {
                bundle: stored.bundle.clone(),
                retire_at: Some(stored.serving.expires),
                serving: next,
                next: None,
                names: names.to_owned(),
                // The bundle is unchanged.
                generation: stored.generation,
            })
        }
        (Step::Retire, Some(stored), _) => Some(Stored {
            bundle: std::iter::once(&stored.serving)
                .chain(&stored.next)
                .map(|issued| issued.ca_pem.clone())
                .collect(),
            retire_at: None,
            generation,
            ..stored.clone()
        }),
        _ => None,
    }
}

/// A state serving `issued` alone, following `stored` (if any).
fn fresh_state(issued: Issued, names: &str, stored: Option<&Stored>) -> Stored {
    Stored {
        bundle: vec![issued.ca_pem.clone()],
        serving: issued,
        next: None,
        names: names.to_owned(),
        retire_at: None,
        generation: stored.map_or(0, |s| s.generation) + 1,
    }
}

/// Splits a PEM bundle into its certificates, each with its END line and a newline.
fn split_bundle(pem: &str) -> Vec<String> {
    const END: &str = "-----END CERTIFICATE-----";
    pem.split_inclusive(END)
        .map(str::trim)
        .filter(|block| block.ends_with(END))
        .map(|block| format!("{block}\n"))
        .collect()
}

/// The state a Secret holds; None when something needed is missing or unreadable.
fn parse(secret: &Secret) -> Option<Stored> {
    let data = secret.data.as_ref()?;
    let text = |key: &str| {
        data.get(key)
            .and_then(|b| String::from_utf8(b.0.clone()).ok())
            .filter(|s| !s.is_empty())
    };
    let annotations = secret.metadata.annotations.clone().unwrap_or_default();
    let number = |key: &str| annotations.get(key).and_then(|v| v.parse::<u64>().ok());
    let bundle = split_bundle(&text(CA_KEY)?);
    let newest = bundle.last()?.clone();
    let next = match (text(NEXT_CERT_KEY), text(NEXT_KEY_KEY)) {
        (Some(cert_pem), Some(key_pem)) if bundle.len() > 1 => Some(Issued {
            ca_pem: newest.clone(),
            cert_pem,
            key_pem,
            issued: number(NEXT_ISSUED_ANNOTATION)?,
            expires: number(NEXT_EXPIRES_ANNOTATION)?,
        }),
        _ => None,
    };
    // The newest CA signed the staged certificate if there is one (see `after`), else the
    // served one; a Secret written before renewal existed has a single CA.
    let serving_ca = match next {
        Some(_) => bundle.get(bundle.len() - 2)?.clone(),
        None => newest,
    };
    let expires = number(EXPIRES_ANNOTATION)?;
    Some(Stored {
        serving: Issued {
            ca_pem: serving_ca,
            cert_pem: text(CERT_KEY)?,
            key_pem: text(KEY_KEY)?,
            issued: number(ISSUED_ANNOTATION).unwrap_or(expires.saturating_sub(LEGACY_VALIDITY.as_secs())),
            expires,
        },
        bundle,
        next,
        names: annotations.get(NAMES_ANNOTATION).cloned().unwrap_or_default(),
        retire_at: number(RETIRE_ANNOTATION),
        generation: number(GENERATION_ANNOTATION).unwrap_or(0),
    })
}

/// The Secret holding `stored`, keeping `base`'s metadata (its resourceVersion makes the
/// write conditional).
fn secret_for(config: &ManagedCertsConfig, stored: &Stored, base: Option<&Secret>) -> Secret {
    let bytes = |s: &str| ByteString(s.as_bytes().to_vec());
    let mut annotations = base
        .and_then(|s| s.metadata.annotations.clone())
        .unwrap_or_default();
    for key in [NEXT_ISSUED_ANNOTATION, NEXT_EXPIRES_ANNOTATION, RETIRE_ANNOTATION] {
        annotations.remove(key);
    }
    annotations.insert(EXPIRES_ANNOTATION.to_owned(), stored.serving.expires.to_string());
    annotations.insert(ISSUED_ANNOTATION.to_owned(), stored.serving.issued.to_string());
    annotations.insert(NAMES_ANNOTATION.to_owned(), stored.names.clone());
    annotations.insert(GENERATION_ANNOTATION.to_owned(), stored.generation.to_string());
    let mut data = BTreeMap::from([
        (CA_KEY.to_owned(), bytes(&stored.bundle_pem())),
        (CERT_KEY.to_owned(), bytes(&stored.serving.cert_pem)),
        (KEY_KEY.to_owned(), bytes(&stored.serving.key_pem)),
    ]);
    if let Some(next) = &stored.next {
        annotations.insert(NEXT_ISSUED_ANNOTATION.to_owned(), next.issued.to_string());
        annotations.insert(NEXT_EXPIRES_ANNOTATION.to_owned(), next.expires.to_string());
        data.insert(NEXT_CERT_KEY.to_owned(), bytes(&next.cert_pem));
        data.insert(NEXT_KEY_KEY.to_owned(), bytes(&next.key_pem));
    }
    if let Some(at) = stored.retire_at {
        annotations.insert(RETIRE_ANNOTATION.to_owned(), at.to_string());
    }
    let mut metadata = base.map(|s| s.metadata.clone()).unwrap_or_else(|| ObjectMeta {
        name: Some(config.secret.clone()),
        namespace: Some(config.namespace.clone()),
        labels: Some(BTreeMap::from([(
            "app.kubernetes.io/managed-by".to_owned(),
            "flink-operator".to_owned(),
        )])),
        ..Default::default()
    });
    metadata.annotations = Some(annotations);
    Secret {
        metadata,
        type_: Some("kubernetes.io/tls".to_owned()),
        data: Some(data),
        ..Default::default()
    }
}

// === I/O ===

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn issue(config: &ManagedCertsConfig) -> Result<Issued, ManagedCertsError> {
    let (dns, ips) = config.subject_names();
    let issued = now_secs();
    let certs = flink_operator_certs::generate_self_signed_valid_for(&dns, &ips, config.validity)?;
    Ok(Issued {
        ca_pem: certs.ca_pem,
        cert_pem: certs.cert_pem,
        key_pem: certs.key_pem,
        issued,
        expires: issued + config.validity.as_secs(),
    })
}

/// Writes the served certificate and the bundle into the directory, unless they are there
/// already (every watch event and check comes here).
fn write_files(dir: &Path, stored: &Stored) -> Result<bool, ManagedCertsError> {
    let paths = CertPaths::in_dir(dir);
    let same = |path: &Path, text: &str| std::fs::read_to_string(path).is_ok_and(|t| t == text);
    let bundle = stored.bundle_pem();
    if same(&paths.cert, &stored.serving.cert_pem)
        && same(&paths.key, &stored.serving.key_pem)
        && same(&paths.ca, &bundle)
    {
        return Ok(false);
    }
    GeneratedCerts {
        ca_pem: bundle,
        cert_pem: stored.serving.cert_pem.clone(),
        key_pem: stored.serving.key_pem.clone(),
    }
    .write_to_dir(dir)?;
    Ok(true)
}

/// The managed certificate of this replica, set up by [`ensure_secret`] and kept by
/// [`ManagedCerts::run`].
pub struct ManagedCerts {
    config: ManagedCertsConfig,
    secret: Secret,
    stored: Stored,
}

impl ManagedCerts {
    /// The CA bundle the webhook configurations must carry now.
    pub fn ca_bundle(&self) -> String {
        self.stored.bundle_pem()
    }

    /// The paths of the served files.
    pub fn paths(&self) -> CertPaths {
        CertPaths::in_dir(&self.config.dir)
    }

    /// Keeps the certificate renewed and the caBundle in both webhook configurations, until
    /// the process stops.
    pub async fn run(self, client: Client) {
        let (bundle_tx, bundle_rx) = watch::channel(bundle_of(&self.stored));
        futures::join!(
            keep::<ValidatingWebhookConfiguration>(
                client.clone(),
                self.config.configuration.clone(),
                bundle_rx.clone()
            ),
            keep::<MutatingWebhookConfiguration>(
                client.clone(),
                self.config.configuration.clone(),
                bundle_rx
            ),
            renew(client, self.config, self.secret, bundle_tx),
        );
    }
}

/// Reads or creates the Secret (replacing it when it holds nothing usable any more) and
/// writes its files into the directory, before the server starts.
pub async fn ensure_secret(
    client: &Client,
    config: &ManagedCertsConfig,
) -> Result<ManagedCerts, ManagedCertsError> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &config.namespace);
    let name = &config.secret;
    let ns = &config.namespace;
    let existing = secrets
        .get_opt(name)
        .await
        .map_err(api_error(format!("reading Secret {ns}/{name}")))?;
    let stored = existing.as_ref().and_then(parse);
    let policy = config.policy();
    let step = decide(stored.as_ref(), &policy, now_secs(), None);
    let (secret, stored) = match (existing, stored) {
        // Any step but a fresh start is taken by the running loop: what is stored serves now.
        (Some(secret), Some(stored)) if !matches!(step, Step::Fresh(_)) => {
            tracing::info!(secret = %name, expires = stored.serving.expires, "using the webhook certificate from the Secret");
            (secret, stored)
        }
        (existing, stored) => {
            let reason = match step {
                Step::Fresh(reason) => reason,
                _ => "the Secret holds no usable certificate",
            };
            tracing::info!(secret = %name, reason, "issuing a new webhook CA and serving certificate");
            let fresh = fresh_state(issue(config)?, &policy.names, stored.as_ref());
            let written = match &existing {
                None => {
                    secrets
                        .create(&PostParams::default(), &secret_for(config, &fresh, None))
                        .await
                }
                Some(old) => {
                    secrets
                        .replace(
                            name,
                            &PostParams::default(),
                            &secret_for(config, &fresh, Some(old)),
                        )
                        .await
                }
            };
            match written {
                Ok(secret) => (secret, fresh),
                // Another replica wrote it between our read and our write: use theirs.
                Err(kube::Error::Api(status)) if status.code == 409 => {
                    tracing::info!(secret = %name, "another replica wrote the Secret first; using its certificate");
                    let theirs = secrets
                        .get(name)
                        .await
                        .map_err(api_error(format!("reading Secret {ns}/{name}")))?;
                    let stored = parse(&theirs).unwrap_or(fresh);
                    (theirs, stored)
                }
                Err(e) => return Err(api_error(format!("writing Secret {ns}/{name}"))(e)),
            }
        }
    };
    write_files(&config.dir, &stored)?;
    Ok(ManagedCerts {
        config: config.clone(),
        secret,
        stored,
    })
}

/// The CA bundle and its generation, as the webhook configurations are to carry it.
type Bundle = (u64, ByteString);

fn bundle_of(stored: &Stored) -> Bundle {
    (stored.generation, ByteString(stored.bundle_pem().into_bytes()))
}

/// Follows the Secret (watch) and the clock, takes each renewal step when it is due, and
/// writes what the Secret says into the files and into `bundle`.
async fn renew(
    client: Client,
    config: ManagedCertsConfig,
    mut secret: Secret,
    bundle: watch::Sender<Bundle>,
) {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &config.namespace);
    let name = config.secret.clone();
    let selector = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let mut events = std::pin::pin!(
        watcher(secrets.clone(), selector)
            .default_backoff()
            .applied_objects()
    );
    let mut ticker = tokio::time::interval(config.check_interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let policy = config.policy();
    // Since when this replica has seen both configurations carry the staged CA, and which.
    let mut trusted_since: Option<(String, Instant)> = None;
    loop {
        let stored = parse(&secret);
        if let Some(stored) = &stored {
            match write_files(&config.dir, stored) {
                Ok(true) => tracing::info!(
                    expires = stored.serving.expires,
                    cas = stored.bundle.len(),
                    "wrote the webhook certificate from the Secret; it is served from the next reload"
                ),
                Ok(false) => {}
                Err(error) => tracing::warn!(%error, "writing the webhook certificate files failed"),
            }
            bundle.send_if_modified(|current| {
                let new = bundle_of(stored);
                // An older Secret (a watch that restarted from a stale cache) never
                // replaces a newer bundle.
                let changed = new.0 >= current.0 && *current != new;
                if changed {
                    *current = new;
                }
                changed
            });
        }
        let staged_ca = stored
            .as_ref()
            .and_then(|s| s.next.as_ref())
            .map(|n| n.ca_pem.clone());
        let trusted_for = match staged_ca {
            Some(ca) => {
                if trusted_since.as_ref().is_some_and(|(seen, _)| *seen != ca) {
                    trusted_since = None;
                }
                match configurations_trust(&client, &config.configuration, &ca).await {
                    Ok(true) => {
                        let since = trusted_since.get_or_insert_with(|| {
                            tracing::info!("both webhook configurations carry the new CA");
                            (ca.clone(), Instant::now())
                        });
                        Some(since.1.elapsed())
                    }
                    Ok(false) => {
                        trusted_since = None;
                        None
                    }
                    Err(error) => {
                        tracing::warn!(%error, "could not read the webhook configurations");
                        None
                    }
                }
            }
            None => {
                trusted_since = None;
                None
            }
        };
        let step = decide(stored.as_ref(), &policy, now_secs(), trusted_for);
        if step != Step::Wait {
            let read = SecretRead {
                object: &secret,
                stored: stored.as_ref(),
            };
            match take(&secrets, &config, &policy, &step, read).await {
                Ok(written) => {
                    secret = written;
                    // Look at the new state at once: write its files, maybe take the next step.
                    continue;
                }
                Err(error) if error.is_conflict() => {
                    tracing::info!(
                        ?step,
                        "another replica changed the Secret first; adopting its state"
                    );
                }
                Err(error) => tracing::warn!(?step, %error, "renewal step failed; retrying"),
            }
        }
        tokio::select! {
            event = events.next() => match event {
                Some(Ok(newer)) => secret = newer,
                Some(Err(error)) => tracing::warn!(%error, secret = %name, "watching the Secret failed; retrying"),
                None => return,
            },
            _ = ticker.tick() => {}
        }
    }
}

impl ManagedCertsError {
    /// Whether a conditional write lost against another writer.
    fn is_conflict(&self) -> bool {
        matches!(self, Self::Api { source, .. } if matches!(source.as_ref(), kube::Error::Api(status) if status.code == 409))
    }
}

/// The Secret as last read, which a step starts from.
struct SecretRead<'a> {
    /// The object: its resourceVersion makes the write conditional, and it is what is
    /// returned when the step writes nothing.
    object: &'a Secret,
    /// What it stores, parsed; none when it holds no usable certificate.
    stored: Option<&'a Stored>,
}

/// Takes `step`: a conditional replace of the Secret (by the resourceVersion read).
async fn take(
    secrets: &Api<Secret>,
    config: &ManagedCertsConfig,
    policy: &Policy,
    step: &Step,
    read: SecretRead<'_>,
) -> Result<Secret, ManagedCertsError> {
    let SecretRead {
        object: secret,
        stored,
    } = read;
    let issued = match step {
        Step::Fresh(_) | Step::Stage(_) => Some(issue(config)?),
        _ => None,
    };
    let Some(new) = after(step, stored, issued, &policy.names) else {
        return Ok(secret.clone());
    };
    let written = secrets
        .replace(
            &config.secret,
            &PostParams::default(),
            &secret_for(config, &new, Some(secret)),
        )
        .await
        .map_err(api_error(format!(
            "writing Secret {}/{}",
            config.namespace, config.secret
        )))?;
    match step {
        Step::Fresh(reason) => tracing::info!(
            reason,
            expires = new.serving.expires,
            "issued a new webhook CA and certificate, served at once"
        ),
        Step::Stage(reason) => tracing::info!(
            reason,
            "renewing the webhook certificate: new CA added to the bundle, new certificate staged until both webhook configurations trust it"
        ),
        Step::Promote(reason) => tracing::info!(
            reason,
            expires = new.serving.expires,
            "serving the renewed webhook certificate"
        ),
        Step::Retire => {
            tracing::info!("the previous webhook certificate has expired; its CA left the bundle")
        }
        Step::Wait => {}
    }
    Ok(written)
}

/// Whether both webhook configurations (those that exist) carry `ca` in every webhook.
async fn configurations_trust(client: &Client, name: &str, ca: &str) -> Result<bool, ManagedCertsError> {
    let validating: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let mutating: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let v = validating.get_opt(name).await.map_err(api_error(format!(
        "reading ValidatingWebhookConfiguration {name}"
    )))?;
    let m = mutating
        .get_opt(name)
        .await
        .map_err(api_error(format!("reading MutatingWebhookConfiguration {name}")))?;
    Ok(v.is_none_or(|c| c.trusts(ca)) && m.is_none_or(|c| c.trusts(ca)))
}

/// A webhook configuration kind whose webhooks carry a `clientConfig.caBundle`.
trait WithCaBundle:
    Resource<DynamicType = ()> + Clone + std::fmt::Debug + Serialize + DeserializeOwned + Send + Sync + 'static
{
    /// Sets `ca` on every webhook; true when something changed.
    fn set_ca_bundle(&mut self, ca: &ByteString) -> bool;
    /// Whether every webhook's caBundle holds `ca`.
    fn trusts(&self, ca: &str) -> bool;
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

            fn trusts(&self, ca: &str) -> bool {
                self.webhooks.iter().flatten().all(|webhook| {
                    webhook.client_config.ca_bundle.as_ref().is_some_and(|bundle| {
                        split_bundle(&String::from_utf8_lossy(&bundle.0)).iter().any(|c| c == ca)
                    })
                })
            }
        }
    )+};
}

with_ca_bundle!(ValidatingWebhookConfiguration, MutatingWebhookConfiguration);

/// Puts `bundle` into `object` unless the object carries a newer generation (written by a
/// replica that has seen a newer Secret); true when the object changed.
fn put_bundle<K: WithCaBundle>(object: &mut K, (generation, ca): &Bundle) -> bool {
    let annotations = object.meta_mut().annotations.get_or_insert_with(Default::default);
    let theirs = annotations
        .get(GENERATION_ANNOTATION)
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0);
    if theirs > *generation {
        return false;
    }
    let mut changed = theirs != *generation;
    annotations.insert(GENERATION_ANNOTATION.to_owned(), generation.to_string());
    changed |= object.set_ca_bundle(ca);
    changed
}

/// Keeps the configuration `name` carrying the current bundle: written at every change of
/// the configuration (watched) and of the bundle.
async fn keep<K: WithCaBundle>(client: Client, name: String, mut bundle: watch::Receiver<Bundle>) {
    let api: Api<K> = Api::all(client);
    let kind = K::kind(&());
    let selector = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let mut events = std::pin::pin!(watcher(api.clone(), selector).default_backoff().applied_objects());
    let mut last: Option<K> = None;
    loop {
        tokio::select! {
            event = events.next() => match event {
                Some(Ok(object)) => last = Some(object),
                Some(Err(error)) => {
                    tracing::warn!(%kind, %name, %error, "watching the webhook configuration failed; retrying");
                    continue;
                }
                None => return,
            },
            changed = bundle.changed() => {
                if changed.is_err() {
                    return;
                }
            }
        }
        let Some(mut object) = last.clone() else {
            continue;
        };
        let current = bundle.borrow_and_update().clone();
        if !put_bundle(&mut object, &current) {
            continue;
        }
        // A replace carries the resourceVersion just read: a concurrent change makes it
        // fail with a conflict, and the watch brings the newer object.
        match api.replace(&name, &PostParams::default(), &object).await {
            Ok(written) => {
                let cas = split_bundle(&String::from_utf8_lossy(&current.1.0)).len();
                tracing::info!(%kind, %name, cas, generation = current.0, "wrote the webhook CA bundle into caBundle");
                last = Some(written);
            }
            Err(error) => {
                tracing::warn!(%kind, %name, %error, "could not write caBundle; retrying on the next change")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAMES: &str = "svc,svc.ns";

    fn issued(tag: &str, issued: u64, expires: u64) -> Issued {
        Issued {
            ca_pem: format!("-----BEGIN CERTIFICATE-----\nCA {tag}\n-----END CERTIFICATE-----\n"),
            cert_pem: format!("cert {tag}"),
            key_pem: format!("key {tag}"),
            issued,
            expires,
        }
    }

    /// Serving "a" (issued at 0, expiring at 300), nothing staged.
    fn steady() -> Stored {
        let a = issued("a", 0, 300);
        Stored {
            bundle: vec![a.ca_pem.clone()],
            serving: a,
            next: None,
            names: NAMES.to_owned(),
            retire_at: None,
            generation: 1,
        }
    }

    /// Serving "a", "b" staged at 200.
    fn staged() -> Stored {
        let b = issued("b", 200, 500);
        let mut stored = steady();
        stored.bundle.push(b.ca_pem.clone());
        stored.next = Some(b);
        stored
    }

    /// Serving "b" after a promotion, "a"'s CA retiring at 300.
    fn promoted() -> Stored {
        after(&Step::Promote("test"), Some(&staged()), None, NAMES).unwrap()
    }

    fn config() -> ManagedCertsConfig {
        ManagedCertsConfig {
            namespace: "ns".into(),
            service: "svc".into(),
            secret: "certs".into(),
            configuration: "c".into(),
            dir: PathBuf::from("unused"),
            extra_sans: vec![],
            validity: Duration::from_secs(300),
            renew_fraction: 2.0 / 3.0,
            check_interval: Duration::from_secs(1),
        }
    }

    /// `stored` written into a Secret and read back.
    fn parse_back(stored: &Stored) -> Stored {
        parse(&secret_for(&config(), stored, None)).unwrap()
    }

    fn policy() -> Policy {
        Policy {
            renew_fraction: 2.0 / 3.0,
            names: NAMES.to_owned(),
            settle: Duration::from_secs(5),
        }
    }

    #[test]
    fn decide_takes_each_step_when_it_is_due() {
        let secs = Duration::from_secs;
        let mut renamed = steady();
        renamed.names = "old".into();
        // "b" served, "a" retiring at 300, "c" staged at 290 (renewing at 0.3 of b's life).
        let staged_again = {
            let mut policy = policy();
            policy.renew_fraction = 0.3;
            let step = decide(Some(&promoted()), &policy, 290, None);
            assert_eq!(step, Step::Stage("the certificate reached its renewal point"));
            after(&step, Some(&promoted()), Some(issued("c", 290, 590)), NAMES).unwrap()
        };
        let mut expired_staged = staged();
        expired_staged.next.as_mut().unwrap().expires = 250;
        // Name, Secret, now, for how long the staged CA has been trusted, expected step.
        type Case = (&'static str, Option<Stored>, u64, Option<Duration>, Step);
        let cases: Vec<Case> = vec![
            (
                "no Secret",
                None,
                10,
                None,
                Step::Fresh("the Secret holds no usable certificate"),
            ),
            ("young certificate", Some(steady()), 100, None, Step::Wait),
            ("just before two thirds", Some(steady()), 199, None, Step::Wait),
            (
                "at two thirds",
                Some(steady()),
                200,
                None,
                Step::Stage("the certificate reached its renewal point"),
            ),
            (
                "other names",
                Some(renamed),
                10,
                None,
                Step::Stage("the certificate was issued for other names"),
            ),
            (
                "expired",
                Some(steady()),
                300,
                None,
                Step::Fresh("the served certificate has expired"),
            ),
            ("staged, not yet trusted", Some(staged()), 210, None, Step::Wait),
            (
                "staged, trusted too briefly",
                Some(staged()),
                210,
                Some(secs(4)),
                Step::Wait,
            ),
            (
                "staged and trusted long enough",
                Some(staged()),
                210,
                Some(secs(5)),
                Step::Promote("both webhook configurations trust the new CA"),
            ),
            (
                "staged while the served one expired",
                Some(staged()),
                300,
                None,
                Step::Promote("the served certificate has expired"),
            ),
            (
                "staged one expired untrusted",
                Some(expired_staged),
                260,
                None,
                Step::Fresh("the staged certificate expired before it was trusted"),
            ),
            (
                "promoted, old one still valid",
                Some(promoted()),
                299,
                None,
                Step::Wait,
            ),
            (
                "promoted, old one expired",
                Some(promoted()),
                300,
                None,
                Step::Retire,
            ),
            (
                "staged again before the one before expired",
                Some(staged_again.clone()),
                299,
                Some(secs(1)),
                Step::Wait,
            ),
            (
                "staged again, the one before expired",
                Some(staged_again),
                300,
                Some(secs(1)),
                Step::Retire,
            ),
            (
                "retired, new one young",
                Some(after(&Step::Retire, Some(&promoted()), None, NAMES).unwrap()),
                301,
                None,
                Step::Wait,
            ),
        ];
        for (name, stored, now, trusted, expected) in cases {
            assert_eq!(
                decide(stored.as_ref(), &policy(), now, trusted),
                expected,
                "{name}"
            );
        }
    }

    #[test]
    fn a_renewal_trusts_the_new_ca_before_serving_its_certificate_and_drops_the_old_ca_last() {
        let a = steady();
        let b = issued("b", 200, 500);
        let staged = after(&Step::Stage("t"), Some(&a), Some(b.clone()), NAMES).unwrap();
        assert_eq!(
            staged.serving, a.serving,
            "staging changes nothing that is served"
        );
        assert_eq!(staged.bundle, vec![a.serving.ca_pem.clone(), b.ca_pem.clone()]);

        let promoted = after(&Step::Promote("t"), Some(&staged), None, NAMES).unwrap();
        assert_eq!(promoted.serving, b);
        assert_eq!(promoted.next, None);
        assert_eq!(
            promoted.bundle, staged.bundle,
            "the old CA stays while its certificate lives"
        );
        assert_eq!(promoted.retire_at, Some(300));

        let c = issued("c", 290, 590);
        let staged_again = after(&Step::Stage("t"), Some(&promoted), Some(c.clone()), NAMES).unwrap();
        let retired_while_staged = after(&Step::Retire, Some(&staged_again), None, NAMES).unwrap();
        assert_eq!(
            retired_while_staged.bundle,
            vec![b.ca_pem.clone(), c.ca_pem.clone()]
        );
        assert_eq!(retired_while_staged.next, Some(c));
        assert_eq!(parse_back(&retired_while_staged), retired_while_staged);

        let retired = after(&Step::Retire, Some(&promoted), None, NAMES).unwrap();
        assert_eq!(retired.bundle, vec![b.ca_pem.clone()]);
        assert_eq!(retired.retire_at, None);
        assert_eq!(retired.serving, b);
    }

    #[test]
    fn every_state_survives_the_secret() {
        let config = config();
        for stored in [steady(), staged(), promoted()] {
            assert_eq!(parse_back(&stored), stored);
            // Written over an older Secret: no stale annotation of another state is kept.
            let over = secret_for(&config, &steady(), Some(&secret_for(&config, &stored, None)));
            assert_eq!(parse(&over), Some(steady()));
        }
    }

    #[test]
    fn a_secret_from_before_renewal_is_read_as_a_year_long_certificate() {
        let mut secret = secret_for(&config(), &steady(), None);
        let expires = LEGACY_VALIDITY.as_secs() + 1000;
        let annotations = secret.metadata.annotations.as_mut().unwrap();
        annotations.remove(ISSUED_ANNOTATION);
        annotations.insert(EXPIRES_ANNOTATION.into(), expires.to_string());
        let stored = parse(&secret).unwrap();
        assert_eq!(stored.serving.issued, 1000);
        assert_eq!(stored.serving.renew_at(0.5), 1000 + LEGACY_VALIDITY.as_secs() / 2);
    }

    #[test]
    fn a_replica_behind_never_puts_an_older_bundle_back() {
        let configuration = |generation: Option<u64>, ca: &str| -> ValidatingWebhookConfiguration {
            let mut object: ValidatingWebhookConfiguration = serde_json::from_value(serde_json::json!({
                "metadata": {"name": "c"},
                "webhooks": [{"name": "v.example", "admissionReviewVersions": ["v1"], "sideEffects": "None",
                              "clientConfig": {"url": "https://127.0.0.1/validate"}}]
            }))
            .unwrap();
            if let Some(generation) = generation {
                object.metadata.annotations =
                    Some([(GENERATION_ANNOTATION.to_owned(), generation.to_string())].into());
                object.set_ca_bundle(&ByteString(ca.as_bytes().to_vec()));
            }
            object
        };
        let bundle = |generation, ca: &str| (generation, ByteString(ca.as_bytes().to_vec()));
        let ab = format!("{}{}", steady().bundle_pem(), staged().next.unwrap().ca_pem);
        let a = steady().bundle_pem();
        let cases = [
            (
                "a new configuration gets the bundle",
                configuration(None, ""),
                bundle(1, &a),
                true,
            ),
            (
                "the same bundle is not written again",
                configuration(Some(1), &a),
                bundle(1, &a),
                false,
            ),
            (
                "a newer bundle is written",
                configuration(Some(1), &a),
                bundle(2, &ab),
                true,
            ),
            (
                "an older one is not",
                configuration(Some(2), &ab),
                bundle(1, &a),
                false,
            ),
            (
                "a bundle removed by someone else comes back",
                configuration(Some(2), ""),
                bundle(2, &ab),
                true,
            ),
        ];
        for (name, mut object, bundle, changed) in cases {
            assert_eq!(put_bundle(&mut object, &bundle), changed, "{name}");
        }
        let mut object = configuration(Some(1), &a);
        put_bundle(&mut object, &bundle(2, &ab));
        let new_ca = staged().next.unwrap().ca_pem;
        assert!(object.trusts(&new_ca) && object.trusts(&steady().serving.ca_pem));
        assert!(!configuration(Some(1), &a).trusts(&new_ca));
    }

    #[test]
    fn split_bundle_keeps_each_certificate_whole() {
        let a = issued("a", 0, 1).ca_pem;
        let b = issued("b", 0, 1).ca_pem;
        assert_eq!(split_bundle(&format!("{a}{b}")), vec![a.clone(), b.clone()]);
        assert_eq!(split_bundle(&format!("{}\n\n{}", a.trim(), b.trim())), vec![a, b]);
        assert!(split_bundle("").is_empty());
    }
}
