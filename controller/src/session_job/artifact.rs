//! The job jar of a session job, made available as a local file for the upload.
//!
//! `http` and `https` URIs are downloaded into a temporary file, in the background
//! ([`super::downloads`]): a reconcile starts a download and returns, and a later one uploads
//! the file. `file://` URIs and plain absolute paths name a file on the operator's own file
//! system, read in place only under the directories the platform lists
//! (`kubernetes.operator.user.artifacts.file.allowed-dirs`), after `..` and symbolic links are
//! resolved. Any other scheme is refused with the URI and the scheme named.
//!
//! A download is streamed to its file, never held in memory, up to [`MAX_ARTIFACT_BYTES`].
//! Every connection goes to an address the operator's own resolver returned and checked
//! ([`CheckedResolver`]): there is no second lookup between the check and the connection, for
//! the first request and for every redirect. Download headers go only where they belong
//! ([`DownloadHeaders`]).

use std::{
    net::{IpAddr, SocketAddr},
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use flink_operator_api::{
    keys::operator,
    validation::{addresses, session_job as rules, session_job::ArtifactPolicy},
};
use tokio::io::AsyncWriteExt;

const FIELD: &str = "spec.job.jarURI";

/// The largest jar downloaded. Job jars with their dependencies shaded in are tens to a
/// couple of hundred MiB; Flink's own libraries, which the session cluster provides, are not
/// part of them.
pub const MAX_ARTIFACT_BYTES: u64 = 512 * 1024 * 1024;

/// How many redirects a download follows; each hop is checked as the first request is.
const MAX_REDIRECTS: usize = 5;

/// How much of a download is gathered before it is written: a few large writes instead of
/// one per network chunk.
const WRITE_BUFFER_BYTES: usize = 256 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    #[error("{FIELD} is not set: a session job needs the jar to upload")]
    Missing,
    #[error(
        "{FIELD} {uri:?}: scheme {scheme:?} is not supported (use http, https, file or an absolute path)"
    )]
    UnsupportedScheme { uri: String, scheme: String },
    #[error("{FIELD} {uri:?} is not a valid URI: {reason}")]
    Invalid { uri: String, reason: String },
    #[error(
        "{FIELD} {uri:?}: host {host} resolves to a restricted address {address} ({range}); the operator does not fetch jars from it ({})",
        operator::USER_ARTIFACTS_DISALLOW_RESTRICTED_HOSTS
    )]
    RestrictedHost {
        uri: String,
        host: String,
        address: IpAddr,
        range: String,
    },
    #[error("{FIELD} {uri:?}: {reason}")]
    FileRefused { uri: String, reason: String },
    #[error("{FIELD} {uri:?}: {path} is not a readable file: {source}")]
    Unreadable {
        uri: String,
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("downloading {FIELD} {uri:?}: {reason}")]
    Download { uri: String, reason: String },
    #[error(
        "{FIELD} {uri:?}: the jar is larger than the {limit} bytes the operator downloads; leave out of it what the session cluster provides (Flink's own libraries), or run the job as a FlinkDeployment with the jar in its image"
    )]
    TooLarge { uri: String, limit: u64 },
    #[error(
        "downloading {FIELD} {uri:?}: not done within {limit:?} (a download has at most the job submission timeout, kubernetes.operator.job.submission.timeout)"
    )]
    TooSlow { uri: String, limit: Duration },
    #[error("{FIELD} {uri:?}: its download is no longer held (it was started again)")]
    NotDownloaded { uri: String },
    #[error("writing the download of {FIELD} {uri:?} to {path}: {source}")]
    Write {
        uri: String,
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// A jar on the local file system; a downloaded one is removed when dropped, and holds one
/// of the process's download turns until then (see [`super::downloads`]).
#[derive(Debug)]
pub struct LocalJar {
    pub path: PathBuf,
    temporary: bool,
    _turn: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl Drop for LocalJar {
    fn drop(&mut self) {
        if self.temporary {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Where a jar URI points.
#[derive(Debug, PartialEq, Eq)]
enum Source<'a> {
    Http,
    File(&'a str),
}

fn source(uri: &str) -> Result<Source<'_>, ArtifactError> {
    if let Some(path) = rules::file_jar_path(uri) {
        return path.map(Source::File).map_err(|reason| ArtifactError::Invalid {
            uri: uri.to_owned(),
            reason,
        });
    }
    let Some((scheme, _)) = uri.split_once(':') else {
        return Err(ArtifactError::Invalid {
            uri: uri.to_owned(),
            reason: "it has no scheme and is not an absolute path".to_owned(),
        });
    };
    match scheme.to_ascii_lowercase().as_str() {
        "http" | "https" => Ok(Source::Http),
        other => Err(ArtifactError::UnsupportedScheme {
            uri: uri.to_owned(),
            scheme: other.to_owned(),
        }),
    }
}

/// Whether `uri` is downloaded (http, https) rather than read in place.
pub fn is_download(uri: &str) -> bool {
    matches!(source(uri), Ok(Source::Http))
}

/// The HTTP headers of a jar's download (`kubernetes.operator.user.artifacts.http.header`).
/// Their values are often credentials: shown, they name the headers only.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct ArtifactHeaders(pub Vec<(String, String)>);

impl std::fmt::Debug for ArtifactHeaders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(name, _)| name))
            .finish()
    }
}

