//! A rustls certificate resolver whose certificate can be swapped while serving.
//!
//! rustls asks the resolver for a certificate once per handshake. Swapping the
//! `Arc<CertifiedKey>` behind a lock therefore affects new handshakes only:
//! connections that are already established have finished using the certificate and
//! keep working, so a rotation needs neither a restart nor dropped connections.

use std::hash::{DefaultHasher, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};

use rustls::ServerConfig;
use rustls::crypto::CryptoProvider;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use crate::cert_summary::{CertSummary, summarize};
use crate::error::{CertsError, Result};
use crate::pem_files;

/// Serves the certificate chain and key from two PEM files, and re-reads them on
/// [`reload`](Self::reload) (or periodically, see [`spawn_watcher`](Self::spawn_watcher)).
///
/// Use [`server_config`](Self::server_config) to get a rustls configuration that
/// resolves certificates through this resolver.
pub struct ReloadingCertResolver {
    pub(crate) cert_path: PathBuf,
    pub(crate) key_path: PathBuf,
    provider: Arc<CryptoProvider>,
    current: RwLock<Current>,
}

/// The certificate being served and a hash of the file contents it came from, so a
/// reload of unchanged files is a cheap no-op.
struct Current {
    key: Arc<CertifiedKey>,
    contents_hash: u64,
}

impl ReloadingCertResolver {
    /// Loads the PEM certificate chain (leaf first) from `cert` and the PEM private key
    /// from `key`.
    ///
    /// # Errors
    ///
    /// Names the offending file when it cannot be read, holds no certificate or no
    /// private key, the key is of a type ring cannot use, or the key does not belong
    /// to the leaf certificate.
    pub fn from_files(cert: &Path, key: &Path) -> Result<Arc<Self>> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let (certified, contents_hash) = load(cert, key, &provider)?;
        Ok(Arc::new(Self {
            cert_path: cert.to_path_buf(),
            key_path: key.to_path_buf(),
            provider,
            current: RwLock::new(Current {
                key: Arc::new(certified),
                contents_hash,
            }),
        }))
    }

    /// Re-reads both files and, if their contents changed and parse, serves the new
    /// certificate from the next handshake on.
    ///
    /// Returns `Ok(false)` when the files are byte-for-byte what is already served.
    ///
    /// # Errors
    ///
    /// The same as [`from_files`](Self::from_files). On error the previous
    /// certificate stays in service: a half-rotated or broken Secret must not take
    /// the webhook down, so the caller only has to log the error.
    pub fn reload(&self) -> Result<bool> {
        let cert_pem = pem_files::read(&self.cert_path)?;
        let key_pem = pem_files::read(&self.key_path)?;
        let contents_hash = hash_contents(&cert_pem, &key_pem);
        if self.read_current().contents_hash == contents_hash {
            return Ok(false);
        }
        let certified = pem_files::certified_key(
            &self.cert_path,
            &cert_pem,
            &self.key_path,
            &key_pem,
            &self.provider,
        )?;
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Current {
            key: Arc::new(certified),
            contents_hash,
        };
        Ok(true)
    }

    /// A TLS server configuration that takes its certificate from this resolver.
    ///
    /// Uses the ring provider explicitly (the process may not have a default
    /// installed), allows TLS 1.2 and 1.3, requests no client certificate and offers
    /// ALPN `h2` and `http/1.1`.
    ///
    /// # Errors
    ///
    /// [`CertsError::ServerConfig`] if rustls rejects the protocol versions for the
    /// provider, which does not happen with ring.
    pub fn server_config(self: &Arc<Self>) -> Result<Arc<ServerConfig>> {
        let mut config = ServerConfig::builder_with_provider(Arc::clone(&self.provider))
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .map_err(|source| CertsError::ServerConfig { source })?
            .with_no_client_auth()
            .with_cert_resolver(Arc::clone(self) as Arc<dyn ResolvesServerCert>);
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }

    /// The certificate chain and key new handshakes currently get.
    pub fn current(&self) -> Arc<CertifiedKey> {
        Arc::clone(&self.read_current().key)
    }

    /// When the served leaf certificate expires, in seconds since the Unix epoch (None if
    /// it cannot be read from the certificate).
    pub fn not_after_unix(&self) -> Option<i64> {
        self.current_summary()?.not_after_unix()
    }

    /// Serial and expiry of the served leaf certificate, for log lines.
    pub(crate) fn current_summary(&self) -> Option<CertSummary> {
        let key = self.current();
        key.cert.first().and_then(|leaf| summarize(leaf))
    }

    fn read_current(&self) -> std::sync::RwLockReadGuard<'_, Current> {
        // The lock only guards an assignment of a fully built value, so a panic
        // elsewhere while it was held cannot have left it half-updated; carrying on
        // beats failing every future handshake.
        self.current.read().unwrap_or_else(PoisonError::into_inner)
    }
}

