//! The single error type of this crate.

use std::path::PathBuf;

use rustls::pki_types::pem;

/// Result alias used throughout the crate.
pub type Result<T, E = CertsError> = std::result::Result<T, E>;

/// Everything that can go wrong while generating, writing or loading certificates.
///
/// Variants about files carry the path, because the caller usually only logs the
/// error and the operator reading that log needs to know which mount is broken.
#[derive(Debug, thiserror::Error)]
pub enum CertsError {
    /// [`crate::generate_self_signed`] was called without any DNS name or IP address.
    #[error("a serving certificate needs at least one DNS name or IP address")]
    NoSubjectNames,

    /// A DNS name cannot be put into a certificate (empty or not ASCII).
    #[error("invalid DNS name {name:?} for the serving certificate")]
    InvalidDnsName {
        /// The rejected name.
        name: String,
        /// Why rcgen rejected it, if it did.
        #[source]
        source: Option<rcgen::Error>,
    },

    /// rcgen failed to create a key or to sign a certificate.
    #[error("generating the {what}")]
    Generate {
        /// Which item was being generated, e.g. "CA certificate".
        what: &'static str,
        /// The rcgen failure.
        #[source]
        source: rcgen::Error,
    },

    /// A directory could not be created.
    #[error("creating directory {}", path.display())]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// The I/O failure.
        #[source]
        source: std::io::Error,
    },

    /// A file could not be written (or its temporary file renamed into place).
    #[error("writing {}", path.display())]
    Write {
        /// The destination file.
        path: PathBuf,
        /// The I/O failure.
        #[source]
        source: std::io::Error,
    },

    /// A file could not be read.
    #[error("reading {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O failure.
        #[source]
        source: std::io::Error,
    },

    /// A file holds malformed PEM.
    #[error("parsing PEM in {}", path.display())]
    Pem {
        /// The file.
        path: PathBuf,
        /// The PEM decoding failure.
        #[source]
        source: pem::Error,
    },

    /// The certificate file holds no `CERTIFICATE` block.
    #[error("no PEM certificate found in {}", path.display())]
    NoCertificate {
        /// The certificate file.
        path: PathBuf,
    },

    /// The key file holds no private key block (PKCS#8, PKCS#1 or SEC1).
    #[error("no PEM private key found in {}", path.display())]
    NoPrivateKey {
        /// The key file.
        path: PathBuf,
    },

    /// The private key could not be loaded by the ring crypto provider.
    #[error("unsupported or corrupt private key in {}", path.display())]
    UnsupportedKey {
        /// The key file.
        path: PathBuf,
        /// The rustls failure.
        #[source]
        source: rustls::Error,
    },

    /// The leaf certificate could not be parsed as X.509.
    #[error("invalid certificate in {}", path.display())]
    InvalidCertificate {
        /// The certificate file.
        path: PathBuf,
        /// The rustls failure.
        #[source]
        source: rustls::Error,
    },

    /// The private key does not belong to the leaf certificate.
    #[error(
        "private key in {} does not match the certificate in {}",
        key.display(),
        cert.display()
    )]
    KeyMismatch {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
    },

    /// rustls refused the server configuration.
    #[error("building the TLS server configuration")]
    ServerConfig {
        /// The rustls failure.
        #[source]
        source: rustls::Error,
    },
}
