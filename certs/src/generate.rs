//! Self-signed certificates for running the webhook without cert-manager.
//!
//! [`generate_self_signed`] makes a throw-away CA and one serving certificate signed
//! by it. The CA's private key is discarded right away: the CA exists only so that
//! the Kubernetes API server has something stable to put in the webhook's
//! `caBundle`, and nobody can ever mint another certificate under it.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType, ExtendedKeyUsagePurpose,
    IsCa, KeyPair, KeyUsagePurpose, SanType,
};

use crate::atomic_file::{Visibility, write_atomically};
use crate::error::{CertsError, Result};

/// Common name of the generated CA, so that `openssl x509 -text` tells people where
/// it came from.
pub const CA_COMMON_NAME: &str = "flink-operator webhook CA";

/// File name of the CA certificate written by [`GeneratedCerts::write_to_dir`].
pub const CA_FILE: &str = "ca.crt";
/// File name of the serving certificate written by [`GeneratedCerts::write_to_dir`].
pub const CERT_FILE: &str = "tls.crt";
/// File name of the serving key written by [`GeneratedCerts::write_to_dir`].
pub const KEY_FILE: &str = "tls.key";

const DAY: Duration = Duration::from_secs(24 * 60 * 60);

/// Lifetime of the serving certificate: long enough that a development or test
/// install never expires under someone's feet, short enough to be a sane default.
/// Production setups should use cert-manager and rotate far more often.
pub const SERVING_VALIDITY: Duration = Duration::from_secs(365 * DAY.as_secs());

/// Lifetime of the CA. It can outlive the serving certificate without risk because
/// its key is thrown away after signing; a long life means the CA never becomes the
/// reason a chain stops verifying, so the serving certificate's expiry is the only
/// clock anyone has to watch.
const CA_VALIDITY: Duration = Duration::from_secs(10 * 365 * DAY.as_secs());

/// Start validity a little in the past: a node whose clock runs slightly behind ours
/// would otherwise reject a certificate that is "not yet valid".
const CLOCK_SKEW_ALLOWANCE: Duration = Duration::from_secs(5 * 60);

/// A freshly generated CA and serving certificate, all PEM-encoded.
#[derive(Clone)]
pub struct GeneratedCerts {
    /// The CA certificate, for the webhook configuration's `caBundle`.
    pub ca_pem: String,
    /// The serving certificate alone, without the CA.
    ///
    /// The CA is left out on purpose: clients must already trust it as a root (that is
    /// what `caBundle` is for), and TLS allows omitting the root, so sending it on
    /// every handshake would only add bytes.
    pub cert_pem: String,
    /// The serving certificate's private key (PKCS#8, ECDSA P-256).
    pub key_pem: String,
}

// Hand-written so that the private key never ends up in a log line.
impl std::fmt::Debug for GeneratedCerts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GeneratedCerts")
            .field("ca_pem", &self.ca_pem)
            .field("cert_pem", &self.cert_pem)
            .field("key_pem", &"<redacted>")
            .finish()
    }
}

/// Where the CA certificate, serving certificate and serving key live on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertPaths {
    /// The CA certificate (`ca.crt`).
    pub ca: PathBuf,
    /// The serving certificate (`tls.crt`).
    pub cert: PathBuf,
    /// The serving private key (`tls.key`).
    pub key: PathBuf,
}

impl CertPaths {
    /// The conventional file names (`ca.crt`, `tls.crt`, `tls.key`) inside `dir`,
    /// the same names a Kubernetes TLS Secret mounted as a volume uses.
    pub fn in_dir(dir: &Path) -> Self {
        Self {
            ca: dir.join(CA_FILE),
            cert: dir.join(CERT_FILE),
            key: dir.join(KEY_FILE),
        }
    }

    fn all_exist(&self) -> bool {
        [&self.ca, &self.cert, &self.key]
            .into_iter()
            .all(|path| path.is_file())
    }
}

/// Generates a self-signed CA and a serving certificate for `dns_names` and `ips`.
///
/// The CA (common name [`CA_COMMON_NAME`]) may only sign end-entity certificates and
/// is valid for 10 years; the serving certificate is valid for 1 year, carries every
/// given name and address as a subject alternative name, and is usable for TLS
/// server authentication only. Both use ECDSA P-256 keys.
///
/// # Errors
///
/// [`CertsError::NoSubjectNames`] if both lists are empty, [`CertsError::InvalidDnsName`]
/// for an empty or non-ASCII name, [`CertsError::Generate`] if key generation or
/// signing fails.
pub fn generate_self_signed(dns_names: &[String], ips: &[IpAddr]) -> Result<GeneratedCerts> {
    generate_self_signed_valid_for(dns_names, ips, SERVING_VALIDITY)
}

