//! TLS towards JobManagers whose REST API serves HTTPS (`security.ssl.rest.enabled`): the
//! certificates the operator trusts and the one it presents when Flink asks for a client
//! certificate (`security.ssl.rest.authentication-enabled`).
//!
//! They are read once at start from the files that the Apache operator's environment
//! variables name, so that a platform team keeps its mounts: `OPERATOR_TRUSTSTORE_PATH`
//! (the certificates of the authorities that sign the JobManagers' certificates) and
//! `OPERATOR_KEYSTORE_PATH` (the operator's certificate chain and its private key). Both are
//! PEM files here (cert-manager writes `ca.crt`, `tls.crt` and `tls.key` beside the
//! keystores it can write); a Java keystore (PKCS#12 or JKS) is refused with a message that
//! says so, as is `OPERATOR_KEYSTORE_PASSWORD` (a PEM key is not encrypted).
//!
//! As Flink's own REST client does, the operator checks that a JobManager's certificate was
//! signed by an authority of the truststore, not that it names the host: the operator
//! reaches a JobManager by its Service's name or by a pod address, which a certificate seldom
//! lists. Without a truststore, the platform's authorities are trusted and the host checked.

use std::{fmt, path::Path};

use reqwest::{Certificate, ClientBuilder, Identity};

/// The file of the authorities the operator trusts (PEM).
pub const TRUSTSTORE_ENV: &str = "OPERATOR_TRUSTSTORE_PATH";
/// The file of the operator's certificate chain and private key (PEM).
pub const KEYSTORE_ENV: &str = "OPERATOR_KEYSTORE_PATH";
/// The password of a keystore, which PEM files do not have.
pub const KEYSTORE_PASSWORD_ENV: &str = "OPERATOR_KEYSTORE_PASSWORD";

/// Why the operator's REST TLS files cannot be used; the operator does not start.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{env}: {path} cannot be read: {source}")]
    Unreadable {
        env: &'static str,
        path: String,
        source: std::io::Error,
    },
    #[error(
        "{env}: {path} is {found}, not PEM: Java keystores are not read; give the certificates \
         (and the operator's private key) in PEM, as cert-manager writes them in ca.crt, tls.crt \
         and tls.key"
    )]
    NotPem {
        env: &'static str,
        path: String,
        found: &'static str,
    },
    #[error("{env}: {path} holds no PEM certificate")]
    NoCertificate { env: &'static str, path: String },
    #[error("{env}: {path} holds no unencrypted PEM private key (PKCS#8, PKCS#1 or SEC1)")]
    NoPrivateKey { env: &'static str, path: String },
    #[error("{env}: {path}: {reason}")]
    Invalid {
        env: &'static str,
        path: String,
        reason: String,
    },
    #[error(
        "{KEYSTORE_PASSWORD_ENV} is set, but the operator reads its key from a PEM file, which has \
         no password: unset it, and give an unencrypted key in {KEYSTORE_ENV}"
    )]
    Password,
}

/// What the operator trusts and presents over HTTPS.
#[derive(Clone)]
pub struct RestTls {
    roots: Vec<Certificate>,
    identity: Option<Identity>,
    /// Where they were read from, for the log and `Debug`.
    source: String,
}

impl fmt::Debug for RestTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RestTls")
            .field("source", &self.source)
            .field("trusted", &self.roots.len())
            .field("client_certificate", &self.identity.is_some())
            .finish()
    }
}

impl RestTls {
    /// The files the environment names; None when it names none (HTTPS then trusts the
    /// platform's authorities and presents no certificate).
    pub fn from_env() -> Result<Option<Self>, TlsError> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        if var(KEYSTORE_PASSWORD_ENV).is_some() {
            return Err(TlsError::Password);
        }
        Self::from_files(
            var(TRUSTSTORE_ENV).as_deref().map(Path::new),
            var(KEYSTORE_ENV).as_deref().map(Path::new),
        )
    }

    /// The authorities of `truststore` and the certificate and key of `keystore`.
    pub fn from_files(truststore: Option<&Path>, keystore: Option<&Path>) -> Result<Option<Self>, TlsError> {
        if truststore.is_none() && keystore.is_none() {
            return Ok(None);
        }
        let mut source = Vec::new();
        let roots = match truststore {
            Some(path) => {
                let pem = read_pem(TRUSTSTORE_ENV, path)?;
                source.push(format!("trusting {}", path.display()));
                trusted(TRUSTSTORE_ENV, path, &pem)?
            }
            None => Vec::new(),
        };
        let identity = match keystore {
            Some(path) => {
                let pem = read_pem(KEYSTORE_ENV, path)?;
                source.push(format!("presenting {}", path.display()));
                Some(identity(KEYSTORE_ENV, path, &pem)?)
            }
            None => None,
        };
        Ok(Some(Self {
            roots,
            identity,
            source: source.join(", "),
        }))
    }

    /// `builder` presenting this certificate (when given) and trusting only these
    /// authorities (when given) without checking that a certificate names its host; without
    /// them, the platform's authorities are trusted and the host is checked.
    pub fn apply(&self, mut builder: ClientBuilder) -> ClientBuilder {
        if let Some(identity) = &self.identity {
            builder = builder.identity(identity.clone());
        }
        if self.roots.is_empty() {
            return builder;
        }
        builder
            .tls_certs_only(self.roots.clone())
            .tls_danger_accept_invalid_hostnames(true)
    }

    /// Where the files were read from.
    pub fn source(&self) -> &str {
        &self.source
    }
}

