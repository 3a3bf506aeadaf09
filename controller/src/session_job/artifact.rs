//! The job jar of a session job, made available as a local file for the upload.
//!
//! `http` and `https` URIs are downloaded into a temporary file; `file://` URIs and plain
//! absolute paths name a file on the operator's own file system, used in place. Any other
//! scheme is refused with the URI and the scheme named.
//!
//! A download is streamed to its file, never held in memory, up to [`MAX_ARTIFACT_BYTES`],
//! and only [`DOWNLOADS_AT_ONCE`] downloaded jars exist at once: the process that fetches
//! them also answers admission for the whole cluster, and its disk is the pod's.

use std::{
    net::IpAddr,
    path::{Path, PathBuf},
    time::Duration,
};

use tokio::io::AsyncWriteExt;

const FIELD: &str = "spec.job.jarURI";

/// The largest jar downloaded. Job jars with their dependencies shaded in are tens to a
/// couple of hundred MiB; Flink's own libraries, which the session cluster provides, are not
/// part of them.
pub const MAX_ARTIFACT_BYTES: u64 = 512 * 1024 * 1024;

/// How many downloaded jars may exist at once, from the start of their download to the end
/// of their upload: together at most this many times [`MAX_ARTIFACT_BYTES`] on disk, and as
/// many reconciles moving jars instead of waiting on JobManagers.
pub const DOWNLOADS_AT_ONCE: usize = 2;