/// Like [`generate_self_signed`], with a serving certificate valid for `validity` from now
/// (the operator-managed certificate's `--webhook-cert-validity`; a short one lets tests
/// watch a renewal happen).
///
/// # Errors
///
/// Those of [`generate_self_signed`].
pub fn generate_self_signed_valid_for(
    dns_names: &[String],
    ips: &[IpAddr],
    validity: Duration,
) -> Result<GeneratedCerts> {
    if dns_names.is_empty() && ips.is_empty() {
        return Err(CertsError::NoSubjectNames);
    }
    let now = SystemTime::now();
    let not_before = now - CLOCK_SKEW_ALLOWANCE;

    let ca_key = KeyPair::generate().map_err(generate_err("CA key"))?;
    let ca = CertifiedIssuer::self_signed(ca_params(not_before, now + CA_VALIDITY.max(validity)), ca_key)
        .map_err(generate_err("CA certificate"))?;

    let serving_key = KeyPair::generate().map_err(generate_err("serving key"))?;
    let serving = serving_params(dns_names, ips, not_before, now + validity)?
        .signed_by(&serving_key, &ca)
        .map_err(generate_err("serving certificate"))?;

    Ok(GeneratedCerts {
        ca_pem: ca.pem(),
        cert_pem: serving.pem(),
        key_pem: serving_key.serialize_pem(),
    })
}

fn ca_params(not_before: SystemTime, not_after: SystemTime) -> CertificateParams {
    let mut params = CertificateParams::default();
    params.distinguished_name = common_name(CA_COMMON_NAME);
    // Path length 0: this CA signs leaves only, never another CA.
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    params.not_before = not_before.into();
    params.not_after = not_after.into();
    params
}

fn serving_params(
    dns_names: &[String],
    ips: &[IpAddr],
    not_before: SystemTime,
    not_after: SystemTime,
) -> Result<CertificateParams> {
    let mut sans = Vec::with_capacity(dns_names.len() + ips.len());
    for name in dns_names {
        if name.is_empty() {
            return Err(CertsError::InvalidDnsName {
                name: name.clone(),
                source: None,
            });
        }
        let ia5 = name
            .clone()
            .try_into()
            .map_err(|source| CertsError::InvalidDnsName {
                name: name.clone(),
                source: Some(source),
            })?;
        sans.push(SanType::DnsName(ia5));
    }
    sans.extend(ips.iter().copied().map(SanType::IpAddress));

    let mut params = CertificateParams::default();
    // Clients match on the SANs only; the CN is for humans reading the certificate.
    let cn = dns_names
        .first()
        .cloned()
        .or_else(|| ips.first().map(IpAddr::to_string))
        .unwrap_or_default();
    params.distinguished_name = common_name(&cn);
    params.subject_alt_names = sans;
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.use_authority_key_identifier_extension = true;
    params.not_before = not_before.into();
    params.not_after = not_after.into();
    Ok(params)
}

fn common_name(cn: &str) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, cn);
    dn
}

fn generate_err(what: &'static str) -> impl FnOnce(rcgen::Error) -> CertsError {
    move |source| CertsError::Generate { what, source }
}

impl GeneratedCerts {
    /// Writes `ca.crt`, `tls.crt` and `tls.key` into `dir`, creating it if needed.
    ///
    /// Each file is replaced atomically (temporary file plus rename), so a server that
    /// reloads from `dir` never reads a half-written file. The key file is created
    /// with mode 0600 on unix. The key is written before the certificate; a reloader
    /// that looks in between sees a mismatched pair, rejects it and keeps serving the
    /// old one until the certificate lands.
    ///
    /// # Errors
    ///
    /// [`CertsError::CreateDir`] or [`CertsError::Write`], naming the path.
    pub fn write_to_dir(&self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir).map_err(|source| CertsError::CreateDir {
            path: dir.to_path_buf(),
            source,
        })?;
        let paths = CertPaths::in_dir(dir);
        write_atomically(&paths.ca, self.ca_pem.as_bytes(), Visibility::Public)?;
        write_atomically(&paths.key, self.key_pem.as_bytes(), Visibility::OwnerOnly)?;
        write_atomically(&paths.cert, self.cert_pem.as_bytes(), Visibility::Public)
    }
}