impl ArtifactHeaders {
    fn to_header_map(&self, uri: &str) -> Result<reqwest::header::HeaderMap, ArtifactError> {
        self.0
            .iter()
            .map(|(name, value)| {
                let invalid = |what: &str| ArtifactError::Invalid {
                    uri: uri.to_owned(),
                    reason: format!(
                        "the download header {name:?} of kubernetes.operator.user.artifacts.http.header has {what}"
                    ),
                };
                Ok((
                    reqwest::header::HeaderName::from_bytes(name.as_bytes())
                        .map_err(|_| invalid("no valid HTTP header name"))?,
                    reqwest::header::HeaderValue::from_str(value)
                        .map_err(|_| invalid("no valid HTTP header value"))?,
                ))
            })
            .collect()
    }
}

/// The headers of a download, by who set them: a tenant's own go to the jar's host, the
/// platform's only to the hosts it lists, whatever host a tenant names.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum DownloadHeaders {
    #[default]
    None,
    /// Set in the job's or its session cluster's `spec.flinkConfiguration`: sent to the
    /// jar URI's own host, never after a redirect to another host.
    Own(ArtifactHeaders),
    /// Set in the operator configuration or a namespace overlay: sent to a host only when
    /// `kubernetes.operator.user.artifacts.http.header.hosts` lists it, at every hop.
    Platform(ArtifactHeaders),
}

impl DownloadHeaders {
    /// The headers of the effective configuration: the tenant's own when the job's or its
    /// session cluster's `spec.flinkConfiguration` set the key, the platform's otherwise.
    pub fn of(headers: Vec<(String, String)>, set_by_spec: bool) -> Self {
        match (headers.is_empty(), set_by_spec) {
            (true, _) => DownloadHeaders::None,
            (false, true) => DownloadHeaders::Own(ArtifactHeaders(headers)),
            (false, false) => DownloadHeaders::Platform(ArtifactHeaders(headers)),
        }
    }

    /// The headers of the request to `hop_host`, in a download of a jar on `jar_host`.
    fn for_hop(&self, jar_host: &str, hop_host: &str, policy: &ArtifactPolicy) -> Option<&ArtifactHeaders> {
        match self {
            DownloadHeaders::None => None,
            DownloadHeaders::Own(headers) => jar_host.eq_ignore_ascii_case(hop_host).then_some(headers),
            DownloadHeaders::Platform(headers) => policy.sends_headers_to(hop_host).then_some(headers),
        }
    }
}