impl ResolvesServerCert for ReloadingCertResolver {
    fn resolve(&self, _client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}

impl std::fmt::Debug for ReloadingCertResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReloadingCertResolver")
            .field("cert_path", &self.cert_path)
            .field("key_path", &self.key_path)
            .finish_non_exhaustive()
    }
}

fn load(cert: &Path, key: &Path, provider: &CryptoProvider) -> Result<(CertifiedKey, u64)> {
    let cert_pem = pem_files::read(cert)?;
    let key_pem = pem_files::read(key)?;
    let certified = pem_files::certified_key(cert, &cert_pem, key, &key_pem, provider)?;
    Ok((certified, hash_contents(&cert_pem, &key_pem)))
}

/// Change detection only, not security: whoever can write the files can serve any
/// certificate anyway, so a fast non-cryptographic hash is enough.
fn hash_contents(cert_pem: &[u8], key_pem: &[u8]) -> u64 {
    let mut hasher = DefaultHasher::new();
    // Length-prefix the first file so moving bytes from one file to the other counts
    // as a change.
    hasher.write_usize(cert_pem.len());
    hasher.write(cert_pem);
    hasher.write(key_pem);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CertPaths;
    use crate::test_support::{
        TempDir, assert_echoes, client_trusting, client_with, connect, first_cert, is_untrusted,
        localhost_certs, peer_leaf, start_echo_server,
    };

    fn resolver_for(paths: &CertPaths) -> Arc<ReloadingCertResolver> {
        ReloadingCertResolver::from_files(&paths.cert, &paths.key).expect("load")
    }

    fn mentions(err: &CertsError, path: &Path) -> bool {
        err.to_string().contains(&path.display().to_string())
    }

    #[test]
    fn from_files_names_a_missing_file() {
        let dir = TempDir::new();
        localhost_certs().write_to_dir(dir.path()).expect("write");
        let paths = CertPaths::in_dir(dir.path());
        let missing = dir.path().join("nope.crt");

        let err = ReloadingCertResolver::from_files(&missing, &paths.key).expect_err("missing");
        assert!(matches!(err, CertsError::Read { .. }), "{err:?}");
        assert!(mentions(&err, &missing), "{err}");
    }

    #[test]
    fn from_files_rejects_an_empty_certificate_file() {
        let dir = TempDir::new();
        localhost_certs().write_to_dir(dir.path()).expect("write");
        let paths = CertPaths::in_dir(dir.path());
        std::fs::write(&paths.cert, b"").expect("truncate");

        let err = resolver_for_err(&paths);
        assert!(matches!(err, CertsError::NoCertificate { .. }), "{err:?}");
        assert!(mentions(&err, &paths.cert), "{err}");
    }

    #[test]
    fn from_files_rejects_a_key_file_without_a_key() {
        let dir = TempDir::new();
        let certs = localhost_certs();
        certs.write_to_dir(dir.path()).expect("write");
        let paths = CertPaths::in_dir(dir.path());
        // A certificate where the key should be: valid PEM, but no key in it.
        std::fs::write(&paths.key, &certs.cert_pem).expect("overwrite key");

        let err = resolver_for_err(&paths);
        assert!(matches!(err, CertsError::NoPrivateKey { .. }), "{err:?}");
        assert!(mentions(&err, &paths.key), "{err}");
    }

    #[test]
    fn from_files_rejects_a_key_that_belongs_to_another_certificate() {
        let dir = TempDir::new();
        localhost_certs().write_to_dir(dir.path()).expect("write");
        let paths = CertPaths::in_dir(dir.path());
        std::fs::write(&paths.key, localhost_certs().key_pem).expect("foreign key");

        let err = resolver_for_err(&paths);
        assert!(matches!(err, CertsError::KeyMismatch { .. }), "{err:?}");
        assert!(mentions(&err, &paths.key) && mentions(&err, &paths.cert), "{err}");
    }

    #[test]
    fn from_files_rejects_a_certificate_that_is_not_x509() {
        let dir = TempDir::new();
        localhost_certs().write_to_dir(dir.path()).expect("write");
        let paths = CertPaths::in_dir(dir.path());
        // Well-formed PEM around bytes that are no certificate.
        let bogus = "-----BEGIN CERTIFICATE-----\nAAECAwQF\n-----END CERTIFICATE-----\n";
        std::fs::write(&paths.cert, bogus).expect("overwrite cert");

        let err = resolver_for_err(&paths);
        assert!(matches!(err, CertsError::InvalidCertificate { .. }), "{err:?}");
        assert!(mentions(&err, &paths.cert), "{err}");
    }

    fn resolver_for_err(paths: &CertPaths) -> CertsError {
        ReloadingCertResolver::from_files(&paths.cert, &paths.key).expect_err("must fail")
    }

    #[test]
    fn reloading_unchanged_files_reports_no_change() {
        let dir = TempDir::new();
        localhost_certs().write_to_dir(dir.path()).expect("write");
        let resolver = resolver_for(&CertPaths::in_dir(dir.path()));
        let before = resolver.current();

        assert!(!resolver.reload().expect("reload"));
        assert!(Arc::ptr_eq(&before, &resolver.current()));
    }

    #[tokio::test]
    async fn reload_serves_the_new_certificate_to_new_handshakes_and_keeps_open_connections() {
        let dir = TempDir::new();
        let old = localhost_certs();
        old.write_to_dir(dir.path()).expect("write old");
        let resolver = resolver_for(&CertPaths::in_dir(dir.path()));
        let server = start_echo_server(resolver.server_config().expect("config")).await;

        let mut established = connect(&client_trusting(&old.ca_pem), server.addr, "localhost")
            .await
            .expect("handshake with the old certificate");
        assert_echoes(&mut established, b"before rotation").await;

        let new = localhost_certs();
        new.write_to_dir(dir.path()).expect("write new");
        assert!(resolver.reload().expect("reload"), "files changed");

        let fresh = connect(&client_trusting(&new.ca_pem), server.addr, "localhost")
            .await
            .expect("handshake with the new certificate");
        assert_eq!(peer_leaf(&fresh), first_cert(&new.cert_pem));

        let err = connect(&client_trusting(&old.ca_pem), server.addr, "localhost")
            .await
            .expect_err("old CA no longer vouches for the served certificate");
        assert!(is_untrusted(&err), "{err}");

        assert_echoes(&mut established, b"after rotation").await;
        assert_eq!(peer_leaf(&established), first_cert(&old.cert_pem));
    }

    #[tokio::test]
    async fn reload_with_a_broken_key_keeps_serving_the_old_certificate_and_names_the_file() {
        let dir = TempDir::new();
        let old = localhost_certs();
        old.write_to_dir(dir.path()).expect("write");
        let paths = CertPaths::in_dir(dir.path());
        let resolver = resolver_for(&paths);
        let server = start_echo_server(resolver.server_config().expect("config")).await;

        let new = localhost_certs();
        std::fs::write(&paths.cert, &new.cert_pem).expect("new cert");
        // Valid PEM framing around a body of zero bytes: parses as PEM, fails as a key.
        let corrupted: Vec<String> = new
            .key_pem
            .lines()
            .map(|line| match line.starts_with("-----") {
                true => line.to_owned(),
                false => "A".repeat(line.len()),
            })
            .collect();
        std::fs::write(&paths.key, corrupted.join("\n")).expect("broken key");

        let err = resolver.reload().expect_err("broken key");
        assert!(matches!(err, CertsError::UnsupportedKey { .. }), "{err:?}");
        assert!(mentions(&err, &paths.key), "{err}");

        let stream = connect(&client_trusting(&old.ca_pem), server.addr, "localhost")
            .await
            .expect("still serving the old certificate");
        assert_eq!(peer_leaf(&stream), first_cert(&old.cert_pem));
    }

    #[tokio::test]
    async fn reload_after_a_failed_reload_picks_up_the_repaired_files() {
        let dir = TempDir::new();
        localhost_certs().write_to_dir(dir.path()).expect("write");
        let paths = CertPaths::in_dir(dir.path());
        let resolver = resolver_for(&paths);

        std::fs::write(&paths.key, b"garbage").expect("broken key");
        resolver.reload().expect_err("broken key");
        resolver.reload().expect_err("still broken, still an error");

        let new = localhost_certs();
        new.write_to_dir(dir.path()).expect("repair");
        assert!(resolver.reload().expect("reload"));
        assert_eq!(resolver.current().cert.first(), Some(&first_cert(&new.cert_pem)));
    }

    #[tokio::test]
    async fn server_config_speaks_tls12_and_tls13_and_negotiates_alpn() {
        let dir = TempDir::new();
        let certs = localhost_certs();
        certs.write_to_dir(dir.path()).expect("write");
        let resolver = resolver_for(&CertPaths::in_dir(dir.path()));
        let server = start_echo_server(resolver.server_config().expect("config")).await;

        let cases: [(&'static rustls::SupportedProtocolVersion, &[u8]); 2] = [
            (&rustls::version::TLS12, b"http/1.1"),
            (&rustls::version::TLS13, b"h2"),
        ];
        for (version, alpn) in cases {
            let client = client_with(&certs.ca_pem, &[version], vec![alpn.to_vec()]);
            let mut stream = connect(&client, server.addr, "localhost")
                .await
                .unwrap_or_else(|e| panic!("{version:?}: {e}"));
            let session = stream.get_ref().1;
            assert_eq!(session.protocol_version(), Some(version.version));
            assert_eq!(session.alpn_protocol(), Some(alpn));
            assert_echoes(&mut stream, b"ping").await;
        }
    }
}