/// Backs `--self-signed-certs DIR`: reuses `ca.crt`, `tls.crt` and `tls.key` in `dir`
/// if all three exist, and otherwise generates a new set for `dns_names` and `ips`
/// and writes it there.
///
/// Existing files are reused as they are, without checking their names or expiry, so
/// that restarts keep the CA the cluster already trusts. Delete the directory to get
/// a fresh set (and update the `caBundle`).
///
/// # Errors
///
/// Those of [`generate_self_signed`] and [`GeneratedCerts::write_to_dir`].
pub fn load_or_generate(dir: &Path, dns_names: &[String], ips: &[IpAddr]) -> Result<CertPaths> {
    let paths = CertPaths::in_dir(dir);
    if paths.all_exist() {
        tracing::info!(dir = %dir.display(), "reusing existing self-signed certificates");
        return Ok(paths);
    }
    generate_self_signed(dns_names, ips)?.write_to_dir(dir)?;
    tracing::info!(
        dir = %dir.display(),
        ?dns_names,
        ?ips,
        "generated self-signed certificates"
    );
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};

    use super::*;
    use crate::ReloadingCertResolver;
    use crate::cert_summary::summarize;
    use crate::test_support::{
        TempDir, client_trusting, connect, first_cert, is_wrong_name, localhost_certs, peer_leaf,
        start_echo_server,
    };

    #[test]
    fn generating_without_any_name_or_address_is_an_error() {
        let err = generate_self_signed(&[], &[]).expect_err("must fail");
        assert!(matches!(err, CertsError::NoSubjectNames), "{err:?}");
    }

    #[test]
    fn generating_with_an_empty_or_non_ascii_dns_name_is_an_error() {
        for name in ["", "bücher.example"] {
            let err = generate_self_signed(&[name.to_owned()], &[]).expect_err("must fail");
            assert!(matches!(err, CertsError::InvalidDnsName { .. }), "{err:?}");
        }
    }

    #[test]
    fn an_ip_address_alone_is_enough_to_generate() {
        generate_self_signed(&[], &[IpAddr::V4(Ipv4Addr::LOCALHOST)]).expect("generate");
    }

    #[test]
    fn generated_pem_holds_one_ca_one_leaf_and_a_matching_key() {
        let certs = localhost_certs();
        let count = |pem: &str| CertificateDer::pem_slice_iter(pem.as_bytes()).count();
        assert_eq!(count(&certs.ca_pem), 1);
        assert_eq!(count(&certs.cert_pem), 1, "leaf only, without the CA");
        PrivateKeyDer::from_pem_slice(certs.key_pem.as_bytes()).expect("key parses");
        crate::pem_files::certified_key(
            Path::new("tls.crt"),
            certs.cert_pem.as_bytes(),
            Path::new("tls.key"),
            certs.key_pem.as_bytes(),
            &rustls::crypto::ring::default_provider(),
        )
        .expect("key belongs to the leaf");
    }

    #[test]
    fn the_ca_outlives_the_serving_certificate() {
        let certs = localhost_certs();
        let ca = summarize(&first_cert(&certs.ca_pem)).expect("CA summary");
        let leaf = summarize(&first_cert(&certs.cert_pem)).expect("leaf summary");
        // Same fixed-width ISO format, so string order is time order.
        assert!(ca.not_after > leaf.not_after, "{ca:?} vs {leaf:?}");
        assert_ne!(ca.serial, leaf.serial);
    }

    #[test]
    fn a_short_validity_ends_the_serving_certificate_but_not_the_ca_that_soon() {
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .expect("after the epoch")
            .as_secs() as i64;
        let certs = generate_self_signed_valid_for(&["localhost".to_owned()], &[], Duration::from_secs(60))
            .expect("generate");
        let leaf = summarize(&first_cert(&certs.cert_pem)).expect("leaf summary");
        let ca = summarize(&first_cert(&certs.ca_pem)).expect("CA summary");
        let leaf_end = leaf.not_after_unix().expect("leaf expiry");
        assert!((leaf_end - (now + 60)).abs() <= 2, "{leaf:?}");
        assert!(ca.not_after_unix().expect("CA expiry") > leaf_end);
    }

    #[test]
    fn debug_output_does_not_leak_the_private_key() {
        let certs = localhost_certs();
        let debug = format!("{certs:?}");
        assert!(!debug.contains("PRIVATE KEY"), "{debug}");
    }

    #[tokio::test]
    async fn serving_certificate_verifies_for_its_dns_name_and_ip_but_not_for_other_names() {
        let dir = TempDir::new();
        let certs = localhost_certs();
        certs.write_to_dir(dir.path()).expect("write");
        let paths = CertPaths::in_dir(dir.path());
        let resolver = ReloadingCertResolver::from_files(&paths.cert, &paths.key).expect("load");
        let server = start_echo_server(resolver.server_config().expect("config")).await;
        let client = client_trusting(&certs.ca_pem);

        for name in ["localhost", "127.0.0.1"] {
            let stream = connect(&client, server.addr, name)
                .await
                .unwrap_or_else(|e| panic!("handshake as {name}: {e}"));
            assert_eq!(peer_leaf(&stream), first_cert(&certs.cert_pem));
        }
        for name in ["flink-operator.default.svc", "127.0.0.2"] {
            let err = connect(&client, server.addr, name)
                .await
                .expect_err("name is not in the SANs");
            assert!(is_wrong_name(&err), "{name}: {err}");
        }
    }

    #[test]
    fn write_to_dir_creates_missing_directories_and_writes_all_three_files() {
        let tmp = TempDir::new();
        let dir = tmp.path().join("nested").join("certs");
        let certs = localhost_certs();
        certs.write_to_dir(&dir).expect("write");

        let paths = CertPaths::in_dir(&dir);
        let read = |path: &Path| std::fs::read_to_string(path).expect("read back");
        assert_eq!(read(&paths.ca), certs.ca_pem);
        assert_eq!(read(&paths.cert), certs.cert_pem);
        assert_eq!(read(&paths.key), certs.key_pem);
        let entries = std::fs::read_dir(&dir).expect("list").count();
        assert_eq!(entries, 3, "no temporary files left behind");
    }

    #[cfg(unix)]
    #[test]
    fn write_to_dir_makes_the_key_readable_by_the_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = TempDir::new();
        localhost_certs().write_to_dir(dir.path()).expect("write");
        let mode = |name: &str| {
            std::fs::metadata(dir.path().join(name))
                .expect("metadata")
                .permissions()
                .mode()
                & 0o777
        };
        assert_eq!(mode(KEY_FILE), 0o600);
        assert_ne!(mode(CERT_FILE) & 0o044, 0, "certificates stay world-readable");
    }

    #[test]
    fn write_to_dir_names_the_directory_it_cannot_create() {
        let tmp = TempDir::new();
        let blocker = tmp.path().join("a-file");
        std::fs::write(&blocker, b"").expect("create file");
        let err = localhost_certs()
            .write_to_dir(&blocker.join("sub"))
            .expect_err("parent is a file");
        assert!(matches!(err, CertsError::CreateDir { .. }), "{err:?}");
        assert!(err.to_string().contains("a-file"), "{err}");
    }

    #[test]
    fn load_or_generate_reuses_a_complete_set_of_files() {
        let dir = TempDir::new();
        let names = ["localhost".to_owned()];
        let first = load_or_generate(dir.path(), &names, &[]).expect("generate");
        let before = std::fs::read(&first.ca).expect("read ca");

        let second = load_or_generate(dir.path(), &["other.example".to_owned()], &[]).expect("reuse");
        assert_eq!(second, first);
        assert_eq!(std::fs::read(&second.ca).expect("read ca"), before);
    }

    #[test]
    fn load_or_generate_replaces_an_incomplete_set_of_files() {
        let dir = TempDir::new();
        let names = ["localhost".to_owned()];
        let paths = load_or_generate(dir.path(), &names, &[]).expect("generate");
        let old_ca = std::fs::read(&paths.ca).expect("read ca");
        std::fs::remove_file(&paths.key).expect("remove key");

        load_or_generate(dir.path(), &names, &[]).expect("regenerate");
        assert!(paths.key.is_file());
        assert_ne!(std::fs::read(&paths.ca).expect("read ca"), old_ca);
    }

    #[test]
    fn load_or_generate_without_names_fails_when_it_has_to_generate() {
        let dir = TempDir::new();
        let err = load_or_generate(dir.path(), &[], &[]).expect_err("nothing to certify");
        assert!(matches!(err, CertsError::NoSubjectNames), "{err:?}");
    }
}