/// How long a download may take, and how large it may be.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Connecting to one address.
    pub connect: Duration,
    /// Waiting for the next bytes of an answer (a server that stops sending).
    pub read: Duration,
    /// The whole download, redirects included: a server dripping bytes holds its turn no
    /// longer than this.
    pub total: Duration,
    pub max_bytes: u64,
}

impl Limits {
    /// The operator's limits: a download takes at most `total` (the job submission timeout).
    pub fn with_total(total: Duration) -> Self {
        Limits {
            connect: Duration::from_secs(10),
            read: Duration::from_secs(30),
            total,
            max_bytes: MAX_ARTIFACT_BYTES,
        }
    }
}

/// The `file` jar of `uri` at `path`, where the platform allows it: refused unless the path
/// as written and as resolved (`..`, symbolic links) is under one of `allowed_dirs` (also
/// resolved); the resolved path is the one read.
pub async fn local_file(uri: &str, allowed_dirs: &[String]) -> Result<LocalJar, ArtifactError> {
    let path = match source(uri)? {
        Source::File(path) => path,
        Source::Http => {
            return Err(ArtifactError::Invalid {
                uri: uri.to_owned(),
                reason: "an http(s) jar is downloaded, not read from the operator's file system".to_owned(),
            });
        }
    };
    let refused = |reason| ArtifactError::FileRefused {
        uri: uri.to_owned(),
        reason,
    };
    // Lexically first: a path outside every directory is refused before anything is looked up,
    // so that a refusal does not tell whether the file exists.
    if let Some(reason) = rules::file_jar_refusal(&rules::lexically_normal(path), allowed_dirs) {
        return Err(refused(reason));
    }
    let mut resolved_dirs = Vec::new();
    for dir in allowed_dirs {
        if let Ok(dir) = tokio::fs::canonicalize(dir).await {
            resolved_dirs.push(dir);
        }
    }
    let unreadable = |source| ArtifactError::Unreadable {
        uri: uri.to_owned(),
        path: path.to_owned(),
        source,
    };
    let resolved = tokio::fs::canonicalize(path).await.map_err(unreadable)?;
    if let Some(reason) = rules::file_jar_refusal(&resolved, &resolved_dirs) {
        return Err(refused(format!("{path} resolves to {reason}")));
    }
    let metadata = tokio::fs::metadata(&resolved).await.map_err(unreadable)?;
    if !metadata.is_file() {
        return Err(unreadable(std::io::Error::other("not a regular file")));
    }
    Ok(LocalJar {
        path: resolved,
        temporary: false,
        _turn: None,
    })
}

/// An address lookup: what a name resolves to (the system resolver in the operator, a table
/// in tests).
pub type Lookup = Arc<
    dyn Fn(String) -> std::pin::Pin<Box<dyn Future<Output = std::io::Result<Vec<IpAddr>>> + Send>>
        + Send
        + Sync,
>;

/// The system resolver.
pub fn system_lookup() -> Lookup {
    Arc::new(|host: String| {
        Box::pin(async move {
            Ok(tokio::net::lookup_host((host.as_str(), 0))
                .await?
                .map(|a| a.ip())
                .collect())
        })
    })
}

/// A name refused by [`CheckedResolver`]: found again in reqwest's error chain.
#[derive(Debug, thiserror::Error)]
#[error("{host} resolves to the restricted address {address} ({range})")]
struct Refused {
    host: String,
    address: IpAddr,
    range: String,
}

/// The only resolver of a download's client: each name is looked up once per connection,
/// and, when hosts are checked, refused if any of its addresses is in a special-purpose
/// range ([`addresses::restricted`]), so that the addresses connected to are the ones
/// checked (a name cannot answer a public address to a check and a private one to the
/// connection).
struct CheckedResolver {
    check: bool,
    lookup: Lookup,
}

