//! TLS for the operator's webhook server.
//!
//! - [`ReloadingCertResolver`] serves a certificate from PEM files (typically a
//!   mounted Kubernetes TLS Secret) and picks up rotated files without a restart and
//!   without dropping open connections; [`ReloadingCertResolver::server_config`] turns
//!   it into a rustls [`ServerConfig`](rustls::ServerConfig).
//! - [`generate_self_signed`] and [`load_or_generate`] create a private CA and a
//!   serving certificate for clusters without cert-manager (`--self-signed-certs`).
//!
//! All cryptography uses rustls' ring provider, passed explicitly, so nothing here
//! depends on a process-wide default provider being installed.

#![warn(missing_docs)]

mod atomic_file;
mod cert_summary;
mod error;
mod generate;
mod pem_files;
mod reload;
mod watch;

#[cfg(test)]
mod test_support;

pub use error::{CertsError, Result};
pub use generate::{
    CA_COMMON_NAME, CA_FILE, CERT_FILE, CertPaths, GeneratedCerts, KEY_FILE, SERVING_VALIDITY,
    generate_self_signed, generate_self_signed_valid_for, load_or_generate,
};
pub use reload::ReloadingCertResolver;