fn read_pem(env: &'static str, path: &Path) -> Result<Vec<u8>, TlsError> {
    let bytes = std::fs::read(path).map_err(|source| TlsError::Unreadable {
        env,
        path: path.display().to_string(),
        source,
    })?;
    if let Some(found) = keystore_kind(&bytes) {
        return Err(TlsError::NotPem {
            env,
            path: path.display().to_string(),
            found,
        });
    }
    Ok(bytes)
}

/// What a file that is not PEM looks like, when it is a keystore or other binary data.
fn keystore_kind(bytes: &[u8]) -> Option<&'static str> {
    const JKS: [u8; 4] = [0xfe, 0xed, 0xfe, 0xed];
    const JCEKS: [u8; 4] = [0xce, 0xce, 0xce, 0xce];
    if bytes.starts_with(&JKS) || bytes.starts_with(&JCEKS) {
        Some("a Java KeyStore (JKS)")
    } else if bytes.first() == Some(&0x30) {
        // A DER SEQUENCE: a PKCS#12 keystore (or a DER certificate).
        Some("DER (a PKCS#12 keystore or a DER certificate)")
    } else if !bytes.windows(11).any(|w| w == b"-----BEGIN ") {
        Some("no PEM block")
    } else {
        None
    }
}

fn trusted(env: &'static str, path: &Path, pem: &[u8]) -> Result<Vec<Certificate>, TlsError> {
    if !contains(pem, b"-----BEGIN CERTIFICATE-----") {
        return Err(TlsError::NoCertificate {
            env,
            path: path.display().to_string(),
        });
    }
    Certificate::from_pem_bundle(pem).map_err(|e| TlsError::Invalid {
        env,
        path: path.display().to_string(),
        reason: e.to_string(),
    })
}

fn identity(env: &'static str, path: &Path, pem: &[u8]) -> Result<Identity, TlsError> {
    let path_text = || path.display().to_string();
    if !contains(pem, b"-----BEGIN CERTIFICATE-----") {
        return Err(TlsError::NoCertificate {
            env,
            path: path_text(),
        });
    }
    let key = [
        b"-----BEGIN PRIVATE KEY-----".as_slice(),
        b"-----BEGIN RSA PRIVATE KEY-----",
        b"-----BEGIN EC PRIVATE KEY-----",
    ];
    if !key.iter().any(|k| contains(pem, k)) {
        return Err(TlsError::NoPrivateKey {
            env,
            path: path_text(),
        });
    }
    Identity::from_pem(pem).map_err(|e| TlsError::Invalid {
        env,
        path: path_text(),
        reason: e.to_string(),
    })
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory of its own under the system's temporary one, removed when dropped.
    struct TempDir(std::path::PathBuf);

    impl TempDir {
        fn new() -> Self {
            let dir = std::env::temp_dir().join(format!("rest-tls-test-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            Self(dir)
        }

        fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn written(dir: &Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }

    #[test]
    fn pem_files_are_read_and_keystores_are_refused_naming_the_variable() {
        let dir = TempDir::new();
        let ca = rcgen::generate_simple_self_signed(vec!["ca".to_owned()]).unwrap();
        let client = rcgen::generate_simple_self_signed(vec!["operator".to_owned()]).unwrap();
        let ca_pem = written(dir.path(), "ca.crt", ca.cert.pem().as_bytes());
        let both = format!("{}{}", client.cert.pem(), client.signing_key.serialize_pem());
        let keystore = written(dir.path(), "operator.pem", both.as_bytes());

        assert!(RestTls::from_files(None, None).unwrap().is_none());
        let tls = RestTls::from_files(Some(&ca_pem), Some(&keystore))
            .unwrap()
            .unwrap();
        assert_eq!(tls.roots.len(), 1);
        assert!(tls.identity.is_some());
        assert!(tls.source().contains("ca.crt"), "{}", tls.source());
        // The client builds with them, and with either alone.
        tls.apply(reqwest::Client::builder()).build().unwrap();
        for (truststore, keystore) in [(Some(&ca_pem), None), (None, Some(&keystore))] {
            let tls = RestTls::from_files(truststore.map(|p| p.as_path()), keystore.map(|p| p.as_path()));
            tls.unwrap()
                .unwrap()
                .apply(reqwest::Client::builder())
                .build()
                .unwrap();
        }

        let key_only = client.signing_key.serialize_pem();
        let cases: [(&str, &[u8], &str); 4] = [
            (
                "jks",
                &[0xfe, 0xed, 0xfe, 0xed, 0, 0, 0, 2],
                "a Java KeyStore (JKS), not PEM",
            ),
            ("p12", &[0x30, 0x82, 0x0a, 0x0b], "DER (a PKCS#12 keystore"),
            ("text", b"hello", "no PEM block, not PEM"),
            ("key-only", key_only.as_bytes(), "holds no PEM certificate"),
        ];
        for (name, bytes, says) in cases {
            let path = written(dir.path(), name, bytes);
            let error = RestTls::from_files(Some(&path), None).unwrap_err().to_string();
            assert!(error.starts_with("OPERATOR_TRUSTSTORE_PATH: "), "{name}: {error}");
            assert!(error.contains(says), "{name}: {error}");
        }
        let error = RestTls::from_files(None, Some(&ca_pem)).unwrap_err().to_string();
        assert!(
            error.starts_with("OPERATOR_KEYSTORE_PATH: ") && error.contains("no unencrypted PEM private key"),
            "{error}"
        );
        let missing = dir.path().join("missing.crt");
        let error = RestTls::from_files(Some(&missing), None).unwrap_err().to_string();
        assert!(error.contains("cannot be read"), "{error}");
    }
}