impl reqwest::dns::Resolve for CheckedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_owned();
        let lookup = (self.lookup)(host.clone());
        let check = self.check;
        Box::pin(async move {
            let found = lookup.await?;
            if check
                && let Some((address, range)) = found
                    .iter()
                    .find_map(|ip| addresses::restricted(*ip).map(|range| (*ip, range)))
            {
                return Err(Box::new(Refused { host, address, range }) as _);
            }
            if found.is_empty() {
                return Err(format!("{host} has no address").into());
            }
            let addrs: reqwest::dns::Addrs = Box::new(found.into_iter().map(|ip| SocketAddr::new(ip, 0)));
            Ok(addrs)
        })
    }
}

/// The [`Refused`] in an error's chain, if that is why it failed.
fn refused_in<'e>(error: &'e (dyn std::error::Error + 'static)) -> Option<&'e Refused> {
    let mut current = Some(error);
    while let Some(e) = current {
        if let Some(refused) = e.downcast_ref::<Refused>() {
            return Some(refused);
        }
        current = e.source();
    }
    None
}

/// What one download is: its URI, whether hosts are checked, its headers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fetch {
    pub uri: String,
    /// The artifact policy of the job's namespace (restricted hosts, header hosts).
    pub policy: ArtifactPolicy,
    pub headers: DownloadHeaders,
}

/// Downloads `fetch` into `dir` within `limits`, connecting through `lookup`; the jar holds
/// `turn` until it is dropped.
pub async fn download(
    fetch: &Fetch,
    dir: &Path,
    limits: Limits,
    lookup: Lookup,
    turn: Option<tokio::sync::OwnedSemaphorePermit>,
) -> Result<LocalJar, ArtifactError> {
    let uri = fetch.uri.as_str();
    match tokio::time::timeout(limits.total, download_within(fetch, dir, limits, lookup, turn)).await {
        Ok(result) => result,
        Err(_) => Err(ArtifactError::TooSlow {
            uri: uri.to_owned(),
            limit: limits.total,
        }),
    }
}