/// Process-wide: the bound is on the process's disk and network, whichever job downloads.
static DOWNLOADS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(DOWNLOADS_AT_ONCE);

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
        "{FIELD} {uri:?}: host {host} resolves to a restricted address {address}; the operator does not fetch jars from it"
    )]
    RestrictedHost {
        uri: String,
        host: String,
        address: IpAddr,
    },
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
        "{FIELD} {uri:?}: {DOWNLOADS_AT_ONCE} other jars were being downloaded or uploaded for {waited:?}; tried again on a later reconcile"
    )]
    Busy { uri: String, waited: Duration },
    #[error("writing the download of {FIELD} {uri:?} to {path}: {source}")]
    Write {
        uri: String,
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// A jar on the local file system; a downloaded one is removed when dropped, and holds
/// one of the [`DOWNLOADS_AT_ONCE`] turns until then.
#[derive(Debug)]
pub struct LocalJar {
    pub path: PathBuf,
    temporary: bool,
    _turn: Option<tokio::sync::SemaphorePermit<'static>>,
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
    if uri.starts_with('/') {
        return Ok(Source::File(uri));
    }
    let Some((scheme, rest)) = uri.split_once(':') else {
        return Err(ArtifactError::Invalid {
            uri: uri.to_owned(),
            reason: "it has no scheme and is not an absolute path".to_owned(),
        });
    };
    match scheme.to_ascii_lowercase().as_str() {
        "http" | "https" => Ok(Source::Http),
        "file" => {
            // file:///path, file://localhost/path and file:/path all name /path.
            let path = match rest.strip_prefix("//") {
                Some(authority_and_path) => {
                    let slash = authority_and_path.find('/').unwrap_or(authority_and_path.len());
                    let (authority, path) = authority_and_path.split_at(slash);
                    if !(authority.is_empty() || authority.eq_ignore_ascii_case("localhost")) {
                        return Err(ArtifactError::Invalid {
                            uri: uri.to_owned(),
                            reason: format!("file URIs name local files; host {authority:?} is not local"),
                        });
                    }
                    path
                }
                None => rest,
            };
            if !path.starts_with('/') {
                return Err(ArtifactError::Invalid {
                    uri: uri.to_owned(),
                    reason: "a file URI needs an absolute path".to_owned(),
                });
            }
            Ok(Source::File(path))
        }
        other => Err(ArtifactError::UnsupportedScheme {
            uri: uri.to_owned(),
            scheme: other.to_owned(),
        }),
    }
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

/// The jar of `uri` as a local file; downloads go into `dir`. With `check_hosts`, an http(s)
/// host that resolves to a loopback, private, link-local, wildcard or multicast address is
/// refused (admission checks literal addresses only; names are checked here, as resolved).
/// A download larger than `max_bytes` ([`MAX_ARTIFACT_BYTES`] in the operator) is refused;
/// waiting for a download's turn and the download each take at most `timeout`. A download
/// sends `headers`.
pub async fn fetch(
    uri: Option<&str>,
    dir: &Path,
    check_hosts: bool,
    timeout: Duration,
    max_bytes: u64,
    headers: &ArtifactHeaders,
) -> Result<LocalJar, ArtifactError> {
    let uri = uri
        .filter(|u| !u.trim().is_empty())
        .ok_or(ArtifactError::Missing)?;
    match source(uri)? {
        Source::File(path) => {
            tokio::fs::metadata(path)
                .await
                .and_then(|m| {
                    if m.is_file() {
                        Ok(())
                    } else {
                        Err(std::io::Error::other("not a regular file"))
                    }
                })
                .map_err(|source| ArtifactError::Unreadable {
                    uri: uri.to_owned(),
                    path: path.to_owned(),
                    source,
                })?;
            Ok(LocalJar {
                path: PathBuf::from(path),
                temporary: false,
                _turn: None,
            })
        }
        Source::Http => download(uri, dir, check_hosts, timeout, max_bytes, headers).await,
    }
}

async fn download(
    uri: &str,
    dir: &Path,
    check_hosts: bool,
    timeout: Duration,
    max_bytes: u64,
    headers: &ArtifactHeaders,
) -> Result<LocalJar, ArtifactError> {
    let headers = headers.to_header_map(uri)?;
    let url = reqwest::Url::parse(uri).map_err(|e| ArtifactError::Invalid {
        uri: uri.to_owned(),
        reason: e.to_string(),
    })?;
    if check_hosts {
        check_host(uri, &url).await?;
    }
    let turn = tokio::time::timeout(timeout, DOWNLOADS.acquire())
        .await
        .map_err(|_| ArtifactError::Busy {
            uri: uri.to_owned(),
            waited: timeout,
        })?
        .map_err(|_| ArtifactError::Download {
            uri: uri.to_owned(),
            reason: "the operator is shutting down its downloads".to_owned(),
        })?;
    let download_error = |reason: String| ArtifactError::Download {
        uri: uri.to_owned(),
        reason,
    };
    let too_large = || ArtifactError::TooLarge {
        uri: uri.to_owned(),
        limit: max_bytes,
    };
    // reqwest takes rustls's process-wide provider; ring is the only one in the tree.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .timeout(timeout)
        // A redirect could lead to a host the check above never saw.
        .redirect(if check_hosts {
            reqwest::redirect::Policy::none()
        } else {
            reqwest::redirect::Policy::limited(5)
        })
        .build()
        .map_err(|e| download_error(e.to_string()))?;
    let mut response = client
        .get(url.clone())
        .headers(headers)
        .send()
        .await
        .map_err(|e| download_error(e.to_string()))?;
    if !response.status().is_success() {
        return Err(download_error(format!("HTTP {}", response.status())));
    }
    // A declared length over the limit is refused before anything is written.
    if response.content_length().is_some_and(|length| length > max_bytes) {
        return Err(too_large());
    }
    let name = url
        .path_segments()
        .and_then(|mut s| s.next_back())
        .filter(|n| !n.is_empty())
        .unwrap_or("job.jar")
        .to_owned();
    tokio::fs::create_dir_all(dir)
        .await
        .map_err(|source| ArtifactError::Write {
            uri: uri.to_owned(),
            path: dir.display().to_string(),
            source,
        })?;
    // Made before the file, so that any error from here on removes what was written.
    let jar = LocalJar {
        path: dir.join(format!("{}-{name}", crate::flink::TriggerId::random())),
        temporary: true,
        _turn: Some(turn),
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
        .map_err(|e| download_error(e.to_string()))?
    {
        written += chunk.len() as u64;
        if written > max_bytes {
            return Err(too_large());
        }
        file.write_all(&chunk).await.map_err(write_error)?;
    }
    file.flush().await.map_err(write_error)?;
    Ok(jar)
}

async fn check_host(uri: &str, url: &reqwest::Url) -> Result<(), ArtifactError> {
    let host = url
        .host_str()
        .unwrap_or_default()
        .trim_matches(['[', ']'])
        .to_owned();
    let port = url.port_or_known_default().unwrap_or(443);
    let addresses =
        tokio::net::lookup_host((host.clone(), port))
            .await
            .map_err(|e| ArtifactError::Download {
                uri: uri.to_owned(),
                reason: format!("resolving {host}: {e}"),
            })?;
    for address in addresses {
        if is_restricted(address.ip()) {
            return Err(ArtifactError::RestrictedHost {
                uri: uri.to_owned(),
                host,
                address: address.ip(),
            });
        }
    }
    Ok(())
}

fn is_restricted(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(ip) => {
            ip.is_loopback()
                || ip.is_link_local()
                || ip.is_private()
                || ip.is_unspecified()
                || ip.is_multicast()
        }
        IpAddr::V6(ip) => {
            let first = ip.segments()[0];
            ip.is_loopback()
                || ip.is_unspecified()
                || ip.is_multicast()
                || (first & 0xffc0) == 0xfe80
                || (first & 0xfe00) == 0xfc00
                || ip
                    .to_ipv4_mapped()
                    .is_some_and(|v4| is_restricted(IpAddr::V4(v4)))
        }
    }
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn restricted_addresses() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "169.254.1.1",
            "0.0.0.0",
            "::1",
            "fe80::1",
            "fd00::1",
            "::ffff:192.168.1.1",
        ] {
            assert!(is_restricted(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["93.184.216.34", "2606:2800:220:1::1"] {
            assert!(!is_restricted(ip.parse().unwrap()), "{ip}");
        }
    }

    #[tokio::test]
    async fn local_files_are_used_in_place_and_missing_ones_named() {
        let dir = std::env::temp_dir().join(format!("artifact-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let jar = dir.join("job.jar");
        std::fs::write(&jar, b"PK").unwrap();
        let uri = format!("file://{}", jar.display());
        let local = fetch(
            Some(&uri),
            &dir,
            true,
            Duration::from_secs(5),
            MAX_ARTIFACT_BYTES,
            &ArtifactHeaders::default(),
        )
        .await
        .unwrap();
        assert_eq!(local.path, jar);
        drop(local);
        assert!(jar.exists(), "a local jar is not the operator's to delete");
        let error = fetch(
            Some("/nonexistent/job.jar"),
            &dir,
            true,
            Duration::from_secs(5),
            MAX_ARTIFACT_BYTES,
            &ArtifactHeaders::default(),
        )
        .await
        .unwrap_err()
        .to_string();
        assert!(error.contains("/nonexistent/job.jar"), "{error}");
        assert!(matches!(
            fetch(
                None,
                &dir,
                true,
                Duration::from_secs(5),
                MAX_ARTIFACT_BYTES,
                &ArtifactHeaders::default()
            )
            .await,
            Err(ArtifactError::Missing)
        ));
        let refused = fetch(
            Some("http://127.0.0.1:1/job.jar"),
            &dir,
            true,
            Duration::from_secs(5),
            MAX_ARTIFACT_BYTES,
            &ArtifactHeaders::default(),
        )
        .await;
        assert!(
            matches!(refused, Err(ArtifactError::RestrictedHost { .. })),
            "{refused:?}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
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
}