async fn download_within(
    fetch: &Fetch,
    dir: &Path,
    limits: Limits,
    lookup: Lookup,
    turn: Option<tokio::sync::OwnedSemaphorePermit>,
) -> Result<LocalJar, ArtifactError> {
    let uri = fetch.uri.as_str();
    let check_hosts = fetch.policy.disallow_restricted_hosts;
    let download_error = |reason: String| ArtifactError::Download {
        uri: uri.to_owned(),
        reason,
    };
    let too_large = || ArtifactError::TooLarge {
        uri: uri.to_owned(),
        limit: limits.max_bytes,
    };
    let first = reqwest::Url::parse(uri).map_err(|e| ArtifactError::Invalid {
        uri: uri.to_owned(),
        reason: e.to_string(),
    })?;
    let jar_host = first.host_str().unwrap_or_default().to_owned();
    // reqwest takes rustls's process-wide provider; ring is the only one in the tree.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        // A proxy would make the connection somewhere the resolver never saw.
        .no_proxy()
        // Followed below, each hop checked and given its own headers.
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(limits.connect)
        .read_timeout(limits.read)
        .timeout(limits.total)
        .dns_resolver(CheckedResolver {
            check: check_hosts,
            lookup,
        })
        .build()
        .map_err(|e| download_error(e.to_string()))?;
    let mut url = first.clone();
    let mut hops = 0;
    let mut response = loop {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(download_error(format!(
                "redirected to {url}, which is not http or https"
            )));
        }
        let host = url.host_str().unwrap_or_default().to_owned();
        // IP literals are not resolved: checked here, at every hop.
        if check_hosts {
            // The URL parser writes IPv4 literals in any notation (`0x7f.1`, `2130706433`)
            // in dotted form and IPv6 ones in brackets.
            let literal = host.trim_matches(['[', ']']).parse::<IpAddr>().ok();
            if let Some(address) = literal
                && let Some(range) = addresses::restricted(address)
            {
                return Err(ArtifactError::RestrictedHost {
                    uri: uri.to_owned(),
                    host,
                    address,
                    range,
                });
            }
        }
        let headers = match fetch.headers.for_hop(&jar_host, &host, &fetch.policy) {
            Some(headers) => headers.to_header_map(uri)?,
            None => Default::default(),
        };
        let sent = client.get(url.clone()).headers(headers).send().await;
        let response = match sent {
            Ok(response) => response,
            Err(error) => {
                if let Some(refused) = refused_in(&error) {
                    return Err(ArtifactError::RestrictedHost {
                        uri: uri.to_owned(),
                        host: refused.host.clone(),
                        address: refused.address,
                        range: refused.range.clone(),
                    });
                }
                return Err(download_error(error_chain(&error)));
            }
        };
        if !response.status().is_redirection() {
            break response;
        }
        let Some(location) = response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|l| l.to_str().ok())
        else {
            return Err(download_error(format!(
                "HTTP {} without a Location",
                response.status()
            )));
        };
        hops += 1;
        if hops > MAX_REDIRECTS {
            return Err(download_error(format!("more than {MAX_REDIRECTS} redirects")));
        }
        url = url
            .join(location)
            .map_err(|e| download_error(format!("redirected to {location:?}: {e}")))?;
    };
    if !response.status().is_success() {
        return Err(download_error(format!("HTTP {}", response.status())));
    }
    // A declared length over the limit is refused before anything is written.
    if response
        .content_length()
        .is_some_and(|length| length > limits.max_bytes)
    {
        return Err(too_large());
    }
    let name = url
        .path_segments()
        .and_then(|mut s| s.next_back())
        .filter(|n| !n.is_empty() && !n.starts_with('.'))
        .unwrap_or("job.jar")
        .to_owned();
    tokio::fs::create_dir_all(dir)
        .await
        .map_err(|source| ArtifactError::Write {
            uri: uri.to_owned(),
            path: dir.display().to_string(),
            source,
        })?;
    // Made before the file, so that any error from here on (or the task being cancelled)
    // removes what was written.
    let jar = LocalJar {
        path: dir.join(format!("{}-{name}", crate::flink::TriggerId::random())),
        temporary: true,
        _turn: turn,
    };
    let write_error = |source| ArtifactError::Write {
        uri: uri.to_owned(),
        path: jar.path.display().to_string(),
        source,
    };
    let file = tokio::fs::File::create(&jar.path).await.map_err(write_error)?;
    let mut file = tokio::io::BufWriter::with_capacity(WRITE_BUFFER_BYTES, file);
    let mut written: u64 = 0;
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| download_error(error_chain(&e)))?
    {
        written += chunk.len() as u64;
        if written > limits.max_bytes {
            return Err(too_large());
        }
        file.write_all(&chunk).await.map_err(write_error)?;
    }
    file.flush().await.map_err(write_error)?;
    Ok(jar)
}

/// An error with its causes, as reqwest's own message leaves them out.
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use std::{
        io::{Read, Write},
        net::Ipv4Addr,
        sync::Mutex,
    };

    use super::*;

    #[test]
    fn uris_name_their_source_or_are_refused_with_the_scheme() {
        assert_eq!(
            source("/opt/jobs/a.jar").unwrap(),
            Source::File("/opt/jobs/a.jar")
        );
        assert_eq!(source("file:///opt/a.jar").unwrap(), Source::File("/opt/a.jar"));
        assert_eq!(
            source("file://localhost/opt/a.jar").unwrap(),
            Source::File("/opt/a.jar")
        );
        assert_eq!(source("file:/opt/a.jar").unwrap(), Source::File("/opt/a.jar"));
        assert_eq!(source("https://repo/a.jar").unwrap(), Source::Http);
        assert_eq!(source("HTTP://repo/a.jar").unwrap(), Source::Http);
        let error = source("s3://bucket/a.jar").unwrap_err().to_string();
        assert!(
            error.contains("spec.job.jarURI") && error.contains("\"s3\""),
            "{error}"
        );
        assert!(matches!(
            source("file://remote/a.jar"),
            Err(ArtifactError::Invalid { .. })
        ));
        assert!(matches!(
            source("relative/a.jar"),
            Err(ArtifactError::Invalid { .. })
        ));
        assert!(matches!(source("file:a.jar"), Err(ArtifactError::Invalid { .. })));
    }

    /// A directory of its own for each test.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("artifact-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[tokio::test]
    async fn file_jars_are_read_only_under_the_allowed_directories_once_resolved() {
        let root = scratch("files");
        let jobs = root.join("jobs");
        let outside = root.join("outside");
        std::fs::create_dir_all(&jobs).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(jobs.join("job.jar"), b"PK").unwrap();
        std::fs::write(outside.join("secret"), b"token").unwrap();
        // A link in the allowed directory that leads out of it.
        std::os::unix::fs::symlink(outside.join("secret"), jobs.join("escape.jar")).unwrap();
        std::os::unix::fs::symlink(&outside, jobs.join("escape-dir")).unwrap();
        let allowed = vec![jobs.display().to_string()];

        let jar = local_file(&format!("file://{}/job.jar", jobs.display()), &allowed)
            .await
            .unwrap();
        assert_eq!(jar.path, jobs.canonicalize().unwrap().join("job.jar"));
        let path = jar.path.clone();
        drop(jar);
        assert!(path.exists(), "a local jar is not the operator's to delete");

        for uri in [
            format!("file://{}/escape.jar", jobs.display()),
            format!("{}/escape-dir/secret", jobs.display()),
        ] {
            let error = local_file(&uri, &allowed).await.unwrap_err();
            let text = error.to_string();
            assert!(
                matches!(error, ArtifactError::FileRefused { .. }),
                "{uri}: {text}"
            );
            assert!(
                text.contains("spec.job.jarURI")
                    && text.contains(
                        &outside
                            .canonicalize()
                            .unwrap()
                            .join("secret")
                            .display()
                            .to_string()
                    )
                    && text.contains("kubernetes.operator.user.artifacts.file.allowed-dirs"),
                "{text}"
            );
        }
        // `..` out of the directory: refused as written, before anything is looked up.
        let error = local_file(&format!("file://{}/../outside/secret", jobs.display()), &allowed)
            .await
            .unwrap_err();
        assert!(matches!(error, ArtifactError::FileRefused { .. }), "{error}");
        let missing = local_file(&format!("{}/missing.jar", jobs.display()), &allowed)
            .await
            .unwrap_err()
            .to_string();
        assert!(
            missing.contains("missing.jar") && missing.contains("not a readable file"),
            "{missing}"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[tokio::test]
    async fn the_service_account_token_is_refused_naming_the_field_the_path_and_the_key() {
        let token = "file:///var/run/secrets/kubernetes.io/serviceaccount/token";
        for dirs in [vec![], vec!["/opt/flink/artifacts".to_owned()]] {
            let error = local_file(token, &dirs).await.unwrap_err().to_string();
            for part in [
                "spec.job.jarURI",
                "/var/run/secrets/kubernetes.io/serviceaccount/token",
                "kubernetes.operator.user.artifacts.file.allowed-dirs",
            ] {
                assert!(error.contains(part), "{dirs:?}: {error} lacks {part}");
            }
        }
    }

    #[test]
    fn download_headers_are_checked_and_shown_without_their_values() {
        let headers = ArtifactHeaders(vec![("Authorization".into(), "Bearer secret".into())]);
        assert_eq!(format!("{headers:?}"), r#"["Authorization"]"#);
        let map = headers.to_header_map("https://repo/a.jar").unwrap();
        assert_eq!(map["authorization"], "Bearer secret");
        let invalid = ArtifactHeaders(vec![("Bad Name".into(), "x".into())])
            .to_header_map("https://repo/a.jar")
            .unwrap_err()
            .to_string();
        assert!(
            invalid.contains("\"Bad Name\"") && invalid.contains("header name"),
            "{invalid}"
        );
        assert!(!invalid.contains("secret"));
    }

    /// Resolves every name of `table` to its address, counting lookups.
    fn table(entries: &[(&str, IpAddr)]) -> (Lookup, Arc<Mutex<Vec<String>>>) {
        let entries: Vec<(String, IpAddr)> = entries.iter().map(|(n, a)| ((*n).to_owned(), *a)).collect();
        let asked = Arc::new(Mutex::new(Vec::new()));
        let log = asked.clone();
        let lookup: Lookup = Arc::new(move |host: String| {
            log.lock().unwrap().push(host.clone());
            let found: Vec<IpAddr> = entries
                .iter()
                .filter(|(n, _)| *n == host)
                .map(|(_, a)| *a)
                .collect();
            Box::pin(async move {
                if found.is_empty() {
                    Err(std::io::Error::other(format!("{host}: no such host")))
                } else {
                    Ok(found)
                }
            })
        });
        (lookup, asked)
    }

    /// What a test server received: each request's head.
    type Heads = Arc<Mutex<Vec<String>>>;

    /// A server on 127.0.0.1: `/redirect?<location>` answers 302 to it, anything else the jar.
    fn server() -> (u16, Heads) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let heads: Heads = Arc::default();
        let seen = heads.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut request = Vec::new();
                let mut buffer = [0u8; 1024];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buffer) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => request.extend_from_slice(&buffer[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&request).to_ascii_lowercase();
                seen.lock().unwrap().push(head.clone());
                let path = head.split_whitespace().nth(1).unwrap_or_default().to_owned();
                let answer = match path.strip_prefix("/redirect?") {
                    Some(location) => format!(
                        "HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    ),
                    None => "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nPK".to_owned(),
                };
                let _ = stream.write_all(answer.as_bytes());
            }
        });
        (port, heads)
    }

    fn fetch(uri: String, check: bool, headers: DownloadHeaders, header_hosts: &[&str]) -> Fetch {
        Fetch {
            uri,
            policy: ArtifactPolicy {
                disallow_restricted_hosts: check,
                header_hosts: header_hosts.iter().map(|h| (*h).to_owned()).collect(),
                ..ArtifactPolicy::default()
            },
            headers,
        }
    }

    fn limits() -> Limits {
        Limits::with_total(Duration::from_secs(10))
    }

    const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

    #[tokio::test]
    async fn a_name_that_resolves_to_loopback_is_refused_and_the_checked_address_is_the_one_connected_to() {
        let (port, heads) = server();
        let (lookup, asked) = table(&[("jars.test", LOOPBACK)]);
        let dir = scratch("rebind");
        let uri = format!("http://jars.test:{port}/job.jar");
        // Not checked: the name leads to the server on 127.0.0.1 through the operator's resolver
        // (the system's does not know it), looked up once.
        let jar = download(
            &fetch(uri.clone(), false, DownloadHeaders::None, &[]),
            &dir,
            limits(),
            lookup.clone(),
            None,
        )
        .await
        .unwrap();
        assert_eq!(std::fs::read(&jar.path).unwrap(), b"PK");
        assert_eq!(asked.lock().unwrap().as_slice(), ["jars.test"]);
        assert_eq!(heads.lock().unwrap().len(), 1);
        // Checked: refused at the lookup the connection uses, nothing sent.
        let error = download(
            &fetch(uri.clone(), true, DownloadHeaders::None, &[]),
            &dir,
            limits(),
            lookup,
            None,
        )
        .await
        .unwrap_err();
        let text = error.to_string();
        assert!(
            matches!(&error, ArtifactError::RestrictedHost { host, address, .. } if host == "jars.test" && *address == LOOPBACK),
            "{text}"
        );
        assert!(
            text.contains("127.0.0.0/8") && text.contains("disallow-restricted-hosts"),
            "{text}"
        );
        assert_eq!(heads.lock().unwrap().len(), 1, "nothing reached the server");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn literal_and_redirected_restricted_addresses_are_refused() {
        let (port, heads) = server();
        let (lookup, _) = table(&[("public.test", "93.184.216.34".parse().unwrap())]);
        let dir = scratch("literal");
        for uri in [
            format!("http://127.0.0.1:{port}/job.jar"),
            format!("http://[::ffff:127.0.0.1]:{port}/job.jar"),
            format!("http://0x7f.1:{port}/job.jar"),
            format!("http://100.64.0.1:{port}/job.jar"),
        ] {
            let error = download(
                &fetch(uri.clone(), true, DownloadHeaders::None, &[]),
                &dir,
                limits(),
                lookup.clone(),
                None,
            )
            .await
            .unwrap_err();
            assert!(
                matches!(error, ArtifactError::RestrictedHost { .. }),
                "{uri}: {error}"
            );
        }
        assert!(heads.lock().unwrap().is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn headers_go_only_where_they_belong_and_not_across_a_redirect() {
        let (port, heads) = server();
        let (lookup, _) = table(&[("repo.test", LOOPBACK), ("other.test", LOOPBACK)]);
        let dir = scratch("headers");
        let token = ArtifactHeaders(vec![("X-Token".into(), "s3cret".into())]);
        let sent = |heads: &Heads| -> Vec<bool> {
            heads
                .lock()
                .unwrap()
                .drain(..)
                .map(|h| h.contains("x-token: s3cret"))
                .collect()
        };
        let jar_at = |host: &str| format!("http://{host}:{port}/job.jar");
        let redirect = format!("http://repo.test:{port}/redirect?http://other.test:{port}/job.jar");
        // (case, jar URI, headers, listed hosts, whether each request carried the header)
        type Case<'a> = (&'a str, String, DownloadHeaders, &'a [&'a str], Vec<bool>);
        let cases: Vec<Case> = vec![
            (
                "platform headers, host not listed",
                jar_at("repo.test"),
                DownloadHeaders::Platform(token.clone()),
                &[],
                vec![false],
            ),
            (
                "platform headers, host listed",
                jar_at("repo.test"),
                DownloadHeaders::Platform(token.clone()),
                &["repo.test"],
                vec![true],
            ),
            (
                "platform headers, other host listed",
                jar_at("other.test"),
                DownloadHeaders::Platform(token.clone()),
                &["repo.test"],
                vec![false],
            ),
            (
                "platform headers, redirect off the listed host",
                redirect.clone(),
                DownloadHeaders::Platform(token.clone()),
                &["repo.test"],
                vec![true, false],
            ),
            (
                "own headers, the jar's host",
                jar_at("other.test"),
                DownloadHeaders::Own(token.clone()),
                &[],
                vec![true],
            ),
            (
                "own headers, redirect to another host",
                redirect.clone(),
                DownloadHeaders::Own(token.clone()),
                &[],
                vec![true, false],
            ),
        ];
        for (case, uri, headers, hosts, expected) in cases {
            download(
                &fetch(uri, false, headers, hosts),
                &dir,
                limits(),
                lookup.clone(),
                None,
            )
            .await
            .unwrap_or_else(|e| panic!("{case}: {e}"));
            assert_eq!(sent(&heads), expected, "{case}");
        }
        // The redirect's host (unknown to the system resolver) was looked up through the
        // operator's resolver, where restricted addresses are refused: every hop is checked as
        // the first one is.
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn headers_are_the_tenants_when_its_spec_sets_them() {
        let headers = vec![("A".to_owned(), "b".to_owned())];
        assert_eq!(DownloadHeaders::of(vec![], true), DownloadHeaders::None);
        assert!(matches!(
            DownloadHeaders::of(headers.clone(), true),
            DownloadHeaders::Own(_)
        ));
        assert!(matches!(
            DownloadHeaders::of(headers, false),
            DownloadHeaders::Platform(_)
        ));
    }
}
